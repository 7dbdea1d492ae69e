package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/vault"
)

// PutSecretVars upserts the vars of set (var name → sealed value) and deletes
// those named in del, in one transaction. A user who does not exist is
// fault.NotFound.
func (db *DB) PutSecretVars(ctx context.Context, userID, kind, name string, set map[string]string, del []string, now time.Time) error {
	at := db.timeArg(now)
	names := make([]string, 0, len(set))
	for v := range set {
		names = append(names, v)
	}
	slices.Sort(names) // the same order every time, for the engine's locks
	return db.inTx(ctx, "PutSecretVars", func(tx *sql.Tx) error {
		for _, v := range names {
			_, err := db.exec(ctx, tx, `INSERT INTO secret_vars (user_id, kind, name, var, sealed, updated_at) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT (user_id, kind, name, var) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`,
				userID, kind, name, v, set[v], at)
			switch {
			case err == nil:
			case db.d.IsForeignKeyViolation(err):
				return fault.Wrap(fault.NotFound, err, "user %q not found", userID)
			default:
				return fmt.Errorf("storing %s var %s of %s: %w", kind, v, name, err)
			}
		}
		for _, v := range del {
			if _, err := db.exec(ctx, tx, `DELETE FROM secret_vars WHERE user_id = ? AND kind = ? AND name = ? AND var = ?`,
				userID, kind, name, v); err != nil {
				return fmt.Errorf("deleting %s var %s of %s: %w", kind, v, name, err)
			}
		}
		return nil
	})
}

// SecretVars returns a user's vars of a kind and name, by var name.
func (db *DB) SecretVars(ctx context.Context, userID, kind, name string) ([]vault.Var, error) {
	rows, err := db.query(ctx, db.read, `SELECT var, sealed, updated_at FROM secret_vars
		WHERE user_id = ? AND kind = ? AND name = ? ORDER BY var`, userID, kind, name)
	if err != nil {
		return nil, fmt.Errorf("reading the %s vars of %s: %w", kind, name, err)
	}
	defer rows.Close()
	var out []vault.Var
	for rows.Next() {
		var v vault.Var
		if err := rows.Scan(&v.Var, &v.Sealed, timeDest{&v.UpdatedAt}); err != nil {
			return nil, fmt.Errorf("reading the %s vars of %s: %w", kind, name, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading the %s vars of %s: %w", kind, name, err)
	}
	return out, nil
}

// DeleteSecretVars deletes a user's vars of a kind and name and returns how
// many went.
func (db *DB) DeleteSecretVars(ctx context.Context, userID, kind, name string) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM secret_vars WHERE user_id = ? AND kind = ? AND name = ?`, userID, kind, name)
	return deleted(res, err, "deleting the "+kind+" vars of "+name)
}

const grantColumns = `user_id, server, sealed, expiry, issued, version, claim_owner, claim_until, updated_at`

func scanGrant(sc interface{ Scan(...any) error }, g *vault.StoredGrant) error {
	var expiry, until *time.Time
	err := sc.Scan(&g.UserID, &g.Server, &g.Sealed, nullTimeDest{&expiry}, timeDest{&g.Issued}, &g.Version,
		nullStringDest{&g.ClaimOwner}, nullTimeDest{&until}, timeDest{&g.UpdatedAt})
	g.Expiry, g.ClaimUntil = time.Time{}, time.Time{}
	if expiry != nil {
		g.Expiry = *expiry
	}
	if until != nil {
		g.ClaimUntil = *until
	}
	return err
}

// optTime is the argument of a time that may be zero (NULL).
func (db *DB) optTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return db.timeArg(t)
}

// PutGrant inserts or replaces a user's grant of a server: its version moves
// on (1 for a new grant) and any claim of a refresh is dropped, so that a
// refresh under way does not overwrite it. g's version and times are written
// back in their stored form.
func (db *DB) PutGrant(ctx context.Context, g *vault.StoredGrant) error {
	updated, issued := db.stamp(g.UpdatedAt), db.stamp(g.Issued)
	var version int64
	err := db.queryRow(ctx, db.write, `INSERT INTO oauth_grants (`+grantColumns+`) VALUES (?, ?, ?, ?, ?, 1, NULL, NULL, ?)
		ON CONFLICT (user_id, server) DO UPDATE SET sealed = excluded.sealed, expiry = excluded.expiry, issued = excluded.issued,
			version = oauth_grants.version + 1, claim_owner = NULL, claim_until = NULL, updated_at = excluded.updated_at
		RETURNING version`,
		g.UserID, g.Server, g.Sealed, db.optTime(g.Expiry), db.timeArg(issued), db.timeArg(updated)).Scan(&version)
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", g.UserID)
	default:
		return fmt.Errorf("storing the grant of %s: %w", g.Server, db.refused(err))
	}
	g.Version, g.UpdatedAt, g.Issued, g.ClaimOwner, g.ClaimUntil = version, updated, issued, "", time.Time{}
	if !g.Expiry.IsZero() {
		g.Expiry = utc(g.Expiry)
	}
	return nil
}

// GetGrant returns a user's grant of a server, read from the write pool so
// that a replica waiting for another's refresh sees it at once.
func (db *DB) GetGrant(ctx context.Context, userID, server string) (*vault.StoredGrant, error) {
	var g vault.StoredGrant
	err := scanGrant(db.queryRow(ctx, db.write, `SELECT `+grantColumns+` FROM oauth_grants WHERE user_id = ? AND server = ?`, userID, server), &g)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "no grant of %s", server)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the grant of %s: %w", server, err)
	}
	return &g, nil
}

// ClaimGrant claims the refresh of a grant at version for owner until until,
// unless another claim lasts past now. One UPDATE decides, so that of the
// replicas claiming at once exactly one wins.
func (db *DB) ClaimGrant(ctx context.Context, userID, server string, version int64, owner string, now, until time.Time) (bool, error) {
	res, err := db.exec(ctx, db.write, `UPDATE oauth_grants SET claim_owner = ?, claim_until = ?
		WHERE user_id = ? AND server = ? AND version = ? AND (claim_owner IS NULL OR claim_until <= ?)`,
		owner, db.timeArg(until), userID, server, version, db.timeArg(now))
	if err != nil {
		return false, fmt.Errorf("claiming the refresh of the grant of %s: %w", server, err)
	}
	return affected(res)
}

// RefreshGrant replaces the grant at g.Version, while owner holds its claim,
// with g: its version moves on (written back to g) and the claim is dropped.
func (db *DB) RefreshGrant(ctx context.Context, g *vault.StoredGrant, owner string) (bool, error) {
	return db.replaceGrant(ctx, g, ` AND claim_owner = ?`, owner)
}

// ReplaceGrant replaces the grant at g.Version with g: its version moves on
// (written back to g) and any claim is dropped.
func (db *DB) ReplaceGrant(ctx context.Context, g *vault.StoredGrant) (bool, error) {
	return db.replaceGrant(ctx, g, "")
}

// replaceGrant replaces the grant at g.Version, when the condition also
// holds (an SQL fragment and its arguments), with g, as RefreshGrant and
// ReplaceGrant say.
func (db *DB) replaceGrant(ctx context.Context, g *vault.StoredGrant, cond string, condArgs ...any) (bool, error) {
	updated, issued := db.stamp(g.UpdatedAt), db.stamp(g.Issued)
	args := append([]any{g.Sealed, db.optTime(g.Expiry), db.timeArg(issued), db.timeArg(updated), g.UserID, g.Server, g.Version}, condArgs...)
	res, err := db.exec(ctx, db.write, `UPDATE oauth_grants SET sealed = ?, expiry = ?, issued = ?, version = version + 1,
			claim_owner = NULL, claim_until = NULL, updated_at = ?
		WHERE user_id = ? AND server = ? AND version = ?`+cond, args...)
	if err != nil {
		return false, fmt.Errorf("storing the grant of %s: %w", g.Server, err)
	}
	ok, err := affected(res)
	if ok {
		g.Version++
		g.UpdatedAt, g.Issued, g.ClaimOwner, g.ClaimUntil = updated, issued, "", time.Time{}
		if !g.Expiry.IsZero() {
			g.Expiry = utc(g.Expiry)
		}
	}
	return ok, err
}

// ReleaseGrant drops owner's claim of a grant, if it still holds it.
func (db *DB) ReleaseGrant(ctx context.Context, userID, server, owner string) error {
	_, err := db.exec(ctx, db.write, `UPDATE oauth_grants SET claim_owner = NULL, claim_until = NULL
		WHERE user_id = ? AND server = ? AND claim_owner = ?`, userID, server, owner)
	if err != nil {
		return fmt.Errorf("releasing the claim of the grant of %s: %w", server, err)
	}
	return nil
}

// DeleteGrant deletes a user's grant of a server.
func (db *DB) DeleteGrant(ctx context.Context, userID, server string) error {
	res, err := db.exec(ctx, db.write, `DELETE FROM oauth_grants WHERE user_id = ? AND server = ?`, userID, server)
	return updated(res, err, "grant of", server, "deleting")
}

// DeleteGrantAt deletes a user's grant of a server while it is at version.
func (db *DB) DeleteGrantAt(ctx context.Context, userID, server string, version int64) (bool, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM oauth_grants WHERE user_id = ? AND server = ? AND version = ?`, userID, server, version)
	if err != nil {
		return false, fmt.Errorf("deleting the grant of %s: %w", server, err)
	}
	return affected(res)
}

// DeleteUserGrants deletes every grant of a user and returns them.
func (db *DB) DeleteUserGrants(ctx context.Context, userID string) ([]vault.StoredGrant, error) {
	rows, err := db.query(ctx, db.write, `DELETE FROM oauth_grants WHERE user_id = ? RETURNING `+grantColumns, userID)
	if err != nil {
		return nil, fmt.Errorf("deleting the grants of user %s: %w", userID, err)
	}
	defer rows.Close()
	var out []vault.StoredGrant
	for rows.Next() {
		var g vault.StoredGrant
		if err := scanGrant(rows, &g); err != nil {
			return nil, fmt.Errorf("deleting the grants of user %s: %w", userID, err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("deleting the grants of user %s: %w", userID, err)
	}
	slices.SortFunc(out, func(a, b vault.StoredGrant) int { return strings.Compare(a.Server, b.Server) })
	return out, nil
}

// CreateFlow inserts a pending OAuth flow. A user who does not exist is
// fault.NotFound, a taken state hash fault.Conflict.
func (db *DB) CreateFlow(ctx context.Context, f *vault.Flow) error {
	_, err := db.exec(ctx, db.write, `INSERT INTO oauth_flows (state_hash, user_id, server, sealed, expires_at) VALUES (?, ?, ?, ?, ?)`,
		f.StateHash, f.UserID, f.Server, f.Sealed, db.timeArg(f.ExpiresAt))
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", f.UserID)
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "the OAuth flow exists already")
	default:
		return fmt.Errorf("storing an OAuth flow of %s: %w", f.Server, err)
	}
	f.ExpiresAt = utc(f.ExpiresAt)
	return nil
}

// TakeFlow deletes the flow with that state hash and returns it when it
// expires after now: a flow is used once, and an expired one never.
func (db *DB) TakeFlow(ctx context.Context, stateHash string, now time.Time) (*vault.Flow, error) {
	var f vault.Flow
	err := db.queryRow(ctx, db.write, `DELETE FROM oauth_flows WHERE state_hash = ?
		RETURNING state_hash, user_id, server, sealed, expires_at`, stateHash).Scan(
		&f.StateHash, &f.UserID, &f.Server, &f.Sealed, timeDest{&f.ExpiresAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "no such OAuth flow")
	}
	if err != nil {
		return nil, fmt.Errorf("taking an OAuth flow: %w", err)
	}
	if !f.ExpiresAt.After(now) {
		return nil, fault.New(fault.NotFound, "the OAuth flow expired")
	}
	return &f, nil
}

// DeleteExpiredFlows deletes the flows that expired at or before now.
func (db *DB) DeleteExpiredFlows(ctx context.Context, now time.Time) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM oauth_flows WHERE expires_at <= ?`, db.timeArg(now))
	return deleted(res, err, "deleting expired OAuth flows")
}

// sealedTable is a table of sealed values and the columns of its rows'
// identity, in the order of vault.Sealed's Key.
type sealedTable struct {
	table vault.Table
	key   []string
}

var sealedTables = []sealedTable{
	{vault.TableVars, []string{"user_id", "kind", "name", "var"}},
	{vault.TableGrants, []string{"user_id", "server"}},
	{vault.TableFlows, []string{"state_hash", "user_id", "server"}},
}

// StaleSealed returns up to limit sealed values of every table that do not
// start with prefix.
func (db *DB) StaleSealed(ctx context.Context, prefix string, limit int) ([]vault.Sealed, error) {
	var out []vault.Sealed
	for _, t := range sealedTables {
		if len(out) >= limit {
			break
		}
		cols := strings.Join(t.key, ", ")
		rows, err := db.query(ctx, db.read, `SELECT `+cols+`, sealed FROM `+string(t.table)+`
			WHERE substr(sealed, 1, ?) <> ? ORDER BY `+cols+` LIMIT ?`, len(prefix), prefix, limit-len(out))
		if err != nil {
			return nil, fmt.Errorf("listing the values of %s to re-seal: %w", t.table, err)
		}
		n := len(t.key)
		for rows.Next() {
			s := vault.Sealed{Table: t.table, Key: make([]string, n)}
			dest := make([]any, n+1)
			for i := range s.Key {
				dest[i] = &s.Key[i]
			}
			dest[n] = &s.Sealed
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return nil, fmt.Errorf("listing the values of %s to re-seal: %w", t.table, err)
			}
			out = append(out, s)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("listing the values of %s to re-seal: %w", t.table, err)
		}
	}
	return out, nil
}

// Reseal replaces the value of s's row with sealed, if it still holds
// s.Sealed: a value written meanwhile is newer and stays.
func (db *DB) Reseal(ctx context.Context, s vault.Sealed, sealed string) (bool, error) {
	i := slices.IndexFunc(sealedTables, func(t sealedTable) bool { return t.table == s.Table })
	if i < 0 || len(s.Key) != len(sealedTables[i].key) {
		return false, fault.New(fault.Invalid, "no table %q of sealed values with a key of %d columns", s.Table, len(s.Key))
	}
	args := []any{sealed}
	where := ""
	for j, k := range s.Key {
		args = append(args, k)
		where += sealedTables[i].key[j] + " = ? AND "
	}
	args = append(args, s.Sealed)
	res, err := db.exec(ctx, db.write, `UPDATE `+string(s.Table)+` SET sealed = ? WHERE `+where+`sealed = ?`, args...)
	if err != nil {
		return false, fmt.Errorf("re-sealing a value of %s: %w", s.Table, err)
	}
	return affected(res)
}
