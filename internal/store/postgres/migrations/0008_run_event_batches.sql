-- The events a run streams are stored in batches, one row per run per batch,
-- each row holding consecutive events (first_seq to last_seq) as a JSON array:
-- a row per event costs too much when a thousand runs stream at once. Events
-- appended one at a time stay in run_events; a run's events are both tables'.
-- The array is text, so that each event's data comes back byte for byte.
CREATE TABLE run_event_batches (
    run_id    TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    first_seq BIGINT NOT NULL CHECK (first_seq >= 1),
    last_seq  BIGINT NOT NULL CHECK (last_seq >= first_seq),
    events    TEXT NOT NULL,
    PRIMARY KEY (run_id, first_seq)
);
