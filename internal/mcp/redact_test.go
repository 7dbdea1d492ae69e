package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
	"github.com/relay-ai/relay/internal/poll"
)

// logBuffer collects a logger's output; handlers write to it from many goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func debugLogger(b *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestErrorsNeverCarrySecrets: a secret substituted into a server's URL or
// headers, and a user's details, appear in no error a caller or the model sees,
// no state the API shows and no log line, however the connection fails.
func TestErrorsNeverCarrySecrets(t *testing.T) {
	const token = "tok/7f3a+9c1e5d"
	user := &mcp.User{ID: "user-42", Email: "ann@example.com"}
	secrets := []string{token, url.QueryEscape(token), url.PathEscape(token), user.Email, url.QueryEscape(user.Email)}
	getenv := func(k string) (string, bool) { return token, k == "MCP_TOKEN" }

	// echo answers every request with a failure that quotes what it was sent.
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "refused "+r.URL.String()+" with "+r.Header.Get("Authorization"), http.StatusForbidden)
	}))
	t.Cleanup(echo.Close)
	dead := fmt.Sprintf("http://127.0.0.1:%d", mcptest.FreePort(t))

	type failure struct {
		name string
		base func(t *testing.T, transport string) (base string, stop func())
	}
	failures := []failure{
		{"refused", func(*testing.T, string) (string, func()) { return dead, nil }},
		{"echoed", func(*testing.T, string) (string, func()) { return echo.URL, nil }},
		{"lost mid-session", func(t *testing.T, transport string) (string, func()) {
			srv := mcptest.NewServer(mcptest.Options{})
			hs := httptest.NewServer(mcptest.Handler(func() *sdk.Server { return srv }))
			t.Cleanup(hs.Close)
			return hs.URL, func() {
				// Websockets are hijacked: only closing the sessions ends them.
				for ss := range srv.Sessions() {
					_ = ss.Close()
				}
				hs.CloseClientConnections()
				hs.Close()
			}
		}},
	}
	for _, f := range failures {
		for _, transport := range []string{mcp.TransportSSE, mcp.TransportStreamableHTTP, mcp.TransportWebSocket} {
			t.Run(f.name+"/"+transport, func(t *testing.T) {
				base, stop := f.base(t, transport)
				endpoint, err := mcptest.Endpoint(base, transport)
				if err != nil {
					t.Fatal(err)
				}
				s := server("s", transport, endpoint+"?api_key=${MCP_TOKEN}&who={{LIBRECHAT_USER_EMAIL}}")
				s.Scope = mcp.ScopeUser
				s.Headers = map[string]string{"Authorization": "Bearer ${MCP_TOKEN}"}
				s.InitTimeout, s.Timeout = 3*time.Second, 3*time.Second
				var logs logBuffer
				m := newManager(t, mcp.Options{Getenv: getenv, Logger: debugLogger(&logs), BackoffBase: 50 * time.Millisecond}, s)

				var seen []string
				if stop != nil {
					if _, err := call(t, m, user, "echo__mcp__s", `{"message":"up"}`); err != nil {
						t.Fatalf("before the failure: %v", err)
					}
					stop()
				}
				_, err = call(t, m, user, "echo__mcp__s", `{"message":"x"}`)
				if err == nil {
					t.Fatal("a call to a failing server succeeded")
				}
				seen = append(seen, err.Error(), mcp.FailureText("echo__mcp__s", err))
				if _, err := m.Tools(context.Background(), "s", user); err != nil {
					seen = append(seen, err.Error())
				}
				// Let a reconnect after the backoff fail and be logged too.
				uses := strings.Count(logs.String(), "mcp connect failed")
				poll.Until(t, 10*time.Second, "a reconnect failed and logged", func() bool {
					return strings.Count(logs.String(), "mcp connect failed") > uses
				})
				for _, st := range append(m.Status(nil), m.Status(user)...) {
					raw, _ := json.Marshal(st)
					seen = append(seen, string(raw))
				}
				seen = append(seen, logs.String())
				for _, text := range seen {
					for _, secret := range secrets {
						if strings.Contains(text, secret) {
							t.Errorf("%q appears in:\n%s", secret, text)
						}
					}
				}
				t.Logf("the call failed with: %v", err)
			})
		}
	}
}

// TestCleanErrorsKeepTheirKind: cleaning an error does not hide that it was a
// cancellation.
func TestCleanErrorsKeepTheirKind(t *testing.T) {
	url := mcptest.Start(t, "websocket", mcptest.Options{})
	s := server("go", mcp.TransportWebSocket, url+"?k=${K}")
	m := newManager(t, mcp.Options{Getenv: func(string) (string, bool) { return "some-secret", true }}, s)
	if _, err := call(t, m, nil, "echo__mcp__go", `{"message":"warm up"}`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := m.Call(ctx, nil, "sleep__mcp__go", json.RawMessage(`{"ms": 5000}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled call failed with %v, which is not context.Canceled", err)
	}
}
