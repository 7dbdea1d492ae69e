package run

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/auth"
)

// followEvery is how often a run in another process is polled for events.
const followEvery = 250 * time.Millisecond

// finished reports whether a run's status is final.
func finished(s Status) bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// Follow yields the events of run runID after seq `after`, for user u (who
// must be able to see the run, as Find decides): first what is stored, then the rest as
// it comes — from memory while this process runs the run, by polling the
// store while another process runs it — each event once and in order. It
// ends after run.finished, which every run's events end with: a run whose
// process died is failed by another process with its last events (FailedEnd),
// and one marked finished without them gets a run.finished made from its
// stored state (closed). An error ends it too: the run not found, the store
// failing, or ctx ending (its cause). This is how every client follows a
// run: the SSE of /api/chat and its resume, /v1 streaming, relay chat.
func (s *Service) Follow(ctx context.Context, u *auth.User, runID string, after int64) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		for evs, err := range s.FollowBursts(ctx, u, runID, after) {
			if err != nil {
				yield(Event{}, err)
				return
			}
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
		}
	}
}

// FollowBursts is Follow yielding the events that are there at once
// together: what is stored in one burst, then each event as it comes with
// those already behind it, at most subBuffer. A client that writes a burst to the network
// in one go (an event stream flushed once per burst) then writes as often as
// the run emits when it keeps up, and less often when it falls behind. The
// slice is the caller's until it asks for the next.
func (s *Service) FollowBursts(ctx context.Context, u *auth.User, runID string, after int64) iter.Seq2[[]Event, error] {
	return s.followBursts(ctx, u, runID, after, false)
}

// FollowEnd is FollowBursts yielding run.finished alone: how a client waits
// for a run's end without being woken for each of its events.
func (s *Service) FollowEnd(ctx context.Context, u *auth.User, runID string) iter.Seq2[[]Event, error] {
	return s.followBursts(ctx, u, runID, 0, true)
}

func (s *Service) followBursts(ctx context.Context, u *auth.User, runID string, after int64, final bool) iter.Seq2[[]Event, error] {
	return func(yield func([]Event, error) bool) {
		if err := s.visible(ctx, u, runID); err != nil {
			yield(nil, err)
			return
		}
		var burst []Event
		over := false // run.finished is in the burst
		// add takes e into the burst when it is new.
		add := func(e Event) {
			if e.Seq <= after || over {
				return // a resubscription repeats what it had
			}
			over = e.Type == EventRunFinished
			if final && !over {
				return
			}
			after = e.Seq
			burst = append(burst, e)
		}
		// hand yields the burst, if any, and reports whether following goes on.
		hand := func() bool {
			if len(burst) == 0 {
				return !over
			}
			goOn := yield(burst, nil) && !over
			burst = burst[:0]
			return goOn
		}
		var got []Event // what the feed brought, its array used again
		for {
			evs, f, stop, err := s.subscribe(ctx, runID, after, final)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, e := range evs {
				add(e)
			}
			if !hand() {
				stop()
				return
			}
			if f == nil { // the run is over: the store had all of it
				stop()
				return
			}
			for more := true; more; {
				got, more, err = f.next(ctx, got[:0])
				if err != nil {
					stop()
					yield(nil, err)
					return
				}
				for _, e := range got {
					add(e)
				}
				if !hand() {
					stop()
					return
				}
			}
			// The run ended, or the subscriber fell behind: look again from
			// `after`.
			stop()
		}
	}
}

// follow streams the stored events of a run that another process is running,
// from seq after, by polling the store; the channel closes after the run's
// run.finished event, or as soon as the run is found finished without one
// (its process died and it was failed for it; the store keeps a finished
// run's events with or before its status) once the events stored by then are
// handed over, or on stop.
func (s *Service) follow(ctx context.Context, runID string, after int64) (<-chan Event, func()) {
	ch := make(chan Event, subBuffer)
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(ch)
		t := time.NewTicker(followEvery)
		defer t.Stop()
		last := after
		// hand passes on evs and reports whether following is over: the
		// run.finished event was handed over or the subscriber left.
		hand := func(evs []Event) bool {
			for _, e := range evs {
				select {
				case ch <- e:
					last = e.Seq
				case <-fctx.Done():
					return true
				}
				if e.Type == EventRunFinished {
					return true
				}
			}
			return false
		}
		for {
			select {
			case <-fctx.Done():
				return
			case <-t.C:
			}
			evs, err := s.Store.ListEvents(fctx, runID, last)
			if err != nil {
				return // the subscriber subscribes again from its last seq
			}
			if hand(evs) {
				return
			}
			if len(evs) > 0 {
				continue
			}
			r, err := s.Store.GetRun(fctx, runID)
			if err != nil {
				return
			}
			if finished(r.Status) {
				// Events stored with the status, after the look above.
				if evs, err := s.Store.ListEvents(fctx, runID, last); err == nil {
					hand(evs)
				}
				return
			}
		}
	}()
	return ch, cancel
}

// Streamed rebuilds from a run's events the text its agents streamed: a text
// part for each stretch of one agent's message.delta events that none of its
// tool calls broke (PartBreaks), and those texts joined as a saved answer's
// are (with a blank line). It is the answer of a run whose process died
// before saving one, so that what its user had read is kept.
func Streamed(events []Event) (string, []Part) {
	type stretch struct {
		agent string
		text  strings.Builder
	}
	var (
		all    []*stretch
		breaks PartBreaks
	)
	for _, e := range events {
		switch e.Type {
		case EventToolStarted:
			var ts ToolStarted
			if json.Unmarshal(e.Data, &ts) == nil {
				breaks.ToolStarted(ts.AgentID)
			}
		case EventMessageDelta:
			var d MessageDelta
			if err := json.Unmarshal(e.Data, &d); err != nil || d.Text == "" {
				continue
			}
			if breaks.Text(d.AgentID) || len(all) == 0 {
				all = append(all, &stretch{agent: d.AgentID})
			}
			all[len(all)-1].text.WriteString(d.Text)
		}
	}
	var (
		texts []string
		parts []Part
	)
	for _, s := range all {
		texts = append(texts, s.text.String())
		parts = append(parts, Part{Type: PartText, AgentID: s.agent, Text: s.text.String()})
	}
	return strings.Join(texts, PartSep), parts
}

// PartBreaks tells, along a run's events, where a new text part of its
// answer begins, as the flow cuts them: at an agent's text after a tool call
// of its own, or after another agent's text. The zero value is ready.
type PartBreaks struct {
	wrote, broke bool
	agent        string
}

// Text notes text of agent, not empty, and reports whether it begins a new
// part after an earlier one (which PartSep joins to it).
func (b *PartBreaks) Text(agent string) bool {
	starts := b.wrote && (b.broke || agent != b.agent)
	b.wrote, b.broke, b.agent = true, false, agent
	return starts
}

// ToolStarted notes a tool call of agent.
func (b *PartBreaks) ToolStarted(agent string) { b.broke = b.broke || agent == b.agent }
