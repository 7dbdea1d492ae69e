// Package cli is Relay's command line: it parses the arguments of `relay`
// (flags anywhere on the line), runs the subcommand (`relay serve`, `relay
// chat`, `relay users add`…) on the application that internal/app composes,
// calling the same services as the HTTP API, prints what they return, and
// gives the exit code: 0, 2 when a command is called wrongly, 1 when it
// fails, or another a command documents (`relay prompt`'s 3). cmd/relay
// calls Main.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/redact"
)

// IO is where a command reads and writes, and its environment.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv looks a variable up; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// hooks are for this package's tests of `relay serve`.
	hooks *app.Hooks
}

// env is what a running command gets: its streams and the --config flag.
type env struct {
	IO
	configPath string
	envFile    string // --env-file: read in place of the .env beside the config
	// redact masks the secrets of the loaded config in the command's error.
	redact *redact.Replacer
}

// loadConfig loads the config named by --config (or found the usual way).
func (e *env) loadConfig() (*config.Config, error) {
	cfg, err := config.LoadWithEnvFile(e.configPath, e.envFile, e.Getenv)
	if err == nil {
		e.Getenv = cfg.Getenv // the .env beside the config counts as environment
		e.redact = app.Secrets(cfg)
	}
	// Keys Relay does not know are shown with the problems they may explain.
	var invalid *config.InvalidError
	if errors.As(err, &invalid) {
		for _, u := range invalid.Unknown {
			fmt.Fprintf(e.Stderr, "warning: %s\n", u)
		}
	}
	return cfg, err
}

// logger returns the logger the config asks for, writing to stderr.
func (e *env) logger(cfg *config.Config) *slog.Logger {
	return app.Logger(cfg, e.Stderr)
}

// open loads the config and opens the application on it, for the commands
// that work on the database directly; callers close it.
func (e *env) open(ctx context.Context) (*app.App, error) {
	cfg, err := e.loadConfig()
	if err != nil {
		return nil, err
	}
	return app.Open(ctx, cfg, app.Options{Logger: e.logger(cfg)})
}

// withServices opens the application and runs f, closing it after.
func withServices(ctx context.Context, e *env, f func(*app.App) error) error {
	a, err := e.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	return f(a)
}

// command is one subcommand. setup registers its flags and returns the function that runs it.
type command struct {
	name    string // e.g. "users add"
	args    string // the synopsis of its positional arguments
	summary string
	detail  string
	setup   func(fs *flag.FlagSet) func(ctx context.Context, e *env, args []string) error
}

// errUsage marks an error in how a command was called (exit code 2).
type errUsage struct{ msg string }

func (e errUsage) Error() string { return e.msg }

func usageErr(format string, args ...any) error { return errUsage{fmt.Sprintf(format, args...)} }

// Main runs the relay command line and returns the process exit code.
// quiet takes what the flag package would print: Main reports its errors
// itself, naming the command.
var quiet = io.Discard

// subcommands are the commands of the group name ("agents": "agents list",
// …), in the order relay help lists them.
func subcommands(cmds []*command, name string) []string {
	var out []string
	for _, c := range cmds {
		if strings.HasPrefix(c.name, name+" ") {
			out = append(out, c.name)
		}
	}
	return out
}

func Main(ctx context.Context, args []string, io IO) int {
	if io.Getenv == nil {
		io.Getenv = os.LookupEnv
	}
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			if c, _ := find(cmds, args[1:]); c != nil {
				printCommandHelp(io.Stdout, c)
				return 0
			}
			fmt.Fprintf(io.Stderr, "relay: no command %q\n\n", strings.Join(args[1:], " "))
			printHelp(io.Stderr, cmds)
			return 2
		}
		printHelp(io.Stdout, cmds)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" {
		args = []string{"version"}
	}
	c, rest := find(cmds, args)
	if c == nil {
		if strings.HasPrefix(args[0], "-") {
			// Flags follow the command: relay keys list --config relay.yaml.
			fmt.Fprintf(io.Stderr, "relay: the command comes first, its flags after it (relay <command> [flags]), not %q; run 'relay help' for the list\n", args[0])
			return 2
		}
		if group := subcommands(cmds, args[0]); len(group) > 0 {
			fmt.Fprintf(io.Stderr, "relay %s: say which: %s; run 'relay help %s' for one\n", args[0], strings.Join(group, ", "), group[0])
			return 2
		}
		fmt.Fprintf(io.Stderr, "relay: unknown command %q; run 'relay help' for the list\n", strings.Join(args, " "))
		return 2
	}
	fs := flag.NewFlagSet("relay "+c.name, flag.ContinueOnError)
	fs.SetOutput(quiet)
	e := &env{IO: io}
	e.flags(fs)
	run := c.setup(fs)
	fs.Usage = func() {} // errors are reported below
	positional, err := parseInterleaved(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(io.Stdout, c)
			return 0
		}
		fmt.Fprintf(io.Stderr, "relay %s: %v\nrun 'relay %s --help' for usage\n", c.name, err, c.name)
		return 2
	}
	err = run(ctx, e, positional)
	if err == nil {
		return 0
	}
	var ue errUsage
	if errors.As(err, &ue) {
		fmt.Fprintf(io.Stderr, "relay %s: %s\nrun 'relay %s --help' for usage\n", c.name, ue.msg, c.name)
		return 2
	}
	var ec exitCode
	if errors.As(err, &ec) {
		return int(ec)
	}
	fmt.Fprintf(io.Stderr, "relay %s: %s\n", c.name, e.redact.String(describe(err)))
	return 1
}

// parseInterleaved parses args with flags anywhere on the line, before,
// between and after the positional arguments (`relay agents show ID
// --versions`), and returns the positional ones in order. Everything after
// "--" is positional.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if at := len(args) - len(rest); at > 0 && args[at-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// exitCode ends a command with that code after it has printed its own message.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit status %d", int(c)) }

// describe formats an error for the terminal, one field per line for validation errors.
func describe(err error) string {
	var fe *fault.Error
	if errors.As(err, &fe) && (len(fe.Fields) > 0 || fe.Kind != fault.Internal && fe.Err != nil) {
		// As the API answers it: the message and its fields, without the
		// cause under it (a database's words for a duplicate, say).
		var b strings.Builder
		prefix := strings.TrimSuffix(err.Error(), fe.Error())
		b.WriteString(prefix + fe.Message)
		for _, f := range fe.Fields {
			fmt.Fprintf(&b, "\n  %s: %s", f.Field, f.Message)
		}
		if fe.Kind == fault.Internal && fe.Err != nil {
			b.WriteString("\n  " + fe.Err.Error())
		}
		return b.String()
	}
	return err.Error()
}

// find matches the longest command name at the start of args.
func find(cmds []*command, args []string) (*command, []string) {
	var best *command
	n := 0
	for _, c := range cmds {
		words := strings.Fields(c.name)
		if len(words) <= len(args) && len(words) > n && strings.Join(args[:len(words)], " ") == c.name {
			best, n = c, len(words)
		}
	}
	return best, args[n:]
}

func printHelp(w io.Writer, cmds []*command) {
	fmt.Fprintf(w, "relay %s — a self-hosted AI agent server\n\nUsage: relay <command> [flags]\n\nCommands:\n", app.Build().Version)
	sorted := append([]*command(nil), cmds...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	width := 16
	for _, c := range sorted {
		width = max(width, len(c.name))
	}
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nEvery command takes --config FILE and --env-file FILE. Run 'relay <command> --help' for its flags.")
}

// flags adds the flags every command takes to fs, read into e.
func (e *env) flags(fs *flag.FlagSet) {
	fs.StringVar(&e.configPath, "config", "", "config `file` (default: $RELAY_CONFIG, else $CONFIG_PATH, else ./relay.yaml or ./librechat.yaml if present, else built-in defaults)")
	fs.StringVar(&e.envFile, "env-file", "", "read variables from this `file`, in LibreChat's .env format, in place of the .env beside the config; the real environment wins over it")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: relay %s [flags] %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	(&env{}).flags(fs)
	c.setup(fs)
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		dashes := "--"
		if len(f.Name) == 1 {
			dashes = "-" // -o, as written
		}
		fmt.Fprintf(w, "  %s%s %s\n        %s", dashes, f.Name, typ, usage)
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintln(w)
	})
}

// commands is every subcommand of relay.
func commands() []*command {
	return append([]*command{
		serveCommand(),
		versionCommand(),
		healthcheckCommand(),
		configCheckCommand(),
		usersAddCommand(),
		usersListCommand(),
		usersPasswdCommand(),
		usersDisableCommand(true),
		usersDisableCommand(false),
		keysCreateCommand(),
		keysListCommand(),
		keysRevokeCommand(),
		agentsListCommand(),
		agentsShowCommand(),
		agentsGraphCommand(),
		mcpListCommand(),
		mcpToolsCommand(),
		mcpCallCommand(),
		mcpAuthCommand(),
		mcpVarsCommand(),
		promptCommand(),
		chatCommand(),
		runsAnswerCommand(),
		exportRagasCommand(),
	}, append(append(append(append(schedulesCommands(), filesCommands()...), conversationsCommands()...), secretsCommands()...), endpointsCommands()...)...)
}

// printJSON prints v as indented JSON; a list with nothing in it is [],
// never null.
func printJSON(w io.Writer, v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = []any{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func fmtTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// multiFlag collects a repeated flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }
