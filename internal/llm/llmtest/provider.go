package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
)

// Recorder collects the events of a turn: pass its Emit to Stream.
type Recorder struct {
	mu     sync.Mutex
	Events []llm.Event
}

// Emit records ev.
func (r *Recorder) Emit(ev llm.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Events = append(r.Events, ev)
}

// Kinds returns the events of one kind.
func (r *Recorder) Kinds(kind llm.EventKind) []llm.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []llm.Event
	for _, ev := range r.Events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// Provider is a fake provider's HTTP server for the tests of a provider
// client. Its n-th try is answered by the n-th handler (the last one answers
// any further try), and it keeps what each try sent. A request that match
// refuses is answered 404.
type Provider struct {
	*httptest.Server
	match    func(r *http.Request) bool
	handlers []http.HandlerFunc

	mu       sync.Mutex
	bodies   [][]byte
	requests []*http.Request
}

// NewProvider starts a Provider, closed when the test ends.
func NewProvider(t testing.TB, match func(r *http.Request) bool, handlers ...http.HandlerFunc) *Provider {
	t.Helper()
	p := &Provider{match: match, handlers: handlers}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Close)
	return p
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !p.match(r) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	n := len(p.bodies)
	p.bodies = append(p.bodies, body)
	p.requests = append(p.requests, r.Clone(context.Background()))
	p.mu.Unlock()
	p.handlers[min(n, len(p.handlers)-1)](w, r)
}

// Tries is the number of requests answered so far.
func (p *Provider) Tries() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.bodies)
}

// Body is the body of the n-th try (from 0).
func (p *Provider) Body(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies[n]
}

// Request is the n-th try (from 0), its body read.
func (p *Provider) Request(n int) *http.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[n]
}

// Stream answers 200 with the pieces of an event stream, written as they
// are and flushed one by one.
func Stream(contentType string, pieces ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(http.StatusOK)
		for _, p := range pieces {
			io.WriteString(w, p)
			w.(http.Flusher).Flush()
		}
	}
}

// Refuse answers status with body, and with the headers given as name,
// value pairs.
func Refuse(status int, contentType, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// Reset drops the connection without an answer.
func Reset(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		tcp.SetLinger(0)
	}
	conn.Close()
}

// Golden compares got, which must be compact JSON, with the indented JSON in
// testdata/name, rewriting that file first when update is set.
func Golden(t testing.TB, name string, got []byte, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		var pretty bytes.Buffer
		if err := json.Indent(&pretty, got, "", "  "); err != nil {
			t.Fatalf("body is not JSON: %v\n%s", err, got)
		}
		pretty.WriteByte('\n')
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, pretty.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if diff := cmp.Diff(compact.String(), string(got)); diff != "" {
		t.Errorf("body differs from %s (-want +got):\n%s", path, diff)
	}
}

// Retries returns the errors of the retry events.
func (r *Recorder) Retries() []*llm.Error {
	var out []*llm.Error
	for _, ev := range r.Kinds(llm.EventRetry) {
		out = append(out, ev.Retry)
	}
	return out
}

// Failure is how a test expects a turn to fail.
type Failure struct {
	Kind llm.ErrorKind
	// Error is the whole err.Error(); empty means any.
	Error string
	// Contains is a part of the error's Message; empty means any.
	Contains string
	// Text is the partial turn's text; empty means any.
	Text string
	// Secrets must not show in the error.
	Secrets []string
}

// CheckFailure checks that err is an *llm.Error as want says, and turn the
// partial turn it says.
func CheckFailure(t testing.TB, turn *llm.Turn, err error, want Failure) {
	t.Helper()
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != want.Kind {
		t.Fatalf("err = %v, want kind %s", err, want.Kind)
	}
	if want.Error != "" && err.Error() != want.Error {
		t.Errorf("message = %q\nwant        %q", err.Error(), want.Error)
	}
	if want.Contains != "" && !strings.Contains(le.Message, want.Contains) {
		t.Errorf("message = %q, want it to say %q", le.Message, want.Contains)
	}
	if want.Text != "" && (turn == nil || turn.Text != want.Text) {
		t.Errorf("turn = %+v, want the partial text %q", turn, want.Text)
	}
	for _, s := range want.Secrets {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error shows %q: %v", s, err)
		}
	}
}

// CheckClean checks that a log or message holds none of secrets.
func CheckClean(t testing.TB, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(text, s) {
			t.Errorf("%s holds %q:\n%s", what, s, text)
		}
	}
}

// CheckCancel runs req on m, cancelling it at the first text event, and
// checks that the turn returns the cancel cause with the text that arrived
// (want), after one try.
func CheckCancel(t testing.TB, m llm.Model, req *llm.Request, tries func() int, want string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	abort := errors.New("user pressed stop")
	turn, err := m.Stream(ctx, req, func(e llm.Event) {
		if e.Kind == llm.EventText {
			cancel(abort)
		}
	})
	if !errors.Is(err, abort) {
		t.Fatalf("err = %v, want the cancel cause", err)
	}
	if turn.Text != want || tries() != 1 {
		t.Errorf("turn %+v after %d tries; want the partial text, one try", turn, tries())
	}
}

// CheckSumRoundTrip runs a turn of req, whose one tool adds a and b, and
// checks that the model calls it with a=2, b=3; then runs the turn after
// the call, answered "5", and checks that the model says want.
func CheckSumRoundTrip(t testing.TB, m llm.Model, req *llm.Request, want string) {
	t.Helper()
	turn, err := m.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(turn.ToolCalls) != 1 || turn.FinishReason != llm.FinishToolCalls {
		t.Fatalf("turn = %+v, want one tool call", turn)
	}
	call := turn.ToolCalls[0]
	var args map[string]float64
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || args["a"] != 2 || args["b"] != 3 {
		t.Errorf("call = %+v, want %s with a=2, b=3", call, req.Tools[0].Function.Name)
	}
	if call.Function.Name != req.Tools[0].Function.Name || call.ID == "" {
		t.Errorf("call = %+v", call)
	}
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.RoleAssistant, ToolCalls: turn.ToolCalls},
		llm.Message{Role: llm.RoleTool, ToolCallID: call.ID, Content: "5"})
	turn, err = m.Stream(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if turn.Text != want {
		t.Errorf("text = %q, want %q, the answer to the tool's result", turn.Text, want)
	}
}
