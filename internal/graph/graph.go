// Package graph owns the agents and edges reached from a primary agent: how
// they are resolved, and how a run executes them (a flow).
//
// Resolve does the breadth-first discovery through edges, de-duplication,
// dropping edges to agents that cannot be used, turning the deprecated
// agent_ids chain into direct edges, breaking cycles of direct edges, and
// working out which agents start a run and which run together. Execute runs
// the resolved graph: who runs when, from which messages, on one budget of
// steps, and what the answer keeps (see Executing a flow).
//
// The package does no I/O: agents are loaded through a Lookup, and each
// agent's turn is run through a Runner, that the caller passes in. The same
// resolution serves chat runs, scheduled runs and previews; a run implements
// the Runner, and makes what happens durable.
//
// # Who starts and who runs together
//
// Start holds the agents that begin the run, together:
//
//   - the primary agent, unless a direct edge leads into it (then it waits for
//     its sources like any other direct target, so a primary can aggregate the
//     work of agents that run before it);
//   - every other agent that no edge of any kind leads to (docs/agents.md
//     "Edges", parallel). Such an agent can only ever run at the start: one
//     named only as the source of handoff edges starts too, and may then hand
//     off. Its handoff to itself, which gives no transfer tool, leads nowhere.
//
// If that leaves nobody (the primary waits for an agent that only a handoff
// reaches), the primary starts anyway and a warning says so. An agent that no
// run can reach (it waits for an agent that only it hands off to, or for one
// that never runs) is named in a warning too.
//
// Groups layers the direct edges from Start: Groups[0] is Start, and an agent
// joins the first group after all of its direct sources have run. A source with
// several direct targets thus starts them together, and a target with several
// sources waits for all of them. Groups lists only the turns that are certain:
// a handoff target runs only if its source calls the transfer tool, so it and
// the direct targets that wait for it are not in Groups; the run starts them
// when their sources finish (see Next and Incoming). With only handoff edges,
// Start and Groups hold the primary alone.
//
// Direct edges must not form a cycle, since a target waits for its sources.
// Edges are taken in resolved order and the one that closes a cycle is dropped
// with a warning. Handoff cycles are kept: an agent may hand back to the one
// that handed to it, and the run's step budget ends a loop.
//
// # Executing a flow
//
// Execute starts the agents of Start together. When an agent finishes its
// turn, the agents it handed off to in its last step run, together with the
// targets of its direct edges whose sources have now all finished (each
// target once). A handoff target continues its source's conversation: what
// the source started from, what it added, and a note naming it with the value
// it passed. A direct target starts from the conversation, this run's messages
// unless its edges exclude them, and the prompts of its edges ({results} and
// {convo} become message buffers, prompt.Buffer); a passthrough edge's prompt
// is the source's last answer (docs/agents.md "Edges").
//
// All agents draw on one budget of steps, the primary's recursion_limit, even
// those running at the same time. The first failure ends the flow and stops
// the agents still running; a call of one of the caller's own functions ends
// it too, for the caller to answer. The answer is every agent's text in the
// order they finished (only the last one's with hide_sequential_outputs) and
// every tool call, as they happened.
package graph

import (
	"slices"

	"github.com/relay-ai/relay/internal/agent"
)

// Lookup loads the agent with the given id for the user of the run. It returns
// an error classified as fault.NotFound (or fault.Forbidden) when the agent does
// not exist or the user may not use it; Resolve drops the edges naming such an
// agent. Any other error is an infrastructure failure and ends the resolution.
type Lookup func(id string) (*agent.Agent, error)

// OriginAgentIDs is the Origin of the direct edges made from the primary
// agent's deprecated agent_ids chain.
const OriginAgentIDs = "agent_ids"

// ConvoTemplate is the prompt of the edges of an agent_ids chain with
// chain_type convo: the next agent sees the conversation buffer wrapped in it.
const ConvoTemplate = "Based on the following conversation and analysis from previous agents, please provide your insights:\n\n{convo}\n\nPlease add your specific expertise and perspective to this discussion."

// Edge is a resolved edge: its agents all exist and may be used, and no other
// resolved edge has the same type and the same sets of sources and targets.
// From and To keep the order in which they were written, without repeats.
type Edge struct {
	From []string       `json:"from"`
	To   []string       `json:"to"`
	Type agent.EdgeType `json:"type"`
	// Prompt is, for a handoff, the description of the transfer tool's
	// parameter; for a direct edge, a user message for the target in which
	// {results} and {convo} are replaced by message buffers.
	Prompt string `json:"prompt,omitempty"`
	// ExcludeResults makes a direct target see the conversation as the run
	// began (the user's message of this run the last of it) and the prompt,
	// without what the agents of this run said.
	ExcludeResults bool `json:"excludeResults,omitempty"`
	// PromptKey names the handoff tool's parameter; empty means the default.
	PromptKey   string `json:"promptKey,omitempty"`
	Description string `json:"description,omitempty"`
	// Passthrough marks an agent_ids edge with chain_type output_passthrough:
	// the target's prompt is the source's last assistant message, verbatim, or
	// the buffer of this run's messages when there is none. Prompt is empty.
	Passthrough bool `json:"passthrough,omitempty"`
	// Origin is the id of the agent whose spec holds the edge, or
	// OriginAgentIDs for an edge of the primary's agent_ids chain.
	Origin string `json:"origin"`
}

// Graph is everything a run needs to know about the agents reached from its
// primary agent. Build it with Resolve; treat it as read-only.
type Graph struct {
	Primary string `json:"primary"`
	// Agents holds every agent reached, by id.
	Agents map[string]*agent.Agent `json:"-"`
	// Order lists the ids of Agents in the order they were discovered,
	// breadth-first from the primary.
	Order []string `json:"order"`
	// Edges are the resolved edges: the primary's edges, then its agent_ids
	// chain, then the edges of the other agents in discovery order (each
	// agent's in the order it lists them).
	Edges []Edge `json:"edges"`
	// Start lists the agents that begin the run together (see the package doc).
	Start []string `json:"start"`
	// Groups lists the agents whose turn is certain, in the order they run;
	// the agents of one group run together (see the package doc).
	Groups [][]string `json:"groups"`
	// Warnings say what was dropped or will never run, for the run to report.
	Warnings []string `json:"warnings,omitempty"`
}

// Handoffs returns the transfer tools of an agent: one edge per agent it may
// hand off to, with From holding only that agent and To only the target. When
// several handoff edges name the same target, the first one gives the tool its
// prompt, prompt key and description. An agent gets no tool to itself.
func (g *Graph) Handoffs(from string) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.Type != agent.EdgeHandoff || !slices.Contains(e.From, from) {
			continue
		}
		for _, to := range e.To {
			if to == from || slices.ContainsFunc(out, func(h Edge) bool { return h.To[0] == to }) {
				continue
			}
			h := e
			h.From, h.To = []string{from}, []string{to}
			out = append(out, h)
		}
	}
	return out
}

// Next returns the direct edges leaving an agent: when it finishes, their
// targets may run (each once all of its own sources have finished).
func (g *Graph) Next(from string) []Edge {
	return g.direct(func(e Edge) bool { return slices.Contains(e.From, from) })
}

// Incoming returns the direct edges entering an agent. The agent runs once
// every source of every one of them has finished: a fan-in is a barrier.
func (g *Graph) Incoming(to string) []Edge {
	return g.direct(func(e Edge) bool { return slices.Contains(e.To, to) })
}

func (g *Graph) direct(keep func(Edge) bool) []Edge {
	var out []Edge
	for _, e := range g.Edges {
		if e.Type == agent.EdgeDirect && keep(e) {
			e.From, e.To = slices.Clone(e.From), slices.Clone(e.To)
			out = append(out, e)
		}
	}
	return out
}
