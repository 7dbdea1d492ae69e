package google

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// chunk is one GenerateContentResponse of the stream, with the fields Relay
// reads. An error in the middle of a stream comes as a chunk with "error".
type chunk struct {
	Candidates []struct {
		Content struct {
			Parts []responsePart `json:"parts"`
		} `json:"content"`
		FinishReason  string `json:"finishReason"`
		FinishMessage string `json:"finishMessage"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason        string `json:"blockReason"`
		BlockReasonMessage string `json:"blockReasonMessage"`
	} `json:"promptFeedback"`
	UsageMetadata *struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
		TotalTokenCount      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	Error *apiError `json:"error"`
}

type responsePart struct {
	Text         string `json:"text"`
	Thought      bool   `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	InlineData *struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
	ThoughtSignature string `json:"thoughtSignature"`
}

// reader turns the chunks of one answer into llm events and the turn.
type reader struct {
	provider.Output
	c            *Client
	turn         *llm.Turn
	model        string
	text         strings.Builder
	calls        []llm.ToolCall
	finishReason string
	// finishMessage is Gemini's words on why the answer stopped, if any.
	finishMessage string
	// blockReason and blockMessage say why Gemini blocked the prompt.
	blockReason, blockMessage string
	// images counts the images the model made.
	images int
	usage  llm.Usage
}

// Event handles one server-sent event, a chunk of the answer. The answer is
// complete when the stream ends after a finishReason.
func (r *reader) Event(ev sse.Event) (bool, error) {
	if le := r.chunk(ev.Data, r.model); le != nil {
		return false, le
	}
	return false, nil
}

// End completes the turn of a stream that ended cleanly after a
// finishReason.
func (r *reader) End(err error) error {
	if err != io.EOF {
		return err
	}
	if r.finishReason == "" {
		return errors.New("the stream ended before a finishReason")
	}
	r.finish()
	return nil
}

// chunk handles one chunk. Thoughts are not part of the answer and are
// skipped; an image the model made (inlineData) is passed on whole as an
// EventImage.
func (r *reader) chunk(data []byte, model string) *llm.Error {
	var ch chunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return &llm.Error{Kind: llm.ErrUnavailable, Message: "Google sent a chunk Relay cannot read: " + err.Error()}
	}
	if ch.Error != nil {
		return r.c.classify(model, ch.Error.Code, *ch.Error, 0)
	}
	if u := ch.UsageMetadata; u != nil {
		r.usage = llm.Usage{
			PromptTokens:     u.PromptTokenCount,
			CompletionTokens: u.CandidatesTokenCount + u.ThoughtsTokenCount,
			TotalTokens:      u.TotalTokenCount,
		}
		if r.usage.TotalTokens == 0 {
			r.usage.TotalTokens = r.usage.PromptTokens + r.usage.CompletionTokens
		}
	}
	if len(ch.Candidates) == 0 {
		if f := ch.PromptFeedback; f != nil && f.BlockReason != "" {
			r.finishReason = "SAFETY"
			r.blockReason, r.blockMessage = f.BlockReason, f.BlockReasonMessage
		}
		return nil
	}
	cand := ch.Candidates[0]
	for _, p := range cand.Content.Parts {
		switch {
		case p.Thought:
		case p.FunctionCall != nil:
			r.call(p)
		case p.InlineData != nil:
			r.images++
			r.Send(llm.Event{Kind: llm.EventImage, Image: &llm.Image{MIMEType: p.InlineData.MIMEType, Data: p.InlineData.Data}})
		case p.Text != "":
			r.addText(p.Text)
		}
	}
	if cand.FinishReason != "" {
		r.finishReason = cand.FinishReason
	}
	if cand.FinishMessage != "" {
		r.finishMessage = cand.FinishMessage
	}
	return nil
}

// call records a function call, which Gemini sends whole, and emits it as
// one delta.
func (r *reader) call(p responsePart) {
	fc := p.FunctionCall
	id := fc.ID
	if id == "" {
		id = r.c.newID()
	}
	args := "{}"
	if a := strings.TrimSpace(string(fc.Args)); a != "" && a != "null" {
		args = a
	}
	if p.ThoughtSignature != "" {
		r.c.sigs.put(id, p.ThoughtSignature)
	}
	r.Send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{
		Index: len(r.calls), ID: id, Name: fc.Name, ArgumentsDelta: args,
	}})
	r.calls = append(r.calls, llm.ToolCall{ID: id, Type: "function", Function: llm.FunctionCall{Name: fc.Name, Arguments: args}})
}

func (r *reader) addText(s string) {
	r.text.WriteString(s)
	r.Send(llm.Event{Kind: llm.EventText, Text: s})
}

// Partial fills the turn with what arrived.
func (r *reader) Partial() {
	r.turn.Text = r.text.String()
	r.turn.ToolCalls = r.calls
	r.turn.Usage = r.usage
}

// finish completes the turn and emits its usage.
func (r *reader) finish() {
	r.Partial()
	r.turn.FinishReason = finishReason(r.finishReason, len(r.calls) > 0)
	if r.turn.Usage != (llm.Usage{}) {
		r.Send(llm.Event{Kind: llm.EventUsage, Usage: r.turn.Usage})
	}
}

// Withheld is the error for a complete answer with nothing in it (no text,
// no function calls, no image) because Gemini blocked the prompt, a filter
// stopped the answer, or the model failed (a malformed function call, …).
func (r *reader) Withheld() *llm.Error {
	if r.turn.Text != "" || len(r.turn.ToolCalls) > 0 || r.images > 0 {
		return nil
	}
	var msg string
	switch {
	case r.blockReason != "":
		msg = "Gemini blocked the prompt: " + r.blockReason
		if r.blockMessage != "" {
			msg += " (" + r.blockMessage + ")"
		}
	case r.turn.FinishReason == llm.FinishFiltered:
		msg = "Gemini stopped the answer: " + r.finishReason
		if r.finishMessage != "" {
			msg += " (" + r.finishMessage + ")"
		}
	case r.finishReason != "" && r.finishReason != "STOP" && r.finishReason != "MAX_TOKENS":
		// MALFORMED_FUNCTION_CALL, OTHER, …: the model failed this time, and
		// may not the next, so the request is worth sending again.
		msg = "Gemini ended the answer with nothing in it: " + r.finishReason
		if r.finishMessage != "" {
			msg += " (" + r.finishMessage + ")"
		}
		return &llm.Error{Kind: llm.ErrUnavailable, Message: msg}
	default:
		return nil
	}
	return &llm.Error{Kind: llm.ErrFiltered, Message: msg}
}

// finishReason maps Gemini's finishReason onto Relay's finish reasons. A turn
// with function calls finishes with tool_calls whatever Gemini says (it says
// STOP).
func finishReason(reason string, calls bool) string {
	if calls {
		return llm.FinishToolCalls
	}
	switch reason {
	case "MAX_TOKENS":
		return llm.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return llm.FinishFiltered
	}
	return llm.FinishStop
}

// apiError is the error object of Google's error bodies:
// {"error":{"code":404,"message":"…","status":"NOT_FOUND","details":[…]}}.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		Reason     string `json:"reason"`
		RetryDelay string `json:"retryDelay"`
	} `json:"details"`
}

// refusal is the llm.Error for a refusal: an answer that is not 2xx.
func (c *Client) refusal(model string, se *sse.StatusError) *llm.Error {
	var body struct {
		Error *apiError `json:"error"`
	}
	var list []struct {
		Error *apiError `json:"error"`
	}
	e := apiError{}
	switch {
	case json.Unmarshal(se.Body, &body) == nil && body.Error != nil:
		e = *body.Error
	case json.Unmarshal(se.Body, &list) == nil && len(list) > 0 && list[0].Error != nil:
		// The streaming endpoint may answer with a list of one error.
		e = *list[0].Error
	default:
		e.Message = retry.BodyText(se.Body)
	}
	return c.classify(model, se.StatusCode, e, retry.After(se.Header, time.Now()))
}

// classify is the llm.Error for a Google error with HTTP status status (0 in
// the middle of a stream), from its status name, reasons and message.
func (c *Client) classify(model string, status int, e apiError, retryAfter time.Duration) *llm.Error {
	kind := retry.StatusKind(status)
	if status == 0 {
		kind = llm.ErrUnavailable
	}
	switch e.Status {
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		kind = llm.ErrAuth
	case "NOT_FOUND":
		kind = llm.ErrModelNotFound
	case "RESOURCE_EXHAUSTED":
		kind = llm.ErrRateLimited
	case "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED":
		kind = llm.ErrUnavailable
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION":
		kind = llm.ErrBadRequest
	}
	for _, d := range e.Details {
		if strings.HasPrefix(d.Reason, "API_KEY_") {
			kind = llm.ErrAuth // a bad key is a 400 INVALID_ARGUMENT
		}
		if d.RetryDelay != "" && retryAfter == 0 {
			if wait, err := time.ParseDuration(d.RetryDelay); err == nil {
				retryAfter = wait
			}
		}
	}
	if kind == llm.ErrBadRequest && tooLong(e.Message) {
		kind = llm.ErrContextLength
	}
	return retry.Refusal(providerName, model, status, kind, e.Message, c.ep.Key, retryAfter)
}

// tooLong reports whether a message says that the prompt does not fit the
// model's context window.
func tooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"input token count", "maximum number of tokens", "too long", "context window", "context length"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
