package sqlite_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/turn"
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

// BenchmarkRunRecords stores what one run of one agent with one tool call
// stores, one run after another: its start (conversation, question, run),
// then its end (its events, the tool call, two model requests, the answer,
// the run's final state), as the run service does, each in a transaction
// with a request's context. It reports the process's CPU per run and the
// write-ahead log's frames (pages) each run writes.
func BenchmarkRunRecords(b *testing.B) {
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	path := filepath.Join(b.TempDir(), "relay.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	u, err := auth.NewService(db, nil).CreateUser(ctx, auth.NewUser{Email: "bench@example.com"})
	if err != nil {
		b.Fatal(err)
	}
	body := json.RawMessage(`{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("x", 300) +
		`"},{"role":"user","content":"What is 2+3?"}],"tools":[{"type":"function","function":{"name":"get-sum__mcp__bench","description":"` +
		strings.Repeat("d", 200) + `","parameters":{"type":"object"}}}],"stream":true}`)
	delta := json.RawMessage(`{"agent_id":"calc","text":"` + strings.Repeat("t", 24) + `"}`)
	one := func() {
		now := time.Now()
		c := &run.Conversation{ID: ident.Ordered("conv_"), UserID: u.ID, AgentID: "calc", Title: "What is 2+3?", CreatedAt: now, UpdatedAt: now}
		m := &run.Message{ID: ident.Ordered("msg_"), ConversationID: c.ID, Role: run.RoleUser, Text: "What is 2+3?", CreatedAt: now}
		r := &run.Run{ID: ident.Ordered("run_"), UserID: u.ID, AgentID: "calc", ConversationID: c.ID, UserMessageID: m.ID,
			Status: run.StatusRunning, CreatedAt: now, StartedAt: &now}
		if err := db.StartRun(ctx, &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r}); err != nil {
			b.Fatal(err)
		}
		var batch run.Batch
		for s := int64(1); s <= 12; s++ {
			batch.Events = append(batch.Events, run.Event{RunID: r.ID, Seq: s, Type: run.EventMessageDelta, Data: delta, CreatedAt: now})
		}
		batch.ToolCalls = []*run.ToolCall{{RunID: r.ID, AgentID: "calc", CreatedAt: now,
			ToolRecord: turn.ToolRecord{ID: "call_1", Name: "get-sum__mcp__bench", Arguments: `{"a":2,"b":3}`, Result: "5"}}}
		batch.Requests = []*run.ModelRequest{{RunID: r.ID, Seq: 1, AgentID: "calc", Body: body, SentAt: now}, {RunID: r.ID, Seq: 2, AgentID: "calc", Body: body, SentAt: now}}
		answer := &run.Message{ID: ident.Ordered("msg_"), ConversationID: c.ID, ParentID: m.ID, Role: run.RoleAssistant, AgentID: "calc", Text: "5", RunID: r.ID, CreatedAt: now}
		batch.Messages = []*run.Message{answer}
		end := *r
		end.Status, end.FinishedAt, end.ResponseMessageID = run.StatusSucceeded, &now, answer.ID
		batch.Runs = []*run.Run{&end}
		if err := db.WriteBatch(ctx, &batch); err != nil {
			b.Fatal(err)
		}
	}
	for range 200 { // the tables as a server has them after a while
		one()
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	for b.Loop() {
		one()
	}
	b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/float64(b.N), "cpu-µs/run")
	b.StopTimer()
	// The log's frames a run adds: the log is copied out (and starts over
	// at the next write) before each of a few runs, counted after it.
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	total, counted := 0, 0
	for range 20 {
		if _, err := walFrames(ctx, raw); err != nil {
			b.Fatal(err)
		}
		one()
		n, err := walFrames(ctx, raw)
		if err != nil {
			b.Fatal(err)
		}
		if n >= 0 { // -1: the checkpointer had the log at that moment
			total, counted = total+n, counted+1
		}
	}
	if counted > 0 {
		b.ReportMetric(float64(total)/float64(counted), "frames/run")
	}
}

// walFrames checkpoints the write-ahead log and returns the frames (pages)
// it held.
func walFrames(ctx context.Context, db *sql.DB) (int, error) {
	var busy, frames, copied int
	err := db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &frames, &copied)
	return frames, err
}
