package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/mcp"
)

// scenarioContext is what a scenario gives the client in MCP_CONFORMANCE_CONTEXT.
type scenarioContext struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

const (
	// redirectURI is the callback the flow names; nothing listens there, since
	// the redirect to it is read, not followed.
	redirectURI = "http://localhost:3000/callback"
	// clientMetadataURL is the client ID metadata document the suite expects
	// a client to name where the authorization server supports them.
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
	// maxAuthorizations bounds the flows one connection runs, so that a server
	// that keeps asking for more scope is not asked forever.
	maxAuthorizations = 3
)

// oauth is the mcp.Authorization of an auth scenario: it runs a whole flow
// (Begin, the user's visit, Finish) when the server challenges, and refreshes
// the token when it has expired.
type oauth struct {
	server string
	config *mcp.OAuthConfig
	a      *mcp.Authorizer

	// clientCredentials: the client authorizes as itself, without a user.
	clientCredentials bool

	mu    sync.Mutex
	grant *mcp.Grant
	flows int
}

func newOAuth(server, scenario string, sc scenarioContext) *oauth {
	o := &oauth{server: server, a: &mcp.Authorizer{ClientName: "Relay", ClientIDMetadataURL: clientMetadataURL}}
	if sc.ClientID != "" {
		o.config = &mcp.OAuthConfig{ClientID: sc.ClientID, ClientSecret: sc.ClientSecret}
	}
	// The suite's scenario of a client with no user.
	o.clientCredentials = scenario == "auth/client-credentials-basic"
	return o
}

func (o *oauth) Token(ctx context.Context) (string, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.grant == nil {
		return "", nil
	}
	if o.grant.Expired(time.Now()) {
		g, err := o.a.Refresh(ctx, o.grant)
		if errors.Is(err, mcp.ErrGrantRevoked) {
			o.grant = nil // the server's 401 starts a new flow
			return "", nil
		}
		if err != nil {
			return "", err
		}
		o.grant = g
	}
	return o.grant.AccessToken, nil
}

func (o *oauth) Unauthorized(ctx context.Context, _ string, resp *http.Response, resent bool) error {
	if resent {
		return nil // the request answers with the refusal; the next one authorizes again
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.flows == maxAuthorizations {
		return fmt.Errorf("the server still refuses after %d authorizations", o.flows)
	}
	o.flows++
	r := mcp.BeginRequest{
		ServerURL:   o.server,
		OAuth:       o.config,
		RedirectURI: redirectURI,
		Challenge:   resp.Header.Values("WWW-Authenticate"),
	}
	if o.grant != nil {
		r.Granted, r.Client = o.grant.Scopes, &o.grant.Client
	}
	if o.clientCredentials {
		g, err := o.a.ClientCredentials(ctx, r)
		if err != nil {
			return err
		}
		o.grant = g
		return nil
	}
	p, err := o.a.Begin(ctx, r)
	if err != nil {
		return err
	}
	code, state, iss, err := visit(ctx, p.AuthURL)
	if err != nil {
		return err
	}
	g, err := o.a.Finish(ctx, p, code, state, iss)
	if err != nil {
		return err
	}
	o.grant = g
	return nil
}

// visit plays the user's browser: it opens the authorization URL and returns
// the code, state and iss of the redirect to the callback.
func visit(ctx context.Context, authURL string) (code, state, iss string, err error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return "", "", "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", "", "", fmt.Errorf("opening the authorization URL: %w", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.String() == "" {
		return "", "", "", fmt.Errorf("the authorization server answered %s without a redirect", resp.Status)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return "", "", "", fmt.Errorf("the authorization server refused: %s %s", e, q.Get("error_description"))
	}
	return q.Get("code"), q.Get("state"), q.Get("iss"), nil
}
