package storetest

import (
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store"
)

func newSession(userID string, created time.Time) *auth.Session {
	return &auth.Session{
		ID: auth.NewSessionID(), UserID: userID, Hash: auth.HashSecret(auth.NewSecret()),
		CreatedAt: created, ExpiresAt: created.Add(time.Hour), LastSeenAt: created, UserAgent: "Firefox/140",
	}
}

func createSession(t *testing.T, s store.Store, userID string, created time.Time) *auth.Session {
	t.Helper()
	sess := newSession(userID, created)
	must(t, s.CreateSession(t.Context(), sess), "CreateSession")
	return sess
}

func getSession(t *testing.T, s store.Store, hash string) *auth.Session {
	t.Helper()
	sess, err := s.GetSessionByHash(t.Context(), hash)
	must(t, err, "GetSessionByHash")
	return sess
}

var sessionTests = []test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "s@example.com")
		sess := createSession(t, s, u.ID, at(0))
		if sess.CreatedAt != stored(at(0)) || sess.ExpiresAt != stored(at(0).Add(time.Hour)) {
			t.Errorf("CreateSession left times %v, %v", sess.CreatedAt, sess.ExpiresAt)
		}
		got := getSession(t, s, sess.Hash)
		if d := cmp.Diff(sess, got); d != "" {
			t.Errorf("GetSessionByHash (-want +got):\n%s", d)
		}
		wantUTC(t, "GetSessionByHash", got.CreatedAt, got.ExpiresAt, got.LastSeenAt)
	}},
	{"NotFound", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		sess, err := s.GetSessionByHash(ctx, auth.HashSecret("nothing"))
		wantKind(t, err, fault.NotFound, "GetSessionByHash of an unknown hash")
		if sess != nil {
			t.Errorf("GetSessionByHash returned %+v with its error", sess)
		}
		wantKind(t, s.DeleteSession(ctx, "sess_missing"), fault.NotFound, "DeleteSession of a missing session")
		wantKind(t, s.TouchSession(ctx, "sess_missing", at(1), at(2)), fault.NotFound, "TouchSession of a missing session")
		wantKind(t, s.CreateSession(ctx, newSession("user_missing", at(0))), fault.NotFound, "CreateSession for a missing user")
	}},
	{"DuplicateHash", func(t *testing.T, s store.Store) {
		u := createUser(t, s, "s@example.com")
		sess := createSession(t, s, u.ID, at(0))
		again := newSession(u.ID, at(1))
		again.Hash = sess.Hash
		if err := s.CreateSession(t.Context(), again); err == nil {
			t.Fatal("CreateSession with a taken token hash succeeded")
		}
	}},
	{"Touch", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "s@example.com")
		sess := createSession(t, s, u.ID, at(0))
		must(t, s.TouchSession(ctx, sess.ID, at(10), at(70)), "TouchSession")
		got := getSession(t, s, sess.Hash)
		if got.LastSeenAt != stored(at(10)) || got.ExpiresAt != stored(at(70)) {
			t.Fatalf("after a touch: last seen %v, expires %v; want %v, %v", got.LastSeenAt, got.ExpiresAt, stored(at(10)), stored(at(70)))
		}
		must(t, s.TouchSession(ctx, sess.ID, at(5), at(65)), "TouchSession with older times")
		if got := getSession(t, s, sess.Hash); got.LastSeenAt != stored(at(10)) || got.ExpiresAt != stored(at(70)) {
			t.Errorf("an older touch moved the session back: last seen %v, expires %v", got.LastSeenAt, got.ExpiresAt)
		}
	}},
	{"Delete", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann := createUser(t, s, "ann@example.com")
		bob := createUser(t, s, "bob@example.com")
		a1, a2, a3 := createSession(t, s, ann.ID, at(0)), createSession(t, s, ann.ID, at(1)), createSession(t, s, ann.ID, at(2))
		b1 := createSession(t, s, bob.ID, at(0))
		must(t, s.DeleteSession(ctx, a1.ID), "DeleteSession")
		_, err := s.GetSessionByHash(ctx, a1.Hash)
		wantKind(t, err, fault.NotFound, "GetSessionByHash of a deleted session")
		n, err := s.DeleteUserSessions(ctx, ann.ID, a3.ID)
		must(t, err, "DeleteUserSessions keeping one")
		if n != 1 {
			t.Errorf("DeleteUserSessions deleted %d, want 1", n)
		}
		_, err = s.GetSessionByHash(ctx, a2.Hash)
		wantKind(t, err, fault.NotFound, "GetSessionByHash of a session of the user")
		getSession(t, s, a3.Hash) // the kept one
		getSession(t, s, b1.Hash) // another user's
		n, err = s.DeleteUserSessions(ctx, ann.ID, "")
		must(t, err, "DeleteUserSessions")
		if n != 1 {
			t.Errorf("DeleteUserSessions deleted %d, want 1", n)
		}
		getSession(t, s, b1.Hash)
	}},
	{"DeleteExpired", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "s@example.com")
		old := createSession(t, s, u.ID, at(0))  // expires at(60)
		live := createSession(t, s, u.ID, at(1)) // expires at(61)
		n, err := s.DeleteExpiredSessions(ctx, old.ExpiresAt)
		must(t, err, "DeleteExpiredSessions")
		if n != 1 {
			t.Errorf("DeleteExpiredSessions deleted %d, want 1", n)
		}
		_, err = s.GetSessionByHash(ctx, old.Hash)
		wantKind(t, err, fault.NotFound, "GetSessionByHash of an expired session")
		getSession(t, s, live.Hash)
	}},
}

func setupUser(email string, role auth.Role, password string) *auth.User {
	u := newUser(email)
	u.Role, u.PasswordHash = role, password
	return u
}

func createSetupToken(t *testing.T, s store.Store, secret string, created time.Time) {
	t.Helper()
	must(t, s.CreateSetupToken(t.Context(), &auth.SetupToken{Hash: auth.HashSecret(secret), CreatedAt: created, ExpiresAt: created.Add(24 * time.Hour)}), "CreateSetupToken")
}

func signInAdmins(t *testing.T, s store.Store) int {
	t.Helper()
	n, err := s.SignInAdmins(t.Context())
	must(t, err, "SignInAdmins")
	return n
}

var setupTests = []test{
	{"SignInAdmins", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		if n := signInAdmins(t, s); n != 0 {
			t.Fatalf("SignInAdmins of an empty store = %d", n)
		}
		must(t, s.CreateUser(ctx, setupUser("nopw@example.com", auth.RoleAdmin, "")), "CreateUser")
		must(t, s.CreateUser(ctx, setupUser("user@example.com", auth.RoleUser, "hash")), "CreateUser")
		if n := signInAdmins(t, s); n != 0 {
			t.Fatalf("SignInAdmins with an admin without password and a user with one = %d, want 0", n)
		}
		pw := setupUser("pw@example.com", auth.RoleAdmin, "hash")
		must(t, s.CreateUser(ctx, pw), "CreateUser")
		if n := signInAdmins(t, s); n != 1 {
			t.Fatalf("SignInAdmins with an admin with a password = %d, want 1", n)
		}
		pw.Disabled = true
		must(t, s.UpdateUser(ctx, pw), "UpdateUser disabling")
		if n := signInAdmins(t, s); n != 0 {
			t.Fatalf("SignInAdmins with the admin disabled = %d, want 0", n)
		}
		oidc, err := s.GetUserByEmail(ctx, "nopw@example.com")
		must(t, err, "GetUserByEmail")
		must(t, s.CreateIdentity(ctx, &auth.Identity{Issuer: "https://idp.example.com", Subject: "42", UserID: oidc.ID, Email: oidc.Email, CreatedAt: at(3)}), "CreateIdentity")
		if n := signInAdmins(t, s); n != 1 {
			t.Fatalf("SignInAdmins with an admin with an identity = %d, want 1", n)
		}
	}},
	{"CompleteSetup", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createSetupToken(t, s, "first", at(0))
		createSetupToken(t, s, "second", at(1))
		u := setupUser("admin@example.com", auth.RoleAdmin, "hash")
		wantKind(t, s.CompleteSetup(ctx, auth.HashSecret("wrong"), at(2), u), fault.Forbidden, "CompleteSetup with a wrong token")
		if _, err := s.GetUser(ctx, u.ID); !fault.Is(err, fault.NotFound) {
			t.Fatalf("a refused setup created the user: %v", err)
		}
		must(t, s.CompleteSetup(ctx, auth.HashSecret("first"), at(2), u), "CompleteSetup")
		got, err := s.GetUser(ctx, u.ID)
		must(t, err, "GetUser after setup")
		if d := cmp.Diff(u, got); d != "" {
			t.Errorf("the setup's admin (-want +got):\n%s", d)
		}
		// The other token went with the first, and setup is done anyway.
		again := setupUser("again@example.com", auth.RoleAdmin, "hash")
		err = s.CompleteSetup(ctx, auth.HashSecret("second"), at(3), again)
		wantKind(t, err, fault.Conflict, "CompleteSetup once an admin can sign in")
		u.Disabled = true
		must(t, s.UpdateUser(ctx, u), "UpdateUser disabling the admin")
		wantKind(t, s.CompleteSetup(ctx, auth.HashSecret("second"), at(3), again), fault.Forbidden, "CompleteSetup with a token the first setup used up")
	}},
	{"ExpiredToken", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createSetupToken(t, s, "old", at(0))
		u := setupUser("admin@example.com", auth.RoleAdmin, "hash")
		wantKind(t, s.CompleteSetup(ctx, auth.HashSecret("old"), at(0).Add(24*time.Hour), u), fault.Forbidden, "CompleteSetup with an expired token")
		n, err := s.DeleteExpiredSetupTokens(ctx, at(0).Add(24*time.Hour))
		must(t, err, "DeleteExpiredSetupTokens")
		if n != 1 {
			t.Errorf("DeleteExpiredSetupTokens deleted %d, want 1", n)
		}
		createSetupToken(t, s, "new", at(1))
		n, err = s.DeleteExpiredSetupTokens(ctx, at(2))
		must(t, err, "DeleteExpiredSetupTokens")
		if n != 0 {
			t.Errorf("DeleteExpiredSetupTokens deleted %d live tokens", n)
		}
		must(t, s.CompleteSetup(ctx, auth.HashSecret("new"), at(2), u), "CompleteSetup with a live token")
	}},
	{"TakenEmail", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		createUser(t, s, "taken@example.com")
		createSetupToken(t, s, "tok", at(0))
		u := setupUser("taken@example.com", auth.RoleAdmin, "hash")
		wantKind(t, s.CompleteSetup(ctx, auth.HashSecret("tok"), at(1), u), fault.Conflict, "CompleteSetup with a taken email")
		// The token is still there: the failed setup changed nothing.
		u = setupUser("free@example.com", auth.RoleAdmin, "hash")
		must(t, s.CompleteSetup(ctx, auth.HashSecret("tok"), at(1), u), "CompleteSetup after a conflict")
	}},
	{"OneAdminFromRacingSetups", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		const n = 6
		for i := range n {
			createSetupToken(t, s, "token"+string(rune('a'+i)), at(0))
		}
		var wg sync.WaitGroup
		errs := make([]error, n)
		for i := range n {
			wg.Go(func() {
				u := setupUser("admin"+string(rune('a'+i))+"@example.com", auth.RoleAdmin, "hash")
				errs[i] = s.CompleteSetup(ctx, auth.HashSecret("token"+string(rune('a'+i))), at(1), u)
			})
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case fault.Is(err, fault.Conflict), fault.Is(err, fault.Forbidden):
			default:
				t.Errorf("a racing setup failed with %v", err)
			}
		}
		if ok != 1 || signInAdmins(t, s) != 1 {
			t.Errorf("%d setups succeeded, %d admins can sign in; want 1 and 1", ok, signInAdmins(t, s))
		}
	}},
}

var identityTests = []test{
	{"CreateAndGet", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "i@example.com")
		id := &auth.Identity{Issuer: "https://idp.example.com", Subject: "sub-1", UserID: u.ID, Email: u.Email, CreatedAt: at(4)}
		must(t, s.CreateIdentity(ctx, id), "CreateIdentity")
		got, err := s.GetIdentity(ctx, id.Issuer, id.Subject)
		must(t, err, "GetIdentity")
		if d := cmp.Diff(id, got); d != "" {
			t.Errorf("GetIdentity (-want +got):\n%s", d)
		}
		wantUTC(t, "GetIdentity", got.CreatedAt)
		_, err = s.GetIdentity(ctx, "https://other.example.com", id.Subject)
		wantKind(t, err, fault.NotFound, "GetIdentity of another issuer")
		again := *id
		wantKind(t, s.CreateIdentity(ctx, &again), fault.Conflict, "CreateIdentity twice")
		missing := *id
		missing.Subject, missing.UserID = "sub-2", "user_missing"
		wantKind(t, s.CreateIdentity(ctx, &missing), fault.NotFound, "CreateIdentity for a missing user")
	}},
}

var userAuthTests = []test{
	{"Disabled", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := newUser("d@example.com")
		u.Disabled = true
		must(t, s.CreateUser(ctx, u), "CreateUser disabled")
		got, err := s.GetUser(ctx, u.ID)
		must(t, err, "GetUser")
		if !got.Disabled {
			t.Fatal("a user created disabled reads back enabled")
		}
		got.Disabled = false
		must(t, s.UpdateUser(ctx, got), "UpdateUser enabling")
		got, err = s.GetUserByEmail(ctx, u.Email)
		must(t, err, "GetUserByEmail")
		if got.Disabled {
			t.Fatal("an enabled user reads back disabled")
		}
		users, err := s.ListUsers(ctx)
		must(t, err, "ListUsers")
		if len(users) != 1 || users[0].Disabled {
			t.Errorf("ListUsers = %+v", users)
		}
	}},
	{"GetKey", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		u := createUser(t, s, "k@example.com")
		k := createKey(t, s, u.ID)
		got, err := s.GetKey(ctx, k.ID)
		must(t, err, "GetKey")
		if d := cmp.Diff(k, got); d != "" {
			t.Errorf("GetKey (-want +got):\n%s", d)
		}
		_, err = s.GetKey(ctx, "key_missing")
		wantKind(t, err, fault.NotFound, "GetKey of a missing key")
	}},
}
