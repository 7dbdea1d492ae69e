package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
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
