package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/tool"
)

// WebSearchName is the name the model calls web_search by.
const WebSearchName = "web_search"

// WebSearchDescription is web_search's description, as the model reads it.
const WebSearchDescription = "Search the web for current information. Returns relevant web pages with snippets."

// Defaults of WebSearchOptions.
const (
	defaultSearchResults = 10
	defaultSearchTimeout = 15 * time.Second
	// maxQueryChars caps a query: search engines take a few words, and a
	// longer text is a mistake the model should hear about.
	maxQueryChars = 400
)

// WebSearchSchema returns the JSON schema of web_search's arguments: an object
// with the string query, required.
func WebSearchSchema() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"query": map[string]any{"type": "string", "description": "The search query (3-6 keywords recommended)"},
		},
		"required": []any{"query"},
	}
}

// WebAnchor returns the citation anchor of the i-th result (from 0):
// the six characters `\ue202` (a backslash escape written out, like
// file_search's anchors and as agents' instructions quote them), then
// turn0search<i>.
func WebAnchor(i int) string { return `\ue202turn0search` + strconv.Itoa(i) }

// WebSearchOptions configures the web_search tool.
type WebSearchOptions struct {
	// Searcher runs the searches. Nil means web search is not set up on this
	// server; every call then answers so, with Unavailable as the reason.
	Searcher WebSearcher
	// Unavailable says why there is no Searcher, for the model and the logs.
	Unavailable string
	// Provider names the provider in logs.
	Provider string
	// MaxResults caps the results given to the model; 0 means 10.
	MaxResults int
	// SafeSearch is 0 (off), 1 (moderate) or 2 (strict).
	SafeSearch int
	// Timeout bounds one search; 0 means 15 seconds.
	Timeout time.Duration
	// Fetch configures the fetching of the top results' pages.
	Fetch WebFetch
	// Log receives a warning for each failed search; nil means none.
	Log *slog.Logger
}

// WebSearch returns the web_search tool: it asks the configured provider for
// the model's query, optionally reads the top pages, and answers with the
// results as text, each under its citation anchor (see WebAnchor), and as
// sources in the same order. A failed search is an IsError result that says
// why; it is never a Go error.
func WebSearch(o WebSearchOptions) tool.Tool {
	if o.MaxResults <= 0 {
		o.MaxResults = defaultSearchResults
	}
	if o.Timeout <= 0 {
		o.Timeout = defaultSearchTimeout
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	w := &webSearch{o: o}
	if o.Fetch.Pages > 0 {
		w.fetch = newFetcher(o.Fetch)
	}
	return w
}

type webSearch struct {
	o     WebSearchOptions
	fetch *fetcher
}

func (*webSearch) Name() string { return WebSearchName }

const webSearchUsage = `{"query": "<3 to 6 keywords>"}`

func (w *webSearch) Call(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	var in struct {
		Query *string `json:"query"`
	}
	if err := decodeArgs(args, &in, webSearchUsage); err != nil {
		return tool.Errorf("Invalid arguments for %s: %v.", WebSearchName, err), nil
	}
	if in.Query == nil {
		return tool.Errorf(`Invalid arguments for %s: missing "query"; send %s.`, WebSearchName, webSearchUsage), nil
	}
	query := oneLine(*in.Query)
	switch n := utf8.RuneCountInString(query); {
	case n == 0:
		return tool.Errorf(`Invalid arguments for %s: "query" is empty; send a few keywords, e.g. %s.`, WebSearchName, webSearchUsage), nil
	case n > maxQueryChars:
		return tool.Errorf(`Invalid arguments for %s: "query" has %d characters, more than %d; send 3 to 6 keywords.`, WebSearchName, n, maxQueryChars), nil
	}
	if w.o.Searcher == nil {
		reason := w.o.Unavailable
		if reason == "" {
			reason = "no search provider is configured (webSearch.searchProvider)"
		}
		return tool.Errorf("Web search is not available on this server: %s. Answer without searching, and say that you could not search the web.", strings.TrimSuffix(reason, ".")), nil
	}

	sctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	results, err := w.o.Searcher.Search(sctx, WebQuery{Text: query, Count: w.o.MaxResults, SafeSearch: w.o.SafeSearch})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, fmt.Errorf("web search: %w", context.Cause(ctx))
		}
		w.o.Log.WarnContext(ctx, "web search failed", "tool", WebSearchName, "provider", w.o.Provider, "kind", fault.KindOf(err), "err", err)
		return tool.Errorf("Web search failed: %s. Try once more later, or answer without searching and say so.", sentenceBody(err.Error())), nil
	}
	if len(results) == 0 {
		return tool.Text(fmt.Sprintf("The web search for %q found nothing. Try other keywords once, or answer without web results and say so.", query)), nil
	}
	pages := w.fetchPages(ctx, results)
	return formatWebResults(query, results, pages), nil
}

// page is what fetching a result's page gave: its text, or why there is none.
type page struct {
	text    string
	skipped string
}

// fetchPages reads the pages of the top results at the same time. It returns
// nil when fetching is off.
func (w *webSearch) fetchPages(ctx context.Context, results []WebResult) []page {
	if w.fetch == nil {
		return nil
	}
	n := min(w.o.Fetch.Pages, len(results))
	pages := make([]page, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			text, err := w.fetch.fetch(ctx, results[i].URL)
			if err != nil {
				w.o.Log.DebugContext(ctx, "web page not read", "tool", WebSearchName, "err", err)
				pages[i] = page{skipped: err.Error()}
				return
			}
			pages[i] = page{text: text}
		})
	}
	wg.Wait()
	return pages
}

// formatWebResults writes the results for the model, each under its anchor,
// and lists them as sources in the same order.
func formatWebResults(query string, results []WebResult, pages []page) tool.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Web search results for %q: %d result", query, len(results))
	if len(results) != 1 {
		b.WriteByte('s')
	}
	b.WriteString(". Cite a result by copying its anchor (e.g. " + WebAnchor(0) + ") right after the statement it supports; do not cite anything else.\n")
	sources := make([]tool.Source, len(results))
	for i, r := range results {
		anchor := WebAnchor(i)
		title := r.Title
		if title == "" {
			title = r.URL
		}
		fmt.Fprintf(&b, "\n[%d] %s\nAnchor: %s\nURL: %s\n", i+1, title, anchor, r.URL)
		if r.Snippet != "" {
			fmt.Fprintf(&b, "Snippet: %s\n", r.Snippet)
		}
		if i < len(pages) {
			if p := pages[i]; p.text != "" {
				fmt.Fprintf(&b, "Page text:\n%s\n", p.text)
			} else {
				fmt.Fprintf(&b, "Page not read: %s.\n", strings.TrimSuffix(p.skipped, "."))
			}
		}
		sources[i] = tool.Source{Kind: tool.SourceWeb, Anchor: anchor, Title: r.Title, URL: r.URL, Snippet: r.Snippet}
	}
	return tool.Result{Text: strings.TrimRight(b.String(), "\n"), Sources: sources}
}

// sentenceBody makes an error text fit inside a sentence: no final stop.
func sentenceBody(s string) string {
	return strings.TrimRight(strings.TrimSpace(s), ".")
}
