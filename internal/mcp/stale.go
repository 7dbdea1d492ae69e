package mcp

import (
	"context"
	"net/http"
	"sync/atomic"
)

// sessionIDHeader carries a streamable-HTTP session's id on every request after
// initialize.
const sessionIDHeader = "Mcp-Session-Id"

// staleProbe records whether the server refused one of Relay's requests (a
// tools/call, a page of tools/list) because it no longer knows the session the
// request carried: HTTP 404 to a request with a session id, as the MCP spec
// says a server answers once a session is gone (after a restart, say), or HTTP
// 400 to one, as some servers (server-everything among them) answer instead.
// The server did not execute such a request, so it may be sent once more on a
// new session; the spec asks the client to start one with a new initialize.
type staleProbe struct {
	status atomic.Int32 // the refusing HTTP status; 0 while none
}

type staleProbeKey struct{}

// withStaleProbe returns ctx carrying a new probe, which staleSessionTransport
// marks for every HTTP request made with that context.
func withStaleProbe(ctx context.Context) (context.Context, *staleProbe) {
	p := &staleProbe{}
	return context.WithValue(ctx, staleProbeKey{}, p), p
}

// refused returns the HTTP status with which the server refused the session,
// if it did.
func (p *staleProbe) refused() (int, bool) {
	s := p.status.Load()
	return int(s), s != 0
}

// staleSessionTransport marks the staleProbe of a request's context when the
// server answers a POST that carried a session id with 404 or 400. It changes
// nothing else: the go-sdk still reads the answer and reports the failure.
type staleSessionTransport struct {
	base http.RoundTripper
}

func (t *staleSessionTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost || r.Header.Get(sessionIDHeader) == "" {
		return resp, err
	}
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusBadRequest {
		if p, ok := r.Context().Value(staleProbeKey{}).(*staleProbe); ok {
			p.status.Store(int32(resp.StatusCode))
		}
	}
	return resp, nil
}
