package sqlite_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// BenchmarkWriteBatch stores what the writer stores while 1,000 runs stream:
// batches of 20 message.delta events from each of 100 runs. It reports the
// cost per event.
func BenchmarkWriteBatch(b *testing.B) {
	ctx := b.Context()
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "relay.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ids := startRuns(b, db)
	seq := int64(0)
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		seq = writeDeltas(b, db, ids, seq)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs*perRun), "ns/event")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*runs*perRun), "cpu-ns/event")
}

// runs and perRun shape the benchmarks' load: runs streaming at once, and
// the message.delta events of each in one batch.
const runs, perRun = 100, 20

// startRuns stores runs running runs and returns their ids.
func startRuns(b *testing.B, db *store.DB) []string {
	ctx := b.Context()
	u, err := auth.NewService(db, nil).CreateUser(ctx, auth.NewUser{Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]string, runs)
	now := time.Now()
	for i := range ids {
		c := &run.Conversation{ID: fmt.Sprintf("conv_%d", i), UserID: u.ID, AgentID: "a", Title: "t"}
		m := &run.Message{ID: fmt.Sprintf("msg_%d", i), ConversationID: c.ID, Role: run.RoleUser, Text: "hi"}
		r := &run.Run{ID: fmt.Sprintf("run_%d", i), UserID: u.ID, AgentID: "a", ConversationID: c.ID, UserMessageID: m.ID,
			Status: run.StatusRunning, StartedAt: &now}
		if err := db.StartRun(ctx, &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r}); err != nil {
			b.Fatal(err)
		}
		ids[i] = r.ID
	}
	return ids
}

// writeDeltas stores one batch of perRun message.delta events of each run
// after seq, and returns the last seq.
func writeDeltas(b *testing.B, db *store.DB, ids []string, seq int64) int64 {
	data := []byte(`{"agent_id":"bench","text":"<1763790000000000000>"}`)
	now := time.Now()
	batch := &run.Batch{Events: make([]run.Event, 0, len(ids)*perRun)}
	for range perRun {
		seq++
		for _, id := range ids {
			batch.Events = append(batch.Events, run.Event{RunID: id, Seq: seq, Type: run.EventMessageDelta, Data: data, CreatedAt: now})
		}
	}
	if err := db.WriteBatch(b.Context(), batch); err != nil {
		b.Fatal(err)
	}
	return seq
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWALUnderLoad writes batches of events as BenchmarkWriteBatch does
// while four readers read runs' events without pause, the load under which
// readers keep the write-ahead log from being reset, and reports the log's
// largest size (sampled every 5ms) in MB.
func BenchmarkWALUnderLoad(b *testing.B) {
	ctx := b.Context()
	path := filepath.Join(b.TempDir(), "relay.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ids := startRuns(b, db)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := i; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.ListEvents(ctx, ids[j%runs], int64(j%perRun)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	var peak atomic.Int64
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > peak.Load() {
				peak.Store(fi.Size())
			}
		}
	})
	seq := int64(0)
	b.ResetTimer()
	for b.Loop() {
		seq = writeDeltas(b, db, ids, seq)
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/1e6, "MB-wal-peak")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs*perRun), "ns/event")
}
