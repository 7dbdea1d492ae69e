package sse

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
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
				ev.Data = bytes.Clone(ev.Data) // the reader's until the next
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

func TestOpenSlowCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := streaming(func(ctx context.Context, w *io.PipeWriter) {
			io.WriteString(w, "data: a\n\n")
			io.WriteString(w, "data: b\n\n")
		})
		s, err := Open(t.Context(), Request{Client: &http.Client{Transport: rt}, URL: "http://model.test", Idle: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		time.Sleep(10 * time.Second) // the caller, not the server, is slow
		for _, want := range []string{"a", "b"} {
			ev, err := s.Next()
			if err != nil || string(ev.Data) != want {
				t.Fatalf("Next = %q, %v; want %q", ev.Data, err, want)
			}
			time.Sleep(10 * time.Second)
		}
		if _, err := s.Next(); !errors.Is(err, ErrIdle) {
			t.Fatalf("Next after the events = %v, want ErrIdle", err)
		}
	})
}

func TestOpenKeepCutAndAnyType(t *testing.T) {
	answer := func(contentType, body string) *http.Client {
		return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			return &http.Response{
				StatusCode: 200, Header: http.Header{"Content-Type": {contentType}},
				Body: io.NopCloser(strings.NewReader(body)), Request: r,
			}, nil
		})}
	}
	t.Run("an event cut by the end", func(t *testing.T) {
		for keep, want := range map[bool]string{false: "", true: "b"} {
			s, err := Open(t.Context(), Request{Client: answer("text/event-stream", "data: a\n\ndata: b\n"), URL: "http://model.test", KeepCut: keep})
			if err != nil {
				t.Fatal(err)
			}
			if ev, err := s.Next(); err != nil || string(ev.Data) != "a" {
				t.Fatalf("Next = %q, %v", ev.Data, err)
			}
			ev, err := s.Next()
			if want == "" && err != io.EOF || want != "" && (err != nil || string(ev.Data) != want) {
				t.Errorf("KeepCut %v: Next = %q, %v; want %q", keep, ev.Data, err, want)
			}
			s.Close()
		}
	})
	t.Run("JSON", func(t *testing.T) {
		s, err := Open(t.Context(), Request{Client: answer("application/json; charset=utf-8", `{"a":1}`), URL: "http://model.test", AnyType: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		b, err := io.ReadAll(s.Body())
		if s.MediaType() != "application/json" || err != nil || string(b) != `{"a":1}` {
			t.Errorf("media type %q, body %q, %v", s.MediaType(), b, err)
		}
	})
	t.Run("no Accept", func(t *testing.T) {
		var got http.Header
		c := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			got = r.Header
			return answer("text/event-stream", "").Transport.RoundTrip(r)
		})}
		s, err := Open(t.Context(), Request{Client: c, URL: "http://model.test", Header: http.Header{"Accept": nil}})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if v := got.Values("Accept"); len(v) != 0 {
			t.Errorf("Accept = %q, want none", v)
		}
	})
}

// A client of NewHTTPClient streaming many answers at once from one host
// keeps their connections for the next ones: a second round of as many
// streams opens none.
func TestHTTPClientKeepsConnections(t *testing.T) {
	const streams = 50
	var opened atomic.Int64
	// Each answer waits until all of its round's requests are in, so that a
	// round's streams are all open at once: a connection is not reused
	// within a round.
	var mu sync.Mutex
	arrived := 0
	all := make(chan struct{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived++
		if arrived%streams == 0 {
			close(all)
		}
		round := all
		mu.Unlock()
		select {
		case <-round:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: a\n\n")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	hc := NewHTTPClient(5 * time.Second)
	round := func() {
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				s, err := Open(t.Context(), Request{Client: hc, URL: srv.URL, Body: []byte(`{}`), Idle: 5 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				defer s.Close()
				for {
					if _, err := s.Next(); err != nil {
						if err != io.EOF {
							t.Error(err)
						}
						return
					}
				}
			})
		}
		wg.Wait()
	}
	round()
	first := opened.Load()
	mu.Lock()
	all = make(chan struct{}) // the next round's
	mu.Unlock()
	round()
	if again := opened.Load() - first; again != 0 {
		t.Errorf("the second round of %d streams opened %d connections (the first %d), want none", streams, again, first)
	}
}
