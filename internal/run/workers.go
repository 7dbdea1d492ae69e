package run

import (
	"slices"
	"sync"
	"time"
)

// workers runs functions on goroutines kept from the functions before them.
// A run's execution calls deep (the graph, the agent loop, the model
// client), and a new goroutine's stack is copied to a larger one a few times
// on the way there; a kept goroutine's has grown already. Up to
// maxIdleWorkers wait for work, each for idleWorkerFor at most.
type workers struct {
	mu      sync.Mutex
	idle    []chan func() // the waiting goroutines' inboxes, the latest last
	started int           // goroutines started, for tests
}

const (
	maxIdleWorkers = 128
	idleWorkerFor  = time.Minute
)

// Go runs fn on a waiting goroutine, or on a new one.
func (p *workers) Go(fn func()) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		inbox := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		inbox <- fn
		return
	}
	p.started++
	p.mu.Unlock()
	go p.work(fn)
}

func (p *workers) work(fn func()) {
	inbox := make(chan func(), 1) // Go never waits for the goroutine to take it
	var t *time.Timer             // its wait for work, made once
	for {
		fn()
		fn = nil
		p.mu.Lock()
		if len(p.idle) >= maxIdleWorkers {
			p.mu.Unlock()
			return
		}
		p.idle = append(p.idle, inbox)
		p.mu.Unlock()
		if t == nil {
			t = time.NewTimer(idleWorkerFor)
		} else {
			t.Reset(idleWorkerFor)
		}
		select {
		case fn = <-inbox:
			t.Stop()
			continue
		case <-t.C:
		}
		p.mu.Lock()
		if i := slices.Index(p.idle, inbox); i >= 0 {
			p.idle = slices.Delete(p.idle, i, i+1)
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		fn = <-inbox // taken from idle as the timer fired: its work is on the way
	}
}
