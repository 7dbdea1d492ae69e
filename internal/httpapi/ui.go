package httpapi

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// uiCSP is the Content-Security-Policy of the web UI's pages: scripts only
// from Relay itself (no inline script, so markup that slips into an answer
// cannot run), no framing, forms and connections only to Relay. Styles may be
// inline: the UI sets element styles (positions of graph nodes, progress).
const uiCSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob: https:; " +
	"connect-src 'self'; font-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// uiFile is one file of the UI's build. It is read from the build when it is
// served (the build is embedded in the binary: reading it copies from there)
// rather than kept in memory; its gzip form, which is kept, is made on the
// first request that accepts it (compressing the whole build at start-up
// would add tens of milliseconds to it).
type uiFile struct {
	fsys fs.FS
	name string
	// compressible is true for text files (scripts, styles, the page).
	compressible bool
	once         sync.Once
	gz           []byte // nil when gzip would not make it smaller
}

// open returns the file's content as it is, and what to call when done.
func (f *uiFile) open() (io.ReadSeeker, func(), error) {
	file, err := f.fsys.Open(f.name)
	if err != nil {
		return nil, nil, err
	}
	if rs, ok := file.(io.ReadSeeker); ok {
		return rs, func() { file.Close() }, nil
	}
	b, err := io.ReadAll(file)
	file.Close()
	return bytes.NewReader(b), func() {}, err
}

// gzipped returns the file's gzip form, or nil when it has none.
func (f *uiFile) gzipped() []byte {
	if !f.compressible {
		return nil
	}
	f.once.Do(func() {
		raw, err := fs.ReadFile(f.fsys, f.name)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(raw)
		_ = zw.Close()
		if buf.Len() < len(raw) {
			f.gz = bytes.Clone(buf.Bytes())
		}
	})
	return f.gz
}

// loadUI lists the files of the build.
func loadUI(fsys fs.FS) (map[string]*uiFile, error) {
	files := map[string]*uiFile{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f := &uiFile{fsys: fsys, name: p}
		switch path.Ext(p) {
		case ".js", ".css", ".html", ".svg", ".json", ".txt", ".map":
			f.compressible = true
		}
		files[p] = f
		return nil
	})
	return files, err
}

// ui serves the web UI (docs/ui.md): a file of the build when the path names
// one, else index.html, so that the single-page app's own paths (/agents/…)
// load it. Paths under /api/ and /v1/ are never the UI: an unknown one is
// the API's JSON 404. Hashed assets are cached for a year; index.html is
// revalidated every time so that a new build is picked up at once. Clients
// that accept gzip get it.
func (s *Server) ui() http.HandlerFunc {
	if s.opts.UI == nil {
		return s.notFound
	}
	files, err := loadUI(s.opts.UI)
	if err != nil || files["index.html"] == nil {
		if err != nil {
			s.log.Error("the web UI's build cannot be read; serving no UI", "err", err)
		}
		return s.notFound
	}
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
		f := files[name]
		switch {
		case f != nil && name != "index.html":
			if strings.HasPrefix(name, "assets/") {
				h.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				h.Set("Cache-Control", "no-cache")
			}
		case name != "" && path.Ext(name) != "":
			// A missing file (an old asset, a typo): a plain 404, not the app.
			http.NotFound(w, r)
			return
		default:
			f = files["index.html"]
			h.Set("Content-Security-Policy", uiCSP)
			h.Set("Cache-Control", "no-cache")
		}
		if ct := mime.TypeByExtension(path.Ext(f.name)); ct != "" {
			h.Set("Content-Type", ct)
		}
		if f.compressible {
			h.Add("Vary", "Accept-Encoding")
			if gz := f.gzipped(); gz != nil && acceptsGzip(r) {
				h.Set("Content-Encoding", "gzip")
				http.ServeContent(w, r, f.name, modtime, bytes.NewReader(gz))
				return
			}
		}
		body, done, err := f.open()
		if err != nil {
			s.writeError(w, r, fmt.Errorf("reading %s of the web UI's build: %w", f.name, err))
			return
		}
		defer done()
		http.ServeContent(w, r, f.name, modtime, body)
	}
}

// acceptsGzip reports whether the request's Accept-Encoding allows gzip.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}
