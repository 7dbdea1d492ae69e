package ttl_test

import (
	"testing"
	"time"

	"github.com/relay-ai/relay/internal/ttl"
)

// A value is kept for TTL; a Drop forgets it at once, and a value read
// before a Drop is not kept; past Max, expired entries go first.
func TestCache(t *testing.T) {
	c := ttl.Cache[string, int]{TTL: time.Second, Max: 2}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Put("a", 1, c.Generation(), now)
	if v, ok := c.Get("a", now.Add(time.Second-time.Nanosecond)); !ok || v != 1 {
		t.Errorf("within the TTL: %d %v", v, ok)
	}
	if _, ok := c.Get("a", now.Add(time.Second)); ok {
		t.Error("kept past the TTL")
	}
	gen := c.Generation()
	c.Drop("a") // a change made while the value was being read
	c.Put("a", 2, gen, now)
	if _, ok := c.Get("a", now); ok {
		t.Error("a value read before a Drop was kept")
	}
	c.Put("a", 3, c.Generation(), now)
	c.DropAll()
	if _, ok := c.Get("a", now); ok {
		t.Error("kept after DropAll")
	}
	c.Put("a", 1, c.Generation(), now)
	c.Put("b", 2, c.Generation(), now.Add(2*time.Second))
	c.Put("c", 3, c.Generation(), now.Add(2*time.Second)) // full: a has expired and goes
	if _, ok := c.Get("b", now.Add(2*time.Second)); !ok {
		t.Error("b went though a had expired")
	}
	if v, ok := c.Get("c", now.Add(2*time.Second)); !ok || v != 3 {
		t.Errorf("c: %d %v", v, ok)
	}
}
