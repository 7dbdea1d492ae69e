// Package sse opens and reads the server-sent-event streams that model
// providers answer with. It owns the HTTP side of a streamed model request:
// [Open] POSTs a body and hands back a [Stream] once a 2xx event stream has
// started, or a [*StatusError] holding the provider's refusal for the caller to
// classify; [Reader] splits a stream into events as the WHATWG EventSource
// rules say. Both are watched by an idle timeout, so that a provider that stops
// talking, before the headers or in the middle of an answer, does not hold a
// turn forever. The package knows nothing about any provider's JSON.
package sse

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"time"
)

// ErrIdle is wrapped by the error of a request or stream that received nothing
// for longer than its idle timeout.
var ErrIdle = errors.New("no data from the server within the idle timeout")

// Event is one dispatched server-sent event.
type Event struct {
	// Type is the event's "event:" field; empty means the default, "message".
	Type string
	// Data is the event's data lines joined with "\n". A Reader reuses
	// it: it holds until the Reader's next Next, and whoever keeps it longer
	// copies it.
	Data []byte
	// ID is the last "id:" field seen, as the EventSource rules keep it across events.
	ID string
}

// maxLine bounds one line of a stream. Generous, because some providers put a
// whole generated image, base64, on one data line.
const maxLine = 64 << 20

// firstBuffer is the line buffer a Reader starts with; it grows, up to
// maxLine, only for a stream whose lines need it: a thousand streams at once
// then hold 4 MB of line buffers instead of 64 MB.
const firstBuffer = 4 << 10

// Reader reads events from a text/event-stream.
type Reader struct {
	sc   *bufio.Scanner
	id   string
	data bytes.Buffer
	// keepCut passes on an event that the end of the stream cut short.
	keepCut bool
}

// NewReader returns a Reader of the events in r.
func NewReader(r io.Reader) *Reader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, firstBuffer), maxLine)
	return &Reader{sc: sc}
}

// Next returns the next event. It returns io.EOF when the stream ends cleanly,
// and drops an event that the end of the stream cut short (one with no blank
// line after it), as the EventSource rules say. Comments and retry fields are skipped.
func (r *Reader) Next() (Event, error) {
	var typ string
	r.data.Reset()
	hasData := false
	for r.sc.Scan() {
		line := r.sc.Bytes()
		if len(line) == 0 {
			if !hasData {
				typ = ""
				continue
			}
			data := bytes.TrimSuffix(r.data.Bytes(), []byte{'\n'})
			return Event{Type: typ, Data: data, ID: r.id}, nil
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte{':'})
		value = bytes.TrimPrefix(value, []byte{' '})
		switch string(field) {
		case "event":
			typ = string(value)
		case "data":
			hasData = true
			r.data.Write(value)
			r.data.WriteByte('\n')
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				r.id = string(value)
			}
		}
	}
	if err := r.sc.Err(); err != nil {
		return Event{}, err
	}
	if r.keepCut && hasData {
		r.keepCut = false
		data := bytes.TrimSuffix(r.data.Bytes(), []byte{'\n'})
		return Event{Type: typ, Data: data, ID: r.id}, nil
	}
	return Event{}, io.EOF
}

// Request is a streamed POST.
type Request struct {
	// Client sends the request; nil means http.DefaultClient.
	Client *http.Client
	URL    string
	// Header is sent as is; Open adds Accept: text/event-stream when it has
	// no Accept entry (an entry without values sends no Accept).
	Header http.Header
	Body   []byte
	// Idle bounds the wait for the response headers, then for each piece of
	// the stream; 0 means no bound. Only the time spent waiting for the
	// server counts, not the time the caller takes between reads.
	Idle time.Duration
	// AnyType hands back every 2xx answer as a Stream, whatever its
	// Content-Type, for a caller that also reads answers that are not event
	// streams (see [Stream.MediaType] and [Stream.Body]).
	AnyType bool
	// KeepCut passes on an event that the end of the stream cut short (no
	// blank line after it) instead of dropping it, for servers that end their
	// stream without the last blank line.
	KeepCut bool
}

// StatusError is an answer that is not a 2xx event stream: the provider
// refused the request, or something in between answered in its place.
type StatusError struct {
	StatusCode int
	Header     http.Header
	// Body is the start of the answer's body (at most 64 KiB).
	Body []byte
}

// maxErrorBody bounds how much of a refusal is read.
const maxErrorBody = 64 << 10

// Error names the status only: the body may hold anything, and the caller
// decides what of it a user may read.
func (e *StatusError) Error() string {
	if e.StatusCode/100 == 2 {
		return fmt.Sprintf("HTTP %d answer is not an event stream (Content-Type %q)", e.StatusCode, e.Header.Get("Content-Type"))
	}
	return fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
}

// Stream is an open event stream. Close it when done.
type Stream struct {
	body      io.ReadCloser
	watched   io.Reader
	mediaType string
	reader    *Reader
	watch     *watch
}

// Open sends r and returns the event stream of a 2xx answer. A non-2xx answer,
// or a 2xx one with a Content-Type other than text/event-stream, is a
// *StatusError; its body has been read and closed. When nothing arrives
// within r.Idle, the request is abandoned with an error wrapping ErrIdle; when
// ctx ends, the error is ctx's cause. Other errors are the transport's (the
// connection was refused, reset, …).
func Open(ctx context.Context, r Request) (*Stream, error) {
	w := newWatch(ctx, r.Idle)
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		w.stop()
		return nil, err
	}
	if r.Header != nil {
		req.Header = r.Header.Clone()
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "text/event-stream")
	}
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		w.stop()
		return nil, w.explain(err)
	}
	w.pause()
	watched := watchedReader{resp.Body, w}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 || !r.AnyType && !eventStream(resp.Header.Get("Content-Type")) {
		body, err := io.ReadAll(io.LimitReader(watched, maxErrorBody))
		resp.Body.Close()
		if err != nil {
			if err = w.explain(err); errors.Is(err, ErrIdle) || ctx.Err() != nil {
				w.stop()
				return nil, err
			}
		}
		w.stop()
		return nil, &StatusError{StatusCode: resp.StatusCode, Header: resp.Header, Body: body}
	}
	reader := NewReader(watched)
	reader.keepCut = r.KeepCut
	return &Stream{body: resp.Body, watched: watched, mediaType: mt, reader: reader, watch: w}, nil
}

// eventStream reports whether a Content-Type is that of an event stream. A
// missing one is taken to be, as some proxies leave it out.
func eventStream(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "text/event-stream"
}

// Next returns the next event, io.EOF at the clean end of the stream, an error
// wrapping ErrIdle when the stream went quiet for too long, ctx's cause when
// the request's context ended, or the transport's error.
func (s *Stream) Next() (Event, error) {
	return s.reader.Next()
}

// MediaType is the answer's media type, without parameters; empty when it
// did not say.
func (s *Stream) MediaType() string {
	return s.mediaType
}

// Body is the answer's body, watched by the idle timeout as Next is, for an
// answer that is not an event stream (see [Request.AnyType]). Reading it and
// calling Next on the same stream do not mix.
func (s *Stream) Body() io.Reader {
	return s.watched
}

// Close ends the stream and releases its connection.
func (s *Stream) Close() error {
	err := s.body.Close()
	s.watch.stop()
	return err
}

// watch abandons a request when it waits too long for the server, by
// cancelling the request's context with ErrIdle as the cause. It runs until
// the response headers arrive, then only during each read of the body.
type watch struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	idle   time.Duration
	timer  *time.Timer
}

func newWatch(parent context.Context, idle time.Duration) *watch {
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{parent: parent, ctx: ctx, cancel: cancel, idle: idle}
	if idle > 0 {
		w.timer = time.AfterFunc(idle, func() { cancel(ErrIdle) })
	}
	return w
}

// arm restarts the idle timeout.
func (w *watch) arm() {
	if w.timer != nil {
		w.timer.Reset(w.idle)
	}
}

// pause stops the idle timeout until the next arm.
func (w *watch) pause() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

func (w *watch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(context.Canceled)
}

// explain replaces the transport's error for a request that the watch or the
// caller's context ended with the reason it ended.
func (w *watch) explain(err error) error {
	if w.parent.Err() != nil {
		return context.Cause(w.parent)
	}
	if errors.Is(context.Cause(w.ctx), ErrIdle) {
		return fmt.Errorf("%w (%s)", ErrIdle, w.idle)
	}
	return err
}

// watchedReader arms its watch for the time of each read, so that only time
// spent waiting for the server counts, not time the caller spends between
// reads.
type watchedReader struct {
	r io.Reader
	w *watch
}

func (r watchedReader) Read(p []byte) (int, error) {
	r.w.arm()
	n, err := r.r.Read(p)
	r.w.pause()
	// An end of the body after the request was abandoned is that
	// abandonment, not the end of the answer.
	if err != nil && (err != io.EOF || r.w.ctx.Err() != nil) {
		err = r.w.explain(err)
	}
	return n, err
}

// Idle connections an HTTP client of NewHTTPClient keeps for reuse, to one
// host and in all. Go's default of two a host would have a server streaming
// a hundred answers at once from one provider close most of its connections
// as the answers end and open (and, over TLS, handshake) new ones for the
// next; an idle connection is closed after 90 s all the same.
const (
	idlePerHost = 256
	idleInAll   = 1024
)

// NewHTTPClient returns an HTTP client for long event streams: connecting
// (dial and TLS handshake) is bounded by connect, and there is no overall
// timeout, since a stream's length is bounded by its idle timeout instead.
func NewHTTPClient(connect time.Duration) *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = connect
	t.MaxIdleConnsPerHost = idlePerHost
	t.MaxIdleConns = idleInAll
	return &http.Client{Transport: t}
}
