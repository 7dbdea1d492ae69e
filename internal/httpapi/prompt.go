package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/prompt"
	"github.com/relay-ai/relay/internal/run"
)

// promptRequest is the body of POST /api/agents/{id}/prompt.
type promptRequest struct {
	Text string `json:"text"`
	// Attachments are file ids, or {"name", "mime_type"} for files not uploaded.
	Attachments []json.RawMessage `json:"attachments"`
	Timezone    string            `json:"timezone"`
	// ConversationID previews the next message of one of the caller's
	// conversations: its history is sent too, and fitted into the budget.
	ConversationID  string `json:"conversation_id"`
	ParentMessageID string `json:"parent_message_id"`
	// Spec holds unsaved edits of the agent, fields as PATCH takes them: the
	// preview is of the agent as it would be with them (the builder's preview).
	Spec map[string]json.RawMessage `json:"spec"`
}

func (s *Server) previewPrompt(w http.ResponseWriter, r *http.Request) {
	var req promptRequest
	if err := decode(r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	rr := run.Request{AgentID: r.PathValue("id"), Text: req.Text, Timezone: req.Timezone}
	var ids []string
	for i, raw := range req.Attachments {
		var id string
		if json.Unmarshal(raw, &id) == nil {
			ids = append(ids, id)
			continue
		}
		var f struct {
			Name     string `json:"name"`
			MIMEType string `json:"mime_type"`
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil || f.Name == "" {
			s.writeError(w, r, &fault.Error{Kind: fault.Invalid, Message: "invalid request body", Fields: []fault.FieldError{{
				Field: "attachments[" + strconv.Itoa(i) + "]", Message: `must be a file id or {"name", "mime_type"}`}}})
			return
		}
		rr.Attached = append(rr.Attached, prompt.File{Filename: f.Name, Type: f.MIMEType})
	}
	if len(ids) > 0 {
		files, err := s.opts.Prompt.AttachedFiles(r.Context(), userFrom(r.Context()), ids)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rr.Attached = append(rr.Attached, files...)
	}
	u := userFrom(r.Context())
	if req.ConversationID != "" || req.ParentMessageID != "" {
		if s.opts.Runs == nil {
			s.writeError(w, r, fault.New(fault.Unavailable, "conversations are not available"))
			return
		}
		history, files, err := s.opts.Runs.History(r.Context(), u, req.ConversationID, req.ParentMessageID)
		if err == nil { // the files of the branch, as a run continuing it sees them
			rr.Attached, err = s.opts.Prompt.Attached(r.Context(), files, rr.Attached)
		}
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rr.History = history
	}
	if len(req.Spec) > 0 {
		draft, err := s.opts.Agents.Draft(r.Context(), u, rr.AgentID, req.Spec)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		rr.Agent = draft
	}
	out, err := s.opts.Prompt.Prepare(r.Context(), u, rr)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The body as the agent's provider client writes it.
	var models run.Models
	if s.opts.Runs != nil {
		models = s.opts.Runs.Models
	}
	body, warning, err := run.SentBody(r.Context(), models, u.ID, out.Agent.Provider, out.Request)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// The body is exactly the request; what is missing from it is said in headers.
	for _, p := range out.Unreachable {
		w.Header().Add("Relay-Warning", fmt.Sprintf("MCP server %q could not be reached (%s); the prompt has none of its tools", p.Server, p.Reason))
	}
	for _, warning := range out.Warnings {
		w.Header().Add("Relay-Warning", warning)
	}
	if warning != "" {
		w.Header().Add("Relay-Warning", warning)
	}
	if out.Fitter != nil {
		w.Header().Set("Relay-Context", out.Fitter.Report().Summary())
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}
