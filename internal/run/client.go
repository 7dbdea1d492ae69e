package run

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/window"
)

// PartClientCall is, in an answer, a call of a function the client declared
// (an OpenAI-compatible client's tools): Relay did not run it; the client
// answers it in its next request. Tool holds its id, name and arguments.
const PartClientCall PartType = "client_tool_call"

// Client is what an OpenAI-compatible client adds to its request
// (docs/api.md "OpenAI-compatible"). It applies to the run's primary agent.
type Client struct {
	// Tools are the client's functions, offered to the model beside the
	// agent's own tools. When the model calls one, the run ends after that
	// turn and the call is the answer's (PartClientCall).
	Tools []llm.FunctionTool
	// ToolChoice is "none", "auto" or "required"; empty keeps the agent's.
	// ToolFunction names the one function the model must call. A choice that
	// forces a call holds for the first model turn only (turn.Run).
	ToolChoice, ToolFunction string
	// Params are model parameters that override the agent's
	// model_parameters for this run (temperature, max_tokens, seed, …).
	Params map[string]any
	// Continue says that History ends with the results of the client's
	// calls: the model answers them, and no user message is sent to it (the
	// request's Text is only what is stored as the user's message).
	Continue bool
}

// continues reports whether c continues from tool results; c may be nil.
func (c *Client) continues() bool { return c != nil && c.Continue }

// has reports whether name is one of the client's functions.
func (c *Client) has(name string) bool {
	return slices.ContainsFunc(c.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == name })
}

// paramAliases are the model parameters that say the same thing under other
// names: a client's parameter replaces the agent's under any of them, so that
// the body does not carry both (OpenAI refuses max_tokens with
// max_completion_tokens).
var paramAliases = [][]string{
	window.ReplyKeys,
	{"top_p", "topP"},
	{"stop", "stop_sequences", "stopSequences"},
}

// apply puts the client's tools, tool choice and parameters into the
// primary agent's request. The agent's parameters map is not changed.
func (c *Client) apply(req *llm.Request) {
	if len(c.Tools) > 0 {
		req.Tools = append(slices.Clone(req.Tools), c.Tools...)
		if req.ToolChoice == "" {
			req.ToolChoice = llm.ToolChoiceAuto
		}
	}
	if c.ToolChoice != "" {
		req.ToolChoice = c.ToolChoice
	}
	req.ToolFunction = c.ToolFunction
	req.Params = c.over(req.Params)
}

// over returns params with the client's parameters in their place, under any
// of their names (paramAliases); params itself is not changed. c may be nil.
func (c *Client) over(params map[string]any) map[string]any {
	if c == nil || len(c.Params) == 0 {
		return params
	}
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range c.Params {
		for _, names := range paramAliases {
			if slices.Contains(names, k) {
				for _, n := range names {
					delete(out, n)
				}
			}
		}
		out[k] = v
	}
	return out
}

// checkClient refuses, before anything is stored, what a client asks for
// that the run cannot do: a model parameter or a function's strict flag the
// agent's provider does not take (llm.ParamChecker), and a function named
// like one of the agent's tools, which the model could not tell apart.
func (s *Service) checkClient(ctx context.Context, u *auth.User, a *agent.Agent, c *Client) error {
	if c == nil {
		return nil
	}
	strict := slices.ContainsFunc(c.Tools, func(t llm.FunctionTool) bool { return t.Function.Strict != nil })
	if len(c.Params) > 0 || strict {
		m, _, err := s.Models(ctx, u.ID, a.Provider, a.Model)
		if err != nil {
			return err
		}
		if pc, ok := m.(llm.ParamChecker); ok {
			refused := func(field, what string, err error) error {
				return &fault.Error{Kind: fault.Invalid, Message: fmt.Sprintf("agent %q's provider %q cannot take %s", a.ID, a.Provider, what),
					Fields: []fault.FieldError{{Field: field, Message: err.Error()}}}
			}
			for _, k := range slices.Sorted(maps.Keys(c.Params)) {
				if err := pc.CheckParam(k, c.Params[k]); err != nil {
					return refused(k, k, err)
				}
			}
			for i, t := range c.Tools {
				if t.Function.Strict == nil {
					continue
				}
				if err := pc.CheckStrict(*t.Function.Strict); err != nil {
					return refused(fmt.Sprintf("tools[%d].function.strict", i), "strict", err)
				}
			}
		}
	}
	if len(c.Tools) == 0 {
		return nil
	}
	prep, err := s.Prep.Prepare(ctx, u, Request{AgentID: a.ID, Agent: a})
	if err != nil {
		return err
	}
	for i, t := range c.Tools {
		if slices.ContainsFunc(prep.Request.Tools, func(x llm.FunctionTool) bool { return x.Function.Name == t.Function.Name }) {
			return &fault.Error{Kind: fault.Invalid, Message: "a client tool has the name of one of the agent's tools",
				Fields: []fault.FieldError{{Field: fmt.Sprintf("tools[%d].function.name", i), Message: fmt.Sprintf("%q is a tool of agent %q; rename the client's", t.Function.Name, a.ID)}}}
		}
	}
	return nil
}
