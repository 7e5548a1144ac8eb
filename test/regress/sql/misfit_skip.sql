-- The misconfiguration check a pass leaves out (issue 42, item 3;
-- src/pass/pass_apply.c, ApplyMisconfiguration): it sets and clears the
-- MISCONFIGURATION, BUDGET_EXHAUSTED and NO_AGENT_FITS reasons of the
-- RUNNABLE jobs from the limits of their shares and units; a pass leaves
-- it out when the last committed check checked the same limits and no
-- RUNNABLE job of those shares and units was written since (each such
-- write counts in its pair's floor, scan_floor.c).  check() runs a pass
-- and shows whether it checked (quota_sched.misconfiguration_skips(): how
-- many times this backend's passes left it out) and the RUNNABLE jobs'
-- reasons, which each step below changes, so that a pass that left the
-- check out when it should not have would show the old reasons.  A check
-- that changes a reason writes a RUNNABLE job itself: the pass after it
-- checks once more, and finds nothing to change.

\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ms_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ms_queue', 'ms_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ms_queue', 'ms_a', '{"gpu": 2}', 'RESERVE'), ('ms_queue', 'ms_b', '{"gpu": 2}', 'RESERVE');
-- ms_a's 2 gpus are held, so a job of 2 waits, one of 3 is misconfigured
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ms_hold', 'ms_queue', 'ms_a', 'gpu', 2);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ms_queue') WHERE action = 'DISPATCH';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ms_wait', 'ms_queue', 'ms_a', 'gpu', 2), ('ms_big', 'ms_queue', 'ms_a', 'gpu', 3);

CREATE TEMP TABLE ms_skips AS SELECT quota_sched.misconfiguration_skips() AS n;
CREATE FUNCTION pg_temp.check(OUT checked boolean, OUT reasons text)
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM quota_sched.run_pass('ms_queue');
	SELECT quota_sched.misconfiguration_skips() = n INTO checked FROM ms_skips;
	UPDATE ms_skips SET n = quota_sched.misconfiguration_skips();
	SELECT string_agg(name || ': ' || coalesce(status_reason, '-'), ', ' ORDER BY id) INTO reasons
	  FROM quota_sched.job WHERE job_queue = 'ms_queue' AND state = 'RUNNABLE';
END
$$;

-- The first pass checks (ms_big misconfigured), the second checks once
-- more, the third leaves it out.
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- A job submitted to ms_a: checked (ms_big2 misconfigured too), then not.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ms_big2', 'ms_queue', 'ms_a', 'gpu', 5);
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- ms_a's limit raised to 3: other limits, checked: ms_big is not
-- misconfigured any more, ms_big2 (5 > 4 of the environment) is.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 3}'
 WHERE job_queue = 'ms_queue' AND name = 'ms_a';
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- A reason written by an admin, with the guards off: a write of a RUNNABLE
-- job, checked, and the reason put right.
SET session_replication_role = replica;
UPDATE quota_sched.job SET status_reason = 'MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED'
 WHERE name = 'ms_wait';
RESET session_replication_role;
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- A check rolled back counts for nothing: the next pass checks again.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 2}'
 WHERE job_queue = 'ms_queue' AND name = 'ms_a';
BEGIN;
SELECT * FROM pg_temp.check();
ROLLBACK;
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- And one rolled back to a savepoint, in a transaction that commits: a
-- larger limit clears ms_big's reason, not for long; the next pass checks
-- again, and clears it.  Then the limit as it was.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 3}'
 WHERE job_queue = 'ms_queue' AND name = 'ms_a';
BEGIN;
SAVEPOINT s;
SELECT * FROM pg_temp.check();
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 2}'
 WHERE job_queue = 'ms_queue' AND name = 'ms_a';
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- A job of another share (a pair of its own): checked.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ms_b_big', 'ms_queue', 'ms_b', 'gpu', 3);
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- A pass in the transaction that submitted a job checks, and notes nothing
-- its commit would make wrong: the next pass checks again.
BEGIN;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('ms_b_wait', 'ms_queue', 'ms_b', 'gpu', 1);
SELECT * FROM pg_temp.check();
COMMIT;
SELECT * FROM pg_temp.check();
SELECT * FROM pg_temp.check();
-- Only admins may call misconfiguration_skips().
SELECT has_function_privilege('quota_sched_user', 'quota_sched.misconfiguration_skips()', 'EXECUTE')
	   AS users_may;

DELETE FROM quota_sched.job WHERE job_queue = 'ms_queue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'ms_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'ms_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ms_env';
