package store

import (
	"context"
	"testing"
	"testing/synctest"
)

// Write transactions take their turns in the order they asked, an urgent
// one before all that wait; a caller that gives up waiting leaves the queue,
// and one handed the turn as it gives up passes it on.
func TestWriteTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var w writeTurns
		ctx := context.Background()
		if err := w.take(ctx, false); err != nil { // the turn under way
			t.Fatal(err)
		}
		var order []string
		wait := func(name string, urgent bool) {
			go func() {
				if err := w.take(ctx, urgent); err != nil {
					t.Errorf("%s: %v", name, err)
					return
				}
				order = append(order, name)
				w.give()
			}()
			synctest.Wait() // queued before the next
		}
		wait("first", false)
		wait("second", false)
		gone, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- w.take(gone, false) }()
		synctest.Wait()
		wait("third", false)
		wait("urgent", true)
		cancel()
		if err := <-done; err != context.Canceled {
			t.Errorf("a caller that gave up: %v", err)
		}
		w.give()
		synctest.Wait()
		want := []string{"urgent", "first", "second", "third"}
		if len(order) != len(want) {
			t.Fatalf("turns %v, want %v", order, want)
		}
		for i := range want {
			if order[i] != want[i] {
				t.Fatalf("turns %v, want %v", order, want)
			}
		}
		if w.busy || len(w.queue) != 0 || len(w.urgent) != 0 {
			t.Errorf("after the last turn: busy %v, %d and %d waiting", w.busy, len(w.queue), len(w.urgent))
		}

		// Handed the turn as its context ends: the turn goes on to the next.
		if err := w.take(ctx, false); err != nil {
			t.Fatal(err)
		}
		late, cancelLate := context.WithCancel(ctx)
		lateDone := make(chan error)
		go func() { lateDone <- w.take(late, false) }()
		synctest.Wait()
		order = nil
		wait("after", false)
		w.mu.Lock() // the turn handed to late, which then sees its context end
		next := w.queue[0]
		w.queue = w.queue[1:]
		cancelLate()
		close(next)
		w.mu.Unlock()
		if err := <-lateDone; err == nil {
			w.give()
		}
		synctest.Wait()
		if len(order) != 1 || order[0] != "after" {
			t.Errorf("after a turn given up: %v", order)
		}
	})
}
