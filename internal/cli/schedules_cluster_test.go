package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// TestSchedulesFireOnceAcrossProcesses: three `relay
// serve` processes on one Postgres, 20 schedules firing every minute for three
// minutes; every expected firing runs exactly once.
func TestSchedulesFireOnceAcrossProcesses(t *testing.T) {
	pg := os.Getenv("TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("TEST_POSTGRES_URL is not set: skipping the multi-process scheduler test")
	}
	if testing.Short() {
		t.Skip("takes over three minutes; skipped with -short")
	}
	t.Parallel() // mostly waiting for minute boundaries, as the kill -9 test does
	aimockBin := mcptest.Peer(t, "PEER_AIMOCK")
	bin := buildRelay(t)
	fdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(fdir, "f.json"), []byte(`{"fixtures":[{"match":{"userMessage":"tick"},"response":{"content":"tock"}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mport := mcptest.FreePort(t)
	mcptest.StartProcess(t, mport, nil, aimockBin, "--port", fmt.Sprint(mport), "--host", "127.0.0.1", "--fixtures", fdir)

	db := schemaURL(t, pg)
	var bases []string
	for i := range 3 {
		dir := t.TempDir()
		port := mcptest.FreePort(t)
		cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  addr: 127.0.0.1:%d
  data_dir: %s
  log_level: warn
database:
  url: %q
endpoints:
  custom:
    - name: mock
      baseURL: http://127.0.0.1:%d/v1
agents:
  - {id: ticker, provider: mock, model: m, instructions: "Tick."}
`, port, filepath.Join(dir, "data"), db, mport))
		cmd := exec.Command(bin, "serve", "--config", cfg)
		cmd.Env = append(os.Environ(), "RELAY_BOOTSTRAP_API_KEY="+testKey)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM); _ = cmd.Wait() })
		bases = append(bases, fmt.Sprintf("http://127.0.0.1:%d", port))
		_ = i
	}
	for _, base := range bases { // every process ready: migrated and serving
		waitFor(t, 60*time.Second, base+" ready", func() bool { return answersReady(base) })
	}
	s := &server{base: bases[0]}
	// Create them well before a minute boundary.
	waitFor(t, time.Minute, "a time well before a minute boundary", func() bool { return time.Now().Second() <= 50 })
	var ids []string
	for i := range 20 {
		var sc map[string]any
		if code := s.call(t, testKey, "POST", "/api/schedules", fmt.Sprintf(`{"agent_id":"ticker","name":"s%02d","prompt":"tick","cron":"* * * * *"}`, i), &sc); code != 201 {
			t.Fatalf("create %d: %d %v", i, code, sc)
		}
		ids = append(ids, sc["id"].(string))
	}
	first := time.Now().UTC().Round(0).Truncate(time.Minute).Add(time.Minute)
	last := first.Add(2 * time.Minute)
	// This sleep stays: three real processes fire on the wall clock's minutes,
	// and that a minute fired once, not twice, shows only once every process
	// has had its chance to claim it.
	time.Sleep(time.Until(last.Add(40 * time.Second)))

	for _, id := range ids {
		var runs struct {
			Data []struct {
				FireAt    time.Time `json:"fire_at"`
				Status    string
				ClaimedBy string `json:"claimed_by"`
			}
		}
		if code := s.call(t, testKey, "GET", "/api/schedules/"+id+"/runs?limit=100", "", &runs); code != 200 {
			t.Fatalf("runs: %d", code)
		}
		var got []string
		seen := map[int64]int{}
		for _, r := range runs.Data {
			if !r.FireAt.Before(first) && !r.FireAt.After(last) {
				seen[r.FireAt.Unix()]++
				got = append(got, r.FireAt.Format("15:04")+" "+r.Status)
			}
			if r.Status != "succeeded" && r.Status != "running" {
				t.Errorf("%s: firing at %s is %s", id, r.FireAt, r.Status)
			}
		}
		sort.Strings(got)
		for m := first; !m.After(last); m = m.Add(time.Minute) {
			if seen[m.Unix()] != 1 {
				t.Errorf("%s: the %s firing ran %d times (firings: %s)", id, m.Format("15:04"), seen[m.Unix()], strings.Join(got, ", "))
			}
		}
	}
}
