package retry

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/llm"
)

func TestDo(t *testing.T) {
	unavailable := &llm.Error{Kind: llm.ErrUnavailable, Status: 529, Message: "Overloaded"}
	limited := &llm.Error{Kind: llm.ErrRateLimited, Status: 429, Message: "slow down", RetryAfter: 7 * time.Second}
	refused := &llm.Error{Kind: llm.ErrAuth, Status: 401, Message: "bad key"}
	tests := []struct {
		name        string
		policy      Policy
		errs        []error // what each try returns; past the end, success
		wantTries   int
		wantErr     error
		wantWaits   []time.Duration // exact, or the backoff range's upper end when jittered
		wantJitter  bool
		wantElapsed time.Duration
	}{
		{name: "success first", wantTries: 1},
		{name: "Retry-After is honoured", errs: []error{limited}, wantTries: 2, wantWaits: []time.Duration{7 * time.Second}, wantElapsed: 7 * time.Second},
		{
			name: "backoff doubles, bounded tries", policy: Policy{Base: time.Second},
			errs: []error{unavailable, unavailable, unavailable}, wantTries: 3, wantErr: unavailable,
			wantWaits: []time.Duration{time.Second, 2 * time.Second}, wantJitter: true,
		},
		{name: "not retryable", errs: []error{refused}, wantTries: 1, wantErr: refused},
		{name: "not an llm.Error", errs: []error{context.Canceled}, wantTries: 1, wantErr: context.Canceled},
		{
			name: "a Retry-After past MaxWait ends the retries", policy: Policy{MaxWait: 5 * time.Second},
			errs: []error{limited}, wantTries: 1, wantErr: limited,
		},
		{
			name: "MaxTries 1 never retries", policy: Policy{MaxTries: 1},
			errs: []error{unavailable}, wantTries: 1, wantErr: unavailable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var log bytes.Buffer
				tt.policy.Logger = slog.New(slog.NewTextHandler(&log, nil))
				tries := 0
				var events []llm.Event
				start := time.Now()
				retries, err := tt.policy.Do(t.Context(), func(context.Context) error {
					tries++
					if tries <= len(tt.errs) {
						return tt.errs[tries-1]
					}
					return nil
				}, func(e llm.Event) { events = append(events, e) })
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
				if tries != tt.wantTries || retries != tt.wantTries-1 {
					t.Errorf("tries = %d, retries = %d; want %d tries", tries, retries, tt.wantTries)
				}
				if len(events) != len(tt.wantWaits) {
					t.Fatalf("%d retry events, want %d", len(events), len(tt.wantWaits))
				}
				var total time.Duration
				for i, e := range events {
					wait := e.Retry.RetryAfter
					total += wait
					if e.Kind != llm.EventRetry {
						t.Errorf("event %d kind = %s", i, e.Kind)
					}
					if want := tt.wantWaits[i]; tt.wantJitter && (wait < want/2 || wait > want) || !tt.wantJitter && wait != want {
						t.Errorf("wait %d = %v, want %v (jittered: %v)", i, wait, want, tt.wantJitter)
					}
				}
				if d := time.Since(start); d != total {
					t.Errorf("waited %v, the events said %v", d, total)
				}
				if got := strings.Count(log.String(), "model request failed, retrying"); got != len(tt.wantWaits) {
					t.Errorf("%d warnings logged, want %d:\n%s", got, len(tt.wantWaits), log.String())
				}
			})
		})
	}
}

func TestDoCancelledWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancelCause(t.Context())
		abort := errors.New("user abort")
		go func() {
			time.Sleep(time.Second)
			cancel(abort)
		}()
		_, err := Policy{}.Do(ctx, func(context.Context) error {
			return &llm.Error{Kind: llm.ErrRateLimited, RetryAfter: 30 * time.Second}
		}, nil)
		if !errors.Is(err, abort) {
			t.Fatalf("err = %v, want the cancel cause", err)
		}
	})
}

func TestAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
	}{
		{"none", http.Header{}, 0},
		{"seconds", http.Header{"Retry-After": {"12"}}, 12 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"HTTP date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"date in the past", http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{"milliseconds win", http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"negative", http.Header{"Retry-After": {"-3"}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := After(tt.header, now); got != tt.want {
				t.Errorf("After = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBackoffBounded(t *testing.T) {
	p := Policy{Base: time.Second, MaxWait: 10 * time.Second}
	for n := 1; n < 70; n++ {
		if d := p.Backoff(n); d < 0 || d > 10*time.Second {
			t.Fatalf("Backoff(%d) = %v, out of [0, 10s]", n, d)
		}
	}
}

func TestRefusal(t *testing.T) {
	tests := []struct {
		name   string
		kind   llm.ErrorKind
		status int
		detail string
		want   string
	}{
		{"auth, key redacted", llm.ErrAuth, 401, "invalid x-api-key sk-secret-123", `model provider: Acme refused the API key: invalid x-api-key [redacted] (HTTP 401)`},
		{"model", llm.ErrModelNotFound, 404, "model: nope", `model provider: Acme has no model "nope": model: nope (HTTP 404)`},
		{"context", llm.ErrContextLength, 400, "prompt is too long", `model provider: the conversation is too long for "nope": prompt is too long (HTTP 400)`},
		{"no detail", llm.ErrUnavailable, 503, "", `model provider: Acme is unavailable or overloaded: Service Unavailable (HTTP 503)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := Refusal("Acme", "nope", tt.status, tt.kind, tt.detail, "sk-secret-123", 0)
			if diff := cmp.Diff(tt.want, e.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if e.Kind != tt.kind {
				t.Errorf("kind = %s, want %s", e.Kind, tt.kind)
			}
		})
	}
}

func TestStatusKind(t *testing.T) {
	want := map[int]llm.ErrorKind{
		400: llm.ErrBadRequest, 401: llm.ErrAuth, 403: llm.ErrAuth, 404: llm.ErrModelNotFound,
		408: llm.ErrNetwork, 413: llm.ErrContextLength, 422: llm.ErrBadRequest, 429: llm.ErrRateLimited,
		500: llm.ErrUnavailable, 503: llm.ErrUnavailable, 529: llm.ErrUnavailable,
	}
	for status, kind := range want {
		if got := StatusKind(status); got != kind {
			t.Errorf("StatusKind(%d) = %s, want %s", status, got, kind)
		}
	}
}
