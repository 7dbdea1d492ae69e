package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/relay-ai/relay/internal/fault"
)

// healthz answers as soon as the process serves HTTP.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok", "version": s.opts.Version})
}

// readyz answers 200 once the database is reachable and migrated, else 503 with the reason.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.opts.Ready(ctx); err != nil {
		s.writeError(w, r, fault.Wrap(fault.Unavailable, nil, "not ready: %v", err))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, userFrom(r.Context()))
}
