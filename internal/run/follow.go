package run

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// followEvery is how often a run in another process is polled for events.
const followEvery = 250 * time.Millisecond

// followQuiet is how long a finished run's events may keep arriving (they
// are written in batches after the run's status) before following stops.
const followQuiet = 5 * time.Second

// finished reports whether a run's status is final.
func finished(s Status) bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// follow streams the stored events of a run that another process is running,
// from seq after, by polling the store; the channel closes after the run's
// run.finished event, or when the run has ended without one (its process
// died) and nothing came for followQuiet, or on stop.
func (s *Service) follow(ctx context.Context, runID string, after int64) (<-chan Event, func()) {
	ch := make(chan Event, subBuffer)
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		defer close(ch)
		t := time.NewTicker(followEvery)
		defer t.Stop()
		last, quietSince := after, time.Time{}
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
			for _, e := range evs {
				select {
				case ch <- e:
					last = e.Seq
				case <-fctx.Done():
					return
				}
				if e.Type == EventRunFinished {
					return
				}
			}
			if len(evs) > 0 {
				quietSince = time.Time{}
				continue
			}
			r, err := s.Store.GetRun(fctx, runID)
			if err != nil {
				return
			}
			if finished(r.Status) {
				if quietSince.IsZero() {
					quietSince = time.Now()
				} else if time.Since(quietSince) > followQuiet {
					return
				}
			}
		}
	}()
	return ch, cancel
}

// Streamed rebuilds from a run's events the text its agents streamed: a text
// part for each stretch of one agent's message.delta events, and those texts
// joined as a saved answer's are. It is the answer of a run whose process died
// before saving one, so that what its user had read is kept.
func Streamed(events []Event) (string, []Part) {
	type stretch struct {
		agent string
		text  strings.Builder
	}
	var all []*stretch
	for _, e := range events {
		if e.Type != EventMessageDelta {
			continue
		}
		var d delta
		if err := json.Unmarshal(e.Data, &d); err != nil || d.Text == "" {
			continue
		}
		if n := len(all); n == 0 || all[n-1].agent != d.AgentID {
			all = append(all, &stretch{agent: d.AgentID})
		}
		all[len(all)-1].text.WriteString(d.Text)
	}
	var (
		texts []string
		parts []Part
	)
	for _, s := range all {
		texts = append(texts, s.text.String())
		parts = append(parts, Part{Type: PartText, AgentID: s.agent, Text: s.text.String()})
	}
	return strings.Join(texts, "\n\n"), parts
}
