package graph

import (
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/agent"
)

// breakCycles drops, with a warning, every direct edge that would close a
// cycle of direct edges kept so far. Edges are taken in resolved order, so the
// primary's own edges are the last to go.
func (r *resolver) breakCycles() {
	next := map[string][]string{}
	kept := r.g.Edges[:0]
	for _, e := range r.g.Edges {
		if e.Type != agent.EdgeDirect {
			kept = append(kept, e)
			continue
		}
		if cycle := closes(next, e); cycle != nil {
			r.warn("%s dropped: it closes the cycle %s", describe(e), strings.Join(quoteAll(cycle), " → "))
			continue
		}
		for _, f := range e.From {
			for _, t := range e.To {
				if !slices.Contains(next[f], t) {
					next[f] = append(next[f], t)
				}
			}
		}
		kept = append(kept, e)
	}
	r.g.Edges = kept
}

// closes returns the cycle that adding e to the direct edges in next would
// make, from a source of e back to it, or nil.
func closes(next map[string][]string, e Edge) []string {
	for _, f := range e.From {
		for _, t := range e.To {
			if t == f {
				return []string{f, f}
			}
			if path := pathTo(next, t, f); path != nil {
				return append([]string{f}, path...)
			}
		}
	}
	return nil
}

// pathTo returns the shortest path of direct edges from one agent to another
// (both included), or nil when there is none.
func pathTo(next map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		at := queue[0]
		queue = queue[1:]
		if at == to {
			var path []string
			for ; at != from; at = prev[at] {
				path = append(path, at)
			}
			path = append(path, from)
			slices.Reverse(path)
			return path
		}
		for _, n := range next[at] {
			if _, ok := prev[n]; !ok {
				prev[n] = at
				queue = append(queue, n)
			}
		}
	}
	return nil
}

// schedule fills Start and Groups as the package doc describes.
func (r *resolver) schedule() {
	g := r.g
	sources := map[string][]string{} // direct sources of each agent
	reached := map[string]bool{}     // agents some edge leads to
	for _, e := range g.Edges {
		for _, t := range e.To {
			if e.Type != agent.EdgeDirect {
				// A handoff from an agent to itself gives no transfer tool
				// (Handoffs), so it leads nowhere: only another source's does.
				if slices.ContainsFunc(e.From, func(f string) bool { return f != t }) {
					reached[t] = true
				}
				continue
			}
			reached[t] = true
			for _, f := range e.From {
				if !slices.Contains(sources[t], f) {
					sources[t] = append(sources[t], f)
				}
			}
		}
	}

	for _, id := range g.Order {
		switch {
		case id == g.Primary:
			if len(sources[id]) == 0 {
				g.Start = append(g.Start, id)
			}
		case !reached[id]:
			g.Start = append(g.Start, id)
		}
	}
	if len(g.Start) == 0 {
		r.warn("no agent can start the run, as each one waits for another; the primary agent %q starts it", g.Primary)
		g.Start = []string{g.Primary}
	}

	r.neverRun(sources)

	placed := map[string]bool{}
	for _, id := range g.Start {
		placed[id] = true
	}
	g.Groups = [][]string{slices.Clone(g.Start)}
	for {
		var group []string
		for _, id := range g.Order {
			if !placed[id] && len(sources[id]) > 0 && !slices.ContainsFunc(sources[id], func(s string) bool { return !placed[s] }) {
				group = append(group, id)
			}
		}
		if len(group) == 0 {
			return
		}
		for _, id := range group {
			placed[id] = true
		}
		g.Groups = append(g.Groups, group)
	}
}

// neverRun warns of each agent that no run can reach (docs/api.md, the
// run.warning event): a run starts the Start agents, then each handoff target
// of an agent that runs, and each direct target once all of its direct
// sources have run. An agent that waits for one that can only come after it
// (a direct source that it alone hands off to) would otherwise be left out of
// every run without a word. sources holds the direct sources of each agent.
func (r *resolver) neverRun(sources map[string][]string) {
	g := r.g
	can := map[string]bool{}
	for _, id := range g.Start {
		can[id] = true
	}
	for grown := true; grown; {
		grown = false
		for _, id := range g.Order {
			if can[id] {
				continue
			}
			handed := slices.ContainsFunc(g.Edges, func(e Edge) bool {
				return e.Type == agent.EdgeHandoff && slices.Contains(e.To, id) &&
					slices.ContainsFunc(e.From, func(f string) bool { return can[f] && f != id })
			})
			waits := len(sources[id]) > 0 && !slices.ContainsFunc(sources[id], func(s string) bool { return !can[s] })
			if handed || waits {
				can[id], grown = true, true
			}
		}
	}
	for _, id := range g.Order {
		if can[id] {
			continue
		}
		var blocked []string
		for _, s := range sources[id] {
			if !can[s] {
				blocked = append(blocked, s)
			}
		}
		switch len(blocked) {
		case 0:
			r.warn("agent %q will never run: only agents that never run hand off to it", id)
		case 1:
			r.warn("agent %q will never run: it waits for %s, which never runs", id, quote(blocked[0]))
		default:
			r.warn("agent %q will never run: it waits for %s, which never run", id, strings.Join(quoteAll(blocked), ", "))
		}
	}
}
