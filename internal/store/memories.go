package store

import (
	"context"
	"fmt"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/memory"
)

// ListMemories returns a user's memory entries, oldest update first and then by
// key; an empty list for a user with none or an unknown user.
func (db *DB) ListMemories(ctx context.Context, userID string) ([]memory.Entry, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT key, value, tokens, updated_at FROM memories WHERE user_id = ? ORDER BY updated_at, key`, userID)
	if err != nil {
		return nil, fmt.Errorf("listing memories of user %q: %w", userID, err)
	}
	defer rows.Close()
	entries := []memory.Entry{}
	for rows.Next() {
		var e memory.Entry
		if err := rows.Scan(&e.Key, &e.Value, &e.Tokens, timeDest{&e.UpdatedAt}); err != nil {
			return nil, fmt.Errorf("listing memories of user %q: %w", userID, err)
		}
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing memories of user %q: %w", userID, err)
	}
	return entries, nil
}

// PutMemory stores e for the user, replacing the entry with the same key if
// there is one. A zero e.UpdatedAt is stored as the current time. A missing user
// is fault.NotFound.
func (db *DB) PutMemory(ctx context.Context, userID string, e memory.Entry) error {
	if e.Key == "" {
		return fault.New(fault.Invalid, "memory key is required")
	}
	_, err := db.exec(ctx, db.write,
		`INSERT INTO memories (user_id, key, value, tokens, updated_at) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (user_id, key) DO UPDATE SET value = excluded.value, tokens = excluded.tokens, updated_at = excluded.updated_at`,
		userID, e.Key, e.Value, e.Tokens, db.timeArg(db.stamp(e.UpdatedAt)))
	switch {
	case err == nil:
		return nil
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user %q not found", userID)
	}
	return fmt.Errorf("storing memory %q of user %q: %w", e.Key, userID, err)
}

// DeleteMemory removes the user's entry under key; fault.NotFound if absent.
func (db *DB) DeleteMemory(ctx context.Context, userID, key string) error {
	res, err := db.exec(ctx, db.write, `DELETE FROM memories WHERE user_id = ? AND key = ?`, userID, key)
	if err != nil {
		return fmt.Errorf("deleting memory %q of user %q: %w", key, userID, err)
	}
	ok, err := affected(res)
	if err != nil {
		return fmt.Errorf("deleting memory %q of user %q: %w", key, userID, err)
	}
	if !ok {
		return fault.New(fault.NotFound, "memory %q not found", key)
	}
	return nil
}
