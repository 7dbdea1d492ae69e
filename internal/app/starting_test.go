package app

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// While the database opens, /healthz answers and every other request gets
// a 503 that says so, in the error shape of its route: Relay's, or OpenAI's
// under /v1/ (internal/httpapi/openapi.json lists it for every operation).
// Every answer has its request id, as later.
func TestStartingHandler(t *testing.T) {
	h := startingHandler("v1.2.3")
	for _, tc := range []struct {
		path   string
		status int
		want   map[string]any
	}{
		{"/healthz", http.StatusOK, map[string]any{"status": "ok", "version": "v1.2.3"}},
		{"/readyz", http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"code": "unavailable", "message": "starting: the database is not open yet"}}},
		{"/api/agents", http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"code": "unavailable", "message": "starting: the database is not open yet"}}},
		{"/v1/models", http.StatusServiceUnavailable, map[string]any{"error": map[string]any{
			"code": "unavailable", "message": "starting: the database is not open yet", "type": "server_error", "param": nil}}},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if id := rec.Header().Get("X-Request-Id"); !strings.HasPrefix(id, "req_") {
			t.Errorf("GET %s: X-Request-Id %q, want a new req_… (docs/api.md \"Request ids\")", tc.path, id)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Errorf("GET %s: %v: %q", tc.path, err, rec.Body)
			continue
		}
		if rec.Code != tc.status || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %s, want %d application/json", tc.path, rec.Code, rec.Header().Get("Content-Type"), tc.status)
		}
		if tc.status == http.StatusServiceUnavailable && rec.Header().Get("Retry-After") != "1" {
			t.Errorf("GET %s: Retry-After %q, want 1", tc.path, rec.Header().Get("Retry-After"))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", tc.path, diff)
		}
	}
}
