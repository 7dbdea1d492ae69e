package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/schedule"
	"github.com/relay-ai/relay/internal/store/sqlite"
)

// TestSchedulesAPIAndCLI: a schedule made through the API fires on demand
// through the chat path with aimock as the model; the CLI sees it.
func TestSchedulesAPIAndCLI(t *testing.T) {
	mock := llmtest.StartAimock(t, `{"fixtures":[{"match":{"userMessage":"news of the day"},"response":{"content":"Nothing new."}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - {id: digest, provider: mock, model: m, instructions: "Today is {{current_date}}."}
`, filepath.Join(dir, "data"), mock))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	var sc map[string]any
	if code := s.call(t, testKey, "POST", "/api/schedules", `{"agent_id":"digest","name":"Digest","prompt":"The news of the day, please.","cron":"0 7 * * MON-FRI","timezone":"Europe/Amsterdam"}`, &sc); code != 201 {
		t.Fatalf("create: %d %v", code, sc)
	}
	id := sc["id"].(string)
	var bad map[string]map[string]any
	if code := s.call(t, testKey, "POST", "/api/schedules", `{"agent_id":"digest","name":"x","prompt":"p","cron":"61 * * * *"}`, &bad); code != 400 || !strings.Contains(fmt.Sprint(bad["error"]), "minute") {
		t.Errorf("bad cron: %d %v", code, bad)
	}
	var f map[string]any
	if code := s.call(t, testKey, "POST", "/api/schedules/"+id+"/run", "", &f); code != 202 {
		t.Fatalf("run now: %d %v", code, f)
	}
	waitFor(t, 15*time.Second, "the firing succeeded", func() bool {
		var runs struct{ Data []map[string]any }
		s.call(t, testKey, "GET", "/api/schedules/"+id+"/runs", "", &runs)
		return len(runs.Data) == 1 && runs.Data[0]["status"] == "succeeded"
	})
	code, out, stderr := runCLI(t, nil, "", "schedules", "list", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "0 7 * * MON-FRI") {
		t.Errorf("schedules list: %d %q %q", code, out, stderr)
	}
	if code := s.call(t, testKey, "DELETE", "/api/schedules/"+id, "", nil); code != 204 {
		t.Errorf("delete: %d", code)
	}
}

// schedules runs pages as the API does: --limit firings, newest first, and
// while older ones remain, stderr names the --cursor that lists them. A
// --limit the API would refuse is a usage error (exit 2) before anything is
// opened.
func TestSchedulesRunsPaged(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  log_level: warn
endpoints:
  custom:
    - name: mock
      apiKey: sk-test
      baseURL: http://127.0.0.1:9/v1
agents:
  - {id: worker, provider: mock, model: m, shared: true}
`, data))
	run := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, nil, "", append(args, "--config", cfg)...)
	}
	if code, _, stderr := run("users", "add", "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	code, out, stderr := run("schedules", "add", "--user", "ann@example.com", "--agent", "worker", "--name", "Minutely", "--prompt", "news?", "--cron", "* * * * *")
	if code != 0 {
		t.Fatalf("schedules add: %d %s", code, stderr)
	}
	id := regexp.MustCompile(`sched_[A-Za-z0-9_-]+`).FindString(out)
	db, err := sqlite.Open(t.Context(), filepath.Join(data, "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 19, 7, 0, 0, 0, time.UTC)
	for i := range 5 {
		f := &schedule.Firing{ID: fmt.Sprintf("fire_%d", i), ScheduleID: id, FireAt: start.Add(time.Duration(i) * time.Minute),
			Prompt: "news?", Status: schedule.FiringSucceeded}
		if err := db.CreateFiring(t.Context(), f); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	hint := regexp.MustCompile(`(?m)^older firings: --cursor (\S+)$`)
	var got [][]string
	args := []string{"schedules", "runs", id, "--user", "ann@example.com", "--limit", "2"}
	for page := 0; ; page++ {
		code, out, stderr := run(args...)
		if code != 0 {
			t.Fatalf("schedules runs, page %d: exit %d %s", page, code, stderr)
		}
		var fs []schedule.Firing
		if err := json.Unmarshal([]byte(out), &fs); err != nil {
			t.Fatalf("page %d is no JSON array of firings: %v\n%s", page, err, out)
		}
		var ids []string
		for _, f := range fs {
			ids = append(ids, f.ID)
		}
		got = append(got, ids)
		m := hint.FindStringSubmatch(stderr)
		if m == nil {
			break
		}
		if page > 3 {
			t.Fatal("schedules runs never reached the last page")
		}
		args = append(args[:7:7], "--cursor", m[1])
	}
	if want := [][]string{{"fire_4", "fire_3"}, {"fire_2", "fire_1"}, {"fire_0"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("pages of 2:\n got %v\nwant %v", got, want)
	}
	if code, _, stderr := run("schedules", "runs", id, "--user", "ann@example.com", "--cursor", "bad"); code != 1 || !strings.Contains(stderr, "invalid cursor") {
		t.Errorf("a bad cursor: exit %d %q, want 1 saying the cursor is invalid", code, stderr)
	}

	missing := filepath.Join(dir, "missing.yaml")
	for _, limit := range []string{"0", "-3", "1001", "5000"} {
		for _, c := range []string{cfg, missing} {
			code, out, stderr := runCLI(t, nil, "", "schedules", "runs", id, "--limit", limit, "--config", c)
			if code != 2 || out != "" || !strings.Contains(stderr, "--limit must be 1 to 1000") {
				t.Errorf("--limit %s (config %s): exit %d, stdout %q, stderr %q; want 2 and the allowed range", limit, filepath.Base(c), code, out, stderr)
			}
		}
	}
}
