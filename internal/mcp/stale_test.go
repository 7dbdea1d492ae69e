package mcp_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// exchange is one POST a recorder saw: the JSON-RPC method, whether it carried
// a session id, and the HTTP status of the answer.
type exchange struct {
	Method      string
	WithSession bool
	Status      int
}

// recorder keeps the POSTs that pass through a test's HTTP handler.
type recorder struct {
	mu   sync.Mutex
	seen []exchange
}

func (r *recorder) add(e exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, e)
}

// since returns the exchanges after the first n, and how many there are in all.
func (r *recorder) since(n int) ([]exchange, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.seen[n:]...), len(r.seen)
}

func (r *recorder) count(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.seen {
		if e.Method == method {
			n++
		}
	}
	return n
}

// rpcMethod reads a POST's body, puts it back, and returns its JSON-RPC method
// ("" for an answer of the client's).
func rpcMethod(t *testing.T, r *http.Request) string {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("reading a request: %v", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var msg struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(body, &msg)
	return msg.Method
}

// statusWriter records its exchange when the status is written, before the
// client can read any of the answer.
type statusWriter struct {
	http.ResponseWriter
	rec  *recorder
	e    exchange
	done bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		w.e.Status = code
		w.rec.add(w.e)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	w.WriteHeader(http.StatusOK)
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// recording serves next and records every POST it answers. GETs (the
// standalone event stream) are answered 405, as a server without that stream
// does: the only requests that can find a session gone are then Relay's own
// requests, which is what the tests look at.
func recording(t *testing.T, rec *recorder, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.Error(w, "no standalone stream here", http.StatusMethodNotAllowed)
			return
		}
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		e := exchange{Method: rpcMethod(t, r), WithSession: r.Header.Get("Mcp-Session-Id") != ""}
		next.ServeHTTP(&statusWriter{ResponseWriter: w, rec: rec, e: e}, r)
	})
}

// TestStreamableHTTPServerRestarted: after a streamable-HTTP server restarts
// (its sessions gone), the next call starts a new session and succeeds; the
// caller never sees the refused first attempt.
func TestStreamableHTTPServerRestarted(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	port := mcptest.FreePort(t)
	env := []string{fmt.Sprintf("PORT=%d", port)}
	p := mcptest.StartProcess(t, port, env, "node", everything, "streamableHttp")

	target, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", port))
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.FlushInterval = -1
	// No pooled connections to a process that is about to be killed.
	proxy.Transport = &http.Transport{DisableKeepAlives: true}
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the killed process's requests fail; that is the test
	rec := &recorder{}
	hs := httptest.NewServer(recording(t, rec, proxy))
	t.Cleanup(hs.Close)

	s := server("everything", mcp.TransportStreamableHTTP, hs.URL+"/mcp")
	s.Timeout = 10 * time.Second
	m := newManager(t, mcp.Options{}, s)
	if res, err := call(t, m, nil, "echo__mcp__everything", `{"message":"before"}`); err != nil || text(res) != "Echo: before" {
		t.Fatalf("first call: %v %v", res, err)
	}
	if n := rec.count("initialize"); n != 1 {
		t.Fatalf("%d initialize requests before the restart, want 1", n)
	}

	p.Stop()
	mcptest.StartProcess(t, port, env, "node", everything, "streamableHttp")
	_, mark := rec.since(0)
	if st := m.Status(nil)[0]; st.State != mcp.StateConnected {
		t.Fatalf("before the call after the restart the state is already %+v; the call would not meet the gone session", st)
	}

	res, err := call(t, m, nil, "echo__mcp__everything", `{"message":"after"}`)
	if err != nil {
		t.Fatalf("the call after the restart failed: %v", err)
	}
	if got := text(res); got != "Echo: after" {
		t.Errorf("the call after the restart got %q", got)
	}
	after, _ := rec.since(mark)
	t.Logf("requests after the restart: %+v", after)
	var refused, initialized, answered int
	for _, e := range after {
		switch {
		case e.Method == "tools/call" && e.WithSession && (e.Status == http.StatusNotFound || e.Status == http.StatusBadRequest):
			refused++
		case e.Method == "initialize" && !e.WithSession && e.Status == http.StatusOK:
			if refused == 0 {
				t.Errorf("a new initialize before any request was refused: %+v", after)
			}
			initialized++
		case e.Method == "tools/call" && e.Status == http.StatusOK:
			if initialized == 0 {
				t.Errorf("the call went through before a new initialize: %+v", after)
			}
			answered++
		}
	}
	if refused != 1 || initialized != 1 || answered != 1 {
		t.Errorf("after the restart: %d refused calls, %d new initialize, %d answered calls; want 1, 1, 1", refused, initialized, answered)
	}
	if st := m.Status(nil)[0]; st.State != mcp.StateConnected {
		t.Errorf("after the call: %+v", st)
	}
}

// refusingServer serves the test tools over streamable HTTP, except that a
// request with a session id for whose method refuse returns a status other
// than 0 is answered with that status and its plain-text name.
func refusingServer(t *testing.T, refuse func(method string) int) (mcp.ServerConfig, *recorder) {
	srv := mcptest.NewServer(mcptest.Options{})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	rec := &recorder{}
	hs := httptest.NewServer(recording(t, rec, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := rpcMethod(t, r)
		if status := refuse(method); status != 0 && r.Header.Get("Mcp-Session-Id") != "" {
			http.Error(w, http.StatusText(status), status)
			return
		}
		h.ServeHTTP(w, r)
	})))
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	s := server("refusing", mcp.TransportStreamableHTTP, hs.URL)
	s.Timeout = 5 * time.Second
	return s, rec
}

// TestBadRequestThatPersists: a server that answers 400 to every tools/call
// gets the call once more on a new session, and then the call fails with that
// answer; it is not sent a third time.
func TestBadRequestThatPersists(t *testing.T) {
	s, rec := refusingServer(t, func(method string) int {
		if method == "tools/call" {
			return http.StatusBadRequest
		}
		return 0
	})
	m := newManager(t, mcp.Options{}, s)
	began := time.Now()
	_, err := call(t, m, nil, "echo__mcp__refusing", `{"message":"hi"}`)
	if err == nil {
		t.Fatal("a call the server refused succeeded")
	}
	t.Logf("error: %v (after %s)", err, time.Since(began))
	if !strings.Contains(err.Error(), "Bad Request") {
		t.Errorf("the error does not say what the server answered: %v", err)
	}
	if n := rec.count("tools/call"); n != 2 {
		t.Errorf("tools/call sent %d times, want 2 (one retry)", n)
	}
	if n := rec.count("initialize"); n != 2 {
		t.Errorf("%d initialize requests, want 2 (one new session)", n)
	}
}

// TestToolListingOnGoneSession: a tools/list refused with 404 because the
// session is gone is sent again on a new session.
func TestToolListingOnGoneSession(t *testing.T) {
	var once sync.Once
	s, rec := refusingServer(t, func(method string) int {
		status := 0
		if method == "tools/list" {
			once.Do(func() { status = http.StatusNotFound })
		}
		return status
	})
	m := newManager(t, mcp.Options{}, s)
	ctx := t.Context()
	tools, err := m.Tools(ctx, "refusing", nil)
	if err != nil {
		t.Fatalf("listing the tools: %v", err)
	}
	if len(tools) == 0 {
		t.Error("no tools listed")
	}
	if n := rec.count("initialize"); n != 2 {
		t.Errorf("%d initialize requests, want 2 (one new session)", n)
	}
	if n := rec.count("tools/list"); n != 2 {
		t.Errorf("tools/list sent %d times, want 2", n)
	}
}
