package netguard

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// server is an httptest server on 127.0.0.1 that counts its requests.
func server(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if h != nil {
			h(w, r)
			return
		}
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func mustGuard(t *testing.T, allowed ...string) *Guard {
	t.Helper()
	g, err := New(allowed)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func get(t *testing.T, c *http.Client, u string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// refused asserts that err is the guard's refusal of a kind address, and that
// its text names want.
func refused(t *testing.T, err error, kind, want string) {
	t.Helper()
	var re *RefusedError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a refusal", err)
	}
	if re.Kind != kind {
		t.Errorf("refused as %q, want %q (%v)", re.Kind, kind, re)
	}
	if !strings.Contains(re.Error(), want) {
		t.Errorf("refusal %q does not name %q", re.Error(), want)
	}
}

// Non-public addresses are refused after resolution, whatever form the URL
// gives them in, and the server behind them never hears a request.
func TestClientRefusesNonPublicAddresses(t *testing.T) {
	srv, hits := server(t, nil)
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	c := mustGuard(t).Client(ClientOptions{Timeout: 5 * time.Second})
	for _, tc := range []struct {
		name, url, kind, addr string
	}{
		{"ipv4 loopback", "http://127.0.0.1:" + port + "/hook?token=s3cret", "loopback", "127.0.0.1"},
		{"ipv6 loopback", "http://[::1]:" + port + "/", "loopback", "::1"},
		{"name resolving to loopback", "http://localhost:" + port + "/", "loopback", "localhost resolves to"},
		{"ipv4-mapped loopback", "http://[::ffff:127.0.0.1]:" + port + "/", "loopback", "127.0.0.1"},
		{"cloud metadata", "http://169.254.169.254/latest/meta-data/", "link-local", "169.254.169.254"},
		{"unspecified", "http://0.0.0.0:" + port + "/", "unspecified", "0.0.0.0"},
		{"private", "http://10.1.2.3/", "private", "10.1.2.3"},
		{"ipv4-mapped private", "http://[::ffff:192.168.1.1]/", "private", "192.168.1.1"},
		{"cgnat", "http://100.64.0.1/", "shared (CGNAT)", "100.64.0.1"},
		{"unique local", "http://[fd00::1]/", "private", "fd00::1"},
		{"ipv6 link-local", "http://[fe80::1]/", "link-local", "fe80::1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := get(t, c, tc.url)
			refused(t, err, tc.kind, tc.addr)
			if msg := RedactError(err, tc.url); strings.Contains(msg, "s3cret") || !strings.Contains(msg, tc.addr) {
				t.Errorf("the redacted refusal is %q", msg)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server got %d requests", n)
	}
}

// A redirect from an allowed server to loopback is refused at the redirect's
// own connection, by address or by a name that resolves to it.
func TestClientRefusesRedirectToLoopback(t *testing.T) {
	target, hits := server(t, nil)
	tu, _ := url.Parse(target.URL)
	for _, to := range []string{
		target.URL + "/internal",
		"http://localhost:" + tu.Port() + "/internal",
		"http://[::ffff:127.0.0.1]:" + tu.Port() + "/internal",
	} {
		t.Run(to, func(t *testing.T) {
			start, startHits := server(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, to, http.StatusFound)
			})
			// Only the redirecting server's own address and port are allowed.
			c := mustGuard(t, strings.TrimPrefix(start.URL, "http://")).Client(ClientOptions{})
			refused(t, get(t, c, start.URL+"/hook"), "loopback", "")
			if startHits.Load() != 1 {
				t.Errorf("the allowed server got %d requests, want 1", startHits.Load())
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests", n)
	}
}

// Allow-listed addresses, by address, CIDR, address and port, or name, are
// connected to; a listed port does not open the address's other ports.
func TestClientAllowList(t *testing.T) {
	srv, _ := server(t, nil)
	u, _ := url.Parse(srv.URL)
	for _, tc := range []struct {
		allow []string
		url   string
		ok    bool
	}{
		{[]string{"127.0.0.1"}, srv.URL, true},
		{[]string{"127.0.0.0/8"}, srv.URL, true},
		{[]string{u.Host}, srv.URL, true},
		{[]string{"127.0.0.1:1"}, srv.URL, false},
		{[]string{"localhost"}, "http://localhost:" + u.Port(), true},
		{[]string{"LocalHost:" + u.Port()}, "http://localhost:" + u.Port(), true},
		{[]string{"localhost:1"}, "http://localhost:" + u.Port(), false},
		{[]string{"localhost"}, srv.URL, false}, // a name allows the name, not its address reached otherwise
		{[]string{"::1"}, srv.URL, false},
		{nil, srv.URL, false},
	} {
		err := get(t, mustGuard(t, tc.allow...).Client(ClientOptions{}), tc.url)
		if tc.ok && err != nil {
			t.Errorf("allow %q, GET %s: %v", tc.allow, tc.url, err)
		}
		if !tc.ok {
			var re *RefusedError
			if !errors.As(err, &re) {
				t.Errorf("allow %q, GET %s: err = %v, want a refusal", tc.allow, tc.url, err)
			}
		}
	}
	if err := get(t, Off().Client(ClientOptions{}), srv.URL); err != nil {
		t.Errorf("Off: %v", err)
	}
}

// A pooled connection is reused only for the host and port it was checked
// for: after requests to an allowed name, the same server by its address is
// still refused.
func TestClientConnectionReuseIsChecked(t *testing.T) {
	srv, hits := server(t, nil)
	u, _ := url.Parse(srv.URL)
	c := mustGuard(t, "localhost:"+u.Port()).Client(ClientOptions{})
	for range 2 {
		if err := get(t, c, "http://localhost:"+u.Port()); err != nil {
			t.Fatal(err)
		}
	}
	refused(t, get(t, c, srv.URL), "loopback", "127.0.0.1")
	if n := hits.Load(); n != 2 {
		t.Errorf("server got %d requests, want 2", n)
	}
}

func TestNewRejectsBadEntries(t *testing.T) {
	for _, e := range []string{"", "http://10.0.0.5", "10.0.0.0/33", "host name", "10.0.0.5:0", "host:99999", "a..b"} {
		if _, err := New([]string{e}); err == nil {
			t.Errorf("New(%q) accepted it", e)
		}
	}
	if _, err := New([]string{"10.0.0.5", "fd00::/8", "[::1]:8080", "host.docker.internal:11434", "redis"}); err != nil {
		t.Errorf("valid entries: %v", err)
	}
}

func TestCheckHost(t *testing.T) {
	g := mustGuard(t, "10.0.0.5", "10.0.0.7:80", "10.0.0.8:8443")
	for raw, want := range map[string]string{
		"http://127.0.0.1:8080/":        "loopback",
		"http://[::1]/":                 "loopback",
		"http://169.254.169.254/latest": "link-local",
		"http://[::ffff:169.254.1.1]/":  "link-local",
		"http://10.0.0.5/":              "",
		"http://10.0.0.6:80/":           "private",
		"http://10.0.0.7/":              "", // the scheme's port
		"https://10.0.0.7/":             "private",
		"https://10.0.0.8:8443/x":       "",
		"http://example.com/":           "", // names are checked when resolved
		"http://8.8.8.8/":               "",
	} {
		u, _ := url.Parse(raw)
		err := g.CheckHost(u)
		var re *RefusedError
		got := ""
		if errors.As(err, &re) {
			got = re.Kind
		}
		if got != want {
			t.Errorf("CheckHost(%s) = %v, want kind %q", raw, err, want)
		}
	}
}

func TestKind(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":            "loopback",
		"127.9.9.9":            "loopback",
		"::1":                  "loopback",
		"::ffff:127.0.0.1":     "loopback",
		"64:ff9b::7f00:1":      "loopback",
		"2002:7f00:1::":        "loopback",
		"10.0.0.1":             "private",
		"172.16.5.4":           "private",
		"192.168.1.1":          "private",
		"fd12:3456::1":         "private",
		"169.254.169.254":      "link-local",
		"fe80::1":              "link-local",
		"0.0.0.0":              "unspecified",
		"::":                   "unspecified",
		"224.0.0.1":            "multicast",
		"ff02::1":              "multicast",
		"100.64.0.1":           "shared (CGNAT)",
		"100.127.255.254":      "shared (CGNAT)",
		"255.255.255.255":      "reserved",
		"198.18.0.1":           "reserved",
		"2001:db8::1":          "reserved",
		"8.8.8.8":              "",
		"100.128.0.1":          "",
		"2606:4700:4700::1111": "",
		"::ffff:8.8.8.8":       "",
	} {
		if got := Kind(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Kind(%s) = %q, want %q", addr, got, want)
		}
	}
}

func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.example.com/services/T0/B0/XyZsecret": "https://hooks.example.com/[redacted]",
		"https://user:pw@example.com/?token=abc#frag":        "https://[redacted]@example.com?[redacted]",
		"http://example.com:8080":                            "http://example.com:8080",
		"http://example.com/":                                "http://example.com",
		"not a url":                                          "(invalid URL)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestRedactErrorHidesTheURLsSecrets(t *testing.T) {
	raw := "http://user:pw-secret@127.0.0.1:1/path-secret?token=query-secret"
	_, err := http.Get(raw)
	if err == nil {
		t.Fatal("no error")
	}
	msg := RedactError(err, raw)
	for _, s := range []string{"pw-secret", "path-secret", "query-secret"} {
		if strings.Contains(msg, s) {
			t.Errorf("%q quotes %s", msg, s)
		}
	}
	if !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("%q does not say where", msg)
	}
}

func TestCheckURL(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/x?token=1": true,
		"http://10.0.0.5:8080/":               true,
		"ftp://example.com/":                  false,
		"https://":                            false,
		"/relative":                           false,
		"http://exa mple.com/":                false,
		"javascript:alert(1)":                 false,
	} {
		if err := CheckURL(raw); (err == nil) != ok {
			t.Errorf("CheckURL(%q) = %v, want ok=%v", raw, err, ok)
		}
	}
}
