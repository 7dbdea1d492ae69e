package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/token"
)

// compareRelay is `bench compare-relay`: Relay's run service in this process
// as a side of `bench compare` (see bench/compare_child.go), with no HTTP in
// front of it: each run is started and followed to its end as the handlers
// of /api/chat and /v1 do, on a SQLite store, with the agents, the model
// client and the MCP connection `relay serve` would build from the
// configuration `bench compare` gives it (relayConfig), and the default
// settings.
func compareRelay() error {
	modelURL := flag.String("model", "", "the fake model's base `URL` (…/v1)")
	mcpURL := flag.String("mcp", "", "the MCP server's streamable HTTP `URL`")
	flag.Parse()
	dir, err := os.MkdirTemp("", "relay-bench-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "relay.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := config.Default()
	app.TuneMemory(cfg.Server, os.LookupEnv, log)
	// As relay serve does: the model's encoding read before the threads
	// follow the load.
	tokens := token.NewCounters(0)
	enc, _ := token.EncodingFor(compareModel)
	tokens.Load(enc)
	defer followLoad(ctx, cfg.Server, log)()
	u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "bench@example.com", Role: auth.RoleAdmin})
	if err != nil {
		return err
	}
	agents := agent.NewService(st, agent.Rules{})
	for _, a := range compareAgents {
		spec := agent.Spec{Name: a.name, Provider: compareProvider, Model: compareModel, Instructions: a.instructions, Tools: a.tools, Shared: true}
		if a.handoffTo != "" {
			spec.Edges = []agent.Edge{{From: agent.One(a.id), To: agent.One(a.handoffTo), EdgeType: agent.EdgeHandoff}}
		}
		if _, err := agents.Create(ctx, u, a.id, spec); err != nil {
			return fmt.Errorf("creating agent %s: %w", a.id, err)
		}
	}
	m := mcp.NewManager([]mcp.ServerConfig{{Name: compareMCPServer, Transport: mcp.TransportStreamableHTTP, URL: *mcpURL,
		Timeout: 60 * time.Second, InitTimeout: 30 * time.Second, Startup: true, Scope: mcp.ScopeApp}}, mcp.Options{Logger: log})
	defer m.Close()
	model := openai.New(openai.Options{BaseURL: *modelURL, APIKey: "sk-bench", Logger: log})
	svc := &run.Service{Store: st, MCP: m, Log: log,
		Prep: &run.Preparer{Agents: agents.Cached(), MCP: m, Location: time.UTC, Window: &run.Window{Counters: tokens}},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		},
		Parallel: cfg.Endpoints.Agents.MaxParallelTools, ToolTimeout: cfg.Endpoints.Agents.ToolTimeout.Duration,
		StepLimit: cfg.Endpoints.Agents.MaxRecursionLimit, DefaultSteps: cfg.Endpoints.Agents.RecursionLimit,
	}
	one := func(ctx context.Context, graph string) (string, error) {
		r, err := svc.Start(ctx, u, run.ChatRequest{AgentID: compareEntry(graph), Text: compareQuestion})
		if err != nil {
			return "", err
		}
		for e, err := range svc.Follow(ctx, u, r.ID, 0) {
			if err != nil {
				return "", err
			}
			if e.Type != run.EventRunFinished {
				continue
			}
			p, err := e.Payload()
			if err != nil {
				return "", err
			}
			f := p.(run.RunFinished)
			if f.Status != run.StatusSucceeded || f.Message == nil {
				return "", fmt.Errorf("the run %s: %s", f.Status, f.Error)
			}
			return f.Message.Text, nil
		}
		return "", errNoAnswer
	}
	err = serveBatches(childReady{Runtime: runtime.Version(), Engine: "Relay's run service"}, one)
	_ = svc.Settle(ctx)
	return err
}

// followLoad has the process's threads follow its load as `relay serve`'s do
// (server.procs), until the returned function is called.
func followLoad(ctx context.Context, s config.Server, log *slog.Logger) (stop func()) {
	g := app.TuneThreads(s, os.LookupEnv, log)
	if g == nil {
		return func() {}
	}
	gctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = g.Run(gctx); close(done) }()
	return func() { cancel(); <-done }
}
