-- Per-user secrets, sealed at rest (docs/config.md "secrets"): the values a
-- user gives for an MCP server's customUserVars or a user_provided endpoint,
-- each var sealed alone; MCP OAuth grants, whose expiry is kept in clear so
-- that replicas can decide on and claim a refresh (claim_owner until
-- claim_until, compare-and-set on version); and pending OAuth flows, found by
-- the SHA-256 of their state, used once.

CREATE TABLE secret_vars (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    var        TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, kind, name, var)
) STRICT;

CREATE TABLE oauth_grants (
    user_id     TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    server      TEXT NOT NULL,
    sealed      TEXT NOT NULL,
    expiry      TEXT,
    issued      TEXT NOT NULL,
    version     INTEGER NOT NULL,
    claim_owner TEXT,
    claim_until TEXT,
    updated_at  TEXT NOT NULL,
    PRIMARY KEY (user_id, server)
) STRICT;

CREATE TABLE oauth_flows (
    state_hash TEXT NOT NULL PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    server     TEXT NOT NULL,
    sealed     TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;

CREATE INDEX oauth_flows_expires_at ON oauth_flows (expires_at);
CREATE INDEX oauth_flows_user_id ON oauth_flows (user_id);
