package run_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/turn"
)

func toolbox(t *testing.T, fam mcp.Family) *run.Toolbox {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	m := mcp.NewManager([]mcp.ServerConfig{{Name: "test", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second}}, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	return &run.Toolbox{MCP: m, User: &auth.User{ID: "user_1"}, Family: fam,
		Offered: []string{"get-sum__mcp__test", "nope__mcp__test", "fail__mcp__test", "get-tiny-image__mcp__test"}}
}

func call(name, args string) llm.ToolCall {
	return llm.ToolCall{ID: "c1", Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

func TestToolboxRunsMCPTools(t *testing.T) {
	b := toolbox(t, mcp.FamilyOpenAI)
	b.Handoffs = []string{"agent_b"}
	ctx := context.Background()
	tests := []struct {
		name, tool, args string
		text             string
		isError          bool
	}{
		{"a result", "get-sum__mcp__test", `{"a":2,"b":3}`, "The sum of 2 and 3 is 5.", false},
		{"bad arguments never reach the server", "get-sum__mcp__test", `{"a":"two","b":3}`, `"get-sum__mcp__test" tool call failed: `, true},
		{"an unknown tool", "nope__mcp__test", `{}`, `"nope__mcp__test" tool call failed: `, true},
		{"a tool the agent was not given", "echo__mcp__test", `{"message":"hi"}`, `There is no tool "echo__mcp__test" among your tools`, true},
		{"the server's error", "fail__mcp__test", `{}`, "it failed", true},
		{"a handoff", "lc_transfer_to_agent_b", `{"instructions":"x"}`, "Transferred to agent agent_b.", false},
		{"a handoff to an agent that is not a target", "lc_transfer_to_ghost", `{}`, `Cannot transfer to agent "ghost"`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := b.Run(ctx, call(tc.tool, tc.args))
			if !strings.HasPrefix(out.Text, tc.text) || out.IsError != tc.isError {
				t.Errorf("got %+v, want text starting %q, error %v", out, tc.text, tc.isError)
			}
		})
	}
}

func TestToolboxImagesPerFamily(t *testing.T) {
	for _, fam := range []mcp.Family{mcp.FamilyOpenAI, mcp.FamilyAnthropic, mcp.FamilyText} {
		t.Run(string(fam), func(t *testing.T) {
			out := toolbox(t, fam).Run(context.Background(), call("get-tiny-image__mcp__test", `{}`))
			images := 0
			for _, p := range out.Parts {
				if p.Type == llm.PartImage {
					images++
					if p.MIMEType != "image/png" || p.Data == "" {
						t.Errorf("image part %+v", p)
					}
				}
			}
			want := 1
			if fam == mcp.FamilyText {
				want = 0
				if !strings.Contains(out.Text, "[image: image/png]") {
					t.Errorf("text family: %q", out.Text)
				}
			}
			if images != want {
				t.Errorf("%d image parts, want %d", images, want)
			}
		})
	}
}

var _ turn.ToolRunner = (*run.Toolbox)(nil)

// A tool the agent was given but not offered this turn (its server could not
// be listed, or needs the user to connect first) still goes to its server,
// which says why it cannot be called; so do the tools of a server the agent
// has all of. Another server's tools are refused.
func TestToolboxRunsGivenTools(t *testing.T) {
	for _, given := range [][]string{{"echo__mcp__test"}, {"all__mcp__test"}} {
		b := toolbox(t, mcp.FamilyOpenAI)
		b.Offered, b.Given = nil, given
		if out := b.Run(context.Background(), call("echo__mcp__test", `{"message":"hi"}`)); out.IsError || !strings.Contains(out.Text, "hi") {
			t.Errorf("given %q: echo: %+v", given, out)
		}
		if out := b.Run(context.Background(), call("echo__mcp__other", `{"message":"hi"}`)); !out.IsError || !strings.Contains(out.Text, "There is no tool") {
			t.Errorf("given %q: another server's echo: %+v", given, out)
		}
	}
}
