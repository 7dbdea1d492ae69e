-- Memory entries of each user, and the records of files that agents and
-- conversations refer to. Both go when their user goes.

CREATE TABLE memories (
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key        TEXT COLLATE "C" NOT NULL,
    value      TEXT NOT NULL,
    tokens     INTEGER NOT NULL CHECK (tokens >= 0),
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (user_id, key)
);

-- Entries are listed per user, oldest update first.
CREATE INDEX memories_user_updated ON memories (user_id, updated_at, key);

CREATE TABLE files (
    id         TEXT COLLATE "C" PRIMARY KEY,
    owner      TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name       TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX files_owner ON files (owner, created_at);
