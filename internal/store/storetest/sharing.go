package storetest

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/store"
)

func createGroup(t *testing.T, s store.Store, name string, members ...string) *auth.Group {
	t.Helper()
	g := &auth.Group{ID: newID("group_"), Name: name, MemberIDs: members}
	must(t, s.CreateGroup(t.Context(), g), "CreateGroup "+name)
	return g
}

func getGroup(t *testing.T, s store.Store, id string) *auth.Group {
	t.Helper()
	g, err := s.GetGroup(t.Context(), id)
	must(t, err, "GetGroup "+id)
	return g
}

func role(t *testing.T, s store.Store, agentID, userID string) agent.Role {
	t.Helper()
	r, err := s.AgentRole(t.Context(), agentID, userID)
	must(t, err, "AgentRole")
	return r
}

func setShares(t *testing.T, s store.Store, agentID string, shares ...agent.Share) {
	t.Helper()
	must(t, s.SetAgentShares(t.Context(), agentID, shares), "SetAgentShares")
}

func shares(t *testing.T, s store.Store, agentID string) []agent.Share {
	t.Helper()
	out, err := s.AgentShares(t.Context(), agentID)
	must(t, err, "AgentShares")
	return out
}

func userShare(id string, r agent.Role) agent.Share {
	return agent.Share{PrincipalType: auth.PrincipalUser, PrincipalID: id, Role: r}
}

func groupShare(id string, r agent.Role) agent.Share {
	return agent.Share{PrincipalType: auth.PrincipalGroup, PrincipalID: id, Role: r}
}

var sharingTests = []test{
	{"GroupRoundTrip", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		members := []string{ann.ID, bob.ID}
		slices.Sort(members)
		g := createGroup(t, s, "Reviewers", bob.ID, ann.ID)
		wantUTC(t, "CreateGroup", g.CreatedAt, g.UpdatedAt)
		got := getGroup(t, s, g.ID)
		want := &auth.Group{ID: g.ID, Name: "Reviewers", MemberIDs: members, CreatedAt: g.CreatedAt, UpdatedAt: g.UpdatedAt}
		if d := cmp.Diff(want, got, equal); d != "" {
			t.Errorf("GetGroup (-want +got):\n%s", d)
		}

		_, err := s.GetGroup(ctx, "group_missing")
		wantKind(t, err, fault.NotFound, "GetGroup of a missing group")
		err = s.CreateGroup(ctx, &auth.Group{ID: newID("group_"), Name: "Reviewers"})
		wantKind(t, err, fault.Conflict, "CreateGroup with a taken name")
		err = s.CreateGroup(ctx, &auth.Group{ID: newID("group_"), Name: "Ghosts", MemberIDs: []string{"user_missing"}})
		wantKind(t, err, fault.NotFound, "CreateGroup with a member who is not a user")
		if gs, err := s.ListGroups(ctx); err != nil || len(gs) != 1 {
			t.Errorf("a failed CreateGroup left a group: %v, %v", gs, err)
		}

		got.Name, got.MemberIDs = "Editors", []string{bob.ID}
		must(t, s.UpdateGroup(ctx, got), "UpdateGroup")
		if again := getGroup(t, s, g.ID); again.Name != "Editors" || !slices.Equal(again.MemberIDs, []string{bob.ID}) || again.CreatedAt != g.CreatedAt {
			t.Errorf("after UpdateGroup: %+v", again)
		}
		err = s.UpdateGroup(ctx, &auth.Group{ID: "group_missing", Name: "x"})
		wantKind(t, err, fault.NotFound, "UpdateGroup of a missing group")
		createGroup(t, s, "Admins")
		got.Name = "Admins"
		wantKind(t, s.UpdateGroup(ctx, got), fault.Conflict, "UpdateGroup to a taken name")
		if again := getGroup(t, s, g.ID); again.Name != "Editors" || !slices.Equal(again.MemberIDs, []string{bob.ID}) {
			t.Errorf("a failed UpdateGroup changed the group: %+v", again)
		}

		must(t, s.DeleteGroup(ctx, g.ID), "DeleteGroup")
		_, err = s.GetGroup(ctx, g.ID)
		wantKind(t, err, fault.NotFound, "GetGroup after DeleteGroup")
		wantKind(t, s.DeleteGroup(ctx, g.ID), fault.NotFound, "DeleteGroup twice")
	}},
	{"ListGroupsByName", func(t *testing.T, s store.Store) {
		ann := createUser(t, s, "ann@example.com")
		c := createGroup(t, s, "charlie", ann.ID)
		a := createGroup(t, s, "Alpha")
		b := createGroup(t, s, "bravo", ann.ID)
		gs, err := s.ListGroups(t.Context())
		must(t, err, "ListGroups")
		var names []string
		for _, g := range gs {
			names = append(names, g.Name)
			want := map[string][]string{a.ID: nil, b.ID: {ann.ID}, c.ID: {ann.ID}}[g.ID]
			if d := cmp.Diff(want, g.MemberIDs, equal); d != "" {
				t.Errorf("members of %s (-want +got):\n%s", g.Name, d)
			}
		}
		if want := []string{"Alpha", "bravo", "charlie"}; !slices.Equal(names, want) {
			t.Errorf("ListGroups names %v, want %v (bytewise order)", names, want)
		}
	}},
	{"RolesDirectAndThroughGroups", func(t *testing.T, s store.Store) {
		ann, bob, cy := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com"), createUser(t, s, "cy@example.com")
		a := createAgent(t, s, ann.ID, false)
		team := createGroup(t, s, "team", bob.ID, cy.ID)
		leads := createGroup(t, s, "leads", cy.ID)
		if r := role(t, s, a.ID, bob.ID); r != agent.RoleNone {
			t.Errorf("bob's role before any share: %q", r)
		}
		setShares(t, s, a.ID, groupShare(team.ID, agent.RoleViewer), groupShare(leads.ID, agent.RoleOwner), userShare(bob.ID, agent.RoleEditor))
		for _, tc := range []struct {
			user *auth.User
			want agent.Role
		}{{bob, agent.RoleEditor}, {cy, agent.RoleOwner}, {ann, agent.RoleNone}} {
			if r := role(t, s, a.ID, tc.user.ID); r != tc.want {
				t.Errorf("role of %s: %q, want %q (the highest of its shares)", tc.user.Email, r, tc.want)
			}
		}
		got := shares(t, s, a.ID)
		want := []agent.Share{
			{PrincipalType: auth.PrincipalUser, PrincipalID: bob.ID, Name: "bob", Email: "bob@example.com", Role: agent.RoleEditor},
			{PrincipalType: auth.PrincipalGroup, PrincipalID: leads.ID, Name: "leads", Role: agent.RoleOwner},
			{PrincipalType: auth.PrincipalGroup, PrincipalID: team.ID, Name: "team", Role: agent.RoleViewer},
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("AgentShares (-want +got):\n%s", d)
		}

		// The list replaces the shares; an empty one removes them all.
		setShares(t, s, a.ID, userShare(cy.ID, agent.RoleViewer))
		if r := role(t, s, a.ID, bob.ID); r != agent.RoleNone {
			t.Errorf("bob's role after his share was replaced: %q", r)
		}
		if r := role(t, s, a.ID, cy.ID); r != agent.RoleViewer {
			t.Errorf("cy's role after the replace: %q", r)
		}
		setShares(t, s, a.ID)
		if got := shares(t, s, a.ID); len(got) != 0 {
			t.Errorf("shares after setting none: %+v", got)
		}
	}},
	{"SetSharesRefusals", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		a := createAgent(t, s, ann.ID, false)
		setShares(t, s, a.ID, userShare(bob.ID, agent.RoleViewer))
		for _, tc := range []struct {
			name  string
			id    string
			share []agent.Share
			kind  fault.Kind
		}{
			{"a missing agent", "agent_missing", []agent.Share{userShare(bob.ID, agent.RoleViewer)}, fault.NotFound},
			{"a missing user", a.ID, []agent.Share{userShare("user_missing", agent.RoleViewer)}, fault.NotFound},
			{"a missing group", a.ID, []agent.Share{groupShare("group_missing", agent.RoleViewer)}, fault.NotFound},
			{"a user named twice", a.ID, []agent.Share{userShare(ann.ID, agent.RoleViewer), userShare(ann.ID, agent.RoleOwner)}, fault.Invalid},
			{"an unknown role", a.ID, []agent.Share{userShare(ann.ID, "admin")}, fault.Invalid},
		} {
			wantKind(t, s.SetAgentShares(ctx, tc.id, tc.share), tc.kind, "SetAgentShares with "+tc.name)
		}
		// Nothing of a refused list is kept: the share from before stands.
		if got := shares(t, s, a.ID); len(got) != 1 || got[0].PrincipalID != bob.ID {
			t.Errorf("shares after refused lists: %+v", got)
		}
	}},
	{"DeletingRemovesShares", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
		a, b := createAgent(t, s, ann.ID, false), createAgent(t, s, ann.ID, false)
		team := createGroup(t, s, "team", bob.ID)
		setShares(t, s, a.ID, groupShare(team.ID, agent.RoleEditor))
		setShares(t, s, b.ID, groupShare(team.ID, agent.RoleEditor), userShare(bob.ID, agent.RoleViewer))
		must(t, s.DeleteGroup(ctx, team.ID), "DeleteGroup")
		if r := role(t, s, a.ID, bob.ID); r != agent.RoleNone {
			t.Errorf("bob's role through a deleted group: %q", r)
		}
		if got := shares(t, s, b.ID); len(got) != 1 || got[0].PrincipalID != bob.ID {
			t.Errorf("shares of b after its group was deleted: %+v", got)
		}
		must(t, s.DeleteAgent(ctx, b.ID), "DeleteAgent")
		if got := shares(t, s, b.ID); len(got) != 0 {
			t.Errorf("shares of a deleted agent: %+v", got)
		}
		// The agent's id is free again, without its old shares.
		again := &agent.Agent{ID: b.ID, Spec: spec("again"), Author: ann.ID}
		must(t, s.CreateAgent(ctx, again), "CreateAgent with the deleted agent's id")
		if r := role(t, s, b.ID, bob.ID); r != agent.RoleNone {
			t.Errorf("bob's role on a new agent with a deleted one's id: %q", r)
		}
	}},
	{"ListIncludesSharedAgents", func(t *testing.T, s store.Store) {
		ann, bob, cy := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com"), createUser(t, s, "cy@example.com")
		private := createAgent(t, s, ann.ID, false)
		public := createAgent(t, s, ann.ID, true)
		toBob := createAgent(t, s, ann.ID, false)
		toTeam := createAgent(t, s, ann.ID, false)
		toBoth := createAgent(t, s, ann.ID, false)
		bobs := createAgent(t, s, bob.ID, false)
		team := createGroup(t, s, "team", bob.ID)
		setShares(t, s, toBob.ID, userShare(bob.ID, agent.RoleEditor))
		setShares(t, s, toTeam.ID, groupShare(team.ID, agent.RoleViewer))
		setShares(t, s, toBoth.ID, groupShare(team.ID, agent.RoleOwner), userShare(bob.ID, agent.RoleViewer), userShare(cy.ID, agent.RoleEditor))

		want := []*agent.Agent{public, toBob, toTeam, toBoth, bobs}
		listOrder(want)
		for _, limit := range []int{1, 2, 100} {
			got := listAll(t, s, bob.ID, limit)
			if d := cmp.Diff(ids(want), ids(got)); d != "" {
				t.Errorf("bob's list, pages of %d (-want +got):\n%s", limit, d)
			}
		}
		p, err := s.ListAgents(t.Context(), agent.ListOptions{VisibleTo: bob.ID})
		must(t, err, "ListAgents")
		wantGranted := map[string]agent.Role{toBob.ID: agent.RoleEditor, toTeam.ID: agent.RoleViewer, toBoth.ID: agent.RoleOwner}
		if d := cmp.Diff(wantGranted, p.Granted); d != "" {
			t.Errorf("roles granted to bob (-want +got):\n%s", d)
		}
		if got := ids(listAll(t, s, cy.ID, 100)); !slices.Equal(got, []string{public.ID, toBoth.ID}) {
			t.Errorf("cy's list: %v, want the public agent and the one shared with cy", got)
		}
		if got := listAll(t, s, "", 100); len(got) != 6 || slices.Contains(ids(got), "") {
			t.Errorf("the list of everything has %d agents, want 6", len(got))
		}
		if slices.Contains(ids(listAll(t, s, bob.ID, 100)), private.ID) {
			t.Error("bob sees ann's private agent")
		}
	}},
	{"SearchPrincipals", func(t *testing.T, s store.Store) {
		ctx := t.Context()
		ann := createUser(t, s, "ann@example.com")
		ann.DisplayName = "Ann Smith"
		must(t, s.UpdateUser(ctx, ann), "UpdateUser")
		joanna := createUser(t, s, "joanna@corp.example")
		createUser(t, s, "bob@example.com")
		createUser(t, s, "pct%_x@example.com")
		createGroup(t, s, "Planning")
		createGroup(t, s, "Finance")
		users := func(q string, limit int) []string {
			us, err := s.SearchUsers(ctx, q, limit)
			must(t, err, "SearchUsers "+q)
			var out []string
			for _, u := range us {
				out = append(out, u.Email)
			}
			return out
		}
		groups := func(q string) []string {
			gs, err := s.SearchGroups(ctx, q, 20)
			must(t, err, "SearchGroups "+q)
			var out []string
			for _, g := range gs {
				out = append(out, g.Name)
			}
			return out
		}
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"ANN", []string{"ann@example.com", joanna.Email}}, // ann by name and email, joANNa
			{"smith", []string{"ann@example.com"}},
			{"corp", []string{joanna.Email}},
			{"%", []string{"pct%_x@example.com"}}, // LIKE's characters match themselves
			{"_x", []string{"pct%_x@example.com"}},
			{"nobody", nil},
		} {
			if got := users(tc.q, 20); !slices.Equal(got, tc.want) {
				t.Errorf("SearchUsers(%q) = %v, want %v", tc.q, got, tc.want)
			}
		}
		if got := users("", 2); len(got) != 2 {
			t.Errorf("SearchUsers with limit 2 found %d", len(got))
		}
		if got := groups("AN"); !slices.Equal(got, []string{"Finance", "Planning"}) {
			t.Errorf("SearchGroups(AN) = %v", got)
		}
		if got := groups(""); len(got) != 2 {
			t.Errorf("SearchGroups of everything = %v", got)
		}
	}},
}

// UserDeletion checks that deleting a user (with deleteUser, which the engine's
// test writes in SQL: the store has no method for it) deletes their shares
// and group memberships, and leaves the groups and agents.
func UserDeletion(t *testing.T, s store.Store, deleteUser func(t *testing.T, id string)) {
	ann, bob := createUser(t, s, "ann@example.com"), createUser(t, s, "bob@example.com")
	a := createAgent(t, s, ann.ID, false)
	team := createGroup(t, s, "team", bob.ID, ann.ID)
	setShares(t, s, a.ID, userShare(bob.ID, agent.RoleEditor), groupShare(team.ID, agent.RoleViewer))
	deleteUser(t, bob.ID)
	if g := getGroup(t, s, team.ID); !slices.Equal(g.MemberIDs, []string{ann.ID}) {
		t.Errorf("members after bob was deleted: %v", g.MemberIDs)
	}
	got := shares(t, s, a.ID)
	if len(got) != 1 || got[0].PrincipalID != team.ID {
		t.Errorf("shares after bob was deleted: %+v", got)
	}
}
