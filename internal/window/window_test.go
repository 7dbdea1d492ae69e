package window_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/token"
	"github.com/relay-ai/relay/internal/window"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name       string
		params     map[string]any
		model      string
		configured int
		want       window.Budget
	}{
		{"agent's maxContextTokens as it is", map[string]any{"maxContextTokens": 2000, "max_tokens": 500}, "gpt-4o", 64000, window.Budget{Tokens: 2000, Source: window.SourceAgent}},
		{"maxContextTokens from JSON", map[string]any{"maxContextTokens": float64(3000)}, "gpt-4o", 0, window.Budget{Tokens: 3000, Source: window.SourceAgent}},
		{"tokenConfig less max_tokens", map[string]any{"max_tokens": 1000}, "mistral-large-latest", 32000, window.Budget{Tokens: 31000, Context: 32000, Reply: 1000, Source: window.SourceTokenConfig}},
		{"known model less the default reply", nil, "gpt-4o", 0, window.Budget{Tokens: 128000 - 4096, Context: 128000, Reply: 4096, Source: window.SourceKnown}},
		{"known model less max_completion_tokens", map[string]any{"max_completion_tokens": "8000"}, "gpt-4.1-mini", 0, window.Budget{Tokens: 1047576 - 8000, Context: 1047576, Reply: 8000, Source: window.SourceKnown}},
		{"claude less maxOutputTokens", map[string]any{"maxOutputTokens": 16000}, "claude-sonnet-4-5", 0, window.Budget{Tokens: 184000, Context: 200000, Reply: 16000, Source: window.SourceKnown}},
		{"router prefix", nil, "google/gemini-2.5-flash", 0, window.Budget{Tokens: 1048576 - 4096, Context: 1048576, Reply: 4096, Source: window.SourceKnown}},
		{"unknown model", nil, "my-local-model", 0, window.Budget{Tokens: 18000 - 4096, Context: 18000, Reply: 4096, Source: window.SourceDefault}},
		{"small window keeps a quarter for the reply", nil, "tiny", 8000, window.Budget{Tokens: 6000, Context: 8000, Reply: 2000, Source: window.SourceTokenConfig}},
		{"zero maxContextTokens is unset", map[string]any{"maxContextTokens": 0}, "gpt-4", 0, window.Budget{Tokens: 8192 - 2048, Context: 8192, Reply: 2048, Source: window.SourceKnown}},
		{"longest prefix wins", nil, "gpt-4-32k-0613", 0, window.Budget{Tokens: 32768 - 4096, Context: 32768, Reply: 4096, Source: window.SourceKnown}},
		{"reply larger than the window", map[string]any{"max_tokens": 9000}, "gpt-4", 0, window.Budget{Tokens: -808, Context: 8192, Reply: 9000, Source: window.SourceKnown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, window.Resolve(tt.params, tt.model, tt.configured)); diff != "" {
				t.Errorf("Resolve (-want +got):\n%s", diff)
			}
		})
	}
}

var counters = token.NewCounters(0)

// words is a text of about n tokens.
func words(tag string, n int) string {
	return strings.TrimSpace(strings.Repeat(tag+" ", n))
}

// convo is a conversation of turns; each turn i asks, calls a tool (every
// other turn) and answers.
func convo(turns int, size int) []llm.Message {
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: "You are a careful assistant."}}
	for i := range turns {
		msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("question %d: %s", i, words("ask", size))})
		if i%2 == 0 {
			id := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Type: "function", Function: llm.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}}},
				llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: words("result", size)})
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: fmt.Sprintf("answer %d: %s", i, words("said", size))})
	}
	return msgs
}

// check asserts the invariants of a fitted request.
func check(t *testing.T, c *token.Counter, before, after []llm.Message, budget int) {
	t.Helper()
	if n := c.Messages(after); n > budget {
		t.Errorf("the fitted request counts %d tokens, more than the budget of %d", n, budget)
	}
	if before[0].Role == llm.RoleSystem && !cmp.Equal(after[0], before[0]) {
		t.Errorf("the system message changed: %+v", after[0])
	}
	last := func(ms []llm.Message) int {
		for i := len(ms) - 1; i >= 0; i-- {
			if ms[i].Role == llm.RoleUser {
				return i
			}
		}
		return -1
	}
	bi, ai := last(before), last(after)
	if diff := cmp.Diff(before[bi:], after[ai:]); diff != "" {
		t.Errorf("the newest turn changed (-before +after):\n%s", diff)
	}
	calls := map[string]bool{}
	results := map[string]bool{}
	for _, m := range after {
		for _, tc := range m.ToolCalls {
			calls[tc.ID] = true
		}
		if m.Role == llm.RoleTool {
			if !calls[m.ToolCallID] {
				t.Errorf("tool result %q without its call before it", m.ToolCallID)
			}
			results[m.ToolCallID] = true
		}
	}
	for id := range calls {
		if !results[id] {
			t.Errorf("tool call %q without its result", id)
		}
	}
	// What is kept is the newest part of the conversation, in order.
	rest := after[1:]
	if !slices.EqualFunc(rest, before[len(before)-len(rest):], func(a, b llm.Message) bool { return cmp.Equal(a, b) }) {
		t.Errorf("the kept messages are not the newest ones in order")
	}
}

func TestFit(t *testing.T) {
	c := counters.For("gpt-4o")
	tests := []struct {
		name    string
		msgs    []llm.Message
		budget  int
		drops   bool
		wantErr bool
	}{
		{name: "under budget: nothing dropped", msgs: convo(3, 10), budget: 4000},
		{name: "oldest turns dropped", msgs: convo(20, 30), budget: 800, drops: true},
		{name: "many small turns", msgs: convo(100, 3), budget: 300, drops: true},
		{name: "only the newest turn fits", msgs: convo(6, 40), budget: 140, drops: true},
		{name: "newest turn too big", msgs: convo(4, 200), budget: 100, wantErr: true},
		{name: "no system message", msgs: convo(10, 30)[1:], budget: 400, drops: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: tt.budget, Source: window.SourceAgent}, MaxToolResultChars: -1})
			before := slices.Clone(tt.msgs)
			req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(tt.msgs)}
			err := f.Fit(context.Background(), req)
			if tt.wantErr {
				if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "context window") {
					t.Fatalf("Fit: %v, want a fault.Invalid context window error", err)
				}
				if !cmp.Equal(req.Messages, before) {
					t.Errorf("a request that cannot fit was changed")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			check(t, c, before, req.Messages, tt.budget)
			r := f.Report()
			users := func(ms []llm.Message) int {
				return len(slices.DeleteFunc(slices.Clone(ms), func(m llm.Message) bool { return m.Role != llm.RoleUser }))
			}
			wantTurns := users(before) - users(req.Messages)
			if r.DroppedTurns != wantTurns || r.DroppedMessages != len(before)-len(req.Messages) {
				t.Errorf("report: %d turns, %d messages dropped; want %d turns, %d messages", r.DroppedTurns, r.DroppedMessages, wantTurns, len(before)-len(req.Messages))
			}
			if (wantTurns > 0) != tt.drops {
				t.Errorf("%d turns dropped, want some: %v", wantTurns, tt.drops)
			}
			if r.Tokens != c.Request(req) {
				t.Errorf("report: %d tokens, the request counts %d", r.Tokens, c.Request(req))
			}
		})
	}
}

// Messages the agent's loop added after the newest user message (tool calls
// and results of this turn) are never dropped; older turns go as they pile
// up, step after step.
func TestFitLoopSteps(t *testing.T) {
	c := counters.For("gpt-4o")
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 1200, Source: window.SourceAgent}, MaxToolResultChars: -1})
	req := &llm.Request{Model: "gpt-4o", Messages: convo(8, 30)}
	req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: "the newest question"})
	for step := range 6 {
		before := slices.Clone(req.Messages)
		if err := f.Fit(context.Background(), req); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		check(t, c, before, req.Messages, 1200)
		id := fmt.Sprintf("step_%d", step)
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Type: "function", Function: llm.FunctionCall{Name: "lookup", Arguments: "{}"}}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: words("found", 60)})
	}
	if r := f.Report(); r.DroppedTurns == 0 {
		t.Errorf("no turn dropped as the results piled up: %+v", r)
	}
	// Past the point where this turn alone fits, the error is clear.
	for i := range 20 {
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: fmt.Sprint("more_", i), Function: llm.FunctionCall{Name: "lookup", Arguments: "{}"}}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: fmt.Sprint("more_", i), Content: words("found", 60)})
	}
	if err := f.Fit(context.Background(), req); !fault.Is(err, fault.Invalid) {
		t.Errorf("Fit of a turn larger than the budget: %v, want fault.Invalid", err)
	}
}

// The question a run answers stays with all that follows it, though the
// flow added a user message after it (a handoff's note to the agent it hands
// over to): the agent answering must see what it is asked. Older turns go.
func TestFitKeepsTheQuestion(t *testing.T) {
	c := counters.For("gpt-4o")
	msgs := convo(6, 30)
	question := llm.Message{Role: llm.RoleUser, Content: "the question: " + words("ask", 120), Question: true}
	msgs = append(msgs, question,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "h1", Type: "function", Function: llm.FunctionCall{Name: "lc_transfer_to_b", Arguments: "{}"}}}},
		llm.Message{Role: llm.RoleTool, ToolCallID: "h1", Content: "Transferred to b."},
		llm.Message{Role: llm.RoleUser, Content: "The agent \"a\" handed this conversation over to you. Continue it from here."})
	budget := c.Messages(msgs[len(msgs)-4:]) + c.Messages(msgs[:1]) + 50
	req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: budget, Source: window.SourceAgent}, MaxToolResultChars: -1})
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(msgs[len(msgs)-4:], req.Messages[1:]); diff != "" {
		t.Errorf("kept after the system message (-want +got):\n%s", diff)
	}
	if r := f.Report(); r.DroppedTurns != 6 {
		t.Errorf("dropped %d turns, want the 6 before the question", r.DroppedTurns)
	}

	// Too little room for the question and what follows: nothing is sent.
	req = &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
	f = window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: budget - 100, Source: window.SourceAgent}, MaxToolResultChars: -1})
	if err := f.Fit(context.Background(), req); !fault.Is(err, fault.Invalid) {
		t.Errorf("Fit without room for the question: %v, want fault.Invalid", err)
	}
}

// A tool result whose call is in a dropped turn goes with it even when the
// conversation is not shaped in turns (a client's history).
func TestFitOrphans(t *testing.T) {
	c := counters.For("gpt-4o")
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: "sys"},
		{Role: llm.RoleUser, Content: words("old", 200)},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "a", Function: llm.FunctionCall{Name: "f", Arguments: "{}"}}, {ID: "b", Function: llm.FunctionCall{Name: "f", Arguments: "{}"}}}},
		{Role: llm.RoleTool, ToolCallID: "a", Content: "ra"},
		// b's result is missing: the call must go, and a's result with it.
		{Role: llm.RoleAssistant, Content: "mid"},
		{Role: llm.RoleUser, Content: "q2"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c", Function: llm.FunctionCall{Name: "f", Arguments: "{}"}}}},
		{Role: llm.RoleTool, ToolCallID: "c", Content: "rc"},
		{Role: llm.RoleTool, ToolCallID: "zzz", Content: "stray"},
		{Role: llm.RoleAssistant, Content: "a2"},
		{Role: llm.RoleUser, Content: "newest"},
	}
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 100, Source: window.SourceAgent}, MaxToolResultChars: -1})
	req := &llm.Request{Messages: slices.Clone(msgs)}
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		got = append(got, string(m.Role)+":"+m.Content+m.ToolCallID)
	}
	want := []string{"system:sys", "user:q2", "assistant:", "tool:rcc", "assistant:a2", "user:newest"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestToolResultCut(t *testing.T) {
	c := counters.For("gpt-4o")
	long := strings.Repeat("é", 300)
	msgs := []llm.Message{
		{Role: llm.RoleUser, Content: "q"},
		{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Function: llm.FunctionCall{Name: "f"}}}},
		{Role: llm.RoleTool, ToolCallID: "1", Content: long, Parts: []llm.Part{{Type: llm.PartText, Text: long}, {Type: llm.PartImage, Data: "AAAA"}}},
		{Role: llm.RoleUser, Content: long}, // only tool results are cut
	}
	shared := msgs[2].Parts
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 100000, Source: window.SourceAgent}, MaxToolResultChars: 100})
	req := &llm.Request{Messages: msgs}
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é", 100) + "\n\n[… truncated by Relay: 300 characters, more than the limit of 100 (agents.maxToolResultChars) …]"
	if got := req.Messages[2].Content; got != want {
		t.Errorf("cut result:\n%q\nwant\n%q", got, want)
	}
	if got := req.Messages[2].Parts[0].Text; got != want {
		t.Errorf("cut text part: %q", got)
	}
	if shared[0].Text != long {
		t.Errorf("the caller's parts were changed")
	}
	if req.Messages[3].Content != long {
		t.Errorf("a user message was cut")
	}
	// Fitting again (the next step of the loop) leaves a cut result as it is.
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got := req.Messages[2].Content; got != want {
		t.Errorf("cut twice: %q", got)
	}
	if r := f.Report(); r.TruncatedToolResults != 1 {
		t.Errorf("report: %d truncated, want 1", r.TruncatedToolResults)
	}
}

func TestDefaultToolResultChars(t *testing.T) {
	for budget, want := range map[int]int{2000: 2400, 123904: 148684, 1043480: 400000, 0: 400000} {
		if got := window.DefaultToolResultChars(budget); got != want {
			t.Errorf("DefaultToolResultChars(%d) = %d, want %d", budget, got, want)
		}
	}
}

func TestNoRoomForReply(t *testing.T) {
	b := window.Resolve(map[string]any{"max_tokens": 9000}, "gpt-4", 0)
	f := window.New(window.Options{Counter: counters.For("gpt-4"), Budget: b})
	err := f.Fit(context.Background(), &llm.Request{Model: "gpt-4", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "max_tokens") {
		t.Errorf("Fit: %v, want fault.Invalid naming max_tokens", err)
	}
}

// The turns dropped by the first fit are summarised into the system message,
// once; the summary's room is kept in the budget.
func TestFitSummarizes(t *testing.T) {
	c := counters.For("gpt-4o")
	for _, withSystem := range []bool{true, false} {
		t.Run(fmt.Sprint("system message: ", withSystem), func(t *testing.T) {
			msgs := convo(12, 30)
			if !withSystem {
				msgs = msgs[1:]
			}
			var calls [][]llm.Message
			f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 900, Source: window.SourceAgent}, MaxToolResultChars: -1, SummaryTokens: 100,
				Summarize: func(_ context.Context, dropped []llm.Message) (string, error) {
					calls = append(calls, dropped)
					return fmt.Sprintf("  The user asked %d questions about lookups.  ", len(dropped)), nil
				}})
			req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
			if err := f.Fit(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if len(calls) != 1 {
				t.Fatalf("Summarize called %d times", len(calls))
			}
			kept := len(req.Messages) - 1 // the system message
			if diff := cmp.Diff(msgs[len(msgs)-kept:], req.Messages[1:]); diff != "" {
				t.Errorf("kept messages (-want +got):\n%s", diff)
			}
			first := 0
			if withSystem {
				first = 1
			}
			if diff := cmp.Diff(msgs[first:len(msgs)-kept], calls[0]); diff != "" {
				t.Errorf("summarised messages (-dropped +got):\n%s", diff)
			}
			want := fmt.Sprintf("%s\nThe user asked %d questions about lookups.", window.SummaryHeader, len(calls[0]))
			if withSystem {
				want = msgs[0].Content + "\n\n" + want
			}
			if sys := req.Messages[0]; sys.Role != llm.RoleSystem || sys.Content != want {
				t.Errorf("system message %q, want %q", sys.Content, want)
			}
			if n := c.Request(req); n > 900 {
				t.Errorf("%d tokens, more than the budget", n)
			}
			r := f.Report()
			if r.SummarizedMessages != len(calls[0]) || r.Tokens != c.Request(req) || !strings.Contains(r.Summary(), fmt.Sprintf("summarized_messages=%d", len(calls[0]))) {
				t.Errorf("report %+v", r)
			}
			// The loop's next steps drop without summarising again.
			moreSteps(t, f, req, 4)
			if len(calls) != 1 || !strings.Contains(req.Messages[0].Content, window.SummaryHeader) {
				t.Errorf("after more steps: %d summaries, system message %q", len(calls), req.Messages[0].Content)
			}
		})
	}
}

// A run summarises when its request is built, or never: when the request as
// built fits, the turns dropped later in the run, as tool results pile up,
// are dropped without a summary, and the system message stays as it was.
func TestFitSummarizesOnlyTheBuiltRequest(t *testing.T) {
	c := counters.For("gpt-4o")
	calls := 0
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 900, Source: window.SourceAgent}, MaxToolResultChars: -1, SummaryTokens: 100,
		Summarize: func(context.Context, []llm.Message) (string, error) {
			calls++
			return "A summary.", nil
		}})
	msgs := convo(6, 30)
	req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(req.Messages) != len(msgs) {
		t.Fatalf("the request as built fits, yet %d of %d messages are kept", len(req.Messages), len(msgs))
	}
	system := req.Messages[0].Content
	moreSteps(t, f, req, 8)
	r := f.Report()
	if r.DroppedTurns == 0 {
		t.Fatalf("the tool results were to push turns out; report %+v", r)
	}
	if calls != 0 || req.Messages[0].Content != system || r.SummarizedMessages != 0 {
		t.Errorf("after turns dropped mid-run: %d summaries, system message %q, report %+v", calls, req.Messages[0].Content, r)
	}
	if n := c.Request(req); n > 900 {
		t.Errorf("%d tokens, more than the budget", n)
	}
}

// moreSteps adds n steps of the agent loop to req, each a tool call and its
// result, fitting req after each as a run does.
func moreSteps(t *testing.T, f *window.Fitter, req *llm.Request, n int) {
	t.Helper()
	for i := range n {
		id := fmt.Sprint("more_", i)
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: id, Function: llm.FunctionCall{Name: "lookup", Arguments: "{}"}}}},
			llm.Message{Role: llm.RoleTool, ToolCallID: id, Content: words("found", 40)})
		if err := f.Fit(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
}

// A summary that does not fit beside the newest turn, with no turn left to
// drop for it, is left out: the request that fits without it is sent.
func TestFitSummaryWithoutRoom(t *testing.T) {
	c := counters.For("gpt-4o")
	msgs := convo(2, 20)
	msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: "the question: " + words("ask", 150), Question: true})
	newest := c.Messages([]llm.Message{msgs[0], msgs[len(msgs)-1]})
	req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: newest + 10, Source: window.SourceAgent}, MaxToolResultChars: -1,
		SummaryTokens: 5, Summarize: func(context.Context, []llm.Message) (string, error) { return words("summary", 40), nil }})
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]llm.Message{msgs[0], msgs[len(msgs)-1]}, req.Messages); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
	if r := f.Report(); r.SummarizedMessages != 0 || !strings.Contains(r.SummaryError, "does not fit") {
		t.Errorf("report %+v, want no summary and why", r)
	}
}

// A summary that fails leaves the turns dropped without one, and says why.
func TestFitSummaryFails(t *testing.T) {
	c := counters.For("gpt-4o")
	f := window.New(window.Options{Counter: c, Budget: window.Budget{Tokens: 600, Source: window.SourceAgent}, MaxToolResultChars: -1, SummaryTokens: 100,
		Summarize: func(context.Context, []llm.Message) (string, error) {
			return "", errors.New("summary model unavailable")
		}})
	msgs := convo(10, 30)
	req := &llm.Request{Model: "gpt-4o", Messages: slices.Clone(msgs)}
	if err := f.Fit(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	check(t, c, msgs, req.Messages, 600)
	if r := f.Report(); r.SummaryError != "summary model unavailable" || r.SummarizedMessages != 0 || !strings.Contains(r.Summary(), `summary_error="summary model unavailable"`) {
		t.Errorf("report %+v", r)
	}
}
