package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/graph"
)

func usersAddCommand() *command {
	return &command{
		name:    "users add",
		summary: "create a user",
		detail:  "Prints the new user's id. With --password-stdin the first line of standard input is the\npassword (at least 8 characters), for signing in to the UI.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			email := fs.String("email", "", "the user's `email` (required, unique)")
			name := fs.String("name", "", "display `name` (default: the part of the email before @)")
			role := fs.String("role", "user", "`role`: admin or user")
			pwStdin := fs.Bool("password-stdin", false, "read a password from standard input")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageErr("unexpected argument %q", args[0])
				}
				if *email == "" {
					return usageErr("--email is required")
				}
				in := auth.NewUser{Email: *email, DisplayName: *name, Role: auth.Role(*role)}
				if *pwStdin {
					pw, err := readPassword(e)
					if err != nil {
						return err
					}
					in.Password = pw
				}
				return withServices(ctx, e, func(a *app.App) error {
					u, err := a.Auth.CreateUser(ctx, in)
					if err != nil {
						return err
					}
					fmt.Fprintln(e.Stdout, u.ID)
					return nil
				})
			}
		},
	}
}

// readPassword reads a password from the first line of standard input.
func readPassword(e *env) (string, error) {
	line, err := bufio.NewReader(e.Stdin).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usageErr("--password-stdin: standard input held no password")
	}
	return pw, nil
}

func usersPasswdCommand() *command {
	return &command{
		name:    "users passwd",
		args:    "ID|EMAIL",
		summary: "set a user's password (for signing in to the UI); their sessions end",
		detail: "The first line of standard input is the new password (at least 8 characters). Every\n" +
			"session of the user ends; their API keys keep working.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			pwStdin := fs.Bool("password-stdin", false, "read the password from standard input (required)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one user id or email")
				}
				if !*pwStdin {
					return usageErr("--password-stdin is required: the password is read from standard input, never from the command line")
				}
				pw, err := readPassword(e)
				if err != nil {
					return err
				}
				return withServices(ctx, e, func(a *app.App) error {
					u, err := a.Auth.SetPassword(ctx, args[0], pw)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.Stderr, "password of %s set; their sessions ended\n", u.Email)
					return nil
				})
			}
		},
	}
}

// usersDisableCommand is `users disable` (disabled) or `users enable`.
func usersDisableCommand(disabled bool) *command {
	name, summary, detail := "users enable", "let a disabled user sign in and use their keys again",
		"Their keys work again; their sessions ended when they were disabled, so they sign in again."
	if disabled {
		name, summary, detail = "users disable", "disable a user: their keys and sessions stop working at once",
			"Their sessions end, their API keys are refused until 'relay users enable', and they cannot sign in."
	}
	return &command{
		name:    name,
		args:    "ID|EMAIL",
		summary: summary,
		detail:  detail,
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one user id or email")
				}
				return withServices(ctx, e, func(a *app.App) error {
					u, err := a.Auth.SetDisabled(ctx, args[0], disabled)
					if err != nil {
						return err
					}
					state := "enabled"
					if u.Disabled {
						state = "disabled"
					}
					fmt.Fprintf(e.Stderr, "%s is %s\n", u.Email, state)
					return nil
				})
			}
		},
	}
}

func usersListCommand() *command {
	return &command{
		name:    "users list",
		summary: "list users",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print JSON instead of a table")
			return func(ctx context.Context, e *env, _ []string) error {
				return withServices(ctx, e, func(a *app.App) error {
					us, err := a.Auth.ListUsers(ctx)
					if err != nil {
						return err
					}
					if *asJSON {
						return printJSON(e.Stdout, us)
					}
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tEMAIL\tNAME\tROLE\tPASSWORD\tDISABLED\tCREATED")
					for _, u := range us {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%t\t%t\t%s\n", u.ID, u.Email, u.DisplayName, u.Role, u.HasPassword(), u.Disabled, u.CreatedAt.Format(time.RFC3339))
					}
					return tw.Flush()
				})
			}
		},
	}
}

func keysCreateCommand() *command {
	return &command{
		name:    "keys create",
		summary: "create an API key for a user and print it (shown once)",
		detail:  "The key is printed on standard output and never again: Relay stores only its hash.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "the user's `id or email` (required)")
			name := fs.String("name", "", "a `label` for the key")
			return func(ctx context.Context, e *env, args []string) error {
				if *user == "" {
					return usageErr("--user is required")
				}
				return withServices(ctx, e, func(a *app.App) error {
					u, err := a.Auth.FindUser(ctx, *user)
					if err != nil {
						return err
					}
					k, secret, err := a.Auth.CreateKey(ctx, u.ID, *name)
					if err != nil {
						return err
					}
					fmt.Fprintf(e.Stderr, "created key %s for %s; it is shown once:\n", k.ID, u.Email)
					fmt.Fprintln(e.Stdout, secret)
					return nil
				})
			}
		},
	}
}

func keysListCommand() *command {
	return &command{
		name:    "keys list",
		summary: "list a user's API keys (never the keys themselves)",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "the user's `id or email` (required)")
			asJSON := fs.Bool("json", false, "print JSON instead of a table")
			return func(ctx context.Context, e *env, _ []string) error {
				if *user == "" {
					return usageErr("--user is required")
				}
				return withServices(ctx, e, func(a *app.App) error {
					u, err := a.Auth.FindUser(ctx, *user)
					if err != nil {
						return err
					}
					ks, err := a.Auth.ListKeys(ctx, u.ID)
					if err != nil {
						return err
					}
					if *asJSON {
						return printJSON(e.Stdout, ks)
					}
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tNAME\tPREFIX\tCREATED\tLAST USED\tREVOKED")
					for _, k := range ks {
						fmt.Fprintf(tw, "%s\t%s\t%s…\t%s\t%s\t%s\n", k.ID, k.Name, k.Prefix, k.CreatedAt.Format(time.RFC3339), fmtTime(k.LastUsedAt), fmtTime(k.RevokedAt))
					}
					return tw.Flush()
				})
			}
		},
	}
}

func keysRevokeCommand() *command {
	return &command{
		name:    "keys revoke",
		args:    "KEY_ID",
		summary: "revoke an API key; it stops working at once",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one key id (see 'relay keys list')")
				}
				return withServices(ctx, e, func(a *app.App) error {
					if err := a.Auth.RevokeKey(ctx, args[0]); err != nil {
						return err
					}
					fmt.Fprintf(e.Stderr, "revoked %s\n", args[0])
					return nil
				})
			}
		},
	}
}

func agentsListCommand() *command {
	return &command{
		name:    "agents list",
		summary: "list agents (all of them, or those a user may use)",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "only the agents this user (`id or email`) may use")
			asJSON := fs.Bool("json", false, "print JSON instead of a table")
			return func(ctx context.Context, e *env, _ []string) error {
				return withServices(ctx, e, func(a *app.App) error {
					opts := agent.ListOptions{Limit: 1000}
					if *user != "" {
						u, err := a.Auth.FindUser(ctx, *user)
						if err != nil {
							return err
						}
						if !u.IsAdmin() {
							opts.VisibleTo = u.ID
						}
					}
					var all []*agent.Agent
					for {
						page, err := a.Store.ListAgents(ctx, opts)
						if err != nil {
							return err
						}
						all = append(all, page.Agents...)
						if page.NextCursor == "" {
							break
						}
						opts.Cursor = page.NextCursor
					}
					if *asJSON {
						return printJSON(e.Stdout, all)
					}
					tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
					fmt.Fprintln(tw, "ID\tNAME\tPROVIDER\tMODEL\tVERSION\tSOURCE\tSHARED")
					for _, a := range all {
						src := "api"
						if a.Managed {
							src = "config"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%t\n", a.ID, a.Name, a.Provider, a.Model, a.Version, src, a.Shared)
					}
					return tw.Flush()
				})
			}
		},
	}
}

func agentsShowCommand() *command {
	return &command{
		name:    "agents show",
		args:    "AGENT_ID",
		summary: "print one agent as JSON",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			versions := fs.Bool("versions", false, "print every kept version instead")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one agent id")
				}
				return withServices(ctx, e, func(a *app.App) error {
					if *versions {
						vs, err := a.Store.AgentVersions(ctx, args[0])
						if err != nil {
							return err
						}
						return printJSON(e.Stdout, vs)
					}
					ag, err := a.Store.GetAgent(ctx, args[0])
					if err != nil {
						return err
					}
					return printJSON(e.Stdout, ag)
				})
			}
		},
	}
}

func agentsGraphCommand() *command {
	return &command{
		name:    "agents graph",
		args:    "AGENT_ID",
		summary: "show the agents and edges a run of this agent reaches (JSON or Mermaid)",
		detail: "Resolves the graph as a run does: every agent reached by edges, the edges with their\n" +
			"types and prompts, the agents that start together, the parallel groups, and warnings\n" +
			"for edges that were dropped.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			format := fs.String("format", "json", "`json` or mermaid")
			user := fs.String("user", "", "resolve as this user (`id or email`): only agents they may use")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one agent id")
				}
				if *format != "json" && *format != "mermaid" {
					return usageErr("--format must be json or mermaid")
				}
				return withServices(ctx, e, func(a *app.App) error {
					caller := &auth.User{Role: auth.RoleAdmin}
					if *user != "" {
						u, err := a.Auth.FindUser(ctx, *user)
						if err != nil {
							return err
						}
						caller = u
					}
					g, err := graph.Resolve(args[0], graph.Lookup(a.Agents.Lookup(ctx, caller)))
					if err != nil {
						return err
					}
					for _, w := range g.Warnings {
						fmt.Fprintf(e.Stderr, "warning: %s\n", w)
					}
					if *format == "mermaid" {
						_, err := fmt.Fprint(e.Stdout, g.Mermaid())
						return err
					}
					return printJSON(e.Stdout, g)
				})
			}
		},
	}
}
