package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/memory"
	"github.com/relay-ai/relay/internal/store"
	"github.com/relay-ai/relay/internal/store/postgres"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
	"github.com/relay-ai/relay/internal/store/storetest"
)

// serverURL returns TEST_POSTGRES_URL or skips the test.
func serverURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("TEST_POSTGRES_URL")
	if u == "" {
		t.Skip("TEST_POSTGRES_URL is not set; set it to a Postgres URL such as postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable to run the Postgres tests")
	}
	return u
}

// freshSchema returns a URL of an empty schema in the test Postgres, dropped
// when t ends.
func freshSchema(t *testing.T) string { return pgtest.Schema(t, serverURL(t), "relay_test") }

func open(t *testing.T, url string) *store.DB {
	t.Helper()
	db, err := postgres.Open(t.Context(), url, postgres.Options{ConnectTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestStore(t *testing.T) {
	serverURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, freshSchema(t))
	})
}

// appliedMigrations counts the rows of schema_migrations in the schema of url.
func appliedMigrations(t *testing.T, url string) map[int]int {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	rows, err := db.QueryContext(t.Context(), `SELECT version, COUNT(*) FROM schema_migrations GROUP BY version`)
	if err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var v, n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		out[v] = n
	}
	return out
}

func TestConcurrentOpen(t *testing.T) {
	url := freshSchema(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			db, err := postgres.Open(t.Context(), url, postgres.Options{ConnectTimeout: 5 * time.Second})
			errs[i] = err
			if err == nil {
				db.Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
	got := appliedMigrations(t, url)
	if got[1] != 1 {
		t.Errorf("schema_migrations = %v, want migration 1 once", got)
	}
	for v, c := range got {
		if c != 1 {
			t.Errorf("migration %d recorded %d times", v, c)
		}
	}
}

func TestReopenAndNewerSchema(t *testing.T) {
	url := freshSchema(t)
	ctx := t.Context()
	db := open(t, url)
	a := &agent.Agent{ID: agent.NewID(), Spec: agent.Spec{Provider: "openai", Model: "m"}}
	if err := db.CreateAgent(ctx, a); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open(t, url)
	if _, err := db.GetAgent(ctx, a.ID); err != nil {
		t.Errorf("GetAgent after reopening: %v", err)
	}
	before := appliedMigrations(t, url)
	db.Close()

	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	raw := stdlib.OpenDB(*cfg)
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', now())`); err != nil {
		t.Fatal(err)
	}
	_, err = postgres.Open(ctx, url, postgres.Options{})
	want := fmt.Sprintf("database schema version 9999 is newer than this relay (%d); upgrade relay", slices.Max(slices.Collect(maps.Keys(before))))
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Open of a newer schema: got %v, want an error containing %q", err, want)
	}
}

// unusedPort returns a local TCP port that nothing listens on.
func unusedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// syncBuffer is a log sink that handlers may write to from any goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestUnreachable(t *testing.T) {
	const password = "hunter2-s3cret"
	url := fmt.Sprintf("postgres://relay:%s@127.0.0.1:%d/relay?sslmode=disable", password, unusedPort(t))
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	start := time.Now()
	db, err := postgres.Open(t.Context(), url, postgres.Options{ConnectTimeout: time.Second, Logger: log})
	elapsed := time.Since(start)
	if err == nil {
		db.Close()
		t.Fatal("Open of an unused port succeeded")
	}
	if elapsed < 900*time.Millisecond || elapsed > 3*time.Second {
		t.Errorf("Open gave up after %v, want about the 1s ConnectTimeout", elapsed)
	}
	msg := err.Error()
	if !strings.Contains(msg, "connection refused") || !strings.Contains(msg, "not reachable") {
		t.Errorf("error %q does not say why", msg)
	}
	if strings.Contains(msg, password) || strings.Contains(logs.String(), password) {
		t.Errorf("the password leaked:\nerror: %s\nlogs:\n%s", msg, logs.String())
	}
	if !strings.Contains(msg, "postgres://relay:xxxxx@127.0.0.1") {
		t.Errorf("error %q does not name the redacted URL", msg)
	}
	if n := strings.Count(logs.String(), "level=WARN"); n < 3 {
		t.Errorf("%d warnings logged, want one per failed attempt (at least 3 in 1s):\n%s", n, logs.String())
	}
}

func TestOpenCancelled(t *testing.T) {
	url := fmt.Sprintf("postgres://relay:pw@127.0.0.1:%d/relay?sslmode=disable", unusedPort(t))
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := postgres.Open(ctx, url, postgres.Options{ConnectTimeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Open with an ending context: got %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Open returned %v after its context ended", d-300*time.Millisecond)
	}
}

func TestBadLoginFailsAtOnce(t *testing.T) {
	u, err := url.Parse(serverURL(t))
	if err != nil || u.Scheme == "" {
		t.Skip("TEST_POSTGRES_URL is not a URL")
	}
	u.Path = "/relay_no_such_database"
	start := time.Now()
	_, err = postgres.Open(t.Context(), u.String(), postgres.Options{ConnectTimeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "relay_no_such_database") {
		t.Errorf("Open of a missing database: got %v, want an error naming it", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a missing database was retried for %v; waiting will not create it", d)
	}
}

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://relay:secret@db:5432/relay?sslmode=disable", "postgres://relay:xxxxx@db:5432/relay?sslmode=disable"},
		{"postgresql://relay@db/relay", "postgresql://relay@db/relay"},
		{"postgres://relay@db/relay?password=secret&sslmode=require", "postgres://relay@db/relay?password=xxxxx&sslmode=require"},
		{"postgres://relay:p%40ss:w0rd@db/relay", "postgres://relay:xxxxx@db/relay"},
		{"postgres://relay:secret@db:bad port/x", "postgres://relay:xxxxx@db:bad port/x"},
		{"host=db user=relay password=secret dbname=relay", "host=db user=relay password=xxxxx dbname=relay"},
		{"host=db password='se cret' dbname=relay", "host=db password=xxxxx dbname=relay"},
		{"host=db password = secret", "host=db password = xxxxx"},
	} {
		got := postgres.Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.Contains(got, "secret") || strings.Contains(got, "se cret") {
			t.Errorf("Redact(%q) leaks the password", tc.in)
		}
	}
}

// A value Postgres refuses for what it is (here a time before 4713 BC, a
// data exception) is fault.Invalid, which is not tried again, rather than an
// internal failure, which may be.
func TestRefusedValueIsInvalid(t *testing.T) {
	db := open(t, freshSchema(t))
	u := &auth.User{ID: auth.NewUserID(), Email: "big@example.com", Role: auth.RoleUser}
	if err := db.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	err := db.PutMemory(t.Context(), u.ID, memory.Entry{Key: "old", Value: "v", UpdatedAt: time.Date(-5000, 1, 1, 0, 0, 0, 0, time.UTC)})
	if !fault.Is(err, fault.Invalid) || !strings.Contains(err.Error(), "22008") {
		t.Errorf("a time out of range: %v (kind %q), want invalid", err, fault.KindOf(err))
	}
}

// Deleting a user deletes their shares and group memberships: the foreign
// keys of migration 0014 cascade.
func TestUserDeletionRemovesShares(t *testing.T) {
	url := freshSchema(t)
	s := open(t, url)
	storetest.UserDeletion(t, s, func(t *testing.T, id string) {
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		raw := stdlib.OpenDB(*cfg)
		defer raw.Close()
		if _, err := raw.ExecContext(t.Context(), `DELETE FROM users WHERE id = $1`, id); err != nil {
			t.Fatalf("deleting user %s: %v", id, err)
		}
	})
}
