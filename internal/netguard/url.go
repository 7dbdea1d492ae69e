package netguard

import (
	"errors"
	"net/url"
	"strings"

	"github.com/relay-ai/relay/internal/redact"
)

// Redacted stands in for the secret parts of a URL.
const Redacted = redact.Mask

// CheckURL says what is wrong with raw as the address of an outbound request,
// or nil: it must be an absolute http or https URL with a host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return errors.New("not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must be an http or https URL")
	case u.Hostname() == "":
		return errors.New("must name a host")
	case strings.ContainsAny(raw, " \t\r\n"):
		return errors.New("must not contain spaces or line breaks")
	}
	return nil
}

// RedactURL is raw as it may appear in logs and errors: its scheme, host and
// port only, with "[redacted]" for the user info, the path and the query when
// there are any (webhook URLs carry their token in any of the three), and no
// fragment. Anything that does not parse is "(invalid URL)". It is
// redact.URL without the path.
func RedactURL(raw string) string {
	return redact.URL(raw, false)
}

// RedactError is the text of err, from a request to raw, with raw replaced by
// RedactURL(raw) wherever it appears: net/http quotes the URL of a failed
// request in its errors (that of the last redirect, which is redacted too).
func RedactError(err error, raw string) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		msg = ue.Op + " " + RedactURL(ue.URL) + ": " + ue.Err.Error()
	}
	safe := RedactURL(raw)
	forms := []string{raw}
	if u, perr := url.Parse(raw); perr == nil {
		forms = append(forms, u.String(), u.Redacted())
		if u.RawQuery != "" {
			forms = append(forms, u.RawQuery)
		}
		if u.Path != "" && u.Path != "/" {
			forms = append(forms, u.EscapedPath(), u.Path)
		}
		if u.User != nil {
			forms = append(forms, u.User.String())
		}
	}
	for i, f := range forms {
		if f == "" {
			continue
		}
		if i < 3 {
			msg = strings.ReplaceAll(msg, f, safe)
		} else {
			msg = strings.ReplaceAll(msg, f, Redacted)
		}
	}
	return msg
}
