package quota

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// A nil Service limits nothing: Relay without limits configured.
func TestNilServiceLimitsNothing(t *testing.T) {
	var s *Service
	u := &auth.User{ID: "user_1"}
	if err := s.AllowIP("192.0.2.1"); err != nil {
		t.Error(err)
	}
	if err := s.AllowKey(u, "k"); err != nil {
		t.Error(err)
	}
	end, refund, err := s.StartRun(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	end()
	refund()
	if room, err := s.FileRoom(context.Background(), u); err != nil || room != Unlimited {
		t.Errorf("FileRoom = %d, %v; want Unlimited", room, err)
	}
}

// Buckets of names not seen lately are dropped once full again, so that a
// stream of new addresses does not grow the map without end.
func TestBucketsForgetIdleNames(t *testing.T) {
	b := newBuckets(60, 2)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range sweepEvery - 1 {
		b.take(fmt.Sprint("198.51.100.", i), now)
	}
	if len(b.by) != sweepEvery-1 {
		t.Fatalf("%d buckets, want %d", len(b.by), sweepEvery-1)
	}
	b.take("busy", now)           // the sweep: nothing is full yet
	b.take("busy", now)           // empties busy's bucket
	later := now.Add(time.Second) // one token back: the others are full again, busy is not
	for range sweepEvery - 1 {
		b.take("other", later)
	}
	if _, ok := b.by["busy"]; !ok || len(b.by) > 3 {
		t.Errorf("after a sweep %d buckets remain (busy kept: %v), want busy and the few taken since", len(b.by), ok)
	}
}

// The wait a rate-limited request is told is the time until its next token.
func TestRetryAfterIsTheWaitForAToken(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Limits{KeyPerMinute: 6, KeyBurst: 1}, nil, func() time.Time { return now })
	u := &auth.User{ID: "user_1"}
	if err := s.AllowKey(u, "k"); err != nil {
		t.Fatal(err)
	}
	err := s.AllowKey(u, "k")
	if !fault.Is(err, fault.RateLimited) || fault.RetryAfter(err) != 10*time.Second {
		t.Errorf("second request: %v (retry after %s), want rate_limited after 10s", err, fault.RetryAfter(err))
	}
}

// A user's sessions share one bucket, apart from their keys' and from other
// users' sessions: signing in again gives no fresh one.
func TestSessionsShareTheUsersBucket(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Limits{KeyPerMinute: 6, KeyBurst: 2}, nil, func() time.Time { return now })
	ann, bob := &auth.User{ID: "user_ann"}, &auth.User{ID: "user_bob"}
	for i := range 2 {
		if err := s.AllowSessions(ann); err != nil {
			t.Fatalf("request %d of ann's sessions: %v", i+1, err)
		}
	}
	if err := s.AllowSessions(ann); !fault.Is(err, fault.RateLimited) || !strings.Contains(err.Error(), "signed in (6)") {
		t.Errorf("a third request of ann's sessions: %v; want rate_limited, saying signed in", err)
	}
	if err := s.AllowSessions(bob); err != nil {
		t.Errorf("bob's session after ann's were limited: %v", err)
	}
	if err := s.AllowKey(ann, "k"); err != nil {
		t.Errorf("ann's API key after her sessions were limited: %v", err)
	}
}

// A run refunded because it was not started after all gives back both its
// place among the concurrent runs and its token of the runs per minute, even
// when time has passed since it was admitted; a run that ended keeps its
// token spent, and a refund after the end changes nothing.
func TestRefundedRunSpendsNothing(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Limits{RunsPerMinute: 1, ConcurrentRuns: 1}, nil, func() time.Time { return now })
	u := &auth.User{ID: "user_1"}
	ctx := context.Background()
	_, refund, err := s.StartRun(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	refund()
	refund() // once is enough
	end, refund, err := s.StartRun(ctx, u)
	if err != nil {
		t.Fatalf("a run after a refund: %v, want it admitted", err)
	}
	end()
	refund()
	_, _, err = s.StartRun(ctx, u)
	if !fault.Is(err, fault.QuotaExceeded) || fault.RetryAfter(err) != time.Minute {
		t.Errorf("a run after one that ended: %v (retry after %s), want quota_exceeded after 1m", err, fault.RetryAfter(err))
	}
}

// Of runs admitted at once no more than the runs per minute get in, and the
// tokens the refused starts give back are there for the next ones.
func TestRunsAdmittedAtOnceKeepTheLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := New(Limits{RunsPerMinute: 5}, nil, func() time.Time { return now })
	u := &auth.User{ID: "user_1"}
	admitAll := func() (refunds []func()) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range 20 {
			wg.Go(func() {
				if _, refund, err := s.StartRun(context.Background(), u); err == nil {
					mu.Lock()
					refunds = append(refunds, refund)
					mu.Unlock()
				} else if !fault.Is(err, fault.QuotaExceeded) {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return refunds
	}
	refunds := admitAll()
	if len(refunds) != 5 {
		t.Fatalf("%d of 20 runs at once admitted, want 5", len(refunds))
	}
	for _, refund := range refunds[:3] {
		refund()
	}
	if n := len(admitAll()); n != 3 {
		t.Errorf("%d runs admitted after 3 refunds, want 3", n)
	}
}
