package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/turn"
)

// Runner runs the agents of a flow, one turn at a time, and hears what they
// do. A run implements it: it prepares each agent's request with the agent's
// model and tools, and streams and stores what happens.
type Runner interface {
	// Turn runs t.AgentID's turn with turn.Run, from t.Messages, with
	// t.Options as the flow set them (its step budget, the handoffs that end
	// the turn, where the events go) and the model, tools and the rest the
	// runner adds. The outcome is nil only with an error, when the turn
	// failed before it started (the agent's request could not be prepared).
	Turn(ctx context.Context, t Turn) (*turn.Outcome, error)
	// Event reports one event of an agent's turn as it happens, once the flow
	// has taken note of it. Agents running together report theirs from
	// goroutines of their own; Event must not block for long.
	Event(agentID string, e turn.Event)
}

// Turn is one agent's turn in a flow, as Runner.Turn runs it.
type Turn struct {
	// AgentID is the agent taking the turn, and Agent its definition.
	AgentID string
	Agent   *agent.Agent
	// Graph is the flow's graph: the agent's transfer tools are its
	// Handoffs(AgentID), and only the primary agent answers the caller.
	Graph *Graph
	// Messages are the conversation the agent answers: the run's messages and
	// what the flow gives it (its direct edges' prompts, a handoff's note).
	Messages []llm.Message
	// Options are those of turn.Run that the flow sets: MaxSteps, TakeStep,
	// Stop and Emit.
	Options turn.Options
}

// Input is what a flow starts from.
type Input struct {
	// Messages are what the start agents are given: the conversation and the
	// message, or the conversation alone when it ends with what the agents
	// answer (the results of an OpenAI-compatible client's tool calls).
	Messages []llm.Message
	// DefaultSteps is the recursion_limit of a primary agent that sets none
	// (0 means 50); StepLimit, when above 0, caps it.
	DefaultSteps, StepLimit int
}

// steps is the flow's budget of steps (model calls) for all of its agents:
// the primary agent's recursion_limit.
func (in Input) steps(primary *agent.Agent) int {
	n := primary.RecursionLimit
	if n <= 0 {
		n = in.DefaultSteps
	}
	if n <= 0 {
		n = 50
	}
	if in.StepLimit > 0 && n > in.StepLimit {
		n = in.StepLimit
	}
	return n
}

// PartKind is what a Part of a flow's answer holds.
type PartKind string

// The kinds of a flow's parts.
const (
	// PartText is what an agent said (Text).
	PartText PartKind = "text"
	// PartTool is a tool call with its result (Tool).
	PartTool PartKind = "tool_call"
	// PartImage is a picture a model produced (Image).
	PartImage PartKind = "image"
	// PartClientCall is a call of one of the caller's functions, which the
	// turn did not run (turn.Options.Client): Tool holds its id, name and
	// arguments.
	PartClientCall PartKind = "client_tool_call"
)

// Part is one piece of a flow's answer, credited to the agent that produced it.
type Part struct {
	Kind PartKind
	// AgentID is the agent that produced the part.
	AgentID string
	// Text, Tool or Image is what the part holds, as its Kind says.
	Text  string
	Tool  *turn.ToolRecord
	Image *llm.Image
}

// PartSep joins the text parts of an answer into its text: a blank line, as
// between the texts of agents (docs/api.md "POST /api/chat").
const PartSep = "\n\n"

// Result is what the agents of a flow produced: the answer to keep.
type Result struct {
	// Text is the text parts of Parts joined with a blank line: every
	// agent's text, in the order they finished, or with the primary agent's
	// hide_sequential_outputs only the last one's.
	Text string
	// Parts are the agents' text (with hide_sequential_outputs only the last
	// one's) and tool calls as they happened, agents in the order they
	// finished; then the images the models produced; then the calls of the
	// caller's functions. The conversation's next run replays them to the
	// models in that order, as they made them.
	Parts []Part
	// Usage is the tokens of every step of every agent.
	Usage llm.Usage
}

// AgentError is the failure of one agent of a flow, naming it, so that the
// failure is credited to that agent.
type AgentError struct {
	// AgentID is the agent that failed, and Err its failure.
	AgentID string
	Err     error
}

func (e *AgentError) Error() string { return e.Err.Error() }
func (e *AgentError) Unwrap() error { return e.Err }

// Execute runs the flow of g through r (docs/agents.md "Edges"): the start
// agents together, each direct target once all its sources have finished,
// and the handoffs each agent calls as it calls them, all on one budget of
// steps. When an agent finishes, the handoffs it called run, and so does each
// target of its direct edges whose sources have all finished, each such
// target once. The first failure ends the flow: the agents still running stop,
// and Execute returns it as an *AgentError. The Result holds what the agents
// produced, even then.
func Execute(ctx context.Context, g *Graph, r Runner, in Input) (*Result, error) {
	primary := g.Agents[g.Primary]
	f := &flow{g: g, r: r, in: in, steps: in.steps(primary),
		started: map[string]bool{}, finished: map[string]bool{}, lastText: map[string]string{}}
	f.budget = f.steps
	// The first failure ends the flow: the agents still running stop with it.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.stop = cancel
	var start []Turn
	for _, id := range g.Start {
		f.started[id] = true
		start = append(start, Turn{AgentID: id, Messages: f.inputFor(id)})
	}
	f.spawn(ctx, start)
	f.wg.Wait()
	f.mu.Lock()
	err := f.err
	f.mu.Unlock()
	return f.result(primary.HideSequentialOutputs), err
}

// flow is one execution of a graph.
type flow struct {
	g     *Graph
	r     Runner
	in    Input
	steps int // the budget the flow started with

	wg   sync.WaitGroup          // the agents running on goroutines of their own
	stop context.CancelCauseFunc // ends the agents still running when one fails

	mu       sync.Mutex
	err      error           // the flow's first failure
	started  map[string]bool // direct targets (and start agents) already started
	finished map[string]bool // agents that finished a turn without failing
	budget   int             // steps left in the flow (recursion_limit)
	runMsgs  []llm.Message   // what the agents added, in order
	lastText map[string]string
	texts    []Part   // each agent's answer, in the order they finished
	textAt   [][2]int // the parts of each answer of texts: f.parts[at[0]:at[1]]
	images   []Part   // images the models produced, in order
	parts    []Part   // each agent's text and tool calls as they happened, agents in the order they finished
	handed   []Part   // calls of the caller's functions
	usage    llm.Usage
}

// handoffPreamble introduces the handed-over conversation to the target.
func handoffPreamble(from *agent.Agent) string {
	name := from.Name
	if name == "" {
		name = from.ID
	}
	return fmt.Sprintf("The agent %q handed this conversation over to you. Continue it from here.", name)
}

// spawn runs the turns together, the last one on the calling goroutine (so
// that the usual single agent needs no goroutine), and records the first
// failure. It returns when that last turn and what followed it are done; the
// others are awaited by Execute.
func (f *flow) spawn(ctx context.Context, turns []Turn) {
	for i, t := range turns {
		if f.failed() || f.handedOver() {
			return
		}
		if i == len(turns)-1 {
			f.fail(f.runAgent(ctx, t))
			return
		}
		f.wg.Go(func() { f.fail(f.runAgent(ctx, t)) })
	}
}

// fail records err as the flow's error unless an earlier one was, and stops
// the agents still running: the flow has failed, and what they would go on
// to do cannot change that (what they did so far is kept).
func (f *flow) fail(err error) {
	if err == nil {
		return
	}
	f.mu.Lock()
	first := f.err == nil
	if first {
		f.err = err
	}
	f.mu.Unlock()
	if first {
		f.stop(err)
	}
}

// failed reports whether the flow has failed, so that nothing more starts.
func (f *flow) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// handedOver reports whether an agent called one of the caller's functions:
// the run then ends with that turn, and no other agent starts (the agents
// already running finish their turns).
func (f *flow) handedOver() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.handed) > 0
}

// ready marks id finished and returns the targets of its direct edges that may
// now run: not started yet, and every direct source of theirs finished.
func (f *flow) ready(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished[id] = true
	var out []string
	for _, e := range f.g.Next(id) {
		for _, t := range e.To {
			if f.started[t] || !f.sourcesDone(t) {
				continue
			}
			f.started[t] = true
			out = append(out, t)
		}
	}
	return out
}

// sourcesDone reports whether every direct source of id has finished; f.mu is held.
func (f *flow) sourcesDone(id string) bool {
	for _, e := range f.g.Incoming(id) {
		for _, s := range e.From {
			if !f.finished[s] {
				return false
			}
		}
	}
	return true
}

// inputFor builds the messages an agent of a group starts from: the
// conversation, what ran before it unless its edges exclude that, and the
// prompts of its incoming direct edges.
func (f *flow) inputFor(id string) []llm.Message {
	incoming := f.g.Incoming(id)
	if len(incoming) == 0 {
		return slices.Clone(f.in.Messages)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	exclude := true
	var prompts []string
	for _, e := range incoming {
		exclude = exclude && e.ExcludeResults
		switch {
		case e.Passthrough:
			for _, from := range e.From {
				if t := f.lastText[from]; t != "" {
					prompts = append(prompts, t)
				} else {
					prompts = append(prompts, prompt.Buffer(f.runMsgs))
				}
			}
		case e.Prompt != "":
			p := strings.ReplaceAll(e.Prompt, "{results}", prompt.Buffer(f.runMsgs))
			p = strings.ReplaceAll(p, "{convo}", prompt.Buffer(append(slices.Clone(f.in.Messages), f.runMsgs...)))
			prompts = append(prompts, p)
		}
	}
	// Excluded results leave the conversation as the run began, the user's
	// message of this run included: the target answers that message, with its
	// edge's prompt after it (docs/agents.md "Edges").
	var msgs []llm.Message
	if exclude {
		msgs = slices.Clone(f.in.Messages)
	} else {
		msgs = append(slices.Clone(f.in.Messages), f.runMsgs...)
	}
	if len(prompts) > 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: strings.Join(prompts, "\n\n")})
	}
	return msgs
}

// takeStep takes one step of the flow's budget for a model call; false when
// none is left. All agents of a flow draw on it, those running together too.
func (f *flow) takeStep() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.budget <= 0 {
		return false
	}
	f.budget--
	return true
}

// left is the number of steps still in the flow's budget.
func (f *flow) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.budget
}

// runAgent runs the turn of one agent, records what it did, then runs what
// follows it: the handoffs it called and the direct targets it completes.
func (f *flow) runAgent(ctx context.Context, t Turn) (err error) {
	id := t.AgentID
	defer func() {
		if err != nil {
			err = &AgentError{AgentID: id, Err: err}
		}
	}()
	a := f.g.Agents[id]
	if f.left() <= 0 {
		return fmt.Errorf("%w: the run used its %d steps (recursion_limit) before agent %q could answer", turn.ErrStepLimit, f.steps, id)
	}
	targets := map[string]Edge{}
	for _, e := range f.g.Handoffs(id) {
		targets[e.To[0]] = e
	}
	var said said
	t.Agent, t.Graph = a, f.g
	t.Options = turn.Options{
		MaxSteps: f.steps, TakeStep: f.takeStep,
		Stop: func(c llm.ToolCall) bool {
			target, ok := prompt.HandoffTarget(c.Function.Name)
			_, known := targets[target]
			return ok && known
		},
		Emit: func(e turn.Event) { f.event(id, e, &said) },
	}
	out, err := f.r.Turn(ctx, t)
	f.record(id, out, &said)
	if err == nil && len(out.Handed) > 0 {
		f.hand(id, out.Handed) // the caller answers them: nothing follows
		return nil
	}
	if err != nil {
		if errors.Is(err, turn.ErrStepLimit) {
			return fmt.Errorf("%w: the run used its %d steps (recursion_limit)", turn.ErrStepLimit, f.steps)
		}
		return err
	}
	// Every handoff called in that turn runs, with the direct targets that
	// may now start, all together.
	var next []Turn
	if out.StoppedBy != nil {
		next = f.handoffs(a, t.Messages, out, targets)
	}
	for _, target := range f.ready(id) {
		if !slices.ContainsFunc(next, func(n Turn) bool { return n.AgentID == target }) {
			next = append(next, Turn{AgentID: target, Messages: f.inputFor(target)})
		}
	}
	f.spawn(ctx, next)
	return nil
}

// handoffs are the turns of the agents a handed the conversation to in its
// last step. Each target continues a's conversation: what a started from
// (with the prompt of its direct edge or its own handoff note), what a added,
// and the note of this handoff.
func (f *flow) handoffs(a *agent.Agent, msgs []llm.Message, out *turn.Outcome, targets map[string]Edge) []Turn {
	var calls []llm.ToolCall
	for i := len(out.Messages) - 1; i >= 0; i-- {
		if out.Messages[i].Role == llm.RoleAssistant {
			calls = out.Messages[i].ToolCalls
			break
		}
	}
	var next []Turn
	for _, c := range calls {
		target, ok := prompt.HandoffTarget(c.Function.Name)
		edge, known := targets[target]
		if !ok || !known || slices.ContainsFunc(next, func(n Turn) bool { return n.AgentID == target }) {
			continue // a second call of one transfer in a turn hands over once
		}
		note := handoffPreamble(a)
		if v := handoffValue(c.Function.Arguments, edge.PromptKey); v != "" {
			note += "\n\n" + v
		}
		in := slices.Concat(msgs, out.Messages, []llm.Message{{Role: llm.RoleUser, Content: note}})
		next = append(next, Turn{AgentID: target, Messages: in})
	}
	return next
}

// handoffValue reads the handed-over value: the parameter named promptKey,
// or else the first other one the model passed, a string before any other
// value, whatever it called it. A value that is not a string (a number where
// the tool asks for text) is passed on as its JSON; null and "" are none.
func handoffValue(args, promptKey string) string {
	if promptKey == "" {
		promptKey = prompt.DefaultPromptKey
	}
	dec := json.NewDecoder(strings.NewReader(args))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	var firstString, firstOther string
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			break
		}
		v, isString := valueText(raw)
		switch {
		case v == "":
		case key == promptKey:
			return v
		case isString && firstString == "":
			firstString = v
		case !isString && firstOther == "":
			firstOther = v
		}
	}
	if firstString != "" {
		return firstString
	}
	return firstOther
}

// valueText returns a JSON value as text: a string's own, any other value's
// JSON (compact), and "" for null.
func valueText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	if string(raw) == "null" {
		return "", false
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw), false
	}
	return b.String(), false
}

// said is what one agent said, in the order it happened: its streamed text
// and its tool calls, each a part of the answer. Its turn's events are its
// only writer, one at a time. The text part being streamed is text[from:],
// set in its Part when it ends (closeText), so that a long answer is not
// copied again at every token.
type said struct {
	text      strings.Builder // its text parts joined with a blank line (docs/api.md "POST /api/chat")
	parts     []Part
	streaming bool // the last part is text still being streamed, from text[from:]
	from      int
}

// add records one of the agent's turn events.
func (s *said) add(id string, e turn.Event) {
	switch e.Kind {
	case turn.EventText:
		if e.Text == "" {
			return
		}
		if !s.streaming {
			// Text after a tool call is another part: "Let me search." and
			// "The answer is 5." are two paragraphs, not one sentence.
			if s.text.Len() > 0 {
				s.text.WriteString(PartSep)
			}
			s.parts = append(s.parts, Part{Kind: PartText, AgentID: id})
			s.streaming, s.from = true, s.text.Len()
		}
		s.text.WriteString(e.Text)
	case turn.EventToolStarted:
		s.closeText()
		rec := *e.Tool
		s.parts = append(s.parts, Part{Kind: PartTool, AgentID: id, Tool: &rec})
	case turn.EventToolFinished:
		for i := len(s.parts) - 1; i >= 0; i-- {
			if p := &s.parts[i]; p.Kind == PartTool && p.Tool.ID == e.Tool.ID {
				rec := *e.Tool
				p.Tool = &rec
				break
			}
		}
	}
}

// closeText ends the text part being streamed, if any.
func (s *said) closeText() {
	if s.streaming {
		s.parts[len(s.parts)-1].Text = s.text.String()[s.from:]
		s.streaming = false
	}
}

// event takes note of one of an agent's turn events and reports it.
func (f *flow) event(id string, e turn.Event, said *said) {
	said.add(id, e)
	if e.Kind == turn.EventImage {
		img := *e.Image
		f.mu.Lock()
		f.images = append(f.images, Part{Kind: PartImage, AgentID: id, Image: &img})
		f.mu.Unlock()
	}
	f.r.Event(id, e)
}

// record keeps what an agent's turn produced; out is nil when it never started.
func (f *flow) record(id string, out *turn.Outcome, said *said) {
	f.mu.Lock()
	defer f.mu.Unlock()
	said.closeText()
	from := len(f.parts)
	f.parts = append(f.parts, said.parts...)
	text := said.text.String()
	if text != "" {
		f.texts = append(f.texts, Part{Kind: PartText, AgentID: id, Text: text})
		f.textAt = append(f.textAt, [2]int{from, len(f.parts)})
	}
	// What output_passthrough hands on: the agent's last assistant message,
	// not all it said on the way (text before its tool calls).
	switch {
	case out != nil && out.Text != "":
		f.lastText[id] = out.Text
	case text != "":
		f.lastText[id] = text
	}
	if out == nil {
		return
	}
	f.usage = f.usage.Add(out.Usage)
	f.runMsgs = append(f.runMsgs, out.Messages...)
}

// hand keeps the calls of the caller's functions that an agent made.
func (f *flow) hand(id string, calls []llm.ToolCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range calls {
		f.handed = append(f.handed, Part{Kind: PartClientCall, AgentID: id, Tool: &turn.ToolRecord{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments}})
	}
}

// result is the flow's answer: every agent's text, or with
// hide_sequential_outputs only the last one's; tool calls always.
func (f *flow) result(hide bool) *Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	texts := f.texts
	if hide && len(texts) > 1 {
		texts = texts[len(texts)-1:]
	}
	var all []string
	for _, t := range texts {
		all = append(all, t.Text)
	}
	parts := make([]Part, 0, len(f.parts)+len(f.images)+len(f.handed))
	// Hidden, the texts of every turn but the last answer's: of other agents,
	// and of the same agent's earlier turns (a handoff back to it).
	keep := [2]int{0, len(f.parts)}
	if hide && len(f.textAt) > 0 {
		keep = f.textAt[len(f.textAt)-1]
	}
	for i, p := range f.parts {
		if p.Kind == PartText && (i < keep[0] || i >= keep[1]) {
			continue
		}
		parts = append(parts, p)
	}
	parts = append(parts, f.images...)
	return &Result{Text: strings.Join(all, PartSep), Parts: append(parts, f.handed...), Usage: f.usage}
}
