package run_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
)

// outageStore refuses the writes of a run's end while down, as a database
// that cannot be reached does.
type outageStore struct {
	run.Store
	down atomic.Bool
}

var errUnreachable = errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")

func (s *outageStore) WriteBatch(ctx context.Context, b *run.Batch) error {
	if s.down.Load() {
		return errUnreachable
	}
	return s.Store.WriteBatch(ctx, b)
}

func (s *outageStore) UpdateRun(ctx context.Context, r *run.Run) error {
	if s.down.Load() {
		return errUnreachable
	}
	return s.Store.UpdateRun(ctx, r)
}

func (s *outageStore) AddMessage(ctx context.Context, m *run.Message) error {
	if s.down.Load() {
		return errUnreachable
	}
	return s.Store.AddMessage(ctx, m)
}

func (s *outageStore) AppendEvents(ctx context.Context, e []run.Event) error {
	if s.down.Load() {
		return errUnreachable
	}
	return s.Store.AppendEvents(ctx, e)
}

// A run whose end the store refused for longer than the writer waits is
// stored as running; once the database is back, the next message to its
// conversation stores its end first and is answered, and an abort finds it
// over: the conversation is not kept waiting for a run that has ended.
func TestRunEndRefusedDoesNotHoldTheConversation(t *testing.T) {
	for _, then := range []string{"next message", "abort"} {
		t.Run(then, func(t *testing.T) {
			release := make(chan struct{})
			b := setup(t, llmtest.Func(func(req *llm.Request) llmtest.Turn {
				if req.Messages[len(req.Messages)-1].Content == "first" {
					<-release
				}
				return llmtest.Turn{Text: []string{"ok"}}
			}))
			st := &outageStore{Store: b.svc.Store}
			b.svc.Store = st
			run.SetWriterRetry(b.svc, 10*time.Millisecond, 100*time.Millisecond, 5)
			ctx := context.Background()
			r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "first"})
			if err != nil {
				t.Fatal(err)
			}
			st.down.Store(true)
			close(release)
			if err := b.svc.Wait(ctx, r.ID); err != nil {
				t.Fatal(err)
			}
			st.down.Store(false) // the database is back
			switch then {
			case "next message":
				next, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "second", ConversationID: r.ConversationID})
				if err != nil {
					t.Fatalf("the next message once the run has ended: %v", err)
				}
				if err := b.svc.Wait(ctx, next.ID); err != nil {
					t.Fatal(err)
				}
			case "abort":
				got, err := b.svc.Abort(ctx, b.user, r.ID)
				if err != nil {
					t.Fatalf("aborting the ended run: %v", err)
				}
				if got.Status == run.StatusRunning {
					t.Errorf("the run after the abort: %+v", got)
				}
			}
			stored, err := b.svc.Store.GetRun(ctx, r.ID)
			if err != nil || stored.Status == run.StatusRunning || stored.Status == run.StatusQueued {
				t.Errorf("the first run as stored: %+v, %v", stored, err)
			}
		})
	}
}
