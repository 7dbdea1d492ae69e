//go:build unix

package schedule

import (
	"errors"
	"syscall"
)

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
