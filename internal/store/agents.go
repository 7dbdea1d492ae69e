package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/agent"
	"github.com/relay-ai/relay/internal/fault"
)

// Page sizes of ListAgents.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

const agentColumns = `id, author, managed, version, spec, created_at, updated_at`

func scanAgent(r rowScanner) (*agent.Agent, error) {
	var (
		a    agent.Agent
		spec []byte
	)
	if err := r.Scan(&a.ID, nullStringDest{&a.Author}, &a.Managed, &a.Version, &spec,
		timeDest{&a.CreatedAt}, timeDest{&a.UpdatedAt}); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(spec, &a.Spec); err != nil {
		return nil, fmt.Errorf("decoding spec of agent %q: %w", a.ID, err)
	}
	return &a, nil
}

func marshalSpec(s agent.Spec) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", fault.Wrap(fault.Invalid, err, "agent spec cannot be stored as JSON")
	}
	return string(b), nil
}

// storedSpec sets a.Spec to the spec as it was stored, from its JSON spec,
// when storing it replaced text (text.go), so that a.Spec is what reading the
// agent gives.
func storedSpec(a *agent.Agent, spec string) error {
	kept := storableJSON(spec)
	if kept == spec {
		return nil
	}
	var s agent.Spec
	if err := json.Unmarshal([]byte(kept), &s); err != nil {
		return fmt.Errorf("decoding spec of agent %q: %w", a.ID, err)
	}
	a.Spec = s
	return nil
}

// canonicalSpec is the JSON form in which two specs are equal exactly when they
// say the same thing: it is re-encoded from generic values, so numbers, key order
// and empty-versus-missing collections no longer differ by how a spec was made.
func canonicalSpec(s agent.Spec) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// CreateAgent inserts a as version 1, in the agents table and as the first kept
// version, and sets a.Version, a.CreatedAt and a.UpdatedAt.
func (db *DB) CreateAgent(ctx context.Context, a *agent.Agent) error {
	if a.ID == "" {
		return fault.New(fault.Invalid, "agent id is required")
	}
	spec, err := marshalSpec(a.Spec)
	if err != nil {
		return err
	}
	now := db.clock()
	err = db.inTx(ctx, "CreateAgent", func(tx *sql.Tx) error {
		return db.insertAgent(ctx, tx, a, spec, now)
	})
	if err != nil {
		return err
	}
	a.Version, a.CreatedAt, a.UpdatedAt = 1, now, now
	return storedSpec(a, spec)
}

func (db *DB) insertAgent(ctx context.Context, tx *sql.Tx, a *agent.Agent, spec string, now time.Time) error {
	_, err := db.exec(ctx, tx,
		`INSERT INTO agents (`+agentColumns+`, shared) VALUES (?, ?, ?, 1, ?, ?, ?, ?)`,
		a.ID, nullString(a.Author), a.Managed, jsonValue(spec), db.timeArg(now), db.timeArg(now), a.Shared)
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "agent %q already exists", a.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "author of agent %q: user %q not found", a.ID, a.Author)
	default:
		return fmt.Errorf("creating agent %q: %w", a.ID, err)
	}
	return db.insertVersion(ctx, tx, a.ID, 1, spec, now)
}

func (db *DB) insertVersion(ctx context.Context, tx *sql.Tx, id string, version int, spec string, now time.Time) error {
	_, err := db.exec(ctx, tx,
		`INSERT INTO agent_versions (agent_id, version, spec, created_at) VALUES (?, ?, ?, ?)`,
		id, version, jsonValue(spec), db.timeArg(now))
	if err != nil {
		if db.d.IsUniqueViolation(err) {
			return fault.Wrap(fault.Conflict, err, "agent %q already has a version %d", id, version)
		}
		return fmt.Errorf("storing version %d of agent %q: %w", version, id, err)
	}
	return nil
}

// GetAgent returns the agent with that id at its current version.
func (db *DB) GetAgent(ctx context.Context, id string) (*agent.Agent, error) {
	a, err := scanAgent(db.queryRow(ctx, db.read, `SELECT `+agentColumns+` FROM agents WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "agent %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting agent %q: %w", id, err)
	}
	return a, nil
}

// ListAgents returns one page of agents ordered by creation time, then id.
// VisibleTo keeps the agents that user wrote, those shared with everyone and
// those whose shares name the user or one of their groups; the page's Granted
// then holds the roles those shares grant.
func (db *DB) ListAgents(ctx context.Context, opts agent.ListOptions) (*agent.Page, error) {
	limit := opts.Limit
	switch {
	case limit < 1:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	var (
		where []string
		args  []any
	)
	if opts.VisibleTo != "" {
		where = append(where, `(author = ? OR shared OR EXISTS (SELECT 1 FROM agent_shares WHERE agent_shares.agent_id = agents.id AND `+sharedWith+`))`)
		args = append(args, opts.VisibleTo, opts.VisibleTo, opts.VisibleTo)
	}
	if opts.Cursor != "" {
		at, id, err := decodeCursor(opts.Cursor)
		if err != nil {
			return nil, err
		}
		where = append(where, `(created_at, id) > (?, ?)`)
		args = append(args, db.timeArg(at), id)
	}
	query := `SELECT ` + agentColumns + ` FROM agents`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY created_at, id LIMIT ?`
	args = append(args, limit+1) // one more tells whether a next page exists

	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	defer rows.Close()
	page := &agent.Page{Agents: []*agent.Agent{}}
	for rows.Next() {
		a, err := scanAgent(rows)
		if err != nil {
			return nil, fmt.Errorf("listing agents: %w", err)
		}
		page.Agents = append(page.Agents, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing agents: %w", err)
	}
	if len(page.Agents) > limit {
		page.Agents = page.Agents[:limit]
		last := page.Agents[limit-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ID)
	}
	if opts.VisibleTo != "" {
		ids := make([]string, len(page.Agents))
		for i, a := range page.Agents {
			ids[i] = a.ID
		}
		if page.Granted, err = db.grantedRoles(ctx, opts.VisibleTo, ids); err != nil {
			return nil, err
		}
	}
	return page, nil
}

// A cursor is the position after the last agent of a page: its creation time and
// id, which together order agents totally. Clients treat it as opaque.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(utc(at).Format(timeLayout) + " " + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	bad := fault.New(fault.Invalid, "invalid cursor %q: pass the next_cursor of the previous page", c)
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", bad
	}
	ts, id, ok := bytes.Cut(b, []byte(" "))
	if !ok || len(id) == 0 {
		return time.Time{}, "", bad
	}
	at, err := time.Parse(timeLayout, string(ts))
	if err != nil {
		return time.Time{}, "", bad
	}
	return at, string(id), nil
}

// UpdateAgent stores a.Spec as the next version when the stored version is still
// a.Version: the agents row and the new kept version are written in one
// transaction. A moved version is fault.Conflict; a missing agent fault.NotFound.
// Author and Managed are not changed.
func (db *DB) UpdateAgent(ctx context.Context, a *agent.Agent) error {
	spec, err := marshalSpec(a.Spec)
	if err != nil {
		return err
	}
	now := db.clock()
	err = db.inTx(ctx, "UpdateAgent", func(tx *sql.Tx) error {
		return db.updateAgent(ctx, tx, a.ID, a.Version, spec, a.Shared, now)
	})
	if err != nil {
		return err
	}
	a.Version++
	a.UpdatedAt = now
	return storedSpec(a, spec)
}

func (db *DB) updateAgent(ctx context.Context, tx *sql.Tx, id string, version int, spec string, shared bool, now time.Time) error {
	res, err := db.exec(ctx, tx,
		`UPDATE agents SET spec = ?, shared = ?, version = version + 1, updated_at = ? WHERE id = ? AND version = ?`,
		jsonValue(spec), shared, db.timeArg(now), id, version)
	if err != nil {
		return fmt.Errorf("updating agent %q: %w", id, err)
	}
	ok, err := affected(res)
	if err != nil {
		return fmt.Errorf("updating agent %q: %w", id, err)
	}
	if !ok {
		var stored int
		err := db.queryRow(ctx, tx, `SELECT version FROM agents WHERE id = ?`, id).Scan(&stored)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fault.New(fault.NotFound, "agent %q not found", id)
		case err != nil:
			return fmt.Errorf("updating agent %q: %w", id, err)
		}
		return fault.New(fault.Conflict, "agent %q is at version %d, not %d: it was changed meanwhile; reload it and retry", id, stored, version)
	}
	return db.insertVersion(ctx, tx, id, version+1, spec, now)
}

// DeleteAgent removes an agent, every kept version of it and its shares.
func (db *DB) DeleteAgent(ctx context.Context, id string) error {
	return db.inTx(ctx, "DeleteAgent", func(tx *sql.Tx) error {
		// The foreign key cascades too; deleting versions first keeps that true
		// even on a connection where foreign keys were left off.
		if _, err := db.exec(ctx, tx, `DELETE FROM agent_versions WHERE agent_id = ?`, id); err != nil {
			return fmt.Errorf("deleting versions of agent %q: %w", id, err)
		}
		if _, err := db.exec(ctx, tx, `DELETE FROM agent_shares WHERE agent_id = ?`, id); err != nil {
			return fmt.Errorf("deleting shares of agent %q: %w", id, err)
		}
		res, err := db.exec(ctx, tx, `DELETE FROM agents WHERE id = ?`, id)
		if err != nil {
			return fmt.Errorf("deleting agent %q: %w", id, err)
		}
		ok, err := affected(res)
		if err != nil {
			return fmt.Errorf("deleting agent %q: %w", id, err)
		}
		if !ok {
			return fault.New(fault.NotFound, "agent %q not found", id)
		}
		return nil
	})
}

// AgentVersions lists every kept version of an agent, oldest first.
func (db *DB) AgentVersions(ctx context.Context, id string) ([]agent.Version, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT agent_id, version, spec, created_at FROM agent_versions WHERE agent_id = ? ORDER BY version`, id)
	if err != nil {
		return nil, fmt.Errorf("listing versions of agent %q: %w", id, err)
	}
	defer rows.Close()
	versions := []agent.Version{}
	for rows.Next() {
		var (
			v    agent.Version
			spec []byte
		)
		if err := rows.Scan(&v.AgentID, &v.Version, &spec, timeDest{&v.CreatedAt}); err != nil {
			return nil, fmt.Errorf("listing versions of agent %q: %w", id, err)
		}
		if err := json.Unmarshal(spec, &v.Spec); err != nil {
			return nil, fmt.Errorf("decoding version %d of agent %q: %w", v.Version, id, err)
		}
		versions = append(versions, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing versions of agent %q: %w", id, err)
	}
	if len(versions) == 0 {
		// Every agent has at least version 1, so no versions means no agent.
		return nil, fault.New(fault.NotFound, "agent %q not found", id)
	}
	return versions, nil
}

// SyncManagedAgents makes the managed agents exactly the given ones, in one
// transaction. An agent not stored yet is created as version 1. A stored managed
// agent whose spec differs (compared as canonical JSON) gets a new version; one
// whose spec is the same is left alone. Managed agents missing from the list are
// released: they stay, with managed false. An agent that a config once managed and
// released (no author, not managed) is managed again when it comes back. Any other
// stored agent with a listed id was created through the API, and the whole sync
// fails with fault.Conflict. The given agents get their stored author, version and
// timestamps.
func (db *DB) SyncManagedAgents(ctx context.Context, agents []*agent.Agent) (agent.SyncResult, error) {
	type planned struct {
		a     *agent.Agent
		spec  string
		canon []byte
	}
	plan := make([]planned, 0, len(agents))
	listed := make(map[string]bool, len(agents))
	for i, a := range agents {
		if a == nil || a.ID == "" {
			return agent.SyncResult{}, fault.New(fault.Invalid, "managed agent %d has no id", i)
		}
		if listed[a.ID] {
			return agent.SyncResult{}, fault.New(fault.Invalid, "managed agent %q is listed twice", a.ID)
		}
		listed[a.ID] = true
		spec, err := marshalSpec(a.Spec)
		if err != nil {
			return agent.SyncResult{}, fmt.Errorf("managed agent %q: %w", a.ID, err)
		}
		canon, err := canonicalSpec(a.Spec)
		if err != nil {
			return agent.SyncResult{}, fmt.Errorf("managed agent %q: %w", a.ID, err)
		}
		plan = append(plan, planned{a: a, spec: spec, canon: canon})
	}

	var (
		res    agent.SyncResult
		stored = make(map[string]*agent.Agent, len(plan))
	)
	now := db.clock()
	err := db.inTx(ctx, "SyncManagedAgents", func(tx *sql.Tx) error {
		if err := db.d.lock(ctx, db, tx, db.d.SyncLock); err != nil {
			return fmt.Errorf("waiting for other syncs of managed agents: %w", err)
		}
		for _, p := range plan {
			cur, err := scanAgent(db.queryRow(ctx, tx, `SELECT `+agentColumns+` FROM agents WHERE id = ?`, p.a.ID))
			if errors.Is(err, sql.ErrNoRows) {
				a := *p.a
				a.Managed = true
				if err := db.insertAgent(ctx, tx, &a, p.spec, now); err != nil {
					return err
				}
				a.Version, a.CreatedAt, a.UpdatedAt = 1, now, now
				stored[a.ID] = &a
				res.Created++
				continue
			}
			if err != nil {
				return fmt.Errorf("reading agent %q: %w", p.a.ID, err)
			}
			if !cur.Managed && cur.Author != "" {
				return fault.New(fault.Conflict, "agent %q from the config already exists as an agent created through the API; rename one of them", p.a.ID)
			}
			curCanon, err := canonicalSpec(cur.Spec)
			if err != nil {
				return fmt.Errorf("reading agent %q: %w", p.a.ID, err)
			}
			changed := !bytes.Equal(curCanon, p.canon)
			switch {
			case changed:
				if err := db.updateAgent(ctx, tx, cur.ID, cur.Version, p.spec, p.a.Shared, now); err != nil {
					return err
				}
				cur.Spec, cur.Version, cur.UpdatedAt = p.a.Spec, cur.Version+1, now
				res.Updated++
			case !cur.Managed:
				res.Updated++
			default:
				res.Unchanged++
			}
			if !cur.Managed {
				if _, err := db.exec(ctx, tx, `UPDATE agents SET managed = ?, updated_at = ? WHERE id = ?`, true, db.timeArg(now), cur.ID); err != nil {
					return fmt.Errorf("managing agent %q again: %w", cur.ID, err)
				}
				cur.Managed, cur.UpdatedAt = true, now
			}
			stored[cur.ID] = cur
		}

		rows, err := db.query(ctx, tx, `SELECT id FROM agents WHERE managed`)
		if err != nil {
			return fmt.Errorf("listing managed agents: %w", err)
		}
		var release []string
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return fmt.Errorf("listing managed agents: %w", err)
			}
			if !listed[id] {
				release = append(release, id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("listing managed agents: %w", err)
		}
		for _, id := range release {
			if _, err := db.exec(ctx, tx, `UPDATE agents SET managed = ?, updated_at = ? WHERE id = ?`, false, db.timeArg(now), id); err != nil {
				return fmt.Errorf("releasing agent %q: %w", id, err)
			}
			res.Released++
		}
		return nil
	})
	if err != nil {
		return agent.SyncResult{}, err
	}
	for _, p := range plan {
		s := stored[p.a.ID]
		p.a.Author, p.a.Managed, p.a.Version, p.a.CreatedAt, p.a.UpdatedAt = s.Author, true, s.Version, s.CreatedAt, s.UpdatedAt
	}
	return res, nil
}
