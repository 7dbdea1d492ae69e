package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/ragas"
)

func exportRagasCommand() *command {
	return &command{
		name:    "export ragas",
		summary: "write the succeeded runs as a Ragas dataset (JSONL)",
		detail: "Single-turn samples {user_input, retrieved_contexts, response} by default: the retrieved\n" +
			"contexts are the results of file_search and of the tools of MCP servers marked\n" +
			"`retrieval: true`, one per passage. With --multi-turn, samples are the runs' messages with their\n" +
			"tool calls. Citation markers are stripped from the answers. Without --user, every user's runs.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			agentID := fs.String("agent", "", "only this agent's runs (`id`)")
			user := fs.String("user", "", "only this user's runs (`id or email`)")
			since := fs.String("since", "", "only runs from this `date` on (YYYY-MM-DD or RFC 3339)")
			multi := fs.Bool("multi-turn", false, "write multi-turn samples")
			out := fs.String("o", "", "write to this `file` (default: standard output)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageErr("unexpected argument %q", args[0])
				}
				opts := ragas.Options{AgentID: *agentID, MultiTurn: *multi}
				if *since != "" {
					t, err := time.Parse(time.DateOnly, *since)
					if err != nil {
						if t, err = time.Parse(time.RFC3339, *since); err != nil {
							return usageErr("--since: %q is not a date (YYYY-MM-DD) or an RFC 3339 time", *since)
						}
					}
					opts.Since = t
				}
				a, err := e.open(ctx)
				if err != nil {
					return err
				}
				defer a.Close()
				if *user != "" {
					u, err := a.Auth.FindUser(ctx, *user)
					if err != nil {
						return fmt.Errorf("--user %s: %w", *user, err)
					}
					opts.UserID = u.ID
				}
				opts.Retrieval = a.Retrieval()
				var w io.Writer = e.Stdout
				if *out != "" {
					f, err := os.Create(*out)
					if err != nil {
						return err
					}
					defer f.Close()
					w = f
				}
				n, err := (&ragas.Exporter{Store: a.Store}).Export(ctx, w, opts)
				if err != nil {
					return err
				}
				kind := "single-turn"
				if *multi {
					kind = "multi-turn"
				}
				fmt.Fprintf(e.Stderr, "wrote %d %s samples%s\n", n, kind, strings.TrimSuffix(" to "+*out, " to "))
				return nil
			}
		},
	}
}
