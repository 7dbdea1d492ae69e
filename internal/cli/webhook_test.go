package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
)

// TestScheduleWebhookGuard: server.allowed_addresses reaches the schedule
// webhooks. The receiver on 127.0.0.1, listed with its port, is sent the
// firing; the metadata address and another loopback port are refused when
// the schedule is created (400 on notify_url); a name resolving to loopback
// (on a port not listed) is accepted then and refused when sending. The webhook's token never reaches
// the log.
func TestScheduleWebhookGuard(t *testing.T) {
	const token = "whk-TOKEN-20261125"
	received := make(chan string, 4)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		received <- r.URL.Path + " " + string(b)
	}))
	t.Cleanup(hook.Close)
	hu, _ := url.Parse(hook.URL)

	mock := llmtest.StartAimock(t, `{"fixtures":[{"match":{"userMessage":"ping"},"response":{"content":"pong"}}]}`)
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, fmt.Sprintf(`server:
  data_dir: %s
  allowed_addresses: [%q]
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - {id: pinger, provider: mock, model: m, instructions: "Answer."}
`, filepath.Join(dir, "data"), hu.Host, mock))
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})

	create := func(notify string) (int, string, string) {
		body, _ := json.Marshal(map[string]string{"agent_id": "pinger", "name": "Ping", "cron": "0 7 * * *", "prompt": "ping", "notify_url": notify})
		var out map[string]any
		code := s.call(t, testKey, "POST", "/api/schedules", string(body), &out)
		raw, _ := json.Marshal(out)
		id, _ := out["id"].(string)
		return code, id, string(raw)
	}
	for _, bad := range []string{
		"http://169.254.169.254/latest/meta-data/?token=" + token,
		"http://127.0.0.1:1/hook?token=" + token,
		"http://[::1]:" + hu.Port() + "/hook",
	} {
		if code, _, body := create(bad); code != 400 || !strings.Contains(body, "notify_url") || !strings.Contains(body, "which Relay does not connect to") || strings.Contains(body, token) {
			t.Errorf("notify_url %s: %d %s", bad, code, body)
		}
	}

	code, allowed, body := create(hook.URL + "/hook/" + token + "?token=" + token)
	if code != 201 {
		t.Fatalf("allowed receiver: %d %s", code, body)
	}
	// localhost:PORT would be let through (its address and port are listed);
	// on another port it is not.
	code, byName, body := create("http://localhost:1/hook/" + token)
	if code != 201 {
		t.Fatalf("a name: %d %s", code, body)
	}
	for _, id := range []string{allowed, byName} {
		if code := s.call(t, testKey, "POST", "/api/schedules/"+id+"/run", "", nil); code != 202 {
			t.Fatalf("run now: %d", code)
		}
	}
	select {
	case got := <-received:
		if !strings.HasPrefix(got, "/hook/"+token+" ") || !strings.Contains(got, `"schedule_id":"`+allowed+`"`) {
			t.Errorf("webhook %s", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no webhook:\n%s", s.stderr)
	}
	waitFor(t, 30*time.Second, "the refusal logged", func() bool { return strings.Contains(s.stderr.String(), "schedule webhook refused") })
	if log := s.stderr.String(); !strings.Contains(log, "localhost resolves to") || strings.Contains(log, token) {
		t.Errorf("log:\n%s", log)
	}
	select {
	case got := <-received:
		t.Errorf("the refused webhook arrived: %s", got)
	default:
	}
}
