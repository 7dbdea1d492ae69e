// Package run owns durable runs of agents and the conversations they answer:
// a run's messages, records and events in the store, following a run while
// it streams (what is stored, then what comes), aborting it, and ending the
// runs that shutdown or a dead process cut off. For each agent of a run it
// prepares the request (the agent's tools resolved, MCP servers asked for
// their tools and instructions, files, memory and time filled in) and runs its
// turn: run implements graph.Runner, and graph.Execute decides which agents
// run, when, and from what.
package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/graph"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/window"
)

// Agents is what preparing needs of the agents.
type Agents interface {
	Get(ctx context.Context, u *auth.User, id string) (*agent.Agent, error)
}

// Tools is what preparing needs of the MCP manager.
type Tools interface {
	Servers() []mcp.ServerConfig
	Tools(ctx context.Context, server string, u *mcp.User) ([]mcp.Tool, error)
	Instructions(ctx context.Context, server string, u *mcp.User) (string, error)
}

// Preparer builds the request that a message to an agent sends to its provider.
type Preparer struct {
	Agents Agents
	MCP    Tools
	// Files resolves the agent's file ids to files (nil: ids resolve to nothing).
	Files func(ctx context.Context, ids []string) ([]prompt.File, error)
	// AttachedFiles resolves the ids of files a user attaches to a conversation,
	// refusing files the user may not read.
	AttachedFiles func(ctx context.Context, u *auth.User, ids []string) ([]prompt.File, error)
	// Search finds the passages of files that best answer a query (nil: no
	// retrieval, so no RAG context).
	Search func(ctx context.Context, q file.Query) ([]file.Hit, error)
	// Unready names, of the given files, those a search leaves out for not
	// being ready (pending, processing, failed), for file_search to tell the
	// model (nil: it says nothing of them).
	Unready func(ctx context.Context, ids []string) ([]*file.File, error)
	// InjectContext is rag.injectContext: when the RAG context block is
	// rendered into the system prompt (InjectAuto when empty).
	InjectContext string
	// Memory returns a user's memory entries and whether memory is on for them
	// (nil: memory is off).
	Memory func(ctx context.Context, u *auth.User) ([]prompt.MemoryEntry, bool, error)
	// Location is the configured time zone (server.timezone); nil means local.
	Location *time.Location
	// AnswerLanguage is webSearch.answerLanguage.
	AnswerLanguage string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Window keeps requests inside their model's context window; nil means
	// they are neither counted nor pruned.
	Window *Window
}

// Request is what a message is: its text, the files attached to the
// conversation, and when and where it is sent.
type Request struct {
	AgentID string
	// Agent is the agent AgentID names when the caller has it already (a run
	// loads its agents once); nil means Prepare loads it.
	Agent    *agent.Agent
	Text     string
	Attached []prompt.File
	// Timezone is the user's IANA time zone; empty means the configured one.
	Timezone string
	// Now overrides the clock (for previews and tests); zero means now.
	Now time.Time
	// UserName overrides the user's display name for {{current_user}}.
	UserName string
	// History is the conversation before Text (oldest first); empty for a new one.
	History []llm.Message
	// Search, when set, is used for the RAG retrieval instead of the
	// Preparer's: a run passes one that remembers its answers, so that the
	// agents of one run do not search the same files for the same text again.
	Search func(ctx context.Context, q file.Query) ([]file.Hit, error)
	// Query is the RAG retrieval's query: the user's latest message. A run
	// sets it, since an agent after the first has a handoff note or an edge's
	// prompt as its last user message; empty means the last user message of
	// the conversation (a preview).
	Query string
	// Client is what an OpenAI-compatible client adds to the request: its
	// functions, tool choice and model parameters (nil: nothing).
	Client *Client
	// Graph is the run's resolved graph of agents: the agent gets one transfer
	// tool per handoff target it has in it. Nil means Prepare resolves the
	// graph with the agent as the primary, as a run of it would (a preview).
	Graph *graph.Graph
}

// Prepared is a built request and what could not go into it.
type Prepared struct {
	Request *llm.Request
	// Agent is the agent the request is for.
	Agent *agent.Agent
	// Unreachable names the MCP servers whose tools are missing because they
	// could not be reached, with the reason.
	Unreachable []ServerProblem
	// Warnings are other problems: tools that no longer exist, and so on.
	Warnings []string
	// FileIDs are the files file_search searches: the agent's own, then the
	// conversation's attachments.
	FileIDs []string
	// Fitter has fitted Request into the agent's budget; a run calls its Fit
	// again before every model call. Nil when the Preparer has no Window.
	Fitter *window.Fitter
}

// The values of rag.injectContext.
const (
	// InjectAuto renders the RAG context when files are attached to the
	// conversation and the agent has no file_search to look for itself.
	InjectAuto = "auto"
	// InjectAlways renders it whenever files are attached.
	InjectAlways = "always"
	// InjectNever never renders it.
	InjectNever = "never"
)

// ServerProblem is an MCP server that could not be used, and why.
type ServerProblem struct {
	Server string `json:"server"`
	Reason string `json:"reason"`
}

// MCPUser is the MCP view of a user, for user-scoped connections.
func MCPUser(u *auth.User) *mcp.User {
	if u == nil {
		return nil
	}
	username, _, _ := strings.Cut(u.Email, "@")
	return &mcp.User{ID: u.ID, Email: u.Email, Name: u.DisplayName, Username: username}
}

// Prepare builds the request for a conversation (History, then req.Text), exactly
// as a run would send it.
func (p *Preparer) Prepare(ctx context.Context, u *auth.User, req Request) (*Prepared, error) {
	a, err := req.Agent, error(nil)
	if a == nil || a.ID != req.AgentID {
		if a, err = p.Agents.Get(ctx, u, req.AgentID); err != nil {
			return nil, err
		}
	}
	loc := p.Location
	if req.Timezone != "" {
		if loc, err = time.LoadLocation(req.Timezone); err != nil {
			return nil, fault.New(fault.Invalid, "timezone: unknown time zone %q", req.Timezone)
		}
	}
	if loc == nil {
		loc = time.Local
	}
	now := req.Now
	if now.IsZero() {
		now = time.Now()
		if p.Now != nil {
			now = p.Now()
		}
	}
	out := &Prepared{Agent: a}
	in := prompt.Input{
		AgentID: a.ID, Agent: prompt.Agent{Model: a.Model, Instructions: a.Instructions, Artifacts: string(a.Artifacts), ModelParameters: a.ModelParameters}, Attached: req.Attached, Now: now, Location: loc,
		AnswerLanguage: p.AnswerLanguage, UserName: u.DisplayName,
	}
	if req.UserName != "" {
		in.UserName = req.UserName
	}
	in.Messages = append(in.Messages, req.History...)
	if req.Text != "" {
		in.Messages = append(in.Messages, llm.Message{Role: llm.RoleUser, Content: req.Text})
	}
	g := req.Graph
	if g == nil {
		g, err = graph.Resolve(a.ID, func(id string) (*agent.Agent, error) {
			if id == a.ID {
				return a, nil
			}
			return p.Agents.Get(ctx, u, id)
		})
		if err != nil {
			return nil, err
		}
		out.Warnings = append(out.Warnings, g.Warnings...)
	}
	if err := p.resolveTools(ctx, u, a, g.Handoffs(a.ID), &in, out); err != nil {
		return nil, err
	}
	if rs := a.ToolResources; rs != nil && rs.FileSearch != nil && len(rs.FileSearch.FileIDs) > 0 && p.Files != nil {
		if in.AgentFiles, err = p.Files(ctx, rs.FileSearch.FileIDs); err != nil {
			return nil, fmt.Errorf("loading the agent's files: %w", err)
		}
	}
	for _, f := range in.AgentFiles {
		out.FileIDs = append(out.FileIDs, f.ID)
	}
	for _, f := range in.Attached {
		if !slices.Contains(out.FileIDs, f.ID) && !isNamedOnly(f) {
			out.FileIDs = append(out.FileIDs, f.ID)
		}
	}
	search := p.Search
	if req.Search != nil && search != nil {
		search = req.Search
	}
	if in.RAG, err = p.retrieve(ctx, in, req.Query, search); err != nil {
		return nil, err
	}
	if p.Memory != nil {
		if in.Memory, in.MemoryOn, err = p.Memory(ctx, u); err != nil {
			return nil, fmt.Errorf("loading memory: %w", err)
		}
	}
	if out.Request, err = prompt.Build(in); err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	if req.Client != nil {
		req.Client.apply(out.Request)
	}
	if p.Window != nil {
		uid := ""
		if u != nil {
			uid = u.ID
		}
		out.Fitter = p.Window.Fitter(uid, a, req.Client)
		// Results are cut while they are still tool messages: those of the
		// calls rewritten as text below are tool results sent again too.
		out.Fitter.CutResults(out.Request)
	}
	// Calls of tools this agent does not have (another agent's, in a handoff
	// or an earlier turn) are sent as text, which every provider can read.
	out.Request.Messages = prompt.ForeignCalls(out.Request.Messages, func(name string) bool {
		return slices.ContainsFunc(out.Request.Tools, func(t llm.FunctionTool) bool { return t.Function.Name == name })
	})
	if out.Fitter != nil {
		if err := out.Fitter.Fit(ctx, out.Request); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// resolveTools turns the agent's tool list and its handoffs (the resolved
// graph's, one per target) into the tools the model sees, asking each MCP
// server for its tools and instructions.
func (p *Preparer) resolveTools(ctx context.Context, u *auth.User, a *agent.Agent, handoffs []graph.Edge, in *prompt.Input, out *Prepared) error {
	mu := MCPUser(u)
	listed := map[string][]mcp.Tool{} // by configured server name
	failed := map[string]bool{}
	p.listServers(ctx, mu, a.Tools, listed, failed, out)
	serverTools := func(name string) ([]mcp.Tool, bool) {
		if ts, ok := listed[name]; ok {
			return ts, true
		}
		if failed[name] {
			return nil, false
		}
		ts, err := p.MCP.Tools(ctx, name, mu)
		if err != nil {
			failed[name] = true
			out.Unreachable = append(out.Unreachable, ServerProblem{Server: name, Reason: err.Error()})
			return nil, false
		}
		listed[name] = ts
		return ts, true
	}
	addMCP := func(t mcp.Tool) {
		if !slices.ContainsFunc(in.Tools, func(x prompt.Tool) bool { return x.Name == t.Key }) {
			// The schema was encoded once, when the server listed its tools.
			in.Tools = append(in.Tools, prompt.Tool{Name: t.Key, Description: t.Description, Parameters: t.Schema, Kind: prompt.ToolMCP, Server: t.Server})
		}
	}
	for _, name := range a.Tools {
		if bt, ok := prompt.BuiltinTool(name); ok {
			in.Tools = append(in.Tools, bt)
			continue
		}
		if server, ok := mcp.IsAllKey(name); ok {
			cfg, found := p.server(server)
			if !found {
				out.Warnings = append(out.Warnings, fmt.Sprintf("tool %q: no MCP server %q in the config", name, server))
				continue
			}
			if ts, ok := serverTools(cfg.Name); ok {
				for _, t := range ts {
					addMCP(t)
				}
			}
			continue
		}
		tool, server, ok := mcp.SplitKey(name)
		if !ok {
			out.Warnings = append(out.Warnings, fmt.Sprintf("tool %q is neither a built-in nor an MCP tool key", name))
			continue
		}
		cfg, found := p.server(server)
		if !found {
			out.Warnings = append(out.Warnings, fmt.Sprintf("tool %q: no MCP server %q in the config", name, server))
			continue
		}
		ts, ok := serverTools(cfg.Name)
		if !ok {
			continue
		}
		key := mcp.Key(tool, cfg.Name)
		i := slices.IndexFunc(ts, func(t mcp.Tool) bool { return t.Key == key || t.Name == tool })
		if i < 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("tool %q: server %q has no tool %q", name, cfg.Name, tool))
			continue
		}
		addMCP(ts[i])
	}
	for _, e := range handoffs {
		in.Tools = append(in.Tools, prompt.HandoffTool(e.To[0], e.Description, e.PromptKey, e.Prompt))
	}
	// The servers of the MCP tools, in order of first appearance, with instructions.
	for _, t := range in.Tools {
		if t.Kind != prompt.ToolMCP || slices.ContainsFunc(in.Servers, func(s prompt.Server) bool { return s.Name == t.Server }) {
			continue
		}
		text, err := p.MCP.Instructions(ctx, t.Server, mu)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("server %q: instructions unavailable: %v", t.Server, err))
		}
		in.Servers = append(in.Servers, prompt.Server{Name: t.Server, Instructions: text})
	}
	return nil
}

// listServers asks every MCP server the tool list names for its tools at once,
// filling listed, or failed and out.Unreachable (in the order the list first
// names them), so that a run waits for the slowest server (an unreachable one
// may take its initTimeout to fail, docs/mcp.md "Connections"), not for each
// in turn.
func (p *Preparer) listServers(ctx context.Context, mu *mcp.User, tools []string, listed map[string][]mcp.Tool, failed map[string]bool, out *Prepared) {
	var names []string
	for _, name := range tools {
		server, ok := mcp.IsAllKey(name)
		if !ok {
			_, server, ok = mcp.SplitKey(name)
		}
		if !ok {
			continue
		}
		if cfg, found := p.server(server); found && !slices.Contains(names, cfg.Name) {
			names = append(names, cfg.Name)
		}
	}
	lists := make([][]mcp.Tool, len(names))
	errs := make([]error, len(names))
	if len(names) == 1 { // most agents: no goroutine to hand it to
		lists[0], errs[0] = p.MCP.Tools(ctx, names[0], mu)
	} else {
		var wg sync.WaitGroup
		for i, name := range names {
			wg.Go(func() { lists[i], errs[i] = p.MCP.Tools(ctx, name, mu) })
		}
		wg.Wait()
	}
	for i, name := range names {
		if errs[i] != nil {
			failed[name] = true
			out.Unreachable = append(out.Unreachable, ServerProblem{Server: name, Reason: errs[i].Error()})
			continue
		}
		listed[name] = lists[i]
	}
}

// server finds a configured MCP server by its name or by the name as it appears
// in tool keys.
func (p *Preparer) server(name string) (mcp.ServerConfig, bool) {
	for _, s := range p.MCP.Servers() {
		if mcp.NamedBy(s.Name, name) {
			return s, true
		}
	}
	return mcp.ServerConfig{}, false
}

// isNamedOnly reports whether f is a file only named for a preview (relay
// prompt --attach), with no id: there is nothing to search in it.
func isNamedOnly(f prompt.File) bool { return f.ID == "" }

// retrieve runs the RAG retrieval of docs/prompt.md "RAG context block" when
// rag.injectContext says so: the user's latest message as the query (query,
// or else the last user message of in) over the conversation's attached
// files, at most four passages per file, best first.
func (p *Preparer) retrieve(ctx context.Context, in prompt.Input, query string, search func(context.Context, file.Query) ([]file.Hit, error)) (*prompt.RAG, error) {
	if search == nil || len(in.Attached) == 0 {
		return nil, nil
	}
	switch p.InjectContext {
	case InjectNever:
		return nil, nil
	case InjectAlways:
	default:
		if slices.ContainsFunc(in.Tools, func(t prompt.Tool) bool { return t.Name == prompt.FileSearch }) {
			return nil, nil
		}
	}
	if strings.TrimSpace(query) == "" {
		query = lastUserText(in.Messages)
	}
	var ids []string
	for _, f := range in.Attached {
		if !isNamedOnly(f) {
			ids = append(ids, f.ID)
		}
	}
	rag := &prompt.RAG{}
	var hits []file.Hit
	if query != "" && len(ids) > 0 {
		var err error
		hits, err = search(ctx, file.Query{FileIDs: ids, Text: query, PerFile: 4, Limit: 4 * len(ids)})
		if err != nil {
			return nil, fmt.Errorf("retrieving context from the attached files: %w", err)
		}
	}
	for _, f := range in.Attached {
		rf := prompt.RAGFile{File: f}
		for _, h := range hits {
			if h.FileID == f.ID {
				rf.Chunks = append(rf.Chunks, h.Text)
			}
		}
		rag.Files = append(rag.Files, rf)
	}
	return rag, nil
}

// lastUserText is the text of the last user message that has some.
func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == llm.RoleUser && strings.TrimSpace(m.Content) != "" {
			return m.Content
		}
	}
	return ""
}
