package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/quota"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// signinBundle is an API with users who have passwords, a settable clock and
// sign-in limits.
type signinBundle struct {
	srv      *httptest.Server
	auth     *auth.Service
	clock    *fakeClock
	adminKey string
	annKey   string
	admin    *auth.User
	ann      *auth.User
}

const (
	adminPassword = "admin password"
	annPassword   = "ann's password"
)

type signinOptions struct {
	limits    quota.SignInLimits
	publicURL string
	noUsers   bool
}

func setupSignin(t *testing.T, o signinOptions) *signinBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &signinBundle{clock: &fakeClock{now: time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)}}
	b.auth = auth.NewService(st, b.clock.Now)
	b.auth.SetSessionTTL(time.Hour)
	b.srv = httptest.NewServer(newAPI(t, httpapi.Options{
		Auth:    b.auth,
		Agents:  agent.NewService(st, agent.Rules{Providers: []string{"openAI"}, MaxRecursionLimit: 100}),
		SignIns: quota.NewSignIns(o.limits, b.clock.Now), PublicURL: o.publicURL, MaxBodyBytes: 64 << 10,
	}))
	t.Cleanup(b.srv.Close)
	if o.noUsers {
		return b
	}
	user := func(email string, role auth.Role, password string) (*auth.User, string) {
		u, err := b.auth.CreateUser(ctx, auth.NewUser{Email: email, Role: role, Password: password})
		if err != nil {
			t.Fatal(err)
		}
		_, key, err := b.auth.CreateKey(ctx, u.ID, "test")
		if err != nil {
			t.Fatal(err)
		}
		return u, key
	}
	b.admin, b.adminKey = user("root@example.com", auth.RoleAdmin, adminPassword)
	b.ann, b.annKey = user("ann@example.com", auth.RoleUser, annPassword)
	return b
}

// req is one request of a test: who sends it (an API key, a session cookie,
// or neither) and the headers a browser would add.
type req struct {
	key, cookie string
	header      map[string]string
}

// reply is an answer, its body read.
type reply struct {
	code int
	body []byte
	resp *http.Response
}

func (r reply) decode(t *testing.T, out any) {
	t.Helper()
	if err := json.Unmarshal(r.body, out); err != nil {
		t.Fatalf("decoding %q: %v", r.body, err)
	}
}

// cookie returns the relay_session cookie the answer set, or nil.
func (r reply) cookie() *http.Cookie {
	for _, c := range r.resp.Cookies() {
		if c.Name == "relay_session" {
			return c
		}
	}
	return nil
}

func (r reply) message() string {
	var e apiError
	_ = json.Unmarshal(r.body, &e)
	return e.Error.Message
}

func (b *signinBundle) send(t *testing.T, q req, method, path string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	r, err := http.NewRequest(method, b.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Content-Type", "application/json")
	if q.key != "" {
		r.Header.Set("Authorization", "Bearer "+q.key)
	}
	if q.cookie != "" {
		r.AddCookie(&http.Cookie{Name: "relay_session", Value: q.cookie})
	}
	for k, v := range q.header {
		r.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{code: resp.StatusCode, body: raw, resp: resp}
}

// login signs in and returns the session token of the cookie.
func (b *signinBundle) login(t *testing.T, email, password string) string {
	t.Helper()
	a := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": email, "password": password})
	c := a.cookie()
	if a.code != 200 || c == nil || c.Value == "" {
		t.Fatalf("login %s: %d %s", email, a.code, a.body)
	}
	return c.Value
}

func TestLoginAndLogout(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	for _, tc := range []struct{ name, email, password string }{
		{"wrong password", "ann@example.com", "not ann's password"},
		{"unknown email", "nobody@example.com", annPassword},
	} {
		a := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": tc.email, "password": tc.password})
		if a.code != 401 || a.message() != "wrong email or password" || a.cookie() != nil {
			t.Errorf("%s: %d %s", tc.name, a.code, a.body)
		}
	}
	if a := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "ann@example.com"}); a.code != 400 {
		t.Errorf("no password: %d %s", a.code, a.body)
	}

	a := b.send(t, req{header: map[string]string{"User-Agent": "Firefox/140"}}, "POST", "/api/auth/login", map[string]string{"email": "Ann@Example.com", "password": annPassword})
	if a.code != 200 {
		t.Fatalf("login: %d %s", a.code, a.body)
	}
	var got struct {
		User map[string]any `json:"user"`
	}
	a.decode(t, &got)
	if got.User["id"] != b.ann.ID || got.User["has_password"] != true || got.User["disabled"] != false || strings.Contains(string(a.body), "$2a$") {
		t.Errorf("login answer: %s", a.body)
	}
	c := a.cookie()
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != 3600 {
		t.Fatalf("session cookie: %+v", c)
	}
	var me map[string]any
	if r := b.send(t, req{cookie: c.Value}, "GET", "/api/me", nil); r.code != 200 {
		t.Fatalf("/api/me with the cookie: %d %s", r.code, r.body)
	} else if r.decode(t, &me); me["email"] != "ann@example.com" {
		t.Errorf("/api/me: %v", me)
	}
	// A cookie works for changes too, from Relay's own pages.
	if r := b.send(t, req{cookie: c.Value, header: map[string]string{"Sec-Fetch-Site": "same-origin"}}, "POST", "/api/agents",
		map[string]string{"name": "Mine", "provider": "openAI", "model": "m"}); r.code != 201 {
		t.Errorf("creating an agent with the cookie: %d %s", r.code, r.body)
	}

	out := b.send(t, req{cookie: c.Value}, "POST", "/api/auth/logout", nil)
	if oc := out.cookie(); out.code != 204 || oc == nil || oc.MaxAge >= 0 || oc.Value != "" {
		t.Fatalf("logout: %d %+v", out.code, oc)
	}
	r := b.send(t, req{cookie: c.Value}, "GET", "/api/me", nil)
	if r.code != 401 {
		t.Errorf("/api/me after logout: %d %s", r.code, r.body)
	}
	if rc := r.cookie(); rc == nil || rc.MaxAge >= 0 {
		t.Errorf("a refused cookie is not cleared: %+v", rc)
	}
	if r := b.send(t, req{}, "POST", "/api/auth/logout", nil); r.code != 204 {
		t.Errorf("logout without a session: %d", r.code)
	}
}

func TestSecureCookie(t *testing.T) {
	b := setupSignin(t, signinOptions{publicURL: "https://relay.example.com"})
	a := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "ann@example.com", "password": annPassword})
	if c := a.cookie(); a.code != 200 || c == nil || !c.Secure {
		t.Fatalf("the cookie of an https public URL: %d %+v", a.code, c)
	}
	// The public URL's origin passes the cross-origin check, as a proxy may
	// change the Host.
	token := a.cookie().Value
	if r := b.send(t, req{cookie: token, header: map[string]string{"Origin": "https://relay.example.com"}}, "POST", "/api/auth/logout-all", nil); r.code != 204 {
		t.Errorf("a change from the public origin: %d %s", r.code, r.body)
	}
}

func TestSessionExpires(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	token := b.login(t, "ann@example.com", annPassword)
	b.clock.Add(50 * time.Minute)
	r := b.send(t, req{cookie: token}, "GET", "/api/me", nil)
	if c := r.cookie(); r.code != 200 || c == nil || c.MaxAge != 3600 || c.Value != token {
		t.Fatalf("a use after 50 minutes renews the cookie: %d %+v", r.code, c)
	}
	b.clock.Add(50 * time.Minute) // 100 minutes after sign-in, 50 after the last use
	if r := b.send(t, req{cookie: token}, "GET", "/api/me", nil); r.code != 200 {
		t.Fatalf("a session used within its TTL: %d", r.code)
	}
	b.clock.Add(time.Hour)
	if r := b.send(t, req{cookie: token}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a session unused for its TTL: %d", r.code)
	}
}

func TestLogoutAll(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	laptop := b.login(t, "ann@example.com", annPassword)
	phone := b.login(t, "ann@example.com", annPassword)
	other := b.login(t, "root@example.com", adminPassword)
	if r := b.send(t, req{cookie: laptop}, "POST", "/api/auth/logout-all", nil); r.code != 204 || r.cookie() == nil {
		t.Fatalf("logout-all: %d %s", r.code, r.body)
	}
	for name, token := range map[string]string{"laptop": laptop, "phone": phone} {
		if r := b.send(t, req{cookie: token}, "GET", "/api/me", nil); r.code != 401 {
			t.Errorf("%s after logout-all: %d", name, r.code)
		}
	}
	if r := b.send(t, req{cookie: other}, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("another user's session after logout-all: %d", r.code)
	}
	if r := b.send(t, req{key: b.annKey}, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the user's key after logout-all: %d", r.code)
	}
	// With a key, logout-all ends the sessions too.
	again := b.login(t, "ann@example.com", annPassword)
	if r := b.send(t, req{key: b.annKey}, "POST", "/api/auth/logout-all", nil); r.code != 204 {
		t.Fatalf("logout-all with a key: %d", r.code)
	}
	if r := b.send(t, req{cookie: again}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("a session after logout-all with a key: %d", r.code)
	}
}

func TestCrossOriginCookieRequestsRefused(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	token := b.login(t, "ann@example.com", annPassword)
	agentBody := map[string]string{"name": "Sneaky", "provider": "openAI", "model": "m"}
	for _, tc := range []struct {
		name   string
		header map[string]string
	}{
		{"cross-site", map[string]string{"Sec-Fetch-Site": "cross-site"}},
		{"same-site, another origin", map[string]string{"Sec-Fetch-Site": "same-site", "Origin": "https://other.example.com"}},
		{"a foreign origin from an older browser", map[string]string{"Origin": "https://evil.example.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := b.send(t, req{cookie: token, header: tc.header}, "POST", "/api/agents", agentBody)
			var e apiError
			r.decode(t, &e)
			if r.code != 403 || e.Error.Code != "forbidden" || !strings.Contains(e.Error.Message, "cross-origin") {
				t.Errorf("POST /api/agents: %d %s", r.code, r.body)
			}
			for _, path := range []string{"/api/auth/logout", "/api/auth/logout-all"} {
				if r := b.send(t, req{cookie: token, header: tc.header}, "POST", path, nil); r.code != 403 {
					t.Errorf("POST %s: %d %s", path, r.code, r.body)
				}
			}
			if r := b.send(t, req{header: tc.header}, "POST", "/api/auth/login", map[string]string{"email": "ann@example.com", "password": annPassword}); r.code != 403 || r.cookie() != nil {
				t.Errorf("a cross-origin login: %d %s", r.code, r.body)
			}
			if r := b.send(t, req{header: tc.header}, "POST", "/api/auth/setup", map[string]string{"token": "x"}); r.code != 403 {
				t.Errorf("a cross-origin setup: %d %s", r.code, r.body)
			}
			if r := b.send(t, req{cookie: token, header: tc.header}, "PUT", "/api/me/password", map[string]string{"current": annPassword, "new": "a new password"}); r.code != 403 {
				t.Errorf("a cross-origin password change: %d %s", r.code, r.body)
			}
			// Reading is not a change: a cross-site GET with the cookie works
			// (the browser keeps its answer from the other site).
			if r := b.send(t, req{cookie: token, header: tc.header}, "GET", "/api/me", nil); r.code != 200 {
				t.Errorf("a cross-origin GET: %d", r.code)
			}
			// A key is never sent by a browser on its own: the origin does not matter.
			if r := b.send(t, req{key: b.annKey, header: tc.header}, "POST", "/api/agents", map[string]string{"name": "Keyed", "provider": "openAI", "model": "m"}); r.code != 201 {
				t.Errorf("a key request with a foreign origin: %d %s", r.code, r.body)
			}
		})
	}
	// Nothing the refused requests asked for happened.
	var list struct {
		Data []map[string]any `json:"data"`
	}
	b.send(t, req{key: b.annKey}, "GET", "/api/agents", nil).decode(t, &list)
	for _, a := range list.Data {
		if a["name"] == "Sneaky" {
			t.Errorf("a refused request created an agent: %v", a)
		}
	}
	if r := b.send(t, req{cookie: token}, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the session after refused logouts: %d", r.code)
	}
	if _, err := b.auth.Login(context.Background(), "ann@example.com", annPassword, ""); err != nil {
		t.Errorf("the password after a refused change: %v", err)
	}
	// Same origin: Sec-Fetch-Site same-origin, or an Origin naming this host.
	for _, h := range []map[string]string{{"Sec-Fetch-Site": "same-origin"}, {"Origin": b.srv.URL}, {}} {
		if r := b.send(t, req{cookie: token, header: h}, "POST", "/api/agents", agentBody); r.code != 201 {
			t.Errorf("a same-origin POST with %v: %d %s", h, r.code, r.body)
		}
	}
}

func TestLoginRateLimited(t *testing.T) {
	b := setupSignin(t, signinOptions{limits: quota.SignInLimits{PerEmail: 3, PerAddress: 5, Window: 15 * time.Minute}})
	wrong := map[string]string{"email": "ann@example.com", "password": "guess"}
	for i := range 3 {
		if r := b.send(t, req{}, "POST", "/api/auth/login", wrong); r.code != 401 {
			t.Fatalf("failure %d: %d %s", i, r.code, r.body)
		}
		b.clock.Add(time.Minute)
	}
	r := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "ann@example.com", "password": annPassword})
	var e apiError
	r.decode(t, &e)
	if r.code != 429 || e.Error.Code != "rate_limited" || r.resp.Header.Get("Retry-After") != "720" || r.cookie() != nil {
		t.Fatalf("the right password after 3 failures: %d %s (Retry-After %q)", r.code, r.body, r.resp.Header.Get("Retry-After"))
	}
	// Other emails from the same address fail until the address's limit.
	for i := range 2 {
		if r := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "root@example.com", "password": "guess"}); r.code != 401 {
			t.Fatalf("another email, failure %d: %d", i, r.code)
		}
	}
	if r := b.send(t, req{}, "POST", "/api/auth/login", map[string]string{"email": "root@example.com", "password": adminPassword}); r.code != 429 {
		t.Errorf("the address after 5 failures: %d %s", r.code, r.body)
	}
	b.clock.Add(15 * time.Minute)
	b.login(t, "ann@example.com", annPassword)
}

func TestSetupLink(t *testing.T) {
	b := setupSignin(t, signinOptions{noUsers: true})
	ctx := context.Background()
	var st struct {
		SetupRequired bool `json:"setup_required"`
		Password      bool `json:"password"`
		OIDC          struct {
			Enabled bool `json:"enabled"`
		} `json:"oidc"`
	}
	b.send(t, req{}, "GET", "/api/auth/status", nil).decode(t, &st)
	if !st.SetupRequired || !st.Password || st.OIDC.Enabled {
		t.Fatalf("status of an empty server: %+v", st)
	}
	token, _, err := b.auth.NewSetupToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	in := map[string]string{"token": token, "email": "me@example.com", "name": "Me", "password": "my first password"}
	bad := map[string]string{"token": strings.Repeat("x", 43), "email": "me@example.com", "name": "Me", "password": "my first password"}
	if r := b.send(t, req{}, "POST", "/api/auth/setup", bad); r.code != 403 || !strings.Contains(r.message(), "setup link") {
		t.Errorf("a wrong token: %d %s", r.code, r.body)
	}
	r := b.send(t, req{}, "POST", "/api/auth/setup", in)
	if r.code != 201 || r.cookie() == nil {
		t.Fatalf("setup: %d %s", r.code, r.body)
	}
	var got struct {
		User map[string]any `json:"user"`
	}
	r.decode(t, &got)
	if got.User["role"] != "admin" || got.User["email"] != "me@example.com" || got.User["display_name"] != "Me" || got.User["has_password"] != true {
		t.Errorf("the setup's admin: %s", r.body)
	}
	if me := b.send(t, req{cookie: r.cookie().Value}, "GET", "/api/me", nil); me.code != 200 {
		t.Errorf("the setup's session: %d", me.code)
	}
	again := b.send(t, req{}, "POST", "/api/auth/setup", map[string]string{"token": token, "email": "you@example.com", "password": "another password"})
	if again.code != 409 || !strings.Contains(again.message(), "setup is done") {
		t.Errorf("the token again: %d %s", again.code, again.body)
	}
	b.send(t, req{}, "GET", "/api/auth/status", nil).decode(t, &st)
	if st.SetupRequired {
		t.Error("status after setup: setup_required")
	}
	if _, err := b.auth.Login(ctx, "you@example.com", "another password", ""); err == nil {
		t.Error("a second setup created a user")
	}
}

func TestChangePasswordRoute(t *testing.T) {
	b := setupSignin(t, signinOptions{limits: quota.SignInLimits{PerEmail: 2, Window: time.Minute}})
	here := b.login(t, "ann@example.com", annPassword)
	there := b.login(t, "ann@example.com", annPassword)
	r := b.send(t, req{cookie: here}, "PUT", "/api/me/password", map[string]string{"current": "wrong", "new": "a new password"})
	var e apiError
	r.decode(t, &e)
	if r.code != 400 || len(e.Error.Fields) != 1 || e.Error.Fields[0].Field != "current" {
		t.Errorf("a wrong current password: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{cookie: here}, "PUT", "/api/me/password", map[string]string{"current": annPassword, "new": "short"}); r.code != 400 {
		t.Errorf("a short new password: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{cookie: here}, "PUT", "/api/me/password", map[string]string{"current": annPassword, "new": "a new password"}); r.code != 204 {
		t.Fatalf("a password change: %d %s", r.code, r.body)
	}
	if r := b.send(t, req{cookie: here}, "GET", "/api/me", nil); r.code != 200 {
		t.Errorf("the session that changed the password: %d", r.code)
	}
	if r := b.send(t, req{cookie: there}, "GET", "/api/me", nil); r.code != 401 {
		t.Errorf("another session after a password change: %d", r.code)
	}
	b.login(t, "ann@example.com", "a new password")
	// Wrong current passwords count as failed sign-ins.
	b.send(t, req{key: b.annKey}, "PUT", "/api/me/password", map[string]string{"current": "wrong", "new": "a newer password"})
	if r := b.send(t, req{key: b.annKey}, "PUT", "/api/me/password", map[string]string{"current": "wrong again", "new": "a newer password"}); r.code != 400 {
		t.Fatalf("a second wrong current password: %d", r.code)
	}
	if r := b.send(t, req{key: b.annKey}, "PUT", "/api/me/password", map[string]string{"current": "a new password", "new": "a newer password"}); r.code != 429 {
		t.Errorf("a change after two wrong current passwords: %d %s", r.code, r.body)
	}
}
