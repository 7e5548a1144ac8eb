-- Jobs that cannot run as configured (scheduling.md 3.7, 3.9).  They stay RUNNABLE
-- with status_reason
--   MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE  (more than E(u)), or
--   MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED   (more than
--   allowed(S,u); for LEND_AND_BORROW also more than C(S,u) + the capacity
--   of every other ENABLED LEND or LEND_AND_BORROW share + unassigned(u)),
-- and status_reason_at.  Setting or clearing a reason is not a decision: no
-- pass_log row, no job_event row.  The reason clears when limits change so
-- that the job is possible again.  A job misconfigured for longer than its
-- queue's runnable_timeout fails.
--
-- pg_temp.pass(q) runs the pass of a queue and shows its decisions;
-- pg_temp.jobs(q) shows the queue's jobs with their reasons.
\i test/regress/include/helpers.sql
CREATE FUNCTION pg_temp.jobs(q text)
RETURNS TABLE (name text, quota_share text, capacity_unit text, instance_count int, state text,
			   status_reason text, reason_at_set boolean)
LANGUAGE sql AS $$
	SELECT name, quota_share, capacity_unit, instance_count, state, status_reason,
		   status_reason_at IS NOT NULL
	  FROM quota_sched.job WHERE job_queue = q ORDER BY id
$$;

-- g5: E = 5; the shares own 4 (B1, B2, R, L one each), so unassigned = 1.
--   B1 LEND_AND_BORROW, borrow_limit 100: allowed 2
--   B2 LEND_AND_BORROW, unlimited: reach 1 + B1 1 + L 1 + unassigned 1 = 4
--      (R's reserved instance does not count)
--   R  RESERVE: allowed 1
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pmc_env', '{"ml.g5.xlarge": 5, "ml.p4d.24xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pmc_queue', 'pmc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('pmc_queue', 'B1', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 100),
       ('pmc_queue', 'B2', '{"ml.g5.xlarge": 1, "ml.p4d.24xlarge": 1}', 'LEND_AND_BORROW', -1),
       ('pmc_queue', 'R', '{"ml.g5.xlarge": 1}', 'RESERVE', -1),
       ('pmc_queue', 'L', '{"ml.g5.xlarge": 1}', 'LEND', -1);

-- R's own instance is in use.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_r_run', 'pmc_queue', 'R', 'ml.g5.xlarge', 1);
SELECT * FROM pg_temp.pass('pmc_queue');

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_env_job', 'pmc_queue', 'B2', 'ml.g5.xlarge', 6),
       ('pmc_b1_over', 'pmc_queue', 'B1', 'ml.g5.xlarge', 3),
       ('pmc_b2_over', 'pmc_queue', 'B2', 'ml.g5.xlarge', 5),
       ('pmc_r_over', 'pmc_queue', 'R', 'ml.g5.xlarge', 2),
       ('pmc_p4_job', 'pmc_queue', 'B2', 'ml.p4d.24xlarge', 1);
-- The environment loses its p4d instance before pmc_p4_job could run
-- (B2's own map still names the unit).
UPDATE quota_sched.service_environment SET capacity_limits = '{"ml.g5.xlarge": 5}'
 WHERE name = 'pmc_env';

------------------------------------------------------------------------
-- The pass sets the reasons, at its own time, and decides nothing.
------------------------------------------------------------------------
BEGIN;
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT name, status_reason, status_reason_at BETWEEN now() AND clock_timestamp() AS reason_at_now
  FROM quota_sched.job WHERE job_queue = 'pmc_queue' AND state = 'RUNNABLE' ORDER BY id;
COMMIT;
SELECT * FROM pg_temp.jobs('pmc_queue');
-- Still only the pass_log row of pmc_r_run's dispatch, and only the
-- submissions in the history of the misconfigured jobs.
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pmc_queue';
SELECT j.name, e.from_state, e.to_state
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'pmc_queue' AND j.status_reason IS NOT NULL ORDER BY e.id;

-- Another pass changes nothing: status_reason_at still tells when the
-- reason was set.
CREATE TEMP TABLE pmc_reasons AS
SELECT id, status_reason, status_reason_at FROM quota_sched.job WHERE job_queue = 'pmc_queue';
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT count(*) AS reasons_changed
  FROM quota_sched.job j JOIN pmc_reasons r USING (id)
 WHERE (j.status_reason, j.status_reason_at) IS DISTINCT FROM (r.status_reason, r.status_reason_at);

------------------------------------------------------------------------
-- An admin raises R's capacity to 2: pmc_r_over is possible again, so its
-- reason clears, though it cannot start yet (pmc_r_run holds one of R's
-- two instances).  R now owns the unassigned instance: B2's reach is 3.
------------------------------------------------------------------------
UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": 2}'
 WHERE job_queue = 'pmc_queue' AND name = 'R';
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT * FROM pg_temp.jobs('pmc_queue');
-- Clearing was not a decision either.
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pmc_queue';

------------------------------------------------------------------------
-- E(g5) raised to 6: pmc_env_job (6) no longer exceeds the environment, but
-- exceeds B2's reach (1 + 1 + 1 + unassigned 1 = 4): its reason changes,
-- with a new status_reason_at.
------------------------------------------------------------------------
UPDATE quota_sched.service_environment SET capacity_limits = '{"ml.g5.xlarge": 6}'
 WHERE name = 'pmc_env';
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT j.name, j.status_reason, j.status_reason_at > r.status_reason_at AS reason_at_moved
  FROM quota_sched.job j JOIN pmc_reasons r USING (id)
 WHERE j.name = 'pmc_env_job';

------------------------------------------------------------------------
-- The bounds are inclusive: B1 may use exactly allowed (2), B2 exactly its
-- reach (4).  pmc_b1_at_allowed runs (borrowing one instance);
-- pmc_b2_at_reach cannot start now but is not misconfigured.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_b1_at_allowed', 'pmc_queue', 'B1', 'ml.g5.xlarge', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_b2_at_reach', 'pmc_queue', 'B2', 'ml.g5.xlarge', 4);
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT * FROM pg_temp.jobs('pmc_queue');

-- Only ENABLED lenders count in the reach: with L disabled, B2's reach is 3.
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE job_queue = 'pmc_queue' AND name = 'L';
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT name, status_reason FROM quota_sched.job WHERE name = 'pmc_b2_at_reach';
UPDATE quota_sched.quota_share SET state = 'ENABLED' WHERE job_queue = 'pmc_queue' AND name = 'L';
SELECT * FROM pg_temp.pass('pmc_queue');
SELECT name, status_reason, status_reason_at IS NULL AS reason_at_cleared
  FROM quota_sched.job WHERE name = 'pmc_b2_at_reach';

-- None of these reason changes was a decision: only the dispatch of
-- pmc_b1_at_allowed (and of pmc_r_run) left history and a pass_log row.
SELECT j.name, e.from_state, e.to_state, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'pmc_queue' AND e.from_state IS NOT NULL ORDER BY e.id;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'pmc_queue' ORDER BY id;

------------------------------------------------------------------------
-- Runnable timeout (scheduling.md 3.9): pmc_rt_mis (2 instances, E = 1) is
-- misconfigured for longer than the queue's runnable_timeout and fails;
-- pmc_rt_wait, RUNNABLE as long but only waiting for capacity, does not.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pmc_rt_env', '{"ml.g5.xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout)
VALUES ('pmc_rt_queue', 'pmc_rt_env', '100 ms');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pmc_rt_queue', 'S', '{"ml.g5.xlarge": 1}', 'LEND');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_rt_run', 'pmc_rt_queue', 'S', 'ml.g5.xlarge', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_rt_wait', 'pmc_rt_queue', 'S', 'ml.g5.xlarge', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pmc_rt_mis', 'pmc_rt_queue', 'S', 'ml.g5.xlarge', 2);
SELECT * FROM pg_temp.pass('pmc_rt_queue');
SELECT * FROM pg_temp.jobs('pmc_rt_queue');
-- the clock passes the 100 ms runnable_timeout (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);
SELECT * FROM pg_temp.pass('pmc_rt_queue');
SELECT * FROM pg_temp.jobs('pmc_rt_queue');
SELECT j.name, e.from_state, e.to_state, e.reason, e.actor,
       e.pass_id = (SELECT max(id) FROM quota_sched.pass_log WHERE job_queue = 'pmc_rt_queue')
       AS pass_id_is_the_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'pmc_rt_mis' AND e.from_state IS NOT NULL;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'pmc_rt_queue' ORDER BY id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'pmc\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'pmc\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'pmc\_%';
