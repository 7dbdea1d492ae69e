package run_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

// The summariser asks the configured model (else the agent's) for a summary
// of the dropped messages, written as a transcript, within maxSummaryTokens.
func TestSummarizer(t *testing.T) {
	m := llmtest.New(llmtest.Turn{Text: []string{"The user ", "asked about pumps."}})
	var asked []string
	models := func(_ context.Context, _, provider, model string) (llm.Model, mcp.Family, error) {
		asked = append(asked, provider+"/"+model)
		if provider == "nowhere" {
			return nil, "", errors.New("unknown provider")
		}
		return m, mcp.FamilyOpenAI, nil
	}
	a := &agent.Agent{ID: "a", Spec: agent.Spec{Provider: "mock", Model: "gpt-4o"}}
	dropped := []llm.Message{
		{Role: llm.RoleUser, Content: "How do the pumps work?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: "lookup"}}}},
		{Role: llm.RoleTool, ToolCallID: "c1", Content: "two pumps"},
		{Role: llm.RoleAssistant, Content: "There are two."},
	}
	sum := run.Summarizer(models, run.Summary{Model: "gpt-4o-mini", MaxTokens: 300, Params: map[string]any{"temperature": 0.1}})
	text, err := sum(context.Background(), "u1", a, dropped)
	if err != nil || text != "The user asked about pumps." {
		t.Fatalf("summary %q, %v", text, err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 || asked[0] != "mock/gpt-4o-mini" {
		t.Fatalf("asked %v, %d requests", asked, len(reqs))
	}
	r := reqs[0]
	if r.Model != "gpt-4o-mini" || r.Params["max_tokens"] != 300 || r.Params["temperature"] != 0.1 || len(r.Messages) != 2 ||
		r.Messages[0].Content != run.DefaultSummaryPrompt || r.Messages[1].Content != "Human: How do the pumps work?\nTool: lookup, two pumps\nAI: There are two." {
		t.Errorf("summary request %+v", r)
	}
	if _, err := run.Summarizer(models, run.Summary{Provider: "nowhere", MaxTokens: 10})(context.Background(), "u1", a, dropped); err == nil || !strings.Contains(err.Error(), "nowhere/gpt-4o") {
		t.Errorf("unknown provider: %v", err)
	}
}
