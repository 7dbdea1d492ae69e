// Package netguard owns Relay's outbound HTTP requests to addresses a user
// chose (schedule webhooks, web pages read by web_search): it refuses to
// connect to loopback, private, link-local (cloud metadata included) and other
// non-public addresses unless the config's allow-list names them, and it says
// how such a URL may be shown in logs and errors. See docs/config.md
// (server.allowed_addresses).
package netguard

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Guard decides which addresses outbound connections may reach. The zero
// Guard (and a nil one) refuses every non-public address.
type Guard struct {
	// off lets everything through.
	off bool
	// prefixes are the allow-list's addresses and CIDRs (any port).
	prefixes []netip.Prefix
	// addrPorts are the allow-list's address:port entries.
	addrPorts map[netip.AddrPort]bool
	// hosts are the allow-list's names (lower case), each with the ports it is
	// allowed on; no ports means any port.
	hosts map[string][]string
	// dialer connects; nil means a net.Dialer with a 10 s timeout.
	dialer *net.Dialer
}

// Off returns a Guard that lets every address through, for a setting that
// turns the check off (webSearch.allowPrivateAddresses).
func Off() *Guard { return &Guard{off: true} }

// New returns a Guard that lets through, besides public addresses, those the
// entries of allowed name. An entry is an IP address ("10.0.0.5", "::1"), a
// CIDR ("10.0.0.0/8"), an address with a port ("10.0.0.5:8080",
// "[::1]:8080"), a host name ("host.docker.internal") or a host name with a
// port ("host.docker.internal:11434"). A host name lets through every address
// it resolves to. The error names the first entry that is none of these.
func New(allowed []string) (*Guard, error) {
	g := &Guard{}
	for i, raw := range allowed {
		if err := g.add(strings.TrimSpace(raw)); err != nil {
			return nil, fmt.Errorf("entry %d (%q): %w", i, raw, err)
		}
	}
	return g, nil
}

// CheckEntry says what is wrong with e as an allow-list entry of New, or nil.
func CheckEntry(e string) error { return new(Guard).add(strings.TrimSpace(e)) }

func (g *Guard) add(e string) error {
	if e == "" {
		return errors.New("empty")
	}
	if strings.Contains(e, "://") {
		return errors.New("a URL: give an address, a CIDR or a host name, with no scheme")
	}
	if p, err := netip.ParsePrefix(e); err == nil {
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		g.prefixes = append(g.prefixes, p.Masked())
		return nil
	}
	if strings.Contains(e, "/") {
		return errors.New("not a valid CIDR")
	}
	if a, err := netip.ParseAddr(e); err == nil {
		a = a.Unmap().WithZone("")
		g.prefixes = append(g.prefixes, netip.PrefixFrom(a, a.BitLen()))
		return nil
	}
	if ap, err := netip.ParseAddrPort(e); err == nil {
		if ap.Port() == 0 {
			return errors.New("port 0")
		}
		if g.addrPorts == nil {
			g.addrPorts = map[netip.AddrPort]bool{}
		}
		g.addrPorts[netip.AddrPortFrom(ap.Addr().Unmap().WithZone(""), ap.Port())] = true
		return nil
	}
	host, port := e, ""
	if h, p, err := net.SplitHostPort(e); err == nil {
		if n, err := strconv.Atoi(p); err != nil || n <= 0 || n > 65535 {
			return fmt.Errorf("port %q is not a number from 1 to 65535", p)
		}
		host, port = h, p
	}
	if !validHost(host) {
		return errors.New("not an address, a CIDR or a host name")
	}
	if g.hosts == nil {
		g.hosts = map[string][]string{}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	ports, seen := g.hosts[host]
	switch {
	case port == "":
		g.hosts[host] = []string{} // any port
	case !seen || len(ports) > 0:
		g.hosts[host] = append(ports, port)
	}
	return nil
}

// validHost reports whether s is a DNS name: letters, digits, '-', '_' and
// dots, labels not empty.
func validHost(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// hostAllowed reports whether the allow-list names host on port.
func (g *Guard) hostAllowed(host, port string) bool {
	ports, ok := g.hosts[strings.ToLower(strings.TrimSuffix(host, "."))]
	if !ok {
		return false
	}
	if len(ports) == 0 {
		return true
	}
	for _, p := range ports {
		if p == port {
			return true
		}
	}
	return false
}

// addrAllowed reports whether the allow-list names ap by address or CIDR, or
// by address and port.
func (g *Guard) addrAllowed(ap netip.AddrPort) bool {
	a := ap.Addr().Unmap().WithZone("")
	if g.addrPorts[netip.AddrPortFrom(a, ap.Port())] {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Check returns a *RefusedError when a connection to ap, reached by the name
// host ("" or the address itself when there was none), is refused, and nil
// when it may be made.
func (g *Guard) Check(host string, ap netip.AddrPort) error {
	if g != nil && (g.off || g.hostAllowed(host, strconv.Itoa(int(ap.Port()))) || g.addrAllowed(ap)) {
		return nil
	}
	why := Kind(ap.Addr())
	if why == "" {
		return nil
	}
	a := ap.Addr().Unmap().WithZone("")
	if host == a.String() || host == ap.Addr().String() {
		host = ""
	}
	return &RefusedError{Host: host, Addr: a, Kind: why}
}

// CheckHost checks the host of u before anything is sent: an IP address that
// Check refuses on the URL's port (its scheme's default when it names none)
// is refused; a name is left to the connection, where what it resolves to is
// checked.
func (g *Guard) CheckHost(u *url.URL) error {
	a, err := netip.ParseAddr(u.Hostname())
	if err != nil {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, _ := strconv.Atoi(port)
	return g.Check(u.Hostname(), netip.AddrPortFrom(a, uint16(n)))
}

// RefusedError is a connection the guard did not make. Its text names the
// address and why; it never holds the URL.
type RefusedError struct {
	// Host is the name that resolved to Addr, "" when Addr was given as such.
	Host string
	Addr netip.Addr
	// Kind is what sort of address it is: "loopback", "private", …
	Kind string
}

func (e *RefusedError) Error() string {
	a := "a"
	if e.Kind != "" && strings.IndexByte("aeiou", e.Kind[0]) >= 0 {
		a = "an"
	}
	if e.Host != "" {
		return fmt.Sprintf("%s resolves to %s, %s %s address, which Relay does not connect to", e.Host, e.Addr, a, e.Kind)
	}
	return fmt.Sprintf("%s is %s %s address, which Relay does not connect to", e.Addr, a, e.Kind)
}

// DialContext connects to address ("host:port") as a net.Dialer does, but
// checks every address the host resolves to, just before connecting to it, so
// that no name can resolve to one address when checked and another when
// connected to.
func (g *Guard) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if g != nil && g.dialer != nil {
		c := *g.dialer
		d = &c
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	d.ControlContext = func(_ context.Context, _, addr string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil {
			return fmt.Errorf("unexpected address %q: %w", addr, err)
		}
		return g.Check(host, ap)
	}
	return d.DialContext(ctx, network, address)
}

// ClientOptions shape a guarded client.
type ClientOptions struct {
	// Timeout bounds each request, redirects and reading the body included;
	// 0 means none (the request's context bounds it).
	Timeout time.Duration
	// StepTimeout bounds connecting, the TLS handshake and waiting for the
	// response's headers, each; 0 means Timeout, or 10 seconds without one.
	StepTimeout time.Duration
	// MaxRedirects is how many redirects are followed (0: 5; -1: none).
	MaxRedirects int
}

// Client returns an HTTP client whose every connection goes through
// g.DialContext. A redirect opens a connection to its own host, so it is
// checked too; a pooled connection is reused only for the host and port it
// was opened, and checked, for. The client never uses a proxy from the
// environment, which would hide the real address from the check.
func (g *Guard) Client(o ClientOptions) *http.Client {
	step := cmp.Or(o.StepTimeout, o.Timeout, 10*time.Second)
	var d net.Dialer
	if g != nil && g.dialer != nil {
		d = *g.dialer
	}
	d.Timeout, d.KeepAlive = step, 30*time.Second
	dg := &Guard{}
	if g != nil {
		*dg = *g
	}
	dg.dialer = &d
	maxRedirects := o.MaxRedirects
	if maxRedirects == 0 {
		maxRedirects = 5
	}
	return &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			Proxy:                  nil,
			DialContext:            dg.DialContext,
			ForceAttemptHTTP2:      true,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
			TLSHandshakeTimeout:    step,
			ResponseHeaderTimeout:  step,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				if maxRedirects < 0 {
					return http.ErrUseLastResponse
				}
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to a %s: address", req.URL.Scheme)
			}
			return nil
		},
	}
}
