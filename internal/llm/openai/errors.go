package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// apiError is what OpenAI-compatible servers put in an error body, in the
// shapes they use: {"error":{"message","type","code"}} (OpenAI, vLLM,
// LiteLLM, OpenRouter), {"error":"…"} (Ollama), {"message":"…"} or
// {"detail":"…"}.
type apiError struct {
	Message string
	Type    string
	Code    string
}

func (e *apiError) UnmarshalJSON(b []byte) error {
	var body struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(b, &body); err != nil {
		return err
	}
	var inner struct {
		Message json.RawMessage `json:"message"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if len(body.Error) > 0 && body.Error[0] == '{' && json.Unmarshal(body.Error, &inner) == nil {
		*e = apiError{Message: scalar(inner.Message), Type: scalar(inner.Type), Code: scalar(inner.Code)}
		return nil
	}
	*e = apiError{Message: scalar(body.Error), Type: scalar(body.Type), Code: scalar(body.Code)}
	if e.Message == "" {
		e.Message = scalar(body.Message)
	}
	if e.Message == "" {
		e.Message = scalar(body.Detail)
	}
	return nil
}

// scalar is a JSON string's text, or a number's, or "".
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// refusal is a provider's refusal with what the retry loop needs beyond the
// user's error.
type refusal struct {
	err *llm.Error
	// final says that sending again cannot help even though the kind is
	// retryable, e.g. an exhausted quota answered with 429.
	final bool
}

// refusal is the error for an error answer (provider.Refuse): its
// *llm.Error, in a *retry.Override that says whether the kind alone does not
// decide the retry, and whether the provider said how long to wait, which is
// then waited even when it is 0.
func (c *Client) refusal(model string, se *sse.StatusError) error {
	ref := c.classify(se.StatusCode, se.Header, se.Body, model)
	return &retry.Override{Err: ref.err, Final: ref.final, WaitGiven: hasRetryAfter(se.Header)}
}

// classify turns an error answer into an *llm.Error whose message a user can
// read, with the provider's own message where it gave one.
func (c *Client) classify(status int, header http.Header, body []byte, model string) refusal {
	var ae apiError
	_ = json.Unmarshal(body, &ae)
	msg := strings.TrimSpace(c.redact(ae.Message))
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	with := func(s string) string {
		if msg == "" {
			return s
		}
		return s + ": " + msg
	}
	e := &llm.Error{Status: status}
	r := refusal{err: e}
	switch {
	case isContextLength(ae):
		e.Kind, e.Message = llm.ErrContextLength, with("the conversation is too long for the model's context window")
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind, e.Message = llm.ErrAuth, with("the API key was refused")
	case status == http.StatusNotFound || ae.Code == "model_not_found":
		e.Kind, e.Message = llm.ErrModelNotFound, with(fmt.Sprintf("model %q not found", model))
	case status == http.StatusTooManyRequests && ae.Code == "insufficient_quota":
		e.Kind, e.Message = llm.ErrRateLimited, with("the provider account's quota is used up")
		r.final = true
	case status == http.StatusTooManyRequests:
		e.Kind, e.Message = llm.ErrRateLimited, with("the provider is rate limiting requests")
	case status >= 500:
		e.Kind, e.Message = llm.ErrUnavailable, with("the provider is unavailable")
	default:
		e.Kind, e.Message = llm.ErrBadRequest, with("the provider rejected the request")
	}
	e.RetryAfter = retry.After(header, time.Now())
	return r
}

// isContextLength reports whether the provider said that the request is too
// long for the model, in the words OpenAI, vLLM, LiteLLM and others use.
func isContextLength(ae apiError) bool {
	if ae.Code == "context_length_exceeded" || ae.Type == "context_length_exceeded" {
		return true
	}
	m := strings.ToLower(ae.Message)
	for _, s := range []string{"context_length_exceeded", "maximum context length", "context length", "context window", "prompt is too long"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// hasRetryAfter reports whether the provider said how long to wait.
func hasRetryAfter(h http.Header) bool {
	return h.Get("Retry-After-Ms") != "" || h.Get("Retry-After") != ""
}

// broken is the error for a failure to get or read the answer at stage st
// (provider.Endpoint.Broken): an *llm.Error, retried unless the failure
// cannot pass or part of the answer was passed on already.
func (c *Client) broken(err error, st provider.Stage) error {
	if errors.Is(err, sse.ErrIdle) {
		if st == provider.Opening {
			return &llm.Error{Kind: llm.ErrNetwork,
				Message: fmt.Sprintf("the provider at %s sent no answer for %s", c.host, c.ep.Idle)}
		}
		err = fmt.Errorf("nothing arrived for %s", c.ep.Idle)
	}
	return &retry.Override{Err: c.networkError(err, st), Final: !retryableNetwork(err)}
}

// networkError turns a failure to get or read an answer into an *llm.Error:
// ErrStreamCut once part of the answer was passed on, ErrNetwork before.
func (c *Client) networkError(err error, st provider.Stage) *llm.Error {
	kind, what := llm.ErrNetwork, "could not reach the provider at "+c.host
	switch st {
	case provider.Reading:
		what = "the answer from " + c.host + " broke off before any of it arrived"
	case provider.Shown:
		kind, what = llm.ErrStreamCut, "the answer from "+c.host+" was cut off"
	}
	// Leave out the method and URL that *url.Error adds; the host is said
	// already.
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	why := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		why = "the connection closed before the answer was complete"
		if st == provider.Opening {
			why = "the connection closed before any answer"
		}
	}
	return &llm.Error{Kind: kind, Message: what + ": " + c.redact(why)}
}

// retryableNetwork reports whether a failure to get an answer may pass.
func retryableNetwork(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return false
	}
	return true
}

// redact removes the API key and secret header values from s.
func (c *Client) redact(s string) string {
	return retry.Redact(s, c.secrets...)
}
