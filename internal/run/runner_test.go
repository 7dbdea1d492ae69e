package run_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/run/runtest"
	"github.com/relay-ai/relay/internal/token"
)

// team is a run service whose agents are the given specs (instructions "I am <id>."),
// all answered by one scripted model that knows which agent asks by its system message.
func team(t *testing.T, specs map[string]agent.Spec, answer func(who string, req *llm.Request) llmtest.Turn) (*bundle, *llmtest.Model) {
	t.Helper()
	tm := runtest.NewTeam(t, specs, answer)
	return &bundle{svc: tm.Runs, user: tm.User}, tm.Model
}

func lastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func requestsOf(model *llmtest.Model, who string) []*llm.Request {
	return (&runtest.Team{Model: model}).RequestsOf(who)
}

// A handoff, run end to end: the target continues with the handoff's note,
// and the run's stored events and model requests name the agent of each.
func TestHandoff(t *testing.T) {
	b, model := team(t, map[string]agent.Spec{
		"router":     {Edges: []agent.Edge{{From: agent.One("router"), To: agent.One("specialist"), EdgeType: agent.EdgeHandoff, Prompt: "What to check", PromptKey: "context"}}},
		"specialist": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "router" {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_specialist", Arguments: `{"context":"check article 15"}`}}}}
		}
		return llmtest.Turn{Text: []string{"Article 15 says so."}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "router", Text: "Is it allowed?"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	spec := requestsOf(model, "specialist")
	if len(spec) != 1 {
		t.Fatalf("%d specialist requests", len(spec))
	}
	if got := lastUser(spec[0]); !strings.Contains(got, `"router" handed this conversation over to you`) || !strings.HasSuffix(got, "check article 15") {
		t.Errorf("specialist's last user message %q", got)
	}
	if spec[0].Messages[1].Content != "Is it allowed?" {
		t.Errorf("the specialist does not see the conversation: %+v", spec[0].Messages)
	}
	agents := map[string]bool{}
	for _, e := range d.Events {
		if strings.Contains(string(e.Data), `"agent_id":"specialist"`) {
			agents["specialist"] = true
		}
		if strings.Contains(string(e.Data), `"agent_id":"router"`) {
			agents["router"] = true
		}
	}
	if !agents["router"] || !agents["specialist"] {
		t.Errorf("events do not name both agents: %v", agents)
	}
	var requests []string
	for _, r := range d.Requests {
		requests = append(requests, fmt.Sprintf("%d %s", r.Seq, r.AgentID))
	}
	if diff := cmp.Diff([]string{"1 router", "2 specialist"}, requests); diff != "" {
		t.Errorf("stored model requests (-want +got):\n%s", diff)
	}
}

// An agent handed a conversation too long for its context window keeps the
// question the run answers: older turns are dropped (and summarised), not the
// user's question before the handoff's note (docs/config.md "Context window").
func TestHandoffTargetKeepsTheQuestion(t *testing.T) {
	b, model := team(t, map[string]agent.Spec{
		"desk": {Edges: []agent.Edge{{From: agent.One("desk"), To: agent.One("expert"), EdgeType: agent.EdgeHandoff}}},
		// Room for its system message, the question, the desk's call and the
		// note, not for the earlier turn as well.
		"expert": {ModelParameters: map[string]any{"maxContextTokens": 260}},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "desk" && strings.HasPrefix(lastUser(req), "Q2") {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_expert", Arguments: `{}`}}}}
		}
		return llmtest.Turn{Text: []string{"Answered."}}
	})
	// The summary's room is kept free while turns are dropped: not at the
	// cost of the question.
	b.svc.Prep.Window = &run.Window{Counters: token.NewCounters(0), SummaryTokens: 200,
		Summarize: func(context.Context, string, *agent.Agent, []llm.Message) (string, error) {
			return "Q1 was asked.", nil
		}}
	d1 := b.chat(t, run.ChatRequest{AgentID: "desk", Text: "Q1 " + strings.Repeat("earlier ", 120)})
	q2 := "Q2 " + strings.Repeat("question ", 120)
	d2 := b.chat(t, run.ChatRequest{AgentID: "desk", Text: q2, ConversationID: d1.ConversationID})
	if d2.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d2.Run)
	}
	reqs := requestsOf(model, "expert")
	if len(reqs) != 1 {
		t.Fatalf("%d requests of the expert", len(reqs))
	}
	var users []string
	for _, m := range reqs[0].Messages {
		if m.Role == llm.RoleUser {
			users = append(users, m.Content[:min(len(m.Content), 12)])
		}
	}
	if diff := cmp.Diff([]string{"Q2 question ", "The agent \"d"}, users); diff != "" {
		t.Errorf("the expert's user messages (-want +got):\n%s", diff)
	}
	if !strings.Contains(reqs[0].Messages[0].Content, "Q1 was asked.") {
		t.Errorf("the expert's system message has no summary of the dropped turn: %q", reqs[0].Messages[0].Content)
	}
}

// A summary of the turns dropped to fit is a model request of the run: its
// trace lists it, for the agent whose turns it summarised, before the
// agent's own request.
func TestSummaryRequestInTheTrace(t *testing.T) {
	b, _ := team(t, map[string]agent.Spec{"solo": {ModelParameters: map[string]any{"maxContextTokens": 220}}},
		func(who string, req *llm.Request) llmtest.Turn {
			if who == "" { // the summariser's system message is its own
				return llmtest.Turn{Text: []string{"Q1 was asked."}, Usage: llm.Usage{PromptTokens: 9, CompletionTokens: 4, TotalTokens: 13}}
			}
			return llmtest.Turn{Text: []string{"Answered."}}
		})
	b.svc.Prep.Window = &run.Window{Counters: token.NewCounters(0), SummaryTokens: 30,
		Summarize: run.Summarizer(b.svc.Models, run.Summary{MaxTokens: 30})}
	d1 := b.chat(t, run.ChatRequest{AgentID: "solo", Text: "Q1 " + strings.Repeat("earlier ", 100)})
	d2 := b.chat(t, run.ChatRequest{AgentID: "solo", Text: "Q2 " + strings.Repeat("now ", 100), ConversationID: d1.ConversationID})
	if d2.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d2.Run)
	}
	var got []string
	for _, r := range d2.Requests {
		got = append(got, fmt.Sprintf("%d %s %q %d", r.Seq, r.AgentID, r.Purpose, r.Usage.TotalTokens))
	}
	if diff := cmp.Diff([]string{`1 solo "summary" 13`, `2 solo "" 0`}, got); diff != "" {
		t.Fatalf("the run's model requests (-want +got):\n%s", diff)
	}
	if body := string(d2.Requests[0].Body); !strings.Contains(body, "Summarise them for the assistant") || !strings.Contains(body, "Human: Q1 earlier") {
		t.Errorf("the summary request's body: %s", body)
	}
	if body := string(d2.Requests[1].Body); !strings.Contains(body, "Q1 was asked.") || strings.Contains(body, "Q1 earlier") {
		t.Errorf("the agent's request: %s", body)
	}
	if len(d1.Requests) != 1 || d1.Requests[0].Purpose != "" {
		t.Errorf("the first run's requests: %+v", d1.Requests)
	}
}

// A run that fails at its step limit saves what its agents said until then.
func TestHandoffCycleEndsAtTheStepLimit(t *testing.T) {
	b, _ := team(t, map[string]agent.Spec{
		"a": {RecursionLimit: 6, Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b")}}},
		"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("a")}}},
	}, func(who string, req *llm.Request) llmtest.Turn {
		other := map[string]string{"a": "b", "b": "a"}[who]
		return llmtest.Turn{Text: []string{who + " passes. "}, ToolCalls: []llm.ToolCall{{ID: "t", Function: llm.FunctionCall{Name: "lc_transfer_to_" + other, Arguments: `{}`}}}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Ping"})
	if d.Status != run.StatusFailed || !strings.Contains(d.Error, "6 steps") {
		t.Fatalf("run %+v", d.Run)
	}
	th, _ := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if !strings.Contains(th.Messages[1].Text, "a passes.") {
		t.Errorf("partial output not saved: %q", th.Messages[1].Text)
	}
}

// An edge the graph drops is the run's warning event; with
// hide_sequential_outputs the saved answer has only the last agent's text and
// every tool call.
func TestDroppedEdgeAndHiddenOutputs(t *testing.T) {
	b, _ := team(t, map[string]agent.Spec{
		"a": {HideSequentialOutputs: true, Edges: []agent.Edge{
			{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeDirect},
			{From: agent.One("a"), To: agent.One("ghost"), EdgeType: agent.EdgeDirect},
		}},
		"b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "a" && len(req.Messages) == 2 {
			return llmtest.Turn{Text: []string{"draft"}, ToolCalls: []llm.ToolCall{{ID: "x", Function: llm.FunctionCall{Name: "nope", Arguments: `{}`}}}}
		}
		return llmtest.Turn{Text: []string{who + " final"}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Go"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	warned := false
	for _, e := range d.Events {
		warned = warned || (e.Type == run.EventWarning && strings.Contains(string(e.Data), "ghost"))
	}
	if !warned {
		t.Errorf("no warning for the dropped edge")
	}
	th, _ := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	ans := th.Messages[1]
	tools := 0
	for _, p := range ans.Parts {
		if p.Type == run.PartToolCall {
			tools++
		}
	}
	if ans.Text != "b final" || tools != 1 {
		t.Errorf("saved answer %q with %d tool calls; want only the last agent's text and every tool call", ans.Text, tools)
	}
}

func toolNames(req *llm.Request) []string {
	var out []string
	for _, t := range req.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// The transfer tools are the resolved graph's: an edge kept on the primary
// gives its source a tool, an edge the graph dropped (unknown target, the
// agent itself) gives none, a target named twice one tool, and a transfer to
// an agent that is not a target is an error result, not a transfer.
func TestTransferToolsAreTheGraphs(t *testing.T) {
	b, model := team(t, map[string]agent.Spec{
		"a": {Edges: []agent.Edge{
			{From: agent.One("a"), To: agent.One("ghost"), EdgeType: agent.EdgeHandoff},
			{From: agent.One("a"), To: agent.One("a"), EdgeType: agent.EdgeHandoff},
			{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff},
			{From: agent.One("a"), To: agent.IDs{List: []string{"b", "c"}}, EdgeType: agent.EdgeHandoff},
			{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeHandoff},
		}},
		"b": {}, "c": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		switch {
		case who == "a" && len(req.Messages) == 2:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "g", Function: llm.FunctionCall{Name: "lc_transfer_to_ghost", Arguments: `{}`}}}}
		case who == "a" && len(req.Messages) == 3:
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h", Function: llm.FunctionCall{Name: "lc_transfer_to_b", Arguments: `{}`}}}}
		case who == "b":
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h2", Function: llm.FunctionCall{Name: "lc_transfer_to_c", Arguments: `{}`}}}}
		}
		return llmtest.Turn{Text: []string{who + " done"}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Go"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	a, bReq, c := requestsOf(model, "a"), requestsOf(model, "b"), requestsOf(model, "c")
	if got := strings.Join(toolNames(a[0]), ","); got != "lc_transfer_to_b,lc_transfer_to_c" {
		t.Errorf("a's tools %s, want one transfer tool per target in the graph", got)
	}
	if len(a) != 2 {
		t.Fatalf("a asked the model %d times, want twice", len(a))
	}
	// A call of a tool a was not offered goes back to it as text, with its
	// error result: providers refuse a call of a tool the request does not
	// define.
	if res := a[1].Messages[len(a[1].Messages)-1]; len(a[1].Messages) != 3 || res.Role != llm.RoleAssistant || len(res.ToolCalls) != 0 ||
		!strings.HasPrefix(res.Content, "[Called the tool lc_transfer_to_ghost with {}]\n\n[Error from lc_transfer_to_ghost]\n") || !strings.Contains(res.Content, `"ghost"`) {
		t.Errorf("the transfer to ghost was answered %+v, want the call and its error result as text", res)
	}
	if len(bReq) != 1 {
		t.Fatalf("b ran %d times, want once", len(bReq))
	}
	if got := strings.Join(toolNames(bReq[0]), ","); got != "lc_transfer_to_c" {
		t.Errorf("b's tools %s, want the transfer tool the primary's edge gives it", got)
	}
	if len(c) != 1 {
		t.Errorf("c ran %d times, want once", len(c))
	}
}

// A preview (no graph given) resolves the agent's graph as a run of it would:
// the same transfer tools, and the graph's warnings.
func TestPreviewTransferToolsAreTheGraphs(t *testing.T) {
	tm := runtest.NewTeam(t, map[string]agent.Spec{
		"a": {Edges: []agent.Edge{
			{From: agent.One("a"), To: agent.One("ghost"), EdgeType: agent.EdgeHandoff},
			{From: agent.One("a"), To: agent.IDs{List: []string{"a", "b"}}, EdgeType: agent.EdgeHandoff},
			{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeHandoff},
		}},
		"b": {}, "c": {},
	}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{} })
	for _, tc := range []struct{ agent, tools string }{
		{"a", "lc_transfer_to_b"},
		{"b", ""}, // previewed as the primary: the edge b → c is a's, not in b's graph
	} {
		out, err := tm.Runs.Prep.Prepare(context.Background(), tm.User, run.Request{AgentID: tc.agent, Text: "Go"})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(toolNames(out.Request), ","); got != tc.tools {
			t.Errorf("preview of %s: tools %q, want %q", tc.agent, got, tc.tools)
		}
		if tc.agent == "a" && !slices.ContainsFunc(out.Warnings, func(w string) bool { return strings.Contains(w, "ghost") }) {
			t.Errorf("preview of a: warnings %q say nothing of the dropped edge to ghost", out.Warnings)
		}
	}
}

// A failed run's error part and error event name the agent that failed, not
// the primary.
func TestFailureIsCreditedToTheAgentThatFailed(t *testing.T) {
	b, _ := team(t, map[string]agent.Spec{
		"a": {AgentIDs: []string{"b"}}, "b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "b" {
			return llmtest.Turn{Err: errors.New("b's provider exploded")}
		}
		return llmtest.Turn{Text: []string{"fine"}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Go"})
	if d.Status != run.StatusFailed {
		t.Fatalf("run %+v", d.Run)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range th.Messages[1].Parts {
		if p.Type == run.PartError {
			parts = append(parts, p.AgentID)
		}
	}
	if !slices.Equal(parts, []string{"b"}) {
		t.Errorf("error parts credited to %v, want [b]", parts)
	}
	i := slices.IndexFunc(d.Events, func(e run.Event) bool { return e.Type == run.EventError })
	if i < 0 || !strings.Contains(string(d.Events[i].Data), `"agent_id":"b"`) {
		t.Errorf("error event %+v does not name b", d.Events[max(i, 0)])
	}
}

// The RAG query of every agent of a run is the user's message, not the
// handoff note or the edge's prompt that is its last user message.
func TestRetrievalQueryIsTheUsersMessageForEveryAgent(t *testing.T) {
	tm := runtest.NewTeam(t, map[string]agent.Spec{
		"router":     {Edges: []agent.Edge{{From: agent.One("router"), To: agent.One("specialist"), EdgeType: agent.EdgeHandoff}}},
		"specialist": {Edges: []agent.Edge{{From: agent.One("specialist"), To: agent.One("reviewer"), EdgeType: agent.EdgeDirect, Prompt: "Review this: {results}"}}},
		"reviewer":   {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "router" {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h", Function: llm.FunctionCall{Name: "lc_transfer_to_specialist", Arguments: `{"instructions":"check article 15"}`}}}}
		}
		return llmtest.Turn{Text: []string{who + " done"}}
	})
	var mu sync.Mutex
	var queries []string
	tm.Runs.Prep.AttachedFiles = func(_ context.Context, _ *auth.User, ids []string) ([]prompt.File, error) {
		return []prompt.File{{ID: ids[0], Filename: "law.txt", Type: "text/plain"}}, nil
	}
	tm.Runs.Prep.Search = func(_ context.Context, q file.Query) ([]file.Hit, error) {
		mu.Lock()
		defer mu.Unlock()
		queries = append(queries, q.Text)
		return []file.Hit{{FileID: q.FileIDs[0], FileName: "law.txt", Text: "Article 15 allows it."}}, nil
	}
	b := &bundle{svc: tm.Runs, user: tm.User}
	d := b.chat(t, run.ChatRequest{AgentID: "router", Text: "Is it allowed?", Files: []string{"file_law"}})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	if diff := cmp.Diff([]string{"Is it allowed?"}, queries); diff != "" {
		t.Errorf("queries (-want +got):\n%s", diff)
	}
	for _, who := range []string{"router", "specialist", "reviewer"} {
		reqs := tm.RequestsOf(who)
		if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[0].Content, "Article 15 allows it.") {
			t.Errorf("%s's %d requests lack the retrieved context", who, len(reqs))
		}
	}
}

// An agent of a run calls only the tools it was given: the helper handed the
// conversation calls the router's MCP tool, and the call is an error result
// that never reaches the server.
func TestAgentCallsOnlyItsOwnTools(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	m := mcp.NewManager([]mcp.ServerConfig{{Name: "test", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second}}, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	tm := runtest.NewTeam(t, map[string]agent.Spec{
		"router": {Tools: []string{"get-sum__mcp__test"},
			Edges: []agent.Edge{{From: agent.One("router"), To: agent.One("helper"), EdgeType: agent.EdgeHandoff}}},
		"helper": {Tools: []string{"echo__mcp__test"}},
	}, func(who string, req *llm.Request) llmtest.Turn {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case who == "router":
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_helper", Arguments: `{}`}}}}
		case !strings.Contains(last.Content, "[Error from get-sum__mcp__test]"):
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "s1", Function: llm.FunctionCall{Name: "get-sum__mcp__test", Arguments: `{"a":40,"b":2}`}}}}
		}
		return llmtest.Turn{Text: []string{"Done."}}
	})
	tm.Runs.MCP, tm.Runs.Prep.MCP = m, m
	b := &bundle{svc: tm.Runs, user: tm.User}
	d := b.chat(t, run.ChatRequest{AgentID: "router", Text: "What is 40 + 2?"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	helper := requestsOf(tm.Model, "helper")
	if len(helper) != 2 {
		t.Fatalf("%d requests of the helper, want 2", len(helper))
	}
	var offered []string
	for _, ft := range helper[0].Tools {
		offered = append(offered, ft.Function.Name)
	}
	if !slices.Equal(offered, []string{"echo__mcp__test"}) {
		t.Errorf("the helper is offered %q, want its own tool alone", offered)
	}
	if len(d.Tools) != 2 || d.Tools[1].AgentID != "helper" || !d.Tools[1].IsError ||
		!strings.Contains(d.Tools[1].Result, `There is no tool "get-sum__mcp__test" among your tools`) {
		t.Errorf("the handoff and the helper's call of the router's tool: %+v", d.Tools)
	}
	// The call of a tool it was not offered goes back to it as text, with
	// the refusal.
	result := helper[1].Messages[len(helper[1].Messages)-1]
	if result.Role != llm.RoleAssistant || len(result.ToolCalls) != 0 || strings.Contains(result.Content, "42") ||
		!strings.Contains(result.Content, `There is no tool "get-sum__mcp__test" among your tools`) {
		t.Errorf("the helper was sent %+v after its call, want the call and its refusal as text", result)
	}
}

// A tool result another agent's call got is cut to maxToolResultChars when
// the agent handed the conversation reads it, as every result sent again is
// (docs/config.md): it reaches that agent as text, the call being of a tool
// it lacks, and is cut before it becomes text.
func TestHandoffTargetReadsResultsCut(t *testing.T) {
	url := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{})
	m := mcp.NewManager([]mcp.ServerConfig{{Name: "test", Transport: mcp.TransportStreamableHTTP, URL: url, Scope: mcp.ScopeApp,
		Timeout: 5 * time.Second, InitTimeout: 5 * time.Second}}, mcp.Options{})
	t.Cleanup(func() { m.Close() })
	long := strings.Repeat("lorem ", 200)
	tm := runtest.NewTeam(t, map[string]agent.Spec{
		"router": {Tools: []string{"echo__mcp__test"},
			Edges: []agent.Edge{{From: agent.One("router"), To: agent.One("helper"), EdgeType: agent.EdgeHandoff}}},
		"helper": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "router" { // one step: no fit of the router's sees the result
			return llmtest.Turn{ToolCalls: []llm.ToolCall{
				{ID: "e1", Function: llm.FunctionCall{Name: "echo__mcp__test", Arguments: `{"message":"` + long + `"}`}},
				{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_helper", Arguments: `{}`}}}}
		}
		return llmtest.Turn{Text: []string{"Done."}}
	})
	tm.Runs.MCP, tm.Runs.Prep.MCP = m, m
	tm.Runs.Prep.Window = &run.Window{Counters: token.NewCounters(0), MaxToolResultChars: 100}
	b := &bundle{svc: tm.Runs, user: tm.User}
	d := b.chat(t, run.ChatRequest{AgentID: "router", Text: "Echo it, then pass it on."})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	helper := requestsOf(tm.Model, "helper")
	if len(helper) != 1 {
		t.Fatalf("%d requests of the helper, want 1", len(helper))
	}
	var read string
	for _, msg := range helper[0].Messages {
		if msg.Role == llm.RoleAssistant && strings.Contains(msg.Content, "[Result of echo__mcp__test]") {
			read = msg.Content
		}
	}
	_, result, _ := strings.Cut(read, "[Result of echo__mcp__test]\n")
	result, _, _ = strings.Cut(result, "\n\n[Called the tool lc_transfer_to_helper")
	result, _, _ = strings.Cut(result, "\n\n[Result of lc_transfer_to_helper]")
	if !strings.Contains(result, "truncated by Relay") || strings.Contains(result, strings.Repeat("lorem ", 20)) {
		t.Errorf("the helper read the router's echo result as %q, want it cut to 100 characters", result)
	}
}

// A conversation is the agent's its latest message was sent to: continued
// with another agent, it names that one, as the web UI picks it when the
// chat is opened again (docs/api.md "Runs and conversations").
func TestConversationFollowsItsLatestAgent(t *testing.T) {
	b, _ := team(t, map[string]agent.Spec{"first": {}, "second": {}}, func(string, *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: []string{"Answered."}}
	})
	d1 := b.chat(t, run.ChatRequest{AgentID: "first", Text: "Q1"})
	d2 := b.chat(t, run.ChatRequest{AgentID: "second", Text: "Q2", ConversationID: d1.ConversationID})
	if d2.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d2.Run)
	}
	th, err := b.svc.Conversation(context.Background(), b.user, d1.ConversationID)
	if err != nil {
		t.Fatal(err)
	}
	if th.AgentID != "second" {
		t.Errorf("the conversation's agent is %q after a message to %q", th.AgentID, "second")
	}
	page, err := b.svc.Conversations(context.Background(), b.user, run.ConversationQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Conversations) != 1 || page.Conversations[0].AgentID != "second" {
		t.Errorf("listed %d conversations, want one of agent %q", len(page.Conversations), "second")
		for _, c := range page.Conversations {
			t.Logf("%s of agent %q", c.ID, c.AgentID)
		}
	}
}
