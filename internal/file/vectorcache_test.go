package file_test

import (
	"context"
	"database/sql"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/relay-ai/relay/internal/file"
)

// swapEmbedder gives passages about alpha and beta one of two directions,
// swapped on demand, and every query the first: a file ingested again after
// the swap answers the same query with its other passage.
type swapEmbedder struct{ swapped atomic.Bool }

func (e *swapEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	first, second := []float32{1, 0, 0, 0}, []float32{0, 1, 0, 0}
	out := make([][]float32, len(texts))
	for i, tx := range texts {
		alpha := strings.HasPrefix(tx, "alpha")
		switch {
		case strings.HasPrefix(tx, "query"):
			out[i] = first
		case alpha != e.swapped.Load():
			out[i] = first
		default:
			out[i] = second
		}
	}
	return out, nil
}

// TestVectorCacheSeesOtherProcesses: a process whose memory holds a file's
// vectors searches the new ones after another process ingests the file again,
// and finds nothing once that process deletes it.
func TestVectorCacheSeesOtherProcesses(t *testing.T) {
	for _, eng := range engines() {
		t.Run(eng, func(t *testing.T) {
			emb := &swapEmbedder{}
			b := setupOn(t, eng, file.Options{Embedder: emb, Poll: 20 * time.Millisecond})
			f := b.wait(t, b.upload(t, "greek.txt", []byte(long("alpha passage")+"\n"+long("beta passage")+"\n")).ID)
			if f.Status != file.Ready || f.Chunks != 2 {
				t.Fatalf("file = %+v, want ready with 2 chunks", f)
			}
			// Another process: it only searches, so its memory learns nothing
			// from the ingestions.
			other := file.NewService(file.Options{Store: b.store, Embedder: emb})
			top := func() string {
				t.Helper()
				hits, err := other.Search(t.Context(), file.Query{FileIDs: []string{f.ID}, Text: "query", Limit: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) == 0 {
					return ""
				}
				return strings.Fields(hits[0].Text)[0]
			}
			if got := top(); got != "alpha" {
				t.Fatalf("top passage %q, want alpha", got)
			}
			if got := top(); got != "alpha" { // from memory now
				t.Fatalf("top passage, searched again: %q, want alpha", got)
			}

			emb.swapped.Store(true)
			requeue(t, b, f.ID)
			if again := b.wait(t, f.ID); again.Status != file.Ready || !again.UpdatedAt.After(f.UpdatedAt) {
				t.Fatalf("file ingested again = %+v", again)
			}
			if got := top(); got != "beta" {
				t.Errorf("top passage after another process ingested the file again: %q, want beta", got)
			}

			if err := b.svc.Delete(t.Context(), b.owner, false, f.ID); err != nil {
				t.Fatal(err)
			}
			if got := top(); got != "" {
				t.Errorf("top passage after another process deleted the file: %q, want none", got)
			}
		})
	}
}

// requeue sets a ready file pending again, as if uploaded anew, through the
// database itself.
func requeue(t *testing.T, b *bundle, id string) {
	t.Helper()
	const q = `UPDATE files SET status = 'pending' WHERE id = `
	if b.pgURL != "" {
		conn, err := pgx.Connect(t.Context(), b.pgURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(t.Context())
		if _, err := conn.Exec(t.Context(), q+"$1", id); err != nil {
			t.Fatal(err)
		}
		return
	}
	db, err := sql.Open("sqlite", b.path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(t.Context(), q+"?", id); err != nil {
		t.Fatal(err)
	}
}
