-- A schedule runs one firing at a time (docs/agents.md "Schedules"): at most one
-- of its firings is queued or running, whichever process queued it and whether
-- it was due or run by hand. CreateFiring and ClaimFiring look before they
-- insert; this index makes the database refuse a second one all the same.
--
-- Firings that broke the rule before (runs by hand started together) are
-- failed, all but the latest of each schedule, so that the index can be made.
UPDATE schedule_firings
   SET status = 'failed',
       error = 'another firing of the schedule was running at the same time',
       finished_at = COALESCE(finished_at, strftime('%Y-%m-%dT%H:%M:%S.000000Z', 'now'))
 WHERE status IN ('queued', 'running')
   AND EXISTS (
       SELECT 1 FROM schedule_firings AS later
        WHERE later.schedule_id = schedule_firings.schedule_id
          AND later.status IN ('queued', 'running')
          AND later.fire_at > schedule_firings.fire_at);

CREATE UNIQUE INDEX schedule_firings_running ON schedule_firings (schedule_id)
    WHERE status IN ('queued', 'running');
