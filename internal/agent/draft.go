package agent

import (
	"context"
	"encoding/json"

	"github.com/relay-ai/relay/internal/auth"
)

// Draft returns the agent with a patch applied and checked as Patch checks
// it, without storing anything: unsaved edits, for a preview of the request
// they would make (docs/api.md, "POST /api/agents/{id}/prompt"). Only those who
// may change the agent may draft it, so a draft names no file and no tool that
// a saved change could not.
func (s *Service) Draft(ctx context.Context, u *auth.User, id string, patch map[string]json.RawMessage) (*Agent, error) {
	if err := checkPatchFields(patch); err != nil {
		return nil, err
	}
	a, spec, err := s.patched(ctx, u, id, patch)
	if err != nil {
		return nil, err
	}
	d := *a
	d.Spec = spec
	return &d, nil
}
