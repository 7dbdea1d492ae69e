package quota

import (
	"fmt"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

func TestSignInsPerEmailAndAddress(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewSignIns(SignInLimits{PerEmail: 3, PerAddress: 5, Window: 15 * time.Minute}, func() time.Time { return now })
	for i := range 3 {
		if err := s.Allow("ann@example.com", "192.0.2.1"); err != nil {
			t.Fatalf("attempt %d: %v", i, err)
		}
		s.Failed("ann@example.com", "192.0.2.1")
		now = now.Add(time.Minute)
	}
	// Three failures in the window: the email is refused from any address,
	// for as long as the oldest failure is in the window.
	err := s.Allow("Ann@Example.com", "198.51.100.7")
	if !fault.Is(err, fault.RateLimited) || fault.RetryAfter(err) != 12*time.Minute {
		t.Fatalf("the fourth attempt: %v (retry after %s), want rate_limited after 12m", err, fault.RetryAfter(err))
	}
	if err := s.Allow("bob@example.com", "198.51.100.7"); err != nil {
		t.Errorf("another email from another address: %v", err)
	}
	// Two more failures from the address with other emails: the address is refused.
	s.Failed("bob@example.com", "192.0.2.1")
	s.Failed("carol@example.com", "192.0.2.1")
	if err := s.Allow("dave@example.com", "192.0.2.1"); !fault.Is(err, fault.RateLimited) {
		t.Errorf("a sixth email from an address with 5 failures: %v", err)
	}
	now = now.Add(12 * time.Minute)
	if err := s.Allow("ann@example.com", "198.51.100.7"); err != nil {
		t.Errorf("once the oldest failure left the window: %v", err)
	}
	s.Succeeded("bob@example.com")
	if _, ok := s.emails["bob@example.com"]; ok {
		t.Error("a success kept the email's failures")
	}
}

func TestSignInsForgetOldNames(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := NewSignIns(SignInLimits{PerEmail: 10, PerAddress: 30, Window: time.Minute}, func() time.Time { return now })
	for i := range sweepEvery - 1 {
		s.Failed(fmt.Sprint("u", i, "@example.com"), fmt.Sprint("198.51.100.", i))
	}
	now = now.Add(time.Minute)
	s.Failed("last@example.com", "192.0.2.1") // the sweep
	if len(s.emails) != 1 || len(s.addrs) != 1 {
		t.Errorf("after a sweep: %d emails, %d addresses; want 1 and 1", len(s.emails), len(s.addrs))
	}
}

func TestNilSignInsLimitsNothing(t *testing.T) {
	var s *SignIns
	s.Failed("a@example.com", "192.0.2.1")
	s.Succeeded("a@example.com")
	if err := s.Allow("a@example.com", "192.0.2.1"); err != nil {
		t.Error(err)
	}
}
