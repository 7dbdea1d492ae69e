// Package openai is Relay's client for OpenAI-compatible chat completions:
// OpenAI itself, Azure OpenAI, and every custom endpoint that speaks the same
// API (Ollama, vLLM, OpenRouter, LiteLLM, …). It sends llm.Request as it is
// written, adapted by the endpoint's addParams and dropParams, streams the
// answer back as llm events, retries what may pass, and turns refusals into
// errors a user can read.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// Defaults of [Options].
const (
	DefaultBaseURL         = "https://api.openai.com/v1"
	DefaultMaxTries        = 3
	DefaultBackoffBase     = 500 * time.Millisecond
	DefaultMaxRetryWait    = 30 * time.Second
	DefaultConnectTimeout  = 10 * time.Second
	DefaultIdleTimeout     = 60 * time.Second
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
	header  http.Header
	http    *http.Client
	retry   retry.Policy
	log     *slog.Logger
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
	if opts.MaxTries <= 0 {
		opts.MaxTries = DefaultMaxTries
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = DefaultBackoffBase
	}
	if opts.MaxRetryWait <= 0 {
		opts.MaxRetryWait = DefaultMaxRetryWait
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	c := &Client{opts: opts, base: strings.TrimRight(opts.BaseURL, "/"), http: opts.HTTPClient, log: opts.Logger}
	c.host = c.base
	if u, err := url.Parse(c.base); err == nil && u.Host != "" {
		c.host = u.Host
	}
	if c.http == nil {
		c.http = sse.NewHTTPClient(opts.ConnectTimeout)
	}
	c.retry = retry.Policy{MaxTries: opts.MaxTries, Base: opts.BackoffBase, MaxWait: opts.MaxRetryWait}
	// No Accept header: the endpoint answers as it does without one, an
	// event stream or, with "stream" dropped, JSON.
	c.header = http.Header{"Accept": nil}
	c.header.Set("Content-Type", "application/json")
	c.header.Set("User-Agent", "Relay")
	if opts.APIKey != "" {
		if opts.Azure != nil {
			c.header.Set("api-key", opts.APIKey)
		} else {
			c.header.Set("Authorization", "Bearer "+opts.APIKey)
		}
	}
	for k, v := range opts.Headers {
		c.header.Set(k, v)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
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
	turn := &llm.Turn{Sent: body}
	policy := c.retry
	policy.Logger = c.log.With("host", c.host, "model", req.Model)
	turn.Retries, err = policy.Do(ctx, func(ctx context.Context) error {
		return c.try(ctx, req.Model, body, turn, emit)
	}, emit)
	return turn, err
}

// maxAnswer bounds a non-streamed answer.
const maxAnswer = 64 << 20

// try sends body once and reads the answer into turn, passing events to emit.
// Its error is the caller's cancellation as it is, or an *llm.Error, in a
// *retry.Override when the kind alone does not say whether to retry.
func (c *Client) try(ctx context.Context, model string, body []byte, turn *llm.Turn, emit func(llm.Event)) error {
	u := c.url(model)
	if _, err := url.Parse(u); err != nil {
		return fmt.Errorf("making the model request: %w", err)
	}
	s, err := sse.Open(ctx, sse.Request{
		Client: c.http, URL: u, Header: c.header, Body: body, Idle: c.opts.IdleTimeout,
		AnyType: true, KeepCut: true,
	})
	if err != nil {
		if se, ok := errors.AsType[*sse.StatusError](err); ok {
			ref := c.classify(se.StatusCode, se.Header, se.Body, model)
			return &retry.Override{Err: ref.err, Final: ref.final, WaitGiven: hasRetryAfter(se.Header)}
		}
		return c.readFailure(ctx, err, stageConnect)
	}
	defer s.Close()

	a := &assembler{emit: emit}
	if s.MediaType() == "application/json" {
		err = readJSON(s.Body(), a)
	} else {
		err = readStream(s, a)
	}
	if ae, ok := errors.AsType[*apiErrorChunk](err); ok {
		a.turn(turn, false)
		b, status := ae.body()
		ref := c.classify(status, nil, b, model)
		if status == 0 && ref.err.Kind == llm.ErrBadRequest {
			ref.err.Kind = llm.ErrUnavailable
			ref.err.Message = strings.Replace(ref.err.Message, "the provider rejected the request", "the provider failed while answering", 1)
		}
		return &retry.Override{Err: ref.err, Final: a.emitted || ref.final}
	}
	switch {
	case err == nil && !a.complete():
		err = io.ErrUnexpectedEOF
	case err != nil && a.finish != "" && ctx.Err() == nil && !errors.Is(err, errBadChunk):
		// The answer was whole; only the end of the stream was lost.
		err = nil
	}
	if err != nil {
		a.turn(turn, false)
		stage := stageStream
		if a.emitted {
			stage = stageCut
		}
		return c.readFailure(ctx, err, stage)
	}
	a.turn(turn, true)
	a.finishEvents()
	if le := a.withheld(turn); le != nil {
		return le
	}
	return nil
}

// readJSON reads a non-streamed answer into a, as one piece.
func readJSON(r io.Reader, a *assembler) error {
	b, err := io.ReadAll(io.LimitReader(r, maxAnswer))
	if err != nil {
		return err
	}
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		return fmt.Errorf("%w: %v", errBadChunk, err)
	}
	if e := a.add(&c); e != nil {
		return e
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("%w: an answer without choices", errBadChunk)
	}
	a.done = true
	return nil
}

// stage is how far a try got when it failed.
type stage int

const (
	stageConnect stage = iota // no answer
	stageStream               // an answer, but nothing of it passed on
	stageCut                  // part of the answer passed on
)

// readFailure turns a failure to get or read the answer into the try's
// error: the caller's cancellation as it is, and otherwise an *llm.Error,
// retried unless part of the answer was passed on already.
func (c *Client) readFailure(ctx context.Context, err error, st stage) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if errors.Is(err, sse.ErrIdle) {
		if st == stageConnect {
			return &llm.Error{Kind: llm.ErrNetwork,
				Message: fmt.Sprintf("the provider at %s sent no answer for %s", c.host, c.opts.IdleTimeout)}
		}
		err = fmt.Errorf("nothing arrived for %s", c.opts.IdleTimeout)
	}
	return &retry.Override{Err: c.networkError(err, st), Final: !retryableNetwork(err)}
}
