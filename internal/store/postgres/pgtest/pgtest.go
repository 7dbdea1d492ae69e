// Package pgtest gives tests a Postgres database of their own: a fresh schema
// in the server named by TEST_POSTGRES_URL, dropped when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Schema creates an empty schema named prefix and random characters in the
// Postgres at base, drops it (with everything in it) when t ends, and returns
// base with search_path set to it, as a URL or as a key=value connection
// string, whichever base is.
func Schema(t testing.TB, base, prefix string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to the test Postgres: %v", err)
	}
	defer conn.Close(ctx)
	name := prefix + "_" + strings.ToLower(rand.Text()[:16])
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatalf("creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP SCHEMA "+name+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return base + " search_path=" + name
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}
