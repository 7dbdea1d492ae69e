package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin"
	"github.com/relay-ai/relay/internal/tool/builtin/websearchtest"
)

// rotterdam are the fake instance's results for "Rotterdam weather now".
var rotterdam = []websearchtest.Result{
	{Title: "Weather in Rotterdam", URL: "https://weather.example/rotterdam", Content: "12 °C, light rain"},
	{Title: "Rotterdam hourly forecast", URL: "https://weather.example/rotterdam/hourly", Content: "Rain until 15:00, then dry"},
	{Title: "KNMI warnings", URL: "https://knmi.example/warnings", Content: "No warnings for Zuid-Holland"},
}

func searxngTool(t *testing.T, o builtin.WebSearchOptions) (tool.Tool, *websearchtest.Searxng) {
	t.Helper()
	fake := websearchtest.StartSearxng(t, websearchtest.SearxngOptions{Results: map[string][]websearchtest.Result{"Rotterdam weather now": rotterdam}})
	s, err := builtin.NewWebSearcher(builtin.WebProvider{Name: builtin.ProviderSearxng, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	o.Searcher = s
	return builtin.WebSearch(o), fake
}

func TestWebSearchResults(t *testing.T) {
	ws, fake := searxngTool(t, builtin.WebSearchOptions{SafeSearch: 1})
	res, err := ws.Call(context.Background(), "u1", json.RawMessage(`{"query":"  Rotterdam   weather now "}`))
	if err != nil || res.IsError {
		t.Fatalf("result %+v, %v", res, err)
	}
	want := "Web search results for \"Rotterdam weather now\": 3 results. Cite a result by copying its anchor (e.g. \\ue202turn0search0) right after the statement it supports; do not cite anything else.\n" +
		"\n[1] Weather in Rotterdam\nAnchor: \\ue202turn0search0\nURL: https://weather.example/rotterdam\nSnippet: 12 °C, light rain\n" +
		"\n[2] Rotterdam hourly forecast\nAnchor: \\ue202turn0search1\nURL: https://weather.example/rotterdam/hourly\nSnippet: Rain until 15:00, then dry\n" +
		"\n[3] KNMI warnings\nAnchor: \\ue202turn0search2\nURL: https://knmi.example/warnings\nSnippet: No warnings for Zuid-Holland"
	if diff := cmp.Diff(want, res.Text); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
	var sources []tool.Source
	for i, r := range rotterdam {
		sources = append(sources, tool.Source{Kind: tool.SourceWeb, Anchor: fmt.Sprintf("\\ue202turn0search%d", i), Title: r.Title, URL: r.URL, Snippet: r.Content})
	}
	if diff := cmp.Diff(sources, res.Sources); diff != "" {
		t.Errorf("sources (-want +got):\n%s", diff)
	}
	if !strings.Contains(res.Text, `\ue202turn0search0`) || strings.ContainsRune(res.Text, '\ue202') {
		t.Error("the anchors are not the six characters \\ue202 written out, like file_search's")
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Query.Get("q") != "Rotterdam weather now" || reqs[0].Query.Get("safesearch") != "1" || reqs[0].Query.Get("format") != "json" {
		t.Errorf("requests %+v", reqs)
	}
}

func TestWebSearchMaxResults(t *testing.T) {
	ws, _ := searxngTool(t, builtin.WebSearchOptions{MaxResults: 2})
	res, err := ws.Call(context.Background(), "u1", json.RawMessage(`{"query":"rotterdam weather now"}`))
	if err != nil || res.IsError || len(res.Sources) != 2 || strings.Contains(res.Text, "KNMI") {
		t.Errorf("result %+v, %v", res, err)
	}
}

func TestWebSearchNothingFound(t *testing.T) {
	ws, _ := searxngTool(t, builtin.WebSearchOptions{})
	res, err := ws.Call(context.Background(), "u1", json.RawMessage(`{"query":"zxqv nothing"}`))
	if err != nil || res.IsError || len(res.Sources) != 0 || !strings.Contains(res.Text, `The web search for "zxqv nothing" found nothing.`) {
		t.Errorf("result %+v, %v", res, err)
	}
}

func TestWebSearchArguments(t *testing.T) {
	ws, fake := searxngTool(t, builtin.WebSearchOptions{})
	tests := []struct{ name, args, want string }{
		{"missing query", `{}`, `Invalid arguments for web_search: missing "query"; send {"query": "<3 to 6 keywords>"}.`},
		{"empty query", `{"query":"  "}`, `Invalid arguments for web_search: "query" is empty; send a few keywords, e.g. {"query": "<3 to 6 keywords>"}.`},
		{"number", `{"query":5}`, `Invalid arguments for web_search: "query" must be a string, not a JSON number; send {"query": "<3 to 6 keywords>"}.`},
		{"unknown argument", `{"query":"a","count":3}`, `Invalid arguments for web_search: unknown argument "count"; send only {"query": "<3 to 6 keywords>"}.`},
		{"not JSON", `query=a`, `Invalid arguments for web_search: the arguments are not valid JSON (error at byte 1); send one JSON object: {"query": "<3 to 6 keywords>"}.`},
		{"too long", `{"query":"` + strings.Repeat("word ", 100) + `"}`, `Invalid arguments for web_search: "query" has 499 characters, more than 400; send 3 to 6 keywords.`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := ws.Call(context.Background(), "u1", json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || res.Text != tt.want {
				t.Errorf("result %+v\nwant text %s", res, tt.want)
			}
		})
	}
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("%d searches for bad arguments", n)
	}
}

func TestWebSearchNotConfigured(t *testing.T) {
	res, err := builtin.WebSearch(builtin.WebSearchOptions{Unavailable: "searxng needs the address of a SearXNG instance (webSearch.searxngInstanceUrl)"}).
		Call(context.Background(), "u1", json.RawMessage(`{"query":"a b c"}`))
	want := "Web search is not available on this server: searxng needs the address of a SearXNG instance (webSearch.searxngInstanceUrl). Answer without searching, and say that you could not search the web."
	if err != nil || !res.IsError || res.Text != want {
		t.Errorf("result %+v, %v", res, err)
	}
}

// TestWebSearchTimeout: a provider that does not answer makes a readable
// error result once the search timeout passes.
func TestWebSearchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	s, _ := builtin.NewWebSearcher(builtin.WebProvider{Name: builtin.ProviderSearxng, BaseURL: srv.URL})
	res, err := builtin.WebSearch(builtin.WebSearchOptions{Searcher: s, Timeout: 50 * time.Millisecond}).
		Call(context.Background(), "u1", json.RawMessage(`{"query":"slow"}`))
	if err != nil || !res.IsError || res.Text != "Web search failed: searxng could not be reached: no answer in time. Try once more later, or answer without searching and say so." {
		t.Errorf("result %+v, %v", res, err)
	}
}

// TestWebSearchCancelled: a cancelled run is an infrastructure failure, not
// something for the model to read.
func TestWebSearchCancelled(t *testing.T) {
	ws, _ := searxngTool(t, builtin.WebSearchOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ws.Call(ctx, "u1", json.RawMessage(`{"query":"rotterdam weather now"}`)); err == nil {
		t.Error("no error for a cancelled call")
	}
}

// TestWebSearchMatchesItsPrompt: what the model is told about web_search is
// what the tool accepts.
func TestWebSearchMatchesItsPrompt(t *testing.T) {
	pt, ok := prompt.BuiltinTool(prompt.WebSearch)
	if !ok || pt.Name != builtin.WebSearchName || pt.Description != builtin.WebSearchDescription {
		t.Fatalf("prompt tool %+v", pt)
	}
	raw, err := json.Marshal(pt.Parameters)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	_ = json.Unmarshal(raw, &got)
	b, _ := json.Marshal(builtin.WebSearchSchema())
	_ = json.Unmarshal(b, &want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-tool +prompt):\n%s", diff)
	}
}
