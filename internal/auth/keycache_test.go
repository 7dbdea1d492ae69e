package auth_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// countingStore counts the key lookups that reach the database.
type countingStore struct {
	auth.Store
	lookups atomic.Int64
}

func (c *countingStore) GetKeyByHash(ctx context.Context, hash string) (*auth.Key, error) {
	c.lookups.Add(1)
	return c.Store.GetKeyByHash(ctx, hash)
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Within KeyCacheTTL a key is checked without reading the database again;
// after it, the key is read again.
func TestAuthenticateCachesAKeyForItsTTL(t *testing.T) {
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cs := &countingStore{Store: st}
	clock := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s := auth.NewService(cs, clock.Now)
	ctx := context.Background()
	u, _ := s.CreateUser(ctx, auth.NewUser{Email: "a@example.com"})
	_, secret, _ := s.CreateKey(ctx, u.ID, "k")
	for range 5 {
		if got, err := s.Authenticate(ctx, secret); err != nil || got.ID != u.ID {
			t.Fatalf("Authenticate: %v %v", got, err)
		}
		clock.Add(KeyCacheTTLStep)
	}
	if n := cs.lookups.Load(); n != 1 {
		t.Errorf("%d key lookups for 5 uses within the TTL; want 1", n)
	}
	clock.Add(auth.KeyCacheTTL)
	s.Authenticate(ctx, secret)
	if n := cs.lookups.Load(); n != 2 {
		t.Errorf("%d key lookups after the TTL; want 2", n)
	}
	// A wrong key is never remembered.
	bad := auth.NewSecret()
	for range 3 {
		if _, err := s.Authenticate(ctx, bad); !fault.Is(err, fault.Unauthorized) {
			t.Fatalf("unknown key: %v", err)
		}
	}
	if n := cs.lookups.Load(); n != 5 {
		t.Errorf("%d key lookups after 3 unknown keys; want 5", n)
	}
}

// KeyCacheTTLStep is a step well within the TTL.
const KeyCacheTTLStep = auth.KeyCacheTTL / 10

// Two processes on one database: a key revoked, or a user disabled, on one
// is refused there at once and on the other within KeyCacheTTL, on SQLite
// and (with TEST_POSTGRES_URL) on Postgres.
func TestRevocationReachesAnotherProcessWithinTheTTL(t *testing.T) {
	type replicas struct{ a, b auth.Store }
	engines := map[string]func(t *testing.T) replicas{
		"sqlite": func(t *testing.T) replicas {
			path := filepath.Join(t.TempDir(), "relay.db")
			var r [2]auth.Store
			for i := range r {
				st, err := sqlite.Open(context.Background(), path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				r[i] = st
			}
			return replicas{r[0], r[1]}
		},
		"postgres": func(t *testing.T) replicas {
			base := os.Getenv("TEST_POSTGRES_URL")
			if base == "" {
				t.Skip("TEST_POSTGRES_URL is not set")
			}
			url := pgtest.Schema(t, base, "relay_keys")
			var r [2]auth.Store
			for i := range r {
				st, err := postgres.Open(t.Context(), url, postgres.Options{ConnectTimeout: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
				r[i] = st
			}
			return replicas{r[0], r[1]}
		},
	}
	for name, open := range engines {
		t.Run(name, func(t *testing.T) {
			r := open(t)
			clockA := &fakeClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
			clockB := &fakeClock{now: clockA.now}
			a, b := auth.NewService(r.a, clockA.Now), auth.NewService(r.b, clockB.Now)
			ctx := context.Background()
			ok := func(s *auth.Service, secret string) bool {
				t.Helper()
				_, err := s.Authenticate(ctx, secret)
				if err != nil && !fault.Is(err, fault.Unauthorized) {
					t.Fatal(err)
				}
				return err == nil
			}

			u, err := a.CreateUser(ctx, auth.NewUser{Email: "ann@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			k, secret, _ := a.CreateKey(ctx, u.ID, "k")
			if !ok(a, secret) || !ok(b, secret) {
				t.Fatal("a new key was refused")
			}
			if err := a.RevokeKey(ctx, k.ID); err != nil {
				t.Fatal(err)
			}
			if ok(a, secret) {
				t.Error("the revoking process still takes the key")
			}
			clockB.Add(auth.KeyCacheTTL - KeyCacheTTLStep)
			if !ok(b, secret) {
				t.Error("the other process read the key again within the TTL; the cache is not used")
			}
			clockB.Add(KeyCacheTTLStep)
			if ok(b, secret) {
				t.Errorf("the other process still takes a key revoked %v ago", auth.KeyCacheTTL)
			}

			_, secret2, _ := a.CreateKey(ctx, u.ID, "k2")
			if !ok(a, secret2) || !ok(b, secret2) {
				t.Fatal("a new key was refused")
			}
			if _, err := a.SetDisabled(ctx, u.ID, true); err != nil {
				t.Fatal(err)
			}
			if ok(a, secret2) {
				t.Error("the process that disabled the user still takes its key")
			}
			clockB.Add(auth.KeyCacheTTL)
			if ok(b, secret2) {
				t.Errorf("the other process still takes the key of a user disabled %v ago", auth.KeyCacheTTL)
			}
		})
	}
}
