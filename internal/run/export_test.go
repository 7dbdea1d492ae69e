package run

import (
	"context"
	"time"

	"github.com/relay-ai/relay/internal/auth"
)

// SetWriterRetry sets how often (every), for how long (until) and how many
// times (tries) the writer of s tries records again; call it before s starts
// a run.
func SetWriterRetry(s *Service, every, until time.Duration, tries int) {
	w := s.writer()
	w.retryEvery, w.retryFor, w.maxTries = every, until, tries
}

// Subscribe is subscribe for u, as Follow checks: the stored events after
// `after` and a channel of those to come (nil once the run is over), closed
// when the feed is over.
func (s *Service) Subscribe(ctx context.Context, u *auth.User, runID string, after int64) ([]Event, <-chan Event, func(), error) {
	if _, err := s.Find(ctx, u, runID); err != nil {
		return nil, nil, nil, err
	}
	evs, f, stop, err := s.subscribe(ctx, runID, after, false)
	if f == nil {
		return evs, nil, stop, err
	}
	// The feed's events on a channel, closed when it is over or stopped.
	ch := make(chan Event)
	fctx, cancel := context.WithCancel(ctx)
	go func() {
		defer close(ch)
		var got []Event
		for more := true; more; {
			var err error
			if got, more, err = f.next(fctx, got[:0]); err != nil {
				return
			}
			for _, e := range got {
				select {
				case ch <- e:
				case <-fctx.Done():
					return
				}
			}
		}
	}()
	return evs, ch, func() { cancel(); stop() }, nil
}

// WriterRunning reports whether the goroutine of s's writer runs.
func WriterRunning(s *Service) bool {
	w := s.writer()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.running
}
