// Package google is Relay's client for Google's Gemini API
// (generativelanguage.googleapis.com): it translates the OpenAI-shaped
// llm.Request that Relay builds into a streamed
// models/{model}:streamGenerateContent?alt=sse request, reads the answer's
// chunks back into llm events and an llm.Turn, and turns Google's refusals
// into llm.Errors a user can read. It speaks plain HTTP; retries, the
// event-stream plumbing and cut streams are the other providers' too, in the
// provider package, which reads the answer through this package's decoder.
//
// The translation, in short:
//   - system messages become systemInstruction, their texts joined with a
//     blank line;
//   - user messages become "user" contents of text and inlineData parts;
//     assistant messages become "model" contents of text and functionCall
//     parts (args: the parsed JSON arguments); consecutive contents of one
//     role are merged;
//   - a tool message becomes a functionResponse part in a "user" content,
//     named after the call it answers (found through the tool_call_id in the
//     assistant message before it), with the result's text as
//     response.output, or response.error for a failure; a turn's responses
//     go in the order of its calls, whatever order the results came in,
//     since Gemini pairs them by position; its images follow the turn's
//     functionResponse parts as inlineData parts;
//   - tools become one functionDeclarations list whose parameters are the
//     tool's JSON Schema reduced to the subset Gemini accepts (see
//     [Schema]); tool_choice becomes toolConfig.functionCallingConfig.mode;
//   - model parameters go into generationConfig as [Options] lists.
//
// Gemini sends each function call whole, with no id: the client gives each
// one an id and emits it as a single tool-call delta. Gemini 3 models sign
// their function calls (thoughtSignature) and want the signature back with
// the call; the client remembers the signatures of the calls it saw, by id,
// and sends the documented placeholder for a call it has none for (one
// written by another model, or before a restart).
package google

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// DefaultBaseURL is the root of the Gemini API.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// providerName names Google in messages for the user.
const providerName = "Google"

// Options configure a Client. The zero value of every field means its default.
//
// Model parameters (the agent's model_parameters) go into generationConfig,
// under their OpenAI names or Gemini's own: temperature → temperature; top_p
// (topP) → topP; top_k (topK) → topK; max_tokens (max_completion_tokens,
// max_output_tokens, maxOutputTokens) → maxOutputTokens; stop (stop_sequences,
// stopSequences), a string or a list → stopSequences; seed → seed;
// response_format json_object → responseMimeType application/json, and
// json_schema → that with responseSchema. Any other parameter is not sent;
// AddParams is the way to send more.
type Options struct {
	// BaseURL is the API's root; empty means DefaultBaseURL. A root that
	// already ends in an API version (/v1beta, /v1, /v1alpha) is used as is;
	// otherwise /v1beta is added.
	BaseURL string
	// APIKey is sent as x-goog-api-key (never in the URL); empty sends none.
	APIKey string
	// Headers are added to every request, replacing Relay's of the same name.
	Headers map[string]string
	// AddParams are top-level body fields set on every request, in place of
	// Relay's own (safetySettings, cachedContent, …). A "generationConfig"
	// object is merged into the one Relay writes, its keys winning
	// (responseModalities, thinkingConfig, seed, …). contents cannot be
	// replaced.
	AddParams map[string]any
	// DropParams are body fields, generationConfig fields and model
	// parameters never sent. contents cannot be dropped.
	DropParams []string
	// The transport options are those of [provider.Settings]: MaxTries
	// (0 means 3), BackoffBase (0 means 500ms; what Google asks for, in
	// Retry-After or a RetryInfo detail, is waited instead), ConnectTimeout
	// (0 means 10s; not applied to HTTPClient), IdleTimeout (0 means 60s),
	// HTTPClient (nil means one made for long streams) and Logger (nil means
	// no logging).
	MaxTries                    int
	BackoffBase                 time.Duration
	ConnectTimeout, IdleTimeout time.Duration
	HTTPClient                  *http.Client
	Logger                      *slog.Logger
}

// Client is an llm.Model for the Gemini API. It is safe for concurrent use.
type Client struct {
	base string // up to and including the API version
	add  map[string]any
	// addConfig is AddParams' generationConfig, merged into Relay's.
	addConfig map[string]any
	drop      map[string]bool
	ep        provider.Endpoint
	// newID makes the id of a function call that came without one.
	newID func() string
	sigs  signatures
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
	if !versioned(base) {
		base += "/v1beta"
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	if opts.APIKey != "" {
		h.Set("X-Goog-Api-Key", opts.APIKey)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	drop := map[string]bool{}
	for _, k := range opts.DropParams {
		if k != "contents" {
			drop[k] = true
		}
	}
	add := map[string]any{}
	var addConfig map[string]any
	for k, v := range opts.AddParams {
		if k == "contents" || drop[k] {
			continue
		}
		if cfg, ok := v.(map[string]any); ok && k == "generationConfig" {
			addConfig = cfg
			continue
		}
		add[k] = v
	}
	return &Client{
		base:      base,
		add:       add,
		addConfig: addConfig,
		drop:      drop,
		ep:        provider.New(providerName, opts.APIKey, h, opts.settings(), "provider", "google"),
		newID:     randomID,
	}
}

// settings are the transport options.
func (o Options) settings() provider.Settings {
	return provider.Settings{MaxTries: o.MaxTries, BackoffBase: o.BackoffBase, ConnectTimeout: o.ConnectTimeout,
		IdleTimeout: o.IdleTimeout, HTTPClient: o.HTTPClient, Logger: o.Logger}
}

// versioned reports whether a base URL already ends in an API version.
func versioned(base string) bool {
	i := strings.LastIndexByte(base, '/')
	v := base[i+1:]
	return v == "v1" || strings.HasPrefix(v, "v1beta") || strings.HasPrefix(v, "v1alpha")
}

// url is the streaming endpoint of model. A bare model name is under models/;
// a resource name (models/x, tunedModels/x) is used as it is.
func (c *Client) url(model string) string {
	if !strings.Contains(model, "/") {
		model = "models/" + model
	}
	return c.base + "/" + model + ":streamGenerateContent?alt=sse"
}

// Stream sends req to Gemini and streams the answer; see llm.Model. The
// returned Turn is never nil when the request could be written: on failure it
// holds what arrived before (possibly nothing) and the body sent. A blocked
// prompt (promptFeedback.blockReason), or an answer stopped by a safety
// filter with no text and no function calls, is an *llm.Error of kind
// ErrFiltered, not retried; a filtered answer with some text keeps it. An empty
// answer that ended otherwise (MALFORMED_FUNCTION_CALL, OTHER, …) is an
// *llm.Error of kind ErrUnavailable naming the reason.
func (c *Client) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, fmt.Errorf("writing the Gemini request: %w", err)
	}
	refuse := func(se *sse.StatusError) error { return c.refusal(req.Model, se) }
	return c.ep.Stream(ctx, c.url(req.Model), req.Model, body, emit, refuse, func(turn *llm.Turn, out provider.Output) provider.Decoder {
		return &reader{Output: out, c: c, turn: turn, model: req.Model}
	})
}

// signatures remembers the thoughtSignature of function calls by call id,
// the most recent ones only.
type signatures struct {
	mu    sync.Mutex
	byID  map[string]string
	order []string
}

// maxSignatures bounds the signatures kept: enough for the calls of every
// conversation in progress.
const maxSignatures = 4096

func (s *signatures) put(id, sig string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byID == nil {
		s.byID = map[string]string{}
	}
	if _, ok := s.byID[id]; !ok {
		s.order = append(s.order, id)
	}
	s.byID[id] = sig
	if len(s.order) > maxSignatures {
		delete(s.byID, s.order[0])
		s.order = s.order[1:]
	}
}

func (s *signatures) get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}
