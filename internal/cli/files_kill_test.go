package cli

import (
	"fmt"
	"net/http"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/file/filetest"
	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// A file whose ingesting process is killed does not wait out its lease: the
// next relay serve on the host reaps the dead process before it is ready, the
// file is pending again, and it is ingested.
func TestKilledProcessFileIngestedByTheNext(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay; skipped with -short")
	}
	bin := buildRelay(t)
	emb := filetest.StartEmbeddings(t)
	var hold atomic.Bool // while set, embedding requests hang: ingestion is stuck mid-file
	hold.Store(true)
	gate := llmtest.Server(t, func(w http.ResponseWriter, r *http.Request) {
		for hold.Load() {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		emb.Handler().ServeHTTP(w, r)
	})
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  addr: %s
  data_dir: %s
  log_level: warn
rag:
  embeddings:
    baseURL: %s/v1
    apiKey: %s
    model: fake-embeddings
`, addr, filepath.Join(dir, "data"), gate.URL, emb.Key))
	base := "http://" + addr
	p := startRelay(t, bin, cfg, base, "")
	s := &server{base: base}
	id := s.upload(t, "notes.txt", []byte("Relay keeps the minutes of every meeting in the archive.\n"))
	waitFor(t, 20*time.Second, "the file being ingested", func() bool {
		var f map[string]any
		return s.call(t, testKey, "GET", "/api/files/"+id, "", &f) == 200 && f["status"] == "processing"
	})
	p.kill(t)
	hold.Store(false)

	startRelay(t, bin, cfg, base, "")
	var f map[string]any
	if code := s.call(t, testKey, "GET", "/api/files/"+id, "", &f); code != 200 || f["status"] == "processing" && f["progress"] != float64(0) {
		t.Errorf("the file when the next process is ready: %d %v; want it given back (pending, or taken again from the start)", code, f)
	}
	// The lease (2 minutes) is far from over: only the reap lets it through.
	f = s.ready(t, id)
	if f["chunk_count"] != float64(1) {
		t.Errorf("the ingested file: %v; want one chunk", f)
	}
}
