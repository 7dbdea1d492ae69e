package retry

import (
	"context"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm"
)

func TestDoOverride(t *testing.T) {
	limited := &llm.Error{Kind: llm.ErrRateLimited, Status: 429, Message: "slow down"}
	t.Run("final", func(t *testing.T) {
		p := Policy{Sleep: func(context.Context, time.Duration) error { t.Error("slept"); return nil }}
		tries := 0
		retries, err := p.Do(t.Context(), func(context.Context) error {
			tries++
			return &Override{Err: limited, Final: true}
		}, nil)
		if err != limited || retries != 0 || tries != 1 {
			t.Errorf("err %v (%T) after %d tries, %d retries; want the error itself, not retried", err, err, tries, retries)
		}
	})
	t.Run("a zero wait given", func(t *testing.T) {
		var waits []time.Duration
		p := Policy{Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }}
		tries := 0
		var events []llm.Event
		retries, err := p.Do(t.Context(), func(context.Context) error {
			if tries++; tries == 1 {
				return &Override{Err: limited, WaitGiven: true}
			}
			return nil
		}, func(e llm.Event) { events = append(events, e) })
		if err != nil || retries != 1 || len(waits) != 1 || waits[0] != 0 {
			t.Errorf("err %v, %d retries, waits %v; want one retry without a wait", err, retries, waits)
		}
		if len(events) != 1 || events[0].Retry.RetryAfter != 0 {
			t.Errorf("events %+v", events)
		}
	})
}

func TestRedactAll(t *testing.T) {
	if got := Redact("key sk-1234 and tok-5678, not abc", "sk-1234", "tok-5678", "abc", ""); got != "key [redacted] and [redacted], not abc" {
		t.Errorf("Redact = %q", got)
	}
}
