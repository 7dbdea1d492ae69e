package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/graph"
)

// createAgentRequest is the body of POST /api/agents: an agent's Spec and,
// optionally, the id to give it (kept when importing agents from elsewhere).
type createAgentRequest struct {
	ID string `json:"id"`
	agent.Spec
}

func (s *Server) createAgent(w http.ResponseWriter, r *http.Request) {
	var req createAgentRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, readOnly(err))
		return
	}
	a, err := s.opts.Agents.Create(r.Context(), userFrom(r.Context()), req.ID, req.Spec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/agents/"+a.ID)
	writeJSON(w, http.StatusCreated, a)
}

func (s *Server) getAgent(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Agents.Show(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) listAgents(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r, 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	opts := agent.ListOptions{Cursor: r.URL.Query().Get("cursor"), Limit: n}
	page, err := s.opts.Agents.List(r.Context(), userFrom(r.Context()), opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Agents == nil {
		page.Agents = []*agent.Agent{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) patchAgent(w http.ResponseWriter, r *http.Request) {
	var patch map[string]json.RawMessage
	if err := decode(r, &patch); err != nil {
		s.writeError(w, r, err)
		return
	}
	a, err := s.opts.Agents.Patch(r.Context(), userFrom(r.Context()), r.PathValue("id"), patch)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

func (s *Server) deleteAgent(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Agents.Delete(r.Context(), userFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) agentVersions(w http.ResponseWriter, r *http.Request) {
	vs, err := s.opts.Agents.Versions(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": vs})
}

// restoreVersion answers POST /api/agents/{id}/versions/{version}/restore:
// the version's spec becomes the agent's next version.
func (s *Server) restoreVersion(w http.ResponseWriter, r *http.Request) {
	v, err := strconv.Atoi(r.PathValue("version"))
	if err != nil || v < 1 {
		s.writeError(w, r, fault.New(fault.NotFound, "agent %q has no version %q", r.PathValue("id"), r.PathValue("version")))
		return
	}
	a, err := s.opts.Agents.Restore(r.Context(), userFrom(r.Context()), r.PathValue("id"), v)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, a)
}

// agentShares answers GET /api/agents/{id}/shares.
func (s *Server) agentShares(w http.ResponseWriter, r *http.Request) {
	shares, err := s.opts.Agents.Shares(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": shares})
}

// setAgentSharesRequest is the body of PUT /api/agents/{id}/shares.
type setAgentSharesRequest struct {
	Shares []struct {
		PrincipalType auth.PrincipalType `json:"principal_type"`
		PrincipalID   string             `json:"principal_id"`
		Role          agent.Role         `json:"role"`
	} `json:"shares"`
}

// setAgentShares answers PUT /api/agents/{id}/shares: the list given
// replaces the agent's shares.
func (s *Server) setAgentShares(w http.ResponseWriter, r *http.Request) {
	var req setAgentSharesRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Shares == nil {
		s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid shares", Fields: []fault.FieldError{{Field: "shares", Message: "required: the whole list of shares ([] for none)"}}})
		return
	}
	in := make([]agent.Share, len(req.Shares))
	for i, sh := range req.Shares {
		in[i] = agent.Share{PrincipalType: sh.PrincipalType, PrincipalID: sh.PrincipalID, Role: sh.Role}
	}
	shares, err := s.opts.Agents.SetShares(r.Context(), userFrom(r.Context()), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": shares})
}

// readOnly rewords "unknown field" for the fields of an agent that only Relay sets.
func readOnly(err error) error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		for i, f := range fe.Fields {
			if f.Message == "unknown field" && agent.ReadOnlyField(f.Field) {
				fe.Fields[i].Message = "read-only: set by Relay"
			}
		}
	}
	return err
}

// agentGraph answers GET /api/agents/{id}/graph: the agents and edges reached
// from an agent, its start set and parallel groups, and warnings; with
// ?format=mermaid, a Mermaid flowchart.
func (s *Server) agentGraph(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	g, err := graph.Resolve(r.PathValue("id"), graph.Lookup(s.opts.Agents.Lookup(r.Context(), u)))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if r.URL.Query().Get("format") == "mermaid" {
		w.Header().Set("Content-Type", "text/vnd.mermaid; charset=utf-8")
		_, _ = w.Write([]byte(g.Mermaid()))
		return
	}
	type node struct {
		ID   string `json:"id"`
		Name string `json:"name,omitempty"`
	}
	agents := make([]node, 0, len(g.Order))
	for _, id := range g.Order {
		agents = append(agents, node{ID: id, Name: g.Agents[id].Name})
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": agents, "graph": g})
}
