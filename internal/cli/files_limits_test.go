package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/file/extract/extracttest"
)

// The server reads its extraction limits from fileConfig: a form bomb ends
// failed naming fileConfig.maxPdfOperations, and while a decoding bomb is
// being ingested the API keeps answering.
func TestFileLimitsFromConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
fileConfig:
  maxPdfOperations: 100000
  maxDecodedMB: 1000000
  extractTimeout: 1h
`, filepath.Join(dir, "data")))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	client := &http.Client{Timeout: 10 * time.Second}
	upload := func(name string, data []byte) string {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		part, _ := mw.CreateFormFile("file", name)
		part.Write(data)
		mw.Close()
		req, _ := http.NewRequest("POST", s.base+"/api/files", &body)
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var up struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&up)
		if resp.StatusCode != 201 {
			t.Fatalf("POST /api/files %s: %d", name, resp.StatusCode)
		}
		return up.ID
	}
	type fileState struct {
		Status, Error string
		Progress      int
	}
	get := func(id string) fileState {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", s.base+"/api/files/"+id, nil)
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /api/files/%s while a bomb ingests: %v", id, err)
		}
		defer resp.Body.Close()
		var f fileState
		json.NewDecoder(resp.Body).Decode(&f)
		return f
	}

	// Every page decodes the same 8 MB stream again: with the decoding
	// limit raised, this runs for minutes.
	slow := upload("slow.pdf", extracttest.StreamBombPDF(2000, 8<<20-1024))
	waitFor(t, time.Minute, "progress of the slow bomb", func() bool {
		f := get(slow)
		if f.Status == "failed" || f.Status == "ready" {
			t.Fatalf("the slow bomb ended %s: %s", f.Status, f.Error)
		}
		return f.Status == "processing" && f.Progress != 0
	})
	form := upload("form.pdf", extracttest.FormBombPDF(2000))
	f := get(form)
	waitFor(t, time.Minute, "end of the form bomb", func() bool {
		f = get(form)
		return f.Status == "failed" || f.Status == "ready"
	})
	if f.Status != "failed" || !strings.Contains(f.Error, "more than 100000 operations") || !strings.Contains(f.Error, "(fileConfig.maxPdfOperations)") {
		t.Errorf("the form bomb ended %s: %q", f.Status, f.Error)
	}
	if f := get(slow); f.Status != "processing" {
		t.Errorf("the slow bomb is %s, want it still processing while the API answers", f.Status)
	}
	if code := s.call(t, testKey, "GET", "/readyz", "", nil); code != 200 {
		t.Errorf("/readyz during the bomb: %d", code)
	}
}
