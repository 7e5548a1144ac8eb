-- Deleting a queue or share that still has a job that has not ended
-- (anything but SUCCEEDED or FAILED) is refused with
-- object_not_in_prerequisite_state (55000), and nothing is deleted.  Once
-- all its jobs have ended it can be deleted, and its jobs and their history
-- go with it (scheduling.md 1, 9).
--
-- There is no scheduler in this test, so jobs are moved to other states
-- directly, as superuser, with session_replication_role = replica: in that
-- mode the extension's triggers (the validation and history triggers of
-- quota_sched.job) do not fire.
\i test/regress/include/helpers.sql

-- dqs_jobs records the jobs submitted below; pg_temp.contents() shows, for
-- each, its state (or that it is gone) and its job_event rows, and the
-- queue's shares.  (State changes made in replica mode write no history, so
-- each job keeps just its submission event.)
CREATE TEMP TABLE dqs_jobs (id bigint, name text);
CREATE FUNCTION pg_temp.contents()
RETURNS TABLE (job text, quota_share text, state text, events bigint)
LANGUAGE sql AS $$
	SELECT * FROM (
		SELECT d.name AS job, j.quota_share, coalesce(j.state, '(deleted)') AS state,
		       (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_id = d.id) AS events
		  FROM dqs_jobs d LEFT JOIN quota_sched.job j ON j.id = d.id
		UNION ALL
		SELECT '(queue ' || q.name || ')', s.name, NULL, NULL
		  FROM quota_sched.job_queue q
		  LEFT JOIN quota_sched.quota_share s ON s.job_queue = q.name
		 WHERE q.name = 'dqs_queue') AS c
	 ORDER BY job COLLATE "C", quota_share COLLATE "C"
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('dqs_env', '{"ml.g5.xlarge": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('dqs_queue', 'dqs_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy)
VALUES ('dqs_queue', 'dqs_a', 'LEND'), ('dqs_queue', 'dqs_b', 'LEND'),
       ('dqs_queue', 'dqs_empty', 'LEND');

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('dqs_a_1', 'dqs_queue', 'dqs_a', 'ml.g5.xlarge'),
       ('dqs_a_2', 'dqs_queue', 'dqs_a', 'ml.g5.xlarge'),
       ('dqs_b_1', 'dqs_queue', 'dqs_b', 'ml.g5.xlarge'),
       ('dqs_b_2', 'dqs_queue', 'dqs_b', 'ml.g5.xlarge');
INSERT INTO dqs_jobs SELECT id, name FROM quota_sched.job WHERE job_queue = 'dqs_queue';
SELECT * FROM pg_temp.contents();

-- A share without jobs is deleted at once.
SELECT pg_temp.refused($$DELETE FROM quota_sched.quota_share WHERE job_queue = 'dqs_queue' AND name = 'dqs_empty'$$);

------------------------------------------------------------------------
-- A share or queue with RUNNABLE jobs is not deleted.
------------------------------------------------------------------------
SELECT pg_temp.refused($$DELETE FROM quota_sched.quota_share WHERE job_queue = 'dqs_queue' AND name = 'dqs_a'$$);
SELECT pg_temp.refused($$DELETE FROM quota_sched.job_queue WHERE name = 'dqs_queue'$$);
SELECT * FROM pg_temp.contents();

------------------------------------------------------------------------
-- One job of dqs_a ends; the other is still running: still refused.  Every
-- state but SUCCEEDED and FAILED counts as not ended.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE name = 'dqs_a_1';
RESET session_replication_role;
-- pg_temp.delete_a_with() puts dqs_a_2 into a state (in replica mode, as
-- above) and tries to delete dqs_a.
CREATE FUNCTION pg_temp.delete_a_with(new_state text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	SET session_replication_role = replica;
	UPDATE quota_sched.job SET state = new_state WHERE name = 'dqs_a_2';
	RESET session_replication_role;
	RETURN pg_temp.refused($q$DELETE FROM quota_sched.quota_share WHERE job_queue = 'dqs_queue' AND name = 'dqs_a'$q$);
END
$$;
SELECT state AS state_of_dqs_a_2, pg_temp.delete_a_with(state) AS result
  FROM (VALUES (1, 'RUNNABLE'), (2, 'SCHEDULED'), (3, 'STARTING'), (4, 'RUNNING')) AS v(n, state)
 ORDER BY n;
-- SUBMITTED and PENDING, which the CHECK of 0.1 allowed and no version
-- wrote, are no job states since 0.4 (the domain job_state, words.sql).
SELECT pg_temp.refused($$SELECT pg_temp.delete_a_with('SUBMITTED')$$);
SELECT * FROM pg_temp.contents();

------------------------------------------------------------------------
-- Once all its jobs have ended, the share goes with its jobs and their
-- history; the other share is untouched.  The queue still has dqs_b's live
-- jobs, so it stays.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE name = 'dqs_a_2';
RESET session_replication_role;
-- A DELETE of both shares is still refused whole, for dqs_b's sake.
SELECT pg_temp.refused($$DELETE FROM quota_sched.quota_share WHERE job_queue = 'dqs_queue'$$);
SELECT pg_temp.refused($$DELETE FROM quota_sched.quota_share WHERE job_queue = 'dqs_queue' AND name = 'dqs_a'$$);
SELECT * FROM pg_temp.contents();
SELECT pg_temp.refused($$DELETE FROM quota_sched.job_queue WHERE name = 'dqs_queue'$$);

------------------------------------------------------------------------
-- Once the queue's jobs have all ended, it goes too, with its shares, jobs
-- and history.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE quota_share = 'dqs_b' AND job_queue = 'dqs_queue';
RESET session_replication_role;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job_queue WHERE name = 'dqs_queue'$$);
SELECT * FROM pg_temp.contents();

-- The states set above in replica mode bypassed the counters; all those jobs have
-- ended and their shares are gone with their counter rows: the counters of held
-- capacity must match the jobs, no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
DELETE FROM quota_sched.service_environment WHERE name = 'dqs_env';
