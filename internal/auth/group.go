package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
)

// PrincipalType says what a principal is: what an agent can be shared with.
type PrincipalType string

// The kinds of principal.
const (
	PrincipalUser  PrincipalType = "user"
	PrincipalGroup PrincipalType = "group"
)

// Group is a named set of users. Like a user, a group is a principal: an agent
// shared with a group is shared with each of its members (docs/api.md "Groups").
type Group struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// MemberIDs are the ids of the group's users, in id order.
	MemberIDs []string  `json:"member_ids"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// UserRef is what any signed-in user may learn of another user: enough to
// recognise them in a share dialog or a group's member list.
type UserRef struct {
	ID          string `json:"id"`
	DisplayName string `json:"display_name"`
	Email       string `json:"email"`
}

// Ref returns what others may see of u.
func (u *User) Ref() UserRef { return UserRef{ID: u.ID, DisplayName: u.DisplayName, Email: u.Email} }

// GroupStore is what groups and the principal search need from storage. A
// missing group is fault.NotFound; a taken name fault.Conflict; a member that
// is not a user fault.NotFound.
type GroupStore interface {
	// CreateGroup inserts g with its members; it sets the timestamps.
	CreateGroup(ctx context.Context, g *Group) error
	GetGroup(ctx context.Context, id string) (*Group, error)
	// ListGroups lists every group with its members, by name.
	ListGroups(ctx context.Context) ([]*Group, error)
	// UpdateGroup stores g's name and replaces its members; it sets UpdatedAt.
	UpdateGroup(ctx context.Context, g *Group) error
	// DeleteGroup deletes a group, its memberships and the shares made to it.
	DeleteGroup(ctx context.Context, id string) error
	// SearchUsers lists at most limit users whose display name or email
	// contains q, ignoring case; SearchGroups likewise groups by name.
	SearchUsers(ctx context.Context, q string, limit int) ([]*User, error)
	SearchGroups(ctx context.Context, q string, limit int) ([]*Group, error)
	GetUser(ctx context.Context, id string) (*User, error)
}

// Groups manages groups: every signed-in user may list them (to share with
// them), only admins may see their members and change them.
type Groups struct {
	store GroupStore
}

// NewGroups returns the group service over store.
func NewGroups(store GroupStore) *Groups { return &Groups{store: store} }

// GroupView is a group as a user sees it: its id and name, and for admins its
// members (Members and MemberIDs are nil for others).
type GroupView struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	MemberIDs []string   `json:"member_ids,omitempty"`
	Members   []UserRef  `json:"members,omitempty"`
	CreatedAt *time.Time `json:"created_at,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// GroupInput is what an admin writes to create or change a group; nil fields
// are left as they are on a change.
type GroupInput struct {
	Name      *string   `json:"name"`
	MemberIDs *[]string `json:"member_ids"`
}

// maxGroupName bounds a group's name, in characters.
const maxGroupName = 128

// MaxPrincipals is the most principals a search returns (SearchPrincipals).
const MaxPrincipals = 20

func forbidden() error {
	return fault.New(fault.Forbidden, "only an admin may change groups")
}

// List returns every group, by name, as u sees it.
func (s *Groups) List(ctx context.Context, u *User) ([]GroupView, error) {
	gs, err := s.store.ListGroups(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]GroupView, 0, len(gs))
	for _, g := range gs {
		v, err := s.view(ctx, u, g)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Get returns one group as u sees it.
func (s *Groups) Get(ctx context.Context, u *User, id string) (GroupView, error) {
	g, err := s.store.GetGroup(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	return s.view(ctx, u, g)
}

// view is g as u sees it: members for admins only.
func (s *Groups) view(ctx context.Context, u *User, g *Group) (GroupView, error) {
	v := GroupView{ID: g.ID, Name: g.Name}
	if !u.IsAdmin() {
		return v, nil
	}
	v.MemberIDs, v.Members = []string{}, []UserRef{}
	for _, id := range g.MemberIDs {
		m, err := s.store.GetUser(ctx, id)
		if fault.Is(err, fault.NotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return GroupView{}, err
		}
		v.MemberIDs = append(v.MemberIDs, id)
		v.Members = append(v.Members, m.Ref())
	}
	created, updated := g.CreatedAt, g.UpdatedAt
	v.CreatedAt, v.UpdatedAt = &created, &updated
	return v, nil
}

// Create makes a group; admins only.
func (s *Groups) Create(ctx context.Context, u *User, in GroupInput) (GroupView, error) {
	if !u.IsAdmin() {
		return GroupView{}, forbidden()
	}
	g := &Group{ID: ident.New("group_"), MemberIDs: []string{}}
	if in.Name == nil {
		in.Name = new(string)
	}
	if err := s.apply(ctx, g, in); err != nil {
		return GroupView{}, err
	}
	if err := s.store.CreateGroup(ctx, g); err != nil {
		return GroupView{}, err
	}
	return s.view(ctx, u, g)
}

// Update changes a group's name or members; admins only.
func (s *Groups) Update(ctx context.Context, u *User, id string, in GroupInput) (GroupView, error) {
	if !u.IsAdmin() {
		return GroupView{}, forbidden()
	}
	g, err := s.store.GetGroup(ctx, id)
	if err != nil {
		return GroupView{}, err
	}
	if err := s.apply(ctx, g, in); err != nil {
		return GroupView{}, err
	}
	if err := s.store.UpdateGroup(ctx, g); err != nil {
		return GroupView{}, err
	}
	return s.view(ctx, u, g)
}

// Delete deletes a group with its memberships and shares; admins only.
func (s *Groups) Delete(ctx context.Context, u *User, id string) error {
	if !u.IsAdmin() {
		return forbidden()
	}
	return s.store.DeleteGroup(ctx, id)
}

// apply writes in onto g and checks the result: a name of 1 to 128
// characters, members that are users (given twice counts once).
func (s *Groups) apply(ctx context.Context, g *Group, in GroupInput) error {
	var fs fault.Fields
	if in.Name != nil {
		g.Name = strings.TrimSpace(*in.Name)
		switch n := utf8.RuneCountInString(g.Name); {
		case n == 0:
			fs.Add("name", "required")
		case n > maxGroupName:
			fs.Add("name", "at most %d characters", maxGroupName)
		}
	}
	if in.MemberIDs != nil {
		ids := []string{}
		for i, id := range *in.MemberIDs {
			if slices.Contains(ids, id) {
				continue
			}
			if _, err := s.store.GetUser(ctx, id); fault.Is(err, fault.NotFound) {
				fs.Add(fmt.Sprintf("member_ids[%d]", i), "no user %q", id)
				continue
			} else if err != nil {
				return err
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		g.MemberIDs = ids
	}
	return fs.Err("invalid group")
}

// Principals are the users and groups a search found.
type Principals struct {
	Users  []UserRef  `json:"users"`
	Groups []GroupRef `json:"groups"`
}

// GroupRef is what any signed-in user may learn of a group.
type GroupRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// SearchPrincipals returns the users whose display name or email, and the
// groups whose name, contains q (ignoring case; an empty q matches all): at
// most MaxPrincipals in all, users first, and when both kinds have more
// matches than fit, half of each. Any signed-in user may search: it is how
// they find whom to share an agent with.
func (s *Groups) SearchPrincipals(ctx context.Context, q string) (Principals, error) {
	q = strings.TrimSpace(q)
	users, err := s.store.SearchUsers(ctx, q, MaxPrincipals)
	if err != nil {
		return Principals{}, err
	}
	groups, err := s.store.SearchGroups(ctx, q, MaxPrincipals)
	if err != nil {
		return Principals{}, err
	}
	nGroups := min(len(groups), max(MaxPrincipals/2, MaxPrincipals-len(users)))
	nUsers := min(len(users), MaxPrincipals-nGroups)
	out := Principals{Users: make([]UserRef, 0, nUsers), Groups: make([]GroupRef, 0, nGroups)}
	for _, u := range users[:nUsers] {
		out.Users = append(out.Users, u.Ref())
	}
	for _, g := range groups[:nGroups] {
		out.Groups = append(out.Groups, GroupRef{ID: g.ID, Name: g.Name})
	}
	return out, nil
}
