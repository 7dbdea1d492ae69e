// Package quota holds the per-user quotas and the API's rate limits: how
// many files and bytes a user may store, how many runs a user may start per
// minute and have running at once, and how fast one API key or one client
// address may send requests (docs/config.md "limits"). Over a limit is a
// fault.QuotaExceeded or fault.RateLimited error with a RetryAfter, which
// the HTTP layer answers 429.
package quota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// Limits are the quotas and rate limits; 0 means no limit for each.
type Limits struct {
	// Files is how many files one user may store; Bytes how many bytes they
	// may hold together.
	Files int
	Bytes int64
	// RunsPerMinute is how many runs one user may start per minute (a token
	// bucket holding a minute's worth); ConcurrentRuns how many may be
	// running at once in this process.
	RunsPerMinute  int
	ConcurrentRuns int
	// KeyPerMinute and KeyBurst bound the requests of one API key; IPPerMinute
	// and IPBurst those of one client address. A burst of 0 is a minute's worth.
	KeyPerMinute, KeyBurst int
	IPPerMinute, IPBurst   int
	// IncludeAdmins applies the per-user quotas and the per-key limit to
	// admins too; by default they are exempt.
	IncludeAdmins bool
}

// Store counts what a user holds.
type Store interface {
	// FileUsage returns how many files owner has and their total size in bytes.
	FileUsage(ctx context.Context, owner string) (files int, bytes int64, err error)
}

// Service enforces Limits. Its state is per process: with several Relay
// processes on one database, the run and request rates and the concurrent
// runs are counted by each process on its own (docs/config.md "limits").
type Service struct {
	limits Limits
	store  Store
	now    func() time.Time

	keys, ips, runs *buckets

	mu     sync.Mutex
	active map[string]int // running runs by user id
}

// New returns a Service for limits reading usage from st; now is the clock
// (nil means time.Now).
func New(limits Limits, st Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{
		limits: limits,
		store:  st,
		now:    now,
		keys:   newBuckets(limits.KeyPerMinute, limits.KeyBurst),
		ips:    newBuckets(limits.IPPerMinute, limits.IPBurst),
		runs:   newBuckets(limits.RunsPerMinute, 0),
		active: map[string]int{},
	}
}

// exempt reports whether u is outside the per-user quotas.
func (s *Service) exempt(u *auth.User) bool {
	return s == nil || (u.IsAdmin() && !s.limits.IncludeAdmins)
}

// AllowIP takes one request of the client address ip.
func (s *Service) AllowIP(ip string) error {
	if s == nil {
		return nil
	}
	if wait := s.ips.take(ip, s.now()); wait > 0 {
		return fault.Limited(fault.RateLimited, wait, "rate limit: requests per minute from one client address (%d); try again in %s", s.limits.IPPerMinute, seconds(wait))
	}
	return nil
}

// AllowKey takes one request of the API key whose hash is key, used by u.
func (s *Service) AllowKey(u *auth.User, key string) error {
	return s.allowKey(u, key, "with one API key")
}

// AllowSessions takes one request of u signed in with a session: all of u's
// sessions share one bucket of the API key rate, so that signing in again
// gives no fresh one.
func (s *Service) AllowSessions(u *auth.User) error {
	return s.allowKey(u, "sessions:"+u.ID, "signed in")
}

// allowKey takes one request of u from the key rate's bucket named key; how
// says how the requests came, in the refusal.
func (s *Service) allowKey(u *auth.User, key, how string) error {
	if s.exempt(u) {
		return nil
	}
	if wait := s.keys.take(key, s.now()); wait > 0 {
		return fault.Limited(fault.RateLimited, wait, "rate limit: requests per minute %s (%d); try again in %s", how, s.limits.KeyPerMinute, seconds(wait))
	}
	return nil
}

// StartRun admits a run of u: within the runs per minute and the concurrent
// runs. Exactly one of the two functions it returns is to be called, the
// first time only: end once the run has ended, or refund when the run was
// not started after all (its conversation was answering another message, the
// store failed), which gives back its place and its token of the runs per
// minute, so that a refused start spends nothing (docs/config.md "limits").
// The token is taken here and given back on a refund, rather than taken once
// the run is stored, so that runs admitted at once never go past the limit.
func (s *Service) StartRun(_ context.Context, u *auth.User) (end, refund func(), err error) {
	if s.exempt(u) {
		return func() {}, func() {}, nil
	}
	if n := s.limits.ConcurrentRuns; n > 0 {
		s.mu.Lock()
		if s.active[u.ID] >= n {
			s.mu.Unlock()
			// A run ends when it ends: a second is a fair time to look again.
			return nil, nil, fault.Limited(fault.QuotaExceeded, time.Second, "quota exceeded: concurrent runs (%d); wait for one of your runs to finish", n)
		}
		s.active[u.ID]++
		s.mu.Unlock()
	}
	if wait := s.runs.take(u.ID, s.now()); wait > 0 {
		s.leave(u.ID)
		return nil, nil, fault.Limited(fault.QuotaExceeded, wait, "quota exceeded: runs per minute (%d); try again in %s", s.limits.RunsPerMinute, seconds(wait))
	}
	var once sync.Once
	end = func() { once.Do(func() { s.leave(u.ID) }) }
	refund = func() {
		once.Do(func() {
			s.runs.give(u.ID, s.now())
			s.leave(u.ID)
		})
	}
	return end, refund, nil
}

// leave frees the place of one of the running runs of the user id.
func (s *Service) leave(id string) {
	if s.limits.ConcurrentRuns <= 0 {
		return
	}
	s.mu.Lock()
	if s.active[id]--; s.active[id] <= 0 {
		delete(s.active, id)
	}
	s.mu.Unlock()
}

// Unlimited is the room left when a quota does not apply.
const Unlimited = int64(-1)

// FileRoom checks that u may store one more file and returns how many bytes
// that file may have before u's storage quota is full, or Unlimited.
func (s *Service) FileRoom(ctx context.Context, u *auth.User) (int64, error) {
	if s.exempt(u) || (s.limits.Files <= 0 && s.limits.Bytes <= 0) {
		return Unlimited, nil
	}
	n, size, err := s.store.FileUsage(ctx, u.ID)
	if err != nil {
		return 0, fmt.Errorf("counting the files of %q: %w", u.ID, err)
	}
	// Stored files only go when their owner deletes them: a day is as good a
	// guess as any, and says that waiting alone will not help.
	if s.limits.Files > 0 && n >= s.limits.Files {
		return 0, s.FilesExceeded()
	}
	if s.limits.Bytes <= 0 {
		return Unlimited, nil
	}
	if size >= s.limits.Bytes {
		return 0, s.BytesExceeded()
	}
	return s.limits.Bytes - size, nil
}

// FileLimits are how many files, and bytes in all, u may store (0: any):
// what an upload is checked against again as it is recorded, since the
// uploads u streams at once each found room before any was stored.
func (s *Service) FileLimits(u *auth.User) (files int, bytes int64) {
	if s.exempt(u) {
		return 0, 0
	}
	return s.limits.Files, s.limits.Bytes
}

// FilesExceeded is the error of an upload by a user who has as many files as
// the quota allows.
func (s *Service) FilesExceeded() error {
	return fault.Limited(fault.QuotaExceeded, 24*time.Hour, "quota exceeded: files stored (%d); delete some of your files first", s.limits.Files)
}

// BytesExceeded is the error of an upload that does not fit in the storage quota.
func (s *Service) BytesExceeded() error {
	return fault.Limited(fault.QuotaExceeded, 24*time.Hour, "quota exceeded: bytes stored (%d bytes, %s); delete some of your files first", s.limits.Bytes, mib(s.limits.Bytes))
}

func seconds(d time.Duration) string { return fmt.Sprintf("%ds", int64((d+time.Second-1)/time.Second)) }

func mib(n int64) string {
	if n%(1<<30) == 0 {
		return fmt.Sprintf("%d GiB", n>>30)
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// buckets are token buckets by name, each refilled at perMinute and holding
// burst tokens. Full buckets are dropped now and then, so that the map holds
// only the names seen lately: a name without a bucket has a full one.
type buckets struct {
	perSecond float64
	burst     float64

	mu    sync.Mutex
	by    map[string]*bucket
	calls int
}

// bucket is one name's tokens as they were at a time.
type bucket struct {
	tokens float64
	at     time.Time
}

func newBuckets(perMinute, burst int) *buckets {
	if perMinute <= 0 {
		return nil
	}
	if burst <= 0 {
		burst = perMinute
	}
	return &buckets{perSecond: float64(perMinute) / 60, burst: float64(burst), by: map[string]*bucket{}}
}

// sweepEvery is how many takes pass between two sweeps of full buckets.
const sweepEvery = 4096

// fill brings k's tokens to now, refilled up to the burst. A clock that went
// back refills nothing.
func (b *buckets) fill(k *bucket, now time.Time) {
	if now.After(k.at) {
		k.tokens = min(b.burst, k.tokens+now.Sub(k.at).Seconds()*b.perSecond)
		k.at = now
	}
}

// take takes a token from name's bucket at now; when there is none it takes
// nothing and returns how long until there is one.
func (b *buckets) take(name string, now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.calls++; b.calls%sweepEvery == 0 {
		for n, k := range b.by {
			if b.fill(k, now); k.tokens >= b.burst {
				delete(b.by, n)
			}
		}
	}
	k, ok := b.by[name]
	if !ok {
		k = &bucket{tokens: b.burst, at: now}
		b.by[name] = k
	}
	b.fill(k, now)
	if k.tokens < 1 {
		return time.Duration((1 - k.tokens) / b.perSecond * float64(time.Second))
	}
	k.tokens--
	return 0
}

// give puts back at now a token taken from name's bucket, up to the burst:
// the bucket is then as if the token had never been taken.
func (b *buckets) give(name string, now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if k, ok := b.by[name]; ok { // else swept, so full already
		b.fill(k, now)
		k.tokens = min(b.burst, k.tokens+1)
	}
}
