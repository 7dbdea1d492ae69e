package httpapi_test

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/relay-ai/relay/internal/httpapi"
)

// TestUIServed checks the web UI's serving rules: the app's own paths get
// index.html with the Content-Security-Policy, files of the build are served
// as they are, a missing asset is a plain 404, and unknown API paths stay JSON
// 404s.
func TestUIServed(t *testing.T) {
	ui := fstest.MapFS{
		"index.html":        {Data: []byte("<!doctype html><title>Relay</title>")},
		"assets/index-1.js": {Data: []byte("console.log(1)")},
		"favicon.svg":       {Data: []byte("<svg/>")},
		"assets/big-2.js":   {Data: []byte(strings.Repeat("console.log('relay');\n", 200))},
	}
	h := newAPI(t, httpapi.Options{UI: ui})
	get := func(path string) (*http.Response, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		b, _ := io.ReadAll(rec.Result().Body)
		return rec.Result(), string(b)
	}
	for _, path := range []string{"/", "/agents/abc", "/c/conv_1", "/setup"} {
		res, body := get(path)
		if res.StatusCode != 200 || !strings.Contains(body, "<title>Relay</title>") {
			t.Errorf("GET %s: %d %q, want index.html", path, res.StatusCode, body)
		}
		if csp := res.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline'; img") && strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if res.Header.Get("Cache-Control") != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache", path, res.Header.Get("Cache-Control"))
		}
	}
	res, body := get("/assets/index-1.js")
	if res.StatusCode != 200 || body != "console.log(1)" || !strings.Contains(res.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("asset: %d %q %q", res.StatusCode, body, res.Header.Get("Cache-Control"))
	}
	if res, _ := get("/assets/gone-2.js"); res.StatusCode != 404 {
		t.Errorf("missing asset: %d, want 404", res.StatusCode)
	}
	for _, path := range []string{"/api/nope", "/v1/nope"} {
		res, body := get(path)
		if res.StatusCode != 404 || !strings.Contains(body, `"not_found"`) {
			t.Errorf("GET %s: %d %q, want the JSON 404", path, res.StatusCode, body)
		}
	}
	// A client that accepts gzip gets the compressed asset, which unpacks
	// to the file.
	req := httptest.NewRequest("GET", "/assets/big-2.js", nil)
	req.Header.Set("Accept-Encoding", "br, gzip;q=0.8")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Header().Get("Content-Encoding") != "gzip" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/javascript") {
		t.Fatalf("gzip asset: headers %v", rec.Header())
	}
	zr, err := gzip.NewReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(zr); string(b) != string(ui["assets/big-2.js"].Data) {
		t.Errorf("gzip asset unpacks to %d bytes, want the file", len(b))
	}
	if res, body := get("/assets/big-2.js"); res.Header.Get("Content-Encoding") != "" || body != string(ui["assets/big-2.js"].Data) {
		t.Errorf("asset without Accept-Encoding: %q, %d bytes", res.Header.Get("Content-Encoding"), len(body))
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/agents", nil))
	if rec.Code != 404 || !strings.Contains(rec.Body.String(), `"not_found"`) {
		t.Errorf("POST /agents: %d %q, want the JSON 404", rec.Code, rec.Body.String())
	}
}
