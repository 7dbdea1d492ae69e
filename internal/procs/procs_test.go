package procs

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
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
		{"a queue, threads just busy enough", 2, 8, short(1.5, 0.5), long(1.5, 0.5), false, 4},
		{"threads busy enough, a queue just too short", 2, 8, short(1.5, 0.49), long(1.5, 0.49), false, 2},
		{"a queue, threads just not busy enough", 2, 8, short(1.49, 0.5), long(1.49, 0.5), false, 2},
		{"one goroutine computing without pause, nothing queued", 1, 8, short(0.9, 0), long(0.9, 0), false, 2},
		{"busy just short of full, nothing queued", 2, 8, short(1.79, 0.1), long(1.79, 0.1), false, 2},
		{"a grow window too short to tell", 1, 8, Load{Span: growWindow/2 - 1, Busy: 1, Queue: 5}, long(0.5, 0), false, 1},
		{"a grow window just long enough", 1, 8, Load{Span: growWindow / 2, Busy: 1, Queue: 5}, long(0.5, 0), false, 2},
		{"idle since the last change: one", 8, 8, short(0, 0), idle, true, 1},
		{"idle but changed lately: kept", 8, 8, short(0, 0), idle, false, 8},
		{"what was used fits in fewer", 8, 8, short(2, 0), long(2, 0.05), true, 3},
		{"what was used needs them all", 4, 8, short(3.5, 0.05), long(3.5, 0.05), true, 4},
		{"goroutines waiting on a light load do not keep them", 4, 8, short(1, 2), long(1, 2), true, 2},
		{"a shrink window too short to tell", 4, 8, short(0, 0), Load{Span: shrinkWindow/2 - 1}, true, 4},
		{"a shrink window just long enough", 4, 8, short(0, 0), Load{Span: shrinkWindow / 2}, true, 1},
		{"a peak that just fits in one", 2, 8, short(0, 0), bursts(0.1, 0.75), true, 1},
		{"a peak just over one", 2, 8, short(0, 0), bursts(0.1, 0.76), true, 2},
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
	at := func(ms int, cpu, queued time.Duration) Sample {
		return Sample{At: t0.Add(time.Duration(ms) * time.Millisecond), CPU: cpu, Queued: queued}
	}
	var h history
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
	// Idle for a while: the samples kept reach a shrink window back and
	// no further, and the busiest 100 ms have gone out of it.
	for ms := 400; ms <= 10_600; ms += 100 {
		h.add(at(ms, 350*time.Millisecond, 300*time.Millisecond))
	}
	if got := h.since(time.Hour).Span; got < shrinkWindow || got > shrinkWindow+100*time.Millisecond {
		t.Errorf("after 10.6 s, the samples reach back %v, want a shrink window and at most one sample more", got)
	}
	if got := h.since(shrinkWindow); got.Peak != 0 || got.Busy != 0 {
		t.Errorf("idle for a shrink window: %+v, want no CPU and no peak", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReaderCountsWaitingGoroutines(t *testing.T) {
	// On one thread, k goroutines that compute without pause keep k-1 of
	// them waiting while one runs, and all k while the reader runs.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const k = 4
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for range 1000 {
				}
			}
		})
	}
	// Real time, not synctest's: what is read is the real scheduler's.
	var r Reader
	first := r.Read()
	var last Sample
	for range 20 {
		time.Sleep(10 * time.Millisecond)
		last = r.Read()
	}
	close(stop)
	wg.Wait()
	span := last.At.Sub(first.At)
	busy := float64(last.CPU-first.CPU) / float64(span)
	queue := float64(last.Queued-first.Queued) / float64(span)
	if queue < k-1.5 || queue > k+0.5 {
		t.Errorf("%d goroutines computing on one thread: %.2f waiting on average, want %d or %d", k, queue, k-1, k)
	}
	if busy <= 0 {
		t.Errorf("%d goroutines computing on one thread: %.2f threads busy", k, busy)
	}
}

// load is a process whose CPU and queue are scripted as rates that a test
// changes as time goes.
type load struct {
	mu          sync.Mutex
	last        time.Time
	busy, queue float64
	cpu, queued time.Duration
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
		l.queued += time.Duration(l.queue * d)
	}
	l.last = now
}

func (l *load) read() Sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advance()
	return Sample{At: l.last, CPU: l.cpu, Queued: l.queued}
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

// start runs g until the returned stop is called, which returns Run's error.
func start(t *testing.T, g *Governor) (stop func() error) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func TestGovernorFollowsLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		l.set(0.3, 0.05)
		stop := start(t, &Governor{Max: 4, Read: l.read, Set: l.record})

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
		// Kept for the shrink window, idle all along it: one, at the
		// next reading (idle, they come every idleTick).
		time.Sleep(shrinkWindow/2 + 2*idleTick)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2, 4, 1}, l.counts()); diff != "" {
			t.Fatalf("idle for a shrink window: counts set (-want +got):\n%s", diff)
		}
		// A second governor of the process leaves the count alone.
		stopOther := start(t, &Governor{Max: 8, Read: l.read, Set: l.record})
		time.Sleep(time.Second)
		synctest.Wait()
		if err := stopOther(); err != nil {
			t.Fatal(err)
		}
		// Stopped, it gives the process all its threads back.
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{1, 2, 4, 1, 4}, l.counts()); diff != "" {
			t.Errorf("after stopping: counts set (-want +got):\n%s", diff)
		}
	})
}

func TestGovernorKeepsWhatBurstsNeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		defer start(t, &Governor{Max: 8, Read: l.read, Set: l.record})()
		// A burst of 200 ms every 3 s, two threads 70% busy in it, for a
		// minute: two threads from the first burst on, kept between them.
		for range 20 {
			l.set(1, 3)
			time.Sleep(100 * time.Millisecond)
			l.set(1.4, 0)
			time.Sleep(100 * time.Millisecond)
			l.set(0, 0)
			time.Sleep(2800 * time.Millisecond)
		}
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2}, l.counts()); diff != "" {
			t.Fatalf("bursts every 3 s: counts set (-want +got):\n%s", diff)
		}
		// The bursts stop: one thread once the last is 10 s old.
		time.Sleep(shrinkWindow + time.Second)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2, 1}, l.counts()); diff != "" {
			t.Fatalf("after the bursts: counts set (-want +got):\n%s", diff)
		}
	})
}

func TestGovernorReadsSeldomWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		var reads atomic.Int64
		read := func() Sample { reads.Add(1); return l.read() }
		defer start(t, &Governor{Max: 4, Read: read, Set: l.record})()
		time.Sleep(time.Second) // settled idle
		synctest.Wait()
		reads.Store(0)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		if got := reads.Load(); got > 10*int64(time.Second/idleTick) {
			t.Errorf("idle for 10 s: %d readings, want at most %d", got, 10*int64(time.Second/idleTick))
		}
		// Work starts: read every tick again, and one computing goroutine
		// gets a second thread within about an idle tick and a grow window.
		l.set(1, 0)
		time.Sleep(idleTick + growWindow + 2*DefaultTick)
		synctest.Wait()
		if diff := cmp.Diff([]int{1, 2}, l.counts()); diff != "" {
			t.Errorf("one goroutine computing: counts set (-want +got):\n%s", diff)
		}
	})
}

func TestGovernorWithOneCPU(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &load{}
		l.set(1, 10)
		stop := start(t, &Governor{Max: 1, Read: l.read, Set: l.record})
		time.Sleep(time.Second)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := l.counts(); len(got) != 0 {
			t.Errorf("with one CPU it set %v, want nothing", got)
		}
	})
}
