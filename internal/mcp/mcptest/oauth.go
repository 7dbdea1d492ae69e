package mcptest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuthOptions configure an OAuth-protected test server.
type OAuthOptions struct {
	// TokenTTL is how long an access token lives (default 5 s).
	TokenTTL time.Duration
	// Now is the clock of the authorization server (default time.Now).
	Now func() time.Time
	// DefaultLogin, when set, is the user an authorization request without a
	// login parameter signs in as: a real browser sent to /authorize (the web
	// UI's tests) cannot add one.
	DefaultLogin string
	// ClientID and ClientSecret, when set, are a pre-registered confidential
	// client: it may use any redirect URI, and its token requests must carry
	// the secret (client_secret_basic or client_secret_post).
	ClientID, ClientSecret string
}

// OAuthServer is an MCP server (the test server's tools, plus "subject",
// which returns the user the call's access token was issued for) behind the
// go-sdk's bearer-token middleware, with an authorization server of its own:
// metadata discovery (RFC 9728, RFC 8414), dynamic client registration,
// authorization code with PKCE (the "browser" names its user with a login
// parameter; nobody is asked), refresh tokens that rotate (a refresh token
// works once), short-lived access tokens and revocation (RFC 7009). It counts
// the refresh requests it receives.
type OAuthServer struct {
	// MCPURL is the streamable HTTP endpoint of the MCP server.
	MCPURL string
	// Issuer is the authorization server's issuer (its base URL).
	Issuer string

	ttl          time.Duration
	now          func() time.Time
	defaultLogin string
	clientID     string // the pre-registered client, if any
	clientSecret string

	mu        sync.Mutex
	clients   map[string][]string // client id → redirect URIs
	codes     map[string]codeGrant
	access    map[string]issued // access token → what it grants
	refresh   map[string]issued // refresh token → what it grants
	refreshes int
	used      int    // refresh requests with a refresh token already used or revoked
	required  string // a scope every token must have (RequireScope), beside "tools"
}

type codeGrant struct {
	client, redirect, challenge, subject, resource string
	scopes                                         []string
}

type issued struct {
	client, subject string
	scopes          []string
	expiry          time.Time
}

// StartOAuth serves an OAuth-protected MCP server and its authorization
// server on a local port for the life of the test.
func StartOAuth(t testing.TB, opts OAuthOptions) *OAuthServer {
	t.Helper()
	s := &OAuthServer{
		ttl: opts.TokenTTL, now: opts.Now, defaultLogin: opts.DefaultLogin,
		clientID: opts.ClientID, clientSecret: opts.ClientSecret,
		clients: map[string][]string{}, codes: map[string]codeGrant{},
		access: map[string]issued{}, refresh: map[string]issued{},
	}
	if s.ttl <= 0 {
		s.ttl = 5 * time.Second
	}
	if s.now == nil {
		s.now = time.Now
	}
	srv := NewServer(Options{Name: "oauth", ExtraTools: []Tool{{
		Tool: &sdk.Tool{
			Name:        "subject",
			Description: "Returns the user the call's access token was issued for",
			InputSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		},
		Handler: func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			who := ""
			if req.Extra != nil && req.Extra.TokenInfo != nil {
				who = req.Extra.TokenInfo.UserID
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: who}}}, nil
		},
	}}})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(func() {
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
		hs.CloseClientConnections()
		hs.Close()
	})
	s.Issuer = hs.URL
	s.MCPURL = hs.URL + StreamablePath
	prm := hs.URL + "/.well-known/oauth-protected-resource" + StreamablePath
	protect := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: prm})
	mux.Handle(StreamablePath, s.scoped(prm, protect(StreamableHandler(func() *sdk.Server { return srv }))))
	mux.Handle("/.well-known/oauth-protected-resource"+StreamablePath, auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: s.MCPURL, AuthorizationServers: []string{hs.URL}, ScopesSupported: []string{"tools"},
	}))
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	mux.HandleFunc("/revoke", s.revoke)
	return s
}

// Refreshes counts the refresh requests the authorization server received.
func (s *OAuthServer) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// ReusedRefreshes counts refresh requests that came with a refresh token
// already used or revoked: two clients refreshing one grant at once.
func (s *OAuthServer) ReusedRefreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// Tokens counts the access tokens issued to subject that are still valid.
func (s *OAuthServer) Tokens(subject string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, is := range s.access {
		if is.subject == subject && s.now().Before(is.expiry) {
			n++
		}
	}
	return n
}

// RevokeUser revokes every token issued to subject, as an administrator of
// the authorization server would.
func (s *OAuthServer) RevokeUser(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range []map[string]issued{s.access, s.refresh} {
		for tok, is := range m {
			if is.subject == subject {
				delete(m, tok)
			}
		}
	}
}

// EndAccess ends every access token issued to subject before its time, and
// keeps their refresh tokens: as a server that rotates its signing keys, or
// one whose tokens live less long than its expires_in said.
func (s *OAuthServer) EndAccess(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for tok, is := range s.access {
		if is.subject == subject {
			delete(s.access, tok)
		}
	}
}

// RequireScope makes the MCP server refuse, from now on, every token
// without scope with 403 and an insufficient_scope challenge asking for
// "tools" and scope: as a server whose tools came to need more permissions.
func (s *OAuthServer) RequireScope(scope string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.required = scope
}

// scoped refuses, before h, a valid token that lacks the scope RequireScope
// asked for.
func (s *OAuthServer) scoped(prm string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		is, ok := s.access[tok]
		refused := ok && s.required != "" && !slices.Contains(is.scopes, s.required)
		required := s.required
		s.mu.Unlock()
		if refused {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="tools %s", resource_metadata=%q`, required, prm))
			http.Error(w, "insufficient scope", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Approve plays the browser of subject: it opens an authorization URL,
// and returns where the authorization server sends the browser back.
func (s *OAuthServer) Approve(ctx context.Context, authURL, subject string) (string, error) {
	u, err := url.Parse(authURL)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("login", subject)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("authorize answered %s", resp.Status)
	}
	return resp.Header.Get("Location"), nil
}

func (s *OAuthServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.access[token]
	if !ok || !s.now().Before(is.expiry) {
		return nil, fmt.Errorf("%w: unknown, expired or revoked", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{Scopes: is.scopes, Expiration: is.expiry, UserID: is.subject}, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (s *OAuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.Issuer,
		"authorization_endpoint":                s.Issuer + "/authorize",
		"token_endpoint":                        s.Issuer + "/token",
		"registration_endpoint":                 s.Issuer + "/register",
		"revocation_endpoint":                   s.Issuer + "/revoke",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"none"},
		"scopes_supported":                      []string{"tools", "offline_access"},
	})
}

func newToken() string { return rand.Text() }

func (s *OAuthServer) register(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || len(in.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris required")
		return
	}
	id := newToken()
	s.mu.Lock()
	s.clients[id] = in.RedirectURIs
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id": id, "redirect_uris": in.RedirectURIs, "token_endpoint_auth_method": "none",
		"grant_types": []string{"authorization_code", "refresh_token"},
	})
}

func (s *OAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("login") == "" && s.defaultLogin != "" {
		q.Set("login", s.defaultLogin)
	}
	s.mu.Lock()
	redirects, ok := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	pre := s.clientID != "" && q.Get("client_id") == s.clientID
	switch {
	case !ok && !pre:
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	case !pre && !slices.Contains(redirects, q.Get("redirect_uri")):
		http.Error(w, "redirect_uri not registered", http.StatusBadRequest)
		return
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		http.Error(w, "PKCE S256 required", http.StatusBadRequest)
		return
	case q.Get("login") == "":
		http.Error(w, "no user signed in", http.StatusUnauthorized)
		return
	}
	code := newToken()
	s.mu.Lock()
	s.codes[code] = codeGrant{
		client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"),
		subject: q.Get("login"), resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope")),
	}
	s.mu.Unlock()
	back, _ := url.Parse(q.Get("redirect_uri"))
	bq := back.Query()
	bq.Set("code", code)
	bq.Set("state", q.Get("state"))
	back.RawQuery = bq.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func (s *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if id, secret, ok := r.BasicAuth(); ok {
		// client_secret_basic: the form may lack client_id.
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
		r.PostForm.Set("client_id", id)
		r.PostForm.Set("client_secret", secret)
	}
	if s.clientID != "" && r.PostForm.Get("client_id") == s.clientID && r.PostForm.Get("client_secret") != s.clientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "wrong client secret")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var is issued
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		switch {
		case !ok:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used code")
			return
		case c.client != r.PostForm.Get("client_id") || c.redirect != r.PostForm.Get("redirect_uri"):
			oauthError(w, http.StatusBadRequest, "invalid_grant", "client or redirect_uri mismatch")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verifier mismatch")
			return
		}
		is = issued{client: c.client, subject: c.subject, scopes: c.scopes}
	case "refresh_token":
		s.refreshes++
		old, ok := s.refresh[r.PostForm.Get("refresh_token")]
		if !ok {
			s.used++
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown, used or revoked refresh token")
			return
		}
		delete(s.refresh, r.PostForm.Get("refresh_token")) // rotation: a refresh token works once
		is = old
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	access, refresh := newToken(), newToken()
	is.expiry = s.now().Add(s.ttl)
	s.access[access] = is
	s.refresh[refresh] = issued{client: is.client, subject: is.subject, scopes: is.scopes}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": int(s.ttl / time.Second),
		"refresh_token": refresh, "scope": strings.Join(is.scopes, " "),
	})
}

func (s *OAuthServer) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	tok := r.PostForm.Get("token")
	s.mu.Lock()
	delete(s.access, tok)
	delete(s.refresh, tok)
	s.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
