package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/relay-ai/relay/internal/fault"
	"github.com/relay-ai/relay/internal/schedule"
)

const scheduleColumns = `id, user_id, agent_id, name, prompt, type, cron, run_at, timezone, enabled, notify_url,
	next_run_at, last_run_at, last_status, created_at, updated_at`

func scanSchedule(r rowScanner) (*schedule.Schedule, error) {
	var s schedule.Schedule
	err := r.Scan(&s.ID, &s.UserID, &s.AgentID, &s.Name, &s.Prompt, &s.Type, &s.Cron, nullTimeDest{&s.RunAt},
		&s.Timezone, &s.Enabled, &s.NotifyURL, nullTimeDest{&s.NextRunAt}, nullTimeDest{&s.LastRunAt},
		&s.LastStatus, timeDest{&s.CreatedAt}, timeDest{&s.UpdatedAt})
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// checkSchedule refuses a schedule without an id or of an unknown type.
func checkSchedule(s *schedule.Schedule) error {
	if s.ID == "" {
		return fault.New(fault.Invalid, "schedule id is required")
	}
	switch s.Type {
	case schedule.Recurring, schedule.Once:
		return nil
	}
	return fault.New(fault.Invalid, "schedule %q: unknown type %q", s.ID, s.Type)
}

// CreateSchedule inserts s. A zero CreatedAt is the current time and a zero
// UpdatedAt is CreatedAt; they and the other times are written back to s in
// stored form. A missing user is fault.NotFound; a taken id fault.Conflict.
func (db *DB) CreateSchedule(ctx context.Context, s *schedule.Schedule) error {
	if err := checkSchedule(s); err != nil {
		return err
	}
	return db.insertSchedule(ctx, db.write, s)
}

// CreateScheduleWithin is CreateSchedule refusing, with schedule.ErrTooMany,
// a schedule that would give its user more than max. The count and the insert
// are one transaction, which the user's other creations wait for (writes take
// turns on SQLite; Postgres takes the dialect's OwnerLock), so that requests
// at once cannot pass max together.
func (db *DB) CreateScheduleWithin(ctx context.Context, s *schedule.Schedule, max int) error {
	if err := checkSchedule(s); err != nil {
		return err
	}
	stored := *s
	err := db.inTx(ctx, "CreateScheduleWithin", func(tx *sql.Tx) error {
		if err := db.lockOwner(ctx, tx, s.UserID); err != nil {
			return err
		}
		var n int
		if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM schedules WHERE user_id = ?`, s.UserID).Scan(&n); err != nil {
			return fmt.Errorf("counting schedules: %w", err)
		}
		if n >= max {
			return schedule.ErrTooMany
		}
		stored = *s
		return db.insertSchedule(ctx, tx, &stored)
	})
	if err != nil {
		return err
	}
	*s = stored
	return nil
}

// lockOwner makes tx wait for, and hold off, the other transactions of
// userID's that count its rows against a quota (the dialect's OwnerLock);
// engines whose writes take turns need no lock.
func (db *DB) lockOwner(ctx context.Context, tx *sql.Tx, userID string) error {
	if db.d.OwnerLock == "" {
		return nil
	}
	if _, err := db.exec(ctx, tx, db.d.OwnerLock, userID); err != nil {
		return fmt.Errorf("waiting for the other requests of %q: %w", userID, err)
	}
	return nil
}

// insertSchedule inserts s through q and writes its stored times back to s.
func (db *DB) insertSchedule(ctx context.Context, q querier, s *schedule.Schedule) error {
	created := db.stamp(s.CreatedAt)
	updated := created
	if !s.UpdatedAt.IsZero() {
		updated = utc(s.UpdatedAt)
	}
	runAt, next, last := storedPtr(s.RunAt), storedPtr(s.NextRunAt), storedPtr(s.LastRunAt)
	_, err := db.exec(ctx, q,
		`INSERT INTO schedules (`+scheduleColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		s.ID, s.UserID, s.AgentID, s.Name, s.Prompt, string(s.Type), s.Cron, db.nullTimeArg(runAt),
		s.Timezone, s.Enabled, s.NotifyURL, db.nullTimeArg(next), db.nullTimeArg(last),
		s.LastStatus, db.timeArg(created), db.timeArg(updated))
	switch {
	case err == nil:
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "schedule %q already exists", s.ID)
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "user of schedule %q: user %q not found", s.ID, s.UserID)
	default:
		return fmt.Errorf("creating schedule %q: %w", s.ID, err)
	}
	s.RunAt, s.NextRunAt, s.LastRunAt, s.CreatedAt, s.UpdatedAt = runAt, next, last, created, updated
	return nil
}

// GetSchedule returns the schedule with that id.
func (db *DB) GetSchedule(ctx context.Context, id string) (*schedule.Schedule, error) {
	s, err := scanSchedule(db.queryRow(ctx, db.read, `SELECT `+scheduleColumns+` FROM schedules WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "schedule %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting schedule %q: %w", id, err)
	}
	return s, nil
}

// ListSchedules lists a user's schedules, or every user's for "", oldest first
// and then by id. An unknown user has none.
func (db *DB) ListSchedules(ctx context.Context, userID string) ([]*schedule.Schedule, error) {
	q := `SELECT ` + scheduleColumns + ` FROM schedules`
	var args []any
	if userID != "" {
		q += ` WHERE user_id = ?`
		args = append(args, userID)
	}
	return db.listSchedules(ctx, "listing schedules", q+` ORDER BY created_at, id`, args...)
}

func (db *DB) listSchedules(ctx context.Context, doing, query string, args ...any) ([]*schedule.Schedule, error) {
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", doing, err)
	}
	defer rows.Close()
	out := []*schedule.Schedule{}
	for rows.Next() {
		s, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", doing, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", doing, err)
	}
	return out, nil
}

// CountSchedules counts a user's schedules, or every user's for "".
func (db *DB) CountSchedules(ctx context.Context, userID string) (int, error) {
	q := `SELECT COUNT(*) FROM schedules`
	var args []any
	if userID != "" {
		q += ` WHERE user_id = ?`
		args = append(args, userID)
	}
	var n int
	if err := db.queryRow(ctx, db.read, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting schedules: %w", err)
	}
	return n, nil
}

// UpdateSchedule stores everything of s but its user and CreatedAt, which never
// change. UpdatedAt is the current time when zero; the stored times are written
// back to s.
//
// It writes NextRunAt as given, so a caller holding a copy read before a firing
// was claimed must read the schedule again first: writing back the old
// NextRunAt would point the schedule at a firing that exists already.
func (db *DB) UpdateSchedule(ctx context.Context, s *schedule.Schedule) error {
	if err := checkSchedule(s); err != nil {
		return err
	}
	updated := db.stamp(s.UpdatedAt)
	runAt, next, last := storedPtr(s.RunAt), storedPtr(s.NextRunAt), storedPtr(s.LastRunAt)
	res, err := db.exec(ctx, db.write,
		`UPDATE schedules SET agent_id = ?, name = ?, prompt = ?, type = ?, cron = ?, run_at = ?, timezone = ?,
			enabled = ?, notify_url = ?, next_run_at = ?, last_run_at = ?, last_status = ?, updated_at = ?
		 WHERE id = ?`,
		s.AgentID, s.Name, s.Prompt, string(s.Type), s.Cron, db.nullTimeArg(runAt), s.Timezone,
		s.Enabled, s.NotifyURL, db.nullTimeArg(next), db.nullTimeArg(last), s.LastStatus, db.timeArg(updated),
		s.ID)
	if err != nil {
		return fmt.Errorf("updating schedule %q: %w", s.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating schedule %q: %w", s.ID, err)
	} else if !ok {
		return fault.New(fault.NotFound, "schedule %q not found", s.ID)
	}
	s.RunAt, s.NextRunAt, s.LastRunAt, s.UpdatedAt = runAt, next, last, updated
	return nil
}

// DeleteSchedule deletes a schedule; its firings go with it through the foreign
// key's cascade.
func (db *DB) DeleteSchedule(ctx context.Context, id string) error {
	res, err := db.exec(ctx, db.write, `DELETE FROM schedules WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("deleting schedule %q: %w", id, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("deleting schedule %q: %w", id, err)
	} else if !ok {
		return fault.New(fault.NotFound, "schedule %q not found", id)
	}
	return nil
}

// DefaultDueLimit is how many schedules DueSchedules returns when no limit is
// given; MaxListLimit caps it.
const DefaultDueLimit = 100

// DueSchedules lists the enabled schedules whose NextRunAt is at or before now,
// soonest first (ties by id), at most limit. A limit below 1 means
// DefaultDueLimit, and one above MaxListLimit is MaxListLimit. The query reads
// one range of the schedules_due index, so it costs the same with ten schedules
// or a million.
func (db *DB) DueSchedules(ctx context.Context, now time.Time, limit int) ([]*schedule.Schedule, error) {
	switch {
	case limit < 1:
		limit = DefaultDueLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	return db.listSchedules(ctx, "listing due schedules",
		`SELECT `+scheduleColumns+` FROM schedules
		 WHERE enabled = TRUE AND next_run_at IS NOT NULL AND next_run_at <= ?
		 ORDER BY next_run_at, id LIMIT ?`,
		db.timeArg(now), limit)
}

// NextDue returns the earliest NextRunAt of the enabled schedules, or nil when
// none has one: the first entry of the schedules_due index past the NULLs.
func (db *DB) NextDue(ctx context.Context) (*time.Time, error) {
	var next *time.Time
	err := db.queryRow(ctx, db.read,
		`SELECT next_run_at FROM schedules WHERE enabled = TRUE AND next_run_at IS NOT NULL
		 ORDER BY next_run_at LIMIT 1`).Scan(nullTimeDest{&next})
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("finding the next due schedule: %w", err)
	}
	return next, nil
}

const firingColumns = `id, schedule_id, fire_at, run_id, conversation_id, prompt, status, error, claimed_by,
	started_at, finished_at`

func scanFiring(r rowScanner) (*schedule.Firing, error) {
	var f schedule.Firing
	err := r.Scan(&f.ID, &f.ScheduleID, timeDest{&f.FireAt}, nullStringDest{&f.RunID}, nullStringDest{&f.ConversationID},
		&f.Prompt, &f.Status, &f.Error, &f.ClaimedBy, nullTimeDest{&f.StartedAt}, nullTimeDest{&f.FinishedAt})
	if err != nil {
		return nil, err
	}
	return &f, nil
}

// checkFiringStatus refuses a status that is not one of schedule's, since
// FailStaleFirings, RunningFiring and every reader rely on knowing them all.
func checkFiringStatus(id string, s schedule.FiringStatus) error {
	switch s {
	case schedule.FiringQueued, schedule.FiringRunning, schedule.FiringSucceeded, schedule.FiringFailed,
		schedule.FiringCancelled, schedule.FiringSkipped:
		return nil
	}
	return fault.New(fault.Invalid, "firing %q: unknown status %q", id, s)
}

// newFiring checks f before it is inserted and returns its status (queued when
// empty).
func newFiring(f *schedule.Firing) (schedule.FiringStatus, error) {
	switch {
	case f.ID == "":
		return "", fault.New(fault.Invalid, "firing id is required")
	case f.ScheduleID == "":
		return "", fault.New(fault.Invalid, "firing %q: schedule id is required", f.ID)
	}
	status := f.Status
	if status == "" {
		status = schedule.FiringQueued
	}
	return status, checkFiringStatus(f.ID, status)
}

// insertFiring inserts f with the given status and stored times. A taken
// (ScheduleID, FireAt) or id is fault.Conflict; a missing schedule
// fault.NotFound.
func (db *DB) insertFiring(ctx context.Context, q querier, f *schedule.Firing, status schedule.FiringStatus,
	fireAt time.Time, started, finished *time.Time) error {
	_, err := db.exec(ctx, q,
		`INSERT INTO schedule_firings (`+firingColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		f.ID, f.ScheduleID, db.timeArg(fireAt), nullString(f.RunID), nullString(f.ConversationID),
		f.Prompt, string(status), f.Error, f.ClaimedBy, db.nullTimeArg(started), db.nullTimeArg(finished))
	switch {
	case err == nil:
		return nil
	case db.d.IsUniqueViolation(err):
		return fault.Wrap(fault.Conflict, err, "firing %q of schedule %q at %s already exists",
			f.ID, f.ScheduleID, fireAt.Format(time.RFC3339Nano))
	case db.d.IsForeignKeyViolation(err):
		return fault.Wrap(fault.NotFound, err, "schedule of firing %q: schedule %q not found", f.ID, f.ScheduleID)
	}
	return fmt.Errorf("storing firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
}

// errClaimed ends a ClaimFiring transaction that lost its race.
var errClaimed = errors.New("firing claimed already")

// ClaimFiring claims the firing of f's schedule at f.FireAt for this process, in
// one transaction: it moves the schedule's NextRunAt from f.FireAt to next, sets
// its LastRunAt to f.FireAt (and disables it when next is nil), and inserts f. An
// empty status is queued; the stored times and status are written back to f.
//
// Moving NextRunAt is a compare-and-set: if the schedule is disabled or its
// NextRunAt is no longer f.FireAt, another process claimed the firing first (or
// the schedule changed) and ClaimFiring reports false, changing nothing. So it
// does when the firing exists already, but then moves NextRunAt on to next all
// the same: the schedule pointed at a firing made before (an edit that read the
// schedule before that firing was claimed wrote its NextRunAt back), and left
// there it would be due, and refused, for ever. Of any number of processes
// claiming the same firing at once, exactly one gets true: on Postgres the
// losers wait on the schedule's row lock and then find NextRunAt moved, on
// SQLite write transactions run one at a time. A missing schedule is
// fault.NotFound. The schedule's UpdatedAt, which tells when it was last edited,
// does not change.
//
// A queued or running f while another firing of the schedule is queued or
// running (one run by hand since the caller looked) is refused, as CreateFiring
// refuses it, and nothing changes: the caller may claim it again as skipped.
func (db *DB) ClaimFiring(ctx context.Context, f *schedule.Firing, next *time.Time) (bool, error) {
	status, err := newFiring(f)
	if err != nil {
		return false, err
	}
	if f.FireAt.IsZero() {
		return false, fault.New(fault.Invalid, "firing %q: fire time is required", f.ID)
	}
	fireAt, started, finished, stored := utc(f.FireAt), storedPtr(f.StartedAt), storedPtr(f.FinishedAt), storedPtr(next)
	taken := false // the firing exists already: the schedule is moved on, nothing is claimed
	err = db.inTx(ctx, "ClaimFiring", func(tx *sql.Tx) error {
		taken = false
		// The schedule row first: its lock is what concurrent claims queue on, so
		// the losers never reach the insert.
		res, err := db.exec(ctx, tx,
			`UPDATE schedules SET next_run_at = ?, enabled = (enabled AND ?), last_run_at = ?
			 WHERE id = ? AND enabled = TRUE AND next_run_at = ?`,
			db.nullTimeArg(stored), next != nil, db.timeArg(fireAt), f.ScheduleID, db.timeArg(fireAt))
		if err != nil {
			return fmt.Errorf("claiming firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("claiming firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
		} else if !ok {
			var n int
			err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM schedules WHERE id = ?`, f.ScheduleID).Scan(&n)
			switch {
			case err != nil:
				return fmt.Errorf("claiming firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
			case n == 0:
				return fault.New(fault.NotFound, "schedule of firing %q: schedule %q not found", f.ID, f.ScheduleID)
			}
			return errClaimed
		}
		var made int
		if err := db.queryRow(ctx, tx, `SELECT COUNT(*) FROM schedule_firings WHERE schedule_id = ? AND fire_at = ?`,
			f.ScheduleID, db.timeArg(fireAt)).Scan(&made); err != nil {
			return fmt.Errorf("claiming firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
		}
		if made > 0 {
			taken = true
			return nil
		}
		if err := db.refuseRunning(ctx, tx, f.ScheduleID, status); err != nil {
			return err
		}
		err = db.insertFiring(ctx, tx, f, status, fireAt, started, finished)
		if fault.Is(err, fault.Conflict) {
			return errClaimed
		}
		return err
	})
	switch {
	case errors.Is(err, errClaimed) || (err == nil && taken):
		return false, nil
	case err != nil:
		return false, err
	}
	f.FireAt, f.Status, f.StartedAt, f.FinishedAt = fireAt, status, started, finished
	return true, nil
}

// CreateFiring inserts f without moving its schedule, for a firing run now by
// hand. A zero FireAt is the current time and an empty status queued; the stored
// times and status are written back to f. A taken (ScheduleID, FireAt) or id is
// fault.Conflict; a missing schedule fault.NotFound.
//
// A queued or running f while another firing of the schedule is queued or
// running is fault.Conflict holding a *schedule.RunningError that names it. The
// look and the insert are one transaction holding the schedule's row, which
// ClaimFiring takes too: of any number of firings queued at once, on any
// process, by hand or due, exactly one gets in. The schedule_firings_running
// index (migration 0021) holds the rule for every other write as well.
func (db *DB) CreateFiring(ctx context.Context, f *schedule.Firing) error {
	status, err := newFiring(f)
	if err != nil {
		return err
	}
	fireAt, started, finished := db.stamp(f.FireAt), storedPtr(f.StartedAt), storedPtr(f.FinishedAt)
	err = db.inTx(ctx, "CreateFiring", func(tx *sql.Tx) error {
		// Writing the row changes nothing but takes its lock (SQLite's write
		// transactions exclude each other already), which Postgres' other
		// claims and firings of the schedule then wait for.
		res, err := db.exec(ctx, tx, `UPDATE schedules SET next_run_at = next_run_at WHERE id = ?`, f.ScheduleID)
		if err != nil {
			return fmt.Errorf("storing firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
		}
		if ok, err := affected(res); err != nil {
			return fmt.Errorf("storing firing %q of schedule %q: %w", f.ID, f.ScheduleID, err)
		} else if !ok {
			return fault.New(fault.NotFound, "schedule of firing %q: schedule %q not found", f.ID, f.ScheduleID)
		}
		if err := db.refuseRunning(ctx, tx, f.ScheduleID, status); err != nil {
			return err
		}
		return db.insertFiring(ctx, tx, f, status, fireAt, started, finished)
	})
	if err != nil {
		return err
	}
	f.FireAt, f.Status, f.StartedAt, f.FinishedAt = fireAt, status, started, finished
	return nil
}

// refuseRunning refuses to queue a firing of the schedule with the given
// status while another one is queued or running, with fault.Conflict holding a
// *schedule.RunningError. The caller's transaction q holds the schedule's row,
// so that no other firing can be queued between the look and its insert.
func (db *DB) refuseRunning(ctx context.Context, q querier, scheduleID string, status schedule.FiringStatus) error {
	if status != schedule.FiringQueued && status != schedule.FiringRunning {
		return nil
	}
	running, err := db.runningFiring(ctx, q, scheduleID)
	if err != nil || running == nil {
		return err
	}
	return fault.Wrap(fault.Conflict, &schedule.RunningError{Firing: running},
		"schedule %q is running already (firing %s)", scheduleID, running.ID)
}

// UpdateFiring stores f's status, error, run, conversation, StartedAt and
// FinishedAt, and writes the times back in stored form. Its schedule, FireAt,
// prompt and ClaimedBy never change.
func (db *DB) UpdateFiring(ctx context.Context, f *schedule.Firing) error {
	return db.updateFiring(ctx, f, false)
}

// AdvanceFiring is UpdateFiring on a firing still queued or running; one
// that has ended already is left as it is, and that is fault.Conflict.
func (db *DB) AdvanceFiring(ctx context.Context, f *schedule.Firing) error {
	return db.updateFiring(ctx, f, true)
}

// updateFiring stores f, with going only while it is queued or running.
func (db *DB) updateFiring(ctx context.Context, f *schedule.Firing, going bool) error {
	if err := checkFiringStatus(f.ID, f.Status); err != nil {
		return err
	}
	started, finished := storedPtr(f.StartedAt), storedPtr(f.FinishedAt)
	q := `UPDATE schedule_firings SET status = ?, error = ?, run_id = ?, conversation_id = ?, prompt = ?, started_at = ?,
			finished_at = ? WHERE id = ?`
	args := []any{string(f.Status), f.Error, nullString(f.RunID), nullString(f.ConversationID), f.Prompt,
		db.nullTimeArg(started), db.nullTimeArg(finished), f.ID}
	if going {
		q += ` AND status IN (?, ?)`
		args = append(args, string(schedule.FiringQueued), string(schedule.FiringRunning))
	}
	res, err := db.exec(ctx, db.write, q, args...)
	switch {
	case err != nil && db.d.IsUniqueViolation(err):
		// Only schedule_firings_running can be broken here: the firing was
		// failed meanwhile (its process taken for dead) and another queued.
		return fault.Wrap(fault.Conflict, err, "firing %q: another firing of schedule %q is queued or running",
			f.ID, f.ScheduleID)
	case err != nil:
		return fmt.Errorf("updating firing %q: %w", f.ID, err)
	}
	if ok, err := affected(res); err != nil {
		return fmt.Errorf("updating firing %q: %w", f.ID, err)
	} else if !ok {
		if !going {
			return fault.New(fault.NotFound, "firing %q not found", f.ID)
		}
		got, err := db.GetFiring(ctx, f.ID)
		if err != nil {
			return err
		}
		return fault.New(fault.Conflict, "firing %q is %s already", f.ID, got.Status)
	}
	f.StartedAt, f.FinishedAt = started, finished
	return nil
}

// GetFiring returns the firing with that id.
func (db *DB) GetFiring(ctx context.Context, id string) (*schedule.Firing, error) {
	f, err := scanFiring(db.queryRow(ctx, db.read, `SELECT `+firingColumns+` FROM schedule_firings WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fault.New(fault.NotFound, "firing %q not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("getting firing %q: %w", id, err)
	}
	return f, nil
}

// ListFirings lists a schedule's firings, latest FireAt first (ties by id, last
// first), at most limit. A limit below 1 means DefaultListLimit, and one above
// MaxListLimit is MaxListLimit. An unknown schedule has none.
func (db *DB) ListFirings(ctx context.Context, scheduleID string, limit int) ([]*schedule.Firing, error) {
	page, err := db.FiringPage(ctx, schedule.FiringQuery{ScheduleID: scheduleID, Limit: limit})
	if err != nil {
		return nil, err
	}
	return page.Firings, nil
}

// FiringPage lists one page of a schedule's firings, latest FireAt first (ties
// by id, last first), paged as RunPage is: the cursor is the FireAt and id of
// the last firing of the previous page. A limit below 1 means
// DefaultListLimit, and one above MaxListLimit is MaxListLimit. An unknown
// schedule has none; a bad cursor is fault.Invalid.
func (db *DB) FiringPage(ctx context.Context, q schedule.FiringQuery) (*schedule.FiringPage, error) {
	limit := q.Limit
	switch {
	case limit < 1:
		limit = DefaultListLimit
	case limit > MaxListLimit:
		limit = MaxListLimit
	}
	query := `SELECT ` + firingColumns + ` FROM schedule_firings WHERE schedule_id = ?`
	args := []any{q.ScheduleID}
	if q.Cursor != "" {
		at, id, err := decodeCursor(q.Cursor)
		if err != nil {
			return nil, err
		}
		// fire_at <= ? lets both engines walk the (schedule_id, fire_at)
		// index; the pair compares the id as well, as the order does.
		query += ` AND fire_at <= ? AND (fire_at, id) < (?, ?)`
		args = append(args, db.timeArg(at), db.timeArg(at), id)
	}
	query += ` ORDER BY fire_at DESC, id DESC LIMIT ?`
	args = append(args, limit+1) // one more tells whether a next page exists
	rows, err := db.query(ctx, db.read, query, args...)
	if err != nil {
		return nil, fmt.Errorf("listing firings of schedule %q: %w", q.ScheduleID, err)
	}
	defer rows.Close()
	page := &schedule.FiringPage{Firings: []*schedule.Firing{}}
	for rows.Next() {
		f, err := scanFiring(rows)
		if err != nil {
			return nil, fmt.Errorf("listing firings of schedule %q: %w", q.ScheduleID, err)
		}
		page.Firings = append(page.Firings, f)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing firings of schedule %q: %w", q.ScheduleID, err)
	}
	if len(page.Firings) > limit {
		page.Firings = page.Firings[:limit]
		last := page.Firings[limit-1]
		page.NextCursor = encodeCursor(last.FireAt, last.ID)
	}
	return page, nil
}

// RunningFiring returns the schedule's firing that is queued or running (there
// is at most one: migration 0021), or nil, without error, when there is none.
func (db *DB) RunningFiring(ctx context.Context, scheduleID string) (*schedule.Firing, error) {
	return db.runningFiring(ctx, db.read, scheduleID)
}

func (db *DB) runningFiring(ctx context.Context, q querier, scheduleID string) (*schedule.Firing, error) {
	f, err := scanFiring(db.queryRow(ctx, q,
		`SELECT `+firingColumns+` FROM schedule_firings WHERE schedule_id = ? AND status IN (?, ?)
		 ORDER BY fire_at DESC, id DESC LIMIT 1`,
		scheduleID, string(schedule.FiringQueued), string(schedule.FiringRunning)))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("finding the running firing of schedule %q: %w", scheduleID, err)
	}
	return f, nil
}

// FailStaleFirings marks failed, with reason as their error and the current time
// as FinishedAt, the firings still queued or running that started before cutoff;
// a queued firing that never started counts from its FireAt. It returns how many
// it marked. A process calls it as it starts, with its start time, for the
// firings that a stopped process left behind.
func (db *DB) FailStaleFirings(ctx context.Context, cutoff time.Time, reason string) (int, error) {
	res, err := db.exec(ctx, db.write,
		`UPDATE schedule_firings SET status = ?, error = ?, finished_at = ?
		 WHERE status IN (?, ?) AND COALESCE(started_at, fire_at) < ?`,
		string(schedule.FiringFailed), reason, db.timeArg(db.clock()),
		string(schedule.FiringQueued), string(schedule.FiringRunning), db.timeArg(cutoff))
	if err != nil {
		return 0, fmt.Errorf("failing stale firings: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("failing stale firings: %w", err)
	}
	return int(n), nil
}
