package run

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// flushEvery is how long a run's events may wait in memory before they are
// stored. Until then subscribers get them from memory; a run's last events are
// stored as soon as it ends. Followers in other processes poll the store
// every followEvery, so they see the events of a streaming run at most
// flushEvery + followEvery late; a run whose process dies loses at most
// flushEvery of them. Each flush stores a row per streaming run: at 1,000
// runs streaming, 200 ms keeps that to 5,000 rows a second.
const flushEvery = 200 * time.Millisecond

// retryFor is how long the writer keeps trying to store records that the
// database refused for a reason that may pass (unreachable, busy, failing
// over) before it gives them up, logged; retryEvery is the pause between
// tries, and maxTries bounds their number whatever they take. Records refused
// for good (their run was deleted meanwhile, or the database refuses a value
// in them: fault.Invalid) are given up at once: trying them again would be
// refused again. A run whose answer is given up fails, its answer kept in its
// events (ending.answerLost).
const (
	retryFor   = 5 * time.Minute
	retryEvery = time.Second
	maxTries   = 300
)

// writer stores what the live runs of a Service produce: their events and tool
// calls as they come, and each run's final records when it ends. One goroutine
// writes everything that is waiting, of every run, in one transaction, at most
// flushEvery after it arrived and at once when a run ends. A thousand runs
// streaming at once then cost a few transactions a second instead of a
// transaction per run per flush, which matters most to SQLite's single writer.
//
// The goroutine runs only while there is something to write.
type writer struct {
	s *Service

	mu      sync.Mutex
	running bool         // a goroutine runs loop
	writing bool         // write is under way, in that goroutine or in a caller of finish
	runs    []*liveRun   // runs with events in pending, each once (liveRun.queued)
	tools   []queuedTool // tool calls not yet stored
	ends    []*ending    // runs that ended, waiting for their last batch
	kick    chan struct{}

	// How long, how often and how many times records are tried again
	// (retryFor, retryEvery, maxTries); fixed before the first write.
	retryFor, retryEvery time.Duration
	maxTries             int

	// Only the writer uses these: its goroutine, or a caller of finish
	// that writes in its place (writing set).
	failingSince time.Time // when the database began refusing what is kept for retry; zero when it is not
	events       []Event   // the last batch's events, emptied: room for the next
	tries        int       // the writes that failed since then
	backoff      bool      // the last write kept records to retry: wait before the next
}

// queuedTool is a tool call waiting to be stored, with its run.
type queuedTool struct {
	lr *liveRun
	c  *ToolCall
}

// ending is what a run stores when it ends: its model requests, its answer,
// its final state and its last events, which reach subscribers once stored.
type ending struct {
	lr       *liveRun
	run      *Run
	answer   *Message
	requests []ModelRequest
	events   []Event
	stored   chan struct{} // closed once written (or failed and logged)
}

func newWriter(s *Service) *writer {
	return &writer{s: s, kick: make(chan struct{}, 1), retryFor: retryFor, retryEvery: retryEvery, maxTries: maxTries}
}

// queue notes that lr has events in pending.
func (w *writer) queue(lr *liveRun) {
	w.mu.Lock()
	w.runs = append(w.runs, lr)
	w.startLocked()
	w.mu.Unlock()
}

// toolCall queues a tool call of lr to be stored with the next batch.
func (w *writer) toolCall(lr *liveRun, c *ToolCall) {
	w.mu.Lock()
	w.tools = append(w.tools, queuedTool{lr, c})
	w.startLocked()
	w.mu.Unlock()
}

// finish stores a run's end, with every event and tool call of the run still
// waiting, and returns once they are written.
//
// When nothing is being written, the caller writes the batch itself, at once,
// even while the writer's goroutine waits to write what streaming runs
// emit: a run ending on a quiet server then costs no hand-over to that
// goroutine and back. Whatever is left to write then goes to that goroutine.
func (w *writer) finish(e *ending) {
	e.stored = make(chan struct{})
	w.mu.Lock()
	w.ends = append(w.ends, e)
	if !w.writing {
		w.writing = true
		w.mu.Unlock()
		w.write()
		w.mu.Lock()
		w.writing = false
		if !w.idleLocked() {
			// What came meanwhile, or what is kept to retry: the goroutine
			// writes it, in its time (flushEvery, or retryEvery after a
			// failure), but the ends of runs at once.
			w.startLocked()
			if len(w.ends) > 0 && !w.backoff {
				w.kickLocked()
			}
		}
		w.mu.Unlock()
		<-e.stored
		return
	}
	w.kickLocked()
	w.mu.Unlock()
	<-e.stored
}

// kickLocked wakes the writer's goroutine should it wait.
func (w *writer) kickLocked() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// idleLocked reports whether nothing waits to be written.
func (w *writer) idleLocked() bool { return len(w.runs) == 0 && len(w.tools) == 0 && len(w.ends) == 0 }

func (w *writer) startLocked() {
	if !w.running {
		w.running = true
		go w.loop()
	}
}

// loop writes batches until there is nothing left to write. While a caller
// of finish writes, it waits: that caller wakes it when done.
func (w *writer) loop() {
	var tick *time.Timer
	for {
		w.mu.Lock()
		idle := w.idleLocked()
		if idle {
			w.running = false
		}
		backoff := !w.writing && w.backoff // the writer's own: read while none writes
		wait := len(w.ends) == 0 || backoff || w.writing
		w.mu.Unlock()
		if idle {
			if tick != nil {
				tick.Stop()
			}
			return
		}
		if wait {
			wait := flushEvery
			if backoff {
				wait = w.retryEvery
			}
			if tick == nil {
				tick = time.NewTimer(wait)
			} else {
				tick.Reset(wait)
			}
			select {
			case <-tick.C:
			case <-w.kick:
			}
		}
		w.mu.Lock()
		if w.writing || w.idleLocked() {
			// A caller of finish writes (it wakes this one after), or wrote
			// everything while this one waited: nothing for it to write now.
			w.mu.Unlock()
			continue
		}
		w.writing = true
		w.mu.Unlock()
		w.write()
		w.mu.Lock()
		w.writing = false
		w.mu.Unlock()
	}
}

// maxReused is the most events whose room write keeps for the next batch.
const maxReused = 16 << 10

// reuse returns evs emptied, holding nothing, for the next batch; nil when
// it is larger than a batch usually is.
func reuse(evs []Event) []Event {
	if cap(evs) > maxReused {
		return nil
	}
	clear(evs)
	return evs[:0]
}

// write stores everything waiting in one batch, then takes the stored events
// out of their runs' pending lists and hands the ended runs' last events to
// their subscribers. What is of runs given up (Service.Abandon) is dropped.
func (w *writer) write() {
	w.s.fence.RLock()
	defer w.s.fence.RUnlock()
	w.mu.Lock()
	runs, tools, ends := w.runs, w.tools, w.ends
	w.runs, w.tools, w.ends = nil, nil, nil
	w.mu.Unlock()
	select { // a kick for what this batch holds is spent
	case <-w.kick:
	default:
	}

	var b Batch
	counts := make([]int, len(runs))
	// Each run's pending events as they are now: events emitted meanwhile are
	// appended after them, and only the writer takes stored ones out.
	taken := make([][]Event, len(runs))
	n := 0
	going := runs[:0]
	for _, lr := range runs {
		lr.mu.Lock()
		lr.queued = false // events emitted from now on queue the run again
		if lr.abandoned {
			clear(lr.pending)
			lr.pending = lr.pending[:0]
			lr.mu.Unlock()
			continue
		}
		i := len(going)
		going = append(going, lr)
		counts[i] = len(lr.pending)
		taken[i] = lr.pending[:counts[i]:counts[i]]
		lr.mu.Unlock()
		n += counts[i]
	}
	runs, counts, taken = going, counts[:len(going)], taken[:len(going)]
	tools = slices.DeleteFunc(tools, func(t queuedTool) bool { return t.lr.isAbandoned() })
	ends = slices.DeleteFunc(ends, func(e *ending) bool {
		if e.lr.isAbandoned() {
			close(e.stored) // nothing of it is stored
			return true
		}
		return false
	})
	for _, e := range ends {
		n += len(e.events)
	}
	b.Events = slices.Grow(w.events[:0], n)
	defer func() { w.events = reuse(b.Events) }()
	for _, evs := range taken {
		b.Events = append(b.Events, evs...)
	}
	if len(tools) > 0 {
		b.ToolCalls = make([]*ToolCall, len(tools))
		for i, t := range tools {
			b.ToolCalls[i] = t.c
		}
	}
	for _, e := range ends {
		for i := range e.requests {
			b.Requests = append(b.Requests, &e.requests[i])
		}
		b.Messages = append(b.Messages, e.answer)
		b.Runs = append(b.Runs, e.run)
		b.Events = append(b.Events, e.events...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	began := time.Now()
	err := w.s.Store.WriteBatch(ctx, &b)
	w.s.Log.Debug("stored run records", slog.Int("runs", len(runs)), slog.Int("events", len(b.Events)),
		slog.Int("ended", len(ends)), slog.Duration("took", time.Since(began)))
	var again kept
	if errors.Is(err, ErrTakenForDead) {
		// Another process took this one for dead and failed its runs: none of
		// the batch is stored, ever, and the other runs are given up too.
		w.s.Log.Warn("the database refuses run records: this process was taken for dead by another, which failed its runs")
		w.abandon(runs, tools, ends)
		err = nil
	}
	if err != nil {
		// Something in the batch is refused (a run deleted meanwhile, the
		// database unreachable, …): store each run's part on its own, so that
		// one run's trouble is not every run's.
		w.s.Log.Warn("storing a batch of run records failed; storing them one by one", slog.Any("err", err))
		if w.failingSince.IsZero() {
			w.failingSince = time.Now()
		}
		w.tries++
		// With a deadline of their own: the batch may have failed by running out of its.
		ectx, ecancel := context.WithTimeout(context.Background(), 30*time.Second)
		again = w.writeEach(ectx, runs, counts, tools, ends)
		ecancel()
	}
	if again.none() {
		w.failingSince, w.tries, w.backoff = time.Time{}, 0, false
	} else {
		w.backoff = true
	}

	for i, lr := range runs {
		lr.mu.Lock()
		if lr.abandoned { // given up meanwhile: its pending events are dropped
			lr.mu.Unlock()
			continue
		}
		if again.runs[i] { // kept, with what came since, for the next try
			if !lr.queued {
				lr.queued = true
				w.mu.Lock()
				w.runs = append(w.runs, lr)
				w.mu.Unlock()
			}
			lr.mu.Unlock()
			continue
		}
		if counts[i] > 0 {
			lr.stored = lr.pending[counts[i]-1].Seq
		}
		n := copy(lr.pending, lr.pending[counts[i]:])
		clear(lr.pending[n:])
		lr.pending = lr.pending[:n]
		lr.mu.Unlock()
	}
	w.mu.Lock()
	w.tools = append(again.tools, w.tools...)
	w.ends = append(again.ends, w.ends...)
	w.mu.Unlock()
	for _, e := range ends {
		if slices.Contains(again.ends, e) {
			continue // its run waits in finish until it is stored
		}
		e.lr.mu.Lock()
		if e.lr.abandoned {
			e.lr.mu.Unlock()
			close(e.stored)
			continue
		}
		for _, ev := range e.events {
			e.lr.stored = ev.Seq
			e.lr.deliver(ev)
		}
		e.lr.mu.Unlock()
		close(e.stored)
	}
}

// abandon gives up the runs of records that the store refused because this
// process was taken for dead, and tells the Service so that it gives up the
// others.
func (w *writer) abandon(runs []*liveRun, tools []queuedTool, ends []*ending) {
	for _, lr := range runs {
		lr.abandon()
	}
	for _, t := range tools {
		t.lr.abandon()
	}
	for _, e := range ends {
		e.lr.abandon()
	}
	w.s.takenForDead()
}

// kept is what writeEach could not store yet and will try again: the runs
// (by their index in the batch) whose events, the tool calls and the endings.
type kept struct {
	runs  map[int]bool
	tools []queuedTool
	ends  []*ending
}

func (k kept) none() bool { return len(k.runs) == 0 && len(k.tools) == 0 && len(k.ends) == 0 }

// retry reports whether records refused with err are kept to be stored later:
// when the refusal may pass (the store did not classify it as about the
// records themselves) and the database has been refusing for less than
// retryFor and fewer than maxTries writes.
func (w *writer) retry(err error) bool {
	return fault.KindOf(err) == fault.Internal && time.Since(w.failingSince) < w.retryFor && w.tries < w.maxTries
}

// writeEach stores a failed batch's records one run at a time, each part in a
// transaction of its own (so that a part is stored whole or not at all, and
// can be tried again), and returns the parts kept to be tried again; what is
// refused for good is logged and given up.
func (w *writer) writeEach(ctx context.Context, runs []*liveRun, counts []int, tools []queuedTool, ends []*ending) kept {
	k := kept{runs: map[int]bool{}}
	for i, lr := range runs {
		lr.mu.Lock()
		events := append([]Event(nil), lr.pending[:counts[i]]...)
		lr.mu.Unlock()
		if err := w.s.Store.WriteBatch(ctx, &Batch{Events: events}); err != nil {
			switch {
			case errors.Is(err, ErrTakenForDead):
				w.abandon([]*liveRun{lr}, nil, nil)
			case w.retry(err):
				k.runs[i] = true
			default:
				w.s.Log.Error("saving run events", slog.String("run_id", lr.id), slog.Any("err", err))
			}
		}
	}
	for _, t := range tools {
		if err := w.s.Store.WriteBatch(ctx, &Batch{ToolCalls: []*ToolCall{t.c}}); err != nil {
			switch {
			case errors.Is(err, ErrTakenForDead):
				w.abandon(nil, []queuedTool{t}, nil)
			case w.retry(err):
				k.tools = append(k.tools, t)
			default:
				w.s.Log.Error("saving a tool call", slog.String("run_id", t.c.RunID), slog.Any("err", err))
			}
		}
	}
	for _, e := range ends {
		b := &Batch{Messages: []*Message{e.answer}, Runs: []*Run{e.run}, Events: e.events}
		for i := range e.requests {
			b.Requests = append(b.Requests, &e.requests[i])
		}
		err := w.s.Store.WriteBatch(ctx, b)
		if err == nil {
			continue
		}
		if w.retry(err) {
			k.ends = append(k.ends, e)
			continue
		}
		if errors.Is(err, ErrTakenForDead) {
			w.abandon(nil, nil, []*ending{e})
			continue
		}
		if errors.Is(err, ErrEnded) {
			// Another process ended the run (failed it, its process taken
			// for dead): storing this end piecemeal would undo that.
			w.s.Log.Warn("the end of a run not stored: the run has ended already", slog.String("run_id", e.run.ID), slog.Any("err", err))
			continue
		}
		// Refused for good: store what can be, each on its own.
		log := w.s.Log.With(slog.String("run_id", e.run.ID))
		log.Error("saving the end of a run", slog.Any("err", err))
		for i := range e.requests {
			if err := w.s.Store.AddModelRequest(ctx, &e.requests[i]); err != nil {
				log.Error("saving a model request", slog.Any("err", err))
			}
		}
		if err := w.s.Store.AddMessage(ctx, e.answer); err != nil {
			log.Error("saving the answer", slog.Any("err", err))
			e.answerLost(err)
		}
		if err := w.s.Store.UpdateRun(ctx, e.run); err != nil {
			log.Error("saving the run", slog.Any("err", err))
			w.s.keepUnstored(e.run)
		}
		if err := w.s.Store.AppendEvents(ctx, e.events); err != nil {
			log.Error("saving run events", slog.Any("err", err))
		}
	}
	if !k.none() {
		w.s.Log.Warn("the database refuses run records; trying again", slog.Int("runs", len(k.runs)),
			slog.Int("tool_calls", len(k.tools)), slog.Int("ended", len(k.ends)), slog.Duration("for", time.Since(w.failingSince).Round(time.Second)))
	}
	return k
}

// answerLost fails the run of e, whose answer the store refused with err: the
// run has no answer message, and its last events become an error event and a
// run.finished that says so and carries the answer, so that the answer is
// kept in the run's events.
func (e *ending) answerLost(err error) {
	reason := "the answer could not be stored"
	var fe *fault.Error
	if errors.As(err, &fe) && fe.Message != "" {
		reason += ": " + fe.Message
	}
	e.run.Status, e.run.Error, e.run.ResponseMessageID = StatusFailed, reason, ""
	e.answer.RunStatus = StatusFailed
	e.lr.mu.Lock()
	defer e.lr.mu.Unlock()
	// run.finished is the last event a run numbers: it is numbered again.
	if n := len(e.events); n > 0 && e.events[n-1].Type == EventRunFinished && e.events[n-1].Seq == e.lr.seq {
		e.events = e.events[:n-1]
		e.lr.seq--
	}
	e.events = append(e.events,
		e.lr.next(RunError{Message: reason, AgentID: e.answer.AgentID}),
		e.lr.next(RunFinished{Status: e.run.Status, Error: e.run.Error, Usage: e.run.Usage, Message: e.answer}))
}
