package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// v1Server is relay serve with aimock as the model and server-everything as
// the tool, and an agent "calc" that uses both.
func v1Server(t *testing.T) *server {
	s, _ := v1ServerMock(t)
	return s
}

// v1Fixtures are aimock's answers for the /v1 tests: 2+3 through the agent's
// own tool; the weather in Paris through a tool of the client's; and the
// sum and then the weather, the agent's tool first and the client's next.
const v1Fixtures = `{"fixtures":[
 {"match":{"userMessage":"2+3","hasToolResult":false},"response":{"toolCalls":[{"name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"userMessage":"2+3","hasToolResult":true},"response":{"content":"The sum is 5."}},
 {"match":{"userMessage":"weather in Paris","hasToolResult":false},"response":{"toolCalls":[{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]}},
 {"match":{"userMessage":"weather in Paris","hasToolResult":true},"response":{"content":"It is sunny in Paris."}},
 {"match":{"userMessage":"sum then weather","hasToolResult":false},"response":{"toolCalls":[{"id":"call_sum","name":"get-sum__mcp__everything","arguments":"{\"a\":2,\"b\":3}"}]}},
 {"match":{"toolCallId":"call_sum"},"response":{"toolCalls":[{"id":"call_w","name":"get_weather","arguments":"{\"city\":\"Rome\"}"}]}},
 {"match":{"toolCallId":"call_w"},"response":{"content":"5, and it rains in Rome."}}]}`

// v1ServerMock is v1Server with aimock's base URL, and an agent "claude" on
// the Anthropic endpoint, for what that provider cannot take.
func v1ServerMock(t *testing.T) (*server, string) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, v1Fixtures)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  cors_origins: ["https://app.example.com"]
endpoints:
  anthropic:
    apiKey: sk-ant-test
    baseURL: %s
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
mcpServers:
  everything:
    command: node
    args: [%q, stdio]
agents:
  - id: calc
    provider: mock
    model: gpt-4o
    tools: [get-sum__mcp__everything]
  - {id: claude, provider: anthropic, model: claude-sonnet-4-5}
`, filepath.Join(dir, "data"), mock, mock, everything))
	return startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}), mock
}

// TestOpenAIGoClient: the official openai-go SDK talks to /v1, streaming and not.
func TestOpenAIGoClient(t *testing.T) {
	s := v1Server(t)
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey))
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    "calc",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2+3?")},
	}
	res, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Choices) != 1 || res.Choices[0].Message.Content != "The sum is 5." || res.Choices[0].FinishReason != "stop" || res.Usage.TotalTokens == 0 {
		t.Errorf("completion %+v", res)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, params)
	acc := openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if len(acc.Choices) != 1 || acc.Choices[0].Message.Content != "The sum is 5." || acc.Choices[0].FinishReason != "stop" || acc.Usage.TotalTokens == 0 {
		t.Errorf("streamed completion %+v", acc.ChatCompletion)
	}
	models, err := client.Models.List(ctx)
	if err != nil || len(models.Data) != 2 || models.Data[0].ID != "calc" && models.Data[1].ID != "calc" {
		t.Errorf("models %+v %v", models, err)
	}
	if m, err := client.Models.Get(ctx, "calc"); err != nil || m.ID != "calc" || m.Object != "model" {
		t.Errorf("model calc: %+v %v", m, err)
	}
	var apiErr *openai.Error
	if _, err := client.Models.Get(ctx, "nope"); !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Type != "not_found_error" {
		t.Errorf("unknown model: %v; want a 404 in OpenAI's shape", err)
	}
	// An unknown agent is a clean 404 for the SDK.
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "nope", Messages: params.Messages})
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown agent: %v", err)
	}
}

// TestOpenAINodeSDK: the official openai npm SDK talks to /v1, streaming and not.
func TestOpenAINodeSDK(t *testing.T) {
	modules := mcptest.Peer(t, "PEER_NODE_MODULES")
	s := v1Server(t)
	script := filepath.Join(t.TempDir(), "client.mjs")
	if err := os.WriteFile(script, []byte(`
import OpenAI from "`+filepath.Join(modules, "openai", "index.mjs")+`";
const client = new OpenAI({ baseURL: process.env.RELAY_URL + "/v1", apiKey: process.env.RELAY_KEY });
const params = { model: "calc", messages: [{ role: "user", content: "What is 2+3?" }] };
const res = await client.chat.completions.create(params);
let text = "", finish = "", usage = null;
const stream = await client.chat.completions.create({ ...params, stream: true });
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
  finish = chunk.choices[0]?.finish_reason ?? finish;
  usage = chunk.usage ?? usage;
}
console.log(JSON.stringify({ plain: res.choices[0].message.content, plainFinish: res.choices[0].finish_reason, plainUsage: res.usage.total_tokens, text, finish, usage: usage?.total_tokens }));
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "RELAY_URL="+s.base, "RELAY_KEY="+testKey)
	cmd.Dir = filepath.Dir(modules) // so that "openai" resolves from the peers' node_modules
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, out)
	}
	got := strings.TrimSpace(string(out))
	for _, want := range []string{`"plain":"The sum is 5."`, `"plainFinish":"stop"`, `"text":"The sum is 5."`, `"finish":"stop"`} {
		if !strings.Contains(got, want) {
			t.Errorf("node client output lacks %s: %s", want, got)
		}
	}
	if strings.Contains(got, `"usage":null`) || strings.Contains(got, `"plainUsage":0`) {
		t.Errorf("usage missing: %s", got)
	}
}

// A run that fails is answered once: openai-go (which retries a 5xx by itself)
// is told not to retry, so the agent does not run again; and a history from the
// SDK with an assistant message that only called tools (no content) is taken.
func TestOpenAIGoFailedRunNotRetried(t *testing.T) {
	var calls atomic.Int64
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`)
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: broken
      baseURL: %s/v1
      apiKey: sk-wrong
agents:
  - {id: helper, provider: broken, model: gpt-4o}
`, filepath.Join(dir, "data"), up.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey))
	history := []openai.ChatCompletionMessageParamUnion{
		openai.UserMessage("What is 2+3?"),
		{OfAssistant: &openai.ChatCompletionAssistantMessageParam{ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{
			OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "sum", Arguments: `{"a":2,"b":3}`}},
		}}}},
		openai.ToolMessage("5", "call_1"),
		openai.AssistantMessage("It is 5."),
		openai.UserMessage("And 3+4?"),
	}
	_, err := client.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{Model: "helper", Messages: history})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Message, "API key") {
		t.Fatalf("the failed run: %v; want a 502 naming the provider's refusal", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the model was called %d times; want once (no retry of the whole run)", n)
	}
	var convs struct{ Data []any }
	if code := s.call(t, testKey, "GET", "/api/conversations", "", &convs); code != 200 || len(convs.Data) != 1 {
		t.Errorf("conversations: %d, %d; want the one run's", code, len(convs.Data))
	}
	// A bad key under /v1 is refused in OpenAI's shape, which the SDK reads.
	bad := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey("rk-"+strings.Repeat("x", 40)), option.WithMaxRetries(0))
	_, err = bad.Models.List(t.Context())
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusUnauthorized || apiErr.Type != "authentication_error" || apiErr.Message == "" {
		t.Errorf("a bad key: %v; want a 401 authentication_error in OpenAI's shape", err)
	}
}

// weatherTool is a function of the client's, which Relay does not run.
var weatherTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name: "get_weather", Description: openai.String("The weather in a city"),
	Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
})

// TestOpenAIGoClientTools: with openai-go, a tool of the client's round
// trip: the model calls it, the response ends with finish_reason tool_calls
// and the call, the client answers with a tool message and gets the final
// answer; streaming and not. The requests to the model carry the client's
// tool, its tool_choice and temperature, and on the way back the assistant's
// call and the tool's result.
func TestOpenAIGoClientTools(t *testing.T) {
	s, mock := v1ServerMock(t)
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey))
	ctx := t.Context()
	for _, streaming := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", streaming), func(t *testing.T) {
			params := openai.ChatCompletionNewParams{
				Model:       "calc",
				Messages:    []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Paris?")},
				Tools:       []openai.ChatCompletionToolUnionParam{weatherTool},
				Temperature: openai.Float(0.25),
				MaxTokens:   openai.Int(300),
			}
			complete := func() openai.ChatCompletionChoice {
				t.Helper()
				if !streaming {
					res, err := client.Chat.Completions.New(ctx, params)
					if err != nil || len(res.Choices) != 1 {
						t.Fatalf("completion %+v: %v", res, err)
					}
					return res.Choices[0]
				}
				stream := client.Chat.Completions.NewStreaming(ctx, params, option.WithJSONSet("stream_options", map[string]any{"include_usage": true}))
				acc := openai.ChatCompletionAccumulator{}
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil || len(acc.Choices) != 1 {
					t.Fatalf("stream %+v: %v", acc.ChatCompletion, err)
				}
				if acc.Usage.TotalTokens == 0 {
					t.Errorf("include_usage: no usage in %+v", acc.ChatCompletion)
				}
				return acc.Choices[0]
			}
			first := complete()
			if first.FinishReason != "tool_calls" || len(first.Message.ToolCalls) != 1 {
				t.Fatalf("first answer %+v; want finish_reason tool_calls and one call", first)
			}
			call := first.Message.ToolCalls[0]
			if call.ID == "" || call.Function.Name != "get_weather" || call.Function.Arguments != `{"city":"Paris"}` {
				t.Errorf("the call %+v", call)
			}
			if !streaming && !first.Message.JSON.Content.Valid() && first.Message.Content != "" {
				t.Errorf("content %q; want null beside the calls", first.Message.Content)
			}
			params.Messages = append(params.Messages, first.Message.ToParam(), openai.ToolMessage("Sunny, 24°C", call.ID))
			final := complete()
			if final.FinishReason != "stop" || final.Message.Content != "It is sunny in Paris." || len(final.Message.ToolCalls) != 0 {
				t.Errorf("final answer %+v", final)
			}
		})
	}
	// What the model was sent: the client's tool beside the agent's, the
	// parameters, and on the way back the call and its result.
	j := journal(t, mock)
	for _, want := range []string{`"name":"get_weather"`, `"name":"get-sum__mcp__everything"`, `"temperature":0.25`, `"max_tokens":300`, `"tool_call_id":"` + "call_", `"content":"Sunny, 24°C"`} {
		if !strings.Contains(j, want) {
			t.Errorf("aimock's journal lacks %s", want)
		}
	}

	// The agent's own tool runs inside Relay before the client's is called;
	// a forced tool_choice names the client's function.
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "calc", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("sum then weather")},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
	})
	if err != nil || res.Choices[0].FinishReason != "tool_calls" || len(res.Choices[0].Message.ToolCalls) != 1 || res.Choices[0].Message.ToolCalls[0].ID != "call_w" {
		t.Fatalf("sum then weather: %+v %v", res, err)
	}
	res, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "calc", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("sum then weather"), res.Choices[0].Message.ToParam(), openai.ToolMessage("Rain", "call_w")},
		Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
	})
	if err != nil || res.Choices[0].Message.Content != "5, and it rains in Rome." {
		t.Errorf("sum then weather, answered: %+v %v", res, err)
	}
	if !strings.Contains(journal(t, mock), `"tool_choice":"auto"`) {
		t.Errorf("no tool_choice in the journal")
	}
}

// TestOpenAIGoRefusals: what Relay cannot honour is a 400 naming the
// parameter, in OpenAI's shape, before anything runs.
func TestOpenAIGoRefusals(t *testing.T) {
	s, _ := v1ServerMock(t)
	client := openai.NewClient(option.WithBaseURL(s.base+"/v1"), option.WithAPIKey(testKey), option.WithMaxRetries(0))
	ask := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is 2+3?")}
	clash := openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "get-sum__mcp__everything"})
	tests := []struct {
		name   string
		params openai.ChatCompletionNewParams
		opts   []option.RequestOption
		param  string
	}{
		{"n: 2", openai.ChatCompletionNewParams{Model: "calc", Messages: ask, N: openai.Int(2)}, nil, "n"},
		{"an unknown field", openai.ChatCompletionNewParams{Model: "calc", Messages: ask}, []option.RequestOption{option.WithJSONSet("tempurature", 0.5)}, "tempurature"},
		{"a field Relay does not support", openai.ChatCompletionNewParams{Model: "calc", Messages: ask, Logprobs: openai.Bool(true)}, nil, "logprobs"},
		{"a temperature out of range", openai.ChatCompletionNewParams{Model: "calc", Messages: ask, Temperature: openai.Float(3)}, nil, "temperature"},
		{"seed on Anthropic", openai.ChatCompletionNewParams{Model: "claude", Messages: ask, Seed: openai.Int(7)}, nil, "seed"},
		{"json_object on Anthropic", openai.ChatCompletionNewParams{Model: "claude", Messages: ask, ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, nil, "response_format"},
		{"a client tool named like the agent's", openai.ChatCompletionNewParams{Model: "calc", Messages: ask, Tools: []openai.ChatCompletionToolUnionParam{clash}}, nil, "tools[0].function.name"},
		{"tool_choice naming no tool", openai.ChatCompletionNewParams{Model: "calc", Messages: ask, Tools: []openai.ChatCompletionToolUnionParam{weatherTool},
			ToolChoice: openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})}, nil, "tool_choice.function.name"},
		{"a tool message answering no call", openai.ChatCompletionNewParams{Model: "calc", Messages: append(ask, openai.ToolMessage("5", "call_x"))}, nil, "messages[1].tool_call_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Chat.Completions.New(t.Context(), tt.params, tt.opts...)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Type != "invalid_request_error" || apiErr.Param != tt.param || !strings.Contains(apiErr.Message, tt.param) {
				t.Errorf("got %v (param %q); want a 400 invalid_request_error naming %s", err, paramOf(apiErr), tt.param)
			}
		})
	}
	var convs struct{ Data []any }
	if code := s.call(t, testKey, "GET", "/api/conversations", "", &convs); code != 200 || len(convs.Data) != 0 {
		t.Errorf("conversations: %d, %d; a refused request runs nothing", code, len(convs.Data))
	}
}

func paramOf(e *openai.Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

// TestV1CORS: a configured origin may call /v1 from a browser, its preflight
// answered without a key; another origin gets no CORS headers.
func TestV1CORS(t *testing.T) {
	s, _ := v1ServerMock(t)
	do := func(method, origin string, h map[string]string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, s.base+"/v1/chat/completions", nil)
		req.Header.Set("Origin", origin)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	pre := map[string]string{"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type, x-stainless-os"}
	resp := do("OPTIONS", "https://app.example.com", pre)
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Allow-Headers"), "x-stainless-os") || resp.Header.Get("Access-Control-Allow-Credentials") != "" {
		t.Errorf("preflight: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do("OPTIONS", "https://evil.example", pre); resp.StatusCode != http.StatusForbidden || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do("POST", "https://app.example.com", map[string]string{"Authorization": "Bearer " + testKey}); resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Errorf("request: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := do("POST", "https://evil.example", map[string]string{"Authorization": "Bearer " + testKey}); resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("request from another origin: %v", resp.Header)
	}
}

// TestOpenAINodeSDKTools: with the openai npm SDK, a tool of the client's
// round trip, streaming and not; n: 2 and an unknown field are 400s naming
// them, which the SDK reads as BadRequestError with param.
func TestOpenAINodeSDKTools(t *testing.T) {
	modules := mcptest.Peer(t, "PEER_NODE_MODULES")
	s, _ := v1ServerMock(t)
	script := filepath.Join(t.TempDir(), "tools.mjs")
	if err := os.WriteFile(script, []byte(`
import OpenAI from "`+filepath.Join(modules, "openai", "index.mjs")+`";
const client = new OpenAI({ baseURL: process.env.RELAY_URL + "/v1", apiKey: process.env.RELAY_KEY, maxRetries: 0 });
const tools = [{ type: "function", function: { name: "get_weather", description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
const out = {};

// Not streaming.
const messages = [{ role: "user", content: "What is the weather in Paris?" }];
const first = await client.chat.completions.create({ model: "calc", messages, tools, tool_choice: "auto", temperature: 0.3 });
const call = first.choices[0].message.tool_calls?.[0];
out.plain = { finish: first.choices[0].finish_reason, content: first.choices[0].message.content, name: call?.function.name, args: call?.function.arguments };
messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "Sunny, 24°C" });
const final = await client.chat.completions.create({ model: "calc", messages, tools });
out.plain.final = final.choices[0].message.content;
out.plain.finalFinish = final.choices[0].finish_reason;

// Streaming: the call comes as tool_calls deltas, then finish_reason.
async function streamed(msgs) {
  const stream = await client.chat.completions.create({ model: "calc", messages: msgs, tools, stream: true, stream_options: { include_usage: true } });
  let text = "", finish = null, usage = null;
  const calls = [];
  for await (const chunk of stream) {
    usage = chunk.usage ?? usage;
    const c = chunk.choices[0];
    if (!c) continue;
    text += c.delta?.content ?? "";
    for (const d of c.delta?.tool_calls ?? []) {
      calls[d.index] ??= { id: "", name: "", arguments: "" };
      calls[d.index].id += d.id ?? "";
      calls[d.index].name += d.function?.name ?? "";
      calls[d.index].arguments += d.function?.arguments ?? "";
    }
    finish = c.finish_reason ?? finish;
  }
  return { text, finish, calls, usage: usage?.total_tokens ?? 0 };
}
const smsgs = [{ role: "user", content: "What is the weather in Paris?" }];
const s1 = await streamed(smsgs);
smsgs.push({ role: "assistant", content: null, tool_calls: s1.calls.map(c => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) },
  { role: "tool", tool_call_id: s1.calls[0]?.id, content: "Sunny, 24°C" });
const s2 = await streamed(smsgs);
out.stream = { finish: s1.finish, name: s1.calls[0]?.name, args: s1.calls[0]?.arguments, final: s2.text, finalFinish: s2.finish, usage: s2.usage };

// Refusals name the parameter.
out.refused = {};
for (const [name, extra] of [["n", { n: 2 }], ["colour", { colour: "blue" }]]) {
  try {
    await client.chat.completions.create({ model: "calc", messages: [{ role: "user", content: "What is 2+3?" }], ...extra });
    out.refused[name] = "accepted";
  } catch (e) {
    out.refused[name] = { status: e.status, param: e.param, type: e.type, message: e.message, bad: e instanceof OpenAI.BadRequestError };
  }
}
console.log(JSON.stringify(out));
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", script)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "RELAY_URL="+s.base, "RELAY_KEY="+testKey)
	cmd.Dir = filepath.Dir(modules)
	raw, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, raw)
	}
	type leg struct {
		Finish, Name, Args, Final, FinalFinish string
		Content                                *string
		Usage                                  int
	}
	var got struct {
		Plain, Stream leg
		Refused       map[string]struct {
			Status      int
			Param, Type string
			Message     string
			Bad         bool
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("node output: %v\n%s", err, raw)
	}
	for name, l := range map[string]leg{"plain": got.Plain, "stream": got.Stream} {
		if l.Finish != "tool_calls" || l.Name != "get_weather" || l.Args != `{"city":"Paris"}` || l.Final != "It is sunny in Paris." || l.FinalFinish != "stop" {
			t.Errorf("%s round trip: %+v", name, l)
		}
	}
	if got.Plain.Content != nil {
		t.Errorf("content beside the calls: %q; want null", *got.Plain.Content)
	}
	if got.Stream.Usage == 0 {
		t.Errorf("include_usage: no usage chunk")
	}
	for _, name := range []string{"n", "colour"} {
		r := got.Refused[name]
		if r.Status != 400 || r.Param != name || r.Type != "invalid_request_error" || !r.Bad || !strings.Contains(r.Message, name) {
			t.Errorf("%s: %+v; want a BadRequestError naming it", name, r)
		}
	}
}
