package auth_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

func newService(t *testing.T, now func() time.Time) *auth.Service {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return auth.NewService(st, now)
}

func TestSecretFormat(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := auth.NewSecret()
		if !auth.ValidSecretFormat(s) || len(s) != 43 || !strings.HasPrefix(s, "rk-") {
			t.Fatalf("NewSecret() = %q", s)
		}
		if seen[s] {
			t.Fatalf("NewSecret repeated %q", s)
		}
		seen[s] = true
	}
	for _, bad := range []string{"", "rk-", "rk-short", "sk-" + strings.Repeat("a", 40), "rk-" + strings.Repeat("a", 39) + "!", "rk-" + strings.Repeat("a", 41)} {
		if auth.ValidSecretFormat(bad) {
			t.Errorf("ValidSecretFormat(%q) = true", bad)
		}
	}
}

func TestCreateUserValidation(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	tests := []struct {
		name string
		in   auth.NewUser
		bad  string // the field named in the error, or "" for success
	}{
		{"ok", auth.NewUser{Email: " Ann@Example.COM ", Role: auth.RoleAdmin}, ""},
		{"duplicate email, other case", auth.NewUser{Email: "ann@example.com"}, "conflict"},
		{"no email", auth.NewUser{}, "email"},
		{"not an email", auth.NewUser{Email: "ann"}, "email"},
		{"bad role", auth.NewUser{Email: "x@example.com", Role: "root"}, "role"},
		{"short password", auth.NewUser{Email: "y@example.com", Password: "short"}, "password"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			u, err := s.CreateUser(ctx, tc.in)
			switch {
			case tc.bad == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.bad == "":
				if u.Email != "ann@example.com" || u.DisplayName != "ann" || u.Role != auth.RoleAdmin {
					t.Errorf("user %+v", u)
				}
			case tc.bad == "conflict":
				if !fault.Is(err, fault.Conflict) {
					t.Errorf("error %v, want a conflict", err)
				}
			default:
				var fe *fault.Error
				if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), tc.bad) {
					t.Errorf("error %v (%v), want invalid %s", err, fe, tc.bad)
				}
			}
		})
	}
	u, err := s.CreateUser(ctx, auth.NewUser{Email: "pw@example.com", Password: "correct horse"})
	if err != nil {
		t.Fatal(err)
	}
	if !auth.CheckPassword(u, "correct horse") || auth.CheckPassword(u, "wrong horse") || strings.Contains(u.PasswordHash, "horse") {
		t.Errorf("password not hashed and checked")
	}
}

func TestAuthenticateTouchesAtMostOnceAMinute(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s := newService(t, clock)
	ctx := context.Background()
	u, _ := s.CreateUser(ctx, auth.NewUser{Email: "a@example.com"})
	k, secret, err := s.CreateKey(ctx, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	lastUsed := func() time.Time {
		ks, err := s.ListKeys(ctx, u.ID)
		if err != nil || len(ks) != 1 || ks[0].LastUsedAt == nil {
			t.Fatalf("keys %v %v", ks, err)
		}
		return *ks[0].LastUsedAt
	}
	if got, err := s.Authenticate(ctx, secret); err != nil || got.ID != u.ID {
		t.Fatalf("Authenticate: %v %v", got, err)
	}
	first := lastUsed()
	mu.Lock()
	now = now.Add(30 * time.Second)
	mu.Unlock()
	s.Authenticate(ctx, secret)
	if !lastUsed().Equal(first) {
		t.Errorf("last used moved within a minute")
	}
	mu.Lock()
	now = now.Add(31 * time.Second)
	mu.Unlock()
	s.Authenticate(ctx, secret)
	if !lastUsed().Equal(now) {
		t.Errorf("last used = %v, want %v", lastUsed(), now)
	}
	if err := s.RevokeKey(ctx, k.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, secret); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("revoked key: %v", err)
	}
}

func TestBootstrapIsIdempotentAndConcurrent(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	secret := auth.NewSecret()
	var wg sync.WaitGroup
	ids := make([]string, 6)
	errs := make([]error, 6)
	for i := range ids {
		wg.Go(func() {
			u, err := s.Bootstrap(ctx, secret)
			errs[i] = err
			if err == nil {
				ids[i] = u.ID
			}
		})
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("bootstrap %d: %q %v (first %q)", i, ids[i], errs[i], ids[0])
		}
	}
	u, err := s.Authenticate(ctx, secret)
	if err != nil || !u.IsAdmin() {
		t.Fatalf("bootstrap key: %v %v", u, err)
	}
	ks, _ := s.ListKeys(ctx, u.ID)
	if len(ks) != 1 {
		t.Errorf("%d keys after bootstrapping six times, want 1", len(ks))
	}
	// A second bootstrap key joins the same admin.
	u2, err := s.Bootstrap(ctx, auth.NewSecret())
	if err != nil || u2.ID != u.ID {
		t.Errorf("second key: %v %v", u2, err)
	}
	// A revoked bootstrap key stays revoked.
	if err := s.RevokeKey(ctx, ks[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Bootstrap(ctx, secret); !fault.Is(err, fault.Conflict) {
		t.Errorf("bootstrap with a revoked key: %v", err)
	}
	if _, err := s.Bootstrap(ctx, "rk-nope"); !fault.Is(err, fault.Invalid) || strings.Contains(err.Error(), "rk-nope") {
		t.Errorf("malformed key: %v", err)
	}
}

// noWrites is a store that takes no write of a key's or a session's use, as
// a database locked by another writer or a full disk would.
type noWrites struct{ auth.Store }

func (noWrites) TouchKey(context.Context, string, time.Time) error {
	return errors.New("database is locked (5) (SQLITE_BUSY)")
}

func (noWrites) TouchSession(context.Context, string, time.Time, time.Time) error {
	return errors.New("database or disk is full (13)")
}

// A key or a session whose use cannot be written is still let in: the time
// of its use is bookkeeping, logged when it fails, and the session keeps its
// end until a later use moves it.
func TestAuthenticateWithoutBookkeeping(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	writes := auth.NewService(st, clock)
	u, _ := writes.CreateUser(ctx, auth.NewUser{Email: "a@example.com"})
	_, secret, err := writes.CreateKey(ctx, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	in, err := writes.StartSession(ctx, u, "test")
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	s := auth.NewService(noWrites{st}, clock)
	s.SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	for range 2 {
		if got, err := s.Authenticate(ctx, secret); err != nil || got.ID != u.ID {
			t.Errorf("Authenticate while the key's use cannot be written: %v, %v; want the user", got, err)
		}
		got, sess, err := s.AuthenticateSession(ctx, in.Token)
		if err != nil || got.ID != u.ID || sess.Renewed {
			t.Errorf("AuthenticateSession while its use cannot be written: %v, %+v, %v; want the user, not renewed", got, sess, err)
		}
	}
	if n := strings.Count(logged.String(), "recording an API key's use"); n != 1 {
		t.Errorf("the failed write of the key's use logged %d times, want once a minute:\n%s", n, logged.String())
	}
	if !strings.Contains(logged.String(), "recording a session's use") || !strings.Contains(logged.String(), "SQLITE_BUSY") {
		t.Errorf("log:\n%s", logged.String())
	}
}
