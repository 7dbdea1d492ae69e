package graph

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/agent"
)

// labelLength is how many characters of a prompt an edge label shows.
const labelLength = 40

// Mermaid draws the graph as a Mermaid flowchart: one node per agent, named
// n0, n1, … in discovery order and labelled with the agent's name and id;
// handoff edges dashed, direct edges solid, with shortened prompts in their
// labels; the agents of Start drawn with a thick border.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	node := make(map[string]string, len(g.Order))
	for i, id := range g.Order {
		node[id] = fmt.Sprintf("n%d", i)
		text := id
		if a := g.Agents[id]; a != nil && strings.TrimSpace(a.Name) != "" {
			text = oneLine(a.Name) + " (" + id + ")"
		}
		fmt.Fprintf(&b, "    %s[\"%s\"]\n", node[id], escape(text))
	}
	nodes := func(ids []string, sep string) string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[i] = node[id]
		}
		return strings.Join(out, sep)
	}
	for _, e := range g.Edges {
		arrow := "-->"
		if e.Type == agent.EdgeHandoff {
			arrow = "-.->"
		}
		if label := edgeLabel(e); label != "" {
			arrow += "|\"" + escape(label) + "\"|"
		}
		fmt.Fprintf(&b, "    %s %s %s\n", nodes(e.From, " & "), arrow, nodes(e.To, " & "))
	}
	if len(g.Start) > 0 {
		b.WriteString("    classDef start stroke-width:3px\n")
		fmt.Fprintf(&b, "    class %s start\n", nodes(g.Start, ","))
	}
	return b.String()
}

// edgeLabel says what an edge carries: for a handoff, its parameter and
// prompt; for a direct edge, its prompt and how results pass.
func edgeLabel(e Edge) string {
	if e.Type == agent.EdgeHandoff {
		label := "handoff"
		switch {
		case e.Prompt != "" && e.PromptKey != "":
			label += ": " + e.PromptKey + " = " + shorten(e.Prompt)
		case e.Prompt != "":
			label += ": " + shorten(e.Prompt)
		}
		return label
	}
	var parts []string
	if e.Passthrough {
		parts = append(parts, "last output")
	}
	if e.Prompt != "" {
		parts = append(parts, shorten(e.Prompt))
	}
	if e.ExcludeResults {
		parts = append(parts, "excludeResults")
	}
	return strings.Join(parts, " · ")
}

// shorten puts text on one line and cuts it to labelLength characters.
func shorten(text string) string {
	text = oneLine(text)
	if utf8.RuneCountInString(text) <= labelLength {
		return text
	}
	r := []rune(text)
	return strings.TrimSpace(string(r[:labelLength-1])) + "…"
}

func oneLine(text string) string { return strings.Join(strings.Fields(text), " ") }

// escape writes text so that it is safe inside a quoted Mermaid label.
func escape(text string) string {
	return strings.NewReplacer(`#`, "#35;", `"`, "#quot;", `<`, "#lt;", `>`, "#gt;").Replace(text)
}
