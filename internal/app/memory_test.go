package app

import (
	"log/slog"
	"runtime"
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

func TestTuneThreads(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.SetDefaultGOMAXPROCS() })
	log := slog.New(slog.DiscardHandler)
	unset := func(string) (string, bool) { return "", false }

	// 0, the default: a governor up to what the process had.
	g := TuneThreads(config.Server{}, unset, log)
	if g == nil || g.Max != procs {
		t.Fatalf("server.procs 0: governor %+v, want one with Max %d", g, procs)
	}
	// A number: that many, nothing to run.
	if g := TuneThreads(config.Server{Procs: 3}, unset, log); g != nil {
		t.Errorf("server.procs 3: governor %+v, want none", g)
	}
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("server.procs 3: GOMAXPROCS = %d", got)
	}
	// GOMAXPROCS set in the environment wins over the config.
	set := func(k string) (string, bool) { return "5", k == "GOMAXPROCS" }
	if g := TuneThreads(config.Server{Procs: 2}, set, log); g != nil {
		t.Errorf("with GOMAXPROCS set: governor %+v, want none", g)
	}
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Errorf("with GOMAXPROCS set, GOMAXPROCS = %d, want it left at 3", got)
	}
	// An empty or invalid one the runtime ignores, and so does Relay.
	for _, v := range []string{"", "0", "two"} {
		env := func(k string) (string, bool) { return v, k == "GOMAXPROCS" }
		if g := TuneThreads(config.Server{}, env, log); g == nil {
			t.Errorf("GOMAXPROCS=%q: no governor, want one", v)
		}
	}
}
