package cli

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// relay serve takes its rate limits and header timeout from the config: a
// key over limits.api is answered 429 with Retry-After, and a client that
// does not finish its headers within server.read_header_timeout is
// disconnected.
func TestServeAppliesLimits(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n  read_header_timeout: 500ms\n"+
		"limits:\n  include_admins: true\n  api:\n    key_per_minute: 60\n    key_burst: 2\n")
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	for range 2 {
		if code := s.call(t, testKey, "GET", "/api/me", "", nil); code != http.StatusOK {
			t.Fatalf("GET /api/me within the burst: %d", code)
		}
	}
	req, _ := http.NewRequest("GET", s.base+"/api/me", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(raw), "one API key (60)") {
		t.Errorf("third request: %d, Retry-After %q, %s", resp.StatusCode, resp.Header.Get("Retry-After"), raw)
	}

	c, err := net.Dial("tcp", strings.TrimPrefix(s.base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: relay\r\nX-Slow: a"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.Copy(io.Discard, c); errors.Is(err, os.ErrDeadlineExceeded) {
		t.Error("a client that never finished its headers was still connected 10s after server.read_header_timeout")
	}
}
