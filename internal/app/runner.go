package app

import (
	"context"
	"log/slog"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
)

// scheduleService builds the scheduler over runs.
func (a *App) scheduleService(runs *run.Service) *schedule.Service {
	cfg := a.Config
	return &schedule.Service{Store: a.Store, Agents: a.Agents, Users: a.Store, Runner: runs, Guard: outboundGuard(cfg),
		Log: a.Log.With(slog.String("part", "scheduler")), Opts: schedule.Options{
			RunTimeout: cfg.Scheduler.RunTimeout.Duration, MaxPerUser: cfg.Scheduler.MaxPerUser,
			MinInterval: cfg.Scheduler.MinInterval.Duration, Grace: cfg.Scheduler.Grace.Duration,
			AdminsLimited: cfg.Limits.IncludeAdmins,
		}}
}

// liveness builds this process's node, with the config's heartbeat.
func (a *App) liveness() *schedule.Liveness {
	return &schedule.Liveness{Store: a.Store, Log: a.Log.With(slog.String("part", "liveness")),
		Interval: a.Config.Scheduler.HeartbeatInterval.Duration, DeadAfter: a.Config.Scheduler.DeadAfter.Duration}
}

// Runner runs agents in a process that does not serve, such as `relay chat`:
// it holds the MCP manager and the run service. Like a server, the process
// is a node while the Runner is open, so that a run it leaves behind (killed
// mid-run) is failed by the others within scheduler.dead_after; Close ends
// it.
type Runner struct {
	// Runs starts agents' runs and follows them.
	Runs *run.Service

	app      *App
	mcp      *mcp.Manager
	live     *schedule.Liveness
	stopLive func()
}

// Runner builds what running agents in this process needs and registers the
// process as a node, heartbeating until Close.
func (a *App) Runner(ctx context.Context) (*Runner, error) {
	m, _ := a.MCP()
	runs, err := a.runService(m)
	if err != nil {
		m.Close()
		return nil, err
	}
	live := a.liveness()
	if err := live.Register(ctx); err != nil {
		m.Close()
		return nil, err
	}
	if db, ok := a.Store.(*store.DB); ok {
		runs.Store = db.OnNode(live.ID())
	}
	live.Abandon, runs.TakenForDead = runs.Abandon, live.Lost
	live.Failed = a.scheduleService(runs).NotifyFailed
	// As a starting server does: the work of processes that died (a killed
	// relay chat whose conversation still seems to be answering) is failed
	// now, not only once a server runs.
	if _, err := live.Reap(ctx); err != nil {
		a.Log.Warn("failing the work of stopped processes", slog.Any("err", err))
	}
	lctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { _ = live.Run(lctx); close(done) }()
	return &Runner{Runs: runs, app: a, mcp: m, live: live, stopLive: func() { stop(); <-done }}, nil
}

// Schedules returns the scheduler's service over the Runner's runs, to
// manage schedules and fire them now. The firings it claims name this
// process's node, so that a process killed while it runs one has that
// firing failed with its run, and the schedule is not held up.
func (r *Runner) Schedules() *schedule.Service {
	s := r.app.scheduleService(r.Runs)
	s.Live = r.live
	return s
}

// settleTimeout bounds how long Close waits for the work that follows the
// runs.
const settleTimeout = run.DefaultTitleTimeout + 5*time.Second

// Close first waits for the work that follows the runs (a new
// conversation's title, the memory agent), each piece bounded by its own
// timeout, so that it is done before the database closes; then it stops the
// heartbeat, removing the node, and closes the MCP connections.
func (r *Runner) Close(ctx context.Context) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	if err := r.Runs.Settle(sctx); err != nil {
		r.app.Log.Warn("work after runs still in progress at exit", slog.String("err", err.Error()))
	}
	r.stopLive()
	r.mcp.Close()
}
