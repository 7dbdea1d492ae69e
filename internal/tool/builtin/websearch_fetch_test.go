package builtin

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/netguard"
	"github.com/relay-ai/relay/internal/tool"
	"github.com/relay-ai/relay/internal/tool/builtin/websearchtest"
)

const articleHTML = `<!DOCTYPE html>
<html><head><title>Ignored title</title><style>body{color:red}</style>
<script>var secret = "not text";</script></head>
<body><nav>Home | News</nav>
<h1>Rotterdam weather</h1>
<p>It is <b>12&nbsp;°C</b> with light rain.</p>
<div hidden>Hidden promo</div>
<script type="text/javascript">document.write("<p>nope</p>")</script>
<p>Wind: 5 Bft &amp; rising.</p>
</body></html>`

// searchWithPages runs web_search over a fake SearXNG whose results are the
// given URLs, with fetching of every result's page.
func searchWithPages(t *testing.T, fetch WebFetch, urls ...string) tool.Result {
	t.Helper()
	var rs []websearchtest.Result
	for i, u := range urls {
		rs = append(rs, websearchtest.Result{Title: "Result " + string(rune('A'+i)), URL: u, Content: "snippet"})
	}
	fake := websearchtest.StartSearxng(t, websearchtest.SearxngOptions{Results: map[string][]websearchtest.Result{"rotterdam weather": rs}})
	s, err := NewWebSearcher(WebProvider{Name: ProviderSearxng, BaseURL: fake.URL})
	if err != nil {
		t.Fatal(err)
	}
	if fetch.Pages == 0 {
		fetch.Pages = len(urls)
	}
	res, err := WebSearch(WebSearchOptions{Searcher: s, Fetch: fetch}).Call(context.Background(), "u1", json.RawMessage(`{"query":"rotterdam weather"}`))
	if err != nil || res.IsError {
		t.Fatalf("result %+v, %v", res, err)
	}
	if len(res.Sources) != len(urls) {
		t.Fatalf("%d sources, want %d", len(res.Sources), len(urls))
	}
	return res
}

// TestFetchLoopbackRefused: a result on
// a loopback address is not fetched, the result says so, and the server never
// hears of it; with allowPrivateAddresses it is read.
func TestFetchLoopbackRefused(t *testing.T) {
	pages := websearchtest.StartPages(t, map[string]websearchtest.Page{"/article": {Body: articleHTML}})
	localhost := strings.Replace(pages.URL, "127.0.0.1", "localhost", 1)

	res := searchWithPages(t, WebFetch{}, pages.URL+"/article", localhost+"/article")
	for _, want := range []string{
		"Page not read: 127.0.0.1 is a loopback address, which Relay does not connect to.",
		"Page not read: localhost resolves to ",
	} {
		if strings.Count(res.Text, want) != 1 {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	if strings.Contains(res.Text, "Rotterdam weather\n") {
		t.Errorf("the page was read:\n%s", res.Text)
	}
	if n := pages.Hits("/article"); n != 0 {
		t.Errorf("the page server got %d requests", n)
	}

	res = searchWithPages(t, WebFetch{AllowPrivateAddresses: true}, pages.URL+"/article")
	want := "Page text:\nHome | News\nRotterdam weather\nIt is 12 °C with light rain.\nWind: 5 Bft & rising."
	if !strings.Contains(res.Text, want) {
		t.Errorf("text lacks %q:\n%s", want, res.Text)
	}
	for _, not := range []string{"Ignored title", "not text", "nope", "Hidden promo", "color:red"} {
		if strings.Contains(res.Text, not) {
			t.Errorf("text contains %q", not)
		}
	}
}

// TestFetchGuard: the metadata address and IPv6 loopback are refused like
// 127.0.0.1; a page on an address of the allow-list is read, and the list
// opens that address only.
func TestFetchGuard(t *testing.T) {
	pages := websearchtest.StartPages(t, map[string]websearchtest.Page{"/article": {Body: articleHTML}})
	u, _ := url.Parse(pages.URL)
	res := searchWithPages(t, WebFetch{Timeout: 2 * time.Second}, "http://169.254.169.254/latest/meta-data/", "http://[::1]:"+u.Port()+"/article")
	for _, want := range []string{
		"Page not read: 169.254.169.254 is a link-local address, which Relay does not connect to.",
		"Page not read: ::1 is a loopback address, which Relay does not connect to.",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	guard, err := netguard.New([]string{"127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	res = searchWithPages(t, WebFetch{Guard: guard}, pages.URL+"/article", "http://[::1]:"+u.Port()+"/article")
	if !strings.Contains(res.Text, "Page text:\nHome | News\nRotterdam weather") {
		t.Errorf("the allowed page was not read:\n%s", res.Text)
	}
	if !strings.Contains(res.Text, "Page not read: ::1 is a loopback address") {
		t.Errorf("::1 was not refused:\n%s", res.Text)
	}
	if n := pages.Hits("/article"); n != 1 {
		t.Errorf("the page server got %d requests, want 1", n)
	}
}

// TestFetchRedirectToLoopbackRefused: a public page that redirects to a
// loopback address, by IP or by a name that resolves to one, is refused at
// the redirect's dial, and the loopback server never hears of it.
func TestFetchRedirectToLoopbackRefused(t *testing.T) {
	target := websearchtest.StartPages(t, map[string]websearchtest.Page{"/admin": {Body: "<p>internal admin page</p>"}})
	byName := strings.Replace(target.URL, "127.0.0.1", "localhost", 1)
	public := websearchtest.StartPages(t, map[string]websearchtest.Page{
		"/ip":   {Status: 302, Location: target.URL + "/admin"},
		"/name": {Status: 301, Location: byName + "/admin"},
		"/ok":   {Body: "<p>public page</p>"},
	})
	u, _ := url.Parse(public.URL)
	// The "public" server is allow-listed by its address and port only.
	guard, err := netguard.New([]string{u.Host})
	if err != nil {
		t.Fatal(err)
	}
	fetch := WebFetch{Guard: guard}

	res := searchWithPages(t, fetch, public.URL+"/ip", public.URL+"/name", public.URL+"/ok")
	for _, want := range []string{
		"Page not read: 127.0.0.1 is a loopback address, which Relay does not connect to.",
		"Page not read: localhost resolves to ",
	} {
		if n := strings.Count(res.Text, want); n != 1 {
			t.Errorf("%d times %q, want 1:\n%s", n, want, res.Text)
		}
	}
	if !strings.Contains(res.Text, "Page text:\npublic page") {
		t.Errorf("the public page was not read:\n%s", res.Text)
	}
	if n := target.Hits("/admin"); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
	if public.Hits("/ip") != 1 || public.Hits("/name") != 1 {
		t.Errorf("the public pages were not asked")
	}

	fetch.AllowPrivateAddresses = true
	res = searchWithPages(t, fetch, public.URL+"/ip")
	if !strings.Contains(res.Text, "Page text:\ninternal admin page") {
		t.Errorf("with allowPrivateAddresses the redirect was not followed:\n%s", res.Text)
	}
}

func TestFetchLimits(t *testing.T) {
	big := "<p>" + strings.Repeat("word ", 100_000) + "</p>"
	pages := websearchtest.StartPages(t, map[string]websearchtest.Page{
		"/big":      {Body: big},
		"/slow":     {Body: "<p>late</p>", Delay: 5 * time.Second},
		"/pdf":      {ContentType: "application/pdf", Body: "%PDF-1.7"},
		"/missing":  {Status: 404, Body: "gone"},
		"/text":     {ContentType: "text/plain; charset=iso-8859-1", Body: "caf\xe9 menu"},
		"/marks":    {Body: "<p>Trust me \ue202turn0search9\\ue202turn0search8.</p>"},
		"/empty":    {Body: "<script>only()</script>"},
		"/redirect": {Status: 302, Location: "/redirect"},
	})
	fetch := WebFetch{AllowPrivateAddresses: true, MaxBytes: 10_000, Timeout: 200 * time.Millisecond}
	res := searchWithPages(t, fetch,
		pages.URL+"/big", pages.URL+"/slow", pages.URL+"/pdf", pages.URL+"/missing", pages.URL+"/text", pages.URL+"/marks", pages.URL+"/empty", pages.URL+"/redirect", "ftp://files.example/x")
	for _, want := range []string{
		"[1] Result A",
		"[2] Result B\nAnchor: \\ue202turn0search1\nURL: " + pages.URL + "/slow\nSnippet: snippet\nPage not read: no answer within 200ms.",
		"Page not read: not a text page (application/pdf).",
		"Page not read: the site answered 404 Not Found.",
		"Page text:\ncafé menu",
		"Page text:\nTrust me turn0search9turn0search8.",
		"Page not read: the page has no text.",
		"Page not read: more than 5 redirects.",
		"Page not read: not an http(s) address.",
	} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, res.Text)
		}
	}
	// The big page: at most MaxBytes read, at most pageTextChars given.
	i := strings.Index(res.Text, "[1] Result A")
	j := strings.Index(res.Text, "[2] Result B")
	first := res.Text[i:j]
	if !strings.Contains(first, "Page text:\nword word") || !strings.HasSuffix(strings.TrimSpace(first), "…") || len([]rune(first)) > pageTextChars+200 {
		t.Errorf("the big page is not cut: %d characters", len([]rune(first)))
	}
}
