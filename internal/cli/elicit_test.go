package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// streamEvent is one event of a run's stream.
type streamEvent struct {
	Type string
	Data json.RawMessage
}

// chatStream posts a chat message with key and calls on for each event of the
// run's stream until run.finished, which it returns.
func chatStream(t *testing.T, base, key, body string, on func(streamEvent)) streamEvent {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/api/chat", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("POST /api/chat: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var e streamEvent
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			e.Type = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			e.Data = json.RawMessage(v)
		} else if line == "" && e.Type != "" {
			on(e)
			if e.Type == "run.finished" {
				return e
			}
			e = streamEvent{}
		}
	}
	t.Fatalf("the stream ended without run.finished: %v", sc.Err())
	return e
}

// elicitFixtures: the model calls the reference server's elicitation tool for
// "sign me up", then answers.
const elicitFixtures = `{"fixtures":[
 {"match":{"userMessage":"sign me up","hasToolResult":false},"response":{"toolCalls":[{"name":"trigger-elicitation-request__mcp__everything","arguments":"{}"}]}},
 {"match":{"userMessage":"sign me up","hasToolResult":true},"response":{"content":"You are signed up."}}]}`

// elicitConfig is a config with aimock as the model and the reference server
// over stdio, whose questions wait timeoutMS.
func elicitConfig(t *testing.T, dir, mock, everything string, timeoutMS int, extra ...string) string {
	return writeConfig(t, dir, strings.Join(extra, "")+fmt.Sprintf(`server:
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
    elicitationTimeout: %d
agents:
  - id: signup
    provider: mock
    model: gpt-4o
    instructions: Use the tools.
    tools: [trigger-elicitation-request__mcp__everything]
`, filepath.Join(dir, "data"), mock, everything, timeoutMS))
}

// TestElicitationOverHTTP: the reference server asks a question in the middle
// of the tool call; the run's stream shows it with its schema, the answer
// posted to the API reaches the server with the schema's defaults filled in,
// and the model reads them in the tool's result. A bad answer is a 400 naming
// the field, a second answer a 409.
func TestElicitationOverHTTP(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, elicitFixtures)
	dir := t.TempDir()
	s := startServer(t, elicitConfig(t, dir, mock, everything, 300000), map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	var runID, eid string
	var types []string
	fin := chatStream(t, s.base, testKey, `{"agent_id":"signup","text":"Please sign me up."}`, func(e streamEvent) {
		types = append(types, e.Type)
		switch e.Type {
		case "run.started":
			var d struct {
				RunID string `json:"run_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			runID = d.RunID
		case "elicitation.requested":
			var d struct {
				ID, Server, Mode, Message string
				ToolCallID                string          `json:"tool_call_id"`
				Schema                    json.RawMessage `json:"requested_schema"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			eid = d.ID
			if d.Server != "everything" || d.Mode != "form" || d.ToolCallID == "" || !strings.Contains(string(d.Schema), `"firstLine"`) {
				t.Errorf("elicitation.requested %s", e.Data)
			}
			path := "/api/runs/" + runID + "/elicitations/" + eid
			var bad struct {
				Error struct {
					Fields []struct{ Field string }
				}
			}
			if code := s.call(t, testKey, "POST", path, `{"action":"accept","content":{"name":"Ann Smith","integer":500}}`, &bad); code != 400 ||
				len(bad.Error.Fields) != 1 || bad.Error.Fields[0].Field != "content.integer" {
				t.Errorf("an answer out of bounds: %d %+v", code, bad)
			}
			var answered map[string]any
			if code := s.call(t, testKey, "POST", path, `{"action":"accept","content":{"name":"Ann Smith","check":true,"email":"ann@example.com"}}`, &answered); code != 200 {
				t.Errorf("answer: %d %v", code, answered)
			}
			if code := s.call(t, testKey, "POST", path, `{"action":"decline"}`, nil); code != 409 {
				t.Errorf("a second answer: %d", code)
			}
		}
	})
	if eid == "" {
		t.Fatalf("no elicitation.requested among %v", types)
	}
	if !strings.Contains(string(fin.Data), `"succeeded"`) {
		t.Errorf("run.finished %s", fin.Data)
	}
	if want := "elicitation.requested elicitation.answered tool.finished"; !strings.Contains(strings.Join(types, " "), want) {
		t.Errorf("events %v, want %q in order", types, want)
	}
	j := journal(t, mock)
	for _, want := range []string{"Ann Smith", "ann@example.com", "It was a dark and stormy night."} {
		if !strings.Contains(j, want) {
			t.Errorf("the model never read %q:\n%.3000s", want, j)
		}
	}
}

// TestElicitationAnsweredFromTheCommandLine: `relay runs answer` answers the
// question a run's stream shows, as its user; the server gets the answer and
// the run goes on. A second answer is refused.
func TestElicitationAnsweredFromTheCommandLine(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, elicitFixtures)
	dir := t.TempDir()
	cfg := elicitConfig(t, dir, mock, everything, 300000)
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	s := startServer(t, cfg, vars)

	var runID, eid string
	fin := chatStream(t, s.base, testKey, `{"agent_id":"signup","text":"Please sign me up."}`, func(e streamEvent) {
		var d struct {
			RunID string `json:"run_id"`
			ID    string `json:"id"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "run.started":
			runID = d.RunID
		case "elicitation.requested":
			eid = d.ID
			code, out, errOut := runCLI(t, vars, "", "runs", "answer", runID, eid, "--content", `{"name":"Ann Smith","check":true,"email":"ann@example.com"}`, "--config", cfg)
			if code != 0 {
				t.Errorf("relay runs answer: exit %d\n%s%s", code, out, errOut)
			}
			if code, _, errOut := runCLI(t, vars, "", "runs", "answer", runID, eid, "--action", "decline", "--config", cfg); code == 0 || errOut == "" {
				t.Errorf("a second answer: exit %d, stderr %q; want it refused", code, errOut)
			}
		}
	})
	if eid == "" || !strings.Contains(string(fin.Data), `"succeeded"`) {
		t.Fatalf("elicitation %q, run.finished %s", eid, fin.Data)
	}
	if j := journal(t, mock); !strings.Contains(j, "Ann Smith") {
		t.Errorf("the model never read the answer:\n%.3000s", j)
	}
}

// TestAnswerFlagsCheckedFirst: `relay runs answer` refuses a bad --action or
// --content as a usage error (exit 2) before it opens anything.
func TestAnswerFlagsCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.yaml") // never read
	for _, args := range [][]string{{"--action", "maybe"}, {"--content", "[1]"}} {
		code, _, stderr := runCLI(t, nil, "", append([]string{"runs", "answer", "run_1", "eli_1", "--config", missing}, args...)...)
		if code != 2 || !strings.Contains(stderr, args[0]) {
			t.Errorf("runs answer %q: exit %d, %q; want 2 naming %s", args, code, stderr, args[0])
		}
	}
}

// TestElicitationTimeout: a question nobody answers within the server's
// elicitationTimeout is declined, and the run says so.
func TestElicitationTimeout(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, elicitFixtures)
	dir := t.TempDir()
	s := startServer(t, elicitConfig(t, dir, mock, everything, 300), map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var answered json.RawMessage
	chatStream(t, s.base, testKey, `{"agent_id":"signup","text":"Please sign me up."}`, func(e streamEvent) {
		if e.Type == "elicitation.answered" {
			answered = e.Data
		}
	})
	if !strings.Contains(string(answered), `"action":"decline"`) || !strings.Contains(string(answered), `"reason":"timeout"`) {
		t.Errorf("elicitation.answered %s", answered)
	}
	if j := journal(t, mock); !strings.Contains(j, "decline") {
		t.Errorf("the model never read that the question was declined:\n%.3000s", j)
	}
}

// TestElicitationAnsweredOnAnotherReplica: two Relay processes on one
// Postgres database; the run (and its tool call) is on the first, the answer
// is posted to the second, and reaches the call through the database.
func TestElicitationAnsweredOnAnotherReplica(t *testing.T) {
	pg := os.Getenv("TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("TEST_POSTGRES_URL is not set: skipping the two-replica elicitation test")
	}
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	mock := llmtest.StartAimock(t, elicitFixtures)
	db := fmt.Sprintf("database:\n  url: %q\n", schemaURL(t, pg))
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	a := startServer(t, elicitConfig(t, t.TempDir(), mock, everything, 300000, db), vars)
	b := startServer(t, elicitConfig(t, t.TempDir(), mock, everything, 300000, db), vars)

	var runID string
	answered := false
	fin := chatStream(t, a.base, testKey, `{"agent_id":"signup","text":"Please sign me up."}`, func(e streamEvent) {
		switch e.Type {
		case "run.started":
			var d struct {
				RunID string `json:"run_id"`
			}
			_ = json.Unmarshal(e.Data, &d)
			runID = d.RunID
		case "elicitation.requested":
			var d struct{ ID string }
			_ = json.Unmarshal(e.Data, &d)
			body := `{"action":"accept","content":{"name":"Bea Jones","check":true,"email":"bea@example.com"}}`
			if code := b.call(t, testKey, "POST", "/api/runs/"+runID+"/elicitations/"+d.ID, body, nil); code != 200 {
				t.Errorf("answer on the other replica: %d", code)
			}
			answered = true
		}
	})
	if !answered || !strings.Contains(string(fin.Data), `"succeeded"`) {
		t.Fatalf("answered %v; run.finished %s", answered, fin.Data)
	}
	if j := journal(t, mock); !strings.Contains(j, "Bea Jones") {
		t.Errorf("the model never read the answer given on the other replica:\n%.3000s", j)
	}
}
