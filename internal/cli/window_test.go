package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/token"
)

// A conversation pushed past a small maxContextTokens: every request sent to
// the model stays within the budget by the tokenizer's count, no tool result
// is sent without its call (nor a call without its result), the newest
// message goes as it was written, and the prompt preview reports what was
// dropped. A message that cannot fit even alone is refused before anything
// is sent.
func TestContextWindowEndToEnd(t *testing.T) {
	const budget = 2000
	type sent struct {
		raw string
		req llm.Request
	}
	var (
		mu   sync.Mutex
		reqs []sent
	)
	answer := strings.Repeat("The reactor's cooling loop keeps the core below its design temperature. ", 8)
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string             `json:"model"`
			Messages []llm.Message      `json:"messages"`
			Tools    []llm.FunctionTool `json:"tools"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		mu.Lock()
		n := len(reqs)
		reqs = append(reqs, sent{raw: string(raw), req: llm.Request{Model: body.Model, Messages: body.Messages, Tools: body.Tools}})
		mu.Unlock()
		s := llmtest.NewSSE(w)
		if last := body.Messages[len(body.Messages)-1]; last.Role == llm.RoleUser {
			// Each turn looks something up first: a tool call, then its result.
			s.ToolCall(0, fmt.Sprintf("call_%d", n), "set_memory", fmt.Sprintf(`{"key":"topic","value":"cooling %d"}`, n))
			s.Finish("tool_calls")
			s.Done()
			return
		}
		streamText(s, answer)
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
agents:
  - id: long
    provider: mock
    model: gpt-4o
    instructions: Answer questions about the plant.
    tools: [set_memory]
    model_parameters:
      maxContextTokens: %d
      temperature: 0.2
`, filepath.Join(dir, "data"), up.URL, budget))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	question := func(i int) string {
		return fmt.Sprintf("Question %d: %s", i, strings.Repeat("how does the cooling loop behave under load? ", 6))
	}
	var convID, parent string
	const turns = 14
	for i := 1; i <= turns; i++ {
		body, _ := json.Marshal(map[string]any{"agent_id": "long", "text": question(i), "conversation_id": convID, "parent_message_id": parent})
		resp := s.post(t, "/api/chat", string(body), nil)
		evs := readSSE(t, resp, nil)
		resp.Body.Close()
		last := evs[len(evs)-1]
		if last.Type != "run.finished" || last.Data["status"] != "succeeded" {
			t.Fatalf("turn %d: last event %+v", i, last)
		}
		convID, _ = evs[0].Data["conversation_id"].(string)
		msg, _ := last.Data["message"].(map[string]any)
		parent, _ = msg["id"].(string)
	}

	c := token.NewCounters(0).For("gpt-4o")
	mu.Lock()
	defer mu.Unlock()
	if len(reqs) != 2*turns {
		t.Fatalf("%d requests sent, want %d", len(reqs), 2*turns)
	}
	dropped := false
	for n, r := range reqs {
		if got := c.Request(&r.req); got > budget {
			t.Errorf("request %d counts %d tokens, more than the budget of %d", n, got, budget)
		}
		if strings.Contains(r.raw, "maxContextTokens") {
			t.Errorf("request %d sends maxContextTokens: %.300s", n, r.raw)
		}
		msgs := r.req.Messages
		if msgs[0].Role != llm.RoleSystem || !strings.Contains(msgs[0].Content, "Answer questions about the plant.") {
			t.Errorf("request %d starts with %+v, not the system prompt", n, msgs[0])
		}
		calls := map[string]bool{}
		results := map[string]bool{}
		lastUser := ""
		for _, m := range msgs {
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = true
			}
			switch m.Role {
			case llm.RoleTool:
				if !calls[m.ToolCallID] {
					t.Errorf("request %d: tool result %q without its call", n, m.ToolCallID)
				}
				results[m.ToolCallID] = true
			case llm.RoleUser:
				lastUser = m.Content
			}
		}
		for id := range calls {
			if !results[id] {
				t.Errorf("request %d: tool call %q without its result", n, id)
			}
		}
		if want := question(n/2 + 1); lastUser != want {
			t.Errorf("request %d: newest user message %q, want %q", n, lastUser, want)
		}
		if !strings.Contains(r.raw, "Question 1:") {
			dropped = true
		}
	}
	if !dropped {
		t.Fatalf("no request left the first turn out: the conversation never went past the budget")
	}

	// The preview of the next message shows the count, the budget and the drop.
	preview := func(text string) (*http.Response, string) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"text": text, "conversation_id": convID, "parent_message_id": parent})
		resp := s.post(t, "/api/agents/long/prompt", string(body), nil)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}
	resp, raw := preview(question(turns + 1))
	if resp.StatusCode != 200 {
		t.Fatalf("preview: %d %s", resp.StatusCode, raw)
	}
	report := resp.Header.Get("Relay-Context")
	t.Logf("Relay-Context: %s", report)
	fields := map[string]string{}
	for _, kv := range strings.Split(report, "; ") {
		k, v, _ := strings.Cut(kv, "=")
		fields[k] = v
	}
	var tokens, dropMsgs, dropTurns int
	fmt.Sscan(fields["tokens"], &tokens)
	fmt.Sscan(fields["dropped_messages"], &dropMsgs)
	fmt.Sscan(fields["dropped_turns"], &dropTurns)
	if fields["budget"] != fmt.Sprint(budget) || fields["budget_source"] != "maxContextTokens" || fields["counted_by"] != "o200k_base" ||
		tokens <= 0 || tokens > budget || dropMsgs < 2 || dropTurns < 1 {
		t.Errorf("Relay-Context: %q", report)
	}
	var body struct {
		Messages []llm.Message `json:"messages"`
	}
	if err := json.Unmarshal([]byte(raw), &body); err != nil {
		t.Fatal(err)
	}
	// The history holds four messages per turn (the question, the call, its
	// result, the answer); the preview shows the system prompt, what was
	// kept, and the new message.
	if want := 1 + 4*turns + 1 - dropMsgs; len(body.Messages) != want || strings.Contains(raw, "Question 1:") {
		t.Errorf("preview body: %d messages, want %d without the oldest turn", len(body.Messages), want)
	}

	// A message that alone does not fit is refused, naming the budget.
	resp, raw = preview(strings.Repeat("Explain the whole plant in detail. ", 400))
	if resp.StatusCode != 400 || !strings.Contains(raw, "context window") || !strings.Contains(raw, "maxContextTokens") {
		t.Errorf("oversized message: %d %s", resp.StatusCode, raw)
	}
	// And so is a run of it, before anything is sent.
	before := len(reqs)
	mu.Unlock()
	body2, _ := json.Marshal(map[string]any{"agent_id": "long", "text": strings.Repeat("Explain the whole plant in detail. ", 400), "conversation_id": convID, "parent_message_id": parent})
	resp = s.post(t, "/api/chat", string(body2), nil)
	evs := readSSE(t, resp, nil)
	resp.Body.Close()
	mu.Lock()
	if last := evs[len(evs)-1]; last.Data["status"] != "failed" || !strings.Contains(fmt.Sprint(last.Data["error"]), "context window") {
		t.Errorf("oversized run: last event %+v", last)
	}
	if len(reqs) != before {
		t.Errorf("the oversized run sent %d requests", len(reqs)-before)
	}
	// Through /v1 it is a 400 in OpenAI's words: context_length_exceeded.
	mu.Unlock()
	v1body, _ := json.Marshal(map[string]any{"model": "long", "messages": []map[string]string{{"role": "user", "content": strings.Repeat("Explain the whole plant in detail. ", 400)}}})
	var v1err struct {
		Error struct{ Type, Code, Param, Message string }
	}
	code := s.call(t, testKey, "POST", "/v1/chat/completions", string(v1body), &v1err)
	mu.Lock()
	if code != 400 || v1err.Error.Code != "context_length_exceeded" || v1err.Error.Type != "invalid_request_error" || !strings.Contains(v1err.Error.Message, "context window") {
		t.Errorf("oversized /v1 request: %d %+v", code, v1err)
	}
	if len(reqs) != before {
		t.Errorf("the oversized /v1 request sent %d requests", len(reqs)-before)
	}

	// relay prompt --conversation shows the same on stderr, as the
	// conversation's owner, with the body alone on stdout.
	s.stop(t)
	code, out, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "long", "--message", question(turns+1), "--conversation", convID, "--parent", parent)
	if code != 0 || !strings.Contains(stderr, "relay prompt: context: tokens=") || !strings.Contains(stderr, fmt.Sprintf("; budget=2000; budget_source=maxContextTokens; counted_by=o200k_base; dropped_messages=%d; dropped_turns=%d;", dropMsgs, dropTurns)) {
		t.Errorf("relay prompt --conversation: exit %d, stderr %q", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &body); err != nil || len(body.Messages) != 1+4*turns+1-dropMsgs {
		t.Errorf("relay prompt --conversation: %d messages (%v) in %.300s", len(body.Messages), err, out)
	}
	if code, _, stderr := runCLI(t, nil, "", "prompt", "--config", cfgPath, "--agent", "long", "--message", "hi", "--conversation", "conv_nope"); code != 2 || !strings.Contains(stderr, "conv_nope") {
		t.Errorf("unknown conversation: exit %d, %q", code, stderr)
	}
}

// With summarization on, the turns dropped to fit are summarised by the
// configured model, and the summary reaches the agent's model in the system
// message, within the budget.
func TestContextWindowSummaryEndToEnd(t *testing.T) {
	const budget = 1500
	var (
		mu        sync.Mutex
		chats     []llm.Request
		summaries []string
	)
	up := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Model    string             `json:"model"`
			Messages []llm.Message      `json:"messages"`
			Tools    []llm.FunctionTool `json:"tools"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
			return
		}
		s := llmtest.NewSSE(w)
		mu.Lock()
		defer mu.Unlock()
		if body.Model == "gpt-4o-mini" {
			summaries = append(summaries, string(raw))
			streamText(s, fmt.Sprintf("SUMMARY %d: the user asked about the cooling loop.", len(summaries)))
			return
		}
		chats = append(chats, llm.Request{Model: body.Model, Messages: body.Messages, Tools: body.Tools})
		streamText(s, strings.Repeat("The loop keeps the core cool under every load we have seen. ", 6))
	})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
summarization:
  enabled: true
  model: gpt-4o-mini
  maxSummaryTokens: 200
  trigger: {type: token_ratio, value: 0.8}
agents:
  - id: brief
    provider: mock
    model: gpt-4o
    instructions: Answer questions about the plant.
    model_parameters:
      maxContextTokens: %d
`, filepath.Join(dir, "data"), up.URL, budget))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var convID, parent string
	const turns = 16
	for i := 1; i <= turns; i++ {
		body, _ := json.Marshal(map[string]any{"agent_id": "brief", "text": fmt.Sprintf("Question %d: %s", i, strings.Repeat("how does the cooling loop behave? ", 8)), "conversation_id": convID, "parent_message_id": parent})
		resp := s.post(t, "/api/chat", string(body), nil)
		evs := readSSE(t, resp, nil)
		resp.Body.Close()
		last := evs[len(evs)-1]
		if last.Data["status"] != "succeeded" {
			t.Fatalf("turn %d: %+v", i, last)
		}
		convID, _ = evs[0].Data["conversation_id"].(string)
		msg, _ := last.Data["message"].(map[string]any)
		parent, _ = msg["id"].(string)
	}
	// The preview of the next message drops the turns its run drops: the
	// summary's room is kept free in both, the preview showing no summary.
	next := fmt.Sprintf("Question %d: %s", turns+1, strings.Repeat("how does the cooling loop behave? ", 8))
	body, _ := json.Marshal(map[string]any{"text": next, "conversation_id": convID})
	resp := s.post(t, "/api/agents/brief/prompt", string(body), nil)
	var preview struct{ Messages []llm.Message }
	err := json.NewDecoder(resp.Body).Decode(&preview)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(preview.Messages) == 0 {
		t.Fatalf("preview: %d %v", resp.StatusCode, err)
	}
	body, _ = json.Marshal(map[string]any{"agent_id": "brief", "text": next, "conversation_id": convID})
	resp = s.post(t, "/api/chat", string(body), nil)
	readSSE(t, resp, nil)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	sent := chats[len(chats)-1].Messages
	if diff := cmp.Diff(preview.Messages[1:], sent[1:]); diff != "" {
		t.Errorf("the preview's messages after the system message differ from those the run sent (-preview +sent):\n%s", diff)
	}
	if len(summaries) == 0 {
		t.Fatalf("no summary was asked for in %d requests; the last counts %d tokens", len(chats), token.NewCounters(0).For("gpt-4o").Request(&chats[len(chats)-1]))
	}
	if first := summaries[0]; !strings.Contains(first, `Human: Question 1:`) || !strings.Contains(first, `"max_tokens":200`) || !strings.Contains(first, "oldest part of a conversation") {
		t.Errorf("summary request: %.600s", first)
	}
	c := token.NewCounters(0).For("gpt-4o")
	withSummary := 0
	for n, r := range chats {
		if got := c.Request(&r); got > budget {
			t.Errorf("request %d counts %d tokens, more than %d", n, got, budget)
		}
		if strings.Contains(r.Messages[0].Content, "Summary of the earlier conversation (turns left out to fit the context window):\nSUMMARY ") {
			withSummary++
		}
	}
	if withSummary != len(summaries) {
		t.Errorf("%d requests carry a summary, %d summaries were made", withSummary, len(summaries))
	}
}
