package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// citationResidue is what must not be left of a citation marker in an
// exported answer: an anchor, or a LibreChat mark written out or as itself.
var citationResidue = regexp.MustCompile(`turn\d+(?:file|search)\d+|\\ue2|[\x{E200}-\x{E2FF}]|\s[.,]`)

// readJSONL decodes each line of a JSONL file.
func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatalf("%s: %v in %q", path, err, sc.Text())
		}
		rows = append(rows, row)
	}
	return rows
}

// TestRagasExportEndToEnd: runs whose answers
// cite the passages of a file_search call that returned several, exported by
// `relay export ragas` (single- and multi-turn, filtered by user), load with
// Ragas' own EvaluationDataset. The exact shape is in internal/run's golden
// files; here the export of real runs is checked field by field and, when
// RELAY_RAGAS_PYTHON names a Python with ragas installed (.ci/run makes one),
// by testdata/ragas_check.py.
func TestRagasExportEndToEnd(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"inspected","hasToolResult":false},"response":{"toolCalls":[{"name":"file_search","arguments":"{\"query\":\"inspected\"}"}]}},
 {"match":{"userMessage":"inspected","hasToolResult":true},"response":{"content":"Relief valves are inspected every 18 months \\ue202turn0file0, fire doors weekly \ue200\\ue202turn0file1\\ue202turn0file2\ue201."}},
 {"match":{"userMessage":"weather"},"response":{"content":"\\ue202turn0search0 Sunny, says the forecast \\ue202turn0search1."}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - id: plain
    provider: mock
    model: gpt-4o
    instructions: Answer briefly.
`, filepath.Join(dir, "data"), mock))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	filler := strings.Repeat("This section describes general plant organisation and staffing. ", 12)
	pdf := extracttest.PDF(
		"Chapter 1. Pressure relief valves must be inspected every 18 months by a certified inspector. "+filler,
		"Chapter 2. Fire doors are inspected weekly by the shift supervisor. "+filler,
		"Chapter 3. Emergency lights are inspected monthly. "+filler,
	)
	pdfID := s.upload(t, "safety-manual.pdf", pdf)
	s.ready(t, pdfID)
	agent := fmt.Sprintf(`{"id":"reader","name":"Reader","provider":"mock","model":"gpt-4o","instructions":"Cite with the anchors.",
 "tools":["file_search"],"tool_resources":{"file_search":{"file_ids":[%q]}}}`, pdfID)
	if code := s.call(t, testKey, "POST", "/api/agents", agent, nil); code != 201 {
		t.Fatalf("creating the agent: %d", code)
	}
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "bob@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	code, bobKey, _ := runCLI(t, nil, "", "keys", "create", "--config", cfgPath, "--user", "bob@example.com", "--name", "t")
	bobKey = strings.TrimSpace(bobKey)
	if code != 0 {
		t.Fatalf("keys create: %d", code)
	}
	var admin struct{ ID, Email string }
	if code := s.call(t, testKey, "GET", "/api/me", "", &admin); code != 200 || admin.ID == "" {
		t.Fatalf("GET /api/me: %d %+v", code, admin)
	}

	chat := func(key, agentID, text string) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"agent_id": agentID, "text": text})
		req, _ := http.NewRequest("POST", s.base+"/api/chat", strings.NewReader(string(body)))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		evs := readSSE(t, resp, nil)
		if last := evs[len(evs)-1]; last.Type != "run.finished" || last.Data["status"] != "succeeded" {
			t.Fatalf("%s: last event %+v", text, last)
		}
		runID, _ := evs[0].Data["run_id"].(string)
		return runID
	}
	runID := chat(testKey, "reader", "How often is everything inspected?")
	chat(bobKey, "plain", "What is the weather?")

	var detail struct {
		ToolCalls []struct {
			Name    string
			Result  string
			Sources []map[string]any
		} `json:"tool_calls"`
	}
	if code := s.call(t, testKey, "GET", "/api/runs/"+runID, "", &detail); code != 200 || len(detail.ToolCalls) != 1 {
		t.Fatalf("GET run: %d %+v", code, detail)
	}
	passages := len(detail.ToolCalls[0].Sources)
	if passages < 3 || strings.Count(detail.ToolCalls[0].Result, "\n---\n") != passages-1 {
		t.Fatalf("file_search gave %d passages, want 3 or more:\n%s", passages, detail.ToolCalls[0].Result)
	}

	export := func(args ...string) string {
		t.Helper()
		out := filepath.Join(dir, strings.Join(args, "_")+".jsonl")
		code, _, stderr := runCLI(t, nil, "", append([]string{"export", "ragas", "--config", cfgPath, "-o", out}, args...)...)
		if code != 0 {
			t.Fatalf("relay export ragas %v: exit %d\n%s", args, code, stderr)
		}
		return out
	}

	// Single-turn: the admin's run only, one context per passage, a clean answer.
	single := export("--user", admin.ID)
	rows := readJSONL(t, single)
	if len(rows) != 1 {
		t.Fatalf("--user %s: %d samples, want the admin's one", admin.ID, len(rows))
	}
	if got, want := rows[0]["response"], "Relief valves are inspected every 18 months, fire doors weekly."; got != want {
		t.Errorf("response %q, want %q", got, want)
	}
	ctxs, _ := rows[0]["retrieved_contexts"].([]any)
	if len(ctxs) != passages {
		t.Errorf("%d retrieved contexts, want one per passage (%d): %q", len(ctxs), passages, ctxs)
	}
	joined := ""
	for _, c := range ctxs {
		text, _ := c.(string)
		joined += text + "\n"
		if strings.Contains(text, "Anchor:") || strings.Contains(text, "Relevance:") || strings.Contains(text, "\n---\n") {
			t.Errorf("a retrieved context holds more than a passage: %q", text)
		}
	}
	for _, want := range []string{"relief valves must be inspected every 18 months", "Fire doors are inspected weekly", "Emergency lights are inspected monthly"} {
		if !strings.Contains(strings.Join(strings.Fields(joined), " "), want) {
			t.Errorf("no retrieved context holds %q:\n%s", want, joined)
		}
	}

	// Multi-turn: the tool call's args are an object; the ai answer is clean.
	multi := export("--user", admin.Email, "--multi-turn")
	rows = readJSONL(t, multi)
	if len(rows) != 1 {
		t.Fatalf("multi-turn: %d samples, want 1", len(rows))
	}
	msgs, _ := rows[0]["user_input"].([]any)
	var types []string
	for _, m := range msgs {
		m := m.(map[string]any)
		types = append(types, m["type"].(string))
		if m["type"] == "ai" {
			if c, _ := m["content"].(string); citationResidue.MatchString(c) {
				t.Errorf("ai message keeps a citation marker: %q", c)
			}
			for _, tc := range asList(m["tool_calls"]) {
				if args, ok := tc.(map[string]any)["args"].(map[string]any); !ok || args["query"] != "inspected" {
					t.Errorf("tool call args %v, want the object {\"query\": \"inspected\"}", tc)
				}
			}
		}
	}
	if got := strings.Join(types, ","); got != "human,ai,tool,ai" {
		t.Errorf("message types %s, want human,ai,tool,ai", got)
	}

	// Bob's run, by his email; an unknown user is an error.
	bob := readJSONL(t, export("--user", "bob@example.com"))
	if len(bob) != 1 || bob[0]["user_input"] != "What is the weather?" || bob[0]["response"] != "Sunny, says the forecast." || bob[0]["retrieved_contexts"] != nil {
		t.Errorf("Bob's export: %v", bob)
	}
	if code, _, stderr := runCLI(t, nil, "", "export", "ragas", "--config", cfgPath, "--user", "nobody@example.com"); code == 0 || !strings.Contains(stderr, "nobody@example.com") {
		t.Errorf("--user of an unknown user: exit %d, %q", code, stderr)
	}

	// The HTTP route: an admin may name a user; a user may name only themself.
	get := func(key, query string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", s.base+"/api/export/ragas?"+query, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(testKey, "user=bob@example.com"); code != 200 || strings.Count(body, "\n") != 1 || !strings.Contains(body, `"What is the weather?"`) {
		t.Errorf("admin's export of Bob's runs: %d %q", code, body)
	}
	if code, body := get(testKey, ""); code != 200 || strings.Count(body, "\n") != 2 {
		t.Errorf("admin's export of everyone's runs: %d %q", code, body)
	}
	if code, body := get(bobKey, "user="+admin.ID); code != 403 || !strings.Contains(body, "user") {
		t.Errorf("Bob exporting the admin's runs: %d %q, want 403 naming user", code, body)
	}
	if code, body := get(bobKey, "user=Bob@Example.com"); code != 200 || strings.Count(body, "\n") != 1 {
		t.Errorf("Bob exporting his own runs by email: %d %q", code, body)
	}
	if code, _ := get(testKey, "user=nobody@example.com"); code != 404 {
		t.Errorf("admin naming an unknown user: %d, want 404", code)
	}

	// Ragas itself reads both datasets.
	t.Run("ragas", func(t *testing.T) {
		python := os.Getenv("RELAY_RAGAS_PYTHON")
		if python == "" {
			t.Skip("RELAY_RAGAS_PYTHON is not set: no Python with ragas to load the export with EvaluationDataset (.ci/run makes one when PyPI is reachable)")
		}
		check, err := filepath.Abs(filepath.Join("testdata", "ragas_check.py"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(python, check, single, multi).CombinedOutput()
		if err != nil {
			t.Fatalf("ragas_check.py: %v\n%s", err, out)
		}
		t.Logf("ragas: %s", out)
	})
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
