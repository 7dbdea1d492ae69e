package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/tool"
)

// engines opens a new, empty store of each engine: SQLite always, Postgres
// when TEST_POSTGRES_URL is set.
var engines = []struct {
	name string
	open func(t *testing.T) store.Store
}{
	{"sqlite", func(t *testing.T) store.Store {
		st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"postgres", func(t *testing.T) store.Store {
		base := os.Getenv("TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("TEST_POSTGRES_URL is not set")
		}
		st, err := postgres.Open(t.Context(), pgtest.Schema(t, base, "relay_run"), postgres.Options{ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// badTool answers every call with text holding a NUL and an invalid byte: a
// web search that found a page with both.
type badTool struct{}

func (badTool) Name() string { return "web_search" }
func (badTool) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Text("tool\x00out\xfe"), nil
}

// A model answer and a tool result holding a NUL and invalid UTF-8 end in a
// finished run on every engine, nothing waiting on a write the database
// refuses: the answer and the tool result are stored with U+FFFD in their
// place (docs/api.md, "Text that cannot be stored as it is"), and the events
// keep the answer as it was streamed, the NUL escaped.
func TestRunWithBadBytes(t *testing.T) {
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			st := engine.open(t)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "ann@example.com", DisplayName: "Ann"})
			if err != nil {
				t.Fatal(err)
			}
			agents := agent.NewService(st, agent.Rules{})
			if _, err := agents.Create(ctx, u, "bytes", agent.Spec{Name: "Bytes", Provider: "openAI", Model: "gpt-4o", Tools: []string{"web_search"}}); err != nil {
				t.Fatal(err)
			}
			call := llm.ToolCall{ID: "call_bad", Type: "function", Function: llm.FunctionCall{Name: "web_search", Arguments: `{"q":"x\u0000y"}`}}
			model := llmtest.New(
				llmtest.Turn{ToolCalls: []llm.ToolCall{call}},
				llmtest.Turn{Text: []string{"Here\x00 is", " a bad \xff byte"}},
			)
			m := mcp.NewManager(nil, mcp.Options{})
			t.Cleanup(func() { m.Close() })
			svc := &run.Service{
				Store: st, MCP: m, Log: discard(), Builtins: map[string]tool.Tool{"web_search": badTool{}},
				Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
				Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
					return model, mcp.FamilyOpenAI, nil
				},
			}
			r, err := svc.Start(ctx, u, run.ChatRequest{AgentID: "bytes", Text: "Say \x00 it"})
			if err != nil {
				t.Fatal(err)
			}
			if err := svc.Wait(ctx, r.ID); err != nil {
				t.Fatalf("the run did not finish: %v", err)
			}
			d, err := svc.Get(ctx, u, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != run.StatusSucceeded || d.ResponseMessageID == "" {
				t.Fatalf("the run is %s (%s), answer %q", d.Status, d.Error, d.ResponseMessageID)
			}
			answer, err := st.GetMessage(ctx, d.ResponseMessageID)
			if err != nil {
				t.Fatal(err)
			}
			if want := "Here\uFFFD is a bad \uFFFD byte"; answer.Text != want {
				t.Errorf("the stored answer is %q, want %q", answer.Text, want)
			}
			question, err := st.GetMessage(ctx, d.UserMessageID)
			if err != nil {
				t.Fatal(err)
			}
			if question.Text != "Say \uFFFD it" {
				t.Errorf("the stored question is %q", question.Text)
			}
			if len(d.Tools) != 1 || d.Tools[0].Result != "tool\uFFFDout\uFFFD" {
				t.Errorf("the stored tool calls: %+v", d.Tools)
			}
			// The events hold the answer as it was streamed: the NUL escaped.
			var streamed strings.Builder
			last := d.Events[len(d.Events)-1]
			for _, e := range d.Events {
				if e.Type == run.EventMessageDelta {
					var delta struct{ Text string }
					if err := json.Unmarshal(e.Data, &delta); err != nil {
						t.Fatal(err)
					}
					streamed.WriteString(delta.Text)
				}
			}
			if want := "Here\x00 is a bad \uFFFD byte"; streamed.String() != want || last.Type != run.EventRunFinished {
				t.Errorf("the events streamed %q, ending with %s; want %q, ending with run.finished", streamed.String(), last.Type, want)
			}
		})
	}
}

// refusingStore refuses every answer for what it holds, as a database that
// refuses a value does.
type refusingStore struct {
	run.Store
	answers atomic.Int64 // tries to store an answer
}

var errRefused = fault.Wrap(fault.Invalid, errors.New(`invalid byte sequence for encoding "UTF8": 0x00`), "the database refused a value")

func (s *refusingStore) WriteBatch(ctx context.Context, b *run.Batch) error {
	if len(b.Messages) > 0 {
		s.answers.Add(1)
		return errRefused
	}
	return s.Store.WriteBatch(ctx, b)
}

func (s *refusingStore) AddMessage(ctx context.Context, m *run.Message) error {
	if m.Role == run.RoleAssistant {
		s.answers.Add(1)
		return errRefused
	}
	return s.Store.AddMessage(ctx, m)
}

// An answer the database refuses for what it holds is not tried again as an
// outage would be: the run fails at once, saying so, with the answer kept in
// its events.
func TestAnswerRefusedForItsContent(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"kept ", "answer"}}))
	refusing := &refusingStore{Store: b.svc.Store}
	b.svc.Store = refusing
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, evs, ch, stop, err := startAndSubscribe(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if err := b.svc.Wait(ctx, r.ID); err != nil {
		t.Fatalf("the run did not finish: %v", err)
	}
	for e := range ch {
		evs = append(evs, e)
	}
	// The batch, the run's end on its own, the answer on its own: no more.
	if n := refusing.answers.Load(); n != 3 {
		t.Errorf("the answer was tried %d times, want 3", n)
	}
	d, err := b.svc.Get(ctx, b.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != run.StatusFailed || !strings.Contains(d.Error, "the answer could not be stored") || d.ResponseMessageID != "" {
		t.Errorf("the run: %s, error %q, answer %q", d.Status, d.Error, d.ResponseMessageID)
	}
	for name, events := range map[string][]run.Event{"stored": d.Events, "streamed": evs} {
		n := len(events)
		if n < 3 || events[n-2].Type != run.EventError || events[n-1].Type != run.EventRunFinished {
			t.Fatalf("%s events end with %v", name, events[max(n-2, 0):])
		}
		for i, e := range events {
			if e.Seq != int64(i+1) {
				t.Errorf("%s event %d has seq %d", name, i, e.Seq)
			}
		}
		var fin struct {
			Status  run.Status
			Message struct{ Text string }
		}
		if err := json.Unmarshal(events[n-1].Data, &fin); err != nil {
			t.Fatal(err)
		}
		if fin.Status != run.StatusFailed || fin.Message.Text != "kept answer" {
			t.Errorf("%s run.finished: %s", name, events[n-1].Data)
		}
	}
}

// While the database stays unreachable, the writer tries a bounded number of
// times, then gives the records up: the run ends rather than wait for ever.
func TestOutageRetriesAreBounded(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"one ", "two"}}))
	flaky := &flakyStore{Store: b.svc.Store}
	flaky.down.Store(true)
	b.svc.Store = flaky
	var logged lockedBuffer
	b.svc.Log = slog.New(slog.NewTextHandler(&logged, nil))
	// Tried again for an hour at most, but 4 times at most first.
	run.SetWriterRetry(b.svc, 5*time.Millisecond, time.Hour, 4)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Wait(ctx, r.ID); err != nil {
		t.Fatalf("the run did not finish: %v", err)
	}
	// Each write tries the batch, then each run's part: a handful of calls a try.
	if n := flaky.refused.Load(); n == 0 || n > 4*4 {
		t.Errorf("the store was tried %d times", n)
	}
	if !strings.Contains(logged.String(), "saving the end of a run") {
		t.Errorf("giving up was not logged:\n%s", logged.String())
	}
}
