package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Defaults of WebFetch.
const (
	defaultFetchMaxBytes = 1 << 20
	defaultFetchTimeout  = 10 * time.Second
	// maxRedirects is how many redirects a page fetch follows.
	maxRedirects = 5
	// pageTextChars caps the text of one fetched page given to the model, so
	// that a few pages fit beside the results in any model's context.
	pageTextChars = 4000
)

// WebFetch configures the fetching of result pages.
type WebFetch struct {
	// Pages is how many of the top results are fetched; 0 turns fetching off.
	Pages int
	// MaxBytes caps what is read of each page; 0 means 1 MiB.
	MaxBytes int64
	// Timeout bounds one page, redirects included; 0 means 10 seconds.
	Timeout time.Duration
	// AllowPrivateAddresses lets fetches reach loopback, private, link-local,
	// unspecified, multicast and other non-public addresses. They are refused
	// by default, checked on the address actually dialled, so that neither a
	// name that resolves to one nor a redirect to one gets through.
	AllowPrivateAddresses bool

	// permit, when set, lets through the guard an address it would refuse
	// (tests serve a "public" page from loopback with it).
	permit func(netip.AddrPort) bool
}

// fetcher reads result pages as text.
type fetcher struct {
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
}

func newFetcher(o WebFetch) *fetcher {
	f := &fetcher{maxBytes: o.MaxBytes, timeout: o.Timeout}
	if f.maxBytes <= 0 {
		f.maxBytes = defaultFetchMaxBytes
	}
	if f.timeout <= 0 {
		f.timeout = defaultFetchTimeout
	}
	dialer := &net.Dialer{Timeout: f.timeout, KeepAlive: 30 * time.Second}
	if !o.AllowPrivateAddresses {
		permit := o.permit
		dialer.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("unexpected address %q: %w", address, err)
			}
			if why := nonPublic(ap.Addr()); why != "" && (permit == nil || !permit(ap)) {
				return &refusedAddressError{addr: ap.Addr().Unmap(), why: why}
			}
			return nil
		}
	}
	transport := &http.Transport{
		// No proxy: the guard must see the page's own address, not a proxy's.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           16,
		IdleConnTimeout:        30 * time.Second,
		TLSHandshakeTimeout:    f.timeout,
		ResponseHeaderTimeout:  f.timeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	f.client = &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("a redirect to a %s: address", req.URL.Scheme)
			}
			return nil
		},
	}
	return f
}

// refusedAddressError is a fetch the address guard stopped.
type refusedAddressError struct {
	addr netip.Addr
	why  string
}

func (e *refusedAddressError) Error() string {
	return fmt.Sprintf("%s is a %s address, which is not fetched", e.addr, e.why)
}

// reservedPrefixes are non-public ranges that netip.Addr has no method for.
var reservedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this network"
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT, shared address space
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),         // IPv4-compatible IPv6, deprecated
	netip.MustParsePrefix("100::/64"),      // discard-only
	netip.MustParsePrefix("2001:db8::/32"), // documentation
}

// nat64 is the well-known NAT64 prefix: its addresses reach the IPv4 address
// in their last four bytes, which is what is checked.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// nonPublic says what kind of non-public address ip is ("loopback",
// "private", …), or "" when it is a public one.
func nonPublic(ip netip.Addr) string {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		return nonPublic(netip.AddrFrom4([4]byte(b[12:])))
	}
	switch {
	case !ip.IsValid():
		return "invalid"
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast():
		return "link-local"
	case ip.IsMulticast():
		return "multicast"
	}
	for _, p := range reservedPrefixes {
		if p.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}

// fetch reads the page at rawURL and returns its text, cut to pageTextChars.
// Its error says, in a few words, why there is no text.
func (f *fetcher) fetch(ctx context.Context, rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("not an http(s) address")
	}
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", errors.New("not an http(s) address")
	}
	req.Header.Set("User-Agent", "Relay (web_search page reader)")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1")
	resp, err := f.client.Do(req)
	if err != nil {
		return "", fetchCause(err, f.timeout)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("the site answered %s", resp.Status)
	}
	mediaType, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		mediaType = "text/html" // the usual meaning of a missing or broken type
	}
	isHTML := mediaType == "text/html" || mediaType == "application/xhtml+xml"
	if !isHTML && !strings.HasPrefix(mediaType, "text/") && mediaType != "application/json" && mediaType != "application/xml" {
		return "", fmt.Errorf("not a text page (%s)", mediaType)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes))
	if err != nil {
		return "", fetchCause(err, f.timeout)
	}
	body = toUTF8(body, params["charset"])
	var text string
	if isHTML {
		text = htmlText(body)
	} else {
		text = strings.TrimSpace(string(body))
	}
	text = stripCitationMarks(text)
	if text == "" {
		return "", errors.New("the page has no text")
	}
	return clip(text, pageTextChars), nil
}

// fetchCause turns a failed fetch into a short reason.
func fetchCause(err error, timeout time.Duration) error {
	var refused *refusedAddressError
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("no answer within %s", timeout)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
		return fmt.Errorf("the name %s does not resolve", dnsErr.Name)
	}
	return err
}

// toUTF8 converts a page in Latin-1 or Windows-1252, the commonest charsets
// besides UTF-8, and replaces the invalid bytes of any other.
func toUTF8(b []byte, charset string) []byte {
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "iso-8859-1", "latin1", "latin-1", "windows-1252", "cp1252", "us-ascii", "ascii":
		if utf8.Valid(b) && !hasHighBytes(b) {
			return b
		}
		out := make([]rune, len(b))
		for i, c := range b {
			out[i] = rune(c) // Latin-1; Windows-1252's 0x80–0x9F extras are rare in text
		}
		return []byte(string(out))
	}
	if utf8.Valid(b) {
		return b
	}
	return []byte(strings.ToValidUTF8(string(b), "\uFFFD"))
}

func hasHighBytes(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}

// writtenCitationMark is a citation character written out as an escape, the
// way Relay's anchors are (`\ue202`).
var writtenCitationMark = regexp.MustCompile(`(?i)\\ue2[0-9a-f]{2}`)

// stripCitationMarks removes the private-use characters citation anchors are
// made of (U+E200 to U+E2FF), and those characters written out as escapes like
// Relay's anchors, so that a page or a snippet cannot pose as a citation of
// another source.
func stripCitationMarks(s string) string {
	s = writtenCitationMark.ReplaceAllString(s, "")
	if !strings.ContainsFunc(s, isCitationMark) {
		return s
	}
	return strings.Map(func(r rune) rune {
		if isCitationMark(r) {
			return -1
		}
		return r
	}, s)
}

func isCitationMark(r rune) bool { return r >= 0xE200 && r <= 0xE2FF }
