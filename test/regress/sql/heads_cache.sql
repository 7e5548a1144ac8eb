-- The first RUNNABLE jobs a pass keeps (issue 42, item 3;
-- src/pass/heads_cache.c): a pass reads the first jobs of a share and
-- unit again only after a write of that pair's RUNNABLE jobs committed (a
-- job moved in, out or changed, whatever wrote it); passes with none
-- changed take what the backend kept (quota_sched.runnable_heads_reads():
-- how many pairs' first jobs this backend read).  In hc_a (STRICT, 2 gpus,
-- one held by hc_holder) hc_big (2 gpus) waits first, and hc_small (1 gpu)
-- waits behind it: each write below changes what the next pass decides,
-- which a pass that took stale first jobs would not.

\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hc_env', '{"gpu": 2}'), ('hc_env_p', '{"gpu": 2}'), ('hc_env_o', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('hc_queue', 'hc_env'), ('hc_queue_p', 'hc_env_p'), ('hc_queue_o', 'hc_env_o');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, queueing)
VALUES ('hc_queue', 'hc_a', '{"gpu": 2}', 'RESERVE', 'STRICT'),
	   ('hc_queue_p', 'hc_a', '{"gpu": 2}', 'RESERVE', 'STRICT'),
	   ('hc_queue_o', 'hc_a', '{"gpu": 2}', 'RESERVE', 'STRICT');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hc_holder', 'hc_queue', 'hc_a', 'gpu', 1), ('hc_holder', 'hc_queue_p', 'hc_a', 'gpu', 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('hc_queue') WHERE action = 'DISPATCH';
SELECT count(*) AS dispatched FROM quota_sched.run_pass('hc_queue_p') WHERE action = 'DISPATCH';

-- step(q): the pass of queue q: the jobs it dispatched, and how many
-- pairs' first jobs this backend read since the last step.
CREATE TEMP TABLE hc_reads AS SELECT quota_sched.runnable_heads_reads() AS n;
CREATE FUNCTION pg_temp.step(q text, OUT dispatched text, OUT reads bigint)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT coalesce(string_agg(p.name, ', ' ORDER BY p.name), '') INTO dispatched
	  FROM pg_temp.pass(q) p WHERE p.action = 'DISPATCH';
	SELECT quota_sched.runnable_heads_reads() - n INTO reads FROM hc_reads;
	UPDATE hc_reads SET n = quota_sched.runnable_heads_reads();
END
$$;
-- waiting(q): hc_big first (priority 5), hc_small behind it, in queue q
-- (each case then runs two passes, the first of which reads them, and the
-- second not: a pass in the transaction that submitted them would read
-- them and keep nothing).
CREATE FUNCTION pg_temp.waiting(q text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
								 priority)
	VALUES ('hc_big', q, 'hc_a', 'gpu', 2, 5), ('hc_small', q, 'hc_a', 'gpu', 1, 0)
$$;
-- clear(q): every job of queue q gone but its holder (a superuser's DELETE)
CREATE FUNCTION pg_temp.clear(q text) RETURNS void LANGUAGE sql AS $$
	DELETE FROM quota_sched.job WHERE job_queue = q AND name <> 'hc_holder'
$$;

-- A job that leaves alone, with no write of another: in hc_queue_t,
-- hc_queue_d and hc_queue_r (BEST_EFFORT) hc_big waits alone; it is
-- terminated, deleted, or made FAILED by an admin's repair (with
-- session_replication_role = replica), then the holder is terminated: the
-- next pass must find no job to dispatch (one that took hc_big as kept
-- would dispatch it).
INSERT INTO quota_sched.service_environment (name, capacity_limits)
SELECT 'hc_env_' || k, '{"gpu": 2}' FROM unnest('{t,d,r}'::text[]) k;
INSERT INTO quota_sched.job_queue (name, service_environment)
SELECT 'hc_queue_' || k, 'hc_env_' || k FROM unnest('{t,d,r}'::text[]) k;
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
SELECT 'hc_queue_' || k, 'hc_a', '{"gpu": 2}', 'RESERVE' FROM unnest('{t,d,r}'::text[]) k;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'hc_holder', 'hc_queue_' || k, 'hc_a', 'gpu', 1 FROM unnest('{t,d,r}'::text[]) k;
SELECT k, s.* FROM unnest('{t,d,r}'::text[]) k, pg_temp.step('hc_queue_' || k) s;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'hc_big', 'hc_queue_' || k, 'hc_a', 'gpu', 2 FROM unnest('{t,d,r}'::text[]) k;
SELECT k, s.* FROM unnest('{t,d,r}'::text[]) k, pg_temp.step('hc_queue_' || k) s;
SELECT k, s.* FROM unnest('{t,d,r}'::text[]) k, pg_temp.step('hc_queue_' || k) s;
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue = 'hc_queue_t' AND name = 'hc_big';
DELETE FROM quota_sched.job WHERE job_queue = 'hc_queue_d' AND name = 'hc_big';
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED', status_reason = 'TERMINATED'
 WHERE job_queue = 'hc_queue_r' AND name = 'hc_big';
RESET session_replication_role;
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue IN ('hc_queue_t', 'hc_queue_d', 'hc_queue_r') AND name = 'hc_holder';
SELECT k, s.* FROM unnest('{t,d,r}'::text[]) k, pg_temp.step('hc_queue_' || k) s;
SELECT job_queue, name, state FROM quota_sched.job
 WHERE job_queue IN ('hc_queue_t', 'hc_queue_d', 'hc_queue_r') ORDER BY job_queue, name;
-- A terminate of the first job (RUNNABLE to FAILED: a row moved out).
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue = 'hc_queue' AND name = 'hc_big';
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');
-- A DELETE of the first job (a superuser's).
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
DELETE FROM quota_sched.job WHERE job_queue = 'hc_queue' AND name = 'hc_big';
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');
-- A priority raised: hc_small first.
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
UPDATE quota_sched.job SET priority = 9 WHERE job_queue = 'hc_queue' AND name = 'hc_small';
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');
-- An admin's repair with session_replication_role = replica (no trigger
-- but ENABLE ALWAYS ones): hc_big of 1 gpu, which then fits.
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SET session_replication_role = replica;
UPDATE quota_sched.job SET instance_count = 1 WHERE job_queue = 'hc_queue' AND name = 'hc_big';
RESET session_replication_role;
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');
-- Another queue's jobs change: this one's first jobs stay kept.
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hc_other', 'hc_queue_o', 'hc_a', 'gpu', 1);
SELECT * FROM pg_temp.step('hc_queue');
-- A write rolled back: the pass inside the transaction reads what it
-- wrote and keeps nothing, and the pass after the rollback takes what was
-- kept before, which is right again (the read inside is counted in its
-- reads: the transaction's update of hc_reads went back with it).
BEGIN;
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue = 'hc_queue' AND name = 'hc_big';
SELECT * FROM pg_temp.step('hc_queue');
ROLLBACK;
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');
-- A prepared DELETE of the first job (its own queue: once a transaction
-- that wrote a pair's jobs was prepared, nothing is kept of the pair until
-- the server restarts): the passes before its COMMIT PREPARED, which
-- another session could run, read them and keep nothing, and the pass
-- after it sees hc_big gone.
SELECT pg_temp.waiting('hc_queue_p');
SELECT * FROM pg_temp.step('hc_queue_p');
SELECT * FROM pg_temp.step('hc_queue_p');
BEGIN;
DELETE FROM quota_sched.job WHERE job_queue = 'hc_queue_p' AND name = 'hc_big';
PREPARE TRANSACTION 'hc_delete';
SELECT * FROM pg_temp.step('hc_queue_p');
SELECT * FROM pg_temp.step('hc_queue_p');
COMMIT PREPARED 'hc_delete';
SELECT * FROM pg_temp.step('hc_queue_p');
-- What was kept from a read of fewer jobs per pair than a pass reads now
-- (two each of nine pairs or more, eight each of eight or fewer) is read
-- again when it may lack some: in hc_l1 (BEST_EFFORT, 1 gpu) two jobs of
-- 3 gpus come before hc_mid (2 gpus); nine pairs have jobs that do not
-- fit (hc_wide cannot run as configured: the first pass notes so on each,
-- a write of them, so the second reads them again).  Once hc_l9's job is gone (its pair has none: eight pairs left)
-- and hc_l1 has 2 gpus, the pass reads hc_l1's first eight jobs again and
-- dispatches hc_mid, the third.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hc_env_l', '{"gpu": 9}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('hc_queue_l', 'hc_env_l');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
SELECT 'hc_queue_l', 'hc_l' || i, '{"gpu": 1}', 'RESERVE' FROM generate_series(1, 9) i;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, priority)
SELECT 'hc_wide', 'hc_queue_l', 'hc_l' || i, 'gpu', 3, 5 FROM generate_series(1, 9) i
UNION ALL SELECT 'hc_wide', 'hc_queue_l', 'hc_l1', 'gpu', 3, 5
UNION ALL SELECT 'hc_mid', 'hc_queue_l', 'hc_l1', 'gpu', 2, 0;
SELECT * FROM pg_temp.step('hc_queue_l');
SELECT * FROM pg_temp.step('hc_queue_l');
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue = 'hc_queue_l' AND quota_share = 'hc_l9';
SELECT * FROM pg_temp.step('hc_queue_l');
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 10}' WHERE name = 'hc_env_l';
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 2}'
 WHERE job_queue = 'hc_queue_l' AND name = 'hc_l1';
SELECT * FROM pg_temp.step('hc_queue_l');
-- Only admins may call runnable_heads_reads().
SELECT has_function_privilege('quota_sched_user', 'quota_sched.runnable_heads_reads()',
							  'EXECUTE') AS users_may;
-- A TRUNCATE of the jobs (undone here: the committed one, seen by another
-- session's passes, is in the isolation test heads_cache_sessions): a
-- pass in its transaction reads the first jobs and finds none; after the
-- rollback, what was kept before is right again (1: the read inside).
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
BEGIN;
TRUNCATE quota_sched.job;
SELECT * FROM pg_temp.step('hc_queue');
ROLLBACK;
SELECT * FROM pg_temp.step('hc_queue');
SELECT pg_temp.clear('hc_queue');

-- A pass in the transaction of a DELETE rolled back: it does not see the
-- job, and must not raise the pair's floor past it for the passes after
-- the rollback, to which the job is there again (here, once the holder is
-- gone, dispatched).
SELECT pg_temp.waiting('hc_queue');
SELECT * FROM pg_temp.step('hc_queue');
BEGIN;
DELETE FROM quota_sched.job WHERE job_queue = 'hc_queue' AND name IN ('hc_big', 'hc_small');
SELECT * FROM pg_temp.step('hc_queue');
ROLLBACK;
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue = 'hc_queue' AND name = 'hc_holder';
SELECT * FROM pg_temp.step('hc_queue');
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job
 WHERE job_queue LIKE 'hc\_queue%' AND state NOT IN ('SUCCEEDED', 'FAILED');
DELETE FROM quota_sched.quota_share WHERE job_queue LIKE 'hc\_queue%';
DELETE FROM quota_sched.job_queue WHERE name LIKE 'hc\_queue%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'hc\_env%';
