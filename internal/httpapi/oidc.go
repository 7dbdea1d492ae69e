package httpapi

import (
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/auth/oidc"
	"github.com/relay-ai/relay/internal/fault"
)

// Single sign-on with an OpenID Connect provider (docs/api.md "Single
// sign-on"). The flow's state, nonce and PKCE verifier, and where to land
// afterwards, wait in the relay_oidc cookie between the two routes.

const (
	flowCookie = "relay_oidc"
	flowPath   = "/api/auth/oidc/"
	flowMaxAge = 600 // seconds: long enough to type a password at the provider
)

// The words a failed single sign-on sends to the sign-in page.
const (
	ssoRefused    = "the sign-in was cancelled or refused by the provider"
	ssoStale      = "the sign-in expired or was started elsewhere; try again"
	ssoUnverified = "the provider's answer could not be verified"
	ssoFailed     = "single sign-on failed; see the server log"
)

// oidcStatus says whether the sign-in page offers single sign-on.
func (s *Server) oidcStatus() oidcStatus {
	if s.opts.OIDC == nil {
		return oidcStatus{}
	}
	return oidcStatus{Enabled: true, Label: s.opts.OIDC.Label()}
}

// oidcLogin sends the browser to the provider. ?next= is where it lands once
// signed in: a path of Relay's, else /.
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) {
	if s.opts.OIDC == nil {
		s.writeError(w, r, fault.New(fault.NotFound, "single sign-on is not configured (auth.oidc)"))
		return
	}
	to, f, err := s.opts.OIDC.Start(r.Context())
	if err != nil {
		s.log.WarnContext(r.Context(), "single sign-on: the provider cannot be reached", slog.Any("err", err))
		s.ssoError(w, r, ssoFailed)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name: flowCookie, Value: encodeFlow(f, localPath(r.URL.Query().Get("next"))), Path: flowPath, MaxAge: flowMaxAge,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode,
	})
	http.Redirect(w, r, to, http.StatusFound)
}

// oidcCallback finishes a sign-in the provider sent back, signs the person
// in and sends them on; every failure goes to the sign-in page with a short
// reason, the details in the log.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) {
	if s.opts.OIDC == nil {
		s.writeError(w, r, fault.New(fault.NotFound, "single sign-on is not configured (auth.oidc)"))
		return
	}
	var (
		f    oidc.Flow
		next = "/"
	)
	if c, err := r.Cookie(flowCookie); err == nil {
		f, next = decodeFlow(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: "", Path: flowPath, MaxAge: -1, HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode})
	claims, err := s.opts.OIDC.Finish(r.Context(), f, r.URL.Query())
	if err != nil {
		words := ssoFailed
		switch {
		case errors.Is(err, oidc.ErrRefused):
			words = ssoRefused
		case errors.Is(err, oidc.ErrState):
			words = ssoStale
		case errors.Is(err, oidc.ErrUnverified):
			words = ssoUnverified
		}
		s.log.WarnContext(r.Context(), "single sign-on failed", slog.Any("err", err))
		s.ssoError(w, r, words)
		return
	}
	u, err := s.opts.Auth.SignInIdentity(r.Context(), claims, s.opts.OIDC.AutoCreate())
	if err == nil {
		var in *auth.SignIn
		if in, err = s.opts.Auth.StartSession(r.Context(), u, r.UserAgent()); err == nil {
			s.replaceSession(w, r, in)
			http.Redirect(w, r, next, http.StatusFound)
			return
		}
	}
	var fe *fault.Error
	if fault.Is(err, fault.Forbidden) && errors.As(err, &fe) {
		s.log.InfoContext(r.Context(), "single sign-on refused", slog.String("reason", fe.Message), slog.String("subject", claims.Subject))
		s.ssoError(w, r, fe.Message)
		return
	}
	s.log.ErrorContext(r.Context(), "single sign-on failed", slog.Any("err", err))
	s.ssoError(w, r, ssoFailed)
}

// ssoError sends the browser to the sign-in page with a short reason.
func (s *Server) ssoError(w http.ResponseWriter, r *http.Request, words string) {
	http.Redirect(w, r, "/signin?error="+url.QueryEscape(words), http.StatusFound)
}

// localPath returns p when it is a path of this server (not //host or a
// URL), else "/", so that ?next= never sends anyone elsewhere.
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") || strings.ContainsAny(p, "\r\n") {
		return "/"
	}
	return p
}

// encodeFlow writes a flow and its landing path as one cookie value; the
// flow's parts are base64url already.
func encodeFlow(f oidc.Flow, next string) string {
	return strings.Join([]string{f.State, f.Nonce, f.Verifier, base64.RawURLEncoding.EncodeToString([]byte(next))}, ".")
}

// decodeFlow reads a cookie of encodeFlow; a malformed one is an empty flow,
// which Finish refuses.
func decodeFlow(v string) (oidc.Flow, string) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 {
		return oidc.Flow{}, "/"
	}
	next, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil {
		return oidc.Flow{}, "/"
	}
	return oidc.Flow{State: parts[0], Nonce: parts[1], Verifier: parts[2]}, localPath(string(next))
}
