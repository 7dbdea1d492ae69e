// Package procs sets how many threads run the process's Go code at once
// (GOMAXPROCS), following its load: one while one is enough, more as soon as
// goroutines queue for a thread, up to the machine's CPUs (or its container's
// share of them). A lightly loaded Go server with idle threads pays, for every
// goroutine it hands work to, a thread woken and put back to sleep, which on
// some machines costs as much as a run's own work (docs/performance.md, "One
// thread while one is enough").
package procs

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"time"
)

// How often the load is read, and how far back the decisions look.
const (
	// DefaultTick is how often the load is read unless a Governor says.
	DefaultTick = 20 * time.Millisecond
	// growWindow is how far back a decision to add threads looks.
	growWindow = 100 * time.Millisecond
	// shrinkWindow is how far back a decision to remove threads looks, and
	// how long a count is kept at least before it is lowered.
	shrinkWindow = 10 * time.Second
)

// The thresholds, in threads' worth of CPU or of goroutines waiting.
const (
	// growQueue is the average number of goroutines waiting for a thread
	// over growWindow from which more threads are taken.
	growQueue = 0.5
	// growBusy is the share of the current threads' time the process used
	// over growWindow from which more threads are taken: goroutines that
	// wait while threads are idle would not run sooner with more.
	growBusy = 0.75
	// shrinkBusy is the share of a thread the process may use, per thread
	// kept, for fewer threads to be kept: at its busiest over shrinkWindow
	// (over any growWindow in it), the CPU it used fits in fewer threads
	// with room to spare. A load that comes in bursts keeps the threads its
	// bursts need, however idle it is between them.
	shrinkBusy = 0.75
	// shrinkQueue is the average number of goroutines waiting for a thread
	// over shrinkWindow below which fewer threads may be kept. Some wait
	// however light the load: a thread woken for a goroutine takes tens of
	// µs to run it (0.07–0.1 goroutines waiting, on average, with runs one
	// at a time on two threads).
	shrinkQueue = 0.25
)

// Sample is a reading of the process's load, cumulative since it started.
type Sample struct {
	// At is when it was read.
	At time.Time
	// CPU is the process's CPU time, user and system, all its threads.
	CPU time.Duration
	// Waited is the time goroutines have spent ready to run but waiting
	// for a thread, summed over all goroutines.
	Waited time.Duration
}

// Governor keeps GOMAXPROCS between 1 and Max, following the load. The zero
// value but for Max is ready; the other fields are for tests.
type Governor struct {
	// Max is the most threads it sets; below 2 it sets none.
	Max int
	// Log gets a debug line at each change; nil is none.
	Log *slog.Logger
	// Tick is how often the load is read; 0 is DefaultTick.
	Tick time.Duration
	// Read reads the load; nil reads the process's (ReadSample).
	Read func() Sample
	// Set sets the count; nil is runtime.GOMAXPROCS.
	Set func(n int)
}

// held is true while a Governor runs: GOMAXPROCS is the process's, and two
// governors would undo each other's work.
var held atomic.Bool

// Run governs until ctx is done, then sets Max again. It starts with one
// thread: a server starts idle. While Max is below 2 or another Governor of
// the process runs, it only waits for ctx.
func (g *Governor) Run(ctx context.Context) error {
	if g.Max < 2 || !held.CompareAndSwap(false, true) {
		<-ctx.Done()
		return nil
	}
	defer held.Store(false)
	tick, read, set := g.Tick, g.Read, g.Set
	if tick <= 0 {
		tick = DefaultTick
	}
	if read == nil {
		read = ReadSample
	}
	if set == nil {
		set = func(n int) { runtime.GOMAXPROCS(n) }
	}
	defer set(g.Max)
	n := 1
	set(1)
	h := history{keep: int(shrinkWindow/tick) + 2}
	h.add(read())
	changed := h.last().At
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		h.add(read())
		next := decide(n, g.Max, h.since(growWindow), h.since(shrinkWindow), h.last().At.Sub(changed) >= shrinkWindow)
		if next == n {
			continue
		}
		set(next)
		if g.Log != nil {
			g.Log.Debug("threads running Go code", slog.Int("from", n), slog.Int("to", next))
		}
		n, changed = next, h.last().At
	}
}

// Load is the process's load over a window: the threads' worth of CPU it used
// and the average number of goroutines waiting for a thread.
type Load struct {
	// Span is how long the window lasted; 0 means no reading yet.
	Span time.Duration
	// Busy is the CPU used, in threads (1 is one thread busy all along).
	Busy float64
	// Queue is the average number of goroutines waiting for a thread.
	Queue float64
	// Peak is the most CPU used, in threads, over any growWindow that ends
	// within the window.
	Peak float64
}

// decide is the count of threads to keep after n, at most most, given the
// load over the last growWindow (short) and shrinkWindow (long); settled
// says n has been kept for shrinkWindow. It adds threads when goroutines
// queue while the threads are busy, doubling their count; it removes them
// when the CPU used at the long window's busiest fits in fewer with room to
// spare and nothing queued.
func decide(n, most int, short, long Load, settled bool) int {
	if n < most && short.Span >= growWindow/2 && short.Queue >= growQueue && short.Busy >= growBusy*float64(n) {
		return min(most, 2*n)
	}
	if n > 1 && settled && long.Span >= shrinkWindow/2 && long.Queue < shrinkQueue {
		want := max(1, int(math.Ceil(long.Peak/shrinkBusy)))
		if want < n {
			return want
		}
	}
	return n
}

// history keeps the last samples, oldest first, each with the CPU used over
// the growWindow it ends (its peak).
type history struct {
	keep    int
	samples []Sample
	peaks   []float64
}

func (h *history) add(s Sample) {
	if len(h.samples) == h.keep {
		copy(h.samples, h.samples[1:])
		h.samples = h.samples[:len(h.samples)-1]
		copy(h.peaks, h.peaks[1:])
		h.peaks = h.peaks[:len(h.peaks)-1]
	}
	h.samples = append(h.samples, s)
	h.peaks = append(h.peaks, 0)
	h.peaks[len(h.peaks)-1] = h.since(growWindow).Busy
}

func (h *history) last() Sample { return h.samples[len(h.samples)-1] }

// since is the load over the shortest stretch ending at the last sample that
// lasts at least d, or, while the samples do not reach that far back, over
// all of them; a zero Load with fewer than two samples.
func (h *history) since(d time.Duration) Load {
	if len(h.samples) < 2 {
		return Load{}
	}
	last := h.last()
	first := 0
	for i := len(h.samples) - 2; i >= 0; i-- {
		if last.At.Sub(h.samples[i].At) >= d {
			first = i
			break
		}
	}
	from := h.samples[first]
	span := last.At.Sub(from.At)
	if span <= 0 {
		return Load{}
	}
	l := Load{
		Span:  span,
		Busy:  float64(last.CPU-from.CPU) / float64(span),
		Queue: float64(last.Waited-from.Waited) / float64(span),
	}
	for _, p := range h.peaks[first+1:] {
		l.Peak = max(l.Peak, p)
	}
	return l
}

// latencies is the runtime's histogram of the time goroutines waited, ready
// to run, for a thread.
const latencies = "/sched/latencies:seconds"

// ReadSample reads the process's load.
func ReadSample() Sample {
	s := Sample{At: time.Now()}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	m := []metrics.Sample{{Name: latencies}}
	metrics.Read(m)
	if m[0].Value.Kind() == metrics.KindFloat64Histogram {
		s.Waited = waited(m[0].Value.Float64Histogram())
	}
	return s
}

// waited is the total of the times in h, each bucket's counted at its middle
// (at its lower bound when it is open above).
func waited(h *metrics.Float64Histogram) time.Duration {
	var total float64
	for i, c := range h.Counts {
		if c == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		v := lo
		switch {
		case math.IsInf(lo, -1):
			v = max(hi, 0)
		case !math.IsInf(hi, 1):
			v = (lo + hi) / 2
		}
		total += float64(c) * v
	}
	return time.Duration(total * float64(time.Second))
}
