package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The token and revocation requests are made here rather than with
// golang.org/x/oauth2's Exchange and TokenSource: a refresh must carry the
// resource parameter as the code exchange does (docs/mcp.md#oauth), which
// oauth2's refresh cannot, and an expiry must come from the Authorizer's clock.

// maxTokenResponse bounds what is read of a token or revocation response.
const maxTokenResponse = 1 << 20

// TokenError is an authorization server's refusal at its token or revocation
// endpoint (RFC 6749 section 5.2).
type TokenError struct {
	Status      int    // the HTTP status
	Code        string // the error code: invalid_grant, invalid_client, …
	Description string // error_description, if any
}

func (e *TokenError) Error() string {
	msg := fmt.Sprintf("the authorization server refused (HTTP %d)", e.Status)
	if e.Code != "" {
		msg += ": " + e.Code
	}
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// tokenResponse is a successful token response (RFC 6749 section 5.1).
type tokenResponse struct {
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type"`
	RefreshToken string    `json:"refresh_token"`
	ExpiresIn    expiresIn `json:"expires_in"`
	Scope        string    `json:"scope"`
}

// expiresIn is expires_in, which some servers send as a string.
type expiresIn int64

func (e *expiresIn) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if s == "" || s == "null" {
		*e = 0
		return nil
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("expires_in: %w", err)
	}
	*e = expiresIn(n)
	return nil
}

// token makes a token request and decodes its response.
func (a *Authorizer) token(ctx context.Context, endpoint string, c OAuthClient, form url.Values) (*tokenResponse, error) {
	var tok tokenResponse
	if err := a.post(ctx, endpoint, c, form, &tok); err != nil {
		return nil, err
	}
	if tok.AccessToken == "" {
		return nil, errors.New("the token response has no access_token")
	}
	return &tok, nil
}

// post sends a form to a token or revocation endpoint with the client's
// authentication, and decodes a successful JSON answer into out (if not nil).
// Errors never quote the form or the answer, which hold secrets, only the
// server's error code and description.
func (a *Authorizer) post(ctx context.Context, endpoint string, c OAuthClient, form url.Values, out any) error {
	if endpoint == "" {
		return errors.New("no endpoint")
	}
	form = cloneValues(form)
	basic := false
	switch c.AuthMethod {
	case AuthMethodPost:
		form.Set("client_id", c.ID)
		form.Set("client_secret", c.Secret)
	case AuthMethodBasic:
		basic = true
	case AuthMethodNone:
		form.Set("client_id", c.ID)
	default:
		if c.Secret != "" {
			basic = true
		} else {
			form.Set("client_id", c.ID)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if basic {
		// RFC 6749 section 2.3.1: both are form-encoded before the Basic encoding.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, err := a.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse))
	if err != nil {
		return fmt.Errorf("reading the answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		te := &TokenError{Status: resp.StatusCode}
		var e struct {
			Code        string `json:"error"`
			Description string `json:"error_description"`
		}
		if json.Unmarshal(body, &e) == nil {
			te.Code, te.Description = e.Code, e.Description
		}
		return te
	}
	if out == nil {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/x-www-form-urlencoded" || mt == "text/plain" {
		// Some servers (GitHub's, without an Accept) answer with a form.
		return decodeFormToken(body, out)
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(out); err != nil {
		return errors.New("the answer is not a JSON token response")
	}
	return nil
}

// decodeFormToken decodes a form-encoded token response.
func decodeFormToken(body []byte, out any) error {
	tok, ok := out.(*tokenResponse)
	if !ok {
		return errors.New("the answer is not JSON")
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return errors.New("the answer is not a token response")
	}
	if e := v.Get("error"); e != "" {
		return &TokenError{Status: http.StatusOK, Code: e, Description: v.Get("error_description")}
	}
	tok.AccessToken, tok.TokenType, tok.RefreshToken, tok.Scope = v.Get("access_token"), v.Get("token_type"), v.Get("refresh_token"), v.Get("scope")
	if n, err := strconv.ParseInt(v.Get("expires_in"), 10, 64); err == nil {
		tok.ExpiresIn = expiresIn(n)
	}
	return nil
}

func cloneValues(v url.Values) url.Values {
	out := make(url.Values, len(v)+2)
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}
