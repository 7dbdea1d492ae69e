package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

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
				var earlier []string // the ids of the files on the conversation's branch
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
					history, branchFiles, err := a.Conversations().History(ctx, caller, *conversation, *parent)
					if fault.Is(err, fault.NotFound) {
						fmt.Fprintf(e.Stderr, "relay prompt: %s\n", describe(err))
						return exitCode(2)
					}
					if err != nil {
						return err
					}
					req.History = history
					earlier = branchFiles
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
				// The files of the conversation's branch first, as a run continuing it sees them.
				if req.Attached, err = p.Prep.Attached(ctx, earlier, req.Attached); err != nil {
					return err
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
