-- What a run's trace and the run list read (docs/api.md "Runs and
-- conversations"): when each model request's answer ended and the tokens of
-- that turn, and the firing that started a run, found by its run.
ALTER TABLE model_requests ADD COLUMN finished_at TEXT;
ALTER TABLE model_requests ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_requests ADD COLUMN completion_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE model_requests ADD COLUMN total_tokens INTEGER NOT NULL DEFAULT 0;

CREATE INDEX schedule_firings_run ON schedule_firings (run_id) WHERE run_id IS NOT NULL;
