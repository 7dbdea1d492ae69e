package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/anthropic"
	"github.com/relay-ai/relay/internal/llm/google"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/turn"
)

func sumCallOf(id string, a, b int) llm.ToolCall {
	args, _ := json.Marshal(map[string]int{"a": a, "b": b})
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__test", Arguments: string(args)}}
}

// TestTurnThreeReplaysToolHistory is the request of the third turn of a
// conversation whose first two turns called tools, in each provider's own
// format: earlier user and assistant messages, the tool calls and their
// results, in the order the model made them.
func TestTurnThreeReplaysToolHistory(t *testing.T) {
	model := llmtest.New(
		// Turn 1: text, then a call, then the answer.
		llmtest.Turn{Text: []string{"Let me add."}, ToolCalls: []llm.ToolCall{sumCallOf("call_1", 2, 3)}},
		llmtest.Turn{Text: []string{"The sum is 5."}},
		// Turn 2: two calls in one model turn, one more in the next, then the answer.
		llmtest.Turn{ToolCalls: []llm.ToolCall{sumCallOf("call_2", 4, 4), sumCallOf("call_3", 1, 1)}},
		llmtest.Turn{ToolCalls: []llm.ToolCall{sumCallOf("call_4", 8, 2)}},
		llmtest.Turn{Text: []string{"4+4 is 8, 1+1 is 2, and 8+2 is 10."}},
		// Turn 3.
		llmtest.Turn{Text: []string{"You're welcome."}},
	)
	b := setup(t, model)
	d1 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	d2 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "And 4+4, 1+1, and then their sum?", ConversationID: d1.ConversationID})
	d3 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Thanks!", ConversationID: d1.ConversationID})
	for _, d := range []*run.Detail{d1, d2, d3} {
		if d.Status != run.StatusSucceeded {
			t.Fatalf("run %+v", d.Run)
		}
	}
	reqs := model.Requests()
	turn3 := reqs[len(reqs)-1]

	want := []llm.Message{
		{Role: llm.RoleSystem, Content: "Use the tools."},
		{Role: llm.RoleUser, Content: "What is 2+3?"},
		{Role: llm.RoleAssistant, Content: "Let me add.", ToolCalls: []llm.ToolCall{sumCallOf("call_1", 2, 3)}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "The sum of 2 and 3 is 5."},
		{Role: llm.RoleAssistant, Content: "The sum is 5."},
		{Role: llm.RoleUser, Content: "And 4+4, 1+1, and then their sum?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{sumCallOf("call_2", 4, 4), sumCallOf("call_3", 1, 1)}},
		{Role: llm.RoleTool, ToolCallID: "call_2", Content: "The sum of 4 and 4 is 8."},
		{Role: llm.RoleTool, ToolCallID: "call_3", Content: "The sum of 1 and 1 is 2."},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{sumCallOf("call_4", 8, 2)}},
		{Role: llm.RoleTool, ToolCallID: "call_4", Content: "The sum of 8 and 2 is 10."},
		{Role: llm.RoleAssistant, Content: "4+4 is 8, 1+1 is 2, and 8+2 is 10."},
		{Role: llm.RoleUser, Content: "Thanks!", Question: true}, // the one the run answers
	}
	if diff := cmp.Diff(want, turn3.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("turn 3's messages (-want +got):\n%s", diff)
	}

	// The stored answer's text is its text parts with a blank line between:
	// the text before the call and the text after it are two paragraphs.
	th, err := b.svc.Conversation(context.Background(), b.user, d1.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if got := th.Messages[1].Text; got != "Let me add.\n\nThe sum is 5." {
		t.Errorf("turn 1's answer %q, want its two texts as two paragraphs", got)
	}

	// The same request as each provider's client writes it.
	for name, c := range map[string]struct {
		client llm.Bodier
		model  string
	}{
		"openai":    {openai.New(openai.Options{}), "gpt-4o"},
		"anthropic": {anthropic.New(anthropic.Options{}), "claude-sonnet-4-5"},
		"google":    {google.New(google.Options{}), "gemini-2.5-flash"},
	} {
		t.Run(name, func(t *testing.T) {
			req := *turn3
			req.Model = c.model
			body, err := c.client.Body(&req)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := json.Indent(&out, body, "", "  "); err != nil {
				t.Fatal(err)
			}
			out.WriteByte('\n')
			golden(t, filepath.Join("testdata", "turn3."+name+".json"), out.Bytes())
		})
	}
}

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestConversationAloneContinuesTheLatestBranch(t *testing.T) {
	model := llmtest.New(
		llmtest.Turn{Text: []string{"One."}},
		llmtest.Turn{Text: []string{"Two."}},
		llmtest.Turn{Text: []string{"Two, again."}}, // a regenerated answer: a new branch
		llmtest.Turn{Text: []string{"Three."}},
	)
	b := setup(t, model)
	d1 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "1"})
	d2 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "2", ConversationID: d1.ConversationID})
	// Editing the second message: a sibling of it, under the first answer.
	d2b := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "2, edited", ConversationID: d1.ConversationID, ParentMessageID: d1.ResponseMessageID})
	// The conversation alone now continues the edited branch, the one written last.
	d3 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "3", ConversationID: d1.ConversationID})
	for _, d := range []*run.Detail{d1, d2, d2b, d3} {
		if d.Status != run.StatusSucceeded {
			t.Fatalf("run %+v", d.Run)
		}
	}
	reqs := model.Requests()
	var got []string
	for _, m := range reqs[len(reqs)-1].Messages[1:] {
		got = append(got, string(m.Role)+": "+m.Content)
	}
	want := []string{"user: 1", "assistant: One.", "user: 2, edited", "assistant: Two, again.", "user: 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turn 4's conversation (-want +got):\n%s", diff)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d1.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*run.Message{}
	for _, m := range th.Messages {
		byID[m.ID] = m
	}
	if byID[d3.UserMessageID].ParentID != d2b.ResponseMessageID {
		t.Errorf("message 3's parent is %q, want the edited branch's answer %q", byID[d3.UserMessageID].ParentID, d2b.ResponseMessageID)
	}
	if d2.ResponseMessageID == d2b.ResponseMessageID {
		t.Error("the edit did not make a branch")
	}
}

// TestNoParentStartsABranchFromTheStart: run.NoParent as the parent makes a
// new first message, whose run is sent no history, and the conversation alone
// then continues that branch.
func TestNoParentStartsABranchFromTheStart(t *testing.T) {
	model := llmtest.New(
		llmtest.Turn{Text: []string{"One."}},
		llmtest.Turn{Text: []string{"Two."}},
		llmtest.Turn{Text: []string{"One, again."}},
		llmtest.Turn{Text: []string{"Three."}},
		llmtest.Turn{Text: []string{"Four."}},
	)
	b := setup(t, model)
	d1 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "1"})
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "2", ConversationID: d1.ConversationID})
	d1b := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "1, edited", ConversationID: d1.ConversationID, ParentMessageID: run.NoParent})
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "3", ConversationID: d1.ConversationID})
	reqs := model.Requests()
	roles := func(i int) []string {
		var got []string
		for _, m := range reqs[i].Messages[1:] {
			got = append(got, string(m.Role)+": "+m.Content)
		}
		return got
	}
	if diff := cmp.Diff([]string{"user: 1, edited"}, roles(2)); diff != "" {
		t.Errorf("the new first message's request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"user: 1, edited", "assistant: One, again.", "user: 3"}, roles(3)); diff != "" {
		t.Errorf("the next turn's request (-want +got):\n%s", diff)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d1.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range th.Messages {
		if m.ID == d1b.UserMessageID && m.ParentID != "" {
			t.Errorf("the new first message has the parent %q", m.ParentID)
		}
	}
	// A new conversation may name it too: it has no parent anyway.
	if d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "4", ParentMessageID: run.NoParent}); d.Status != run.StatusSucceeded {
		t.Errorf("a new conversation with NoParent: %+v", d.Run)
	}
}

func TestUnknownOrForeignConversationIsNotFound(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"Hi."}}))
	ctx := context.Background()
	_, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "hello", ConversationID: "conv_nope"})
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("unknown conversation: %v, want not found", err)
	}
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "hello"})
	other := *b.user
	other.ID = "usr_other"
	if _, err := b.svc.Start(ctx, &other, run.ChatRequest{AgentID: "calc", Text: "hello", ConversationID: d.ConversationID}); !fault.Is(err, fault.NotFound) {
		t.Fatalf("another user's conversation: %v, want not found", err)
	}
}

func TestReplay(t *testing.T) {
	rec := func(id string, step int, result string, isErr bool) *turn.ToolRecord {
		return &turn.ToolRecord{ID: id, Name: "lookup", Arguments: `{"q":"x"}`, Result: result, IsError: isErr, Step: step}
	}
	tc := func(id string) llm.ToolCall {
		return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}
	}
	for _, tt := range []struct {
		name string
		m    run.Message
		want []llm.Message
	}{
		{
			name: "user message",
			m:    run.Message{Role: run.RoleUser, Text: "hi"},
			want: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
		},
		{
			name: "answer saved without parts",
			m:    run.Message{Role: run.RoleAssistant, Text: "hello"},
			want: []llm.Message{{Role: llm.RoleAssistant, Content: "hello"}},
		},
		{
			name: "failed before saying anything",
			m:    run.Message{Role: run.RoleAssistant, Parts: []run.Part{{Type: run.PartError, Text: "model provider: down"}}},
		},
		{
			name: "a failed tool call and the error of the run",
			m: run.Message{Role: run.RoleAssistant, Text: "Partial", Parts: []run.Part{
				{Type: run.PartToolCall, AgentID: "a", Tool: rec("c1", 1, "boom", true)},
				{Type: run.PartText, AgentID: "a", Text: "Partial"},
				{Type: run.PartError, AgentID: "a", Text: "cut off"},
			}},
			want: []llm.Message{
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc("c1")}},
				{Role: llm.RoleTool, ToolCallID: "c1", Content: "boom", IsError: true},
				{Role: llm.RoleAssistant, Content: "Partial"},
			},
		},
		{
			name: "two agents, one after the other",
			m: run.Message{Role: run.RoleAssistant, Parts: []run.Part{
				{Type: run.PartText, AgentID: "a", Text: "First."},
				{Type: run.PartText, AgentID: "b", Text: "Checking."},
				{Type: run.PartToolCall, AgentID: "b", Tool: rec("c1", 1, "r1", false)},
				{Type: run.PartToolCall, AgentID: "b", Tool: rec("c2", 2, "r2", false)},
				{Type: run.PartText, AgentID: "b", Text: "Done."},
				{Type: run.PartImage, AgentID: "b", MIMEType: "image/png", Data: "AAAA"},
			}},
			want: []llm.Message{
				{Role: llm.RoleAssistant, Content: "First."},
				{Role: llm.RoleAssistant, Content: "Checking.", ToolCalls: []llm.ToolCall{tc("c1")}},
				{Role: llm.RoleTool, ToolCallID: "c1", Content: "r1"},
				{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{tc("c2")}},
				{Role: llm.RoleTool, ToolCallID: "c2", Content: "r2"},
				{Role: llm.RoleAssistant, Content: "Done."},
			},
		},
		{
			name: "two texts of one agent with no call between",
			m: run.Message{Role: run.RoleAssistant, Text: "Let me search.\n\nThe answer is 5.", Parts: []run.Part{
				{Type: run.PartText, AgentID: "a", Text: "Let me search."},
				{Type: run.PartText, AgentID: "a", Text: "The answer is 5."},
				{Type: run.PartError, AgentID: "a", Text: "the process stopped"},
			}},
			want: []llm.Message{{Role: llm.RoleAssistant, Content: "Let me search.\n\nThe answer is 5."}},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run.Replay(&tt.m), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
