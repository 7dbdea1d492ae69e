-- What a model request of a run was for (docs/api.md "Runs and
-- conversations"): empty for an agent's turn, "summary" for the request that
-- summarised the turns dropped to fit the context window.
ALTER TABLE model_requests ADD COLUMN purpose TEXT NOT NULL DEFAULT '';
