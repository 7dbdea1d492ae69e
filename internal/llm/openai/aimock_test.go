package openai_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/llm/openai"
)

// aimockFixtures are the answers of the aimock peer. userMessage matches a
// substring of the last user message; sequenceIndex counts the matches of
// the fixtures that share the rest of their match; an error response with
// status 429 carries Retry-After: 1, or retryAfter when given;
// truncateAfterChunks with latency cuts the stream after that many chunks.
const aimockFixtures = `{"fixtures":[
 {"match":{"userMessage":"say hello"},"response":{"content":"Hello from aimock, <friend> & co."},"chunkSize":6},
 {"match":{"userMessage":"weather and time"},"response":{"toolCalls":[
   {"name":"get_weather","arguments":{"city":"Paris"}},
   {"name":"get_time","arguments":"{\"tz\":\"CET\"}"}]}},
 {"match":{"userMessage":"flaky","sequenceIndex":0},"response":{"error":{"message":"Rate limit reached","type":"rate_limit_error"},"status":429}},
 {"match":{"userMessage":"flaky","sequenceIndex":1},"response":{"error":{"message":"Rate limit reached","type":"rate_limit_error"},"status":429,"retryAfter":0}},
 {"match":{"userMessage":"flaky","sequenceIndex":2},"response":{"content":"Third time lucky."}},
 {"match":{"userMessage":"long story"},"response":{"content":"Once upon a time there was a stream that ended too soon."},
   "chunkSize":5,"truncateAfterChunks":3,"latency":20},
 {"match":{"userMessage":"wrong key"},"response":{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"},"status":401}},
 {"match":{"userMessage":"anything"},"response":{"content":"fine"}}
]}`

// startAimock starts the aimock peer with aimockFixtures and returns its
// base URL; the test is skipped when PEER_AIMOCK is not set.
func startAimock(t *testing.T) string {
	t.Helper()
	return llmtest.StartAimock(t, aimockFixtures)
}

// journalEntry is one request that aimock recorded.
type journalEntry struct {
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
	Body    map[string]any    `json:"body"`
}

func journal(t *testing.T, base string) []journalEntry {
	t.Helper()
	resp, err := http.Get(base + "/__aimock/journal")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var entries []journalEntry
	if err := json.NewDecoder(resp.Body).Decode(&entries); err != nil {
		t.Fatal(err)
	}
	return entries
}

// lastUser returns the text of the last user message of a recorded body.
func lastUser(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m["role"] == "user" {
			s, _ := m["content"].(string)
			return s
		}
	}
	return ""
}

func ask(text string) *llm.Request {
	return &llm.Request{Model: "gpt-4o-mini", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are terse."},
		{Role: llm.RoleUser, Content: text},
	}, Params: map[string]any{"temperature": 0.3}}
}

func TestAimock(t *testing.T) {
	base := startAimock(t)
	client := func(opts openai.Options) *openai.Client {
		opts.BaseURL = base + "/v1"
		if opts.APIKey == "" {
			opts.APIKey = "aimock-key"
		}
		return openai.New(opts)
	}

	t.Run("text", func(t *testing.T) {
		var rec llmtest.Recorder
		turn, err := client(openai.Options{}).Stream(t.Context(), ask("please say hello"), rec.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != "Hello from aimock, <friend> & co." || turn.FinishReason != llm.FinishStop {
			t.Errorf("turn %+v", turn)
		}
		if n := len(rec.Kinds(llm.EventText)); n < 2 {
			t.Errorf("%d text events, want the answer in pieces", n)
		}
		if turn.Usage.TotalTokens == 0 || len(rec.Kinds(llm.EventUsage)) != 1 {
			t.Errorf("usage %+v, want it reported", turn.Usage)
		}

		// The journal holds the request as it was sent.
		var got *journalEntry
		for _, e := range journal(t, base) {
			if lastUser(e.Body) == "please say hello" {
				got = &e
			}
		}
		if got == nil {
			t.Fatal("the request is not in aimock's journal")
		}
		var sent map[string]any
		if err := json.Unmarshal(turn.Sent, &sent); err != nil {
			t.Fatal(err)
		}
		delete(got.Body, "_endpointType") // aimock's own note
		if diff := cmp.Diff(sent, got.Body); diff != "" {
			t.Errorf("journal body (-sent +recorded):\n%s", diff)
		}
		// aimock redacts the authorization header in its journal.
		if got.Path != "/v1/chat/completions" || got.Headers["authorization"] == "" || got.Headers["user-agent"] != "Relay" {
			t.Errorf("journal entry %s %v", got.Path, got.Headers)
		}
	})

	t.Run("tool calls", func(t *testing.T) {
		var rec llmtest.Recorder
		turn, err := client(openai.Options{}).Stream(t.Context(), ask("weather and time please"), rec.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if len(turn.ToolCalls) != 2 || turn.FinishReason != llm.FinishToolCalls {
			t.Fatalf("turn %+v", turn)
		}
		for i, want := range []llm.FunctionCall{
			{Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{Name: "get_time", Arguments: `{"tz":"CET"}`},
		} {
			if c := turn.ToolCalls[i]; c.Function != want || c.ID == "" || c.Type != "function" {
				t.Errorf("tool call %d = %+v, want %+v", i, c, want)
			}
		}
		if len(rec.Kinds(llm.EventToolCallDelta)) < 2 {
			t.Errorf("events %+v", rec.Events)
		}
	})

	t.Run("rate limited twice then an answer", func(t *testing.T) {
		var rec llmtest.Recorder
		start := time.Now()
		turn, err := client(openai.Options{}).Stream(t.Context(), ask("flaky today"), rec.Emit)
		if err != nil {
			t.Fatal(err)
		}
		if turn.Text != "Third time lucky." || turn.Retries != 2 {
			t.Errorf("turn %+v", turn)
		}
		retries := rec.Kinds(llm.EventRetry)
		if len(retries) != 2 || retries[0].Retry.RetryAfter != time.Second || retries[1].Retry.RetryAfter != 0 {
			t.Fatalf("retry events %+v, want waits of 1s (aimock's Retry-After) and 0s", retries)
		}
		if e := retries[0].Retry; e.Kind != llm.ErrRateLimited || e.Message != "the provider is rate limiting requests: Rate limit reached" {
			t.Errorf("retry %+v", e)
		}
		if elapsed := time.Since(start); elapsed < time.Second {
			t.Errorf("took %v; Retry-After: 1 was not honoured", elapsed)
		}
	})

	t.Run("stream cut mid-answer", func(t *testing.T) {
		var rec llmtest.Recorder
		turn, err := client(openai.Options{}).Stream(t.Context(), ask("tell me a long story"), rec.Emit)
		e := asLLMError(t, err)
		if e.Kind != llm.ErrStreamCut {
			t.Errorf("error %+v, want a stream cut", e)
		}
		if turn.Text == "" || !strings.HasPrefix("Once upon a time there was a stream that ended too soon.", turn.Text) {
			t.Errorf("partial text %q", turn.Text)
		}
		if len(rec.Kinds(llm.EventRetry)) != 0 {
			t.Error("a cut stream was retried")
		}
		t.Logf("error: %v; partial text %q", e, turn.Text)
	})

	t.Run("refused key", func(t *testing.T) {
		_, err := client(openai.Options{APIKey: "sk-aimock-secret"}).Stream(t.Context(), ask("wrong key"), nil)
		e := asLLMError(t, err)
		if e.Kind != llm.ErrAuth || e.Status != 401 || e.Message != "the API key was refused: Incorrect API key provided" {
			t.Errorf("error %+v", e)
		}
	})

	t.Run("chaos disconnect on every try", func(t *testing.T) {
		var rec llmtest.Recorder
		c := client(openai.Options{
			MaxTries: 2, BackoffBase: time.Millisecond,
			Headers: map[string]string{"X-Aimock-Chaos-Disconnect": "1"},
		})
		_, err := c.Stream(t.Context(), ask("anything at all"), rec.Emit)
		e := asLLMError(t, err)
		if e.Kind != llm.ErrNetwork || len(rec.Kinds(llm.EventRetry)) != 1 {
			t.Errorf("error %+v after %d retries, want a network error after 1 retry", e, len(rec.Kinds(llm.EventRetry)))
		}
		t.Logf("error: %v", e)
	})
}
