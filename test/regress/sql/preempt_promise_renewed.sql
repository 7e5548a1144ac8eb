-- A promise that lapses and is made anew in the same pass stays made
-- (scheduling.md 3.6); a terminated job keeps the stop time of the preemption stop
-- it already had (scheduling.md 3.8); explain sees a job as it is now.
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'ppr_queue'
$$;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (name text, state text, stop_reason text,
	preempted_for text, promised boolean)
LANGUAGE sql AS $$
	SELECT j.name, j.state, j.stop_reason, f.name, j.promised_at IS NOT NULL
	  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.preempted_for
	 WHERE j.job_queue = 'ppr_queue' ORDER BY j.name
$$;

INSERT INTO quota_sched.service_environment VALUES ('ppr_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ppr_queue', 'ppr_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, in_share_preemption)
VALUES ('ppr_queue', 'A', '{"gpu": 3}', 'LEND_AND_BORROW', true),
	   ('ppr_queue', 'B', '{"gpu": 1}', 'LEND_AND_BORROW', false);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('a1', 'ppr_queue', 'A', 0, 'gpu');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('b1', 'ppr_queue', 'B', 0, 'gpu'), ('b2', 'ppr_queue', 'B', 0, 'gpu'),
	   ('b3', 'ppr_queue', 'B', 0, 'gpu');
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ppr_queue');
SELECT count(*) AS claimed FROM quota_sched.claim('ppr_agent', 'ppr_queue', max_jobs => 10);

-- J needs 2 of A's own 3: B's two borrowers are preempted; J is promised.
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('j', 'ppr_queue', 'A', 5, 'gpu', 2);
SELECT j.name, p.action, p.reason FROM quota_sched.run_pass('ppr_queue') p
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT * FROM pg_temp.jobs();
SELECT stop_requested_at AS b2_stop_at FROM quota_sched.job WHERE name = 'b2' AND job_queue = 'ppr_queue' \gset

-- The environment shrinks to 3: J's promise lapses (it would not fit once
-- the stops complete), and is made anew by stopping a1 in-share.
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 3}' WHERE name = 'ppr_env';
SELECT j.name, p.action, p.reason FROM quota_sched.run_pass('ppr_queue') p
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT * FROM pg_temp.jobs();
SELECT quota_sched.explain(pg_temp.id('j')) ->> 'blocked_by' AS j_blocked_by;

-- b2, whose preemption stop is pending, is terminated: its stop time stays.
SELECT stop_reason, stop_requested_at = :'b2_stop_at' AS same_stop_time
  FROM quota_sched.terminate(pg_temp.id('b2'));

-- explain in the statement that terminated b1 sees b1 as terminated.
SELECT e ->> 'state' AS state, e ->> 'detail' AS detail
  FROM quota_sched.explain((quota_sched.terminate(pg_temp.id('b1'))).id) e;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ppr_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'ppr_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ppr_env';
