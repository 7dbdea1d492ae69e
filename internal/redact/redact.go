// Package redact is the one way Relay keeps secrets out of logs and errors:
// URLs that carry tokens, the values of sensitive headers, and the known secret
// values of the configuration (API keys, header values, the bootstrap key).
// The rule it implements is in docs/config.md, "Secrets in logs and errors".
package redact

import (
	"cmp"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
)

// Mask stands in for a secret.
const Mask = "[redacted]"

// MinLen is the length of the shortest value a Replacer masks: shorter ones
// cannot hold much of a secret, and masking them would garble every message
// they occur in.
const MinLen = 4

// URL is raw as it may appear in logs and errors. The user info becomes
// "[redacted]@" and the query "?[redacted]"; the fragment is dropped. With
// keepPath false the whole path becomes "/[redacted]" (a webhook URL carries its
// token anywhere in it); with keepPath true the path is kept for diagnostics but
// every segment that looks like a token (see Token) is masked. Anything that
// does not parse as a URL with a host is "(invalid URL)".
func URL(raw string, keepPath bool) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(invalid URL)"
	}
	var b strings.Builder
	b.WriteString(u.Scheme)
	b.WriteString("://")
	if u.User != nil {
		b.WriteString(Mask + "@")
	}
	b.WriteString(u.Host)
	switch {
	case u.Opaque != "":
		b.WriteString("/" + Mask)
	case keepPath:
		segs := strings.Split(u.EscapedPath(), "/")
		for i, s := range segs {
			if p, err := url.PathUnescape(s); err != nil || Token(p) {
				segs[i] = Mask
			}
		}
		b.WriteString(strings.Join(segs, "/"))
	case u.Path != "" && u.Path != "/" || u.RawPath != "":
		b.WriteString("/" + Mask)
	}
	if u.RawQuery != "" || u.ForceQuery {
		b.WriteString("?" + Mask)
	}
	return b.String()
}

// Token reports whether a URL path segment looks like a token rather than a
// name: at least 16 characters, with both letters and digits, or at least 32
// characters of anything. Names such as "mcp", "v1" or "sse" are kept.
func Token(seg string) bool {
	if len(seg) >= 32 {
		return true
	}
	if len(seg) < 16 {
		return false
	}
	letter := strings.ContainsFunc(seg, func(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' })
	digit := strings.ContainsFunc(seg, func(r rune) bool { return r >= '0' && r <= '9' })
	return letter && digit
}

// sensitiveHeaders are the headers whose values are secrets whatever they hold.
var sensitiveHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "Api-Key"}

// SensitiveHeader reports whether the value of the header name is a secret:
// the authorization and cookie headers, and every header whose name speaks of a
// key, token, secret, password or auth.
func SensitiveHeader(name string) bool {
	name = textproto.CanonicalMIMEHeaderKey(name)
	if slices.Contains(sensitiveHeaders, name) {
		return true
	}
	l := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "password", "auth", "cookie", "session"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// Header is the value of the header name as it may appear in logs and errors:
// "[redacted]" when the header is sensitive and not empty, the value otherwise.
func Header(name, value string) string {
	if value != "" && SensitiveHeader(name) {
		return Mask
	}
	return value
}

// Secrets collects what a Replacer masks: known secret values, and whole
// strings (such as a URL) with their safe form. The zero value is ready to use.
type Secrets struct {
	pairs map[string]string
}

// Add adds secret values: each is masked as written, query-escaped and
// path-escaped. Values shorter than MinLen are left out.
func (s *Secrets) Add(values ...string) {
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if _, ok := s.pairs[form]; !ok {
				s.set(form, Mask)
			}
		}
	}
}

// Replace makes the Replacer write safe wherever old appears, in place of the
// plain mask (e.g. a URL by its redacted form).
func (s *Secrets) Replace(old, safe string) {
	if old != "" {
		s.set(old, safe)
	}
}

func (s *Secrets) set(old, safe string) {
	if s.pairs == nil {
		s.pairs = map[string]string{}
	}
	s.pairs[old] = safe
}

// Replacer returns the replacer of what has been collected so far.
func (s *Secrets) Replacer() *Replacer {
	olds := make([]string, 0, len(s.pairs))
	for old := range s.pairs {
		olds = append(olds, old)
	}
	// Longest first, so that a URL is replaced whole before a secret inside it.
	slices.SortFunc(olds, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	args := make([]string, 0, 2*len(olds))
	for _, old := range olds {
		args = append(args, old, s.pairs[old])
	}
	return &Replacer{olds: olds, r: strings.NewReplacer(args...)}
}

// Replacer masks known secrets in text. A nil *Replacer masks nothing.
type Replacer struct {
	olds []string
	r    *strings.Replacer
}

// String returns s with every known secret masked. A string holding none is
// returned as it is after one strings.Contains per secret.
func (r *Replacer) String(s string) string {
	if !r.Any(s) {
		return s
	}
	return r.r.Replace(s)
}

// Any reports whether s holds a known secret.
func (r *Replacer) Any(s string) bool {
	if r == nil {
		return false
	}
	for _, old := range r.olds {
		if strings.Contains(s, old) {
			return true
		}
	}
	return false
}

// Empty reports whether r masks nothing.
func (r *Replacer) Empty() bool { return r == nil || len(r.olds) == 0 }
