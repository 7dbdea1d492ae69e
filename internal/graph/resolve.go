package graph

import (
	"fmt"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
)

// Resolve builds the graph of the agents reached from primary. Starting with
// the primary, it loads every agent named by an edge (as source or target),
// breadth-first, and collects that agent's edges too. Each id is looked up
// once. An edge that repeats an earlier one (same type, same sets of sources
// and targets) counts once, and the first one wins. An agent that lookup
// reports as not found or not allowed is left out of the edges naming it; an
// edge left without a source or a target is dropped; both with a warning.
// Only the agents of kept edges join the graph: one named only by dropped
// edges would otherwise start the run on its own.
//
// The primary's deprecated agent_ids become direct edges primary →
// agent_ids[0] → agent_ids[1] … with ExcludeResults: with chain_type
// output_passthrough they are Passthrough edges, otherwise their prompt is
// ConvoTemplate. An agent_ids entry that cannot be used is skipped with a
// warning, so the chain closes over it. Only the primary's agent_ids count.
//
// Resolve returns an error when the primary cannot be loaded, or when lookup
// fails for another reason than not found or not allowed: a store failure must
// not silently change which agents take part.
func Resolve(primary string, lookup Lookup) (*Graph, error) {
	a, err := lookup(primary)
	if err == nil && a == nil {
		err = fault.New(fault.NotFound, "agent %q not found", primary)
	}
	if err != nil {
		return nil, fmt.Errorf("resolve agent graph: load primary agent %q: %w", primary, err)
	}
	r := &resolver{
		lookup: lookup,
		g:      &Graph{Primary: primary, Agents: map[string]*agent.Agent{}, Edges: []Edge{}},
		usable: map[string]bool{},
		loaded: map[string]*agent.Agent{},
		seen:   map[string]bool{},
	}
	r.found(primary, a)
	for len(r.queue) > 0 {
		id := r.queue[0]
		r.queue = r.queue[1:]
		if err := r.collect(id); err != nil {
			return nil, fmt.Errorf("resolve agent graph of %q: %w", primary, err)
		}
	}
	r.breakCycles()
	r.schedule()
	return r.g, nil
}

type resolver struct {
	lookup Lookup
	g      *Graph
	// usable records every id looked up: true when the agent may be used.
	usable map[string]bool
	// loaded holds the usable agents looked up, whether or not a kept edge
	// names them yet: only those that one names join the graph.
	loaded map[string]*agent.Agent
	// queue holds the agents whose edges are still to be collected.
	queue []string
	// seen holds the keys of the edges met so far, as written and as resolved.
	seen map[string]bool
}

func (r *resolver) warn(format string, args ...any) {
	r.g.Warnings = append(r.g.Warnings, fmt.Sprintf(format, args...))
}

func (r *resolver) found(id string, a *agent.Agent) {
	r.usable[id] = true
	r.g.Agents[id] = a
	r.g.Order = append(r.g.Order, id)
	r.queue = append(r.queue, id)
}

// load reports whether the agent id may take part, looking it up the first
// time it is named. The agent joins the graph only when an edge naming it is
// kept (join): one named only by dropped edges takes no part in the run, nor
// do the agents its own edges name.
func (r *resolver) load(id string) (bool, error) {
	if ok, done := r.usable[id]; done {
		return ok, nil
	}
	a, err := r.lookup(id)
	switch {
	case err == nil && a != nil:
		r.usable[id] = true
		r.loaded[id] = a
		return true, nil
	case err == nil, fault.Is(err, fault.NotFound), fault.Is(err, fault.Forbidden):
		r.usable[id] = false
		return false, nil
	default:
		return false, fmt.Errorf("load agent %q: %w", id, err)
	}
}

// collect adds the edges of the agent id, and for the primary its agent_ids
// chain.
func (r *resolver) collect(id string) error {
	a := r.g.Agents[id]
	for _, se := range a.Edges {
		e := Edge{
			From: unique(se.From.List), To: unique(se.To.List), Type: se.EdgeType,
			Prompt: se.Prompt, ExcludeResults: se.ExcludeResults, PromptKey: se.PromptKey,
			Description: se.Description, Origin: id,
		}
		if e.Type == "" {
			e.Type = agent.EdgeHandoff
		}
		if err := r.add(e); err != nil {
			return err
		}
	}
	if id != r.g.Primary || len(a.AgentIDs) == 0 {
		return nil
	}
	chain := []string{id}
	for i, next := range a.AgentIDs {
		ok, err := r.load(next)
		if err != nil {
			return err
		}
		if !ok {
			r.warn("agent_ids[%d] %q skipped: agent %q does not exist or may not be used", i, next, next)
			continue
		}
		chain = append(chain, next)
	}
	for i := 1; i < len(chain); i++ {
		e := Edge{
			From: []string{chain[i-1]}, To: []string{chain[i]}, Type: agent.EdgeDirect,
			ExcludeResults: true, Origin: OriginAgentIDs,
		}
		if a.ChainType == agent.ChainOutputPassthrough {
			e.Passthrough = true
		} else {
			e.Prompt = ConvoTemplate
		}
		if err := r.add(e); err != nil {
			return err
		}
	}
	return nil
}

// add resolves one edge as written and appends it unless it repeats an
// earlier one or is left without a source or a target.
func (r *resolver) add(e Edge) error {
	if e.Type != agent.EdgeHandoff && e.Type != agent.EdgeDirect {
		r.warn("%s dropped: edge type %q is neither handoff nor direct", describe(e), e.Type)
		return nil
	}
	if len(e.From) == 0 || len(e.To) == 0 {
		r.warn("%s dropped: it needs at least one source and one target", describe(e))
		return nil
	}
	written := key(e)
	if r.seen[written] {
		return nil
	}
	r.seen[written] = true

	var missing []string
	keep := func(ids []string) ([]string, error) {
		var out []string
		for _, id := range ids {
			ok, err := r.load(id)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, id)
			} else if !slices.Contains(missing, id) {
				missing = append(missing, id)
			}
		}
		return out, nil
	}
	from, err := keep(e.From)
	if err != nil {
		return err
	}
	to, err := keep(e.To)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		if len(from) == 0 || len(to) == 0 {
			if len(missing) == 1 {
				r.warn("%s dropped: agent %s does not exist or may not be used", describe(e), quote(missing[0]))
			} else {
				r.warn("%s dropped: agents %s do not exist or may not be used", describe(e), strings.Join(quoteAll(missing), ", "))
			}
			return nil
		}
		if len(missing) == 1 {
			r.warn("%s: agent %s left out: it does not exist or may not be used", describe(e), quote(missing[0]))
		} else {
			r.warn("%s: agents %s left out: they do not exist or may not be used", describe(e), strings.Join(quoteAll(missing), ", "))
		}
		e.From, e.To = from, to
		resolved := key(e)
		if r.seen[resolved] {
			return nil
		}
		r.seen[resolved] = true
	}
	r.join(e.From)
	r.join(e.To)
	r.g.Edges = append(r.g.Edges, e)
	return nil
}

// join adds the agents of a kept edge to the graph, those not in it yet, in
// the order the edge names them.
func (r *resolver) join(ids []string) {
	for _, id := range ids {
		if _, in := r.g.Agents[id]; !in {
			r.found(id, r.loaded[id])
		}
	}
}

// key identifies an edge by its type and the sets of its sources and targets.
func key(e Edge) string {
	from, to := slices.Clone(e.From), slices.Clone(e.To)
	slices.Sort(from)
	slices.Sort(to)
	return string(e.Type) + "\x00" + strings.Join(from, "\x01") + "\x00" + strings.Join(to, "\x01")
}

// unique returns ids without repeats, in their first order.
func unique(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// describe names an edge in a warning.
func describe(e Edge) string {
	by := "defined by " + quote(e.Origin)
	if e.Origin == OriginAgentIDs {
		by = "from agent_ids"
	}
	return fmt.Sprintf("%s edge from %s to %s (%s)", e.Type, side(e.From), side(e.To), by)
}

// side writes one id as a quoted string and several as a list.
func side(ids []string) string {
	if len(ids) == 1 {
		return quote(ids[0])
	}
	return "[" + strings.Join(quoteAll(ids), ", ") + "]"
}

func quote(id string) string { return fmt.Sprintf("%q", id) }

func quoteAll(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = quote(id)
	}
	return out
}
