package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync/atomic"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/telemetry"
	"github.com/relay-ai/relay/internal/tool"
)

// benchTool is the name the in-process tool of the overhead measurement
// goes by: a built-in's, so that the model is offered it (with web_search's
// schema) as it is offered an agent's real tools. A tool the request does
// not offer would go back to the model as text, not as a call and its
// result.
const benchTool = prompt.WebSearch

// sumTool is an in-process tool that answers at once.
type sumTool struct{}

func (sumTool) Name() string { return benchTool }
func (sumTool) Call(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Result{Text: "5"}, nil
}

// benchChat measures the orchestration overhead of a turn with an in-process
// fake model and tool, and many concurrent streaming chats through the HTTP API
// against a local fake OpenAI-compatible upstream.
func benchChat() error {
	runs := flag.Int("runs", 500, "runs for the overhead measurement")
	chats := flag.Int("chats", 1000, "concurrent streaming chats")
	tokens := flag.Int("tokens", 200, "tokens per streamed answer")
	gap := flag.Duration("gap", 10*time.Millisecond, "time between streamed tokens")
	rounds := flag.Int("rounds", 3, "rounds of the streaming chats, Relay and the bare pass-through taking turns in each")
	sweepFlag := flag.Bool("sweep", false, "measure the streaming chats at 100, 300, 600 and 1,000 concurrent chats and print a table")
	warmup := flag.Bool("warmup", true, "have each server process serve the same chats once, unmeasured, before the measured ones")
	floor := flag.Bool("floor", false, "measure only the same streams through a byte-copying TCP relay: what the machine allows any server")
	telemetryMode := flag.String("telemetry", "none", "for the overhead: none, metrics (what relay serve always does) or traces (metrics and every span exported to an OTLP sink in this process)")
	flag.Parse()
	if *floor {
		return floorChats(*chats, *tokens, *gap)
	}
	dir, err := os.MkdirTemp("", "relay-bench-chat-")
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
	u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "bench@example.com", Role: auth.RoleAdmin})
	if err != nil {
		return err
	}
	agents := agent.NewService(st, agent.Rules{})
	if _, err := agents.Create(ctx, u, "bench", agent.Spec{Provider: "openAI", Model: "m", Instructions: "Be brief.", Tools: []string{benchTool}}); err != nil {
		return err
	}
	m := mcp.NewManager(nil, mcp.Options{})
	defer m.Close()
	log := slog.New(slog.DiscardHandler)

	// 1. Overhead per turn: a run is two turns (a tool call, then the answer).
	var modelCalls atomic.Int64
	fake := llmtest.Func(func(req *llm.Request) llmtest.Turn {
		modelCalls.Add(1)
		if req.Messages[len(req.Messages)-1].Role == llm.RoleTool {
			return llmtest.Turn{Text: []string{"The sum is 5."}}
		}
		return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: benchTool, Arguments: `{"query":"2+3"}`}}}}
	})
	tel, err := benchTelemetry(ctx, *telemetryMode)
	if err != nil {
		return err
	}
	if tel != nil {
		defer tel.Shutdown(context.WithoutCancel(ctx))
		st.Instrument(tel)
	}
	var model llm.Model = fake
	if tel != nil {
		model = tel.Model(fake, "openai")
	}
	svc := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents.Cached(), MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		},
		Builtins: tel.Tools(map[string]tool.Tool{benchTool: sumTool{}}, telemetry.Builtin), Telemetry: tel}
	fmt.Fprintf(os.Stderr, "overhead: %d runs, telemetry %s…\n", *runs, *telemetryMode)
	if f := os.Getenv("RELAY_BENCH_CPUPROFILE_OVERHEAD"); f != "" {
		if out, err := os.Create(f); err == nil {
			_ = pprof.StartCPUProfile(out)
			defer func() { pprof.StopCPUProfile(); out.Close() }()
		}
	}
	var perTurn []time.Duration
	var cpu0 time.Duration
	for i := range *runs + 20 {
		if i == 20 {
			cpu0 = cpuTime()
		}
		t0 := time.Now()
		r, err := svc.Start(ctx, u, run.ChatRequest{AgentID: "bench", Text: "What is 2+3?"})
		if err != nil {
			return err
		}
		if err := svc.Wait(ctx, r.ID); err != nil {
			return err
		}
		if i >= 20 {
			perTurn = append(perTurn, time.Since(t0)/2)
		}
	}
	cpuPerTurn := (cpuTime() - cpu0) / time.Duration(2**runs)
	// Each run is the two turns measured: a call and its result, then the
	// answer. More would be a fixture the model does not answer as meant.
	if got, want := modelCalls.Load(), int64(2*(*runs+20)); got != want {
		return fmt.Errorf("overhead: the runs made %d model calls, want %d (two a run)", got, want)
	}
	slices.Sort(perTurn)
	fmt.Printf("orchestration overhead per turn (fake model and tool, SQLite, events and requests stored; telemetry %s): p50 %s  p99 %s  CPU %.0f µs  (targets < 0.5 ms, < 2 ms)\n",
		*telemetryMode, ms(pct(perTurn, 50)), ms(pct(perTurn, 99)), float64(cpuPerTurn.Nanoseconds())/1e3)

	// 2. The same turns late in one long conversation: every earlier turn,
	// with its tool call and result, is loaded and sent again.
	var conv string
	var late []time.Duration
	const longTurns = 100
	for i := range longTurns {
		t0 := time.Now()
		r, err := svc.Start(ctx, u, run.ChatRequest{AgentID: "bench", Text: "What is 2+3?", ConversationID: conv})
		if err != nil {
			return err
		}
		if err := svc.Wait(ctx, r.ID); err != nil {
			return err
		}
		conv = r.ConversationID
		if i >= longTurns-20 {
			late = append(late, time.Since(t0)/2)
		}
	}
	slices.Sort(late)
	fmt.Printf("orchestration overhead per turn, turns 81–100 of one conversation (history with tool calls loaded and sent): p50 %s  p99 %s\n",
		ms(pct(late, 50)), ms(pct(late, 99)))

	if err := benchGraph(ctx, st, u, agents, m, log, *runs); err != nil {
		return err
	}
	if *sweepFlag {
		return sweep(*tokens, *gap, *warmup)
	}
	if *chats <= 0 {
		return nil
	}
	// The same load through the bare pass-through, to read Relay's numbers
	// against: the two take turns, so that both meet the machine's changes
	// of load alike.
	var relay, bare []streamRow
	for range max(1, *rounds) {
		row, err := streamChats(*chats, *tokens, *gap, false, *warmup)
		if err != nil {
			return err
		}
		relay = append(relay, row)
		if row, err = streamChats(*chats, *tokens, *gap, true, *warmup); err != nil {
			return err
		}
		bare = append(bare, row)
	}
	printStreamRounds(relay, bare)
	return nil
}

// benchGraph measures what each extra agent adds to a run: a 3-agent chain and
// a 4-wide fan-out/fan-in against one agent, with a model that answers at once.
func benchGraph(ctx context.Context, st *store.DB, u *auth.User, agents *agent.Service, m *mcp.Manager, log *slog.Logger, runs int) error {
	specs := map[string]agent.Spec{
		"solo":   {},
		"chain1": {AgentIDs: []string{"chain2", "chain3"}, ChainType: agent.ChainOutputPassthrough},
		"chain2": {}, "chain3": {},
		"fan0": {Edges: []agent.Edge{
			{From: agent.One("fan0"), To: agent.IDs{List: []string{"fan1", "fan2", "fan3", "fan4"}}, EdgeType: agent.EdgeDirect},
			{From: agent.IDs{List: []string{"fan1", "fan2", "fan3", "fan4"}}, To: agent.One("fan5"), EdgeType: agent.EdgeDirect},
		}},
		"fan1": {}, "fan2": {}, "fan3": {}, "fan4": {}, "fan5": {},
	}
	for id, spec := range specs {
		spec.Provider, spec.Model, spec.Instructions = "openAI", "m", "Be brief."
		if _, err := agents.Create(ctx, u, id, spec); err != nil {
			return err
		}
	}
	model := llmtest.Func(func(*llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	svc := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents.Cached(), MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		}}
	measure := func(id string) (time.Duration, error) {
		var total time.Duration
		for i := range runs + 20 {
			t0 := time.Now()
			r, err := svc.Start(ctx, u, run.ChatRequest{AgentID: id, Text: "Go"})
			if err != nil {
				return 0, err
			}
			if err := svc.Wait(ctx, r.ID); err != nil {
				return 0, err
			}
			if i >= 20 {
				total += time.Since(t0)
			}
		}
		return total / time.Duration(runs), nil
	}
	solo, err := measure("solo")
	if err != nil {
		return err
	}
	chain, err := measure("chain1")
	if err != nil {
		return err
	}
	fan, err := measure("fan0")
	if err != nil {
		return err
	}
	fmt.Printf("multi-agent overhead (instant fake model, SQLite): one agent %s per run; 3-agent chain %s (+%s per extra agent); 4-wide fan-out/fan-in, 6 agents %s (+%s per extra agent) (target < 1 ms per extra agent)\n",
		ms(solo), ms(chain), ms((chain-solo)/2), ms(fan), ms((fan-solo)/5))
	return nil
}

// benchTelemetry is the telemetry of the overhead measurement: nil for
// "none"; metrics alone; or metrics and traces, every span exported to a sink
// in this process that answers each export at once.
func benchTelemetry(ctx context.Context, mode string) (*telemetry.Telemetry, error) {
	env := map[string]string{}
	switch mode {
	case "none":
		return nil, nil
	case "metrics":
	case "traces":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/x-protobuf")
				w.WriteHeader(http.StatusOK)
			}))
		}()
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://" + ln.Addr().String()
		env["OTEL_TRACES_SAMPLER"] = "always_on"
	default:
		return nil, fmt.Errorf("-telemetry %q: none, metrics or traces", mode)
	}
	return telemetry.New(ctx, telemetry.Options{Getenv: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Version: "bench"})
}
