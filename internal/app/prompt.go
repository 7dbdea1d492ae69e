package app

import (
	"context"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// preparer builds the run.Preparer over the MCP manager m. mods makes the
// summaries of summarization; nil (a preview) means none are made, the
// turns a run would summarise being dropped without one.
func (a *App) preparer(m *mcp.Manager, mods run.Models) (*run.Preparer, error) {
	cfg := a.Config
	loc, err := cfg.Location()
	if err != nil {
		return nil, err
	}
	win := &run.Window{
		Counters:           a.tokens,
		ContextWindow:      cfg.Endpoints.ContextWindow,
		MaxToolResultChars: cfg.Endpoints.Agents.MaxToolResultChars,
	}
	if sm := cfg.Summarization; sm.Enabled {
		win.SummaryTokens = sm.MaxSummaryTokens
		if mods != nil {
			win.Summarize = run.Summarizer(mods, run.Summary{Provider: sm.Provider, Model: sm.Model, Params: sm.Parameters, Prompt: sm.Prompt, MaxTokens: sm.MaxSummaryTokens})
		} else {
			// A preview asks no model for the summary, but keeps its room
			// free as a run does, so that it drops the turns the run drops
			// (docs/config.md "summarization").
			win.Summarize = func(context.Context, string, *agent.Agent, []llm.Message) (string, error) { return "", nil }
		}
	}
	return &run.Preparer{
		Agents:         a.Agents.Cached(),
		MCP:            m,
		Files:          a.promptFiles,
		AttachedFiles:  a.attachedFiles,
		Memory:         a.promptMemory,
		Search:         a.Files.Search,
		Unready:        a.Files.Unready,
		InjectContext:  cfg.RAG.InjectContext,
		Location:       loc,
		AnswerLanguage: cfg.WebSearch.AnswerLanguage,
		Window:         win,
	}, nil
}

// Preview builds the request a message to an agent would send, as a run
// does, and sends nothing to a model: no summary either. Close closes its
// MCP connections.
type Preview struct {
	// Prep prepares the request.
	Prep *run.Preparer
	// Models are the provider clients that would send it, which write its
	// body (run.SentBody).
	Models run.Models

	mcp *mcp.Manager
}

// Preview builds a Preview with its own MCP manager, whose connections
// carry each user's variables and authorization.
func (a *App) Preview() (*Preview, error) {
	m, _ := a.MCP()
	mods := models(a.Config, a.keys, a.users, a.Log)
	p, err := a.preparer(m, nil)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &Preview{Prep: p, Models: mods, mcp: m}, nil
}

// Close closes the Preview's MCP connections.
func (p *Preview) Close() { p.mcp.Close() }

// promptFiles resolves file ids to the files the prompt lists, in the given
// order; ids that do not exist are left out.
func (a *App) promptFiles(ctx context.Context, ids []string) ([]prompt.File, error) {
	fs, err := a.Store.GetFiles(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]prompt.File, len(fs))
	for i, f := range fs {
		out[i] = prompt.File{ID: f.ID, Filename: f.Name, Type: f.MIMEType}
	}
	return out, nil
}

// attachedFiles resolves the ids of files a user attaches to a conversation:
// their own files (any file, for admins); another user's file is not found.
// An id given twice is the one file, as GetFiles returns it.
func (a *App) attachedFiles(ctx context.Context, u *auth.User, ids []string) ([]prompt.File, error) {
	fs, err := a.Store.GetFiles(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]prompt.File, 0, len(fs))
	for _, f := range fs {
		if f.Owner == u.ID || u.IsAdmin() {
			out = append(out, prompt.File{ID: f.ID, Filename: f.Name, Type: f.MIMEType})
		}
	}
	unique := map[string]bool{}
	for _, id := range ids {
		unique[id] = true
	}
	if len(out) != len(unique) {
		return nil, fault.New(fault.NotFound, "attachments: a file id does not exist or is not yours")
	}
	return out, nil
}

// promptMemory returns a user's memory for the prompt, and whether memory is on.
// Users have no memory setting of their own yet, so personalisation counts as on.
func (a *App) promptMemory(ctx context.Context, u *auth.User) ([]prompt.MemoryEntry, bool, error) {
	if !a.Memory.Enabled(true) || u == nil || u.ID == "" {
		return nil, false, nil
	}
	es, err := a.Memory.ListCached(ctx, u.ID)
	if err != nil {
		return nil, false, err
	}
	out := make([]prompt.MemoryEntry, len(es))
	for i, e := range es {
		out[i] = prompt.MemoryEntry{Key: e.Key, Value: e.Value, UpdatedAt: e.UpdatedAt}
	}
	return out, true, nil
}
