-- From this version on an answer's text is stored once: a message's text part
-- that is the message's whole text is stored without it (text_of_message), and
-- a text of a batched event (run_event_batches) that repeats an earlier one of
-- the same event is cut out and put back when read (same). Earlier versions
-- would read those as empty texts; this migration, which changes nothing else,
-- has them refuse the database instead ("newer than this relay").
SELECT 1;
