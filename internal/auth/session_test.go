package auth_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// clock is a settable time for the service under test.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

func mustUser(t *testing.T, s *auth.Service, in auth.NewUser) *auth.User {
	t.Helper()
	u, err := s.CreateUser(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestLogin(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	mustUser(t, s, auth.NewUser{Email: "nopw@example.com"})
	off := mustUser(t, s, auth.NewUser{Email: "off@example.com", Password: "correct horse"})
	if _, err := s.SetDisabled(ctx, off.ID, true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, email, password string }{
		{"wrong password", "ann@example.com", "wrong horse"},
		{"unknown email", "nobody@example.com", "correct horse"},
		{"no password set", "nopw@example.com", ""},
		{"disabled", "off@example.com", "correct horse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, err := s.Login(ctx, tc.email, tc.password, "test")
			if err != auth.ErrWrongPassword || in != nil {
				t.Errorf("Login = %v, %v; want ErrWrongPassword", in, err)
			}
		})
	}
	in, err := s.Login(ctx, " Ann@Example.com ", "correct horse", strings.Repeat("x", 1000))
	if err != nil {
		t.Fatal(err)
	}
	if in.User.Email != "ann@example.com" || len(in.Token) != 43 || len(in.Session.UserAgent) != 256 || strings.Contains(in.Session.Hash, in.Token) {
		t.Errorf("sign-in %+v", in)
	}
	u, sess, err := s.AuthenticateSession(ctx, in.Token)
	if err != nil || u.ID != in.User.ID || sess.ID != in.Session.ID {
		t.Fatalf("AuthenticateSession: %v %v %v", u, sess, err)
	}
	if err := s.Logout(ctx, in.Token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.AuthenticateSession(ctx, in.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a signed-out session: %v", err)
	}
	for _, bad := range []string{"", "short", strings.Repeat("!", 43), in.Token} {
		if _, _, err := s.AuthenticateSession(ctx, bad); !fault.Is(err, fault.Unauthorized) {
			t.Errorf("AuthenticateSession(%q) = %v, want unauthorized", bad, err)
		}
	}
}

func TestSessionSlidesAndExpires(t *testing.T) {
	c := newClock()
	s := newService(t, c.Now)
	s.SetSessionTTL(time.Hour)
	ctx := context.Background()
	mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	in, err := s.Login(ctx, "ann@example.com", "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := c.Now().Add(time.Hour); !in.Session.ExpiresAt.Equal(want) {
		t.Fatalf("expires %v, want %v", in.Session.ExpiresAt, want)
	}
	c.Add(30 * time.Second)
	_, sess, err := s.AuthenticateSession(ctx, in.Token)
	if err != nil || sess.Renewed || !sess.ExpiresAt.Equal(in.Session.ExpiresAt) {
		t.Fatalf("a use within a minute: %+v %v; want it not renewed", sess, err)
	}
	// Used every 50 minutes, the session outlives its first hour.
	for range 3 {
		c.Add(50 * time.Minute)
		_, sess, err = s.AuthenticateSession(ctx, in.Token)
		if err != nil || !sess.Renewed || !sess.ExpiresAt.Equal(c.Now().Add(time.Hour)) || !sess.LastSeenAt.Equal(c.Now()) {
			t.Fatalf("a use after 50 minutes: %+v %v", sess, err)
		}
	}
	// Left alone for an hour, it expires, and the expired session is deleted.
	c.Add(time.Hour)
	if _, _, err := s.AuthenticateSession(ctx, in.Token); !fault.Is(err, fault.Unauthorized) {
		t.Fatalf("an expired session: %v", err)
	}
	if n, _, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Errorf("Sweep after the expired session was refused: %d %v; want it gone already", n, err)
	}
}

func TestSweep(t *testing.T) {
	c := newClock()
	s := newService(t, c.Now)
	s.SetSessionTTL(time.Hour)
	ctx := context.Background()
	mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	for range 2 {
		if _, err := s.Login(ctx, "ann@example.com", "correct horse", ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.NewSetupToken(ctx); err != nil {
		t.Fatal(err)
	}
	c.Add(30 * time.Minute)
	live, err := s.Login(ctx, "ann@example.com", "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if sessions, tokens, err := s.Sweep(ctx); err != nil || sessions != 0 || tokens != 0 {
		t.Fatalf("Sweep before anything expired: %d %d %v", sessions, tokens, err)
	}
	c.Add(auth.SetupTokenTTL)
	if sessions, tokens, err := s.Sweep(ctx); err != nil || sessions != 3 || tokens != 1 {
		t.Fatalf("Sweep a day later: %d sessions, %d tokens, %v; want 3 and 1", sessions, tokens, err)
	}
	if _, _, err := s.AuthenticateSession(ctx, live.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a swept session: %v", err)
	}
}

func TestDisabledUserIsRefusedAtOnce(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	u := mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	_, key, err := s.CreateKey(ctx, u.ID, "k")
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Login(ctx, u.Email, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetDisabled(ctx, u.Email, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, key); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a disabled user's key: %v", err)
	}
	if _, _, err := s.AuthenticateSession(ctx, in.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a disabled user's session: %v", err)
	}
	if _, err := s.SetDisabled(ctx, u.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, key); err != nil {
		t.Errorf("the key of a user enabled again: %v", err)
	}
	// Disabling ended the session for good: enabling does not bring it back.
	if _, _, err := s.AuthenticateSession(ctx, in.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a session ended by disabling works again: %v", err)
	}
}

func TestChangePassword(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	u := mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	here, err := s.Login(ctx, u.Email, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	there, err := s.Login(ctx, u.Email, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ChangePassword(ctx, u, "", "battery staple", here.Session.ID); !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "current: required") {
		t.Errorf("no current password: %v", err)
	}
	if err := s.ChangePassword(ctx, u, "wrong horse", "battery staple", here.Session.ID); err != auth.ErrWrongCurrentPassword {
		t.Errorf("wrong current password: %v", err)
	}
	if err := s.ChangePassword(ctx, u, "correct horse", "short", here.Session.ID); !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "new: at least 8") {
		t.Errorf("short new password: %v", err)
	}
	if err := s.ChangePassword(ctx, u, "correct horse", "battery staple", here.Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Login(ctx, u.Email, "correct horse", ""); err != auth.ErrWrongPassword {
		t.Errorf("the old password: %v", err)
	}
	if _, err := s.Login(ctx, u.Email, "battery staple", ""); err != nil {
		t.Errorf("the new password: %v", err)
	}
	if _, _, err := s.AuthenticateSession(ctx, here.Token); err != nil {
		t.Errorf("the session that changed the password: %v", err)
	}
	if _, _, err := s.AuthenticateSession(ctx, there.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("another session after a password change: %v", err)
	}
	// A user without a password sets one without a current one.
	nopw := mustUser(t, s, auth.NewUser{Email: "nopw@example.com"})
	if err := s.ChangePassword(ctx, nopw, "", "battery staple", ""); err != nil {
		t.Errorf("a first password: %v", err)
	}
}

func TestUpdateUser(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	admin := mustUser(t, s, auth.NewUser{Email: "root@example.com", Role: auth.RoleAdmin, Password: "correct horse"})
	ann := mustUser(t, s, auth.NewUser{Email: "ann@example.com", Password: "correct horse"})
	annIn, err := s.Login(ctx, ann.Email, "correct horse", "")
	if err != nil {
		t.Fatal(err)
	}
	yes, user, name, pw := true, auth.RoleUser, "Ann", "battery staple"
	for _, tc := range []struct {
		name  string
		id    string
		patch auth.UserPatch
		field string
	}{
		{"disable yourself", admin.ID, auth.UserPatch{Disabled: &yes}, "disabled"},
		{"demote yourself", admin.ID, auth.UserPatch{Role: &user}, "role"},
		{"bad role", ann.ID, auth.UserPatch{Role: new(auth.Role("root"))}, "role"},
		{"empty name", ann.ID, auth.UserPatch{Name: new(" ")}, "name"},
		{"short password", ann.ID, auth.UserPatch{Password: new("short")}, "password"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.UpdateUser(ctx, admin, tc.id, tc.patch, "")
			if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), tc.field+":") {
				t.Errorf("UpdateUser = %v, want invalid %s", err, tc.field)
			}
		})
	}
	got, err := s.UpdateUser(ctx, admin, ann.ID, auth.UserPatch{Name: &name, Password: &pw}, "")
	if err != nil || got.DisplayName != "Ann" || !auth.CheckPassword(got, pw) {
		t.Fatalf("UpdateUser: %+v %v", got, err)
	}
	if _, _, err := s.AuthenticateSession(ctx, annIn.Token); !fault.Is(err, fault.Unauthorized) {
		t.Errorf("a session after an admin set a new password: %v", err)
	}
	if _, err := s.UpdateUser(ctx, admin, "user_missing", auth.UserPatch{Name: &name}, ""); !fault.Is(err, fault.NotFound) {
		t.Errorf("a missing user: %v", err)
	}
}

func TestSetup(t *testing.T) {
	c := newClock()
	s := newService(t, c.Now)
	ctx := context.Background()
	if required, err := s.SetupRequired(ctx); err != nil || !required {
		t.Fatalf("SetupRequired of an empty database: %v %v", required, err)
	}
	// The bootstrap admin has no password: setup is still needed.
	if _, err := s.Bootstrap(ctx, auth.NewSecret()); err != nil {
		t.Fatal(err)
	}
	if required, _ := s.SetupRequired(ctx); !required {
		t.Fatal("SetupRequired with only a bootstrap admin = false")
	}
	token, expires, err := s.NewSetupToken(ctx)
	if err != nil || len(token) != 43 || !expires.Equal(c.Now().Add(24*time.Hour)) {
		t.Fatalf("NewSetupToken: %q %v %v", token, expires, err)
	}
	other, _, err := s.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := auth.NewUser{Email: "Me@Example.com", DisplayName: "Me", Password: "correct horse", Role: auth.RoleUser}
	if _, err := s.Setup(ctx, token, auth.NewUser{Email: "me@example.com", Password: "short"}); !fault.Is(err, fault.Invalid) {
		t.Errorf("a short password: %v", err)
	}
	if _, err := s.Setup(ctx, "wrong", in); err != auth.ErrBadSetupToken {
		t.Errorf("a wrong token: %v", err)
	}
	u, err := s.Setup(ctx, token, in)
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "me@example.com" || u.Role != auth.RoleAdmin || !auth.CheckPassword(u, "correct horse") {
		t.Errorf("the setup's admin: %+v", u)
	}
	if required, _ := s.SetupRequired(ctx); required {
		t.Error("SetupRequired after setup = true")
	}
	if _, err := s.Setup(ctx, token, in); err != auth.ErrSetupDone {
		t.Errorf("the same token again: %v", err)
	}
	if _, err := s.Setup(ctx, other, in); err != auth.ErrSetupDone {
		t.Errorf("another token after setup: %v", err)
	}
}

func TestSetupTokenExpires(t *testing.T) {
	c := newClock()
	s := newService(t, c.Now)
	ctx := context.Background()
	token, _, err := s.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(auth.SetupTokenTTL)
	if _, err := s.Setup(ctx, token, auth.NewUser{Email: "me@example.com", Password: "correct horse"}); err != auth.ErrBadSetupToken {
		t.Errorf("an expired token: %v", err)
	}
}

func TestSignInIdentity(t *testing.T) {
	s := newService(t, nil)
	ctx := context.Background()
	ann := mustUser(t, s, auth.NewUser{Email: "ann@example.com"})
	const iss = "https://idp.example.com"
	for _, tc := range []struct {
		name string
		c    auth.Claims
		auto bool
		want string // the email signed in, or "" for a refusal
	}{
		{"unverified email is not linked", auth.Claims{Issuer: iss, Subject: "1", Email: "ann@example.com"}, true, ""},
		{"verified email links", auth.Claims{Issuer: iss, Subject: "1", Email: "Ann@Example.com", EmailVerified: true}, false, "ann@example.com"},
		{"the identity wins over a new email", auth.Claims{Issuer: iss, Subject: "1", Email: "new@example.com", EmailVerified: true}, false, "ann@example.com"},
		{"unknown without auto-create", auth.Claims{Issuer: iss, Subject: "2", Email: "bob@example.com", EmailVerified: true}, false, ""},
		{"unknown with auto-create", auth.Claims{Issuer: iss, Subject: "2", Email: "bob@example.com", EmailVerified: true, Name: "Bob"}, true, "bob@example.com"},
		{"no email", auth.Claims{Issuer: iss, Subject: "3", EmailVerified: true}, true, ""},
		{"another issuer's subject is another identity", auth.Claims{Issuer: "https://other.example.com", Subject: "1", Email: "carol@example.com", EmailVerified: true}, true, "carol@example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, err := s.SignInIdentity(ctx, tc.c, tc.auto)
			switch {
			case tc.want == "" && !fault.Is(err, fault.Forbidden):
				t.Errorf("SignInIdentity = %v, %v; want forbidden", u, err)
			case tc.want != "" && (err != nil || u.Email != tc.want):
				t.Errorf("SignInIdentity = %v, %v; want %s", u, err, tc.want)
			}
		})
	}
	bob, err := s.FindUser(ctx, "bob@example.com")
	if err != nil || bob.Role != auth.RoleUser || bob.DisplayName != "Bob" || bob.HasPassword() {
		t.Errorf("the auto-created user: %+v %v", bob, err)
	}
	if _, err := s.SetDisabled(ctx, ann.ID, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SignInIdentity(ctx, auth.Claims{Issuer: iss, Subject: "1"}, true); !fault.Is(err, fault.Forbidden) {
		t.Errorf("a disabled user's identity: %v", err)
	}
}

func TestUserJSONHasNoHash(t *testing.T) {
	u := &auth.User{ID: "user_1", Email: "a@example.com", PasswordHash: "$2a$10$secret", Disabled: true}
	for _, v := range []any{u, *u} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["has_password"] != true || m["disabled"] != true || m["id"] != "user_1" || strings.Contains(string(b), "secret") {
			t.Errorf("JSON of a user: %s", b)
		}
	}
}
