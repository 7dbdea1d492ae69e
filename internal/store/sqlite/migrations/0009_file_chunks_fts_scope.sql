-- The full-text index of chunks also indexes the file each chunk belongs to,
-- as one token ('f' and the hex of the file id), so that a search of a few
-- files is one FTS5 query over their chunks only, rather than ranking the
-- matches of every file and dropping the others afterwards. The index keeps
-- no copy of the text (contentless): search reads it from file_chunks, and
-- contentless_delete lets the delete trigger remove a row by its id alone.

DROP TRIGGER file_chunks_fts_insert;
DROP TRIGGER file_chunks_fts_delete;
DROP TABLE file_chunks_fts;

CREATE VIRTUAL TABLE file_chunks_fts USING fts5 (
    text,
    file,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO file_chunks_fts (rowid, text, file) SELECT id, text, 'f' || hex(file_id) FROM file_chunks;

CREATE TRIGGER file_chunks_fts_insert AFTER INSERT ON file_chunks BEGIN
    INSERT INTO file_chunks_fts (rowid, text, file) VALUES (new.id, new.text, 'f' || hex(new.file_id));
END;

CREATE TRIGGER file_chunks_fts_delete AFTER DELETE ON file_chunks BEGIN
    DELETE FROM file_chunks_fts WHERE rowid = old.id;
END;
