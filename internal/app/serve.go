package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/auth/oidc"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/procs"
	"github.com/relay-ai/relay/internal/quota"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/supervise"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/web"
)

// staleRunAge is how old a run still marked running must be before a starting
// process takes it for one that a stopped process left behind.
const staleRunAge = 30 * time.Minute

// TuneMemory applies server.memory_limit_mb and server.gc_percent to the Go
// runtime. GOMEMLIMIT and GOGC in the environment (getenv) win over the
// config, as the runtime's own settings.
func TuneMemory(s config.Server, getenv func(string) (string, bool), log *slog.Logger) {
	if _, set := getenv("GOMEMLIMIT"); s.MemoryLimitMB > 0 && !set {
		debug.SetMemoryLimit(s.MemoryLimitMB << 20)
	}
	if _, set := getenv("GOGC"); s.GCPercent != 0 && !set {
		debug.SetGCPercent(s.GCPercent)
	}
	log.Debug("memory", slog.Int64("limit_bytes", debug.SetMemoryLimit(-1)), slog.Int("gc_percent", gcPercent()))
}

// TuneThreads applies server.procs: a fixed number of threads running Go code
// at once, or, with 0, a governor for the caller to run that follows the
// load up to the CPUs the process may use. GOMAXPROCS in the environment wins
// over the config, as the runtime's own setting; nil means nothing to run.
func TuneThreads(s config.Server, getenv func(string) (string, bool), log *slog.Logger) *procs.Governor {
	if v, set := getenv("GOMAXPROCS"); set {
		if n, err := strconv.Atoi(v); err == nil && n > 0 { // what the runtime takes
			return nil
		}
	}
	if s.Procs > 0 {
		runtime.GOMAXPROCS(s.Procs)
		return nil
	}
	return &procs.Governor{Max: runtime.GOMAXPROCS(0), Log: log}
}

// gcPercent reads the garbage collector's target without changing it.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// ServeOptions are what a program gives Serve besides the config.
type ServeOptions struct {
	Options
	// SetupLink is given the one-time link that creates the first admin
	// when no admin can sign in, to show the person starting Relay. The
	// link holds a credential: the log says only that there is one. nil
	// drops it.
	SetupLink func(link string)
	// Hooks are for tests; nil in every real run.
	Hooks *Hooks
}

// Serve runs the server until ctx is done. It listens first, so that
// /healthz answers and a port in use fails at once, then opens the database
// (Postgres may still be starting), builds the services, starts the
// background parts, and only then reports ready. When ctx is done, the HTTP
// server fails or a fatal part fails, it shuts down in the order of
// docs/architecture.md, "Lifecycle". It returns nil when it stopped for ctx
// and shut down cleanly, else what failed.
func Serve(ctx context.Context, cfg *config.Config, opts ServeOptions) error {
	log := opts.logger(cfg)
	hooks := opts.Hooks
	TuneMemory(cfg.Server, cfg.Getenv, log)
	threads := TuneThreads(cfg.Server, cfg.Getenv, log)
	if cfg.Path != "" {
		log.Info("config loaded", slog.String("file", cfg.Path), slog.String("from", cfg.PathFrom))
	} else {
		log.Info("config: no file found, built-in defaults", slog.String("looked_for", "--config, RELAY_CONFIG, CONFIG_PATH, ./relay.yaml, ./librechat.yaml"))
	}
	if cfg.DotEnv != "" {
		log.Info("config: variables read", slog.String("file", cfg.DotEnv))
	}
	if len(cfg.Ignored) > 0 {
		log.Warn("config: ignoring LibreChat keys Relay does not use", slog.String("keys", strings.Join(cfg.Ignored, ", ")))
	}
	for _, u := range cfg.Unknown {
		log.Warn("config: " + u)
	}
	logConfigWarnings(log, cfg)
	// Metrics always; traces when the OTEL_* variables ask for them
	// (docs/observability.md). The last spans are sent before Serve returns.
	tel, err := telemetry.New(ctx, telemetry.Options{Getenv: cfg.Getenv, Version: version(), Logger: log})
	if err != nil {
		return err
	}
	if how := tel.Tracing(); how != "" {
		log.Info("tracing", slog.String("export", how))
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tel.Shutdown(fctx); err != nil {
			log.Warn("exporting the last spans", slog.Any("err", err))
		}
	}()
	var metricsLn net.Listener
	if cfg.Metrics.Addr != "" {
		if metricsLn, err = net.Listen("tcp", cfg.Metrics.Addr); err != nil {
			return fmt.Errorf("metrics.addr %s: %w", cfg.Metrics.Addr, err)
		}
		defer metricsLn.Close()
		log.Info("metrics listening", slog.String("addr", metricsLn.Addr().String()))
	}
	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("server.addr %s: address already in use (is another relay running? set server.addr or --addr)", cfg.Server.Addr)
		}
		return fmt.Errorf("server.addr %s: %w", cfg.Server.Addr, err)
	}
	// Until the services exist, only the probes answer; everything else is 503.
	var handler atomic.Pointer[http.Handler]
	var starting http.Handler = startingHandler(version())
	handler.Store(&starting)
	srv := httpapi.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*handler.Load()).ServeHTTP(w, r) }), httpapi.Conns{
		ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout.Duration,
		ReadTimeout:       cfg.Server.ReadTimeout.Duration,
		IdleTimeout:       cfg.Server.IdleTimeout.Duration,
		MaxHeaderBytes:    cfg.Server.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("listening", slog.String("addr", ln.Addr().String()))

	a, err := Open(ctx, cfg, Options{Logger: log, Telemetry: tel, WriteBehind: true})
	var setupURL string
	if err == nil {
		err = a.bootstrap(ctx)
		if err == nil {
			setupURL, err = a.setupLink(ctx, ln.Addr().String())
		}
		if err != nil {
			a.Close()
		}
	}
	if err != nil {
		_ = srv.Close()
		return err
	}
	// MCP servers connect in the background: a slow or broken one never delays
	// readiness, and its state is visible in /api/mcp/servers.
	mcpm, accounts := a.MCP()
	a.Agents.SetTools(knownTools(mcpm, log))
	// The background parts run under one supervisor, each by its rule, and
	// stop in the reverse of the order they start, after the HTTP server and
	// the runs and before the database closes (docs/architecture.md,
	// "Lifecycle"). They do not see ctx end: the shutdown stops them.
	popts := supervise.Options{Logger: log}
	if hooks != nil {
		popts.MinBackoff = hooks.Backoff
	}
	parts := supervise.New(popts)
	bgCtx := context.WithoutCancel(ctx)
	start := func(p supervise.Part) {
		if hooks != nil && hooks.Wrap != nil {
			p = hooks.Wrap(p)
		}
		parts.Start(bgCtx, p)
	}
	stopBackground := parts.Stop
	if metricsLn != nil {
		// Prometheus's own listener (metrics.addr): its end is the end of the
		// scrapes, so it stops the server.
		start(supervise.Part{Name: "metrics", Rule: supervise.Fatal, Run: func(ctx context.Context) error { return tel.ServeMetrics(ctx, metricsLn, cfg.Metrics.Pprof) }})
	}
	start(mcpPart(mcpm))

	prep, err := a.preparer(mcpm, nil) // previews: no summaries
	if err != nil {
		_ = srv.Close()
		stopBackground()
		a.Close()
		return err
	}
	runs, err := a.runService(mcpm)
	if err != nil {
		_ = srv.Close()
		stopBackground()
		a.Close()
		return err
	}
	// Runs that a stopped process left running will never finish: say so. Only
	// runs older than the longest a run may take are touched, since other Relay
	// processes (or a `relay chat`) may be running theirs right now.
	if n, err := a.Store.FailStaleRuns(ctx, time.Now().Add(-staleRunAge), "Relay stopped while the run was in progress"); err != nil {
		log.Warn("failing stale runs", slog.Any("err", err))
	} else if n > 0 {
		log.Warn("marked runs left running by a stopped process as failed", slog.Int("runs", n))
	}
	// This process registers as a node and heartbeats; the runs it starts and
	// the firings it claims name it, so that if it dies another process fails
	// them. A node left by a dead process of this host (a restart) is reaped
	// now, before this one serves.
	live := a.liveness()
	if err := live.Register(ctx); err != nil {
		_ = srv.Close()
		stopBackground()
		a.Close()
		return err
	}
	ingest := a.Files
	if db, ok := a.Store.(*store.DB); ok {
		runs.Store = db.OnNode(live.ID())
		ingest = a.Files.Using(db.OnNode(live.ID()))
	}
	// Taken for dead by another process (this one stalled), it gives up its
	// runs, which that process failed, before it registers again.
	live.Abandon, runs.TakenForDead = runs.Abandon, live.Lost
	// Every process runs the scheduler; the database makes each firing happen once.
	// The firings of dead processes failed here reach their webhooks through it.
	sched := a.scheduleService(runs)
	sched.Live, live.Failed = live, sched.NotifyFailed
	if _, err := live.Reap(ctx); err != nil {
		log.Warn("failing the work of stopped processes", slog.Any("err", err))
	}
	// The quotas count the runs of this process, scheduled ones included.
	quotas := quotaService(cfg, a.Store)
	runs.Admit = quotas.StartRun
	sched.Lag = tel.ObserveSchedulerLag
	for _, p := range backgroundParts(a, live, sched, ingest) {
		start(p)
	}
	if threads != nil {
		encodings := a.encodings()
		start(supervise.Part{Name: "threads", Rule: supervise.Restart, Run: func(ctx context.Context) error {
			// The encodings of the configured agents' models are read
			// first: the tens of milliseconds of CPU each takes would
			// otherwise come with the first run, where the governor would
			// take them for load and keep two threads for seconds.
			a.tokens.Load(encodings...)
			return threads.Run(ctx)
		}})
	}
	if hooks != nil {
		for _, p := range hooks.Parts {
			start(p)
		}
	}

	var api http.Handler = httpapi.New(httpapi.Options{
		Schedules:    sched,
		Prompt:       prep,
		Runs:         runs,
		Retrieval:    a.Retrieval(),
		Auth:         a.Auth,
		Agents:       a.Agents,
		Groups:       auth.NewGroups(a.Store),
		MCP:          mcpm,
		Accounts:     accounts,
		Memory:       a.Memory,
		Files:        a.Files,
		EndpointKeys: a.EndpointKeys,
		UploadLimit:  cfg.FileConfig.UploadLimit(),
		Ready:        func(ctx context.Context) error { return ready(ctx, a.Store) },
		Logger:       log,
		MaxBodyBytes: cfg.Server.MaxBodyBytes,
		Version:      version(),
		// Listing models is no model request: the clients undecorated.
		Catalog:     newFetchingCatalog(cfg, models(cfg, a.keys, a.users, log), log).Catalog,
		CORSOrigins: cfg.Server.CORSOrigins,
		Quota:       quotas,
		UI:          web.Dist(),
		SignIns: quota.NewSignIns(quota.SignInLimits{PerEmail: cfg.Auth.LoginLimit.PerEmail,
			PerAddress: cfg.Auth.LoginLimit.PerAddress, Window: cfg.Auth.LoginLimit.Window.Duration}, nil),
		PublicURL: cfg.Server.PublicURL,
		OIDC:      oidcClient(cfg),
		// Every request measured and traced by its route; GET /metrics with
		// metrics.token.
		Telemetry:    tel,
		MetricsToken: cfg.Metrics.Token,
	})
	handler.Store(&api)
	log.Info("ready", slog.String("database", a.Store.Engine()))
	if setupURL != "" {
		// The link holds a one-time credential: it goes to the console only,
		// never into a log record that log pipelines keep.
		log.Warn("setup required: no admin can sign in; open the one-time setup link printed on the console to create the first admin",
			slog.Duration("valid_for", auth.SetupTokenTTL))
		if opts.SetupLink != nil {
			opts.SetupLink(setupURL)
		}
	}

	select {
	case err = <-served:
		err = fmt.Errorf("http server stopped: %w", err)
		log.Error("shutting down", slog.String("cause", err.Error()))
	case <-ctx.Done():
		log.Info("shutting down", slog.String("cause", fmt.Sprint(context.Cause(ctx))))
	case <-parts.Failed():
		err = parts.Err()
		log.Error("shutting down", slog.String("cause", err.Error()))
	}
	// A process that is stopping claims no more firings: the other processes
	// run them, or this one's next start does (scheduler.grace).
	sched.Close()
	if serr := drain(context.WithoutCancel(ctx), srv, runs, cfg.Server.ShutdownTimeout.Duration, log, hooks.step); err == nil {
		err = serr
	}
	stopBackground()
	cerr := a.Close()
	hooks.step("database")
	if cerr != nil && err == nil {
		err = fmt.Errorf("closing the database: %w", cerr)
	}
	if err == nil {
		log.Info("stopped")
	}
	return err
}

// drain is the first half of the shutdown: the HTTP server stops taking
// requests and lets those in flight finish, within timeout; the runs still
// going get what is left of it, and are then stopped with their partial
// answers saved; the work after finished runs (titles, memory) gets what is
// left after that. step names each half done, for tests.
func drain(ctx context.Context, srv *http.Server, runs *run.Service, timeout time.Duration, log *slog.Logger, step func(string)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	if err != nil {
		err = fmt.Errorf("in-flight requests did not finish within server.shutdown_timeout (%s): %w", timeout, err)
	}
	step("http")
	if n := runs.Drain(ctx); n > 0 {
		log.Warn("stopped runs still in progress at shutdown", slog.Int("runs", n))
	}
	if serr := runs.Settle(ctx); serr != nil {
		log.Warn("work after runs still in progress at shutdown", slog.String("err", serr.Error()))
	}
	step("runs")
	return err
}

// mcpPart closes idle MCP connections, and every connection when it stops.
// It first connects the servers that start with Relay, once: a restart
// only resumes the closing of idle connections.
func mcpPart(m *mcp.Manager) supervise.Part {
	var started atomic.Bool
	return supervise.Part{Name: "mcp", Rule: supervise.Restart, Run: func(ctx context.Context) error {
		if !started.Swap(true) {
			m.Start(ctx)
		}
		return m.Run(ctx)
	}}
}

// backgroundParts are the parts that start once the services exist, in
// their start order; each rule's reason is in docs/architecture.md,
// "Lifecycle". The liveness heartbeat is fatal: a process that no longer
// heartbeats is taken for dead by the others, which fail its runs while it
// still runs them. The others are loops that may begin again at any time.
func backgroundParts(a *App, live *schedule.Liveness, sched *schedule.Service, ingest *file.Service) []supervise.Part {
	return []supervise.Part{
		{Name: "liveness", Rule: supervise.Fatal, Run: live.Run},
		// Every process runs the scheduler; the database makes each firing happen once.
		{Name: "scheduler", Rule: supervise.Restart, Run: sched.Run},
		// Every process ingests uploaded files; the database gives each file to one.
		{Name: "ingestion", Rule: supervise.Restart, Run: ingest.Run},
		// Expired sessions and setup tokens are deleted now and every hour.
		{Name: "sessions", Rule: supervise.Restart, Run: func(ctx context.Context) error {
			sweepSessions(ctx, a.Auth, a.Log, time.Hour)
			return nil
		}},
	}
}

// Hooks let tests add parts to Serve and watch its shutdown.
type Hooks struct {
	// Parts start after the server's own, so they stop first.
	Parts []supervise.Part
	// Wrap, if set, wraps every part before it starts.
	Wrap func(supervise.Part) supervise.Part
	// Backoff, if set, is the wait before a failed part's first restart.
	Backoff time.Duration
	// OnStep is told each step of the shutdown done: "http" (requests
	// drained), "runs" (runs drained or stopped), "database" (closed).
	OnStep func(string)
}

// step tells the hooks that a step of the shutdown is done.
func (h *Hooks) step(name string) {
	if h != nil && h.OnStep != nil {
		h.OnStep(name)
	}
}

// quotaService builds the per-user quotas and rate limits of the config's limits.
func quotaService(cfg *config.Config, st quota.Store) *quota.Service {
	l := cfg.Limits
	return quota.New(quota.Limits{
		Files: l.User.Files, Bytes: l.User.StorageMB << 20,
		RunsPerMinute: l.User.RunsPerMinute, ConcurrentRuns: l.User.ConcurrentRuns,
		KeyPerMinute: l.API.KeyPerMinute, KeyBurst: l.API.KeyBurst,
		IPPerMinute: l.API.IPPerMinute, IPBurst: l.API.IPBurst,
		IncludeAdmins: l.IncludeAdmins,
	}, st, nil)
}

// bootstrap ensures the admin key of RELAY_BOOTSTRAP_API_KEY.
func (a *App) bootstrap(ctx context.Context) error {
	secret, ok := a.Config.Getenv("RELAY_BOOTSTRAP_API_KEY")
	if !ok || secret == "" {
		return nil
	}
	u, err := a.Auth.Bootstrap(ctx, secret)
	if err != nil {
		return fmt.Errorf("RELAY_BOOTSTRAP_API_KEY: %w", err)
	}
	a.Log.Info("bootstrap admin key ensured", slog.String("user_id", u.ID), slog.String("email", u.Email))
	return nil
}

// oidcClient is the single sign-on of auth.oidc, nil when it is off.
func oidcClient(cfg *config.Config) *oidc.Client {
	o := cfg.Auth.OIDC
	if !o.Enabled() {
		return nil
	}
	return oidc.New(oidc.Config{
		Issuer: o.Issuer, ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: cfg.OIDCRedirectURL(),
		Scopes: o.Scopes, Label: o.Label, AutoCreate: o.AutoCreate == nil || *o.AutoCreate,
	})
}

// setupLink returns the link that creates the first admin, with a fresh
// one-time token, when no admin can sign in; else "". The link is on
// server.public_url, or on the address listened on (addr). Its token is in
// the fragment, which browsers never send, so that it stays out of access logs.
func (a *App) setupLink(ctx context.Context, addr string) (string, error) {
	required, err := a.Auth.SetupRequired(ctx)
	if err != nil || !required {
		return "", err
	}
	token, _, err := a.Auth.NewSetupToken(ctx)
	if err != nil {
		return "", err
	}
	base := strings.TrimRight(a.Config.Server.PublicURL, "/")
	if base == "" {
		base = "http://" + LocalAddr(addr)
	}
	return base + "/setup#" + token, nil
}

// LocalAddr is the address a process on the same host dials to reach a server
// listening on addr: a wildcard host (":3080", "0.0.0.0:3080", "[::]:3080")
// becomes 127.0.0.1.
func LocalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// sweepSessions deletes expired sessions and setup tokens now and then every
// period, until ctx is done.
func sweepSessions(ctx context.Context, a *auth.Service, log *slog.Logger, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		sessions, tokens, err := a.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("deleting expired sessions", slog.Any("err", err))
		case sessions+tokens > 0:
			log.Debug("expired sessions deleted", slog.Int("sessions", sessions), slog.Int("setup_tokens", tokens))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ready checks that the database answers; migrations were applied when it opened.
func ready(ctx context.Context, st store.Store) error {
	if err := st.Ping(ctx); err != nil {
		return fault.New(fault.Unavailable, "database not reachable")
	}
	return nil
}

// startingHandler answers while the database is being opened: a 503 in the
// shape the route's clients read, OpenAI's under /v1/ (docs/api.md "Errors").
func startingHandler(v string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", httpapi.RequestID(r))
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/healthz" {
			fmt.Fprintf(w, "{\"status\":\"ok\",\"version\":%q}\n", v)
			return
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusServiceUnavailable)
		if strings.HasPrefix(r.URL.Path, "/v1/") {
			fmt.Fprintln(w, `{"error":{"message":"starting: the database is not open yet","type":"server_error","param":null,"code":"unavailable"}}`)
			return
		}
		fmt.Fprintln(w, `{"error":{"code":"unavailable","message":"starting: the database is not open yet"}}`)
	})
}
