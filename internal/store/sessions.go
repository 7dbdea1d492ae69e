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

const sessionColumns = `id, user_id, token_hash, created_at, expires_at, last_seen_at, user_agent`

// CreateSession inserts s. A session whose user does not exist is
// fault.NotFound. Its times are written back in their stored form.
func (db *DB) CreateSession(ctx context.Context, s *auth.Session) error {
	if s.ID == "" || s.Hash == "" {
		return fault.New(fault.Invalid, "session id and token hash are required")
	}
	created, expires, seen := db.stamp(s.CreatedAt), utc(s.ExpiresAt), db.stamp(s.LastSeenAt)
	_, err := db.exec(ctx, db.write,
		`INSERT INTO sessions (`+sessionColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.UserID, s.Hash, db.timeArg(created), db.timeArg(expires), db.timeArg(seen), s.UserAgent)
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", s.UserID)
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "session %q already exists", s.ID)
	default:
		return fmt.Errorf("creating session: %w", err)
	}
	s.CreatedAt, s.ExpiresAt, s.LastSeenAt = created, expires, seen
	return nil
}

// GetSessionByHash returns the session with that token hash, expired or not.
func (db *DB) GetSessionByHash(ctx context.Context, hash string) (*auth.Session, error) {
	var s auth.Session
	err := db.queryRow(ctx, db.read, `SELECT `+sessionColumns+` FROM sessions WHERE token_hash = ?`, hash).Scan(
		&s.ID, &s.UserID, &s.Hash, timeDest{&s.CreatedAt}, timeDest{&s.ExpiresAt}, timeDest{&s.LastSeenAt}, &s.UserAgent)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "session not found")
	}
	if err != nil {
		return nil, fmt.Errorf("getting session by hash: %w", err)
	}
	return &s, nil
}

// TouchSession records a use of a session: last seen at seen, expiring at
// expires. A time older than the one stored is ignored, so racing requests
// never move either back.
func (db *DB) TouchSession(ctx context.Context, id string, seen, expires time.Time) error {
	s, e := db.timeArg(seen), db.timeArg(expires)
	res, err := db.exec(ctx, db.write,
		`UPDATE sessions SET last_seen_at = CASE WHEN last_seen_at < ? THEN ? ELSE last_seen_at END,
			expires_at = CASE WHEN expires_at < ? THEN ? ELSE expires_at END WHERE id = ?`,
		s, s, e, e, id)
	return updated(res, err, "session", id, "touching")
}

// DeleteSession deletes a session.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	res, err := db.exec(ctx, db.write, `DELETE FROM sessions WHERE id = ?`, id)
	return updated(res, err, "session", id, "deleting")
}

// DeleteUserSessions deletes every session of a user but the one with id
// keep ("" keeps none) and returns how many it deleted.
func (db *DB) DeleteUserSessions(ctx context.Context, userID, keep string) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM sessions WHERE user_id = ? AND id <> ?`, userID, keep)
	return deleted(res, err, "deleting the sessions of user "+userID)
}

// DeleteExpiredSessions deletes the sessions that expired at or before now.
func (db *DB) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM sessions WHERE expires_at <= ?`, db.timeArg(now))
	return deleted(res, err, "deleting expired sessions")
}

// deleted returns how many rows a DELETE removed.
func deleted(res sql.Result, err error, doing string) (int, error) {
	if err != nil {
		return 0, fmt.Errorf("%s: %w", doing, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("%s: %w", doing, err)
	}
	return int(n), nil
}

// CreateSetupToken inserts a setup token; a token with the same hash is
// fault.Conflict.
func (db *DB) CreateSetupToken(ctx context.Context, t *auth.SetupToken) error {
	created := db.stamp(t.CreatedAt)
	_, err := db.exec(ctx, db.write, `INSERT INTO setup_tokens (token_hash, created_at, expires_at) VALUES (?, ?, ?)`,
		t.Hash, db.timeArg(created), db.timeArg(t.ExpiresAt))
	if err != nil {
		if db.d.IsUniqueViolation(err) {
			return fault.Wrap(fault.Conflict, err, "the setup token exists already")
		}
		return fmt.Errorf("creating a setup token: %w", err)
	}
	t.CreatedAt, t.ExpiresAt = created, utc(t.ExpiresAt)
	return nil
}

// DeleteExpiredSetupTokens deletes the setup tokens that expired at or before now.
func (db *DB) DeleteExpiredSetupTokens(ctx context.Context, now time.Time) (int, error) {
	res, err := db.exec(ctx, db.write, `DELETE FROM setup_tokens WHERE expires_at <= ?`, db.timeArg(now))
	return deleted(res, err, "deleting expired setup tokens")
}

// signInAdmins counts the admins who are not disabled and have a password or
// an identity.
const signInAdmins = `SELECT COUNT(*) FROM users u WHERE u.role = 'admin' AND NOT u.disabled
	AND (u.password_hash IS NOT NULL OR EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.id))`

// SignInAdmins counts the admins who can sign in: not disabled, with a
// password or an identity.
func (db *DB) SignInAdmins(ctx context.Context) (int, error) {
	var n int
	if err := db.queryRow(ctx, db.read, signInAdmins).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the admins who can sign in: %w", err)
	}
	return n, nil
}

// CompleteSetup creates the first admin u with the setup token whose hash is
// given, in one transaction: auth.ErrSetupDone when an admin can sign in
// already, auth.ErrBadSetupToken when no unexpired token has that hash; else
// the token is used, u created (a taken email is fault.Conflict) and every
// setup token deleted. Setups run one at a time (the dialect's SetupLock, or
// the engine's one writer), so two tokens used at once make one admin.
func (db *DB) CompleteSetup(ctx context.Context, hash string, now time.Time, u *auth.User) error {
	return db.inTx(ctx, "CompleteSetup", func(tx *sql.Tx) error {
		if err := db.d.lock(ctx, db, tx, db.d.SetupLock); err != nil {
			return fmt.Errorf("waiting for other setups: %w", err)
		}
		var n int
		if err := db.queryRow(ctx, tx, signInAdmins).Scan(&n); err != nil {
			return fmt.Errorf("counting the admins who can sign in: %w", err)
		}
		if n > 0 {
			return auth.ErrSetupDone
		}
		res, err := db.exec(ctx, tx, `DELETE FROM setup_tokens WHERE token_hash = ? AND expires_at > ?`, hash, db.timeArg(now))
		if used, err := deleted(res, err, "using the setup token"); err != nil {
			return err
		} else if used == 0 {
			return auth.ErrBadSetupToken
		}
		if err := db.insertUser(ctx, tx, u); err != nil {
			return err
		}
		if _, err := db.exec(ctx, tx, `DELETE FROM setup_tokens`); err != nil {
			return fmt.Errorf("deleting the setup tokens: %w", err)
		}
		return nil
	})
}

// CreateIdentity inserts an identity. Its user must exist (else
// fault.NotFound); an identity with the same issuer and subject is
// fault.Conflict.
func (db *DB) CreateIdentity(ctx context.Context, id *auth.Identity) error {
	created := db.stamp(id.CreatedAt)
	_, err := db.exec(ctx, db.write,
		`INSERT INTO identities (issuer, subject, user_id, email, created_at) VALUES (?, ?, ?, ?, ?)`,
		id.Issuer, id.Subject, id.UserID, id.Email, db.timeArg(created))
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", id.UserID)
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "the identity %q of %s exists already", id.Subject, id.Issuer)
	default:
		return fmt.Errorf("creating an identity: %w", err)
	}
	id.CreatedAt = created
	return nil
}

// GetIdentity returns the identity of subject at issuer.
func (db *DB) GetIdentity(ctx context.Context, issuer, subject string) (*auth.Identity, error) {
	var id auth.Identity
	err := db.queryRow(ctx, db.read,
		`SELECT issuer, subject, user_id, email, created_at FROM identities WHERE issuer = ? AND subject = ?`, issuer, subject).Scan(
		&id.Issuer, &id.Subject, &id.UserID, &id.Email, timeDest{&id.CreatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "no identity %q of %s", subject, issuer)
	}
	if err != nil {
		return nil, fmt.Errorf("getting an identity: %w", err)
	}
	return &id, nil
}
