-- Memory entries of each user, and the records of files that agents and
-- conversations refer to. Both go when their user goes.

CREATE TABLE memories (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key        TEXT NOT NULL,
    value      TEXT NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    updated_at TEXT NOT NULL,
    PRIMARY KEY (user_id, key)
) STRICT;

-- Entries are listed per user, oldest update first.
CREATE INDEX memories_user_updated ON memories (user_id, updated_at, key);

CREATE TABLE files (
    id         TEXT NOT NULL PRIMARY KEY,
    owner      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE INDEX files_owner ON files (owner, created_at);
