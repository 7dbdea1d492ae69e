package builtin_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/tool/builtin"
)

// recorded is a request a provider fake got.
type recorded struct {
	Method, Path string
	Query        map[string]string
	Header       map[string]string
	Body         map[string]any
}

// providerFake starts a server that records each request and answers with
// status and body.
func providerFake(t *testing.T, status int, body string) (string, func() []recorded) {
	t.Helper()
	var mu sync.Mutex
	var got []recorded
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := recorded{Method: r.Method, Path: r.URL.Path, Query: map[string]string{}, Header: map[string]string{}}
		for k, v := range r.URL.Query() {
			rec.Query[k] = v[0]
		}
		for _, h := range []string{"X-Api-Key", "X-Subscription-Token", "Authorization", "Content-Type", "Accept"} {
			if v := r.Header.Get(h); v != "" {
				rec.Header[h] = v
			}
		}
		if b, _ := io.ReadAll(r.Body); len(b) > 0 {
			if err := json.Unmarshal(b, &rec.Body); err != nil {
				t.Errorf("request body is not JSON: %q", b)
			}
		}
		mu.Lock()
		got = append(got, rec)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() []recorded {
		mu.Lock()
		defer mu.Unlock()
		return append([]recorded(nil), got...)
	}
}

// TestProviders checks each provider's request against its documented shape
// and the parsing of its documented answer.
func TestProviders(t *testing.T) {
	want := []builtin.WebResult{
		{Title: "Weather in Rotterdam", URL: "https://weather.example/rotterdam", Snippet: "12 °C, light rain & wind"},
		{Title: "Rotterdam hourly", URL: "https://weather.example/rotterdam/hourly", Snippet: "Rain until 15:00"},
	}
	tests := []struct {
		name     string
		provider string
		key      string
		path     string // appended to the fake's address as the BaseURL
		answer   string
		request  recorded
		safe     int
	}{
		{
			name: "searxng", provider: builtin.ProviderSearxng, key: "sx-key", safe: 2,
			answer: `{"query":"rotterdam weather","number_of_results":3,"results":[
				{"url":"https://weather.example/rotterdam","title":"Weather in Rotterdam","content":"12 °C, light rain &amp; wind","engine":"google"},
				{"url":"https://weather.example/rotterdam/hourly","title":"Rotterdam hourly","content":"Rain until 15:00","engine":"bing"},
				{"url":"https://third.example/","title":"Third","content":"cut by the count","engine":"bing"}],"answers":[],"suggestions":[]}`,
			request: recorded{Method: "GET", Path: "/search",
				Query:  map[string]string{"q": "rotterdam weather", "format": "json", "pageno": "1", "safesearch": "2"},
				Header: map[string]string{"X-Api-Key": "sx-key", "Accept": "application/json"}},
		},
		{
			name: "searxng instance given with its /search path", provider: builtin.ProviderSearxng, path: "/searx/search/",
			answer: `{"results":[
				{"url":"https://weather.example/rotterdam","title":"Weather in Rotterdam","content":"12 °C, light rain &amp; wind"},
				{"url":"https://weather.example/rotterdam/hourly","title":"Rotterdam hourly","content":"Rain until 15:00"}]}`,
			request: recorded{Method: "GET", Path: "/searx/search",
				Query:  map[string]string{"q": "rotterdam weather", "format": "json", "pageno": "1", "safesearch": "0"},
				Header: map[string]string{"Accept": "application/json"}},
		},
		{
			name: "brave", provider: builtin.ProviderBrave, key: "brave-key", safe: 1,
			answer: `{"type":"search","query":{"original":"rotterdam weather"},"web":{"type":"search","results":[
				{"title":"Weather in <strong>Rotterdam</strong>","url":"https://weather.example/rotterdam","description":"12 °C, light rain &amp; wind","language":"en"},
				{"title":"Rotterdam hourly","url":"https://weather.example/rotterdam/hourly","description":"Rain until 15:00"}]}}`,
			request: recorded{Method: "GET", Path: "/res/v1/web/search",
				Query:  map[string]string{"q": "rotterdam weather", "count": "2", "safesearch": "moderate"},
				Header: map[string]string{"X-Subscription-Token": "brave-key", "Accept": "application/json"}},
		},
		{
			name: "tavily", provider: builtin.ProviderTavily, key: "tvly-key",
			answer: `{"query":"rotterdam weather","answer":null,"images":[],"results":[
				{"title":"Weather in Rotterdam","url":"https://weather.example/rotterdam","content":"12 °C, light rain & wind","score":0.91},
				{"title":"Rotterdam hourly","url":"https://weather.example/rotterdam/hourly","content":"Rain until 15:00","score":0.8}],"response_time":0.5}`,
			request: recorded{Method: "POST", Path: "/search", Query: map[string]string{},
				Header: map[string]string{"Authorization": "Bearer tvly-key", "Content-Type": "application/json", "Accept": "application/json"},
				Body:   map[string]any{"query": "rotterdam weather", "max_results": float64(2), "search_depth": "basic", "topic": "general"}},
		},
		{
			name: "serper", provider: builtin.ProviderSerper, key: "serper-key",
			answer: `{"searchParameters":{"q":"rotterdam weather","type":"search","engine":"google"},"organic":[
				{"title":"Weather in Rotterdam","link":"https://weather.example/rotterdam","snippet":"12 °C, light rain & wind","position":1},
				{"title":"Rotterdam hourly","link":"https://weather.example/rotterdam/hourly","snippet":"Rain until 15:00","position":2}]}`,
			request: recorded{Method: "POST", Path: "/search", Query: map[string]string{},
				Header: map[string]string{"X-Api-Key": "serper-key", "Content-Type": "application/json", "Accept": "application/json"},
				Body:   map[string]any{"q": "rotterdam weather", "num": float64(2)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, requests := providerFake(t, http.StatusOK, tt.answer)
			s, err := builtin.NewWebSearcher(builtin.WebProvider{Name: tt.provider, BaseURL: base + tt.path, APIKey: tt.key})
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Search(context.Background(), builtin.WebQuery{Text: "rotterdam weather", Count: 2, SafeSearch: tt.safe})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			reqs := requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if diff := cmp.Diff(tt.request, reqs[0]); diff != "" {
				t.Errorf("request (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProviderErrorsHideTheKey: a provider that quotes the key back in its
// refusal does not get it into the error, which the model and the logs see.
func TestProviderErrorsHideTheKey(t *testing.T) {
	const key = "sk-very-secret-search-key-0042"
	for _, provider := range []string{builtin.ProviderSearxng, builtin.ProviderBrave, builtin.ProviderTavily, builtin.ProviderSerper} {
		t.Run(provider, func(t *testing.T) {
			base, _ := providerFake(t, http.StatusUnauthorized, `{"error":{"message":"invalid API key `+key+`"}}`)
			s, err := builtin.NewWebSearcher(builtin.WebProvider{Name: provider, BaseURL: base, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Search(context.Background(), builtin.WebQuery{Text: "q", Count: 5})
			if err == nil {
				t.Fatal("no error for a 401")
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error contains the key: %v", err)
			}
			if !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "invalid API key ****") {
				t.Errorf("error %q does not say what happened", err)
			}
			if k := fault.KindOf(err); k != fault.Unauthorized {
				t.Errorf("kind %s, want unauthorized", k)
			}
			// Through the tool too.
			res, err := builtin.WebSearch(builtin.WebSearchOptions{Searcher: s}).Call(context.Background(), "u", json.RawMessage(`{"query":"q"}`))
			if err != nil || !res.IsError || strings.Contains(res.Text, key) || !strings.Contains(res.Text, "401") {
				t.Errorf("tool result %+v, %v", res, err)
			}
		})
	}
}

func TestProviderFailures(t *testing.T) {
	t.Run("searxng without the json format", func(t *testing.T) {
		base, _ := providerFake(t, http.StatusForbidden, `<html>403 Forbidden</html>`)
		s, _ := builtin.NewWebSearcher(builtin.WebProvider{Name: builtin.ProviderSearxng, BaseURL: base})
		_, err := s.Search(context.Background(), builtin.WebQuery{Text: "q", Count: 5})
		if err == nil || !strings.Contains(err.Error(), "json format") {
			t.Errorf("error %v does not point at the json format", err)
		}
	})
	t.Run("not JSON", func(t *testing.T) {
		base, _ := providerFake(t, http.StatusOK, `<html>a captcha page</html>`)
		s, _ := builtin.NewWebSearcher(builtin.WebProvider{Name: builtin.ProviderSerper, BaseURL: base, APIKey: "k"})
		_, err := s.Search(context.Background(), builtin.WebQuery{Text: "q", Count: 5})
		if err == nil || fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "something other than search results") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		s, _ := builtin.NewWebSearcher(builtin.WebProvider{Name: builtin.ProviderBrave, BaseURL: base, APIKey: "k"})
		_, err := s.Search(context.Background(), builtin.WebQuery{Text: "q", Count: 5})
		if err == nil || fault.KindOf(err) != fault.Unavailable || !strings.Contains(err.Error(), "brave could not be reached") || strings.Contains(err.Error(), "?q=") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing settings", func(t *testing.T) {
		for _, tc := range []struct {
			p    builtin.WebProvider
			want string
		}{
			{builtin.WebProvider{Name: builtin.ProviderSearxng}, "webSearch.searxngInstanceUrl"},
			{builtin.WebProvider{Name: builtin.ProviderBrave}, "webSearch.braveApiKey"},
			{builtin.WebProvider{Name: builtin.ProviderTavily}, "webSearch.tavilyApiKey"},
			{builtin.WebProvider{Name: builtin.ProviderSerper}, "webSearch.serperApiKey"},
			{builtin.WebProvider{Name: "bing"}, "unknown web search provider"},
			{builtin.WebProvider{Name: builtin.ProviderSearxng, BaseURL: "searx.local"}, "http:// or https://"},
		} {
			_, err := builtin.NewWebSearcher(tc.p)
			if err == nil || fault.KindOf(err) != fault.Invalid || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%+v: error %v, want one naming %s", tc.p, err, tc.want)
			}
		}
	})
}
