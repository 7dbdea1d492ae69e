package mcptest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Peer returns the value of a peer variable (see shared/peers), skipping the test
// with a clear message when it is not set.
func Peer(t testing.TB, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: run `eval \"$(../shared/peers/install.sh)\"` to run this test against the real peer", name)
	}
	return v
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Process is a peer program started by StartProcess.
type Process struct {
	Cmd  *exec.Cmd
	Port int
}

// Stop kills the process and everything it started.
func (p *Process) Stop() {
	if p.Cmd.Process != nil {
		_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		_ = p.Cmd.Wait()
	}
}

// StartProcess runs argv in its own process group with extra environment
// variables, waits (up to 20 s) until port accepts connections on 127.0.0.1, and
// stops it when the test ends. Its output goes to the test log on failure.
func StartProcess(t testing.TB, port int, env []string, argv ...string) *Process {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out := &lockedWriter{b: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", strings.Join(argv, " "), err)
	}
	p := &Process{Cmd: cmd, Port: port}
	t.Cleanup(p.Stop)
	if err := WaitPort(port, 20*time.Second); err != nil {
		p.Stop()
		t.Fatalf("%s: %v; output:\n%s", strings.Join(argv, " "), err, out.String())
	}
	return p
}

// WaitPort waits until 127.0.0.1:port accepts a TCP connection.
func WaitPort(port int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on port %d after %s", port, within)
}

// lockedWriter lets a process's stdout and stderr share one buffer.
type lockedWriter struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
