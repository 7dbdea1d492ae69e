-- What a tool call's result was drawn from (file passages, web pages), as a
-- JSON array, so that an answer's citations can be shown and exported.
ALTER TABLE tool_calls ADD COLUMN sources TEXT;
