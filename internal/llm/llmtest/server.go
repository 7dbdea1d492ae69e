package llmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/relay-ai/relay/internal/llm"
)

// Server starts a fake OpenAI-compatible server that answers every request
// with h, and closes it when the test ends. Its base URL for a client is
// URL + "/v1"; requests for chat completions come to /v1/chat/completions.
func Server(t testing.TB, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// SSE writes a chat-completions stream the way OpenAI does: a "data: " line
// and a blank line per chunk, each flushed at once. Write errors are ignored;
// a client that went away simply stops reading.
type SSE struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

// NewSSE starts a 200 event-stream answer on w.
func NewSSE(w http.ResponseWriter) *SSE {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	s := &SSE{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// Data writes one event: v itself when it is a string or []byte, else its
// JSON.
func (s *SSE) Data(v any) {
	var b []byte
	switch v := v.(type) {
	case string:
		b = []byte(v)
	case []byte:
		b = v
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			panic(fmt.Sprintf("llmtest: writing an event: %v", err))
		}
	}
	_, _ = fmt.Fprintf(s.w, "data: %s\n\n", b)
	_ = s.rc.Flush()
}

// chunk is the part of a chat.completion.chunk that clients read.
func chunk(delta map[string]any, finish any) map[string]any {
	return map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": "test",
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
}

// Text writes a chunk holding a piece of the answer's text.
func (s *SSE) Text(text string) {
	s.Data(chunk(map[string]any{"content": text}, nil))
}

// ToolCall writes a chunk holding a piece of the tool call at index: id and
// name when it starts (empty after), then pieces of its arguments.
func (s *SSE) ToolCall(index int, id, name, args string) {
	tc := map[string]any{"index": index, "function": map[string]any{"arguments": args}}
	if id != "" {
		tc["id"] = id
		tc["type"] = "function"
	}
	if name != "" {
		tc["function"].(map[string]any)["name"] = name
	}
	s.Data(chunk(map[string]any{"tool_calls": []any{tc}}, nil))
}

// Finish writes the chunk that ends the answer with reason.
func (s *SSE) Finish(reason string) {
	s.Data(chunk(map[string]any{}, reason))
}

// Usage writes the usage chunk that stream_options.include_usage asks for.
func (s *SSE) Usage(u llm.Usage) {
	s.Data(map[string]any{"id": "chatcmpl-test", "object": "chat.completion.chunk", "choices": []any{}, "usage": u})
}

// Done writes the stream's end, "data: [DONE]".
func (s *SSE) Done() {
	s.Data("[DONE]")
}

// Client returns an HTTP client that hands its requests to h in memory,
// through no network. Tests under testing/synctest need it: a real
// connection's reads would keep the bubble's clock from advancing. Each
// request's context, as h sees it, is done when the client cancels the
// request or closes the answer's body.
func Client(h http.Handler) *http.Client {
	return &http.Client{Transport: transport{h}}
}

type transport struct{ h http.Handler }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	pr, pw := io.Pipe()
	// Reads fail once the request is cancelled, as a connection's do.
	context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	w := &pipeWriter{header: http.Header{}, pw: pw, started: make(chan struct{})}
	sreq := req.Clone(ctx)
	sreq.RequestURI = req.URL.RequestURI()
	sreq.RemoteAddr = "192.0.2.1:1234"
	if req.Body == nil {
		sreq.Body = http.NoBody
	}
	go func() {
		defer func() {
			if req.Body != nil {
				req.Body.Close()
			}
			p := recover()
			if p != nil && p != http.ErrAbortHandler {
				panic(p)
			}
			if p != nil {
				// The handler hung up: before the header, no answer at
				// all; after it, a body cut short.
				w.once.Do(func() { close(w.started) })
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			}
			w.WriteHeader(http.StatusOK)
			pw.Close()
		}()
		t.h.ServeHTTP(w, sreq)
	}()
	select {
	case <-w.started:
	case <-ctx.Done():
		cancel()
		return nil, context.Cause(ctx)
	}
	if w.status == 0 {
		cancel()
		return nil, fmt.Errorf("llmtest: the server hung up before answering: %w", io.EOF)
	}
	return &http.Response{
		Status:     fmt.Sprintf("%d %s", w.status, http.StatusText(w.status)),
		StatusCode: w.status,
		Proto:      "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        w.sent,
		Body:          &pipeBody{pr: pr, cancel: cancel},
		ContentLength: -1,
		Request:       req,
	}, nil
}

// pipeWriter is the ResponseWriter of an in-memory request: the body goes
// through a pipe to the client.
type pipeWriter struct {
	header  http.Header
	sent    http.Header // the header as it was when WriteHeader was called
	status  int
	pw      *io.PipeWriter
	once    sync.Once
	started chan struct{}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		w.sent = w.header.Clone()
		close(w.started)
	})
}

func (w *pipeWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(p)
}

// Flush does nothing: every write reaches the client at once.
func (w *pipeWriter) Flush() {}

// pipeBody is the client's end of the pipe; closing it cancels the
// handler's request.
type pipeBody struct {
	pr     *io.PipeReader
	cancel context.CancelFunc
}

func (b *pipeBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *pipeBody) Close() error {
	b.cancel()
	return b.pr.Close()
}
