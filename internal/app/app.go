// Package app is Relay's composition root. From one loaded config it opens
// the store and builds the services on it (App, from Open), builds what runs
// agents (a Runner, a Preview, the MCP manager), and runs the server (Serve):
// it listens, opens the database, starts the long-lived parts and stops them
// in a stated order (docs/architecture.md, "Lifecycle"). It parses no
// arguments and prints nothing for people to read: the command line
// (internal/cli) does, calling the services built here, as the HTTP API does.
package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/redact"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/token"
	"github.com/relay-ai/relay/internal/vault"
)

// Version, Commit and Date describe the build when it is made without the Go
// toolchain's version-control stamp (the container image, see Dockerfile):
//
//	-ldflags "-X github.com/relay-ai/relay/internal/app.Version=v1.2.3 -X ….Commit=… -X ….Date=…"
//
// Empty means: read from the binary's build information.
var Version, Commit, Date = "", "", ""

// BuildInfo describes the build of the running binary.
type BuildInfo struct {
	Version, Commit, Date string
	Modified              bool // built from a work tree with uncommitted changes
}

// Build returns the running binary's BuildInfo.
func Build() BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return readBuild(bi)
}

// readBuild returns the build's description: the -X values when set, else the
// main module's version and the vcs.revision, vcs.time and vcs.modified
// settings the Go toolchain records (bi may be nil).
func readBuild(bi *debug.BuildInfo) BuildInfo {
	b := BuildInfo{Version: "dev", Commit: "unknown", Date: "unknown"}
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

// String describes the build in one line, e.g.
// "relay v1.2.3 (commit 0123abc, built 2026-01-02T03:04:05Z, go1.26.0 linux/amd64)".
func (b BuildInfo) String() string {
	commit := b.Commit
	if b.Modified {
		commit += "-modified"
	}
	return fmt.Sprintf("relay %s (commit %s, built %s, %s %s/%s)", b.Version, commit, b.Date, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// version returns Relay's version: Version, or the module version recorded in the binary.
func version() string { return Build().Version }

// Logger returns the logger cfg asks for (server.log_level and
// server.log_format), writing to w, with the secrets of cfg masked.
func Logger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(cfg.Server.LogLevel)); err != nil {
		level = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if cfg.Server.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	// Request and trace ids on every line of a request (docs/observability.md).
	return slog.New(telemetry.LogHandler(redact.NewHandler(h, Secrets(cfg))))
}

// minLogSecret is the length of the shortest secret the log masks.
const minLogSecret = 8

// Secrets is what the log masks, and the command line in the errors it
// prints (docs/config.md, "Secrets in logs and errors"): the config's secrets
// and the bootstrap key, as cfg's environment holds them.
func Secrets(cfg *config.Config) *redact.Replacer {
	vals := cfg.Secrets(cfg.Getenv)
	if k, ok := cfg.Getenv("RELAY_BOOTSTRAP_API_KEY"); ok {
		vals = append(vals, k)
	}
	vals = append(vals, telemetry.Secrets(cfg.Getenv)...) // OTLP headers and endpoint passwords
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

// Options are what a program gives Open besides the config.
type Options struct {
	// Logger is where Relay logs; nil means Logger(cfg, os.Stderr).
	Logger *slog.Logger
	// Telemetry measures and traces what the services do
	// (docs/observability.md); nil measures nothing.
	Telemetry *telemetry.Telemetry
	// WriteBehind has the store write runs' records behind as
	// database.write_behind says. relay serve alone sets it: a command
	// that ends without closing the store (a broken pipe, a signal) would
	// lose what waits.
	WriteBehind bool
}

// logger returns the logger of o for cfg.
func (o Options) logger(cfg *config.Config) *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return Logger(cfg, os.Stderr)
}

// App is Relay's services on an opened store, built from one config: those
// the HTTP API serves and the command line calls. Close closes the store.
type App struct {
	Config *config.Config
	Log    *slog.Logger
	Store  store.Store
	Auth   *auth.Service
	Agents *agent.Service
	Memory *memory.Service
	Files  *file.Service
	// Vault keeps users' own secrets (docs/config.md "secrets").
	Vault *vault.Vault
	// EndpointKeys checks and stores users' own values for the endpoints
	// that take them (docs/config.md, "Keys each user provides").
	EndpointKeys httpapi.EndpointKeys

	// keys hold those values for the provider clients.
	keys keyStore
	// users are the users whose details endpoint headers name, as the
	// provider clients look them up.
	users *headerUsers
	// tokens counts the tokens of every request, with one cache of message
	// counts for the process.
	tokens *token.Counters
	// tel measures and traces what the services do; nil measures nothing.
	tel *telemetry.Telemetry
}

// Open opens the database cfg names, applies its migrations, builds the
// services on it and syncs the config's agents into it.
func Open(ctx context.Context, cfg *config.Config, opts Options) (*App, error) {
	log := opts.logger(cfg)
	st, err := openStore(ctx, cfg, opts.WriteBehind, log)
	if err != nil {
		return nil, err
	}
	a := &App{
		Config: cfg,
		Log:    log,
		Store:  st,
		Auth:   auth.NewService(st, nil),
		Agents: agent.NewService(st, agent.Rules{Providers: cfg.Providers(), MaxRecursionLimit: cfg.Endpoints.Agents.MaxRecursionLimit, Files: unreadableFiles(st)}),
		Memory: memory.NewService(st, memory.Config{Disabled: cfg.Memory.Disabled, ValidKeys: cfg.Memory.ValidKeys,
			TokenLimit: cfg.Memory.TokenLimit, Personalize: cfg.Memory.Personalize == nil || *cfg.Memory.Personalize}, nil),
		Files:  fileService(cfg, st, log),
		tokens: token.NewCounters(0),
		tel:    opts.Telemetry,
		users:  newHeaderUsers(st.GetUser),
	}
	a.Auth.SetLogger(log.With(slog.String("part", "auth")))
	if db, ok := st.(*store.DB); ok {
		db.Instrument(a.tel) // a span per write, the pools' statistics
	}
	a.tel.CollectIngestQueue(a.Files.Waiting)
	a.Auth.SetSessionTTL(cfg.Auth.SessionTTL.Duration)
	// Without a key (Postgres with no secrets.key) the vault refuses every
	// use, saying what to set: only what needs per-user secrets fails.
	if a.Vault, err = newVault(cfg, st, log, owner()); err != nil {
		st.Close()
		return nil, err
	}
	a.keys = vaultKeys{a.Vault}
	a.EndpointKeys = &userKeys{cfg: cfg, keys: a.keys, guard: outboundGuard(cfg)}
	defs := make([]*agent.Agent, len(cfg.Agents))
	for i, ag := range cfg.Agents {
		defs[i] = &agent.Agent{ID: ag.ID, Spec: ag.Spec}
	}
	res, err := a.Agents.SyncConfig(ctx, defs)
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("loading the config's agents: %w", err)
	}
	if res.Created+res.Updated+res.Released > 0 {
		log.Info("config agents synced", slog.Int("created", res.Created), slog.Int("updated", res.Updated),
			slog.Int("unchanged", res.Unchanged), slog.Int("released", res.Released))
	}
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.Store.Close() }

// Conversations returns the run service that lists, renames and reads
// conversations and answers the questions of runs; it runs no agent.
func (a *App) Conversations() *run.Service {
	return &run.Service{Store: a.Store, Log: a.Log}
}

// encodings are the token encodings of the configured agents' models.
func (a *App) encodings() []token.Encoding {
	var encs []token.Encoding
	for _, ag := range a.Config.Agents {
		if e, _ := token.EncodingFor(ag.Model); !slices.Contains(encs, e) {
			encs = append(encs, e)
		}
	}
	return encs
}

// openStore opens the database the config names and applies migrations;
// with behind, as database.write_behind says.
func openStore(ctx context.Context, cfg *config.Config, behind bool, log *slog.Logger) (store.Store, error) {
	engine, dsn, err := cfg.DB()
	if err != nil {
		return nil, err
	}
	var db *store.DB
	switch engine {
	case "sqlite":
		db, err = sqlite.Open(ctx, dsn)
		if wb := cfg.Database.WriteBehind.Duration; err == nil && behind && wb > 0 {
			if err = db.WriteBehind(wb, log); err != nil {
				db.Close()
			}
		}
	case "postgres":
		db, err = postgres.Open(ctx, dsn, postgres.Options{ConnectTimeout: cfg.Database.ConnectTimeout.Duration, Logger: log})
	default:
		err = fmt.Errorf("database.url: unsupported engine %q", engine)
	}
	if err != nil {
		return nil, err // not db: a nil *DB in a Store interface would not be nil
	}
	return db, nil
}
