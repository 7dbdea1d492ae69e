// Package openai is Relay's client for OpenAI-compatible chat completions:
// OpenAI itself, Azure OpenAI, and every custom endpoint that speaks the same
// API (Ollama, vLLM, OpenRouter, LiteLLM, …). It sends llm.Request as it is
// written, adapted by the endpoint's addParams and dropParams, reads the
// answer (streamed, or whole when the stream is dropped) back into llm events,
// and turns refusals into errors a user can read. Retries, the event-stream
// plumbing and cut streams are the other providers' too, in the provider
// package, which reads the answer through this package's decoder; what is
// OpenAI's own (its error bodies and Retry-After headers, Azure's addresses
// and content filters, the fast chunk decoder, the words of its errors) is
// here.
package openai

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/provider"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// Defaults of [Options].
const (
	DefaultBaseURL         = "https://api.openai.com/v1"
	DefaultMaxTries        = retry.DefaultMaxTries
	DefaultBackoffBase     = retry.DefaultBase
	DefaultMaxRetryWait    = 30 * time.Second
	DefaultConnectTimeout  = provider.DefaultConnectTimeout
	DefaultIdleTimeout     = provider.DefaultIdleTimeout
	DefaultAzureAPIVersion = "2024-10-21"
)

// Options configure a [Client]. Zero values mean the defaults.
type Options struct {
	// BaseURL is the API root that /chat/completions is appended to;
	// DefaultBaseURL when empty. With Azure it is the resource's endpoint,
	// https://<instance>.openai.azure.com.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <key>" (as "api-key" with
	// Azure); nothing is sent when it is empty, as for a local Ollama.
	APIKey string
	// Headers are added to every request, after Relay's own, so they win.
	// Values are sent as they are: ${VAR} references are expanded by the
	// caller.
	Headers map[string]string
	// AddParams are set in every request body, over the agent's model
	// parameters and Relay's stream parameters.
	AddParams map[string]any
	// DropParams are removed from every request body, last; dropping
	// "stream_options" or "stream" is allowed (a non-streamed answer is
	// read too).
	DropParams []string
	// Azure, when set, addresses an Azure OpenAI deployment.
	Azure *Azure

	// MaxTries bounds the tries of one turn, the first included;
	// DefaultMaxTries when 0 or less.
	MaxTries int
	// BackoffBase is the wait before the first retry when the provider does
	// not say how long to wait; it doubles with each retry and is jittered.
	BackoffBase time.Duration
	// MaxRetryWait bounds a wait between tries. A provider asking for a
	// longer wait (Retry-After) gets no retry: its error is returned.
	MaxRetryWait time.Duration
	// ConnectTimeout bounds dialling and the TLS handshake. It applies to the
	// HTTP client New makes, not to one given in HTTPClient.
	ConnectTimeout time.Duration
	// IdleTimeout bounds each wait for the provider: for the answer's
	// headers, then for each next byte of the answer.
	IdleTimeout time.Duration
	// HTTPClient sends the requests; when nil, New makes one.
	HTTPClient *http.Client
	// Logger gets a warning for each retry; nil discards.
	Logger *slog.Logger
}

// Azure addresses an Azure OpenAI deployment: the request goes to
// {BaseURL}/openai/deployments/{Deployment}/chat/completions?api-version=…
// with the key in an "api-key" header.
type Azure struct {
	// Deployment names the deployment; empty means the request's model.
	Deployment string
	// APIVersion is the api-version parameter; DefaultAzureAPIVersion when
	// empty.
	APIVersion string
	// Direct means that BaseURL already addresses the deployment (a gateway
	// URL that names it, or a serverless endpoint): requests go to
	// {BaseURL}/chat/completions, with ?api-version= only when APIVersion is
	// set.
	Direct bool
}

// Client is an OpenAI-compatible chat-completions endpoint. It implements
// llm.Model and is safe for concurrent use.
type Client struct {
	opts    Options
	base    string // BaseURL without a trailing slash
	host    string // for messages and logs
	ep      provider.Endpoint
	secrets []string // values never shown in errors or logs
}

var (
	_ llm.Model        = (*Client)(nil)
	_ llm.Bodier       = (*Client)(nil)
	_ llm.ParamChecker = (*Client)(nil)
)

// New returns a client for the endpoint that opts describe.
func New(opts Options) *Client {
	if opts.BaseURL == "" {
		opts.BaseURL = DefaultBaseURL
	}
	if opts.MaxRetryWait <= 0 {
		opts.MaxRetryWait = DefaultMaxRetryWait
	}
	c := &Client{opts: opts, base: strings.TrimRight(opts.BaseURL, "/")}
	c.host = c.base
	if u, err := url.Parse(c.base); err == nil && u.Host != "" {
		c.host = u.Host
	}
	// No Accept header: the endpoint answers as it does without one, an
	// event stream or, with "stream" dropped, JSON.
	header := http.Header{"Accept": nil}
	header.Set("Content-Type", "application/json")
	header.Set("User-Agent", "Relay")
	if opts.APIKey != "" {
		if opts.Azure != nil {
			header.Set("api-key", opts.APIKey)
		} else {
			header.Set("Authorization", "Bearer "+opts.APIKey)
		}
	}
	for k, v := range opts.Headers {
		header.Set(k, v)
	}
	c.ep = provider.New(c.host, opts.APIKey, header, provider.Settings{
		MaxTries: opts.MaxTries, BackoffBase: opts.BackoffBase, MaxRetryWait: opts.MaxRetryWait,
		ConnectTimeout: opts.ConnectTimeout, IdleTimeout: opts.IdleTimeout, HTTPClient: opts.HTTPClient, Logger: opts.Logger,
	}, "host", c.host)
	// Compatible servers answer in looser ways than OpenAI: JSON when the
	// stream is dropped, any Content-Type, a last event without its blank
	// line.
	c.ep.AnyType, c.ep.KeepCut = true, true
	c.ep.Broken = c.broken
	if opts.APIKey != "" {
		c.secrets = append(c.secrets, opts.APIKey)
	}
	for k, v := range opts.Headers {
		if secretHeader(k) && len(v) >= 4 {
			c.secrets = append(c.secrets, v)
		}
	}
	return c
}

// secretHeader reports whether a header's name says that it holds a
// credential.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"key", "auth", "token", "secret", "cookie"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// url is where a request for model goes.
func (c *Client) url(model string) string {
	az := c.opts.Azure
	if az == nil {
		return c.base + "/chat/completions"
	}
	if az.Direct {
		if az.APIVersion == "" {
			return c.base + "/chat/completions"
		}
		return c.base + "/chat/completions?api-version=" + url.QueryEscape(az.APIVersion)
	}
	dep := az.Deployment
	if dep == "" {
		dep = model
	}
	ver := az.APIVersion
	if ver == "" {
		ver = DefaultAzureAPIVersion
	}
	return c.base + "/openai/deployments/" + url.PathEscape(dep) + "/chat/completions?api-version=" + url.QueryEscape(ver)
}

// Stream sends req and streams the answer; see llm.Model. The body sent is
// req's own (llm.Request.MarshalJSON), with tool images moved into user
// messages, "stream" and "stream_options" added, AddParams merged in and
// DropParams removed; Turn.Sent holds it. The returned Turn is not nil once
// the body is made, even on failure, so that what was sent can be recorded;
// after a failure it holds the text that arrived, and no tool calls. A
// cancelled ctx returns context.Cause(ctx); a provider's failure is an
// *llm.Error, and so is an answer that the provider filtered or the model
// refused with nothing in it (ErrFiltered, not retried; the Turn holds its
// usage).
func (c *Client) Stream(ctx context.Context, req *llm.Request, emit func(llm.Event)) (*llm.Turn, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, err
	}
	u := c.url(req.Model)
	if _, err := url.Parse(u); err != nil {
		return &llm.Turn{Sent: body}, fmt.Errorf("making the model request: %w", err)
	}
	refuse := func(se *sse.StatusError) error { return c.refusal(req.Model, se) }
	return c.ep.Stream(ctx, u, req.Model, body, emit, refuse, func(turn *llm.Turn, out provider.Output) provider.Decoder {
		return &assembler{Output: out, turn: turn, c: c, model: req.Model}
	})
}
