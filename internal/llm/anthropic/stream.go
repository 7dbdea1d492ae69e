package anthropic

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
	"github.com/relay-ai/relay/internal/llm/wire"
)

// reader turns the events of one answer into llm events and the turn.
type reader struct {
	provider.Output
	turn       *llm.Turn
	model, key string
	text       strings.Builder
	blocks     map[int]*openBlock
	// calls are the tool calls in the order they started.
	calls []*openBlock
	// thinking are the thinking and redacted_thinking blocks in the order
	// they started, by their index in the answer too.
	thinking   []*thinkingBlock
	thoughts   map[int]*thinkingBlock
	stopReason string
	usage      usage
}

// openBlock is a tool_use block being streamed.
type openBlock struct {
	index    int // among the turn's tool calls
	id, name string
	// input is the input given whole in content_block_start, used when no
	// input_json_delta follows.
	input json.RawMessage
	args  strings.Builder
	done  bool
}

// thinkingBlock is a thinking or redacted_thinking block being streamed.
// Anthropic checks the signature against the thinking, so both are kept as
// they came.
type thinkingBlock struct {
	typ       string
	thinking  strings.Builder
	signature strings.Builder
	data      string
	done      bool
}

type usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
}

// streamEvent holds the fields of every event Relay reads.
type streamEvent struct {
	Type    string `json:"type"`
	Message struct {
		Usage usage `json:"usage"`
	} `json:"message"`
	Index        int `json:"index"`
	ContentBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
	} `json:"content_block"`
	Delta struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage *usage    `json:"usage"`
	Error *apiError `json:"error"`
}

// Event handles one server-sent event and reports whether the answer is
// complete. Unknown events and blocks (ping, citations, …) are skipped, as
// Anthropic's versioning policy asks of clients. Thinking is not part of the
// answer and is not passed on; it is kept for the turn (Turn.Thinking), as
// Anthropic wants it sent back with the tool calls it led to.
func (r *reader) Event(ev sse.Event) (bool, error) {
	var e streamEvent
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return false, &llm.Error{Kind: llm.ErrUnavailable, Message: "Anthropic sent an event Relay cannot read: " + err.Error()}
	}
	if e.Type == "" {
		e.Type = ev.Type
	}
	switch e.Type {
	case "message_start":
		r.usage = e.Message.Usage
	case "content_block_start":
		switch e.ContentBlock.Type {
		case "text":
			r.addText(e.ContentBlock.Text)
		case "tool_use":
			b := &openBlock{index: len(r.calls), id: e.ContentBlock.ID, name: e.ContentBlock.Name, input: e.ContentBlock.Input}
			r.blocks[e.Index] = b
			r.calls = append(r.calls, b)
			r.Send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: b.index, ID: b.id, Name: b.name}})
		case "thinking", "redacted_thinking":
			b := &thinkingBlock{typ: e.ContentBlock.Type, data: e.ContentBlock.Data}
			b.thinking.WriteString(e.ContentBlock.Thinking)
			b.signature.WriteString(e.ContentBlock.Signature)
			r.thoughts[e.Index] = b
			r.thinking = append(r.thinking, b)
		}
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			r.addText(e.Delta.Text)
		case "input_json_delta":
			if b := r.blocks[e.Index]; b != nil && e.Delta.PartialJSON != "" {
				b.args.WriteString(e.Delta.PartialJSON)
				r.Send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: b.index, ArgumentsDelta: e.Delta.PartialJSON}})
			}
		case "thinking_delta":
			if b := r.thoughts[e.Index]; b != nil {
				b.thinking.WriteString(e.Delta.Thinking)
			}
		case "signature_delta":
			if b := r.thoughts[e.Index]; b != nil {
				b.signature.WriteString(e.Delta.Signature)
			}
		}
	case "content_block_stop":
		if b := r.blocks[e.Index]; b != nil {
			if b.args.Len() == 0 {
				// Anthropic streams the input in deltas, none for a call
				// without arguments; some compatible servers give it whole
				// in content_block_start instead.
				args := startInput(b.input)
				b.args.WriteString(args)
				r.Send(llm.Event{Kind: llm.EventToolCallDelta, ToolCall: llm.ToolCallDelta{Index: b.index, ArgumentsDelta: args}})
			}
			b.done = true
		}
		if b := r.thoughts[e.Index]; b != nil {
			b.done = true
		}
	case "message_delta":
		if e.Delta.StopReason != "" {
			r.stopReason = e.Delta.StopReason
		}
		if u := e.Usage; u != nil {
			r.usage.OutputTokens = u.OutputTokens
			if u.InputTokens > 0 {
				r.usage.InputTokens = u.InputTokens
			}
			r.usage.CacheCreationInputTokens = max(r.usage.CacheCreationInputTokens, u.CacheCreationInputTokens)
			r.usage.CacheReadInputTokens = max(r.usage.CacheReadInputTokens, u.CacheReadInputTokens)
		}
	case "message_stop":
		r.finish()
		return true, nil
	case "error":
		return false, streamError(e.Error, r.model, r.key)
	}
	return false, nil
}

// startInput is the arguments of a call whose input came whole in
// content_block_start: that input, or {} when there was none.
func startInput(in json.RawMessage) string {
	s := strings.TrimSpace(string(in))
	if s == "" || s == "null" {
		return "{}"
	}
	return s
}

func (r *reader) addText(s string) {
	if s == "" {
		return
	}
	r.text.WriteString(s)
	r.Send(llm.Event{Kind: llm.EventText, Text: s})
}

// Partial fills the turn with what arrived: the text, the tool calls and
// thinking blocks that were complete, the usage.
func (r *reader) Partial() {
	r.turn.Text = r.text.String()
	r.turn.ToolCalls = nil
	for _, b := range r.calls {
		if b.done {
			r.turn.ToolCalls = append(r.turn.ToolCalls, llm.ToolCall{
				ID: b.id, Type: "function", Function: llm.FunctionCall{Name: b.name, Arguments: b.args.String()},
			})
		}
	}
	r.turn.Thinking = r.thinkingJSON()
	u := r.usage
	in := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	r.turn.Usage = llm.Usage{PromptTokens: in, CompletionTokens: u.OutputTokens, TotalTokens: in + u.OutputTokens}
}

// thinkingJSON is the complete thinking blocks as the content blocks they
// are sent back as, a JSON array; nil when there are none.
func (r *reader) thinkingJSON() json.RawMessage {
	var blocks []block
	for _, t := range r.thinking {
		if !t.done {
			continue
		}
		b := block{Type: t.typ}
		if t.typ == "redacted_thinking" {
			b.Data = t.data
		} else {
			text := t.thinking.String()
			b.Thinking, b.Signature = &text, t.signature.String()
		}
		blocks = append(blocks, b)
	}
	if len(blocks) == 0 {
		return nil
	}
	out, err := wire.Marshal(blocks)
	if err != nil {
		return nil // strings and a pointer to one always marshal
	}
	return out
}

// finish completes the turn and emits its usage.
func (r *reader) finish() {
	r.Partial()
	r.turn.FinishReason = finishReason(r.stopReason, len(r.turn.ToolCalls) > 0)
	if r.turn.Usage != (llm.Usage{}) {
		r.Send(llm.Event{Kind: llm.EventUsage, Usage: r.turn.Usage})
	}
}

// Withheld is the error for a complete answer that is a refusal with
// nothing in it: no text and no tool calls.
func (r *reader) Withheld() *llm.Error {
	if r.stopReason != "refusal" || r.turn.Text != "" || len(r.turn.ToolCalls) > 0 {
		return nil
	}
	return &llm.Error{Kind: llm.ErrFiltered, Message: providerName + " declined to answer (stop_reason: refusal)"}
}

// End says that the stream ended before message_stop.
func (r *reader) End(err error) error {
	if err != io.EOF {
		return err
	}
	return errors.New("the stream ended before message_stop")
}

// finishReason maps Anthropic's stop_reason onto Relay's finish reasons.
func finishReason(stop string, calls bool) string {
	switch stop {
	case "tool_use":
		return llm.FinishToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.FinishLength
	case "refusal":
		return llm.FinishFiltered
	}
	if calls {
		return llm.FinishToolCalls
	}
	return llm.FinishStop
}

// apiError is the error object of Anthropic's error bodies and error events:
// {"type":"error","error":{"type":"not_found_error","message":"model: x"}}.
type apiError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// refusal is the llm.Error for a refusal: an answer that is not 2xx.
func (c *Client) refusal(model string, se *sse.StatusError) *llm.Error {
	var body struct {
		Error *apiError `json:"error"`
	}
	var e apiError
	if json.Unmarshal(se.Body, &body) == nil && body.Error != nil {
		e = *body.Error
	} else {
		e.Message = retry.BodyText(se.Body)
	}
	kind := kindOf(e, retry.StatusKind(se.StatusCode))
	return retry.Refusal(providerName, model, se.StatusCode, kind, e.Message, c.ep.Key, retry.After(se.Header, time.Now()))
}

// streamError is the llm.Error for an error event in the stream.
func streamError(e *apiError, model, key string) *llm.Error {
	if e == nil {
		e = &apiError{}
	}
	return retry.Refusal(providerName, model, 0, kindOf(*e, llm.ErrUnavailable), e.Message, key, 0)
}

// kindOf classifies an Anthropic error by its type and message; fallback is
// the kind its HTTP status says.
func kindOf(e apiError, fallback llm.ErrorKind) llm.ErrorKind {
	if tooLong(e.Message) {
		return llm.ErrContextLength
	}
	switch e.Type {
	case "authentication_error", "permission_error":
		return llm.ErrAuth
	case "not_found_error":
		return llm.ErrModelNotFound
	case "request_too_large":
		return llm.ErrContextLength
	case "rate_limit_error":
		return llm.ErrRateLimited
	case "overloaded_error", "api_error", "timeout_error":
		return llm.ErrUnavailable
	case "invalid_request_error", "billing_error":
		return llm.ErrBadRequest
	}
	return fallback
}

// tooLong reports whether a message says that the prompt does not fit the
// model's context window.
func tooLong(msg string) bool {
	m := strings.ToLower(msg)
	for _, s := range []string{"prompt is too long", "context window", "context limit", "context length", "too many tokens", "input is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
