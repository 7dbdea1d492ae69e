package sqlite_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/run"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/sqlite"
	"github.com/relay-ai/relay/internal/store/storetest"
	"github.com/relay-ai/relay/internal/turn"
)

func open(t *testing.T, path string) *store.DB {
	t.Helper()
	db, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "relay.db"))
	})
}

// migrationRow is one row of schema_migrations.
type migrationRow struct {
	Version   int
	Name      string
	AppliedAt string
}

// migrations reads schema_migrations directly from the file.
func migrations(t *testing.T, path string) []migrationRow {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	defer rows.Close()
	var out []migrationRow
	for rows.Next() {
		var r migrationRow
		if err := rows.Scan(&r.Version, &r.Name, &r.AppliedAt); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestReopenKeepsDataAndMigrations(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "nested", "dir", "relay.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open of a new file in a missing directory: %v", err)
	}
	u := &auth.User{ID: auth.NewUserID(), Email: "keep@example.com", DisplayName: "Keep", Role: auth.RoleUser}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	before := migrations(t, path)
	if len(before) == 0 || before[0].Version != 1 || before[0].Name != "init" {
		t.Fatalf("schema_migrations after the first Open = %+v, want 0001 init first", before)
	}

	db = open(t, path)
	got, err := db.GetUser(ctx, u.ID)
	if err != nil {
		t.Fatalf("GetUser after reopening: %v", err)
	}
	if d := cmp.Diff(u, got); d != "" {
		t.Errorf("user after reopening (-want +got):\n%s", d)
	}
	if d := cmp.Diff(before, migrations(t, path)); d != "" {
		t.Errorf("reopening changed schema_migrations (-before +after):\n%s", d)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()

	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(rand.Text()+rand.Text()+strings.Repeat("\x00\xff", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}

	newer := filepath.Join(dir, "newer.db")
	db, err := sqlite.Open(t.Context(), newer)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := sql.Open("sqlite", newer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(t.Context(), `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', '2999-01-01T00:00:00.000000Z')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	rows := migrations(t, newer)
	known := rows[len(rows)-2].Version // the newest before 9999

	for _, tc := range []struct {
		name, path, want string
	}{
		{"Directory", dir, "open sqlite database " + dir + ": is a directory"},
		{"Garbage", garbage, "open sqlite database " + garbage + ": file is not a SQLite database"},
		{"NewerSchema", newer, "open sqlite database " + newer + ": database schema version 9999 is newer than this relay (" + strconv.Itoa(known) + "); upgrade relay"},
		{"ParentIsFile", filepath.Join(garbage, "relay.db"), "open sqlite database " + filepath.Join(garbage, "relay.db") + ": not a directory"},
		{"EmptyPath", "", "open sqlite database: no path given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := sqlite.Open(t.Context(), tc.path)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tc.path)
			}
			if db != nil {
				t.Errorf("Open returned a DB with its error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Open(%q) error:\n got %q\nwant %q", tc.path, err, tc.want)
			}
		})
	}

	t.Run("Unreadable", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("file permissions do not bind root")
		}
		path := filepath.Join(t.TempDir(), "locked.db")
		db := open(t, path)
		db.Close()
		if err := os.Chmod(path, 0); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(t.Context(), path)
		want := "open sqlite database " + path + ": cannot open the file for reading and writing: permission denied"
		if err == nil || err.Error() != want {
			t.Errorf("Open of an unreadable file: got %v, want %q", err, want)
		}
	})
}

func TestConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	dbs := make([]*store.DB, n)
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = sqlite.Open(t.Context(), path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v (%v)", i, err, errors.Unwrap(err))
			continue
		}
		defer dbs[i].Close()
	}
	rows := migrations(t, path)
	seen := map[int]bool{}
	for _, r := range rows {
		if seen[r.Version] {
			t.Errorf("migration %d recorded twice", r.Version)
		}
		seen[r.Version] = true
	}
	if !seen[1] {
		t.Errorf("schema_migrations = %+v, want migration 1", rows)
	}
	// Both handles work on the one file.
	ctx := t.Context()
	if t.Failed() {
		return
	}
	u := &auth.User{ID: auth.NewUserID(), Email: "both@example.com", DisplayName: "Both", Role: auth.RoleUser}
	if err := dbs[0].CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if _, err := dbs[1].GetUser(ctx, u.ID); err != nil {
		t.Errorf("second handle does not see the first one's write: %v", err)
	}
}

// Deleting a user deletes their shares and group memberships: the foreign
// keys of migration 0014 cascade.
func TestUserDeletionRemovesShares(t *testing.T) {
	path := filepath.Join(t.TempDir(), "relay.db")
	s := open(t, path)
	storetest.UserDeletion(t, s, func(t *testing.T, id string) {
		raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		if _, err := raw.ExecContext(t.Context(), `DELETE FROM users WHERE id = ?`, id); err != nil {
			t.Fatalf("deleting user %s: %v", id, err)
		}
	})
}

// A write whose turn has come runs to its end, even when its caller's
// context ends meanwhile: a batch of events stored with a context already
// ended, once its statement is prepared and cached, is stored all the same.
func TestWriteBatchRunsToItsEnd(t *testing.T) {
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "relay.db"))
	r := startRun(t, db, "ends")
	now := time.Now()
	batch := func(seq int64) *run.Batch {
		return &run.Batch{Events: []run.Event{{RunID: r.ID, Seq: seq, Type: run.EventMessageDelta, Data: []byte(`{"text":"x"}`), CreatedAt: now}}}
	}
	for seq := int64(1); seq <= 2; seq++ { // the statement prepared, then taken from the cache
		if err := db.WriteBatch(ctx, batch(seq)); err != nil {
			t.Fatal(err)
		}
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.WriteBatch(ended, batch(3)); err != nil {
		t.Fatalf("a batch whose caller's context ended: %v", err)
	}
	evs, err := db.ListEvents(ctx, r.ID, 0)
	if err != nil || len(evs) != 3 {
		t.Fatalf("stored %d events (%v), want 3", len(evs), err)
	}
}

// A streamed answer's message.delta events are stored in a few bytes each:
// their texts and times, not each event's whole data.
func TestDeltasStoredCompactly(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "relay.db")
	db := open(t, path)
	r := startRun(t, db, "compact")
	now := time.Now()
	const n = 200
	var b run.Batch
	for i := range n {
		b.Events = append(b.Events, run.Event{RunID: r.ID, Seq: int64(i + 1), Type: run.EventMessageDelta,
			Data: run.Encode(run.MessageDelta{AgentID: "regulatory-search", Text: " tok"}), CreatedAt: now.Add(time.Duration(i) * 10 * time.Millisecond)})
	}
	if err := db.WriteBatch(ctx, &b); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var size int
	if err := raw.QueryRowContext(ctx, `SELECT SUM(length(events)) FROM run_event_batches WHERE run_id = ?`, r.ID).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if perEvent := size / n; perEvent > 16 {
		t.Errorf("%d bytes stored per delta event, want at most 16 (the text and the time after the last)", perEvent)
	}
	evs, err := db.ListEvents(ctx, r.ID, 0)
	if err != nil || len(evs) != n {
		t.Fatalf("read back %d events (%v), want %d", len(evs), err, n)
	}
	for i, e := range evs {
		if string(e.Data) != string(b.Events[i].Data) || !e.CreatedAt.Equal(b.Events[i].CreatedAt.Truncate(time.Microsecond)) {
			t.Fatalf("event %d read back as %s at %v; stored %s at %v", i+1, e.Data, e.CreatedAt, b.Events[i].Data, b.Events[i].CreatedAt)
		}
	}
}

// startRun stores a running run of a new user, in a new conversation, all
// named after name.
func startRun(t *testing.T, db *store.DB, name string) *run.Run {
	t.Helper()
	ctx := t.Context()
	u, err := auth.NewService(db, nil).CreateUser(ctx, auth.NewUser{Email: name + "@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c := &run.Conversation{ID: "conv_" + name, UserID: u.ID, AgentID: "a", Title: "t"}
	m := &run.Message{ID: "msg_" + name, ConversationID: c.ID, Role: run.RoleUser, Text: "hi"}
	r := &run.Run{ID: "run_" + name, UserID: u.ID, AgentID: "a", ConversationID: c.ID, UserMessageID: m.ID, Status: run.StatusRunning, StartedAt: &now}
	if err := db.StartRun(ctx, &run.RunStart{Conversation: c, NewConversation: true, Message: m, Run: r}); err != nil {
		t.Fatal(err)
	}
	return r
}

// A run's answer is stored with its text once in its message (whose text part
// is that text) and once in its run.finished event, and both come back whole.
func TestAnswerTextStoredOnce(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "relay.db")
	db := open(t, path)
	r := startRun(t, db, "once")
	text := strings.Repeat("The applicable threshold is «5 %». ", 100)
	answer := &run.Message{ID: "msg_answer", ConversationID: r.ConversationID, ParentID: r.UserMessageID, Role: run.RoleAssistant,
		AgentID: "a", Text: text, RunID: r.ID, Parts: []run.Part{{Type: run.PartText, AgentID: "a", Text: text}}}
	finished := run.Event{RunID: r.ID, Seq: 1, Type: run.EventRunFinished, CreatedAt: time.Now(),
		Data: run.Encode(run.RunFinished{Status: run.StatusSucceeded, Message: answer})}
	ended := *r
	ended.Status, ended.ResponseMessageID = run.StatusSucceeded, answer.ID
	if err := db.WriteBatch(ctx, &run.Batch{Events: []run.Event{finished}, Messages: []*run.Message{answer}, Runs: []*run.Run{&ended}}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var message, events int
	if err := raw.QueryRowContext(ctx, `SELECT length(text) + length(parts) FROM messages WHERE id = ?`, answer.ID).Scan(&message); err != nil {
		t.Fatal(err)
	}
	if err := raw.QueryRowContext(ctx, `SELECT SUM(length(events)) FROM run_event_batches WHERE run_id = ?`, r.ID).Scan(&events); err != nil {
		t.Fatal(err)
	}
	n := len([]rune(text))
	if message > n+200 || events > n+600 {
		t.Errorf("the answer of %d characters is stored in %d characters of its message and %d of its events, want it once in each", n, message, events)
	}
	got, err := db.GetMessage(ctx, answer.ID)
	if err != nil || got.Text != text || len(got.Parts) != 1 || got.Parts[0] != answer.Parts[0] {
		t.Fatalf("GetMessage = %+v, %v; want the answer back", got, err)
	}
	evs, err := db.ListEvents(ctx, r.ID, 0)
	if err != nil || len(evs) != 1 || string(evs[0].Data) != string(finished.Data) {
		t.Fatalf("ListEvents = %v, %v; want run.finished back byte for byte", evs, err)
	}
}

// A new database, and its log, are readable by their owner alone, whatever
// the process's umask: they hold conversations, traces and key hashes.
func TestNewDatabaseIsPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "relay.db")
	db := open(t, path)
	if _, err := db.GetUser(t.Context(), "user_none"); err == nil {
		t.Fatal("a user in a new database")
	}
	for _, p := range []string{path, path + "-wal"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v; want no access for group and others", filepath.Base(p), perm)
		}
	}
}

// The store's contract holds for a database that writes runs' records
// behind (WriteBehind), but where a refusal comes too late for the caller.
func TestStoreWritingBehind(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db := open(t, filepath.Join(t.TempDir(), "relay.db"))
		if err := db.WriteBehind(time.Second, slog.New(slog.DiscardHandler)); err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// A batch written behind that the database refuses in part is stored in
// parts: the refused one is lost, logged, and the other runs' records of the
// batch are kept, their runs ending as they should.
func TestWriteBehindBatchRefusedInPart(t *testing.T) {
	ctx := t.Context()
	db := open(t, filepath.Join(t.TempDir(), "relay.db"))
	var log bytes.Buffer
	if err := db.WriteBehind(time.Second, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	u := &auth.User{ID: "user_1", Email: "a@example.com", Role: auth.RoleUser}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	start := func(conv, msg, id string) *run.Run {
		r := &run.Run{ID: id, UserID: u.ID, AgentID: "a", ConversationID: conv, UserMessageID: msg, Status: run.StatusRunning, StartedAt: &now}
		err := db.StartRun(ctx, &run.RunStart{Conversation: &run.Conversation{ID: conv, UserID: u.ID, AgentID: "a"}, NewConversation: true,
			Message: &run.Message{ID: msg, ConversationID: conv, Role: run.RoleUser, Text: "hi"}, Run: r})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a := start("conv_a", "msg_a", "run_a")
	start("conv_b", "msg_b", "run_b")
	call := func() *run.ToolCall {
		return &run.ToolCall{RunID: "run_b", ToolRecord: turn.ToolRecord{ID: "call_0", Name: "x"}}
	}
	if err := db.WriteBatch(ctx, &run.Batch{ToolCalls: []*run.ToolCall{call()}}); err != nil {
		t.Fatal(err)
	}
	// Run a's end, and run b's tool call again: its id is taken.
	done := time.Now()
	a.Status, a.FinishedAt, a.ResponseMessageID = run.StatusSucceeded, &done, "msg_answer"
	err := db.WriteBatch(ctx, &run.Batch{
		Events:    []run.Event{{RunID: "run_a", Seq: 1, Type: run.EventMessageDelta, Data: []byte(`{"text":"answer"}`)}},
		ToolCalls: []*run.ToolCall{call()},
		Messages:  []*run.Message{{ID: "msg_answer", ConversationID: "conv_a", ParentID: "msg_a", Role: run.RoleAssistant, RunID: "run_a", Text: "answer"}},
		Runs:      []*run.Run{a},
	})
	if err != nil {
		t.Fatalf("WriteBatch written behind: %v", err)
	}
	got, err := db.GetRun(ctx, "run_a")
	if err != nil {
		t.Fatal(err)
	}
	evs, err := db.ListEvents(ctx, "run_a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != run.StatusSucceeded || got.ResponseMessageID != "msg_answer" || len(evs) != 1 {
		t.Errorf("run a after a batch refused in part: %s, answer %q, %d events; want succeeded, msg_answer, 1", got.Status, got.ResponseMessageID, len(evs))
	}
	if out := log.String(); strings.Count(out, "level=ERROR") != 1 || !strings.Contains(out, "call_0") {
		t.Errorf("log:\n%s", out)
	}
}
