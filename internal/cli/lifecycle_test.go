package cli

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/app"
	"github.com/relay-ai/relay/internal/supervise"
)

// lifecycle watches a `relay serve` run in this process through its hooks:
// the shutdown's steps and the parts' stops, in the order they happen.
type lifecycle struct {
	mu     sync.Mutex
	events []string
}

func (l *lifecycle) add(ev string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

func (l *lifecycle) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// hooks records every step and every part's stop (its Run returning once
// stopped) in l; change, if set, changes a part before it is recorded.
func (l *lifecycle) hooks(change func(supervise.Part) supervise.Part) *app.Hooks {
	return &app.Hooks{
		OnStep:  l.add,
		Backoff: time.Millisecond,
		Wrap: func(p supervise.Part) supervise.Part {
			if change != nil {
				p = change(p)
			}
			run := p.Run
			p.Run = func(ctx context.Context) error {
				err := run(ctx)
				if ctx.Err() != nil {
					l.add("stopped " + p.Name)
				}
				return err
			}
			return p
		},
	}
}

// serveWithHooks runs `relay serve` with hooks until ctx ends or it stops
// by itself, and returns its exit code and log.
func serveWithHooks(t *testing.T, ctx context.Context, h *app.Hooks, ready chan<- string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n  shutdown_timeout: 5s\n")
	addr := freeAddr(t)
	h.Parts = append(h.Parts, supervise.Part{Name: "probe", Rule: supervise.Restart, Run: func(ctx context.Context) error {
		if ready != nil {
			ready <- "http://" + addr
		}
		<-ctx.Done()
		return nil
	}})
	var stderr syncBuffer
	code := Main(ctx, []string{"serve", "--config", cfgPath, "--addr", addr},
		IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: testEnv(nil), hooks: h})
	keepLog(t, stderr.String())
	return code, stderr.String()
}

// The shutdown order of docs/architecture.md, "Lifecycle".
var shutdownOrder = []string{
	"http", "runs",
	"stopped probe", "stopped threads", "stopped sessions", "stopped ingestion", "stopped scheduler", "stopped liveness", "stopped mcp",
	"database",
}

func TestShutdownOrder(t *testing.T) {
	var l lifecycle
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	go func() {
		<-ready // every part has started
		cancel()
	}()
	code, log := serveWithHooks(t, ctx, l.hooks(nil), ready)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, log)
	}
	if diff := cmp.Diff(shutdownOrder, l.seen()); diff != "" {
		t.Errorf("shutdown order (-want +got):\n%s", diff)
	}
}

func TestFatalPartStopsTheServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(supervise.Part) supervise.Part
		inject []supervise.Part
		want   []string
		order  []string
	}{{
		name:   "injected part",
		inject: []supervise.Part{{Name: "broken", Rule: supervise.Fatal, Run: func(context.Context) error { return errors.New("injected failure") }}},
		want: []string{
			`level=ERROR msg="part failed; stopping the process" part=broken rule=fatal err="injected failure"`,
			`relay serve: part broken failed: injected failure`,
		},
		// The failure stops the server in the same order as a signal.
		order: shutdownOrder,
	}, {
		// The liveness heartbeat is a fatal part: its panic stops the server.
		name: "liveness panics",
		change: func(p supervise.Part) supervise.Part {
			if p.Name == "liveness" {
				p.Run = func(context.Context) error { panic("heartbeat bug") }
			}
			return p
		},
		want: []string{
			`level=ERROR msg="part failed; stopping the process" part=liveness rule=fatal err="panic: heartbeat bug" stack=`,
			`relay serve: part liveness failed: panic: heartbeat bug`,
		},
		// The failed part has returned already: it is not stopped.
		order: []string{"http", "runs", "stopped probe", "stopped threads", "stopped sessions", "stopped ingestion", "stopped scheduler", "stopped mcp", "database"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var l lifecycle
			h := l.hooks(tc.change)
			h.Parts = tc.inject
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			code, log := serveWithHooks(t, ctx, h, nil)
			if ctx.Err() != nil {
				t.Fatalf("relay serve did not stop by itself:\n%s", log)
			}
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			for _, w := range tc.want {
				if !strings.Contains(log, w) {
					t.Errorf("the log lacks %q:\n%s", w, log)
				}
			}
			if diff := cmp.Diff(tc.order, l.seen()); diff != "" {
				t.Errorf("shutdown order (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRestartPartIsRestarted(t *testing.T) {
	var l lifecycle
	var starts atomic.Int32
	restarted := make(chan struct{})
	// The scheduler is a restart part: it fails twice, then runs as it should.
	h := l.hooks(func(p supervise.Part) supervise.Part {
		if p.Name == "scheduler" {
			run := p.Run
			p.Run = func(ctx context.Context) error {
				switch starts.Add(1) {
				case 1, 2:
					return errors.New("injected failure")
				case 3:
					close(restarted)
				}
				return run(ctx)
			}
		}
		return p
	})
	ctx, cancel := context.WithCancel(t.Context())
	ready := make(chan string, 1)
	status := make(chan int, 1)
	go func() {
		var base string
		select {
		case base = <-ready:
		case <-ctx.Done():
			return
		}
		select {
		case <-restarted: // the scheduler's third start, its second restart
		case <-ctx.Done():
			return
		}
		code := 0
		if resp, err := http.Get(base + "/healthz"); err == nil {
			code = resp.StatusCode
			resp.Body.Close()
		}
		status <- code
		cancel()
	}()
	code, log := serveWithHooks(t, ctx, h, ready)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, log)
	}
	if got := <-status; got != http.StatusOK {
		t.Errorf("GET /healthz after the restarts: %d", got)
	}
	for _, w := range []string{
		`level=ERROR msg="part failed; restarting it" part=scheduler rule=restart err="injected failure" failures=1`,
		`level=ERROR msg="part failed; restarting it" part=scheduler rule=restart err="injected failure" failures=2`,
		`level=INFO msg="part restarted" part=scheduler rule=restart restarts=2`,
	} {
		if !strings.Contains(log, w) {
			t.Errorf("the log lacks %q:\n%s", w, log)
		}
	}
	if diff := cmp.Diff(shutdownOrder, l.seen()); diff != "" {
		t.Errorf("shutdown order (-want +got):\n%s", diff)
	}
}
