-- The process (node) ingesting a file, so that when that process dies the
-- file goes back to pending at once instead of waiting out its lease.
ALTER TABLE files ADD COLUMN claimed_by TEXT;
