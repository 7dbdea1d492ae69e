package ident

import (
	"regexp"
	"testing"
	"time"
)

func TestNew(t *testing.T) {
	pattern := regexp.MustCompile(`^run_[A-Za-z0-9_-]{21}$`)
	seen := map[string]bool{}
	for range 1000 {
		id := New("run_")
		if !pattern.MatchString(id) || seen[id] {
			t.Fatalf("New(%q) = %q (seen before: %v)", "run_", id, seen[id])
		}
		seen[id] = true
	}
}

func TestOrdered(t *testing.T) {
	pattern := regexp.MustCompile(`^run_[A-Za-z0-9_-]{21}$`)
	seen := map[string]bool{}
	start := time.Date(2026, 11, 27, 1, 2, 3, 0, time.UTC)
	prev := ""
	for i := range 1000 {
		// A millisecond apart, then within one millisecond: ordered by time,
		// unique within it.
		at := start.Add(time.Duration(min(i, 500)) * time.Millisecond)
		id := ordered("run_", at)
		if !pattern.MatchString(id) || seen[id] {
			t.Fatalf("ordered(%q) = %q (seen before: %v)", "run_", id, seen[id])
		}
		seen[id] = true
		if i <= 500 && id <= prev {
			t.Fatalf("%q, made %v, does not sort after %q, made a millisecond before", id, at, prev)
		}
		if i > 500 && id[:4+timeChars] != prev[:4+timeChars] {
			t.Fatalf("%q and %q, made in the same millisecond, differ in their time", id, prev)
		}
		prev = id
	}
	// The years ahead sort after today, the bytes of the time as numbers.
	if a, b := ordered("", start), ordered("", start.AddDate(100, 0, 0)); a >= b {
		t.Errorf("an id of 2126 (%q) sorts before one of 2026 (%q)", b, a)
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i-1] >= sorted[i] {
			t.Fatalf("sorted is not in byte order at %d: %q", i, sorted[i-1:i+1])
		}
	}
}
