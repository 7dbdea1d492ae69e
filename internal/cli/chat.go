package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/relay-ai/relay/internal/app"
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
			"when the run fails; Ctrl-C aborts the run, its answer so far kept, and exits 130; so does\n" +
			"standard output closing (relay chat ... | head), with exit 141. A\n" +
			"question an MCP server asks during a tool call is asked on the terminal, field by field,\n" +
			"and answered from standard input (declined at its end).",
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
				text := strings.TrimSpace(strings.Join(args, " "))
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
				return withRuns(ctx, e, *user, func(_ *app.App, rn *app.Runner, u *auth.User) error {
					runs := rn.Runs
					// The conversation alone continues from its latest message.
					req := run.ChatRequest{AgentID: *agentID, Text: text, ConversationID: *conv, Timezone: *tz, Files: files}
					r, err := runs.Start(ctx, u, req)
					if err != nil {
						return err
					}
					asker := &terminalAsker{in: stdin, out: e.Stderr, runs: runs, u: u}
					// A reader of the answer that goes away (relay chat ... |
					// head) would otherwise kill this process with SIGPIPE in
					// the middle of the run, leaving it running until another
					// Relay finds it orphaned: with the signal caught, the write
					// fails instead and the run is aborted like on Ctrl-C.
					pipe := make(chan os.Signal, 1)
					signal.Notify(pipe, syscall.SIGPIPE)
					defer signal.Stop(pipe)
					final, err := showRun(ctx, runs.Follow(ctx, u, r.ID, 0), e.Stdout, e.Stderr, func(q run.ElicitationRequested) {
						if err := asker.ask(ctx, r.ID, q); err != nil {
							fmt.Fprintf(e.Stderr, "  the answer was not taken: %v\n", err)
						}
					})
					var closed *outputError
					if err != nil && (ctx.Err() != nil || errors.As(err, &closed)) {
						// Interrupted (Ctrl-C), or no one reads the answer any
						// more: the run is aborted as a user aborts it, its
						// answer so far kept, and ended before this process
						// stops.
						actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
						defer cancel()
						ended, aerr := runs.Abort(actx, u, r.ID)
						why, code := "interrupted", 130
						if closed != nil {
							why, code = "standard output was closed", 141
						} else {
							fmt.Fprintln(e.Stdout)
						}
						if aerr != nil {
							return fmt.Errorf("%s; aborting run %s: %w", why, r.ID, aerr)
						}
						fmt.Fprintf(e.Stderr, "conversation %s, run %s: %s (%s; the answer so far is kept)\n", r.ConversationID, r.ID, ended.Status, why)
						return exitCode(code)
					}
					if err != nil {
						return err
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

// showRun prints a run's events as Follow yields them: the answer's text on
// out as it streams, tool calls and the ends of questions on errOut; each
// question is handed to ask. It returns the run's run.finished; an error
// when following ends without one.
func showRun(ctx context.Context, events iter.Seq2[run.Event, error], out, errOut io.Writer, ask func(run.ElicitationRequested)) (run.RunFinished, error) {
	for ev, err := range events {
		if err != nil {
			return run.RunFinished{}, fmt.Errorf("following the run: %w", err)
		}
		p, err := ev.Payload()
		if err != nil {
			continue // a kind this version does not know
		}
		switch p := p.(type) {
		case run.MessageDelta:
			if _, err := io.WriteString(out, p.Text); err != nil {
				return run.RunFinished{}, &outputError{err}
			}
		case run.ToolStarted:
			fmt.Fprintf(errOut, "\n→ %s %s\n", p.Name, p.Arguments)
		case run.ToolFinished:
			mark := "←"
			if p.IsError {
				mark = "✗"
			}
			res := p.Result
			if len(res) > 200 {
				res = res[:200] + "…"
			}
			fmt.Fprintf(errOut, "%s %s\n", mark, res)
		case run.ElicitationRequested:
			ask(p)
		case run.ElicitationSettled:
			if p.Reason != "" {
				fmt.Fprintf(errOut, "  the question ended: %s (%s)\n", p.Action, p.Reason)
			}
		case run.RunFinished:
			return p, nil
		}
	}
	if err := ctx.Err(); err != nil {
		return run.RunFinished{}, err
	}
	return run.RunFinished{}, errors.New("following the run: it ended without run.finished")
}

// outputError is a write of the answer that failed: its reader is gone.
type outputError struct{ err error }

func (e *outputError) Error() string { return "writing the answer: " + e.err.Error() }
func (e *outputError) Unwrap() error { return e.err }
