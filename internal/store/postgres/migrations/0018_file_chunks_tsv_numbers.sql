-- Full-text search cuts a chunk's text at the marks between digits, as SQLite's
-- tokenizer and every query are cut (docs/config.md, "Full-text search"):
-- "2016/679", "6.1" and "1.2.3" are indexed as their numbers, so that a query
-- for the regulation or the article finds them. Postgres's parser would keep
-- each whole, as a path or a version, which no query word matches.
ALTER TABLE file_chunks DROP COLUMN tsv;

ALTER TABLE file_chunks ADD COLUMN tsv TSVECTOR GENERATED ALWAYS AS (
    to_tsvector('english', regexp_replace(text, '([0-9])[./:,-](?=[0-9])', '\1 ', 'g'))
) STORED;

CREATE INDEX file_chunks_tsv ON file_chunks USING GIN (tsv);
