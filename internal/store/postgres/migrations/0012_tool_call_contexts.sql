-- The passages a tool call's result is made of (file_search's passages, an MCP
-- result's text parts), as a JSON array of strings, so that the Ragas export has
-- one retrieved context per passage. NULL: the result is one passage.
ALTER TABLE tool_calls ADD COLUMN contexts TEXT;
