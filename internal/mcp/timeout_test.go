package mcp_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

// TestCallTimeoutCoversTheConnect: a call to a server that is slow to connect
// ends at the call's own timeout, not at the longer initTimeout; the connect goes
// on, and a later call gets through.
func TestCallTimeoutCoversTheConnect(t *testing.T) {
	srv := mcptest.NewServer(mcptest.Options{})
	h := mcptest.Handler(func() *sdk.Server { return srv })
	// The first request, initialize, is held until the first call has ended.
	var slow atomic.Bool
	slow.Store(true)
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.CompareAndSwap(true, false) {
			<-release
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})
	s := server("slow", mcp.TransportStreamableHTTP, hs.URL+mcptest.StreamablePath)
	s.Timeout, s.InitTimeout = time.Second, 10*time.Second
	m := newManager(t, mcp.Options{}, s)

	began := time.Now()
	_, err := call(t, m, nil, "echo__mcp__slow", `{"message":"x"}`)
	took := time.Since(began)
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("a call to a server still connecting: %v", err)
	}
	if took < time.Second || took > 1800*time.Millisecond {
		t.Errorf("the call ended after %s, want its 1 s timeout", took)
	}
	if !strings.Contains(mcp.FailureText("echo__mcp__slow", err), "within 1s") {
		t.Errorf("the model would read: %s", mcp.FailureText("echo__mcp__slow", err))
	}
	close(release)
	poll.Until(t, 10*time.Second, "connect after initialize was answered", func() bool { return m.Status(nil)[0].State == mcp.StateConnected })
	res, err := call(t, m, nil, "echo__mcp__slow", `{"message":"later"}`)
	if err != nil || !strings.Contains(text(res), "later") {
		t.Errorf("a later call: %v %v", res, err)
	}
}
