package app

import (
	"context"
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

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// v1Server is relay serve with aimock as the model and server-everything as
// the tool, and an agent "calc" that uses both.
func v1Server(t *testing.T) *server {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := aimock(t)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
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
`, filepath.Join(dir, "data"), mock, everything))
	return startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
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
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "calc" {
		t.Errorf("models %+v %v", models, err)
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
