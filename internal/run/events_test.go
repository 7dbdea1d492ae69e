package run_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/run"
)

// eventSamples has one payload of every kind (three of run.finished: with an
// answer, with an answer the model's token limit cut, and without), named as its golden file in testdata/events. The
// golden files were first written by the encoder events had before they had
// types (maps, encoded with encoding/json), so that matching them shows that
// what is stored and streamed is byte for byte what it was.
func eventSamples() map[string]run.Payload {
	u := llm.Usage{PromptTokens: 12, CompletionTokens: 5, TotalTokens: 17}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	answer := &run.Message{ID: "msg_2", ConversationID: "conv_1", ParentID: "msg_1", Role: run.RoleAssistant, AgentID: "support", Text: "Hello <there>",
		Parts: []run.Part{{Type: run.PartText, AgentID: "support", Text: "Hello <there>"}}, RunID: "run_1", CreatedAt: at}
	return map[string]run.Payload{
		"run.started":   run.RunStarted{RunID: "run_1", ConversationID: "conv_1", UserMessageID: "msg_1", AgentID: "support"},
		"run.warning":   run.Warning{Message: `edge to "gone" skipped: <no agent>`},
		"message.delta": run.MessageDelta{AgentID: "support", Text: "Hello <b>&</b> \"world\"\n"},
		"message.image": run.MessageImage{AgentID: "painter", MIMEType: "image/png", Data: "iVBORw0KGgo="},
		"tool.started":  run.ToolStarted{AgentID: "support", ID: "call_1", Name: "mcp__files__read", Arguments: `{"path":"a<b>.txt"}`},
		"tool.finished": run.ToolFinished{AgentID: "support", ID: "call_1", Result: "contents & more", DurationMS: 42},
		"usage":         run.TurnUsage{AgentID: "support", Usage: u},
		"elicitation.requested": run.ElicitationRequested{ID: "eli_1", AgentID: "support", Server: "files", ToolCallID: "call_1", Mode: "form",
			Message: "Which folder?", RequestedSchema: json.RawMessage(`{"type":"object","properties":{"folder":{"type":"string"}}}`), ExpiresAt: at},
		"elicitation.answered": run.ElicitationSettled{ID: "eli_1", Action: "decline", Reason: "timeout"},
		"error":                run.RunError{AgentID: "support", Message: "the process running it stopped"},
		"run.finished":         run.RunFinished{Status: run.StatusSucceeded, Usage: u, Message: answer},
		"run.finished.length":  run.RunFinished{Status: run.StatusSucceeded, Usage: u, Message: answer, FinishReason: llm.FinishLength},
		"run.finished.failed":  run.RunFinished{Status: run.StatusFailed, Error: "the process running it stopped", Usage: u},
	}
}

// Every kind of event encodes to its golden JSON (refreshed with -update),
// and its golden JSON, as stored before, decodes to the same payload.
func TestEventGolden(t *testing.T) {
	samples := eventSamples()
	covered := map[run.Kind]bool{}
	for name, p := range samples {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("testdata", "events", name+".json")
			got := append(run.Encode(p), '\n')
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(want) {
				t.Errorf("encoding:\n got %s\nwant %s", got, want)
			}
			kind := run.KindOf(p)
			covered[kind] = true
			back, err := run.Decode(kind, want)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(p, back); diff != "" {
				t.Errorf("decoded golden JSON (-want +got):\n%s", diff)
			}
		})
	}
	for _, k := range run.Kinds {
		if !covered[k] {
			t.Errorf("kind %s has no golden JSON", k)
		}
	}
	if len(covered) != len(run.Kinds) {
		t.Errorf("samples cover %d kinds, Kinds lists %d", len(covered), len(run.Kinds))
	}
}

// An event's payload is its data decoded, fields it does not know ignored;
// an unknown kind is an error, not a guess.
func TestEventPayload(t *testing.T) {
	stored := run.Event{Type: run.EventToolFinished, Data: []byte(`{"agent_id":"a","id":"c1","is_error":true,"result":"no","extra":1}`)}
	p, err := stored.Payload()
	if err != nil {
		t.Fatal(err)
	}
	if want := (run.ToolFinished{AgentID: "a", ID: "c1", IsError: true, Result: "no"}); p != want {
		t.Errorf("payload %+v, want %+v", p, want)
	}
	if _, err := (run.Event{Type: "nonsense", Data: []byte(`{}`)}).Payload(); err == nil {
		t.Error("an unknown kind decoded")
	}
	if _, err := (run.Event{Type: run.EventMessageDelta, Data: []byte(`not json`)}).Payload(); err == nil {
		t.Error("bad data decoded")
	}
}

// The run.finished event a run makes hands its readers in the process the
// payload it was made from, which says what its data says.
func TestFinishedPayloadKept(t *testing.T) {
	answer := eventSamples()["run.finished"].(run.RunFinished).Message
	r := &run.Run{ID: "run_1", AgentID: "support", Status: run.StatusFailed, Error: "the process ended"}
	evs := run.FailedEnd(r, answer, 4)
	last := evs[len(evs)-1]
	p, err := last.Payload()
	if err != nil {
		t.Fatal(err)
	}
	if p.(run.RunFinished).Message != answer {
		t.Error("run.finished's payload is not the one it was made from")
	}
	decoded, err := run.Decode(last.Type, last.Data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decoded, p); diff != "" {
		t.Errorf("payload kept differs from the data decoded (-data +kept):\n%s", diff)
	}
}
