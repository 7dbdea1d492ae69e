package arch

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// What relay serve writes at run time never belongs in the repository:
// `go run ./cmd/relay serve` in a checkout (README.md) keeps its database and
// its secrets key file in ./data (docs/config.md "server", "secrets"), and a
// committed key would seal every checkout's per-user secrets with a key that
// everyone who has the repository knows.
func TestNoRuntimeStateIsTracked(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git on PATH: the tracked files cannot be listed")
	}
	out, err := exec.Command(git, "-C", "../..", "ls-files", "-z").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Skipf("not a git checkout: %s", strings.TrimSpace(string(exit.Stderr)))
		}
		t.Fatalf("git ls-files: %v", err)
	}
	for _, path := range strings.Split(string(out), "\x00") {
		name := path[strings.LastIndex(path, "/")+1:]
		switch {
		case strings.HasPrefix(path, "data/"),
			name == "secret.key",
			strings.HasSuffix(name, ".db"), strings.HasSuffix(name, ".db-wal"), strings.HasSuffix(name, ".db-shm"):
			t.Errorf("%s is tracked: it is what relay serve writes at run time (a database or the secrets key file), not source", path)
		}
	}
}
