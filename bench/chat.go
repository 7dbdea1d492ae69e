package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/tool"
)

// sumTool is an in-process tool that answers at once.
type sumTool struct{}

func (sumTool) Name() string { return "sum" }
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
	flag.Parse()
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
	if _, err := agents.Create(ctx, u, "bench", agent.Spec{Provider: "openAI", Model: "m", Instructions: "Be brief.", Tools: []string{"sum"}}); err != nil {
		return err
	}
	m := mcp.NewManager(nil, mcp.Options{})
	defer m.Close()
	log := slog.New(slog.DiscardHandler)

	// 1. Overhead per turn: a run is two turns (a tool call, then the answer).
	fake := llmtest.Func(func(req *prompt.Request) llmtest.Turn {
		if req.Messages[len(req.Messages)-1].Role == prompt.RoleTool {
			return llmtest.Turn{Text: []string{"The sum is 5."}}
		}
		return llmtest.Turn{ToolCalls: []prompt.ToolCall{{ID: "c1", Function: prompt.FunctionCall{Name: "sum", Arguments: `{"a":2,"b":3}`}}}}
	})
	svc := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models:   func(string, string) (llm.Model, mcp.Family, error) { return fake, mcp.FamilyOpenAI, nil },
		Builtins: map[string]tool.Tool{"sum": sumTool{}}}
	fmt.Fprintf(os.Stderr, "overhead: %d runs…\n", *runs)
	if f := os.Getenv("RELAY_BENCH_CPUPROFILE_OVERHEAD"); f != "" {
		if out, err := os.Create(f); err == nil {
			_ = pprof.StartCPUProfile(out)
			defer func() { pprof.StopCPUProfile(); out.Close() }()
		}
	}
	var perTurn []time.Duration
	for i := range *runs + 20 {
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
	slices.Sort(perTurn)
	fmt.Printf("orchestration overhead per turn (fake model and tool, SQLite, events and requests stored): p50 %s  p99 %s  (targets < 0.5 ms, < 2 ms)\n",
		ms(pct(perTurn, 50)), ms(pct(perTurn, 99)))

	if err := benchGraph(ctx, st, u, agents, m, log, *runs); err != nil {
		return err
	}
	if *chats <= 0 {
		return nil
	}
	// 2. Concurrent streaming chats through the HTTP API and the real OpenAI client.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for i := range *tokens {
			time.Sleep(*gap)
			// Each token carries the time it was sent, to measure what Relay adds.
			tok := fmt.Sprintf("<%d>", time.Now().UnixNano())
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", tok)
			_ = rc.Flush()
			_ = i
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
		_ = rc.Flush()
	}))
	defer upstream.Close()
	client := openai.New(openai.Options{BaseURL: upstream.URL, APIKey: "sk-bench", Logger: log})
	svc2 := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(string, string) (llm.Model, mcp.Family, error) { return client, mcp.FamilyOpenAI, nil }}
	authSvc := auth.NewService(st, nil)
	_, key, err := authSvc.CreateKey(ctx, u.ID, "bench")
	if err != nil {
		return err
	}
	api := httptest.NewServer(httpapi.New(httpapi.Options{Auth: authSvc, Agents: agents, Runs: svc2, MCP: m, Logger: log,
		Ready: func(ctx context.Context) error { return nil }}))
	defer api.Close()
	fmt.Fprintf(os.Stderr, "%d concurrent streaming chats, %d tokens %s apart…\n", *chats, *tokens, *gap)
	if f := os.Getenv("RELAY_BENCH_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil {
			_ = pprof.StartCPUProfile(out)
			defer func() { pprof.StopCPUProfile(); out.Close() }()
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *chats, MaxConnsPerHost: 0}
	hc := &http.Client{Transport: tr}
	var mu sync.Mutex
	var added []time.Duration
	complete := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for range *chats {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", api.URL+"/api/chat", strings.NewReader(`{"agent_id":"bench","text":"stream please"}`))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			var mine []time.Duration
			got, done, typ := 0, false, ""
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if t, ok := strings.CutPrefix(line, "event: "); ok {
					typ = t
					done = done || t == "run.finished"
				}
				if typ != "message.delta" || !strings.HasPrefix(line, "data: ") || !strings.Contains(line, `"text":"<`) {
					continue
				}
				now := time.Now().UnixNano()
				i := strings.Index(line, `"text":"<`) + len(`"text":"<`)
				j := strings.IndexByte(line[i:], '>')
				sent, err := strconv.ParseInt(line[i:i+j], 10, 64)
				if err == nil {
					mine = append(mine, time.Duration(now-sent))
					got++
				}
			}
			mu.Lock()
			added = append(added, mine...)
			if done && got == *tokens {
				complete++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(t0)
	slices.Sort(added)
	fmt.Printf("%d concurrent streaming chats: %d complete with all %d tokens in %s; added latency per token p50 %s p99 %s (target p99 < 5 ms); peak RSS of this process (Relay, the fake upstream and %d clients) %s (target < 300 MB)\n",
		*chats, complete, *tokens, took.Round(time.Millisecond), ms(pct(added, 50)), ms(pct(added, 99)), *chats, peakRSS())
	return nil
}

// peakRSS reads the process's peak resident set size from /proc.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			if kb, err := strconv.Atoi(f[1]); err == nil {
				return fmt.Sprintf("%.0f MB", float64(kb)/1024)
			}
		}
	}
	return "unknown"
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
	model := llmtest.Func(func(*prompt.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	svc := &run.Service{Store: st, MCP: m, Log: log, Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(string, string) (llm.Model, mcp.Family, error) { return model, mcp.FamilyOpenAI, nil }}
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
