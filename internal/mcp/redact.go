package mcp

import (
	"errors"
	"net/url"

	"github.com/relay-ai/relay/internal/redact"
)

// redactor cleans the errors of one connection before they are stored, logged
// or returned: the resolved URL becomes its safe form (no user info, query or
// fragment), and every value a placeholder put into the config, and every
// header value, is masked. Connect and call errors quote the URL they failed on
// (url.Error does) and sometimes what a server echoed back; either may carry a
// secret from the environment or another user's details.
type redactor struct {
	replace *redact.Replacer
}

// newRedactor returns the redactor for a resolved config and the values that
// resolving it substituted.
func newRedactor(cfg ServerConfig, substituted []string) *redactor {
	var secrets, values redact.Secrets
	values.Add(substituted...)
	if cfg.URL != "" {
		// The safe form keeps the path, where a substituted value may be:
		// it is masked there too, since the URL is replaced whole first.
		safe := values.Replacer().String(safeURL(cfg.URL))
		secrets.Replace(cfg.URL, safe)
		if u, err := url.Parse(cfg.URL); err == nil {
			secrets.Replace(u.String(), safe)
			if u.RawQuery != "" {
				secrets.Replace("?"+u.RawQuery, "?"+redact.Mask)
			}
			if u.User != nil {
				secrets.Replace(u.User.String()+"@", redact.Mask+"@")
			}
		}
	}
	secrets.Add(substituted...)
	secrets.Add(redact.ArgSecrets(cfg.Args)...) // a stdio server's usage message may echo them
	for _, v := range cfg.Headers {
		secrets.Add(v)
	}
	return &redactor{replace: secrets.Replacer()}
}

// text cleans one message.
func (r *redactor) text(s string) string {
	if r == nil {
		return s
	}
	return r.replace.String(s)
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

// As finds in the original error what the user must do (see NeedsUser): those
// errors are Relay's own and hold no secret; other error types stay hidden.
func (e *cleanError) As(target any) bool {
	switch target.(type) {
	case **VarsRequiredError, **AuthRequiredError:
		return errors.As(e.orig, target)
	}
	return false
}
