// Package supervise runs the long-lived parts of a process. Each part has a
// name and a rule that says what its failure means: the process stops, or the
// part is started again after a backoff. The parts stop one at a time, the
// last started first (docs/architecture.md, "Lifecycle").
package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"
)

// Rule says what a part's failure means.
type Rule string

const (
	// Fatal parts are ones the process is wrong without: their failure is
	// reported on Failed, and the process stops.
	Fatal Rule = "fatal"
	// Restart parts are loops that can begin again at any time: after a
	// failure they are started again, after a backoff.
	Restart Rule = "restart"
)

// Part is one long-lived part of the process.
type Part struct {
	// Name identifies the part in the log (key "part") and in errors.
	Name string
	// Rule is what its failure means; empty means Fatal.
	Rule Rule
	// Run does the part's work until ctx ends, and then returns. Returning
	// an error, panicking, or returning before ctx ends is a failure.
	Run func(ctx context.Context) error
}

// Options configure a Group; the zero value is usable.
type Options struct {
	// Logger gets the failures and restarts; nil means slog.Default().
	Logger *slog.Logger
	// MinBackoff is the wait before a failed part is first restarted
	// (default 1s); each further failure doubles it, up to MaxBackoff
	// (default 1m). A part that ran for MaxBackoff before failing starts
	// over from MinBackoff.
	MinBackoff, MaxBackoff time.Duration
}

// ErrStopped is the cause of a part's context when the group stops it.
var ErrStopped = errors.New("stopped")

// Error is the failure of a fatal part.
type Error struct {
	Part string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("part %s failed: %v", e.Part, e.Err) }

// Unwrap returns the part's own error.
func (e *Error) Unwrap() error { return e.Err }

// PanicError is a part's panic, recovered.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// errReturned is the failure of a part that returned nil while it was meant
// to go on.
var errReturned = errors.New("returned before it was stopped")

// Group runs parts. Its methods may be called from any goroutine.
type Group struct {
	log                    *slog.Logger
	minBackoff, maxBackoff time.Duration

	mu      sync.Mutex
	parts   []*running // in start order
	stopped bool

	failed   chan struct{}
	failOnce sync.Once
	err      error // the first fatal failure, set before failed closes
}

// running is a started part.
type running struct {
	part     Part
	cancel   context.CancelCauseFunc
	done     chan struct{}
	restarts int // guarded by Group.mu
}

// New returns a group with no parts.
func New(opts Options) *Group {
	g := &Group{log: opts.Logger, minBackoff: opts.MinBackoff, maxBackoff: opts.MaxBackoff, failed: make(chan struct{})}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.minBackoff <= 0 {
		g.minBackoff = time.Second
	}
	if g.maxBackoff <= 0 {
		g.maxBackoff = time.Minute
	}
	g.maxBackoff = max(g.maxBackoff, g.minBackoff)
	return g
}

// Start starts p now, in a goroutine, with a context derived from ctx that
// Stop cancels. Parts stop in the reverse of the order they were started.
// After Stop, Start does nothing.
func (g *Group) Start(ctx context.Context, p Part) {
	if p.Rule == "" {
		p.Rule = Fatal
	}
	ctx, cancel := context.WithCancelCause(ctx)
	r := &running{part: p, cancel: cancel, done: make(chan struct{})}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		cancel(ErrStopped)
		return
	}
	g.parts = append(g.parts, r)
	go g.supervise(ctx, r)
}

// Failed is closed when a fatal part has failed; Err then returns why.
func (g *Group) Failed() <-chan struct{} { return g.failed }

// Err returns the first fatal failure, an *Error, or nil.
func (g *Group) Err() error {
	select {
	case <-g.failed:
		return g.err
	default:
		return nil
	}
}

// Restarts returns how many times the part of that name was started again.
func (g *Group) Restarts(name string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.parts {
		if r.part.Name == name {
			n += r.restarts
		}
	}
	return n
}

// Stop stops the parts one at a time, the last started first: it cancels a
// part's context with ErrStopped and waits for it to return before it stops
// the one started before it.
func (g *Group) Stop() {
	g.mu.Lock()
	parts := g.parts
	g.stopped = true
	g.mu.Unlock()
	for i := len(parts) - 1; i >= 0; i-- {
		r := parts[i]
		r.cancel(ErrStopped)
		<-r.done
		g.log.Debug("part stopped", slog.String("part", r.part.Name))
	}
}

// supervise runs r until ctx ends, applying its rule to each failure.
func (g *Group) supervise(ctx context.Context, r *running) {
	defer close(r.done)
	log := g.log.With(slog.String("part", r.part.Name), slog.String("rule", string(r.part.Rule)))
	backoff := g.minBackoff
	for failures := 1; ; failures++ {
		began := time.Now()
		err := call(ctx, r.part.Run)
		if ctx.Err() != nil {
			// Stopped: what it returns while stopping is not a failure.
			if err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("part stopped with an error", slog.Any("err", err))
			}
			return
		}
		if err == nil {
			err = errReturned
		}
		attrs := []any{slog.Any("err", err)}
		if pe, ok := errors.AsType[*PanicError](err); ok {
			attrs = append(attrs, slog.String("stack", string(pe.Stack)))
		}
		if r.part.Rule != Restart {
			log.Error("part failed; stopping the process", attrs...)
			g.fail(&Error{Part: r.part.Name, Err: err})
			return
		}
		if time.Since(began) >= g.maxBackoff {
			backoff = g.minBackoff
		}
		log.Error("part failed; restarting it", append(attrs, slog.Int("failures", failures), slog.Duration("backoff", backoff))...)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, g.maxBackoff)
		g.mu.Lock()
		r.restarts++
		g.mu.Unlock()
		log.Info("part restarted", slog.Int("restarts", failures))
	}
}

// fail records the first fatal failure and closes failed.
func (g *Group) fail(err error) {
	g.failOnce.Do(func() {
		g.err = err
		close(g.failed)
	})
}

// call runs run, turning a panic into a *PanicError.
func call(ctx context.Context, run func(context.Context) error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return run(ctx)
}
