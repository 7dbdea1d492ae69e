-- Per-user secrets, sealed at rest (docs/config.md "secrets"): the values a
-- user gives for an MCP server's customUserVars or a user_provided endpoint,
-- each var sealed alone; MCP OAuth grants, whose expiry is kept in clear so
-- that replicas can decide on and claim a refresh (claim_owner until
-- claim_until, compare-and-set on version); and pending OAuth flows, found by
-- the SHA-256 of their state, used once.

CREATE TABLE secret_vars (
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    kind       TEXT COLLATE "C" NOT NULL,
    name       TEXT COLLATE "C" NOT NULL,
    var        TEXT COLLATE "C" NOT NULL,
    sealed     TEXT NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, kind, name, var)
);

CREATE TABLE oauth_grants (
    user_id     TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    server      TEXT COLLATE "C" NOT NULL,
    sealed      TEXT NOT NULL,
    expiry      TIMESTAMPTZ,
    issued      TIMESTAMPTZ NOT NULL,
    version     BIGINT NOT NULL,
    claim_owner TEXT,
    claim_until TIMESTAMPTZ,
    updated_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, server)
);

CREATE TABLE oauth_flows (
    state_hash TEXT PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    server     TEXT COLLATE "C" NOT NULL,
    sealed     TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX oauth_flows_expires_at ON oauth_flows (expires_at);
CREATE INDEX oauth_flows_user_id ON oauth_flows (user_id);
