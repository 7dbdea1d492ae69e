package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/anthropic"
	"github.com/relay-ai/relay/internal/llm/google"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/run/runtest"
	"github.com/relay-ai/relay/internal/token"
)

// team is the API over a runtest.Team and a key of its user.
type team struct {
	srv *httptest.Server
	key string
}

func newTeam(t *testing.T, specs map[string]agent.Spec, answer func(who string, req *llm.Request) llmtest.Turn) *team {
	t.Helper()
	return serveTeam(t, runtest.NewTeam(t, specs, answer))
}

// serveTeam is the API over tm, which a test may have changed first.
func serveTeam(t *testing.T, tm *runtest.Team) *team {
	t.Helper()
	_, key, err := tm.Auth.CreateKey(context.Background(), tm.User.ID, "test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(newAPI(t, httpapi.Options{Auth: tm.Auth, Agents: tm.Agents, Runs: tm.Runs, MaxBodyBytes: 1 << 20}))
	t.Cleanup(srv.Close)
	return &team{srv: srv, key: key}
}

// post sends body to path and returns the status and the whole answer.
func (tm *team) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	code, _, out := tm.send(t, "POST", path, strings.NewReader(body))
	return code, out
}

// send makes a request as the team's user and returns the status, headers
// and whole answer.
func (tm *team) send(t *testing.T, method, path string, body io.Reader) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, tm.srv.URL+path, body)
	req.Header.Set("Authorization", "Bearer "+tm.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// streamedContent puts together the content of a streamed completion's
// chunks.
func streamedContent(t *testing.T, out string) string {
	t.Helper()
	var streamed strings.Builder
	for _, line := range strings.Split(out, "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct{ Delta struct{ Content string } } `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if len(c.Choices) > 0 {
			streamed.WriteString(c.Choices[0].Delta.Content)
		}
	}
	return streamed.String()
}

// With hide_sequential_outputs and a last group of agents running side by
// side, a streamed /v1 answer is the same text as the answer without
// streaming: the saved one.
func TestV1HiddenOutputsStreamTheSavedAnswer(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{
		"a": {HideSequentialOutputs: true, Edges: []agent.Edge{{From: agent.One("a"), To: agent.IDs{List: []string{"b", "c"}}, EdgeType: agent.EdgeDirect}}},
		"b": {}, "c": {},
	}, func(who string, _ *llm.Request) llmtest.Turn {
		switch who {
		case "a":
			return llmtest.Turn{Text: []string{"draft"}}
		case "b":
			return llmtest.Turn{Text: []string{"B1 ", "B2 ", "B3 ", "B4"}, Delay: 40 * time.Millisecond}
		}
		return llmtest.Turn{Text: []string{"C1 ", "C2"}, Delay: 50 * time.Millisecond}
	})
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"go"}]}`)
	var full struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if err := json.Unmarshal([]byte(out), &full); err != nil || code != 200 || len(full.Choices) != 1 || full.Choices[0].Message.Content == "" {
		t.Fatalf("answer: %d %s", code, out)
	}
	code, out = tm.post(t, "/v1/chat/completions", `{"model":"a","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	streamed := streamedContent(t, out)
	if code != 200 || streamed != full.Choices[0].Message.Content {
		t.Errorf("streamed %q (%d); want the answer's %q", streamed, code, full.Choices[0].Message.Content)
	}
	if strings.Contains(streamed, "draft") {
		t.Errorf("the hidden agent's text was streamed: %q", streamed)
	}
}

// A streamed /v1 answer put together is the answer's text: where a new text
// part begins (after the agent's tool call, or another agent's text) it sends
// the blank line that joins the parts of the saved answer.
func TestV1StreamedTextIsTheAnswersText(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{
		"a": {Edges: []agent.Edge{{From: agent.One("a"), To: agent.One("b"), EdgeType: agent.EdgeDirect}}},
		"b": {},
	}, func(who string, req *llm.Request) llmtest.Turn {
		if who == "b" {
			return llmtest.Turn{Text: []string{"B ", "says so."}}
		}
		// The call of a tool it does not have comes back as text, with its error.
		if last := req.Messages[len(req.Messages)-1]; strings.Contains(last.Content, "[Error from nothing_here]") {
			return llmtest.Turn{Text: []string{"Checked."}}
		}
		return llmtest.Turn{Text: []string{"Let me ", "check."}, ToolCalls: []llm.ToolCall{{ID: "c1", Function: llm.FunctionCall{Name: "nothing_here", Arguments: "{}"}}}}
	})
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"go"}]}`)
	var full struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	if err := json.Unmarshal([]byte(out), &full); err != nil || code != 200 || len(full.Choices) != 1 {
		t.Fatalf("answer: %d %s", code, out)
	}
	if want := "Let me check.\n\nChecked.\n\nB says so."; full.Choices[0].Message.Content != want {
		t.Fatalf("answer %q, want %q", full.Choices[0].Message.Content, want)
	}
	code, out = tm.post(t, "/v1/chat/completions", `{"model":"a","stream":true,"messages":[{"role":"user","content":"go"}]}`)
	streamed := streamedContent(t, out)
	if code != 200 || streamed != full.Choices[0].Message.Content {
		t.Errorf("streamed %q (%d); want the answer's %q", streamed, code, full.Choices[0].Message.Content)
	}
}

// An answer the model's token limit cut ends with finish_reason "length",
// streamed or not, as OpenAI's does; one whose last step stopped, "stop".
func TestV1FinishReasonLength(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}, "b": {}}, func(who string, _ *llm.Request) llmtest.Turn {
		if who == "b" {
			return llmtest.Turn{Text: []string{"Whole."}}
		}
		return llmtest.Turn{Text: []string{"Cut ", "off"}, FinishReason: llm.FinishLength}
	})
	for _, c := range []struct{ model, want string }{{"a", "length"}, {"b", "stop"}} {
		code, out := tm.post(t, "/v1/chat/completions", `{"model":"`+c.model+`","messages":[{"role":"user","content":"go"}]}`)
		var full struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(out), &full); err != nil || code != 200 || len(full.Choices) != 1 {
			t.Fatalf("answer: %d %s", code, out)
		}
		if got := full.Choices[0].FinishReason; got != c.want {
			t.Errorf("%s: finish_reason %q, want %q", c.model, got, c.want)
		}
		code, out = tm.post(t, "/v1/chat/completions", `{"model":"`+c.model+`","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"go"}]}`)
		var reasons []string
		for _, line := range strings.Split(out, "\n") {
			d, ok := strings.CutPrefix(line, "data: ")
			if !ok || d == "[DONE]" {
				continue
			}
			var ch struct {
				Choices []struct {
					FinishReason *string `json:"finish_reason"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(d), &ch); err != nil {
				t.Fatalf("chunk %s: %v", d, err)
			}
			if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != nil {
				reasons = append(reasons, *ch.Choices[0].FinishReason)
			}
		}
		if code != 200 || len(reasons) != 1 || reasons[0] != c.want {
			t.Errorf("%s streamed: finish reasons %q (%d), want one %q", c.model, reasons, code, c.want)
		}
	}
}

// The reply's maximum a client sends (max_tokens, max_completion_tokens)
// sizes the context window's budget in place of the agent's: a long question
// fits beside a short reply, and a reply that leaves no room is refused as
// OpenAI refuses it.
func TestV1MaxTokensSizesTheWindow(t *testing.T) {
	rt := runtest.NewTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	rt.Runs.Prep.Window = &run.Window{Counters: token.NewCounters(0)} // model "m": 18,000 tokens, 4,096 kept for the reply
	tm := serveTeam(t, rt)
	long := strings.Repeat("ask ", 12500) // about 15,000 tokens
	for _, c := range []struct {
		params string
		code   int
	}{{``, 400}, {`"max_tokens":10,`, 200}, {`"max_completion_tokens":10,`, 200}, {`"max_tokens":20000,`, 400}, {`"stream":true,`, 400}} {
		code, out := tm.post(t, "/v1/chat/completions", `{"model":"a",`+c.params+`"messages":[{"role":"user","content":"`+long+`"}]}`)
		if code != c.code || (code == 400 && !strings.Contains(out, `"code":"context_length_exceeded"`)) {
			t.Errorf("%s: %d %.300s, want %d", c.params, code, out, c.code)
		}
	}
}

// A streamed answer that fails before anything of it was streamed is
// answered as without streaming, with its status; one whose model takes long
// to begin has its stream begin meanwhile, and one that fails midway ends
// its stream with the error.
func TestV1StreamBeginsLazily(t *testing.T) {
	release := make(chan struct{})
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(_ string, req *llm.Request) llmtest.Turn {
		switch text := req.Messages[len(req.Messages)-1].Content; text {
		case "fail":
			return llmtest.Turn{Err: errors.New("the provider broke")}
		case "fail midway":
			return llmtest.Turn{Text: []string{"Partly "}, Err: errors.New("the provider broke")}
		case "slow":
			<-release
		}
		return llmtest.Turn{Text: []string{"Done."}}
	})
	stream := func(text string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", tm.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"a","stream":true,"messages":[{"role":"user","content":"`+text+`"}]}`))
		req.Header.Set("Authorization", "Bearer "+tm.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := stream("fail")
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 502 || resp.Header.Get("X-Should-Retry") != "false" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") ||
		!strings.Contains(string(body), `"code":"run_failed"`) {
		t.Errorf("a stream that failed at once: %d %s %s", resp.StatusCode, resp.Header, body)
	}
	resp = stream("fail midway")
	body, _ = io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"content":"Partly "`) || !strings.Contains(string(body), `"code":"run_failed"`) {
		t.Errorf("a stream that failed midway: %d %s", resp.StatusCode, body)
	}
	// The headers and the role's chunk come while the model has not begun.
	resp = stream("slow")
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	close(release)
	if resp.StatusCode != 200 || err != nil || !strings.Contains(first, `"role":"assistant"`) {
		t.Errorf("a slow model's stream: %d, first line %q (%v)", resp.StatusCode, first, err)
	}
}

// What Relay cannot honour is refused, naming the field, unless it asks for
// nothing: null, or OpenAI's default, which clients send unasked.
func TestV1UnsupportedFieldsAskingNothing(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a",`+msgs+`,"frequency_penalty":0,"presence_penalty":0.0,"logprobs":false,"top_logprobs":null,"logit_bias":{},"modalities":["text"],"service_tier":"auto"}`)
	if code != 200 {
		t.Errorf("defaults: %d %s", code, out)
	}
	for _, field := range []string{`"frequency_penalty":0.5`, `"presence_penalty":-1`, `"logprobs":true`, `"top_logprobs":2`, `"logit_bias":{"50256":-100}`, `"modalities":["text","audio"]`, `"service_tier":"flex"`} {
		name := strings.Trim(strings.SplitN(field, ":", 2)[0], `"`)
		code, out := tm.post(t, "/v1/chat/completions", `{"model":"a",`+msgs+`,`+field+`}`)
		if code != 400 || !strings.Contains(out, `"param":"`+name+`"`) {
			t.Errorf("%s: %d %s, want a 400 naming %s", field, code, out, name)
		}
	}
}

// A last user message with only an image is refused for what it lacks, and
// the last message not being the user's for that.
func TestV1LastMessageErrors(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	image := `{"model":"a","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
	if code, out := tm.post(t, "/v1/chat/completions", image); code != 400 || !strings.Contains(out, "needs text") {
		t.Errorf("an image-only question: %d %s", code, out)
	}
	last := `{"model":"a","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`
	if code, out := tm.post(t, "/v1/chat/completions", last); code != 400 || !strings.Contains(out, "the last message must be the user's") {
		t.Errorf("an assistant message last: %d %s", code, out)
	}
	// Parts Relay cannot pass on are refused, not dropped.
	for _, part := range []string{`{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}`, `{"type":"file","file":{"file_id":"f"}}`, `{"type":"bogus"}`} {
		body := `{"model":"a","messages":[{"role":"user","content":[{"type":"text","text":"hello"},` + part + `]}]}`
		if code, out := tm.post(t, "/v1/chat/completions", body); code != 400 || !strings.Contains(out, "are not supported") || !strings.Contains(out, `"param":"messages[0].content"`) {
			t.Errorf("a %s part: %d %s", part, code, out)
		}
	}
	// An image anywhere but in a user message would reach no model.
	img := `{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}`
	for _, history := range []string{
		`{"role":"assistant","content":[{"type":"text","text":"look"},` + img + `]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a chart"},` + img + `]}`,
	} {
		body := `{"model":"a","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"hi"},` + history + `,{"role":"user","content":"and?"}]}`
		if code, out := tm.post(t, "/v1/chat/completions", body); code != 400 || !strings.Contains(out, "user messages only") || !strings.Contains(out, `"param":"messages[`) {
			t.Errorf("an image in %s: %d %s", history, code, out)
		}
	}
	refusal := `{"model":"a","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"refusal","refusal":"I cannot."}]},{"role":"user","content":"why?"}]}`
	if code, out := tm.post(t, "/v1/chat/completions", refusal); code != 200 {
		t.Errorf("an assistant's refusal part in the history: %d %s", code, out)
	}
}

// A client's tools, tool_choice and parameters reach the model: its
// parameters over the agent's (max_tokens replacing max_completion_tokens),
// a forced choice for the first turn; the call of a client tool ends the
// answer with finish_reason tool_calls, streamed as a tool_calls delta; the
// client's tool result is answered with no user message after it.
func TestV1ClientToolsReachTheModel(t *testing.T) {
	type seen struct {
		tools              []string
		choice, function   string
		params             map[string]any
		lastRole           llm.Role
		lastCallID, result string
	}
	var got []seen
	tm := newTeam(t, map[string]agent.Spec{"a": {ModelParameters: map[string]any{"temperature": 0.9, "max_completion_tokens": 100}}},
		func(_ string, req *llm.Request) llmtest.Turn {
			s := seen{choice: req.ToolChoice, function: req.ToolFunction, params: req.Params}
			for _, tl := range req.Tools {
				s.tools = append(s.tools, tl.Function.Name)
			}
			last := req.Messages[len(req.Messages)-1]
			s.lastRole, s.lastCallID, s.result = last.Role, last.ToolCallID, last.Content
			got = append(got, s)
			if last.Role == llm.RoleTool {
				return llmtest.Turn{Text: []string{"It is sunny."}}
			}
			return llmtest.Turn{ToolCalls: []llm.ToolCall{{ID: "call_w", Function: llm.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}
		})
	tools := `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"Weather?"}],`+tools+`,
		"tool_choice":{"type":"function","function":{"name":"get_weather"}},"temperature":0.1,"max_tokens":50,"user":"u-1","store":false}`)
	var res struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   *string
				ToolCalls []struct {
					ID       string
					Type     string
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || code != 200 || len(res.Choices) != 1 {
		t.Fatalf("answer: %d %s", code, out)
	}
	c := res.Choices[0]
	if c.FinishReason != "tool_calls" || c.Message.Content != nil || len(c.Message.ToolCalls) != 1 || c.Message.ToolCalls[0].ID != "call_w" || c.Message.ToolCalls[0].Type != "function" || c.Message.ToolCalls[0].Function.Arguments != `{"city":"Paris"}` {
		t.Errorf("answer %s", out)
	}
	if strings.Contains(out, `"name":""`) { // no text: no agent wrote it
		t.Errorf("the answer names no one: %s", out)
	}
	if len(got) != 1 || strings.Join(got[0].tools, ",") != "get_weather" || got[0].function != "get_weather" ||
		got[0].params["temperature"] != 0.1 || got[0].params["max_tokens"] != 50 || got[0].params["max_completion_tokens"] != nil {
		t.Errorf("the model saw %+v", got)
	}

	// Streamed: the call as a tool_calls delta, then finish_reason.
	got = nil
	code, out = tm.post(t, "/v1/chat/completions", `{"model":"a","stream":true,"messages":[{"role":"user","content":"Weather?"}],`+tools+`}`)
	if code != 200 || !strings.Contains(out, `"delta":{"tool_calls":[{"function":{"arguments":"{\"city\":\"Paris\"}","name":"get_weather"},"id":"call_w","index":0,"type":"function"}]}`) ||
		!strings.Contains(out, `"finish_reason":"tool_calls"`) || got[0].choice != "auto" {
		t.Errorf("stream: %d %s", code, out)
	}

	// The tool result continues: the model's last message is the tool's.
	got = nil
	code, out = tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"Weather?"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"call_w","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
		{"role":"tool","tool_call_id":"call_w","content":"Sunny"}],`+tools+`}`)
	if code != 200 || !strings.Contains(out, `"content":"It is sunny."`) || !strings.Contains(out, `"finish_reason":"stop"`) {
		t.Errorf("continued: %d %s", code, out)
	}
	if len(got) != 1 || got[0].lastRole != llm.RoleTool || got[0].lastCallID != "call_w" || got[0].result != "Sunny" {
		t.Errorf("the model saw %+v", got)
	}
}

// A history in which a call of the assistant has no tool message right after
// it, or a tool message answers a call that is not of the assistant message
// just before it, is refused naming the call or the tool message, before any
// run: every provider refuses such a request, which would otherwise fail the
// run (502) for the client's mistake.
func TestV1UnansweredToolCalls(t *testing.T) {
	calls := 0
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn {
		calls++
		return llmtest.Turn{Text: []string{"ok"}}
	})
	tools := `"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}]`
	call := func(id, name string) string {
		return `{"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":"{}"}}`
	}
	user := `{"role":"user","content":"hi"}`
	asst := func(calls ...string) string {
		return `{"role":"assistant","content":null,"tool_calls":[` + strings.Join(calls, ",") + `]}`
	}
	result := func(id string) string { return `{"role":"tool","tool_call_id":"` + id + `","content":"r"}` }
	for _, tc := range []struct {
		name     string
		messages []string
		param    string
	}{
		{"one of two calls answered", []string{user, asst(call("c1", "f"), call("c2", "g")), result("c1")}, "messages[1].tool_calls[1]"},
		{"a call unanswered before the next question", []string{user, asst(call("c1", "f")), `{"role":"user","content":"again"}`}, "messages[1].tool_calls[0]"},
		{"a result after a later question", []string{user, asst(call("c1", "f")), user, result("c1")}, "messages[1].tool_calls[0]"},
		{"a result of an older assistant message", []string{user, asst(call("c1", "f")), result("c1"), asst(call("c2", "g")), result("c2"), result("c1")}, "messages[5].tool_call_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls = 0
			code, out := tm.post(t, "/v1/chat/completions", `{"model":"a",`+tools+`,"messages":[`+strings.Join(tc.messages, ",")+`]}`)
			var res struct {
				Error struct{ Type, Param string }
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 400 || res.Error.Type != "invalid_request_error" || res.Error.Param != tc.param {
				t.Errorf("%d %s; want a 400 naming %s", code, out, tc.param)
			}
			if calls != 0 {
				t.Errorf("the model was asked %d times", calls)
			}
		})
	}
	// Every call answered right after its message, in any order: answered.
	ok := []string{user, asst(call("c1", "f"), call("c2", "g")), result("c2"), result("c1"), `{"role":"assistant","content":"done"}`, `{"role":"user","content":"again"}`}
	if code, out := tm.post(t, "/v1/chat/completions", `{"model":"a",`+tools+`,"messages":[`+strings.Join(ok, ",")+`]}`); code != 200 {
		t.Errorf("every call answered: %d %s", code, out)
	}
}

// A request that ends with tool results titles its conversation with the
// first words of its last question, as one ending with the question does:
// at most 8 words and 60 characters (docs/api.md "Conversation titles").
func TestV1ToolResultsTitle(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	question := `{"role":"user","content":"what is the weather like today in the lovely city of San Francisco, please?"}`
	title := func(body string) string {
		t.Helper()
		if code, out := tm.post(t, "/v1/chat/completions", body); code != 200 {
			t.Fatalf("%d %s", code, out)
		}
		_, out := tm.get(t, "/api/conversations?limit=1")
		var res struct{ Data []struct{ Title string } }
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.Data) != 1 {
			t.Fatalf("conversations: %s", out)
		}
		return res.Data[0].Title
	}
	asked := title(`{"model":"a","messages":[` + question + `]}`)
	answered := title(`{"model":"a","tools":[{"type":"function","function":{"name":"f"}}],"messages":[` + question + `,
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"72F"}]}`)
	if want := "what is the weather like today in the…"; asked != want || answered != want {
		t.Errorf("titles %q (the question last) and %q (tool results last), want %q", asked, answered, want)
	}
}

// get reads path and returns the status and the whole answer.
func (tm *team) get(t *testing.T, path string) (int, string) {
	t.Helper()
	code, _, out := tm.send(t, "GET", path, nil)
	return code, out
}

// A completion is read again by its id: the same answer as the POST gave,
// and with ?stream=true the same chunks' text; an id of no run is 404.
func TestV1StoredCompletion(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: []string{"one ", "two"}}
	})
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"go"}]}`)
	type completion struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	var posted completion
	if err := json.Unmarshal([]byte(out), &posted); err != nil || code != 200 || !strings.HasPrefix(posted.ID, "chatcmpl-") {
		t.Fatalf("answer: %d %s", code, out)
	}
	code, out = tm.get(t, "/v1/chat/completions/"+posted.ID)
	var got completion
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 200 {
		t.Fatalf("GET: %d %s", code, out)
	}
	if got.ID != posted.ID || got.Object != "chat.completion" || got.Model != "a" || len(got.Choices) != 1 ||
		got.Choices[0].Message.Content != "one two" || got.Choices[0].FinishReason != "stop" || got.Usage != posted.Usage {
		t.Errorf("GET %s = %+v; want the POST's %+v", posted.ID, got, posted)
	}
	code, out = tm.get(t, "/v1/chat/completions/"+posted.ID+"?stream=true")
	var text strings.Builder
	done := false
	for _, line := range strings.Split(out, "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			done = true
			continue
		}
		var c struct {
			ID      string                                     `json:"id"`
			Choices []struct{ Delta struct{ Content string } } `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil || c.ID != posted.ID {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if len(c.Choices) > 0 {
			text.WriteString(c.Choices[0].Delta.Content)
		}
	}
	if code != 200 || text.String() != "one two" || !done {
		t.Errorf("GET ?stream=true: %d, text %q, [DONE] %v; want the answer streamed again", code, text.String(), done)
	}
	for _, id := range []string{"chatcmpl-nope", "nope", "chatcmpl-"} {
		if code, out := tm.get(t, "/v1/chat/completions/"+id); code != 404 || !strings.Contains(out, `"error"`) {
			t.Errorf("GET %s: %d %s; want 404 with an OpenAI error", id, code, out)
		}
	}
}

// A run aborted midway is not passed off as a finished answer: streaming, it
// ends with a relay_run_cancelled error; read again, it is a 409.
func TestV1AbortedRun(t *testing.T) {
	words := make([]string, 200)
	for i := range words {
		words[i] = "word "
	}
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn {
		return llmtest.Turn{Text: words, Delay: 20 * time.Millisecond}
	})
	req, _ := http.NewRequest("POST", tm.srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"a","stream":true,"messages":[{"role":"user","content":"talk"}]}`))
	req.Header.Set("Authorization", "Bearer "+tm.key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	var id, last string
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		last = line
		if id == "" {
			var chunk struct{ ID string }
			if err := json.Unmarshal([]byte(line), &chunk); err != nil {
				t.Fatalf("first chunk %q: %v", line, err)
			}
			id = chunk.ID
			runID := "run_" + strings.TrimPrefix(id, "chatcmpl-")
			if code, out := tm.post(t, "/api/runs/"+runID+"/abort", ""); code != 200 {
				t.Fatalf("abort: %d %s", code, out)
			}
		}
	}
	if !strings.Contains(last, `"type":"relay_run_cancelled"`) {
		t.Errorf("the stream's last data line: %s; want a relay_run_cancelled error", last)
	}
	code, header, body := tm.send(t, "GET", "/v1/chat/completions/"+id, nil)
	if code != http.StatusConflict || header.Get("X-Should-Retry") != "false" || !strings.Contains(body, `"code":"run_cancelled"`) {
		t.Errorf("the aborted completion read again: %d %s", code, body)
	}
}

// checkedModel is a Team's model that checks what it is sent as another
// provider's client does (llm.ParamChecker).
type checkedModel struct {
	llm.Model
	llm.ParamChecker
}

// A client function's strict reaches the model as the client gave it (true,
// false; absent or null stays absent) and is written into the function of an
// OpenAI-compatible body. A provider with no strict mode (Anthropic, Google)
// refuses strict true with a 400 naming it, and takes false, which asks for
// nothing.
func TestV1ClientToolStrict(t *testing.T) {
	var seen []llm.FunctionTool
	record := func(_ string, req *llm.Request) llmtest.Turn {
		seen = req.Tools
		return llmtest.Turn{Text: []string{"ok"}}
	}
	tools := `"tools":[{"type":"function","function":{"name":"on","strict":true}},{"type":"function","function":{"name":"off","strict":false}},
		{"type":"function","function":{"name":"unset"}},{"type":"function","function":{"name":"null","strict":null}}]`
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, record)
	code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"hi"}],`+tools+`}`)
	if code != 200 {
		t.Fatalf("answer: %d %s", code, out)
	}
	strict := map[string]string{}
	for _, tl := range seen {
		strict[tl.Function.Name] = "absent"
		if s := tl.Function.Strict; s != nil {
			strict[tl.Function.Name] = strconv.FormatBool(*s)
		}
	}
	if diff := cmp.Diff(map[string]string{"on": "true", "off": "false", "unset": "absent", "null": "absent"}, strict); diff != "" {
		t.Errorf("the functions' strict as the model got them (-want +got):\n%s", diff)
	}
	body, err := openai.New(openai.Options{}).Body(&llm.Request{Model: "m", Tools: seen})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"name":"on","description":"","parameters":{"type":"object","properties":{}},"strict":true}`,
		`"name":"off","description":"","parameters":{"type":"object","properties":{}},"strict":false}`,
		`"name":"unset","description":"","parameters":{"type":"object","properties":{}}}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the OpenAI body lacks %s: %s", want, body)
		}
	}

	for name, checker := range map[string]llm.ParamChecker{"anthropic": anthropic.New(anthropic.Options{}), "google": google.New(google.Options{})} {
		rt := runtest.NewTeam(t, map[string]agent.Spec{"a": {}}, record)
		rt.Runs.Models = func(context.Context, string, string, string) (llm.Model, mcp.Family, error) {
			return checkedModel{rt.Model, checker}, mcp.FamilyOpenAI, nil
		}
		tm := serveTeam(t, rt)
		code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"hi"}],
			"tools":[{"type":"function","function":{"name":"off","strict":false}},{"type":"function","function":{"name":"on","strict":true}}]}`)
		if code != 400 || !strings.Contains(out, `"param":"tools[1].function.strict"`) || !strings.Contains(out, `"type":"invalid_request_error"`) {
			t.Errorf("%s, strict true: %d %s; want a 400 naming tools[1].function.strict", name, code, out)
		}
		if code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":[{"role":"user","content":"hi"}],
			"tools":[{"type":"function","function":{"name":"off","strict":false}}]}`); code != 200 {
			t.Errorf("%s, strict false: %d %s", name, code, out)
		}
	}
}

// A tool_choice that forces a call ("required", a named function) without
// tools (absent, null or []) is a 400 naming tool_choice, as OpenAI answers
// it; "none" and "auto" ask nothing of the client's functions and pass.
func TestV1ToolChoiceNeedsTools(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	for _, tools := range []string{``, `"tools":null,`, `"tools":[],`} {
		for _, choice := range []string{`"required"`, `{"type":"function","function":{"name":"get_weather"}}`} {
			body := `{"model":"a",` + tools + `"tool_choice":` + choice + `,"messages":[{"role":"user","content":"hi"}]}`
			code, out := tm.post(t, "/v1/chat/completions", body)
			var res struct {
				Error struct{ Type, Param string }
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil || code != 400 || res.Error.Type != "invalid_request_error" || res.Error.Param != "tool_choice" {
				t.Errorf("%s: %d %s; want a 400 naming tool_choice", body, code, out)
			}
		}
	}
	for _, choice := range []string{`"none"`, `"auto"`} {
		if code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","tool_choice":`+choice+`,"messages":[{"role":"user","content":"hi"}]}`); code != 200 {
			t.Errorf("tool_choice %s without tools: %d %s", choice, code, out)
		}
	}
	named := `{"model":"a","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}},"messages":[{"role":"user","content":"hi"}]}`
	if code, out := tm.post(t, "/v1/chat/completions", named); code != 400 || !strings.Contains(out, `"param":"tool_choice.function.name"`) {
		t.Errorf("a named function not among the tools: %d %s", code, out)
	}
}

// An unknown model is OpenAI's model_not_found, naming model, on
// /v1/chat/completions and /v1/models/{id} alike, with Relay's message.
func TestV1UnknownModel(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	type openAIError struct {
		Error struct {
			Message, Type string
			Param, Code   *string
		}
	}
	for _, c := range []struct{ method, path, body, message string }{
		{"POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"hi"}]}`, `agent "nope" not found`},
		{"GET", "/v1/models/nope", "", `the model "nope" does not exist or you do not have access to it`},
	} {
		code, _, out := tm.send(t, c.method, c.path, strings.NewReader(c.body))
		var e openAIError
		if err := json.Unmarshal([]byte(out), &e); err != nil || code != 404 || e.Error.Type != "not_found_error" || e.Error.Message != c.message ||
			e.Error.Param == nil || *e.Error.Param != "model" || e.Error.Code == nil || *e.Error.Code != "model_not_found" {
			t.Errorf("%s %s: %d %s; want 404 model_not_found naming model, %q", c.method, c.path, code, out, c.message)
		}
	}
}

// An image Relay cannot take is refused naming the part of the message that
// holds it (messages[i].content[j]), in param and message, never Relay's own
// images[k] fields; in an earlier user message too.
func TestV1ImageErrorsNameThePart(t *testing.T) {
	tm := newTeam(t, map[string]agent.Spec{"a": {}}, func(string, *llm.Request) llmtest.Turn { return llmtest.Turn{Text: []string{"ok"}} })
	text := `{"type":"text","text":"look"}`
	image := func(url string) string { return `{"type":"image_url","image_url":{"url":"` + url + `"}}` }
	good := image("data:image/png;base64,iVBORw0KGgo=")
	for _, c := range []struct{ name, messages, param, says string }{
		{"a media type other than an image's", `[{"role":"user","content":[` + text + `,` + image("data:text/plain;base64,aGVsbG8=") + `]}]`, "messages[0].content[1]", `media type \"text/plain\"`},
		{"data that is not base64", `[{"role":"user","content":[` + text + `,` + image("data:image/png;base64,not base64!") + `]}]`, "messages[0].content[1]", "base64"},
		{"the second image of two", `[{"role":"user","content":[` + good + `,` + text + `,` + image("data:image/bmp;base64,Qk0=") + `]}]`, "messages[0].content[2]", "image/png"},
		{"an earlier user message's", `[{"role":"user","content":[` + text + `,` + image("data:image/png;base64,%%%") + `]},{"role":"assistant","content":"a cat"},{"role":"user","content":"and?"}]`, "messages[0].content[1]", "base64"},
	} {
		code, out := tm.post(t, "/v1/chat/completions", `{"model":"a","messages":`+c.messages+`}`)
		if code != 400 || !strings.Contains(out, `"param":"`+c.param+`"`) || !strings.Contains(out, `"message":"invalid request: `+c.param+`: image_url.url: `) ||
			!strings.Contains(out, c.says) || strings.Contains(out, "images[") {
			t.Errorf("%s: %d %s; want a 400 naming %s", c.name, code, out, c.param)
		}
	}
}
