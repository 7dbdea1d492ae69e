package run_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
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
	b := setup(t, llmtest.Func(func(*llm.Request) llmtest.Turn {
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
			// Join after seq 3 once more is stored, while the run streams:
			// catch up, then follow.
			if !eventually(b.stored(r.ID, 5)) {
				t.Errorf("run %d: fewer than 5 events stored after 20 s", i)
				return
			}
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

// A run whose records the store refuses (its conversation was deleted under
// it) does not take the other runs' records down with it.
func TestBatchWithARefusedRun(t *testing.T) {
	release := make(chan struct{})
	b := setup(t, llmtest.Func(func(req *llm.Request) llmtest.Turn {
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
	// The API refuses to delete a conversation with a run going; the store
	// does it once the run looks finished, as a hand in the database would.
	ended := *doomed
	ended.Status = run.StatusSucceeded
	if err := b.svc.Store.UpdateRun(ctx, &ended); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Store.DeleteConversation(ctx, doomed.ConversationID); err != nil {
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

// flakyStore refuses WriteBatch, as an unreachable database would, while down
// is set.
type flakyStore struct {
	run.Store
	down    atomic.Bool
	refused atomic.Int64
}

func (s *flakyStore) WriteBatch(ctx context.Context, b *run.Batch) error {
	if s.down.Load() {
		s.refused.Add(1)
		return errors.New("dial tcp 10.0.0.5:5432: connect: connection refused")
	}
	return s.Store.WriteBatch(ctx, b)
}

// While the database refuses writes for a while, a run's records are kept and
// stored once it is back: nothing is lost, the run ends succeeded with its
// answer, and its subscriber gets run.finished only once it is stored.
func TestRecordsKeptWhileTheDatabaseIsDown(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"one ", "two ", "three"}, Delay: 10 * time.Millisecond}))
	flaky := &flakyStore{Store: b.svc.Store}
	b.svc.Store = flaky
	var logged lockedBuffer
	b.svc.Log = slog.New(slog.NewTextHandler(&logged, nil))
	ctx := context.Background()
	flaky.down.Store(true)
	r, evs, ch, stop, err := startAndSubscribe(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The run's end waits to be stored: it does not finish while the database is down.
	waitUntil(t, func() bool { return flaky.refused.Load() >= 4 })
	select {
	case <-waitDone(b, r.ID):
		t.Fatal("the run finished while its records could not be stored")
	case <-time.After(300 * time.Millisecond):
	}
	flaky.down.Store(false)
	if err := b.svc.Wait(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	for e := range ch {
		evs = append(evs, e)
	}
	if last := evs[len(evs)-1]; last.Type != run.EventRunFinished {
		t.Errorf("the subscriber's last event is %s", last.Type)
	}
	d, err := b.svc.Get(ctx, b.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	// run.started, three message.delta, usage?, run.finished: every one stored once, in order.
	if d.Status != run.StatusSucceeded || d.ResponseMessageID == "" || len(d.Events) < 5 || d.Events[len(d.Events)-1].Type != run.EventRunFinished {
		t.Errorf("after the outage: %s, answer %q, %d events", d.Status, d.ResponseMessageID, len(d.Events))
	}
	for i, e := range d.Events {
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
	}
	if !strings.Contains(logged.String(), "trying again") {
		t.Errorf("the outage was not logged:\n%s", logged.String())
	}
}

func startAndSubscribe(ctx context.Context, b *bundle) (*run.Run, []run.Event, <-chan run.Event, func(), error) {
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "count"})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	evs, ch, stop, err := b.svc.Subscribe(ctx, b.user, r.ID, 0)
	return r, evs, ch, stop, err
}

func waitDone(b *bundle, id string) <-chan struct{} {
	done := make(chan struct{})
	go func() { _ = b.svc.Wait(context.Background(), id); close(done) }()
	return done
}

// waitUntil polls ok until it holds and returns as soon as it does, failing
// the test if it does not within 20 s: what it waits for happens on the
// service's own goroutines, which give the test nothing to block on.
func waitUntil(t *testing.T, ok func() bool) {
	t.Helper()
	if !eventually(ok) {
		t.Fatal("timed out")
	}
}

// eventually is waitUntil for any goroutine: it reports whether ok came to
// hold within 20 s.
func eventually(ok func() bool) bool {
	if ok() {
		return true
	}
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if ok() {
				return true
			}
		case <-deadline.C:
			return ok()
		}
	}
}

// stored reports whether at least n of run id's events are in the store.
func (b *bundle) stored(id string, n int) func() bool {
	return func() bool {
		d, err := b.svc.Get(context.Background(), b.user, id)
		return err == nil && len(d.Events) >= n
	}
}

// batchCounter is a store that counts the batches written, and those with
// nothing in them.
type batchCounter struct {
	run.Store
	batches, empty atomic.Int32
}

func (s *batchCounter) WriteBatch(ctx context.Context, b *run.Batch) error {
	s.batches.Add(1)
	if len(b.Events) == 0 && len(b.ToolCalls) == 0 && len(b.Requests) == 0 && len(b.Messages) == 0 && len(b.Runs) == 0 {
		s.empty.Add(1)
	}
	return s.Store.WriteBatch(ctx, b)
}

// byQuestion answers "slow" as a gatedModel does and anything else at once.
type byQuestion struct{ slow *gatedModel }

func (m byQuestion) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	if last := req.Messages[len(req.Messages)-1]; last.Content == "slow" {
		return m.slow.Stream(ctx, req, emit)
	}
	emit(llm.Event{Kind: llm.EventText, Text: "quick"})
	return &llm.Turn{Text: "quick", FinishReason: "stop"}, nil
}

// A run that ends while another streams writes what the other has waiting
// with its own end; the writer's goroutine, which was to write it later,
// then finds nothing to write, and writes nothing: no empty transaction.
func TestNoEmptyBatches(t *testing.T) {
	slow := &gatedModel{first: 1, emitted: make(chan struct{}), gate: make(chan struct{})}
	b := setup(t, byQuestion{slow})
	counter := &batchCounter{Store: b.svc.Store}
	b.svc.Store = counter
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	a, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	<-slow.emitted // a's first events wait for the writer's goroutine
	q, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "quick"})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Wait(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return !run.WriterRunning(b.svc) })
	close(slow.gate)
	if err := b.svc.Wait(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if n := counter.empty.Load(); n > 0 {
		t.Errorf("%d of %d batches written had nothing in them", n, counter.batches.Load())
	}
	for _, id := range []string{a.ID, q.ID} {
		d, err := b.svc.Get(ctx, b.user, id)
		if err != nil || d.Status != run.StatusSucceeded || len(d.Events) == 0 || d.Events[len(d.Events)-1].Type != run.EventRunFinished {
			t.Fatalf("run %s after: %v", id, err)
		}
		for i, e := range d.Events {
			if e.Seq != int64(i+1) {
				t.Errorf("run %s: event %d has seq %d", id, i, e.Seq)
			}
		}
	}
}
