package agent

import (
	"context"
	"encoding/json"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// Draft returns the agent with a patch applied and checked as Patch checks
// it, without storing anything: unsaved edits, for a preview of the request
// they would make (docs/api.md, "POST /api/agents/{id}/prompt"). Only those who
// may change the agent may draft it, so a draft names no file and no tool that
// a saved change could not.
func (s *Service) Draft(ctx context.Context, u *auth.User, id string, patch map[string]json.RawMessage) (*Agent, error) {
	for k := range patch {
		if ReadOnlyField(k) {
			return nil, &fault.Error{Kind: fault.Invalid, Message: "invalid agent", Fields: []fault.FieldError{{Field: k, Message: "read-only"}}}
		}
	}
	a, err := s.writable(ctx, u, id, RoleEditor)
	if err != nil {
		return nil, err
	}
	spec, err := applyPatch(a.Spec, patch)
	if err != nil {
		return nil, err
	}
	if spec.Shared != a.Shared && !a.Permission.AtLeast(RoleOwner) {
		return nil, fault.New(fault.Forbidden, "agent %q is shared with you as %s; only an owner may change whom it is shared with (shared)", id, a.Permission)
	}
	if err := s.rules.Validate(&spec); err != nil {
		return nil, err
	}
	if err := s.checkFiles(ctx, u, &a.Spec, &spec); err != nil {
		return nil, err
	}
	if err := s.checkTools(ctx, &a.Spec, &spec); err != nil {
		return nil, err
	}
	d := *a
	d.Spec = spec
	return &d, nil
}
