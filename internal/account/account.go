// Package account owns what connects a user's own accounts to the MCP servers
// that need them: the values of a server's customUserVars, and MCP OAuth —
// starting and finishing a user's authorization, giving their connections a
// fresh access token (refreshed once across every replica), and revoking it.
// Everything is kept sealed in the vault. See docs/mcp.md "OAuth" and
// "Per-user variables".
package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/mcp"
	"github.com/relay-ai/relay/internal/vault"
)

// CallbackPath is the route at which authorization servers send users back.
const CallbackPath = "/api/mcp/oauth/callback"

// Servers is what the service needs of the MCP manager.
type Servers interface {
	Server(name string) (mcp.ServerConfig, bool)
	Servers() []mcp.ServerConfig
	// Disconnect closes a user's connection, so that the next use connects
	// with their current variables and authorization.
	Disconnect(server, userID string)
}

// Service connects users' accounts to MCP servers.
type Service struct {
	Vault *vault.Vault
	Auth  *mcp.Authorizer
	MCP   Servers
	// PublicURL is where users reach Relay (server.public_url), for the
	// redirect URI of authorizations.
	PublicURL string
	// Getenv resolves ${VAR} in server URLs; nil means none.
	Getenv func(string) (string, bool)
	Log    *slog.Logger
	Now    func() time.Time
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Log
}

// maxVarBytes bounds one variable's value.
const maxVarBytes = 8 << 10

// Var is one of a server's customUserVars as its user sees it: never its value.
type Var struct {
	mcp.UserVar
	Set       bool       `json:"set"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// OAuth is where a user's authorization at a server stands.
type OAuth struct {
	Connected bool       `json:"connected"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	Scopes    []string   `json:"scopes,omitempty"`
	// NeedsPermissions: the server asked for more scope than the user
	// granted (Scopes, then); they are not connected until they allow it.
	NeedsPermissions bool `json:"needs_permissions,omitempty"`
}

// Status is what a server needs of a user, and what the user has given it.
type Status struct {
	Server string `json:"server"`
	Title  string `json:"title,omitempty"`
	// OAuth is nil for a server without OAuth.
	OAuth *OAuth `json:"oauth,omitempty"`
	Vars  []Var  `json:"vars,omitempty"`
	// Ready says the user has done all the server needs of them.
	Ready bool `json:"ready"`
}

// List reports, for every server that needs something of each user, what
// userID has given it, in config order.
func (s *Service) List(ctx context.Context, userID string) ([]Status, error) {
	out := []Status{}
	for _, cfg := range s.MCP.Servers() {
		if cfg.OAuth == nil && len(cfg.UserVars) == 0 {
			continue
		}
		st, err := s.status(ctx, userID, cfg)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// Get reports what one server needs of userID and what they have given it.
func (s *Service) Get(ctx context.Context, userID, server string) (Status, error) {
	cfg, err := s.server(server)
	if err != nil {
		return Status{}, err
	}
	return s.status(ctx, userID, cfg)
}

func (s *Service) status(ctx context.Context, userID string, cfg mcp.ServerConfig) (Status, error) {
	st := Status{Server: cfg.Name, Title: cfg.Title, Ready: true}
	if len(cfg.UserVars) > 0 {
		set, err := s.Vault.VarsSet(ctx, userID, vault.KindMCP, cfg.Name)
		if err != nil {
			return st, err
		}
		vals := map[string]string{}
		for _, uv := range cfg.UserVars {
			v := Var{UserVar: uv}
			if at, ok := set[uv.Name]; ok {
				v.Set, v.UpdatedAt = true, &at
				vals[uv.Name] = ""
			}
			st.Vars = append(st.Vars, v)
		}
		if len(cfg.MissingVars(vals)) > 0 {
			st.Ready = false
		}
	}
	if cfg.OAuth != nil {
		st.OAuth = &OAuth{}
		g, err := s.Vault.Grant(ctx, userID, cfg.Name)
		switch {
		case fault.KindOf(err) == fault.NotFound:
		case err != nil:
			return st, err
		default:
			var mg mcp.Grant
			switch {
			case json.Unmarshal(g.Data, &mg) != nil:
			case mg.AccessToken == "": // kept for a step-up
				st.OAuth.NeedsPermissions, st.OAuth.Scopes = true, mg.Scopes
			default:
				st.OAuth.Connected, st.OAuth.Scopes = true, mg.Scopes
				if !g.Expiry.IsZero() {
					st.OAuth.ExpiresAt = &g.Expiry
				}
			}
		}
		if !st.OAuth.Connected {
			st.Ready = false
		}
	}
	return st, nil
}

func (s *Service) server(name string) (mcp.ServerConfig, error) {
	cfg, ok := s.MCP.Server(name)
	if !ok {
		return cfg, fault.New(fault.NotFound, "no MCP server %q", name)
	}
	return cfg, nil
}

// Vars returns userID's values of a server's customUserVars (mcp.Users).
func (s *Service) Vars(ctx context.Context, server, userID string) (map[string]string, error) {
	return s.Vault.Vars(ctx, userID, vault.KindMCP, server)
}

// SetVars sets userID's values of a server's customUserVars (an empty value
// removes one) and closes their connection, so that the next use carries the
// new values.
func (s *Service) SetVars(ctx context.Context, userID, server string, values map[string]string) error {
	cfg, err := s.server(server)
	if err != nil {
		return err
	}
	var problems fault.Fields
	for _, name := range slices.Sorted(maps.Keys(values)) {
		v := values[name]
		switch {
		case !slices.ContainsFunc(cfg.UserVars, func(uv mcp.UserVar) bool { return uv.Name == name }):
			problems.Add(name, "not a variable of MCP server %q (its customUserVars: %s)", server, varNames(cfg.UserVars))
		case len(v) > maxVarBytes:
			problems.Add(name, "longer than %d bytes", maxVarBytes)
		case strings.ContainsRune(v, 0):
			problems.Add(name, "holds a NUL byte")
		}
	}
	if err := problems.Err("invalid variables"); err != nil {
		return err
	}
	if err := s.Vault.SetVars(ctx, userID, vault.KindMCP, server, values); err != nil {
		return err
	}
	s.MCP.Disconnect(server, userID)
	return nil
}

// DeleteVars removes all of userID's values for a server.
func (s *Service) DeleteVars(ctx context.Context, userID, server string) error {
	if _, err := s.server(server); err != nil {
		return err
	}
	if err := s.Vault.DeleteVars(ctx, userID, vault.KindMCP, server); err != nil {
		return err
	}
	s.MCP.Disconnect(server, userID)
	return nil
}

func varNames(vs []mcp.UserVar) string {
	var names []string
	for _, v := range vs {
		names = append(names, v.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// RedirectURI is where the authorization server sends users back for a
// server: its oauth.redirect_uri, else Relay's callback route.
func (s *Service) RedirectURI(cfg mcp.ServerConfig) string {
	if cfg.OAuth != nil && cfg.OAuth.RedirectURI != "" {
		return cfg.OAuth.RedirectURI
	}
	return strings.TrimSuffix(s.PublicURL, "/") + CallbackPath
}

// Start begins userID's authorization at a server and returns the address
// to send them to. The flow's state is kept in the vault for FlowTTL, so that
// the callback may reach any replica.
func (s *Service) Start(ctx context.Context, u *mcp.User, server string) (string, error) {
	cfg, err := s.server(server)
	if err != nil {
		return "", err
	}
	if cfg.OAuth == nil {
		return "", fault.New(fault.Invalid, "MCP server %q does not use OAuth (it has no requiresOAuth or oauth in the config)", server)
	}
	// The flow is for the address this user's connection uses: its
	// discovery and the token's resource are that server's, with the
	// user's values in its url, not the url as written.
	vars, err := s.urlVars(ctx, cfg, u.ID)
	if err != nil {
		return "", err
	}
	resolved := cfg.ResolveVars(u, vars, s.Getenv)
	req := mcp.BeginRequest{ServerURL: resolved.URL, OAuth: resolved.OAuth, RedirectURI: s.RedirectURI(resolved)}
	if _, prev, err := s.grant(ctx, u.ID, server); err == nil {
		// The registration is kept, and with it the scopes granted before.
		// So is the challenge of a server that asked for more scope.
		c := prev.Client
		req.Client, req.Granted, req.Challenge = &c, prev.Scopes, prev.Challenge
	}
	p, err := s.Auth.Begin(ctx, req)
	if err != nil {
		return "", fault.New(fault.Unavailable, "starting the authorization at MCP server %q: %v", server, err)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	if err := s.Vault.PutFlow(ctx, p.State, u.ID, server, data); err != nil {
		return "", err
	}
	return p.AuthURL, nil
}

// urlVars returns userID's values of a server's customUserVars, and an
// error naming those its url uses that they have not set.
func (s *Service) urlVars(ctx context.Context, cfg mcp.ServerConfig, userID string) (map[string]string, error) {
	if len(cfg.UserVars) == 0 {
		return nil, nil
	}
	vars, err := s.Vars(ctx, cfg.Name, userID)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, uv := range cfg.UserVars {
		if _, ok := vars[uv.Name]; !ok && strings.Contains(cfg.URL, "{{"+uv.Name+"}}") {
			missing = append(missing, uv.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fault.New(fault.Invalid, "MCP server %q needs your settings before you connect your account: set %s for it",
			cfg.Name, strings.Join(missing, ", "))
	}
	return vars, nil
}

// Finish completes the authorization the callback's state names and keeps
// the tokens for its user; it returns the server and the user. by is the
// Relay user the browser coming back is signed in as, "" when it is not:
// an authorization another user started is refused then, and is over, so
// that nobody can have their flow finished with someone else's account at
// the server.
func (s *Service) Finish(ctx context.Context, state, code, iss, by string) (server, userID string, err error) {
	if state == "" {
		return "", "", fault.New(fault.Invalid, "the authorization's answer has no state")
	}
	userID, server, data, err := s.Vault.TakeFlow(ctx, state)
	if fault.KindOf(err) == fault.NotFound {
		return "", "", fault.New(fault.Invalid, "this authorization expired or was already used: start it again")
	}
	if err != nil {
		return "", "", err
	}
	if by != "" && by != userID {
		s.log().Warn("mcp authorization refused: the browser is signed in as another user",
			slog.String("mcp_server", server), slog.String("user_id", userID), slog.String("signed_in", by))
		return server, userID, fault.New(fault.Forbidden,
			"this authorization was started by another Relay user than the one signed in here; start it again from your own Connections page")
	}
	var p mcp.Pending
	if err := json.Unmarshal(data, &p); err != nil {
		return server, userID, fmt.Errorf("reading the pending authorization: %w", err)
	}
	if code == "" {
		return server, userID, fault.New(fault.Invalid, "the authorization server sent no code")
	}
	g, err := s.Auth.Finish(ctx, &p, code, state, iss)
	if err != nil {
		return server, userID, fault.New(fault.Unavailable, "finishing the authorization at MCP server %q: %v", server, err)
	}
	if err := s.putGrant(ctx, userID, server, g); err != nil {
		return server, userID, err
	}
	s.MCP.Disconnect(server, userID)
	s.log().Info("mcp account connected", slog.String("mcp_server", server), slog.String("user_id", userID))
	return server, userID, nil
}

func (s *Service) putGrant(ctx context.Context, userID, server string, g *mcp.Grant) error {
	data, err := json.Marshal(g)
	if err != nil {
		return err
	}
	return s.Vault.PutGrant(ctx, vault.Grant{UserID: userID, Server: server, Data: data, Expiry: g.Expiry, Issued: s.now()})
}

// grant is userID's grant of server as stored (its version too), and opened.
func (s *Service) grant(ctx context.Context, userID, server string) (vault.Grant, *mcp.Grant, error) {
	g, err := s.Vault.Grant(ctx, userID, server)
	if err != nil {
		return g, nil, err
	}
	var mg mcp.Grant
	if err := json.Unmarshal(g.Data, &mg); err != nil {
		return g, nil, fmt.Errorf("reading the authorization for %q: %w", server, err)
	}
	return g, &mg, nil
}

// Disconnect forgets userID's authorization at a server and revokes it there
// when the server says how.
func (s *Service) Disconnect(ctx context.Context, userID, server string) error {
	if _, err := s.server(server); err != nil {
		return err
	}
	_, g, err := s.grant(ctx, userID, server)
	if fault.KindOf(err) == fault.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	if err := s.Vault.DeleteGrant(ctx, userID, server); err != nil {
		return err
	}
	s.MCP.Disconnect(server, userID)
	s.revoke(ctx, userID, server, g)
	return nil
}

// SignedOutEverywhere forgets and revokes every authorization of userID:
// signing out everywhere ends Relay's access to their accounts too.
func (s *Service) SignedOutEverywhere(ctx context.Context, userID string) error {
	gs, err := s.Vault.DeleteUserGrants(ctx, userID)
	if err != nil {
		return err
	}
	for _, g := range gs {
		s.MCP.Disconnect(g.Server, userID)
		var mg mcp.Grant
		if json.Unmarshal(g.Data, &mg) == nil {
			s.revoke(ctx, userID, g.Server, &mg)
		}
	}
	return nil
}

// revoke asks the authorization server to revoke a grant; a failure is
// logged, since Relay has forgotten the grant already.
func (s *Service) revoke(ctx context.Context, userID, server string, g *mcp.Grant) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.Auth.Revoke(ctx, g); err != nil {
		s.log().Warn("revoking an mcp authorization failed", slog.String("mcp_server", server), slog.String("user_id", userID), slog.String("err", err.Error()))
	}
}

// Authorization gives a user's connection to an OAuth server its bearer
// token (mcp.Users); nil for a server without OAuth.
func (s *Service) Authorization(server string, u *mcp.User) mcp.Authorization {
	cfg, ok := s.MCP.Server(server)
	if !ok || cfg.OAuth == nil || u == nil {
		return nil
	}
	return &bearer{s: s, server: server, userID: u.ID}
}

// bearer is the Authorization of one user's connection to one server.
type bearer struct {
	s              *Service
	server, userID string
}

func (b *bearer) needs(reason string) error {
	return &mcp.AuthRequiredError{Server: b.server, Reason: reason}
}

// Token returns a fresh access token: refreshed when it is about to expire,
// by one replica for all.
func (b *bearer) Token(ctx context.Context) (string, error) {
	if b.userID == "" {
		return "", b.needs("it acts for a signed-in user only")
	}
	g, err := b.s.Vault.Fresh(ctx, b.userID, b.server, b.refresh)
	switch {
	case fault.KindOf(err) == fault.NotFound:
		return "", b.needs("you have not connected your account yet")
	case errors.Is(err, vault.ErrRevoked):
		return "", b.needs("your authorization has expired or was revoked")
	case err != nil:
		return "", err
	}
	var mg mcp.Grant
	if err := json.Unmarshal(g.Data, &mg); err != nil {
		return "", fmt.Errorf("reading the authorization for %q: %w", b.server, err)
	}
	if mg.AccessToken == "" {
		return "", b.needs(needsScope)
	}
	return mg.AccessToken, nil
}

// needsScope is what a user whose server asked for more scope than they
// granted is told.
const needsScope = "the server needs more permissions than you granted: connect again"

func (b *bearer) refresh(ctx context.Context, data []byte) ([]byte, time.Time, error) {
	var g mcp.Grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, time.Time{}, err
	}
	if g.RefreshToken == "" {
		return nil, time.Time{}, vault.ErrRevoked // nothing to refresh with: connect again
	}
	ng, err := b.s.Auth.Refresh(ctx, &g)
	if errors.Is(err, mcp.ErrGrantRevoked) {
		return nil, time.Time{}, fmt.Errorf("%w: %v", vault.ErrRevoked, err)
	}
	if err != nil {
		return nil, time.Time{}, err
	}
	out, err := json.Marshal(ng)
	return out, ng.Expiry, err
}

// Unauthorized: the server refused token. An access token refused on its
// first use is renewed with the grant's refresh token, once across replicas
// (the server may end tokens early, or not say when they end), and the
// request is sent again; one refused after that, or a grant without a
// refresh token, was revoked: Relay forgets it and the user connects again.
// A 403 asks for more scope than the user granted, which only the user can
// give: the grant loses its tokens (revoked at the authorization server)
// and keeps the challenge, so that connecting again asks for the scopes the
// server wants (a step-up). Whatever the refusal, a grant that has moved on
// since token was sent (renewed, authorized again) is left as it is: the
// request is sent again with it, or the next one is.
func (b *bearer) Unauthorized(ctx context.Context, token string, resp *http.Response, resent bool) error {
	g, mg, err := b.s.grant(ctx, b.userID, b.server)
	switch {
	case fault.KindOf(err) == fault.NotFound:
		return b.needs("you have not connected your account yet")
	case err != nil:
		return err
	case mg.AccessToken != token:
		if resent {
			return b.needs("the server refused your authorization while it was renewed: try again")
		}
		return nil // renewed or authorized again since it was sent
	case resp.StatusCode == http.StatusForbidden:
		if err := b.stepUp(ctx, g, mg, resp.Header.Values("WWW-Authenticate")); err != nil {
			return err
		}
		return b.needs(needsScope)
	case !resent && mg.RefreshToken != "":
		return b.renew(ctx, token)
	}
	if _, err := b.s.Vault.DeleteGrantAt(ctx, b.userID, b.server, g.Version); err != nil {
		return err
	}
	return b.needs("the server no longer accepts your authorization (it may have been revoked): connect again")
}

// stepUp keeps the user's grant g (mg opened) without its tokens and with
// challenge, the refusal that asked for more scope, unless it has moved on
// since it was read; the tokens it drops are revoked.
func (b *bearer) stepUp(ctx context.Context, g vault.Grant, mg *mcp.Grant, challenge []string) error {
	old := *mg
	mg.AccessToken, mg.RefreshToken, mg.Expiry, mg.Challenge = "", "", time.Time{}, challenge
	data, err := json.Marshal(mg)
	if err != nil {
		return err
	}
	replaced, err := b.s.Vault.ReplaceGrant(ctx, vault.Grant{UserID: b.userID, Server: b.server, Data: data, Version: g.Version})
	if replaced {
		go b.s.revoke(ctx, b.userID, b.server, &old)
	}
	return err
}

// renew renews the grant whose access token, refused, the server refused.
// A refresh the authorization server refuses is the connect-again error; one
// that fails otherwise (the server unreachable) is its error, the grant
// kept.
func (b *bearer) renew(ctx context.Context, refused string) error {
	_, err := b.s.Vault.Renew(ctx, b.userID, b.server, func(data []byte) bool {
		var mg mcp.Grant
		return json.Unmarshal(data, &mg) == nil && mg.AccessToken == refused
	}, b.refresh)
	switch {
	case errors.Is(err, vault.ErrRevoked), fault.KindOf(err) == fault.NotFound:
		return b.needs("your authorization has expired or was revoked")
	case err != nil:
		return err
	}
	return nil
}
