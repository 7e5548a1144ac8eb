/*
 * reporting_rollup.sql
 *		The hourly rollup of utilization and lending (rollup()) and the
 *		retention of ended jobs (prune()).
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.  (The
 * rollup's tables are in tables.sql.)
 */

/*
 * usage_totals (tables.sql) keeps the counts of usage_counters over each
 * queue's hours rolled up, added by rollup() with the hourly rows: metrics() reads its counters from here
 * and the history after the rollup, so they never go back, however the
 * history is pruned.
 */

/*
 * rollup() brings the hourly rollup of every queue up to the last whole
 * hour before the oldest open transaction started (an event is stamped
 * with its transaction's start, so one not yet committed is never older),
 * or before up_to (never past now: an hour that has not happened would be
 * rolled up without the events still to come, and the jobs that end in it
 * could be deleted at once); a null or infinite up_to is refused (22023).
 * It returns the number of queue-hours it rolled up.  The
 * background worker calls it after the first full round of each hour;
 * without the worker, pg_cron can (doc/operations.md).  A queue's first rollup starts
 * at the hour of its first event or of its shares' first configuration (the
 * last whole hour if it has neither); it reads the whole history, once.
 */
CREATE OR REPLACE FUNCTION quota_sched.rollup(up_to timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	horizon timestamptz;
	q text;
	hours bigint := 0;
BEGIN
	IF up_to IS NULL OR NOT isfinite(up_to) THEN
		RAISE EXCEPTION 'invalid up_to %', coalesce(up_to::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'up_to is a finite time; the rollup never goes past now.';
	END IF;
	SELECT date_trunc('hour', least(up_to, now(), min(a.xact_start))) INTO horizon
	  FROM pg_stat_activity a WHERE a.xact_start IS NOT NULL AND a.pid <> pg_backend_pid();
	FOR q IN SELECT name FROM quota_sched.job_queue ORDER BY name COLLATE "C" LOOP
		hours := hours + quota_sched.rollup_queue(q, horizon);
	END LOOP;
	RETURN hours;
END
$$;

/*
 * rollup_queue(q, horizon): rollup()'s work for one queue, up to the hour
 * horizon; the number of hours it rolled up.  The hours of usage_hourly and
 * usage_totals a week at a time; who lent to whom (lending_hourly) up to
 * the same hour, a day at a time: the first time from the queue's first
 * hour (after an update from 0.2, also the hours 0.2 rolled up, from the
 * history that is left of them), at most a week of it a call, so that
 * catching up on a long history never holds up the worker's round for
 * long.
 */
CREATE OR REPLACE FUNCTION quota_sched.rollup_queue(q text, horizon timestamptz)
RETURNS bigint
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	t0 timestamptz;
	t1 timestamptz;
	l0 timestamptz;
	l1 timestamptz;
	lent_to timestamptz;
	origin timestamptz;
	hours bigint := 0;
BEGIN
	SELECT r.rolled_until, r.lent_until INTO t0, l0
	  FROM quota_sched.usage_rollup r WHERE r.job_queue = q;
	IF t0 IS NULL OR l0 IS NULL THEN
		SELECT date_trunc('hour', least(
				   (SELECT min(e.at) FROM quota_sched.job_event e WHERE e.job_queue = q),
				   (SELECT min(c.at) FROM quota_sched.config_event c
					 WHERE c.object = 'quota_share' AND c.job_queue = q)))
		  INTO origin;
		-- a queue with no history at all: its first rollup is the last
		-- whole hour, so that it has a rollup row and its next rollup
		-- does not look through the whole history again
		origin := coalesce(origin, horizon - interval '1 hour');
	END IF;
	t0 := coalesce(t0, origin);
	WHILE t0 < horizon LOOP
		t1 := least(horizon, t0 + interval '7 days');
		INSERT INTO quota_sched.usage_hourly
			(job_queue, quota_share, capacity_unit, hour, capacity, used, own, borrowed, idle,
			 usage_end, capacity_end, dispatched, succeeded, failed, terminated, preempted,
			 preempting, waits, preempted_early)
		SELECT q, p.* FROM quota_sched.usage_parts(q, t0, t1, interval '1 hour') p;
		INSERT INTO quota_sched.usage_totals AS u
		SELECT q, c.* FROM quota_sched.usage_counters(q, t0, t1) c
		ON CONFLICT (job_queue, quota_share, capacity_unit, counter)
		DO UPDATE SET value = u.value + excluded.value;
		INSERT INTO quota_sched.usage_rollup AS r (job_queue, rolled_until) VALUES (q, t1)
		ON CONFLICT (job_queue) DO UPDATE SET rolled_until = excluded.rolled_until;
		hours := hours + extract(epoch FROM t1 - t0)::bigint / 3600;
		t0 := t1;
	END LOOP;
	l0 := coalesce(l0, origin);
	lent_to := least(t0, l0 + interval '7 days');
	WHILE l0 < lent_to LOOP
		l1 := least(lent_to, l0 + interval '1 day');
		INSERT INTO quota_sched.lending_hourly
			(job_queue, capacity_unit, hour, lender, borrower, instance_seconds)
		SELECT q, p.* FROM quota_sched.lending_parts(q, l0, l1, interval '1 hour') p;
		UPDATE quota_sched.usage_rollup r SET lent_until = l1 WHERE r.job_queue = q;
		l0 := l1;
	END LOOP;
	RETURN hours;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.rollup(timestamptz),
	quota_sched.rollup_queue(text, timestamptz) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.rollup(timestamptz) TO quota_sched_admin;

/*
 * Retention.  prune(older_than) deletes, in batches of its own
 * transactions, the ended jobs (with their history, job_history_delete)
 * and the pass_log rows older than the horizon, after bringing the rollup
 * up to date; an ended job goes only once the rollup covers it
 * (job_before_delete), so its figures stay in usage_hourly and
 * lending_hourly.
 *
 * (No SET search_path: a procedure with one cannot commit.  It runs with
 * the caller's rights, and names everything with its schema.)  Inside a
 * transaction block it refuses to start (25001); called from a function
 * (an atomic context) its first COMMIT still fails (2D000).
 */
CREATE OR REPLACE PROCEDURE quota_sched.prune(older_than interval, batch integer DEFAULT 10000)
LANGUAGE plpgsql
AS $$
DECLARE
	horizon timestamptz;
	n bigint;
	jobs bigint := 0;
	passes bigint := 0;
BEGIN
	IF older_than IS NULL OR older_than <= interval '0' THEN
		RAISE EXCEPTION 'invalid older_than %', older_than
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'older_than is positive.';
	END IF;
	IF batch IS NULL OR batch < 1 THEN
		RAISE EXCEPTION 'invalid batch %', batch
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'batch is at least 1.';
	END IF;
	horizon := pg_catalog.now() - older_than;
	-- it commits: inside BEGIN ... COMMIT its first COMMIT would fail with
	-- "invalid transaction termination", which says nothing of why
	IF quota_sched.in_transaction_block() THEN
		RAISE EXCEPTION 'quota_sched.prune() cannot run inside a transaction block'
			USING ERRCODE = 'active_sql_transaction',
				  DETAIL = 'It deletes in batches, each committed on its own.',
				  HINT = 'CALL it on its own, outside BEGIN ... COMMIT (in psql with AUTOCOMMIT on).';
	END IF;
	PERFORM quota_sched.rollup();
	COMMIT;
	LOOP
		DELETE FROM quota_sched.job j
		 WHERE j.id IN (
			SELECT e.id FROM quota_sched.job e
			  JOIN quota_sched.usage_rollup r ON r.job_queue = e.job_queue
			 WHERE e.state IN ('SUCCEEDED', 'FAILED')
			   AND e.status_reason_at < least(horizon, r.rolled_until,
											  coalesce(r.lent_until, '-infinity'))
			 LIMIT batch);
		GET DIAGNOSTICS n = ROW_COUNT;
		jobs := jobs + n;
		COMMIT;
		EXIT WHEN n < batch;
	END LOOP;
	LOOP
		DELETE FROM quota_sched.pass_log p
		 WHERE p.id IN (SELECT l.id FROM quota_sched.pass_log l
						 WHERE l.finished_at < horizon LIMIT batch);
		GET DIAGNOSTICS n = ROW_COUNT;
		passes := passes + n;
		COMMIT;
		EXIT WHEN n < batch;
	END LOOP;
	RAISE NOTICE 'quota_sched.prune: % ended jobs (with their history) and % pass_log rows older than %',
		jobs, passes, older_than;
END
$$;
REVOKE ALL ON PROCEDURE quota_sched.prune(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE quota_sched.prune(interval, integer) TO quota_sched_admin;
