// Package app is Relay's composition root: it parses the command line, loads the
// config, opens the store and wires the services together, and starts and stops
// the long-lived parts in a stated order. Nothing imports it but cmd/relay.
package app

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/redact"
)

// Version, Commit and Date describe the build when it is made without the Go
// toolchain's version-control stamp (the container image, see Dockerfile):
//
//	-ldflags "-X github.com/relay-ai/relay/internal/app.Version=v1.2.3 -X ….Commit=… -X ….Date=…"
//
// Empty means: read from the binary's build information.
var Version, Commit, Date = "", "", ""

// buildInfo is what `relay version` prints.
type buildInfo struct {
	Version, Commit, Date string
	Modified              bool // built from a work tree with uncommitted changes
}

// readBuild returns the build's description: the -X values when set, else the
// main module's version and the vcs.revision, vcs.time and vcs.modified
// settings the Go toolchain records (bi may be nil).
func readBuild(bi *debug.BuildInfo) buildInfo {
	b := buildInfo{Version: "dev", Commit: "unknown", Date: "unknown"}
	if bi != nil {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.time":
				b.Date = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if Version != "" {
		b.Version = Version
	}
	if Commit != "" {
		b.Commit, b.Modified = Commit, false
	}
	if Date != "" {
		b.Date = Date
	}
	return b
}

// String is the line `relay version` prints, e.g.
// "relay v1.2.3 (commit 0123abc, built 2026-01-02T03:04:05Z, go1.26.0 linux/amd64)".
func (b buildInfo) String() string {
	commit := b.Commit
	if b.Modified {
		commit += "-modified"
	}
	return fmt.Sprintf("relay %s (commit %s, built %s, %s %s/%s)", b.Version, commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// version returns Relay's version: Version, or the module version recorded in the binary.
func version() string {
	bi, _ := debug.ReadBuildInfo()
	return readBuild(bi).Version
}

// IO is where a command reads and writes, and its environment.
type IO struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Getenv looks a variable up; nil means os.LookupEnv.
	Getenv func(string) (string, bool)
	// hooks are for this package's tests of `relay serve`.
	hooks *serveHooks
}

// env is what a running command gets: its streams and the --config flag.
type env struct {
	IO
	configPath string
	// redact masks the secrets of the loaded config in the command's error.
	redact *redact.Replacer
}

// loadConfig loads the config named by --config (or found the usual way).
func (e *env) loadConfig() (*config.Config, error) {
	cfg, err := config.Load(e.configPath, e.Getenv)
	if err == nil {
		e.Getenv = cfg.Getenv // the .env beside the config counts as environment
		e.redact = e.secrets(cfg)
	}
	return cfg, err
}

// logger returns the logger the config asks for, writing to stderr.
func (e *env) logger(cfg *config.Config) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Server.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(e.Stderr, opts)
	if cfg.Server.LogFormat == "json" {
		h = slog.NewJSONHandler(e.Stderr, opts)
	}
	r := e.redact
	if r == nil {
		r = e.secrets(cfg)
	}
	return slog.New(redact.NewHandler(h, r))
}

// minLogSecret is the length of the shortest secret the log masks.
const minLogSecret = 8

// secrets is what the log masks (docs/config.md, "Secrets in logs and
// errors"): the config's secrets and the bootstrap key.
func (e *env) secrets(cfg *config.Config) *redact.Replacer {
	getenv := e.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	vals := cfg.Secrets(getenv)
	if k, ok := getenv("RELAY_BOOTSTRAP_API_KEY"); ok {
		vals = append(vals, k)
	}
	var s redact.Secrets
	for _, v := range vals {
		// A short value (a database password such as "relay") would garble
		// every line that holds the word; keys and tokens are longer.
		if len(v) >= minLogSecret {
			s.Add(v)
		}
	}
	return s.Replacer()
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
		fmt.Fprintf(io.Stderr, "relay: unknown command %q; run 'relay help' for the list\n", strings.Join(args, " "))
		return 2
	}
	fs := flag.NewFlagSet("relay "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	e := &env{IO: io}
	fs.StringVar(&e.configPath, "config", "", "config `file` (default: $RELAY_CONFIG, else $CONFIG_PATH, else ./relay.yaml or ./librechat.yaml if present, else built-in defaults)")
	run := c.setup(fs)
	fs.Usage = func() {} // errors are reported below
	positional, err := parseInterleaved(fs, rest)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(io.Stdout, c)
			return 0
		}
		fmt.Fprintf(io.Stderr, "run 'relay %s --help' for usage\n", c.name)
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
	if errors.As(err, &fe) && len(fe.Fields) > 0 {
		var b strings.Builder
		prefix := strings.TrimSuffix(err.Error(), fe.Error())
		b.WriteString(prefix + fe.Message)
		for _, f := range fe.Fields {
			fmt.Fprintf(&b, "\n  %s: %s", f.Field, f.Message)
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
	fmt.Fprintf(w, "relay %s — a self-hosted AI agent server\n\nUsage: relay <command> [flags]\n\nCommands:\n", version())
	sorted := append([]*command(nil), cmds...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	width := 16
	for _, c := range sorted {
		width = max(width, len(c.name))
	}
	for _, c := range sorted {
		fmt.Fprintf(w, "  %-*s %s\n", width, c.name, c.summary)
	}
	fmt.Fprintln(w, "\nEvery command takes --config FILE. Run 'relay <command> --help' for its flags.")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: relay %s [flags] %s\n\n%s\n", c.name, c.args, c.summary)
	if c.detail != "" {
		fmt.Fprintf(w, "\n%s\n", c.detail)
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.String("config", "", "config `file` (default: $RELAY_CONFIG, else $CONFIG_PATH, else ./relay.yaml or ./librechat.yaml if present, else built-in defaults)")
	c.setup(fs)
	fmt.Fprintln(w, "\nFlags:")
	fs.VisitAll(func(f *flag.Flag) {
		typ, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(w, "  --%s %s\n        %s", f.Name, typ, usage)
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
