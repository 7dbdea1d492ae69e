package quota

import (
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// SignInLimits bound failed sign-ins (docs/config.md "auth"): at most
// PerEmail failures for one email and PerAddress from one client address
// within Window; 0 means no limit for each.
type SignInLimits struct {
	PerEmail   int
	PerAddress int
	Window     time.Duration
}

// SignIns counts failed sign-ins per email and per client address, so that
// passwords cannot be guessed quickly: over a limit, every attempt is refused
// with fault.RateLimited until the oldest failure in the window is older than
// the window, whether or not its password is right. The counts are per
// process, like the other rate limits.
type SignIns struct {
	limits SignInLimits
	now    func() time.Time

	mu     sync.Mutex
	emails map[string][]time.Time
	addrs  map[string][]time.Time
	adds   int
}

// NewSignIns returns the counters for limits; now is the clock (nil means
// time.Now). A nil *SignIns limits nothing.
func NewSignIns(limits SignInLimits, now func() time.Time) *SignIns {
	if now == nil {
		now = time.Now
	}
	return &SignIns{limits: limits, now: now, emails: map[string][]time.Time{}, addrs: map[string][]time.Time{}}
}

// Allow returns a fault.RateLimited error, with how long to wait, when email
// or addr has failed too often lately.
func (s *SignIns) Allow(email, addr string) error {
	if s == nil {
		return nil
	}
	email = strings.ToLower(strings.TrimSpace(email))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if wait := s.blocked(s.emails, email, s.limits.PerEmail, now); wait > 0 {
		return fault.Limited(fault.RateLimited, wait, "too many failed sign-ins for this email; try again in %s", seconds(wait))
	}
	if wait := s.blocked(s.addrs, addr, s.limits.PerAddress, now); wait > 0 {
		return fault.Limited(fault.RateLimited, wait, "too many failed sign-ins from this address; try again in %s", seconds(wait))
	}
	return nil
}

// Failed records a failed sign-in for email from addr.
func (s *SignIns) Failed(email, addr string) {
	if s == nil {
		return
	}
	email = strings.ToLower(strings.TrimSpace(email))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.add(s.emails, email, s.limits.PerEmail, now)
	s.add(s.addrs, addr, s.limits.PerAddress, now)
	if s.adds++; s.adds%sweepEvery == 0 {
		s.sweep(s.emails, now)
		s.sweep(s.addrs, now)
	}
}

// Succeeded forgets the failures of email: its owner got in. Those of the
// address stay, since one address may try many emails.
func (s *SignIns) Succeeded(email string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.emails, strings.ToLower(strings.TrimSpace(email)))
}

// blocked returns how long name must wait, or 0.
func (s *SignIns) blocked(by map[string][]time.Time, name string, limit int, now time.Time) time.Duration {
	if limit <= 0 {
		return 0
	}
	recent := s.recent(by, name, now)
	if len(recent) < limit {
		return 0
	}
	return recent[len(recent)-limit].Add(s.limits.Window).Sub(now)
}

// recent drops name's failures older than the window and returns the rest,
// oldest first.
func (s *SignIns) recent(by map[string][]time.Time, name string, now time.Time) []time.Time {
	ts := by[name]
	i := 0
	for i < len(ts) && !ts[i].Add(s.limits.Window).After(now) {
		i++
	}
	if i == len(ts) {
		delete(by, name)
		return nil
	}
	by[name] = ts[i:]
	return ts[i:]
}

// add records a failure of name, keeping no more than limit of them.
func (s *SignIns) add(by map[string][]time.Time, name string, limit int, now time.Time) {
	if limit <= 0 {
		return
	}
	ts := append(s.recent(by, name, now), now)
	if len(ts) > limit {
		ts = ts[len(ts)-limit:]
	}
	by[name] = ts
}

// sweep drops the names whose failures are all older than the window.
func (s *SignIns) sweep(by map[string][]time.Time, now time.Time) {
	for name := range by {
		s.recent(by, name, now)
	}
}
