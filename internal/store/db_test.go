package store

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/fault"
)

func TestBind(t *testing.T) {
	numbered := &Dialect{NumberedParams: true}
	for _, tc := range []struct{ in, want string }{
		{`SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ? AND c = ?`, `SELECT a FROM t WHERE b = $1 AND c = $2`},
		{`UPDATE t SET a = '?', "b?" = ? WHERE c = ?`, `UPDATE t SET a = '?', "b?" = $1 WHERE c = $2`},
		{`SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
	} {
		if got := numbered.bind(tc.in); got != tc.want {
			t.Errorf("bind(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := (&Dialect{}).bind(tc.in); got != tc.in {
			t.Errorf("bind without NumberedParams changed %q to %q", tc.in, got)
		}
	}
}

func TestCursorRoundTrip(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 678901000, time.UTC)
	for _, id := range []string{"agent_x", "with space", "ü-ñ"} {
		gotAt, gotID, err := decodeCursor(encodeCursor(at, id))
		if err != nil || !gotAt.Equal(at) || gotID != id {
			t.Errorf("cursor of (%v, %q) decoded as (%v, %q, %v)", at, id, gotAt, gotID, err)
		}
	}
	if _, _, err := decodeCursor("%%%"); !fault.Is(err, fault.Invalid) {
		t.Errorf("decodeCursor of garbage: %v, want fault.Invalid", err)
	}
}

func TestTimeText(t *testing.T) {
	// Fixed width keeps text order equal to time order, even across a year with
	// fewer digits of fraction.
	a := utc(time.Date(2025, 1, 1, 0, 0, 0, 100_000, time.UTC)).Format(timeLayout)
	b := utc(time.Date(2025, 1, 1, 0, 0, 0, 99_000_000, time.UTC)).Format(timeLayout)
	if !(a < b) || len(a) != len(b) {
		t.Errorf("%q and %q do not sort as times", a, b)
	}
	for _, s := range []string{a, "2025-01-01T02:00:00+02:00"} {
		got, err := parseTimeText(s)
		if err != nil || got.Location() != time.UTC {
			t.Errorf("parseTimeText(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := parseTimeText("yesterday"); err == nil {
		t.Error("parseTimeText accepted garbage")
	}
}

func TestLoadMigrations(t *testing.T) {
	ms, err := loadMigrations(fstest.MapFS{
		"0002_more.sql": {Data: []byte("two")},
		"0001_init.sql": {Data: []byte("one")},
		"README.md":     {Data: []byte("not a migration")},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []migration{{1, "init", "one"}, {2, "more", "two"}}
	if d := cmp.Diff(want, ms, cmp.AllowUnexported(migration{})); d != "" {
		t.Errorf("loadMigrations (-want +got):\n%s", d)
	}
	for name, fsys := range map[string]fstest.MapFS{
		"none":      {},
		"bad name":  {"init.sql": {}},
		"zero":      {"0000_zero.sql": {}},
		"duplicate": {"0001_a.sql": {}, "1_b.sql": {}},
	} {
		if _, err := loadMigrations(fsys); err == nil {
			t.Errorf("loadMigrations accepted %s", name)
		}
	}
}

func TestTextEngineNeedsAFullTextIndex(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       Dialect
		wantErr bool
	}{
		{"fts5", Dialect{FullText: FTS5}, false},
		{"tsvector", Dialect{FullText: TSVector}, false},
		{"none", Dialect{Engine: "other"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.d.textEngine(&DB{})
			if (err != nil) != tc.wantErr {
				t.Errorf("textEngine() error = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
