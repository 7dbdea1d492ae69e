// Package turn runs one agent's turn: the model streams its answer, the tools
// it asks for run (several at once, bounded) and their results go back to it,
// round after round, until it answers without calling a tool or the turn runs
// out of steps (a step is one model call). The caller gives the request, the
// model and the tools, and hears what happens as events; agents' definitions,
// the graph between them and what a run stores are not this package's.
package turn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
)

// ToolOutput is what a tool call gave back, ready for the model.
type ToolOutput struct {
	// Text is the result as text; for a failure, the error text the model sees.
	Text string
	// Parts, when not empty, is the result with images, for providers that take them.
	Parts   []llm.Part
	IsError bool
	// Sources are what the result was drawn from, kept with the call.
	Sources []tool.Source
	// Contexts are the result's separate passages (see tool.Result.Contexts).
	Contexts []string
}

// ToolRunner runs the tools the model calls.
type ToolRunner interface {
	// Run calls one tool. Every failure the model should see (unknown tool, bad
	// arguments, timeout, the server's error) is an output with IsError; Run has
	// no error of its own.
	Run(ctx context.Context, call llm.ToolCall) ToolOutput
}

// ToolRecord is one tool call as it happened.
type ToolRecord struct {
	ID        string        `json:"id"`
	Name      string        `json:"name"`
	Arguments string        `json:"arguments"`
	Result    string        `json:"result"`
	IsError   bool          `json:"is_error"`
	Duration  time.Duration `json:"duration"`
	Step      int           `json:"step"`
	// Sources are the passages and pages the result cites.
	Sources []tool.Source `json:"sources,omitempty"`
	// Contexts are the result's passages, in order (see tool.Result.Contexts).
	// They are stored with the run's tool call, for the Ragas export, and are
	// not part of the record's JSON (messages and events do not repeat them).
	Contexts []string `json:"-"`
}

// EventKind is the kind of a turn's event.
type EventKind string

// The events of one agent's turn, in the order they happen.
const (
	EventText         EventKind = "text"          // a piece of the answer
	EventToolStarted  EventKind = "tool_started"  // a tool call is about to run
	EventToolFinished EventKind = "tool_finished" // a tool call returned
	EventUsage        EventKind = "usage"         // a step's token usage
	EventRetry        EventKind = "retry"         // the provider is being asked again
	EventImage        EventKind = "image"         // the model produced an image
)

// Event is one thing that happened in the turn.
type Event struct {
	Kind  EventKind
	Text  string
	Tool  *ToolRecord
	Usage llm.Usage
	Retry *llm.Error
	Image *llm.Image
}

// Options are what one agent's turn runs with.
type Options struct {
	Model llm.Model
	Tools ToolRunner
	// MaxSteps bounds the steps, the model calls (recursion_limit); 0 means 50.
	MaxSteps int
	// Parallel bounds the tool calls run at once; 0 means 4.
	Parallel int
	// ToolTimeout bounds each tool call; 0 means none beyond the tool's own.
	ToolTimeout time.Duration
	// Emit receives events as they happen; it must not block for long.
	Emit func(Event)
	// Stop, when it returns true for a tool call, ends the turn after that
	// step's calls (a handoff: the next agent continues).
	Stop func(call llm.ToolCall) bool
	// Client, when it returns true for a tool call, marks a function of the
	// caller's own (a tool an OpenAI-compatible client declared): the turn
	// does not run it. The step's other calls run, then the turn ends with
	// the caller's calls in Outcome.Handed, for the caller to answer.
	Client func(call llm.ToolCall) bool
	// TakeStep, when set, is asked before each step for one step of a budget
	// shared with other turns (a run's recursion_limit spans all of its
	// agents, even those running at the same time). When it returns false the
	// turn ends with ErrStepLimit, as when MaxSteps is reached.
	TakeStep func() bool
	// Fit, when set, is called before each step to keep the request inside
	// the model's context window (window.Fitter.Fit): it may cut tool results
	// and drop the oldest messages, never those after the newest user message
	// (this turn's). Its error ends the turn before anything is sent.
	Fit func(ctx context.Context, req *llm.Request) error
}

// Outcome is what one agent's turn produced.
type Outcome struct {
	// Text is the agent's answer (the text of its last step with any text).
	Text string
	// Messages are the messages the turn added after the request's own.
	Messages []llm.Message
	// Tools are every tool call with its result, in order.
	Tools []ToolRecord
	// Requests are the exact bodies sent to the provider, one per step, with
	// when each was sent and answered.
	Requests []Request
	Usage    llm.Usage
	Steps    int
	// Finish is why the model's last answer ended (llm.Turn.FinishReason:
	// stop, length, tool_calls, …); empty when no answer came.
	Finish string
	// StoppedBy is the tool call that ended the turn through Stop, if any.
	StoppedBy *llm.ToolCall
	// Handed are the calls of the last step that Options.Client claimed:
	// not run, their results for the caller to give. The last assistant
	// message of Messages holds them, without tool messages answering them.
	Handed []llm.ToolCall
}

// Request is one step's request as it was sent, for a run's trace.
type Request struct {
	// Body is the exact body sent to the provider.
	Body []byte
	// SentAt is when the step began; DoneAt when its answer ended (or failed).
	SentAt, DoneAt time.Time
	// Usage is the step's tokens, as the provider reported them.
	Usage llm.Usage
}

// ErrStepLimit is wrapped by the error of a turn that reached its step limit.
var ErrStepLimit = errors.New("step limit reached")

// Run runs one agent's turn: the model answers req, the tools it calls run
// (several at once, bounded), their results go back to it, until it answers
// without calling a tool or the step limit is reached. req is extended in
// place with the new messages. A tool_choice that forces a call (required, or
// req.ToolFunction) holds for the first step only: later steps are "auto", or
// the model could never answer. On any error (the provider failed, ctx was
// cancelled by a user abort, the step limit) the Outcome holds everything
// produced until then.
func Run(ctx context.Context, req *llm.Request, o Options) (*Outcome, error) {
	if o.MaxSteps <= 0 {
		o.MaxSteps = 50
	}
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	emit := o.Emit
	if emit == nil {
		emit = func(Event) {}
	}
	out := &Outcome{}
	start := len(req.Messages)
	defer func() { out.Messages = req.Messages[start:] }()
	for step := 1; ; step++ {
		if step > o.MaxSteps {
			return out, fmt.Errorf("%w: the agent took %d steps without finishing (recursion_limit)", ErrStepLimit, o.MaxSteps)
		}
		if o.TakeStep != nil && !o.TakeStep() {
			return out, fmt.Errorf("%w: no step left in the shared budget after %d steps of this agent (recursion_limit)", ErrStepLimit, step-1)
		}
		if o.Fit != nil {
			n := len(req.Messages)
			if err := o.Fit(ctx, req); err != nil {
				return out, err
			}
			// What was dropped came before this turn's messages.
			start = max(0, start-(n-len(req.Messages)))
		}
		out.Steps = step
		sent := time.Now()
		answer, err := o.Model.Stream(ctx, sendable(req), func(e llm.Event) {
			switch e.Kind {
			case llm.EventText:
				emit(Event{Kind: EventText, Text: e.Text})
			case llm.EventRetry:
				emit(Event{Kind: EventRetry, Retry: e.Retry})
			case llm.EventImage:
				emit(Event{Kind: EventImage, Image: e.Image})
			}
		})
		if answer != nil {
			out.Requests = append(out.Requests, Request{Body: answer.Sent, SentAt: sent.UTC(), DoneAt: time.Now().UTC(), Usage: answer.Usage})
			out.Usage = out.Usage.Add(answer.Usage)
			out.Finish = answer.FinishReason
			if answer.Usage != (llm.Usage{}) {
				emit(Event{Kind: EventUsage, Usage: answer.Usage})
			}
			if answer.Text != "" {
				out.Text = answer.Text
			}
		}
		if err != nil {
			if answer != nil && answer.Text != "" {
				req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: answer.Text})
			}
			return out, err
		}
		if req.ToolFunction != "" || req.ToolChoice == "required" {
			req.ToolFunction, req.ToolChoice = "", llm.ToolChoiceAuto
		}
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleAssistant, Content: answer.Text, ToolCalls: answer.ToolCalls, Thinking: answer.Thinking})
		if len(answer.ToolCalls) == 0 {
			return out, nil
		}
		calls := answer.ToolCalls
		if o.Client != nil {
			calls = nil
			for _, call := range answer.ToolCalls {
				if o.Client(call) {
					out.Handed = append(out.Handed, call)
				} else {
					calls = append(calls, call)
				}
			}
		}
		records := runTools(ctx, calls, o, step, emit)
		for i, call := range calls {
			out.Tools = append(out.Tools, records[i].ToolRecord)
			req.Messages = append(req.Messages, llm.Message{
				Role: llm.RoleTool, ToolCallID: call.ID, Content: records[i].Result, Parts: records[i].Parts, IsError: records[i].IsError,
			})
		}
		if err := ctx.Err(); err != nil {
			return out, context.Cause(ctx)
		}
		if len(out.Handed) > 0 {
			return out, nil
		}
		if o.Stop != nil {
			for _, call := range answer.ToolCalls {
				if o.Stop(call) {
					out.StoppedBy = &call
					return out, nil
				}
			}
		}
	}
}

// sendable returns req, or a copy of it in which the calls of tools it does
// not define are text (prompt.ForeignCalls): a call the model made of a tool
// it was not offered (a handoff whose edge was dropped) went back to it with
// its error as a result, and providers refuse a call or result of a tool the
// request does not define.
func sendable(req *llm.Request) *llm.Request {
	msgs := prompt.ForeignCalls(req.Messages, func(name string) bool {
		return slices.ContainsFunc(req.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == name })
	})
	if len(msgs) == 0 || &msgs[0] == &req.Messages[0] {
		return req
	}
	cp := *req
	cp.Messages = msgs
	return &cp
}

type toolResult struct {
	ToolRecord
	Parts []llm.Part
}

// runTools runs one step's tool calls, at most o.Parallel at once, and returns
// their results in the order of the calls. A single call runs in the
// caller's goroutine.
func runTools(ctx context.Context, calls []llm.ToolCall, o Options, step int, emit func(Event)) []toolResult {
	results := make([]toolResult, len(calls))
	var emitMu sync.Mutex
	send := func(e Event) {
		emitMu.Lock()
		defer emitMu.Unlock()
		emit(e)
	}
	run := func(i int, call llm.ToolCall, rec ToolRecord) {
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if o.ToolTimeout > 0 {
			// The cause is what the model reads in the failed call's result.
			cctx, cancel = context.WithTimeoutCause(ctx, o.ToolTimeout, fmt.Errorf("no answer within the tool timeout (%s)", o.ToolTimeout))
		}
		began := time.Now()
		res := o.Tools.Run(cctx, call)
		cancel()
		rec.Duration = time.Since(began)
		rec.Result, rec.IsError, rec.Sources, rec.Contexts = res.Text, res.IsError, res.Sources, res.Contexts
		results[i] = toolResult{ToolRecord: rec, Parts: res.Parts}
		done := rec
		send(Event{Kind: EventToolFinished, Tool: &done})
	}
	sem := make(chan struct{}, o.Parallel)
	var wg sync.WaitGroup
	for i, call := range calls {
		rec := ToolRecord{ID: call.ID, Name: call.Function.Name, Arguments: call.Function.Arguments, Step: step}
		send(Event{Kind: EventToolStarted, Tool: &rec})
		if len(calls) == 1 {
			run(i, call, rec)
			break
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			run(i, call, rec)
		})
	}
	wg.Wait()
	return results
}
