package main

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// What `bench compare` reads of the SQLite write-ahead log of a Relay side
// that runs `relay serve`: the size of <data_dir>/relay.db-wal, sampled every
// walEvery while the side makes its runs, and its peak.

// walEvery is how often a watched log's size is read.
const walEvery = 100 * time.Millisecond

// walSide is a side whose SQLite write-ahead log bench compare can watch.
type walSide interface {
	// walPath is the log's file.
	walPath() string
}

// walWatch reads the size of a write-ahead log every walEvery, from its
// start to its end, and keeps the largest.
type walWatch struct {
	path string
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	peak int64 // bytes
}

// watchWAL starts watching the log at path: it reads its size at once, then
// every walEvery until end.
func watchWAL(path string) *walWatch {
	w := &walWatch{path: path, stop: make(chan struct{}), done: make(chan struct{})}
	w.sample()
	go func() {
		defer close(w.done)
		t := time.NewTicker(walEvery)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

// sample reads the log's size; a log that does not exist (SQLite has not
// made it yet, or has removed it) is 0 bytes.
func (w *walWatch) sample() {
	var n int64
	if fi, err := os.Stat(w.path); err == nil {
		n = fi.Size()
	}
	w.mu.Lock()
	w.peak = max(w.peak, n)
	w.mu.Unlock()
}

// end stops the watch, reads the size a last time and returns the peak, in
// bytes; a nil watch's is 0.
func (w *walWatch) end() int64 {
	if w == nil {
		return 0
	}
	close(w.stop)
	<-w.done
	w.sample()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.peak
}

// walMB is n bytes in MB (MiB, as the table's other sizes), one decimal.
func walMB(n int64) string {
	return fmt.Sprintf("%.1f", float64(n)/(1<<20))
}
