// Package anthropic is Relay's client for Anthropic's Messages API: it
// translates the OpenAI-shaped llm.Request that Relay builds into a
// streamed POST /v1/messages, reads the answer's server-sent events back into
// llm events and an llm.Turn, and turns Anthropic's refusals into llm.Errors a
// user can read. It speaks plain HTTP; retries, the event-stream plumbing and
// cut streams are the other providers' too, in the provider package, which
// reads the answer through this package's decoder.
//
// The translation, in short:
//   - system messages become the top-level "system" text, joined with a
//     blank line;
//   - user, assistant and tool messages become alternating user/assistant
//     messages of content blocks; consecutive messages of one role are merged,
//     as the API wants turns to alternate;
//   - the thinking and redacted_thinking blocks of an answer (extended
//     thinking, turned on with AddParams "thinking") are kept on the turn,
//     llm.Turn.Thinking, and go back unchanged, signatures and all, at the
//     start of the assistant message they came with, as Anthropic requires
//     within a tool loop;
//   - an assistant's tool calls become tool_use blocks whose input is the
//     parsed JSON arguments; a tool message becomes a tool_result block, in a
//     user message, holding its text and images, with is_error for a failure;
//   - tools become {name, description, input_schema} with the schema passed
//     through unchanged, and tool_choice {"type":"auto"} goes with them;
//   - model parameters are mapped as [Options] lists; max_tokens, which the
//     API requires, defaults to 4096.
package anthropic

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// DefaultBaseURL is the root of Anthropic's API.
const DefaultBaseURL = "https://api.anthropic.com"

// APIVersion is the anthropic-version header Relay speaks.
const APIVersion = "2023-06-01"

// DefaultMaxTokens is max_tokens when the agent's model parameters set none;
// the API requires one.
const DefaultMaxTokens = 4096

// providerName names Anthropic in messages for the user.
const providerName = "Anthropic"

// Options configure a Client. The zero value of every field means its default.
//
// Model parameters (the agent's model_parameters) are mapped onto the body as
// follows, under their OpenAI names or Anthropic's own: max_tokens
// (max_completion_tokens, maxOutputTokens, maxTokens) → max_tokens; temperature
// → temperature; top_p (topP) → top_p; top_k (topK) → top_k; stop
// (stop_sequences, stopSequences), a string or a list → stop_sequences. Any
// other parameter is not sent (Anthropic rejects unknown fields), and
// CheckParam says so (seed, response_format); AddParams is the way to send
// more.
type Options struct {
	// BaseURL is the API's root; empty means DefaultBaseURL. A root that
	// already ends in /v1 (as proxies are often given) is used as is.
	BaseURL string
	// APIKey is sent as x-api-key; empty sends none (for a proxy that adds it).
	APIKey string
	// Headers are added to every request (anthropic-beta, a proxy's own),
	// replacing Relay's of the same name.
	Headers map[string]string
	// AddParams are top-level body fields set on every request, after and in
	// place of Relay's own (thinking, metadata, service_tier, …). model,
	// messages and stream cannot be replaced.
	AddParams map[string]any
	// DropParams are body fields and model parameters never sent. model,
	// messages and stream cannot be dropped.
	DropParams []string
	// The transport options are those of [provider.Settings]: MaxTries
	// (0 means 3), BackoffBase (0 means 500ms; Retry-After, when Anthropic
	// sends it, is waited instead), ConnectTimeout (0 means 10s; not applied
	// to HTTPClient), IdleTimeout (0 means 60s), HTTPClient (nil means one
	// made for long streams) and Logger (nil means no logging).
	MaxTries                    int
	BackoffBase                 time.Duration
	ConnectTimeout, IdleTimeout time.Duration
	HTTPClient                  *http.Client
	Logger                      *slog.Logger
}

// Client is an llm.Model for Anthropic's Messages API. It is safe for
// concurrent use.
type Client struct {
	url  string
	add  map[string]any
	drop map[string]bool
	ep   provider.Endpoint
}

var (
	_ llm.Model        = (*Client)(nil)
	_ llm.Bodier       = (*Client)(nil)
	_ llm.ParamChecker = (*Client)(nil)
)

// New returns a Client for opts.
func New(opts Options) *Client {
	base := strings.TrimRight(opts.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Anthropic-Version", APIVersion)
	if opts.APIKey != "" {
		h.Set("X-Api-Key", opts.APIKey)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	drop := map[string]bool{}
	for _, k := range opts.DropParams {
		if !core(k) {
			drop[k] = true
		}
	}
	add := map[string]any{}
	for k, v := range opts.AddParams {
		if !core(k) && !drop[k] {
			add[k] = v
		}
	}
	return &Client{
		url:  base + "/messages",
		add:  add,
		drop: drop,
		ep:   provider.New(providerName, opts.APIKey, h, opts.settings(), "provider", "anthropic"),
	}
}

// settings are the transport options.
func (o Options) settings() provider.Settings {
	return provider.Settings{MaxTries: o.MaxTries, BackoffBase: o.BackoffBase, ConnectTimeout: o.ConnectTimeout,
		IdleTimeout: o.IdleTimeout, HTTPClient: o.HTTPClient, Logger: o.Logger}
}

// core reports whether a body field is one the client needs as it writes it.
func core(key string) bool {
	switch key {
	case "model", "messages", "stream":
		return true
	}
	return false
}

// Stream sends req to Anthropic and streams the answer; see llm.Model. The
// returned Turn is never nil when the request could be written: on failure it
// holds what arrived before (possibly nothing) and the body sent. A refusal
// (stop_reason "refusal") with no text and no tool calls is an *llm.Error of
// kind ErrFiltered, not retried; a refusal after some text leaves that text
// as the answer.
func (c *Client) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, fmt.Errorf("writing the Anthropic request: %w", err)
	}
	refuse := func(se *sse.StatusError) error { return c.refusal(req.Model, se) }
	return c.ep.Stream(ctx, c.url, req.Model, body, emit, refuse, func(turn *llm.Turn, out provider.Output) provider.Decoder {
		return &reader{turn: turn, Output: out, blocks: map[int]*openBlock{}, thoughts: map[int]*thinkingBlock{}, model: req.Model, key: c.ep.Key}
	})
}
