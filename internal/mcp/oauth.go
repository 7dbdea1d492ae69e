package mcp

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// OAuthConfig is a server's `oauth:` block (LibreChat's keys). It is used when
// the server does not advertise metadata, or to pin a pre-registered client.
type OAuthConfig struct {
	// AuthorizationURL and TokenURL are the authorization server's endpoints.
	// When both are set they are used instead of the advertised ones.
	AuthorizationURL string `json:"authorization_url,omitempty" yaml:"authorization_url"`
	TokenURL         string `json:"token_url,omitempty" yaml:"token_url"`
	// ClientID and ClientSecret are a pre-registered client; an empty ClientID
	// means a client ID metadata document or dynamic registration.
	ClientID     string `json:"client_id,omitempty" yaml:"client_id"`
	ClientSecret string `json:"client_secret,omitempty" yaml:"client_secret"`
	// Scope is requested when neither the server's challenge nor its metadata
	// names scopes (space-separated).
	Scope string `json:"scope,omitempty" yaml:"scope"`
	// RedirectURI overrides the callback URL Relay computes.
	RedirectURI string `json:"redirect_uri,omitempty" yaml:"redirect_uri"`
	// TokenEndpointAuthMethod is how the pre-registered client authenticates:
	// client_secret_basic, client_secret_post or none. Empty: the best the
	// authorization server advertises.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method,omitempty" yaml:"token_endpoint_auth_method"`
	// RevocationURL is the RFC 7009 revocation endpoint, when the server's
	// metadata does not name one.
	RevocationURL string `json:"revocation_endpoint,omitempty" yaml:"revocation_endpoint"`
}

// Token endpoint client authentication methods (RFC 7591 section 2).
const (
	AuthMethodBasic = "client_secret_basic"
	AuthMethodPost  = "client_secret_post"
	AuthMethodNone  = "none"
)

// OAuthClient is a client registered with an authorization server: pre-registered,
// dynamically registered, or the URL of a client ID metadata document.
type OAuthClient struct {
	ID     string `json:"id"`
	Secret string `json:"secret,omitempty"`
	// AuthMethod is how the client authenticates at the token endpoint
	// (AuthMethodBasic, AuthMethodPost or AuthMethodNone).
	AuthMethod string `json:"auth_method,omitempty"`
	// Issuer is the authorization server the client is registered with; a
	// client is reused only with the same one.
	Issuer string `json:"issuer,omitempty"`
}

// ErrGrantRevoked is the error of a refresh the authorization server refused
// (invalid_grant), or of a grant without a refresh token: the user must connect
// again.
var ErrGrantRevoked = errors.New("the authorization is no longer valid")

// ErrStateMismatch is the error of a callback whose state is not the flow's.
var ErrStateMismatch = errors.New("the authorization response's state does not match the request's")

// Authorizer runs the OAuth authorization-code flow (PKCE S256, RFC 8707
// resource) for MCP servers in two steps, Begin and Finish, so that a server
// can send the user to the authorization server and complete the flow when the
// browser comes back to its callback, maybe on another replica: what passes
// between the two steps is the JSON-serialisable Pending. See docs/mcp.md#oauth.
type Authorizer struct {
	// HTTP makes discovery, registration, token and revocation requests; nil
	// means http.DefaultClient.
	HTTP *http.Client
	// ClientName is the client_name of a dynamic registration; empty means "Relay".
	ClientName string
	// ClientIDMetadataURL is the https URL of a client ID metadata document,
	// used as the client ID with authorization servers that support them.
	ClientIDMetadataURL string
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// BeginRequest is what starts a flow.
type BeginRequest struct {
	// ServerURL is the MCP server's URL, the resource the token is for.
	ServerURL string
	// OAuth is the server's `oauth:` block; it may be nil.
	OAuth *OAuthConfig
	// RedirectURI is Relay's callback URL (OAuth.RedirectURI overrides it).
	RedirectURI string
	// Challenge holds the WWW-Authenticate values of the 401 or 403 that
	// started the flow, if one did.
	Challenge []string
	// Granted are the scopes granted earlier; a step-up keeps them.
	Granted []string
	// Client is a registration from an earlier flow, reused instead of
	// registering again when it is for the same authorization server.
	Client *OAuthClient
}

// Pending is a started flow: everything Finish needs. It holds secrets (the
// PKCE verifier, the client's secret) and must be stored as such.
type Pending struct {
	// AuthURL is where to send the user.
	AuthURL               string      `json:"auth_url"`
	State                 string      `json:"state"`
	Verifier              string      `json:"verifier"`
	Issuer                string      `json:"issuer"`
	Resource              string      `json:"resource"`
	TokenURL              string      `json:"token_url"`
	RevocationURL         string      `json:"revocation_url,omitempty"`
	RedirectURI           string      `json:"redirect_uri"`
	Scopes                []string    `json:"scopes,omitempty"`
	Client                OAuthClient `json:"client"`
	IssParameterSupported bool        `json:"iss_parameter_supported,omitempty"`
}

// Grant is what a finished flow yields: the tokens, and what is needed to
// refresh or revoke them. It holds secrets and must be stored as such.
type Grant struct {
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token,omitempty"`
	TokenType    string `json:"token_type,omitempty"`
	// Expiry is when the access token expires; zero when the server did not say.
	Expiry        time.Time   `json:"expiry,omitzero"`
	Scopes        []string    `json:"scopes,omitempty"`
	Client        OAuthClient `json:"client"`
	Issuer        string      `json:"issuer"`
	Resource      string      `json:"resource"`
	TokenURL      string      `json:"token_url"`
	RevocationURL string      `json:"revocation_url,omitempty"`
	// Challenge is the WWW-Authenticate of a refusal that asked for more
	// scope than was granted. Such a grant is kept without its tokens, so
	// that the next authorization (BeginRequest.Challenge and Granted) asks
	// for the scopes granted before and those the server asked for.
	Challenge []string `json:"challenge,omitempty"`
}

// expiryLeeway is how long before its expiry an access token counts as expired,
// so that it is not sent only to expire on the way.
const expiryLeeway = 30 * time.Second

// Expired reports whether the access token has expired at now (or will within
// a few seconds).
func (g *Grant) Expired(now time.Time) bool {
	return !g.Expiry.IsZero() && !now.Add(expiryLeeway).Before(g.Expiry)
}

func (a *Authorizer) http() *http.Client {
	if a.HTTP != nil {
		return a.HTTP
	}
	return http.DefaultClient
}

func (a *Authorizer) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Begin discovers the server's authorization server, registers a client if
// need be, chooses the scopes, and returns the flow with the URL to send the
// user to. See docs/mcp.md#oauth for the order of each step.
func (a *Authorizer) Begin(ctx context.Context, r BeginRequest) (*Pending, error) {
	if r.ServerURL == "" {
		return nil, errors.New("starting OAuth: no server URL")
	}
	cfg := r.OAuth
	if cfg == nil {
		cfg = &OAuthConfig{}
	}
	redirect := r.RedirectURI
	if cfg.RedirectURI != "" {
		redirect = cfg.RedirectURI
	}
	if redirect == "" {
		return nil, errors.New("starting OAuth: no redirect URI")
	}
	// A challenge that does not parse is only a hint lost: discovery goes on
	// from the well-known locations.
	challenges, _ := oauthex.ParseWWWAuthenticate(a.challenge(ctx, r))

	prm, legacy, err := a.resourceMetadata(ctx, challenges, r.ServerURL)
	if err != nil {
		return nil, err
	}
	asm, err := a.serverMetadata(ctx, prm.AuthorizationServers[0], legacy, cfg)
	if err != nil {
		return nil, err
	}
	client, err := a.client(ctx, asm, cfg, r.Client, redirect)
	if err != nil {
		return nil, err
	}

	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if len(scopes) == 0 {
		scopes = strings.Fields(cfg.Scope)
	}
	// Relay keeps connections for long: it asks for a refresh token wherever
	// the authorization server says how.
	if slices.Contains(asm.ScopesSupported, "offline_access") {
		scopes = append(slices.Clone(scopes), "offline_access")
	}
	scopes = unionScopes(r.Granted, scopes)

	p := &Pending{
		State:                 rand.Text(),
		Verifier:              oauth2.GenerateVerifier(),
		Issuer:                asm.Issuer,
		Resource:              prm.Resource,
		TokenURL:              asm.TokenEndpoint,
		RevocationURL:         asm.RevocationEndpoint,
		RedirectURI:           redirect,
		Scopes:                scopes,
		Client:                client,
		IssParameterSupported: asm.AuthorizationResponseIssParameterSupported,
	}
	oc := oauth2.Config{
		ClientID:    client.ID,
		Endpoint:    oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint},
		RedirectURL: redirect,
		Scopes:      scopes,
	}
	p.AuthURL = oc.AuthCodeURL(p.State, oauth2.S256ChallengeOption(p.Verifier), oauth2.SetAuthURLParam("resource", p.Resource))
	return p, nil
}

// ClientCredentials gets a grant for the `oauth:` block's pre-registered
// client itself, with no user (the client_credentials grant, RFC 6749 section
// 4.4): discovery and scopes as for Begin, then one token request with the
// client's authentication, the scopes and the resource. Such a grant has no
// refresh token: when it expires, ask for another.
func (a *Authorizer) ClientCredentials(ctx context.Context, r BeginRequest) (*Grant, error) {
	if r.OAuth == nil || r.OAuth.ClientID == "" {
		return nil, errors.New("client credentials: the server's oauth block names no client_id")
	}
	if r.ServerURL == "" {
		return nil, errors.New("client credentials: no server URL")
	}
	challenges, _ := oauthex.ParseWWWAuthenticate(a.challenge(ctx, r))
	prm, legacy, err := a.resourceMetadata(ctx, challenges, r.ServerURL)
	if err != nil {
		return nil, err
	}
	asm, err := a.serverMetadata(ctx, prm.AuthorizationServers[0], legacy, r.OAuth)
	if err != nil {
		return nil, err
	}
	client, err := a.client(ctx, &oauthex.AuthServerMeta{Issuer: asm.Issuer, TokenEndpointAuthMethodsSupported: asm.TokenEndpointAuthMethodsSupported}, r.OAuth, nil, "")
	if err != nil {
		return nil, err
	}
	scopes := challengeScopes(challenges)
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if len(scopes) == 0 {
		scopes = strings.Fields(r.OAuth.Scope)
	}
	scopes = unionScopes(r.Granted, scopes)
	form := url.Values{"grant_type": {"client_credentials"}, "resource": {prm.Resource}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	tok, err := a.token(ctx, asm.TokenEndpoint, client, form)
	if err != nil {
		return nil, fmt.Errorf("client credentials: %w", err)
	}
	g := &Grant{
		Scopes:        scopes,
		Client:        client,
		Issuer:        asm.Issuer,
		Resource:      prm.Resource,
		TokenURL:      asm.TokenEndpoint,
		RevocationURL: asm.RevocationEndpoint,
	}
	a.apply(g, tok)
	return g, nil
}

// probeTimeout bounds the request that asks a server for its challenge: a
// user waits for it.
const probeTimeout = 3 * time.Second

// challenge is r.Challenge or, when the flow was not started by a refusal,
// the WWW-Authenticate of the server's 401 to a GET without a token (within
// probeTimeout, not redirected), as an MCP client meets it when it first
// connects: the only place some servers name their resource metadata. A
// server that answers anything else has none.
func (a *Authorizer) challenge(ctx context.Context, r BeginRequest) []string {
	if len(r.Challenge) > 0 {
		return r.Challenge
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.ServerURL, nil)
	if err != nil {
		return nil
	}
	req.Header.Set("Accept", "text/event-stream")
	// The server's own answer, never one it redirects to: another host's
	// challenge is not the server's.
	c := *a.http()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close() // a server that needs no token may have begun a stream
	if resp.StatusCode != http.StatusUnauthorized {
		return nil
	}
	return resp.Header.Values("WWW-Authenticate")
}

// resourceMetadata finds the protected resource metadata (RFC 9728) of the
// server at serverURL: at the challenge's resource_metadata, then at the
// well-known location with the server's path, then at the root. A server with
// none is its own authorization server (the 2025-03-26 revision of the MCP spec):
// legacy is then true.
func (a *Authorizer) resourceMetadata(ctx context.Context, challenges []oauthex.Challenge, serverURL string) (prm *oauthex.ProtectedResourceMetadata, legacy bool, err error) {
	u, err := url.Parse(serverURL)
	if err != nil {
		return nil, false, fmt.Errorf("starting OAuth: the server URL: %w", err)
	}
	type candidate struct{ url, resource string }
	var candidates []candidate
	if m := challengeParam(challenges, "resource_metadata"); m != "" {
		candidates = append(candidates, candidate{m, serverURL})
	}
	wk := *u
	wk.RawQuery, wk.Fragment, wk.RawPath = "", "", ""
	if p := strings.Trim(u.Path, "/"); p != "" {
		wk.Path = "/.well-known/oauth-protected-resource/" + p
		candidates = append(candidates, candidate{wk.String(), serverURL})
	}
	wk.Path = "/.well-known/oauth-protected-resource"
	root := *u
	root.Path, root.RawPath, root.RawQuery, root.Fragment = "", "", "", ""
	candidates = append(candidates, candidate{wk.String(), root.String()})

	for _, c := range candidates {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, a.http())
		if err != nil {
			// Metadata for another resource is a server that would have the
			// user grant a token to someone else: never go on from it.
			if strings.Contains(err.Error(), "got metadata resource") {
				return nil, false, fmt.Errorf("starting OAuth: the protected resource metadata is not for this server: %w", err)
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, false, fmt.Errorf("starting OAuth: the protected resource metadata at %s names no authorization server", c.url)
		}
		return prm, false, nil
	}
	return &oauthex.ProtectedResourceMetadata{Resource: serverURL, AuthorizationServers: []string{root.String()}}, true, nil
}

// serverMetadata fetches the authorization server's metadata (RFC 8414, then
// OpenID Connect discovery). Without any, the `oauth:` block's endpoints are
// used, or else the 2025-03-26 defaults: /authorize, /token and /register at the
// authorization server's root. For a legacy server (see resourceMetadata) the
// metadata at its root may name an issuer with a path on the same origin.
func (a *Authorizer) serverMetadata(ctx context.Context, issuer string, legacy bool, cfg *OAuthConfig) (*oauthex.AuthServerMeta, error) {
	pinned := cfg.AuthorizationURL != "" && cfg.TokenURL != ""
	var asm *oauthex.AuthServerMeta
	var err error
	if legacy {
		asm, err = a.legacyServerMetadata(ctx, issuer)
	}
	if asm == nil && err == nil {
		asm, err = auth.GetAuthServerMetadata(ctx, issuer, a.http())
	}
	if err != nil && !pinned {
		return nil, fmt.Errorf("starting OAuth: the authorization server's metadata: %w", err)
	}
	if asm == nil {
		base := strings.TrimSuffix(issuer, "/")
		asm = &oauthex.AuthServerMeta{
			Issuer:                issuer,
			AuthorizationEndpoint: base + "/authorize",
			TokenEndpoint:         base + "/token",
			RegistrationEndpoint:  base + "/register",
		}
	}
	if pinned {
		asm.AuthorizationEndpoint, asm.TokenEndpoint = cfg.AuthorizationURL, cfg.TokenURL
	}
	if asm.RevocationEndpoint == "" {
		asm.RevocationEndpoint = cfg.RevocationURL
	}
	return asm, nil
}

// legacyServerMetadata fetches the metadata at the root of a server that is
// its own authorization server (the 2025-03-26 revision of the MCP spec), which
// may name an issuer below the root, such as https://host/oauth. An issuer on
// another origin is refused. It returns nil, nil when there is none.
func (a *Authorizer) legacyServerMetadata(ctx context.Context, root string) (*oauthex.AuthServerMeta, error) {
	metaURL := strings.TrimSuffix(root, "/") + "/.well-known/oauth-authorization-server"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metaURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := a.http().Do(req)
	if err != nil {
		return nil, nil // left to the ordinary discovery, which says why
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&doc) != nil || doc.Issuer == "" {
		return nil, nil
	}
	iu, err1 := url.Parse(doc.Issuer)
	ru, err2 := url.Parse(root)
	if err1 != nil || err2 != nil || iu.Scheme != ru.Scheme || iu.Host != ru.Host {
		return nil, nil
	}
	// oauthex checks the document again against the issuer it names: its
	// endpoints, and PKCE.
	return oauthex.GetAuthServerMeta(ctx, metaURL, doc.Issuer, a.http())
}

// client chooses the client to authorize as: a client ID metadata document
// where the authorization server supports them, the `oauth:` block's
// pre-registered client, an earlier registration with the same authorization
// server, or a new dynamic registration (RFC 7591).
func (a *Authorizer) client(ctx context.Context, asm *oauthex.AuthServerMeta, cfg *OAuthConfig, earlier *OAuthClient, redirect string) (OAuthClient, error) {
	if a.ClientIDMetadataURL != "" && asm.ClientIDMetadataDocumentSupported {
		return OAuthClient{ID: a.ClientIDMetadataURL, AuthMethod: AuthMethodNone, Issuer: asm.Issuer}, nil
	}
	if cfg.ClientID != "" {
		method := cfg.TokenEndpointAuthMethod
		switch {
		case method != "":
		case cfg.ClientSecret == "":
			method = AuthMethodNone
		case slices.Contains(asm.TokenEndpointAuthMethodsSupported, AuthMethodPost) && !slices.Contains(asm.TokenEndpointAuthMethodsSupported, AuthMethodBasic):
			method = AuthMethodPost
		default:
			method = AuthMethodBasic // RFC 7591's default
		}
		return OAuthClient{ID: cfg.ClientID, Secret: cfg.ClientSecret, AuthMethod: method, Issuer: asm.Issuer}, nil
	}
	if earlier != nil && earlier.ID != "" && (earlier.Issuer == "" || issuersEqual(earlier.Issuer, asm.Issuer)) {
		return *earlier, nil
	}
	if asm.RegistrationEndpoint == "" {
		return OAuthClient{}, errors.New("starting OAuth: the authorization server allows no dynamic client registration: configure a client (oauth.client_id)")
	}
	name := a.ClientName
	if name == "" {
		name = "Relay"
	}
	reg, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs:    []string{redirect},
		ClientName:      name,
		GrantTypes:      []string{"authorization_code", "refresh_token"},
		ResponseTypes:   []string{"code"},
		ApplicationType: applicationType(redirect),
	}, a.http())
	if err != nil {
		return OAuthClient{}, fmt.Errorf("starting OAuth: registering a client: %w", err)
	}
	method := reg.TokenEndpointAuthMethod
	if method == "" {
		method = AuthMethodBasic
		if reg.ClientSecret == "" {
			method = AuthMethodNone
		}
	}
	return OAuthClient{ID: reg.ClientID, Secret: reg.ClientSecret, AuthMethod: method, Issuer: asm.Issuer}, nil
}

// applicationType is the OpenID Connect application_type of a redirect URI: a
// loopback callback is a native application's.
func applicationType(redirect string) string {
	u, err := url.Parse(redirect)
	if err != nil {
		return ""
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return "native"
	}
	if h := u.Hostname(); h == "localhost" || net.ParseIP(h).IsLoopback() {
		return "native"
	}
	return "web"
}

// Finish completes a flow with the authorization server's answer at the
// callback: it checks the state and the issuer (RFC 9207), then exchanges the
// code for tokens.
func (a *Authorizer) Finish(ctx context.Context, p *Pending, code, state, iss string) (*Grant, error) {
	if p == nil {
		return nil, errors.New("finishing OAuth: no flow")
	}
	if subtle.ConstantTimeCompare([]byte(state), []byte(p.State)) != 1 {
		return nil, fmt.Errorf("finishing OAuth: %w", ErrStateMismatch)
	}
	if err := checkIssuer(iss, p.Issuer, p.IssParameterSupported); err != nil {
		return nil, fmt.Errorf("finishing OAuth: %w", err)
	}
	if code == "" {
		return nil, errors.New("finishing OAuth: the authorization response has no code")
	}
	form := url.Values{
		"grant_type":    {"authorization_code"},
		"code":          {code},
		"redirect_uri":  {p.RedirectURI},
		"code_verifier": {p.Verifier},
	}
	if p.Resource != "" {
		form.Set("resource", p.Resource)
	}
	tok, err := a.token(ctx, p.TokenURL, p.Client, form)
	if err != nil {
		return nil, fmt.Errorf("finishing OAuth: exchanging the code: %w", err)
	}
	g := &Grant{
		Scopes:        p.Scopes,
		Client:        p.Client,
		Issuer:        p.Issuer,
		Resource:      p.Resource,
		TokenURL:      p.TokenURL,
		RevocationURL: p.RevocationURL,
	}
	a.apply(g, tok)
	return g, nil
}

// checkIssuer checks the iss of an authorization response (RFC 9207): required
// and equal to the issuer when the server advertises it; otherwise absent.
func checkIssuer(iss, issuer string, supported bool) error {
	switch {
	case supported && iss == "":
		return errors.New("the authorization server advertises the iss parameter but its response has none")
	case iss == "":
		return nil
	case iss != issuer:
		return fmt.Errorf("the authorization response's issuer %q is not %q", iss, issuer)
	case !supported:
		return errors.New("the authorization response has an iss parameter the authorization server does not advertise")
	}
	return nil
}

// Refresh gets a new access token with the grant's refresh token. The grant
// keeps its refresh token when the server sends no new one. A refusal
// (invalid_grant), or a grant without a refresh token, is an error that
// errors.Is ErrGrantRevoked.
func (a *Authorizer) Refresh(ctx context.Context, g *Grant) (*Grant, error) {
	if g.RefreshToken == "" {
		return nil, fmt.Errorf("refreshing the OAuth token: %w: there is no refresh token", ErrGrantRevoked)
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {g.RefreshToken}}
	if g.Resource != "" {
		form.Set("resource", g.Resource)
	}
	tok, err := a.token(ctx, g.TokenURL, g.Client, form)
	if err != nil {
		if te := (*TokenError)(nil); errors.As(err, &te) && te.Code == "invalid_grant" {
			return nil, fmt.Errorf("refreshing the OAuth token: %w: %w", ErrGrantRevoked, err)
		}
		return nil, fmt.Errorf("refreshing the OAuth token: %w", err)
	}
	ng := *g
	ng.Scopes = slices.Clone(g.Scopes)
	a.apply(&ng, tok)
	return &ng, nil
}

// apply puts a token response into a grant.
func (a *Authorizer) apply(g *Grant, tok *tokenResponse) {
	g.AccessToken = tok.AccessToken
	g.TokenType = tok.TokenType
	g.Expiry = time.Time{}
	if tok.ExpiresIn > 0 {
		g.Expiry = a.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	if tok.RefreshToken != "" {
		g.RefreshToken = tok.RefreshToken
	}
	if s := strings.Fields(tok.Scope); len(s) > 0 {
		g.Scopes = s
	}
}

// Revoke revokes the grant's tokens at the authorization server (RFC 7009),
// the refresh token first, when the server has a revocation endpoint; without
// one it does nothing.
func (a *Authorizer) Revoke(ctx context.Context, g *Grant) error {
	if g.RevocationURL == "" {
		return nil
	}
	var errs []error
	for _, t := range []struct{ token, hint string }{{g.RefreshToken, "refresh_token"}, {g.AccessToken, "access_token"}} {
		if t.token == "" {
			continue
		}
		form := url.Values{"token": {t.token}, "token_type_hint": {t.hint}}
		if err := a.post(ctx, g.RevocationURL, g.Client, form, nil); err != nil {
			errs = append(errs, fmt.Errorf("revoking the OAuth %s: %w", strings.ReplaceAll(t.hint, "_", " "), err))
		}
	}
	return errors.Join(errs...)
}

// challengeScopes returns the scope of the Bearer challenge, if any.
func challengeScopes(cs []oauthex.Challenge) []string {
	return strings.Fields(challengeParam(cs, "scope"))
}

// challengeParam returns a parameter of the first Bearer challenge that has it.
func challengeParam(cs []oauthex.Challenge, name string) string {
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params[name] != "" {
			return c.Params[name]
		}
	}
	return ""
}

// unionScopes returns the scopes of both lists, each once, in their order.
func unionScopes(a, b []string) []string {
	var out []string
	for _, s := range append(slices.Clone(a), b...) {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// issuersEqual compares issuer URLs as the go-sdk does: a trailing slash aside.
func issuersEqual(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}
