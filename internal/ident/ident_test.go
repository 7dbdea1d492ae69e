package ident

import (
	"regexp"
	"testing"
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
