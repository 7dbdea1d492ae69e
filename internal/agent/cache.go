package agent

import (
	"context"
	"slices"
	"time"

	"github.com/relay-ai/relay/internal/auth"
)

// CacheTTL is how long a process runs an agent as it last read it. A change
// made through this process's Service is seen by its next run at once; one
// made by another process (another replica, `relay agents`) within CacheTTL
// (docs/api.md "Agents").
const CacheTTL = time.Second

// cacheMax bounds the agents a process keeps.
const cacheMax = 4096

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
	a, ok := s.cache.Get(id, now)
	if ok {
		a = a.clone() // the cached one is never handed out
	} else {
		gen := s.cache.Generation()
		var err error
		if a, err = s.store.GetAgent(ctx, id); err != nil {
			return nil, err
		}
		s.cache.Put(id, a.clone(), gen, now)
	}
	return s.permitted(ctx, u, a)
}
