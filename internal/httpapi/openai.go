package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/window"
)

// messageContent reads the content of a message, at field (messages[i].content):
// a string, or an array of parts whose text parts are joined and whose
// image_url parts, as data: URLs, are the message's images. Parts of any
// other type are refused, and so is an image Relay would refuse, naming its
// part (field[j]).
func messageContent(field string, raw json.RawMessage) (string, []run.Image, error) {
	if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
		return "", nil, nil // an assistant message with tool_calls may have none
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		Refusal  string `json:"refusal"` // an assistant's, sent back in the history
		ImageURL *struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, invalidField(field, "must be a string or an array of parts")
	}
	var b strings.Builder
	var images []run.Image
	for j, p := range parts {
		switch p.Type {
		case "text":
			b.WriteString(p.Text)
		case "refusal":
			b.WriteString(p.Refusal)
		case "image_url":
			if p.ImageURL == nil {
				return "", nil, invalidField(field, "an image_url part needs image_url.url")
			}
			rest, ok := strings.CutPrefix(p.ImageURL.URL, "data:")
			mime, data, isBase64 := strings.Cut(rest, ";base64,")
			if !ok || !isBase64 {
				return "", nil, invalidField(field, "image_url.url must be a data: URL (data:image/png;base64,…); Relay does not fetch images")
			}
			img := run.Image{MIMEType: mime, Data: data}
			// Checked here, not only by the run, so that the error names the
			// part the client sent rather than Relay's own images[k] fields.
			if fs := img.Check(); len(fs) > 0 {
				what := "data"
				if fs[0].Field == "mime_type" {
					what = fmt.Sprintf("media type %q", mime)
				}
				return "", nil, invalidField(fmt.Sprintf("%s[%d]", field, j), "image_url.url: %s: %s", what, fs[0].Message)
			}
			images = append(images, img)
		case "":
			return "", nil, invalidField(field, "a part needs its type (text, image_url or refusal)")
		default:
			// Audio, files and the rest would reach the agent as nothing.
			return "", nil, invalidField(field, "parts of type %q are not supported: Relay reads text, image_url and refusal parts", p.Type)
		}
	}
	return b.String(), images, nil
}

// completions answers POST /v1/chat/completions by running the agent named by
// model; the agent's tools run inside Relay, the client's are handed back
// (docs/api.md "OpenAI-compatible").
func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	req, err := readCompletion(r)
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	chat, err := req.chatRequest()
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	u := userFrom(r.Context())
	rn, err := s.opts.Runs.Start(r.Context(), u, chat)
	if fault.Is(err, fault.NotFound) {
		// The agent is what is missing, unless it is there (something the
		// run needs is not): only the agent's 404 is OpenAI's unknown model.
		if _, aerr := s.opts.Agents.Cached().Get(r.Context(), u, req.Model); fault.Is(aerr, fault.NotFound) {
			err = unknownModel(err)
		}
	}
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	s.answerRun(w, r, u, rn.ID, completionOut{
		id: completionID(rn.ID), created: time.Now().Unix(), model: req.Model,
		stream: req.Stream, includeUsage: req.IncludeUsage,
	})
}

// completionOut says how a run is answered as a chat completion.
type completionOut struct {
	id      string // "chatcmpl-…"
	created int64
	model   string // the agent's id
	// stream sends chat.completion.chunk events; includeUsage adds the
	// usage chunk OpenAI's stream_options.include_usage asks for.
	stream, includeUsage bool
}

// completionID is the chat completion id of a run, and runOfCompletion the
// run of a chat completion id.
func completionID(runID string) string { return "chatcmpl-" + strings.TrimPrefix(runID, "run_") }

func runOfCompletion(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, "chatcmpl-")
	return "run_" + rest, ok && rest != ""
}

// storedCompletion answers GET /v1/chat/completions/{id}: the completion of
// one of the user's runs, once the run has ended, as OpenAI returns a stored
// completion; with ?stream=true its chunks from the run's start, so a client
// whose stream broke off reads the answer again from any replica
// (docs/api.md "OpenAI-compatible").
func (s *Server) storedCompletion(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	runID, ok := runOfCompletion(r.PathValue("id"))
	if !ok {
		s.writeOpenAIError(w, r, fault.New(fault.NotFound, "no chat completion %q", r.PathValue("id")))
		return
	}
	rn, err := s.opts.Runs.Find(r.Context(), u, runID)
	if fault.Is(err, fault.NotFound) {
		err = fault.New(fault.NotFound, "no chat completion %q", r.PathValue("id"))
	}
	if err != nil {
		s.writeOpenAIError(w, r, err)
		return
	}
	s.answerRun(w, r, u, rn.ID, completionOut{
		id: completionID(rn.ID), created: rn.CreatedAt.Unix(), model: rn.AgentID,
		stream: r.URL.Query().Get("stream") == "true",
	})
}

// answerRun follows run runID to its end and writes it as a chat completion.
func (s *Server) answerRun(w http.ResponseWriter, r *http.Request, u *auth.User, runID string, out completionOut) {
	id, created := out.id, out.created
	// send writes one piece of a streamed answer; a request without stream
	// sends nothing until the end.
	var st *lazyStream
	send := func(b []byte) error {
		if st == nil {
			return nil
		}
		return st.write(b)
	}
	// streamed reports whether the answer is a stream that has begun: an
	// error is then its last data line; else the error is answered whole,
	// with its status, as without streaming.
	streamed := func() bool { return st != nil && !st.whole() }
	if out.stream {
		st = beginLazily(w, chunkData(id, created, out.model, map[string]any{"role": "assistant", "content": ""}, nil, nil))
		defer st.close()
	}
	// With hide_sequential_outputs only the final agent's text is the answer, so
	// a stream sends no text until the run ends, then the saved answer's text:
	// the same as the answer without streaming, whichever agents spoke last.
	hide := false
	if a, err := s.opts.Agents.Cached().Get(r.Context(), u, out.model); err == nil {
		hide = a.HideSequentialOutputs
	}
	var finished *run.RunFinished
	// The saved answer's text is its text parts joined with a blank line
	// (docs/api.md "POST /api/chat"): the stream sends the same blank line
	// where a new part begins (after a tool call, or another agent's text),
	// so that its pieces put together are the answer's text.
	var breaks run.PartBreaks
	follow := s.opts.Runs.FollowBursts(r.Context(), u, runID, 0)
	if !out.stream {
		follow = s.opts.Runs.FollowEnd(r.Context(), u, runID) // the saved answer has it all
	}
	for evs, err := range follow {
		if err != nil {
			if r.Context().Err() != nil {
				return // the client went away
			}
			s.log.WarnContext(r.Context(), "following a run", "run_id", runID, "err", err)
			break
		}
		for _, e := range evs {
			if !out.stream && e.Type != run.EventRunFinished {
				continue // the saved answer has it all
			}
			p, err := e.Payload()
			if err != nil {
				continue
			}
			switch p := p.(type) {
			case run.MessageDelta:
				if hide || p.Text == "" {
					break
				}
				text := p.Text
				if breaks.Text(p.AgentID) {
					text = run.PartSep + text
				}
				// name says which agent wrote the text (several may in one run)
				err = send(chunkData(id, created, out.model, map[string]any{"content": text, "name": p.AgentID}, nil, nil))
			case run.ToolStarted:
				breaks.ToolStarted(p.AgentID)
			case run.MessageImage:
				err = send(chunkData(id, created, out.model, map[string]any{"images": []any{imageURL(p.MIMEType, p.Data)}, "name": p.AgentID}, nil, nil))
			case run.RunFinished:
				finished = &p
				if hide && p.Message != nil && p.Message.Text != "" {
					err = send(chunkData(id, created, out.model, map[string]any{"content": p.Message.Text, "name": author(p.Message)}, nil, nil))
				}
			}
			if err != nil {
				return // the client went away
			}
		}
		if st != nil && st.flush() != nil {
			return // the client went away
		}
	}
	if finished == nil {
		finished = &run.RunFinished{Status: run.StatusFailed, Error: "the run ended without finishing"}
	}
	answer := finished.Message
	if answer == nil {
		answer = &run.Message{}
	}
	if finished.Status == run.StatusCancelled {
		// Aborted (POST /api/runs/{id}/abort): what was written of the answer
		// is stored, but is no answer to pass for a finished one.
		e := map[string]any{"message": "the run was " + cmp.Or(finished.Error, "cancelled"), "type": "relay_run_cancelled", "param": nil, "code": "run_cancelled"}
		if streamed() {
			_ = send(dataLine(map[string]any{"error": e}))
			return
		}
		w.Header().Set("X-Should-Retry", "false")
		writeJSON(w, http.StatusConflict, map[string]any{"error": e})
		return
	}
	if finished.Status != run.StatusSucceeded {
		if strings.HasPrefix(finished.Error, window.ErrorPrefix) {
			// Nothing reached the model: the conversation is too long for it,
			// which OpenAI answers as a bad request.
			e := map[string]any{"message": finished.Error, "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}
			if streamed() {
				_ = send(dataLine(map[string]any{"error": e}))
				return
			}
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": e})
			return
		}
		if streamed() {
			_ = send(dataLine(map[string]any{"error": map[string]any{"message": finished.Error, "type": "relay_run_failed", "param": nil, "code": "run_failed"}}))
			return
		}
		// The run happened (its tools ran, its conversation is saved): a
		// client must not send it again on its own, as OpenAI's SDKs do with
		// a 5xx unless told not to.
		w.Header().Set("X-Should-Retry", "false")
		writeJSON(w, http.StatusBadGateway, map[string]any{"error": map[string]any{"message": finished.Error, "type": "relay_run_failed", "param": nil, "code": "run_failed"}})
		return
	}
	reason := finishReason(finished.FinishReason)
	calls := clientCalls(answer)
	if len(calls) > 0 {
		reason = llm.FinishToolCalls
	}
	usage := map[string]int{"prompt_tokens": finished.Usage.PromptTokens, "completion_tokens": finished.Usage.CompletionTokens, "total_tokens": finished.Usage.TotalTokens}
	if out.stream {
		if len(calls) > 0 {
			deltas := make([]any, len(calls))
			for i, c := range calls {
				c["index"] = i
				deltas[i] = c
			}
			_ = send(chunkData(id, created, out.model, map[string]any{"tool_calls": deltas}, nil, nil))
		}
		if out.includeUsage { // OpenAI's last chunk: no choices, the usage
			_ = send(chunkData(id, created, out.model, map[string]any{}, &reason, nil))
			_ = send(dataLine(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": out.model, "choices": []any{}, "usage": usage}))
		} else {
			_ = send(chunkData(id, created, out.model, map[string]any{}, &reason, usage))
		}
		_ = send([]byte("data: [DONE]\n\n"))
		return
	}
	msg := map[string]any{"role": "assistant", "content": answer.Text}
	if name := author(answer); name != "" { // no text, no writer to name
		msg["name"] = name
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
		if answer.Text == "" {
			msg["content"] = nil
		}
	}
	if images := answerImages(answer); len(images) > 0 {
		msg["images"] = images
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"id": id, "object": "chat.completion", "created": created, "model": out.model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": reason}},
		"usage":   usage,
	})
}

// imageURL is an image as an OpenAI-style image_url part with a data: URL, the
// shape in which OpenAI-compatible servers return images a model made.
func imageURL(mimeType, data string) map[string]any {
	return map[string]any{"type": "image_url", "image_url": map[string]string{"url": "data:" + mimeType + ";base64," + data}}
}

// answerImages are the answer's images as image_url parts, in order.
func answerImages(m *run.Message) []any {
	var out []any
	for _, p := range m.Parts {
		if p.Type == run.PartImage {
			out = append(out, imageURL(p.MIMEType, p.Data))
		}
	}
	return out
}

// clientCalls are the answer's calls of the client's functions, as OpenAI's
// tool_calls.
func clientCalls(m *run.Message) []map[string]any {
	var out []map[string]any
	for _, p := range m.Parts {
		if p.Type == run.PartClientCall && p.Tool != nil {
			out = append(out, map[string]any{"id": p.Tool.ID, "type": "function", "function": map[string]any{"name": p.Tool.Name, "arguments": p.Tool.Arguments}})
		}
	}
	return out
}

// author is the agent that wrote the answer's last text.
func author(m *run.Message) string {
	for i := len(m.Parts) - 1; i >= 0; i-- {
		if p := m.Parts[i]; p.Type == run.PartText {
			return p.AgentID
		}
	}
	return ""
}

// finishReason is the finish_reason of a run's answer without client calls,
// from why its last model answer ended: "length" when the model's token limit
// cut it, "content_filter" when the provider filtered the rest, else "stop"
// (a run that ran its tools and answered stopped, whatever its steps said).
func finishReason(last string) string {
	switch last {
	case llm.FinishLength, llm.FinishFiltered:
		return last
	}
	return llm.FinishStop
}

// chunkData is one chat.completion.chunk as an SSE data line.
func chunkData(id string, created int64, model string, delta map[string]any, finish *string, usage map[string]int) []byte {
	chunk := map[string]any{
		"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	}
	if usage != nil {
		chunk["usage"] = usage
	}
	return dataLine(chunk)
}

// dataLine is v as an SSE data line.
func dataLine(v any) []byte {
	return fmt.Appendf(nil, "data: %s\n\n", mustJSON(v))
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// openAIFault is an error that OpenAI answers with a param and code of its
// own, which /v1 gives in place of Relay's field and kind.
type openAIFault struct {
	err         error
	param, code string
}

func (e *openAIFault) Error() string { return e.err.Error() }
func (e *openAIFault) Unwrap() error { return e.err }

// unknownModel is err, an agent's 404, as OpenAI answers a model that does
// not exist: param "model", code "model_not_found" (docs/api.md
// "OpenAI-compatible").
func unknownModel(err error) error {
	return &openAIFault{err: err, param: "model", code: "model_not_found"}
}

// writeOpenAIError answers in the error shape OpenAI clients understand.
func (s *Server) writeOpenAIError(w http.ResponseWriter, r *http.Request, err error) {
	if s.clientGone(w, r, err) {
		return
	}
	err = s.outage(r, err)
	kind := fault.KindOf(err)
	msg := "internal error; the server log has the details"
	if kind != fault.Internal {
		msg = err.Error()
	} else {
		s.log.ErrorContext(r.Context(), "request failed", "path", r.URL.Path, "err", err)
	}
	typ := "invalid_request_error"
	switch kind {
	case fault.Unauthorized:
		typ = "authentication_error"
	case fault.NotFound:
		typ = "not_found_error"
	case fault.Internal, fault.Unavailable:
		typ = "server_error"
	case fault.RateLimited, fault.QuotaExceeded:
		typ = "rate_limit_error" // OpenAI's type for a 429
	}
	var param any // OpenAI's param: the field at fault, or null
	code := string(kind)
	if fe, ok := errors.AsType[*fault.Error](err); ok && kind != fault.Internal && len(fe.Fields) > 0 {
		param = fe.Fields[0].Field
	}
	if of, ok := errors.AsType[*openAIFault](err); ok && kind != fault.Internal {
		param, code = of.param, of.code
	}
	setRetryAfter(w, err)
	writeJSON(w, status(kind), map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": param, "code": code}})
}

// model answers GET /v1/models/{id}: an agent the key may use, or a 404.
func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	a, err := s.opts.Agents.Get(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		if fault.Is(err, fault.NotFound) || fault.Is(err, fault.Forbidden) {
			err = unknownModel(fault.New(fault.NotFound, "the model %q does not exist or you do not have access to it", r.PathValue("id")))
		}
		s.writeOpenAIError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, modelObject(a))
}

// modelObject is an agent as an OpenAI model object.
func modelObject(a *agent.Agent) map[string]any {
	return map[string]any{"id": a.ID, "object": "model", "created": a.CreatedAt.Unix(), "owned_by": "relay", "name": a.Name}
}

// models answers GET /v1/models with the agents the key may use.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	u := userFrom(r.Context())
	var data []any
	opts := agent.ListOptions{Limit: 1000}
	for {
		page, err := s.opts.Agents.List(r.Context(), u, opts)
		if err != nil {
			s.writeOpenAIError(w, r, err)
			return
		}
		for _, a := range page.Agents {
			data = append(data, modelObject(a))
		}
		if page.NextCursor == "" {
			break
		}
		opts.Cursor = page.NextCursor
	}
	if data == nil {
		data = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}
