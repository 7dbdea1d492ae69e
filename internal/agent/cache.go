package agent

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/relay-ai/relay/internal/auth"
)

// CacheTTL is how long a process runs an agent as it last read it. A change
// made through this process's Service is seen by its next run at once; one
// made by another process (another replica, `relay agents`) within CacheTTL
// (docs/api.md "Agents").
const CacheTTL = time.Second

// cacheMax bounds the agents a process keeps; past it, the expired ones go,
// then all.
const cacheMax = 4096

// cache holds agents as the store returned them, by id, for CacheTTL.
type cache struct {
	mu sync.Mutex
	m  map[string]cached
	// drops counts drop's calls: an agent read before a drop may be older
	// than the change dropped for, and is not kept (put).
	drops uint64
}

type cached struct {
	a       *Agent // never handed out: callers get a copy
	expires time.Time
}

func (c *cache) get(id string, now time.Time) *Agent {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[id]
	if !ok || !now.Before(e.expires) {
		return nil
	}
	return e.a.clone()
}

// generation is what put needs to know that no drop came since.
func (c *cache) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drops
}

// put keeps a, read from the store after generation returned gen, unless
// an agent was dropped since.
func (c *cache) put(a *Agent, gen uint64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.drops != gen {
		return
	}
	if c.m == nil {
		c.m = map[string]cached{}
	}
	if len(c.m) >= cacheMax {
		maps.DeleteFunc(c.m, func(_ string, e cached) bool { return !now.Before(e.expires) })
		if len(c.m) >= cacheMax {
			clear(c.m)
		}
	}
	c.m[a.ID] = cached{a: a.clone(), expires: now.Add(CacheTTL)}
}

// drop forgets the agent id, or every agent when id is "".
func (c *cache) drop(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drops++
	if id == "" {
		clear(c.m)
		return
	}
	delete(c.m, id)
}

// clone copies a, with every slice and map of its Spec, so that what one
// caller does to its copy no other sees.
func (a *Agent) clone() *Agent {
	c := *a
	c.ModelParameters = cloneValue(a.ModelParameters)
	c.Tools = slices.Clone(a.Tools)
	c.AgentIDs = slices.Clone(a.AgentIDs)
	c.ConversationStarters = slices.Clone(a.ConversationStarters)
	if a.Edges != nil {
		c.Edges = make([]Edge, len(a.Edges))
		for i, e := range a.Edges {
			e.From.List, e.To.List = slices.Clone(e.From.List), slices.Clone(e.To.List)
			c.Edges[i] = e
		}
	}
	if a.ToolResources != nil {
		tr := *a.ToolResources
		if tr.FileSearch != nil {
			fs := *tr.FileSearch
			fs.FileIDs = slices.Clone(fs.FileIDs)
			tr.FileSearch = &fs
		}
		c.ToolResources = &tr
	}
	return &c
}

// cloneValue copies a JSON value (maps, slices and scalars) deeply.
func cloneValue[T any](v T) T {
	var out any
	switch x := any(v).(type) {
	case map[string]any:
		if x == nil {
			return v
		}
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = cloneValue(e)
		}
		out = m
	case []any:
		if x == nil {
			return v
		}
		s := make([]any, len(x))
		for i, e := range x {
			s[i] = cloneValue(e)
		}
		out = s
	default:
		return v
	}
	return out.(T)
}

// Cached is the agents as runs load them: Get is Service.Get through a
// cache of at most CacheTTL (see CacheTTL for what that means of changes).
// The API's own reads of agents (Service.Get, Show, List) read the store.
type Cached struct{ s *Service }

// Cached returns the agents as runs load them.
func (s *Service) Cached() Cached { return Cached{s} }

// Get is Service.Get, the agent read from the cache while it is fresh.
func (c Cached) Get(ctx context.Context, u *auth.User, id string) (*Agent, error) {
	s := c.s
	now := s.now()
	a := s.cache.get(id, now)
	if a == nil {
		gen := s.cache.generation()
		var err error
		if a, err = s.store.GetAgent(ctx, id); err != nil {
			return nil, err
		}
		s.cache.put(a, gen, now)
	}
	return s.permitted(ctx, u, a)
}
