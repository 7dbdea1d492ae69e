package run_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// memBundle is a run service whose runs are followed by a memory agent: the
// agent "chat" answers with the model main, the memory agent with mem.
type memBundle struct {
	svc    *run.Service
	agent  *run.MemoryAgent
	memory *memory.Service
	user   *auth.User
	log    *syncLog
}

// syncLog collects log output that goroutines write while a test reads it.
type syncLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func memSetup(t *testing.T, cfg memory.Config, main, mem llm.Model) *memBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	u, err := auth.NewService(st, nil).CreateUser(ctx, auth.NewUser{Email: "ann@example.com", DisplayName: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	agents := agent.NewService(st, agent.Rules{})
	if _, err := agents.Create(ctx, u, "chat", agent.Spec{Name: "Chat", Provider: "main", Model: "m", Instructions: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	msvc := memory.NewService(st, cfg, nil)
	tools := map[string]tool.Tool{builtin.SetMemoryName: builtin.SetMemory(msvc), builtin.DeleteMemoryName: builtin.DeleteMemory(msvc)}
	logs := &syncLog{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	models := func(_ context.Context, _, provider, _ string) (llm.Model, mcp.Family, error) {
		if provider == "mem" {
			return mem, mcp.FamilyOpenAI, nil
		}
		return main, mcp.FamilyOpenAI, nil
	}
	ma := &run.MemoryAgent{Memory: msvc, Tools: tools, Store: st, Models: models, Agents: st.GetAgent, Log: log,
		Provider: "mem", Model: "mem-model"}
	svc := &run.Service{Store: st, Log: log, Prep: &run.Preparer{Agents: agents, Location: time.UTC}, Models: models,
		Builtins: tools, After: []func(context.Context, *run.Finished){ma.After}}
	return &memBundle{svc: svc, agent: ma, memory: msvc, user: u, log: logs}
}

// chat runs one message and waits for the run and the work after it.
func (b *memBundle) chat(t *testing.T, req run.ChatRequest) *run.Detail {
	t.Helper()
	ctx := context.Background()
	req.AgentID = "chat"
	r, err := b.svc.Start(ctx, b.user, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Wait(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := b.svc.Get(ctx, b.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func setMemory(id, args string) llm.ToolCall {
	return llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: "set_memory", Arguments: args}}
}

func (b *memBundle) memories(t *testing.T) map[string]string {
	t.Helper()
	es, err := b.memory.List(context.Background(), b.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range es {
		out[e.Key] = e.Value
	}
	return out
}

func TestMemoryAgentStoresWhatItLearns(t *testing.T) {
	main := llmtest.New(llmtest.Turn{Text: []string{"Nice to meet you, Ann."}})
	mem := llmtest.New(
		llmtest.Turn{ToolCalls: []llm.ToolCall{
			setMemory("c1", `{"key":"name","value":"The user is called Ann."}`),
			setMemory("c2", `{"key":"hobby","value":"x"}`),
		}},
		llmtest.Turn{Text: []string{"Done."}},
	)
	b := memSetup(t, memory.Config{ValidKeys: []string{"name", "work"}, TokenLimit: 50}, main, mem)
	d := b.chat(t, run.ChatRequest{Text: "Hi, I am Ann."})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	if diff := cmp.Diff(map[string]string{"name": "The user is called Ann."}, b.memories(t)); diff != "" {
		t.Errorf("memories (-want +got):\n%s", diff)
	}
	reqs := mem.Requests()
	if len(reqs) != 2 {
		t.Fatalf("memory agent made %d requests, want 2", len(reqs))
	}
	first := reqs[0]
	if first.Model != "mem-model" || first.Messages[0].Role != llm.RoleSystem || first.Messages[0].Content != run.DefaultMemoryInstructions {
		t.Errorf("system message %+v", first.Messages[0])
	}
	want := "# Memory about the user\n" +
		"Tokens used: 0 of 50 (50 left). A memory that does not fit is refused: shorten or delete others first.\n" +
		"Allowed keys: name, work.\n" +
		"No memories yet.\n" +
		"\n# Latest messages of the conversation, oldest first\n" +
		"User: Hi, I am Ann.\n\nAssistant: Nice to meet you, Ann.\n"
	if diff := cmp.Diff(want, first.Messages[1].Content); diff != "" {
		t.Errorf("brief (-want +got):\n%s", diff)
	}
	var names []string
	for _, tl := range first.Tools {
		names = append(names, tl.Function.Name)
	}
	if diff := cmp.Diff([]string{"set_memory", "delete_memory"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	// The refused key came back to the model as an error result.
	second := reqs[1].Messages
	if last := second[len(second)-1]; last.ToolCallID != "c2" || !strings.Contains(last.Content, "not one of the allowed keys") {
		t.Errorf("result of the bad key: %+v", last)
	}
	if !strings.Contains(b.log.String(), "memory agent finished") || !strings.Contains(b.log.String(), "set=1") {
		t.Errorf("log:\n%s", b.log)
	}
}

// The window is the last messages of the branch; the memory as it stands
// is shown with its keys.
func TestMemoryAgentReadsTheLatestMessages(t *testing.T) {
	main := llmtest.New(llmtest.Turn{Text: []string{"One."}}, llmtest.Turn{Text: []string{"Two."}})
	mem := llmtest.New(
		llmtest.Turn{ToolCalls: []llm.ToolCall{setMemory("c1", `{"key":"work","value":"Ann is a nurse."}`)}},
		llmtest.Turn{Text: []string{"Done."}},
		llmtest.Turn{Text: []string{"No changes."}},
	)
	b := memSetup(t, memory.Config{}, main, mem)
	b.agent.Window = 3
	d1 := b.chat(t, run.ChatRequest{Text: "I work as a nurse."})
	th, err := b.svc.Conversation(context.Background(), b.user, d1.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	b.chat(t, run.ChatRequest{Text: "Count on.", ConversationID: d1.ConversationID, ParentMessageID: th.Messages[1].ID})
	reqs := mem.Requests()
	if len(reqs) != 3 {
		t.Fatalf("memory agent made %d requests, want 3", len(reqs))
	}
	want := "# Memory about the user\n- work: Ann is a nurse.\n" +
		"\n# Latest messages of the conversation, oldest first\n" +
		"Assistant: One.\n\nUser: Count on.\n\nAssistant: Two.\n"
	if diff := cmp.Diff(want, reqs[2].Messages[1].Content); diff != "" {
		t.Errorf("brief of the second run (-want +got):\n%s", diff)
	}
}

// A value over the token limit is refused by the memory service: the memory
// stays within tokenLimit whatever the memory agent tries.
func TestMemoryAgentKeepsWithinTokenLimit(t *testing.T) {
	main := llmtest.New(llmtest.Turn{Text: []string{"Noted."}})
	mem := llmtest.New(
		// The calls of a turn may run in any order; whichever of city and
		// work comes second no longer fits next to name and the first.
		llmtest.Turn{ToolCalls: []llm.ToolCall{
			setMemory("c1", `{"key":"life","value":"`+strings.Repeat("long story ", 20)+`"}`), // 55 tokens alone
			setMemory("c2", `{"key":"city","value":"Ann lives in Utrecht."}`),                 // 6 tokens
			setMemory("c3", `{"key":"work","value":"Ann is a nurse."}`),                       // 4 tokens
		}},
		llmtest.Turn{Text: []string{"Done."}},
	)
	b := memSetup(t, memory.Config{TokenLimit: 10}, main, mem)
	if _, err := b.memory.Put(context.Background(), b.user.ID, "name", "Ann."); err != nil { // 1 token
		t.Fatal(err)
	}
	b.chat(t, run.ChatRequest{Text: "Here is my life story."})
	got := b.memories(t)
	es, _ := b.memory.List(context.Background(), b.user.ID)
	if total := memory.TotalTokens(es); total > 10 || len(got) != 2 || got["name"] != "Ann." || got["life"] != "" {
		t.Errorf("memories %q take %d tokens; want name and one of city and work, within the limit of 10", got, total)
	}
	results := map[string]string{}
	for _, m := range mem.Requests()[1].Messages {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Content
		}
	}
	full := 0
	for _, id := range []string{"c2", "c3"} {
		if strings.Contains(results[id], "of 10 tokens used") {
			full++
		}
	}
	if !strings.Contains(results["c1"], "Memory is full") || full != 1 {
		t.Errorf("results %q", results)
	}
	if !strings.Contains(mem.Requests()[0].Messages[1].Content, "Tokens used: 1 of 10 (9 left).") {
		t.Errorf("brief:\n%s", mem.Requests()[0].Messages[1].Content)
	}
}

func TestMemoryAgentFailureLeavesTheRun(t *testing.T) {
	t.Run("provider error", func(t *testing.T) {
		main := llmtest.New(llmtest.Turn{Text: []string{"Hello Ann."}})
		mem := llmtest.New(llmtest.Turn{Err: &llm.Error{Kind: llm.ErrUnavailable, Status: 500, Message: "the provider failed (HTTP 500)"}})
		b := memSetup(t, memory.Config{}, main, mem)
		d := b.chat(t, run.ChatRequest{Text: "Hi, I am Ann."})
		th, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
		if err != nil {
			t.Fatal(err)
		}
		if d.Status != run.StatusSucceeded || th.Messages[1].Text != "Hello Ann." {
			t.Errorf("run %+v, answer %q", d.Run, th.Messages[1].Text)
		}
		if l := b.log.String(); !strings.Contains(l, "memory agent failed") || !strings.Contains(l, "HTTP 500") || !strings.Contains(l, d.ID) {
			t.Errorf("log:\n%s", l)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		main := llmtest.New(llmtest.Turn{Text: []string{"Hello Ann."}})
		mem := llmtest.New(llmtest.Turn{Text: []string{"never"}, Delay: time.Hour})
		b := memSetup(t, memory.Config{}, main, mem)
		b.agent.Timeout = time.Millisecond
		d := b.chat(t, run.ChatRequest{Text: "Hi, I am Ann."})
		if d.Status != run.StatusSucceeded {
			t.Errorf("run %+v", d.Run)
		}
		if l := b.log.String(); !strings.Contains(l, "memory agent failed") || !strings.Contains(l, "ran out of time") {
			t.Errorf("log:\n%s", l)
		}
	})
}

// Runs that fail, and users whose memory is off, get no memory agent.
func TestMemoryAgentSkips(t *testing.T) {
	t.Run("failed run", func(t *testing.T) {
		main := llmtest.New(llmtest.Turn{Text: []string{"Half"}, Err: &llm.Error{Kind: llm.ErrStreamCut, Message: "cut off"}})
		mem := llmtest.New()
		b := memSetup(t, memory.Config{}, main, mem)
		if d := b.chat(t, run.ChatRequest{Text: "Hi"}); d.Status != run.StatusFailed {
			t.Fatalf("run %+v", d.Run)
		}
		if n := len(mem.Requests()); n != 0 {
			t.Errorf("memory agent made %d requests after a failed run", n)
		}
	})
	t.Run("memory disabled", func(t *testing.T) {
		main := llmtest.New(llmtest.Turn{Text: []string{"Hello."}})
		mem := llmtest.New()
		b := memSetup(t, memory.Config{Disabled: true}, main, mem)
		b.chat(t, run.ChatRequest{Text: "Hi"})
		if n := len(mem.Requests()); n != 0 {
			t.Errorf("memory agent made %d requests with memory disabled", n)
		}
	})
}

// memory.agent.id takes the stored agent's model and instructions.
func TestMemoryAgentFromStoredAgent(t *testing.T) {
	main := llmtest.New(llmtest.Turn{Text: []string{"Hello."}})
	mem := llmtest.New(llmtest.Turn{Text: []string{"No changes."}})
	b := memSetup(t, memory.Config{}, main, mem)
	// A stored agent of another provider than the main one: the memory
	// agent's requests go to its model.
	if _, err := agent.NewService(b.agentStore(t), agent.Rules{}).Create(context.Background(), b.user, "keeper",
		agent.Spec{Name: "Keeper", Provider: "mem", Model: "keeper-model", Instructions: "Keep notes for {{current_user}}."}); err != nil {
		t.Fatal(err)
	}
	b.agent.AgentID, b.agent.Provider, b.agent.Model = "keeper", "", ""
	b.chat(t, run.ChatRequest{Text: "Hi"})
	reqs := mem.Requests()
	if len(reqs) != 1 || reqs[0].Model != "keeper-model" || reqs[0].Messages[0].Content != "Keep notes for Ann." {
		t.Fatalf("requests %+v", reqs)
	}
}

func (b *memBundle) agentStore(t *testing.T) agent.Store {
	t.Helper()
	return b.svc.Store.(agent.Store)
}
