package storetest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// bad holds what Postgres refuses in text and SQLite takes: a NUL, an invalid
// byte, and a UTF-8 sequence cut short.
const bad = "a\x00b\xffc\xe2\x82"

// badStored is bad as every engine keeps it (docs/api.md, "Text that cannot
// be stored as it is"): each NUL and invalid byte is U+FFFD.
const badStored = "a\uFFFDb\uFFFDc\uFFFD\uFFFD"

// textTests cover the one rule for text on every engine: NUL and invalid
// UTF-8 are replaced by U+FFFD in text and in the JSON Relay decodes back,
// and kept, escaped, in JSON kept byte for byte (events, request bodies).
var textTests = []test{
	{"AnswerToolResultAndEvents", func(t *testing.T, s store.Store) {
		ch := newChat(t, s, "bytes@example.com")
		id := ch.run.ID
		call := toolCall(id, "call_nul", 4)
		call.Arguments = `{"q":"x\u0000y"}` + "\x00"
		call.Result = "result " + bad
		call.Sources = []tool.Source{{Kind: tool.SourceWeb, Title: "t" + bad, URL: "https://example.com/"}}
		call.Contexts = []string{"passage " + bad}
		answer := newMessage(ch.conv.ID, ch.msg.ID, run.RoleAssistant, "answer "+bad, 5)
		answer.RunID = id
		answer.Parts = []run.Part{
			{Type: run.PartText, Text: "answer " + bad},
			{Type: run.PartToolCall, Tool: &turn.ToolRecord{ID: "call_nul", Name: "web_search", Arguments: `{"q":"x\u0000y"}`, Result: "result " + bad}},
		}
		// What encoding/json makes of the answer: NUL escaped, invalid bytes \ufffd.
		delta, err := json.Marshal(map[string]string{"text": "answer " + bad})
		must(t, err, "encoding the event")
		rawBad := "{\"text\":\"raw \xff\"}" // JSON with an invalid byte, as json.Valid takes it
		body := `{"messages":[{"role":"user","content":"x\u0000y"}]}`
		ch.run.Status, ch.run.Error = run.StatusFailed, "failed on "+bad
		must(t, s.WriteBatch(t.Context(), &run.Batch{
			Events:    []run.Event{event(id, 1, string(delta)), event(id, 2, rawBad)},
			ToolCalls: []*run.ToolCall{call},
			Requests:  []*run.ModelRequest{{RunID: id, Seq: 1, AgentID: "agent_helper", Body: json.RawMessage(body)}},
			Messages:  []*run.Message{answer},
			Runs:      []*run.Run{ch.run},
		}), "WriteBatch")
		// AppendEvents keeps events a row each, in another column.
		appendEvents(t, s, event(id, 3, string(delta)), event(id, 4, rawBad))

		m, err := s.GetMessage(t.Context(), answer.ID)
		must(t, err, "GetMessage")
		if m.Text != "answer "+badStored {
			t.Errorf("the answer's text is %q, want %q", m.Text, "answer "+badStored)
		}
		wantParts := []run.Part{
			{Type: run.PartText, Text: "answer " + badStored},
			{Type: run.PartToolCall, Tool: &turn.ToolRecord{ID: "call_nul", Name: "web_search", Arguments: `{"q":"x\u0000y"}`, Result: "result " + badStored}},
		}
		if d := cmp.Diff(wantParts, m.Parts, equal); d != "" {
			t.Errorf("the answer's parts (-want +got):\n%s", d)
		}
		calls := listToolCalls(t, s, id)
		if len(calls) != 1 {
			t.Fatalf("%d tool calls stored, want 1", len(calls))
		}
		c := calls[0]
		if c.Result != "result "+badStored || c.Arguments != `{"q":"x\u0000y"}`+"\uFFFD" {
			t.Errorf("the tool call's result %q, arguments %q", c.Result, c.Arguments)
		}
		if len(c.Sources) != 1 || c.Sources[0].Title != "t"+badStored || len(c.Contexts) != 1 || c.Contexts[0] != "passage "+badStored {
			t.Errorf("the tool call's sources %+v, contexts %q", c.Sources, c.Contexts)
		}
		// Event data and request bodies come back byte for byte, but for invalid bytes.
		events := listEvents(t, s, id, 0)
		wantData := []string{string(delta), "{\"text\":\"raw \uFFFD\"}", string(delta), "{\"text\":\"raw \uFFFD\"}"}
		if len(events) != len(wantData) {
			t.Fatalf("%d events stored, want %d", len(events), len(wantData))
		}
		for i, e := range events {
			if string(e.Data) != wantData[i] {
				t.Errorf("event %d: data %q, want %q", e.Seq, e.Data, wantData[i])
			}
		}
		var streamed struct{ Text string }
		must(t, json.Unmarshal(events[0].Data, &streamed), "decoding the event")
		if want := "answer a\x00b\uFFFDc\uFFFD\uFFFD"; streamed.Text != want {
			t.Errorf("the event's text %q, want %q (the NUL kept, escaped)", streamed.Text, want)
		}
		reqs := listModelRequests(t, s, id)
		if len(reqs) != 1 || string(reqs[0].Body) != body {
			t.Errorf("model requests %+v, want the body %s byte for byte", reqs, body)
		}
		if r := getRun(t, s, id); r.Error != "failed on "+badStored {
			t.Errorf("the run's error %q", r.Error)
		}
	}},
	{"RequestFields", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := newUser("fields@example.com")
		u.DisplayName = "Ann " + bad
		must(t, s.CreateUser(ctx, u), "CreateUser")
		if got, err := s.GetUser(ctx, u.ID); err != nil || got.DisplayName != "Ann "+badStored {
			t.Errorf("GetUser: %v, display name %q", err, got.DisplayName)
		}
		// An agent's spec is JSON kept as JSONB on Postgres.
		a := &agent.Agent{ID: agent.NewID(), Author: u.ID, Spec: spec("Agent " + bad)}
		a.Spec.Instructions = "Say " + bad
		a.Spec.ConversationStarters = []string{bad}
		must(t, s.CreateAgent(ctx, a), "CreateAgent")
		wantSpec := spec("Agent " + badStored)
		wantSpec.Instructions = "Say " + badStored
		wantSpec.ConversationStarters = []string{badStored}
		if d := cmp.Diff(wantSpec, a.Spec, equal); d != "" {
			t.Errorf("CreateAgent left the spec (-want +got):\n%s", d)
		}
		if d := cmp.Diff(wantSpec, getAgent(t, s, a.ID).Spec, equal); d != "" {
			t.Errorf("the stored spec (-want +got):\n%s", d)
		}
		a.Spec.Description = "now " + bad
		must(t, s.UpdateAgent(ctx, a), "UpdateAgent")
		wantSpec.Description = "now " + badStored
		vs := versions(t, s, a.ID)
		if len(vs) != 2 {
			t.Fatalf("%d versions, want 2", len(vs))
		}
		if d := cmp.Diff(wantSpec, vs[1].Spec, equal); d != "" {
			t.Errorf("the second version (-want +got):\n%s", d)
		}
		// A chat message and a conversation's title, as a run starts.
		c := newConversation(u.ID, 1)
		c.Title = "Title " + bad
		m := newMessage(c.ID, "", run.RoleUser, "Hello "+bad, 2)
		r := newRun(u.ID, c.ID, m.ID, 2)
		must(t, s.StartRun(ctx, &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r}), "StartRun")
		gc, err := s.GetConversation(ctx, c.ID)
		must(t, err, "GetConversation")
		if gc.Title != "Title "+badStored {
			t.Errorf("the title %q", gc.Title)
		}
		must(t, s.RenameConversation(ctx, c.ID, "Renamed "+bad, nil), "RenameConversation")
		if gc, err = s.GetConversation(ctx, c.ID); err != nil || gc.Title != "Renamed "+badStored {
			t.Errorf("GetConversation: %v, renamed title %q", err, gc.Title)
		}
		gm, err := s.GetMessage(ctx, m.ID)
		must(t, err, "GetMessage")
		if gm.Text != "Hello "+badStored {
			t.Errorf("the message %q", gm.Text)
		}
		// Looking up by text with a NUL finds what it was stored as, or
		// nothing: never an error of the database.
		if got, err := s.GetUserByEmail(ctx, "fields\x00@example.com"); !fault.Is(err, fault.NotFound) {
			t.Errorf("GetUserByEmail with a NUL: %v, %v; want not found", got, err)
		}
		if _, err := s.GetConversation(ctx, c.ID+"\x00"); !fault.Is(err, fault.NotFound) {
			t.Errorf("GetConversation with a NUL: %v; want not found", err)
		}
		if _, err := s.GetAgent(ctx, "agent_\x00\xff"); !fault.Is(err, fault.NotFound) {
			t.Errorf("GetAgent with a NUL: %v; want not found", err)
		}
	}},
}
