package run

import (
	"context"
	"errors"
	"testing"
)

// A subscriber takes what was put in one go, in order; one subBuffer events
// behind is dropped, and still takes those before it learns the feed is over.
func TestSubQueue(t *testing.T) {
	ctx := t.Context()
	sb := &sub{wake: make(chan struct{}, 1)}
	for seq := int64(1); seq <= 3; seq++ {
		if !sb.put(Event{Seq: seq, Type: EventMessageDelta}) {
			t.Fatalf("put %d dropped the subscriber", seq)
		}
	}
	got, more, err := sb.next(ctx, nil)
	if err != nil || !more || len(got) != 3 || got[0].Seq != 1 || got[2].Seq != 3 {
		t.Fatalf("next = %v, %v, %v; want seqs 1 to 3, more to come", got, more, err)
	}
	// Nothing queued: next waits, until ctx ends.
	cctx, cancel := context.WithCancelCause(ctx)
	stopped := errors.New("stopped")
	cancel(stopped)
	if _, _, err := sb.next(cctx, got[:0]); !errors.Is(err, stopped) {
		t.Fatalf("next with nothing queued and ctx ended = %v, want its cause", err)
	}
	for seq := int64(4); seq < 4+subBuffer; seq++ {
		if !sb.put(Event{Seq: seq, Type: EventMessageDelta}) {
			t.Fatalf("put %d dropped the subscriber, %d behind", seq, seq-3)
		}
	}
	if sb.put(Event{Seq: 4 + subBuffer, Type: EventMessageDelta}) {
		t.Fatalf("a subscriber %d events behind was kept", subBuffer+1)
	}
	got, more, err = sb.next(ctx, got[:0])
	if err != nil || more || len(got) != subBuffer || got[0].Seq != 4 || got[len(got)-1].Seq != 3+subBuffer {
		t.Fatalf("next after the drop = %d events, more %v, %v; want seqs 4 to %d, no more", len(got), more, err, 3+subBuffer)
	}
	if got, more, err := sb.next(ctx, nil); err != nil || more || len(got) != 0 {
		t.Fatalf("next once over = %v, %v, %v; want nothing, no more", got, more, err)
	}
}

// A subscriber of run.finished alone is given nothing else.
func TestSubFinal(t *testing.T) {
	sb := &sub{final: true, wake: make(chan struct{}, 1)}
	for seq := int64(1); seq <= 2*subBuffer; seq++ {
		if !sb.put(Event{Seq: seq, Type: EventMessageDelta}) {
			t.Fatalf("put %d dropped a subscriber of run.finished alone", seq)
		}
	}
	sb.put(Event{Seq: 2*subBuffer + 1, Type: EventRunFinished})
	sb.close()
	got, more, err := sb.next(t.Context(), nil)
	if err != nil || more || len(got) != 1 || got[0].Type != EventRunFinished {
		t.Fatalf("next = %v, %v, %v; want run.finished alone, no more", got, more, err)
	}
}
