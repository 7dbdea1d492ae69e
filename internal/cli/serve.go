package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
)

func versionCommand() *command {
	return &command{
		name:    "version",
		summary: "print Relay's version, commit and build date",
		detail:  "Also `relay --version`.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			return func(_ context.Context, e *env, _ []string) error {
				fmt.Fprintln(e.Stdout, app.Build())
				return nil
			}
		},
	}
}

func healthcheckCommand() *command {
	return &command{
		name:    "healthcheck",
		args:    "[--url URL]",
		summary: "exit 0 when the server is ready (GET /readyz answers 200), 1 otherwise (2 for bad flags)",
		detail: "Asks the server of the config's server.addr (a wildcard host is asked on 127.0.0.1), or\n" +
			"--url. Meant for container health checks: the image has no curl.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			url := fs.String("url", "", "the readiness `URL` to ask (default: http://<server.addr>/readyz)")
			timeout := fs.Duration("timeout", 5*time.Second, "give up after this `duration`")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageErr("unexpected argument %q", args[0])
				}
				if *timeout <= 0 {
					return usageErr("--timeout: %s: must be more than 0", *timeout)
				}
				u := *url
				if u != "" {
					pu, err := neturl.Parse(u)
					if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
						return usageErr("--url: %q: want an http:// or https:// URL, such as http://127.0.0.1:3080/readyz", u)
					}
				}
				if u == "" {
					cfg, err := e.loadConfig()
					if err != nil {
						return err
					}
					u = "http://" + app.LocalAddr(cfg.Server.Addr) + "/readyz"
				}
				ctx, cancel := context.WithTimeout(ctx, *timeout)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
				if err != nil {
					return usageErr("--url: %v", err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return fmt.Errorf("not ready: %w", err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("not ready: %s: %s", resp.Status, strings.TrimSpace(string(body)))
				}
				fmt.Fprintln(e.Stdout, "ready")
				return nil
			}
		},
	}
}

func configCheckCommand() *command {
	return &command{
		name:    "config check",
		summary: "validate the config and print it as Relay sees it, secrets masked",
		detail: "Exits 1 and lists every problem when the config is invalid. LibreChat keys that Relay\n" +
			"does not use are listed as ignored; keys Relay does not know are warnings with their\n" +
			"position, errors with --strict, and are shown with the problems of an invalid config too,\n" +
			"since a misspelt key often explains one.",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			strict := fs.Bool("strict", false, "treat unknown keys as errors (exit 1)")
			return func(_ context.Context, e *env, _ []string) error {
				cfg, err := e.loadConfig()
				if err != nil {
					return err
				}
				if *strict {
					if err := cfg.Strict(); err != nil {
						return err
					}
				}
				src := cfg.Path
				if src == "" {
					src = "built-in defaults (no config file found)"
				}
				fmt.Fprintf(e.Stderr, "config OK: %s\n", src)
				if len(cfg.Ignored) > 0 {
					fmt.Fprintf(e.Stderr, "ignored LibreChat keys: %s\n", strings.Join(cfg.Ignored, ", "))
				}
				for _, u := range cfg.Unknown {
					fmt.Fprintf(e.Stderr, "warning: %s\n", u)
				}
				for _, w := range app.Warnings(cfg) {
					fmt.Fprintf(e.Stderr, "warning: %s\n", w)
				}
				return cfg.WriteMasked(e.Stdout)
			}
		},
	}
}

func serveCommand() *command {
	return &command{
		name:    "serve",
		summary: "run the Relay server",
		detail: "Listens on server.addr, applies database migrations, ensures the admin key of\n" +
			"RELAY_BOOTSTRAP_API_KEY, loads the config's agents, and serves the API until SIGINT or\n" +
			"SIGTERM, then lets in-flight requests finish (server.shutdown_timeout) and closes the database.\n" +
			"A background part that fails is logged by name and restarted, or stops the server with exit\n" +
			"status 1, by its rule (docs/architecture.md, \"Lifecycle\").",
		setup: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			addr := fs.String("addr", "", "listen `address` (overrides server.addr and RELAY_ADDR)")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usageErr("unexpected argument %q", args[0])
				}
				cfg, err := e.loadConfig()
				if err != nil {
					return err
				}
				if *addr != "" {
					cfg.Server.Addr = *addr
				}
				return app.Serve(ctx, cfg, app.ServeOptions{
					Options:   app.Options{Logger: e.logger(cfg)},
					SetupLink: func(link string) { printSetupLink(e, link) },
					Hooks:     e.hooks,
				})
			}
		},
	}
}

// printSetupLink shows the link that creates the first admin, plainly, to
// the person starting Relay.
func printSetupLink(e *env, link string) {
	fmt.Fprintf(e.Stderr, "\nNo admin can sign in yet. Open this link within %d hours to create the first admin (it works once):\n\n    %s\n\n",
		int(auth.SetupTokenTTL.Hours()), link)
}
