package cli

import (
	"bufio"
	"debug/elf"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/relay-ai/relay/internal/app"
)

func TestVersionCommand(t *testing.T) {
	old := [3]string{app.Version, app.Commit, app.Date}
	t.Cleanup(func() { app.Version, app.Commit, app.Date = old[0], old[1], old[2] })
	app.Version, app.Commit, app.Date = "v9.8.7", "abcdef0", "2026-05-06T07:08:09Z"
	want := fmt.Sprintf("relay v9.8.7 (commit abcdef0, built 2026-05-06T07:08:09Z, %s %s/%s)\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, out, stderr := runCLI(t, nil, "", args...)
		if code != 0 || out != want {
			t.Errorf("relay %s: exit %d, %q (stderr %q), want %q", args[0], code, out, stderr, want)
		}
	}
}

func TestHealthcheck(t *testing.T) {
	dir := t.TempDir()
	cfgPath := writeConfig(t, dir, "server:\n  data_dir: "+filepath.Join(dir, "data")+"\n")
	s := startServer(t, cfgPath, nil)

	code, out, stderr := runCLI(t, nil, "", "healthcheck", "--url", s.base+"/readyz")
	if code != 0 || out != "ready\n" {
		t.Errorf("healthcheck --url: exit %d, %q %q", code, out, stderr)
	}
	// Without --url it asks server.addr; a wildcard host is asked on 127.0.0.1.
	port := s.base[strings.LastIndex(s.base, ":")+1:]
	for _, addr := range []string{":" + port, "0.0.0.0:" + port, "127.0.0.1:" + port} {
		other := writeConfig(t, t.TempDir(), "server:\n  addr: \""+addr+"\"\n  data_dir: "+filepath.Join(dir, "data")+"\n")
		if code, out, stderr := runCLI(t, nil, "", "healthcheck", "--config", other); code != 0 {
			t.Errorf("healthcheck, server.addr %s: exit %d, %q %q", addr, code, out, stderr)
		}
	}

	// Not ready: a 503 (its reason shown), nothing listening.
	notReady := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "database: migrating", http.StatusServiceUnavailable)
	}))
	defer notReady.Close()
	code, _, stderr = runCLI(t, nil, "", "healthcheck", "--url", notReady.URL+"/readyz")
	if code != 1 || !strings.Contains(stderr, "503") || !strings.Contains(stderr, "database: migrating") {
		t.Errorf("healthcheck of a 503: exit %d, %q", code, stderr)
	}
	code, _, stderr = runCLI(t, nil, "", "healthcheck", "--url", "http://"+freeAddr(t)+"/readyz")
	if code != 1 || !strings.Contains(stderr, "not ready") {
		t.Errorf("healthcheck of nothing: exit %d, %q", code, stderr)
	}
	// A usage error exits 2, never 1 ("not ready").
	for _, args := range [][]string{{"--url", "localhost:3080/readyz"}, {"--url", "ftp://h/readyz"}, {"--url", "http:///readyz"},
		{"--timeout", "0s", "--url", s.base + "/readyz"}, {"--timeout", "-1s", "--url", s.base + "/readyz"}} {
		if code, _, stderr := runCLI(t, nil, "", append([]string{"healthcheck"}, args...)...); code != 2 || !strings.Contains(stderr, args[0]) {
			t.Errorf("healthcheck %q: exit %d, %q; want 2 naming %s", args, code, stderr, args[0])
		}
	}
	if code, _, _ := runCLI(t, nil, "", "healthcheck", "extra"); code != 2 {
		t.Errorf("healthcheck extra: exit %d, want 2", code)
	}
}

// dockerfile is the repository's Dockerfile: its instructions, continuation
// lines joined, comments dropped.
func dockerfile(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	cur := ""
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur == "") {
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cur += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, strings.Join(strings.Fields(cur+line), " "))
		cur = ""
	}
	return out
}

// instruction returns the arguments of the Dockerfile's instructions named name, after the last FROM.
func instructions(lines []string, name string) []string {
	var out []string
	for _, l := range lines {
		if strings.HasPrefix(l, "FROM ") {
			out = nil
		}
		if k, v, _ := strings.Cut(l, " "); strings.EqualFold(k, name) {
			out = append(out, v)
		}
	}
	return out
}

// TestContainerImage checks what can be checked of the image without a
// container runtime: the final stage's user, volume, environment, port and
// health check, the build stage's Go toolchain, and that the Dockerfile's
// build command yields a static binary that serves from its data directory
// alone and answers its own health check.
func TestContainerImage(t *testing.T) {
	lines := dockerfile(t)
	gomod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goVer := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(string(gomod))
	if goVer == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "golang:" + goVer[1] + " AS build"; !strings.Contains(lines[0], want) {
		t.Errorf("first stage %q does not build with %s", lines[0], want)
	}
	users := instructions(lines, "USER")
	if len(users) != 1 || users[0] == "0" || strings.HasPrefix(users[0], "0:") || strings.HasPrefix(users[0], "root") {
		t.Errorf("final stage USER %q, want one non-root user", users)
	}
	if got := instructions(lines, "VOLUME"); len(got) != 1 || got[0] != `["/data"]` {
		t.Errorf("VOLUME %q, want only /data", got)
	}
	env := strings.Join(instructions(lines, "ENV"), " ")
	for _, want := range []string{"RELAY_DATA_DIR=/data", "RELAY_ADDR=0.0.0.0:3080"} {
		if !strings.Contains(env, want) {
			t.Errorf("ENV %q lacks %s", env, want)
		}
	}
	if got := instructions(lines, "EXPOSE"); len(got) != 1 || got[0] != "3080" {
		t.Errorf("EXPOSE %q, want 3080", got)
	}
	if got := instructions(lines, "HEALTHCHECK"); len(got) != 1 || !strings.HasSuffix(got[0], `CMD ["/relay", "healthcheck"]`) {
		t.Errorf("HEALTHCHECK %q, want relay healthcheck", got)
	}
	if got := instructions(lines, "ENTRYPOINT"); len(got) != 1 || got[0] != `["/relay"]` {
		t.Errorf("ENTRYPOINT %q", got)
	}

	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	var build string
	for _, l := range lines {
		if strings.HasPrefix(l, "RUN ") && strings.Contains(l, " go build ") {
			build = strings.TrimPrefix(l, "RUN ")
		}
	}
	if !strings.HasPrefix(build, "CGO_ENABLED=0 ") || !strings.Contains(build, "-o /out/relay ") {
		t.Fatalf("the build command %q does not build /out/relay without cgo", build)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "relay")
	cmd := exec.Command("sh", "-c", strings.Replace(build, "-o /out/relay ", "-o "+bin+" ", 1))
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH,
		"VERSION=v0.0.0-image", "COMMIT=c0ffee1", "DATE=2026-01-02T03:04:05Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary has a dynamic interpreter; want a static binary")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v; want none", libs)
	}
	f.Close()

	out, err := exec.Command(bin, "--version").Output()
	if want := "relay v0.0.0-image (commit c0ffee1, built 2026-01-02T03:04:05Z,"; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("relay --version: %q %v, want %q…", out, err, want)
	}

	// Run as the image runs it: configured by the environment alone, from a
	// working directory it does not own, writing only to its data directory.
	work, data := filepath.Join(dir, "work"), filepath.Join(dir, "data")
	for _, d := range []string{work, data} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	imageEnv := []string{"RELAY_ADDR=" + freeAddr(t), "RELAY_DATA_DIR=" + data, "HOME=" + work}
	var serveErr syncBuffer
	serve := exec.Command(bin, "serve")
	serve.Dir, serve.Env, serve.Stderr = work, imageEnv, &serveErr
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- serve.Wait() }()
	defer func() {
		serve.Process.Signal(syscall.SIGTERM)
		if err := <-exited; err != nil {
			t.Errorf("relay serve: %v\n%s", err, serveErr.String())
		}
		if entries, _ := os.ReadDir(work); len(entries) > 0 {
			t.Errorf("relay serve wrote %v outside its data directory", entries)
		}
		if _, err := os.Stat(filepath.Join(data, "relay.db")); err != nil {
			t.Errorf("no database in the data directory: %v", err)
		}
	}()
	waitFor(t, 30*time.Second, "relay healthcheck exits 0", func() bool {
		hc := exec.Command(bin, "healthcheck")
		hc.Dir, hc.Env = work, imageEnv
		return hc.Run() == nil
	})
}

// TestComposeOnPostgres checks compose.yaml's services that run Relay on
// Postgres: there is no key file to fall back on there (docs/config.md
// "secrets"), so a service without RELAY_SECRETS_KEY could store no user's
// MCP variables, OAuth grants or endpoint keys.
func TestComposeOnPostgres(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	onPostgres := 0
	for name, svc := range compose.Services {
		if !strings.HasPrefix(svc.Environment["RELAY_DATABASE_URL"], "postgres://") {
			continue
		}
		onPostgres++
		for _, v := range []string{"RELAY_SECRETS_KEY", "RELAY_BOOTSTRAP_API_KEY"} {
			if !strings.Contains(svc.Environment[v], "${"+v) {
				t.Errorf("service %s runs on Postgres without %s from .env", name, v)
			}
		}
	}
	if onPostgres == 0 {
		t.Error("compose.yaml has no service with RELAY_DATABASE_URL postgres://…")
	}
}
