package graph_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/graph"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/turn"
)

// team is a fake graph.Runner. Each agent's turn is turn.Run on the system
// message "I am <id>." and the turn's messages, with one transfer tool per
// handoff target and the tool "nope", all answered by one scripted model
// that knows which agent asks. A transfer succeeds; any other tool call is an
// error result, except a call of client, which the turn hands back to the
// caller.
type team struct {
	g      *graph.Graph
	model  *llmtest.Model
	client string

	mu     sync.Mutex
	events []string // "agent kind" of each event reported
}

// newTeam resolves the graph of primary among the agents specs defines.
func newTeam(t *testing.T, primary string, specs map[string]agent.Spec, answer func(who string, req *llm.Request) llmtest.Turn) *team {
	t.Helper()
	g, err := graph.Resolve(primary, func(id string) (*agent.Agent, error) {
		spec, ok := specs[id]
		if !ok {
			return nil, nil
		}
		return &agent.Agent{ID: id, Spec: spec}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return &team{g: g, model: llmtest.Func(func(req *llm.Request) llmtest.Turn { return answer(asker(req), req) })}
}

// asker is the agent that sent req.
func asker(req *llm.Request) string {
	return strings.TrimSuffix(strings.TrimPrefix(req.Messages[0].Content, "I am "), ".")
}

func (tm *team) Turn(ctx context.Context, t graph.Turn) (*turn.Outcome, error) {
	req := &llm.Request{Model: "m", Messages: append([]llm.Message{{Role: llm.RoleSystem, Content: "I am " + t.AgentID + "."}}, t.Messages...)}
	for _, e := range t.Graph.Handoffs(t.AgentID) {
		req.Tools = append(req.Tools, llm.FunctionTool{Type: "function", Function: llm.Function{Name: prompt.HandoffPrefix + e.To[0]}})
	}
	req.Tools = append(req.Tools, llm.FunctionTool{Type: "function", Function: llm.Function{Name: "nope"}})
	o := t.Options
	o.Model, o.Tools = tm.model, transfers{}
	if tm.client != "" {
		o.Client = func(c llm.ToolCall) bool { return c.Function.Name == tm.client }
	}
	return turn.Run(ctx, req, o)
}

func (tm *team) Event(agentID string, e turn.Event) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.events = append(tm.events, agentID+" "+string(e.Kind))
}

// run executes the team's graph for the user's message text.
func (tm *team) run(t *testing.T, text string) (*graph.Result, error) {
	return graph.Execute(t.Context(), tm.g, tm, graph.Input{Messages: []llm.Message{{Role: llm.RoleUser, Content: text}}})
}

// requestsOf are the requests the agent id sent to the model, in order.
func (tm *team) requestsOf(id string) []*llm.Request {
	var out []*llm.Request
	for _, r := range tm.model.Requests() {
		if asker(r) == id {
			out = append(out, r)
		}
	}
	return out
}

// transfers runs the tool calls of a team's agents.
type transfers struct{}

func (transfers) Run(_ context.Context, call llm.ToolCall) turn.ToolOutput {
	if target, ok := prompt.HandoffTarget(call.Function.Name); ok {
		return turn.ToolOutput{Text: "Transferred to agent " + target + "."}
	}
	return turn.ToolOutput{Text: "no such tool", IsError: true}
}

func lastUser(req *llm.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == llm.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

func handTo(targets ...string) llmtest.Turn {
	var calls []llm.ToolCall
	for i, target := range targets {
		calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("h%d", i+1), Function: llm.FunctionCall{Name: prompt.HandoffPrefix + target, Arguments: `{}`}})
	}
	return llmtest.Turn{ToolCalls: calls}
}

// loopOnTool is a turn that calls a tool that does not exist, so that the
// agent asking never finishes on its own.
func loopOnTool() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "x", Function: llm.FunctionCall{Name: "nope", Arguments: `{}`}}}}
}

// partsOf writes a result's parts as "agent kind text-or-tool".
func partsOf(res *graph.Result) []string {
	var out []string
	for _, p := range res.Parts {
		s := p.AgentID + " " + string(p.Kind)
		switch {
		case p.Tool != nil:
			s += " " + p.Tool.Name
		case p.Image != nil:
			s += " " + p.Image.MIMEType
		default:
			s += " " + p.Text
		}
		out = append(out, s)
	}
	return out
}

func TestHandoff(t *testing.T) {
	tm := newTeam(t, "router", map[string]agent.Spec{
		"router":     {Edges: []agent.Edge{{From: agent.One("router"), To: agent.One("specialist"), EdgeType: agent.EdgeHandoff, Prompt: "What to check", PromptKey: "context"}}},
		"specialist": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "router" {
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_specialist", Arguments: `{"context":"check article 15"}`}}}}
		}
		return llmtest.Turn{Text: []string{"Article 15 says so."}}
	})
	res, err := tm.run(t, "Is it allowed?")
	if err != nil {
		t.Fatal(err)
	}
	spec := tm.requestsOf("specialist")
	if len(spec) != 1 {
		t.Fatalf("%d specialist requests", len(spec))
	}
	if got := lastUser(spec[0]); !strings.Contains(got, `"router" handed this conversation over to you`) || !strings.HasSuffix(got, "check article 15") {
		t.Errorf("specialist's last user message %q", got)
	}
	if spec[0].Messages[1].Content != "Is it allowed?" {
		t.Errorf("the specialist does not see the conversation: %+v", spec[0].Messages)
	}
	if res.Text != "Article 15 says so." {
		t.Errorf("answer %q", res.Text)
	}
	want := []string{"router tool_started", "router tool_finished", "specialist text"}
	if diff := cmp.Diff(want, tm.events); diff != "" {
		t.Errorf("events reported (-want +got):\n%s", diff)
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
			tm := newTeam(t, "a", map[string]agent.Spec{
				"a": {AgentIDs: []string{"b", "c"}, ChainType: tc.chain}, "b": {}, "c": {},
			}, func(who string, req *llm.Request) llmtest.Turn {
				switch who {
				case "a":
					if len(req.Messages) == 2 {
						return loopOnTool()
					}
					return llmtest.Turn{Text: []string{"A's draft"}}
				case "b":
					return llmtest.Turn{Text: []string{"B's refinement"}}
				}
				return llmtest.Turn{Text: []string{"C's summary"}}
			})
			res, err := tm.run(t, "Write it")
			if err != nil {
				t.Fatal(err)
			}
			bReq, cReq := tm.requestsOf("b"), tm.requestsOf("c")
			if len(bReq) != 1 || len(cReq) != 1 {
				t.Fatalf("%d and %d requests", len(bReq), len(cReq))
			}
			tc.check(t, lastUser(bReq[0]), lastUser(cReq[0]))
			for _, m := range bReq[0].Messages {
				if m.Role == llm.RoleTool || len(m.ToolCalls) > 0 {
					t.Errorf("B sees A's tool traffic: %+v", m)
				}
			}
			if want := "A's draft\n\nB's refinement\n\nC's summary"; res.Text != want {
				t.Errorf("answer %q, want %q", res.Text, want)
			}
		})
	}
}

func TestParallelFanIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		spans := map[string][2]time.Time{}
		tm := newTeam(t, "lead", map[string]agent.Spec{
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
		if _, err := tm.run(t, "Go"); err != nil {
			t.Fatal(err)
		}
		m := tm.requestsOf("merger")
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
	})
}

// A handoff cycle runs until the primary's recursion_limit is used up; what
// the agents said on the way is kept.
func TestHandoffCycleEndsAtTheStepLimit(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {RecursionLimit: 6, Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b")}}},
		"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("a")}}},
	}, func(who string, req *llm.Request) llmtest.Turn {
		other := map[string]string{"a": "b", "b": "a"}[who]
		return llmtest.Turn{Text: []string{who + " passes. "}, ToolCalls: []llm.ToolCall{{ID: "t", Function: llm.FunctionCall{Name: "lc_transfer_to_" + other, Arguments: `{}`}}}}
	})
	res, err := tm.run(t, "Ping")
	if !errors.Is(err, turn.ErrStepLimit) || !strings.Contains(err.Error(), "6 steps") {
		t.Fatalf("error %v, want the step limit of 6 steps", err)
	}
	if n := len(tm.model.Requests()); n != 6 {
		t.Errorf("the model was asked %d times in a flow of 6 steps", n)
	}
	if !strings.HasPrefix(res.Text, "a passes. \n\nb passes. ") {
		t.Errorf("partial answer %q", res.Text)
	}
}

// The flow's budget is the primary's recursion_limit, or the default, capped.
func TestStepBudget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int
		in    graph.Input
		want  int
	}{
		{"recursion_limit", 4, graph.Input{DefaultSteps: 7}, 4},
		{"default", 0, graph.Input{DefaultSteps: 3}, 3},
		{"capped", 9, graph.Input{StepLimit: 2}, 2},
		{"fifty", 0, graph.Input{}, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTeam(t, "a", map[string]agent.Spec{"a": {RecursionLimit: tc.limit}}, func(string, *llm.Request) llmtest.Turn { return loopOnTool() })
			tc.in.Messages = []llm.Message{{Role: llm.RoleUser, Content: "Go"}}
			_, err := graph.Execute(t.Context(), tm.g, tm, tc.in)
			if want := fmt.Sprintf("the run used its %d steps (recursion_limit)", tc.want); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error %v, want %q", err, want)
			}
			if n := len(tm.model.Requests()); n != tc.want {
				t.Errorf("the model was asked %d times, want %d", n, tc.want)
			}
		})
	}
}

// With hide_sequential_outputs the answer keeps the last agent's text and
// every tool call.
func TestHiddenOutputs(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {HideSequentialOutputs: true, Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeDirect}}},
		"b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "a" && len(req.Messages) == 2 {
			return llmtest.Turn{Text: []string{"draft"}, ToolCalls: loopOnTool().ToolCalls}
		}
		return llmtest.Turn{Text: []string{who + " final"}}
	})
	res, err := tm.run(t, "Go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "b final" {
		t.Errorf("answer %q, want only the last agent's text", res.Text)
	}
	if diff := cmp.Diff([]string{"a tool_call nope", "b text b final"}, partsOf(res)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}

// The answer's parts are each agent's text and tool calls in the order they
// happened, agents in the order they finished, then the images.
func TestResultParts(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{"a": {AgentIDs: []string{"b"}}, "b": {}},
		func(who string, req *llm.Request) llmtest.Turn {
			if who == "a" && len(req.Messages) == 2 {
				return llmtest.Turn{Text: []string{"Let me ", "look. "}, Images: []llm.Image{{MIMEType: "image/png", Data: "iVBORw0KGgo="}}, ToolCalls: loopOnTool().ToolCalls, Usage: llm.Usage{TotalTokens: 3}}
			}
			return llmtest.Turn{Text: []string{who + " done"}, Usage: llm.Usage{TotalTokens: 2}}
		})
	res, err := tm.run(t, "Go")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a text Let me look. ", "a tool_call nope", "a text a done", "b text b done", "a image image/png"}
	if diff := cmp.Diff(want, partsOf(res)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if res.Text != "Let me look. \n\na done\n\nb done" || res.Usage.TotalTokens != 7 {
		t.Errorf("answer %q, usage %+v", res.Text, res.Usage)
	}
	if tool := res.Parts[1].Tool; tool.Result != "no such tool" || !tool.IsError {
		t.Errorf("the tool call's part holds %+v, want its result", tool)
	}
}

// An answer's text is its text parts joined with a blank line: the text a
// model wrote before a tool call and the text after it are two paragraphs,
// as the texts of two agents are.
func TestAnswerTextSeparatesItsParts(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{"a": {AgentIDs: []string{"b"}}, "b": {}},
		func(who string, req *llm.Request) llmtest.Turn {
			switch {
			case who == "b":
				return llmtest.Turn{Text: []string{"Checked."}}
			case len(req.Messages) == 2:
				return llmtest.Turn{Text: []string{"Let me ", "search."}, ToolCalls: loopOnTool().ToolCalls}
			case len(req.Messages) == 4:
				return llmtest.Turn{ToolCalls: loopOnTool().ToolCalls} // a step with no text adds no part
			}
			return llmtest.Turn{Text: []string{"The answer ", "is 5."}}
		})
	res, err := tm.run(t, "What is 2+3?")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a text Let me search.", "a tool_call nope", "a tool_call nope", "a text The answer is 5.", "b text Checked."}
	if diff := cmp.Diff(want, partsOf(res)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if want := "Let me search.\n\nThe answer is 5.\n\nChecked."; res.Text != want {
		t.Errorf("answer %q, want %q", res.Text, want)
	}
}

// A call of the caller's function ends the flow: nothing follows it, and the
// call ends the answer.
func TestClientCallEndsTheFlow(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{"a": {AgentIDs: []string{"b"}}, "b": {}},
		func(who string, req *llm.Request) llmtest.Turn {
			return llmtest.Turn{Text: []string{"Asking. "}, ToolCalls: []llm.ToolCall{{ID: "w", Function: llm.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}}
		})
	tm.client = "weather"
	res, err := tm.run(t, "Go")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tm.requestsOf("b")); n != 0 {
		t.Errorf("b ran %d times after a's client call", n)
	}
	if diff := cmp.Diff([]string{"a text Asking. ", "a client_tool_call weather"}, partsOf(res)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	if c := res.Parts[1].Tool; c.ID != "w" || c.Arguments != `{"city":"Paris"}` {
		t.Errorf("client call %+v", c)
	}
}

// With output_passthrough the next agent's prompt is the previous agent's last
// assistant message verbatim: not the text it wrote before calling a tool.
func TestPassthroughHandsOnTheLastAssistantMessage(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {AgentIDs: []string{"b"}, ChainType: agent.ChainOutputPassthrough}, "b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "a" {
			if len(req.Messages) == 2 { // its first step: some text, then a tool call
				return llmtest.Turn{Text: []string{"Let me check. "}, ToolCalls: loopOnTool().ToolCalls}
			}
			return llmtest.Turn{Text: []string{"A's draft"}}
		}
		return llmtest.Turn{Text: []string{"B's refinement"}}
	})
	if _, err := tm.run(t, "Write it"); err != nil {
		t.Fatal(err)
	}
	if got := lastUser(tm.requestsOf("b")[0]); got != "A's draft" {
		t.Errorf("b was handed %q, want a's last assistant message %q", got, "A's draft")
	}
}

// recursion_limit is the flow's budget of steps, shared by agents that run at
// the same time: two start agents and two handoffs called in one step.
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
		{"handoffs called in one step", map[string]agent.Spec{
			"lead":   {RecursionLimit: 4, Edges: []agent.Edge{{From: agent.One("lead"), To: agent.IDs{List: []string{"second", "merger"}}, EdgeType: agent.EdgeHandoff}}},
			"second": {}, "merger": {},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTeam(t, "lead", tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				if who == "lead" && len(req.Messages) == 2 && len(req.Tools) == 2 {
					return handTo("second", "merger")
				}
				return loopOnTool()
			})
			if _, err := tm.run(t, "Go"); err == nil || !strings.Contains(err.Error(), "4 steps") {
				t.Fatalf("error %v, want the flow failed at its 4 steps", err)
			}
			if n := len(tm.model.Requests()); n != 4 {
				t.Errorf("the model was asked %d times in a flow of 4 steps", n)
			}
		})
	}
}

// A handoff target is a source like any other: its direct edges run when it
// finishes, and a target waiting for it and for another source runs once,
// after both.
func TestDirectEdgesLeavingAHandoffTarget(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs map[string]agent.Spec
		check func(t *testing.T, tm *team)
	}{
		{"chain after a handoff", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff}}},
			"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("c"), EdgeType: agent.EdgeDirect, Prompt: "Summarize: {results}"}}},
			"c": {},
		}, func(t *testing.T, tm *team) {
			c := tm.requestsOf("c")
			if len(tm.requestsOf("b")) != 1 || len(c) != 1 {
				t.Fatalf("b ran %d times, c %d times; want once each", len(tm.requestsOf("b")), len(c))
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
		}, func(t *testing.T, tm *team) {
			c := tm.requestsOf("c")
			if len(c) != 1 {
				t.Fatalf("c ran %d times, want once", len(c))
			}
			if last := c[0].Messages[len(c[0].Messages)-1]; last.Role != llm.RoleAssistant || last.Content != "b done" {
				t.Errorf("c did not wait for b: its last message is %+v", last)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tm := newTeam(t, "a", tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				if who == "a" && len(req.Messages) == 2 {
					return handTo("b")
				}
				return llmtest.Turn{Text: []string{who + " done"}}
			})
			if _, err := tm.run(t, "Go"); err != nil {
				t.Fatal(err)
			}
			tc.check(t, tm)
		})
	}
}

// When one of the agents running together fails, the flow fails with its
// error, credited to it, and the others stop instead of working on to the
// step limit.
func TestFailureStopsTheAgentsRunningAlongside(t *testing.T) {
	for _, tc := range []struct {
		name    string
		primary string
		specs   map[string]agent.Spec
	}{
		{"parallel start agents", "lead", map[string]agent.Spec{
			"lead":   {Edges: []agent.Edge{{From: agent.IDs{List: []string{"lead", "second"}}, To: agent.One("merger"), EdgeType: agent.EdgeDirect}}},
			"second": {},
			"merger": {},
		}},
		{"handoffs called in one step", "router", map[string]agent.Spec{
			"router": {Edges: []agent.Edge{{From: agent.One("router"), To: agent.IDs{List: []string{"lead", "second"}}, EdgeType: agent.EdgeHandoff}}},
			"lead":   {}, "second": {},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tm := newTeam(t, tc.primary, tc.specs, func(who string, req *llm.Request) llmtest.Turn {
					switch who {
					case "router":
						return handTo("lead", "second")
					case "lead":
						return llmtest.Turn{Delay: 50 * time.Millisecond, Text: []string{"oops"}, Err: errors.New("the provider exploded")}
					}
					t := loopOnTool()
					t.Delay = 100 * time.Millisecond
					return t
				})
				_, err := tm.run(t, "Go")
				ae, ok := errors.AsType[*graph.AgentError](err)
				if !ok || ae.AgentID != "lead" || !strings.Contains(err.Error(), "the provider exploded") {
					t.Fatalf("error %v, want lead's", err)
				}
				if n := len(tm.requestsOf("second")); n > 2 {
					t.Errorf("second asked the model %d times after lead failed", n)
				}
				if n := len(tm.requestsOf("merger")); n != 0 {
					t.Errorf("merger ran %d times in a failed flow", n)
				}
			})
		})
	}
}

// A failure is credited to the agent that failed, not the primary.
func TestFailureIsCreditedToTheAgentThatFailed(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{"a": {AgentIDs: []string{"b"}}, "b": {}},
		func(who string, req *llm.Request) llmtest.Turn {
			if who == "b" {
				return llmtest.Turn{Err: errors.New("b's provider exploded")}
			}
			return llmtest.Turn{Text: []string{"fine"}}
		})
	res, err := tm.run(t, "Go")
	if ae, ok := errors.AsType[*graph.AgentError](err); !ok || ae.AgentID != "b" {
		t.Fatalf("error %v, want b's", err)
	}
	if res.Text != "fine" {
		t.Errorf("the answer so far is %q, want a's", res.Text)
	}
}

// A handoff target continues its source's conversation as the source saw it:
// with the direct edge's prompt the source was answering, or the note of the
// handoff that brought the source in, each message once, then what the source
// added and the note of this handoff. The transfer calls, of tools the target
// does not have, reach its model as text.
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
		}, []string{"user: Go", "assistant: [Called the tool lc_transfer_to_b with {\"instructions\":\"in French\"}]\n\n[Result of lc_transfer_to_b]\nTransferred to agent b.",
			"user: The agent \"a\" handed this conversation over to you. Continue it from here.\n\nin French",
			"assistant: [Called the tool lc_transfer_to_c with {}]\n\n[Result of lc_transfer_to_c]\nTransferred to agent c.",
			`user: The agent "b" handed this conversation over to you. Continue it from here.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handsOff := slices.ContainsFunc(tc.specs["a"].Edges, func(e agent.Edge) bool { return e.EdgeType == agent.EdgeHandoff })
			tm := newTeam(t, "a", tc.specs, func(who string, req *llm.Request) llmtest.Turn {
				switch {
				case who == "a" && handsOff:
					return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "h1", Function: llm.FunctionCall{Name: "lc_transfer_to_b", Arguments: `{"instructions":"in French"}`}}}}
				case who == "b":
					return handTo("c")
				}
				return llmtest.Turn{Text: []string{who + " done"}}
			})
			if _, err := tm.run(t, "Go"); err != nil {
				t.Fatal(err)
			}
			c := tm.requestsOf("c")
			if len(c) != 1 {
				t.Fatalf("c ran %d times", len(c))
			}
			var got []string
			for _, m := range c[0].Messages[1:] {
				s := string(m.Role) + ": " + m.Content
				for _, call := range m.ToolCalls {
					s += " → " + call.Function.Name + " " + call.Function.Arguments
				}
				got = append(got, s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("c's messages (-want +got):\n%s", diff)
			}
		})
	}
}

// A call of one of the caller's functions ends the run though another agent
// runs alongside: that agent finishes its turn, and nothing starts after it.
func TestClientCallEndsTheFlowOfAgentsRunningTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTeam(t, "a", map[string]agent.Spec{
			"a": {Edges: []agent.Edge{{From: agent.IDs{List: []string{"a", "x"}}, To: agent.One("d"), EdgeType: agent.EdgeDirect}}},
			"x": {Edges: []agent.Edge{{From: agent.One("x"), To: agent.One("y"), EdgeType: agent.EdgeDirect}}},
			"y": {},
			"d": {},
		}, func(who string, req *llm.Request) llmtest.Turn {
			switch who {
			case "a":
				return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "w", Function: llm.FunctionCall{Name: "weather", Arguments: `{"city":"Paris"}`}}}}
			case "x": // still answering when a's call ends the run
				return llmtest.Turn{Text: []string{"x says."}, Delay: time.Second}
			}
			return llmtest.Turn{Text: []string{who + " says."}}
		})
		tm.client = "weather"
		res, err := tm.run(t, "Go")
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"y", "d"} {
			if n := len(tm.requestsOf(id)); n != 0 {
				t.Errorf("%s ran %d times after a's client call", id, n)
			}
		}
		if parts := partsOf(res); !slices.Contains(parts, "a client_tool_call weather") {
			t.Errorf("parts %q, want a's client call among them", parts)
		}
	})
}

// Two calls of one transfer in a turn hand the conversation over once.
func TestTwoCallsOfOneTransferHandOverOnce(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff}}},
		"b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "a" {
			return handTo("b", "b")
		}
		return llmtest.Turn{Text: []string{"b answers."}}
	})
	res, err := tm.run(t, "Go")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tm.requestsOf("b")); n != 1 {
		t.Errorf("b ran %d times, want once", n)
	}
	if res.Text != "b answers." {
		t.Errorf("answer %q", res.Text)
	}
}

// With hide_sequential_outputs the answer keeps the text of the last turn
// only, in its text and in its parts, also when the agent before it was the
// same one: a handoff back.
func TestHiddenOutputsOfAHandoffBack(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {HideSequentialOutputs: true, Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeHandoff}}},
		"b": {Edges: []agent.Edge{{From: agent.One("b"), To: agent.One("a"), EdgeType: agent.EdgeHandoff}}},
	}, func(who string, req *llm.Request) llmtest.Turn {
		switch {
		case who == "b":
			return handTo("a")
		case strings.Contains(lastUser(req), "handed this conversation over"):
			return llmtest.Turn{Text: []string{"A final."}}
		}
		return llmtest.Turn{Text: []string{"A first. "}, ToolCalls: handTo("b").ToolCalls}
	})
	res, err := tm.run(t, "Go")
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != "A final." {
		t.Errorf("answer %q, want the last turn's text alone", res.Text)
	}
	want := []string{"a tool_call lc_transfer_to_b", "b tool_call lc_transfer_to_a", "a text A final."}
	if diff := cmp.Diff(want, partsOf(res)); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
}

// With excludeResults a direct target sees the conversation as the run began,
// the user's message of this run the last of it, and its edge's prompt: none
// of what the agents of the run said (docs/agents.md "Edges").
func TestExcludeResultsKeepsTheUserMessage(t *testing.T) {
	tm := newTeam(t, "a", map[string]agent.Spec{
		"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeDirect, ExcludeResults: true, Prompt: "Review: {results}"}}},
		"b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: []string{who + " says"}}
	})
	history := []llm.Message{{Role: llm.RoleUser, Content: "Hi"}, {Role: llm.RoleAssistant, Content: "Hello"}}
	in := graph.Input{Messages: append(slices.Clone(history), llm.Message{Role: llm.RoleUser, Content: "Write it"})}
	if _, err := graph.Execute(t.Context(), tm.g, tm, in); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range tm.requestsOf("b")[0].Messages[1:] {
		got = append(got, string(m.Role)+": "+m.Content)
	}
	want := []string{"user: Hi", "assistant: Hello", "user: Write it", "user: Review: AI: a says"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("b's messages (-want +got):\n%s", diff)
	}
}
