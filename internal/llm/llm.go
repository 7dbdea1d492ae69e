// Package llm is the provider-neutral side of talking to models: the
// conversation's vocabulary (messages, content parts, tool calls, tool
// definitions and the request that carries them, with its exact JSON
// encoder), the Model interface every provider client implements, the events
// a streamed turn produces, token usage, and the errors a provider's refusal
// becomes. The request is the OpenAI chat-completions body that Relay
// promises to send; clients for other providers translate it. Package prompt
// assembles requests from these types; nothing here imports it.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Model is one provider's model endpoint, able to run one chat turn.
type Model interface {
	// Stream sends req, calls emit (when not nil) for each event as it arrives,
	// and returns the complete turn. Retries on 429, 5xx and dropped connections
	// happen inside, bounded. A failure after some text arrived returns both the
	// partial Turn and the error.
	Stream(ctx context.Context, req *Request, emit func(Event)) (*Turn, error)
}

// Bodier is a Model that can show the exact body it would send for a
// request, without sending it: the provider's own format, with what its
// endpoint adds and drops. It is what a prompt preview shows.
type Bodier interface {
	Body(req *Request) ([]byte, error)
}

// ParamChecker is a Model that says whether a model parameter, or a
// function's strict flag, reaches its provider, so that what a client asks
// for (/v1, docs/api.md) is refused when it would be dropped. A Model that is
// not one sends them all.
type ParamChecker interface {
	// CheckParam returns nil when the parameter name, set to value, is sent,
	// else why it is not.
	CheckParam(name string, value any) error
	// CheckStrict returns nil when a function's strict flag set to strict is
	// sent, or asks for nothing the provider does not do anyway, else why
	// it is not.
	CheckStrict(strict bool) error
}

// Lister is a Model whose endpoint can list the models it serves.
type Lister interface {
	ListModels(ctx context.Context) ([]string, error)
}

// EventKind is the kind of a streamed event.
type EventKind string

// The events of a streamed turn.
const (
	// EventText carries a piece of the answer's text.
	EventText EventKind = "text"
	// EventToolCallDelta carries a piece of a tool call: its id and name when
	// it starts, then pieces of its JSON arguments.
	EventToolCallDelta EventKind = "tool_call_delta"
	// EventUsage carries the turn's token usage, when the provider reports it.
	EventUsage EventKind = "usage"
	// EventRetry says that the request is being sent again after a failure.
	EventRetry EventKind = "retry"
	// EventImage carries an image the model produced, whole.
	EventImage EventKind = "image"
)

// Image is an image a model produced.
type Image struct {
	MIMEType string `json:"mime_type"`
	// Data is the image, base64 in the standard encoding.
	Data string `json:"data"`
}

// Event is one streamed event.
type Event struct {
	Kind     EventKind
	Text     string
	ToolCall ToolCallDelta
	Usage    Usage
	// Retry says why and after how long the request is retried (EventRetry).
	Retry *Error
	// Image is the image of an EventImage.
	Image *Image
}

// ToolCallDelta is a piece of a streamed tool call.
type ToolCallDelta struct {
	// Index is the call's position among the turn's tool calls.
	Index          int
	ID, Name       string
	ArgumentsDelta string
}

// Usage counts a turn's tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{u.PromptTokens + v.PromptTokens, u.CompletionTokens + v.CompletionTokens, u.TotalTokens + v.TotalTokens}
}

// Finish reasons, as OpenAI names them; other providers' are mapped onto these.
const (
	FinishStop      = "stop"
	FinishToolCalls = "tool_calls"
	FinishLength    = "length"
	FinishFiltered  = "content_filter"
)

// Turn is the outcome of one model turn.
type Turn struct {
	Text         string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
	// Sent is the exact request body of the last try, as the provider got it.
	Sent []byte
	// Retries counts the tries after the first.
	Retries int
	// Thinking is the reasoning the provider must be sent back with the
	// turn's assistant message, in its own JSON (Anthropic's thinking
	// blocks); the loop keeps it on that message as Message.Thinking.
	Thinking json.RawMessage
}

// ErrorKind classifies a provider failure.
type ErrorKind string

// The kinds of provider failure.
const (
	ErrAuth          ErrorKind = "auth"            // bad or missing API key (401, 403)
	ErrModelNotFound ErrorKind = "model_not_found" // unknown model (404, or the provider says so)
	ErrContextLength ErrorKind = "context_length"  // the request is too long for the model
	ErrRateLimited   ErrorKind = "rate_limited"    // 429
	ErrUnavailable   ErrorKind = "unavailable"     // 5xx, overloaded
	ErrBadRequest    ErrorKind = "bad_request"     // any other 4xx
	ErrNetwork       ErrorKind = "network"         // connection refused, reset, timed out
	ErrStreamCut     ErrorKind = "stream_cut"      // the stream ended before the turn did
	ErrFiltered      ErrorKind = "filtered"        // the provider blocked the prompt or withheld the answer
)

// Error is a provider failure with a message a user can read. It never holds the
// API key.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, 0 when there was no answer.
	Status int
	// Message says what went wrong, in words for the user, with the provider's
	// own message where it has one.
	Message string
	// RetryAfter is what the provider asked to wait, if anything.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("model provider: %s (HTTP %d)", e.Message, e.Status)
	}
	return "model provider: " + e.Message
}

// Retryable reports whether sending the same request again may succeed.
func (e *Error) Retryable() bool {
	switch e.Kind {
	case ErrRateLimited, ErrUnavailable, ErrNetwork:
		return true
	}
	return false
}
