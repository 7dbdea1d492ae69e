package prompt

import (
	"strings"
	"testing"
)

// maxContextTokens is the agent's context budget for Relay, not a parameter
// of the model: it is never written into the body.
func TestMaxContextTokensIsNotSent(t *testing.T) {
	req, err := Build(Input{AgentID: "a", Agent: Agent{Model: "gpt-4o", ModelParameters: map[string]any{"maxContextTokens": 2000, "temperature": 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "maxContextTokens") || !strings.Contains(string(body), `"temperature":0.5`) {
		t.Errorf("body: %s", body)
	}
}
