package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/run"
)

// withConversations opens the application and runs f with the service that
// reads and renames conversations, as the user named by ref (default: the
// bootstrap admin).
func withConversations(ctx context.Context, e *env, ref string, f func(*run.Service, *auth.User) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := cliUser(ctx, a, ref)
	if err != nil {
		return err
	}
	return f(a.Conversations(), u)
}

func conversationsCommands() []*command {
	userFlag := func(fs *flag.FlagSet) *string {
		return fs.String("user", "", "act as this user (`id or email`; default: the bootstrap admin)")
	}
	return []*command{
		{name: "conversations list", summary: "list your conversations, most recently active first",
			detail: "When older ones remain, standard error ends with the --cursor that lists them\n" +
				"(older conversations: --cursor C).",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				asJSON := fs.Bool("json", false, "print JSON instead of a table")
				limit := fs.Int("limit", 50, "at most this `many` conversations (1 to 1000)")
				cursor := fs.String("cursor", "", "list the older conversations that follow a page (the `cursor` printed after it)")
				title := fs.String("title", "", "only those whose title contains this `text`, ignoring case")
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) > 0 {
						return usageErr("unexpected argument %q", args[0])
					}
					if *limit < 1 || *limit > 1000 {
						return usageErr("--limit must be 1 to 1000")
					}
					return withConversations(ctx, e, *user, func(runs *run.Service, u *auth.User) error {
						q := run.ConversationQuery{Limit: *limit, Cursor: *cursor, Title: strings.TrimSpace(*title)}
						page, err := runs.Conversations(ctx, u, q)
						if err != nil {
							return err
						}
						list := page.Conversations
						if list == nil {
							list = []*run.Conversation{}
						}
						if *asJSON {
							err = printJSON(e.Stdout, list)
						} else {
							tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
							fmt.Fprintln(tw, "ID\tAGENT\tUPDATED\tTITLE")
							for _, c := range list {
								fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.ID, c.AgentID, c.UpdatedAt.Format(time.RFC3339), c.Title)
							}
							err = tw.Flush()
						}
						if err != nil {
							return err
						}
						if page.NextCursor != "" {
							fmt.Fprintf(e.Stderr, "older conversations: --cursor %s\n", page.NextCursor)
						}
						return nil
					})
				}
			}},
		{name: "conversations rename", args: "ID TITLE...", summary: "give one of your conversations a title",
			detail: "The words of TITLE are joined by spaces. A title made in the background after the\n" +
				"conversation's first turn never replaces the one given here.",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) < 2 {
						return usageErr("name the conversation's id and its new title")
					}
					return withConversations(ctx, e, *user, func(runs *run.Service, u *auth.User) error {
						c, err := runs.RenameConversation(ctx, u, args[0], strings.Join(args[1:], " "))
						if err != nil {
							return err
						}
						fmt.Fprintf(e.Stdout, "%s: %s\n", c.ID, c.Title)
						return nil
					})
				}
			}},
	}
}
