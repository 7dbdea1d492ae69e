package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/file"
	"github.com/relay-ai/relay/internal/file/extract/extracttest"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// filesBundle is a running API with a file service that ingests in the
// background, on SQLite, and keys for ann, bob and an admin.
type filesBundle struct {
	bundle
	dbPath string
	client *http.Client
	stop   func()
}

// setupFiles starts it all; stop (also run when t ends) shuts it down.
func setupFiles(t *testing.T) *filesBundle {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "relay.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	svc := file.NewService(file.Options{Store: st, Poll: 50 * time.Millisecond})
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- svc.Run(runCtx) }()
	b := &filesBundle{dbPath: path, client: &http.Client{Transport: &http.Transport{}}}
	b.auth = auth.NewService(st, nil)
	b.srv = httptest.NewServer(newAPI(t, httpapi.Options{
		Auth: b.auth, Files: svc, MaxBodyBytes: 64 << 10,
	}))
	var stopped bool
	b.stop = func() {
		if stopped {
			return
		}
		stopped = true
		b.client.CloseIdleConnections()
		b.srv.Close()
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("Run: %v", err)
		}
		st.Close()
	}
	t.Cleanup(b.stop)
	newKey := func(email string, role auth.Role) (string, string) {
		u, err := b.auth.CreateUser(ctx, auth.NewUser{Email: email, Role: role})
		if err != nil {
			t.Fatal(err)
		}
		_, secret, err := b.auth.CreateKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		return secret, u.ID
	}
	b.adminKey, _ = newKey("root@example.com", auth.RoleAdmin)
	b.annKey, b.annID = newKey("ann@example.com", auth.RoleUser)
	b.bobKey, _ = newKey("bob@example.com", auth.RoleUser)
	return b
}

// upload posts what r reads as the multipart field "file" named name,
// streamed (the test never holds the body), and decodes the answer into out.
// With chunked set the request has no Content-Length; else r must tell its
// length.
func (b *filesBundle) upload(t *testing.T, key, name string, r io.Reader, chunked bool, out any) int {
	t.Helper()
	// The envelope around the file's bytes, written once to know its size.
	var env bytes.Buffer
	mw := multipart.NewWriter(&env)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, name))
	h.Set("Content-Type", "application/octet-stream")
	if err := mw.WriteField("endpoint", "agents"); err != nil {
		t.Fatal(err)
	}
	if _, err := mw.CreatePart(h); err != nil {
		t.Fatal(err)
	}
	prefix := bytes.Clone(env.Bytes())
	env.Reset()
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	suffix := env.Bytes()
	req, err := http.NewRequest("POST", b.srv.URL+"/api/files", io.MultiReader(bytes.NewReader(prefix), r, bytes.NewReader(suffix)))
	if err != nil {
		t.Fatal(err)
	}
	if !chunked {
		req.ContentLength = int64(len(prefix) + r.(interface{ Len() int }).Len() + len(suffix))
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := b.client.Do(req)
	if err != nil {
		t.Fatalf("POST /api/files: %v", err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("POST /api/files answered %d %q: %v", resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

func (b *filesBundle) waitFile(t *testing.T, key, id string) file.File {
	t.Helper()
	var f file.File
	poll.Until(t, 20*time.Second, "end of ingestion of file "+id, func() bool {
		f = file.File{}
		if code := b.do(t, key, "GET", "/api/files/"+id, nil, &f); code != http.StatusOK {
			t.Fatalf("GET /api/files/%s: status %d", id, code)
		}
		return f.Status == file.Ready || f.Status == file.Failed
	})
	return f
}

// sized is a reader of n bytes of text that reports its length.
type sized struct {
	n, read int
}

func (s *sized) Len() int { return s.n - s.read }

func (s *sized) Read(p []byte) (int, error) {
	if s.read >= s.n {
		return 0, io.EOF
	}
	k := min(len(p), s.n-s.read)
	for i := range p[:k] {
		p[i] = "relay text "[(s.read+i)%11]
	}
	s.read += k
	return k, nil
}

func fileParts(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM file_parts`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestBadFiles runs through the HTTP API on SQLite: an empty file,
// a 60 MB upload, a PDF without a text layer, a corrupt DOCX and a name with
// path separators. None crashes, and nothing is left running afterwards.
func TestBadFiles(t *testing.T) {
	before := runtime.NumGoroutine()
	b := setupFiles(t)

	tests := []struct {
		name       string
		data       string
		wantName   string
		wantStatus file.Status
		wantError  string
		wantNote   string
	}{
		{"empty.txt", "", "empty.txt", file.Ready, "", "the file is empty"},
		{"scan.pdf", string(extracttest.ImagePDF(3)), "scan.pdf", file.Ready, "", "no text"},
		{"broken.docx", string(extracttest.CorruptDOCX()), "broken.docx", file.Failed, "zip", ""},
		{"locked.pdf", string(extracttest.EncryptedPDF()), "locked.pdf", file.Failed,
			"the PDF is encrypted (password-protected), which Relay cannot read: upload a copy without a password or encryption", ""},
		{`../../etc/..\..\windows\notes.txt`, "harmless notes", "notes.txt", file.Ready, "", ""},
		{`..\..\`, "a name of nothing but separators", "file", file.Ready, "", ""},
	}
	for _, tt := range tests {
		var f file.File
		if code := b.upload(t, b.annKey, tt.name, strings.NewReader(tt.data), false, &f); code != http.StatusCreated {
			t.Fatalf("upload %q: status %d, want 201", tt.name, code)
		}
		if f.Name != tt.wantName || f.Size != int64(len(tt.data)) || f.Owner != b.annID {
			t.Errorf("upload %q answered %+v, want name %q, size %d, owner ann", tt.name, f, tt.wantName, len(tt.data))
		}
		got := b.waitFile(t, b.annKey, f.ID)
		if got.Status != tt.wantStatus || !strings.Contains(got.Error, tt.wantError) || (tt.wantError == "") != (got.Error == "") ||
			!strings.Contains(got.Note, tt.wantNote) {
			t.Errorf("%q ended %s, error %q, note %q; want %s, error with %q, note with %q",
				tt.name, got.Status, got.Error, got.Note, tt.wantStatus, tt.wantError, tt.wantNote)
		}
	}

	// 60 MB against the default 50 MB cap: with a Content-Length it is
	// refused before the body is read, without one while it streams; 50 MB
	// and a byte, with its Content-Length within the body's cap, once the
	// file's bytes pass the cap. Every refusal names the cap and its key.
	const tooLarge = "the file is over the 50 MB limit (fileConfig.serverFileSizeLimit)"
	for _, tc := range []struct {
		size    int
		chunked bool
	}{{60 << 20, false}, {60 << 20, true}, {50<<20 + 1, false}, {50<<20 + 1, true}} {
		var e apiError
		code := b.upload(t, b.annKey, "huge.txt", &sized{n: tc.size}, tc.chunked, &e)
		if code != http.StatusRequestEntityTooLarge || e.Error.Code != "too_large" || e.Error.Message != tooLarge {
			t.Errorf("%d-byte upload (chunked %v): status %d, error %+v; want 413 too_large %q", tc.size, tc.chunked, code, e.Error, tooLarge)
		}
	}
	// Bytes that contradict the declared type are refused with a reason.
	for name, data := range map[string]string{"program.txt": "\x7fELF\x00\x01\x02\x00\x00\x00binary", "paper.pdf": "no header"} {
		var e apiError
		code := b.upload(t, b.annKey, name, strings.NewReader(data), false, &e)
		if code != http.StatusBadRequest || e.Error.Code != "invalid" || !strings.Contains(e.Error.Message, "the file is named") {
			t.Errorf("upload %s: status %d, error %+v; want 400 saying why", name, code, e.Error)
		}
	}
	var list struct {
		Data []file.File `json:"data"`
	}
	b.do(t, b.annKey, "GET", "/api/files", nil, &list)
	if len(list.Data) != len(tests) {
		t.Errorf("ann has %d files, want the %d accepted ones", len(list.Data), len(tests))
	}
	partsBefore := fileParts(t, b.dbPath)
	var e apiError
	if code := b.upload(t, b.annKey, "just-over.txt", &sized{n: 50<<20 + 1}, true, &e); code != http.StatusRequestEntityTooLarge {
		t.Errorf("50 MB + 1 byte: status %d, want 413", code)
	}
	if n := fileParts(t, b.dbPath); n != partsBefore {
		t.Errorf("a refused upload left %d parts of contents", n-partsBefore)
	}

	b.stop()
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done && runtime.NumGoroutine() > before; {
		select {
		case <-tick.C:
		case <-deadline.C:
			done = true
		}
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left running, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// TestTruncatedUploadIsRefused: an upload whose body ends before the end of
// its multipart form (no closing boundary: the client stopped sending, and the
// body it declared ended there) is refused, never stored as if it were whole.
func TestTruncatedUploadIsRefused(t *testing.T) {
	b := setupFiles(t)
	for _, chunked := range []bool{false, true} {
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		w, err := mw.CreateFormFile("file", "notes.txt")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(strings.Repeat("the first half of the notes. ", 100)))
		// No mw.Close: the form never ends.
		req, err := http.NewRequest("POST", b.srv.URL+"/api/files", io.MultiReader(&body))
		if err != nil {
			t.Fatal(err)
		}
		if !chunked {
			req.ContentLength = int64(body.Len())
		}
		req.Header.Set("Authorization", "Bearer "+b.annKey)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e apiError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(e.Error.Message, "ended before") {
			t.Errorf("a form without its end (chunked %v): status %d, error %+v; want 400 saying the upload ended early", chunked, resp.StatusCode, e.Error)
		}
	}
	var list struct {
		Data []file.File `json:"data"`
	}
	b.do(t, b.annKey, "GET", "/api/files", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("ann has %+v; want no file from a cut-off upload", list.Data)
	}
	if n := fileParts(t, b.dbPath); n != 0 {
		t.Errorf("a cut-off upload left %d parts of contents", n)
	}
}

// TestUploadOfMoreFilesIsRefused: a form that carries a second file (in the
// field "file" again, or under another name, before or after the file) is
// refused with 400 saying so, and nothing of it is stored; it was once
// answered 201 with only the first file kept. Plain fields still pass.
func TestUploadOfMoreFilesIsRefused(t *testing.T) {
	b := setupFiles(t)
	type part struct{ field, name, body string }
	post := func(parts []part) (int, apiError, file.File) {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		for _, p := range parts {
			if p.name == "" {
				if err := mw.WriteField(p.field, p.body); err != nil {
					t.Fatal(err)
				}
				continue
			}
			w, err := mw.CreateFormFile(p.field, p.name)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = w.Write([]byte(p.body))
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest("POST", b.srv.URL+"/api/files", &body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+b.annKey)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var (
			e apiError
			f file.File
		)
		_ = json.Unmarshal(raw, &e)
		_ = json.Unmarshal(raw, &f)
		return resp.StatusCode, e, f
	}
	for _, tc := range []struct {
		name  string
		parts []part
	}{
		{"the field file twice", []part{{"file", "a.txt", "first notes"}, {"file", "b.txt", "second notes"}}},
		{"another file after", []part{{"file", "a.txt", "first notes"}, {"attachment", "b.txt", "second notes"}}},
		{"another file before", []part{{"attachment", "b.txt", "second notes"}, {"file", "a.txt", "first notes"}}},
		{"a field, then the file twice", []part{{"endpoint", "", "agents"}, {"file", "a.txt", "first"}, {"file_id", "", "x"}, {"file", "b.txt", "second"}}},
	} {
		code, e, _ := post(tc.parts)
		if code != http.StatusBadRequest || !strings.Contains(e.Error.Message, "more than one file") {
			t.Errorf("%s: status %d, error %+v; want 400 saying the request carries more than one file", tc.name, code, e.Error)
		}
	}
	var list struct {
		Data []file.File `json:"data"`
	}
	b.do(t, b.annKey, "GET", "/api/files", nil, &list)
	if len(list.Data) != 0 {
		t.Errorf("ann has %+v; want no file from a refused upload", list.Data)
	}
	if n := fileParts(t, b.dbPath); n != 0 {
		t.Errorf("refused uploads left %d parts of contents", n)
	}

	// Plain fields around the one file are read past, as before.
	code, e, f := post([]part{{"endpoint", "", "agents"}, {"file", "a.txt", "first notes"}, {"file_id", "", "x"}, {"width", "", "10"}})
	if code != http.StatusCreated || f.Name != "a.txt" || f.Size != int64(len("first notes")) {
		t.Errorf("one file among plain fields: status %d, file %+v, error %+v; want 201 and a.txt", code, f, e.Error)
	}
}

func TestFilesOwnership(t *testing.T) {
	b := setupFiles(t)
	var f file.File
	if code := b.upload(t, b.annKey, "ann.md", strings.NewReader("# Ann's plans"), false, &f); code != http.StatusCreated {
		t.Fatalf("upload: status %d", code)
	}
	var bobs file.File
	b.upload(t, b.bobKey, "bob.md", strings.NewReader("# Bob's"), false, &bobs)

	var list struct {
		Data []file.File `json:"data"`
	}
	b.do(t, b.annKey, "GET", "/api/files", nil, &list)
	if len(list.Data) != 1 || list.Data[0].ID != f.ID {
		t.Errorf("ann's list = %+v, want only her file", list.Data)
	}
	for _, tc := range []struct {
		key, method string
		want        int
	}{
		{b.bobKey, "GET", http.StatusNotFound},
		{b.bobKey, "DELETE", http.StatusNotFound},
		{b.adminKey, "GET", http.StatusNotFound},
		{b.annKey, "GET", http.StatusOK},
		{"", "GET", http.StatusUnauthorized},
		{b.adminKey, "DELETE", http.StatusNoContent},
		{b.annKey, "GET", http.StatusNotFound},
		{b.annKey, "DELETE", http.StatusNotFound},
	} {
		if code := b.do(t, tc.key, tc.method, "/api/files/"+f.ID, nil, nil); code != tc.want {
			t.Errorf("%s by %s: status %d, want %d", tc.method, map[string]string{b.bobKey: "bob", b.annKey: "ann", b.adminKey: "admin", "": "nobody"}[tc.key], code, tc.want)
		}
	}
	if code := b.do(t, b.bobKey, "DELETE", "/api/files/"+bobs.ID, nil, nil); code != http.StatusNoContent {
		t.Errorf("bob deleting his own file: status %d, want 204", code)
	}

	var e apiError
	if code := b.do(t, b.annKey, "POST", "/api/files", `{"file": "not multipart"}`, &e); code != http.StatusBadRequest {
		t.Errorf("a JSON upload: status %d, want 400", code)
	}
}
