package store

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/ident"
	"github.com/relay-ai/relay/internal/run"
)

const runColumns = `id, user_id, agent_id, conversation_id, user_message_id, response_message_id, status, error,
	prompt_tokens, completion_tokens, total_tokens, created_at, started_at, finished_at`

func scanRun(r rowScanner) (*run.Run, error) {
	var x run.Run
	err := r.Scan(&x.ID, &x.UserID, &x.AgentID, &x.ConversationID, &x.UserMessageID, nullStringDest{&x.ResponseMessageID},
		&x.Status, &x.Error, &x.Usage.PromptTokens, &x.Usage.CompletionTokens, &x.Usage.TotalTokens,
		timeDest{&x.CreatedAt}, nullTimeDest{&x.StartedAt}, nullTimeDest{&x.FinishedAt})
	if err != nil {
		return nil, err
	}
	return &x, nil
}

// checkStatus refuses a status that is not one of run's, since FailStaleRuns and
// every reader rely on knowing them all.
func checkStatus(id string, s run.Status) error {
	switch s {
	case run.StatusQueued, run.StatusRunning, run.StatusSucceeded, run.StatusFailed, run.StatusCancelled:
		return nil
	}
	return fault.New(fault.Invalid, "run %q: unknown status %q", id, s)
}

// storedPtr is *t in stored form, or nil.
func storedPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	s := utc(*t)
	return &s
}

// runStamps are the status and times createRun stores for r and writes
// back: an empty status is queued.
func (db *DB) runStamps(r *run.Run) (status run.Status, created time.Time, started, finished *time.Time) {
	status = r.Status
	if status == "" {
		status = run.StatusQueued
	}
	return status, db.stamp(r.CreatedAt), storedPtr(r.StartedAt), storedPtr(r.FinishedAt)
}

// CreateRun inserts r. An empty status is queued. Its timestamps are written
// back to r in stored form; a zero CreatedAt is the current time. The run names
// the DB's node (OnNode), if any, as the process that runs it. A missing user
// or conversation is fault.NotFound; a taken id fault.Conflict.
func (db *DB) CreateRun(ctx context.Context, r *run.Run) error {
	return db.createRun(ctx, db.write, r)
}

func (db *DB) createRun(ctx context.Context, q querier, r *run.Run) error {
	if r.ID == "" {
		return fault.New(fault.Invalid, "run id is required")
	}
	status, created, started, finished := db.runStamps(r)
	if err := checkStatus(r.ID, status); err != nil {
		return err
	}
	_, err := db.exec(ctx, q,
		`INSERT INTO runs (`+runColumns+`, node_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.UserID, r.AgentID, r.ConversationID, r.UserMessageID, nullString(r.ResponseMessageID),
		string(status), r.Error, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens,
		db.timeArg(created), db.nullTimeArg(started), db.nullTimeArg(finished), nullString(db.node))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "run %q already exists", r.ID)
	case db.d.IsForeignKeyViolation(err):
		return db.runParentMissing(ctx, q, r, err)
	default:
		return fmt.Errorf("creating run %q: %w", r.ID, err)
	}
	r.Status, r.CreatedAt, r.StartedAt, r.FinishedAt = status, created, started, finished
	return nil
}

// runParentMissing says which row a run referred to is missing: its
// conversation or its user.
func (db *DB) runParentMissing(ctx context.Context, q querier, r *run.Run, cause error) error {
	var n int
	err := db.queryRow(ctx, q, `SELECT COUNT(*) FROM conversations WHERE id = ?`, r.ConversationID).Scan(&n)
	if err == nil && n == 0 {
		return fault.Wrap(fault.NotFound, cause, "conversation of run %q: conversation %q not found", r.ID, r.ConversationID)
	}
	return fault.Wrap(fault.NotFound, cause, "user of run %q: user %q not found", r.ID, r.UserID)
}

// UpdateRun stores r's status, error, usage, response message, StartedAt and
// FinishedAt, and writes the times back in stored form. Its user, agent,
// conversation, user message and CreatedAt never change.
func (db *DB) UpdateRun(ctx context.Context, r *run.Run) error {
	return db.updateRun(ctx, db.write, r)
}

func (db *DB) updateRun(ctx context.Context, q querier, r *run.Run) error {
	return db.setRun(ctx, q, r, false)
}

// endRun stores r's end, as updateRun does, on a run still queued or
// running: a run that ended already keeps its end (it was failed for a
// process taken for dead, which went on and ended it again), and that is
// fault.Conflict.
func (db *DB) endRun(ctx context.Context, q querier, r *run.Run) error {
	return db.setRun(ctx, q, r, true)
}

// setRun stores r's state, with going only while the run is queued or running.
func (db *DB) setRun(ctx context.Context, q querier, r *run.Run, going bool) error {
	if err := checkStatus(r.ID, r.Status); err != nil {
		return err
	}
	started, finished := storedPtr(r.StartedAt), storedPtr(r.FinishedAt)
	query := `UPDATE runs SET status = ?, error = ?, prompt_tokens = ?, completion_tokens = ?, total_tokens = ?,
			response_message_id = ?, started_at = ?, finished_at = ? WHERE id = ?`
	args := []any{string(r.Status), r.Error, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens,
		nullString(r.ResponseMessageID), db.nullTimeArg(started), db.nullTimeArg(finished), r.ID}
	if going {
		query += ` AND status IN (?, ?)`
		args = append(args, string(run.StatusQueued), string(run.StatusRunning))
	}
	res, err := db.exec(ctx, q, query, args...)
	if err != nil {
		return fmt.Errorf("updating run %q: %w", r.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating run %q: %w", r.ID, err)
	} else if !ok {
		if !going {
			return fault.New(fault.NotFound, "run %q not found", r.ID)
		}
		var status string
		err := db.queryRow(ctx, q, `SELECT status FROM runs WHERE id = ?`, r.ID).Scan(&status)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fault.New(fault.NotFound, "run %q not found", r.ID)
		case err != nil:
			return fmt.Errorf("ending run %q: %w", r.ID, err)
		}
		return fault.Wrap(fault.Conflict, run.ErrEnded, "run %q is %s already", r.ID, status)
	}
	r.StartedAt, r.FinishedAt = started, finished
	return nil
}

// GetRun returns the run with that id.
func (db *DB) GetRun(ctx context.Context, id string) (*run.Run, error) {
	r, err := scanRun(db.queryRow(ctx, db.read, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "run %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting run %q: %w", id, err)
	}
	return r, nil
}

// ListRuns lists the runs matching f, oldest first.
func (db *DB) ListRuns(ctx context.Context, f run.RunFilter) ([]*run.Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs WHERE 1 = 1`
	var args []any
	if f.UserID != "" {
		q += ` AND user_id = ?`
		args = append(args, f.UserID)
	}
	if f.AgentID != "" {
		q += ` AND agent_id = ?`
		args = append(args, f.AgentID)
	}
	if f.Status != "" {
		q += ` AND status = ?`
		args = append(args, string(f.Status))
	}
	if !f.Since.IsZero() {
		q += ` AND created_at >= ?`
		args = append(args, db.timeArg(f.Since))
	}
	rows, err := db.query(ctx, db.read, q+` ORDER BY created_at, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	defer rows.Close()
	var out []*run.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("listing runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// FailStaleRuns fails the runs still queued or running that started before
// cutoff (a queued run that never started counts from its CreatedAt), as
// failRuns does, and returns how many. A process calls it as it starts, with
// its start time, for the runs that a stopped process left behind.
func (db *DB) FailStaleRuns(ctx context.Context, cutoff time.Time, reason string) (int, error) {
	var n int
	err := db.inTx(ctx, "FailStaleRuns", func(tx *sql.Tx) error {
		var err error
		n, err = db.failRuns(ctx, tx, `COALESCE(started_at, created_at) < ?`, []any{db.timeArg(cutoff)}, reason)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("failing stale runs: %w", err)
	}
	return n, nil
}

// failRuns ends, in tx, the runs still queued or running that match where
// (with its args), whose process is gone and will never end them: each is
// marked failed, with reason as its error and the current time as FinishedAt;
// gets an answer in its conversation, when it has none, with the text it had
// streamed as far as it was stored (run.Streamed) and an error part saying
// why it stopped; and its event log is closed with an error and a
// run.finished event (run.FailedEnd), so that replaying its events ends as a
// live run's does; its questions still pending are cancelled (action
// "cancel"), as a live run's are when it is cancelled. It is the one way a
// run is failed for a dead process.
func (db *DB) failRuns(ctx context.Context, tx *sql.Tx, where string, args []any, reason string) (int, error) {
	rows, err := db.query(ctx, tx, `SELECT `+runColumns+` FROM runs WHERE status IN (?, ?) AND `+where,
		append([]any{string(run.StatusQueued), string(run.StatusRunning)}, args...)...)
	if err != nil {
		return 0, err
	}
	var runs []*run.Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			rows.Close()
			return 0, err
		}
		runs = append(runs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	for _, r := range runs {
		events, err := db.listEvents(ctx, tx, r.ID, 0)
		if err != nil {
			return 0, fmt.Errorf("failing run %q: %w", r.ID, err)
		}
		finished := db.clock()
		r.Status, r.Error, r.FinishedAt = run.StatusFailed, reason, &finished
		var answer *run.Message
		if r.ResponseMessageID != "" {
			answer, err = scanMessage(db.queryRow(ctx, tx, messageSelect+` WHERE m.id = ?`, r.ResponseMessageID))
			switch {
			case errors.Is(err, sql.ErrNoRows): // run.finished then names no answer
			case err != nil:
				return 0, fmt.Errorf("failing run %q: reading its answer: %w", r.ID, err)
			}
		} else {
			// What the run had streamed is kept: its stored events hold the
			// text its user may already have read.
			text, parts := run.Streamed(events)
			answer = &run.Message{ID: ident.Ordered("msg_"), ConversationID: r.ConversationID, ParentID: r.UserMessageID,
				Role: run.RoleAssistant, AgentID: r.AgentID, Text: text, RunID: r.ID, CreatedAt: finished,
				Parts: append(parts, run.Part{Type: run.PartError, AgentID: r.AgentID, Text: reason})}
			if err := db.addMessage(ctx, tx, answer); err != nil {
				return 0, fmt.Errorf("failing run %q: answering it: %w", r.ID, err)
			}
			r.ResponseMessageID = answer.ID
		}
		if answer != nil {
			answer.RunStatus = r.Status // as the answer is read from now on
		}
		if err := db.updateRun(ctx, tx, r); err != nil {
			return 0, fmt.Errorf("failing run %q: %w", r.ID, err)
		}
		var last int64
		if len(events) > 0 {
			last = events[len(events)-1].Seq
		}
		if err := db.appendEvents(ctx, tx, run.FailedEnd(r, answer, last)); err != nil {
			return 0, fmt.Errorf("failing run %q: closing its events: %w", r.ID, err)
		}
		// Its questions still waiting have no one left to wait for their
		// answers: an answer given now is refused as it is once a question
		// is cancelled.
		if _, err := db.exec(ctx, tx,
			`UPDATE elicitations SET status = ?, action = ?, answered_at = ? WHERE run_id = ? AND status = ?`,
			string(run.ElicitationCancelled), "cancel", db.timeArg(finished), r.ID, string(run.ElicitationPending)); err != nil {
			return 0, fmt.Errorf("failing run %q: cancelling its questions: %w", r.ID, err)
		}
	}
	return len(runs), nil
}

// AppendEvents stores events, in one transaction: all of them or, on error, none.
// Each must have a run, a type, a Seq of 1 or more, and Data that is JSON or nil.
// A Seq the run has already is fault.Conflict; a missing run fault.NotFound. Zero
// CreatedAt are the current time; the stored times are written back to events.
func (db *DB) AppendEvents(ctx context.Context, events []run.Event) error {
	if len(events) == 0 {
		return nil
	}
	if err := checkEvents(events); err != nil {
		return err
	}
	return db.inTx(ctx, "AppendEvents", func(tx *sql.Tx) error { return db.appendEvents(ctx, tx, events) })
}

// checkEvents refuses events that AppendEvents may not store.
func checkEvents(events []run.Event) error {
	for _, e := range events {
		switch {
		case e.RunID == "":
			return fault.New(fault.Invalid, "event %d: run id is required", e.Seq)
		case e.Seq < 1:
			return fault.New(fault.Invalid, "event of run %q: seq %d is not 1 or more", e.RunID, e.Seq)
		case e.Type == "":
			return fault.New(fault.Invalid, "event %d of run %q: type is required", e.Seq, e.RunID)
		case e.Data != nil && !validJSON(e.Data):
			return fault.New(fault.Invalid, "event %d of run %q: data is not JSON", e.Seq, e.RunID)
		}
	}
	return nil
}

// appendEvents inserts checked events in tx, with one prepared statement, and
// writes their stored times back.
func (db *DB) appendEvents(ctx context.Context, tx *sql.Tx, events []run.Event) error {
	if len(events) == 0 {
		return nil
	}
	stmt, err := db.txStmt(ctx, tx, `INSERT INTO run_events (run_id, seq, type, data, created_at) VALUES (?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("storing events: %w", err)
	}
	defer stmt.Close()
	for i := range events {
		e := &events[i]
		var data any
		if e.Data != nil {
			data = string(e.Data)
		}
		created := db.stamp(e.CreatedAt)
		_, err := db.execStmt(ctx, stmt, e.RunID, e.Seq, e.Type, data, db.timeArg(created))
		switch {
		case err == nil:
		case db.d.IsUniqueViolation(err):
			return fault.Wrap(fault.Conflict, err, "run %q already has event %d", e.RunID, e.Seq)
		case db.d.IsForeignKeyViolation(err):
			return fault.Wrap(fault.NotFound, err, "event %d: run %q not found", e.Seq, e.RunID)
		default:
			return fmt.Errorf("storing event %d of run %q: %w", e.Seq, e.RunID, err)
		}
		e.CreatedAt = created
	}
	return nil
}

// StartRun stores, in one transaction, the conversation of s (created when
// s.NewConversation, otherwise its agent and UpdatedAt saved, its stored
// title kept), the user's message and the run, as CreateConversation or
// UpdateConversation, AddMessage and CreateRun do, with their faults. On
// error nothing is stored.
func (db *DB) StartRun(ctx context.Context, s *run.RunStart) error {
	if s.Conversation == nil || s.Message == nil || s.Run == nil {
		return fault.New(fault.Invalid, "starting a run needs its conversation, message and run")
	}
	if db.behind != nil && s.NewConversation {
		return db.later(ctx, "StartRun", db.startRun(context.WithoutCancel(ctx), db.startBehind(s)))
	}
	return db.inTx(ctx, "StartRun", db.startRun(ctx, s))
}

// startBehind writes back to s now what StartRun writes back, for a start
// written behind (WriteBehind), and returns a copy to store later.
func (db *DB) startBehind(s *run.RunStart) *run.RunStart {
	c, m, r := s.Conversation, s.Message, s.Run
	c.CreatedAt, c.UpdatedAt = db.conversationTimes(c)
	m.CreatedAt = db.stamp(m.CreatedAt)
	r.Status, r.CreatedAt, r.StartedAt, r.FinishedAt = db.runStamps(r)
	cc, mc, rc := *c, *m, *r
	return &run.RunStart{Conversation: &cc, NewConversation: s.NewConversation, Message: &mc, Run: &rc}
}

// startRun is StartRun's transaction.
func (db *DB) startRun(ctx context.Context, s *run.RunStart) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		if err := db.checkNode(ctx, tx); err != nil {
			return err
		}
		var err error
		if s.NewConversation {
			err = db.createConversation(ctx, tx, s.Conversation)
		} else if err = db.touchConversation(ctx, tx, s.Conversation); err == nil {
			// The update holds the conversation's row until the commit, so
			// that of two messages sent at once the second sees the first's
			// run here.
			err = db.refuseGoing(ctx, tx, s.Conversation.ID)
		}
		if err != nil {
			return err
		}
		if err := db.addMessage(ctx, tx, s.Message); err != nil {
			return err
		}
		return db.createRun(ctx, tx, s.Run)
	}
}

// refuseGoing is fault.Conflict, naming the run, when a run of conversation
// convID is queued or running: a conversation answers one message at a time
// (docs/api.md, POST /api/chat).
func (db *DB) refuseGoing(ctx context.Context, q querier, convID string) error {
	going, err := db.goingRun(ctx, q, convID)
	if err != nil || going == "" {
		return err
	}
	return fault.New(fault.Conflict, "conversation %q is still answering a message (run %s): wait for its answer, or abort it (POST /api/runs/%s/abort)", convID, going, going)
}

// goingRun is the id of a run of conversation convID that is queued or
// running; "" when there is none.
func (db *DB) goingRun(ctx context.Context, q querier, convID string) (string, error) {
	var going string
	err := db.queryRow(ctx, q, `SELECT id FROM runs WHERE conversation_id = ? AND status IN (?, ?) LIMIT 1`,
		convID, run.StatusQueued, run.StatusRunning).Scan(&going)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("reading the runs of conversation %q: %w", convID, err)
	}
	return going, nil
}

// WriteBatch stores b in one transaction, all of it or, on error, none: its
// events, tool calls, model requests, messages and run updates, in that order,
// each as AppendEvents, AddToolCall, AddModelRequest, AddMessage and UpdateRun
// would, with their faults and the stored times written back. The events are
// kept a row per run (appendEventBatches): their Seqs must be new for their
// runs, which is checked within the batch only. A run update is a run's end:
// it changes only a run still queued or running, and one that has ended
// already (failed for a process taken for dead) is fault.Conflict. A DB on a
// node (OnNode) that was reaped stores nothing: run.ErrTakenForDead.
func (db *DB) WriteBatch(ctx context.Context, b *run.Batch) error {
	if err := checkEvents(b.Events); err != nil {
		return err
	}
	if db.behind != nil {
		c, wctx := db.batchBehind(b), context.WithoutCancel(ctx)
		return db.laterInPieces(ctx, "WriteBatch", db.writeBatch(wctx, c), func() []func(*sql.Tx) error {
			var fns []func(*sql.Tx) error
			for _, p := range batchPieces(c) {
				fns = append(fns, db.writeBatch(wctx, p))
			}
			return fns
		})
	}
	return db.inTx(ctx, "WriteBatch", db.writeBatch(ctx, b))
}

// batchBehind writes back to b now what WriteBatch writes back, for a batch
// written behind (WriteBehind), and returns a copy to store later.
func (db *DB) batchBehind(b *run.Batch) *run.Batch {
	c := &run.Batch{Events: slices.Clone(b.Events)}
	for i := range b.Events {
		b.Events[i].CreatedAt = db.stamp(b.Events[i].CreatedAt)
		c.Events[i].CreatedAt = b.Events[i].CreatedAt
	}
	for _, t := range b.ToolCalls {
		t.CreatedAt, t.Duration = db.stamp(t.CreatedAt), storedDuration(t.Duration)
		tc := *t
		c.ToolCalls = append(c.ToolCalls, &tc)
	}
	for _, r := range b.Requests {
		r.SentAt, r.FinishedAt = db.stamp(r.SentAt), storedPtr(r.FinishedAt)
		rc := *r
		c.Requests = append(c.Requests, &rc)
	}
	for _, m := range b.Messages {
		m.CreatedAt = db.stamp(m.CreatedAt)
		mc := *m
		c.Messages = append(c.Messages, &mc)
	}
	for _, r := range b.Runs {
		r.StartedAt, r.FinishedAt = storedPtr(r.StartedAt), storedPtr(r.FinishedAt)
		rc := *r
		c.Runs = append(c.Runs, &rc)
	}
	return c
}

// batchPieces splits a batch of many runs' records into parts that stand
// alone, as the run package's writer stores a batch the store refused: each
// run's events, each tool call, each model request, and each run's end with
// its answer. A batch written behind is tried again in them when refused, so
// that one refused record loses its own part alone (the others' runs ending
// as they should).
func batchPieces(b *run.Batch) []*run.Batch {
	var pieces []*run.Batch
	events := map[string]*run.Batch{}
	for _, e := range b.Events {
		p := events[e.RunID]
		if p == nil {
			p = &run.Batch{}
			events[e.RunID] = p
			pieces = append(pieces, p)
		}
		p.Events = append(p.Events, e)
	}
	for _, c := range b.ToolCalls {
		pieces = append(pieces, &run.Batch{ToolCalls: []*run.ToolCall{c}})
	}
	for _, r := range b.Requests {
		pieces = append(pieces, &run.Batch{Requests: []*run.ModelRequest{r}})
	}
	ends := map[string]*run.Batch{}
	end := func(runID string) *run.Batch {
		p := ends[runID]
		if p == nil {
			p = &run.Batch{}
			ends[runID] = p
			pieces = append(pieces, p)
		}
		return p
	}
	for _, m := range b.Messages {
		p := end(m.RunID)
		p.Messages = append(p.Messages, m)
	}
	for _, r := range b.Runs {
		p := end(r.ID)
		p.Runs = append(p.Runs, r)
	}
	return pieces
}

// writeBatch is WriteBatch's transaction.
func (db *DB) writeBatch(ctx context.Context, b *run.Batch) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		if err := db.checkNode(ctx, tx); err != nil {
			return err
		}
		if err := db.appendEventBatches(ctx, tx, b.Events); err != nil {
			return err
		}
		for _, c := range b.ToolCalls {
			if err := db.addToolCall(ctx, tx, c); err != nil {
				return err
			}
		}
		for _, r := range b.Requests {
			if err := db.addModelRequest(ctx, tx, r); err != nil {
				return err
			}
		}
		for _, m := range b.Messages {
			if err := db.addMessage(ctx, tx, m); err != nil {
				return err
			}
		}
		for _, r := range b.Runs {
			if err := db.endRun(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	}
}

// ListEvents returns a run's events with Seq > after, in Seq order; none for an
// unknown run. Data comes back byte for byte as it was stored. The events are
// those of AppendEvents (a row each) and of WriteBatch (a row per run and
// batch), read in one statement.
func (db *DB) ListEvents(ctx context.Context, runID string, after int64) ([]run.Event, error) {
	return db.listEvents(ctx, db.read, runID, after)
}

// listEvents is ListEvents through q, so that a transaction can read them.
func (db *DB) listEvents(ctx context.Context, q querier, runID string, after int64) ([]run.Event, error) {
	rows, err := db.query(ctx, q,
		`SELECT seq, type, data, created_at, NULL FROM run_events WHERE run_id = ? AND seq > ?
		 UNION ALL
		 SELECT first_seq, '', NULL, NULL, events FROM run_event_batches WHERE run_id = ? AND last_seq > ?`,
		runID, after, runID, after)
	if err != nil {
		return nil, fmt.Errorf("listing events of run %q: %w", runID, err)
	}
	defer rows.Close()
	events := []run.Event{}
	batched := false
	for rows.Next() {
		var (
			e       run.Event
			data    []byte
			created *time.Time
			batch   []byte
		)
		if err := rows.Scan(&e.Seq, &e.Type, &data, nullTimeDest{&created}, &batch); err != nil {
			return nil, fmt.Errorf("listing events of run %q: %w", runID, err)
		}
		if batch != nil {
			if events, err = appendBatched(events, runID, batch, after); err != nil {
				return nil, fmt.Errorf("listing events of run %q: %w", runID, err)
			}
			batched = true
			continue
		}
		e.RunID = runID
		if created != nil {
			e.CreatedAt = *created
		}
		if data != nil {
			e.Data = json.RawMessage(data)
		}
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing events of run %q: %w", runID, err)
	}
	slices.SortFunc(events, func(a, b run.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	if batched { // a batch starts at or before after
		i, _ := slices.BinarySearchFunc(events, after+1, func(e run.Event, seq int64) int { return cmp.Compare(e.Seq, seq) })
		events = events[i:]
	}
	return events, nil
}

// batchedEvent is an element of a row of run_event_batches: one event, its
// data as it was stored and its time in microseconds since the Unix epoch;
// or a stretch of message.delta events of one agent, numbered one after
// another from Seq (a delta run).
//
// A stretch keeps of each event only its text, as the JSON string its data
// held (Texts), and its time as microseconds after the one before it
// (After; the first's is At): the data of each is the agent's and its text
// put back together, `{"agent_id":` Agent `,"text":` text `}`, byte for byte
// as it came (deltaParts). A streamed answer's events are nearly all such,
// and each is stored in a tenth of the bytes.
type batchedEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	At   int64           `json:"at"`
	Data json.RawMessage `json:"data,omitempty"`

	// Same are the texts of Data stored once (cutRepeats), three numbers
	// each; restoreRepeats puts them back.
	Same []int `json:"same,omitempty"`

	Agent json.RawMessage   `json:"agent,omitempty"`
	Texts []json.RawMessage `json:"texts,omitempty"`
	After []int64           `json:"after,omitempty"`
}

// appendBatched appends the events of a run_event_batches row to events.
func appendBatched(events []run.Event, runID string, batch []byte, after int64) ([]run.Event, error) {
	var in []batchedEvent
	if err := json.Unmarshal(batch, &in); err != nil {
		return events, fmt.Errorf("reading a batch of events: %w", err)
	}
	for _, b := range in {
		if b.Texts != nil {
			if len(b.Agent) == 0 || len(b.After) != len(b.Texts)-1 {
				return events, fmt.Errorf("reading a batch of events: the stretch of deltas from %d has %d texts and %d times after the first", b.Seq, len(b.Texts), len(b.After))
			}
			at := b.At
			for i, text := range b.Texts {
				if i > 0 {
					at += b.After[i-1]
				}
				if seq := b.Seq + int64(i); seq > after {
					events = append(events, run.Event{RunID: runID, Seq: seq, Type: run.Kind(b.Type),
						CreatedAt: time.UnixMicro(at).UTC(), Data: deltaData(b.Agent, text)})
				}
			}
			continue
		}
		if b.Seq <= after {
			continue
		}
		e := run.Event{RunID: runID, Seq: b.Seq, Type: run.Kind(b.Type), CreatedAt: time.UnixMicro(b.At).UTC()}
		if len(b.Data) > 0 {
			e.Data = b.Data
		}
		if len(b.Same) > 0 {
			data, err := restoreRepeats(b.Data, b.Same)
			if err != nil {
				return events, fmt.Errorf("reading event %d of a batch: %w", b.Seq, err)
			}
			e.Data = data
		}
		events = append(events, e)
	}
	return events, nil
}

// The data of a message.delta event as run.Encode writes it, around its two
// JSON strings.
const (
	deltaHead = `{"agent_id":`
	deltaMid  = `,"text":`
	deltaTail = `}`
)

// deltaParts returns the agent and the text of e, each as the JSON string its
// data holds, when e is a message.delta whose data is exactly
// {"agent_id":"…","text":"…"} (as run.Encode writes it); ok is false for any
// other event, whose data is then stored as it is.
func deltaParts(e *run.Event) (agent, text []byte, ok bool) {
	d := e.Data
	if e.Type != run.EventMessageDelta || len(d) < len(deltaHead)+len(deltaMid)+len(deltaTail)+4 || string(d[:len(deltaHead)]) != deltaHead {
		return nil, nil, false
	}
	i, ok := jsonString(d, len(deltaHead))
	if !ok || len(d)-i < len(deltaMid) || string(d[i:i+len(deltaMid)]) != deltaMid {
		return nil, nil, false
	}
	j, ok := jsonString(d, i+len(deltaMid))
	if !ok || string(d[j:]) != deltaTail {
		return nil, nil, false
	}
	return d[len(deltaHead):i], d[i+len(deltaMid) : j], true
}

// deltaData puts a message.delta event's data back together from the JSON
// strings deltaParts took out of it.
func deltaData(agent, text []byte) json.RawMessage {
	b := make([]byte, 0, len(deltaHead)+len(agent)+len(deltaMid)+len(text)+len(deltaTail))
	b = append(b, deltaHead...)
	b = append(b, agent...)
	b = append(b, deltaMid...)
	b = append(b, text...)
	return append(b, deltaTail...)
}

// appendEventBatches stores checked events in tx as rows of
// run_event_batches, one per run, each holding the run's events in Seq order
// (a message.delta stretch as one element, batchedEvent), and writes their
// stored times back. A Seq twice for one run is
// fault.Conflict, as is a batch starting at a Seq a batch of the run started
// at; the Seqs are not checked against the run's other stored events.
func (db *DB) appendEventBatches(ctx context.Context, tx *sql.Tx, events []run.Event) error {
	if len(events) == 0 {
		return nil
	}
	// Each run's events, in the order the runs first appear.
	byRun := map[string][]int{}
	var order []string
	for i, e := range events {
		if _, ok := byRun[e.RunID]; !ok {
			order = append(order, e.RunID)
		}
		byRun[e.RunID] = append(byRun[e.RunID], i)
	}
	stmt, err := db.txStmt(ctx, tx, `INSERT INTO run_event_batches (run_id, first_seq, last_seq, events) VALUES (?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("storing events: %w", err)
	}
	defer stmt.Close()
	var buf, after []byte
	for _, id := range order {
		idx := byRun[id]
		slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(events[a].Seq, events[b].Seq) })
		buf = append(buf[:0], '[')
		for n := 0; n < len(idx); {
			e := &events[idx[n]]
			if n > 0 {
				if prev := events[idx[n-1]].Seq; prev == e.Seq {
					return fault.New(fault.Conflict, "run %q already has event %d", id, e.Seq)
				}
				buf = append(buf, ',')
			}
			e.CreatedAt = db.stamp(e.CreatedAt)
			var took int
			if buf, after, took = db.appendStretch(buf, after, events, idx[n:]); took == 0 {
				buf, took = appendBatchedEvent(buf, e), 1
			}
			n += took
		}
		buf = append(buf, ']')
		first, last := events[idx[0]].Seq, events[idx[len(idx)-1]].Seq
		_, err := db.execStmt(ctx, stmt, id, first, last, string(buf))
		switch {
		case err == nil:
		case db.d.IsUniqueViolation(err):
			return fault.Wrap(fault.Conflict, err, "run %q already has event %d", id, first)
		case db.d.IsForeignKeyViolation(err):
			return fault.Wrap(fault.NotFound, err, "event %d: run %q not found", first, id)
		default:
			return fmt.Errorf("storing events %d to %d of run %q: %w", first, last, id, err)
		}
	}
	return nil
}

// appendStretch appends to b the batchedEvent of the stretch of deltas that
// starts at events[idx[0]], its time stamped, when deltaParts takes that
// event apart: it and those that follow it with the next seqs, of the same
// agent, taken apart as well. It returns b, after (the scratch space of the
// times after the first) and how many events the stretch took: none when
// the first is not such a delta.
func (db *DB) appendStretch(b, after []byte, events []run.Event, idx []int) ([]byte, []byte, int) {
	e := &events[idx[0]]
	agent, text, ok := deltaParts(e)
	if !ok {
		return b, after, 0
	}
	b = appendBatchedHead(b, e)
	b = append(b, `,"agent":`...)
	b = append(b, agent...)
	b = append(b, `,"texts":[`...)
	b = append(b, text...)
	after = after[:0]
	n, last := 1, e
	for ; n < len(idx); n++ {
		f := &events[idx[n]]
		if f.Seq != last.Seq+1 {
			break
		}
		fAgent, fText, ok := deltaParts(f)
		if !ok || !bytes.Equal(fAgent, agent) {
			break
		}
		f.CreatedAt = db.stamp(f.CreatedAt)
		b = append(b, ',')
		b = append(b, fText...)
		if len(after) > 0 {
			after = append(after, ',')
		}
		after = strconv.AppendInt(after, f.CreatedAt.UnixMicro()-last.CreatedAt.UnixMicro(), 10)
		last = f
	}
	b = append(b, ']')
	if len(after) > 0 {
		b = append(b, `,"after":[`...)
		b = append(b, after...)
		b = append(b, ']')
	}
	return append(b, '}'), after, n
}

// appendBatchedEvent appends e as a batchedEvent's JSON.
func appendBatchedEvent(b []byte, e *run.Event) []byte {
	b = appendBatchedHead(b, e)
	if e.Data != nil {
		data, same := cutRepeats(e.Data)
		b = append(b, `,"data":`...)
		b = append(b, data...)
		if len(same) > 0 {
			b = append(b, `,"same":[`...)
			for i, n := range same {
				if i > 0 {
					b = append(b, ',')
				}
				b = strconv.AppendInt(b, int64(n), 10)
			}
			b = append(b, ']')
		}
	}
	return append(b, '}')
}

// repeatMin is the length from which a text repeated in an event's data is
// stored once (cutRepeats).
const repeatMin = 256

// textKey starts the JSON strings cutRepeats looks at.
var textKey = []byte(`"text":"`)

// cutRepeats returns data with the contents of each JSON string of a "text"
// key that repeats an earlier one of at least repeatMin bytes cut out, and
// what was cut, three numbers each (restoreRepeats): where in what is
// returned, where in data the earlier one starts, and how long it is. The run
// of data with the whole answer, run.finished, holds the answer's text twice,
// as the message's text and as its text part. What is returned stays JSON: only
// strings' contents are cut. Data without repeats comes back as it is.
func cutRepeats(data []byte) ([]byte, []int) {
	// Only compact data (an event's data is read back without the spaces
	// before it), and below only valid text (a row's text is stored with
	// invalid UTF-8 replaced, storableText): the offsets must hold in the
	// bytes read back.
	if len(data) < 2*repeatMin || data[0] != '{' {
		return data, nil
	}
	var (
		firsts map[string]int // a text's contents → where it starts in data
		out    []byte
		same   []int
		kept   int // data[:kept] is in out
	)
	for i := 0; ; {
		j := bytes.Index(data[i:], textKey)
		if j < 0 {
			break
		}
		start := i + j + len(textKey)
		after, ok := jsonString(data, start-1) // from the opening quote
		if !ok {
			break
		}
		end := after - 1 // the closing quote
		i = after
		if end-start < repeatMin {
			continue
		}
		if from, ok := firsts[string(data[start:end])]; ok {
			out = append(out, data[kept:start]...)
			same = append(same, len(out), from, end-start)
			kept = end
			continue
		}
		if firsts == nil {
			firsts = map[string]int{}
		}
		firsts[string(data[start:end])] = start
	}
	if same == nil || !utf8.Valid(data) {
		return data, nil
	}
	return append(out, data[kept:]...), same
}

// restoreRepeats puts back into data what cutRepeats cut out of it, said by
// same. Each text put back is a copy of bytes of data before it, never of a
// text put back (a first occurrence is never cut), so what a stored row can
// make it build is bounded by the row.
func restoreRepeats(data []byte, same []int) ([]byte, error) {
	if len(same)%3 != 0 {
		return nil, fmt.Errorf("%d numbers of repeated texts, not triples", len(same))
	}
	out := make([]byte, 0, len(data)+len(data)/2)
	var put [][2]int // where in out texts were put back
	pos := 0
	for i := 0; i < len(same); i += 3 {
		at, from, n := same[i], same[i+1], same[i+2]
		if at < pos || at > len(data) {
			return nil, fmt.Errorf("a repeated text at %d, out of order or past the data's %d bytes", at, len(data))
		}
		out = append(out, data[pos:at]...)
		if from < 0 || n <= 0 || n > len(data) || from > len(out) || n > len(out)-from {
			return nil, fmt.Errorf("a repeated text of %d bytes from %d, not before it", n, from)
		}
		for _, p := range put {
			if from < p[1] && p[0] < from+n {
				return nil, fmt.Errorf("a repeated text of %d bytes from %d repeats a text put back", n, from)
			}
		}
		put = append(put, [2]int{len(out), len(out) + n})
		out = append(out, out[from:from+n]...)
		pos = at
	}
	return append(out, data[pos:]...), nil
}

// appendBatchedHead appends the start of e's batchedEvent: its seq, type and
// time, the object left open.
func appendBatchedHead(b []byte, e *run.Event) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b = append(b, `,"type":`...)
	if plainType(string(e.Type)) {
		b = append(b, '"')
		b = append(b, e.Type...)
		b = append(b, '"')
	} else {
		t, _ := json.Marshal(e.Type)
		b = append(b, t...)
	}
	b = append(b, `,"at":`...)
	return strconv.AppendInt(b, e.CreatedAt.UnixMicro(), 10)
}

// plainType reports whether an event type needs no escaping in JSON.
func plainType(t string) bool {
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return false
		}
	}
	return true
}

// AddModelRequest stores one request body a run sent, kept byte for byte. The
// body must be JSON and Seq 1 or more; a Seq the run has already is
// fault.Conflict, a missing run fault.NotFound. A zero SentAt is the current
// time; the stored SentAt and FinishedAt are written back to r.
func (db *DB) AddModelRequest(ctx context.Context, r *run.ModelRequest) error {
	return db.addModelRequest(ctx, db.write, r)
}

func (db *DB) addModelRequest(ctx context.Context, q querier, r *run.ModelRequest) error {
	switch {
	case r.RunID == "":
		return fault.New(fault.Invalid, "model request %d: run id is required", r.Seq)
	case r.Seq < 1:
		return fault.New(fault.Invalid, "model request of run %q: seq %d is not 1 or more", r.RunID, r.Seq)
	case !validJSON(r.Body):
		return fault.New(fault.Invalid, "model request %d of run %q: body is not JSON", r.Seq, r.RunID)
	}
	sent, finished := db.stamp(r.SentAt), storedPtr(r.FinishedAt)
	_, err := db.exec(ctx, q,
		`INSERT INTO model_requests (`+modelRequestColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.RunID, r.Seq, r.AgentID, string(r.Body), db.timeArg(sent), db.nullTimeArg(finished),
		r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens, r.Purpose)
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "run %q already has model request %d", r.RunID, r.Seq)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "model request %d: run %q not found", r.Seq, r.RunID)
	default:
		return fmt.Errorf("storing model request %d of run %q: %w", r.Seq, r.RunID, err)
	}
	r.SentAt, r.FinishedAt = sent, finished
	return nil
}

const modelRequestColumns = `run_id, seq, agent_id, body, sent_at, finished_at, prompt_tokens, completion_tokens, total_tokens, purpose`

// ListModelRequests returns a run's model requests in Seq order, bodies byte for
// byte as sent; none for an unknown run.
func (db *DB) ListModelRequests(ctx context.Context, runID string) ([]run.ModelRequest, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT `+modelRequestColumns+` FROM model_requests WHERE run_id = ? ORDER BY seq`, runID)
	if err != nil {
		return nil, fmt.Errorf("listing model requests of run %q: %w", runID, err)
	}
	defer rows.Close()
	reqs := []run.ModelRequest{}
	for rows.Next() {
		var (
			r    run.ModelRequest
			body []byte
		)
		if err := rows.Scan(&r.RunID, &r.Seq, &r.AgentID, &body, timeDest{&r.SentAt}, nullTimeDest{&r.FinishedAt},
			&r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.TotalTokens, &r.Purpose); err != nil {
			return nil, fmt.Errorf("listing model requests of run %q: %w", runID, err)
		}
		r.Body = json.RawMessage(body)
		reqs = append(reqs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing model requests of run %q: %w", runID, err)
	}
	return reqs, nil
}

const toolCallColumns = `run_id, id, agent_id, name, arguments, result, is_error, duration_us, step, created_at, sources, contexts`

// AddToolCall stores one tool call of a run. Its Duration is kept to the
// microsecond, like times; the stored Duration and CreatedAt (the current time
// when zero) are written back to c. An id the run has already is
// fault.Conflict; a missing run fault.NotFound.
func (db *DB) AddToolCall(ctx context.Context, c *run.ToolCall) error {
	return db.addToolCall(ctx, db.write, c)
}

func (db *DB) addToolCall(ctx context.Context, q querier, c *run.ToolCall) error {
	switch {
	case c.RunID == "":
		return fault.New(fault.Invalid, "tool call %q: run id is required", c.ID)
	case c.ID == "":
		return fault.New(fault.Invalid, "tool call of run %q: id is required", c.RunID)
	}
	created := db.stamp(c.CreatedAt)
	us := c.Duration.Microseconds()
	var sources any
	if len(c.Sources) > 0 {
		b, err := json.Marshal(c.Sources)
		if err != nil {
			return fmt.Errorf("encoding the sources of tool call %q: %w", c.ID, err)
		}
		sources = jsonValue(b)
	}
	var contexts any
	if len(c.Contexts) > 0 {
		b, err := json.Marshal(c.Contexts)
		if err != nil {
			return fmt.Errorf("encoding the contexts of tool call %q: %w", c.ID, err)
		}
		contexts = jsonValue(b)
	}
	_, err := db.exec(ctx, q,
		`INSERT INTO tool_calls (`+toolCallColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		c.RunID, c.ID, c.AgentID, c.Name, c.Arguments, c.Result, c.IsError, us, c.Step, db.timeArg(created), sources, contexts)
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "run %q already has tool call %q", c.RunID, c.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "tool call %q: run %q not found", c.ID, c.RunID)
	default:
		return fmt.Errorf("storing tool call %q of run %q: %w", c.ID, c.RunID, err)
	}
	c.Duration, c.CreatedAt = storedDuration(c.Duration), created
	return nil
}

// storedDuration is d as stored: in whole microseconds.
func storedDuration(d time.Duration) time.Duration {
	return d.Truncate(time.Microsecond)
}

// ListToolCalls returns a run's tool calls, oldest first, then by step and id;
// none for an unknown run.
func (db *DB) ListToolCalls(ctx context.Context, runID string) ([]run.ToolCall, error) {
	rows, err := db.query(ctx, db.read,
		`SELECT `+toolCallColumns+` FROM tool_calls WHERE run_id = ? ORDER BY created_at, step, id`, runID)
	if err != nil {
		return nil, fmt.Errorf("listing tool calls of run %q: %w", runID, err)
	}
	defer rows.Close()
	calls := []run.ToolCall{}
	for rows.Next() {
		var (
			c                 run.ToolCall
			us                int64
			sources, contexts sql.NullString
		)
		if err := rows.Scan(&c.RunID, &c.ID, &c.AgentID, &c.Name, &c.Arguments, &c.Result, &c.IsError, &us, &c.Step,
			timeDest{&c.CreatedAt}, &sources, &contexts); err != nil {
			return nil, fmt.Errorf("listing tool calls of run %q: %w", runID, err)
		}
		if sources.Valid {
			if err := json.Unmarshal([]byte(sources.String), &c.Sources); err != nil {
				return nil, fmt.Errorf("decoding the sources of tool call %q of run %q: %w", c.ID, runID, err)
			}
		}
		if contexts.Valid {
			if err := json.Unmarshal([]byte(contexts.String), &c.Contexts); err != nil {
				return nil, fmt.Errorf("decoding the contexts of tool call %q of run %q: %w", c.ID, runID, err)
			}
		}
		c.Duration = time.Duration(us) * time.Microsecond
		calls = append(calls, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing tool calls of run %q: %w", runID, err)
	}
	return calls, nil
}

// Page sizes of RunPage.
const (
	DefaultRunPage = 50
	MaxRunPage     = 1000
)

// previewRunes is how much of a run's user message RunPage reads: enough for
// the first words that a list shows.
const previewRunes = 400

// RunPage lists one page of the runs q selects, newest first (by creation
// time, then id), each with the first characters of its user message and the
// schedule whose firing started it.
func (db *DB) RunPage(ctx context.Context, q run.RunQuery) (*run.RunPage, error) {
	limit := q.Limit
	switch {
	case limit < 1:
		limit = DefaultRunPage
	case limit > MaxRunPage:
		limit = MaxRunPage
	}
	var (
		where []string
		args  = []any{previewRunes}
	)
	if q.UserID != "" {
		where = append(where, `r.user_id = ?`)
		args = append(args, q.UserID)
	}
	if q.AgentID != "" {
		where = append(where, `r.agent_id = ?`)
		args = append(args, q.AgentID)
	}
	if q.Status != "" {
		where = append(where, `r.status = ?`)
		args = append(args, string(q.Status))
	}
	if q.Cursor != "" {
		at, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		where = append(where, `(r.created_at, r.id) < (?, ?)`)
		args = append(args, db.timeArg(at), id)
	}
	query := `SELECT r.id, r.user_id, r.agent_id, r.conversation_id, r.status, r.error,
		r.prompt_tokens, r.completion_tokens, r.total_tokens, r.created_at, r.started_at, r.finished_at,
		COALESCE(SUBSTR(m.text, 1, ?), ''),
		(SELECT MIN(f.schedule_id) FROM schedule_firings f WHERE f.run_id = r.id)
		FROM runs r LEFT JOIN messages m ON m.id = r.user_message_id`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, ` AND `)
	}
	query += ` ORDER BY r.created_at DESC, r.id DESC LIMIT ?`
	args = append(args, limit+1)
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	defer rows.Close()
	page := &run.RunPage{Runs: []run.RunItem{}}
	for rows.Next() {
		var (
			x     run.RunItem
			sched sql.NullString
		)
		if err := rows.Scan(&x.ID, &x.UserID, &x.AgentID, &x.ConversationID, &x.Status, &x.Error,
			&x.Usage.PromptTokens, &x.Usage.CompletionTokens, &x.Usage.TotalTokens,
			timeDest{&x.CreatedAt}, nullTimeDest{&x.StartedAt}, nullTimeDest{&x.FinishedAt}, &x.Text, &sched); err != nil {
			return nil, fmt.Errorf("listing runs: %w", err)
		}
		x.ScheduleID = sched.String
		page.Runs = append(page.Runs, x)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	if len(page.Runs) > limit {
		page.Runs = page.Runs[:limit]
		last := page.Runs[limit-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}
