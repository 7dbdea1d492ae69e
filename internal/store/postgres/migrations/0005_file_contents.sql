-- Uploaded files: their ingestion state, their contents (so that every process
-- sharing the database reads them) and the chunks of text that retrieval
-- searches, with a full-text index and, when embeddings are configured, a vector
-- per chunk.

-- Records from before this migration are references without contents: ready,
-- with nothing to search.
ALTER TABLE files
    ADD COLUMN size        BIGINT NOT NULL DEFAULT 0 CHECK (size >= 0),
    ADD COLUMN status      TEXT NOT NULL DEFAULT 'ready'
        CHECK (status IN ('pending', 'processing', 'ready', 'failed')),
    ADD COLUMN progress    INTEGER NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100),
    ADD COLUMN error       TEXT NOT NULL DEFAULT '',
    ADD COLUMN note        TEXT NOT NULL DEFAULT '',
    ADD COLUMN chunk_count INTEGER NOT NULL DEFAULT 0 CHECK (chunk_count >= 0),
    ADD COLUMN updated_at  TIMESTAMPTZ,
    -- The claim of the process ingesting the file: a token of its own, and
    -- until when it holds the file before another process may take it again.
    ADD COLUMN claim       TEXT NOT NULL DEFAULT '',
    ADD COLUMN lease_until TIMESTAMPTZ;
UPDATE files SET updated_at = created_at;
ALTER TABLE files ALTER COLUMN updated_at SET NOT NULL;

-- Finding the files waiting for ingestion, or held past their lease.
CREATE INDEX files_status ON files (status, lease_until);

-- Contents in parts of up to 1 MiB, written while the upload streams in. No
-- foreign key: the parts are written before the file's record, which appears
-- only once the whole upload has arrived; deleting a file deletes its parts.
CREATE TABLE file_parts (
    file_id TEXT COLLATE "C" NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    data    BYTEA NOT NULL,
    PRIMARY KEY (file_id, seq)
);

CREATE TABLE file_chunks (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    file_id   TEXT COLLATE "C" NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL CHECK (idx >= 0),
    page      INTEGER NOT NULL,
    -- float32 little-endian; NULL without embeddings.
    embedding BYTEA,
    text      TEXT NOT NULL,
    -- English stemming, like SQLite's porter tokenizer, so both engines match
    -- "services" to "serviced".
    tsv       TSVECTOR GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
    UNIQUE (file_id, idx)
);

CREATE INDEX file_chunks_tsv ON file_chunks USING GIN (tsv);
