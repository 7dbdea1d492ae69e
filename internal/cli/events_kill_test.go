package cli

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A `relay serve` killed with SIGKILL in the middle of a run and started again
// on the same data: replaying the run's events from the start ends, within a
// deadline, with an error event and run.finished saying failed, after what
// the run had streamed.
func TestKilledServeRunReplayEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and restarts relay; skipped with -short")
	}
	addr := freeAddr(t)
	bin, cfg, db := workerSetup(t, slowFixtures, addr)
	base := "http://" + addr
	p := startRelay(t, bin, cfg, base, "")

	// A chat whose answer streams slowly; once a piece of it has been streamed
	// (and, a flush later, stored), the process is killed.
	req, _ := http.NewRequest("POST", base+"/api/chat", strings.NewReader(`{"agent_id":"worker","text":"slow job"}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	runID := resp.Header.Get("Relay-Run-Id")
	deltas := 0
	sc := bufio.NewScanner(resp.Body)
	for deltas < 2 && sc.Scan() {
		if sc.Text() == "event: message.delta" {
			deltas++
		}
	}
	if runID == "" || deltas < 2 {
		t.Fatalf("the chat's run %q streamed %d pieces before its stream ended", runID, deltas)
	}
	raw := openRaw(t, db)
	waitFor(t, 20*time.Second, "a piece of the answer stored", func() bool {
		var n int
		return raw.QueryRow(`SELECT COUNT(*) FROM run_event_batches WHERE run_id = ? AND events LIKE '%message.delta%'`, runID).Scan(&n) == nil && n > 0
	})
	p.kill(t)
	resp.Body.Close()

	startRelay(t, bin, cfg, base, "")
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, "GET", base+"/api/runs/"+runID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET events: %d", resp.StatusCode)
	}
	var types, data []string
	sc = bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			types = append(types, v)
		}
		if v, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the replay did not end within its deadline (%v); events %v", err, types)
	}
	n := len(types)
	if n < 4 || types[0] != "run.started" || types[n-2] != "error" || types[n-1] != "run.finished" || !strings.Contains(strings.Join(types, " "), "message.delta") {
		t.Fatalf("replayed events %v; want run.started, the deltas stored, then error and run.finished", types)
	}
	if last := data[len(data)-1]; !strings.Contains(last, `"status":"failed"`) {
		t.Errorf("run.finished data %s; want status failed", last)
	}
}
