// Package openai is Relay's client for OpenAI-compatible chat completions:
// OpenAI itself, Azure OpenAI, and every custom endpoint that speaks the same
// API (Ollama, vLLM, OpenRouter, LiteLLM, …). It sends prompt.Request as it is
// written, adapted by the endpoint's addParams and dropParams, streams the
// answer back as llm events, retries what may pass, and turns refusals into
// errors a user can read.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/prompt"
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
}

// Client is an OpenAI-compatible chat-completions endpoint. It implements
// llm.Model and is safe for concurrent use.
type Client struct {
	opts    Options
	base    string // BaseURL without a trailing slash
	host    string // for messages and logs
	http    *http.Client
	log     *slog.Logger
	secrets []string // values never shown in errors or logs
}

var _ llm.Model = (*Client)(nil)

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
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.DialContext = (&net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}).DialContext
		tr.TLSHandshakeTimeout = opts.ConnectTimeout
		c.http = &http.Client{Transport: tr}
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
// req's own (prompt.Request.MarshalJSON), with tool images moved into user
// messages, "stream" and "stream_options" added, AddParams merged in and
// DropParams removed; Turn.Sent holds it. The returned Turn is not nil once
// the body is made, even on failure, so that what was sent can be recorded;
// after a failure it holds the text that arrived, and no tool calls. A
// cancelled ctx returns context.Cause(ctx); a provider's failure is an
// *llm.Error.
func (c *Client) Stream(ctx context.Context, req *prompt.Request, emit func(llm.Event)) (*llm.Turn, error) {
	body, err := c.body(req)
	if err != nil {
		return nil, err
	}
	turn := &llm.Turn{Sent: body}
	for try := 0; ; try++ {
		turn.Retries = try
		f := c.try(ctx, req.Model, body, turn, emit)
		if f == nil {
			return turn, nil
		}
		if !f.retry || try+1 >= c.opts.MaxTries {
			return turn, f.err
		}
		e := f.err.(*llm.Error)
		wait := c.backoff(try)
		if f.waitGiven {
			wait = e.RetryAfter
		}
		if wait > c.opts.MaxRetryWait {
			return turn, f.err
		}
		c.log.WarnContext(ctx, "model request failed; retrying",
			"host", c.host, "model", req.Model, "try", try+1, "max_tries", c.opts.MaxTries,
			"error_kind", string(e.Kind), "status", e.Status, "wait", wait.String(), "error", e.Message)
		if emit != nil {
			ev := *e
			ev.RetryAfter = wait
			emit(llm.Event{Kind: llm.EventRetry, Retry: &ev})
		}
		if err := sleep(ctx, wait); err != nil {
			return turn, err
		}
	}
}

// backoff is the wait before retry number n+1 when the provider did not say:
// BackoffBase·2ⁿ, of which the second half is random, at most MaxRetryWait.
func (c *Client) backoff(n int) time.Duration {
	d := c.opts.BackoffBase << min(n, 20)
	if d <= 0 || d > c.opts.MaxRetryWait {
		d = c.opts.MaxRetryWait
	}
	half := d / 2
	return half + rand.N(half+1)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// failure is why a try failed and whether another may succeed.
type failure struct {
	err   error // an *llm.Error when retry is set
	retry bool
	// waitGiven says that the provider said how long to wait, in
	// err.RetryAfter.
	waitGiven bool
}

// errIdle is the cause of a try's end when the provider went quiet.
var errIdle = errors.New("idle timeout")

// maxAnswer bounds a non-streamed answer.
const maxAnswer = 64 << 20

// try sends body once and reads the answer into turn, passing events to emit.
func (c *Client) try(ctx context.Context, model string, body []byte, turn *llm.Turn, emit func(llm.Event)) *failure {
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	idle := time.AfterFunc(c.opts.IdleTimeout, func() { cancel(errIdle) })
	defer idle.Stop()

	hr, err := http.NewRequestWithContext(tctx, http.MethodPost, c.url(model), bytes.NewReader(body))
	if err != nil {
		return &failure{err: fmt.Errorf("making the model request: %w", err)}
	}
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("User-Agent", "Relay")
	if c.opts.APIKey != "" {
		if c.opts.Azure != nil {
			hr.Header.Set("api-key", c.opts.APIKey)
		} else {
			hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
		}
	}
	for k, v := range c.opts.Headers {
		hr.Header.Set(k, v)
	}

	resp, err := c.http.Do(hr)
	idle.Stop()
	if err != nil {
		return c.readFailure(tctx, err, stageConnect)
	}
	defer resp.Body.Close()
	r := &idleReader{r: resp.Body, t: idle, d: c.opts.IdleTimeout}

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, err := io.ReadAll(io.LimitReader(r, maxErrorBody))
		if err != nil && tctx.Err() != nil {
			return c.readFailure(tctx, err, stageConnect)
		}
		ref := c.classify(resp.StatusCode, resp.Header, b, model)
		return &failure{err: ref.err, retry: ref.err.Retryable() && !ref.final, waitGiven: hasRetryAfter(resp.Header)}
	}

	a := &assembler{emit: emit}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt == "application/json" {
		err = readJSON(r, a)
	} else {
		err = readStream(r, a)
	}
	if ae, ok := errors.AsType[*apiErrorChunk](err); ok {
		a.turn(turn, false)
		b, status := ae.body()
		ref := c.classify(status, nil, b, model)
		if status == 0 && ref.err.Kind == llm.ErrBadRequest {
			ref.err.Kind = llm.ErrUnavailable
			ref.err.Message = strings.Replace(ref.err.Message, "the provider rejected the request", "the provider failed while answering", 1)
		}
		return &failure{err: ref.err, retry: !a.emitted && ref.err.Retryable() && !ref.final}
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
		return c.readFailure(tctx, err, stage)
	}
	a.turn(turn, true)
	a.finishEvents()
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

// readFailure turns a failure to get or read the answer into a failure: the
// caller's cancellation as it is, and otherwise an *llm.Error, retried unless
// part of the answer was passed on already.
func (c *Client) readFailure(tctx context.Context, err error, st stage) *failure {
	cause := context.Cause(tctx)
	if cause != nil && !errors.Is(cause, errIdle) {
		return &failure{err: cause}
	}
	if cause != nil {
		if st == stageConnect {
			return &failure{retry: true, err: &llm.Error{Kind: llm.ErrNetwork,
				Message: fmt.Sprintf("the provider at %s sent no answer for %s", c.host, c.opts.IdleTimeout)}}
		}
		err = fmt.Errorf("nothing arrived for %s", c.opts.IdleTimeout)
	}
	return &failure{err: c.networkError(err, st), retry: st != stageCut && retryableNetwork(err)}
}

// idleReader arms the idle timer for each read, so that only time spent
// waiting for the provider counts, not time spent by the caller in emit.
type idleReader struct {
	r io.Reader
	t *time.Timer
	d time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	r.t.Reset(r.d)
	n, err := r.r.Read(p)
	r.t.Stop()
	return n, err
}
