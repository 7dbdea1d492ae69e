package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
)

// The routes of a user's own accounts at MCP servers: customUserVars values
// and OAuth (docs/api.md "MCP accounts"). Each user acts for themselves.

func (s *Server) accountsReady(w http.ResponseWriter, r *http.Request) bool {
	if s.opts.Accounts == nil {
		s.writeError(w, r, fault.New(fault.Unavailable, "per-user MCP accounts are not available on this server"))
		return false
	}
	return true
}

func (s *Server) listAccounts(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	list, err := s.opts.Accounts.List(r.Context(), userFrom(r.Context()).ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list})
}

func (s *Server) writeAccount(w http.ResponseWriter, r *http.Request, server string) {
	st, err := s.opts.Accounts.Get(r.Context(), userFrom(r.Context()).ID, server)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (s *Server) getAccount(w http.ResponseWriter, r *http.Request) {
	if s.accountsReady(w, r) {
		s.writeAccount(w, r, r.PathValue("name"))
	}
}

// setVars sets the caller's values of a server's customUserVars: {"values":
// {"NAME": "value"}}; an empty value removes one. Values are never returned.
func (s *Server) setVars(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	var in struct {
		Values map[string]string `json:"values"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if len(in.Values) == 0 {
		s.writeError(w, r, fault.New(fault.Invalid, "values: give at least one variable"))
		return
	}
	name := r.PathValue("name")
	if err := s.opts.Accounts.SetVars(r.Context(), userFrom(r.Context()).ID, name, in.Values); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeAccount(w, r, name)
}

func (s *Server) deleteVars(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	if err := s.opts.Accounts.DeleteVars(r.Context(), userFrom(r.Context()).ID, r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// startOAuth begins the caller's authorization at a server and answers the
// address to open: {"auth_url": "…"}.
func (s *Server) startOAuth(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	u := userFrom(r.Context())
	link, err := s.opts.Accounts.Start(r.Context(), run.MCPUser(u), r.PathValue("name"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"auth_url": link})
}

func (s *Server) disconnectOAuth(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	if err := s.opts.Accounts.Disconnect(r.Context(), userFrom(r.Context()).ID, r.PathValue("name")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// oauthCallback is where authorization servers send users back. The state
// names the flow and its user (it is a one-time secret), so the route needs
// no session: the answer may reach any replica, in any browser. It sends the
// browser on to the UI's page of accounts, saying how it went.
func (s *Server) oauthCallback(w http.ResponseWriter, r *http.Request) {
	if !s.accountsReady(w, r) {
		return
	}
	q := r.URL.Query()
	back := url.Values{}
	// The browser's own Relay user, when it is signed in: a flow another
	// user started is refused to it.
	by := ""
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		if u, _, err := s.opts.Auth.AuthenticateSession(r.Context(), c.Value); err == nil {
			by = u.ID
		}
	}
	if e := q.Get("error"); e != "" {
		// The user refused, or the server could not authorize: the flow is
		// over either way.
		_, _, _ = s.opts.Accounts.Finish(r.Context(), q.Get("state"), "", "", by)
		back.Set("error", "the authorization server answered: "+e+" "+q.Get("error_description"))
	} else {
		server, _, err := s.opts.Accounts.Finish(r.Context(), q.Get("state"), q.Get("code"), q.Get("iss"), by)
		if err != nil {
			msg := "internal error; the server log has the details"
			var fe *fault.Error
			if fault.KindOf(err) != fault.Internal && errors.As(err, &fe) {
				msg = fe.Message
			}
			s.log.WarnContext(r.Context(), "mcp authorization failed", slog.String("err", err.Error()))
			back.Set("error", msg)
		} else {
			back.Set("connected", server)
		}
	}
	http.Redirect(w, r, "/connections?"+back.Encode(), http.StatusSeeOther)
}
