package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// benchSchedules measures the scheduler with many enabled schedules: the time
// from a firing's due time to its run's start, and the CPU it uses while idle.
func benchSchedules() error {
	n := flag.Int("schedules", 10000, "enabled schedules")
	every := flag.Int("every-minute", 50, "of which fire every minute (their latency is measured)")
	pgURL := flag.String("postgres", os.Getenv("TEST_POSTGRES_URL"), "Postgres `URL` (default $TEST_POSTGRES_URL; empty: SQLite only)")
	flag.Parse()
	dir, err := os.MkdirTemp("", "relay-bench-sched-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	engines := []string{"sqlite"}
	if *pgURL != "" {
		engines = append(engines, "postgres")
	}
	for _, eng := range engines {
		var st *store.DB
		if eng == "sqlite" {
			st, err = sqlite.Open(ctx, filepath.Join(dir, "relay.db"))
		} else {
			u, drop, ferr := freshSchema(*pgURL)
			if ferr != nil {
				return ferr
			}
			defer drop()
			st, err = postgres.Open(ctx, u, postgres.Options{})
		}
		if err != nil {
			return err
		}
		if err := benchSchedulesOn(ctx, eng, st, *n, *every); err != nil {
			return err
		}
		st.Close()
	}
	return nil
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchSchedulesOn(ctx context.Context, eng string, st *store.DB, n, every int) error {
	log := slog.New(slog.DiscardHandler)
	u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "sched@example.com"})
	if err != nil {
		return err
	}
	agents := agent.NewService(st, agent.Rules{})
	if _, err := agents.Create(ctx, u, "a", agent.Spec{Provider: "openAI", Model: "m"}); err != nil {
		return err
	}
	model := llmtest.Func(func(*llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	m := mcp.NewManager(nil, mcp.Options{})
	defer m.Close()
	runs := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents.Cached(), MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	svc := &schedule.Service{Store: st, Agents: agents, Users: st, Runner: runs, Log: log, Opts: schedule.Options{MaxPerUser: n + 1}}
	fmt.Fprintf(os.Stderr, "%s: creating %d schedules…\n", eng, n)
	str := func(s string) *string { return &s }
	for i := range n {
		cron := fmt.Sprintf("%d %d * * *", (i*7)%60, (i/60)%24) // spread over the day
		if i < every {
			cron = "* * * * *"
		}
		if _, err := svc.Create(ctx, u, schedule.Input{AgentID: str("a"), Name: str(fmt.Sprint("s", i)), Prompt: str("tick"), Cron: str(cron)}); err != nil {
			return err
		}
	}
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = svc.Run(sctx) }()
	defer func() { stop(); <-done }()

	// Wait for a minute boundary, then measure the every-minute firings' latency.
	boundary := time.Now().Truncate(time.Minute).Add(time.Minute)
	fmt.Fprintf(os.Stderr, "%s: waiting for %s…\n", eng, boundary.Format("15:04:05"))
	time.Sleep(time.Until(boundary.Add(15 * time.Second)))
	var lat []time.Duration
	list, err := st.ListSchedules(ctx, u.ID)
	if err != nil {
		return err
	}
	for _, sc := range list[:every] {
		fs, err := st.ListFirings(ctx, sc.ID, 5)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if f.FireAt.Equal(boundary.UTC()) && f.StartedAt != nil {
				lat = append(lat, f.StartedAt.Sub(f.FireAt))
			}
		}
	}
	if len(lat) == 0 {
		return fmt.Errorf("%s: no firing started at %s", eng, boundary)
	}
	slices.Sort(lat)
	// Idle: the next 20 seconds have nothing due (the spread schedules fire at most
	// a few times a minute, on the minute).
	c0, t0 := cpuTime(), time.Now()
	time.Sleep(20 * time.Second)
	idle := float64(cpuTime()-c0) / float64(time.Since(t0)) * 100
	fmt.Printf("%s, %d enabled schedules: due → run start over %d firings p50 %s p99 %s (target p99 < 1 s); scheduler CPU while idle %.2f%% of a core (target < 1%%)\n",
		eng, n, len(lat), ms(pct(lat, 50)), ms(pct(lat, 99)), idle)
	return nil
}
