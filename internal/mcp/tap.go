package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"
)

// httpTap does for streamable HTTP, at the HTTP layer, what userIDConn and
// schemaConn do on the connections of the other transports: it adds the
// user's id to tools/call and keeps the input schemas of tools/list answers
// as the server wrote them. It cannot be done on the connection there: the
// go-sdk opens the stream on which a streamable HTTP server sends requests of
// its own (questions, sampling, list changes) only on its own connection
// type, which a wrapped connection hides from it.
type httpTap struct {
	base    http.RoundTripper
	userID  string // "" adds none
	schemas *rawSchemas

	mu      sync.Mutex
	pending map[string]bool // JSON ids of tools/list requests not answered yet
}

// maxTapBody bounds a request body the tap reads to rewrite.
const maxTapBody = 32 << 20

func (t *httpTap) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodPost && r.Body != nil && r.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(r.Body, maxTapBody))
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = t.request(body)
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	t.mu.Lock()
	listing := len(t.pending) > 0
	t.mu.Unlock()
	if !listing {
		return resp, nil
	}
	switch ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct {
	case "application/json":
		resp.Body = &tapBody{ReadCloser: resp.Body, whole: true, t: t}
	case "text/event-stream":
		resp.Body = &tapBody{ReadCloser: resp.Body, t: t}
	}
	return resp, nil
}

// request notes a tools/list request's id and adds the user's id to the
// params of a tools/call, returning the body to send.
func (t *httpTap) request(body []byte) []byte {
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return body // a batch, or not JSON: the server says what it thinks of it
	}
	var method string
	_ = json.Unmarshal(msg["method"], &method)
	switch {
	case method == "tools/list" && len(msg["id"]) > 0:
		t.mu.Lock()
		if t.pending == nil {
			t.pending = map[string]bool{}
		}
		t.pending[compactJSON(msg["id"])] = true
		t.mu.Unlock()
	case method == "tools/call" && t.userID != "":
		params := map[string]json.RawMessage{}
		if len(msg["params"]) > 0 && json.Unmarshal(msg["params"], &params) != nil {
			return body
		}
		params["userId"], _ = json.Marshal(t.userID)
		msg["params"], _ = json.Marshal(params)
		if out, err := json.Marshal(msg); err == nil {
			return out
		}
	}
	return body
}

// message looks at one message from the server: the answer to a tools/list
// request has its schemas kept.
func (t *httpTap) message(data []byte) {
	var resp struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal(data, &resp) != nil || len(resp.ID) == 0 || len(resp.Result) == 0 {
		return
	}
	k := compactJSON(resp.ID)
	t.mu.Lock()
	listed := t.pending[k]
	delete(t.pending, k)
	t.mu.Unlock()
	if listed {
		t.schemas.keep(resp.Result)
	}
}

func compactJSON(b []byte) string {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return string(b)
	}
	return out.String()
}

// maxTapEvent bounds what is kept of one server-sent event, or of a JSON
// body, to look at; a longer one is passed on but not looked at.
const maxTapEvent = 32 << 20

// tapBody passes a response body on, looking at the messages in it: a whole
// JSON body when it ends, or each server-sent event as it completes.
type tapBody struct {
	io.ReadCloser
	t     *httpTap
	whole bool
	buf   []byte
	over  bool // buf outgrew maxTapEvent: skip to the next event
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.take(p[:n])
	}
	if err == io.EOF && b.whole && !b.over {
		b.t.message(b.buf)
		b.buf = nil
	}
	return n, err
}

func (b *tapBody) take(p []byte) {
	if b.whole {
		if len(b.buf)+len(p) > maxTapEvent {
			b.over, b.buf = true, nil
		} else if !b.over {
			b.buf = append(b.buf, p...)
		}
		return
	}
	b.buf = append(b.buf, p...)
	for {
		i, sep := eventEnd(b.buf)
		if i < 0 {
			break
		}
		if !b.over {
			b.event(b.buf[:i])
		}
		b.over = false
		b.buf = b.buf[i+sep:]
	}
	if len(b.buf) > maxTapEvent {
		b.over, b.buf = true, b.buf[:0]
	}
}

// eventEnd finds the blank line that ends an event: its index and length.
func eventEnd(b []byte) (int, int) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\n' {
			continue
		}
		switch {
		case i+1 < len(b) && b[i+1] == '\n':
			return i, 2
		case i+2 < len(b) && b[i+1] == '\r' && b[i+2] == '\n':
			return i, 3
		}
	}
	return -1, 0
}

// event looks at the data of one server-sent event.
func (b *tapBody) event(ev []byte) {
	var data []byte
	for _, line := range bytes.Split(ev, []byte("\n")) {
		line = bytes.TrimSuffix(line, []byte("\r"))
		if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(rest, []byte(" "))...)
		}
	}
	if len(data) > 0 {
		b.t.message(data)
	}
}
