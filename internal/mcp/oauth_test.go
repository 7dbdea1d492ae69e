package mcp_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/relay-ai/relay/internal/mcp"
)

// oauthWorld is an MCP server (only its metadata) and its authorization server,
// on one httptest server, as small as the Authorizer's tests need: metadata at
// the paths a test chooses, dynamic registration, an authorization endpoint that
// redirects at once, a token endpoint that checks PKCE and the resource, and a
// revocation endpoint.
type oauthWorld struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	docs      map[string]any // path → JSON document served there
	registers []map[string]any
	codes     map[string]url.Values // code → the authorization request's query
	refreshes map[string]bool       // refresh tokens still valid
	rotate    bool                  // a refresh issues a new refresh token
	tokenReqs []*http.Request       // with the form parsed
	revoked   []string
	issued    int
	challenge string // the WWW-Authenticate of the MCP server's 401, when set
	probes    int    // requests to the MCP server
}

func newOAuthWorld(t *testing.T) *oauthWorld {
	w := &oauthWorld{t: t, docs: map[string]any{}, codes: map[string]url.Values{}, refreshes: map[string]bool{}}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

// url is the MCP server's URL.
func (w *oauthWorld) url() string { return w.srv.URL + "/mcp" }

// asMeta is the authorization server's metadata, with its issuer at the root.
func (w *oauthWorld) asMeta() map[string]any {
	return map[string]any{
		"issuer":                           w.srv.URL,
		"authorization_endpoint":           w.srv.URL + "/authorize",
		"token_endpoint":                   w.srv.URL + "/token",
		"registration_endpoint":            w.srv.URL + "/register",
		"revocation_endpoint":              w.srv.URL + "/revoke",
		"response_types_supported":         []string{"code"},
		"code_challenge_methods_supported": []string{"S256"},
	}
}

// prm is the MCP server's protected resource metadata.
func (w *oauthWorld) prm(scopes ...string) map[string]any {
	m := map[string]any{"resource": w.url(), "authorization_servers": []string{w.srv.URL}}
	if len(scopes) > 0 {
		m["scopes_supported"] = scopes
	}
	return m
}

func (w *oauthWorld) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	writeJSON := func(status int, v any) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(status)
		_ = json.NewEncoder(rw).Encode(v)
	}
	if doc, ok := w.docs[r.URL.Path]; ok && r.Method == http.MethodGet {
		writeJSON(http.StatusOK, doc)
		return
	}
	switch r.URL.Path {
	case "/mcp":
		w.probes++
		if r.Header.Get("Authorization") != "" {
			w.t.Errorf("the MCP server was sent %q before any authorization", r.Header.Get("Authorization"))
		}
		if w.challenge != "" {
			rw.Header().Set("WWW-Authenticate", w.challenge)
		}
		rw.WriteHeader(http.StatusUnauthorized)
	case "/register":
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		w.registers = append(w.registers, m)
		writeJSON(http.StatusCreated, map[string]any{"client_id": fmt.Sprintf("dyn-%d", len(w.registers)), "redirect_uris": m["redirect_uris"], "token_endpoint_auth_method": "none"})
	case "/authorize", "/oidc/auth":
		q := r.URL.Query()
		w.issued++
		code := fmt.Sprintf("code-%d", w.issued)
		w.codes[code] = q
		http.Redirect(rw, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case "/token":
		_ = r.ParseForm()
		w.tokenReqs = append(w.tokenReqs, r)
		w.issued++
		switch r.PostForm.Get("grant_type") {
		case "authorization_code":
			q, ok := w.codes[r.PostForm.Get("code")]
			delete(w.codes, r.PostForm.Get("code"))
			sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
			switch {
			case !ok:
				writeJSON(http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "unknown code"})
				return
			case base64.RawURLEncoding.EncodeToString(sum[:]) != q.Get("code_challenge") || q.Get("code_challenge_method") != "S256":
				writeJSON(http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verification failed"})
				return
			case r.PostForm.Get("resource") != q.Get("resource") || r.PostForm.Get("redirect_uri") != q.Get("redirect_uri"):
				writeJSON(http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "resource or redirect_uri differs"})
				return
			}
			rt := fmt.Sprintf("refresh-%d", w.issued)
			w.refreshes[rt] = true
			writeJSON(http.StatusOK, map[string]any{"access_token": fmt.Sprintf("access-%d", w.issued), "token_type": "Bearer", "expires_in": 3600, "refresh_token": rt})
		case "refresh_token":
			if !w.refreshes[r.PostForm.Get("refresh_token")] {
				writeJSON(http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "refresh token revoked"})
				return
			}
			res := map[string]any{"access_token": fmt.Sprintf("access-%d", w.issued), "token_type": "Bearer", "expires_in": "60"}
			if w.rotate {
				delete(w.refreshes, r.PostForm.Get("refresh_token"))
				rt := fmt.Sprintf("refresh-%d", w.issued)
				w.refreshes[rt] = true
				res["refresh_token"] = rt
			}
			writeJSON(http.StatusOK, res)
		case "client_credentials":
			if id, secret, ok := r.BasicAuth(); !ok || id != "machine" || secret != "s" {
				writeJSON(http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
				return
			}
			writeJSON(http.StatusOK, map[string]any{"access_token": fmt.Sprintf("access-%d", w.issued), "token_type": "Bearer", "scope": r.PostForm.Get("scope")})
		default:
			writeJSON(http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		}
	case "/revoke":
		_ = r.ParseForm()
		w.revoked = append(w.revoked, r.PostForm.Get("token"))
		delete(w.refreshes, r.PostForm.Get("token"))
		rw.WriteHeader(http.StatusOK)
	default:
		http.NotFound(rw, r)
	}
}

// authorize plays the user's browser: it opens the flow's URL and returns the
// code, state and iss of the redirect.
func authorize(t *testing.T, p *mcp.Pending) (code, state, iss string) {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(p.AuthURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorization answered %s, Location %q", resp.Status, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code"), loc.Query().Get("state"), loc.Query().Get("iss")
}

const testRedirect = "https://relay.example/oauth/callback"

// TestAuthorizerFlow: discovery from the challenge's resource_metadata, a
// dynamic registration, PKCE and the resource checked by the token endpoint, a
// grant that survives JSON, and a refresh that keeps the refresh token.
func TestAuthorizerFlow(t *testing.T) {
	w := newOAuthWorld(t)
	w.docs["/meta/prm"] = w.prm("tools:read")
	w.docs["/.well-known/oauth-authorization-server"] = w.asMeta()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	a := &mcp.Authorizer{ClientName: "Relay", Now: func() time.Time { return now }}

	p, err := a.Begin(t.Context(), mcp.BeginRequest{
		ServerURL:   w.url(),
		RedirectURI: testRedirect,
		Challenge:   []string{`Bearer resource_metadata="` + w.srv.URL + `/meta/prm"`},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w.registers) != 1 || w.registers[0]["client_name"] != "Relay" {
		t.Fatalf("registrations: %v", w.registers)
	}
	if got := w.registers[0]["grant_types"]; !cmp.Equal(got, []any{"authorization_code", "refresh_token"}) {
		t.Errorf("registered grant_types %v, want authorization_code and refresh_token", got)
	}
	wantPending := mcp.Pending{
		Issuer: w.srv.URL, Resource: w.url(), TokenURL: w.srv.URL + "/token", RevocationURL: w.srv.URL + "/revoke",
		RedirectURI: testRedirect, Scopes: []string{"tools:read"},
		Client: mcp.OAuthClient{ID: "dyn-1", AuthMethod: "none", Issuer: w.srv.URL},
	}
	if diff := cmp.Diff(wantPending, *p, cmpIgnore("AuthURL", "State", "Verifier")); diff != "" {
		t.Errorf("pending (-want +got):\n%s", diff)
	}
	u, _ := url.Parse(p.AuthURL)
	q := u.Query()
	for k, want := range map[string]string{"client_id": "dyn-1", "response_type": "code", "redirect_uri": testRedirect, "scope": "tools:read", "resource": w.url(), "code_challenge_method": "S256", "state": p.State} {
		if q.Get(k) != want {
			t.Errorf("authorization URL %s = %q, want %q", k, q.Get(k), want)
		}
	}
	if q.Get("code_challenge") == "" || strings.Contains(p.AuthURL, p.Verifier) {
		t.Errorf("authorization URL %s: want a code challenge, never the verifier", p.AuthURL)
	}

	// The flow is stored between the two steps.
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var stored mcp.Pending
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	code, state, iss := authorize(t, &stored)
	g, err := a.Finish(t.Context(), &stored, code, state, iss)
	if err != nil {
		t.Fatal(err)
	}
	want := mcp.Grant{
		AccessToken: "access-2", RefreshToken: "refresh-2", TokenType: "Bearer", Expiry: now.Add(time.Hour),
		Scopes: []string{"tools:read"}, Client: p.Client, Issuer: w.srv.URL, Resource: w.url(),
		TokenURL: w.srv.URL + "/token", RevocationURL: w.srv.URL + "/revoke",
	}
	if diff := cmp.Diff(want, *g); diff != "" {
		t.Errorf("grant (-want +got):\n%s", diff)
	}
	if g.Expired(now) || !g.Expired(now.Add(time.Hour)) {
		t.Errorf("Expired: want false now, true in an hour")
	}

	raw, _ = json.Marshal(g)
	var kept mcp.Grant
	if err := json.Unmarshal(raw, &kept); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	g2, err := a.Refresh(t.Context(), &kept)
	if err != nil {
		t.Fatal(err)
	}
	if g2.AccessToken != "access-3" || g2.RefreshToken != "refresh-2" || !g2.Expiry.Equal(now.Add(time.Minute)) {
		t.Errorf("refreshed: access %q refresh %q expiry %v; want access-3, the old refresh-2, %v", g2.AccessToken, g2.RefreshToken, g2.Expiry, now.Add(time.Minute))
	}
	if r := w.tokenReqs[len(w.tokenReqs)-1]; r.PostForm.Get("resource") != w.url() || r.PostForm.Get("client_id") != "dyn-1" {
		t.Errorf("refresh request form %v: want the resource and the client's id", r.PostForm)
	}
	if kept.AccessToken != "access-2" {
		t.Errorf("Refresh changed the grant it was given")
	}

	// A registration from the earlier flow is reused with the same server.
	if _, err := a.Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect, Client: &g.Client}); err != nil {
		t.Fatal(err)
	}
	if len(w.registers) != 1 {
		t.Errorf("registered %d times; want the earlier registration reused", len(w.registers))
	}
}

func cmpIgnore(fields ...string) cmp.Option {
	return cmp.FilterPath(func(p cmp.Path) bool {
		for _, f := range fields {
			if p.Last().String() == "."+f {
				return true
			}
		}
		return false
	}, cmp.Ignore())
}

// TestAuthorizerDiscovery: the metadata is found wherever the MCP spec allows it,
// in its order, and a server with none is its own authorization server.
func TestAuthorizerDiscovery(t *testing.T) {
	tests := []struct {
		name      string
		docs      func(w *oauthWorld) map[string]any
		challenge func(w *oauthWorld) string // the 401's WWW-Authenticate, if any
		wantAuth  string                     // path of the authorization endpoint
		wantToken string
		wantRes   func(w *oauthWorld) string
	}{{
		name: "resource metadata named only in the server's 401 challenge",
		docs: func(w *oauthWorld) map[string]any {
			prm := w.prm()
			prm["authorization_servers"] = []string{w.srv.URL + "/tenant"}
			meta := w.asMeta()
			meta["issuer"], meta["authorization_endpoint"] = w.srv.URL+"/tenant", w.srv.URL+"/oidc/auth"
			return map[string]any{"/meta/tickets-prm": prm, "/.well-known/oauth-authorization-server/tenant": meta}
		},
		challenge: func(w *oauthWorld) string {
			return `Bearer resource_metadata="` + w.srv.URL + `/meta/tickets-prm"`
		},
		wantAuth: "/oidc/auth", wantToken: "/token", wantRes: func(w *oauthWorld) string { return w.url() },
	}, {
		name: "resource metadata at the path, oauth metadata",
		docs: func(w *oauthWorld) map[string]any {
			return map[string]any{"/.well-known/oauth-protected-resource/mcp": w.prm(), "/.well-known/oauth-authorization-server": w.asMeta()}
		},
		wantAuth: "/authorize", wantToken: "/token", wantRes: func(w *oauthWorld) string { return w.url() },
	}, {
		name: "resource metadata at the root, OpenID configuration",
		docs: func(w *oauthWorld) map[string]any {
			prm := w.prm()
			prm["resource"] = w.srv.URL
			meta := w.asMeta()
			meta["authorization_endpoint"] = w.srv.URL + "/oidc/auth"
			return map[string]any{"/.well-known/oauth-protected-resource": prm, "/.well-known/openid-configuration": meta}
		},
		wantAuth: "/oidc/auth", wantToken: "/token", wantRes: func(w *oauthWorld) string { return w.srv.URL },
	}, {
		name: "no resource metadata: metadata at the server's root",
		docs: func(w *oauthWorld) map[string]any {
			return map[string]any{"/.well-known/oauth-authorization-server": w.asMeta()}
		},
		wantAuth: "/authorize", wantToken: "/token", wantRes: func(w *oauthWorld) string { return w.url() },
	}, {
		name:     "no metadata at all: the 2025-03-26 endpoints",
		docs:     func(w *oauthWorld) map[string]any { return nil },
		wantAuth: "/authorize", wantToken: "/token", wantRes: func(w *oauthWorld) string { return w.url() },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newOAuthWorld(t)
			for k, v := range tt.docs(w) {
				w.docs[k] = v
			}
			if tt.challenge != nil {
				w.challenge = tt.challenge(w)
			}
			p, err := (&mcp.Authorizer{}).Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect})
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(p.AuthURL)
			if u.Path != tt.wantAuth || p.TokenURL != w.srv.URL+tt.wantToken || p.Resource != tt.wantRes(w) {
				t.Errorf("authorization %s, token %s, resource %s; want %s, %s, %s", u.Path, p.TokenURL, p.Resource, tt.wantAuth, w.srv.URL+tt.wantToken, tt.wantRes(w))
			}
			code, state, iss := authorize(t, p)
			if _, err := (&mcp.Authorizer{}).Finish(t.Context(), p, code, state, iss); err != nil {
				t.Errorf("Finish: %v", err)
			}
		})
	}
}

// TestAuthorizerRefusesAnotherResource: metadata that names another resource
// stops the flow before any registration or authorization.
func TestAuthorizerRefusesAnotherResource(t *testing.T) {
	w := newOAuthWorld(t)
	prm := w.prm()
	prm["resource"] = "https://evil.example/mcp"
	w.docs["/.well-known/oauth-protected-resource/mcp"] = prm
	w.docs["/.well-known/oauth-authorization-server"] = w.asMeta()
	_, err := (&mcp.Authorizer{}).Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect})
	if err == nil || !strings.Contains(err.Error(), "not for this server") {
		t.Errorf("Begin: %v; want a refusal of the metadata", err)
	}
	if len(w.registers) != 0 {
		t.Errorf("registered a client with an unverified server")
	}
}

// TestAuthorizerScopes: the challenge's scope first, then the resource's
// scopes_supported, then the config's; none is no scope parameter;
// offline_access where the authorization server offers it; earlier grants kept.
func TestAuthorizerScopes(t *testing.T) {
	tests := []struct {
		name      string
		challenge string
		prm       []string
		config    string
		offline   bool
		granted   []string
		want      string // the scope parameter; "-" = none
	}{
		{name: "challenge", challenge: `Bearer scope="a b"`, prm: []string{"c"}, config: "d", want: "a b"},
		{name: "scopes_supported", prm: []string{"c"}, config: "d", want: "c"},
		{name: "config", config: "d e", want: "d e"},
		{name: "none", want: "-"},
		{name: "offline_access", prm: []string{"c"}, offline: true, want: "c offline_access"},
		{name: "step-up keeps the granted", challenge: `Bearer error="insufficient_scope", scope="b"`, granted: []string{"a"}, want: "a b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newOAuthWorld(t)
			w.docs["/.well-known/oauth-protected-resource/mcp"] = w.prm(tt.prm...)
			meta := w.asMeta()
			if tt.offline {
				meta["scopes_supported"] = []string{"c", "offline_access"}
			}
			w.docs["/.well-known/oauth-authorization-server"] = meta
			r := mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect, OAuth: &mcp.OAuthConfig{Scope: tt.config}, Granted: tt.granted}
			if tt.challenge != "" {
				r.Challenge = []string{tt.challenge}
			}
			p, err := (&mcp.Authorizer{}).Begin(t.Context(), r)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := url.Parse(p.AuthURL)
			got, ok := u.Query()["scope"]
			switch {
			case tt.want == "-" && ok:
				t.Errorf("scope %q; want no scope parameter", got)
			case tt.want != "-" && (len(got) != 1 || got[0] != tt.want):
				t.Errorf("scope %q; want %q", got, tt.want)
			}
		})
	}
}

// TestAuthorizerFinishChecks: a callback with another state, or an issuer the
// server did not announce, is refused before any token request.
func TestAuthorizerFinishChecks(t *testing.T) {
	w := newOAuthWorld(t)
	meta := w.asMeta()
	meta["authorization_response_iss_parameter_supported"] = true
	w.docs["/.well-known/oauth-authorization-server"] = meta
	a := &mcp.Authorizer{}
	p, err := a.Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	code, state, _ := authorize(t, p)
	if _, err := a.Finish(t.Context(), p, code, "forged", w.srv.URL); !errors.Is(err, mcp.ErrStateMismatch) {
		t.Errorf("Finish with another state: %v; want ErrStateMismatch", err)
	}
	if _, err := a.Finish(t.Context(), p, code, state, ""); err == nil {
		t.Errorf("Finish without the advertised iss: want an error")
	}
	if _, err := a.Finish(t.Context(), p, code, state, "https://other.example"); err == nil {
		t.Errorf("Finish with another issuer: want an error")
	}
	if len(w.tokenReqs) != 0 {
		t.Errorf("%d token requests; want none", len(w.tokenReqs))
	}
	if _, err := a.Finish(t.Context(), p, code, state, w.srv.URL); err != nil {
		t.Errorf("Finish: %v", err)
	}
}

// TestAuthorizerRevokedRefresh: a refresh the server refuses is ErrGrantRevoked,
// and Revoke revokes the refresh token first, then the access token.
func TestAuthorizerRevokedRefresh(t *testing.T) {
	w := newOAuthWorld(t)
	w.rotate = true
	w.docs["/.well-known/oauth-authorization-server"] = w.asMeta()
	a := &mcp.Authorizer{}
	p, err := a.Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect})
	if err != nil {
		t.Fatal(err)
	}
	code, state, iss := authorize(t, p)
	g, err := a.Finish(t.Context(), p, code, state, iss)
	if err != nil {
		t.Fatal(err)
	}
	g2, err := a.Refresh(t.Context(), g)
	if err != nil {
		t.Fatal(err)
	}
	if g2.RefreshToken == g.RefreshToken {
		t.Errorf("refresh token %q kept; want the rotated one", g2.RefreshToken)
	}
	if _, err := a.Refresh(t.Context(), g); !errors.Is(err, mcp.ErrGrantRevoked) {
		t.Errorf("refresh with the rotated-out token: %v; want ErrGrantRevoked", err)
	}
	if err := a.Revoke(t.Context(), g2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{g2.RefreshToken, g2.AccessToken}, w.revoked); diff != "" {
		t.Errorf("revoked (-want +got):\n%s", diff)
	}
	if _, err := a.Refresh(t.Context(), g2); !errors.Is(err, mcp.ErrGrantRevoked) {
		t.Errorf("refresh after revoking: %v; want ErrGrantRevoked", err)
	}
	g2.RevocationURL = ""
	if err := a.Revoke(t.Context(), g2); err != nil {
		t.Errorf("Revoke without an endpoint: %v; want nil", err)
	}
}

// TestAuthorizerPreRegistered: the config's client is used instead of a
// registration, authenticating as the config or the server's metadata says.
func TestAuthorizerPreRegistered(t *testing.T) {
	tests := []struct {
		name      string
		method    string   // the config's
		supported []string // the server's
		wantBasic bool
	}{
		{name: "basic by default", wantBasic: true},
		{name: "post where only post is supported", supported: []string{"client_secret_post"}},
		{name: "config's method", method: "client_secret_post", supported: []string{"client_secret_basic"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newOAuthWorld(t)
			meta := w.asMeta()
			if tt.supported != nil {
				meta["token_endpoint_auth_methods_supported"] = tt.supported
			}
			w.docs["/.well-known/oauth-authorization-server"] = meta
			a := &mcp.Authorizer{}
			p, err := a.Begin(t.Context(), mcp.BeginRequest{ServerURL: w.url(), RedirectURI: testRedirect,
				OAuth: &mcp.OAuthConfig{ClientID: "pre id", ClientSecret: "s&cret", TokenEndpointAuthMethod: tt.method}})
			if err != nil {
				t.Fatal(err)
			}
			if len(w.registers) != 0 {
				t.Errorf("registered a client; want the pre-registered one")
			}
			code, state, iss := authorize(t, p)
			if _, err := a.Finish(t.Context(), p, code, state, iss); err != nil {
				t.Fatal(err)
			}
			r := w.tokenReqs[0]
			id, secret, basic := r.BasicAuth()
			if basic != tt.wantBasic {
				t.Fatalf("basic auth %v; want %v", basic, tt.wantBasic)
			}
			if basic {
				id, _ = url.QueryUnescape(id)
				secret, _ = url.QueryUnescape(secret)
			} else {
				id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
			}
			if id != "pre id" || secret != "s&cret" {
				t.Errorf("client %q secret %q; want the configured ones", id, secret)
			}
		})
	}
}

// fakeAuthorization is an mcp.Authorization that hands out "token-N" after its
// N-th Unauthorized of a request sent the first time.
type fakeAuthorization struct {
	mu      sync.Mutex
	n       int
	calls   []string // the WWW-Authenticate of each Unauthorized
	refused []string // the token each Unauthorized was told was refused, and "(resent)" when it was resent
	err     error    // Token's error, if any
	giveUp  error    // what Unauthorized of a resent request returns
}

func (f *fakeAuthorization) Token(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil || f.n == 0 {
		return "", f.err
	}
	return fmt.Sprintf("token-%d", f.n), nil
}

func (f *fakeAuthorization) Unauthorized(_ context.Context, token string, resp *http.Response, resent bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, _ := io.ReadAll(resp.Body); !strings.Contains(string(b), "invalid_token") && !strings.Contains(string(b), "insufficient_scope") {
		return fmt.Errorf("the challenge's body %q is gone", b)
	}
	f.calls = append(f.calls, resp.Header.Get("WWW-Authenticate"))
	if resent {
		f.refused = append(f.refused, token+" (resent)")
		return f.giveUp
	}
	f.refused = append(f.refused, token)
	f.n++
	return nil
}

// bearerServer is an MCP server (both HTTP transports) with one tool, "add",
// that wants token-1 or later for everything and token-2 or later for
// tools/call; with stuck, tools/call is refused whatever the token.
func bearerServer(t *testing.T, stuck bool) (streamable, sse string) {
	s := sdk.NewServer(&sdk.Implementation{Name: "bearer"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "add"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
	})
	guard := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			level := 0
			if n, err := fmt.Sscanf(r.Header.Get("Authorization"), "Bearer token-%d", &level); n != 1 || err != nil {
				level = 0
			}
			if level == 0 {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://`+r.Host+`/.well-known/oauth-protected-resource"`)
				http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
				return
			}
			if r.Method == http.MethodPost && r.Body != nil {
				body, _ := io.ReadAll(r.Body)
				r.Body = io.NopCloser(bytes.NewReader(body))
				if strings.Contains(string(body), `"tools/call"`) && (level < 2 || stuck) {
					w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="tools:call"`)
					http.Error(w, `{"error":"insufficient_scope"}`, http.StatusForbidden)
					return
				}
			}
			h.ServeHTTP(w, r)
		})
	}
	st := httptest.NewServer(guard(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	t.Cleanup(st.Close)
	ss := httptest.NewServer(guard(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	t.Cleanup(ss.Close)
	return st.URL, ss.URL
}

// TestAuthorizationOnHTTPTransports: both HTTP transports send the bearer
// token, let the Authorization act on a 401 and on a 403 insufficient_scope,
// and resend the request (with its body) once.
func TestAuthorizationOnHTTPTransports(t *testing.T) {
	streamable, sse := bearerServer(t, false)
	for _, tt := range []struct {
		transport string
		url       string
	}{{mcp.TransportStreamableHTTP, streamable}, {mcp.TransportSSE, sse}} {
		t.Run(tt.transport, func(t *testing.T) {
			auth := &fakeAuthorization{}
			s, err := mcp.Connect(t.Context(), mcp.ServerConfig{Name: "b", Transport: tt.transport, URL: tt.url}, mcp.ConnectOptions{Authorization: auth})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			res, err := s.CallTool(t.Context(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{}})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError {
				t.Fatalf("tool error: %v", res.Content)
			}
			auth.mu.Lock()
			defer auth.mu.Unlock()
			if len(auth.calls) != 2 || !strings.Contains(auth.calls[1], "insufficient_scope") {
				t.Errorf("Unauthorized calls %q; want the 401, then the step-up", auth.calls)
			}
		})
	}
}

// TestAuthorizationStepUpIsBounded: a server that keeps refusing gets one new
// authorization per request, the Authorization hears that the resent request
// was refused too, and the request fails with what it says.
func TestAuthorizationStepUpIsBounded(t *testing.T) {
	streamable, _ := bearerServer(t, true)
	giveUp := errors.New("connect again")
	auth := &fakeAuthorization{giveUp: giveUp}
	s, err := mcp.Connect(t.Context(), mcp.ServerConfig{Name: "b", Transport: mcp.TransportStreamableHTTP, URL: streamable}, mcp.ConnectOptions{Authorization: auth})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := func() int { auth.mu.Lock(); defer auth.mu.Unlock(); return auth.n }()
	_, err = s.CallTool(t.Context(), &sdk.CallToolParams{Name: "add", Arguments: map[string]any{}})
	if !errors.Is(err, giveUp) {
		t.Fatalf("the call: %v; want the Authorization's error for the resent request", err)
	}
	auth.mu.Lock()
	defer auth.mu.Unlock()
	if auth.n != before+1 {
		t.Errorf("%d authorizations for one refused call; want 1", auth.n-before)
	}
	want := []string{fmt.Sprintf("token-%d", before), fmt.Sprintf("token-%d (resent)", before+1)}
	if got := auth.refused[len(auth.refused)-2:]; !slices.Equal(got, want) {
		t.Errorf("refused tokens %q; want %q", got, want)
	}
}

// TestAuthorizationErrors: a 401 without Authorization says how to configure
// OAuth; Token's *AuthRequiredError reaches the caller of Connect.
func TestAuthorizationErrors(t *testing.T) {
	streamable, _ := bearerServer(t, false)
	cfg := mcp.ServerConfig{Name: "b", Transport: mcp.TransportStreamableHTTP, URL: streamable}
	_, err := mcp.Connect(t.Context(), cfg, mcp.ConnectOptions{})
	if !errors.Is(err, mcp.ErrOAuthNotConfigured) || !strings.Contains(err.Error(), "requiresOAuth: true") {
		t.Errorf("Connect without Authorization: %v; want ErrOAuthNotConfigured", err)
	}
	_, err = mcp.Connect(t.Context(), cfg, mcp.ConnectOptions{Authorization: &fakeAuthorization{err: &mcp.AuthRequiredError{Server: "b", Reason: "not connected"}}})
	var are *mcp.AuthRequiredError
	if !errors.As(err, &are) || are.Server != "b" {
		t.Fatalf("Connect: %v; want an *AuthRequiredError", err)
	}
	if want := "MCP server \"b\" needs you to connect your account: not connected (connect it on the Connections page, or with `relay mcp auth b`)"; are.Error() != want {
		t.Errorf("message %q; want %q", are.Error(), want)
	}
}

// TestAuthorizerClientCredentials: a pre-registered client gets a grant for
// itself in one token request, with its scopes and the resource; a wrong secret
// is the server's refusal.
func TestAuthorizerClientCredentials(t *testing.T) {
	w := newOAuthWorld(t)
	w.docs["/.well-known/oauth-protected-resource/mcp"] = w.prm("jobs")
	w.docs["/.well-known/oauth-authorization-server"] = w.asMeta()
	a := &mcp.Authorizer{}
	g, err := a.ClientCredentials(t.Context(), mcp.BeginRequest{ServerURL: w.url(), OAuth: &mcp.OAuthConfig{ClientID: "machine", ClientSecret: "s"}})
	if err != nil {
		t.Fatal(err)
	}
	if g.AccessToken != "access-1" || g.RefreshToken != "" || !cmp.Equal(g.Scopes, []string{"jobs"}) || !g.Expiry.IsZero() {
		t.Errorf("grant %+v", g)
	}
	if f := w.tokenReqs[0].PostForm; f.Get("resource") != w.url() || f.Get("scope") != "jobs" {
		t.Errorf("token request %v: want the resource and the scope", f)
	}
	_, err = a.ClientCredentials(t.Context(), mcp.BeginRequest{ServerURL: w.url(), OAuth: &mcp.OAuthConfig{ClientID: "machine", ClientSecret: "wrong"}})
	var te *mcp.TokenError
	if !errors.As(err, &te) || te.Code != "invalid_client" {
		t.Errorf("with a wrong secret: %v; want invalid_client", err)
	}
	if strings.Contains(fmt.Sprint(err), "wrong") {
		t.Errorf("the error %q quotes the secret", err)
	}
}
