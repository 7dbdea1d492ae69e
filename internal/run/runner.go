package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/graph"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
	"github.com/relay-ai/relay/internal/turn"
)

// runner runs the agents of one run for graph.Execute: it prepares each
// agent's request, runs its turn with the agent's model and the run's tools,
// and streams and stores what happens as the run's events and records.
type runner struct {
	s        *Service
	u        *auth.User
	r        *Run
	lr       *liveRun
	log      *slog.Logger
	req      ChatRequest
	attached []prompt.File // the files attached to the conversation

	mu       sync.Mutex
	searched map[string][]file.Hit // RAG retrievals of this run, by query
	requests []ModelRequest
	finish   string // why the last model answer of the run ended (turn.Outcome.Finish)
}

var _ graph.Runner = (*runner)(nil)

// answering names, in a log line of the run, the agent whose turn it is when
// that is not the agent the run was started for: the run's logger already
// carries that one as "agent", and a second "agent" key would leave the line
// ambiguous.
func (rn *runner) answering(id string) slog.Attr {
	if id == rn.r.AgentID {
		return slog.Attr{}
	}
	return slog.String("answering_agent", id)
}

// flow resolves the graph of agents primary reaches and executes it for the
// run, from history (the conversation before the run). The warnings of the
// graph are the run's first events after run.started. The Result holds what
// the agents produced, even when the error says the run failed.
func (rn *runner) flow(ctx context.Context, primary *agent.Agent, history []llm.Message) (*graph.Result, error) {
	g, err := graph.Resolve(primary.ID, func(id string) (*agent.Agent, error) {
		if id == primary.ID { // loaded when the run started
			return primary, nil
		}
		return rn.s.Prep.Agents.Get(ctx, rn.u, id)
	})
	if err != nil {
		return &graph.Result{}, err
	}
	for _, w := range g.Warnings {
		rn.log.Warn("agent graph", slog.String("warning", w))
		rn.s.emit(rn.lr, Warning{Message: w})
	}
	question := userMessage(rn.req.Text, imageParts(rn.req.Images))
	question.Question = true
	in := graph.Input{Messages: append(slices.Clone(history), question),
		DefaultSteps: rn.s.DefaultSteps, StepLimit: rn.s.StepLimit}
	if rn.req.Client.continues() { // the model answers the client's tool results
		in.Messages = slices.Clone(history)
	}
	return graph.Execute(ctx, g, rn, in)
}

// Turn prepares the agent's request from t.Messages and runs its turn with
// its model and the run's tools. The client's tools and parameters are the
// primary agent's only.
func (rn *runner) Turn(ctx context.Context, t graph.Turn) (_ *turn.Outcome, err error) {
	s, id, a := rn.s, t.AgentID, t.Agent
	ctx, endAgent := s.Telemetry.StartAgent(ctx, id)
	defer func() { endAgent(err) }()
	query := rn.req.Text
	if rn.req.Client.continues() {
		query = "" // Text holds tool results: the last user message is the query
	}
	client := rn.req.Client
	if id != t.Graph.Primary {
		client = nil
	}
	ctx = context.WithValue(ctx, requestsKey{}, rn) // a summary's request is the run's too
	prep, err := s.Prep.Prepare(ctx, rn.u, Request{AgentID: id, Agent: a, Timezone: rn.req.Timezone, History: t.Messages, Now: rn.req.Now,
		Attached: rn.attached, Search: rn.search, Graph: t.Graph, Query: query, Client: client})
	if err != nil {
		return nil, err
	}
	for _, p := range prep.Unreachable {
		rn.log.Warn("mcp server unreachable for run", rn.answering(id), slog.String("mcp_server", p.Server), slog.String("err", p.Reason))
		// The person asking learns that the answer lacks those tools, not
		// why: the reason may name hosts only the operator should see.
		rn.s.emit(rn.lr, Warning{Message: fmt.Sprintf("the MCP server %q could not be reached: its tools were left out of this answer", p.Server)})
	}
	model, fam, err := s.Models(ctx, rn.u.ID, a.Provider, a.Model)
	if err != nil {
		return nil, err
	}
	box := &Toolbox{MCP: s.MCP, Builtins: s.Builtins, User: rn.u, Family: fam,
		Owner: rn.r.ID, Ask: s.asker(rn.lr, rn.r, id), Sample: sampler(model, prep.Request.Model, llm.ConversationOf(ctx))}
	for _, e := range t.Graph.Handoffs(id) {
		box.Handoffs = append(box.Handoffs, e.To[0])
	}
	for _, ft := range prep.Request.Tools {
		box.Offered = append(box.Offered, ft.Function.Name)
	}
	box.Given = a.Tools
	if s.Prep.Search != nil && slices.ContainsFunc(prep.Request.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == prompt.FileSearch }) {
		box.Builtins = maps.Clone(box.Builtins)
		if box.Builtins == nil {
			box.Builtins = map[string]tool.Tool{}
		}
		box.Builtins[builtin.FileSearchName] = s.Telemetry.Tool(builtin.FileSearch(builtin.Files{SearchFunc: s.Prep.Search, UnreadyFunc: s.Prep.Unready}, prep.FileIDs), telemetry.Builtin)
	}
	o := t.Options
	o.Model, o.Tools, o.Parallel, o.ToolTimeout = model, box, s.Parallel, s.ToolTimeout
	if prep.Fitter != nil {
		o.Fit = prep.Fitter.Fit
	}
	o.Client = func(c llm.ToolCall) bool { return client != nil && client.has(c.Function.Name) }
	out, err := turn.Run(ctx, prep.Request, o)
	rn.record(id, out)
	return out, err
}

// requestsKey carries, in the context of an agent's turn, the runner whose
// run records the model requests made for the agent beside its turn's own
// (noteRequest).
type requestsKey struct{}

// noteRequest records in the run of ctx's runner, if there is one, a model
// request made for the agent id beside its turn's own, for purpose (a summary:
// Summarizer), sent at sent and answered (or failed) at done; t is what the
// model client returned, nil or without a body when nothing was sent.
func noteRequest(ctx context.Context, id, purpose string, t *llm.Turn, sent, done time.Time) {
	rn, _ := ctx.Value(requestsKey{}).(*runner)
	if rn == nil || t == nil || len(t.Sent) == 0 {
		return
	}
	done = done.UTC()
	rn.mu.Lock()
	defer rn.mu.Unlock()
	rn.requests = append(rn.requests, ModelRequest{RunID: rn.r.ID, Seq: len(rn.requests) + 1, AgentID: id, Body: json.RawMessage(t.Sent),
		SentAt: sent.UTC(), FinishedAt: &done, Usage: t.Usage, Purpose: purpose})
}

// record keeps the model requests of an agent's turn, numbered in the order
// the agents finished.
func (rn *runner) record(id string, out *turn.Outcome) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if out.Finish != "" {
		rn.finish = out.Finish
	}
	for _, rq := range out.Requests {
		done := rq.DoneAt
		rn.requests = append(rn.requests, ModelRequest{RunID: rn.r.ID, Seq: len(rn.requests) + 1, AgentID: id, Body: json.RawMessage(rq.Body),
			SentAt: rq.SentAt, FinishedAt: &done, Usage: rq.Usage})
	}
}

// Event streams and stores one of an agent's turn events.
func (rn *runner) Event(id string, e turn.Event) {
	s, r, lr := rn.s, rn.r, rn.lr
	switch e.Kind {
	case turn.EventText:
		s.emitText(lr, MessageDelta{AgentID: id, Text: e.Text})
	case turn.EventToolStarted:
		s.emit(lr, ToolStarted{AgentID: id, ID: e.Tool.ID, Name: e.Tool.Name, Arguments: e.Tool.Arguments})
	case turn.EventToolFinished:
		s.emit(lr, ToolFinished{AgentID: id, ID: e.Tool.ID, Result: e.Tool.Result, IsError: e.Tool.IsError, DurationMS: e.Tool.Duration.Milliseconds()})
		// Stored with the run's next batch of events (writer).
		s.writer().toolCall(lr, &ToolCall{RunID: r.ID, AgentID: id, ToolRecord: *e.Tool, CreatedAt: time.Now().UTC()})
	case turn.EventUsage:
		s.emit(lr, TurnUsage{AgentID: id, Usage: e.Usage})
	case turn.EventRetry:
		rn.log.Warn("model provider retry", rn.answering(id), slog.String("err", e.Retry.Error()))
	case turn.EventImage:
		s.emit(lr, MessageImage{AgentID: id, MIMEType: e.Image.MIMEType, Data: e.Image.Data})
	}
}

// PartSep joins the text parts of an answer into its text, as the flow joins
// them (graph.PartSep): wherever an answer's text is put together again, it
// is with this.
const PartSep = graph.PartSep

// answerParts turns the parts of a flow's answer into a message's parts.
func answerParts(parts []graph.Part) []Part {
	out := make([]Part, 0, len(parts))
	for _, p := range parts {
		switch p.Kind {
		case graph.PartText:
			out = append(out, Part{Type: PartText, AgentID: p.AgentID, Text: p.Text})
		case graph.PartTool:
			out = append(out, Part{Type: PartToolCall, AgentID: p.AgentID, Tool: p.Tool})
		case graph.PartImage:
			out = append(out, Part{Type: PartImage, AgentID: p.AgentID, MIMEType: p.Image.MIMEType, Data: p.Image.Data})
		case graph.PartClientCall:
			out = append(out, Part{Type: PartClientCall, AgentID: p.AgentID, Tool: p.Tool})
		}
	}
	return out
}

// failedAgent is the agent whose failure err is, or def when err names none
// (the run failed before any agent ran).
func failedAgent(err error, def string) string {
	if ae, ok := errors.AsType[*graph.AgentError](err); ok {
		return ae.AgentID
	}
	return def
}
