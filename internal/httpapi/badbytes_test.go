package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/run/runtest"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// A NUL or invalid UTF-8 in a request's strings is stored as U+FFFD on every
// engine (docs/api.md, "Text that cannot be stored as it is"): the requests
// are answered as usual, never with a 500, and nothing waits for ever.
func TestBadBytesInRequests(t *testing.T) {
	for _, engine := range []struct {
		name string
		open func(t *testing.T) store.Store
	}{
		{"sqlite", func(t *testing.T) store.Store {
			st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"postgres", func(t *testing.T) store.Store {
			base := os.Getenv("TEST_POSTGRES_URL")
			if base == "" {
				t.Skip("TEST_POSTGRES_URL is not set")
			}
			st, err := postgres.Open(t.Context(), pgtest.Schema(t, base, "relay_http"), postgres.Options{ConnectTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(engine.name, func(t *testing.T) {
			st := engine.open(t)
			t.Cleanup(func() { st.Close() })
			tm := runtest.NewTeamOn(t, st, map[string]agent.Spec{"echo": {}}, func(string, *llm.Request) llmtest.Turn {
				return llmtest.Turn{Text: []string{"got \x00 it \xff"}}
			})
			_, key, err := tm.Auth.CreateKey(t.Context(), tm.User.ID, "test")
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(newAPI(t, httpapi.Options{Auth: tm.Auth, Agents: tm.Agents, Runs: tm.Runs, MaxBodyBytes: 1 << 20}))
			t.Cleanup(srv.Close)
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			send := func(method, path, body string) (int, string) {
				t.Helper()
				req, err := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+key)
				req.Header.Set("Content-Type", "application/json")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				defer resp.Body.Close()
				raw, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("%s %s: %v", method, path, err)
				}
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
				}
				return resp.StatusCode, string(raw)
			}

			// An agent named with a NUL and an invalid byte.
			code, out := send("POST", "/api/agents", "{\"id\":\"agent_bytes\",\"name\":\"Bad\\u0000name \xff\",\"provider\":\"openAI\",\"model\":\"m\"}")
			var a struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			}
			if err := json.Unmarshal([]byte(out), &a); err != nil || code != http.StatusCreated || a.Name != "Bad\uFFFDname \uFFFD" {
				t.Errorf("creating the agent: %d %s", code, out)
			}
			if code, out := send("GET", "/api/agents/"+a.ID, ""); code != http.StatusOK || !strings.Contains(out, `"name":"Bad\ufffdname \ufffd"`) && !strings.Contains(out, "\"name\":\"Bad\uFFFDname \uFFFD\"") {
				t.Errorf("reading the agent: %d %s", code, out)
			}
			if code, out := send("GET", "/api/agents/agent_%00x", ""); code != http.StatusNotFound {
				t.Errorf("an agent id with a NUL: %d %s, want 404", code, out)
			}

			// Chat text with a NUL: the run streams to its end.
			code, out = send("POST", "/api/chat", `{"agent_id":"echo","text":"hi\u0000there"}`)
			if code != http.StatusOK || !strings.Contains(out, "event: run.finished") {
				t.Fatalf("chat: %d %s", code, out)
			}
			var started struct {
				ConversationID string `json:"conversation_id"`
			}
			for line := range strings.SplitSeq(out, "\n") {
				if d, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(d, `"conversation_id"`) {
					_ = json.Unmarshal([]byte(d), &started)
					break
				}
			}
			if started.ConversationID == "" {
				t.Fatalf("no conversation in %s", out)
			}
			code, out = send("GET", "/api/conversations/"+started.ConversationID, "")
			var conv struct {
				Messages []struct {
					Role string `json:"role"`
					Text string `json:"text"`
				} `json:"messages"`
			}
			if err := json.Unmarshal([]byte(out), &conv); err != nil || code != http.StatusOK {
				t.Fatalf("reading the conversation: %d %s", code, out)
			}
			var texts []string
			for _, m := range conv.Messages {
				texts = append(texts, m.Role+": "+m.Text)
			}
			if want := "user: hi\uFFFDthere|assistant: got \uFFFD it \uFFFD"; strings.Join(texts, "|") != want {
				t.Errorf("the conversation's messages %q, want %q", texts, want)
			}
			if code, out := send("PATCH", "/api/conversations/"+started.ConversationID, `{"title":"New\u0000title"}`); code != http.StatusOK || !strings.Contains(out, "New\uFFFDtitle") {
				t.Errorf("renaming: %d %s", code, out)
			}
			if code, out := send("GET", "/api/conversations/conv_%00", ""); code != http.StatusNotFound {
				t.Errorf("a conversation id with a NUL: %d %s, want 404", code, out)
			}

			// The OpenAI-compatible endpoint too.
			if code, out := send("POST", "/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi\u0000"}]}`); code != http.StatusOK {
				t.Errorf("/v1: %d %s", code, out)
			}
		})
	}
}
