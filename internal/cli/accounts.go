package cli

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/account"
	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
)

// withAccounts opens the application and runs f with the MCP manager, whose
// user-scoped connections carry each user's variables and authorization,
// and the service of those accounts, closing all after.
func withAccounts(ctx context.Context, e *env, f func(*app.App, *account.Service, *mcp.Manager) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	m, acct := a.MCP()
	defer m.Close()
	return f(a, acct, m)
}

// accountUser finds the user a command acts for.
func accountUser(ctx context.Context, a *app.App, ref string) (*mcp.User, error) {
	if ref == "" {
		return nil, usageErr("--user is required (a user id or email)")
	}
	u, err := a.Auth.FindUser(ctx, ref)
	if err != nil {
		return nil, err
	}
	return run.MCPUser(u), nil
}

func mcpAuthCommand() *command {
	return &command{
		name:    "mcp auth",
		args:    "SERVER",
		summary: "print a link that connects a user's account at an OAuth MCP server",
		detail: "The user opens the link in a browser, signs in at the server's authorization server,\n" +
			"and is sent back to Relay's callback (server.public_url + /api/mcp/oauth/callback), which a\n" +
			"running `relay serve` on the same database finishes. The link works once, for 10 minutes.\n" +
			"With --revoke, the user's authorization is forgotten and revoked instead.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "the user (`id or email`) whose account is connected")
			revoke := fs.Bool("revoke", false, "forget and revoke the user's authorization instead")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one server name")
				}
				return withAccounts(ctx, e, func(a *app.App, acct *account.Service, m *mcp.Manager) error {
					u, err := accountUser(ctx, a, *user)
					if err != nil {
						return err
					}
					if *revoke {
						if err := acct.Disconnect(ctx, u.ID, args[0]); err != nil {
							return err
						}
						fmt.Fprintf(e.Stderr, "authorization of %s at %s forgotten and revoked\n", *user, args[0])
						return nil
					}
					s, ok := m.Server(args[0])
					if ok && s.OAuth != nil && s.OAuth.RedirectURI == "" && a.Config.Server.PublicURL == "" {
						return errors.New("server.public_url is not set: the authorization server could not send the user back to Relay")
					}
					link, err := acct.Start(ctx, u, args[0])
					if err != nil {
						return err
					}
					fmt.Fprintf(e.Stderr, "Open this link to connect the account of %s at %s (valid 10 minutes, once):\n", *user, args[0])
					fmt.Fprintln(e.Stdout, link)
					return nil
				})
			}
		},
	}
}

func mcpVarsCommand() *command {
	return &command{
		name:    "mcp vars",
		args:    "SERVER",
		summary: "show or set a user's values of an MCP server's customUserVars",
		detail: "Without --set-stdin, lists the server's variables and whether the user has set each\n" +
			"(values are never shown). With --set-stdin, each line of standard input is NAME=VALUE\n" +
			"(an empty VALUE removes the value); values are stored encrypted. --clear removes all.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "the user (`id or email`)")
			setStdin := fs.Bool("set-stdin", false, "read NAME=VALUE lines from standard input and set them")
			clear := fs.Bool("clear", false, "remove all of the user's values for the server")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one server name")
				}
				var values map[string]string
				if *setStdin {
					var err error
					if values, err = readVarLines(e); err != nil {
						return err
					}
				}
				return withAccounts(ctx, e, func(a *app.App, acct *account.Service, _ *mcp.Manager) error {
					u, err := accountUser(ctx, a, *user)
					if err != nil {
						return err
					}
					switch {
					case *clear:
						if err := acct.DeleteVars(ctx, u.ID, args[0]); err != nil {
							return err
						}
					case *setStdin:
						if err := acct.SetVars(ctx, u.ID, args[0], values); err != nil {
							return err
						}
					}
					st, err := acct.Get(ctx, u.ID, args[0])
					if err != nil {
						return err
					}
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "NAME\tSET\tUPDATED\tTITLE")
					for _, v := range st.Vars {
						updated := "-"
						if v.UpdatedAt != nil {
							updated = v.UpdatedAt.Format(time.RFC3339)
						}
						fmt.Fprintf(tw, "%s\t%t\t%s\t%s\n", v.Name, v.Set, updated, v.Title)
					}
					return tw.Flush()
				})
			}
		},
	}
}

// readVarLines reads NAME=VALUE lines from standard input; blank lines are skipped.
func readVarLines(e *env) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(e.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(name) == "" {
			return nil, usageErr("standard input line %d: want NAME=VALUE", n)
		}
		out[strings.TrimSpace(name)] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading standard input: %w", err)
	}
	if len(out) == 0 {
		return nil, usageErr("--set-stdin: no NAME=VALUE line on standard input")
	}
	return out, nil
}
