package run

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/turn"
)

// Toolbox runs an agent's tool calls for one user: MCP tools through the
// manager, Relay's built-ins, and handoffs (whose effect is the graph's).
type Toolbox struct {
	MCP      *mcp.Manager
	Builtins map[string]tool.Tool
	User     *auth.User
	// Family is how results with images reach the agent's provider.
	Family mcp.Family
	// Handoffs are the agents this agent may hand the conversation to; a
	// transfer to any other is an error result.
	Handoffs []string
	// Offered are the names of the tools the agent's model was offered (its
	// request's tools), and Given the agent's own tools as configured
	// (all__mcp__<server> for all of a server's). A call of a tool that is neither
	// offered nor given is an error result, never run: a tool of another
	// agent of the run, of a server the agent does not use, or a built-in
	// it was not given. A tool given but not offered (its server could not
	// be reached, or needs the user to connect) goes to its server, which
	// says why it cannot be called.
	Offered, Given []string
	// Owner names whose calls these are (the run's id): questions of a
	// server with several calls in flight go only to calls of one owner.
	Owner string
	// Ask, when set, puts a server's question during the call callID to the
	// user (docs/mcp.md "Questions"); without it questions are declined.
	Ask func(ctx context.Context, callID string, q *mcp.Question) (*mcp.Answer, error)
	// Sample, when set, answers the sampling requests of servers that
	// enable sampling.
	Sample mcp.Sampler
}

var _ turn.ToolRunner = (*Toolbox)(nil)

// given reports whether the tool name is one of the agent's own: named in
// Given, or of a server whose tools it has all.
func (b *Toolbox) given(name string) bool {
	if slices.Contains(b.Given, name) {
		return true
	}
	_, server, ok := mcp.SplitKey(name)
	return ok && slices.ContainsFunc(b.Given, func(g string) bool {
		s, all := mcp.IsAllKey(g)
		return all && s == server
	})
}

// Run calls one tool; every failure becomes an error result the model reads.
func (b *Toolbox) Run(ctx context.Context, call llm.ToolCall) turn.ToolOutput {
	name, args := call.Function.Name, json.RawMessage(call.Function.Arguments)
	if target, ok := prompt.HandoffTarget(name); ok {
		if !slices.Contains(b.Handoffs, target) {
			return turn.ToolOutput{Text: fmt.Sprintf("Cannot transfer to agent %q: it is not an agent you can hand the conversation to.", target), IsError: true}
		}
		return turn.ToolOutput{Text: "Transferred to agent " + target + "."}
	}
	if !slices.Contains(b.Offered, name) && !b.given(name) {
		return turn.ToolOutput{Text: fmt.Sprintf("There is no tool %q among your tools: call only the tools you were given.", name), IsError: true}
	}
	if t, ok := b.Builtins[name]; ok {
		uid := ""
		if b.User != nil {
			uid = b.User.ID
		}
		res, err := t.Call(ctx, uid, args)
		if err != nil {
			return turn.ToolOutput{Text: mcp.FailureText(name, err), IsError: true}
		}
		return turn.ToolOutput{Text: res.Text, IsError: res.IsError, Sources: res.Sources, Contexts: res.Contexts}
	}
	if b.Ask != nil {
		ctx = mcp.WithAsker(ctx, b.Owner, func(ctx context.Context, q *mcp.Question) (*mcp.Answer, error) {
			return b.Ask(ctx, call.ID, q)
		})
	}
	if b.Sample != nil {
		ctx = mcp.WithSampler(ctx, b.Sample)
	}
	res, err := b.MCP.Call(ctx, MCPUser(b.User), name, args)
	if err != nil {
		return turn.ToolOutput{Text: mcp.FailureText(name, err), IsError: true}
	}
	out := mcp.Format(res, b.Family)
	o := turn.ToolOutput{Text: out.Text, IsError: out.IsError}
	if cs := mcp.Chunks(res); len(cs) > 1 || len(cs) == 1 && cs[0] != out.Text {
		o.Contexts = cs
	}
	switch b.Family {
	case mcp.FamilyOpenAI:
		if len(out.Images) > 0 {
			o.Parts = append(o.Parts, llm.Part{Type: llm.PartText, Text: out.Text})
			for _, img := range out.Images {
				o.Parts = append(o.Parts, llm.Part{Type: llm.PartImage, MIMEType: img.MIMEType, Data: img.Data})
			}
		}
	case mcp.FamilyAnthropic:
		for _, bl := range out.Blocks {
			if bl.Type == mcp.BlockImage && bl.Source != nil {
				o.Parts = append(o.Parts, llm.Part{Type: llm.PartImage, MIMEType: bl.Source.MediaType, Data: bl.Source.Data})
			} else {
				o.Parts = append(o.Parts, llm.Part{Type: llm.PartText, Text: bl.Text})
			}
		}
		if len(o.Parts) == 1 && o.Parts[0].Type == llm.PartText {
			o.Parts = nil // plain text needs no parts
		}
	}
	return o
}
