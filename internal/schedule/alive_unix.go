//go:build unix

package schedule

import (
	"errors"
	"os"
	"syscall"
)

// hostName names this host for telling whether a node's process is alive:
// its host name and, on Linux, its PID namespace, since a pid means the same
// process only within one namespace (two containers may share a host name
// and not their pids).
func hostName() string {
	h, _ := os.Hostname()
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil {
		h += " " + ns
	}
	return h
}

// processAlive reports whether a process with that pid exists on this host.
// Signal 0 checks without signalling; EPERM means it exists but is another
// user's.
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
