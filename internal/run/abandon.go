package run

import (
	"errors"
	"log/slog"
)

// ErrTakenForDead is the cause of the runs a process gives up when it finds
// that another process took it for dead (it missed its heartbeats) and failed
// them already, and the error of the store refusing that process's writes
// until it registers again (docs/architecture.md, "liveness").
var ErrTakenForDead = errors.New("this Relay process was taken for dead by another, which failed its runs")

// ErrEnded is the cause of the store refusing a run's end because the run
// has ended already: another process failed it (its process was taken for
// dead), and that end stays.
var ErrEnded = errors.New("the run has ended already")

// Abandon gives up every run this process has in progress, for a process
// that was taken for dead by another: that process failed them already
// (their error, run.finished and answer are stored), so nothing more of them
// may be. Their model and tool calls are cancelled (with ErrTakenForDead),
// none of their records still waiting is stored (events, tool calls, model
// requests, their end), and their followers in this process end; a follower
// that looks again reads the failed end from the store. A run whose start is
// being stored is waited for and given up too, and so is a write under way,
// so that once Abandon returns nothing of those runs can be stored any more:
// only then may the process register again (schedule.Liveness) and start
// new runs. It returns how many runs it gave up.
func (s *Service) Abandon() int {
	s.fence.Lock()
	defer s.fence.Unlock()
	s.mu.Lock()
	lrs := make([]*liveRun, 0, len(s.live))
	for _, lr := range s.live {
		lrs = append(lrs, lr)
	}
	// Ends the store refused for good are those of runs failed since: they
	// are not stored later either.
	s.unstored = nil
	s.mu.Unlock()
	n := 0
	for _, lr := range lrs {
		if lr.abandon() {
			n++
		}
	}
	if n > 0 {
		s.Log.Warn("runs given up: this process was taken for dead and another one failed them", slog.Int("runs", n))
	}
	return n
}

// takenForDead tells the process, when a write finds its node reaped, that it
// was taken for dead (Service.TakenForDead).
func (s *Service) takenForDead() {
	if s.TakenForDead != nil {
		s.TakenForDead()
	}
}

// abandon marks the run given up, if it is not already: nothing more of it is
// stored, its subscriptions end, and its work is cancelled with
// ErrTakenForDead. It reports whether it marked it.
func (lr *liveRun) abandon() bool {
	lr.mu.Lock()
	if lr.abandoned {
		lr.mu.Unlock()
		return false
	}
	lr.abandoned = true
	// Its events are read from the store from now on: its failed end.
	lr.ended = true
	clear(lr.pending)
	lr.pending = lr.pending[:0]
	for sb := range lr.subs {
		sb.close()
		delete(lr.subs, sb)
	}
	lr.mu.Unlock()
	lr.cancel(ErrTakenForDead)
	return true
}

// isAbandoned reports whether the run was given up (abandon).
func (lr *liveRun) isAbandoned() bool {
	lr.mu.Lock()
	defer lr.mu.Unlock()
	return lr.abandoned
}
