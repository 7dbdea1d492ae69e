package mcp

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestCallTimerHold: a held time limit does not expire however long the hold
// lasts, progress does not restart it meanwhile, and it starts afresh once
// every hold is released.
func TestCallTimerHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := make(chan struct{}, 1)
		ct := &callTimer{timeout: time.Minute}
		ct.timer = time.AfterFunc(ct.timeout, func() { fired <- struct{}{} })
		time.Sleep(50 * time.Second)
		release1 := ct.hold()
		release2 := ct.hold()
		ct.restart() // progress while held
		time.Sleep(time.Hour)
		release1()
		release1() // once only
		time.Sleep(time.Hour)
		select {
		case <-fired:
			t.Fatal("the limit expired while a question was open")
		default:
		}
		release2()
		time.Sleep(59 * time.Second)
		synctest.Wait()
		select {
		case <-fired:
			t.Fatal("the limit did not start afresh")
		default:
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-fired:
		default:
			t.Fatal("the limit did not expire a minute after the hold ended")
		}
	})
}
