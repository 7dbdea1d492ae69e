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

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/httpapi"
)

// endpointsCommands are `relay endpoints keys` and `relay endpoints key`: a
// user's own values for the endpoints whose apiKey or baseURL say
// user_provided (docs/config.md, "Keys each user provides"), set on the
// database directly, as an admin would for them.
func endpointsCommands() []*command {
	userFlag := func(fs *flag.FlagSet) *string {
		return fs.String("user", "", "the user's `id or email` (required)")
	}
	return []*command{
		{name: "endpoints keys", summary: "list the endpoints that take a user's own key or base URL, and which the user has set",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				asJSON := fs.Bool("json", false, "print JSON instead of a table")
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) > 0 {
						return usageErr("unexpected argument %q", args[0])
					}
					if *user == "" {
						return usageErr("--user is required")
					}
					return withUserKeys(ctx, e, *user, func(k httpapi.EndpointKeys, uid string) error {
						list, err := k.List(ctx, uid)
						if err != nil {
							return err
						}
						if *asJSON {
							return printJSON(e.Stdout, list)
						}
						tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
						fmt.Fprintln(tw, "ENDPOINT\tFIELD\tSET\tUPDATED")
						for _, ep := range list {
							for _, f := range ep.Fields {
								at := "-"
								if f.UpdatedAt != nil {
									at = f.UpdatedAt.Format(time.RFC3339)
								}
								fmt.Fprintf(tw, "%s\t%s\t%t\t%s\n", ep.Endpoint, f.Name, f.Set, at)
							}
						}
						return tw.Flush()
					})
				}
			}},
		{name: "endpoints key", args: "NAME", summary: "set or clear a user's own API key or base URL for an endpoint",
			detail: "With --api-key-stdin the first line of standard input is the key (never on the command\n" +
				"line, where other local users can read it). --clear removes the user's values. Only the\n" +
				"fields the endpoint's config marks user_provided may be set.",
			setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
				user := userFlag(fs)
				keyStdin := fs.Bool("api-key-stdin", false, "read the API key from standard input")
				baseURL := fs.String("base-url", "", "the user's base `URL` for the endpoint")
				clear := fs.Bool("clear", false, "remove the user's values for the endpoint")
				return func(ctx context.Context, e *env, args []string) error {
					if len(args) != 1 {
						return usageErr("expected one endpoint name")
					}
					if *user == "" {
						return usageErr("--user is required")
					}
					if *clear == (*keyStdin || *baseURL != "") {
						return usageErr("give --api-key-stdin and/or --base-url, or --clear")
					}
					values := map[string]string{}
					if *keyStdin {
						k, err := readSecretLine(e.Stdin)
						if err != nil {
							return err
						}
						values[config.FieldAPIKey] = k
					}
					if *baseURL != "" {
						values[config.FieldBaseURL] = *baseURL
					}
					return withUserKeys(ctx, e, *user, func(k httpapi.EndpointKeys, uid string) error {
						if *clear {
							if err := k.Clear(ctx, uid, args[0]); err != nil {
								return err
							}
							fmt.Fprintf(e.Stderr, "values for endpoint %s removed\n", args[0])
							return nil
						}
						st, err := k.Set(ctx, uid, args[0], values)
						if err != nil {
							return err
						}
						fmt.Fprintf(e.Stderr, "set for endpoint %s: %s\n", st.Endpoint, setFields(st))
						return nil
					})
				}
			}},
	}
}

// setFields names the fields of st that are set.
func setFields(st httpapi.EndpointKey) string {
	var out []string
	for _, f := range st.Fields {
		if f.Set {
			out = append(out, f.Name)
		}
	}
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, ", ")
}

// withUserKeys opens the application and runs f with the endpoint keys of
// the user named user (id or email).
func withUserKeys(ctx context.Context, e *env, user string, f func(httpapi.EndpointKeys, string) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	u, err := a.Auth.FindUser(ctx, user)
	if err != nil {
		return err
	}
	return f(a.EndpointKeys, u.ID)
}

// readSecretLine reads a secret from the first line of r.
func readSecretLine(r io.Reader) (string, error) {
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil && err != io.EOF {
		return "", fmt.Errorf("reading the key: %w", err)
	}
	k := strings.TrimRight(line, "\r\n")
	if k == "" {
		return "", usageErr("--api-key-stdin: standard input held no key")
	}
	return k, nil
}
