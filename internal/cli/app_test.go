package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/poll"
	"github.com/relay-ai/relay/internal/store/postgres/pgtest"
)

// syncBuffer is a bytes.Buffer safe for a server goroutine and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testEnv is a hermetic environment: only the variables given.
func testEnv(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// run runs a command to completion and returns its exit code and output.
func runCLI(t *testing.T, vars map[string]string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	noteVarSecrets(t, vars)
	var out, errb syncBuffer
	code := Main(context.Background(), args, IO{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, Getenv: testEnv(vars)})
	keepLog(t, errb.String())
	return code, out.String(), errb.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// writeConfig writes a config file into dir and returns its path.
func writeConfig(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "relay.yaml")
	noteConfigSecrets(t, body)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// server is a `relay serve` running in this process.
type server struct {
	base   string
	cancel context.CancelFunc
	done   chan int
	stderr *syncBuffer
}

func startServer(t *testing.T, cfgPath string, vars map[string]string) *server {
	t.Helper()
	in := IO{}
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{base: "http://" + addr, cancel: cancel, done: make(chan int, 1), stderr: &syncBuffer{}}
	noteVarSecrets(t, vars)
	t.Cleanup(func() { keepLog(t, s.stderr.String()) }) // runs after the stop below
	go func() {
		in.Stdin, in.Stdout, in.Stderr, in.Getenv = strings.NewReader(""), io.Discard, s.stderr, testEnv(vars)
		s.done <- Main(ctx, []string{"serve", "--config", cfgPath, "--addr", addr}, in)
	}()
	waitFor(t, 30*time.Second, "relay serve ready", func() bool {
		select {
		case code := <-s.done:
			t.Fatalf("relay serve exited with %d before it was ready:\n%s", code, s.stderr)
		default:
		}
		return answersReady(s.base)
	})
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the server (as SIGTERM would) and returns its exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	select {
	case code, ok := <-s.done:
		if ok {
			close(s.done)
			return code
		}
		return 0
	case <-time.After(30 * time.Second):
		t.Fatalf("relay serve did not stop:\n%s", s.stderr)
	}
	return -1
}

func (s *server) call(t *testing.T, key, method, path, body string, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, s.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

const testKey = "rk-TESTtestTESTtestTESTtestTESTtestTESTtest"

const agentBody = `{"name":"Expert","description":"d","instructions":"Today is {{current_date}}.","provider":"openAI","model":"gpt-4",
 "model_parameters":{"temperature":0.3},"tools":["file_search","echo__mcp__everything"],"artifacts":"default",
 "tool_resources":{"file_search":{"file_ids":["f1"]}},"edges":[{"from":"x","to":["y","z"],"edgeType":"direct","prompt":"{results}"}],
 "agent_ids":["y"],"chain_type":"convo","hide_sequential_outputs":true,"recursion_limit":10,"conversation_starters":["hi"],"shared":false}`

// roundTrip: create an agent with the bootstrap key, read it back,
// restart, and read it again.
func roundTrip(t *testing.T, cfg string) {
	dir := t.TempDir()
	// The agent's MCP tool is of a configured server, down now: it is accepted.
	cfg += fmt.Sprintf("mcpServers:\n  everything:\n    type: streamable-http\n    url: http://%s/mcp\n    startup: false\n    initTimeout: 500\n", freeAddr(t))
	cfgPath := writeConfig(t, dir, cfg)
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	s := startServer(t, cfgPath, vars)
	var created, got map[string]any
	if code := s.call(t, testKey, "POST", "/api/agents", agentBody, &created); code != 201 {
		t.Fatalf("create: %d %v", code, created)
	}
	id := created["id"].(string)
	if code := s.call(t, testKey, "GET", "/api/agents/"+id, "", &got); code != 200 {
		t.Fatalf("get: %d", code)
	}
	var sent map[string]any
	_ = json.Unmarshal([]byte(agentBody), &sent)
	for k, v := range sent {
		if fmt.Sprint(got[k]) != fmt.Sprint(v) {
			t.Errorf("%s: got %v, sent %v", k, got[k], v)
		}
	}
	if code := s.stop(t); code != 0 {
		t.Fatalf("stop: exit %d:\n%s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "stopped") {
		t.Errorf("no clean stop in the log:\n%s", s.stderr)
	}

	s2 := startServer(t, cfgPath, vars)
	var again map[string]any
	if code := s2.call(t, testKey, "GET", "/api/agents/"+id, "", &again); code != 200 {
		t.Fatalf("get after restart: %d", code)
	}
	if fmt.Sprint(again) != fmt.Sprint(got) {
		t.Errorf("after restart:\n%v\nbefore:\n%v", again, got)
	}
}

func TestServeRoundTripSQLite(t *testing.T) {
	roundTrip(t, "server:\n  data_dir: "+filepath.Join(t.TempDir(), "data")+"\n")
}

func TestServeRoundTripPostgres(t *testing.T) {
	pg := os.Getenv("TEST_POSTGRES_URL")
	if pg == "" {
		t.Skip("TEST_POSTGRES_URL is not set: skipping the Postgres round trip")
	}
	roundTrip(t, fmt.Sprintf("database:\n  url: %q\n", schemaURL(t, pg)))
}

func TestServeConfigAgentsAndIgnoredKeys(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, `
server:
  data_dir: `+filepath.Join(dir, "data")+`
interface:
  privacyPolicy: {externalUrl: "https://example.com"}
registration:
  socialLogins: [github]
endpoints:
  custom:
    - name: ollama
      baseURL: ${OLLAMA_BASE_URL}
      apiKey: ollama
      models: {default: [llama3.1]}
      fetchTimeout: 5
langfuse:
  publicKey: pk-lf-1
agents:
  - id: regulations
    name: Regulations
    provider: ollama
    model: llama3.1
`)
	// ${OLLAMA_BASE_URL} comes from the .env beside the config.
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("# LibreChat's\nOLLAMA_BASE_URL=\"http://127.0.0.1:11434/v1\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey}
	s := startServer(t, cfgPath, vars)
	var a map[string]any
	if code := s.call(t, testKey, "GET", "/api/agents/regulations", "", &a); code != 200 || a["managed"] != true || a["version"] != float64(1) {
		t.Fatalf("config agent: %d %v", code, a)
	}
	var e map[string]map[string]any
	if code := s.call(t, testKey, "PATCH", "/api/agents/regulations", `{"name":"x"}`, &e); code != 409 {
		t.Errorf("patching a config agent: %d %v", code, e)
	}
	log := s.stderr.String()
	if strings.Count(log, "ignoring LibreChat keys") != 1 || !strings.Contains(log, `keys="interface, langfuse, registration"`) {
		t.Errorf("ignored keys not logged once:\n%s", log)
	}
	for _, w := range []string{`msg="config loaded" file=` + cfgPath + " from=--config", `msg="config: variables read" file=` + filepath.Join(dir, ".env")} {
		if !strings.Contains(log, w) {
			t.Errorf("the log lacks %q:\n%s", w, log)
		}
	}
	// Keys Relay does not know are warnings with their position, not a
	// failed start; langfuse, a LibreChat key, is not one of them.
	if w := `relay.yaml:14:7: unknown key \"fetchTimeout\" in endpoints.custom[0]`; !strings.Contains(log, w) {
		t.Errorf("the log lacks %s:\n%s", w, log)
	}
	if strings.Contains(log, `unknown key \"langfuse\"`) {
		t.Errorf("langfuse logged as an unknown key:\n%s", log)
	}
	if strings.Contains(log, testKey) {
		t.Errorf("the log holds the bootstrap key:\n%s", log)
	}
	s.stop(t)

	// A changed config agent gets a new version at the next start.
	writeConfig(t, dir, strings.Replace(mustRead(t, cfgPath), "name: Regulations", "name: Regulations v2", 1))
	s = startServer(t, cfgPath, vars)
	s.call(t, testKey, "GET", "/api/agents/regulations", "", &a)
	if a["name"] != "Regulations v2" || a["version"] != float64(2) {
		t.Errorf("after a config change: %v", a)
	}
}

func TestServeGracefulShutdownFinishesInFlightRequests(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n")
	s := startServer(t, cfgPath, map[string]string{"RELAY_BOOTSTRAP_API_KEY": testKey})
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("POST", s.base+"/api/agents", pr)
	req.Header.Set("Authorization", "Bearer "+testKey)
	// The body waits for the server's 100 Continue, which it sends when the
	// handler first reads the body.
	req.Header.Set("Expect", "100-continue")
	client := &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}
	defer client.CloseIdleConnections()
	type result struct {
		code int
		err  error
	}
	res := make(chan result, 1)
	go func() {
		resp, err := client.Do(req)
		if err != nil {
			res <- result{err: err}
			return
		}
		resp.Body.Close()
		res <- result{code: resp.StatusCode}
	}()
	// A write to the pipe returns once the client has taken it to send, after
	// 100 Continue: the request is being handled, and waits for the rest.
	if _, err := pw.Write([]byte(`{"provider":"openAI",`)); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan int, 1)
	go func() { stopped <- s.stop(t) }()
	// Shutdown has begun once the server no longer answers as ready; it waits
	// for the request.
	waitFor(t, 10*time.Second, "shutdown begun", func() bool { return !answersReady(s.base) })
	if _, err := pw.Write([]byte(`"model":"m"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-res
	if r.err != nil || r.code != 201 {
		t.Fatalf("in-flight request: %d %v", r.code, r.err)
	}
	if code := <-stopped; code != 0 {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}
}

func TestServeBadStarts(t *testing.T) {
	dir := t.TempDir()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, bytes.Repeat([]byte("not a database "), 512), 0o600); err != nil {
		t.Fatal(err)
	}
	closed := freeAddr(t)
	tests := []struct {
		name, config string
		args         []string
		vars         map[string]string
		want         []string
	}{
		{"port in use", "server:\n  addr: " + busy.Addr().String() + "\n  data_dir: " + filepath.Join(dir, "d1"), nil, nil, []string{"address already in use"}},
		{"corrupt sqlite file", "database:\n  url: " + corrupt, nil, nil, []string{corrupt, "not a"}},
		{"sqlite path is a directory", "database:\n  url: " + dir, nil, nil, []string{dir}},
		{"postgres down", "database:\n  url: postgres://relay:s3cretpw@" + closed + "/relay\n  connect_timeout: 1s", nil, nil, []string{closed}},
		{"bad database url", "database:\n  url: mysql://x/y", nil, nil, []string{"database.url", "mysql"}},
		{"malformed yaml", "server:\n  addr: [unclosed\n", nil, nil, []string{"relay.yaml:"}},
		{"wrong type for a known key", "server:\n  adress: x\n  shutdown_timeout: soon\n", nil, nil, []string{"relay.yaml:3:21", "server.shutdown_timeout"}},
		{"bad bootstrap key", "server:\n  data_dir: " + filepath.Join(dir, "d2"), nil, map[string]string{"RELAY_BOOTSTRAP_API_KEY": "rk-short"}, []string{"RELAY_BOOTSTRAP_API_KEY"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfgPath := writeConfig(t, t.TempDir(), tc.config)
			start := time.Now()
			args := []string{"serve", "--config", cfgPath}
			if tc.name != "port in use" { // that case takes its address from the config
				args = append(args, "--addr", freeAddr(t))
			}
			code, _, stderr := runCLI(t, tc.vars, "", append(args, tc.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "s3cretpw") || strings.Contains(stderr, "panic") {
				t.Errorf("stderr leaks a secret or panics:\n%s", stderr)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %s to fail", d)
			}
		})
	}
}

// A relay.yaml that is a directory is named, with the reason.
func TestConfigCheckDirectory(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("relay.yaml", 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, nil, "", "config", "check"); code == 0 || !strings.Contains(stderr, "relay config check: reading config file relay.yaml: is a directory") {
		t.Errorf("config check with relay.yaml a directory: %d\n%s", code, stderr)
	}
}

func TestCLI(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\nendpoints:\n  custom:\n    - name: ollama\n      baseURL: http://127.0.0.1:11434/v1\n      apiKey: sk-verysecretvalue\n")
	code, out, stderr := runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "Ann@Example.com", "--name", "Ann", "--role", "admin")
	if code != 0 || !strings.HasPrefix(out, "user_") {
		t.Fatalf("users add: %d %q %q", code, out, stderr)
	}
	if code, _, stderr = runCLI(t, nil, "", "users", "add", "--config", cfgPath, "--email", "ann@example.com"); code != 1 || !strings.Contains(stderr, "ann@example.com") {
		t.Errorf("duplicate user: %d %q", code, stderr)
	}
	if code, _, stderr = runCLI(t, nil, "", "users", "add", "--config", cfgPath); code != 2 || !strings.Contains(stderr, "--email is required") {
		t.Errorf("missing email: %d %q", code, stderr)
	}
	code, _, _ = runCLI(t, nil, "secret-password\n", "users", "add", "--config", cfgPath, "--email", "bob@example.com", "--password-stdin")
	if code != 0 {
		t.Fatalf("users add with password: %d", code)
	}
	code, out, _ = runCLI(t, nil, "", "users", "list", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "ann@example.com") || !strings.Contains(out, "bob@example.com") {
		t.Errorf("users list: %d %q", code, out)
	}
	code, key, _ := runCLI(t, nil, "", "keys", "create", "--config", cfgPath, "--user", "ann@example.com", "--name", "laptop")
	key = strings.TrimSpace(key)
	if code != 0 || !strings.HasPrefix(key, "rk-") || len(key) != 43 {
		t.Fatalf("keys create: %d %q", code, key)
	}

	s := startServer(t, cfgPath, nil)
	if code := s.call(t, key, "POST", "/api/agents", `{"id":"helper","provider":"ollama","model":"llama3"}`, nil); code != 201 {
		t.Fatalf("create with the CLI's key: %d", code)
	}
	var ks []map[string]any
	code, out, _ = runCLI(t, nil, "", "keys", "list", "--config", cfgPath, "--user", "ann@example.com", "--json")
	if err := json.Unmarshal([]byte(out), &ks); err != nil || code != 0 || len(ks) != 1 || ks[0]["last_used_at"] == nil {
		t.Fatalf("keys list: %d %q %v", code, out, err)
	}
	if strings.Contains(out, key) {
		t.Errorf("keys list prints the key")
	}
	if code, _, stderr = runCLI(t, nil, "", "keys", "revoke", "--config", cfgPath, ks[0]["id"].(string)); code != 0 {
		t.Fatalf("keys revoke: %d %s", code, stderr)
	}
	// The server is another process as far as the key cache goes: the key
	// stops working there within auth.KeyCacheTTL.
	poll.Until(t, auth.KeyCacheTTL+time.Second, "the revoked key refused", func() bool {
		return s.call(t, key, "GET", "/api/agents", "", nil) == 401
	})

	code, out, _ = runCLI(t, nil, "", "agents", "list", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "helper") || !strings.Contains(out, "ollama") {
		t.Errorf("agents list: %d %q", code, out)
	}
	var a map[string]any
	code, out, _ = runCLI(t, nil, "", "agents", "show", "--config", cfgPath, "helper")
	if err := json.Unmarshal([]byte(out), &a); err != nil || code != 0 || a["id"] != "helper" {
		t.Errorf("agents show: %d %q", code, out)
	}
	if code, _, stderr = runCLI(t, nil, "", "agents", "show", "--config", cfgPath, "nope"); code != 1 || !strings.Contains(stderr, `"nope" not found`) {
		t.Errorf("agents show missing: %d %q", code, stderr)
	}

	code, out, stderr = runCLI(t, nil, "", "config", "check", "--config", cfgPath)
	if code != 0 || !strings.Contains(out, "ollama") || strings.Contains(out, "sk-verysecretvalue") {
		t.Errorf("config check: %d\n%s\n%s", code, out, stderr)
	}

	// --env-file names the config through CONFIG_PATH.
	envFile := filepath.Join(t.TempDir(), "prod.env")
	if err := os.WriteFile(envFile, []byte("CONFIG_PATH="+cfgPath+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--env-file", envFile); code != 0 || !strings.Contains(stderr, "config OK: "+cfgPath) {
		t.Errorf("config check --env-file: %d\n%s", code, stderr)
	}
	// A file that cannot be read is named, with the reason.
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--env-file", envFile+".missing"); code == 0 ||
		!strings.Contains(stderr, "reading the --env-file "+envFile+".missing: no such file or directory") {
		t.Errorf("config check with a missing --env-file: %d\n%s", code, stderr)
	}

	// Unknown keys: warnings with their position, errors with --strict.
	unknownPath := writeConfig(t, t.TempDir(), "server:\n  adress: x\npermissions:\n  agents: {use: true}\n")
	code, _, stderr = runCLI(t, nil, "", "config", "check", "--config", unknownPath)
	for _, w := range []string{`warning: ` + unknownPath + `:2:3: unknown key "adress" in server`, `warning: ` + unknownPath + `:3:1: unknown key "permissions" at top level`} {
		if code != 0 || !strings.Contains(stderr, w) {
			t.Errorf("config check with unknown keys: exit %d, want 0 and %q:\n%s", code, w, stderr)
		}
	}
	code, _, stderr = runCLI(t, nil, "", "config", "check", "--strict", "--config", unknownPath)
	for _, w := range []string{"--strict", unknownPath + `:2:3: unknown key "adress" in server`, unknownPath + `:3:1: unknown key "permissions"`} {
		if code != 1 || !strings.Contains(stderr, w) {
			t.Errorf("config check --strict: exit %d, want 1 and %q:\n%s", code, w, stderr)
		}
	}
	// With problems, the unknown keys are shown too: a misspelt key often explains one.
	misspelt := writeConfig(t, t.TempDir(), "endpoints:\n  custom:\n    - name: local\n      apiKey: x\n      baseUrl: http://127.0.0.1:1/v1\n      models: {default: [m]}\n")
	code, _, stderr = runCLI(t, nil, "", "config", "check", "--config", misspelt)
	if !strings.Contains(stderr, `warning: `+misspelt+`:5:7: unknown key "baseUrl"`) || !strings.Contains(stderr, "baseURL") || code != 1 ||
		strings.Index(stderr, "warning:") > strings.Index(stderr, "invalid config") {
		t.Errorf("config check with a misspelt key and the problem it makes: exit %d, want 1, the unknown key first and then the problem:\n%s", code, stderr)
	}
	newer := filepath.Join("..", "config", "testdata", "newer", "librechat.yaml")
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--config", newer); code != 0 || strings.Count(stderr, `: unknown key "`) != 5 ||
		!regexp.MustCompile(`(?m)^ignored LibreChat keys: .*\blangfuse, .*\bmemory\.maxInputTokens\b`).MatchString(stderr) {
		t.Errorf("config check of a newer librechat.yaml: exit %d, want 0, 5 unknown keys and langfuse among the ignored LibreChat keys:\n%s", code, stderr)
	}
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--strict", "--config", newer); code != 1 || strings.Count(stderr, `: unknown key "`) != 5 {
		t.Errorf("config check --strict of a newer librechat.yaml: exit %d, want 1 and 5 unknown keys:\n%s", code, stderr)
	}
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--strict", "--config", cfgPath); code != 0 {
		t.Errorf("config check --strict on a config without unknown keys: exit %d\n%s", code, stderr)
	}
	code, out, _ = runCLI(t, nil, "", "version")
	if code != 0 || !strings.HasPrefix(out, "relay ") {
		t.Errorf("version: %d %q", code, out)
	}
}

func TestHelp(t *testing.T) {
	code, out, _ := runCLI(t, nil, "", "help")
	if code != 0 {
		t.Fatalf("help: %d", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, c.name) {
			t.Errorf("help lacks %q", c.name)
		}
		code, out, _ := runCLI(t, nil, "", append(strings.Fields(c.name), "--help")...)
		if code != 0 || !strings.Contains(out, "Usage: relay "+c.name) {
			t.Errorf("%s --help: exit %d, %q", c.name, code, out)
		}
		code, hout, _ := runCLI(t, nil, "", append([]string{"help"}, strings.Fields(c.name)...)...)
		if code != 0 || !strings.Contains(hout, "--config") || !strings.Contains(hout, c.summary) {
			t.Errorf("help %s: %d %q", c.name, code, hout)
		}
	}
	if code, _, stderr := runCLI(t, nil, "", "frobnicate"); code != 2 || !strings.Contains(stderr, "unknown command") {
		t.Errorf("unknown command: %d %q", code, stderr)
	}
	// A group of commands lists its own; a flag a command does not have is
	// named with the command.
	if code, _, stderr := runCLI(t, nil, "", "agents"); code != 2 || !strings.Contains(stderr, "relay agents: say which: agents list, agents show") {
		t.Errorf("relay agents: %d %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, nil, "", "agents", "list", "--bogus"); code != 2 || !strings.HasPrefix(stderr, "relay agents list: flag provided but not defined: -bogus\n") {
		t.Errorf("relay agents list --bogus: %d %q", code, stderr)
	}
	// An empty list in JSON is [], not null.
	dir := t.TempDir()
	cfg := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n")
	if code, out, stderr := runCLI(t, nil, "", "agents", "list", "--json", "--config", cfg); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("relay agents list --json with no agent: %d %q %s", code, out, stderr)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// schemaURL returns a URL of a fresh schema in the test Postgres, dropped when t ends.
func schemaURL(t *testing.T, base string) string { return pgtest.Schema(t, base, "app_test") }

// A librechat.yaml whose titleEndpoint is an endpoint Relay does not have
// (bedrock) passes `config check` with a warning at its position; --strict
// refuses it, as it does any value Relay does not have.
func TestConfigCheckTitleEndpointOfLibreChat(t *testing.T) {
	cfgPath := writeConfig(t, t.TempDir(), "endpoints:\n  all:\n    titleConvo: true\n    titleEndpoint: bedrock\n")
	code, _, stderr := runCLI(t, nil, "", "config", "check", "--config", cfgPath)
	want := "warning: " + cfgPath + `:4:20: endpoints.all.titleEndpoint: "bedrock" is a LibreChat endpoint Relay does not have`
	if code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("config check: exit %d, want 0 and %q:\n%s", code, want, stderr)
	}
	if code, _, stderr = runCLI(t, nil, "", "config", "check", "--strict", "--config", cfgPath); code != 1 || !strings.Contains(stderr, "titleEndpoint") {
		t.Errorf("config check --strict: exit %d, want 1:\n%s", code, stderr)
	}
}
