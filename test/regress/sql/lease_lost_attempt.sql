-- An attempt whose lease ran out (issue 37, item 5).  The pass that takes
-- the job back ends the attempt's row of job_attempt (ended_at; no exit
-- code: none is known), which stayed open for ever before.  The agent that
-- ran it, cut off from the database meanwhile, then reports SUCCEEDED for
-- that attempt: while the job has not started anew (waiting, or dispatched
-- and not claimed), the work is done and the job SUCCEEDS, saying so in
-- its status_reason and its history, with the exit code and output on the
-- lost attempt's row, where it ran kept.  Once the job runs again, the
-- late report changes nothing (it is about an attempt that is over).  Any
-- other late report changes nothing either: FAILED, or SUCCEEDED from
-- another agent or for another attempt.

\i test/regress/include/helpers.sql

CREATE ROLE regress_ll_agent NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ll_env', '{"gpu": 3}');
-- fence_grace 0: a lease is lost as soon as it runs out (pass_fence_grace shows the grace)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace) VALUES ('ll_queue', 'll_env', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ll_queue', 'll_share', '{"gpu": 3}', 'RESERVE');
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ll_agent', 'll_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_lease_losses)
VALUES ('ll_1', 'll_queue', 'll_share', 'gpu', 5), ('ll_2', 'll_queue', 'll_share', 'gpu', 5),
	   ('ll_3', 'll_queue', 'll_share', 'gpu', 5);

SELECT id AS ll_1 FROM quota_sched.job WHERE name = 'll_1' \gset
SELECT id AS ll_2 FROM quota_sched.job WHERE name = 'll_2' \gset
SELECT id AS ll_3 FROM quota_sched.job WHERE name = 'll_3' \gset
CREATE FUNCTION pg_temp.ll_jobs()
RETURNS TABLE (name text, state text, agent text, lease_losses integer, status_reason text)
LANGUAGE sql AS $$
	SELECT name, state, agent, lease_losses, status_reason FROM quota_sched.job
	 WHERE job_queue = 'll_queue' ORDER BY name
$$;
CREATE FUNCTION pg_temp.ll_attempts()
RETURNS TABLE (name text, attempt integer, agent text, host text, exit_code integer, output text,
			   ended boolean)
LANGUAGE sql AS $$
	SELECT j.name, a.attempt, a.agent, a.host, a.exit_code, a.output, a.ended_at IS NOT NULL
	  FROM quota_sched.job_attempt a JOIN quota_sched.job j ON j.id = a.job_id
	 WHERE j.job_queue = 'll_queue' ORDER BY j.name, a.attempt
$$;

-- The three jobs run on ll_a, with leases of 100 ms.
SELECT * FROM pg_temp.pass('ll_queue');
SET ROLE regress_ll_agent;
SELECT name, state FROM quota_sched.claim('ll_a', 'll_queue', max_jobs => 3, lease => '100 milliseconds',
										  start => true) ORDER BY name;
SELECT count(*) AS started FROM unnest(ARRAY[:ll_1, :ll_2, :ll_3]) AS j(id),
	   quota_sched.attempt_started(j.id, 'll_a', 1, 'host-a', '/logs/' || j.id - :ll_1 + 1);
RESET ROLE;
SELECT pg_sleep(0.2);

-- 1. The leases run out; ll_hi (priority 9) came meanwhile.  The pass
-- takes the three jobs back and ends their attempts' rows (no exit code)
-- and dispatches ll_hi; the next pass dispatches two of them, and the
-- third waits.  ll_b claims two of the jobs dispatched: they start anew;
-- the other stays unclaimed.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority)
VALUES ('ll_hi', 'll_queue', 'll_share', 'gpu', 9);
SELECT * FROM pg_temp.pass('ll_queue');
SELECT * FROM pg_temp.ll_attempts();
SELECT * FROM pg_temp.pass('ll_queue');
SET ROLE regress_ll_agent;
SELECT name, state FROM quota_sched.claim('ll_b', 'll_queue', max_jobs => 2) ORDER BY name;
RESET ROLE;
SELECT * FROM pg_temp.ll_jobs();

-- 2. ll_a comes back and reports on attempt 1 of each.  A late FAILED,
-- and a late SUCCEEDED naming another agent, change nothing.
SET ROLE regress_ll_agent;
SELECT name, state FROM quota_sched.report(:ll_3, 'll_a', 'FAILED', attempt => 1, exit_code => 1);
SELECT name, state FROM quota_sched.report(:ll_3, 'll_x', 'SUCCEEDED', attempt => 1, exit_code => 0);
-- A late SUCCEEDED is taken where the job has not started anew: the
-- waiting one and the one dispatched but not claimed; the ones ll_b runs
-- go on.
SELECT r.name, r.state, r.status_reason
  FROM unnest(ARRAY[:ll_1, :ll_2, :ll_3]) AS j(id),
	   quota_sched.report(j.id, 'll_a', 'SUCCEEDED', attempt => 1, exit_code => 0,
						  output => E'step 40 of 40\n')
	   AS r ORDER BY r.name;
RESET ROLE;
SELECT * FROM pg_temp.ll_jobs();
SELECT * FROM pg_temp.ll_attempts();
-- The history says so.
SELECT j.name, e.from_state, e.to_state, e.reason, e.actor, e.exit_code
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'll_queue' AND e.to_state = 'SUCCEEDED' ORDER BY j.name;
-- The counters of held capacity match the jobs.
SELECT count(*) AS drift FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'll_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'll_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'll_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'll_env';
DELETE FROM quota_sched.agent_access WHERE login = 'regress_ll_agent';
DROP ROLE regress_ll_agent;
