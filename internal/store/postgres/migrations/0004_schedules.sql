-- Schedules run an agent with a prompt on a cron expression or once, and each
-- firing of one is recorded. A schedule goes with its user, and its firings go
-- with the schedule.

CREATE TABLE schedules (
    id          TEXT COLLATE "C" PRIMARY KEY,
    user_id     TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- No foreign key: a schedule whose agent was deleted stays, to be edited or
    -- deleted, and its firings fail with a clear error until then.
    agent_id    TEXT COLLATE "C" NOT NULL,
    name        TEXT NOT NULL,
    prompt      TEXT NOT NULL,
    type        TEXT NOT NULL,
    cron        TEXT NOT NULL,
    run_at      TIMESTAMPTZ,
    timezone    TEXT NOT NULL,
    enabled     BOOLEAN NOT NULL,
    notify_url  TEXT NOT NULL,
    next_run_at TIMESTAMPTZ,
    last_run_at TIMESTAMPTZ,
    last_status TEXT NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL
);

-- Finding the due schedules, soonest first, and the next one to wake up for:
-- a range of one index, however many schedules there are.
CREATE INDEX schedules_due ON schedules (enabled, next_run_at, id);
-- A user's schedules, oldest first, and the cascade from a user.
CREATE INDEX schedules_user ON schedules (user_id, created_at, id);

-- A firing is unique per schedule and fire time: inserting it is how one
-- process, and only one, claims it.
CREATE TABLE schedule_firings (
    id              TEXT COLLATE "C" PRIMARY KEY,
    schedule_id     TEXT COLLATE "C" NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    fire_at         TIMESTAMPTZ NOT NULL,
    -- No foreign keys: the history of a schedule outlives the runs and
    -- conversations its firings started.
    run_id          TEXT COLLATE "C",
    conversation_id TEXT COLLATE "C",
    prompt          TEXT NOT NULL,
    status          TEXT NOT NULL,
    error           TEXT NOT NULL,
    claimed_by      TEXT NOT NULL,
    started_at      TIMESTAMPTZ,
    finished_at     TIMESTAMPTZ,
    UNIQUE (schedule_id, fire_at)
);

-- Finding the firings a stopped process left unfinished.
CREATE INDEX schedule_firings_status_started ON schedule_firings (status, started_at);
