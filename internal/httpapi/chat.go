package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ragas"
	"github.com/relay-ai/relay/internal/run"
)

// chat starts a run for the user's message and streams its events (SSE).
func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	var req run.ChatRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	rn, err := s.opts.Runs.Start(r.Context(), userFrom(r.Context()), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Relay-Run-Id", rn.ID)
	s.streamRun(w, r, rn.ID, 0)
}

// runEvents streams a run's events after Last-Event-ID (or ?after=), then the
// ones still to come: how a client that lost its connection catches up.
func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	after := int64(0)
	v, from := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, from = r.URL.Query().Get("after"), "after"
	}
	if v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			s.writeError(w, r, fault.New(fault.Invalid, "%s must be an event id (a whole number), got %q", from, v))
			return
		}
		after = n
	}
	// Checked before the stream starts, so that it is answered with its status.
	if _, err := s.opts.Runs.Find(r.Context(), userFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	s.streamRun(w, r, r.PathValue("id"), after)
}

// streamRun writes the events of a run after `after` as SSE, each with its
// id, as run.Service.FollowBursts yields them, a burst a flush: until run.finished, or until the
// client goes away. A failure of the store ends the stream early; the client
// resumes from the last id it has.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, runID string, after int64) {
	st := startSSE(w)
	defer st.close()
	buf := make([]byte, 0, 1024)
	for evs, err := range s.opts.Runs.FollowBursts(r.Context(), userFrom(r.Context()), runID, after) {
		if err != nil {
			if r.Context().Err() == nil {
				s.log.WarnContext(r.Context(), "following a run", "run_id", runID, "err", err)
			}
			return
		}
		buf = buf[:0]
		for _, e := range evs {
			buf = appendEvent(buf, e)
		}
		if st.write(buf) != nil || st.flush() != nil {
			return
		}
	}
}

// appendEvent appends e as an SSE event: its id, its kind and its data.
func appendEvent(b []byte, e run.Event) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, "\nevent: "...)
	b = append(b, e.Type...)
	b = append(b, "\ndata: "...)
	b = append(b, e.Data...)
	return append(b, "\n\n"...)
}

func (s *Server) abortRun(w http.ResponseWriter, r *http.Request) {
	rn, err := s.opts.Runs.Abort(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rn)
}

// answerElicitation records the user's answer to a question an MCP server
// asked during one of the run's tool calls (docs/api.md "Questions").
func (s *Server) answerElicitation(w http.ResponseWriter, r *http.Request) {
	var req run.AnswerRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	e, err := s.opts.Runs.Answer(r.Context(), userFrom(r.Context()), r.PathValue("id"), r.PathValue("eid"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, e)
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	d, err := s.opts.Runs.Get(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

// listConversations answers GET /api/conversations?limit=&cursor=&q=: one
// page of the user's conversations, most recently updated first, those whose
// title contains q when it is set (docs/api.md "Runs and conversations").
func (s *Server) listConversations(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	v := r.URL.Query()
	q := run.ConversationQuery{Limit: n, Cursor: v.Get("cursor"), Title: strings.TrimSpace(v.Get("q"))}
	page, err := s.opts.Runs.Conversations(r.Context(), userFrom(r.Context()), q)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if page.Conversations == nil {
		page.Conversations = []*run.Conversation{}
	}
	writeJSON(w, http.StatusOK, page)
}

func (s *Server) getConversation(w http.ResponseWriter, r *http.Request) {
	t, err := s.opts.Runs.Conversation(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

// renameConversation sets a conversation's title: {"title": "..."}.
func (s *Server) renameConversation(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Title *string `json:"title"`
	}
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Title == nil {
		s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid conversation", Fields: []fault.FieldError{{Field: "title", Message: "required"}}})
		return
	}
	c, err := s.opts.Runs.RenameConversation(r.Context(), userFrom(r.Context()), r.PathValue("id"), *req.Title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, c)
}

func (s *Server) deleteConversation(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Runs.DeleteConversation(r.Context(), userFrom(r.Context()), r.PathValue("id")); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// whose reads ?user= of a list or an export: whose records the caller asks
// for, as a user id ("" for everyone's). Without it, def. Anyone may name
// themself (by id or email); only an admin may name another user (an unknown
// one is 404) or "all" (everyone's); anyone else gets 403 naming user.
func (s *Server) whose(r *http.Request, def string) (string, error) {
	u := userFrom(r.Context())
	ref := strings.TrimSpace(r.URL.Query().Get("user"))
	switch {
	case ref == "":
		return def, nil
	case ref == u.ID || strings.EqualFold(ref, u.Email):
		return u.ID, nil
	case !u.IsAdmin():
		return "", fault.New(fault.Forbidden, "user: only an admin may ask for another user's runs")
	case ref == "all":
		return "", nil
	}
	other, err := s.opts.Auth.FindUser(r.Context(), ref)
	if err != nil {
		return "", err
	}
	return other.ID, nil
}

// listRuns answers GET /api/runs?agent_id=&status=&limit=&cursor=&user=:
// the caller's runs, newest first, paged; an admin may ask for another
// user's (user=ID or EMAIL) or everyone's (user=all).
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	n, err := limit(r, 50)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	u := userFrom(r.Context())
	q := r.URL.Query()
	rq := run.RunQuery{AgentID: q.Get("agent_id"), Status: run.Status(q.Get("status")), Limit: n, Cursor: q.Get("cursor")}
	if rq.UserID, err = s.whose(r, u.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	page, err := s.opts.Runs.List(r.Context(), u, rq)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// exportRagas writes the user's succeeded runs (everyone's, for admins) as a
// Ragas dataset: ?agent=ID&since=YYYY-MM-DD&multi_turn=true&user=ID|EMAIL, or
// the runs named by ?run_id=A&run_id=B. Only an admin may name another user,
// or another user's run.
func (s *Server) exportRagas(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	q := r.URL.Query()
	opts := ragas.Options{AgentID: q.Get("agent"), Retrieval: s.opts.Retrieval}
	switch v := q.Get("multi_turn"); v {
	case "", "false":
	case "true":
		opts.MultiTurn = true
	default: // never read as false
		s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid export", Fields: []fault.FieldError{{
			Field: "multi_turn", Message: fmt.Sprintf("must be true or false, not %q", v)}}})
		return
	}
	def := u.ID
	if u.IsAdmin() {
		def = ""
	}
	var err error
	if opts.UserID, err = s.whose(r, def); err != nil {
		s.writeError(w, r, err)
		return
	}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			if t, err = time.Parse(time.RFC3339, v); err != nil {
				s.writeError(w, r, fault.New(fault.Invalid, "since must be a date (YYYY-MM-DD) or an RFC 3339 time"))
				return
			}
		}
		opts.Since = t
	}
	if ids, ok := q["run_id"]; ok {
		for _, name := range []string{"agent", "since", "user"} {
			if q.Has(name) {
				s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid export", Fields: []fault.FieldError{{
					Field: name, Message: "not with run_id: the runs named are exported"}}})
				return
			}
		}
		opts.RunIDs = ids // of the caller's runs, or anyone's for an admin (def)
	}
	ew := &exportWriter{w: w}
	if _, err := (&ragas.Exporter{Store: s.opts.Runs.Store}).Export(r.Context(), ew, opts); err != nil {
		if !ew.started {
			s.writeError(w, r, err)
			return
		}
		s.log.ErrorContext(r.Context(), "ragas export", "err", err)
		return
	}
	if !ew.started {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	}
}

// exportWriter writes an export's lines, sending its headers with the first:
// an error found before any line is still answered with its own status.
type exportWriter struct {
	w       http.ResponseWriter
	started bool
}

func (e *exportWriter) Write(p []byte) (int, error) {
	if !e.started {
		e.started = true
		e.w.Header().Set("Content-Type", "application/x-ndjson")
		e.w.WriteHeader(http.StatusOK)
	}
	return e.w.Write(p)
}
