package llmtest

import (
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// StartAimock runs the aimock peer, a fake LLM server of several providers'
// APIs, with fixtures (the JSON of its fixtures file) on a free port, and
// returns its base URL. The server is killed when the test ends. The test is
// skipped when PEER_AIMOCK, the path of aimock's entry point, is not set.
func StartAimock(t testing.TB, fixtures string) string {
	t.Helper()
	bin := os.Getenv("PEER_AIMOCK")
	if bin == "" {
		t.Skip(`PEER_AIMOCK is not set; run eval "$(bash ../shared/peers/install.sh)" to test against the aimock peer`)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fixtures.json"), []byte(fixtures), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()

	cmd := exec.Command("node", bin, "--port", port, "--host", "127.0.0.1", "--fixtures", dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuilder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("aimock output:\n%s", out.String())
		}
	})

	base := "http://127.0.0.1:" + port
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		select {
		case <-exited:
			t.Fatalf("aimock exited:\n%s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("aimock did not start: %v\n%s", err, out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockedBuilder collects a process's output, which it writes while the test
// may read it.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
