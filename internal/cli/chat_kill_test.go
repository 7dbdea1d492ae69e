package cli

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/schedule"
)

// A `relay chat` killed in the middle of a run leaves no run `running` for
// ever: the command registered as a node, so the next relay serve on the host
// fails the run before it is ready.
func TestKilledChatCommandRunFailed(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay; skipped with -short")
	}
	addr := freeAddr(t)
	bin, cfg, db := workerSetup(t, slowFixtures, addr)
	chat, _, _ := startCommand(t, bin, "chat", "--config", cfg, "--user", "ann@example.com", "--agent", "worker", "slow job")
	raw := openRaw(t, db)
	var runID string
	waitFor(t, 20*time.Second, "the chat's run running", func() bool {
		return raw.QueryRow(`SELECT id FROM runs WHERE status = 'running'`).Scan(&runID) == nil
	})
	var node sql.NullString
	if err := raw.QueryRow(`SELECT node_id FROM runs WHERE id = ?`, runID).Scan(&node); err != nil || !node.Valid {
		t.Fatalf("the chat's run names no node (%v): a killed command's runs could not be told apart", err)
	}
	// Some of the answer is streamed and stored before the kill.
	waitFor(t, 20*time.Second, "a piece of the answer stored", func() bool {
		var n int
		return raw.QueryRow(`SELECT COUNT(*) FROM run_event_batches WHERE run_id = ? AND events LIKE '%message.delta%'`, runID).Scan(&n) == nil && n > 0
	})
	if err := chat.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = chat.Wait()

	startRelay(t, bin, cfg, "http://"+addr, "")
	var status, reason string
	if err := raw.QueryRow(`SELECT status, error FROM runs WHERE id = ?`, runID).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || reason != schedule.ReasonDead {
		t.Errorf("the killed chat's run when relay serve is ready: %s %q; want failed with %q", status, reason, schedule.ReasonDead)
	}
	// Its answer keeps what had been streamed, then says why it stopped.
	var text, parts string
	if err := raw.QueryRow(`SELECT m.text, m.parts FROM messages m JOIN runs r ON r.response_message_id = m.id WHERE r.id = ?`, runID).Scan(&text, &parts); err != nil {
		t.Fatalf("the killed chat's answer: %v", err)
	}
	const full = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
	if text == "" || !strings.HasPrefix(full, text) || !strings.Contains(parts, `"type":"error"`) || !strings.Contains(parts, schedule.ReasonDead) {
		t.Errorf("the killed chat's answer: text %q, parts %s; want the start of %q and the error", text, parts, full)
	}
}

// A `relay chat` whose reader goes away (relay chat ... | head) aborts its
// run as Ctrl-C does, the answer so far kept, instead of dying of SIGPIPE with
// the run left running.
func TestChatWhoseReaderGoesAwayAbortsTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay; skipped with -short")
	}
	bin, cfg, db := workerSetup(t, slowFixtures, "")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	chat := exec.Command(bin, "chat", "--config", cfg, "--user", "ann@example.com", "--agent", "worker", "slow job")
	stderr := &syncBuffer{}
	chat.Stdout, chat.Stderr = w, stderr
	chat.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := chat.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	// The reader takes the first piece of the answer and goes.
	if _, err := r.Read(make([]byte, 1)); err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	r.Close()
	err = chat.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 141 {
		t.Fatalf("relay chat ended with %v; want exit status 141\n%s", err, stderr)
	}
	if !strings.Contains(stderr.String(), ": cancelled (standard output was closed; the answer so far is kept)") {
		t.Errorf("stderr:\n%s", stderr)
	}
	raw := openRaw(t, db)
	var status, text string
	if err := raw.QueryRow(`SELECT r.status, m.text FROM runs r JOIN messages m ON m.id = r.response_message_id`).Scan(&status, &text); err != nil {
		t.Fatal(err)
	}
	const full = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
	if status != "cancelled" || text == "" || !strings.HasPrefix(full, text) {
		t.Errorf("the run: %s, answer %q; want cancelled with the start of the answer", status, text)
	}
}

// A `relay schedules run` killed while its firing runs does not hold the
// schedule up: the firing names the command's node, so the next command
// (here, the next `relay schedules run`), seeing that process gone, fails it
// with its run at once, and the schedule runs again without a server.
func TestKilledScheduleRunCommandFreesTheSchedule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay; skipped with -short")
	}
	bin, cfg, db := workerSetup(t, strings.Replace(slowFixtures, `{"fixtures":[`, `{"fixtures":[{"match":{"userMessage":"quick job"},"response":{"content":"done"}},`, 1), "")
	code, out, stderr := runCLI(t, nil, "", "schedules", "add", "--config", cfg, "--user", "ann@example.com", "--agent", "worker",
		"--name", "Nightly", "--prompt", "slow job", "--cron", "0 3 * * *")
	var sc struct{ ID string }
	if err := json.Unmarshal([]byte(out), &sc); code != 0 || err != nil {
		t.Fatalf("schedules add: %d %s %s", code, out, stderr)
	}
	cmd, _, _ := startCommand(t, bin, "schedules", "run", "--config", cfg, "--user", "ann@example.com", sc.ID)
	raw := openRaw(t, db)
	var firingID string
	waitFor(t, 20*time.Second, "the firing running", func() bool {
		return raw.QueryRow(`SELECT id FROM schedule_firings WHERE status = 'running' AND run_id IS NOT NULL`).Scan(&firingID) == nil
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	if code, _, stderr := runCLI(t, nil, "", "schedules", "edit", "--config", cfg, "--user", "ann@example.com", "--prompt", "quick job", sc.ID); code != 0 {
		t.Fatalf("schedules edit: %d %s", code, stderr)
	}
	var status, reason string
	if err := raw.QueryRow(`SELECT status, error FROM schedule_firings WHERE id = ?`, firingID).Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != "failed" || reason != schedule.ReasonDead {
		t.Errorf("the killed command's firing after the next command: %s %q; want failed with %q", status, reason, schedule.ReasonDead)
	}
	code, out, stderr = runCLI(t, nil, "", "schedules", "run", "--config", cfg, "--user", "ann@example.com", sc.ID)
	if code != 0 || !strings.Contains(out, `"status": "succeeded"`) {
		t.Errorf("schedules run after the killed one: %d %s %s; want it to run", code, out, stderr)
	}
}

// Ctrl-C on `relay chat` aborts its run as a user's abort does: the run is
// cancelled, its answer keeps all it printed, and the command exits 130.
func TestInterruptedChatCommandCancelsItsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds relay; skipped with -short")
	}
	bin, cfg, db := workerSetup(t, slowFixtures, "")
	chat, stdout, stderr := startCommand(t, bin, "chat", "--config", cfg, "--user", "ann@example.com", "--agent", "worker", "slow job")
	waitFor(t, 20*time.Second, "a few words printed", func() bool { return len(strings.Fields(stdout.String())) >= 3 })
	if err := chat.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := chat.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Errorf("relay chat after Ctrl-C: %v; want exit status 130\n%s", err, stderr.String())
	}
	raw := openRaw(t, db)
	var status, text string
	if err := raw.QueryRow(`SELECT r.status, m.text FROM runs r JOIN messages m ON m.id = r.response_message_id`).Scan(&status, &text); err != nil {
		t.Fatal(err)
	}
	printed := strings.TrimSpace(stdout.String())
	if status != "cancelled" || text == "" || !strings.HasPrefix(text, printed) {
		t.Errorf("the interrupted run: %s, answer %q; want cancelled, keeping all it printed (%q)", status, text, printed)
	}
	if !strings.Contains(stderr.String(), "interrupted; the answer so far is kept") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// workerSetup starts aimock with fixtures and returns the relay binary, a
// config whose agent "worker" it answers (listening on addr when it is not
// empty), and the path of its SQLite database, where the user
// ann@example.com exists.
func workerSetup(t *testing.T, fixtures, addr string) (bin, cfg, db string) {
	t.Helper()
	mock := llmtest.StartAimock(t, fixtures) // skips without the peer: check it before building
	bin = buildRelay(t)
	dir := t.TempDir()
	listen := ""
	if addr != "" {
		listen = "\n  addr: " + addr
	}
	cfg = writeConfig(t, dir, fmt.Sprintf(`server:%s
  data_dir: %s
  log_level: warn
endpoints:
  custom:
    - name: mock
      baseURL: %s/v1
agents:
  - {id: worker, provider: mock, model: m}
`, listen, filepath.Join(dir, "data"), mock))
	if code, _, stderr := runCLI(t, nil, "", "users", "add", "--config", cfg, "--email", "ann@example.com"); code != 0 {
		t.Fatalf("users add: %s", stderr)
	}
	return bin, cfg, filepath.Join(dir, "data", "relay.db")
}

// startCommand starts the relay binary with args in a process group of its
// own, killed if the test's process dies, and returns it with its output.
func startCommand(t *testing.T, bin string, args ...string) (*exec.Cmd, *syncBuffer, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, stderr := &syncBuffer{}, &syncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdout, stderr
}

// openRaw opens the SQLite database at path for the test to look into.
func openRaw(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}
