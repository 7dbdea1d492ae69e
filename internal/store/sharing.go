package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

// roleRank is the SQL that ranks agent_shares.role as agent.Role does, so
// that MAX finds the role that allows the most.
const roleRank = `CASE role WHEN 'owner' THEN 3 WHEN 'editor' THEN 2 WHEN 'viewer' THEN 1 ELSE 0 END`

// rankRole is the role of a roleRank.
func rankRole(rank int64) agent.Role {
	switch rank {
	case 3:
		return agent.RoleOwner
	case 2:
		return agent.RoleEditor
	case 1:
		return agent.RoleViewer
	}
	return agent.RoleNone
}

// sharedWith is the condition on agent_shares that a share grants the user
// (the one argument, given twice) something: directly or through a group.
const sharedWith = `(user_id = ? OR group_id IN (SELECT group_id FROM user_group_members WHERE user_id = ?))`

// AgentRole returns the highest role an agent's shares grant a user, directly
// or through one of their groups; agent.RoleNone when none does.
func (db *DB) AgentRole(ctx context.Context, agentID, userID string) (agent.Role, error) {
	var rank sql.NullInt64
	err := db.queryRow(ctx, db.read,
		`SELECT MAX(`+roleRank+`) FROM agent_shares WHERE agent_id = ? AND `+sharedWith, agentID, userID, userID).Scan(&rank)
	if err != nil {
		return agent.RoleNone, fmt.Errorf("reading the role of user %q on agent %q: %w", userID, agentID, err)
	}
	return rankRole(rank.Int64), nil
}

// grantedRoles returns, by agent id, the highest role the shares of the given
// agents grant a user; agents with no such share are absent.
func (db *DB) grantedRoles(ctx context.Context, userID string, agentIDs []string) (map[string]agent.Role, error) {
	out := map[string]agent.Role{}
	if len(agentIDs) == 0 {
		return out, nil
	}
	args := []any{userID, userID}
	for _, id := range agentIDs {
		args = append(args, id)
	}
	rows, err := db.query(ctx, db.read,
		`SELECT agent_id, MAX(`+roleRank+`) FROM agent_shares WHERE `+sharedWith+
			` AND agent_id IN (?`+strings.Repeat(`, ?`, len(agentIDs)-1)+`) GROUP BY agent_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("reading the roles of user %q: %w", userID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id   string
			rank int64
		)
		if err := rows.Scan(&id, &rank); err != nil {
			return nil, fmt.Errorf("reading the roles of user %q: %w", userID, err)
		}
		out[id] = rankRole(rank)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the roles of user %q: %w", userID, err)
	}
	return out, nil
}

// AgentShares lists an agent's shares with their principals' names (and users'
// emails): users first, then groups, each by name and then id. An agent with
// no shares, or none at all, has an empty list.
func (db *DB) AgentShares(ctx context.Context, agentID string) ([]agent.Share, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT 'user', s.user_id, u.display_name, u.email, s.role FROM agent_shares s JOIN users u ON u.id = s.user_id WHERE s.agent_id = ?
		UNION ALL
		SELECT 'group', s.group_id, g.name, '', s.role FROM agent_shares s JOIN user_groups g ON g.id = s.group_id WHERE s.agent_id = ?`,
		agentID, agentID)
	if err != nil {
		return nil, fmt.Errorf("listing the shares of agent %q: %w", agentID, err)
	}
	defer rows.Close()
	out := []agent.Share{}
	for rows.Next() {
		var sh agent.Share
		if err := rows.Scan(&sh.PrincipalType, &sh.PrincipalID, &sh.Name, &sh.Email, &sh.Role); err != nil {
			return nil, fmt.Errorf("listing the shares of agent %q: %w", agentID, err)
		}
		out = append(out, sh)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing the shares of agent %q: %w", agentID, err)
	}
	slices.SortFunc(out, func(a, b agent.Share) int {
		return cmp.Or(-strings.Compare(string(a.PrincipalType), string(b.PrincipalType)),
			strings.Compare(a.Name, b.Name), strings.Compare(a.PrincipalID, b.PrincipalID))
	})
	return out, nil
}

// SetAgentShares replaces an agent's shares in one transaction. A missing
// agent, user or group is fault.NotFound; a principal named twice
// fault.Invalid.
func (db *DB) SetAgentShares(ctx context.Context, agentID string, shares []agent.Share) error {
	now := db.clock()
	return db.inTx(ctx, "SetAgentShares", func(tx *sql.Tx) error {
		var n int
		if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM agents WHERE id = ?`, agentID).Scan(&n); err != nil {
			return fmt.Errorf("sharing agent %q: %w", agentID, err)
		}
		if n == 0 {
			return fault.New(fault.NotFound, "agent %q not found", agentID)
		}
		if _, err := db.exec(ctx, tx, `DELETE FROM agent_shares WHERE agent_id = ?`, agentID); err != nil {
			return fmt.Errorf("sharing agent %q: %w", agentID, err)
		}
		for _, sh := range shares {
			var userID, groupID any
			switch sh.PrincipalType {
			case auth.PrincipalUser:
				userID = sh.PrincipalID
			case auth.PrincipalGroup:
				groupID = sh.PrincipalID
			default:
				return fault.New(fault.Invalid, "sharing agent %q: unknown principal type %q", agentID, sh.PrincipalType)
			}
			if !sh.Role.Valid() {
				return fault.New(fault.Invalid, "sharing agent %q: unknown role %q", agentID, sh.Role)
			}
			_, err := db.exec(ctx, tx, `INSERT INTO agent_shares (agent_id, user_id, group_id, role, created_at) VALUES (?, ?, ?, ?, ?)`,
				agentID, userID, groupID, string(sh.Role), db.timeArg(now))
			switch {
			case err == nil:
			case db.d.IsForeignKeyViolation(err):
				return fault.Wrap(fault.NotFound, err, "sharing agent %q: %s %q not found", agentID, sh.PrincipalType, sh.PrincipalID)
			case db.d.IsUniqueViolation(err):
				return fault.Wrap(fault.Invalid, err, "sharing agent %q: %s %q is named twice", agentID, sh.PrincipalType, sh.PrincipalID)
			default:
				return fmt.Errorf("sharing agent %q: %w", agentID, err)
			}
		}
		return nil
	})
}

const groupColumns = `id, name, created_at, updated_at`

func scanGroup(r rowScanner) (*auth.Group, error) {
	g := auth.Group{MemberIDs: []string{}}
	if err := r.Scan(&g.ID, &g.Name, timeDest{&g.CreatedAt}, timeDest{&g.UpdatedAt}); err != nil {
		return nil, err
	}
	return &g, nil
}

// CreateGroup inserts g with its members, and sets its timestamps. A taken
// name is fault.Conflict; a member that is not a user fault.NotFound.
func (db *DB) CreateGroup(ctx context.Context, g *auth.Group) error {
	if g.ID == "" {
		return fault.New(fault.Invalid, "group id is required")
	}
	now := db.clock()
	err := db.inTx(ctx, "CreateGroup", func(tx *sql.Tx) error {
		_, err := db.exec(ctx, tx, `INSERT INTO user_groups (`+groupColumns+`) VALUES (?, ?, ?, ?)`,
			g.ID, g.Name, db.timeArg(now), db.timeArg(now))
		if err != nil {
			return db.groupErr(err, g)
		}
		return db.insertMembers(ctx, tx, g)
	})
	if err != nil {
		return err
	}
	g.CreatedAt, g.UpdatedAt = now, now
	return nil
}

// groupErr classifies a failed write of g's row.
func (db *DB) groupErr(err error, g *auth.Group) error {
	if db.d.IsUniqueViolation(err) {
		return fault.Wrap(fault.Conflict, err, "a group named %q already exists", g.Name)
	}
	return fmt.Errorf("storing group %q: %w", g.ID, err)
}

// insertMembers adds g's members, which have none in the table yet.
func (db *DB) insertMembers(ctx context.Context, tx *sql.Tx, g *auth.Group) error {
	for _, id := range g.MemberIDs {
		_, err := db.exec(ctx, tx, `INSERT INTO user_group_members (group_id, user_id) VALUES (?, ?)`, g.ID, id)
		switch {
		case err == nil:
		case db.d.IsForeignKeyViolation(err):
			return fault.Wrap(fault.NotFound, err, "member of group %q: user %q not found", g.ID, id)
		case db.d.IsUniqueViolation(err):
			return fault.Wrap(fault.Invalid, err, "member of group %q: user %q is named twice", g.ID, id)
		default:
			return fmt.Errorf("storing the members of group %q: %w", g.ID, err)
		}
	}
	return nil
}

// GetGroup returns a group with its members, in id order.
func (db *DB) GetGroup(ctx context.Context, id string) (*auth.Group, error) {
	g, err := scanGroup(db.queryRow(ctx, db.read, `SELECT `+groupColumns+` FROM user_groups WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "group %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting group %q: %w", id, err)
	}
	members, err := db.members(ctx, `WHERE group_id = ?`, id)
	if err != nil {
		return nil, err
	}
	g.MemberIDs = append(g.MemberIDs, members[id]...)
	return g, nil
}

// members returns the member ids of the groups user_group_members' rows
// matching where (with args), by group id, each in id order.
func (db *DB) members(ctx context.Context, where string, args ...any) (map[string][]string, error) {
	rows, err := db.query(ctx, db.read, `SELECT group_id, user_id FROM user_group_members `+where+` ORDER BY group_id, user_id`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing group members: %w", err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var g, u string
		if err := rows.Scan(&g, &u); err != nil {
			return nil, fmt.Errorf("listing group members: %w", err)
		}
		out[g] = append(out[g], u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing group members: %w", err)
	}
	return out, nil
}

// ListGroups lists every group with its members, by name.
func (db *DB) ListGroups(ctx context.Context) ([]*auth.Group, error) {
	gs, err := db.groups(ctx, ``, -1)
	if err != nil {
		return nil, err
	}
	members, err := db.members(ctx, ``)
	if err != nil {
		return nil, err
	}
	for _, g := range gs {
		g.MemberIDs = append(g.MemberIDs, members[g.ID]...)
	}
	return gs, nil
}

// groups lists the groups whose name contains q, ignoring case (all for an
// empty q), by name and then id, at most limit (no limit when negative),
// without their members.
func (db *DB) groups(ctx context.Context, q string, limit int) ([]*auth.Group, error) {
	query, args := `SELECT `+groupColumns+` FROM user_groups`, []any{}
	if q != "" {
		query += ` WHERE LOWER(name) LIKE ? ESCAPE '\'`
		args = append(args, likePattern(q))
	}
	query += ` ORDER BY name, id`
	if limit >= 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	defer rows.Close()
	out := []*auth.Group{}
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, fmt.Errorf("listing groups: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing groups: %w", err)
	}
	return out, nil
}

// likePattern is the LIKE pattern of "contains q", lower-cased, with LIKE's
// own characters escaped by a backslash.
func likePattern(q string) string {
	q = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(strings.ToLower(q))
	return "%" + q + "%"
}

// UpdateGroup stores g's name and replaces its members, and sets UpdatedAt.
func (db *DB) UpdateGroup(ctx context.Context, g *auth.Group) error {
	now := db.clock()
	err := db.inTx(ctx, "UpdateGroup", func(tx *sql.Tx) error {
		res, err := db.exec(ctx, tx, `UPDATE user_groups SET name = ?, updated_at = ? WHERE id = ?`, g.Name, db.timeArg(now), g.ID)
		if err != nil {
			return db.groupErr(err, g)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("updating group %q: %w", g.ID, err)
		} else if !ok {
			return fault.New(fault.NotFound, "group %q not found", g.ID)
		}
		if _, err := db.exec(ctx, tx, `DELETE FROM user_group_members WHERE group_id = ?`, g.ID); err != nil {
			return fmt.Errorf("updating the members of group %q: %w", g.ID, err)
		}
		return db.insertMembers(ctx, tx, g)
	})
	if err != nil {
		return err
	}
	g.UpdatedAt = now
	return nil
}

// DeleteGroup deletes a group with its memberships and the shares made to it.
func (db *DB) DeleteGroup(ctx context.Context, id string) error {
	return db.inTx(ctx, "DeleteGroup", func(tx *sql.Tx) error {
		// The foreign keys cascade too; deleting first keeps that true even
		// on a connection where foreign keys were left off.
		for _, q := range []string{`DELETE FROM agent_shares WHERE group_id = ?`, `DELETE FROM user_group_members WHERE group_id = ?`} {
			if _, err := db.exec(ctx, tx, q, id); err != nil {
				return fmt.Errorf("deleting group %q: %w", id, err)
			}
		}
		res, err := db.exec(ctx, tx, `DELETE FROM user_groups WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("deleting group %q: %w", id, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("deleting group %q: %w", id, err)
		} else if !ok {
			return fault.New(fault.NotFound, "group %q not found", id)
		}
		return nil
	})
}

// SearchUsers lists at most limit users whose display name or email contains
// q, ignoring case (all for an empty q), by display name and then id.
func (db *DB) SearchUsers(ctx context.Context, q string, limit int) ([]*auth.User, error) {
	query, args := `SELECT `+userColumns+` FROM users`, []any{}
	if q != "" {
		query += ` WHERE LOWER(display_name) LIKE ? ESCAPE '\' OR LOWER(email) LIKE ? ESCAPE '\'`
		args = append(args, likePattern(q), likePattern(q))
	}
	rows, err := db.query(ctx, db.read, query+` ORDER BY LOWER(display_name), id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("searching users: %w", err)
	}
	defer rows.Close()
	out := []*auth.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("searching users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("searching users: %w", err)
	}
	return out, nil
}

// SearchGroups lists at most limit groups whose name contains q, ignoring
// case (all for an empty q), by name and then id, without their members.
func (db *DB) SearchGroups(ctx context.Context, q string, limit int) ([]*auth.Group, error) {
	return db.groups(ctx, q, max(limit, 0))
}
