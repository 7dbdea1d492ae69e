// Package ttl keeps values for a while: what a process read of something
// other processes may change, trusted for a fixed time and dropped at once
// when the process changes it itself.
package ttl

import (
	"maps"
	"sync"
	"time"
)

// Cache holds values by key for TTL. A value read before a Drop (of any
// key) that Put is then given is not kept: it may be older than the change
// the Drop was for. Past Max entries, the expired ones go, then all. The
// zero Cache keeps nothing; callers own copying what they put and get.
type Cache[K comparable, V any] struct {
	TTL time.Duration
	Max int

	mu    sync.Mutex
	m     map[K]entry[V]
	drops uint64
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// Get returns the value of k while it has not expired at now.
func (c *Cache[K, V]) Get(k K, now time.Time) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Generation is what Put needs to know that no Drop came since: take it
// before reading the value.
func (c *Cache[K, V]) Generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drops
}

// Put keeps v for k until now+TTL, unless a Drop came since Generation
// returned gen.
func (c *Cache[K, V]) Put(k K, v V, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops != gen || c.TTL <= 0 {
		return
	}
	if c.m == nil {
		c.m = map[K]entry[V]{}
	}
	if _, ok := c.m[k]; !ok && c.Max > 0 && len(c.m) >= c.Max {
		maps.DeleteFunc(c.m, func(_ K, e entry[V]) bool { return !now.Before(e.expires) })
		if len(c.m) >= c.Max {
			clear(c.m)
		}
	}
	c.m[k] = entry[V]{v: v, expires: now.Add(c.TTL)}
}

// Drop forgets k.
func (c *Cache[K, V]) Drop(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	delete(c.m, k)
}

// DropAll forgets every key.
func (c *Cache[K, V]) DropAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	clear(c.m)
}
