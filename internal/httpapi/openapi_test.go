package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/relay-ai/relay/internal/httpapi"
)

// The OpenAPI document (internal/httpapi/openapi.json, docs/api.md
// "OpenAPI") is checked three ways: against the route table (every route
// documented, nothing else), by the server that serves it, and against every
// request and answer of the package's tests, whose servers are all made by
// newAPI.

// newAPI is httpapi.New(opts) with every request and answer checked against
// the OpenAPI document; t fails, when its cleanups run, for each mismatch.
// Make the test server after calling it, so that the server's Close (which
// waits for the requests in flight) runs before the mismatches are reported.
func newAPI(t testing.TB, opts httpapi.Options) http.Handler {
	t.Helper()
	v := loadValidator(t)
	var (
		mu   sync.Mutex
		errs []error
	)
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range errs {
			t.Errorf("the OpenAPI document and the server disagree: %v", err)
		}
	})
	return v.wrap(httpapi.New(opts), func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	})
}

// validator checks requests and answers against the document.
type validator struct {
	doc    *openapi3.T
	router routers.Router
}

// loadedValidator is the document loaded, validated and routed once for
// every test of the package.
var loadedValidator = sync.OnceValues(func() (*validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(httpapi.OpenAPIDocument())
	if err != nil {
		return nil, fmt.Errorf("loading openapi.json: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.json is not a valid OpenAPI document: %w", err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("routing openapi.json: %w", err)
	}
	// The bodies that are not JSON, decoded as the document describes them
	// (its info.description): a stream of events and JSONL as the arrays of
	// their events and lines, a Mermaid chart as text.
	openapi3filter.RegisterBodyDecoder("text/event-stream", decodeEvents)
	openapi3filter.RegisterBodyDecoder("application/x-ndjson", decodeLines)
	openapi3filter.RegisterBodyDecoder("text/vnd.mermaid", openapi3filter.PlainBodyDecoder)
	return &validator{doc: doc, router: router}, nil
})

func loadValidator(t testing.TB) *validator {
	t.Helper()
	v, err := loadedValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// maxChecked is the largest request body that is checked: the copy of a
// larger one is not kept.
const maxChecked = 1 << 20

// wrap returns h with each request and its answer checked against the
// document; report gets every mismatch:
//   - a request the document refuses must not be accepted (a status below
//     400);
//   - an answer must have a status the operation lists, with the headers and
//     the body it describes;
//   - a path of the API that the document does not have must be answered
//     404, with Relay's error under /api/ and OpenAI's under /v1/.
//
// OPTIONS (CORS preflights) and HEAD are not in the document and are not
// checked, nor are paths outside the API (the web UI).
func (v *validator) wrap(h http.Handler, report func(error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions || r.Method == http.MethodHead {
			h.ServeHTTP(w, r)
			return
		}
		what := r.Method + " " + r.URL.RequestURI()
		rec := &recorder{ResponseWriter: w}
		route, params, err := v.router.FindRoute(r)
		if err != nil {
			h.ServeHTTP(rec, r)
			rec.finish()
			shape := ""
			switch p := r.URL.Path; {
			case strings.HasPrefix(p, "/api/"):
				shape = "Error"
			case strings.HasPrefix(p, "/v1/"):
				shape = "OpenAIError"
			}
			if shape == "" {
				return
			}
			if rec.status != http.StatusNotFound {
				report(fmt.Errorf("%s is not in the document (%v), yet it was answered %d", what, err, rec.status))
			} else if err := v.isError(shape, rec.body.Bytes()); err != nil {
				report(fmt.Errorf("%s: the 404 of a path the API does not have: %w", what, err))
			}
			return
		}

		// The request is checked once it has been answered, on a copy: the
		// handler reads the body as the client sends it, and a copy of what
		// it reads is kept. Only an accepted request (a status below 400)
		// needs checking: the document must not refuse it.
		in := &openapi3filter.RequestValidationInput{
			Request: r.Clone(r.Context()), PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: credentials},
		}
		in.Request.Body = http.NoBody
		mediaType, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mediaType == "" {
			// Relay reads a body as JSON whatever its Content-Type says.
			in.Request.Header.Set("Content-Type", "application/json")
		}
		var body *capture
		if r.Body != nil && r.Body != http.NoBody && mediaType != "multipart/form-data" {
			body = &capture{Reader: r.Body}
			r.Body = readCloser{body, r.Body}
		}
		in.Options.ExcludeRequestBody = mediaType == "multipart/form-data"

		h.ServeHTTP(rec, r)
		rec.finish()

		if rec.status < 400 {
			check := true
			if body != nil {
				// What the handler left unread, if anything.
				_, err := io.Copy(io.Discard, body)
				switch {
				case err != nil:
					check = false
				case body.buf.Len() > maxChecked:
					in.Options.ExcludeRequestBody = true
				default:
					in.Request.Body = io.NopCloser(bytes.NewReader(body.buf.Bytes()))
				}
			}
			if check {
				if err := openapi3filter.ValidateRequest(r.Context(), in); err != nil {
					report(fmt.Errorf("%s: the document refuses the request (%v), yet it was answered %d", what, err, rec.status))
				}
			}
		}
		out := &openapi3filter.ResponseValidationInput{
			RequestValidationInput: in, Status: rec.status, Header: rec.header,
			Options: &openapi3filter.Options{IncludeResponseStatus: true},
		}
		out.SetBodyBytes(rec.body.Bytes())
		if err := openapi3filter.ValidateResponse(context.WithoutCancel(r.Context()), out); err != nil {
			report(fmt.Errorf("%s: answer %d %s: %w", what, rec.status, clip(rec.body.String()), err))
		}
	})
}

// isError checks that body is an error of the shape the document's schema
// names: Relay's (Error) or OpenAI's (OpenAIError).
func (v *validator) isError(shape string, body []byte) error {
	value, err := openapi3filter.JSONBodyDecoder(bytes.NewReader(body), nil, nil, nil)
	if err != nil {
		return fmt.Errorf("not JSON: %q", clip(string(body)))
	}
	return v.doc.Components.Schemas[shape].Value.VisitJSON(value, openapi3.EnableJSONSchema2020())
}

// credentials is how the document's security schemes are met: the scheme's
// credential is present. Whether it is right is the server's to say.
func credentials(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch in.SecuritySchemeName {
	case "apiKey":
		if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && strings.TrimSpace(token) != "" {
			return nil
		}
		return errors.New("no bearer key")
	case "session":
		if c, err := r.Cookie("relay_session"); err == nil && c.Value != "" {
			return nil
		}
		return errors.New("no session cookie")
	}
	return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
}

// capture passes a body on, keeping a copy of its first maxChecked+1 bytes.
type capture struct {
	io.Reader
	buf bytes.Buffer
}

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.Reader.Read(p)
	if room := maxChecked + 1 - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(n, room)])
	}
	return n, err
}

// readCloser reads from one reader and closes another.
type readCloser struct {
	io.Reader
	io.Closer
}

// recorder passes an answer on to the client as it is written, keeping a
// copy: its status, its headers as sent, and its body.
type recorder struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status, w.header = code, w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the writer (flushing, deadlines).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish records the answer of a handler that wrote nothing.
func (w *recorder) finish() {
	if w.status == 0 {
		w.status, w.header = http.StatusOK, w.ResponseWriter.Header().Clone()
	}
}

// decodeEvents reads a text/event-stream body as the array of its events,
// each an object of its fields, data decoded as JSON when it is JSON.
// Comments (": heartbeat") are left out.
func decodeEvents(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	events := []any{}
	event, data := map[string]any{}, []string(nil)
	end := func() {
		if data != nil {
			text := strings.Join(data, "\n")
			if v, err := openapi3filter.JSONBodyDecoder(strings.NewReader(text), nil, nil, nil); err == nil {
				event["data"] = v
			} else {
				event["data"] = text
			}
		}
		if len(event) > 0 {
			events = append(events, event)
		}
		event, data = map[string]any{}, nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			end()
		case strings.HasPrefix(line, ":"):
		default:
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			if field == "data" {
				data = append(data, value)
			} else {
				event[field] = value
			}
		}
	}
	end()
	return events, sc.Err()
}

// decodeLines reads a JSONL body as the array of its lines.
func decodeLines(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	lines := []any{}
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		v, err := openapi3filter.JSONBodyDecoder(strings.NewReader(sc.Text()), nil, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", len(lines)+1, err)
		}
		lines = append(lines, v)
	}
	return lines, sc.Err()
}

// clip shortens an answer for a message.
func clip(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// The document has every route of the table, with the table's method and
// path, and nothing else; a public route is one the document asks no
// credentials of.
func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	v := loadValidator(t)
	if v.doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q, want 3.1.0", v.doc.OpenAPI)
	}
	documented := map[string]*openapi3.Operation{}
	for path, item := range v.doc.Paths.Map() {
		for method, op := range item.Operations() {
			documented[method+" "+path] = op
		}
	}
	routes := httpapi.Routes()
	inTable := map[string]bool{}
	for _, rt := range routes {
		name := rt.Method + " " + rt.Path
		inTable[name] = true
		op := documented[name]
		if op == nil {
			t.Errorf("%s is a route of the table that openapi.json does not document", name)
			continue
		}
		public := op.Security != nil && len(*op.Security) == 0
		if public != rt.Public {
			t.Errorf("%s: the route is public: %v; openapi.json says it takes no credentials: %v", name, rt.Public, public)
		}
		// What any request may be answered, whatever its route: a body over
		// the cap (413, before routing), and, but for /healthz, 503 while
		// Relay starts (every route but /healthz waits for the database,
		// internal/app/serve.go) or when its database cannot be reached.
		always := []string{"413", "500", "503"}
		if rt.Path == "/healthz" {
			always = []string{"413", "500"}
		}
		for _, code := range always {
			if op.Responses.Value(code) == nil {
				t.Errorf("%s: openapi.json lists no %s, which any request of it may get", name, code)
			}
		}
	}
	for name := range documented {
		if !inTable[name] {
			t.Errorf("openapi.json documents %s, which is not a route of the table", name)
		}
	}
	if len(routes) != len(documented) {
		t.Errorf("%d routes, %d operations documented", len(routes), len(documented))
	}
}

// GET /api/openapi.json answers the document to anyone.
func TestOpenAPIServed(t *testing.T) {
	b := setup(t)
	resp, err := http.Get(b.srv.URL + "/api/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, httpapi.OpenAPIDocument()) {
		t.Errorf("GET /api/openapi.json: %d %s, %d bytes; want 200 application/json, the document", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
}

// The check of answers is shown to work: each of these wrong answers (and
// requests) is reported, naming what is wrong, and a right answer is not.
func TestOpenAPIValidationCatchesWrongAnswers(t *testing.T) {
	v := loadValidator(t)
	const me = `{"id":"user_1","email":"ann@example.com","display_name":"Ann","role":"user","created_at":"2026-01-02T03:04:05Z",` +
		`"updated_at":"2026-01-02T03:04:05Z","disabled":false,"has_password":true}`
	tests := []struct {
		name, method, path, body string
		status                   int
		contentType, answer      string
		want                     string // in the error reported; "" for none
	}{
		{"a right answer", "GET", "/api/me", "", 200, "application/json", me, ""},
		{"a field of the wrong type", "GET", "/api/me", "", 200, "application/json", strings.Replace(me, `"disabled":false`, `"disabled":"no"`, 1), "disabled"},
		{"a field the document lacks", "GET", "/api/me", "", 200, "application/json", strings.Replace(me, `{`, `{"password":"x",`, 1), "password"},
		{"a required field missing", "GET", "/api/me", "", 200, "application/json", strings.Replace(me, `"email":"ann@example.com",`, ``, 1), "email"},
		{"a status the operation does not list", "GET", "/api/me", "", http.StatusTeapot, "application/json", `{}`, "status is not supported"},
		{"an error in another shape", "GET", "/api/agents/a", "", 404, "application/json", `{"message":"no agent"}`, "error"},
		{"a stream's event with the wrong data", "POST", "/api/chat", `{"agent_id":"a","text":"hi"}`, 200, "text/event-stream",
			"id: 1\nevent: run.started\ndata: {\"agent_id\":\"a\",\"run_id\":7}\n\n", "run_id"},
		{"a request the document refuses, accepted", "PUT", "/api/memories/k", `{"value":"x","extra":1}`, 200, "application/json",
			`{"key":"k","value":"x","token_count":1,"updated_at":"2026-01-02T03:04:05Z"}`, "extra"},
		{"a path of the API the document lacks, answered", "GET", "/api/nothing", "", 200, "application/json", `{}`, "not in the document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", tc.contentType)
				if tc.path == "/api/chat" {
					w.Header().Set("Relay-Run-Id", "run_1")
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			})
			var errs []error
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			req.Header.Set("Authorization", "Bearer rk-test")
			req.Header.Set("Content-Type", "application/json")
			v.wrap(h, func(err error) { errs = append(errs, err) }).ServeHTTP(httptest.NewRecorder(), req)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("a right answer was reported: %v", errs)
			case tc.want != "" && len(errs) == 0:
				t.Errorf("not reported")
			case tc.want != "" && !strings.Contains(errors.Join(errs...).Error(), tc.want):
				t.Errorf("reported %v; want it to name %q", errs, tc.want)
			}
		})
	}
}
