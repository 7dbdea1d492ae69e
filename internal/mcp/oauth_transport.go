package mcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Authorization supplies a connection's bearer token (see ConnectOptions).
type Authorization interface {
	// Token returns the access token to send ("" = send none). An error fails
	// the request with it (e.g. *AuthRequiredError when the user has not
	// connected).
	Token(ctx context.Context) (string, error)
	// Unauthorized is called when a request sent with token ("" = none) got
	// 401, or 403 with error="insufficient_scope"; resp's body has been read
	// already (what is left is a copy). An error fails the request with that
	// error. Returning nil sends the request once more, with Token's new
	// value, unless resent: the request had been sent once more already, and
	// its new token was refused too; resp is then what it answers.
	Unauthorized(ctx context.Context, token string, resp *http.Response, resent bool) error
}

// AuthRequiredError says a server needs the user to connect (authorize) first.
type AuthRequiredError struct {
	Server string // the server's name
	Reason string // what is missing, for the user
}

func (e *AuthRequiredError) Error() string {
	msg := fmt.Sprintf("MCP server %q needs you to connect your account", e.Server)
	if e.Reason != "" {
		msg += ": " + e.Reason
	}
	return msg + fmt.Sprintf(" (connect it on the Connections page, or with `relay mcp auth %s`)", e.Server)
}

// ErrOAuthNotConfigured is the error of a request a server answered 401 on a
// connection without Authorization.
var ErrOAuthNotConfigured = errors.New("the server requires OAuth, which its config does not enable: set `requiresOAuth: true` or an `oauth:` block")

// maxChallengeBody bounds what is kept of a 401 or 403 response's body.
const maxChallengeBody = 64 << 10

// authTransport sends the connection's bearer token to the server's own host
// (never to another one, nor over plain HTTP to a server configured with TLS:
// see headerTransport) and, on a 401 or a 403 insufficient_scope challenge,
// lets the Authorization act on it and sends the request once more. One resend
// per request bounds step-ups: a server that keeps asking for more scope gets
// one new authorization per request, not a loop.
type authTransport struct {
	base   http.RoundTripper
	auth   Authorization // nil: a 401 fails with ErrOAuthNotConfigured
	name   string        // the server's name, for errors
	server *headerTransport
}

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.server.forServer(r.URL) {
		return t.base.RoundTrip(r)
	}
	req := r
	for resent := false; ; resent = true {
		resp, tok, err := t.send(req)
		if err != nil || !challenged(resp) {
			return resp, err
		}
		keepChallenge(resp)
		if t.auth == nil {
			if resp.StatusCode == http.StatusUnauthorized {
				return nil, fmt.Errorf("MCP server %q answered 401 Unauthorized: %w", t.name, ErrOAuthNotConfigured)
			}
			return resp, nil
		}
		if err := t.auth.Unauthorized(r.Context(), tok, resp, resent); err != nil {
			return nil, err
		}
		if resent {
			return resp, nil // never a third time
		}
		if req, err = t.again(r); err != nil {
			return nil, err
		}
	}
}

// again is r to send once more, with its body read anew.
func (t *authTransport) again(r *http.Request) (*http.Request, error) {
	again := r.Clone(r.Context())
	if r.Body != nil && r.Body != http.NoBody {
		if r.GetBody == nil {
			return nil, fmt.Errorf("MCP server %q asked for authorization, and the request cannot be sent again", t.name)
		}
		b, err := r.GetBody()
		if err != nil {
			return nil, fmt.Errorf("sending the request again after authorization: %w", err)
		}
		again.Body = b
	}
	return again, nil
}

// keepChallenge reads what resp, a challenge, has to say (up to
// maxChallengeBody) and closes its connection's body: its Body is then a copy.
func keepChallenge(resp *http.Response) {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxChallengeBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
}

// send sends r with the current token, and returns the token it sent.
func (t *authTransport) send(r *http.Request) (*http.Response, string, error) {
	var tok string
	if t.auth != nil {
		var err error
		if tok, err = t.auth.Token(r.Context()); err != nil {
			if r.Body != nil {
				r.Body.Close()
			}
			return nil, "", err
		}
		if tok != "" {
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer "+tok)
		}
	}
	resp, err := t.base.RoundTrip(r)
	return resp, tok, err
}

// challenged reports whether a response asks for (more) authorization: a 401,
// or a 403 whose Bearer challenge says insufficient_scope.
func challenged(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		cs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
		return err == nil && challengeParam(cs, "error") == "insufficient_scope"
	}
	return false
}
