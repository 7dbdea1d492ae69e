package httpapi

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// sessionCookie holds a browser's session token (docs/api.md "Authentication").
const sessionCookie = "relay_session"

// secureCookies reports whether cookies for r get the Secure flag: the
// request came over TLS, or people reach Relay over https (server.public_url).
func (s *Server) secureCookies(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(strings.ToLower(s.opts.PublicURL), "https://")
}

// setSessionCookie gives the browser its session token, for as long as the
// session lasts unused.
func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: token, Path: "/", MaxAge: int(s.opts.Auth.SessionTTL().Seconds()),
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode,
	})
}

// clearSessionCookie has the browser drop its session cookie.
func (s *Server) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookies(r), SameSite: http.SameSiteLaxMode,
	})
}

// signedIn is the answer of the routes that sign in.
type signedIn struct {
	User *auth.User `json:"user"`
}

// oidcStatus says whether the sign-in page offers single sign-on.
type oidcStatus struct {
	Enabled bool   `json:"enabled"`
	Label   string `json:"label,omitempty"`
}

// authStatus is what the sign-in page needs before anyone is signed in.
type authStatus struct {
	// SetupRequired: no admin can sign in yet, so the page offers the setup
	// form (with the token of the link relay serve printed).
	SetupRequired bool       `json:"setup_required"`
	Password      bool       `json:"password"`
	OIDC          oidcStatus `json:"oidc"`
}

func (s *Server) authStatus(w http.ResponseWriter, r *http.Request) {
	required, err := s.opts.Auth.SetupRequired(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, authStatus{SetupRequired: required, Password: true, OIDC: s.oidcStatus()})
}

// login signs in with an email and password. Failures are counted per email
// and client address (auth.login_limit); past a limit every attempt is a 429.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	var fs fault.Fields
	if strings.TrimSpace(in.Email) == "" {
		fs.Add("email", "required")
	}
	if in.Password == "" {
		fs.Add("password", "required")
	}
	if err := fs.Err("invalid sign-in"); err != nil {
		s.writeError(w, r, err)
		return
	}
	addr := clientIP(r)
	if err := s.opts.SignIns.Allow(in.Email, addr); err != nil {
		s.writeError(w, r, err)
		return
	}
	in2, err := s.opts.Auth.Login(r.Context(), in.Email, in.Password, r.UserAgent())
	if err != nil {
		if err == auth.ErrWrongPassword {
			s.opts.SignIns.Failed(in.Email, addr)
		}
		s.writeError(w, r, err)
		return
	}
	s.opts.SignIns.Succeeded(in.Email)
	s.replaceSession(w, r, in2)
	writeJSON(w, http.StatusOK, signedIn{User: in2.User})
}

// replaceSession ends the session the browser held, if any, and gives it the
// new one.
func (s *Server) replaceSession(w http.ResponseWriter, r *http.Request, in *auth.SignIn) {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := s.opts.Auth.Logout(r.Context(), c.Value); err != nil {
			s.log.WarnContext(r.Context(), "ending the session a sign-in replaces", slog.Any("err", err))
		}
	}
	s.setSessionCookie(w, r, in.Token)
}

// logout ends the browser's session, if it has one, and clears its cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if err := s.opts.Auth.Logout(r.Context(), c.Value); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

// logoutAll ends every session of the caller ("sign out everywhere"); API
// keys stay.
func (s *Server) logoutAll(w http.ResponseWriter, r *http.Request) {
	uid := userFrom(r.Context()).ID
	if _, err := s.opts.Auth.LogoutAll(r.Context(), uid, ""); err != nil {
		s.writeError(w, r, err)
		return
	}
	// Relay's access to the user's accounts at MCP servers ends too.
	if s.opts.Accounts != nil {
		if err := s.opts.Accounts.SignedOutEverywhere(r.Context(), uid); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	s.clearSessionCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

// changePassword sets the caller's password. A wrong current password counts
// as a failed sign-in of the caller's email. The caller's other sessions end.
func (s *Server) changePassword(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Current string `json:"current"`
		New     string `json:"new"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, addr := userFrom(r.Context()), clientIP(r)
	if err := s.opts.SignIns.Allow(u.Email, addr); err != nil {
		s.writeError(w, r, err)
		return
	}
	err := s.opts.Auth.ChangePassword(r.Context(), u, in.Current, in.New, sessionID(r.Context()))
	if err == auth.ErrWrongCurrentPassword {
		s.opts.SignIns.Failed(u.Email, addr)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// setup creates the first admin with the token of the link relay serve
// printed, and signs them in.
func (s *Server) setup(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Token    string `json:"token"`
		Email    string `json:"email"`
		Name     string `json:"name"`
		Password string `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.opts.Auth.Setup(r.Context(), strings.TrimSpace(in.Token), auth.NewUser{Email: in.Email, DisplayName: in.Name, Password: in.Password})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.log.InfoContext(r.Context(), "setup: first admin created", slog.String("user_id", u.ID), slog.String("email", u.Email))
	in2, err := s.opts.Auth.StartSession(r.Context(), u, r.UserAgent())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.replaceSession(w, r, in2)
	writeJSON(w, http.StatusCreated, signedIn{User: u})
}
