// Package procs sets how many threads run the process's Go code at once
// (GOMAXPROCS), following its load: one while one is enough, more as soon as
// goroutines queue for a thread or the threads are all busy, up to the CPUs
// the process may use. A lightly loaded Go server with idle threads pays, for
// every goroutine it hands work to, a thread woken and put back to sleep,
// which on some machines costs as much as a run's own work
// (docs/performance.md, "One thread while one is enough").
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
	// DefaultTick is how often the load is read while the process works,
	// unless a Governor says otherwise.
	DefaultTick = 20 * time.Millisecond
	// idleTick is how often it is read while the process is idle: each
	// reading wakes a thread, which an idle process need not pay fifty
	// times a second. A burst is seen at most this late.
	idleTick = 200 * time.Millisecond
	// growWindow is how far back a decision to add threads looks.
	growWindow = 100 * time.Millisecond
	// shrinkWindow is how far back a decision to remove threads looks, and
	// how long a count is kept at least before it is lowered.
	shrinkWindow = 10 * time.Second
)

// The thresholds, in threads' worth of CPU or in goroutines waiting.
const (
	// growQueue is the average number of goroutines waiting for a thread
	// over growWindow from which more threads are taken, when the threads
	// are growBusy busy too: goroutines that wait while threads are idle
	// would not run sooner with more.
	growQueue = 0.5
	growBusy  = 0.75
	// growFull is the share of the threads' time the process used over
	// growWindow from which more threads are taken whatever waits: a
	// goroutine that computes without pause holds the one thread, and the
	// timers and network events of all the others are seen only when it
	// is preempted, every 10 ms or so, without ever showing as waiting.
	growFull = 0.9
	// shrinkBusy is the share of a thread the process may use, per thread
	// kept, for fewer threads to be kept: at its busiest over shrinkWindow
	// (over any growWindow in it), the CPU it used fits in fewer threads
	// with room to spare. A load that comes in bursts keeps the threads its
	// bursts need, however idle it is between them.
	shrinkBusy = 0.75
	// idleBusy is the threads' worth of CPU used over growWindow below
	// which the process counts as idle (idleTick).
	idleBusy = 0.05
)

// Sample is a reading of the process's load, cumulative since it started.
type Sample struct {
	// At is when it was read.
	At time.Time
	// CPU is the process's CPU time, user and system, all its threads.
	CPU time.Duration
	// Queued is the goroutines waiting for a thread summed over time: at
	// each reading, the number waiting then times the time since the
	// reading before.
	Queued time.Duration
}

// Governor keeps GOMAXPROCS between 1 and Max, following the load. The zero
// value but for Max is ready; the other fields are for tests.
type Governor struct {
	// Max is the most threads it sets; below 2 it sets none.
	Max int
	// Log gets a debug line at each change; nil is none.
	Log *slog.Logger
	// Tick is how often the load is read while the process works; 0 is
	// DefaultTick.
	Tick time.Duration
	// Read reads the load; nil reads the process's (a Reader).
	Read func() Sample
	// Set sets the count; nil is runtime.GOMAXPROCS, and at the end
	// runtime.SetDefaultGOMAXPROCS instead of Set(Max).
	Set func(n int)
}

// held is true while a Governor runs: GOMAXPROCS is the process's, and two
// governors would undo each other's work.
var held atomic.Bool

// Run governs until ctx is done, then gives the process back the count the
// runtime would have chosen. It starts with one thread: a server starts idle.
// While Max is below 2 or another Governor of the process runs, it only waits
// for ctx.
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
		read = (&Reader{}).Read
	}
	if set == nil {
		set = func(n int) { runtime.GOMAXPROCS(n) }
		defer runtime.SetDefaultGOMAXPROCS()
	} else {
		defer set(g.Max)
	}
	n := 1
	set(1)
	var h history
	h.add(read())
	changed := h.last().At
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		h.add(read())
		short := h.since(growWindow)
		next := decide(n, g.Max, short, h.since(shrinkWindow), h.last().At.Sub(changed) >= shrinkWindow)
		if short.Span >= growWindow/2 && short.Busy < idleBusy && next == n {
			t.Reset(max(tick, idleTick))
		} else {
			t.Reset(tick)
		}
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
// queue while the threads are busy, or when the threads are all but fully
// busy, doubling their count; it removes them when the CPU used at the long
// window's busiest fits in fewer with room to spare. What waits then does not
// count: on a lightly loaded process, goroutines wait for the thread that
// runs the one that woke them, which more threads would not make cheaper.
func decide(n, most int, short, long Load, settled bool) int {
	if n < most && short.Span >= growWindow/2 &&
		(short.Queue >= growQueue && short.Busy >= growBusy*float64(n) || short.Busy >= growFull*float64(n)) {
		return min(most, 2*n)
	}
	if n > 1 && settled && long.Span >= shrinkWindow/2 {
		want := max(1, int(math.Ceil(long.Peak/shrinkBusy)))
		if want < n {
			return want
		}
	}
	return n
}

// history keeps the samples of the last shrinkWindow and the one before,
// oldest first, each with the CPU used over the growWindow it ends (its peak).
type history struct {
	samples []Sample
	peaks   []float64
}

func (h *history) add(s Sample) {
	h.samples = append(h.samples, s)
	h.peaks = append(h.peaks, 0)
	h.peaks[len(h.peaks)-1] = h.since(growWindow).Busy
	drop := 0
	for len(h.samples)-drop > 2 && s.At.Sub(h.samples[drop+1].At) >= shrinkWindow {
		drop++
	}
	if drop > 0 {
		h.samples = append(h.samples[:0], h.samples[drop:]...)
		h.peaks = append(h.peaks[:0], h.peaks[drop:]...)
	}
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
		Queue: float64(last.Queued-from.Queued) / float64(span),
	}
	for _, p := range h.peaks[first+1:] {
		l.Peak = max(l.Peak, p)
	}
	return l
}

// runnable is the runtime's count of goroutines ready to run but waiting for
// a thread.
const runnable = "/sched/goroutines/runnable:goroutines"

// Reader reads the process's load. Its zero value is ready; it is not safe
// for concurrent use.
type Reader struct {
	m    [1]metrics.Sample
	last Sample
}

// Read reads the process's load.
func (r *Reader) Read() Sample {
	s := Sample{At: time.Now(), Queued: r.last.Queued}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	r.m[0].Name = runnable
	metrics.Read(r.m[:])
	if r.m[0].Value.Kind() == metrics.KindUint64 && !r.last.At.IsZero() {
		s.Queued += time.Duration(r.m[0].Value.Uint64()) * s.At.Sub(r.last.At)
	}
	r.last = s
	return s
}
