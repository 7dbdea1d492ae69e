-- Sharing agents as LibreChat's access control does (docs/api.md "Sharing"):
-- groups of users, and shares that grant a user or a group a role on an agent.
-- Deleting an agent, a group or a user deletes its shares and memberships.
-- Names compare bytewise (COLLATE "C"), as on SQLite, so that groups list in
-- the same order on both engines.

CREATE TABLE user_groups (
    id         TEXT COLLATE "C" PRIMARY KEY,
    name       TEXT COLLATE "C" NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE user_group_members (
    group_id TEXT COLLATE "C" NOT NULL REFERENCES user_groups (id) ON DELETE CASCADE,
    user_id  TEXT COLLATE "C" NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (group_id, user_id)
);

-- The groups of a user, which every check of an agent's shares reads.
CREATE INDEX user_group_members_user ON user_group_members (user_id, group_id);

-- A share names exactly one principal: a user or a group, each with its own
-- foreign key so that deleting either deletes its shares.
CREATE TABLE agent_shares (
    agent_id   TEXT COLLATE "C" NOT NULL REFERENCES agents (id) ON DELETE CASCADE,
    user_id    TEXT COLLATE "C" REFERENCES users (id) ON DELETE CASCADE,
    group_id   TEXT COLLATE "C" REFERENCES user_groups (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('viewer', 'editor', 'owner')),
    created_at TIMESTAMPTZ NOT NULL,
    CHECK ((user_id IS NULL) <> (group_id IS NULL))
);

CREATE UNIQUE INDEX agent_shares_agent_user ON agent_shares (agent_id, user_id) WHERE user_id IS NOT NULL;
CREATE UNIQUE INDEX agent_shares_agent_group ON agent_shares (agent_id, group_id) WHERE group_id IS NOT NULL;
-- The agents shared with a user or a group (the agent list), and the cascades.
CREATE INDEX agent_shares_user ON agent_shares (user_id, agent_id) WHERE user_id IS NOT NULL;
CREATE INDEX agent_shares_group ON agent_shares (group_id, agent_id) WHERE group_id IS NOT NULL;
