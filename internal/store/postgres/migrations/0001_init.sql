-- Ids compare bytewise (COLLATE "C"), as on SQLite, so that agents created in the
-- same microsecond list in the same order on both engines.

CREATE TABLE users (
    id            TEXT COLLATE "C" PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    role          TEXT NOT NULL,
    password_hash TEXT,
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT COLLATE "C" PRIMARY KEY,
    user_id      TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    prefix       TEXT NOT NULL,
    hash         TEXT NOT NULL UNIQUE,
    created_at   TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at   TIMESTAMPTZ
);

CREATE INDEX api_keys_user_id ON api_keys (user_id, created_at);

CREATE TABLE agents (
    id         TEXT COLLATE "C" PRIMARY KEY,
    author     TEXT COLLATE "C" REFERENCES users (id) ON DELETE SET NULL,
    managed    BOOLEAN NOT NULL,
    shared     BOOLEAN NOT NULL,
    version    INTEGER NOT NULL,
    spec       JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX agents_created_at_id ON agents (created_at, id);
CREATE INDEX agents_author ON agents (author);

CREATE TABLE agent_versions (
    agent_id   TEXT COLLATE "C" NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    version    INTEGER NOT NULL,
    spec       JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (agent_id, version)
);
