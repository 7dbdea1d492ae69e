package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFilesCLIAndAPI: relay files add --wait ingests a file while a server
// runs on the same database, the API lists it, an upload through the API is
// ingested by the server, and relay files list and rm see and delete them.
func TestFilesCLIAndAPI(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf("server:\n  data_dir: %s\nfileConfig:\n  serverFileSizeLimit: 1\n", filepath.Join(dir, "data")))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	notes := filepath.Join(dir, "notes.md")
	if err := os.WriteFile(notes, []byte("# Notes\n\nThe boiler is serviced every October."), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, nil, "", "files", "add", "--config", cfgPath, "--wait", notes)
	if code != 0 || !strings.Contains(out, "notes.md\tpending") || !strings.Contains(stderr, "notes.md\tready") {
		t.Fatalf("files add --wait: %d\nstdout %q\nstderr %q", code, out, stderr)
	}
	id := strings.Fields(out)[0]

	// Through the API: multipart, ingested by the server.
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("file", "data.csv")
	io.WriteString(part, "city,inspections\nUtrecht,4\nZwolle,2\n")
	mw.Close()
	req, _ := http.NewRequest("POST", s.base+"/api/files", &body)
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up struct{ ID, Status string }
	json.NewDecoder(resp.Body).Decode(&up)
	resp.Body.Close()
	if resp.StatusCode != 201 || up.Status != "pending" {
		t.Fatalf("POST /api/files: %d %+v", resp.StatusCode, up)
	}
	waitFor(t, 15*time.Second, "the uploaded file ready", func() bool {
		var f struct{ Status string }
		s.call(t, testKey, "GET", "/api/files/"+up.ID, "", &f)
		return f.Status == "ready"
	})

	// Over fileConfig.serverFileSizeLimit (1 MB).
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, bytes.Repeat([]byte("a "), 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, "", "files", "add", "--config", cfgPath, big); code != 1 || !strings.Contains(stderr, "1 MB") {
		t.Errorf("files add of 2 MB with a 1 MB cap: %d %q", code, stderr)
	}
	// A file refused among others: said, and the others added all the same.
	after := filepath.Join(dir, "after.md")
	if err := os.WriteFile(after, []byte("Pressure tests are yearly."), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runCLI(t, nil, "", "files", "add", "--config", cfgPath, big, after)
	if code != 1 || !strings.Contains(stderr, "big.txt: ") || !strings.Contains(stderr, "1 of 2 files were not added") || !strings.Contains(out, "after.md\tpending") {
		t.Errorf("files add of a refused file and another: %d\nstdout %q\nstderr %q", code, out, stderr)
	}

	code, out, stderr = runCLI(t, nil, "", "files", "list", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "data.csv") || !strings.Contains(out, "text/markdown") || strings.Contains(out, "big.txt") {
		t.Errorf("files list: %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := runCLI(t, nil, "", "files", "rm", "--config", cfgPath, id); code != 0 || !strings.Contains(out, "deleted "+id) {
		t.Errorf("files rm: %d %q %q", code, out, stderr)
	}
	if code := s.call(t, testKey, "GET", "/api/files/"+id, "", nil); code != 404 {
		t.Errorf("GET after rm: %d, want 404", code)
	}
	if code, _, stderr := runCLI(t, nil, "", "files", "rm", "--config", cfgPath, id); code != 1 || !strings.Contains(stderr, "not found") {
		t.Errorf("files rm of a deleted file: %d %q", code, stderr)
	}
	if code, _, _ := runCLI(t, nil, "", "files", "add", "--config", cfgPath); code != 2 {
		t.Errorf("files add without a path: exit %d, want 2", code)
	}
}
