package run

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func (p *workers) counts() (started, idle int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.started, len(p.idle)
}

// Functions that follow each other run on one goroutine; one that waited
// idleWorkerFor ends; functions at once run at once, on as many goroutines.
func TestWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p workers
		ran := 0
		for range 3 {
			p.Go(func() { ran++ })
			synctest.Wait()
		}
		if started, idle := p.counts(); ran != 3 || started != 1 || idle != 1 {
			t.Fatalf("3 functions in turn: ran %d, on %d goroutines, %d idle; want 3, 1, 1", ran, started, idle)
		}

		time.Sleep(idleWorkerFor + time.Second)
		synctest.Wait()
		if _, idle := p.counts(); idle != 0 {
			t.Fatalf("%d goroutines idle after %v, want 0", idle, idleWorkerFor)
		}

		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 5 {
			wg.Add(1)
			p.Go(func() { <-release; wg.Done() })
		}
		synctest.Wait() // all five wait at once: none waited for another
		close(release)
		wg.Wait()
		synctest.Wait()
		if started, idle := p.counts(); started != 6 || idle != 5 {
			t.Fatalf("5 functions at once: %d goroutines started in all, %d idle; want 6, 5", started, idle)
		}
		time.Sleep(idleWorkerFor + time.Second) // they end
	})
}

// No more than maxIdleWorkers wait.
func TestWorkersIdleBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var p workers
		release := make(chan struct{})
		for range maxIdleWorkers + 10 {
			p.Go(func() { <-release })
		}
		synctest.Wait()
		close(release)
		synctest.Wait()
		if started, idle := p.counts(); started != maxIdleWorkers+10 || idle != maxIdleWorkers {
			t.Fatalf("%d goroutines started, %d idle; want %d, %d", started, idle, maxIdleWorkers+10, maxIdleWorkers)
		}
		time.Sleep(idleWorkerFor + time.Second) // they end
	})
}
