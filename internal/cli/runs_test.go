package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// sseEvent is one event read from a run's stream.
type sseEvent struct {
	ID   int64
	Type string
	Data map[string]any
}

// readSSE reads events from resp until the stream ends or stop returns true.
func readSSE(t *testing.T, resp *http.Response, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur sseEvent
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.Type = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Data)
		case line == "" && cur.Type != "":
			out = append(out, cur)
			if stop != nil && stop(cur) {
				return out
			}
			cur = sseEvent{}
		}
	}
	return out
}

func (s *server) post(t *testing.T, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+testKey)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// faultServer is relay serve with aimock (fixtures given) as provider "mock",
// the in-repo MCP server as "go", and an agent "a" using its tools.
func faultServer(t *testing.T, fixtures string, stats *mcptest.Stats) *server {
	t.Helper()
	bin := mcptest.Peer(t, "PEER_AIMOCK")
	fdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fdir, "f.json"), []byte(fixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	port := mcptest.FreePort(t)
	mcptest.StartProcess(t, port, nil, bin, "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--fixtures", fdir)
	goURL := mcptest.Start(t, mcptest.TransportStreamableHTTP, mcptest.Options{Stats: stats})
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: http://127.0.0.1:%d/v1
mcpServers:
  go:
    type: streamable-http
    url: %s
agents:
  - id: a
    provider: mock
    model: gpt-4o
    tools: [sleep__mcp__go, echo__mcp__go]
`, filepath.Join(dir, "data"), port, goURL))
	return startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
}

func TestChatRetriesOn429(t *testing.T) {
	s := faultServer(t, `{"fixtures":[
 {"match":{"userMessage":"flaky","sequenceIndex":0},"response":{"error":{"message":"Rate limit reached","type":"rate_limit_error"},"status":429,"retryAfter":0}},
 {"match":{"userMessage":"flaky","sequenceIndex":1},"response":{"error":{"message":"Rate limit reached","type":"rate_limit_error"},"status":429,"retryAfter":0}},
 {"match":{"userMessage":"flaky"},"response":{"content":"Third time lucky."}}]}`, nil)
	resp := s.post(t, "/api/chat", `{"agent_id":"a","text":"flaky"}`, nil)
	defer resp.Body.Close()
	evs := readSSE(t, resp, nil)
	last := evs[len(evs)-1]
	msg, _ := last.Data["message"].(map[string]any)
	if last.Type != "run.finished" || last.Data["status"] != "succeeded" || msg["text"] != "Third time lucky." {
		t.Fatalf("last event %+v", last)
	}
	if n := strings.Count(s.stderr.String(), "model provider retry"); n != 2 {
		t.Errorf("%d retries logged, want 2:\n%s", n, s.stderr)
	}
}

func TestChatStreamCut(t *testing.T) {
	s := faultServer(t, `{"fixtures":[
 {"match":{"userMessage":"long story"},"response":{"content":"Once upon a time there was a very long story that never ended."},"chunkSize":5,"truncateAfterChunks":3,"latency":20}]}`, nil)
	resp := s.post(t, "/api/chat", `{"agent_id":"a","text":"long story"}`, nil)
	defer resp.Body.Close()
	evs := readSSE(t, resp, nil)
	var errEv *sseEvent
	for i := range evs {
		if evs[i].Type == "error" {
			errEv = &evs[i]
		}
	}
	last := evs[len(evs)-1]
	msg, _ := last.Data["message"].(map[string]any)
	if errEv == nil || !strings.Contains(fmt.Sprint(errEv.Data["message"]), "cut off") {
		t.Errorf("error event %+v", errEv)
	}
	if last.Data["status"] != "failed" || msg == nil || !strings.HasPrefix(fmt.Sprint(msg["text"]), "Once ") {
		t.Errorf("last event %+v", last)
	}
}

func TestChatAbortCancelsTheToolCall(t *testing.T) {
	stats := &mcptest.Stats{}
	s := faultServer(t, `{"fixtures":[
 {"match":{"userMessage":"wait"},"response":{"toolCalls":[{"name":"sleep__mcp__go","arguments":"{\"ms\":20000}"}]}}]}`, stats)
	resp := s.post(t, "/api/chat", `{"agent_id":"a","text":"wait"}`, nil)
	defer resp.Body.Close()
	runID := resp.Header.Get("Relay-Run-Id")
	readSSE(t, resp, func(e sseEvent) bool { return e.Type == "tool.started" })
	waitFor(t, 5*time.Second, "the call reaching the MCP server", func() bool { return stats.Calls("sleep") != 0 })
	began := time.Now()
	var r map[string]any
	ab := s.post(t, "/api/runs/"+runID+"/abort", "", nil)
	_ = json.NewDecoder(ab.Body).Decode(&r)
	ab.Body.Close()
	if r["status"] != "cancelled" || time.Since(began) > 5*time.Second {
		t.Fatalf("abort: %v after %s", r, time.Since(began))
	}
	waitFor(t, 5*time.Second, "the call's cancellation seen by the MCP server", func() bool { return stats.Cancelled() != 0 })
}

func TestChatReconnectMissesNothing(t *testing.T) {
	s := faultServer(t, `{"fixtures":[
 {"match":{"userMessage":"slow"},"response":{"content":"one two three four five six seven eight nine ten"},"chunkSize":4,"latency":30}]}`, nil)
	resp := s.post(t, "/api/chat", `{"agent_id":"a","text":"slow"}`, nil)
	runID := resp.Header.Get("Relay-Run-Id")
	first := readSSE(t, resp, func(e sseEvent) bool { return e.Type == "message.delta" && e.ID >= 3 })
	resp.Body.Close() // the client goes away mid-answer
	lastID := first[len(first)-1].ID
	req, _ := http.NewRequest("GET", s.base+"/api/runs/"+runID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Last-Event-ID", fmt.Sprint(lastID))
	again, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Body.Close()
	rest := readSSE(t, again, nil)
	all := append(first, rest...)
	var text strings.Builder
	for i, e := range all {
		if e.ID != int64(i+1) {
			t.Fatalf("event %d has id %d: a gap or a repeat", i, e.ID)
		}
		if e.Type == "message.delta" {
			text.WriteString(fmt.Sprint(e.Data["text"]))
		}
	}
	if got := text.String(); got != "one two three four five six seven eight nine ten" || all[len(all)-1].Type != "run.finished" {
		t.Errorf("text %q, last %+v", got, all[len(all)-1])
	}
	// After the run finished, a reconnect replays from the store.
	req2, _ := http.NewRequest("GET", s.base+"/api/runs/"+runID+"/events", nil)
	req2.Header.Set("Authorization", "Bearer "+testKey)
	req2.Header.Set("Last-Event-ID", "1")
	late, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Body.Close()
	if replay := readSSE(t, late, nil); len(replay) != len(all)-1 {
		t.Errorf("replay after the end: %d events, want %d", len(replay), len(all)-1)
	}
}
