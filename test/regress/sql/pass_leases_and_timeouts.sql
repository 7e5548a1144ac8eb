-- Time-based work of a pass (scheduling.md 3.8, step 1 of a pass): expired leases,
-- attempts past their timeout, and the freed capacity used in the same pass.
--   plt_queue (one instance): a lease expires -> REQUEUE (failed_attempts
--     + 1, queued_at kept, agent cleared) and a waiting job gets the
--     instance in the same pass; the next expiry exhausts max_attempts ->
--     FAIL.
--   plt_tq (three instances): jobs RUNNING past their timeout -> STOP
--     (stop_reason TIMEOUT); heartbeat returns the stop and never extends
--     the lease beyond stop_requested_at + quota_sched.stop_timeout; the
--     agent's STOPPED fails the attempt; a lease lost while the TIMEOUT
--     stop is pending is that same failed attempt, counted once.
-- The agents' functions are called here as the superuser running the test.
--
-- pg_temp.pass(q) runs the pass of a queue and shows its decisions (time-
-- based decisions among themselves by name, since their order is not
-- specified; dispatches after them, in the order made).
CREATE FUNCTION pg_temp.pass(q text)
RETURNS TABLE (name text, action text, quota_share text, reason text)
LANGUAGE sql AS $$
	SELECT j.name, p.action, p.quota_share, p.reason
	  FROM quota_sched.run_pass(q) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id
	 ORDER BY p.action = 'DISPATCH', CASE WHEN p.action = 'DISPATCH' THEN p.n END, j.name
$$;
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
CREATE FUNCTION pg_temp.jobs(q text)
RETURNS TABLE (name text, state text, status_reason text, failed_attempts int, agent text,
			   leased boolean, stop_reason text, stop_requested boolean)
LANGUAGE sql AS $$
	SELECT name, state, status_reason, failed_attempts, agent, lease_until IS NOT NULL,
		   stop_reason, stop_requested_at IS NOT NULL
	  FROM quota_sched.job WHERE job_queue = q ORDER BY id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('plt_env', '{"ml.g5.xlarge": 1}'), ('plt_tenv', '{"ml.g5.xlarge": 3}');
-- fence_grace 0: a lease is lost as soon as it runs out (pass_fence_grace shows the grace)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
VALUES ('plt_queue', 'plt_env', '0'), ('plt_tq', 'plt_tenv', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('plt_queue', 'S', '{"ml.g5.xlarge": 1}', 'LEND'),
       ('plt_tq', 'S', '{"ml.g5.xlarge": 3}', 'LEND');

------------------------------------------------------------------------
-- plt_queue: plt_lease_job (one attempt, at most one lease lost) runs,
-- claimed with a 100 ms lease; plt_waiting (higher priority) waits for the
-- instance.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, max_attempts,
                             max_lease_losses)
VALUES ('plt_lease_job', 'plt_queue', 'S', 1, 'ml.g5.xlarge', 1, 1);
SELECT * FROM pg_temp.pass('plt_queue');
SELECT name, state, agent FROM quota_sched.claim('plt_agent_a', 'plt_queue', lease => '100 milliseconds');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('plt_waiting', 'plt_queue', 'S', 5, 'ml.g5.xlarge');

------------------------------------------------------------------------
-- plt_tq: three jobs run, each claimed by its own agent with a long lease
-- and reported RUNNING; two have a 100 ms timeout.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout, max_attempts)
VALUES ('plt_t_stop', 'plt_tq', 'S', 'ml.g5.xlarge', '100 ms', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout, max_attempts)
VALUES ('plt_t_lease', 'plt_tq', 'S', 'ml.g5.xlarge', '100 ms', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('plt_t_plain', 'plt_tq', 'S', 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('plt_tq');
SELECT name, state, agent FROM quota_sched.claim('plt_agent_1', 'plt_tq', lease => '1 hour');
SELECT name, state, agent FROM quota_sched.claim('plt_agent_2', 'plt_tq', lease => '1 hour');
SELECT name, state, agent FROM quota_sched.claim('plt_agent_3', 'plt_tq', lease => '1 hour');
SELECT name, state FROM quota_sched.report(pg_temp.id('plt_t_stop'), 'plt_agent_1', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('plt_t_lease'), 'plt_agent_2', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('plt_t_plain'), 'plt_agent_3', 'RUNNING');

CREATE TEMP TABLE plt_queued AS
SELECT name, queued_at FROM quota_sched.job WHERE job_queue LIKE 'plt\_%';

-- the clock passes the 100 ms leases and timeouts (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);

------------------------------------------------------------------------
-- The lease of plt_lease_job expired: a lost host, not a failed attempt
-- (scheduling.md 3.10): REQUEUE with lease_losses 1 and failed_attempts 0
-- though max_attempts is 1, queued_at kept, agent and lease cleared; and
-- plt_waiting gets the freed instance in the same pass.
------------------------------------------------------------------------
SELECT * FROM pg_temp.pass('plt_queue');
SELECT * FROM pg_temp.jobs('plt_queue');
SELECT name, lease_losses, max_lease_losses, failed_attempts FROM quota_sched.job
 WHERE name = 'plt_lease_job';
SELECT j.name, j.queued_at = q.queued_at AS queued_at_kept
  FROM quota_sched.job j JOIN plt_queued q USING (name) WHERE j.name = 'plt_lease_job';
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.actor,
       e.pass_id = (SELECT max(id) FROM quota_sched.pass_log WHERE job_queue = 'plt_queue')
       AS by_the_latest_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'plt_queue' AND e.pass_id IS NOT NULL ORDER BY e.id;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'plt_queue' ORDER BY id;

------------------------------------------------------------------------
-- plt_t_stop and plt_t_lease ran past their timeout: STOP, reason TIMEOUT.
-- They keep their instances until they stop (in_use 3), and a STOP changes
-- no state but is a decision (a pass_log row); the history records the
-- request (a STOP row, from_state = to_state = RUNNING, reason TIMEOUT).
------------------------------------------------------------------------
SELECT * FROM pg_temp.pass('plt_tq');
SELECT * FROM pg_temp.jobs('plt_tq');
SELECT in_use, active_jobs FROM quota_sched.share_usage WHERE job_queue = 'plt_tq';
SELECT e.kind, count(*) AS pass_events
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'plt_tq' AND e.from_state = 'RUNNING' GROUP BY e.kind;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'plt_tq' ORDER BY id;
-- TIMEOUT stops pending: the counters of held capacity, stopping_instances too, must match the jobs.
SELECT * FROM quota_sched.held_capacity_drift();
-- The stop is pending: the next pass does not request it again.
SELECT * FROM pg_temp.pass('plt_tq');

-- Heartbeat returns the stop each job must make.
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('plt_agent_1', '1 hour') h JOIN quota_sched.job j ON j.id = h.job_id;

-- A heartbeat asking for a day: a job without a stop gets now() + 1 day; a
-- job whose stop was requested gets at most stop_requested_at +
-- quota_sched.stop_timeout (10 minutes by default).
SHOW quota_sched.stop_timeout;
BEGIN;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('plt_agent_3', '1 day') h JOIN quota_sched.job j ON j.id = h.job_id;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('plt_agent_2', '1 day') h JOIN quota_sched.job j ON j.id = h.job_id;
SELECT name, lease_until = now() + interval '1 day' AS lease_one_day,
       lease_until <= stop_requested_at + interval '10 minutes' AS within_stop_timeout
  FROM quota_sched.job WHERE name IN ('plt_t_plain', 'plt_t_lease') ORDER BY name;
COMMIT;

------------------------------------------------------------------------
-- plt_t_stop's agent reports STOPPED: the attempt failed (failed_attempts
-- 1 of 2), back to RUNNABLE with queued_at kept, stop and agent cleared;
-- the next pass dispatches it again.
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.report(pg_temp.id('plt_t_stop'), 'plt_agent_1', 'STOPPED');
SELECT * FROM pg_temp.jobs('plt_tq');
SELECT j.name, j.queued_at = q.queued_at AS queued_at_kept
  FROM quota_sched.job j JOIN plt_queued q USING (name) WHERE j.name = 'plt_t_stop';
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.actor, e.pass_id IS NULL AS not_a_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'plt_t_stop' AND e.from_state = 'RUNNING';
SELECT * FROM pg_temp.pass('plt_tq');

------------------------------------------------------------------------
-- Set up the second expiries: plt_t_lease's agent shortens its lease to
-- 100 ms while the TIMEOUT stop is pending (plt_t_filler waits for an
-- instance); on plt_queue, plt_waiting succeeds and plt_lease_job runs its
-- second attempt, again with a 100 ms lease.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('plt_t_filler', 'plt_tq', 'S', 5, 'ml.g5.xlarge');
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('plt_agent_2', '100 milliseconds') h JOIN quota_sched.job j ON j.id = h.job_id;
SELECT name, state, agent FROM quota_sched.claim('plt_agent_b', 'plt_queue');
SELECT name, state FROM quota_sched.report(pg_temp.id('plt_waiting'), 'plt_agent_b', 'SUCCEEDED');
SELECT * FROM pg_temp.pass('plt_queue');
SELECT name, state, agent FROM quota_sched.claim('plt_agent_a', 'plt_queue', lease => '100 milliseconds');

-- the clock passes the 100 ms leases and timeouts (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);

------------------------------------------------------------------------
-- plt_lease_job lost its lease again: past max_lease_losses -> FAIL
-- (reason LEASE_EXPIRED, still no failed attempt); the agent that held it
-- is kept.
------------------------------------------------------------------------
SELECT * FROM pg_temp.pass('plt_queue');
SELECT * FROM pg_temp.jobs('plt_queue');
SELECT name, lease_losses, failed_attempts FROM quota_sched.job WHERE name = 'plt_lease_job';
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'plt_queue' ORDER BY id;

------------------------------------------------------------------------
-- plt_t_lease lost its lease with its TIMEOUT stop pending: that is the
-- failed attempt, counted once (failed_attempts 1 of 2, so RUNNABLE);
-- plt_t_filler gets the freed instance in the same pass.
------------------------------------------------------------------------
SELECT * FROM pg_temp.pass('plt_tq');
SELECT * FROM pg_temp.jobs('plt_tq');
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'plt_t_lease' AND e.from_state IS NOT NULL ORDER BY e.id;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'plt_tq' ORDER BY id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'plt\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'plt\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'plt\_%';
