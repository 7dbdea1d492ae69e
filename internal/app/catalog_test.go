package app

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/config"
	"github.com/relay-ai/relay/internal/httpapi"
)

// With models.fetch, GET /api/config lists what the endpoint's /models
// answers, asked again only after fetchedModelsTTL; while the endpoint fails,
// the configured list stands in, asked again after fetchFailedTTL. Endpoints
// without fetch, or whose key is each user's, are never asked.
func TestFetchedModels(t *testing.T) {
	var asked atomic.Int64
	var failing atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk-groq-key-1234" {
			t.Errorf("asked %s with %q", r.URL.Path, r.Header.Get("Authorization"))
		}
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"data":[{"id":"llama-3.3-70b"},{"id":"gemma2-9b"}]}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	cfg, err := config.Load(writeConfig(t, dir, fmt.Sprintf(`endpoints:
  custom:
    - name: groq
      apiKey: sk-groq-key-1234
      baseURL: %[1]s/v1
      models: {default: [configured-model], fetch: true}
    - name: fixed
      apiKey: sk-fixed
      baseURL: %[1]s/v1
      models: {default: [fixed-model]}
    - name: own
      apiKey: user_provided
      baseURL: %[1]s/v1
      models: {default: [own-model], fetch: true}
`, up.URL)), testEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := newFetchingCatalog(cfg, models(cfg, nil, nil, slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
	f.now = func() time.Time { return now }
	modelsOf := func(name string) []string {
		t.Helper()
		for _, p := range f.Catalog(context.Background()).Providers {
			if p.Name == name {
				return p.Models
			}
		}
		t.Fatalf("no provider %q", name)
		return nil
	}
	check := func(when, name string, want []string, wantAsked int64) {
		t.Helper()
		if got := modelsOf(name); !slices.Equal(got, want) {
			t.Errorf("%s: %s lists %v, want %v", when, name, got, want)
		}
		if n := asked.Load(); n != wantAsked {
			t.Errorf("%s: the endpoint was asked %d times, want %d", when, n, wantAsked)
		}
	}
	check("first", "groq", []string{"gemma2-9b", "llama-3.3-70b"}, 1)
	check("again", "groq", []string{"gemma2-9b", "llama-3.3-70b"}, 1)
	check("no fetch", "fixed", []string{"fixed-model"}, 1)
	check("the user's key", "own", []string{"own-model"}, 1)

	failing.Store(true)
	now = now.Add(fetchedModelsTTL)
	check("failing", "groq", []string{"configured-model"}, 2)
	now = now.Add(fetchFailedTTL - time.Second)
	check("still failing", "groq", []string{"configured-model"}, 2)
	failing.Store(false)
	now = now.Add(time.Second)
	check("back", "groq", []string{"gemma2-9b", "llama-3.3-70b"}, 3)

	// The base catalog is never changed by a fetch.
	if got := f.base.Providers; !slices.ContainsFunc(got, func(p httpapi.CatalogProvider) bool {
		return p.Name == "groq" && slices.Equal(p.Models, []string{"configured-model"})
	}) {
		t.Errorf("the configured catalog changed: %+v", got)
	}
}
