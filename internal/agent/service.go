package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ttl"
)

// Service applies the rules of agents on top of a Store: who may read and
// change an agent (docs/api.md "Sharing"), validation (docs/agents.md
// "Agent"), and that config agents are read-only through it (docs/agents.md
// "Agent").
type Service struct {
	store Store
	rules Rules
	cache *ttl.Cache[string, *Agent] // what Cached().Get read, for CacheTTL
	now   func() time.Time           // the cache's clock
}

// NewService returns a Service over store with the given validation rules.
func NewService(store Store, rules Rules) *Service {
	return &Service{store: store, rules: rules, now: time.Now, cache: &ttl.Cache[string, *Agent]{TTL: CacheTTL, Max: cacheMax}}
}

func notFound(id string) error { return fault.New(fault.NotFound, "agent %q not found", id) }

// Create validates spec and stores a new agent authored by u. An empty id gets a
// generated one.
func (s *Service) Create(ctx context.Context, u *auth.User, id string, spec Spec) (*Agent, error) {
	var fs fault.Fields
	if id == "" {
		id = NewID()
	} else if !ValidID(id) {
		fs.Add("id", "must be 1 to 64 letters, digits, '_' or '-'")
	}
	s.rules.check(&fs, &spec)
	if err := fs.Err("invalid agent"); err != nil {
		return nil, err
	}
	if err := s.checkFiles(ctx, u, nil, &spec); err != nil {
		return nil, err
	}
	if err := s.checkTools(ctx, nil, &spec); err != nil {
		return nil, err
	}
	a := &Agent{ID: id, Spec: spec, Author: u.ID}
	defer s.cache.Drop(id) // one of that id another process deleted
	if err := s.store.CreateAgent(ctx, a); err != nil {
		if fault.Is(err, fault.Conflict) {
			return nil, s.taken(ctx, u, id, err)
		}
		return nil, err
	}
	a.Permission = RoleOwner
	return a, nil
}

// taken is the answer to u creating an agent with an id that is taken (err,
// a conflict): to a user who may read the agent, that it exists; to anyone
// else, only that the id cannot be used, as an invalid id is answered, so
// that the answer does not say that an agent they cannot see exists (see
// docs/api.md).
func (s *Service) taken(ctx context.Context, u *auth.User, id string, err error) error {
	if a, gerr := s.store.GetAgent(ctx, id); gerr == nil {
		if r, rerr := s.role(ctx, u, a); rerr == nil && r != RoleNone {
			return err
		}
	}
	var fs fault.Fields
	fs.Add("id", "is not available: choose another id")
	return fs.Err("invalid agent")
}

// Get returns an agent u may use, whole, with u's Permission: this is the
// one rule of who may use an agent (read it, chat with it, schedule it,
// preview its prompt, reach it in a graph), that every caller goes through.
// Agents u may not use are reported as not found so that their existence does
// not leak. What u may be shown of it is Show's.
func (s *Service) Get(ctx context.Context, u *auth.User, id string) (*Agent, error) {
	a, err := s.store.GetAgent(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.permitted(ctx, u, a)
}

// permitted returns a, read from the store, if u may use it, with u's
// Permission; Get's rule.
func (s *Service) permitted(ctx context.Context, u *auth.User, a *Agent) (*Agent, error) {
	id := a.ID
	r, err := s.role(ctx, u, a)
	if err != nil {
		return nil, err
	}
	if r == RoleNone {
		return nil, notFound(id)
	}
	a.Permission = r
	return a, nil
}

// Show returns an agent u may use as u may see it: a viewer does not see the
// ids of its files (ForViewer).
func (s *Service) Show(ctx context.Context, u *auth.User, id string) (*Agent, error) {
	a, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	return shown(a), nil
}

// List returns a page of the agents u may use, each with u's Permission and
// as u may see it.
func (s *Service) List(ctx context.Context, u *auth.User, opts ListOptions) (*Page, error) {
	opts.VisibleTo = u.ID
	if u.IsAdmin() {
		opts.VisibleTo = ""
	}
	page, err := s.store.ListAgents(ctx, opts)
	if err != nil {
		return nil, err
	}
	for i, a := range page.Agents {
		switch {
		case u.IsAdmin() || (a.Author != "" && a.Author == u.ID):
			a.Permission = RoleOwner
		default:
			a.Permission = page.Granted[a.ID]
			if a.Shared {
				a.Permission = higher(a.Permission, RoleViewer)
			}
		}
		page.Agents[i] = shown(a)
	}
	return page, nil
}

// Versions returns the kept versions of an agent u may use; a viewer's
// lack the ids of the agent's files, as the agent does (Show).
func (s *Service) Versions(ctx context.Context, u *auth.User, id string) ([]Version, error) {
	a, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	vs, err := s.store.AgentVersions(ctx, id)
	if err != nil {
		return nil, err
	}
	if a.Permission == RoleViewer {
		for i := range vs {
			vs[i].Spec = vs[i].Spec.withoutFiles()
		}
	}
	return vs, nil
}

// readOnlyFields are the fields of an Agent that only Relay sets.
var readOnlyFields = []string{"id", "author", "managed", "version", "created_at", "updated_at", "permission"}

// ReadOnlyField reports whether name is a field of Agent that clients cannot set.
func ReadOnlyField(name string) bool { return slices.Contains(readOnlyFields, name) }

// Patch applies a merge patch to an agent: each field present replaces the stored
// value and null clears it. A patch that changes nothing keeps the version.
func (s *Service) Patch(ctx context.Context, u *auth.User, id string, patch map[string]json.RawMessage) (*Agent, error) {
	if err := checkPatchFields(patch); err != nil {
		return nil, err
	}
	// A concurrent update moves the version under us; re-read and re-apply a few times.
	for attempt := 0; ; attempt++ {
		a, spec, err := s.patched(ctx, u, id, patch)
		if err != nil {
			return nil, err
		}
		if sameSpec(a.Spec, spec) {
			return a, nil
		}
		a.Spec = spec
		err = s.store.UpdateAgent(ctx, a)
		s.cache.Drop(id)
		if err == nil {
			return a, nil
		}
		if !fault.Is(err, fault.Conflict) || attempt == 4 {
			return nil, err
		}
	}
}

// checkPatchFields refuses a patch that names a field clients may not set.
func checkPatchFields(patch map[string]json.RawMessage) error {
	for k := range patch {
		if ReadOnlyField(k) {
			return &fault.Error{Kind: fault.Invalid, Message: "invalid agent", Fields: []fault.FieldError{{Field: k, Message: "read-only"}}}
		}
	}
	return nil
}

// patched reads the agent as u, who must be allowed to change it, and
// returns it with the spec the patch makes of it, checked as any change is:
// only an owner changes shared, and the spec must be valid and name only
// files and tools u may give it. Patch stores that spec; Draft does not.
func (s *Service) patched(ctx context.Context, u *auth.User, id string, patch map[string]json.RawMessage) (*Agent, Spec, error) {
	a, err := s.writable(ctx, u, id, RoleEditor)
	if err != nil {
		return nil, Spec{}, err
	}
	spec, err := applyPatch(a.Spec, patch)
	if err != nil {
		return nil, Spec{}, err
	}
	if spec.Shared != a.Shared && !a.Permission.AtLeast(RoleOwner) {
		return nil, Spec{}, fault.New(fault.Forbidden, "agent %q is shared with you as %s; only an owner may change whom it is shared with (shared)", id, a.Permission)
	}
	if err := s.rules.Validate(&spec); err != nil {
		return nil, Spec{}, err
	}
	if err := s.checkFiles(ctx, u, &a.Spec, &spec); err != nil {
		return nil, Spec{}, err
	}
	if err := s.checkTools(ctx, &a.Spec, &spec); err != nil {
		return nil, Spec{}, err
	}
	return a, spec, nil
}

// Delete removes an agent with its versions and shares; its owners may.
func (s *Service) Delete(ctx context.Context, u *auth.User, id string) error {
	if _, err := s.writable(ctx, u, id, RoleOwner); err != nil {
		return err
	}
	defer s.cache.Drop(id)
	return s.store.DeleteAgent(ctx, id)
}

// Restore stores version v of an agent as its next version, keeping every
// earlier one: the change of a PATCH that sets the whole spec of v, which
// its editors and owners may make. Whom the agent is shared with (shared)
// stays as it is now. The version's tools and files are allowed back as they
// were, as a PATCH keeps the names an agent has; the rest is validated
// again. A version equal to the current spec changes nothing.
func (s *Service) Restore(ctx context.Context, u *auth.User, id string, v int) (*Agent, error) {
	for attempt := 0; ; attempt++ {
		a, err := s.writable(ctx, u, id, RoleEditor)
		if err != nil {
			return nil, err
		}
		vs, err := s.store.AgentVersions(ctx, id)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(vs, func(x Version) bool { return x.Version == v })
		if i < 0 {
			return nil, fault.New(fault.NotFound, "agent %q has no version %d", id, v)
		}
		spec := vs[i].Spec
		spec.Shared = a.Shared
		if err := s.rules.Validate(&spec); err != nil {
			return nil, err
		}
		if sameSpec(a.Spec, spec) {
			return a, nil
		}
		a.Spec = spec
		err = s.store.UpdateAgent(ctx, a)
		s.cache.Drop(id)
		if err == nil {
			return a, nil
		}
		if !fault.Is(err, fault.Conflict) || attempt == 4 {
			return nil, err
		}
	}
}

// writable loads an agent on which u holds at least min, refusing managed
// ones with a Conflict.
func (s *Service) writable(ctx context.Context, u *auth.User, id string, min Role) (*Agent, error) {
	a, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if a.Managed {
		return nil, fault.New(fault.Conflict, "agent %q is defined in the config file and is read-only through the API; change it in the config", id)
	}
	if !a.Permission.AtLeast(min) {
		what := "change it"
		if min == RoleOwner {
			what = "delete it"
		}
		return nil, fault.New(fault.Forbidden, "agent %q is shared with you as %s; only an %s may %s", id, a.Permission, article(min), what)
	}
	return a, nil
}

// SyncConfig makes the config's agents the managed agents, validating each.
func (s *Service) SyncConfig(ctx context.Context, defs []*Agent) (SyncResult, error) {
	for _, d := range defs {
		if err := s.rules.Validate(&d.Spec); err != nil {
			return SyncResult{}, fmt.Errorf("config agent %q: %w", d.ID, err)
		}
		d.Managed, d.Author = true, ""
	}
	defer s.cache.DropAll()
	return s.store.SyncManagedAgents(ctx, defs)
}

func applyPatch(cur Spec, patch map[string]json.RawMessage) (Spec, error) {
	raw, err := json.Marshal(cur)
	if err != nil {
		return Spec{}, fmt.Errorf("encoding agent: %w", err)
	}
	doc := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Spec{}, fmt.Errorf("decoding agent: %w", err)
	}
	for k, v := range patch {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	merged, err := json.Marshal(doc)
	if err != nil {
		return Spec{}, fmt.Errorf("encoding patched agent: %w", err)
	}
	var out Spec
	dec := json.NewDecoder(bytes.NewReader(merged))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return Spec{}, fault.FromJSON(err)
	}
	return out, nil
}

// sameSpec compares two specs by their JSON form, which is also how they are stored.
func sameSpec(a, b Spec) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}

// Lookup returns a function that loads the agents u may use, for graph
// resolution; agents u may not use are reported as not found.
func (s *Service) Lookup(ctx context.Context, u *auth.User) func(id string) (*Agent, error) {
	return func(id string) (*Agent, error) { return s.Get(ctx, u, id) }
}

// fileIDs returns the ids of a spec's file_search files.
func fileIDs(s *Spec) []string {
	if s == nil || s.ToolResources == nil || s.ToolResources.FileSearch == nil {
		return nil
	}
	return s.ToolResources.FileSearch.FileIDs
}

// SetTools sets the rule that checks an agent's tool names (Rules.Tools),
// for a service made before the tools were known (the MCP manager starts after
// the store). Call it before the service is used.
func (s *Service) SetTools(f func(ctx context.Context, names []string) (unknown, known []string, err error)) {
	s.rules.Tools = f
}

// checkTools refuses tool names in spec that no built-in tool or MCP server
// provides, other than those the agent had before (old), with the known names.
func (s *Service) checkTools(ctx context.Context, old, spec *Spec) error {
	if s.rules.Tools == nil {
		return nil
	}
	var added []string
	for _, t := range spec.Tools {
		if (old == nil || !slices.Contains(old.Tools, t)) && !slices.Contains(added, t) {
			added = append(added, t)
		}
	}
	if len(added) == 0 {
		return nil
	}
	unknown, known, err := s.rules.Tools(ctx, added)
	if err != nil {
		return fmt.Errorf("checking the agent's tools: %w", err)
	}
	var fs fault.Fields
	for i, t := range spec.Tools {
		if slices.Contains(unknown, t) {
			fs.Add(fmt.Sprintf("tools[%d]", i), "unknown tool %q; known tools: %s", t, strings.Join(known, ", "))
		}
	}
	return fs.Err("invalid agent")
}

// checkFiles refuses file ids in spec that u may not read, other than those
// the agent had before (old).
func (s *Service) checkFiles(ctx context.Context, u *auth.User, old, spec *Spec) error {
	if s.rules.Files == nil {
		return nil
	}
	var added []string
	for _, id := range fileIDs(spec) {
		if !slices.Contains(fileIDs(old), id) && !slices.Contains(added, id) {
			added = append(added, id)
		}
	}
	if len(added) == 0 {
		return nil
	}
	bad, err := s.rules.Files(ctx, u, added)
	if err != nil {
		return fmt.Errorf("checking the agent's files: %w", err)
	}
	var fs fault.Fields
	for i, id := range fileIDs(spec) {
		if slices.Contains(bad, id) {
			fs.Add(fmt.Sprintf("tool_resources.file_search.file_ids[%d]", i), "no file %q of yours", id)
		}
	}
	return fs.Err("invalid agent")
}
