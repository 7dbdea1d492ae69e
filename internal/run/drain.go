package run

import (
	"context"
	"errors"
	"time"
)

// ErrShutdown is the cause of runs stopped because Relay is shutting down.
var ErrShutdown = errors.New("the server shut down before the run finished")

// Drain waits for the runs in progress in this process to finish, including
// runs that start meanwhile (a scheduler still firing). When ctx ends first, it
// stops those left — their partial answers are kept and they end failed with
// ErrShutdown — and waits (at most 10 seconds) for their final state to be
// stored. It returns how many runs it stopped.
func (s *Service) Drain(ctx context.Context) int {
	for {
		s.mu.Lock()
		lrs := make([]*liveRun, 0, len(s.live))
		for _, lr := range s.live {
			lrs = append(lrs, lr)
		}
		s.mu.Unlock()
		if len(lrs) == 0 {
			return 0
		}
		for _, lr := range lrs {
			select {
			case <-lr.done:
				continue
			case <-ctx.Done():
			}
			return s.stopAll()
		}
	}
}

// stopAll cancels every live run with ErrShutdown and waits for their ends.
func (s *Service) stopAll() int {
	s.mu.Lock()
	lrs := make([]*liveRun, 0, len(s.live))
	for _, lr := range s.live {
		lrs = append(lrs, lr)
	}
	s.mu.Unlock()
	for _, lr := range lrs {
		lr.cancel(ErrShutdown)
	}
	limit := time.After(10 * time.Second)
	for _, lr := range lrs {
		select {
		case <-lr.done:
		case <-limit:
			return len(lrs)
		}
	}
	return len(lrs)
}
