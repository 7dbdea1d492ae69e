package app

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/run"
)

func chatCommand() *command {
	return &command{
		name:    "chat",
		args:    "[MESSAGE]",
		summary: "send a message to an agent and stream its answer, tool calls included",
		detail: "Runs the agent in this process with the config's providers and MCP servers, saves the\n" +
			"conversation like the API does, and prints the answer as it streams; tool calls show on\n" +
			"stderr as they happen. Without MESSAGE the message is read from standard input. Exits 1\n" +
			"when the run fails. A question an MCP server asks during a tool call is asked on the\n" +
			"terminal, field by field, and answered from standard input (declined at its end).",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			agentID := fs.String("agent", "", "the agent's `id` (required)")
			conv := fs.String("conversation", "", "continue this conversation (`id`), after its latest message")
			user := fs.String("user", "", "chat as this user (`id or email`; default: the bootstrap admin)")
			tz := fs.String("timezone", "", "the user's `IANA` time zone (default: server.timezone)")
			var files multiFlag
			fs.Var(&files, "file", "attach an uploaded file (`id`, see relay files) to the conversation (repeatable)")
			return func(ctx context.Context, e *env, args []string) error {
				if *agentID == "" {
					return usageErr("--agent is required")
				}
				text := strings.Join(args, " ")
				stdin := bufio.NewReader(e.Stdin)
				if text == "" {
					b, err := io.ReadAll(stdin)
					if err != nil {
						return fmt.Errorf("reading the message: %w", err)
					}
					text = strings.TrimSpace(string(b))
				}
				if text == "" {
					return usageErr("no message: give one as an argument or on standard input")
				}
				return withRuns(ctx, e, *user, func(_ *services, runs *run.Service, u *auth.User) error {
					// The conversation alone continues from its latest message.
					req := run.ChatRequest{AgentID: *agentID, Text: text, ConversationID: *conv, Timezone: *tz, Files: files}
					r, err := runs.Start(ctx, u, req)
					if err != nil {
						return err
					}
					events, ch, stop, err := runs.Subscribe(ctx, u, r.ID, 0)
					if err != nil {
						return err
					}
					defer stop()
					var final struct {
						Status run.Status `json:"status"`
						Error  string     `json:"error"`
					}
					var last int64
					asker := &terminalAsker{in: stdin, out: e.Stderr, runs: runs, u: u}
					show := func(ev run.Event) {
						if ev.Seq <= last {
							return
						}
						last = ev.Seq
						var d map[string]any
						_ = json.Unmarshal(ev.Data, &d)
						switch ev.Type {
						case run.EventMessageDelta:
							fmt.Fprint(e.Stdout, d["text"])
						case run.EventToolStarted:
							fmt.Fprintf(e.Stderr, "\n→ %v %v\n", d["name"], d["arguments"])
						case run.EventToolFinished:
							mark := "←"
							if d["is_error"] == true {
								mark = "✗"
							}
							res := fmt.Sprint(d["result"])
							if len(res) > 200 {
								res = res[:200] + "…"
							}
							fmt.Fprintf(e.Stderr, "%s %s\n", mark, res)
						case run.EventElicitationRequested:
							if err := asker.ask(ctx, r.ID, ev.Data); err != nil {
								fmt.Fprintf(e.Stderr, "  the answer was not taken: %v\n", err)
							}
						case run.EventElicitationAnswered:
							if d["reason"] != nil {
								fmt.Fprintf(e.Stderr, "  the question ended: %v (%v)\n", d["action"], d["reason"])
							}
						case run.EventRunFinished:
							_ = json.Unmarshal(ev.Data, &final)
						}
					}
					for _, ev := range events {
						show(ev)
					}
					if ch != nil { // nil: the run had already ended, and events hold all of it
						for ev := range ch {
							show(ev)
						}
					}
					if final.Status == "" { // the channel closed early: read the rest from the store
						d, err := runs.Get(ctx, u, r.ID)
						if err != nil {
							return err
						}
						for _, ev := range d.Events {
							show(ev)
						}
					}
					fmt.Fprintln(e.Stdout)
					fmt.Fprintf(e.Stderr, "conversation %s, run %s: %s\n", r.ConversationID, r.ID, final.Status)
					if final.Status != run.StatusSucceeded {
						fmt.Fprintf(e.Stderr, "relay chat: %s\n", final.Error)
						return exitCode(1)
					}
					return nil
				})
			}
		},
	}
}
