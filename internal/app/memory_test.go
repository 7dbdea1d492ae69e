package app

import (
	"log/slog"
	"runtime/debug"
	"testing"

	"github.com/relay-ai/relay/internal/config"
)

func TestTuneMemory(t *testing.T) {
	limit, percent := debug.SetMemoryLimit(-1), gcPercent()
	t.Cleanup(func() { debug.SetMemoryLimit(limit); debug.SetGCPercent(percent) })
	log := slog.New(slog.DiscardHandler)
	unset := func(string) (string, bool) { return "", false }

	TuneMemory(config.Server{MemoryLimitMB: 300, GCPercent: 250}, unset, log)
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Errorf("memory limit = %d, want %d", got, 300<<20)
	}
	if got := gcPercent(); got != 250 {
		t.Errorf("gc percent = %d, want 250", got)
	}

	// GOMEMLIMIT and GOGC set in the environment win over the config.
	set := func(string) (string, bool) { return "x", true }
	TuneMemory(config.Server{MemoryLimitMB: 100, GCPercent: 50}, set, log)
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Errorf("with GOMEMLIMIT set, memory limit = %d, want it left at %d", got, 300<<20)
	}
	if got := gcPercent(); got != 250 {
		t.Errorf("with GOGC set, gc percent = %d, want it left at 250", got)
	}
}
