package app

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// preparer builds the run.Preparer over the MCP manager m. mods makes the
// summaries of summarization; nil (a preview) means none are made.
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
	if sm := cfg.Summarization; sm.Enabled && mods != nil {
		win.SummaryTokens = sm.MaxSummaryTokens
		win.Summarize = run.Summarizer(mods, run.Summary{Provider: sm.Provider, Model: sm.Model, Params: sm.Parameters, Prompt: sm.Prompt, MaxTokens: sm.MaxSummaryTokens})
	}
	return &run.Preparer{
		Agents:         a.Agents,
		MCP:            m,
		Files:          a.promptFiles,
		AttachedFiles:  a.attachedFiles,
		Memory:         a.promptMemory,
		Search:         a.Files.Search,
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
	mods := models(a.Config, a.keys, a.Log)
	p, err := a.preparer(m, nil)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &Preview{Prep: p, Models: mods, mcp: m}, nil
}

// Close closes the Preview's MCP connections.
func (p *Preview) Close() { p.mcp.Close() }

func promptCommand() *command {
	return &command{
		name:    "prompt",
		summary: "print the request body a message to an agent would send to its provider",
		detail: "Builds the request exactly as a run does for a new conversation holding the message (or the\n" +
			"next message of --conversation, its history fitted into the agent's token budget),\n" +
			"connecting to the agent's MCP servers for their tools and instructions, and prints the body\n" +
			"the agent's provider client would send (its format, the stream parameters, the endpoint's\n" +
			"addParams and dropParams) as indented JSON. Nothing is sent to a model. A server that cannot be reached is named on\n" +
			"stderr and the prompt is printed without its tools, with exit code 3. An unknown agent\n" +
			"or conversation exits 2. The request's token count, its budget and what was dropped to\n" +
			"fit are printed on stderr (relay prompt: context: tokens=…; budget=…; dropped_messages=…).",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			agentID := fs.String("agent", "", "the agent's `id` (required)")
			message := fs.String("message", "", "the user's message `text`")
			var attach multiFlag
			fs.Var(&attach, "attach", "mark a file `NAME[:MIME]` as attached to the conversation, by name only (repeatable)")
			var files multiFlag
			fs.Var(&files, "file", "attach an uploaded file (`id`, see relay files) to the conversation: it is listed, and\nits passages for the message are retrieved into the RAG context when rag.injectContext says so (repeatable)")
			userName := fs.String("user-name", "", "the user's display `name`, for {{current_user}}")
			user := fs.String("user", "", "build as this user (`id or email`): their memory and user-scoped MCP connections")
			now := fs.String("now", "", "the time of the message, `RFC3339` (default: now)")
			tz := fs.String("timezone", "", "the user's `IANA` time zone (default: server.timezone)")
			conversation := fs.String("conversation", "", "preview the next message of this conversation (`id`): its history is sent too, fitted\ninto the agent's token budget (default: a new conversation)")
			parent := fs.String("parent", "", "with --conversation, continue the branch that ends at this message (`id`)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageErr("unexpected argument %q", args[0])
				}
				if *agentID == "" {
					return usageErr("--agent is required")
				}
				req := run.Request{AgentID: *agentID, Text: *message, Timezone: *tz, UserName: *userName}
				if *now != "" {
					t, err := time.Parse(time.RFC3339Nano, *now)
					if err != nil {
						return usageErr("--now: %q is not an RFC 3339 time (e.g. 2025-11-25T14:30:45Z)", *now)
					}
					req.Now = t
				}
				for _, a := range attach {
					name, mime, _ := strings.Cut(a, ":")
					if name == "" {
						return usageErr("--attach: %q has no file name", a)
					}
					req.Attached = append(req.Attached, prompt.File{Filename: name, Type: mime})
				}
				a, err := e.open(ctx)
				if err != nil {
					return err
				}
				defer a.Close()
				p, err := a.Preview()
				if err != nil {
					return err
				}
				defer p.Close()
				// The command line acts as an admin: it may build any agent.
				caller := &auth.User{Role: auth.RoleAdmin}
				if *user != "" {
					if caller, err = a.Auth.FindUser(ctx, *user); err != nil {
						return err
					}
				}
				if *parent != "" && *conversation == "" {
					return usageErr("--parent needs --conversation")
				}
				if *conversation != "" {
					if *user == "" { // act as the conversation's owner
						c, err := a.Store.GetConversation(ctx, *conversation)
						if fault.Is(err, fault.NotFound) {
							fmt.Fprintf(e.Stderr, "relay prompt: %s\n", describe(err))
							return exitCode(2)
						}
						if err != nil {
							return err
						}
						if caller, err = a.Auth.FindUser(ctx, c.UserID); err != nil {
							return err
						}
					}
					history, err := a.Conversations().History(ctx, caller, *conversation, *parent)
					if fault.Is(err, fault.NotFound) {
						fmt.Fprintf(e.Stderr, "relay prompt: %s\n", describe(err))
						return exitCode(2)
					}
					if err != nil {
						return err
					}
					req.History = history
				}
				if len(files) > 0 {
					fs, err := p.Prep.AttachedFiles(ctx, caller, files)
					if fault.Is(err, fault.NotFound) {
						fmt.Fprintf(e.Stderr, "relay prompt: --file: %s\n", describe(err))
						return exitCode(2)
					}
					if err != nil {
						return err
					}
					req.Attached = append(req.Attached, fs...)
				}
				out, err := p.Prep.Prepare(ctx, caller, req)
				if fault.Is(err, fault.NotFound) {
					fmt.Fprintf(e.Stderr, "relay prompt: %s\n", describe(err))
					return exitCode(2)
				}
				if err != nil {
					return err
				}
				// The body as the agent's provider client writes it.
				body, warning, err := run.SentBody(ctx, p.Models, caller.ID, out.Agent.Provider, out.Request)
				if err != nil {
					return err
				}
				if err := printJSON(e.Stdout, body); err != nil {
					return err
				}
				if out.Fitter != nil {
					fmt.Fprintf(e.Stderr, "relay prompt: context: %s\n", out.Fitter.Report().Summary())
				}
				if warning != "" {
					fmt.Fprintf(e.Stderr, "relay prompt: warning: %s\n", warning)
				}
				for _, w := range out.Warnings {
					fmt.Fprintf(e.Stderr, "relay prompt: warning: %s\n", w)
				}
				for _, u := range out.Unreachable {
					fmt.Fprintf(e.Stderr, "relay prompt: warning: MCP server %q could not be reached (%s); the prompt has none of its tools\n", u.Server, u.Reason)
				}
				if len(out.Unreachable) > 0 {
					return exitCode(3)
				}
				return nil
			}
		},
	}
}

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
	if len(out) != len(ids) {
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
	es, err := a.Memory.List(ctx, u.ID)
	if err != nil {
		return nil, false, err
	}
	out := make([]prompt.MemoryEntry, len(es))
	for i, e := range es {
		out[i] = prompt.MemoryEntry{Key: e.Key, Value: e.Value, UpdatedAt: e.UpdatedAt}
	}
	return out, true, nil
}
