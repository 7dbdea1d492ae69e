// Package websearchtest provides the fakes that web_search is tested against:
// a SearXNG instance that answers queries with canned results and records the
// requests it gets, and a server of web pages (HTML, text, redirects, slow or
// large pages). Both are httptest servers on loopback, stopped when the test
// ends.
package websearchtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Result is one canned search result.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Content string `json:"content"`
}

// Request is one request a fake server got.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
}

// Searxng is a fake SearXNG instance.
type Searxng struct {
	// URL is the instance's address, e.g. http://127.0.0.1:41234.
	URL string

	apiKey  string
	results map[string][]Result

	mu       sync.Mutex
	requests []Request
}

// SearxngOptions configures a fake SearXNG instance.
type SearxngOptions struct {
	// Results are the canned results by query; queries are matched ignoring
	// case and surrounding space. An unknown query finds nothing.
	Results map[string][]Result
	// APIKey, when set, is required in the X-API-Key header; a request
	// without it is answered 401 with a body that quotes what was sent.
	APIKey string
}

// StartSearxng starts a fake SearXNG instance. Like a real one it answers GET
// and POST on /search and /, with JSON only when asked for format=json (403
// otherwise, as an instance whose settings lack the format does), with the
// fields web clients read: query, number_of_results, results (url, title,
// content, engine, score), answers, suggestions.
func StartSearxng(t testing.TB, o SearxngOptions) *Searxng {
	t.Helper()
	s := &Searxng{apiKey: o.APIKey, results: map[string][]Result{}}
	for q, rs := range o.Results {
		s.results[normalize(q)] = rs
	}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

// Requests returns the requests received so far, oldest first.
func (s *Searxng) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

func (s *Searxng) serve(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	s.mu.Lock()
	s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.Form, Header: r.Header.Clone()})
	s.mu.Unlock()
	if r.URL.Path != "/search" && r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if s.apiKey != "" && r.Header.Get("X-API-Key") != s.apiKey {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "invalid api key " + r.Header.Get("X-API-Key")})
		return
	}
	if r.Form.Get("format") != "json" {
		http.Error(w, "403 Forbidden", http.StatusForbidden)
		return
	}
	q := r.Form.Get("q")
	rs := s.results[normalize(q)]
	type item struct {
		Result
		Engine string  `json:"engine"`
		Score  float64 `json:"score"`
	}
	items := make([]item, len(rs))
	for i, res := range rs {
		items[i] = item{Result: res, Engine: "fake", Score: float64(len(rs) - i)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"query":                q,
		"number_of_results":    len(items),
		"results":              items,
		"answers":              []string{},
		"suggestions":          []string{},
		"unresponsive_engines": [][]string{},
	})
}

func normalize(q string) string { return strings.ToLower(strings.Join(strings.Fields(q), " ")) }

// Page is one page of a fake page server.
type Page struct {
	// ContentType defaults to "text/html; charset=utf-8".
	ContentType string
	// Body is what is served.
	Body string
	// Status defaults to 200; a 3xx with Location redirects.
	Status int
	// Location is where a redirect points.
	Location string
	// Delay holds the answer back, to test timeouts.
	Delay time.Duration
}

// Pages is a fake web server.
type Pages struct {
	// URL is the server's address, e.g. http://127.0.0.1:41235.
	URL string

	pages map[string]Page

	mu   sync.Mutex
	hits map[string]int
}

// StartPages starts a server of the given pages, by path ("/a.html").
// Unknown paths are 404.
func StartPages(t testing.TB, pages map[string]Page) *Pages {
	t.Helper()
	p := &Pages{pages: pages, hits: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// Hits returns how many requests path got.
func (p *Pages) Hits(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[path]
}

func (p *Pages) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.hits[r.URL.Path]++
	p.mu.Unlock()
	pg, ok := p.pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	if pg.Delay > 0 {
		select {
		case <-time.After(pg.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if pg.Location != "" {
		w.Header().Set("Location", pg.Location)
	}
	ct := pg.ContentType
	if ct == "" {
		ct = "text/html; charset=utf-8"
	}
	w.Header().Set("Content-Type", ct)
	status := pg.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(pg.Body))
}
