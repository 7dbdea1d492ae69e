-- Questions an MCP server asks a run's user during a tool call, and their
-- answers (docs/mcp.md "Questions"). The answer may reach another Relay
-- process than the one running the call: it finds it here.
CREATE TABLE elicitations (
    id               TEXT PRIMARY KEY,
    run_id           TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    user_id          TEXT NOT NULL,
    server           TEXT NOT NULL,
    tool_call_id     TEXT NOT NULL,
    mode             TEXT NOT NULL,
    message          TEXT NOT NULL,
    requested_schema TEXT,
    url              TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL,
    action           TEXT NOT NULL DEFAULT '',
    content          TEXT,
    created_at       TEXT NOT NULL,
    expires_at       TEXT NOT NULL,
    answered_at      TEXT
);

CREATE INDEX elicitations_run ON elicitations (run_id);
