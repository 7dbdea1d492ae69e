package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
)

// The web search providers, as webSearch.searchProvider names them.
const (
	ProviderSearxng = "searxng"
	ProviderBrave   = "brave"
	ProviderTavily  = "tavily"
	ProviderSerper  = "serper"
)

// The public addresses of the providers that have one; a WebProvider's
// BaseURL replaces them. The endpoint's path is appended to either.
const (
	braveBaseURL  = "https://api.search.brave.com"
	tavilyBaseURL = "https://api.tavily.com"
	serperBaseURL = "https://google.serper.dev"
)

// maxProviderResponse caps what is read of a provider's answer: a page of
// results is tens of kilobytes, so more is a fault, not results.
const maxProviderResponse = 4 << 20

// WebQuery is one search a WebSearcher runs.
type WebQuery struct {
	// Text is the query as the model wrote it.
	Text string
	// Count is how many results are wanted; a provider may return fewer, and
	// the searcher returns no more.
	Count int
	// SafeSearch is 0 (off), 1 (moderate) or 2 (strict). Brave and SearXNG
	// take it; Tavily and Serper have no such setting.
	SafeSearch int
}

// WebResult is one result of a web search.
type WebResult struct {
	Title   string
	URL     string
	Snippet string
}

// WebSearcher runs web searches against one provider. Its errors are classified
// with fault (Unauthorized for a refused key, Invalid for a refused query,
// Unavailable otherwise) and never contain the provider's key.
type WebSearcher interface {
	Search(ctx context.Context, q WebQuery) ([]WebResult, error)
}

// WebProvider says how to reach one search provider.
type WebProvider struct {
	// Name is ProviderSearxng, ProviderBrave, ProviderTavily or ProviderSerper.
	Name string
	// BaseURL is the SearXNG instance (with or without its /search path), or
	// for the others a replacement of the provider's public address.
	BaseURL string
	// APIKey is the provider's key: required by Brave, Tavily and Serper,
	// optional for SearXNG (sent as X-API-Key, for instances behind a gateway
	// that checks it). It is a secret: never logged nor put in an error.
	APIKey string
	// Client makes the requests; nil means http.DefaultClient. The tool bounds
	// every search with its own timeout.
	Client *http.Client
}

// NewWebSearcher returns the searcher of p, or a fault.Invalid error that names
// what p lacks.
func NewWebSearcher(p WebProvider) (WebSearcher, error) {
	s := &webAPI{name: p.Name, key: p.APIKey, client: p.Client}
	if s.client == nil {
		s.client = http.DefaultClient
	}
	base := strings.TrimSpace(p.BaseURL)
	switch p.Name {
	case ProviderSearxng:
		if base == "" {
			return nil, fault.New(fault.Invalid, "searxng needs the address of a SearXNG instance (webSearch.searxngInstanceUrl)")
		}
		base = strings.TrimSuffix(base, "/")
		if !strings.HasSuffix(base, "/search") {
			base += "/search"
		}
	case ProviderBrave, ProviderTavily, ProviderSerper:
		if p.APIKey == "" {
			return nil, fault.New(fault.Invalid, "%s needs an API key (webSearch.%sApiKey)", p.Name, p.Name)
		}
		if base == "" {
			base = map[string]string{ProviderBrave: braveBaseURL, ProviderTavily: tavilyBaseURL, ProviderSerper: serperBaseURL}[p.Name]
		}
		base = strings.TrimSuffix(base, "/")
		if p.Name == ProviderBrave {
			base += "/res/v1/web/search"
		} else {
			base += "/search"
		}
	default:
		return nil, fault.New(fault.Invalid, "unknown web search provider %q (known: searxng, brave, tavily, serper)", p.Name)
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fault.New(fault.Invalid, "%s: the provider's address must be an http:// or https:// URL", p.Name)
	}
	s.endpoint = u
	return s, nil
}

// webAPI is the searcher of every provider: they differ only in the request
// they take and the shape of their answer.
type webAPI struct {
	name     string
	endpoint *url.URL
	key      string
	client   *http.Client
}

func (s *webAPI) Search(ctx context.Context, q WebQuery) ([]WebResult, error) {
	req, err := s.request(ctx, q)
	if err != nil {
		return nil, s.hide(fault.Wrap(fault.Internal, err, "building the %s request", s.name))
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, s.hide(fault.Wrap(fault.Unavailable, transportCause(err), "%s could not be reached", s.name))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProviderResponse+1))
	if err != nil {
		return nil, s.hide(fault.Wrap(fault.Unavailable, transportCause(err), "reading the answer of %s", s.name))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, s.hide(s.statusError(resp, body))
	}
	if len(body) > maxProviderResponse {
		return nil, fault.New(fault.Unavailable, "%s answered more than %d MiB", s.name, maxProviderResponse>>20)
	}
	rs, err := s.parse(body)
	if err != nil {
		return nil, s.hide(fault.Wrap(fault.Unavailable, err, "%s answered something other than search results", s.name))
	}
	out := make([]WebResult, 0, min(len(rs), q.Count))
	for _, r := range rs {
		r.URL = strings.TrimSpace(r.URL)
		if r.URL == "" {
			continue
		}
		r.Title = cleanSnippet(r.Title)
		r.Snippet = cleanSnippet(r.Snippet)
		out = append(out, r)
		if len(out) == q.Count {
			break
		}
	}
	return out, nil
}

// request builds the provider's request for q.
func (s *webAPI) request(ctx context.Context, q WebQuery) (*http.Request, error) {
	u := *s.endpoint
	var body any
	header := http.Header{"Accept": {"application/json"}}
	switch s.name {
	case ProviderSearxng:
		v := u.Query()
		v.Set("q", q.Text)
		v.Set("format", "json")
		v.Set("pageno", "1")
		v.Set("safesearch", strconv.Itoa(q.SafeSearch))
		u.RawQuery = v.Encode()
		if s.key != "" {
			header.Set("X-API-Key", s.key)
		}
	case ProviderBrave:
		v := u.Query()
		v.Set("q", q.Text)
		v.Set("count", strconv.Itoa(q.Count))
		v.Set("safesearch", [...]string{"off", "moderate", "strict"}[min(max(q.SafeSearch, 0), 2)])
		u.RawQuery = v.Encode()
		header.Set("X-Subscription-Token", s.key)
	case ProviderTavily:
		body = map[string]any{"query": q.Text, "max_results": q.Count, "search_depth": "basic", "topic": "general"}
		header.Set("Authorization", "Bearer "+s.key)
	case ProviderSerper:
		body = map[string]any{"q": q.Text, "num": q.Count}
		header.Set("X-API-KEY", s.key)
	}
	method, payload := http.MethodGet, io.Reader(nil)
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		method, payload = http.MethodPost, bytes.NewReader(b)
		header.Set("Content-Type", "application/json")
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), payload)
	if err != nil {
		return nil, err
	}
	req.Header = header
	return req, nil
}

// parse reads the results out of a provider's answer.
func (s *webAPI) parse(body []byte) ([]WebResult, error) {
	type item struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Link        string `json:"link"`
		Content     string `json:"content"`
		Description string `json:"description"`
		Snippet     string `json:"snippet"`
	}
	var doc struct {
		Results []item `json:"results"` // SearXNG, Tavily
		Web     *struct {
			Results []item `json:"results"`
		} `json:"web"` // Brave
		Organic []item `json:"organic"` // Serper
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("decoding the answer: %w", err)
	}
	var items []item
	switch s.name {
	case ProviderBrave:
		if doc.Web != nil {
			items = doc.Web.Results
		}
	case ProviderSerper:
		items = doc.Organic
	default:
		items = doc.Results
	}
	out := make([]WebResult, len(items))
	for i, it := range items {
		r := WebResult{Title: it.Title, URL: it.URL, Snippet: it.Content}
		switch s.name {
		case ProviderBrave:
			r.Snippet = it.Description
		case ProviderSerper:
			r.URL, r.Snippet = it.Link, it.Snippet
		}
		out[i] = r
	}
	return out, nil
}

// statusError describes a refusal: the status and the start of what the
// provider said about it, which is usually the most useful part.
func (s *webAPI) statusError(resp *http.Response, body []byte) error {
	kind := fault.Unavailable
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		kind = fault.Unauthorized
	case http.StatusBadRequest, http.StatusUnprocessableEntity:
		kind = fault.Invalid
	}
	msg := fmt.Sprintf("%s answered %s", s.name, resp.Status)
	if detail := providerDetail(body); detail != "" {
		msg += ": " + detail
	}
	if resp.StatusCode == http.StatusForbidden && s.name == ProviderSearxng {
		msg += " (is the json format enabled in the instance's settings.yml?)"
	}
	return &fault.Error{Kind: kind, Message: msg}
}

// providerDetail returns a short, printable excerpt of an error answer: the
// message of a JSON error when there is one, else the start of the text.
func providerDetail(body []byte) string {
	var j map[string]any
	if json.Unmarshal(body, &j) == nil {
		for _, k := range []string{"message", "detail", "error"} {
			switch v := j[k].(type) {
			case string:
				return clip(oneLine(v), 200)
			case map[string]any:
				if m, ok := v["message"].(string); ok {
					return clip(oneLine(m), 200)
				}
				if m, ok := v["detail"].(string); ok {
					return clip(oneLine(m), 200)
				}
			}
		}
	}
	if !utf8.Valid(body) {
		return ""
	}
	return clip(oneLine(string(body)), 200)
}

// hide removes the key from err's text, in case the provider or the
// transport quoted it back.
func (s *webAPI) hide(err error) error {
	if s.key == "" || !strings.Contains(err.Error(), s.key) {
		return err
	}
	kind := fault.KindOf(err)
	return &fault.Error{Kind: kind, Message: strings.ReplaceAll(err.Error(), s.key, masked)}
}

// masked stands in for a secret in text.
const masked = "****"

// transportCause unwraps a *url.Error, whose text repeats the method and the
// full URL, to the failure itself, and names a timeout plainly.
func transportCause(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer in time")
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// cleanSnippet turns a title or snippet, which some providers mark up
// (<strong>, &amp;), into one line of plain text.
func cleanSnippet(s string) string {
	if strings.ContainsAny(s, "<&") {
		s = htmlText([]byte(s))
	}
	return oneLine(stripCitationMarks(s))
}

// oneLine collapses all white space in s to single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clip shortens s to at most n runes, marking a cut with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:n])) + "…"
}
