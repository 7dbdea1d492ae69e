package agent

import (
	"context"
	"fmt"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// Role is what a user may do with an agent (docs/api.md "Sharing"): a viewer
// reads it and chats with it, an editor also changes it, an owner also deletes
// it and decides whom it is shared with. The author is always an owner, and so
// is every admin.
type Role string

// The roles of agent sharing, in increasing order of what they allow.
const (
	RoleNone   Role = ""
	RoleViewer Role = "viewer"
	RoleEditor Role = "editor"
	RoleOwner  Role = "owner"
)

// rank orders the roles: a higher rank allows everything a lower one does.
func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleEditor:
		return 2
	case RoleOwner:
		return 3
	}
	return 0
}

// AtLeast reports whether r allows everything o allows.
func (r Role) AtLeast(o Role) bool { return r.rank() >= o.rank() }

// Valid reports whether r is one of the roles a share may grant.
func (r Role) Valid() bool { return r.rank() > 0 }

// higher returns the role of a and b that allows more.
func higher(a, b Role) Role {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Share grants a user, or every member of a group, a role on an agent.
type Share struct {
	PrincipalType auth.PrincipalType `json:"principal_type"`
	PrincipalID   string             `json:"principal_id"`
	// Name is the user's display name or the group's name; Email the
	// user's. Both are filled when shares are read and ignored when written.
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	Role  Role   `json:"role"`
}

// role returns what u may do with a: owner for admins and the author, else
// the highest role its shares grant u (directly or through a group), and at
// least viewer when the agent is shared with everyone; RoleNone when u may
// not see it.
func (s *Service) role(ctx context.Context, u *auth.User, a *Agent) (Role, error) {
	if u.IsAdmin() || (a.Author != "" && a.Author == u.ID) {
		return RoleOwner, nil
	}
	r, err := s.store.AgentRole(ctx, a.ID, u.ID)
	if err != nil {
		return RoleNone, fmt.Errorf("reading the shares of agent %q: %w", a.ID, err)
	}
	if a.Shared {
		r = higher(r, RoleViewer)
	}
	return r, nil
}

// Shares lists whom an agent is shared with; its owners and editors (and
// admins) may read it.
func (s *Service) Shares(ctx context.Context, u *auth.User, id string) ([]Share, error) {
	if _, err := s.allowed(ctx, u, id, RoleEditor, "read whom it is shared with"); err != nil {
		return nil, err
	}
	return s.store.AgentShares(ctx, id)
}

// SetShares replaces whom an agent is shared with; its owners (and admins)
// may. Each principal must exist and be named once; the author, always an
// owner, is not named. It returns the shares as stored.
func (s *Service) SetShares(ctx context.Context, u *auth.User, id string, shares []Share) ([]Share, error) {
	a, err := s.allowed(ctx, u, id, RoleOwner, "change whom it is shared with")
	if err != nil {
		return nil, err
	}
	var fs fault.Fields
	seen := map[[2]string]bool{}
	out := make([]Share, 0, len(shares))
	for i, sh := range shares {
		at := fmt.Sprintf("shares[%d]", i)
		if !sh.Role.Valid() {
			fs.Add(at+".role", "must be viewer, editor or owner")
		}
		switch sh.PrincipalType {
		case auth.PrincipalUser:
			if sh.PrincipalID == a.Author && a.Author != "" {
				fs.Add(at+".principal_id", "user %q is the agent's author, always its owner", sh.PrincipalID)
				continue
			}
			if _, err := s.store.GetUser(ctx, sh.PrincipalID); fault.Is(err, fault.NotFound) {
				fs.Add(at+".principal_id", "no user %q", sh.PrincipalID)
				continue
			} else if err != nil {
				return nil, err
			}
		case auth.PrincipalGroup:
			if _, err := s.store.GetGroup(ctx, sh.PrincipalID); fault.Is(err, fault.NotFound) {
				fs.Add(at+".principal_id", "no group %q", sh.PrincipalID)
				continue
			} else if err != nil {
				return nil, err
			}
		default:
			fs.Add(at+".principal_type", "must be user or group")
			continue
		}
		key := [2]string{string(sh.PrincipalType), sh.PrincipalID}
		if seen[key] {
			fs.Add(at+".principal_id", "%s %q is named twice", sh.PrincipalType, sh.PrincipalID)
			continue
		}
		seen[key] = true
		out = append(out, Share{PrincipalType: sh.PrincipalType, PrincipalID: sh.PrincipalID, Role: sh.Role})
	}
	if err := fs.Err("invalid shares"); err != nil {
		return nil, err
	}
	if err := s.store.SetAgentShares(ctx, id, out); err != nil {
		return nil, err
	}
	return s.store.AgentShares(ctx, id)
}

// allowed loads an agent on which u holds at least min: an agent u may not
// see is not found, one where u's role is lower is forbidden, saying that
// u may not do what.
func (s *Service) allowed(ctx context.Context, u *auth.User, id string, min Role, what string) (*Agent, error) {
	a, err := s.Get(ctx, u, id)
	if err != nil {
		return nil, err
	}
	if !a.Permission.AtLeast(min) {
		return nil, fault.New(fault.Forbidden, "agent %q is shared with you as %s; only an %s may %s", id, a.Permission, article(min), what)
	}
	return a, nil
}

// article is "editor or owner" or "owner", for messages.
func article(min Role) string {
	if min == RoleEditor {
		return "editor or owner"
	}
	return string(min)
}

// ForViewer returns a as a viewer sees it: without the ids of its files,
// which are its author's (docs/api.md "Sharing"). The agent still searches
// them when it runs.
func (a *Agent) ForViewer() *Agent {
	c := *a
	c.Spec = c.Spec.withoutFiles()
	return &c
}

// withoutFiles returns s without the ids of its file_search files.
func (s Spec) withoutFiles() Spec {
	if s.ToolResources == nil || s.ToolResources.FileSearch == nil {
		return s
	}
	tr := *s.ToolResources
	tr.FileSearch = nil
	s.ToolResources = &tr
	return s
}

// shown is a as u (holding its Permission) may see it.
func shown(a *Agent) *Agent {
	if a.Permission == RoleViewer {
		return a.ForViewer()
	}
	return a
}
