-- Signing in to the web UI (docs/api.md "Authentication"): a user may be
-- disabled, which stops their keys and sessions at once; browsers hold a
-- session whose token is stored only as its SHA-256; the first start makes
-- one-time setup tokens (hashed too) for the link that creates the first
-- admin; identities tie a user to an OpenID Connect provider's subject.

ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0 CHECK (disabled IN (0, 1));

CREATE TABLE sessions (
    id           TEXT NOT NULL PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash   TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    expires_at   TEXT NOT NULL,
    last_seen_at TEXT NOT NULL,
    user_agent   TEXT NOT NULL
) STRICT;

CREATE INDEX sessions_user_id ON sessions (user_id);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

CREATE TABLE setup_tokens (
    token_hash TEXT NOT NULL PRIMARY KEY,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
) STRICT;

CREATE TABLE identities (
    issuer     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    email      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (issuer, subject)
) STRICT;

CREATE INDEX identities_user_id ON identities (user_id);
