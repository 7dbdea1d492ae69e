package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/relay-ai/relay/internal/account"
	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/mcp"
)

// withMCP loads the config and runs f with a started manager (every start-up
// server attempted), closing it after. When a server needs something of each
// user (OAuth, customUserVars), the manager reads it from the database.
func withMCP(ctx context.Context, e *env, f func(*mcp.Manager) error) error {
	cfg, err := e.loadConfig()
	if err != nil {
		return err
	}
	if len(cfg.MCPOrder) == 0 {
		return errors.New("no mcpServers in the config")
	}
	m, closeMCP, err := app.OpenMCP(ctx, cfg, app.Options{Logger: e.logger(cfg)})
	if err != nil {
		return err
	}
	defer closeMCP()
	m.Start(ctx)
	return f(m)
}

// withMCPAs is withMCP for the user ref names (an id or an email; none for
// "": app-scoped servers only), found in the database, with their values and
// authorization for user-scoped servers, as in a run of theirs.
func withMCPAs(ctx context.Context, e *env, ref string, f func(*mcp.Manager, *mcp.User) error) error {
	if ref == "" {
		return withMCP(ctx, e, func(m *mcp.Manager) error { return f(m, nil) })
	}
	return withAccounts(ctx, e, func(a *app.App, _ *account.Service, m *mcp.Manager) error {
		u, err := accountUser(ctx, a, ref)
		if err != nil {
			return err
		}
		return f(m, u)
	})
}

func mcpListCommand() *command {
	return &command{
		name:    "mcp list",
		summary: "connect to the config's MCP servers and show their state",
		detail: "App-scoped servers are connected and asked for their tools, in parallel, each\n" +
			"bounded by its initTimeout and timeout; user-scoped ones show as disconnected (they\n" +
			"connect per user). Exits 1 when any server is in the error state.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			asJSON := fs.Bool("json", false, "print JSON instead of a table")
			return func(ctx context.Context, e *env, _ []string) error {
				return withMCP(ctx, e, func(m *mcp.Manager) error {
					// Start listed the tools of the servers marked for
					// start-up; the other app-scoped ones are asked now.
					var g sync.WaitGroup
					for _, s := range m.Servers() {
						if s.Scope == mcp.ScopeApp && !s.Startup {
							g.Go(func() { _, _ = m.Tools(ctx, s.Name, nil) }) // a failure shows in the status
						}
					}
					g.Wait()
					sts := m.Status(nil)
					if *asJSON {
						if err := printJSON(e.Stdout, sts); err != nil {
							return err
						}
					} else {
						tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSCOPE\tSTATE\tTOOLS\tCONNECTED SINCE\tLAST ERROR")
						for _, s := range sts {
							since := "-"
							if s.ConnectedSince != nil {
								since = s.ConnectedSince.Format(time.RFC3339)
							}
							fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Transport, s.Scope, s.State, s.ToolCount, since, s.LastError)
						}
						if err := tw.Flush(); err != nil {
							return err
						}
					}
					for _, s := range sts {
						if s.State == mcp.StateError {
							return exitCode(1)
						}
					}
					return nil
				})
			}
		},
	}
}

func mcpToolsCommand() *command {
	return &command{
		name:    "mcp tools",
		args:    "[SERVER]",
		summary: "list MCP tools by the keys the model sees, with their descriptions",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			user := fs.String("user", "", "the user (`id or email`) whose tools to list: needed for user-scoped servers")
			asJSON := fs.Bool("json", false, "print JSON (with input schemas) instead of text")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 1 {
					return usageErr("expected at most one server name")
				}
				return withMCPAs(ctx, e, *user, func(m *mcp.Manager, u *mcp.User) error {
					var names []string
					if len(args) == 1 {
						if _, ok := m.Server(args[0]); !ok {
							return fmt.Errorf("no MCP server named %q in mcpServers", args[0])
						}
						names = args
					} else {
						for _, s := range m.Servers() {
							names = append(names, s.Name)
						}
					}
					var all []mcp.Tool
					failed := false
					for _, name := range names {
						ts, err := m.Tools(ctx, name, u)
						if err != nil {
							fmt.Fprintf(e.Stderr, "relay mcp tools: %s: %v\n", name, err)
							failed = true
							continue
						}
						all = append(all, ts...)
					}
					if *asJSON {
						if err := printJSON(e.Stdout, all); err != nil {
							return err
						}
					} else {
						for _, t := range all {
							fmt.Fprintf(e.Stdout, "%s\n    %s\n", t.Key, strings.ReplaceAll(strings.TrimSpace(t.Description), "\n", "\n    "))
						}
					}
					if failed {
						return exitCode(1)
					}
					return nil
				})
			}
		},
	}
}

func mcpCallCommand() *command {
	return &command{
		name:    "mcp call",
		args:    "TOOLKEY",
		summary: "call an MCP tool and print the result as the model would see it",
		detail: "TOOLKEY is <tool>__mcp__<server> as 'relay mcp tools' lists it. Exits 1 with the\n" +
			"error text the model would get when the call fails or the tool reports an error.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			argsJSON := fs.String("args", "{}", "the tool's arguments as a JSON `object`")
			user := fs.String("user", "", "the user (`id or email`) to call as: needed for user-scoped servers")
			family := fs.String("format", "text", "how to render the result: text, openai or anthropic (the provider `family`)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usageErr("expected one tool key")
				}
				if !json.Valid([]byte(*argsJSON)) {
					return usageErr("--args is not valid JSON")
				}
				fam := mcp.Family(*family)
				switch fam {
				case mcp.FamilyText, mcp.FamilyOpenAI, mcp.FamilyAnthropic:
				default:
					return usageErr("--format must be text, openai or anthropic")
				}
				call := func(m *mcp.Manager, u *mcp.User) error {
					res, err := m.Call(ctx, u, args[0], json.RawMessage(*argsJSON))
					if err != nil {
						fmt.Fprintln(e.Stdout, mcp.FailureText(args[0], err))
						return exitCode(1)
					}
					out := mcp.Format(res, fam)
					if fam == mcp.FamilyText {
						fmt.Fprintln(e.Stdout, out.Text)
					} else if err := printJSON(e.Stdout, out); err != nil {
						return err
					}
					if out.IsError {
						return exitCode(1)
					}
					return nil
				}
				return withMCPAs(ctx, e, *user, call)
			}
		},
	}
}
