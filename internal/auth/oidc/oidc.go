// Package oidc is the client side of signing in with an OpenID Connect
// provider (docs/api.md "Single sign-on"): the authorization code flow with
// state, nonce and PKCE, the code exchange, the ID token's verification, and
// what the provider says about the person, as auth.Claims. Which Relay user
// that is, auth decides; the redirects and cookies are httpapi's.
package oidc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/relay-ai/relay/internal/auth"
)

// Config is a provider and Relay's registration there (docs/config.md "auth").
type Config struct {
	Issuer       string
	ClientID     string
	ClientSecret string // "" for a public client
	RedirectURL  string
	Scopes       []string
	Label        string
	AutoCreate   bool
	// HTTPClient reaches the provider; nil means one with a 15 s timeout.
	HTTPClient *http.Client
}

// Client signs people in with one provider. Its discovery document is read
// on first use and kept once read, so that Relay starts while the provider is
// down and sign-ins work once it is up.
type Client struct {
	cfg Config

	mu       sync.Mutex
	provider *gooidc.Provider
}

// New returns a Client for cfg; it reaches the provider only when used.
func New(cfg Config) *Client {
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 15 * time.Second}
	}
	return &Client{cfg: cfg}
}

// Label is the sign-in button's text.
func (c *Client) Label() string { return c.cfg.Label }

// AutoCreate reports whether people unknown to Relay get a user.
func (c *Client) AutoCreate() bool { return c.cfg.AutoCreate }

// ctx carries the client's HTTP client to go-oidc and oauth2.
func (c *Client) ctx(ctx context.Context) context.Context {
	return gooidc.ClientContext(context.WithValue(ctx, oauth2.HTTPClient, c.cfg.HTTPClient), c.cfg.HTTPClient)
}

// discover returns the provider, reading its discovery document the first
// time (and again after a failure).
func (c *Client) discover(ctx context.Context) (*gooidc.Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil {
		return c.provider, nil
	}
	// The keys are fetched later with a context of go-oidc's own, which
	// carries the HTTP client but not this request's cancellation.
	p, err := gooidc.NewProvider(c.ctx(ctx), c.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("reading the discovery document of %s: %w", c.cfg.Issuer, err)
	}
	c.provider = p
	return p, nil
}

func (c *Client) oauth(p *gooidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.cfg.ClientID, ClientSecret: c.cfg.ClientSecret, RedirectURL: c.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: c.cfg.Scopes,
	}
}

// Flow is what a browser keeps between Start and Finish (in a short-lived
// cookie): the state that ties the callback to this browser, the nonce that
// ties the ID token to this sign-in, and the PKCE verifier that ties the
// code to it.
type Flow struct {
	State    string
	Nonce    string
	Verifier string
}

// Start begins a sign-in: the provider's authorization URL to send the
// browser to, and the flow to keep for Finish.
func (c *Client) Start(ctx context.Context) (string, Flow, error) {
	p, err := c.discover(ctx)
	if err != nil {
		return "", Flow{}, err
	}
	f := Flow{State: oauth2.GenerateVerifier(), Nonce: oauth2.GenerateVerifier(), Verifier: oauth2.GenerateVerifier()}
	u := c.oauth(p).AuthCodeURL(f.State, gooidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	return u, f, nil
}

// The ways a callback fails, for the person's message.
var (
	// ErrRefused: the provider answered with an error (cancelled, denied).
	ErrRefused = errors.New("the provider refused the sign-in")
	// ErrState: the callback's state is not this browser's flow (stale, or
	// started elsewhere).
	ErrState = errors.New("the sign-in's state does not match")
	// ErrUnverified: the code exchange or the ID token's checks failed.
	ErrUnverified = errors.New("the provider's answer could not be verified")
)

// Finish completes a sign-in from the callback's query: it checks the state
// against f, exchanges the code with f's PKCE verifier, verifies the ID
// token (signature, issuer, audience, expiry) and its nonce, and returns what
// the provider says about the person. Their email comes from the ID token or,
// when it has none, from the userinfo endpoint (for the same subject).
func (c *Client) Finish(ctx context.Context, f Flow, q url.Values) (auth.Claims, error) {
	if e := q.Get("error"); e != "" {
		return auth.Claims{}, fmt.Errorf("%w: %s", ErrRefused, e)
	}
	if f.State == "" || q.Get("state") != f.State {
		return auth.Claims{}, ErrState
	}
	p, err := c.discover(ctx)
	if err != nil {
		return auth.Claims{}, err
	}
	ctx = c.ctx(ctx)
	oc := c.oauth(p)
	tok, err := oc.Exchange(ctx, q.Get("code"), oauth2.VerifierOption(f.Verifier))
	if err != nil {
		return auth.Claims{}, fmt.Errorf("%w: exchanging the code: %w", ErrUnverified, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return auth.Claims{}, fmt.Errorf("%w: the token answer has no id_token", ErrUnverified)
	}
	id, err := p.Verifier(&gooidc.Config{ClientID: c.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return auth.Claims{}, fmt.Errorf("%w: %w", ErrUnverified, err)
	}
	if id.Nonce != f.Nonce {
		return auth.Claims{}, fmt.Errorf("%w: the ID token's nonce is not this sign-in's", ErrUnverified)
	}
	var cl struct {
		Email         string          `json:"email"`
		EmailVerified json.RawMessage `json:"email_verified"`
		Name          string          `json:"name"`
	}
	if err := id.Claims(&cl); err != nil {
		return auth.Claims{}, fmt.Errorf("%w: reading the ID token's claims: %w", ErrUnverified, err)
	}
	out := auth.Claims{Issuer: id.Issuer, Subject: id.Subject, Email: cl.Email, EmailVerified: isTrue(cl.EmailVerified), Name: cl.Name}
	if out.Email == "" && p.UserInfoEndpoint() != "" {
		ui, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
		if err != nil {
			return auth.Claims{}, fmt.Errorf("%w: asking for the user's info: %w", ErrUnverified, err)
		}
		if ui.Subject != id.Subject {
			return auth.Claims{}, fmt.Errorf("%w: the userinfo answer is about another subject", ErrUnverified)
		}
		out.Email, out.EmailVerified = ui.Email, ui.EmailVerified
		if out.Name == "" {
			var n struct {
				Name string `json:"name"`
			}
			if ui.Claims(&n) == nil {
				out.Name = n.Name
			}
		}
	}
	return out, nil
}

// isTrue reads email_verified, which some providers send as a string.
func isTrue(raw json.RawMessage) bool {
	switch string(raw) {
	case "true", `"true"`:
		return true
	}
	return false
}
