package run_test

import (
	"context"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run"
)

// Drain lets a short run finish, and stops a long one when its time is up,
// keeping the partial answer and failing the run with a reason.
func TestDrain(t *testing.T) {
	model := llmtest.New(
		llmtest.Turn{Text: []string{"quick ", "answer"}, Delay: 50 * time.Millisecond},
		llmtest.Turn{Text: []string{"slow ", "and ", "long ", "answer"}, Delay: 400 * time.Millisecond},
	)
	b := setup(t, model)
	ctx := context.Background()

	quick, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	if n := b.svc.Drain(ctx); n != 0 {
		t.Errorf("Drain stopped %d runs, want 0", n)
	}
	d, err := b.svc.Get(ctx, b.user, quick.ID)
	if err != nil || d.Status != run.StatusSucceeded {
		t.Fatalf("after Drain the quick run is %v (%v), want succeeded", d.Status, err)
	}

	slow, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	if n := b.svc.Drain(dctx); n != 1 {
		t.Errorf("Drain stopped %d runs, want 1", n)
	}
	d, err = b.svc.Get(ctx, b.user, slow.ID)
	if err != nil || d.Status != run.StatusFailed || d.Error != run.ErrShutdown.Error() {
		t.Fatalf("the slow run is %v %q (%v), want failed because of the shutdown", d.Status, d.Error, err)
	}
	th, err := b.svc.Conversation(ctx, b.user, d.ConversationID)
	if err != nil || len(th.Messages) != 2 || th.Messages[1].Text != "slow " {
		t.Fatalf("the partial answer was not kept: %+v (%v)", th, err)
	}
}
