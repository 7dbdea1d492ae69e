package run

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"context"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/llm"
)

// convModel answers "ok", noting the conversation its context carries.
type convModel struct{ seen llm.Conversation }

func (m *convModel) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	m.seen = llm.ConversationOf(ctx)
	return &llm.Turn{Text: "ok", FinishReason: "stop"}, nil
}

// A sampling request an MCP server makes during a tool call is a request of
// the run's conversation, though the MCP session hands over a context of its
// own (docs/config.md, "Headers that name the conversation").
func TestSamplerKeepsTheConversation(t *testing.T) {
	m := &convModel{}
	conv := llm.Conversation{ID: "conv_1", MessageID: "msg_2", ParentMessageID: "msg_1"}
	sample := sampler(m, "gpt-4o", conv)
	res, err := sample(context.Background(), &sdk.CreateMessageParams{MaxTokens: 10,
		Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "2+2?"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if m.seen != conv {
		t.Errorf("the sampling request was of conversation %+v, want %+v", m.seen, conv)
	}
	if tc, ok := res.Content.(*sdk.TextContent); !ok || tc.Text != "ok" {
		t.Errorf("sampling answered %+v", res.Content)
	}
}
