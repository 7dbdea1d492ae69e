// Package retry decides whether and when a model request that failed is sent
// again, and words the failures for the user. It owns the retry policy every
// provider client shares: bounded tries, exponential backoff with jitter, the
// provider's Retry-After honoured, a warning logged and an [llm.EventRetry]
// emitted before each new try; and the mapping of HTTP statuses and transport
// failures onto [llm.Error] kinds. Only the provider clients know their error
// bodies; they pass what they found there to [Refusal].
package retry

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
)

// Defaults of a zero Policy.
const (
	DefaultMaxTries = 3
	DefaultBase     = 500 * time.Millisecond
	DefaultMaxWait  = time.Minute
)

// Policy says how often a request is tried and how long to wait in between.
// The zero Policy uses the defaults.
type Policy struct {
	// MaxTries bounds the tries, the first one included; 0 means 3.
	MaxTries int
	// Base is the wait before the first retry, doubled for each one after;
	// 0 means 500ms. The actual wait is jittered down by up to half.
	Base time.Duration
	// MaxWait bounds one wait; 0 means a minute. A provider asking, through
	// Retry-After, to wait longer ends the retries: the user is better told
	// than kept waiting.
	MaxWait time.Duration
	// Logger gets a warning before each retry; nil means none. Give it the
	// attributes that say which provider and model.
	Logger *slog.Logger
	// Sleep waits for d or until ctx ends; nil means a timer. Tests replace it
	// to see the waits without spending them.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p Policy) maxTries() int {
	if p.MaxTries <= 0 {
		return DefaultMaxTries
	}
	return p.MaxTries
}

func (p Policy) maxWait() time.Duration {
	if p.MaxWait <= 0 {
		return DefaultMaxWait
	}
	return p.MaxWait
}

// Backoff returns the wait before retry n (1 for the first retry): Base
// doubled n-1 times, at most MaxWait, jittered into its upper half so that
// clients refused together do not come back together.
func (p Policy) Backoff(n int) time.Duration {
	d := p.Base
	if d <= 0 {
		d = DefaultBase
	}
	for i := 1; i < n && d < p.maxWait(); i++ {
		d *= 2
	}
	d = min(d, p.maxWait())
	return d/2 + rand.N(d/2+1)
}

// Do calls try until it succeeds, fails with an error that is not a retryable
// *llm.Error, or the tries are spent, and returns how many tries came after
// the first along with the last error. Before each retry it logs a warning
// (status, kind and the provider's message; never the request), calls emit
// (when not nil) with an EventRetry whose RetryAfter is the wait, and waits:
// what the provider asked for through Retry-After, else the backoff. try must
// return a retryable error only when sending the request again cannot repeat
// anything the user has already been shown.
func (p Policy) Do(ctx context.Context, try func(context.Context) error, emit func(llm.Event)) (int, error) {
	for n := 1; ; n++ {
		err := try(ctx)
		if err == nil {
			return n - 1, nil
		}
		var o *Override
		final, given := false, false
		if errors.As(err, &o) {
			err, final, given = o.Err, o.Final, o.WaitGiven
		}
		var e *llm.Error
		if !errors.As(err, &e) || final || !e.Retryable() || n >= p.maxTries() || ctx.Err() != nil {
			return n - 1, err
		}
		wait := p.Backoff(n)
		if e.RetryAfter > 0 || given {
			if e.RetryAfter > p.maxWait() {
				return n - 1, err
			}
			wait = e.RetryAfter
		}
		if p.Logger != nil {
			p.Logger.LogAttrs(ctx, slog.LevelWarn, "model request failed, retrying",
				slog.Int("try", n), slog.Int("max_tries", p.maxTries()), slog.Int("status", e.Status), slog.String("error_kind", string(e.Kind)),
				slog.Duration("wait", wait), slog.String("error", e.Message))
		}
		if emit != nil {
			r := *e
			r.RetryAfter = wait
			emit(llm.Event{Kind: llm.EventRetry, Retry: &r})
		}
		if err := p.sleep(ctx, wait); err != nil {
			return n - 1, err
		}
	}
}

// Override is a failure for which a try tells [Policy.Do] more than the
// error's kind and RetryAfter say. Do returns Err in its place.
type Override struct {
	Err *llm.Error
	// Final says that sending again cannot help although the kind is
	// retryable (an exhausted quota answered with 429, a host that does not
	// exist, an answer cut after it was shown).
	Final bool
	// WaitGiven says that the provider asked for Err.RetryAfter, which is
	// then waited even when it is 0.
	WaitGiven bool
}

func (o *Override) Error() string { return o.Err.Error() }

func (o *Override) Unwrap() error { return o.Err }

func (p Policy) sleep(ctx context.Context, d time.Duration) error {
	if p.Sleep != nil {
		return p.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// After returns how long an answer asks the client to wait before trying
// again, 0 when it does not say: retry-after-ms (milliseconds, which some
// providers send for waits under a second), else Retry-After, as seconds or
// as an HTTP date relative to now.
func After(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// StatusKind is the kind of failure an HTTP status means, before the
// provider's own words refine it (a 400 that says the prompt is too long is
// ErrContextLength; Google's 400 for a bad key is ErrAuth).
func StatusKind(status int) llm.ErrorKind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.ErrAuth
	case status == http.StatusNotFound:
		return llm.ErrModelNotFound
	case status == http.StatusRequestEntityTooLarge:
		return llm.ErrContextLength
	case status == http.StatusRequestTimeout:
		return llm.ErrNetwork
	case status == http.StatusTooManyRequests:
		return llm.ErrRateLimited
	case status >= 500:
		return llm.ErrUnavailable
	}
	return llm.ErrBadRequest
}

// Refusal is the error for a provider's refusal of the request, in words for
// the user: what it means, then the provider's own message (detail), from
// which secret, when not empty, is removed. provider names the provider
// ("Anthropic"), model the model asked for.
func Refusal(provider, model string, status int, kind llm.ErrorKind, detail, secret string, retryAfter time.Duration) *llm.Error {
	detail = Redact(strings.TrimSpace(detail), secret)
	if detail == "" && status != 0 {
		detail = http.StatusText(status)
	}
	var what string
	switch kind {
	case llm.ErrAuth:
		what = provider + " refused the API key"
	case llm.ErrModelNotFound:
		what = provider + " has no model " + strconv.Quote(model)
	case llm.ErrContextLength:
		what = "the conversation is too long for " + strconv.Quote(model)
	case llm.ErrRateLimited:
		what = provider + " is limiting the rate of requests"
	case llm.ErrUnavailable:
		what = provider + " is unavailable or overloaded"
	case llm.ErrNetwork:
		what = provider + " did not answer in time"
	case llm.ErrStreamCut:
		what = provider + " ended the answer early"
	default:
		what = provider + " rejected the request"
	}
	msg := what
	if detail != "" {
		msg += ": " + detail
	}
	return &llm.Error{Kind: kind, Status: status, Message: msg, RetryAfter: retryAfter}
}

// Network is the error for a request that never got an answer, or whose
// stream broke off, because of the connection or an idle timeout: retryable,
// as long as nothing was shown that a new try could repeat (see [Cut]).
func Network(provider string, err error, secret string) *llm.Error {
	return &llm.Error{Kind: llm.ErrNetwork, Message: networkPrefix(provider) + Redact(err.Error(), secret)}
}

func networkPrefix(provider string) string {
	return "could not get an answer from " + provider + ": "
}

// Cut turns the failure of a turn that has already shown output into
// ErrStreamCut, which is not retried: a new try would show the user that output
// again. The message keeps what went wrong.
func Cut(provider string, e *llm.Error) *llm.Error {
	if e.Kind == llm.ErrStreamCut {
		return e
	}
	why := strings.TrimPrefix(e.Message, networkPrefix(provider))
	return &llm.Error{Kind: llm.ErrStreamCut, Status: e.Status, Message: "the answer from " + provider + " broke off: " + why}
}

// Redact removes the secrets from s. An empty secret, or one too short to be
// a key, is left in.
func Redact(s string, secrets ...string) string {
	for _, secret := range secrets {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "[redacted]")
		}
	}
	return s
}

// BodyText is the body of a refusal that is not the provider's JSON, as a
// detail for [Refusal]: short plain text (a proxy's one-line answer) as it
// is, and nothing for an HTML page or anything long.
func BodyText(body []byte) string {
	s := strings.TrimSpace(string(body))
	if s == "" || strings.HasPrefix(s, "<") || len(s) > 300 {
		return ""
	}
	return s
}
