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
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// titleProvider is a fake OpenAI-compatible provider for the agent's model
// and the title model: the agent's answers name the message; the title
// model's requests are counted, announced on asked and, for the messages in
// hold, answered only once the test closes that message's channel.
type titleProvider struct {
	mu     sync.Mutex
	titles []string // the title requests' prompts
	asked  chan string
	hold   map[string]chan struct{}
}

func (p *titleProvider) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req upstreamRequest
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, `{"error":{"message":"bad body"}}`, http.StatusBadRequest)
		return
	}
	if req.Model != "title-mini" {
		streamText(llmtest.NewSSE(w), "Answer to: "+req.lastUser())
		return
	}
	text := req.lastUser()
	p.mu.Lock()
	p.titles = append(p.titles, text)
	p.mu.Unlock()
	p.asked <- text
	for msg, release := range p.hold {
		if strings.Contains(text, msg) {
			<-release
		}
	}
	switch {
	case strings.Contains(text, "Break the titler"):
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":{"message":"The model title-mini does not exist","type":"invalid_request_error"}}`)
	case strings.Contains(text, "Plan a trip"):
		streamText(llmtest.NewSSE(w), `Title: "Rome trip planning".`)
	default:
		streamText(llmtest.NewSSE(w), "A title from the model")
	}
}

func (p *titleProvider) prompts() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.titles...)
}

// awaitTitleRequest returns the prompt of the next title request.
func (p *titleProvider) awaitTitleRequest(t *testing.T) string {
	t.Helper()
	select {
	case text := <-p.asked:
		return text
	case <-time.After(30 * time.Second):
		t.Fatal("no title request within 30s")
		return ""
	}
}

// chatTurn sends a message through POST /api/chat, reads the stream to its
// end and returns the conversation's id and the answer's text.
func chatTurn(t *testing.T, s *server, body string) (conversationID, answer string) {
	t.Helper()
	resp := s.post(t, "/api/chat", body, nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/chat %s: %d %s", body, resp.StatusCode, b)
	}
	var text strings.Builder
	for _, ev := range readSSE(t, resp, nil) {
		switch ev.Type {
		case "run.started":
			conversationID, _ = ev.Data["conversation_id"].(string)
		case "message.delta":
			text.WriteString(fmt.Sprint(ev.Data["text"]))
		case "run.finished":
			if ev.Data["status"] != "succeeded" {
				t.Fatalf("run %v", ev.Data)
			}
		}
	}
	return conversationID, text.String()
}

// TestConversationTitlesEndToEnd: with titleConvo on, the endpoint's
// titleModel names a new conversation after its answer has arrived; a
// failing title model leaves the first words of the message; a title the
// user set meanwhile is kept; the API and the CLI rename, for the owner only.
func TestConversationTitlesEndToEnd(t *testing.T) {
	p := &titleProvider{asked: make(chan string, 8), hold: map[string]chan struct{}{
		"Plan a trip": make(chan struct{}), "Rename me": make(chan struct{}),
	}}
	up := llmtest.Server(t, p.serve)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-title-secret-4242
      titleConvo: true
      titleModel: title-mini
agents:
  - id: helper
    provider: mock
    model: gpt-4o
`, filepath.Join(dir, "data"), up.URL))
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	if code, _, stderr := runCLI(t, vars, "", "users", "add", "--config", cfgPath, "--email", "bob@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	code, bobKey, stderr := runCLI(t, vars, "", "keys", "create", "--config", cfgPath, "--user", "bob@example.com", "--name", "bob")
	if bobKey = strings.TrimSpace(bobKey); code != 0 {
		t.Fatalf("keys create: %s", stderr)
	}
	s := startServer(t, cfgPath, vars)
	title := func(key, id string) string {
		t.Helper()
		var c struct{ Title string }
		if code := s.call(t, key, "GET", "/api/conversations/"+id, "", &c); code != 200 {
			t.Fatalf("GET conversation %s: %d", id, code)
		}
		return c.Title
	}

	// The answer arrives in full while the title model has not answered.
	rome, answer := chatTurn(t, s, `{"agent_id":"helper","text":"Plan a trip to Rome\nin May, with museums"}`)
	if answer != "Answer to: Plan a trip to Rome\nin May, with museums" {
		t.Errorf("answer %q", answer)
	}
	if got := p.awaitTitleRequest(t); !strings.Contains(got, "User: Plan a trip to Rome\nin May, with museums\nAssistant: Answer to: Plan a trip") {
		t.Errorf("title request %q; want the message and the answer", got)
	}
	if got := title(testKey, rome); got != "Plan a trip to Rome in May, with…" {
		t.Errorf("title before the title model answered: %q, want the message's first words", got)
	}
	close(p.hold["Plan a trip"])

	// A failing title model leaves the first words.
	broken, _ := chatTurn(t, s, `{"agent_id":"helper","text":"Break the titler with a message longer than eight words, please"}`)
	p.awaitTitleRequest(t)

	// A rename while the title is being made wins.
	renamed, _ := chatTurn(t, s, `{"agent_id":"helper","text":"Rename me"}`)
	p.awaitTitleRequest(t)
	var c struct{ ID, Title string }
	if code := s.call(t, testKey, "PATCH", "/api/conversations/"+renamed, `{"title":"  My own\ttitle "}`, &c); code != 200 || c.ID != renamed || c.Title != "My own title" {
		t.Errorf("PATCH: %d %+v", code, c)
	}
	close(p.hold["Rename me"])

	// Renames refused.
	for _, tc := range []struct {
		name, key, id, body string
		code                int
		says                string
	}{
		{"another user's", bobKey, rome, `{"title":"Mine"}`, 404, "not found"},
		{"unknown", testKey, "conv_nope", `{"title":"x"}`, 404, "not found"},
		{"empty", testKey, rome, `{"title":" \n "}`, 400, "title"},
		{"missing", testKey, rome, `{}`, 400, "title"},
		{"too long", testKey, rome, `{"title":"` + strings.Repeat("x", 201) + `"}`, 400, "at most 200"},
		{"unknown field", testKey, rome, `{"title":"x","pinned":true}`, 400, "pinned"},
	} {
		var e map[string]any
		if code := s.call(t, tc.key, "PATCH", "/api/conversations/"+tc.id, tc.body, &e); code != tc.code || !strings.Contains(fmt.Sprint(e), tc.says) {
			t.Errorf("%s: %d %v; want %d saying %q", tc.name, code, e, tc.code, tc.says)
		}
	}

	// A later turn asks for no title.
	var th struct {
		Messages []struct{ ID string }
	}
	s.call(t, testKey, "GET", "/api/conversations/"+rome, "", &th)
	chatTurn(t, s, fmt.Sprintf(`{"agent_id":"helper","text":"And in June?","conversation_id":%q,"parent_message_id":%q}`, rome, th.Messages[len(th.Messages)-1].ID))

	// Shutting down waits for the titles (run.Service.Settle).
	if code := s.stop(t); code != 0 {
		t.Fatalf("relay serve exited with %d:\n%s", code, s.stderr)
	}
	if n := len(p.prompts()); n != 3 {
		t.Errorf("%d title requests, want 3 (one per new conversation):\n%q", n, p.prompts())
	}
	logs := s.stderr.String()
	if !strings.Contains(logs, "conversation title") || !strings.Contains(logs, "title-mini does not exist") {
		t.Errorf("the title model's failure is not logged:\n%s", logs)
	}
	if strings.Contains(logs, "sk-title-secret-4242") {
		t.Errorf("the endpoint's key is in the logs:\n%s", logs)
	}

	list := func() map[string]string {
		t.Helper()
		code, out, stderr := runCLI(t, vars, "", "conversations", "list", "--json", "--config", cfgPath)
		if code != 0 {
			t.Fatalf("conversations list: %d %s", code, stderr)
		}
		var cs []struct{ ID, Title string }
		if err := json.Unmarshal([]byte(out), &cs); err != nil {
			t.Fatalf("conversations list --json: %v\n%s", err, out)
		}
		titles := map[string]string{}
		for _, c := range cs {
			titles[c.ID] = c.Title
		}
		return titles
	}
	got := list()
	for id, want := range map[string]string{
		rome:    "Rome trip planning",
		broken:  "Break the titler with a message longer than…",
		renamed: "My own title",
	} {
		if got[id] != want {
			t.Errorf("title of %s: %q, want %q", id, got[id], want)
		}
	}

	// The CLI renames, with its flags anywhere on the line; not for another user.
	code, out, stderr := runCLI(t, vars, "", "conversations", "rename", broken, "--config", cfgPath, "Titler", "failure")
	if code != 0 || strings.TrimSpace(out) != broken+": Titler failure" {
		t.Errorf("conversations rename: %d %q %q", code, out, stderr)
	}
	if got := list()[broken]; got != "Titler failure" {
		t.Errorf("title after the CLI's rename: %q", got)
	}
	code, _, stderr = runCLI(t, vars, "", "conversations", "rename", "--user", "bob@example.com", "--config", cfgPath, rome, "Mine")
	if code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("rename of another user's conversation: %d %q", code, stderr)
	}
	code, out, _ = runCLI(t, vars, "", "conversations", "list", "--user", "bob@example.com", "--config", cfgPath)
	if code != 0 || strings.Contains(out, "conv_") {
		t.Errorf("bob's conversations: %d %q", code, out)
	}
	if code, _, stderr := runCLI(t, vars, "", "conversations", "rename", "--config", cfgPath, rome); code != 2 || !strings.Contains(stderr, "title") {
		t.Errorf("rename without a title: %d %q", code, stderr)
	}
}
