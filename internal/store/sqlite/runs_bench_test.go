package sqlite_test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/run"
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
	u, err := auth.NewService(db, nil).CreateUser(ctx, auth.NewUser{Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	const runs, perRun = 100, 20
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
	data := []byte(`{"agent_id":"bench","text":"<1763790000000000000>"}`)
	seq := int64(0)
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		batch := &run.Batch{Events: make([]run.Event, 0, runs*perRun)}
		for range perRun {
			seq++
			for _, id := range ids {
				batch.Events = append(batch.Events, run.Event{RunID: id, Seq: seq, Type: run.EventMessageDelta, Data: data, CreatedAt: now})
			}
		}
		if err := db.WriteBatch(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*runs*perRun), "ns/event")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N*runs*perRun), "cpu-ns/event")
}

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
