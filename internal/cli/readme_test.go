package cli

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/llm/llmtest"
	"github.com/relay-ai/relay/internal/mcp/mcptest"
)

// readmeCommands returns the command lines of README.md's command table: the
// `relay …` spans of each row's first column, as written (`\|` read as `|`).
func readmeCommands(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	span := regexp.MustCompile("`(relay [^`]*)`")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(line, "| `relay ") {
			continue
		}
		first, _, _ := strings.Cut(strings.TrimPrefix(line, "| "), " | ")
		for _, m := range span.FindAllStringSubmatch(first, -1) {
			out = append(out, strings.ReplaceAll(m[1], `\|`, "|"))
		}
	}
	return out
}

// commandLine turns a README synopsis into the arguments that run it, in the
// order it is written, every optional part given: a placeholder is replaced by
// values[previous word + " " + placeholder], else values[placeholder]; a
// choice (a|b) takes its last option; brackets, parentheses and "..." go. The
// second result lists the placeholders that have no value.
func commandLine(synopsis string, values map[string]string) ([]string, []string) {
	clean := strings.NewReplacer("[:", ":", "[", " ", "]", " ", "(", " ", ")", " ", "...", "").Replace(synopsis)
	words := strings.Fields(clean)[1:] // without "relay"
	var args, missing []string
	prev := ""
	for _, w := range words {
		switch {
		case strings.HasPrefix(w, "-"), w == strings.ToLower(w) && !strings.Contains(w, "|"):
			args = append(args, w) // a flag or a command word
		default:
			if v, ok := values[prev+" "+w]; ok {
				args = append(args, v)
			} else if v, ok := values[w]; ok {
				args = append(args, v)
			} else if opts := strings.Split(w, "|"); len(opts) > 1 && w == strings.ToLower(w) {
				args = append(args, opts[len(opts)-1])
			} else {
				missing = append(missing, prev+" "+w)
			}
		}
		prev = w
	}
	return args, missing
}

// Every command line of the README's command table runs as written there,
// flags after positional arguments, with real ids, and exits as documented.
func TestReadmeCommandLinesRunAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command; skipped with -short")
	}
	mock := llmtest.StartAimock(t, `{"fixtures":[{"match":{"userMessage":""},"response":{"content":"Done."}}]}`)
	ws := mcptest.Start(t, "websocket", mcptest.Options{})
	dir := t.TempDir()
	addr := freeAddr(t)
	cfg := writeConfig(t, dir, fmt.Sprintf(`server:
  addr: %s
  data_dir: %s
  log_level: warn
endpoints:
  custom:
    - name: mock
      apiKey: sk-test
      baseURL: %s/v1
mcpServers:
  gows:
    url: %s
agents:
  - {id: worker, provider: mock, model: m, shared: true}
`, addr, filepath.Join(dir, "data"), mock, ws))
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	run := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, vars, stdin, append(args[:len(args):len(args)], "--config", cfg)...)
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		code, out, errOut := run(stdin, args...)
		if code != 0 {
			t.Fatalf("relay %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	jsonField := func(out, field string) string {
		var list []map[string]any
		if err := json.Unmarshal([]byte(out), &list); err != nil || len(list) == 0 {
			t.Fatalf("reading %s from %q: %v", field, out, err)
		}
		s, _ := list[0][field].(string)
		return s
	}
	// The ids the command lines name: a user, a key, a conversation and its
	// answer, files, a schedule, made with the commands themselves.
	must("", "users", "add", "--email", "admin@relay.local", "--role", "admin") // the bootstrap admin, whom commands act as by default
	annID := strings.TrimSpace(must("", "users", "add", "--email", "ann@example.com", "--name", "Ann"))
	must("", "keys", "create", "--user", "ann@example.com", "--name", "spare")
	keyID := jsonField(must("", "keys", "list", "--user", "ann@example.com", "--json"), "id")
	must("", "chat", "--agent", "worker", "--user", "ann@example.com", "Hello")
	must("", "chat", "--agent", "worker", "--user", "ann@example.com", "Hello")
	convID := jsonField(must("", "conversations", "list", "--user", annID, "--json"), "id")
	// Two conversations: a page of one names the cursor of the other.
	_, _, errOut := run("", "conversations", "list", "--user", annID, "--limit", "1")
	_, cursor, ok := strings.Cut(strings.TrimSpace(errOut), "older conversations: --cursor ")
	if !ok || cursor == "" {
		t.Fatalf("relay conversations list --limit 1 of two conversations printed no cursor: %q", errOut)
	}
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte("Relay keeps notes.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	must("", "files", "add", notes, "--wait")
	must("", "files", "add", notes, "--user", "ann@example.com", "--wait")
	fileID := jsonField(must("", "files", "list", "--json"), "id")
	annFile := jsonField(must("", "files", "list", "--user", "ann@example.com", "--json"), "id")
	t.Logf("user %s, key %s, conversation %s, file %s", annID, keyID, convID, fileID)

	values := map[string]string{
		"--addr ADDR":        addr,
		"--email E":          "bob@example.com",
		"--name N":           "Bob",
		"--name LABEL":       "laptop",
		"--user ID|EMAIL":    "ann@example.com",
		"ID|EMAIL":           "ann@example.com",
		"--user ID":          annID,
		"revoke KEY_ID":      keyID,
		"AGENT_ID":           "worker",
		"--agent ID":         "worker",
		"--message TEXT":     "What is new?",
		"--conversation ID":  convID,
		"--parent MSG_ID":    "", // filled below
		"--file FILE_ID":     annFile,
		"--attach NAME:MIME": "report.pdf:application/pdf",
		"--user-name NAME":   "Ann",
		"--now RFC3339":      "2026-01-02T03:04:05Z",
		"--timezone IANA":    "Europe/Amsterdam",
		"MESSAGE":            "Thanks",
		"add PATH":           notes,
		"rm ID":              fileID, // the admin's, whom `relay files` acts as by default
		"--limit N":          "10",
		"--cursor C":         cursor,
		"--title TEXT":       "hello",
		"rename ID":          convID,
		"TITLE":              "Release notes",
		"--since DATE":       "2020-01-01",
		"-o FILE":            filepath.Join(dir, "ragas.jsonl"),
		"SERVER":             "gows",
		"call TOOLKEY":       "echo__mcp__gows",
		"--args JSON":        `{"message":"hi"}`,
	}
	// The parent is the conversation's first message.
	raw, err := sql.Open("sqlite", filepath.Join(dir, "data", "relay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var parent string
	if err := raw.QueryRow(`SELECT id FROM messages WHERE conversation_id = ? ORDER BY created_at, id LIMIT 1`, convID).Scan(&parent); err != nil {
		t.Fatal(err)
	}
	values["--parent MSG_ID"] = parent

	commands := readmeCommands(t)
	if len(commands) < 20 {
		t.Fatalf("found %d command lines in README.md's table; the table moved?", len(commands))
	}
	for _, synopsis := range commands {
		t.Run(synopsis, func(t *testing.T) {
			switch {
			case synopsis == "relay serve [--addr ADDR]":
				testServeAsDocumented(t, cfg, vars, addr)
				return
			case synopsis == "relay healthcheck [--url URL]":
				s := startServer(t, cfg, vars)
				code, out, errOut := run("", "healthcheck", "--url", s.base+"/readyz")
				if code != 0 {
					t.Errorf("relay healthcheck: exit %d\n%s%s", code, out, errOut)
				}
				return
			case strings.HasPrefix(synopsis, "relay endpoints "):
				// They need an endpoint that says user_provided and a store of
				// per-user secrets: TestEndpointsKeyCommand runs them.
				return
			case strings.HasPrefix(synopsis, "relay mcp vars "):
				// The documented server has no customUserVars: its variables are
				// listed (none); TestMCPUserVarsCommand sets and clears some.
				if code, out, errOut := run("", "mcp", "vars", "gows", "--user", "ann@example.com"); code != 0 {
					t.Errorf("relay mcp vars: exit %d\n%s%s", code, out, errOut)
				}
				return
			case strings.HasPrefix(synopsis, "relay runs answer "):
				// It needs a run that waits for an answer:
				// TestElicitationAnsweredFromTheCommandLine runs it.
				return
			case strings.HasPrefix(synopsis, "relay schedules "):
				testSchedulesAsDocumented(t, run)
				return
			}
			args, missing := commandLine(synopsis, values)
			if len(missing) > 0 {
				t.Fatalf("no value for %q in %q", missing, synopsis)
			}
			stdin := ""
			if slicesContains(args, "--password-stdin") {
				stdin = "correct horse battery staple\n"
			}
			code, out, errOut := run(stdin, args...)
			if code != 0 {
				t.Errorf("relay %s: exit %d, want 0\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, errOut)
			}
		})
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// testServeAsDocumented runs `relay serve --addr ADDR`: it serves on ADDR until
// stopped, then exits 0.
func testServeAsDocumented(t *testing.T, cfg string, vars map[string]string, addr string) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr syncBuffer
	noteVarSecrets(t, vars)
	t.Cleanup(func() { keepLog(t, stderr.String()) })
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", addr, "--config", cfg}, IO{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: &stderr, Getenv: testEnv(vars)})
	}()
	waitFor(t, 30*time.Second, "relay serve ready on "+addr, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("relay serve exit %d, want 0", code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("relay serve did not stop")
	}
}

// testSchedulesAsDocumented runs each schedules subcommand as the README's
// row writes it: add with its flags, then edit, run and runs with the id
// before their flags, and rm.
func testSchedulesAsDocumented(t *testing.T, run func(string, ...string) (int, string, string)) {
	must := func(args ...string) string {
		t.Helper()
		code, out, errOut := run("", args...)
		if code != 0 {
			t.Fatalf("relay %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out
	}
	out := must("schedules", "add", "--agent", "worker", "--name", "Morning", "--prompt", "Summarise the news",
		"--cron", "0 7 * * MON-FRI", "--timezone", "Europe/Amsterdam")
	id := regexp.MustCompile(`sched_[A-Za-z0-9_-]+`).FindString(out)
	if id == "" {
		t.Fatalf("schedules add printed no id: %q", out)
	}
	must("schedules", "add", "--agent", "worker", "--name", "Once", "--prompt", "Remind me",
		"--run-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "--notify-url", "https://example.com/hook")
	must("schedules", "list")
	must("schedules", "edit", id, "--name", "Weekday morning", "--prompt", "Summarise", "--cron", "30 7 * * MON-FRI", "--timezone", "UTC")
	must("schedules", "run", id)
	must("schedules", "runs", id)
	must("schedules", "rm", id)
}
