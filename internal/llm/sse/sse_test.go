package sse

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReader(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []Event
	}{
		{
			name:   "typed events",
			stream: "event: ping\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			want:   []Event{{Type: "ping", Data: []byte("{}")}, {Type: "message_stop", Data: []byte(`{"type":"message_stop"}`)}},
		},
		{
			name:   "CRLF line ends, no space after the colon",
			stream: "data:{\"a\":1}\r\n\r\ndata: {\"a\":2}\r\n\r\n",
			want:   []Event{{Data: []byte(`{"a":1}`)}, {Data: []byte(`{"a":2}`)}},
		},
		{
			name:   "data lines joined with newlines",
			stream: "data: one\ndata:\ndata: three\n\n",
			want:   []Event{{Data: []byte("one\n\nthree")}},
		},
		{
			name:   "comments, retry and unknown fields skipped; id kept",
			stream: ": keep-alive\nretry: 10\nfoo: bar\nid: 7\ndata: x\n\ndata: y\n\n",
			want:   []Event{{Data: []byte("x"), ID: "7"}, {Data: []byte("y"), ID: "7"}},
		},
		{
			name:   "an event without data is not dispatched and forgets its type",
			stream: "event: lonely\n\ndata: z\n\n",
			want:   []Event{{Data: []byte("z")}},
		},
		{
			name:   "an event cut by the end of the stream is dropped",
			stream: "data: whole\n\ndata: {\"half",
			want:   []Event{{Data: []byte("whole")}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(tt.stream))
			var got []Event
			for {
				ev, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ev)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// roundTrip is an in-memory http.RoundTripper: all its blocking is on
// channels, so the tests run in a synctest bubble with a fake clock.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// streaming answers with a 200 event stream whose body write fills; the body
// fails, as a real connection's does, when the request's context ends.
func streaming(write func(ctx context.Context, w *io.PipeWriter)) roundTrip {
	return func(r *http.Request) (*http.Response, error) {
		pr, pw := io.Pipe()
		go func() {
			write(r.Context(), pw)
			<-r.Context().Done()
			pw.CloseWithError(r.Context().Err())
		}()
		return &http.Response{
			StatusCode: 200,
			Header:     http.Header{"Content-Type": {"text/event-stream; charset=utf-8"}},
			Body:       pr,
			Request:    r,
		}, nil
	}
}

func TestOpenStreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got http.Header
		rt := func(r *http.Request) (*http.Response, error) {
			got = r.Header
			body, _ := io.ReadAll(r.Body)
			if string(body) != `{"q":1}` {
				t.Errorf("body = %s", body)
			}
			return streaming(func(ctx context.Context, w *io.PipeWriter) {
				io.WriteString(w, "data: a\n\n")
				w.Close()
			})(r)
		}
		s, err := Open(t.Context(), Request{
			Client: &http.Client{Transport: roundTrip(rt)}, URL: "http://model.test/v1",
			Header: http.Header{"X-Api-Key": {"k"}}, Body: []byte(`{"q":1}`), Idle: time.Second,
		})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if got.Get("Accept") != "text/event-stream" || got.Get("X-Api-Key") != "k" {
			t.Errorf("headers = %v", got)
		}
		ev, err := s.Next()
		if err != nil || string(ev.Data) != "a" {
			t.Fatalf("Next = %q, %v", ev.Data, err)
		}
		if _, err := s.Next(); err != io.EOF {
			t.Fatalf("Next at the end = %v, want io.EOF", err)
		}
	})
}

func TestOpenIdle(t *testing.T) {
	t.Run("no headers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := roundTrip(func(r *http.Request) (*http.Response, error) {
				<-r.Context().Done()
				return nil, r.Context().Err()
			})
			start := time.Now()
			_, err := Open(t.Context(), Request{Client: &http.Client{Transport: rt}, URL: "http://model.test", Idle: 5 * time.Second})
			if !errors.Is(err, ErrIdle) {
				t.Fatalf("err = %v, want ErrIdle", err)
			}
			if d := time.Since(start); d != 5*time.Second {
				t.Errorf("gave up after %v, want 5s", d)
			}
		})
	})
	t.Run("quiet stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			rt := streaming(func(ctx context.Context, w *io.PipeWriter) {
				for range 3 {
					time.Sleep(4 * time.Second) // each under the idle timeout
					io.WriteString(w, "data: tick\n\n")
				}
			})
			start := time.Now()
			s, err := Open(t.Context(), Request{Client: &http.Client{Transport: rt}, URL: "http://model.test", Idle: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for range 3 {
				if _, err := s.Next(); err != nil {
					t.Fatal(err)
				}
			}
			_, err = s.Next()
			if !errors.Is(err, ErrIdle) {
				t.Fatalf("err = %v, want ErrIdle", err)
			}
			if d := time.Since(start); d != 17*time.Second {
				t.Errorf("gave up after %v, want 17s (three ticks, then 5s of silence)", d)
			}
		})
	})
}

func TestOpenCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cause := errors.New("user abort")
		ctx, cancel := context.WithCancelCause(t.Context())
		rt := streaming(func(ctx context.Context, w *io.PipeWriter) {
			io.WriteString(w, "data: first\n\n")
		})
		s, err := Open(ctx, Request{Client: &http.Client{Transport: rt}, URL: "http://model.test", Idle: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		go func() {
			time.Sleep(time.Second)
			cancel(cause)
		}()
		if _, err := s.Next(); !errors.Is(err, cause) {
			t.Fatalf("err = %v, want the cancel cause", err)
		}
	})
}

func TestOpenRefused(t *testing.T) {
	tests := []struct {
		name, contentType string
		status            int
		want              string
	}{
		{"error status", "application/json", 404, "HTTP 404 Not Found"},
		{"JSON instead of a stream", "application/json", 200, `HTTP 200 answer is not an event stream (Content-Type "application/json")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := roundTrip(func(r *http.Request) (*http.Response, error) {
				return &http.Response{
					StatusCode: tt.status,
					Header:     http.Header{"Content-Type": {tt.contentType}, "Retry-After": {"3"}},
					Body:       io.NopCloser(strings.NewReader(`{"error":"nope"}`)),
				}, nil
			})
			_, err := Open(t.Context(), Request{Client: &http.Client{Transport: rt}, URL: "http://model.test"})
			var se *StatusError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *StatusError", err)
			}
			if se.StatusCode != tt.status || string(se.Body) != `{"error":"nope"}` || se.Header.Get("Retry-After") != "3" {
				t.Errorf("StatusError = %+v", se)
			}
			if se.Error() != tt.want {
				t.Errorf("Error() = %q, want %q", se.Error(), tt.want)
			}
		})
	}
}
