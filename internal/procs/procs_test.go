package procs

import (
	"context"
	"math"
	"runtime/metrics"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecide(t *testing.T) {
	short := func(busy, queue float64) Load { return Load{Span: growWindow, Busy: busy, Queue: queue} }
	long := func(busy, queue float64) Load { return Load{Span: shrinkWindow, Busy: busy, Queue: queue, Peak: busy} }
	bursts := func(busy, peak float64) Load { return Load{Span: shrinkWindow, Busy: busy, Queue: 0.05, Peak: peak} }
	idle := long(0.01, 0)
	tests := []struct {
		name        string
		n, max      int
		short, long Load
		settled     bool
		want        int
	}{
		{"one thread, light load, nothing queued", 1, 8, short(0.55, 0.15), long(0.55, 0.15), true, 1},
		{"one thread, saturated, goroutines queued: doubles", 1, 8, short(0.95, 3), long(0.9, 2), false, 2},
		{"two busy threads with a queue: four", 2, 8, short(1.9, 4), long(1.9, 4), false, 4},
		{"doubling stops at max", 4, 6, short(3.8, 9), long(3.8, 9), false, 6},
		{"at max it stays", 6, 6, short(5.9, 20), long(5.9, 20), true, 6},
		{"a queue while threads are idle: no more threads", 2, 8, short(0.9, 3), long(0.9, 3), false, 2},
		{"busy without a queue: no more threads", 1, 8, short(1, 0.1), long(1, 0.1), false, 1},
		{"a grow window too short to tell", 1, 8, Load{Span: growWindow / 4, Busy: 1, Queue: 5}, long(0.5, 0), false, 1},
		{"idle since the last change: one", 8, 8, short(0, 0), idle, true, 1},
		{"idle but changed lately: kept", 8, 8, short(0, 0), idle, false, 8},
		{"what was used fits in fewer", 8, 8, short(2, 0), long(2, 0.05), true, 3},
		{"what was used needs them all", 4, 8, short(3.5, 0.05), long(3.5, 0.05), true, 4},
		{"a queue keeps them", 4, 8, short(1, 0.5), long(1, 0.5), true, 4},
		{"a shrink window too short to tell", 4, 8, short(0, 0), Load{Span: shrinkWindow / 4}, true, 4},
		{"two threads a little used: one", 2, 2, short(0.6, 0.05), long(0.6, 0.05), true, 1},
		{"idle between bursts that need them: kept", 2, 8, short(0, 0), bursts(0.3, 1.6), true, 2},
		{"idle between bursts that need fewer", 8, 8, short(0, 0), bursts(0.3, 1.4), true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.n, tt.max, tt.short, tt.long, tt.settled); got != tt.want {
				t.Errorf("decide(%d, %d, %+v, %+v, %v) = %d, want %d", tt.n, tt.max, tt.short, tt.long, tt.settled, got, tt.want)
			}
		})
	}
}

func TestHistorySince(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int, cpu, waited time.Duration) Sample {
		return Sample{At: t0.Add(time.Duration(ms) * time.Millisecond), CPU: cpu, Waited: waited}
	}
	h := history{keep: 4}
	if got := h.since(time.Second); got != (Load{}) {
		t.Fatalf("no samples: %+v", got)
	}
	h.add(at(0, 0, 0))
	if got := h.since(time.Second); got != (Load{}) {
		t.Fatalf("one sample: %+v", got)
	}
	h.add(at(100, 50*time.Millisecond, 0))
	h.add(at(200, 150*time.Millisecond, 100*time.Millisecond))
	h.add(at(300, 350*time.Millisecond, 300*time.Millisecond))
	tests := []struct {
		d    time.Duration
		want Load
	}{
		// The shortest stretch lasting d: the last 100 ms.
		{100 * time.Millisecond, Load{Span: 100 * time.Millisecond, Busy: 2, Queue: 2, Peak: 2}},
		{150 * time.Millisecond, Load{Span: 200 * time.Millisecond, Busy: 1.5, Queue: 1.5, Peak: 2}},
		// Farther back than the samples go: all of them.
		{time.Second, Load{Span: 300 * time.Millisecond, Busy: 350.0 / 300, Queue: 1, Peak: 2}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, h.since(tt.d), cmp.Comparer(near)); diff != "" {
			t.Errorf("since(%v) (-want +got):\n%s", tt.d, diff)
		}
	}
	// The oldest is dropped past keep; the busiest 100 ms are still in.
	h.add(at(400, 450*time.Millisecond, 300*time.Millisecond))
	want := Load{Span: 300 * time.Millisecond, Busy: 400.0 / 300, Queue: 1, Peak: 2}
	if diff := cmp.Diff(want, h.since(time.Second), cmp.Comparer(near)); diff != "" {
		t.Errorf("after a fifth sample, since(1s) (-want +got):\n%s", diff)
	}
	// Once the busiest 100 ms are out, the peak is the busiest left.
	h.add(at(500, 500*time.Millisecond, 300*time.Millisecond))
	h.add(at(600, 550*time.Millisecond, 300*time.Millisecond))
	if got := h.since(time.Second).Peak; !near(got, 1) {
		t.Errorf("with the busiest 100 ms dropped, peak = %v, want 1", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestWaited(t *testing.T) {
	h := &metrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0.001, 0.003, math.Inf(1)},
		Counts:  []uint64{4, 10, 2},
	}
	// 4 below 1 ms counted at 1 ms, 10 between 1 and 3 ms at 2 ms, 2 above 3 ms at 3 ms.
	want := 4*time.Millisecond + 20*time.Millisecond + 6*time.Millisecond
	if got := waited(h); got < want-time.Microsecond || got > want+time.Microsecond {
		t.Errorf("waited = %v, want %v", got, want)
	}
}

func TestReadSample(t *testing.T) {
	a := ReadSample()
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) { // some CPU to count
	}
	b := ReadSample()
	if b.CPU <= a.CPU || !b.At.After(a.At) {
		t.Errorf("two samples around 20 ms of work: %+v then %+v; want CPU and time to grow", a, b)
	}
	if b.Waited < a.Waited {
		t.Errorf("waited went back: %v then %v", a.Waited, b.Waited)
	}
}

// load is a process whose CPU and queue are scripted as rates that a test
// changes as time goes.
type load struct {
	mu          sync.Mutex
	last        time.Time
	busy, queue float64
	cpu, waited time.Duration
	sets        []int
}

func (l *load) set(busy, queue float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance()
	l.busy, l.queue = busy, queue
}

func (l *load) advance() {
	now := time.Now()
	if !l.last.IsZero() {
		d := float64(now.Sub(l.last))
		l.cpu += time.Duration(l.busy * d)
		l.waited += time.Duration(l.queue * d)
	}
	l.last = now
}

func (l *load) read() Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance()
	return Sample{At: l.last, CPU: l.cpu, Waited: l.waited}
}

func (l *load) record(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sets = append(l.sets, n)
}

func (l *load) counts() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.sets...)
}

func TestGovernorFollowsLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		l.set(0.3, 0.05)
		g := &Governor{Max: 4, Read: l.read, Set: l.record}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()

		time.Sleep(time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]int{1}, l.counts()); diff != "" {
			t.Fatalf("a light load: counts set (-want +got):\n%s", diff)
		}
		// Saturated, with goroutines queued: two within the grow window,
		// then four.
		l.set(1, 5)
		time.Sleep(growWindow + DefaultTick)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2}, l.counts()); diff != "" {
			t.Fatalf("one thread saturated: counts set (-want +got):\n%s", diff)
		}
		l.set(2, 5)
		time.Sleep(growWindow + DefaultTick)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2, 4}, l.counts()); diff != "" {
			t.Fatalf("two threads saturated: counts set (-want +got):\n%s", diff)
		}
		// Idle: kept for the shrink window, then one.
		l.set(0.02, 0)
		time.Sleep(shrinkWindow / 2)
		synctest.Wait()
		if got := len(l.counts()); got != 3 {
			t.Fatalf("idle for half the shrink window: counts set %v, want none more", l.counts())
		}
		// Kept for the shrink window, it is lowered to what its busiest
		// 100 ms then needed, two threads' worth: three.
		time.Sleep(shrinkWindow)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2, 4, 3}, l.counts()); diff != "" {
			t.Fatalf("idle for a shrink window: counts set (-want +got):\n%s", diff)
		}
		// Idle all along the next: one.
		time.Sleep(shrinkWindow)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2, 4, 3, 1}, l.counts()); diff != "" {
			t.Fatalf("idle for two: counts set (-want +got):\n%s", diff)
		}
		// A second governor of the process leaves the count alone.
		other := &Governor{Max: 8, Read: l.read, Set: l.record}
		octx, ocancel := context.WithCancel(t.Context())
		odone := make(chan error, 1)
		go func() { odone <- other.Run(octx) }()
		time.Sleep(time.Second)
		synctest.Wait()
		ocancel()
		if err := <-odone; err != nil {
			t.Fatal(err)
		}
		// Stopped, it gives the process all its threads back.
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 2, 4, 3, 1, 4}, l.counts()); diff != "" {
			t.Errorf("after stopping: counts set (-want +got):\n%s", diff)
		}
	})
}

func TestGovernorWithOneCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		l.set(1, 10)
		g := &Governor{Max: 1, Read: l.read, Set: l.record}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- g.Run(ctx) }()
		time.Sleep(time.Second)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := l.counts(); len(got) != 0 {
			t.Errorf("with one CPU it set %v, want nothing", got)
		}
	})
}
