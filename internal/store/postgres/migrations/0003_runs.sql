-- Conversations and their messages, the runs that answer messages, and what each
-- run recorded: its events (replayed to clients that reconnect), the request
-- bodies sent to providers, and its tool calls. A conversation goes with its
-- user, and everything under it goes with the conversation.

CREATE TABLE conversations (
    id         TEXT COLLATE "C" PRIMARY KEY,
    user_id    TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    -- No foreign key: a conversation outlives the agent it was held with.
    agent_id   TEXT COLLATE "C" NOT NULL,
    title      TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

-- A user's conversations are listed most recently updated first.
CREATE INDEX conversations_user_updated ON conversations (user_id, updated_at, id);

-- Messages form a tree through parent_id, within one conversation.
CREATE TABLE messages (
    id              TEXT COLLATE "C" PRIMARY KEY,
    conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    parent_id       TEXT COLLATE "C",
    role            TEXT NOT NULL,
    agent_id        TEXT COLLATE "C",
    text            TEXT NOT NULL,
    parts           JSONB,
    run_id          TEXT COLLATE "C",
    created_at      TIMESTAMPTZ NOT NULL
);

CREATE INDEX messages_conversation ON messages (conversation_id, created_at, id);

CREATE TABLE runs (
    id                  TEXT COLLATE "C" PRIMARY KEY,
    user_id             TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    agent_id            TEXT COLLATE "C" NOT NULL,
    conversation_id     TEXT COLLATE "C" NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    user_message_id     TEXT COLLATE "C" NOT NULL,
    response_message_id TEXT COLLATE "C",
    status              TEXT NOT NULL,
    error               TEXT NOT NULL,
    prompt_tokens       INTEGER NOT NULL,
    completion_tokens   INTEGER NOT NULL,
    total_tokens        INTEGER NOT NULL,
    created_at          TIMESTAMPTZ NOT NULL,
    started_at          TIMESTAMPTZ,
    finished_at         TIMESTAMPTZ
);

-- Finding the runs a stopped process left unfinished.
CREATE INDEX runs_status_started ON runs (status, started_at);
-- The cascades from a conversation and from a user.
CREATE INDEX runs_conversation ON runs (conversation_id);
CREATE INDEX runs_user ON runs (user_id, created_at);

-- Seq numbers a run's events from 1; a client resumes after the last it saw.
-- data is JSON, not JSONB, so that a replayed event carries the very text that
-- was streamed live.
CREATE TABLE run_events (
    run_id     TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL CHECK (seq >= 1),
    type       TEXT NOT NULL,
    data       JSON,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq)
);

-- body is kept byte for byte as it was sent: JSONB would reorder its keys and
-- respace it, so it is plain text.
CREATE TABLE model_requests (
    run_id   TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq      INTEGER NOT NULL CHECK (seq >= 1),
    agent_id TEXT COLLATE "C" NOT NULL,
    body     TEXT NOT NULL,
    sent_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE tool_calls (
    run_id      TEXT COLLATE "C" NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    id          TEXT COLLATE "C" NOT NULL,
    agent_id    TEXT COLLATE "C" NOT NULL,
    name        TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    result      TEXT NOT NULL,
    is_error    BOOLEAN NOT NULL,
    duration_us BIGINT NOT NULL,
    step        INTEGER NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (run_id, id)
);
