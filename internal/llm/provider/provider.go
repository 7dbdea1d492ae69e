// Package provider holds the skeleton of a streamed model request that every
// provider client (openai, anthropic, google) is built on: the transport
// options and their defaults, the retry loop around opening the stream, the
// reading of its events (or of an answer that came whole, as JSON), turning a
// stream that broke off into the partial Turn and ErrStreamCut, and the check
// of a complete answer that holds nothing. What a provider's body, events,
// refusals and withheld answers look like stays in its own package, behind
// [Decoder] and the [Refuse] function given to [Endpoint.Stream]; so may the
// words for a failed connection ([Endpoint.Broken]).
package provider

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
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
	// MaxRetryWait bounds one wait between tries; 0 means a minute. A
	// provider asking for a longer wait gets no retry (see [retry.Policy]).
	MaxRetryWait time.Duration
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
	// Log gets the retry warnings, with the provider's attributes.
	Log *slog.Logger
	// AnyType reads every 2xx answer, whatever its Content-Type, as an event
	// stream, except a JSON one, which a [JSONDecoder] reads whole: for
	// endpoints whose stream the configuration may turn off. Without it, a
	// 2xx answer that is not an event stream is a refusal.
	AnyType bool
	// KeepCut passes on an event that the end of the stream cut short, for
	// servers that end their stream without the last blank line (see
	// [sse.Request]).
	KeepCut bool
	// Broken, when not nil, words a failure to get or read the answer (the
	// connection, an idle timeout, an answer that ended early or could not be
	// read) in place of [retry.Network], made [retry.Cut] at [Shown]. Its
	// error is an *llm.Error, or a *retry.Override when the kind alone does
	// not say whether to retry.
	Broken func(err error, st Stage) error
}

// Stage is how far a try got when it failed.
type Stage int

const (
	// Opening: no answer came.
	Opening Stage = iota
	// Reading: an answer came, but none of it was passed on.
	Reading
	// Shown: part of the answer was passed on, so a new try would show it
	// again.
	Shown
)

// New returns the Endpoint of a provider named name in messages, with s's
// defaults filled in. logAttrs are the attributes of its log lines, as
// [slog.Logger.With] takes them ("provider", "anthropic").
func New(name, key string, header http.Header, s Settings, logAttrs ...any) Endpoint {
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
		Retry:  retry.Policy{MaxTries: s.MaxTries, Base: s.BackoffBase, MaxWait: s.MaxRetryWait},
		Log:    log.With(logAttrs...),
	}
}

// Decoder reads the events of one answer into its turn.
//
// The errors of Event, End and JSONDecoder.JSON say how a try failed: an
// *llm.Error is the provider's own failure (made ErrStreamCut when part of
// the answer was shown); a *retry.Override is returned as it is, having said
// itself whether to retry; any other error means the answer could not be
// read, and is worded as a broken connection is ([Endpoint.Broken]).
type Decoder interface {
	// Event handles one event and reports whether the answer is complete (the
	// turn then is). ev.Data is the stream's to reuse once Event returns.
	Event(ev sse.Event) (done bool, err error)
	// End is called when the stream ends before Event said done: cleanly,
	// err being io.EOF, or because reading it failed with err. It completes
	// the turn and returns nil when the answer was whole all the same, and
	// otherwise says why not (err itself, for a failure to read).
	End(err error) error
	// Partial fills the turn with what arrived.
	Partial()
	// Shown reports whether an event has been emitted: from then on, a
	// failure cannot be retried.
	Shown() bool
	// Withheld is called once the answer is complete. It returns the error
	// for an answer with nothing in it because the provider filtered it or
	// the model refused (not retried), and nil for an answer that stands.
	Withheld() *llm.Error
}

// JSONDecoder is a Decoder that also reads an answer that came whole, as
// JSON, rather than streamed (see [Endpoint.AnyType]).
type JSONDecoder interface {
	Decoder
	// JSON reads the answer from r and completes the turn.
	JSON(r io.Reader) error
}

// Refuse is the error for an answer that is a provider's refusal rather than
// an event stream: an *llm.Error, or a *retry.Override when the kind alone
// does not say whether to retry (an exhausted quota, a Retry-After of 0).
type Refuse func(se *sse.StatusError) error

// Stream POSTs body to url as a request for model, retried as e.Retry says,
// and reads the answer through the Decoder that decoder makes for each try's
// turn. emit, when not nil, gets the events. The returned Turn is never nil:
// on failure it holds what arrived before (possibly nothing) and the body
// sent. A complete answer that the last Decoder says was withheld is its
// error, with the turn.
func (e *Endpoint) Stream(ctx context.Context, url, model string, body []byte, emit func(llm.Event), refuse Refuse, decoder func(turn *llm.Turn, out Output) Decoder) (*llm.Turn, error) {
	if emit == nil {
		emit = func(llm.Event) {}
	}
	policy := e.Retry
	policy.Logger = e.Log.With("model", model)
	var turn *llm.Turn
	var d Decoder
	retries, err := policy.Do(ctx, func(ctx context.Context) error {
		turn = &llm.Turn{Sent: body}
		d = decoder(turn, Output{emit: emit})
		return e.try(ctx, url, model, body, refuse, d)
	}, emit)
	turn.Retries = retries
	if err != nil {
		return turn, err
	}
	if le := d.Withheld(); le != nil {
		return turn, le
	}
	return turn, nil
}

// try sends the body once and reads the answer through d.
func (e *Endpoint) try(ctx context.Context, url, model string, body []byte, refuse Refuse, d Decoder) error {
	s, err := sse.Open(ctx, sse.Request{
		Client: e.HTTP, URL: url, Header: RequestHeader(ctx, e.Header), Body: body, Idle: e.Idle,
		AnyType: e.AnyType, KeepCut: e.KeepCut,
	})
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
		return e.broken(err, Opening)
	}
	defer s.Close()
	if j, ok := d.(JSONDecoder); ok && e.AnyType && s.MediaType() == "application/json" {
		if err := j.JSON(s.Body()); err != nil {
			return e.fail(ctx, d, err)
		}
		return nil
	}
	for {
		ev, err := s.Next()
		if err == nil {
			done, err := d.Event(ev)
			if err != nil {
				return e.fail(ctx, d, err)
			}
			if done {
				return nil
			}
			continue
		}
		// A read that failed because the request was cancelled says nothing
		// of the answer.
		if err == io.EOF || ctx.Err() == nil {
			if err = d.End(err); err == nil {
				return nil
			}
		}
		return e.fail(ctx, d, err)
	}
}

// fail ends a try whose answer failed with err (see [Decoder]), keeping what
// arrived in the turn.
func (e *Endpoint) fail(ctx context.Context, d Decoder, err error) error {
	d.Partial()
	if o, ok := errors.AsType[*retry.Override](err); ok {
		return o
	}
	if le, ok := errors.AsType[*llm.Error](err); ok {
		if d.Shown() {
			return retry.Cut(e.Name, le)
		}
		return le
	}
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if d.Shown() {
		return e.broken(err, Shown)
	}
	return e.broken(err, Reading)
}

// broken is the error for a failure to get or read the answer at stage st.
func (e *Endpoint) broken(err error, st Stage) error {
	if e.Broken != nil {
		return e.Broken(err, st)
	}
	le := retry.Network(e.Name, err, e.Key)
	if st == Shown {
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

// ConversationPlaceholder begins the placeholders of an endpoint's headers
// that name the conversation a request is for, as LibreChat names the fields
// of its request body (docs/config.md, "Headers that name the conversation");
// ConversationPlaceholders are those Relay fills.
const ConversationPlaceholder = "{{LIBRECHAT_BODY_"

var ConversationPlaceholders = []string{
	"{{LIBRECHAT_BODY_CONVERSATIONID}}", "{{LIBRECHAT_BODY_MESSAGEID}}", "{{LIBRECHAT_BODY_PARENTMESSAGEID}}",
}

// The marks MarkConversation puts in place of ConversationPlaceholders, for
// RequestHeader to fill. A NUL cannot come from anywhere else into a header:
// the values filled into one (a user's details, the conversation's ids) lose
// their control characters, so that a user's name holding a placeholder's
// text is sent as typed, never filled in turn.
const (
	markStart        = "\x00conversation:"
	markConversation = markStart + "id\x00"
	markMessage      = markStart + "message\x00"
	markParent       = markStart + "parent\x00"
)

// marker puts each of ConversationPlaceholders' mark in its place.
var marker = strings.NewReplacer(
	ConversationPlaceholders[0], markConversation,
	ConversationPlaceholders[1], markMessage,
	ConversationPlaceholders[2], markParent)

// MarkConversation returns an endpoint's header value, as the config gives it,
// with the placeholders that name the conversation made ready for
// RequestHeader. The endpoint's headers must be marked before anything else
// (a user's details) is filled into them.
func MarkConversation(value string) string {
	if !strings.Contains(value, ConversationPlaceholder) {
		return value
	}
	return marker.Replace(value)
}

// RequestHeader returns header with the placeholders MarkConversation marked
// filled from the conversation ctx carries (llm.ConversationOf), each empty
// when there is none; header itself when it holds none. A value is inserted
// without its control characters, so that it cannot add a header.
func RequestHeader(ctx context.Context, header http.Header) http.Header {
	found := false
	for _, vs := range header {
		for _, v := range vs {
			found = found || strings.Contains(v, markStart)
		}
	}
	if !found {
		return header
	}
	c := llm.ConversationOf(ctx)
	r := strings.NewReplacer(
		markConversation, headerSafe(c.ID),
		markMessage, headerSafe(c.MessageID),
		markParent, headerSafe(c.ParentMessageID))
	out := make(http.Header, len(header))
	for k, vs := range header {
		filled := make([]string, len(vs))
		for i, v := range vs {
			filled[i] = r.Replace(v)
		}
		out[k] = filled
	}
	return out
}

// headerSafe is s without the control characters that would end a header
// line or be refused in one (tab is kept).
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}
