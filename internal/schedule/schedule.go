// Package schedule owns scheduled agents (docs/agents.md "Schedules"): cron and
// one-off schedules, computing their next firing in their timezone, claiming a
// due firing exactly once across Relay processes, and the history of firings.
// It also keeps the liveness of serving processes (nodes that heartbeat), so
// that the runs and firings of a process that died are failed rather than
// left running, and do not block their schedules' next firings.
package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Type is a schedule's kind.
type Type string

// The kinds of schedule.
const (
	Recurring Type = "recurring" // fires on its cron expression
	Once      Type = "once"      // fires at run_at, then disables itself
)

// Schedule runs an agent with a prompt, on a cron expression or once.
type Schedule struct {
	ID      string `json:"id"`
	UserID  string `json:"user_id"`
	AgentID string `json:"agent_id"`
	// AgentName is the agent's name, for display, when its owner may still
	// use it; the store does not keep it.
	AgentName string     `json:"agent_name,omitempty"`
	Name      string     `json:"name"`
	Prompt    string     `json:"prompt"`
	Type      Type       `json:"type"`
	Cron      string     `json:"cron,omitempty"`
	RunAt     *time.Time `json:"run_at,omitempty"`
	Timezone  string     `json:"timezone"`
	Enabled   bool       `json:"enabled"`
	// NotifyURL, when set, receives each firing's result as JSON.
	NotifyURL  string     `json:"notify_url,omitempty"`
	NextRunAt  *time.Time `json:"next_run_at,omitempty"`
	LastRunAt  *time.Time `json:"last_run_at,omitempty"`
	LastStatus string     `json:"last_status,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	UpdatedAt  time.Time  `json:"updated_at"`
}

// FiringStatus is where one firing stands.
type FiringStatus string

// The statuses of a firing. Queued, running, succeeded, failed and cancelled
// follow the run; skipped means the firing did not run (missed while Relay was
// down past the grace window, or the previous firing was still running).
const (
	FiringQueued    FiringStatus = "queued"
	FiringRunning   FiringStatus = "running"
	FiringSucceeded FiringStatus = "succeeded"
	FiringFailed    FiringStatus = "failed"
	FiringCancelled FiringStatus = "cancelled"
	FiringSkipped   FiringStatus = "skipped"
)

// Firing is one firing of a schedule: unique per (schedule, fire time), which is
// how a firing is claimed exactly once.
type Firing struct {
	ID             string       `json:"id"`
	ScheduleID     string       `json:"schedule_id"`
	FireAt         time.Time    `json:"fire_at"`
	RunID          string       `json:"run_id,omitempty"`
	ConversationID string       `json:"conversation_id,omitempty"`
	Prompt         string       `json:"prompt"`
	Status         FiringStatus `json:"status"`
	Error          string       `json:"error,omitempty"`
	ClaimedBy      string       `json:"claimed_by,omitempty"`
	StartedAt      *time.Time   `json:"started_at,omitempty"`
	FinishedAt     *time.Time   `json:"finished_at,omitempty"`
}

// FiringQuery selects one page of a schedule's firings, newest first.
type FiringQuery struct {
	ScheduleID string
	// Limit is the page size; the store treats values < 1 as its default.
	Limit int
	// Cursor is the NextCursor of the previous page, or empty for the first.
	Cursor string
}

// FiringPage is one page of a schedule's firings, newest first.
type FiringPage struct {
	Firings []*Firing `json:"data"`
	// NextCursor fetches the following (older) page; empty on the last one.
	NextCursor string `json:"next_cursor,omitempty"`
}

// ErrTooMany is CreateScheduleWithin's refusal: the user has as many
// schedules as allowed.
var ErrTooMany = errors.New("the user has as many schedules as allowed")

// Store is what schedules need from storage. Missing rows are fault.NotFound.
type Store interface {
	CreateSchedule(ctx context.Context, s *Schedule) error
	// CreateScheduleWithin is CreateSchedule refusing, with ErrTooMany, a
	// schedule that would give its user more than max; requests at once
	// count each other.
	CreateScheduleWithin(ctx context.Context, s *Schedule, max int) error
	GetSchedule(ctx context.Context, id string) (*Schedule, error)
	// ListSchedules lists a user's schedules (every user's for ""), oldest first.
	ListSchedules(ctx context.Context, userID string) ([]*Schedule, error)
	CountSchedules(ctx context.Context, userID string) (int, error)
	UpdateSchedule(ctx context.Context, s *Schedule) error
	DeleteSchedule(ctx context.Context, id string) error
	// DueSchedules lists enabled schedules whose NextRunAt is at or before now,
	// soonest first, at most limit.
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]*Schedule, error)
	// NextDue returns the earliest NextRunAt of the enabled schedules, or nil.
	NextDue(ctx context.Context) (*time.Time, error)
	// ClaimFiring inserts f, unique on (ScheduleID, FireAt), and in the same
	// transaction moves the schedule's NextRunAt from f.FireAt to next (nil
	// disables a one-off schedule). It reports false, without error, when
	// another process claimed that firing first. A queued or running f while
	// another firing of the schedule is queued or running is refused, changing
	// nothing, with a fault.Conflict holding a *RunningError.
	ClaimFiring(ctx context.Context, f *Firing, next *time.Time) (bool, error)
	// CreateFiring inserts a firing that moves no schedule (run now); a taken
	// (ScheduleID, FireAt) is fault.Conflict, and so is a queued or running f
	// while another firing of the schedule is queued or running, then holding
	// a *RunningError.
	CreateFiring(ctx context.Context, f *Firing) error
	UpdateFiring(ctx context.Context, f *Firing) error
	// AdvanceFiring is UpdateFiring for a firing still queued or running:
	// one that has ended already keeps its end (it was failed for its process
	// taken for dead), and that is fault.Conflict. The scheduler stores the
	// progress of its firings with it.
	AdvanceFiring(ctx context.Context, f *Firing) error
	GetFiring(ctx context.Context, id string) (*Firing, error)
	// ListFirings lists a schedule's firings, newest first, at most limit.
	ListFirings(ctx context.Context, scheduleID string, limit int) ([]*Firing, error)
	// FiringPage lists one page of the firings q selects, newest first (by
	// FireAt, then id); a bad cursor is fault.Invalid.
	FiringPage(ctx context.Context, q FiringQuery) (*FiringPage, error)
	// RunningFiring returns the schedule's firing that is queued or running, or nil.
	RunningFiring(ctx context.Context, scheduleID string) (*Firing, error)
	// FailStaleFirings marks firings queued or running that a process claimed
	// but did not finish before cutoff as failed, and returns how many.
	FailStaleFirings(ctx context.Context, cutoff time.Time, reason string) (int, error)
}

// RunningError is the store refusing to queue a firing while another firing of
// its schedule is queued or running: a schedule runs one firing at a time
// (docs/agents.md "Schedules"), whichever process queues it and whether it was
// due or run by hand. The store decides this in the transaction that inserts
// the firing, so that of firings queued at once only one gets in.
type RunningError struct {
	// Firing is the schedule's firing that is queued or running.
	Firing *Firing
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("schedule %q is running already (firing %s)", e.Firing.ScheduleID, e.Firing.ID)
}
