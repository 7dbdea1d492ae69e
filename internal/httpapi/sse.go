package httpapi

import (
	"net/http"
	"sync"
	"time"
)

// heartbeat is how often an idle event stream gets a comment line, so that
// proxies do not close it.
const heartbeat = 15 * time.Second

// writeTimeout bounds the writes to an event stream's client: one that has
// not taken what it was sent within it (writeTimeout/2 at the least) ends the
// stream.
const writeTimeout = 30 * time.Second

// sseStream is an event stream to one client (SSE). The handler writes
// events and flushes them once it has written those there are at once — one
// write to the network for a burst of events, not one per event
// (run.Service.FollowBursts) — and a goroutine of the stream sends a
// heartbeat comment when the stream has been idle for heartbeat. The first
// write that fails ends the stream: every later write returns its error.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu      sync.Mutex
	armedAt time.Time // when the write deadline was last set (to writeTimeout from then)
	dirty   bool      // written since the last flush
	busy    bool      // written since the last heartbeat tick
	err     error

	quit chan struct{}
	done chan struct{}
}

// startSSE sends the headers of an event stream and starts its heartbeat; the
// caller must call close before it returns.
func startSSE(w http.ResponseWriter) *sseStream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: http.NewResponseController(w), quit: make(chan struct{}), done: make(chan struct{})}
	st.dirty = true // the headers
	_ = st.flush()
	go st.loop()
	return st
}

// write writes b, one or more whole events, to be sent with the burst by
// flush.
func (st *sseStream) write(b []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.writeLocked(b)
}

// flush sends what was written since the last flush.
func (st *sseStream) flush() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushLocked()
	return st.err
}

func (st *sseStream) writeLocked(b []byte) error {
	if st.err != nil {
		return st.err
	}
	// The deadline is moved on when half of it has passed, not at every
	// write: a write never has less than writeTimeout/2 to finish, and a
	// stream of tokens does not reset a timer for each.
	if now := time.Now(); now.Sub(st.armedAt) > writeTimeout/2 {
		_ = st.rc.SetWriteDeadline(now.Add(writeTimeout))
		st.armedAt = now
	}
	if _, err := st.w.Write(b); err != nil {
		st.err = err
		return err
	}
	st.dirty, st.busy = true, true
	return nil
}

func (st *sseStream) flushLocked() {
	if !st.dirty || st.err != nil {
		return
	}
	st.dirty = false
	if err := st.rc.Flush(); err != nil {
		st.err = err
	}
}

func (st *sseStream) loop() {
	defer close(st.done)
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			st.mu.Lock()
			if !st.busy && st.writeLocked([]byte(": heartbeat\n\n")) == nil {
				st.flushLocked()
			}
			st.busy = false
			st.mu.Unlock()
		case <-st.quit:
			return
		}
	}
}

// close stops the heartbeat and flushes what is left; it returns the stream's
// first error.
func (st *sseStream) close() error {
	close(st.quit)
	<-st.done
	st.mu.Lock()
	defer st.mu.Unlock()
	st.flushLocked()
	return st.err
}

// streamGrace is how long a streamed chat completion may wait for its first
// chunk before its stream begins anyway (lazyStream).
const streamGrace = time.Second

// lazyStream is the event stream of a streamed chat completion, begun by its
// first chunk or once streamGrace has passed, whichever comes first, with
// first (the chunk naming the assistant's role). Until then an answer that
// fails (the conversation too long for the model's window, …) is answered
// whole, with its status, as without streaming: whole claims the response
// for it.
type lazyStream struct {
	w     http.ResponseWriter
	first []byte
	timer *time.Timer

	mu      sync.Mutex
	decided bool       // the answer is the stream (st) or a whole response
	st      *sseStream // nil until the stream begins
}

// beginLazily returns the lazy stream of w; the caller must call close
// before it returns.
func beginLazily(w http.ResponseWriter, first []byte) *lazyStream {
	l := &lazyStream{w: w, first: first}
	l.timer = time.AfterFunc(streamGrace, func() { _ = l.begin() })
	return l
}

// begin begins the stream unless the response is decided, and returns it:
// nil when the response was claimed whole.
func (l *lazyStream) begin() *sseStream {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.decided {
		l.decided = true
		l.st = startSSE(l.w)
		if l.st.write(l.first) == nil {
			_ = l.st.flush()
		}
	}
	return l.st
}

// write writes b to the stream, beginning it.
func (l *lazyStream) write(b []byte) error {
	st := l.begin()
	if st == nil {
		return nil
	}
	return st.write(b)
}

// flush sends what was written, if the stream has begun.
func (l *lazyStream) flush() error {
	l.mu.Lock()
	st := l.st
	l.mu.Unlock()
	if st == nil {
		return nil
	}
	return st.flush()
}

// whole claims the response, for an answer written whole; false when the
// stream has begun.
func (l *lazyStream) whole() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.decided {
		return l.st == nil
	}
	l.decided = true
	return true
}

// close stops the grace timer (the stream will not begin after it) and closes
// the stream if it began.
func (l *lazyStream) close() {
	l.timer.Stop()
	l.mu.Lock()
	l.decided = true
	st := l.st
	l.mu.Unlock()
	if st != nil {
		_ = st.close()
	}
}
