package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/relay-ai/relay/internal/fault"
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

// scheduleRuns answers GET /api/schedules/{id}/runs?limit=&cursor=: a page of
// the schedule's firings, newest first, paged as GET /api/runs is.
func (s *Server) scheduleRuns(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q := schedule.FiringQuery{ScheduleID: r.PathValue("id"), Limit: n, Cursor: r.URL.Query().Get("cursor")}
	page, err := s.opts.Schedules.Firings(r.Context(), userFrom(r.Context()), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Firings == nil {
		page.Firings = []*schedule.Firing{}
	}
	writeJSON(w, http.StatusOK, page)
}

// previewSchedule answers GET /api/schedules/preview?cron=&timezone=&count=
// (or run_at=): when a schedule written so would fire next, computed as the
// scheduler computes it.
func (s *Server) previewSchedule(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	in := schedule.PreviewInput{Cron: q.Get("cron"), Timezone: q.Get("timezone")}
	var fs fault.Fields
	if v := q.Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			fs.Add("count", "must be a whole number from 1 to %d", schedule.MaxPreview)
		}
		in.Count = n
		if n == 0 {
			in.Count = -1 // given as 0: out of range, not the default
		}
	}
	if v := q.Get("run_at"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			fs.Add("run_at", "must be an RFC 3339 time, such as 2026-03-29T07:00:00+02:00")
		} else {
			in.RunAt = &t
		}
	}
	if err := fs.Err("invalid schedule"); err != nil {
		s.writeError(w, r, err)
		return
	}
	times, err := s.opts.Schedules.Preview(in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]string, len(times))
	for i, t := range times {
		out[i] = t.Format(time.RFC3339)
	}
	writeJSON(w, http.StatusOK, map[string]any{"times": out})
}
