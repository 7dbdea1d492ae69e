package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/run"
)

const elicitationColumns = `id, run_id, user_id, server, tool_call_id, mode, message, requested_schema, url,
	status, action, content, created_at, expires_at, answered_at`

// CreateElicitation inserts a pending question. Its times are written back in
// stored form; a missing run is fault.NotFound, a taken id fault.Conflict.
func (db *DB) CreateElicitation(ctx context.Context, e *run.Elicitation) error {
	if e.ID == "" {
		return fault.New(fault.Invalid, "elicitation id is required")
	}
	created, expires := db.stamp(e.CreatedAt), utc(e.ExpiresAt)
	_, err := db.exec(ctx, db.write,
		`INSERT INTO elicitations (`+elicitationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.RunID, e.UserID, e.Server, e.ToolCallID, e.Mode, e.Message, nullString(string(e.RequestedSchema)), e.URL,
		string(run.ElicitationPending), "", nil, db.timeArg(created), db.timeArg(expires), nil)
	switch {
	case err == nil:
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "run %q not found", e.RunID)
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "elicitation %q already exists", e.ID)
	default:
		return fmt.Errorf("creating elicitation: %w", err)
	}
	e.Status, e.CreatedAt, e.ExpiresAt = run.ElicitationPending, created, expires
	return nil
}

// GetElicitation returns one question; a missing one is fault.NotFound.
func (db *DB) GetElicitation(ctx context.Context, id string) (*run.Elicitation, error) {
	var (
		e               run.Elicitation
		schema, content sql.NullString
		status          string
	)
	err := db.queryRow(ctx, db.read, `SELECT `+elicitationColumns+` FROM elicitations WHERE id = ?`, id).Scan(
		&e.ID, &e.RunID, &e.UserID, &e.Server, &e.ToolCallID, &e.Mode, &e.Message, &schema, &e.URL,
		&status, &e.Action, &content, timeDest{&e.CreatedAt}, timeDest{&e.ExpiresAt}, nullTimeDest{&e.AnsweredAt})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "elicitation %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting elicitation: %w", err)
	}
	e.Status = run.ElicitationStatus(status)
	if schema.Valid {
		e.RequestedSchema = json.RawMessage(schema.String)
	}
	if content.Valid {
		e.Content = json.RawMessage(content.String)
	}
	return &e, nil
}

// SettleElicitation ends a pending question; only the first settles it, a
// later one is fault.Conflict.
func (db *DB) SettleElicitation(ctx context.Context, id string, status run.ElicitationStatus, action string, content json.RawMessage, at time.Time) error {
	res, err := db.exec(ctx, db.write,
		`UPDATE elicitations SET status = ?, action = ?, content = ?, answered_at = ? WHERE id = ? AND status = ?`,
		string(status), action, nullString(string(content)), db.timeArg(utc(at)), id, string(run.ElicitationPending))
	if err != nil {
		return fmt.Errorf("settling elicitation: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("settling elicitation: %w", err)
	} else if n == 0 {
		e, err := db.GetElicitation(ctx, id)
		if err != nil {
			return err
		}
		return fault.New(fault.Conflict, "elicitation %q is already %s", id, e.Status)
	}
	return nil
}
