package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/quota"
)

// serveConns serves h within c on a loopback port and returns its address.
func serveConns(t *testing.T, h http.Handler, c httpapi.Conns) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httpapi.NewHTTPServer(h, c)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// Slowloris: 500 connections sending their headers a byte at a time do not
// keep a normal client from being served meanwhile, and each is closed once
// the header timeout passes.
func TestSlowHeadersDoNotStarveOthers(t *testing.T) {
	const (
		slow          = 500
		headerTimeout = 2 * time.Second
	)
	addr := serveConns(t, newAPI(t, httpapi.Options{Version: "test"}), httpapi.Conns{ReadHeaderTimeout: headerTimeout, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10})

	stop := make(chan struct{})
	defer close(stop)
	conns := make([]net.Conn, slow)
	var dialed, writing sync.WaitGroup
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing slow connection %d: %v", i, err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
		dialed.Add(1)
		writing.Go(func() {
			// The request line, then header bytes one at a time, never the
			// blank line that would end them.
			_, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: ")
			dialed.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for err == nil {
				select {
				case <-stop:
					return
				case <-tick.C:
					_, err = c.Write([]byte("a"))
				}
			}
		})
	}
	dialed.Wait()

	// A normal client is answered while all 500 hold their connections: its
	// deadline is the header timeout, before which none of them is cut.
	ctx, cancel := context.WithTimeout(t.Context(), headerTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/healthz", nil)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("a normal request while 500 connections send headers slowly: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("normal request: %d %s", resp.StatusCode, body)
	}

	// Every slow connection is closed by the server: reading it ends (EOF or
	// a reset), not at the test's own deadline.
	var cut sync.WaitGroup
	var mu sync.Mutex
	open := 0
	for _, c := range conns {
		cut.Go(func() {
			c.SetReadDeadline(time.Now().Add(headerTimeout + 10*time.Second))
			_, err := io.Copy(io.Discard, c)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				open++
				mu.Unlock()
			}
		})
	}
	cut.Wait()
	if open > 0 {
		t.Errorf("%d of %d slow connections were still open 10s after the header timeout", open, slow)
	}
}

// A chat stream, and a client following the run's events, go on long past
// server.read_timeout: the timeout bounds the reading of the request, not
// the answer.
func TestStreamsOutliveReadTimeout(t *testing.T) {
	const readTimeout = 100 * time.Millisecond
	b := setupLimits(t, quota.Limits{}, 50)
	b.serveWithin(t, httpapi.Conns{ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout, IdleTimeout: readTimeout})

	a := b.chat(t, "ann", "wait", true)
	wantOK(t, "the chat", a)
	chat := bufio.NewReader(a.resp.Body)
	first, err := readEvent(chat)
	if err != nil || !strings.Contains(first, "event: run.started") {
		t.Fatalf("first event of the stream: %q, %v", first, err)
	}
	runID := a.resp.Header.Get("Relay-Run-Id")
	follow := b.send(t, "ann", "GET", "/api/runs/"+runID+"/events", "", nil, true)
	wantOK(t, "following the run", follow)
	// The answer comes well after the read timeout.
	time.AfterFunc(5*readTimeout, b.release)
	for name, r := range map[string]io.Reader{"the chat stream": chat, "the run's events": follow.resp.Body} {
		rest, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("reading %s: %v", name, err)
		}
		if !strings.Contains(string(rest), "event: run.finished") || !strings.Contains(string(rest), `"status":"succeeded"`) {
			t.Errorf("%s did not end with a succeeded run.finished:\n%s", name, rest)
		}
	}
}

// readEvent reads one SSE event, up to its blank line.
func readEvent(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		b.WriteString(line)
		if err != nil || line == "\n" {
			return b.String(), err
		}
	}
}

// A client sending its body slower than server.read_timeout is cut off.
func TestSlowBodyIsCut(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	b := setupLimits(t, quota.Limits{}, 50)
	addr := serveConns(t, b.handler, httpapi.Conns{ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = io.WriteString(c, "POST /api/chat HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer "+b.keys["ann"]+
		"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"agent_id\":")
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal("the server still waited for the body 10s after its read timeout")
	}
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode < 400 {
			t.Errorf("a body cut short was answered %d", resp.StatusCode)
		}
	}
}

// A request refused before its body is read (no key, a bad key, a rate
// limit) is answered at once and its connection closed: the server does not
// wait for the rest of the body to keep the connection, which would let a
// client without an account hold connections open until the read timeout by
// never sending it.
func TestRefusalDoesNotWaitForTheBody(t *testing.T) {
	addr := serveConns(t, newAPI(t, httpapi.Options{Version: "test"}), httpapi.Conns{ReadHeaderTimeout: time.Minute, ReadTimeout: 10 * time.Minute, IdleTimeout: time.Minute})
	for _, auth := range []string{"", "Authorization: Bearer rk-wrong\r\n"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "POST /api/agents HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"+auth+"Content-Length: 1000\r\n\r\n{"); err != nil {
			t.Fatal(err)
		}
		// Failing, the answer would come when the read timeout ends.
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: no answer while the body is not sent: %v", auth, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Errorf("%q: %s, Connection %q; want 401 and the connection closed", auth, resp.Status, resp.Header.Get("Connection"))
		}
		if _, err := br.ReadByte(); !errors.Is(err, io.EOF) {
			t.Errorf("%q: after the answer, reading = %v; want the connection closed (EOF)", auth, err)
		}
	}
}
