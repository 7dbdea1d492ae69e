package vault_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/secret"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/vault"
)

// engines runs test against a fresh SQLite store and, when TEST_POSTGRES_URL
// is set, a fresh Postgres schema.
func engines(t *testing.T, test func(t *testing.T, s store.Store)) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		test(t, db)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		base := os.Getenv("TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("TEST_POSTGRES_URL is not set")
		}
		db, err := postgres.Open(t.Context(), pgtest.Schema(t, base, "relay_vault"), postgres.Options{ConnectTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		test(t, db)
	})
}

// clock is a settable clock shared by the replicas of a test.
type clock struct{ t atomic.Pointer[time.Time] }

func newClock() *clock {
	c := &clock{}
	c.set(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return c
}

func (c *clock) now() time.Time      { return *c.t.Load() }
func (c *clock) set(t time.Time)     { c.t.Store(&t) }
func (c *clock) add(d time.Duration) { c.set(c.now().Add(d)) }

func keyring(t *testing.T, keys ...string) *secret.Keyring {
	t.Helper()
	bs := make([][]byte, len(keys))
	for i, k := range keys {
		b, err := secret.ParseKey(k)
		if err != nil {
			t.Fatal(err)
		}
		bs[i] = b
	}
	k, err := secret.NewKeyring(bs[0], bs[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var key1, key2 = secret.GenerateKey(), secret.GenerateKey()

func newVault(s store.Store, keys *secret.Keyring, c *clock, owner string) *vault.Vault {
	return &vault.Vault{Store: s, Keys: keys, Now: c.now, Owner: owner, PollInterval: time.Millisecond}
}

func createUser(t *testing.T, s store.Store, email string) string {
	t.Helper()
	now := time.Now()
	u := &auth.User{ID: auth.NewUserID(), Email: email, DisplayName: "x", Role: auth.RoleUser, CreatedAt: now, UpdatedAt: now}
	if err := s.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	return u.ID
}

func must(t *testing.T, err error, doing string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", doing, err)
	}
}

func TestVars(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		v := newVault(s, keyring(t, key1), c, "a")
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		got, err := v.Vars(ctx, ann, vault.KindMCP, "github")
		must(t, err, "Vars")
		if got == nil || len(got) != 0 {
			t.Errorf("Vars of none = %#v, want an empty map", got)
		}
		must(t, v.SetVars(ctx, ann, vault.KindMCP, "github", map[string]string{"TOKEN": "ghp_ann_secret", "ORG": "relay-org"}), "SetVars")
		must(t, v.SetVars(ctx, bob, vault.KindMCP, "github", map[string]string{"TOKEN": "ghp_bob_secret"}), "SetVars")
		must(t, v.SetVars(ctx, ann, vault.KindEndpoint, "openrouter", map[string]string{"apiKey": "sk-or-ann", "baseURL": "https://or.example/v1"}), "SetVars")
		got, err = v.Vars(ctx, ann, vault.KindMCP, "github")
		must(t, err, "Vars")
		if want := map[string]string{"TOKEN": "ghp_ann_secret", "ORG": "relay-org"}; !cmp.Equal(got, want) {
			t.Errorf("Vars = %v, want %v", got, want)
		}
		if got, _ := v.Vars(ctx, bob, vault.KindMCP, "github"); got["TOKEN"] != "ghp_bob_secret" || len(got) != 1 {
			t.Errorf("bob's Vars = %v", got)
		}
		// The database holds no plaintext.
		for _, kn := range [][2]string{{"mcp", "github"}, {"endpoint", "openrouter"}} {
			raw, err := s.SecretVars(ctx, ann, kn[0], kn[1])
			must(t, err, "SecretVars")
			for _, r := range raw {
				for _, plain := range []string{"ghp_ann_secret", "relay-org", "sk-or-ann", "or.example"} {
					if strings.Contains(r.Sealed, plain) {
						t.Errorf("stored %s holds its plaintext", r.Var)
					}
				}
			}
		}
		c.add(time.Minute)
		must(t, v.SetVars(ctx, ann, vault.KindMCP, "github", map[string]string{"ORG": "", "TOKEN": "ghp_new"}), "SetVars replacing")
		set, err := v.VarsSet(ctx, ann, vault.KindMCP, "github")
		must(t, err, "VarsSet")
		if want := map[string]time.Time{"TOKEN": c.now()}; !cmp.Equal(set, want) {
			t.Errorf("VarsSet = %v, want %v", set, want)
		}
		must(t, v.DeleteVars(ctx, ann, vault.KindMCP, "github"), "DeleteVars")
		if got, _ := v.Vars(ctx, ann, vault.KindMCP, "github"); len(got) != 0 {
			t.Errorf("Vars after DeleteVars = %v", got)
		}
		if got, _ := v.Vars(ctx, ann, vault.KindEndpoint, "openrouter"); len(got) != 2 {
			t.Errorf("DeleteVars of mcp touched the endpoint's: %v", got)
		}
		for _, err := range []error{
			v.SetVars(ctx, ann, "other", "github", map[string]string{"A": "b"}),
			v.SetVars(ctx, ann, vault.KindMCP, "", map[string]string{"A": "b"}),
			v.SetVars(ctx, ann, vault.KindMCP, "github", map[string]string{"": "b"}),
			v.SetVars(ctx, ann, vault.KindMCP, "github", map[string]string{"A": strings.Repeat("x", 65<<10)}),
		} {
			if !fault.Is(err, fault.Invalid) {
				t.Errorf("bad SetVars: %v, want invalid", err)
			}
		}
	})
}

func TestCopiedRowsDoNotOpen(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v := newVault(s, keyring(t, key1), newClock(), "a")
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		must(t, v.SetVars(ctx, ann, vault.KindMCP, "github", map[string]string{"TOKEN": "ghp_ann"}), "SetVars")
		raw, err := s.SecretVars(ctx, ann, "mcp", "github")
		must(t, err, "SecretVars")
		for _, to := range []struct{ user, kind, name, v string }{
			{bob, "mcp", "github", "TOKEN"}, {ann, "mcp", "gitlab", "TOKEN"}, {ann, "endpoint", "github", "TOKEN"}, {ann, "mcp", "github", "OTHER"},
		} {
			must(t, s.PutSecretVars(ctx, to.user, to.kind, to.name, map[string]string{to.v: raw[0].Sealed}, nil, time.Now()), "PutSecretVars")
			if got, err := v.Vars(ctx, to.user, vault.Kind(to.kind), to.name); err == nil {
				t.Errorf("a var copied to %v opened: %v", to, got)
			}
		}

		must(t, v.PutGrant(ctx, vault.Grant{UserID: ann, Server: "github", Data: []byte(`{"access_token":"at-ann"}`)}), "PutGrant")
		_, err = v.Grant(ctx, bob, "github")
		if !fault.Is(err, fault.NotFound) {
			t.Errorf("bob's Grant of a server only ann authorized: %v, want not found", err)
		}
		g, err := s.GetGrant(ctx, ann, "github")
		must(t, err, "GetGrant")
		if strings.Contains(g.Sealed, "at-ann") {
			t.Error("the stored grant holds its plaintext")
		}
		for _, to := range [][2]string{{bob, "github"}, {ann, "gitlab"}} {
			must(t, s.PutGrant(ctx, &vault.StoredGrant{UserID: to[0], Server: to[1], Sealed: g.Sealed, Issued: g.Issued}), "PutGrant")
			if got, err := v.Grant(ctx, to[0], to[1]); err == nil {
				t.Errorf("a grant copied to %v opened: %s", to, got.Data)
			}
		}
		if got, err := v.Grant(ctx, ann, "github"); err != nil || string(got.Data) != `{"access_token":"at-ann"}` {
			t.Errorf("ann's Grant = %s, %v", got.Data, err)
		}
	})
}

func TestNoKey(t *testing.T) {
	db, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	v := &vault.Vault{Store: db}
	_, grantErr := v.Grant(ctx, "u", "s")
	_, varsErr := v.Vars(ctx, "u", vault.KindMCP, "s")
	_, rotErr := v.Rotate(ctx)
	_, freshErr := v.Fresh(ctx, "u", "s", nil)
	for _, err := range []error{
		v.SetVars(ctx, "u", vault.KindMCP, "s", map[string]string{"A": "b"}), varsErr, grantErr, freshErr, rotErr,
		v.PutGrant(ctx, vault.Grant{UserID: "u", Server: "s"}), v.PutFlow(ctx, "st", "u", "s", nil),
	} {
		if !fault.Is(err, fault.Unavailable) || !strings.Contains(err.Error(), "set secrets.key or RELAY_SECRETS_KEY (the same on every replica)") {
			t.Errorf("without a key: %v, want unavailable saying what to set", err)
		}
	}
}

// refresher counts its refreshes and gives each a new token, valid for an
// hour from the clock's now.
type refresher struct {
	c *clock
	n atomic.Int64
}

func (r *refresher) refresh(ctx context.Context, data []byte) ([]byte, time.Time, error) {
	n := r.n.Add(1)
	return fmt.Appendf(nil, "token-%d", n), r.c.now().Add(time.Hour), nil
}

func TestFreshRefreshesOncePerExpiry(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		keys := keyring(t, key1)
		replicas := []*vault.Vault{newVault(s, keys, c, "replica-a"), newVault(s, keys, c, "replica-b")}
		u := createUser(t, s, "ann@example.com")
		expiry := c.now().Add(time.Hour)
		must(t, replicas[0].PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("token-0"), Expiry: expiry, Issued: c.now()}), "PutGrant")
		r := &refresher{c: c}

		// Well before its expiry, the grant is used as it is.
		c.set(expiry.Add(-31 * time.Second))
		g, err := replicas[1].Fresh(ctx, u, "github", r.refresh)
		must(t, err, "Fresh")
		if string(g.Data) != "token-0" || r.n.Load() != 0 {
			t.Fatalf("Fresh long before the expiry: %s after %d refreshes", g.Data, r.n.Load())
		}

		const rounds, callers = 4, 8
		for round := 1; round <= rounds; round++ {
			// Within 30s of the expiry (the lifetime's fifth is longer), or past it.
			if round%2 == 1 {
				c.set(expiry.Add(-30 * time.Second))
			} else {
				c.set(expiry.Add(time.Minute))
			}
			var wg sync.WaitGroup
			start := make(chan struct{})
			got := make([]string, 2*callers)
			for i := range got {
				wg.Go(func() {
					<-start
					g, err := replicas[i%2].Fresh(ctx, u, "github", r.refresh)
					if err != nil {
						t.Errorf("round %d, caller %d: %v", round, i, err)
						return
					}
					got[i] = string(g.Data)
				})
			}
			close(start)
			wg.Wait()
			if n := r.n.Load(); n != int64(round) {
				t.Fatalf("after round %d: %d refreshes, want %d (one per expiry)", round, n, round)
			}
			want := fmt.Sprintf("token-%d", round)
			for i, d := range got {
				if d != want {
					t.Errorf("round %d, caller %d got %q, want %q", round, i, d, want)
				}
			}
			g, err := replicas[0].Grant(ctx, u, "github")
			must(t, err, "Grant")
			if string(g.Data) != want || !g.Expiry.Equal(c.now().Add(time.Hour)) || !g.Issued.Equal(c.now()) || g.Version != int64(round+1) {
				t.Fatalf("stored after round %d: %s, expiry %v, issued %v, version %d", round, g.Data, g.Expiry, g.Issued, g.Version)
			}
			expiry = g.Expiry
		}
	})
}

func TestFreshWaitsForAnotherReplica(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		keys := keyring(t, key1)
		a, b := newVault(s, keys, c, "replica-a"), newVault(s, keys, c, "replica-b")
		u := createUser(t, s, "ann@example.com")
		must(t, a.PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("old"), Expiry: c.now().Add(time.Minute), Issued: c.now()}), "PutGrant")
		c.add(time.Minute)

		started, release := make(chan struct{}), make(chan struct{})
		done := make(chan vault.Grant)
		go func() {
			g, err := a.Fresh(ctx, u, "github", func(ctx context.Context, data []byte) ([]byte, time.Time, error) {
				close(started)
				<-release
				return []byte("new"), c.now().Add(time.Hour), nil
			})
			if err != nil {
				t.Errorf("replica a: %v", err)
			}
			done <- g
		}()
		<-started
		waited := make(chan vault.Grant)
		go func() {
			g, err := b.Fresh(ctx, u, "github", func(context.Context, []byte) ([]byte, time.Time, error) {
				t.Error("replica b refreshed while replica a held the claim")
				return nil, time.Time{}, errors.New("no")
			})
			if err != nil {
				t.Errorf("replica b: %v", err)
			}
			waited <- g
		}()
		close(release)
		ga, gb := <-done, <-waited
		if string(ga.Data) != "new" || string(gb.Data) != "new" || gb.Version != ga.Version {
			t.Errorf("a got %s (v%d), b got %s (v%d); want both the new grant", ga.Data, ga.Version, gb.Data, gb.Version)
		}
	})
}

func TestFreshTakesOverADeadReplicasClaim(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		v := newVault(s, keyring(t, key1), c, "replica-b")
		u := createUser(t, s, "ann@example.com")
		must(t, v.PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("old"), Expiry: c.now().Add(time.Minute), Issued: c.now()}), "PutGrant")
		c.add(time.Minute)
		// A replica claimed the refresh and died.
		ok, err := s.ClaimGrant(ctx, u, "github", 1, "replica-dead", c.now(), c.now().Add(30*time.Second))
		if err != nil || !ok {
			t.Fatalf("ClaimGrant: %v, %v", ok, err)
		}
		c.add(30 * time.Second)
		r := &refresher{c: c}
		g, err := v.Fresh(ctx, u, "github", r.refresh)
		must(t, err, "Fresh after the dead replica's claim lapsed")
		if string(g.Data) != "token-1" || r.n.Load() != 1 {
			t.Errorf("Fresh = %s after %d refreshes, want token-1 after 1", g.Data, r.n.Load())
		}
	})
}

func TestFreshFailures(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		v := newVault(s, keyring(t, key1), c, "replica-a")
		u := createUser(t, s, "ann@example.com")
		_, err := v.Fresh(ctx, u, "github", nil)
		if !fault.Is(err, fault.NotFound) {
			t.Errorf("Fresh of no grant: %v, want not found", err)
		}
		must(t, v.PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("old"), Expiry: c.now().Add(time.Minute)}), "PutGrant")
		c.add(time.Minute)

		boom := errors.New("authorization server down")
		_, err = v.Fresh(ctx, u, "github", func(context.Context, []byte) ([]byte, time.Time, error) { return nil, time.Time{}, boom })
		if !errors.Is(err, boom) {
			t.Errorf("Fresh with a failing refresh: %v, want it wrapped", err)
		}
		if g, err := s.GetGrant(ctx, u, "github"); err != nil || g.ClaimOwner != "" {
			t.Fatalf("after a failed refresh the claim stays: %+v, %v", g, err)
		}
		// The next call refreshes at once: the claim was released.
		r := &refresher{c: c}
		if g, err := v.Fresh(ctx, u, "github", r.refresh); err != nil || string(g.Data) != "token-1" {
			t.Errorf("Fresh after a failure: %s, %v", g.Data, err)
		}

		c.add(time.Hour)
		_, err = v.Fresh(ctx, u, "github", func(context.Context, []byte) ([]byte, time.Time, error) {
			return nil, time.Time{}, fmt.Errorf("invalid_grant: %w", vault.ErrRevoked)
		})
		if !errors.Is(err, vault.ErrRevoked) {
			t.Errorf("Fresh with a revoked grant: %v, want ErrRevoked", err)
		}
		_, err = v.Grant(ctx, u, "github")
		if !fault.Is(err, fault.NotFound) {
			t.Errorf("a revoked grant is still there: %v", err)
		}
	})
}

// TestRenew: a grant whose token the server refused long before its expiry
// is refreshed once by two replicas renewing it at once; renewing a version
// that has moved on already uses the grant as it is.
func TestRenew(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		keys := keyring(t, key1)
		a, b := newVault(s, keys, c, "replica-a"), newVault(s, keys, c, "replica-b")
		u := createUser(t, s, "ann@example.com")
		// No expiry: the server did not say, so only a refusal tells.
		must(t, a.PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("token-0"), Issued: c.now()}), "PutGrant")
		isToken0 := func(data []byte) bool { return string(data) == "token-0" }

		r := &refresher{c: c}
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Go(func() {
				g, err := []*vault.Vault{a, b}[i%2].Renew(ctx, u, "github", isToken0, r.refresh)
				if err != nil {
					t.Errorf("caller %d: %v", i, err)
					return
				}
				got[i] = string(g.Data)
			})
		}
		wg.Wait()
		if n := r.n.Load(); n != 1 {
			t.Errorf("%d refreshes for one refused token; want 1", n)
		}
		for i, d := range got {
			if d != "token-1" {
				t.Errorf("caller %d got %q, want token-1", i, d)
			}
		}
		g, err := b.Renew(ctx, u, "github", isToken0, r.refresh)
		if err != nil || string(g.Data) != "token-1" || r.n.Load() != 1 {
			t.Errorf("renewing the refused token again: %s, %v after %d refreshes; want token-1 as it is", g.Data, err, r.n.Load())
		}

		// Only the grant at a version is deleted or replaced at it.
		if ok, err := a.ReplaceGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("stale"), Version: g.Version - 1}); ok || err != nil {
			t.Errorf("ReplaceGrant at an old version: %v, %v; want nothing done", ok, err)
		}
		if ok, err := a.DeleteGrantAt(ctx, u, "github", g.Version-1); ok || err != nil {
			t.Errorf("DeleteGrantAt an old version: %v, %v; want nothing done", ok, err)
		}
		ok, err := a.ReplaceGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("token-x"), Version: g.Version})
		must(t, err, "ReplaceGrant")
		if now, _ := a.Grant(ctx, u, "github"); !ok || string(now.Data) != "token-x" || now.Version != g.Version+1 {
			t.Errorf("ReplaceGrant at the version: %v, then %s at version %d; want token-x at %d", ok, now.Data, now.Version, g.Version+1)
		}
		_, err = a.Renew(ctx, u, "github", func(data []byte) bool { return string(data) == "token-x" }, func(context.Context, []byte) ([]byte, time.Time, error) {
			return nil, time.Time{}, fmt.Errorf("invalid_grant: %w", vault.ErrRevoked)
		})
		if !errors.Is(err, vault.ErrRevoked) {
			t.Errorf("Renew with a revoked grant: %v, want ErrRevoked", err)
		}
		if _, err := a.Grant(ctx, u, "github"); !fault.Is(err, fault.NotFound) {
			t.Errorf("a revoked grant is still there: %v", err)
		}
	})
}

func TestDeleteUserGrants(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		v := newVault(s, keyring(t, key1), newClock(), "a")
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		for _, g := range []vault.Grant{{UserID: ann, Server: "b", Data: []byte("ann-b")}, {UserID: ann, Server: "a", Data: []byte("ann-a")}, {UserID: bob, Server: "a", Data: []byte("bob-a")}} {
			must(t, v.PutGrant(ctx, g), "PutGrant")
		}
		gs, err := v.DeleteUserGrants(ctx, ann)
		must(t, err, "DeleteUserGrants")
		if len(gs) != 2 || string(gs[0].Data) != "ann-a" || string(gs[1].Data) != "ann-b" {
			t.Errorf("DeleteUserGrants returned %+v", gs)
		}
		if _, err := v.Grant(ctx, ann, "a"); !fault.Is(err, fault.NotFound) {
			t.Errorf("ann's grant after DeleteUserGrants: %v", err)
		}
		if g, err := v.Grant(ctx, bob, "a"); err != nil || string(g.Data) != "bob-a" {
			t.Errorf("bob's grant after ann signed out: %s, %v", g.Data, err)
		}
		must(t, v.DeleteGrant(ctx, bob, "a"), "DeleteGrant")
		if err := v.DeleteGrant(ctx, bob, "a"); !fault.Is(err, fault.NotFound) {
			t.Errorf("DeleteGrant twice: %v, want not found", err)
		}
	})
}

func TestFlows(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		v := newVault(s, keyring(t, key1), c, "a")
		u := createUser(t, s, "ann@example.com")
		must(t, v.PutFlow(ctx, "state-1", u, "github", []byte("verifier-1")), "PutFlow")
		// The state is stored as its SHA-256 only.
		if _, err := s.TakeFlow(ctx, "state-1", c.now()); !fault.Is(err, fault.NotFound) {
			t.Errorf("a flow is found by its plain state: %v", err)
		}
		user, server, data, err := v.TakeFlow(ctx, "state-1")
		must(t, err, "TakeFlow")
		if user != u || server != "github" || string(data) != "verifier-1" {
			t.Errorf("TakeFlow = %s, %s, %s", user, server, data)
		}
		if _, _, _, err := v.TakeFlow(ctx, "state-1"); !fault.Is(err, fault.NotFound) {
			t.Errorf("TakeFlow twice: %v, want not found", err)
		}
		must(t, v.PutFlow(ctx, "state-2", u, "github", []byte("verifier-2")), "PutFlow")
		c.add(vault.FlowTTL)
		if _, _, _, err := v.TakeFlow(ctx, "state-2"); !fault.Is(err, fault.NotFound) {
			t.Errorf("TakeFlow after %s: %v, want not found", vault.FlowTTL, err)
		}
		if _, _, _, err := v.TakeFlow(ctx, "unknown"); !fault.Is(err, fault.NotFound) {
			t.Errorf("TakeFlow of an unknown state: %v, want not found", err)
		}
		// Expired flows go when another starts.
		must(t, v.PutFlow(ctx, "state-3", u, "github", nil), "PutFlow")
		c.add(vault.FlowTTL)
		must(t, v.PutFlow(ctx, "state-4", u, "github", nil), "PutFlow")
		sum := sha256.Sum256([]byte("state-3"))
		if _, err := s.TakeFlow(ctx, hex.EncodeToString(sum[:]), time.Time{}); !fault.Is(err, fault.NotFound) {
			t.Errorf("an expired flow was kept: %v", err)
		}
	})
}

func TestRotate(t *testing.T) {
	engines(t, func(t *testing.T, s store.Store) {
		ctx := t.Context()
		c := newClock()
		old := newVault(s, keyring(t, key1), c, "a")
		u := createUser(t, s, "ann@example.com")
		must(t, old.SetVars(ctx, u, vault.KindMCP, "github", map[string]string{"A": "a", "B": "b"}), "SetVars")
		must(t, old.PutGrant(ctx, vault.Grant{UserID: u, Server: "github", Data: []byte("grant"), Expiry: c.now().Add(time.Hour)}), "PutGrant")
		must(t, old.PutFlow(ctx, "state", u, "github", []byte("flow")), "PutFlow")

		if _, err := newVault(s, keyring(t, key2), c, "a").Rotate(ctx); err == nil || !strings.Contains(err.Error(), keyring(t, key1).CurrentID()) {
			t.Errorf("Rotate without the old key: %v, want an error naming its id", err)
		}
		rotating := newVault(s, keyring(t, key2, key1), c, "a")
		n, err := rotating.Rotate(ctx)
		must(t, err, "Rotate")
		if n != 4 {
			t.Errorf("Rotate re-sealed %d values, want 4", n)
		}
		if n, err := rotating.Rotate(ctx); err != nil || n != 0 {
			t.Errorf("Rotate again: %d, %v; want 0", n, err)
		}
		// The old key can go now.
		v := newVault(s, keyring(t, key2), c, "a")
		vars, err := v.Vars(ctx, u, vault.KindMCP, "github")
		must(t, err, "Vars")
		if !cmp.Equal(vars, map[string]string{"A": "a", "B": "b"}) {
			t.Errorf("Vars after rotation = %v", vars)
		}
		g, err := v.Grant(ctx, u, "github")
		if err != nil || string(g.Data) != "grant" || g.Version != 1 {
			t.Errorf("Grant after rotation = %s (v%d), %v", g.Data, g.Version, err)
		}
		if _, _, data, err := v.TakeFlow(ctx, "state"); err != nil || string(data) != "flow" {
			t.Errorf("TakeFlow after rotation = %s, %v", data, err)
		}
	})
}
