package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/netguard"
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
	// Guard decides which addresses pages may be fetched from when
	// AllowPrivateAddresses is false; nil refuses every non-public one. Relay
	// passes the one of server.allowed_addresses (docs/config.md).
	Guard *netguard.Guard
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
	guard := o.Guard
	if o.AllowPrivateAddresses {
		guard = netguard.Off()
	}
	// Each fetch is bounded by its context (f.timeout, redirects included).
	f.client = guard.Client(netguard.ClientOptions{StepTimeout: f.timeout, MaxRedirects: maxRedirects})
	return f
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
	var refused *netguard.RefusedError
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
