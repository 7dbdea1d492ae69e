// Package provider holds the skeleton of a streamed model request that the
// provider clients built on the sse and retry packages share: the transport
// options and their defaults, the retry loop around opening the stream, the
// reading of its events, and turning a stream that broke off into the partial
// Turn and ErrStreamCut. What a provider's body, events and refusals look like
// stays in its own package, behind [Decoder] and the refusal function given to
// [Endpoint.Stream].
package provider

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/relay-ai/relay/internal/llm"
	"github.com/relay-ai/relay/internal/llm/retry"
	"github.com/relay-ai/relay/internal/llm/sse"
)

// Defaults of [Settings].
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultIdleTimeout    = 60 * time.Second
)

// Settings are the transport options of a provider client. The zero value of
// every field means its default.
type Settings struct {
	// MaxTries bounds the tries of one request, the first included; 0 means 3.
	MaxTries int
	// BackoffBase is the wait before the first retry, doubled for each one
	// after; 0 means 500ms.
	BackoffBase time.Duration
	// ConnectTimeout bounds dialing and the TLS handshake; 0 means 10s. It
	// applies to the client made here, not to HTTPClient.
	ConnectTimeout time.Duration
	// IdleTimeout bounds the wait for the answer's headers and then between
	// pieces of the stream; 0 means 60s.
	IdleTimeout time.Duration
	// HTTPClient sends the requests; nil means one made for long streams.
	HTTPClient *http.Client
	// Logger gets a warning for each retry; nil means no logging.
	Logger *slog.Logger
}

// Endpoint is where a provider client sends its streamed requests, and how.
type Endpoint struct {
	// Name names the provider in messages for the user ("Anthropic").
	Name string
	// Key is the API key, removed from every message.
	Key string
	// Header is sent with every request.
	Header http.Header
	// Idle is the idle timeout of a request.
	Idle time.Duration
	// HTTP sends the requests.
	HTTP *http.Client
	// Retry is the retry policy; its Logger is set for each request.
	Retry retry.Policy
	// Log gets the retry warnings, with the provider's attribute.
	Log *slog.Logger
}

// New returns the Endpoint of a provider named name (in messages) and
// logName (in logs), with s's defaults filled in.
func New(name, logName, key string, header http.Header, s Settings) Endpoint {
	connect := s.ConnectTimeout
	if connect <= 0 {
		connect = DefaultConnectTimeout
	}
	idle := s.IdleTimeout
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	hc := s.HTTPClient
	if hc == nil {
		hc = sse.NewHTTPClient(connect)
	}
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return Endpoint{
		Name:   name,
		Key:    key,
		Header: header,
		Idle:   idle,
		HTTP:   hc,
		Retry:  retry.Policy{MaxTries: s.MaxTries, Base: s.BackoffBase},
		Log:    log.With("provider", logName),
	}
}

// Decoder reads the events of one answer into its turn.
type Decoder interface {
	// Event handles one event and reports whether the answer is complete (the
	// turn then is).
	Event(ev sse.Event) (done bool, err *llm.Error)
	// End is called when the stream ends cleanly before Event said done. It
	// completes the turn and returns nil when the answer was whole all the
	// same, and otherwise says what is missing.
	End() error
	// Partial fills the turn with what arrived.
	Partial()
	// Shown reports whether an event has been emitted: from then on, a
	// failure cannot be retried.
	Shown() bool
}

// Refuse is the error for an answer that is a provider's refusal rather than
// an event stream.
type Refuse func(se *sse.StatusError) *llm.Error

// Stream POSTs body to url as a request for model, retried as e.Retry says,
// and reads the answer through the Decoder that decoder makes for each try's
// turn. emit, when not nil, gets the events. The returned Turn is never nil:
// on failure it holds what arrived before (possibly nothing) and the body
// sent.
func (e *Endpoint) Stream(ctx context.Context, url, model string, body []byte, emit func(llm.Event), refuse Refuse, decoder func(turn *llm.Turn, out Output) Decoder) (*llm.Turn, error) {
	if emit == nil {
		emit = func(llm.Event) {}
	}
	policy := e.Retry
	policy.Logger = e.Log.With("model", model)
	var turn *llm.Turn
	retries, err := policy.Do(ctx, func(ctx context.Context) error {
		turn = &llm.Turn{Sent: body}
		return e.try(ctx, url, model, body, refuse, decoder(turn, Output{emit: emit}))
	}, emit)
	turn.Retries = retries
	return turn, err
}

// try sends the body once and reads the answer through d.
func (e *Endpoint) try(ctx context.Context, url, model string, body []byte, refuse Refuse, d Decoder) error {
	s, err := sse.Open(ctx, sse.Request{Client: e.HTTP, URL: url, Header: e.Header, Body: body, Idle: e.Idle})
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		var se *sse.StatusError
		if errors.As(err, &se) {
			if se.StatusCode/100 == 2 {
				return retry.Refusal(e.Name, model, se.StatusCode, llm.ErrBadRequest, se.Error(), e.Key, 0)
			}
			return refuse(se)
		}
		return retry.Network(e.Name, err, e.Key)
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err == io.EOF {
			if err = d.End(); err == nil {
				return nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				d.Partial()
				return context.Cause(ctx)
			}
			return e.fail(d, retry.Network(e.Name, err, e.Key))
		}
		done, lerr := d.Event(ev)
		if lerr != nil {
			return e.fail(d, lerr)
		}
		if done {
			return nil
		}
	}
}

// fail ends a try with le, made a stream cut if output was already shown.
func (e *Endpoint) fail(d Decoder, le *llm.Error) error {
	d.Partial()
	if d.Shown() {
		return retry.Cut(e.Name, le)
	}
	return le
}

// Output passes a decoder's events on and remembers whether any was.
type Output struct {
	emit  func(llm.Event)
	shown bool
}

// Send emits ev.
func (o *Output) Send(ev llm.Event) {
	o.shown = true
	o.emit(ev)
}

// Shown reports whether an event was sent.
func (o *Output) Shown() bool { return o.shown }
