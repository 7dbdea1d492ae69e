package httpapi

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"
)

// uiCSP is the Content-Security-Policy of the web UI's pages: scripts only
// from Relay itself (no inline script, so markup that slips into an answer
// cannot run), no framing, forms and connections only to Relay. Styles may be
// inline: the UI sets element styles (positions of graph nodes, progress).
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: https:; " +
	"connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// ui serves the web UI (docs/ui.md): a file of the build when the path names
// one, else index.html, so that the single-page app's own paths (/agents/…)
// load it. Paths under /api/ and /v1/ are never the UI: an unknown one is
// the API's JSON 404. Hashed assets are cached for a year; index.html is
// revalidated every time so that a new build is picked up at once.
func (s *Server) ui() http.HandlerFunc {
	if s.opts.UI == nil {
		return s.notFound
	}
	index, err := fs.ReadFile(s.opts.UI, "index.html")
	if err != nil {
		return s.notFound
	}
	files := http.FileServerFS(s.opts.UI)
	modtime := time.Now()
	return func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if strings.HasPrefix(p, "/api/") || p == "/api" || strings.HasPrefix(p, "/v1/") || p == "/v1" {
			s.notFound(w, r)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		name := strings.TrimPrefix(path.Clean(p), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(s.opts.UI, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					h.Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					h.Set("Cache-Control", "no-cache")
				}
				files.ServeHTTP(w, r)
				return
			}
			if path.Ext(name) != "" && !strings.Contains(path.Base(name), "@") {
				// A missing file (an old asset, a typo): a plain 404, not the app.
				http.NotFound(w, r)
				return
			}
		}
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "index.html", modtime, io.ReadSeeker(bytes.NewReader(index)))
	}
}
