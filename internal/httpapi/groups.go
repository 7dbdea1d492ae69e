package httpapi

import (
	"net/http"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// groups returns the group service, or an error saying that this server has none.
func (s *Server) groups() (*auth.Groups, error) {
	if s.opts.Groups == nil {
		return nil, fault.New(fault.Unavailable, "groups are not available on this server")
	}
	return s.opts.Groups, nil
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list, err := g.List(r.Context(), userFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list})
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in auth.GroupInput
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := g.Create(r.Context(), userFrom(r.Context()), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/groups/"+v.ID)
	writeJSON(w, http.StatusCreated, v)
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := g.Get(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) patchGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var in auth.GroupInput
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	v, err := g.Update(r.Context(), userFrom(r.Context()), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := g.Delete(r.Context(), userFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// searchPrincipals answers GET /api/principals?q=: the users and groups an
// agent may be shared with whose names (or users' emails) contain q.
func (s *Server) searchPrincipals(w http.ResponseWriter, r *http.Request) {
	g, err := s.groups()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := g.SearchPrincipals(r.Context(), r.URL.Query().Get("q"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, p)
}
