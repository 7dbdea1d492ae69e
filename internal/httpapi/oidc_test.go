package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/auth/oidc"
	"github.com/relay-ai/relay/internal/httpapi"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// opUsers are the people the test provider knows, by id (the subject).
type opUsers map[string]*storage.User

func (u opUsers) GetUserByID(id string) *storage.User { return u[id] }

func (u opUsers) GetUserByUsername(name string) *storage.User {
	for _, x := range u {
		if x.Username == name {
			return x
		}
	}
	return nil
}

func (opUsers) ExampleClientID() string { return "service" }

const opPassword = "provider password"

// ssoBundle is Relay with single sign-on against a real OpenID Connect
// provider (zitadel's example OP) running in the test.
type ssoBundle struct {
	relay  *httptest.Server
	issuer string
	auth   *auth.Service
}

// setupSSO starts the provider and Relay, whose client secret is secret
// (the provider's is relay-client-secret).
func setupSSO(t *testing.T, autoCreate bool, secret string) *ssoBundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	b := &ssoBundle{auth: auth.NewService(st, nil)}

	// Relay on 127.0.0.1, the provider on localhost: a cookie jar keeps the
	// cookies of the two hosts apart, as a browser would.
	b.relay = httptest.NewUnstartedServer(nil)
	relayURL := "http://" + b.relay.Listener.Addr().String()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b.issuer = "http://localhost:" + strings.TrimPrefix(ln.Addr().String(), "127.0.0.1:")
	users := opUsers{
		"sub-ann":    {ID: "sub-ann", Username: "ann", Password: opPassword, FirstName: "Ann", LastName: "Lee", Email: "Ann@Example.com", EmailVerified: true},
		"sub-newbie": {ID: "sub-newbie", Username: "newbie", Password: opPassword, FirstName: "New", LastName: "Bie", Email: "newbie@example.com", EmailVerified: true},
		"sub-sneaky": {ID: "sub-sneaky", Username: "sneaky", Password: opPassword, FirstName: "Not", LastName: "Root", Email: "root@example.com"},
		"sub-off":    {ID: "sub-off", Username: "off", Password: opPassword, Email: "off@example.com", EmailVerified: true},
	}
	clients := map[string]*storage.Client{"relay": storage.WebClient("relay", "relay-client-secret", relayURL+"/api/auth/oidc/callback")}
	op := httptest.NewUnstartedServer(exampleop.SetupServer(b.issuer, storage.NewStorageWithClients(users, clients), nil, false))
	op.Listener.Close()
	op.Listener = ln
	op.Start()
	t.Cleanup(op.Close)

	sso := oidc.New(oidc.Config{
		Issuer: b.issuer, ClientID: "relay", ClientSecret: secret, RedirectURL: relayURL + "/api/auth/oidc/callback",
		Scopes: []string{"openid", "email", "profile"}, Label: "Example SSO", AutoCreate: autoCreate,
	})
	b.relay.Config.Handler = newAPI(t, httpapi.Options{
		Auth: b.auth, Agents: agent.NewService(st, agent.Rules{Providers: []string{"openAI"}}), OIDC: sso, MaxBodyBytes: 64 << 10,
	})
	b.relay.Start()
	t.Cleanup(b.relay.Close)

	for _, u := range []auth.NewUser{
		{Email: "ann@example.com", DisplayName: "Ann", Password: annPassword},
		{Email: "root@example.com", Role: auth.RoleAdmin, Password: adminPassword},
		{Email: "off@example.com"},
	} {
		if _, err := b.auth.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.auth.SetDisabled(ctx, "off@example.com", true); err != nil {
		t.Fatal(err)
	}
	return b
}

// browser is an HTTP client with a cookie jar that follows redirects until
// they leave the sign-in routes for Relay's own pages.
func (b *ssoBundle) browser(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	relay, _ := url.Parse(b.relay.URL)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == relay.Host && !strings.HasPrefix(req.URL.Path, "/api/auth/oidc/") {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

var loginFormID = regexp.MustCompile(`name="id" value="([^"]+)"`)

// signIn runs the whole flow as a browser: Relay's login route, the
// provider's login form filled in, the redirects back. It returns where Relay
// sent the browser in the end and the session cookie it set, if any.
func (b *ssoBundle) signIn(t *testing.T, c *http.Client, next, username, password string) (string, string) {
	t.Helper()
	return b.signInTampered(t, c, next, username, password, -1)
}

// signInTampered is signIn with one part of the flow cookie (0 state, 1
// nonce, 2 PKCE verifier) changed while the person is at the provider; -1
// changes none.
func (b *ssoBundle) signInTampered(t *testing.T, c *http.Client, next, username, password string, part int) (string, string) {
	t.Helper()
	resp, err := c.Get(b.relay.URL + "/api/auth/oidc/login?next=" + url.QueryEscape(next))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := loginFormID.FindSubmatch(page)
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), b.issuer+"/login/username") || m == nil {
		t.Fatalf("the provider's login page: %d at %s:\n%s", resp.StatusCode, resp.Request.URL, page)
	}
	if part >= 0 {
		callback, _ := url.Parse(b.relay.URL + "/api/auth/oidc/callback")
		var flow *http.Cookie
		for _, ck := range c.Jar.Cookies(callback) {
			if ck.Name == "relay_oidc" {
				flow = ck
			}
		}
		if flow == nil {
			t.Fatal("no flow cookie for the callback")
		}
		parts := strings.Split(flow.Value, ".")
		parts[part] = "tampered" + parts[part][8:]
		c.Jar.SetCookies(callback, []*http.Cookie{{Name: "relay_oidc", Value: strings.Join(parts, "."), Path: "/api/auth/oidc/"}})
	}
	resp, err = c.PostForm(b.issuer+"/login/username", url.Values{"id": {string(m[1])}, "username": {username}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("after the login form: %d at %s", resp.StatusCode, resp.Request.URL)
	}
	return resp.Header.Get("Location"), b.session(t, c)
}

// session is the relay_session cookie the browser holds for Relay.
func (b *ssoBundle) session(t *testing.T, c *http.Client) string {
	t.Helper()
	relay, _ := url.Parse(b.relay.URL)
	for _, ck := range c.Jar.Cookies(relay) {
		if ck.Name == "relay_session" {
			return ck.Value
		}
	}
	return ""
}

func (b *ssoBundle) me(t *testing.T, token string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", b.relay.URL+"/api/me", nil)
	req.AddCookie(&http.Cookie{Name: "relay_session", Value: token})
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var u map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&u)
	return resp.StatusCode, u
}

func signinError(words string) string { return "/signin?error=" + url.QueryEscape(words) }

func TestSingleSignOn(t *testing.T) {
	b := setupSSO(t, true, "relay-client-secret")
	var st struct {
		OIDC struct {
			Enabled bool   `json:"enabled"`
			Label   string `json:"label"`
		} `json:"oidc"`
	}
	resp, err := http.Get(b.relay.URL + "/api/auth/status")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if !st.OIDC.Enabled || st.OIDC.Label != "Example SSO" {
		t.Errorf("status: %+v", st)
	}

	t.Run("a verified email links to its user", func(t *testing.T) {
		c := b.browser(t)
		to, token := b.signIn(t, c, "/chat/42", "ann", opPassword)
		if to != "/chat/42" || token == "" {
			t.Fatalf("landed on %q with session %q", to, token)
		}
		if code, u := b.me(t, token); code != 200 || u["email"] != "ann@example.com" || u["display_name"] != "Ann" {
			t.Errorf("/api/me: %d %v", code, u)
		}
		// The identity is kept: the next sign-in finds ann by it.
		if _, token := b.signIn(t, b.browser(t), "", "ann", opPassword); token == "" {
			t.Error("a second sign-in of the same person")
		}
	})
	t.Run("an unknown person gets a user", func(t *testing.T) {
		to, token := b.signIn(t, b.browser(t), "//evil.example.com/x", "newbie", opPassword)
		if to != "/" || token == "" {
			t.Fatalf("landed on %q with session %q; want / (never another site)", to, token)
		}
		code, u := b.me(t, token)
		if code != 200 || u["email"] != "newbie@example.com" || u["role"] != "user" || u["has_password"] != false || u["display_name"] != "New Bie" {
			t.Errorf("the new user: %d %v", code, u)
		}
	})
	t.Run("an unverified email is not linked", func(t *testing.T) {
		to, token := b.signIn(t, b.browser(t), "", "sneaky", opPassword)
		if to != signinError("the provider has not verified this email address") || token != "" {
			t.Errorf("landed on %q with session %q", to, token)
		}
	})
	t.Run("a disabled user is refused", func(t *testing.T) {
		to, token := b.signIn(t, b.browser(t), "", "off", opPassword)
		if to != signinError("this account is disabled") || token != "" {
			t.Errorf("landed on %q with session %q", to, token)
		}
	})
	// The checks that tie the provider's answer to this browser's sign-in.
	for part, want := range map[int]string{
		0: "the sign-in expired or was started elsewhere; try again",
		1: "the provider's answer could not be verified", // the ID token's nonce
		2: "the provider's answer could not be verified", // PKCE: the code is not exchanged
	} {
		if to, token := b.signInTampered(t, b.browser(t), "", "ann", opPassword, part); to != signinError(want) || token != "" {
			t.Errorf("flow part %d changed: landed on %q with session %q", part, to, token)
		}
	}
	t.Run("a callback of another flow is refused", func(t *testing.T) {
		c := b.browser(t)
		resp, err := c.Get(b.relay.URL + "/api/auth/oidc/callback?code=stolen&state=guessed")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if to := resp.Header.Get("Location"); to != signinError("the sign-in expired or was started elsewhere; try again") || b.session(t, c) != "" {
			t.Errorf("landed on %q", to)
		}
	})
	t.Run("a refusal by the provider", func(t *testing.T) {
		c := b.browser(t)
		// Start a flow to hold its cookie, then come back as the provider does
		// when the person cancels.
		resp, err := c.Get(b.relay.URL + "/api/auth/oidc/login")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		resp, err = c.Get(b.relay.URL + "/api/auth/oidc/callback?error=access_denied")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if to := resp.Header.Get("Location"); to != signinError("the sign-in was cancelled or refused by the provider") {
			t.Errorf("landed on %q", to)
		}
	})
}

func TestSingleSignOnWithoutAutoCreate(t *testing.T) {
	b := setupSSO(t, false, "relay-client-secret")
	to, token := b.signIn(t, b.browser(t), "", "newbie", opPassword)
	if to != signinError("no account for this email; ask an admin") || token != "" {
		t.Errorf("an unknown person without auto_create: landed on %q with session %q", to, token)
	}
	if _, token := b.signIn(t, b.browser(t), "", "ann", opPassword); token == "" {
		t.Error("a known person without auto_create was refused")
	}
}

func TestSingleSignOnWrongClientSecret(t *testing.T) {
	b := setupSSO(t, true, "not-the-secret")
	if to, token := b.signIn(t, b.browser(t), "", "ann", opPassword); to != signinError("the provider's answer could not be verified") || token != "" {
		t.Errorf("a wrong client secret: landed on %q with session %q", to, token)
	}
}

func TestSingleSignOnOff(t *testing.T) {
	b := setupSignin(t, signinOptions{})
	for _, path := range []string{"/api/auth/oidc/login", "/api/auth/oidc/callback"} {
		if r := b.send(t, req{}, "GET", path, nil); r.code != 404 {
			t.Errorf("%s without auth.oidc: %d", path, r.code)
		}
	}
}
