package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

// TestHeadersStayWithTheirHost: a server that redirects to another host does not
// hand that host the configured credentials, whatever the transport; a redirect
// within the server's own host keeps them.
func TestHeadersStayWithTheirHost(t *testing.T) {
	received := make(chan http.Header, 100)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received <- r.Header.Clone()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(other.Close)
	// The same listener under another name is another host to a client.
	otherBase := strings.Replace(other.URL, "127.0.0.1", "localhost", 1)

	srv := mcptest.NewServer(mcptest.Options{})
	mcpHandler := mcptest.Handler(func() *sdk.Server { return srv })
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/away"):
			http.Redirect(w, r, otherBase+strings.TrimPrefix(r.URL.Path, "/away"), http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/moved"):
			http.Redirect(w, r, strings.TrimPrefix(r.URL.Path, "/moved"), http.StatusTemporaryRedirect)
		default:
			mcpHandler.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(first.Close)

	for _, transport := range []string{mcp.TransportSSE, mcp.TransportStreamableHTTP, mcp.TransportWebSocket} {
		t.Run(transport, func(t *testing.T) {
			endpoint, err := mcptest.Endpoint(first.URL, transport)
			if err != nil {
				t.Fatal(err)
			}
			scheme, rest, _ := strings.Cut(endpoint, "://")
			host, path, _ := strings.Cut(rest, "/")
			headers := map[string]string{"Authorization": "Bearer sk-relay-secret", "X-Api-Key": "key-relay-secret", "X-User": "ann"}

			away := server("away", transport, scheme+"://"+host+"/away/"+path)
			away.Headers, away.InitTimeout = headers, 2*time.Second
			m := newManager(t, mcp.Options{}, away)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			if _, err := m.Tools(ctx, "away", nil); err == nil {
				t.Fatal("listing the tools of a server that redirects to nothing succeeded")
			}
			select {
			case h := <-received:
				for k := range headers {
					if v := h.Get(k); v != "" {
						t.Errorf("the other host received %s: %q", k, v)
					}
				}
			case <-time.After(time.Second):
				// The client refused the redirect before sending anything: fine too.
			}

			moved := server("moved", transport, scheme+"://"+host+"/moved/"+path)
			moved.Headers = headers
			m = newManager(t, mcp.Options{}, moved)
			res, err := call(t, m, nil, "whoami__mcp__moved", `{}`)
			if err != nil {
				t.Fatalf("a redirect within the server's host: %v", err)
			}
			var who mcptest.Whoami
			if err := json.Unmarshal([]byte(text(res)), &who); err != nil || who.Header != "ann" {
				t.Errorf("after a redirect within the host the server saw X-User %q (%v)", who.Header, err)
			}
		})
	}
}

// goroutinesIn counts the goroutines running code of package mcp (not its tests).
func goroutinesIn() int {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	n := 0
	for _, g := range strings.Split(b.String(), "\n\n") {
		if strings.Contains(g, "github.com/relay-ai/relay/internal/mcp.") {
			n++
		}
	}
	return n
}

// TestStdioStderrLeavesNothingBehind: a stdio server's stderr is logged line by
// line, and a closed connection leaves no goroutine reading it.
func TestStdioStderrLeavesNothingBehind(t *testing.T) {
	everything := mcptest.Peer(t, "PEER_EVERYTHING")
	before := goroutinesIn()
	var logs logBuffer
	for i := range 4 {
		s := server("e", mcp.TransportStdio, "")
		s.Command, s.Args = "sh", []string{"-c", `printf 'starting\r\nup\n' >&2; printf 'no newline' >&2; exec node "$0" stdio`, everything}
		m := mcp.NewManager([]mcp.ServerConfig{s}, mcp.Options{Logger: debugLogger(&logs)})
		if _, err := call(t, m, nil, "echo__mcp__e", `{"message":"x"}`); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		m.Close()
	}
	for _, want := range []string{"line=starting\n", "line=up\n", `line="no newlineStarting`} {
		if got := strings.Count(logs.String(), want); got != 4 {
			t.Errorf("%q logged %d times, want 4:\n%s", want, got, logs.String())
		}
	}
	poll.Until(t, 5*time.Second, "end of the goroutines of package mcp", func() bool { return goroutinesIn() <= before })
}

// A stdio server that dies at start is told with how it ended and what it
// last wrote to stderr, masked (its environment's values and its arguments'
// secret options); one that says nothing, with its status alone.
func TestStdioServerDyingAtStart(t *testing.T) {
	const secret, argSecret = "tok-9fQ2xLm7Vb", "key-Hq81zPw3Rd"
	for _, tc := range []struct{ script, want string }{
		{`echo 'starting'; echo "fatal: bad credentials for $TOKEN" >&2; echo '' >&2; exit 3`,
			`exited with status 3; its last words on stderr: fatal: bad credentials for [redacted]`},
		{`exit 7`, `(the server exited with status 7)`},
		// A usage message echoing the server's arguments, secret options among them.
		{`echo "usage: server $*" >&2; exit 2`, `its last words on stderr: usage: server --api-key [redacted] --token=[redacted]`},
	} {
		s := server("crashy", mcp.TransportStdio, "")
		s.Command, s.Args = "sh", []string{"-c", tc.script, "x", "--api-key", argSecret, "--token=" + argSecret}
		s.Env = map[string]string{"TOKEN": secret}
		var logs logBuffer
		_, err := mcp.Connect(t.Context(), s, mcp.ConnectOptions{Logger: debugLogger(&logs)})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), argSecret) {
			t.Errorf("%s: %v; want it to say %q, without the secret", tc.script, err, tc.want)
		}
		// The debug log of its stderr masks it too: a user's own key, in a
		// user-scoped server's environment, is known to no log handler.
		if strings.Contains(logs.String(), secret) || strings.Contains(logs.String(), argSecret) {
			t.Errorf("%s: the debug log holds the secret:\n%s", tc.script, logs.String())
		}
	}
}
