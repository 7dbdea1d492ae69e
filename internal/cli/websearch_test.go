package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/tool/builtin/websearchtest"
)

// TestWebSearchEndToEnd: an agent whose model
// (aimock) calls web_search gets the results of the in-repo fake SearXNG,
// answers citing one, and the run's saved tool call carries the results as
// sources; the top result's page, on loopback, is not fetched.
func TestWebSearchEndToEnd(t *testing.T) {
	pages := websearchtest.StartPages(t, map[string]websearchtest.Page{
		"/rotterdam": {Body: "<p>Rotterdam: 12 °C and light rain.</p>"},
	})
	searx := websearchtest.StartSearxng(t, websearchtest.SearxngOptions{
		APIKey: "searx-gateway-key-0077",
		Results: map[string][]websearchtest.Result{"Rotterdam weather now": {
			{Title: "Weather in Rotterdam", URL: pages.URL + "/rotterdam", Content: "12 °C, light rain"},
			{Title: "Rotterdam hourly forecast", URL: "https://weather.example/rotterdam/hourly", Content: "Rain until 15:00"},
		}},
	})

	mock := llmtest.StartAimock(t, `{"fixtures":[
 {"match":{"userMessage":"weer in Rotterdam","hasToolResult":false},"response":{"toolCalls":[{"name":"web_search","arguments":"{\"query\":\"Rotterdam weather now\"}"}]}},
 {"match":{"userMessage":"weer in Rotterdam","hasToolResult":true},"response":{"content":"Het is 12 °C met lichte regen \\ue202turn0search0."}}]}`)

	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
webSearch:
  searchProvider: searxng
  searxngInstanceUrl: %s
  searxngApiKey: "${SEARXNG_API_KEY}"
  safeSearch: 2
  fetchPages: 1
agents:
  - id: web
    provider: mock
    model: gpt-4o
    instructions: Answer with sources.
    tools: [web_search]
`, filepath.Join(dir, "data"), mock, searx.URL))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey, "SEARXNG_API_KEY": "searx-gateway-key-0077"})

	resp := s.post(t, "/api/chat", `{"agent_id":"web","text":"weer in Rotterdam"}`, nil)
	defer resp.Body.Close()
	evs := readSSE(t, resp, nil)
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	runID, _ := evs[0].Data["run_id"].(string)
	last := evs[len(evs)-1]
	msg, _ := last.Data["message"].(map[string]any)
	if last.Type != "run.finished" || last.Data["status"] != "succeeded" || msg["text"] != "Het is 12 °C met lichte regen \\ue202turn0search0." {
		t.Fatalf("last event %+v", last)
	}
	// The answer carries its sources, in the order of the results.
	if srcs, _ := msg["sources"].([]any); len(srcs) != 2 || srcs[0].(map[string]any)["url"] != pages.URL+"/rotterdam" || srcs[1].(map[string]any)["anchor"] != `\ue202turn0search1` {
		t.Errorf("answer sources %v", msg["sources"])
	}

	// The search reached the fake instance as SearXNG's API has it.
	reqs := searx.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d searches, want 1", len(reqs))
	}
	if q := reqs[0].Query; q.Get("q") != "Rotterdam weather now" || q.Get("format") != "json" || q.Get("safesearch") != "2" || reqs[0].Header.Get("X-API-Key") != "searx-gateway-key-0077" {
		t.Errorf("search request %+v", reqs[0])
	}

	// The run record: the tool call with its result text and its sources.
	var detail struct {
		ToolCalls []struct {
			Name    string `json:"name"`
			Result  string `json:"result"`
			IsError bool   `json:"is_error"`
			Sources []struct {
				Kind, Anchor, Title, URL, Snippet string
			} `json:"sources"`
		} `json:"tool_calls"`
	}
	if code := s.call(t, testKey, "GET", "/api/runs/"+runID, "", &detail); code != 200 {
		t.Fatalf("GET run: %d", code)
	}
	if len(detail.ToolCalls) != 1 {
		t.Fatalf("tool calls %+v", detail.ToolCalls)
	}
	tc := detail.ToolCalls[0]
	if tc.Name != "web_search" || tc.IsError {
		t.Errorf("tool call %+v", tc)
	}
	for _, want := range []string{
		"[1] Weather in Rotterdam\nAnchor: \\ue202turn0search0\nURL: " + pages.URL + "/rotterdam\nSnippet: 12 °C, light rain\nPage not read: 127.0.0.1 is a loopback address, which Relay does not connect to.",
		"[2] Rotterdam hourly forecast\nAnchor: \\ue202turn0search1\nURL: https://weather.example/rotterdam/hourly",
	} {
		if !strings.Contains(tc.Result, want) {
			t.Errorf("tool result lacks %q:\n%s", want, tc.Result)
		}
	}
	if len(tc.Sources) != 2 ||
		tc.Sources[0].Kind != "web" || tc.Sources[0].Anchor != "\\ue202turn0search0" || tc.Sources[0].URL != pages.URL+"/rotterdam" || tc.Sources[0].Title != "Weather in Rotterdam" ||
		tc.Sources[1].Anchor != "\\ue202turn0search1" || tc.Sources[1].URL != "https://weather.example/rotterdam/hourly" || tc.Sources[1].Snippet != "Rain until 15:00" {
		t.Errorf("sources %+v", tc.Sources)
	}
	if n := pages.Hits("/rotterdam"); n != 0 {
		t.Errorf("the loopback page was fetched %d times", n)
	}

	// The model read the results under their anchors.
	if j := journal(t, mock); !strings.Contains(j, `Anchor: \\ue202turn0search0`) && !strings.Contains(j, "Anchor: \\ue202turn0search0") {
		t.Errorf("the model never got the anchors:\n%.3000s", j)
	}
	// The key stays out of the logs.
	if strings.Contains(s.stderr.String(), "searx-gateway-key-0077") {
		t.Error("the SearXNG key is in the log")
	}
}

// TestWebSearchNotConfigured: an agent listing web_search on a server without
// a search provider gets a readable refusal, and the run still answers.
func TestWebSearchNotConfigured(t *testing.T) {
	bin := mcptest.Peer(t, "PEER_AIMOCK")
	fdir := t.TempDir()
	fixtures := `{"fixtures":[
 {"match":{"userMessage":"search please","hasToolResult":false},"response":{"toolCalls":[{"name":"web_search","arguments":"{\"query\":\"anything\"}"}]}},
 {"match":{"userMessage":"search please","hasToolResult":true},"response":{"content":"I could not search the web."}}]}`
	if err := os.WriteFile(filepath.Join(fdir, "web.json"), []byte(fixtures), 0o600); err != nil {
		t.Fatal(err)
	}
	port := mcptest.FreePort(t)
	mcptest.StartProcess(t, port, nil, bin, "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--fixtures", fdir)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: http://127.0.0.1:%d/v1
webSearch:
  searchProvider: serper
  serperApiKey: "${SERPER_API_KEY}"
agents:
  - id: web
    provider: mock
    model: gpt-4o
    tools: [web_search]
`, filepath.Join(dir, "data"), port))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	if !strings.Contains(s.stderr.String(), "web search is not available") {
		t.Errorf("no warning at start-up:\n%s", s.stderr)
	}
	resp := s.post(t, "/api/chat", `{"agent_id":"web","text":"search please"}`, nil)
	defer resp.Body.Close()
	evs := readSSE(t, resp, nil)
	var finished map[string]any
	for _, e := range evs {
		if e.Type == "tool.finished" {
			finished = e.Data
		}
	}
	if finished == nil || finished["is_error"] != true || !strings.Contains(fmt.Sprint(finished["result"]), "Web search is not available on this server: serper needs an API key (webSearch.serperApiKey)") {
		t.Errorf("tool.finished %+v", finished)
	}
	if last := evs[len(evs)-1]; last.Data["status"] != "succeeded" {
		t.Errorf("last event %+v", last)
	}
}
