// Package llmtest holds fakes for tests that need a model: Model, a scripted
// llm.Model that replays turns and records what it was asked, and, for tests
// of provider clients, a fake OpenAI-compatible server (Server, SSE, Client).
package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/llm"
)

// Turn is one scripted answer.
type Turn struct {
	// Text is the answer's text, each piece streamed as one EventText.
	Text []string
	// Images are streamed as EventImage events after the text.
	Images []llm.Image
	// ToolCalls are the calls the model makes, each streamed as one
	// EventToolCallDelta with its id, name and whole arguments. A call's Type
	// is "function" when empty.
	ToolCalls []llm.ToolCall
	// Usage is streamed as an EventUsage at the end, when not zero.
	Usage llm.Usage
	// FinishReason is the turn's; when empty, "tool_calls" if there are
	// tool calls and "stop" otherwise.
	FinishReason string
	// Retries is the number of EventRetry events sent before the answer,
	// as a provider client sends them after failed tries; the Turn's Retries
	// says the same.
	Retries int
	// Delay is waited before each piece (text or tool call), so that a test
	// can abort a turn midway.
	Delay time.Duration
	// Err, when set, ends the turn after its pieces were streamed: Stream
	// returns it with the partial Turn, which holds the text but no tool
	// calls, as a provider client does when a stream is cut.
	Err error
}

// Script is a sequence of turns, answered one per Stream call.
type Script []Turn

// Model is a scripted llm.Model. It is safe for concurrent use.
type Model struct {
	mu    sync.Mutex
	turns Script
	next  int
	fn    func(*llm.Request) Turn
	reqs  []*llm.Request
}

var _ llm.Model = (*Model)(nil)

// New returns a Model that answers the n-th request with turns[n], and
// fails once they are used up.
func New(turns ...Turn) *Model {
	return &Model{turns: slices.Clone(turns)}
}

// Func returns a Model that answers each request with fn's turn. fn gets a
// copy of the request; calls to it are not serialised.
func Func(fn func(req *llm.Request) Turn) *Model {
	return &Model{fn: fn}
}

// Add appends turns to the script.
func (m *Model) Add(turns ...Turn) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.turns = append(m.turns, turns...)
}

// Requests returns copies of the requests Stream got, in the order it got
// them.
func (m *Model) Requests() []*llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*llm.Request, len(m.reqs))
	for i, r := range m.reqs {
		out[i] = CloneRequest(r)
	}
	return out
}

// Stream records req and streams the next scripted turn; see llm.Model. The
// Turn's Sent is req's body as llm.Request.MarshalJSON writes it. A
// cancelled ctx ends the turn with context.Cause(ctx) and the partial Turn.
func (m *Model) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	if req == nil {
		return nil, fmt.Errorf("llmtest: nil request")
	}
	rec := CloneRequest(req)
	m.mu.Lock()
	m.reqs = append(m.reqs, rec)
	n := len(m.reqs)
	var script Turn
	fn := m.fn
	if fn == nil {
		if m.next >= len(m.turns) {
			m.mu.Unlock()
			return nil, fmt.Errorf("llmtest: no scripted turn left for request %d (the script has %d)", n, len(m.turns))
		}
		script = m.turns[m.next]
		m.next++
	}
	m.mu.Unlock()
	if fn != nil {
		script = fn(CloneRequest(req))
	}

	sent, err := req.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("llmtest: writing the request body: %w", err)
	}
	send := func(ev llm.Event) {
		if emit != nil {
			emit(ev)
		}
	}
	turn := &llm.Turn{Sent: sent, Retries: script.Retries}
	for range script.Retries {
		send(llm.Event{Kind: llm.EventRetry, Retry: &llm.Error{
			Kind: llm.ErrRateLimited, Status: 429, Message: "the provider is rate limiting requests",
		}})
	}
	var text []byte
	pause := func() error {
		if err := wait(ctx, script.Delay); err != nil {
			turn.Text = string(text)
			return err
		}
		return nil
	}
	for _, piece := range script.Text {
		if err := pause(); err != nil {
			return turn, err
		}
		text = append(text, piece...)
		send(llm.Event{Kind: llm.EventText, Text: piece})
	}
	for i := range script.Images {
		send(llm.Event{Kind: llm.EventImage, Image: &script.Images[i]})
	}
	for i, c := range script.ToolCalls {
		if err := pause(); err != nil {
			return turn, err
		}
		send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{
			Index: i, ID: c.ID, Name: c.Function.Name, ArgumentsDelta: c.Function.Arguments,
		}})
	}
	turn.Text = string(text)
	if script.Err != nil {
		return turn, script.Err
	}
	for _, c := range script.ToolCalls {
		if c.Type == "" {
			c.Type = "function"
		}
		turn.ToolCalls = append(turn.ToolCalls, c)
	}
	turn.FinishReason = script.FinishReason
	if turn.FinishReason == "" {
		turn.FinishReason = llm.FinishStop
		if len(turn.ToolCalls) > 0 {
			turn.FinishReason = llm.FinishToolCalls
		}
	}
	turn.Usage = script.Usage
	if script.Usage != (llm.Usage{}) {
		send(llm.Event{Kind: llm.EventUsage, Usage: script.Usage})
	}
	return turn, nil
}

// wait waits for d, or until ctx is done; it reports ctx's cause even when d
// is zero.
func wait(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return context.Cause(ctx)
}

// CloneRequest returns a deep copy of r: its messages, tool calls, parts,
// tools and model parameters share nothing with r.
func CloneRequest(r *llm.Request) *llm.Request {
	c := *r
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		m := &c.Messages[i]
		m.ToolCalls = slices.Clone(m.ToolCalls)
		m.Parts = slices.Clone(m.Parts)
		m.Thinking = slices.Clone(m.Thinking)
	}
	c.Tools = slices.Clone(r.Tools)
	for i := range c.Tools {
		f := &c.Tools[i].Function
		f.Parameters = slices.Clone(f.Parameters)
		if f.Strict != nil {
			strict := *f.Strict
			f.Strict = &strict
		}
	}
	if r.Params != nil {
		c.Params = cloneValue(r.Params).(map[string]any)
	}
	return &c
}

// cloneValue deep-copies the maps and slices of a decoded JSON value, or of
// a model parameter written in Go.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = cloneValue(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = cloneValue(x)
		}
		return out
	case map[string]string:
		return maps.Clone(v)
	case []string:
		return slices.Clone(v)
	case json.RawMessage:
		return slices.Clone(v)
	case []byte:
		return slices.Clone(v)
	}
	return v
}
