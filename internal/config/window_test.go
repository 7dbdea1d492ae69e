package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestContextWindowConfig(t *testing.T) {
	c := mustLoadYAML(t, `endpoints:
  custom:
    - name: Mistral
      baseURL: https://api.mistral.ai/v1
      tokenConfig:
        mistral-large-latest:
          prompt: 2
          completion: 6
          context: 128000
  agents:
    maxToolResultChars: 5000
`, nil)
	if got := c.Endpoints.ContextWindow("mistral", "mistral-large-latest"); got != 128000 {
		t.Errorf("ContextWindow = %d, want 128000", got)
	}
	if got := c.Endpoints.ContextWindow("Mistral", "mistral-small"); got != 0 {
		t.Errorf("ContextWindow of an unlisted model = %d, want 0", got)
	}
	if got := c.Endpoints.ContextWindow("openAI", "mistral-large-latest"); got != 0 {
		t.Errorf("ContextWindow of another provider = %d, want 0", got)
	}
	if c.Endpoints.Agents.MaxToolResultChars != 5000 {
		t.Errorf("maxToolResultChars = %d, want 5000", c.Endpoints.Agents.MaxToolResultChars)
	}
	// relay config check shows them.
	var dump bytes.Buffer
	if err := c.WriteMasked(&dump); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tokenConfig:\n        mistral-large-latest:\n          context: 128000", "maxToolResultChars: 5000", "summarization:\n  enabled: false"} {
		if !strings.Contains(dump.String(), want) {
			t.Errorf("the masked dump lacks %q:\n%s", want, dump.String())
		}
	}
	if d := mustLoadYAML(t, "server:\n  addr: :1\n", nil).Endpoints.Agents.MaxToolResultChars; d != 0 {
		t.Errorf("default maxToolResultChars = %d, want 0 (derived from the budget)", d)
	}
}

func TestContextWindowConfigErrors(t *testing.T) {
	_, err := loadYAML(t, `endpoints:
  custom:
    - name: Local
      baseURL: http://localhost:11434/v1
      tokenConfig:
        llama3:
          context: -1
  agents:
    maxToolResultChars: -5
agents:
  - id: a
    provider: Local
    model: llama3
    model_parameters:
      maxContextTokens: "lots"
summarization:
  enabled: true
  provider: Elsewhere
  maxSummaryTokens: 0
`, nil)
	want := []string{
		"relay.yaml:7:20: endpoints.custom[0].tokenConfig.llama3.context: must not be negative (0 means unknown)",
		"relay.yaml:9:25: endpoints.agents.maxToolResultChars: must not be negative (0 means 30% of the agent's token budget)",
		"relay.yaml:15:7: agents[0].model_parameters.maxContextTokens: must be a whole number of tokens of at least 1",
		"relay.yaml:19:21: summarization.maxSummaryTokens: must be at least 1",
		"relay.yaml:18:13: summarization.provider: unknown provider \"Elsewhere\" (known: openAI, anthropic, google, azureOpenAI, Local)",
	}
	if d := cmp.Diff(want, problems(t, err)); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}
