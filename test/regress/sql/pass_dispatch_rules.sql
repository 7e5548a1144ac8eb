-- The dispatch loop of a pass (scheduling.md 3.1, 3.2), one rule per queue: own
-- capacity before borrowers; FIFO (queued_at, id) across shares when nothing
-- fits in its own capacity; share order (priority DESC, queued_at, id); best
-- effort; multi-instance jobs; several capacity units; RESERVE never lends;
-- LEND never borrows; a DISABLED share lends nothing but its queued jobs
-- run; allowed() rounds down; a DISABLED environment dispatches nothing.
-- Jobs submitted by separate statements have distinct queued_at (each
-- statement is its own transaction); rows of one INSERT share it.
--
-- pg_temp.pass(q) runs the pass of a queue and shows its decisions in the
-- order it made them; pg_temp.jobs(q) shows the queue's jobs;
-- pg_temp.submit() submits one job; pg_temp.kill() terminates one (an
-- unclaimed job fails at once, freeing its instances).
\i test/regress/include/helpers.sql
CREATE FUNCTION pg_temp.jobs(q text)
RETURNS TABLE (name text, quota_share text, instance_count int, state text, status_reason text)
LANGUAGE sql AS $$
	SELECT name, quota_share, instance_count, state, status_reason
	  FROM quota_sched.job WHERE job_queue = q ORDER BY id
$$;
CREATE PROCEDURE pg_temp.submit(q text, share text, job text, n int, prio int DEFAULT 0,
								unit text DEFAULT 'ml.g5.xlarge')
LANGUAGE sql AS $$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
	VALUES (job, q, share, prio, unit, n)
$$;
CREATE FUNCTION pg_temp.kill(job_name text) RETURNS text LANGUAGE sql AS $$
	SELECT state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = job_name))
$$;

------------------------------------------------------------------------
-- Own capacity first.  E = 2 (the shares' limits add up to 3).  A
-- (LEND_AND_BORROW) holds its own instance; pdi_a_borrow (older) must
-- borrow, pdi_b_own (later) fits in B's own capacity.  Either could run
-- alone (L lends one instance), not both (E).  The job that fits in its
-- own capacity goes first, whatever its age.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_own_env', '{"ml.g5.xlarge": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_own', 'pdi_own_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_own', 'A', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW'),
       ('pdi_own', 'B', '{"ml.g5.xlarge": 1}', 'LEND'),
       ('pdi_own', 'L', '{"ml.g5.xlarge": 1}', 'LEND');
CALL pg_temp.submit('pdi_own', 'A', 'pdi_a_run', 1);
SELECT * FROM pg_temp.pass('pdi_own');
CALL pg_temp.submit('pdi_own', 'A', 'pdi_a_borrow', 1);
CALL pg_temp.submit('pdi_own', 'B', 'pdi_b_own', 1);
SELECT * FROM pg_temp.pass('pdi_own');
SELECT * FROM pg_temp.jobs('pdi_own');
-- pdi_a_borrow could indeed run alone: with pdi_b_own gone, it borrows.
SELECT pg_temp.kill('pdi_b_own');
SELECT * FROM pg_temp.pass('pdi_own');

------------------------------------------------------------------------
-- FIFO across shares when no job fits in its own capacity.  A and B
-- (LEND_AND_BORROW) each hold their own instance; L lends one.
-- pdi_b_old (B, older) gets it before pdi_a_new (A, later), although A
-- comes first by name.  Between jobs of one INSERT (same queued_at) the
-- lower id goes first: pdi_b_tie before pdi_a_tie.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_fifo_env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_fifo', 'pdi_fifo_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_fifo', 'A', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW'),
       ('pdi_fifo', 'B', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW'),
       ('pdi_fifo', 'L', '{"ml.g5.xlarge": 1}', 'LEND');
CALL pg_temp.submit('pdi_fifo', 'A', 'pdi_a_run', 1);
CALL pg_temp.submit('pdi_fifo', 'B', 'pdi_b_run', 1);
SELECT * FROM pg_temp.pass('pdi_fifo');
CALL pg_temp.submit('pdi_fifo', 'B', 'pdi_b_old', 1);
CALL pg_temp.submit('pdi_fifo', 'A', 'pdi_a_new', 1);
SELECT * FROM pg_temp.pass('pdi_fifo');
SELECT * FROM pg_temp.jobs('pdi_fifo');
-- Free L's instance again and take pdi_a_new away, then the tie.
SELECT pg_temp.kill('pdi_b_old') AS b_old, pg_temp.kill('pdi_a_new') AS a_new;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('pdi_b_tie', 'pdi_fifo', 'B', 'ml.g5.xlarge'),
       ('pdi_a_tie', 'pdi_fifo', 'A', 'ml.g5.xlarge');
SELECT count(DISTINCT queued_at) AS queue_positions
  FROM quota_sched.job WHERE name IN ('pdi_b_tie', 'pdi_a_tie');
SELECT * FROM pg_temp.pass('pdi_fifo');
SELECT * FROM pg_temp.jobs('pdi_fifo');

------------------------------------------------------------------------
-- Share order: priority DESC, then queued_at, then id.  Three instances,
-- five jobs: pdi_p9, pdi_p5_first, then the first of the tie (one INSERT).
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_order_env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_order', 'pdi_order_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_order', 'S', '{"ml.g5.xlarge": 3}', 'LEND');
CALL pg_temp.submit('pdi_order', 'S', 'pdi_p1', 1, 1);
CALL pg_temp.submit('pdi_order', 'S', 'pdi_p5_first', 1, 5);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('pdi_p5_tie_a', 'pdi_order', 'S', 5, 'ml.g5.xlarge'),
       ('pdi_p5_tie_b', 'pdi_order', 'S', 5, 'ml.g5.xlarge');
CALL pg_temp.submit('pdi_order', 'S', 'pdi_p9', 1, 9);
SELECT * FROM pg_temp.pass('pdi_order');
SELECT * FROM pg_temp.jobs('pdi_order');

------------------------------------------------------------------------
-- Best effort, and jobs that need all their instances at once.  Four
-- instances, three held; pdi_big (2 instances, priority 5) cannot start,
-- and does not block pdi_small (1, priority 0, later).
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_best_env', '{"ml.g5.xlarge": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_best', 'pdi_best_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_best', 'S', '{"ml.g5.xlarge": 4}', 'LEND');
CALL pg_temp.submit('pdi_best', 'S', 'pdi_hold', 3);
SELECT * FROM pg_temp.pass('pdi_best');
CALL pg_temp.submit('pdi_best', 'S', 'pdi_big', 2, 5);
CALL pg_temp.submit('pdi_best', 'S', 'pdi_small', 1, 0);
SELECT * FROM pg_temp.pass('pdi_best');
SELECT * FROM pg_temp.jobs('pdi_best');
-- One instance free is not enough for pdi_big: it takes nothing.
SELECT pg_temp.kill('pdi_small');
SELECT * FROM pg_temp.pass('pdi_best');
SELECT quota_share, in_use, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pdi_best';
-- With pdi_hold gone it gets both its instances.
SELECT pg_temp.kill('pdi_hold');
SELECT * FROM pg_temp.pass('pdi_best');
SELECT quota_share, in_use, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pdi_best';

------------------------------------------------------------------------
-- Several capacity units in one queue: each is counted on its own.  The g5
-- instance is taken by pdi_g5_1; pdi_g5_2 waits although p4d capacity is
-- left, and does not block pdi_p4_1 (later) of the same share.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_units_env', '{"ml.g5.xlarge": 1, "ml.p4d.24xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_units', 'pdi_units_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_units', 'S', '{"ml.g5.xlarge": 1, "ml.p4d.24xlarge": 3}', 'LEND');
CALL pg_temp.submit('pdi_units', 'S', 'pdi_g5_1', 1);
CALL pg_temp.submit('pdi_units', 'S', 'pdi_g5_2', 1);
CALL pg_temp.submit('pdi_units', 'S', 'pdi_p4_1', 2, 0, 'ml.p4d.24xlarge');
SELECT * FROM pg_temp.pass('pdi_units');
SELECT * FROM pg_temp.jobs('pdi_units');
SELECT quota_share, capacity_unit, max_capacity, in_use, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pdi_units' ORDER BY capacity_unit;

------------------------------------------------------------------------
-- RESERVE never lends: R's idle instance is not borrowable supply.  Once R
-- becomes LEND, the borrower gets it.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_reserve_env', '{"ml.g5.xlarge": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_reserve', 'pdi_reserve_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_reserve', 'B', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW'),
       ('pdi_reserve', 'R', '{"ml.g5.xlarge": 1}', 'RESERVE');
CALL pg_temp.submit('pdi_reserve', 'B', 'pdi_b_run', 1);
SELECT * FROM pg_temp.pass('pdi_reserve');
CALL pg_temp.submit('pdi_reserve', 'B', 'pdi_b_borrow', 1);
SELECT * FROM pg_temp.pass('pdi_reserve');
SELECT * FROM pg_temp.jobs('pdi_reserve');
UPDATE quota_sched.quota_share SET strategy = 'LEND' WHERE job_queue = 'pdi_reserve' AND name = 'R';
SELECT * FROM pg_temp.pass('pdi_reserve');

------------------------------------------------------------------------
-- LEND never borrows: L holds its own instance, X's is idle, L's second
-- job waits.  Once L becomes LEND_AND_BORROW, it borrows X's.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_lend_env', '{"ml.g5.xlarge": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_lend', 'pdi_lend_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_lend', 'L', '{"ml.g5.xlarge": 1}', 'LEND'),
       ('pdi_lend', 'X', '{"ml.g5.xlarge": 1}', 'LEND');
CALL pg_temp.submit('pdi_lend', 'L', 'pdi_l_run', 1);
SELECT * FROM pg_temp.pass('pdi_lend');
CALL pg_temp.submit('pdi_lend', 'L', 'pdi_l_more', 1);
SELECT * FROM pg_temp.pass('pdi_lend');
SELECT * FROM pg_temp.jobs('pdi_lend');
UPDATE quota_sched.quota_share SET strategy = 'LEND_AND_BORROW' WHERE job_queue = 'pdi_lend' AND name = 'L';
SELECT * FROM pg_temp.pass('pdi_lend');

------------------------------------------------------------------------
-- A DISABLED share lends nothing, but its queued jobs still run.  D owns
-- two instances; after D is disabled its queued pdi_d_job runs in D's own
-- capacity, and B's borrower gets nothing of D's remaining idle instance
-- until D is enabled again.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_dis_env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_dis', 'pdi_dis_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_dis', 'B', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW'),
       ('pdi_dis', 'D', '{"ml.g5.xlarge": 2}', 'LEND');
CALL pg_temp.submit('pdi_dis', 'B', 'pdi_b_run', 1);
SELECT * FROM pg_temp.pass('pdi_dis');
CALL pg_temp.submit('pdi_dis', 'D', 'pdi_d_job', 1);
CALL pg_temp.submit('pdi_dis', 'B', 'pdi_b_borrow', 1);
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE job_queue = 'pdi_dis' AND name = 'D';
SELECT * FROM pg_temp.pass('pdi_dis');
SELECT * FROM pg_temp.jobs('pdi_dis');
UPDATE quota_sched.quota_share SET state = 'ENABLED' WHERE job_queue = 'pdi_dis' AND name = 'D';
SELECT * FROM pg_temp.pass('pdi_dis');

------------------------------------------------------------------------
-- allowed() rounds down: C = 3 with borrow_limit 50 allows
-- floor(3 * 150 / 100) = 4 instances, not 5, though L lends seven.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdi_round_env', '{"ml.g5.xlarge": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_round', 'pdi_round_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('pdi_round', 'A', '{"ml.g5.xlarge": 3}', 'LEND_AND_BORROW', 50),
       ('pdi_round', 'L', '{"ml.g5.xlarge": 7}', 'LEND', -1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'pdi_r' || i, 'pdi_round', 'A', 'ml.g5.xlarge' FROM generate_series(1, 5) i;
SELECT * FROM pg_temp.pass('pdi_round');
SELECT * FROM pg_temp.jobs('pdi_round');
SELECT quota_share, max_capacity, allowed, in_use, borrowed, idle
  FROM quota_sched.share_usage WHERE job_queue = 'pdi_round' ORDER BY quota_share;

------------------------------------------------------------------------
-- A DISABLED environment dispatches nothing (and logs no pass); enabled
-- again, it does.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits, state)
VALUES ('pdi_off_env', '{"ml.g5.xlarge": 1}', 'DISABLED');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pdi_off', 'pdi_off_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdi_off', 'S', '{"ml.g5.xlarge": 1}', 'LEND');
CALL pg_temp.submit('pdi_off', 'S', 'pdi_off_job', 1);
SELECT * FROM pg_temp.pass('pdi_off');
SELECT * FROM pg_temp.jobs('pdi_off');
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pdi_off';
UPDATE quota_sched.service_environment SET state = 'ENABLED' WHERE name = 'pdi_off_env';
SELECT * FROM pg_temp.pass('pdi_off');

-- Every pass left (I1) and (I2) holding: no environment overcommitted, no
-- share above allowed.
SELECT q.name AS job_queue, u.capacity_unit, sum(u.in_use) AS in_use,
       (e.capacity_limits ->> u.capacity_unit)::int AS environment
  FROM quota_sched.job_queue q
  JOIN quota_sched.service_environment e ON e.name = q.service_environment
  JOIN quota_sched.share_usage u ON u.job_queue = q.name
 WHERE q.name LIKE 'pdi\_%'
 GROUP BY q.name, u.capacity_unit, e.capacity_limits
HAVING sum(u.in_use) > (e.capacity_limits ->> u.capacity_unit)::int;
SELECT job_queue, quota_share, capacity_unit, in_use, allowed
  FROM quota_sched.share_usage WHERE job_queue LIKE 'pdi\_%' AND in_use > allowed;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'pdi\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'pdi\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'pdi\_%';
