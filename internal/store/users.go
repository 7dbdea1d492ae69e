package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/auth"
	"github.com/relay-ai/relay/internal/fault"
)

const userColumns = `id, email, display_name, role, password_hash, created_at, updated_at, disabled`

type rowScanner interface{ Scan(dest ...any) error }

func scanUser(r rowScanner) (*auth.User, error) {
	var u auth.User
	err := r.Scan(&u.ID, &u.Email, &u.DisplayName, &u.Role, nullStringDest{&u.PasswordHash},
		timeDest{&u.CreatedAt}, timeDest{&u.UpdatedAt}, &u.Disabled)
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// CreateUser inserts u. Its timestamps are stored in UTC to the microsecond and
// written back to u in that form; zero ones become the current time.
func (db *DB) CreateUser(ctx context.Context, u *auth.User) error {
	return db.insertUser(ctx, db.write, u)
}

func (db *DB) insertUser(ctx context.Context, q querier, u *auth.User) error {
	if u.ID == "" {
		return fault.New(fault.Invalid, "user id is required")
	}
	created, updated := db.stamp(u.CreatedAt), db.stamp(u.UpdatedAt)
	_, err := db.exec(ctx, q,
		`INSERT INTO users (`+userColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Email, u.DisplayName, string(u.Role), nullString(u.PasswordHash),
		db.timeArg(created), db.timeArg(updated), u.Disabled)
	if err != nil {
		if db.d.IsUniqueViolation(err) {
			return db.userConflict(ctx, q, u.ID, u.Email, err)
		}
		return fmt.Errorf("creating user %q: %w", u.ID, err)
	}
	u.CreatedAt, u.UpdatedAt = created, updated
	return nil
}

// stamp returns t in its stored form, or the current time when t is zero.
func (db *DB) stamp(t time.Time) time.Time {
	if t.IsZero() {
		return db.clock()
	}
	return utc(t)
}

// userConflict says which unique column of users a failed write collided on.
func (db *DB) userConflict(ctx context.Context, q querier, id, email string, cause error) error {
	var other string
	err := db.queryRow(ctx, q, `SELECT id FROM users WHERE email = ?`, email).Scan(&other)
	if err == nil && other != id {
		return fault.Wrap(fault.Conflict, cause, "a user with email %q already exists", email)
	}
	return fault.Wrap(fault.Conflict, cause, "user %q already exists", id)
}

// GetUser returns the user with that id.
func (db *DB) GetUser(ctx context.Context, id string) (*auth.User, error) {
	u, err := scanUser(db.queryRow(ctx, db.read, `SELECT `+userColumns+` FROM users WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "user %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting user %q: %w", id, err)
	}
	return u, nil
}

// GetUserByEmail returns the user with that email, compared exactly.
func (db *DB) GetUserByEmail(ctx context.Context, email string) (*auth.User, error) {
	u, err := scanUser(db.queryRow(ctx, db.read, `SELECT `+userColumns+` FROM users WHERE email = ?`, email))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "no user with email %q", email)
	}
	if err != nil {
		return nil, fmt.Errorf("getting user by email: %w", err)
	}
	return u, nil
}

// ListUsers returns every user, oldest first.
func (db *DB) ListUsers(ctx context.Context) ([]*auth.User, error) {
	rows, err := db.query(ctx, db.read, `SELECT `+userColumns+` FROM users ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	defer rows.Close()
	users := []*auth.User{}
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("listing users: %w", err)
		}
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing users: %w", err)
	}
	return users, nil
}

// UpdateUser stores u's email, display name, role, password hash, disabled
// flag and UpdatedAt (the current time when zero, written back to u).
// CreatedAt never changes.
func (db *DB) UpdateUser(ctx context.Context, u *auth.User) error {
	updated := db.stamp(u.UpdatedAt)
	res, err := db.exec(ctx, db.write,
		`UPDATE users SET email = ?, display_name = ?, role = ?, password_hash = ?, disabled = ?, updated_at = ? WHERE id = ?`,
		u.Email, u.DisplayName, string(u.Role), nullString(u.PasswordHash), u.Disabled, db.timeArg(updated), u.ID)
	if err != nil {
		if db.d.IsUniqueViolation(err) {
			return db.userConflict(ctx, db.read, u.ID, u.Email, err)
		}
		return fmt.Errorf("updating user %q: %w", u.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating user %q: %w", u.ID, err)
	} else if !ok {
		return fault.New(fault.NotFound, "user %q not found", u.ID)
	}
	u.UpdatedAt = updated
	return nil
}

const keyColumns = `id, user_id, name, prefix, hash, created_at, last_used_at, revoked_at`

func scanKey(r rowScanner) (*auth.Key, error) {
	var k auth.Key
	err := r.Scan(&k.ID, &k.UserID, &k.Name, &k.Prefix, &k.Hash,
		timeDest{&k.CreatedAt}, nullTimeDest{&k.LastUsedAt}, nullTimeDest{&k.RevokedAt})
	if err != nil {
		return nil, err
	}
	return &k, nil
}

// CreateKey inserts k. A key whose user does not exist is fault.NotFound; a key
// whose id or hash is taken is fault.Conflict. k's timestamps are written back in
// their stored form.
func (db *DB) CreateKey(ctx context.Context, k *auth.Key) error {
	if k.ID == "" {
		return fault.New(fault.Invalid, "key id is required")
	}
	created := db.stamp(k.CreatedAt)
	var lastUsed, revoked *time.Time
	if k.LastUsedAt != nil {
		t := utc(*k.LastUsedAt)
		lastUsed = &t
	}
	if k.RevokedAt != nil {
		t := utc(*k.RevokedAt)
		revoked = &t
	}
	_, err := db.exec(ctx, db.write,
		`INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.UserID, k.Name, k.Prefix, k.Hash, db.timeArg(created), db.nullTimeArg(lastUsed), db.nullTimeArg(revoked))
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", k.UserID)
	case db.d.IsUniqueViolation(err):
		var n int
		if e := db.queryRow(ctx, db.read, `SELECT COUNT(*) FROM api_keys WHERE id = ?`, k.ID).Scan(&n); e == nil && n > 0 {
			return fault.Wrap(fault.Conflict, err, "API key %q already exists", k.ID)
		}
		return fault.Wrap(fault.Conflict, err, "an API key with the same hash already exists")
	default:
		return fmt.Errorf("creating API key %q: %w", k.ID, err)
	}
	k.CreatedAt, k.LastUsedAt, k.RevokedAt = created, lastUsed, revoked
	return nil
}

// GetKey returns the key with that id, revoked or not.
func (db *DB) GetKey(ctx context.Context, id string) (*auth.Key, error) {
	k, err := scanKey(db.queryRow(ctx, db.read, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "API key %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting API key %q: %w", id, err)
	}
	return k, nil
}

// GetKeyByHash returns the key with that hash, revoked or not.
func (db *DB) GetKeyByHash(ctx context.Context, hash string) (*auth.Key, error) {
	k, err := scanKey(db.queryRow(ctx, db.read, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "API key not found")
	}
	if err != nil {
		return nil, fmt.Errorf("getting API key by hash: %w", err)
	}
	return k, nil
}

// ListKeys returns a user's keys, oldest first; none for an unknown user.
func (db *DB) ListKeys(ctx context.Context, userID string) ([]*auth.Key, error) {
	rows, err := db.query(ctx, db.read, `SELECT `+keyColumns+` FROM api_keys WHERE user_id = ? ORDER BY created_at, id`, userID)
	if err != nil {
		return nil, fmt.Errorf("listing API keys of user %q: %w", userID, err)
	}
	defer rows.Close()
	keys := []*auth.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("listing API keys of user %q: %w", userID, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing API keys of user %q: %w", userID, err)
	}
	return keys, nil
}

// RevokeKey marks a key revoked at the given time. Revoking a revoked key keeps
// the time of the first revocation.
func (db *DB) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := db.exec(ctx, db.write,
		`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?`, db.timeArg(at), id)
	return updated(res, err, "API key", id, "revoking")
}

// TouchKey records that a key was used at the given time. An earlier time than
// the one stored is ignored, so racing requests never move it backwards.
func (db *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	t := db.timeArg(at)
	res, err := db.exec(ctx, db.write,
		`UPDATE api_keys SET last_used_at = CASE WHEN last_used_at IS NULL OR last_used_at < ? THEN ? ELSE last_used_at END WHERE id = ?`,
		t, t, id)
	return updated(res, err, "API key", id, "touching")
}

// updated turns the result of an UPDATE or DELETE of the row id of a kind
// ("API key", "session") into an error: the database's, wrapped with what was
// being done, or fault.NotFound when no row had that id.
func updated(res sql.Result, err error, kind, id, doing string) error {
	if err != nil {
		return fmt.Errorf("%s %s %q: %w", doing, kind, id, err)
	}
	ok, err := affected(res)
	if err != nil {
		return fmt.Errorf("%s %s %q: %w", doing, kind, id, err)
	}
	if !ok {
		return fault.New(fault.NotFound, "%s %q not found", kind, id)
	}
	return nil
}
