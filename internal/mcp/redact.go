package mcp

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// masked stands in for a secret in errors and logs.
const masked = "[redacted]"

// minSecret is the shortest value masked: shorter ones cannot hold much of a
// secret, and masking them would garble every message they occur in.
const minSecret = 4

// redactor cleans the errors of one connection before they are stored, logged
// or returned: the resolved URL becomes its safe form (no user info, query or
// fragment), and every value a placeholder put into the config, and every
// header value, is masked. Connect and call errors quote the URL they failed on
// (url.Error does) and sometimes what a server echoed back; either may carry a
// secret from the environment or another user's details.
type redactor struct {
	replace *strings.Replacer
}

// newRedactor returns the redactor for a resolved config and the values that
// resolving it substituted.
func newRedactor(cfg ServerConfig, substituted []string) *redactor {
	pairs := map[string]string{}
	if cfg.URL != "" {
		safe := safeURL(cfg.URL)
		pairs[cfg.URL] = safe
		if u, err := url.Parse(cfg.URL); err == nil {
			pairs[u.String()] = safe
			if u.RawQuery != "" {
				pairs["?"+u.RawQuery] = "?" + masked
			}
			if u.User != nil {
				pairs[u.User.String()+"@"] = masked + "@"
			}
		}
	}
	secrets := slices.Clone(substituted)
	for _, v := range cfg.Headers {
		secrets = append(secrets, v)
	}
	for _, v := range secrets {
		if len(v) < minSecret {
			continue
		}
		for _, form := range []string{v, url.QueryEscape(v), url.PathEscape(v)} {
			if _, ok := pairs[form]; !ok {
				pairs[form] = masked
			}
		}
	}
	// Longest first, so that a URL is replaced whole before a secret inside it.
	olds := make([]string, 0, len(pairs))
	for old := range pairs {
		olds = append(olds, old)
	}
	slices.SortFunc(olds, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	args := make([]string, 0, 2*len(olds))
	for _, old := range olds {
		args = append(args, old, pairs[old])
	}
	return &redactor{replace: strings.NewReplacer(args...)}
}

// text cleans one message.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	return r.replace.Replace(s)
}

// err cleans an error. The result keeps err's identity for errors.Is (so that a
// cancellation or a timeout is still recognised) but does not unwrap to it: the
// errors inside still quote the secrets.
func (r *redactor) err(err error) error {
	if err == nil {
		return nil
	}
	if c, ok := err.(*cleanError); ok {
		return &cleanError{msg: r.text(c.msg), orig: c.orig}
	}
	return &cleanError{msg: r.text(err.Error()), orig: err}
}

// cleanError is an error whose text has been cleaned by a redactor.
type cleanError struct {
	msg  string
	orig error
}

func (e *cleanError) Error() string { return e.msg }

// Is reports whether the original error is target, without exposing it.
func (e *cleanError) Is(target error) bool { return errors.Is(e.orig, target) }
