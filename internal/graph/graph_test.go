package graph_test

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/graph"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// directory is a fake agent store for one user: hidden agents exist but that
// user may not use them.
type directory struct {
	agents map[string]*agent.Agent
	hidden []string
	calls  map[string]int
}

func newDirectory(t *testing.T, agentsJSON string, hidden ...string) *directory {
	t.Helper()
	var list []*agent.Agent
	if err := json.Unmarshal([]byte(agentsJSON), &list); err != nil {
		t.Fatalf("agents: %v", err)
	}
	d := &directory{agents: map[string]*agent.Agent{}, hidden: hidden, calls: map[string]int{}}
	for _, a := range list {
		d.agents[a.ID] = a
	}
	return d
}

func (d *directory) lookup(id string) (*agent.Agent, error) {
	d.calls[id]++
	a, ok := d.agents[id]
	for _, h := range d.hidden {
		ok = ok && h != id
	}
	if !ok {
		return nil, fault.New(fault.NotFound, "agent %q not found", id)
	}
	return a, nil
}

// resolved is what a golden file holds: the graph and, per agent, what the
// accessors return (handoff targets, direct targets, direct sources).
type resolved struct {
	*graph.Graph
	Handoffs map[string][]string `json:"handoffs,omitempty"`
	Next     map[string][]string `json:"next,omitempty"`
	Incoming map[string][]string `json:"incoming,omitempty"`
}

func view(g *graph.Graph) resolved {
	v := resolved{Graph: g, Handoffs: map[string][]string{}, Next: map[string][]string{}, Incoming: map[string][]string{}}
	add := func(m map[string][]string, key string, ids []string) {
		for _, id := range ids {
			if !slices.Contains(m[key], id) {
				m[key] = append(m[key], id)
			}
		}
	}
	for _, id := range g.Order {
		for _, e := range g.Handoffs(id) {
			add(v.Handoffs, id, e.To)
		}
		for _, e := range g.Next(id) {
			add(v.Next, id, e.To)
		}
		for _, e := range g.Incoming(id) {
			add(v.Incoming, id, e.From)
		}
	}
	return v
}

// golden compares got with testdata/name, rewriting the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, diff)
	}
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name    string
		primary string
		agents  string
		hidden  []string
	}{
		{
			name:    "single",
			primary: "a",
			agents:  `[{"id": "a", "name": "Alpha"}]`,
		},
		{
			name:    "handoff_prompt_key",
			primary: "a",
			agents: `[
				{"id": "a", "name": "Triage", "edges": [{"from": "a", "to": "b", "edgeType": "handoff",
					"prompt": "What the billing agent should look into", "promptKey": "topic",
					"description": "Hand over questions about invoices"}]},
				{"id": "b", "name": "Billing"}
			]`,
		},
		{
			name:    "transitive",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": "a", "to": "b", "edgeType": "handoff"}]},
				{"id": "b", "edges": [{"from": "b", "to": "c", "edgeType": "handoff"}]},
				{"id": "c"}
			]`,
		},
		{
			// The same sets in another order count once and the first edge wins,
			// whichever agent defines the repeat; a list naming an id twice
			// counts it once.
			name:    "duplicates",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": ["b", "c"], "edgeType": "handoff", "prompt": "first"},
					{"from": "a", "to": ["c", "b", "c"], "edgeType": "handoff", "prompt": "second"},
					{"from": ["b", "c"], "to": "d", "edgeType": "direct"}
				]},
				{"id": "b", "edges": [
					{"from": "a", "to": ["c", "b"], "edgeType": "handoff", "prompt": "from b"},
					{"from": ["c", "b"], "to": "d", "edgeType": "direct", "prompt": "from b"}
				]},
				{"id": "c"},
				{"id": "d"}
			]`,
		},
		{
			// A lone missing target drops the edge; a missing agent in a list is
			// left out and the edge kept.
			name:    "missing_agent",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": "ghost", "edgeType": "handoff"},
					{"from": "a", "to": ["b", "ghost"], "edgeType": "direct"},
					{"from": ["ghost", "phantom"], "to": "a", "edgeType": "direct"}
				]},
				{"id": "b"}
			]`,
		},
		{
			// b is named only by edges that are dropped: it takes no part,
			// neither starting the run nor bringing in c through its own edge.
			name:    "named_by_dropped_edges_only",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "ghost", "to": "b", "edgeType": "direct"},
					{"from": "b", "to": "phantom", "edgeType": "handoff"}
				]},
				{"id": "b", "edges": [{"from": "b", "to": "c", "edgeType": "direct"}]},
				{"id": "c"}
			]`,
		},
		{
			name:    "not_allowed",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": "private", "edgeType": "handoff"},
					{"from": "a", "to": "b", "edgeType": "handoff"}
				]},
				{"id": "b"},
				{"id": "private", "name": "Someone else's agent"}
			]`,
			hidden: []string{"private"},
		},
		{
			// chain_type is empty, which means convo; the missing link is
			// skipped, so the chain goes a → b → c.
			name:    "agent_ids_convo",
			primary: "a",
			agents: `[
				{"id": "a", "agent_ids": ["b", "ghost", "c"]},
				{"id": "b"},
				{"id": "c"}
			]`,
		},
		{
			name:    "agent_ids_output_passthrough",
			primary: "a",
			agents: `[
				{"id": "a", "agent_ids": ["b", "c"], "chain_type": "output_passthrough"},
				{"id": "b"},
				{"id": "c", "agent_ids": ["a"]}
			]`,
		},
		{
			name:    "fan_out_fan_in",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": "a", "to": ["b", "c"], "edgeType": "direct", "prompt": "Review this: {results}"}]},
				{"id": "b", "edges": [{"from": ["b", "c"], "to": "d", "edgeType": "direct", "excludeResults": true, "prompt": "Merge: {convo}"}]},
				{"id": "c"},
				{"id": "d"}
			]`,
		},
		{
			// b has no incoming edge, so it starts with the primary; c waits for
			// both. e has two sources through separate edges, a and d, and waits
			// for the later one.
			name:    "two_starts_fan_in",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": ["a", "b"], "to": "c", "edgeType": "direct"},
					{"from": "c", "to": "d", "edgeType": "direct"},
					{"from": "a", "to": "e", "edgeType": "direct"},
					{"from": "d", "to": "e", "edgeType": "direct"}
				]},
				{"id": "b"},
				{"id": "c"},
				{"id": "d"},
				{"id": "e"}
			]`,
		},
		{
			name:    "direct_cycle",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": "a", "to": "b", "edgeType": "direct"}]},
				{"id": "b", "edges": [{"from": "b", "to": "c", "edgeType": "direct"}, {"from": "b", "to": "b", "edgeType": "direct"}]},
				{"id": "c", "edges": [{"from": "c", "to": "a", "edgeType": "direct"}]}
			]`,
		},
		{
			name:    "handoff_cycle",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": "a", "to": "b", "edgeType": "handoff"}]},
				{"id": "b", "edges": [{"from": "b", "to": "a", "edgeType": "handoff"}]}
			]`,
		},
		{
			// From and to as lists; an agent gets no transfer tool to itself.
			name:    "lists",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": ["a"], "to": ["b", "c"], "edgeType": "handoff"}]},
				{"id": "b", "edges": [{"from": ["b", "c"], "to": ["a", "b", "c"], "edgeType": "handoff", "promptKey": "note", "prompt": "Why"}]},
				{"id": "c"}
			]`,
		},
		{
			// A direct edge into the primary makes it wait for its sources.
			name:    "primary_waits",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": ["x", "y"], "to": "a", "edgeType": "direct", "prompt": "Summarise: {results}"}]},
				{"id": "x"},
				{"id": "y"}
			]`,
		},
		{
			// Turns after a handoff are not certain: b and c stay out of Groups.
			// Nothing leads to z, so it starts with the primary, and may hand off.
			name:    "handoff_then_direct",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": "b", "edgeType": "handoff"},
					{"from": "z", "to": "a", "edgeType": "handoff"}
				]},
				{"id": "b", "edges": [{"from": "b", "to": "c", "edgeType": "direct"}]},
				{"id": "c"},
				{"id": "z"}
			]`,
		},
		{
			// The primary waits for x, which only a handoff from the primary
			// reaches: nobody could start, so the primary does.
			name:    "nobody_starts",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": "x", "edgeType": "handoff"},
					{"from": "x", "to": "a", "edgeType": "direct"}
				]},
				{"id": "x"}
			]`,
		},
		{
			// z's edge to itself gives it no transfer tool and leads nowhere:
			// z only hands off, to b, so it starts with the primary.
			name:    "self_handoff",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [{"from": "z", "to": ["z", "b"], "edgeType": "handoff"}]},
				{"id": "z"},
				{"id": "b"}
			]`,
		},
		{
			// c waits for h, and only c hands off to h: neither ever runs, and
			// the warnings say so; d, after c, never runs either.
			name:    "never_run",
			primary: "a",
			agents: `[
				{"id": "a", "edges": [
					{"from": "a", "to": "c", "edgeType": "direct"},
					{"from": "h", "to": "c", "edgeType": "direct"},
					{"from": "c", "to": "h", "edgeType": "handoff"},
					{"from": "c", "to": "d", "edgeType": "direct"}
				]},
				{"id": "c"},
				{"id": "h"},
				{"id": "d"}
			]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirectory(t, tt.agents, tt.hidden...)
			g, err := graph.Resolve(tt.primary, d.lookup)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			for id, n := range d.calls {
				if n > 1 {
					t.Errorf("agent %q looked up %d times, want once", id, n)
				}
			}
			if len(g.Agents) != len(g.Order) {
				t.Errorf("%d agents, %d in Order", len(g.Agents), len(g.Order))
			}
			got, err := json.MarshalIndent(view(g), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name+".golden.json", append(got, '\n'))
		})
	}
}

func TestConvoTemplate(t *testing.T) {
	const want = `Based on the following conversation and analysis from previous agents, please provide your insights:

{convo}

Please add your specific expertise and perspective to this discussion.`
	if graph.ConvoTemplate != want {
		t.Errorf("ConvoTemplate = %q, want %q", graph.ConvoTemplate, want)
	}
}

func TestHandoffsFirstEdgeWins(t *testing.T) {
	d := newDirectory(t, `[
		{"id": "a", "edges": [
			{"from": "a", "to": "b", "edgeType": "handoff", "prompt": "Ask b", "promptKey": "question", "description": "To b"},
			{"from": "a", "to": ["c", "b"], "edgeType": "handoff", "prompt": "Ask either"}
		]},
		{"id": "b"},
		{"id": "c"}
	]`)
	g, err := graph.Resolve("a", d.lookup)
	if err != nil {
		t.Fatal(err)
	}
	want := []graph.Edge{
		{From: []string{"a"}, To: []string{"b"}, Type: agent.EdgeHandoff, Prompt: "Ask b", PromptKey: "question", Description: "To b", Origin: "a"},
		{From: []string{"a"}, To: []string{"c"}, Type: agent.EdgeHandoff, Prompt: "Ask either", Origin: "a"},
	}
	if diff := cmp.Diff(want, g.Handoffs("a")); diff != "" {
		t.Errorf("Handoffs(a) (-want +got):\n%s", diff)
	}
	if h := g.Handoffs("b"); h != nil {
		t.Errorf("Handoffs(b) = %v, want none", h)
	}
}

func TestResolveFails(t *testing.T) {
	down := errors.New("database is down")
	tests := []struct {
		name     string
		primary  string
		hidden   []string
		failOn   string
		wantKind fault.Kind
		wantErr  error
	}{
		{name: "missing primary", primary: "ghost", wantKind: fault.NotFound},
		{name: "primary not allowed", primary: "a", hidden: []string{"a"}, wantKind: fault.NotFound},
		{name: "store fails for a reached agent", primary: "a", failOn: "b", wantKind: fault.Internal, wantErr: down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDirectory(t, `[{"id": "a", "edges": [{"from": "a", "to": "b", "edgeType": "handoff"}]}, {"id": "b"}]`, tt.hidden...)
			lookup := func(id string) (*agent.Agent, error) {
				if id == tt.failOn {
					return nil, down
				}
				return d.lookup(id)
			}
			g, err := graph.Resolve(tt.primary, lookup)
			if err == nil {
				t.Fatalf("Resolve = %+v, want an error", g)
			}
			if k := fault.KindOf(err); k != tt.wantKind {
				t.Errorf("kind = %q, want %q (%v)", k, tt.wantKind, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v does not wrap %v", err, tt.wantErr)
			}
		})
	}
}

func TestMermaid(t *testing.T) {
	d := newDirectory(t, `[
		{"id": "planner", "name": "The \"Planner\" <lead>", "chain_type": "output_passthrough", "agent_ids": ["editor"], "edges": [
			{"from": "planner", "to": "helpdesk", "edgeType": "handoff", "promptKey": "issue", "prompt": "Describe what the user needs help with, in one sentence"},
			{"from": "planner", "to": ["researcher", "critic"], "edgeType": "direct", "prompt": "Work on the plan:\n\n{results}", "excludeResults": true}
		]},
		{"id": "helpdesk", "name": "Help desk", "edges": [{"from": "helpdesk", "to": "planner", "edgeType": "handoff"}]},
		{"id": "researcher", "name": "Researcher", "edges": [{"from": ["researcher", "critic"], "to": "writer", "edgeType": "direct"}]},
		{"id": "critic", "name": "Critic"},
		{"id": "editor", "name": "Editor"},
		{"id": "writer", "name": "Writer"}
	]`)
	g, err := graph.Resolve("planner", d.lookup)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "mermaid.golden.mmd", []byte(g.Mermaid()))
	want := [][]string{{"planner"}, {"researcher", "critic", "editor"}, {"writer"}}
	if diff := cmp.Diff(want, g.Groups); diff != "" {
		t.Errorf("Groups (-want +got):\n%s", diff)
	}
}
