package turn_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/turn"
)

// scripted is a model that plays turns in order and keeps what it was sent.
type scripted struct {
	mu    sync.Mutex
	turns []func(req *llm.Request, emit func(llm.Event)) (*llm.Turn, error)
	sent  []string
}

func (m *scripted) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	body, err := req.MarshalJSON()
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sent = append(m.sent, string(body))
	if len(m.turns) == 0 {
		m.mu.Unlock()
		return nil, errors.New("script exhausted")
	}
	next := m.turns[0]
	m.turns = m.turns[1:]
	m.mu.Unlock()
	t, err := next(req, emit)
	if t != nil {
		t.Sent = body
	}
	return t, err
}

func say(text string) func(*llm.Request, func(llm.Event)) (*llm.Turn, error) {
	return func(_ *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
		for _, w := range strings.SplitAfter(text, " ") {
			emit(llm.Event{Kind: llm.EventText, Text: w})
		}
		return &llm.Turn{Text: text, FinishReason: llm.FinishStop, Usage: llm.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}}, nil
	}
}

func callTools(calls ...string) func(*llm.Request, func(llm.Event)) (*llm.Turn, error) {
	return func(*llm.Request, func(llm.Event)) (*llm.Turn, error) {
		t := &llm.Turn{FinishReason: llm.FinishToolCalls, Usage: llm.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}}
		for i := 0; i < len(calls); i += 2 {
			t.ToolCalls = append(t.ToolCalls, llm.ToolCall{ID: fmt.Sprintf("call_%d", i/2), Type: "function",
				Function: llm.FunctionCall{Name: calls[i], Arguments: calls[i+1]}})
		}
		return t, nil
	}
}

// tools is a fake ToolRunner: "sum" adds a and b, "slow" waits, "image" returns a picture.
type tools struct {
	running, peak atomic.Int32
}

func (f *tools) Run(ctx context.Context, call llm.ToolCall) turn.ToolOutput {
	n := f.running.Add(1)
	defer f.running.Add(-1)
	for {
		p := f.peak.Load()
		if n <= p || f.peak.CompareAndSwap(p, n) {
			break
		}
	}
	switch call.Function.Name {
	case "sum":
		var a struct{ A, B int }
		if err := json.Unmarshal([]byte(call.Function.Arguments), &a); err != nil {
			return turn.ToolOutput{Text: "bad arguments", IsError: true}
		}
		return turn.ToolOutput{Text: fmt.Sprint(a.A + a.B)}
	case "slow":
		select {
		case <-time.After(100 * time.Millisecond):
			return turn.ToolOutput{Text: "done"}
		case <-ctx.Done():
			return turn.ToolOutput{Text: "cancelled", IsError: true}
		}
	case "image":
		return turn.ToolOutput{Text: "a picture", Parts: []llm.Part{{Type: llm.PartText, Text: "a picture"}, {Type: llm.PartImage, MIMEType: "image/png", Data: "iVBORw0KGgo="}}}
	}
	return turn.ToolOutput{Text: fmt.Sprintf("%q tool call failed: no such tool", call.Function.Name), IsError: true}
}

// request asks a question, offering the tools of the fake box.
func request() *llm.Request {
	req := &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: "What is 2+3?"}}}
	for _, name := range []string{"sum", "slow", "image"} {
		req.Tools = append(req.Tools, llm.FunctionTool{Type: "function", Function: llm.Function{Name: name, Parameters: json.RawMessage(`{"type":"object"}`)}})
	}
	return req
}

func TestRunCallsToolsAndAnswers(t *testing.T) {
	m := &scripted{}
	m.turns = append(m.turns, callTools("sum", `{"a":2,"b":3}`, "nope", `{}`), say("The sum is 5."))
	var events []turn.Event
	req := request()
	out, err := turn.Run(context.Background(), req, turn.Options{Model: m, Tools: &tools{}, Emit: func(e turn.Event) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	if out.Text != "The sum is 5." || out.Steps != 2 || len(out.Requests) != 2 || out.Usage.TotalTokens != 25 {
		t.Errorf("outcome %+v", out)
	}
	if len(out.Tools) != 2 || out.Tools[0].Result != "5" || out.Tools[1].IsError != true {
		t.Errorf("tools %+v", out.Tools)
	}
	// The second request holds the assistant's call of sum and its result; its
	// call of nope, a tool the request does not define, is text with its
	// result, which providers would refuse as a call.
	var second struct {
		Messages []struct {
			Role, Content string
			ToolCallID    string `json:"tool_call_id"`
			ToolCalls     []any  `json:"tool_calls"`
		}
	}
	if err := json.Unmarshal([]byte(m.sent[1]), &second); err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, msg := range second.Messages {
		roles = append(roles, msg.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool" || second.Messages[3].Content != "5" || second.Messages[3].ToolCallID != "call_0" || len(second.Messages[2].ToolCalls) != 1 ||
		second.Messages[2].Content != "[Called the tool nope with {}]\n\n[Error from nope]\n\"nope\" tool call failed: no such tool" {
		t.Errorf("second request: %s", m.sent[1])
	}
	// The turn's own messages keep both calls as they were made.
	if len(out.Messages) != 4 || out.Messages[3].Role != llm.RoleAssistant || len(out.Messages[0].ToolCalls) != 2 || out.Messages[2].ToolCallID != "call_1" {
		t.Errorf("added messages: %+v", out.Messages)
	}
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	got := strings.Join(kinds, ",")
	if strings.Count(got, "tool_started") != 2 || strings.Count(got, "tool_finished") != 2 || !strings.HasPrefix(got, "usage,tool_started") || !strings.HasSuffix(got, "text,usage") {
		t.Errorf("events %s", got)
	}
	// Each call starts before it finishes.
	started := map[string]int{}
	for i, e := range events {
		switch e.Kind {
		case turn.EventToolStarted:
			started[e.Tool.ID] = i
		case turn.EventToolFinished:
			if j, ok := started[e.Tool.ID]; !ok || j > i {
				t.Errorf("tool %s finished before it started", e.Tool.ID)
			}
		}
	}
}

func TestRunRunsToolsInParallelBounded(t *testing.T) {
	m := &scripted{}
	var calls []string
	for range 10 {
		calls = append(calls, "slow", `{}`)
	}
	m.turns = append(m.turns, callTools(calls...), say("ok"))
	f := &tools{}
	began := time.Now()
	if _, err := turn.Run(context.Background(), request(), turn.Options{Model: m, Tools: f, Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	if p := f.peak.Load(); p != 4 {
		t.Errorf("peak parallel tool calls %d, want 4", p)
	}
	if d := time.Since(began); d > 900*time.Millisecond {
		t.Errorf("10 calls of 100 ms, 4 at a time, took %s", d)
	}
}

func TestRunStepLimit(t *testing.T) {
	m := &scripted{}
	for range 5 {
		m.turns = append(m.turns, callTools("sum", `{"a":1,"b":1}`))
	}
	out, err := turn.Run(context.Background(), request(), turn.Options{Model: m, Tools: &tools{}, MaxSteps: 3})
	if !errors.Is(err, turn.ErrStepLimit) || !strings.Contains(err.Error(), "3 steps") {
		t.Fatalf("error %v, want the step limit", err)
	}
	if len(out.Tools) != 3 || len(out.Requests) != 3 {
		t.Errorf("kept %d tool calls and %d requests, want 3 each", len(out.Tools), len(out.Requests))
	}
}

// Two turns drawing on one budget of 5 steps make 5 model calls between them,
// whatever their own MaxSteps, and at least one ends at the step limit.
func TestRunSharedStepBudget(t *testing.T) {
	var mu sync.Mutex
	left := 5
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if left == 0 {
			return false
		}
		left--
		return true
	}
	models := [2]*scripted{{}, {}}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, m := range models {
		for range 10 {
			m.turns = append(m.turns, callTools("sum", `{"a":1,"b":1}`))
		}
		wg.Go(func() {
			_, errs[i] = turn.Run(context.Background(), request(), turn.Options{Model: m, Tools: &tools{}, MaxSteps: 10, TakeStep: take})
		})
	}
	wg.Wait()
	if n := len(models[0].sent) + len(models[1].sent); n != 5 {
		t.Errorf("%d model calls in all, want the budget's 5", n)
	}
	for i, err := range errs {
		if !errors.Is(err, turn.ErrStepLimit) {
			t.Errorf("turn %d ended with %v, want the step limit", i, err)
		}
	}
}

func TestRunAbortKeepsPartialAnswer(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	m := &scripted{}
	m.turns = append(m.turns, func(req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
		emit(llm.Event{Kind: llm.EventText, Text: "The answer is "})
		cancel(errors.New("user abort"))
		return &llm.Turn{Text: "The answer is "}, context.Cause(ctx)
	})
	req := request()
	out, err := turn.Run(ctx, req, turn.Options{Model: m, Tools: &tools{}})
	if err == nil || err.Error() != "user abort" {
		t.Fatalf("error %v", err)
	}
	if out.Text != "The answer is " || req.Messages[len(req.Messages)-1].Content != "The answer is " {
		t.Errorf("partial answer not kept: %+v", out)
	}
}

func TestRunImageResultsAndStop(t *testing.T) {
	m := &scripted{}
	m.turns = append(m.turns, callTools("image", `{}`, "lc_transfer_to_b", `{"instructions":"go"}`))
	req := request()
	out, err := turn.Run(context.Background(), req, turn.Options{Model: m, Tools: &tools{}, Stop: func(c llm.ToolCall) bool {
		_, ok := prompt.HandoffTarget(c.Function.Name)
		return ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.StoppedBy == nil || out.StoppedBy.Function.Name != "lc_transfer_to_b" || out.Steps != 1 {
		t.Errorf("stopped by %+v after %d steps", out.StoppedBy, out.Steps)
	}
	if img := req.Messages[3]; img.Role != llm.RoleTool || len(img.Parts) != 2 || img.Parts[1].Type != llm.PartImage {
		t.Errorf("image result: %+v", img)
	}
}

// A call of the caller's own function is not run: the turn ends after the
// step's other calls ran, and hands it back; a forced tool_choice holds for
// the first step only.
func TestRunHandsClientCallsBack(t *testing.T) {
	m := &scripted{}
	m.turns = append(m.turns, callTools("sum", `{"a":2,"b":3}`), callTools("sum", `{"a":1,"b":1}`, "weather", `{"city":"Paris"}`), say("unreached"))
	req := request()
	req.Tools = []llm.FunctionTool{{Function: llm.Function{Name: "sum"}}, {Function: llm.Function{Name: "weather"}}}
	req.ToolChoice = "required"
	out, err := turn.Run(context.Background(), req, turn.Options{Model: m, Tools: &tools{}, Client: func(c llm.ToolCall) bool { return c.Function.Name == "weather" }})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Handed) != 1 || out.Handed[0].Function.Name != "weather" || out.Handed[0].ID != "call_1" {
		t.Errorf("handed %+v", out.Handed)
	}
	if len(out.Tools) != 2 || out.Tools[1].Name != "sum" || out.Tools[1].Result != "2" || out.Steps != 2 {
		t.Errorf("tools %+v, steps %d", out.Tools, out.Steps)
	}
	// The last message is the assistant's with both calls and a result for sum only.
	last := out.Messages[len(out.Messages)-2:]
	if last[0].Role != llm.RoleAssistant || len(last[0].ToolCalls) != 2 || last[1].Role != llm.RoleTool || last[1].ToolCallID != "call_0" {
		t.Errorf("last messages %+v", last)
	}
	if !strings.Contains(m.sent[0], `"tool_choice":"required"`) || !strings.Contains(m.sent[1], `"tool_choice":"auto"`) {
		t.Errorf("tool_choice: first %s\nsecond %s", m.sent[0], m.sent[1])
	}
}

// Fit runs before every step; what it drops from the front does not change
// which messages the turn reports as its own, and its error ends the turn
// before anything is sent.
func TestRunFitsEveryTurn(t *testing.T) {
	m := &scripted{}
	m.turns = append(m.turns, callTools("sum", `{"a":2,"b":3}`), say("The sum is 5."))
	req := request()
	req.Messages = append(req.Messages[:1], append([]llm.Message{{Role: llm.RoleUser, Content: "old"}, {Role: llm.RoleAssistant, Content: "older answer"}}, req.Messages[1:]...)...)
	var seen []int
	fit := func(_ context.Context, r *llm.Request) error {
		seen = append(seen, len(r.Messages))
		if len(r.Messages) > 1 && r.Messages[1].Content == "old" { // drop the old turn once
			r.Messages = append(r.Messages[:1], r.Messages[3:]...)
		}
		return nil
	}
	out, err := turn.Run(context.Background(), req, turn.Options{Model: m, Tools: &tools{}, Fit: fit})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[4 4]" {
		t.Errorf("Fit saw requests of %v messages, want [4 4]", seen)
	}
	if len(out.Messages) != 3 || out.Messages[0].Role != llm.RoleAssistant || out.Messages[1].Role != llm.RoleTool || out.Messages[2].Content != "The sum is 5." {
		t.Errorf("added messages: %+v", out.Messages)
	}
	if strings.Contains(m.sent[0], "older answer") {
		t.Errorf("the dropped turn was sent: %s", m.sent[0])
	}

	m = &scripted{}
	m.turns = append(m.turns, say("never"))
	tooBig := errors.New("does not fit")
	out, err = turn.Run(context.Background(), request(), turn.Options{Model: m, Tools: &tools{}, Fit: func(context.Context, *llm.Request) error { return tooBig }})
	if !errors.Is(err, tooBig) || len(m.sent) != 0 || len(out.Messages) != 0 {
		t.Errorf("Run with a request that does not fit: %v, %d sent, %d added", err, len(m.sent), len(out.Messages))
	}
}
