package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/graph"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
	"github.com/relay-ai/relay/internal/turn"
)

// flow runs one message through the graph of agents its primary reaches
// (docs/agents.md "Edges"): the start agents together, each direct target once all
// its sources have finished, and handoffs as they are called, all on one
// budget of model turns. The first failure ends the run.
type flow struct {
	s     *Service
	u     *auth.User
	r     *Run
	lr    *liveRun
	log   *slog.Logger
	req   ChatRequest
	graph *graph.Graph

	history  []llm.Message // the conversation before this run
	attached []prompt.File // the files attached to the conversation
	base     []llm.Message // history and the user's message

	wg   sync.WaitGroup          // the agents running on goroutines of their own
	stop context.CancelCauseFunc // ends the agents still running when one fails

	mu       sync.Mutex
	err      error           // the run's first failure
	started  map[string]bool // direct targets (and start agents) already started
	finished map[string]bool // agents that finished a turn without failing
	budget   int             // model turns left in the run (recursion_limit)
	runMsgs  []llm.Message   // what the agents added, in order
	lastText map[string]string
	texts    []Part                // each agent's answer, in the order they finished
	images   []Part                // images the models produced, in order
	searched map[string][]file.Hit // RAG retrievals of this run, by query
	parts    []Part                // each agent's text and tool calls as they happened, agents in the order they finished
	handed   []Part                // calls of the client's functions (client.go)
	requests []ModelRequest
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

func (f *flow) steps(a *agent.Agent) int {
	n := a.RecursionLimit
	if n <= 0 {
		n = f.s.DefaultSteps
	}
	if n <= 0 {
		n = 50
	}
	if f.s.StepLimit > 0 && n > f.s.StepLimit {
		n = f.s.StepLimit
	}
	return n
}

// run executes the graph of primary and returns the first error. The start
// agents run together; when an agent finishes, the handoffs it called run, and
// so does each target of its direct edges whose sources have all finished, each
// such target once.
func (f *flow) run(ctx context.Context, primary *agent.Agent) error {
	g, err := graph.Resolve(primary.ID, func(id string) (*agent.Agent, error) {
		if id == primary.ID { // loaded when the run started
			return primary, nil
		}
		return f.s.Prep.Agents.Get(ctx, f.u, id)
	})
	if err != nil {
		return err
	}
	f.graph, f.budget, f.lastText = g, f.steps(primary), map[string]string{}
	f.started, f.finished = map[string]bool{}, map[string]bool{}
	// The first failure ends the run: the agents still running stop with it.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	f.stop = cancel
	for _, w := range g.Warnings {
		f.log.Warn("agent graph", slog.String("warning", w))
		f.s.emit(f.lr, Warning{Message: w})
	}
	var start []agentTurn
	for _, id := range g.Start {
		f.started[id] = true
		start = append(start, agentTurn{id: id, msgs: f.inputFor(id)})
	}
	f.spawn(ctx, start)
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// agentTurn is an agent about to run and the messages it starts from.
type agentTurn struct {
	id   string
	msgs []llm.Message
}

// spawn runs the turns together, the last one on the calling goroutine (so
// that the usual single agent needs no goroutine), and records the first
// failure. It returns when that last turn and what followed it are done; the
// others are awaited by run.
func (f *flow) spawn(ctx context.Context, turns []agentTurn) {
	for i, t := range turns {
		if f.failed() {
			return
		}
		if i == len(turns)-1 {
			f.fail(f.runAgent(ctx, t.id, t.msgs))
			return
		}
		f.wg.Go(func() { f.fail(f.runAgent(ctx, t.id, t.msgs)) })
	}
}

// fail records err as the run's error unless an earlier one was, and stops
// the agents still running: the run has failed, and what they would go on to
// do cannot change that (what they did so far is kept).
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

// failed reports whether the run has failed, so that nothing more starts.
func (f *flow) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err != nil
}

// ready marks id finished and returns the targets of its direct edges that may
// now run: not started yet, and every direct source of theirs finished.
func (f *flow) ready(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.finished[id] = true
	var out []string
	for _, e := range f.graph.Next(id) {
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
	for _, e := range f.graph.Incoming(id) {
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
	incoming := f.graph.Incoming(id)
	if len(incoming) == 0 {
		return slices.Clone(f.base)
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
			p = strings.ReplaceAll(p, "{convo}", prompt.Buffer(append(slices.Clone(f.base), f.runMsgs...)))
			prompts = append(prompts, p)
		}
	}
	var msgs []llm.Message
	if exclude {
		msgs = slices.Clone(f.history)
		if len(prompts) == 0 {
			msgs = slices.Clone(f.base)
		}
	} else {
		msgs = append(slices.Clone(f.base), f.runMsgs...)
	}
	if len(prompts) > 0 {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: strings.Join(prompts, "\n\n")})
	}
	return msgs
}

// takeStep takes one step of the run's budget for a model turn; false when
// none is left. All agents of a run draw on it, those running together too.
func (f *flow) takeStep() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.budget <= 0 {
		return false
	}
	f.budget--
	return true
}

// left is the number of steps still in the run's budget.
func (f *flow) left() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.budget
}

// runAgent runs one agent from msgs, records what it did, then runs what
// follows it: the handoffs it called and the direct targets it completes.
func (f *flow) runAgent(ctx context.Context, id string, msgs []llm.Message) (err error) {
	defer func() {
		if err != nil {
			err = &agentError{agent: id, err: err}
		}
	}()
	a := f.graph.Agents[id]
	if f.left() <= 0 {
		return fmt.Errorf("%w: the run used its %d steps (recursion_limit) before agent %q could answer", turn.ErrStepLimit, f.steps(f.graph.Agents[f.graph.Primary]), id)
	}
	query := f.req.Text
	if f.req.Client.continues() {
		query = "" // Text holds tool results: the last user message is the query
	}
	client := f.req.Client
	if id != f.graph.Primary {
		client = nil // the client's tools and parameters are the primary agent's
	}
	prep, err := f.s.Prep.Prepare(ctx, f.u, Request{AgentID: id, Agent: a, Timezone: f.req.Timezone, History: msgs, Now: f.req.Now, Attached: f.attached, Search: f.search, Graph: f.graph, Query: query, Client: client})
	if err != nil {
		return err
	}
	for _, p := range prep.Unreachable {
		f.log.Warn("mcp server unreachable for run", slog.String("agent", id), slog.String("mcp_server", p.Server), slog.String("err", p.Reason))
	}
	model, fam, err := f.s.Models(ctx, f.u.ID, a.Provider, a.Model)
	if err != nil {
		return err
	}
	targets := map[string]graph.Edge{}
	box := &Toolbox{MCP: f.s.MCP, Builtins: f.s.Builtins, User: f.u, Family: fam,
		Owner: f.r.ID, Ask: f.s.asker(f.lr, f.r, id), Sample: sampler(model, prep.Request.Model)}
	for _, e := range f.graph.Handoffs(id) {
		targets[e.To[0]] = e
		box.Handoffs = append(box.Handoffs, e.To[0])
	}
	if f.s.Prep.Search != nil && slices.ContainsFunc(prep.Request.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == prompt.FileSearch }) {
		box.Builtins = maps.Clone(box.Builtins)
		if box.Builtins == nil {
			box.Builtins = map[string]tool.Tool{}
		}
		box.Builtins[builtin.FileSearchName] = builtin.FileSearch(builtin.SearchFunc(f.s.Prep.Search), prep.FileIDs)
	}
	var said said
	var fit func(context.Context, *llm.Request) error
	if prep.Fitter != nil {
		fit = prep.Fitter.Fit
	}
	out, err := turn.Run(ctx, prep.Request, turn.Options{
		Fit:   fit,
		Model: model, Tools: box, MaxSteps: f.steps(f.graph.Agents[f.graph.Primary]), TakeStep: f.takeStep, Parallel: f.s.Parallel, ToolTimeout: f.s.ToolTimeout,
		Stop: func(c llm.ToolCall) bool {
			t, ok := prompt.HandoffTarget(c.Function.Name)
			_, known := targets[t]
			return ok && known
		},
		Client: func(c llm.ToolCall) bool { return client != nil && client.has(c.Function.Name) },
		Emit:   func(e turn.Event) { f.event(ctx, id, e, &said) },
	})
	f.record(id, out, &said)
	if err == nil && len(out.Handed) > 0 {
		f.hand(id, out.Handed) // the run waits for the client: nothing follows
		return nil
	}
	if err != nil {
		if errors.Is(err, turn.ErrStepLimit) {
			return fmt.Errorf("%w: the run used its %d steps (recursion_limit)", turn.ErrStepLimit, f.steps(f.graph.Agents[f.graph.Primary]))
		}
		return err
	}
	// Every handoff called in that turn runs, with the direct targets that
	// may now start, all together.
	var next []agentTurn
	if out.StoppedBy != nil {
		next = f.handoffs(a, msgs, out, targets)
	}
	for _, t := range f.ready(id) {
		if !slices.ContainsFunc(next, func(n agentTurn) bool { return n.id == t }) {
			next = append(next, agentTurn{id: t, msgs: f.inputFor(t)})
		}
	}
	f.spawn(ctx, next)
	return nil
}

// handoffs are the turns of the agents a handed the conversation to in its
// last turn. Each target continues a's conversation: what a started from (with
// the prompt of its direct edge or its own handoff note), what a added, and the
// note of this handoff.
func (f *flow) handoffs(a *agent.Agent, msgs []llm.Message, out *turn.Outcome, targets map[string]graph.Edge) []agentTurn {
	var calls []llm.ToolCall
	for i := len(out.Messages) - 1; i >= 0; i-- {
		if out.Messages[i].Role == llm.RoleAssistant {
			calls = out.Messages[i].ToolCalls
			break
		}
	}
	var next []agentTurn
	for _, c := range calls {
		target, ok := prompt.HandoffTarget(c.Function.Name)
		edge, known := targets[target]
		if !ok || !known {
			continue
		}
		note := handoffPreamble(a)
		if v := handoffValue(c.Function.Arguments, edge.PromptKey); v != "" {
			note += "\n\n" + v
		}
		in := slices.Concat(msgs, out.Messages, []llm.Message{{Role: llm.RoleUser, Content: note}})
		next = append(next, agentTurn{id: target, msgs: in})
	}
	return next
}

// agentError is the failure of one agent of a run, naming it, so that the
// run's error part and event are credited to that agent.
type agentError struct {
	agent string
	err   error
}

func (e *agentError) Error() string { return e.err.Error() }
func (e *agentError) Unwrap() error { return e.err }

// failedAgent is the agent whose failure err is, or def when err names none
// (the run failed before any agent ran).
func failedAgent(err error, def string) string {
	if ae, ok := errors.AsType[*agentError](err); ok {
		return ae.agent
	}
	return def
}

// handoffValue reads the handed-over text: the parameter named promptKey, or
// whatever single string the model passed, whatever it called it.
func handoffValue(args, promptKey string) string {
	var m map[string]any
	if json.Unmarshal([]byte(args), &m) != nil {
		return ""
	}
	if promptKey == "" {
		promptKey = prompt.DefaultPromptKey
	}
	if v, ok := m[promptKey].(string); ok {
		return v
	}
	for _, v := range m {
		if s, ok := v.(string); ok {
			return s
		}
	}
	return ""
}

// said is what one agent said, in the order it happened: its streamed text
// and its tool calls, each a part of the saved answer. The loop's events are
// its only writer, one at a time.
type said struct {
	text  strings.Builder // all its text, as streamed
	parts []Part
}

// add records one of the agent's loop events.
func (s *said) add(id string, e turn.Event) {
	switch e.Kind {
	case turn.EventText:
		s.text.WriteString(e.Text)
		if n := len(s.parts); n > 0 && s.parts[n-1].Type == PartText {
			s.parts[n-1].Text += e.Text
		} else {
			s.parts = append(s.parts, Part{Type: PartText, AgentID: id, Text: e.Text})
		}
	case turn.EventToolStarted:
		rec := *e.Tool
		s.parts = append(s.parts, Part{Type: PartToolCall, AgentID: id, Tool: &rec})
	case turn.EventToolFinished:
		for i := len(s.parts) - 1; i >= 0; i-- {
			if p := &s.parts[i]; p.Type == PartToolCall && p.Tool.ID == e.Tool.ID {
				rec := *e.Tool
				p.Tool = &rec
				break
			}
		}
	}
}

// event streams and stores one of an agent's loop events.
func (f *flow) event(ctx context.Context, id string, e turn.Event, said *said) {
	s, r, lr := f.s, f.r, f.lr
	said.add(id, e)
	switch e.Kind {
	case turn.EventText:
		s.emit(lr, MessageDelta{AgentID: id, Text: e.Text})
	case turn.EventToolStarted:
		s.emit(lr, ToolStarted{AgentID: id, ID: e.Tool.ID, Name: e.Tool.Name, Arguments: e.Tool.Arguments})
	case turn.EventToolFinished:
		s.emit(lr, ToolFinished{AgentID: id, ID: e.Tool.ID, Result: e.Tool.Result, IsError: e.Tool.IsError, DurationMS: e.Tool.Duration.Milliseconds()})
		// Stored with the run's next batch of events (writer).
		s.writer().toolCall(&ToolCall{RunID: r.ID, AgentID: id, ToolRecord: *e.Tool, CreatedAt: time.Now().UTC()})
	case turn.EventUsage:
		s.emit(lr, TurnUsage{AgentID: id, Usage: e.Usage})
	case turn.EventRetry:
		f.log.Warn("model provider retry", slog.String("agent", id), slog.String("err", e.Retry.Error()))
	case turn.EventImage:
		f.mu.Lock()
		f.images = append(f.images, Part{Type: PartImage, AgentID: id, MIMEType: e.Image.MIMEType, Data: e.Image.Data})
		f.mu.Unlock()
		s.emit(lr, MessageImage{AgentID: id, MIMEType: e.Image.MIMEType, Data: e.Image.Data})
	}
}

// record keeps what an agent's loop produced.
func (f *flow) record(id string, out *turn.Outcome, said *said) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.parts = append(f.parts, said.parts...)
	text := said.text.String()
	if text != "" {
		f.texts = append(f.texts, Part{Type: PartText, AgentID: id, Text: text})
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
	for _, rq := range out.Requests {
		done := rq.DoneAt
		f.requests = append(f.requests, ModelRequest{RunID: f.r.ID, Seq: len(f.requests) + 1, AgentID: id, Body: json.RawMessage(rq.Body),
			SentAt: rq.SentAt, FinishedAt: &done, Usage: rq.Usage})
	}
}

// answer is the saved message's text and parts: every agent's text, or with
// hide_sequential_outputs only the last one's; tool calls always. The parts
// keep the order things happened in, so that a later turn replays them as
// the model made them (Replay).
func (f *flow) answer(hide bool) (string, []Part) {
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
	parts := make([]Part, 0, len(f.parts)+len(f.images))
	for _, p := range f.parts {
		if p.Type == PartText && hide && len(texts) == 1 && p.AgentID != texts[0].AgentID {
			continue
		}
		parts = append(parts, p)
	}
	return strings.Join(all, "\n\n"), append(parts, f.images...)
}
