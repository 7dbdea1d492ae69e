-- Every serving Relay process registers as a node and heartbeats. The runs a
-- process starts and the firings it claims name its node, so that when it dies
-- (its heartbeat stops) another process fails them instead of leaving them
-- running for ever. Firings already name it in claimed_by.

CREATE TABLE nodes (
    id           TEXT COLLATE "C" PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    started_at   TIMESTAMPTZ NOT NULL,
    heartbeat_at TIMESTAMPTZ NOT NULL
);

-- No foreign key: a run outlives the process that ran it. NULL for runs of
-- command-line processes, which register no node.
ALTER TABLE runs ADD COLUMN node_id TEXT COLLATE "C";

-- Finding a dead node's unfinished runs and firings.
CREATE INDEX runs_node_status ON runs (node_id, status) WHERE node_id IS NOT NULL;
CREATE INDEX schedule_firings_claimed_status ON schedule_firings (claimed_by, status);
