package file_test

import (
	"strings"
	"testing"

	"github.com/relay-ai/relay/internal/file"
)

func TestNewID(t *testing.T) {
	const safe = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-"
	seen := map[string]bool{}
	for range 1000 {
		id := file.NewID()
		rest, ok := strings.CutPrefix(id, "file_")
		if !ok || len(rest) != 21 {
			t.Fatalf("NewID() = %q, want file_ and 21 characters", id)
		}
		if strings.Trim(rest, safe) != "" {
			t.Fatalf("NewID() = %q has characters that are not URL-safe", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}
