package run_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/ragas"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

type bundle struct {
	svc  *run.Service
	user *auth.User
}

// setup is a run service over a real SQLite store, the in-repo MCP server as
// "test", and model as every provider.
func setup(t *testing.T, model llm.Model) *bundle {
	t.Helper()
	return setupMCP(t, model, mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{}))
}

// setupMCP is setup with the MCP server "test" at url.
func setupMCP(t *testing.T, model llm.Model, url string) *bundle {
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
	if _, err := agents.Create(ctx, u, "calc", agent.Spec{Name: "Calc", Provider: "openAI", Model: "gpt-4o", Instructions: "Use the tools.",
		Tools: []string{"get-sum__mcp__test"}}); err != nil {
		t.Fatal(err)
	}
	m := mcp.NewManager([]mcp.ServerConfig{{Name: "test", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second}}, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	svc := &run.Service{
		Store: st, MCP: m, Log: discard(),
		Prep: &run.Preparer{Agents: agents, MCP: m, Location: time.UTC},
		Models: func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return model, mcp.FamilyOpenAI, nil
		},
	}
	return &bundle{svc: svc, user: u}
}

func sumCall() llm.ToolCall {
	return llm.ToolCall{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__test", Arguments: `{"a":2,"b":3}`}}
}

// chat runs one message to completion and returns the run's details.
func (b *bundle) chat(t *testing.T, req run.ChatRequest) *run.Detail {
	t.Helper()
	ctx := context.Background()
	r, err := b.svc.Start(ctx, b.user, req)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.svc.Wait(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	d, err := b.svc.Get(ctx, b.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRunCallsToolAndSavesEverything(t *testing.T) {
	model := llmtest.New(
		llmtest.Turn{ToolCalls: []llm.ToolCall{sumCall()}, Usage: llm.Usage{PromptTokens: 50, CompletionTokens: 10, TotalTokens: 60}},
		llmtest.Turn{Text: []string{"The sum ", "is 5."}, Usage: llm.Usage{PromptTokens: 70, CompletionTokens: 5, TotalTokens: 75}},
	)
	b := setup(t, model)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	if d.Status != run.StatusSucceeded || d.Usage.TotalTokens != 135 {
		t.Fatalf("run %+v", d.Run)
	}
	var types []string
	for _, e := range d.Events {
		types = append(types, string(e.Type))
	}
	if got := strings.Join(types, ","); got != "run.started,usage,tool.started,tool.finished,message.delta,message.delta,usage,run.finished" {
		t.Errorf("events %s", got)
	}
	if len(d.Requests) != 2 || len(d.Tools) != 1 || d.Tools[0].Result != "The sum of 2 and 3 is 5." {
		t.Fatalf("%d requests, tools %+v", len(d.Requests), d.Tools)
	}
	// The second request sent the tool's result back in the OpenAI format.
	if !bytes.Contains(d.Requests[1].Body, []byte(`{"role":"tool","content":"The sum of 2 and 3 is 5.","tool_call_id":"call_1"}`)) {
		t.Errorf("second request: %s", d.Requests[1].Body)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if len(th.Messages) != 2 || th.Messages[1].Text != "The sum is 5." || th.Messages[1].ParentID != th.Messages[0].ID || th.Title != "What is 2+3?" {
		t.Errorf("conversation %+v", th)
	}
	// A follow-up naming only the conversation continues from its latest
	// message: the model sees the earlier turn, its tool call and result too.
	model.Add(llmtest.Turn{Text: []string{"Yes."}})
	d2 := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Sure?", ConversationID: d.ConversationID})
	reqs := model.Requests()
	last := reqs[len(reqs)-1]
	want := []llm.Message{
		{Role: llm.RoleSystem, Content: "Use the tools."},
		{Role: llm.RoleUser, Content: "What is 2+3?"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "call_1", Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__test", Arguments: `{"a":2,"b":3}`}}}},
		{Role: llm.RoleTool, ToolCallID: "call_1", Content: "The sum of 2 and 3 is 5."},
		{Role: llm.RoleAssistant, Content: "The sum is 5."},
		{Role: llm.RoleUser, Content: "Sure?", Question: true},
	}
	if d2.Status != run.StatusSucceeded {
		t.Fatalf("follow-up run %+v", d2.Run)
	}
	if diff := cmp.Diff(want, last.Messages, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("follow-up request messages (-want +got):\n%s", diff)
	}
	th2, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if len(th2.Messages) != 4 || th2.Messages[2].ParentID != th.Messages[1].ID {
		t.Errorf("the follow-up is not a child of the latest message: %+v", th2.Messages)
	}
}

func TestRunFailureKeepsPartialAnswer(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"Half an ", "answer"}, Err: &llm.Error{Kind: llm.ErrStreamCut, Message: "the answer was cut off"}})
	b := setup(t, model)
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Tell me"})
	if d.Status != run.StatusFailed || !strings.Contains(d.Error, "cut off") {
		t.Fatalf("run %+v", d.Run)
	}
	th, _ := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if th.Messages[1].Text != "Half an answer" {
		t.Errorf("partial answer %q", th.Messages[1].Text)
	}
	if last := d.Events[len(d.Events)-2]; last.Type != run.EventError || !strings.Contains(string(last.Data), "cut off") {
		t.Errorf("error event %+v", last)
	}
}

func TestRunAbort(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: []string{"one ", "two ", "three ", "four"}, Delay: 200 * time.Millisecond})
	b := setup(t, model)
	ctx := context.Background()
	r, err := b.svc.Start(ctx, b.user, run.ChatRequest{AgentID: "calc", Text: "Count"})
	if err != nil {
		t.Fatal(err)
	}
	// Abort once part of the answer has streamed.
	evs, ch, stop, err := b.svc.Subscribe(ctx, b.user, r.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	for !slices.ContainsFunc(evs, func(e run.Event) bool { return e.Type == run.EventMessageDelta }) {
		e, ok := <-ch
		if !ok {
			t.Fatal("the run ended before any of its answer streamed")
		}
		evs = append(evs, e)
	}
	stop()
	got, err := b.svc.Abort(ctx, b.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != run.StatusCancelled {
		t.Fatalf("status %s", got.Status)
	}
	th, _ := b.svc.Conversation(ctx, b.user, r.ConversationID)
	if txt := th.Messages[1].Text; txt == "" || strings.Contains(txt, "four") {
		t.Errorf("partial answer %q", txt)
	}
}

func TestRunReplayAfterFinish(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"a", "b", "c"}}))
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "x"})
	evs, ch, stop, err := b.svc.Subscribe(context.Background(), b.user, d.ID, 2)
	defer stop()
	if err != nil || ch != nil || len(evs) != len(d.Events)-2 || evs[0].Seq != 3 {
		t.Fatalf("replay after seq 2: %d events (of %d), live %v, %v", len(evs), len(d.Events), ch != nil, err)
	}
}

// TestRagasExport checks the export's exact JSONL against golden files: a run
// that called an MCP tool, and one whose answer cites the passages of a
// file_search call and of an MCP retrieval tool, and that called a tool with
// arguments that are not a JSON object.
func TestRagasExport(t *testing.T) {
	answer := `Valves are inspected every 18 months \ue202turn0file0, doors weekly ` + "\ue200\ue202turn0file1\ue202turn0file2\ue201."
	model := llmtest.New(
		llmtest.Turn{ToolCalls: []llm.ToolCall{sumCall()}},
		llmtest.Turn{Text: []string{"5"}},
		llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "call_fs", Type: "function", Function: llm.FunctionCall{Name: "file_search", Arguments: `{"query":"inspections"}`}}}},
		llmtest.Turn{ToolCalls: []llm.ToolCall{
			{ID: "call_ref", Type: "function", Function: llm.FunctionCall{Name: "get-resource-reference__mcp__test", Arguments: `{"resourceId":2}`}},
			{ID: "call_bad", Type: "function", Function: llm.FunctionCall{Name: "get-sum__mcp__test", Arguments: `[2,3]`}},
		}},
		llmtest.Turn{Text: []string{answer[:20], answer[20:]}},
	)
	b := setup(t, model)
	ctx := context.Background()
	searcher := builtin.SearchFunc(func(context.Context, file.Query) ([]file.Hit, error) {
		return []file.Hit{
			{FileID: "file_m", FileName: "manual.pdf", Page: 2, Score: 0.9, Text: "Pressure relief valves must be inspected every 18 months.\n---\nContent: a rule line inside the passage."},
			{FileID: "file_m", FileName: "manual.pdf", Page: 3, Score: 0.7, Text: "Fire doors are checked weekly."},
			{FileID: "file_h", FileName: "handbook.docx", Page: 1, Score: 0.5, Text: "Doors: weekly."},
		}, nil
	})
	b.svc.Builtins = map[string]tool.Tool{builtin.FileSearchName: builtin.FileSearch(searcher, []string{"file_m", "file_h"})}
	if _, err := agent.NewService(b.svc.Store.(agent.Store), agent.Rules{}).Create(ctx, b.user, "reader", agent.Spec{Name: "Reader", Provider: "openAI", Model: "gpt-4o",
		Tools: []string{"file_search", "get-resource-reference__mcp__test", "get-sum__mcp__test"}}); err != nil {
		t.Fatal(err)
	}
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	if d := b.chat(t, run.ChatRequest{AgentID: "reader", Text: "How often are valves and doors inspected?"}); d.Status != run.StatusSucceeded {
		t.Fatalf("reader run %+v", d.Run)
	}
	retrieval := func(name string) bool {
		return name == "get-sum__mcp__test" || name == "file_search" || name == "get-resource-reference__mcp__test"
	}
	for _, tc := range []struct {
		name  string
		multi bool
	}{{"ragas_single", false}, {"ragas_multi", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			n, err := (&ragas.Exporter{Store: b.svc.Store}).Export(ctx, &buf, ragas.Options{MultiTurn: tc.multi, Retrieval: retrieval})
			if err != nil || n != 2 {
				t.Fatalf("export: %d samples, %v", n, err)
			}
			golden := filepath.Join("testdata", tc.name+".jsonl")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if buf.String() != string(want) {
				t.Errorf("export differs from %s:\n got %s\nwant %s", golden, buf.String(), want)
			}
			for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
				var row map[string]any
				if err := json.Unmarshal(line, &row); err != nil {
					t.Fatal(err)
				}
				if _, isList := row["user_input"].([]any); isList != tc.multi {
					t.Errorf("user_input is a list: %v, want %v", isList, tc.multi)
				}
			}
			if strings.Contains(buf.String(), "turn0file") && !tc.multi {
				t.Errorf("a citation marker is left in the single-turn export:\n%s", buf.String())
			}
		})
	}
	// Another user's runs are not in an export filtered by user.
	var buf bytes.Buffer
	if n, err := (&ragas.Exporter{Store: b.svc.Store}).Export(ctx, &buf, ragas.Options{UserID: "usr_someone_else"}); err != nil || n != 0 || buf.Len() != 0 {
		t.Errorf("export of another user's runs: %d samples, %v, %q", n, err, buf.String())
	}
	if n, err := (&ragas.Exporter{Store: b.svc.Store}).Export(ctx, &buf, ragas.Options{UserID: b.user.ID}); err != nil || n != 2 {
		t.Errorf("export of Ann's runs: %d samples, %v", n, err)
	}
}

// TestRagasMultiTurnLastMessage: a multi-turn sample ends with what the model
// answered the run's last request, not the whole answer again: the text
// after the last tool call Relay ran, and the client's function calls that
// ended the run.
func TestRagasMultiTurnLastMessage(t *testing.T) {
	weather := llm.ToolCall{ID: "call_w", Type: "function", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}
	b := setup(t, llmtest.New(
		llmtest.Turn{Text: []string{"Let me compute."}, ToolCalls: []llm.ToolCall{sumCall()}},
		llmtest.Turn{Text: []string{"It is 5."}},
		llmtest.Turn{Text: []string{"Checking the weather."}, ToolCalls: []llm.ToolCall{weather}},
	))
	ctx := context.Background()
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	b.chat(t, run.ChatRequest{AgentID: "calc", Text: "Weather in Paris?", Client: &run.Client{Tools: []llm.FunctionTool{{
		Type: "function", Function: llm.Function{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`)}}}}})
	var buf bytes.Buffer
	if n, err := (&ragas.Exporter{Store: b.svc.Store}).Export(ctx, &buf, ragas.Options{MultiTurn: true}); err != nil || n != 2 {
		t.Fatalf("export: %d samples, %v", n, err)
	}
	type message struct {
		Type      string `json:"type"`
		Content   string `json:"content"`
		ToolCalls []struct {
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"tool_calls"`
	}
	var samples [][]message
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		var row struct {
			UserInput []message `json:"user_input"`
		}
		if err := json.Unmarshal(line, &row); err != nil {
			t.Fatal(err)
		}
		samples = append(samples, row.UserInput)
	}
	sum := samples[0]
	if len(sum) != 4 || sum[1].Content != "Let me compute." || len(sum[1].ToolCalls) != 1 || sum[2].Type != "tool" ||
		sum[3].Type != "ai" || sum[3].Content != "It is 5." || len(sum[3].ToolCalls) != 0 {
		t.Errorf("the tool run's sample %+v; want human, ai with its call, tool, then ai \"It is 5.\" only", sum)
	}
	w := samples[1]
	if last := w[len(w)-1]; last.Type != "ai" || last.Content != "Checking the weather." || len(last.ToolCalls) != 1 ||
		last.ToolCalls[0].Name != "get_weather" || string(last.ToolCalls[0].Args) != `{"city":"Paris"}` {
		t.Errorf("the client call's sample ends %+v; want the ai message with its get_weather call", last)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// A time zone that does not exist is refused before anything is stored,
// rather than failing the run it would start.
func TestUnknownTimezoneRefusedUpFront(t *testing.T) {
	b := setup(t, llmtest.New(llmtest.Turn{Text: []string{"Sunday."}}))
	_, err := b.svc.Start(context.Background(), b.user, run.ChatRequest{AgentID: "calc", Text: "What day is it?", Timezone: "Mars/Olympus"})
	if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "Mars/Olympus") {
		t.Errorf("Start with an unknown time zone: %v; want invalid, naming it", err)
	}
	if cs, err := b.svc.Conversations(context.Background(), b.user, run.ConversationQuery{Limit: 10}); err != nil || len(cs.Conversations) != 0 {
		t.Errorf("the refused message left conversations %v (%v)", cs, err)
	}
	if d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "And here?", Timezone: "Europe/Amsterdam"}); d.Status != run.StatusSucceeded {
		t.Errorf("a known time zone: %+v", d.Run)
	}
}

// A run that another Relay process runs is aborted from this one: that
// process is asked through the store, stops it, stores its end, and Abort
// returns once it has (docs/api.md "Runs and conversations").
func TestAbortFromAnotherProcess(t *testing.T) {
	model := llmtest.New(llmtest.Turn{Text: slices.Repeat([]string{"word "}, 400), Delay: 20 * time.Millisecond})
	a := setup(t, model)
	db := a.svc.Store.(*store.DB)
	for _, node := range []string{"node_a", "node_b"} { // two live processes
		if err := db.RegisterNode(context.Background(), &schedule.Node{ID: node, Host: "host", PID: 1}); err != nil {
			t.Fatal(err)
		}
	}
	a.svc.Store, a.svc.AbortEvery = db.OnNode("node_a"), 20*time.Millisecond
	// Another process: its own live runs, on node_b.
	b := run.Service{Store: db.OnNode("node_b"), MCP: a.svc.MCP, Log: a.svc.Log, Prep: a.svc.Prep, Models: a.svc.Models}
	ctx := context.Background()
	r, err := a.svc.Start(ctx, a.user, run.ChatRequest{AgentID: "calc", Text: "Talk for long"})
	if err != nil {
		t.Fatal(err)
	}
	// Streaming in A (its first words stored) when B asks.
	poll.Until(t, 10*time.Second, "the run streaming", func() bool {
		evs, _ := db.ListEvents(ctx, r.ID, 0)
		return len(evs) > 2
	})
	ended, err := b.Abort(ctx, a.user, r.ID)
	if err != nil {
		t.Fatalf("Abort from another process: %v", err)
	}
	if ended.Status != run.StatusCancelled || ended.Error != run.ErrAborted.Error() {
		t.Errorf("the run after Abort: %s %q; want cancelled by the user", ended.Status, ended.Error)
	}
	d, err := a.svc.Get(ctx, a.user, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if last := d.Events[len(d.Events)-1]; last.Type != run.EventRunFinished {
		t.Errorf("the run's last event is %s, want run.finished", last.Type)
	}
	// An ended run is aborted again without a word.
	if again, err := b.Abort(ctx, a.user, r.ID); err != nil || again.Status != run.StatusCancelled {
		t.Errorf("Abort of the ended run: %+v, %v", again, err)
	}
}

// An MCP server of the agent that cannot be reached leaves its tools out of
// the run, and the run says so (run.warning) rather than answer as if the
// agent had no such tools; the warning names the server, not why it failed,
// which may name hosts the person asking should not learn of.
func TestUnreachableServerWarns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // nothing listens there now
	model := llmtest.New(llmtest.Turn{Text: []string{"I cannot add today."}})
	b := setupMCP(t, model, dead)
	var logged bytes.Buffer
	b.svc.Log = slog.New(slog.NewJSONHandler(&logged, nil))
	d := b.chat(t, run.ChatRequest{AgentID: "calc", Text: "What is 2+3?"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	// The operator's line names the server and the run's agent once.
	var line string
	for l := range strings.Lines(logged.String()) {
		if strings.Contains(l, "mcp server unreachable for run") {
			line = l
		}
	}
	if !strings.Contains(line, `"mcp_server":"test"`) || strings.Count(line, `"agent":`) != 1 || !strings.Contains(line, `"agent":"calc"`) {
		t.Errorf("log line %q", line)
	}
	var warnings []string
	for _, e := range d.Events {
		if e.Type == run.EventWarning {
			var w run.Warning
			if err := json.Unmarshal(e.Data, &w); err != nil {
				t.Fatal(err)
			}
			warnings = append(warnings, w.Message)
		}
	}
	want := []string{`the MCP server "test" could not be reached: its tools were left out of this answer`}
	if diff := cmp.Diff(want, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if reqs := model.Requests(); len(reqs) != 1 || len(reqs[0].Tools) != 0 {
		t.Errorf("the model was offered tools of a server that cannot be reached: %+v", reqs)
	}
}
