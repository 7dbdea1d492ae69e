-- Schedules run an agent with a prompt on a cron expression or once, and each
-- firing of one is recorded. A schedule goes with its user, and its firings go
-- with the schedule.

CREATE TABLE schedules (
    id          TEXT NOT NULL PRIMARY KEY,
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- No foreign key: a schedule whose agent was deleted stays, to be edited or
    -- deleted, and its firings fail with a clear error until then.
    agent_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    type        TEXT NOT NULL,
    cron        TEXT NOT NULL,
    run_at      TEXT,
    timezone    TEXT NOT NULL,
    enabled     INTEGER NOT NULL CHECK (enabled IN (0, 1)),
    notify_url  TEXT NOT NULL,
    next_run_at TEXT,
    last_run_at TEXT,
    last_status TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
) STRICT;

-- Finding the due schedules, soonest first, and the next one to wake up for:
-- a range of one index, however many schedules there are.
CREATE INDEX schedules_due ON schedules (enabled, next_run_at, id);
-- A user's schedules, oldest first, and the cascade from a user.
CREATE INDEX schedules_user ON schedules (user_id, created_at, id);

-- A firing is unique per schedule and fire time: inserting it is how one
-- process, and only one, claims it.
CREATE TABLE schedule_firings (
    id              TEXT NOT NULL PRIMARY KEY,
    schedule_id     TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    fire_at         TEXT NOT NULL,
    -- No foreign keys: the history of a schedule outlives the runs and
    -- conversations its firings started.
    run_id          TEXT,
    conversation_id TEXT,
    prompt          TEXT NOT NULL,
    status          TEXT NOT NULL,
    error           TEXT NOT NULL,
    claimed_by      TEXT NOT NULL,
    started_at      TEXT,
    finished_at     TEXT,
    UNIQUE (schedule_id, fire_at)
) STRICT;

-- Finding the firings a stopped process left unfinished.
CREATE INDEX schedule_firings_status_started ON schedule_firings (status, started_at);
