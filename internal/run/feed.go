package run

import (
	"context"
	"sync"
)

// feed is what a subscription brings of a run's events as they come.
type feed interface {
	// next appends to buf the events that came since the last call,
	// waiting for at least one, and reports whether more may come: false
	// once the run ended or the subscriber fell behind (after the events it
	// returns). It returns ctx's cause should ctx end first.
	next(ctx context.Context, buf []Event) ([]Event, bool, error)
}

// sub is a subscription to a run of this process. The run queues its events
// for the subscriber (put) and wakes it; the subscriber takes them all at
// once (next). Memory is that of the events it is behind, where a channel
// would hold subBuffer events' room for each subscriber (22 KB: a thousand
// streams would keep 22 MB).
type sub struct {
	final bool          // only run.finished is queued
	wake  chan struct{} // holds a token while there is something to take

	mu    sync.Mutex
	queue []Event // put, not yet taken; oldest first
	over  bool    // no more events will be put
}

// put queues e for the subscriber, and reports false (closing the
// subscription) when the subscriber is subBuffer events behind: it is to be
// dropped. The run's lock is held.
func (sb *sub) put(e Event) bool {
	if sb.final && e.Type != EventRunFinished {
		return true
	}
	sb.mu.Lock()
	kept := len(sb.queue) < subBuffer
	if kept {
		sb.queue = append(sb.queue, e)
	} else {
		sb.over = true
	}
	sb.mu.Unlock()
	sb.signal()
	return kept
}

// close ends the subscription: what is queued is still taken.
func (sb *sub) close() {
	sb.mu.Lock()
	sb.over = true
	sb.mu.Unlock()
	sb.signal()
}

func (sb *sub) signal() {
	select {
	case sb.wake <- struct{}{}:
	default:
	}
}

func (sb *sub) next(ctx context.Context, buf []Event) ([]Event, bool, error) {
	for {
		sb.mu.Lock()
		if len(sb.queue) > 0 || sb.over {
			// The queue is handed over whole, buf's array taking its place:
			// two arrays serve a subscription however long it lasts.
			out, more := sb.queue, !sb.over
			sb.queue = buf[:0]
			sb.mu.Unlock()
			return out, more, nil
		}
		sb.mu.Unlock()
		select {
		case <-sb.wake:
		case <-ctx.Done():
			return buf, true, context.Cause(ctx)
		}
	}
}

// chanFeed is the feed of a run that another process runs: its events come
// on a channel from the goroutine that polls the store (follow).
type chanFeed <-chan Event

func (ch chanFeed) next(ctx context.Context, buf []Event) ([]Event, bool, error) {
	select {
	case e, ok := <-ch:
		if !ok {
			return buf, false, nil
		}
		buf = append(buf, e)
	case <-ctx.Done():
		return buf, true, context.Cause(ctx)
	}
	for len(buf) < subBuffer { // with those already behind it
		select {
		case e, ok := <-ch:
			if !ok {
				return buf, false, nil
			}
			buf = append(buf, e)
		default:
			return buf, true, nil
		}
	}
	return buf, true, nil
}
