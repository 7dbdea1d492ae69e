package run_test

import (
	"context"
	"errors"
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
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/run/runtest"
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
}

func TestChains(t *testing.T) {
	for _, tc := range []struct {
		chain agent.ChainType
		check func(t *testing.T, bIn, cIn string)
	}{
		{agent.ChainOutputPassthrough, func(t *testing.T, bIn, cIn string) {
			if bIn != "A's draft" || cIn != "B's refinement" {
				t.Errorf("B got %q, C got %q", bIn, cIn)
			}
		}},
		{agent.ChainConvo, func(t *testing.T, bIn, _ string) {
			if !strings.HasPrefix(bIn, "Based on the following conversation and analysis from previous agents, please provide your insights:\n\n") ||
				!strings.Contains(bIn, "Human: Write it\nTool: nope, ") || !strings.Contains(bIn, "\nAI: A's draft\n") || !strings.HasSuffix(bIn, "\n\nPlease add your specific expertise and perspective to this discussion.") {
				t.Errorf("B got %q", bIn)
			}
		}},
	} {
		t.Run(string(tc.chain), func(t *testing.T) {
			b, model := team(t, map[string]agent.Spec{
				"a": {AgentIDs: []string{"b", "c"}, ChainType: tc.chain}, "b": {}, "c": {},
			}, func(who string, req *llm.Request) llmtest.Turn {
				switch who {
				case "a":
					if len(req.Messages) == 2 {
						return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "x", Function: llm.FunctionCall{Name: "nope", Arguments: `{}`}}}}
					}
					return llmtest.Turn{Text: []string{"A's draft"}}
				case "b":
					return llmtest.Turn{Text: []string{"B's refinement"}}
				}
				return llmtest.Turn{Text: []string{"C's summary"}}
			})
			d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Write it"})
			if d.Status != run.StatusSucceeded {
				t.Fatalf("run %+v", d.Run)
			}
			bReq, cReq := requestsOf(model, "b"), requestsOf(model, "c")
			if len(bReq) != 1 || len(cReq) != 1 {
				t.Fatalf("%d and %d requests", len(bReq), len(cReq))
			}
			tc.check(t, lastUser(bReq[0]), lastUser(cReq[0]))
			for _, m := range bReq[0].Messages {
				if m.Role == llm.RoleTool || len(m.ToolCalls) > 0 {
					t.Errorf("B sees A's tool traffic: %+v", m)
				}
			}
		})
	}
}

func TestParallelFanIn(t *testing.T) {
	var mu sync.Mutex
	spans := map[string][2]time.Time{}
	b, model := team(t, map[string]agent.Spec{
		"lead":   {Edges: []agent.Edge{{From: agent.IDs{List: []string{"lead", "second"}}, To: agent.One("merger"), EdgeType: agent.EdgeDirect}}},
		"second": {},
		"merger": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "merger" {
			return llmtest.Turn{Text: []string{"merged"}}
		}
		mu.Lock()
		spans[who] = [2]time.Time{time.Now(), time.Now().Add(150 * time.Millisecond)}
		mu.Unlock()
		return llmtest.Turn{Text: []string{who + " says yes"}, Delay: 150 * time.Millisecond}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "lead", Text: "Go"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	m := requestsOf(model, "merger")
	if len(m) != 1 {
		t.Fatalf("%d merger requests", len(m))
	}
	var seen []string
	for _, msg := range m[0].Messages {
		if msg.Role == llm.RoleAssistant {
			seen = append(seen, msg.Content)
		}
	}
	if got := strings.Join(seen, "|"); !strings.Contains(got, "lead says yes") || !strings.Contains(got, "second says yes") {
		t.Errorf("merger saw %q", got)
	}
	l, s := spans["lead"], spans["second"]
	if !(l[0].Before(s[1]) && s[0].Before(l[1])) {
		t.Errorf("the two start agents did not overlap: %v %v", l, s)
	}
}

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

// With output_passthrough the next agent's prompt is the previous agent's last
// assistant message verbatim: not the text it wrote before calling a tool.
func TestPassthroughHandsOnTheLastAssistantMessage(t *testing.T) {
	b, model := team(t, map[string]agent.Spec{
		"a": {AgentIDs: []string{"b"}, ChainType: agent.ChainOutputPassthrough}, "b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "a" {
			if len(req.Messages) == 2 { // its first turn: some text, then a tool call
				return llmtest.Turn{Text: []string{"Let me check. "}, ToolCalls: []llm.ToolCall{{ID: "x", Function: llm.FunctionCall{Name: "nope", Arguments: `{}`}}}}
			}
			return llmtest.Turn{Text: []string{"A's draft"}}
		}
		return llmtest.Turn{Text: []string{"B's refinement"}}
	})
	d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Write it"})
	if d.Status != run.StatusSucceeded {
		t.Fatalf("run %+v", d.Run)
	}
	if got := lastUser(requestsOf(model, "b")[0]); got != "A's draft" {
		t.Errorf("b was handed %q, want a's last assistant message %q", got, "A's draft")
	}
}

// loopOnTool is a turn that calls a tool that does not exist, so that the
// agent asking never finishes on its own.
func loopOnTool() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "x", Function: llm.FunctionCall{Name: "nope", Arguments: `{}`}}}}
}

// recursion_limit is the run's budget of model turns, shared by agents that run
// at the same time: two start agents and two handoffs called in one turn.
func TestStepBudgetIsSharedByAgentsRunningTogether(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs map[string]agent.Spec
	}{
		{"parallel start agents", map[string]agent.Spec{
			"lead":   {RecursionLimit: 4, Edges: []agent.Edge{{From: agent.IDs{List: []string{"lead", "second"}}, To: agent.One("merger"), EdgeType: agent.EdgeDirect}}},
			"second": {},
			"merger": {},
		}},
		{"handoffs called in one turn", map[string]agent.Spec{
			"lead":   {RecursionLimit: 4, Edges: []agent.Edge{{From: agent.One("lead"), To: agent.IDs{List: []string{"second", "merger"}}, EdgeType: agent.EdgeHandoff}}},
			"second": {}, "merger": {},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, model := team(t, tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				if who == "lead" && len(req.Messages) == 2 && len(req.Tools) == 2 {
					return llmtest.Turn{ToolCalls: []llm.ToolCall{
						{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_second", Arguments: `{}`}},
						{ID: "h2", Function: llm.FunctionCall{Name: "lc_transfer_to_merger", Arguments: `{}`}},
					}}
				}
				return loopOnTool()
			})
			d := b.chat(t, run.ChatRequest{AgentID: "lead", Text: "Go"})
			if d.Status != run.StatusFailed || !strings.Contains(d.Error, "4 steps") {
				t.Fatalf("run %+v, want it failed at its 4 steps", d.Run)
			}
			if n := len(model.Requests()); n != 4 {
				t.Errorf("the model was asked %d times in a run of 4 steps", n)
			}
		})
	}
}

// A handoff target is a source like any other: its direct edges run when it
// finishes, and a target waiting for it and for another source runs once,
// after both.
func TestDirectEdgesLeavingAHandoffTarget(t *testing.T) {
	handTo := func(target string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h", Function: llm.FunctionCall{Name: "lc_transfer_to_" + target, Arguments: `{}`}}}}
	}
	for _, tc := range []struct {
		name  string
		specs map[string]agent.Spec
		check func(t *testing.T, tm *runtest.Team)
	}{
		{"chain after a handoff", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff}}},
			"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeDirect, Prompt: "Summarize: {results}"}}},
			"c": {},
		}, func(t *testing.T, tm *runtest.Team) {
			c := tm.RequestsOf("c")
			if len(tm.RequestsOf("b")) != 1 || len(c) != 1 {
				t.Fatalf("b ran %d times, c %d times; want once each", len(tm.RequestsOf("b")), len(c))
			}
			if got := lastUser(c[0]); !strings.HasPrefix(got, "Summarize: ") || !strings.Contains(got, "AI: b done") {
				t.Errorf("c was prompted %q", got)
			}
		}},
		{"fan-in waiting for a handoff target", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{
				{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff},
				{From: agent.One("a"), To: agent.One("c"), EdgeType: agent.EdgeDirect},
				{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeDirect},
			}},
			"b": {}, "c": {},
		}, func(t *testing.T, tm *runtest.Team) {
			c := tm.RequestsOf("c")
			if len(c) != 1 {
				t.Fatalf("c ran %d times, want once", len(c))
			}
			if last := c[0].Messages[len(c[0].Messages)-1]; last.Role != llm.RoleAssistant || last.Content != "b done" {
				t.Errorf("c did not wait for b: its last message is %+v", last)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := runtest.NewTeam(t, tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				if who == "a" && len(req.Messages) == 2 {
					return handTo("b")
				}
				return llmtest.Turn{Text: []string{who + " done"}}
			})
			b := &bundle{svc: tm.Runs, user: tm.User}
			if d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Go"}); d.Status != run.StatusSucceeded {
				t.Fatalf("run %+v", d.Run)
			}
			tc.check(t, tm)
		})
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
		case who == "a" && len(req.Messages) == 4:
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
	if res := a[1].Messages[3]; res.Role != llm.RoleTool || !res.IsError || !strings.Contains(res.Content, `"ghost"`) {
		t.Errorf("the transfer to ghost was answered %+v, want an error result", res)
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

// When one of the agents running together fails, the run fails with its error
// and the others stop instead of working on to the step limit.
func TestFailureStopsTheAgentsRunningAlongside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs map[string]agent.Spec
	}{
		{"parallel start agents", map[string]agent.Spec{
			"lead":   {Edges: []agent.Edge{{From: agent.IDs{List: []string{"lead", "second"}}, To: agent.One("merger"), EdgeType: agent.EdgeDirect}}},
			"second": {},
			"merger": {},
		}},
		{"handoffs called in one turn", map[string]agent.Spec{
			"router": {Edges: []agent.Edge{{From: agent.One("router"), To: agent.IDs{List: []string{"lead", "second"}}, EdgeType: agent.EdgeHandoff}}},
			"lead":   {}, "second": {},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			primary := "lead"
			if _, ok := tc.specs["router"]; ok {
				primary = "router"
			}
			b, model := team(t, tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				switch who {
				case "router":
					return llmtest.Turn{ToolCalls: []llm.ToolCall{
						{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_lead", Arguments: `{}`}},
						{ID: "h2", Function: llm.FunctionCall{Name: "lc_transfer_to_second", Arguments: `{}`}},
					}}
				case "lead":
					return llmtest.Turn{Delay: 50 * time.Millisecond, Text: []string{"oops"}, Err: errors.New("the provider exploded")}
				}
				t := loopOnTool()
				t.Delay = 100 * time.Millisecond
				return t
			})
			d := b.chat(t, run.ChatRequest{AgentID: primary, Text: "Go"})
			if d.Status != run.StatusFailed || !strings.Contains(d.Error, "the provider exploded") {
				t.Fatalf("run %+v, want it failed with lead's error", d.Run)
			}
			if n := len(requestsOf(model, "second")); n > 2 {
				t.Errorf("second asked the model %d times after lead failed", n)
			}
			if n := len(requestsOf(model, "merger")); n != 0 {
				t.Errorf("merger ran %d times in a failed run", n)
			}
		})
	}
}

func handoffsOf(s agent.Spec) []agent.Edge {
	var out []agent.Edge
	for _, e := range s.Edges {
		if e.EdgeType == agent.EdgeHandoff {
			out = append(out, e)
		}
	}
	return out
}

// A handoff target continues its source's conversation as the source saw it:
// with the direct edge's prompt the source was answering, or the note of the
// handoff that brought the source in, each message once. The source's
// transfer calls, tools the target does not have, reach it as text.
func TestHandoffTargetSeesWhatItsSourceWasGiven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs map[string]agent.Spec
		want  []string // c's messages after the system message
	}{
		{"a direct edge's prompt", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeDirect, Prompt: "Translate to French: {results}"}}},
			"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeHandoff}}},
			"c": {},
		}, []string{"user: Go", "assistant: a done", "user: Translate to French: AI: a done",
			"assistant: [Called the tool lc_transfer_to_c with {}]\n\n[Result of lc_transfer_to_c]\nTransferred to agent c.",
			`user: The agent "b" handed this conversation over to you. Continue it from here.`}},
		{"the previous handoff's note", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff}}},
			"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeHandoff}}},
			"c": {},
		}, []string{"user: Go", `assistant: [Called the tool lc_transfer_to_b with {"instructions":"in French"}]` + "\n\n[Result of lc_transfer_to_b]\nTransferred to agent b.",
			"user: The agent \"a\" handed this conversation over to you. Continue it from here.\n\nin French",
			"assistant: [Called the tool lc_transfer_to_c with {}]\n\n[Result of lc_transfer_to_c]\nTransferred to agent c.", `user: The agent "b" handed this conversation over to you. Continue it from here.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, model := team(t, tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				switch {
				case who == "a" && len(handoffsOf(tc.specs["a"])) > 0:
					return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_b", Arguments: `{"instructions":"in French"}`}}}}
				case who == "b":
					return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h2", Function: llm.FunctionCall{Name: "lc_transfer_to_c", Arguments: `{}`}}}}
				}
				return llmtest.Turn{Text: []string{who + " done"}}
			})
			if d := b.chat(t, run.ChatRequest{AgentID: "a", Text: "Go"}); d.Status != run.StatusSucceeded {
				t.Fatalf("run %+v", d.Run)
			}
			c := requestsOf(model, "c")
			if len(c) != 1 {
				t.Fatalf("c ran %d times", len(c))
			}
			var got []string
			for _, m := range c[0].Messages[1:] {
				got = append(got, string(m.Role)+": "+m.Content)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("c's messages (-want +got):\n%s", diff)
			}
		})
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
