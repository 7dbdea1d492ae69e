-- When each part of a file's contents was stored, so that the parts of an
-- upload cut off by a crash (parts with no file record) can be swept away
-- once no upload could still be writing them. Parts stored before this
-- migration have none.
ALTER TABLE file_parts ADD COLUMN stored_at TEXT;
