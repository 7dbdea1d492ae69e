package run_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// Many runs at once share the writer's batches: every event of every run is
// stored once, in order, and a subscriber that joins part way through after
// some seq gets every later event exactly once, from the store and from
// memory, across several batches.
func TestConcurrentRunsStoreEveryEvent(t *testing.T) {
	const runs, pieces = 20, 40
	words := make([]string, pieces)
	for i := range words {
		words[i] = fmt.Sprintf("w%d ", i)
	}
	// 40 pieces 5 ms apart span several of the writer's batches.
	b := setup(t, llmtest.Func(func(*prompt.Request) llmtest.Turn {
		return llmtest.Turn{Text: words, Delay: 5 * time.Millisecond}
	}))
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() {
			r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: fmt.Sprintf("count %d", i)})
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(50+5*i) * time.Millisecond)
			// Join after seq 3, while the run streams: catch up, then follow.
			evs, ch, stop, err := b.svc.Subscribe(ctx, b.user, r.ID, 3)
			if err != nil {
				t.Error(err)
				return
			}
			defer stop()
			// The channel may repeat what the catch-up held: seqs tell.
			got, last := seqsOf(evs), int64(3)
			if len(got) > 0 {
				last = got[len(got)-1]
			}
			for ch != nil {
				e, ok := <-ch
				if !ok {
					break
				}
				if e.Seq > last {
					got, last = append(got, e.Seq), e.Seq
				}
			}
			if err := b.svc.Wait(ctx, r.ID); err != nil {
				t.Error(err)
				return
			}
			d, err := b.svc.Get(ctx, b.user, r.ID)
			if err != nil {
				t.Error(err)
				return
			}
			stored := seqsOf(d.Events)
			if n := int64(len(stored)); n != pieces+2 || stored[0] != 1 || stored[n-1] != n {
				t.Errorf("run %d: stored seqs %v, want 1 to %d", i, stored, pieces+2)
			}
			if want := stored[3:]; !slices.Equal(got, want) {
				t.Errorf("run %d: a subscriber after seq 3 got %v, want %v", i, got, want)
			}
			if d.Status != run.StatusSucceeded || d.Events[len(d.Events)-1].Type != run.EventRunFinished || len(d.Requests) != 1 {
				t.Errorf("run %d: %s, last event %s, %d requests", i, d.Status, d.Events[len(d.Events)-1].Type, len(d.Requests))
			}
		})
	}
	wg.Wait()
}

// A run whose records the store refuses (its conversation was deleted while
// it ran) does not take the other runs' records down with it.
func TestBatchWithARefusedRun(t *testing.T) {
	release := make(chan struct{})
	b := setup(t, llmtest.Func(func(req *prompt.Request) llmtest.Turn {
		if req.Messages[len(req.Messages)-1].Content == "doomed" {
			<-release
		}
		return llmtest.Turn{Text: []string{"a", "b", "c"}, Delay: 20 * time.Millisecond}
	}))
	var logged lockedBuffer
	b.svc.Log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	doomed, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "doomed"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.DeleteConversation(ctx, b.user, doomed.ConversationID); err != nil {
		t.Fatal(err)
	}
	kept, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	close(release)
	for _, id := range []string{doomed.ID, kept.ID} {
		if err := b.svc.Wait(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.svc.Get(ctx, b.user, doomed.ID); !fault.Is(err, fault.NotFound) {
		t.Errorf("the deleted run: %v, want not found", err)
	}
	d, err := b.svc.Get(ctx, b.user, kept.ID)
	if err != nil {
		t.Fatal(err)
	}
	// run.started, three message.delta, run.finished
	if d.Status != run.StatusSucceeded || len(d.Events) != 5 || d.ResponseMessageID == "" {
		t.Errorf("the other run: %s, %d events, answer %q", d.Status, len(d.Events), d.ResponseMessageID)
	}
	// The deleted run's records were refused one by one, and said so.
	if log := logged.String(); !strings.Contains(log, "saving run events") || !strings.Contains(log, doomed.ID) {
		t.Errorf("log:\n%s", log)
	}
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func seqsOf(evs []run.Event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}
