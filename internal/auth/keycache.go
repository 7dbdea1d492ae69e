package auth

import (
	"sync"
	"time"
)

// KeyCacheTTL is how long a process trusts what it read of an API key and its
// user without reading them again. A key revoked, or a user disabled or
// changed, is forgotten at once by the process that made the change; every
// other process sees the change within KeyCacheTTL (docs/api.md
// "Authentication").
const KeyCacheTTL = time.Second

// maxCachedKeys bounds the cache; when it is full, expired entries go, and
// if none has expired the cache starts over.
const maxCachedKeys = 10_000

// keyCache remembers which user each recently used key (by its hash)
// authenticated as, so that a busy API does not read the key and its user
// from the database for every request. Only keys that worked are remembered:
// a stream of wrong keys cannot fill it.
type keyCache struct {
	mu sync.Mutex
	m  map[string]*keyEntry
}

type keyEntry struct {
	keyID    string
	user     User
	lastUsed time.Time // zero: never recorded
	expires  time.Time
}

// get returns a copy of the entry of hash while it has not expired at now.
func (c *keyCache) get(hash string, now time.Time) (keyEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[hash]
	if !ok || !now.Before(e.expires) {
		return keyEntry{}, false
	}
	return *e, true
}

// put remembers e for hash.
func (c *keyCache) put(hash string, e keyEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]*keyEntry{}
	}
	if _, ok := c.m[hash]; !ok && len(c.m) >= maxCachedKeys {
		for h, old := range c.m {
			if !now.Before(old.expires) {
				delete(c.m, h)
			}
		}
		if len(c.m) >= maxCachedKeys {
			clear(c.m)
		}
	}
	c.m[hash] = &e
}

// used records that the key of hash was recorded as used at t.
func (c *keyCache) used(hash string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[hash]; ok {
		e.lastUsed = t
	}
}

// forget drops the entries that match.
func (c *keyCache) forget(match func(*keyEntry) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for h, e := range c.m {
		if match(e) {
			delete(c.m, h)
		}
	}
}

// forgetKey drops the entry of the key with that id.
func (c *keyCache) forgetKey(id string) { c.forget(func(e *keyEntry) bool { return e.keyID == id }) }

// forgetUser drops the entries of the user's keys.
func (c *keyCache) forgetUser(id string) { c.forget(func(e *keyEntry) bool { return e.user.ID == id }) }
