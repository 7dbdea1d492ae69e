package mcp

//lint:file-ignore SA1019 MCP roots and sampling are deprecated from protocol 2026-07-28 on, and Relay keeps them for the servers that use them (docs/mcp.md "Roots and sampling").

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Question is what a server asks the user in the middle of a tool call
// (elicitation/create, docs/mcp.md "Questions").
type Question struct {
	// Server is the configured name of the server that asks.
	Server string
	// Mode is "form" (fill in RequestedSchema) or "url" (open URL).
	Mode            string
	Message         string
	RequestedSchema json.RawMessage
	URL             string
	// ElicitationID is the server's id of a URL question.
	ElicitationID string
	// Timeout is how long the user has to answer (the server's
	// elicitationTimeout); after it the question is declined.
	Timeout time.Duration
}

// The actions of an answer.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// Answer is the user's answer to a Question. Content is set only when Action
// is ActionAccept on a form question, and holds the schema's defaults for the
// fields the user left out (FillAnswer).
type Answer struct {
	Action  string
	Content map[string]any
}

// Asker puts a question to the user a tool call is made for, and waits for
// the answer. Its ctx ends when the call does (cancelled, timed out) or the
// server withdraws the question; it then returns ctx's error.
type Asker func(ctx context.Context, q *Question) (*Answer, error)

// Sampler answers a server's sampling/createMessage with a model: that of the
// agent whose call is in flight. The request's MaxTokens is already bounded
// by the server's sampling.maxTokens.
type Sampler func(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error)

// caller is who a tool call is made for, as its context carries it: what
// answers the requests the server sends during the call.
type caller struct {
	owner  string
	ask    Asker
	sample Sampler
	// hold stops the call's time limit until the returned function is called
	// (Manager.Call): a user thinking about an answer is not a stuck server.
	hold func() (release func())
	// bind calls f when the call's context ends, until the returned stop.
	bind func(f func()) (stop func() bool)
}

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// with returns ctx carrying a copy of its caller changed by f.
func withCaller(ctx context.Context, f func(c *caller)) context.Context {
	c := &caller{}
	if old := callerFrom(ctx); old != nil {
		*c = *old
	}
	f(c)
	return context.WithValue(ctx, callerKey{}, c)
}

// WithAsker returns ctx carrying ask, which puts to the user the questions a
// server asks during a tool call made with ctx. owner names whose call it is
// (a run's id): when several calls are in flight on one connection, a question
// goes to them only if they all have the same owner (docs/mcp.md "Questions").
func WithAsker(ctx context.Context, owner string, ask Asker) context.Context {
	return withCaller(ctx, func(c *caller) { c.owner, c.ask = owner, ask })
}

// WithSampler returns ctx carrying sample, which answers the sampling
// requests a server sends during a tool call made with ctx, on servers whose
// config enables sampling.
func WithSampler(ctx context.Context, sample Sampler) context.Context {
	return withCaller(ctx, func(c *caller) { c.sample = sample })
}

// withHold returns ctx carrying the function that holds its call's time limit.
func withHold(ctx context.Context, hold func() func()) context.Context {
	return withCaller(ctx, func(c *caller) { c.hold = hold })
}

// callers are the tool calls in flight on one session, oldest first.
type callers struct {
	mu    sync.Mutex
	calls []*caller
}

func (cs *callers) add(c *caller) {
	cs.mu.Lock()
	cs.calls = append(cs.calls, c)
	cs.mu.Unlock()
}

func (cs *callers) remove(c *caller) {
	cs.mu.Lock()
	cs.calls = slices.DeleteFunc(cs.calls, func(x *caller) bool { return x == c })
	cs.mu.Unlock()
}

// route finds the call a server's request belongs to. A request the SDK
// handles within its call (a multi-round-trip tools/call, protocol
// 2026-07-28) carries the call's context. Otherwise JSON-RPC does not say which
// call a request is for, and the rule of docs/mcp.md "Questions" applies: with
// one call in flight, that call; with several, the oldest, but only when every
// one was made for the same owner (one run), so that a question never reaches
// a user whose call it may not be; else none.
func (cs *callers) route(ctx context.Context) *caller {
	if c := callerFrom(ctx); c != nil && c.bind != nil {
		return c
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	switch len(cs.calls) {
	case 0:
		return nil
	case 1:
		return cs.calls[0]
	}
	owner := cs.calls[0].owner
	for _, c := range cs.calls[1:] {
		if owner == "" || c.owner != owner {
			return nil
		}
	}
	return cs.calls[0]
}

// CallTool calls a tool, with the requests the server sends during the call
// (questions, sampling) answered for the caller that ctx carries (WithAsker,
// WithSampler).
func (s *Session) CallTool(ctx context.Context, p *sdk.CallToolParams) (*sdk.CallToolResult, error) {
	c := &caller{}
	if old := callerFrom(ctx); old != nil {
		*c = *old
	}
	c.bind = func(f func()) func() bool { return context.AfterFunc(ctx, f) }
	ctx = context.WithValue(ctx, callerKey{}, c)
	s.calls.add(c)
	defer s.calls.remove(c)
	return s.ClientSession.CallTool(ctx, p)
}

// during returns a context for answering a server's request on behalf of c:
// it ends when the request's own context ends (the server cancelled it, the
// connection closed) or the call's does, and the call's time limit is held
// until done is called.
func (c *caller) during(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	stop := c.bind(cancel)
	release := func() {}
	if c.hold != nil {
		release = c.hold()
	}
	return ctx, func() { stop(); cancel(); release() }
}

// elicitHandler answers elicitation/create for a session of the server cfg.
func elicitHandler(cfg ServerConfig, calls *callers) func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	timeout := cfg.ElicitationTimeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	return func(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		c := calls.route(ctx)
		if c == nil || c.ask == nil {
			return &sdk.ElicitResult{Action: ActionDecline}, nil
		}
		p := req.Params
		q := &Question{Server: cfg.Name, Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID, Timeout: timeout}
		if q.Mode == "" {
			q.Mode = "form"
		}
		if p.RequestedSchema != nil {
			raw, err := json.Marshal(p.RequestedSchema)
			if err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "requestedSchema: " + err.Error()}
			}
			q.RequestedSchema = raw
		}
		if q.Mode == "form" {
			if _, err := Fields(q.RequestedSchema); err != nil {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
			}
		}
		actx, done := c.during(ctx)
		defer done()
		a, err := c.ask(actx, q)
		if err != nil {
			// The call ended or the question was withdrawn: nobody answered.
			return &sdk.ElicitResult{Action: ActionCancel}, nil
		}
		res := &sdk.ElicitResult{Action: a.Action}
		if a.Action == ActionAccept && q.Mode == "form" {
			res.Content = a.Content
			if res.Content == nil {
				res.Content = map[string]any{}
			}
		}
		return res, nil
	}
}

// defaultMaxTokens bounds a sampled completion when the config sets no maxTokens.
const defaultMaxTokens = 1024

// sampleHandler answers sampling/createMessage for a session of the server
// cfg, whose sampling is enabled.
func sampleHandler(cfg ServerConfig, calls *callers) func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	limit := cfg.Sampling.MaxTokens
	if limit <= 0 {
		limit = defaultMaxTokens
	}
	return func(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
		c := calls.route(ctx)
		if c == nil || c.sample == nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("no agent's tool call of MCP server %q is in flight to answer sampling", cfg.Name)}
		}
		p := *req.Params
		if p.MaxTokens <= 0 || p.MaxTokens > int64(limit) {
			p.MaxTokens = int64(limit)
		}
		sctx, done := c.during(ctx)
		defer done()
		res, err := c.sample(sctx, &p)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "sampling failed: " + err.Error()}
		}
		return res, nil
	}
}

// samplingOff refuses sampling/createMessage on a server whose config does not
// enable sampling, saying so (Relay does not declare the capability then).
func samplingOff(server string) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "sampling/createMessage" {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
					Message: fmt.Sprintf("sampling is off for MCP server %q (its config does not enable sampling)", server)}
			}
			return next(ctx, method, req)
		}
	}
}
