package httpapi

import (
	"net/http"

	"github.com/relay-ai/relay/internal/memory"
)

// memories is the memory service or, when Options.Memory is nil, a disabled
// one: reads are empty and writes say that memory is disabled.
func (s *Server) memories() *memory.Service {
	if s.opts.Memory == nil {
		return memory.NewService(nil, memory.Config{Disabled: true}, nil)
	}
	return s.opts.Memory
}

// memoryList is the body of GET /api/memories: the user's entries, oldest update
// first, their total tokens, and the configured cap (0 for none).
type memoryList struct {
	Data       []memory.Entry `json:"data"`
	TokenCount int            `json:"token_count"`
	TokenLimit int            `json:"token_limit"`
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request) {
	svc := s.memories()
	es, err := svc.List(r.Context(), userFrom(r.Context()).ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, memoryList{Data: es, TokenCount: memory.TotalTokens(es), TokenLimit: svc.TokenLimit()})
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request) {
	e, err := s.memories().Get(r.Context(), userFrom(r.Context()).ID, r.PathValue("key"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

// putMemoryRequest is the body of PUT /api/memories/{key}.
type putMemoryRequest struct {
	Value string `json:"value"`
}

func (s *Server) putMemory(w http.ResponseWriter, r *http.Request) {
	var req putMemoryRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.memories().Put(r.Context(), userFrom(r.Context()).ID, r.PathValue("key"), req.Value)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request) {
	if err := s.memories().Delete(r.Context(), userFrom(r.Context()).ID, r.PathValue("key")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
