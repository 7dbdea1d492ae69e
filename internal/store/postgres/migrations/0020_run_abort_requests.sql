-- A user's abort of a run that another Relay process runs (docs/api.md "Runs
-- and conversations"): asked here, seen and carried out by that process.
ALTER TABLE runs ADD COLUMN abort_requested_at TIMESTAMPTZ;
