package sqlite_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/telemetry/telemetrytest"
)

// An instrumented store traces each write transaction, on the DBs of OnNode
// too, and reports both pools.
func TestInstrument(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "relay.db"))
	rc := telemetrytest.NewReceiver(t)
	tel := telemetrytest.New(t, rc, nil)
	db.Instrument(tel)

	now := time.Now()
	u := &auth.User{ID: auth.NewUserID(), Email: "ann@example.com", DisplayName: "Ann", Role: auth.RoleUser, CreatedAt: now, UpdatedAt: now}
	if err := db.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	if err := db.OnNode("node_1").PutSecretVars(t.Context(), u.ID, "mcp", "files", map[string]string{"TOKEN": "sealed"}, nil, now); err != nil {
		t.Fatal(err)
	}
	err := db.PutSecretVars(t.Context(), "user_nobody", "mcp", "files", map[string]string{"TOKEN": "sealed"}, nil, now)
	if !fault.Is(err, fault.NotFound) {
		t.Fatalf("PutSecretVars for no user: %v", err)
	}

	scrape := httptest.NewRecorder()
	tel.Handler().ServeHTTP(scrape, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, name := range []string{"write", "read"} {
		if !strings.Contains(scrape.Body.String(), `go_sql_open_connections{db_name="`+name+`"}`) {
			t.Errorf("no statistics of the %s pool", name)
		}
	}

	telemetrytest.Flush(t, tel)
	var spans []telemetrytest.Span
	for _, s := range rc.Spans() {
		if s.Name == "PutSecretVars" {
			spans = append(spans, s)
		}
	}
	if len(spans) != 2 {
		t.Fatalf("%d PutSecretVars spans, want 2: %+v", len(spans), rc.Spans())
	}
	for _, s := range spans {
		if s.Attrs["db.system.name"] != "sqlite" || s.Attrs["db.operation.name"] != "PutSecretVars" {
			t.Errorf("span attributes %v", s.Attrs)
		}
	}
	if spans[0].Error || !spans[1].Error {
		t.Errorf("error statuses %v, %v; want the second only", spans[0].Error, spans[1].Error)
	}
}
