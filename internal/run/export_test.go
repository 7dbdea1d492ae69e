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
// `after` and the channel of those to come (nil once the run is over).
func (s *Service) Subscribe(ctx context.Context, u *auth.User, runID string, after int64) ([]Event, <-chan Event, func(), error) {
	if _, err := s.Find(ctx, u, runID); err != nil {
		return nil, nil, nil, err
	}
	return s.subscribe(ctx, runID, after, false)
}
