package httpapi

import (
	"net/http"

	"github.com/relay-ai/relay/internal/schedule"
)

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) {
	list, err := s.opts.Schedules.List(r.Context(), userFrom(r.Context()))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if list == nil {
		list = []*schedule.Schedule{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": list})
}

func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) {
	var in schedule.Input
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := s.opts.Schedules.Create(r.Context(), userFrom(r.Context()), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Location", "/api/schedules/"+sc.ID)
	writeJSON(w, http.StatusCreated, sc)
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) {
	sc, err := s.opts.Schedules.Get(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request) {
	var in schedule.Input
	if err := decode(r, &in); err != nil {
		s.writeError(w, r, err)
		return
	}
	sc, err := s.opts.Schedules.Update(r.Context(), userFrom(r.Context()), r.PathValue("id"), in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sc)
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Schedules.Delete(r.Context(), userFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) runSchedule(w http.ResponseWriter, r *http.Request) {
	f, err := s.opts.Schedules.RunNow(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, f)
}

func (s *Server) scheduleRuns(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	fs, err := s.opts.Schedules.Firings(r.Context(), userFrom(r.Context()), r.PathValue("id"), n)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if fs == nil {
		fs = []*schedule.Firing{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"data": fs})
}
