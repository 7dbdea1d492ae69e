-- Uploaded files: their ingestion state, their contents (so that every process
-- sharing the database reads them) and the chunks of text that retrieval
-- searches, with a full-text index and, when embeddings are configured, a vector
-- per chunk.

-- Records from before this migration are references without contents: ready,
-- with nothing to search.
ALTER TABLE files ADD COLUMN size INTEGER NOT NULL DEFAULT 0 CHECK (size >= 0);
ALTER TABLE files ADD COLUMN status TEXT NOT NULL DEFAULT 'ready'
    CHECK (status IN ('pending', 'processing', 'ready', 'failed'));
ALTER TABLE files ADD COLUMN progress INTEGER NOT NULL DEFAULT 0 CHECK (progress BETWEEN 0 AND 100);
ALTER TABLE files ADD COLUMN error TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN note TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN chunk_count INTEGER NOT NULL DEFAULT 0 CHECK (chunk_count >= 0);
ALTER TABLE files ADD COLUMN updated_at TEXT NOT NULL DEFAULT '';
-- The claim of the process ingesting the file: a token of its own, and until
-- when it holds the file before another process may take it again.
ALTER TABLE files ADD COLUMN claim TEXT NOT NULL DEFAULT '';
ALTER TABLE files ADD COLUMN lease_until TEXT;
UPDATE files SET updated_at = created_at;

-- Finding the files waiting for ingestion, or held past their lease.
CREATE INDEX files_status ON files (status, lease_until);

-- Contents in parts of up to 1 MiB, written while the upload streams in. No
-- foreign key: the parts are written before the file's record, which appears
-- only once the whole upload has arrived; deleting a file deletes its parts.
CREATE TABLE file_parts (
    file_id TEXT NOT NULL,
    seq     INTEGER NOT NULL CHECK (seq >= 0),
    data    BLOB NOT NULL,
    PRIMARY KEY (file_id, seq)
) STRICT;

CREATE TABLE file_chunks (
    id        INTEGER PRIMARY KEY,
    file_id   TEXT NOT NULL REFERENCES files (id) ON DELETE CASCADE,
    idx       INTEGER NOT NULL CHECK (idx >= 0),
    page      INTEGER NOT NULL,
    -- float32 little-endian, as sqlite-vec reads vectors; NULL without
    -- embeddings. Before the text, so that scoring vectors never reads the
    -- text's overflow pages.
    embedding BLOB,
    text      TEXT NOT NULL,
    UNIQUE (file_id, idx)
) STRICT;

-- Full text of the chunks, kept by the triggers below (external content: the
-- text is stored once, in file_chunks). Porter stemming matches "services" to
-- "serviced"; remove_diacritics matches "cafe" to "café".
CREATE VIRTUAL TABLE file_chunks_fts USING fts5 (
    text,
    content = 'file_chunks',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER file_chunks_fts_insert AFTER INSERT ON file_chunks BEGIN
    INSERT INTO file_chunks_fts (rowid, text) VALUES (new.id, new.text);
END;

CREATE TRIGGER file_chunks_fts_delete AFTER DELETE ON file_chunks BEGIN
    INSERT INTO file_chunks_fts (file_chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
