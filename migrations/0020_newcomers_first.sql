-- 0020: an owner new to the line goes before the owners already in the head's round. Under 0019 an owner
-- with nothing queued joined the line at the head's turn, behind the job of the same turn that was
-- already there (ties go by id): an upload that arrived while one owner's import drained waited for one
-- more of the import's jobs than it had to.
--
-- How: a turn now counts rounds and, within a round, newcomers first: turn = 2 * round for the job of an
-- owner that had nothing queued (it joins the head's round), 2 * round + 1 for the next job of an owner
-- already in line (one round past its last). Newcomers of one round keep their order (by id); an owner
-- already served waits for the next round. The lease is unchanged: it still reads (priority, turn, id).
-- The places already given keep their order. Runs again unchanged on a schema that has it.

CREATE OR REPLACE FUNCTION thumbs.take_turn() RETURNS trigger
LANGUAGE plpgsql
SET enable_seqscan = off SET enable_bitmapscan = off SET enable_sort = off
AS $$
BEGIN
  IF NEW.run_at > now() THEN
    NEW.turn := NULL;
    RETURN NEW;
  END IF;
  IF TG_OP = 'UPDATE' AND OLD.state = 'queued' AND OLD.turn IS NOT NULL AND OLD.priority = NEW.priority
     AND OLD.owner IS NOT DISTINCT FROM NEW.owner THEN
    NEW.turn := OLD.turn;
    RETURN NEW;
  END IF;
  NEW.turn := coalesce(
    -- Already in line: the round after its last job's.
    (SELECT j.turn / 2 * 2 + 3 FROM thumbs.jobs j
      WHERE coalesce(j.owner, '') = coalesce(NEW.owner, '') AND j.priority = NEW.priority
        AND j.state = 'queued' AND j.turn IS NOT NULL
      ORDER BY j.turn DESC
      LIMIT 1),
    -- New to the line: first in the head's round.
    (SELECT j.turn / 2 * 2 FROM thumbs.jobs j
      WHERE j.state = 'queued' AND j.turn IS NOT NULL AND j.priority = NEW.priority
      ORDER BY j.priority DESC, j.turn, j.id
      LIMIT 1),
    0);
  RETURN NEW;
END;
$$;

-- The places already given, once (the column's comment tells whether they were): every queued turn t
-- becomes 2t + 1. The trigger keeps a queued job's turn against direct updates, so it is off meanwhile.
DO $$
BEGIN
  IF coalesce(col_description('thumbs.jobs'::regclass,
       (SELECT attnum FROM pg_attribute WHERE attrelid = 'thumbs.jobs'::regclass AND attname = 'turn')), '')
     LIKE '%round%' THEN
    RETURN;
  END IF;
  ALTER TABLE thumbs.jobs DISABLE TRIGGER jobs_take_turn_update;
  UPDATE thumbs.jobs SET turn = turn * 2 + 1 WHERE state = 'queued' AND turn IS NOT NULL;
  ALTER TABLE thumbs.jobs ENABLE TRIGGER jobs_take_turn_update;
  COMMENT ON COLUMN thumbs.jobs.turn IS
    'A queued, due job''s place in its priority''s line (the lease takes the lowest first): 2 * round for an owner new to the line, 2 * round + 1 for an owner already in it; NULL while it waits for its run_at. Kept by the jobs_take_turn triggers';
END;
$$;
