-- Times are TEXT in the fixed-width form 2006-01-02T15:04:05.000000Z (UTC,
-- microseconds), which sorts in time order. Booleans are 0 or 1.

CREATE TABLE users (
    id            TEXT NOT NULL PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    role          TEXT NOT NULL,
    password_hash TEXT,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL
) STRICT;

CREATE TABLE api_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    hash         TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at   TEXT
) STRICT;

CREATE INDEX api_keys_user_id ON api_keys (user_id, created_at);

CREATE TABLE agents (
    id         TEXT NOT NULL PRIMARY KEY,
    author     TEXT REFERENCES users (id) ON DELETE SET NULL,
    managed    INTEGER NOT NULL CHECK (managed IN (0, 1)),
    shared     INTEGER NOT NULL CHECK (shared IN (0, 1)),
    version    INTEGER NOT NULL,
    spec       TEXT NOT NULL CHECK (json_valid(spec)),
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;

CREATE INDEX agents_created_at_id ON agents (created_at, id);
CREATE INDEX agents_author ON agents (author);

CREATE TABLE agent_versions (
    agent_id   TEXT NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    spec       TEXT NOT NULL CHECK (json_valid(spec)),
    created_at TEXT NOT NULL,
    PRIMARY KEY (agent_id, version)
) STRICT;
