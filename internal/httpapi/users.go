package httpapi

import (
	"net/http"
	"strings"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// Users (admins only, docs/api.md "Users").

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request) {
	users, err := s.opts.Auth.ListUsers(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": users})
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string    `json:"email"`
		Name     string    `json:"name"`
		Role     auth.Role `json:"role"`
		Password string    `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	u, err := s.opts.Auth.CreateUser(r.Context(), auth.NewUser{Email: in.Email, DisplayName: in.Name, Role: in.Role, Password: in.Password})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, u)
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	u, err := s.opts.Auth.GetUser(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

func (s *Server) patchUser(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name     *string    `json:"name"`
		Role     *auth.Role `json:"role"`
		Disabled *bool      `json:"disabled"`
		Password *string    `json:"password"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	p := auth.UserPatch{Name: in.Name, Role: in.Role, Disabled: in.Disabled, Password: in.Password}
	u, err := s.opts.Auth.UpdateUser(r.Context(), userFrom(r.Context()), r.PathValue("id"), p, sessionID(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, u)
}

// API keys: one's own, or any user's for admins (docs/api.md "API keys").

// keyOwner returns the user whose keys a request is about: the caller, or
// for an admin the user id given (fault.NotFound when there is none).
func (s *Server) keyOwner(r *http.Request, id string) (*auth.User, error) {
	me := userFrom(r.Context())
	if id == "" || id == me.ID {
		return me, nil
	}
	if !me.IsAdmin() {
		return nil, fault.New(fault.Forbidden, "only admins may manage the keys of other users")
	}
	return s.opts.Auth.GetUser(r.Context(), id)
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) {
	u, err := s.keyOwner(r, r.URL.Query().Get("user"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	keys, err := s.opts.Auth.ListKeys(r.Context(), u.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": keys})
}

// newKey is a created key with its secret, which is shown this once.
type newKey struct {
	*auth.Key
	Secret string `json:"secret"`
}

// maxKeyName bounds a key's label.
const maxKeyName = 100

func (s *Server) createKey(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Name   string `json:"name"`
		UserID string `json:"user_id"`
	}
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	if n := len([]rune(strings.TrimSpace(in.Name))); n > maxKeyName {
		s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid key", Fields: []fault.FieldError{{Field: "name", Message: "at most 100 characters"}}})
		return
	}
	u, err := s.keyOwner(r, in.UserID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	k, secret, err := s.opts.Auth.CreateKey(r.Context(), u.ID, in.Name)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, newKey{Key: k, Secret: secret})
}

// deleteKey revokes a key of the caller's, or any key for an admin. Another
// user's key is not found, so that ids tell nothing.
func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) {
	me := userFrom(r.Context())
	k, err := s.opts.Auth.GetKey(r.Context(), r.PathValue("id"))
	if err == nil && k.UserID != me.ID && !me.IsAdmin() {
		err = fault.New(fault.NotFound, "API key %q not found", r.PathValue("id"))
	}
	if err == nil {
		err = s.opts.Auth.RevokeKey(r.Context(), k.ID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
