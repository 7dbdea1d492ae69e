package cli

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// With database.write_behind, a run's records wait to be committed, yet what
// the server answers next sees them at once, and a clean stop commits what
// still waits.
func TestWriteBehindServer(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"2+3"},"response":{"content":"The sum is 5."}},
 {"match":{"userMessage":"2+4"},"response":{"content":"The sum is 6."}}]}`)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	// A delay longer than the test: only reads, writes and the stop commit.
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
database:
  write_behind: 1s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
      apiKey: sk-test
agents:
  - {id: calc, provider: mock, model: gpt-4o}
`, data, mock))
	s := startServer(t, cfg, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	ask := func(q string) string {
		var out struct {
			Choices []struct {
				Message struct{ Content string }
			}
		}
		body := fmt.Sprintf(`{"model":"calc","messages":[{"role":"user","content":%q}]}`, q)
		if code := s.call(t, testKey, "POST", "/v1/chat/completions", body, &out); code != 200 || len(out.Choices) != 1 {
			t.Fatalf("POST /v1/chat/completions %q: %d %+v", q, code, out)
		}
		return out.Choices[0].Message.Content
	}
	if got := ask("2+3"); got != "The sum is 5." {
		t.Fatalf("answer %q", got)
	}
	var list struct {
		Data []struct{ ID string }
	}
	if code := s.call(t, testKey, "GET", "/api/conversations", "", &list); code != 200 || len(list.Data) != 1 {
		t.Fatalf("GET /api/conversations right after the answer: %d %+v", code, list)
	}
	var conv struct {
		Messages []struct {
			Role, Text string
		}
	}
	if code := s.call(t, testKey, "GET", "/api/conversations/"+list.Data[0].ID, "", &conv); code != 200 ||
		len(conv.Messages) != 2 || conv.Messages[1].Text != "The sum is 5." {
		t.Fatalf("the conversation right after the answer: %d %+v", code, conv)
	}

	// Answered, then the server stops before anything reads it.
	if got := ask("2+4"); got != "The sum is 6." {
		t.Fatalf("answer %q", got)
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("relay serve exited %d:\n%s", code, s.stderr)
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var messages, succeeded int
	if err := db.QueryRow(`SELECT COUNT(*) FROM messages`).Scan(&messages); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`SELECT COUNT(*) FROM runs WHERE status = 'succeeded'`).Scan(&succeeded); err != nil {
		t.Fatal(err)
	}
	if messages != 4 || succeeded != 2 {
		t.Errorf("after a clean stop: %d messages and %d succeeded runs stored, want 4 and 2", messages, succeeded)
	}
}
