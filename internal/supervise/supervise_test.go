package supervise

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// logBuffer is a log both the parts and the test use.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func setup(t *testing.T) (*Group, *logBuffer) {
	t.Helper()
	var buf logBuffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return New(Options{Logger: log}), &buf
}

// waitForStop is a part that runs until it is stopped.
func waitForStop(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func TestStopOrderIsReverseStartOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := setup(t)
		var mu sync.Mutex
		var stops []string
		for _, name := range []string{"mcp", "liveness", "scheduler", "ingestion"} {
			g.Start(t.Context(), Part{Name: name, Rule: Restart, Run: func(ctx context.Context) error {
				<-ctx.Done()
				if cause := context.Cause(ctx); cause != ErrStopped {
					t.Errorf("%s: cause %v, want ErrStopped", name, cause)
				}
				mu.Lock()
				stops = append(stops, name)
				mu.Unlock()
				return nil
			}})
		}
		synctest.Wait()
		g.Stop()
		want := []string{"ingestion", "scheduler", "liveness", "mcp"}
		if diff := cmp.Diff(want, stops); diff != "" {
			t.Errorf("stop order (-want +got):\n%s", diff)
		}
		if err := g.Err(); err != nil {
			t.Errorf("Err() = %v after a clean stop", err)
		}
	})
}

func TestFatalFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     func(context.Context) error
		wantErr string
	}{
		{"error", func(context.Context) error { return errors.New("disk on fire") }, "part heart failed: disk on fire"},
		{"panic", func(context.Context) error { panic("boom") }, "part heart failed: panic: boom"},
		{"returned early", func(context.Context) error { return nil }, "part heart failed: returned before it was stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g, log := setup(t)
				g.Start(t.Context(), Part{Name: "other", Rule: Restart, Run: waitForStop})
				g.Start(t.Context(), Part{Name: "heart", Rule: Fatal, Run: tc.run})
				<-g.Failed()
				err := g.Err()
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Err() = %v, want %q", err, tc.wantErr)
				}
				var pe *Error
				if !errors.As(err, &pe) || pe.Part != "heart" {
					t.Errorf("Err() = %#v, want an *Error of part heart", err)
				}
				if !strings.Contains(log.String(), "level=ERROR msg=\"part failed; stopping the process\" part=heart rule=fatal") {
					t.Errorf("the log does not name the failed part:\n%s", log)
				}
				if tc.name == "panic" && !strings.Contains(log.String(), "stack=") {
					t.Errorf("the log of a panic has no stack:\n%s", log)
				}
				// The other parts go on until the process stops them.
				if g.Restarts("other") != 0 {
					t.Errorf("other part restarted")
				}
				g.Stop()
			})
		})
	}
}

func TestRestartWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, log := setup(t)
		start := time.Now()
		var starts []time.Duration
		g.Start(t.Context(), Part{Name: "sweeper", Rule: Restart, Run: func(ctx context.Context) error {
			starts = append(starts, time.Since(start))
			if len(starts) <= 8 {
				return errors.New("database gone")
			}
			<-ctx.Done()
			return nil
		}})
		<-time.After(10 * time.Minute) // the bubble's clock
		synctest.Wait()
		// 1s doubling, at most a minute.
		want := []time.Duration{0, 1, 3, 7, 15, 31, 63, 123, 183}
		for i := range want {
			want[i] *= time.Second
		}
		if diff := cmp.Diff(want, starts); diff != "" {
			t.Errorf("start times (-want +got):\n%s", diff)
		}
		if n := g.Restarts("sweeper"); n != 8 {
			t.Errorf("Restarts = %d, want 8", n)
		}
		select {
		case <-g.Failed():
			t.Error("a restart part's failure failed the group")
		default:
		}
		out := log.String()
		for _, s := range []string{
			`level=ERROR msg="part failed; restarting it" part=sweeper rule=restart err="database gone" failures=1 backoff=1s`,
			`failures=8 backoff=1m0s`,
			`level=INFO msg="part restarted" part=sweeper rule=restart restarts=8`,
		} {
			if !strings.Contains(out, s) {
				t.Errorf("the log has no %q:\n%s", s, out)
			}
		}
		g.Stop()
	})
}

func TestBackoffStartsOverAfterALongRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := setup(t)
		start := time.Now()
		var starts []time.Duration
		g.Start(t.Context(), Part{Name: "ingestion", Rule: Restart, Run: func(ctx context.Context) error {
			starts = append(starts, time.Since(start))
			switch len(starts) {
			case 1, 2:
				return errors.New("quick failure")
			case 3:
				<-time.After(2 * time.Minute)
				return errors.New("failure after a long run")
			}
			<-ctx.Done()
			return nil
		}})
		<-time.After(10 * time.Minute) // the bubble's clock
		synctest.Wait()
		want := []time.Duration{0, time.Second, 3 * time.Second, 3*time.Second + 2*time.Minute + time.Second}
		if diff := cmp.Diff(want, starts); diff != "" {
			t.Errorf("start times (-want +got):\n%s", diff)
		}
		g.Stop()
	})
}

func TestStopDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := setup(t)
		g.Start(t.Context(), Part{Name: "flaky", Rule: Restart, Run: func(context.Context) error { return errors.New("no") }})
		synctest.Wait() // failed, waiting out its backoff
		g.Stop()
		if n := g.Restarts("flaky"); n != 0 {
			t.Errorf("Restarts = %d, want 0", n)
		}
	})
}

func TestErrorWhileStoppingIsNotAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, log := setup(t)
		g.Start(t.Context(), Part{Name: "mcp", Run: func(ctx context.Context) error {
			<-ctx.Done()
			return errors.New("closing a connection")
		}})
		g.Start(t.Context(), Part{Name: "quiet", Run: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}})
		g.Stop()
		if err := g.Err(); err != nil {
			t.Errorf("Err() = %v", err)
		}
		out := log.String()
		if !strings.Contains(out, `level=WARN msg="part stopped with an error" part=mcp rule=fatal err="closing a connection"`) {
			t.Errorf("the log has no warning for mcp:\n%s", out)
		}
		if strings.Contains(out, "part=quiet rule") {
			t.Errorf("a part returning its context's error is logged:\n%s", out)
		}
	})
}

func TestStartAfterStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := setup(t)
		g.Stop()
		ran := false
		g.Start(t.Context(), Part{Name: "late", Run: func(context.Context) error { ran = true; return nil }})
		synctest.Wait()
		if ran {
			t.Error("a part started after Stop ran")
		}
	})
}
