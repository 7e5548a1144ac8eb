-- A lost lease fenced (scheduling.md 3.10): a queue's fence_grace, how long
-- after a lease ran out the pass takes the job back, so that the agent's
-- supervisor has killed the old copy before a new one may start.
--   The column: 10 seconds by default; 0 to 1 hour; each bad value refused
--     (23514, or 23502 for null) with nothing written.
--   fg_queue (one instance): a job whose 100 ms lease ran out within the
--     grace is not taken back (no decision, the job keeps its agent and
--     instance, the waiting job waits); a heartbeat in the grace renews the
--     lease and the job goes on, no lease lost; once the grace has passed,
--     REQUEUE LEASE_EXPIRED and the waiting job gets the instance in the
--     same pass.
--   fg_hosts (two hosts of 2): a job of two parts one of whose parts' lease
--     ran out within the grace: its other part is not stopped and no part
--     is lost; past the grace, the part is lost (LOST) and the other is
--     stopped PEER_LOST.
-- Times are never printed; the clock passes a 100 ms lease with pg_sleep
-- (the passes are run here: not a wait for the system), and the grace is
-- then lowered below what has passed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_fg_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_fg_host', NULL);

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
CREATE FUNCTION pg_temp.jobs(q text)
RETURNS TABLE (name text, state text, status_reason text, stop_reason text, agent text,
			   lease_ran_out boolean, lease_losses int)
LANGUAGE sql AS $$
	SELECT name, state, status_reason, stop_reason, agent, lease_until < now(), lease_losses
	  FROM quota_sched.job WHERE job_queue = q ORDER BY id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('fg_env', '{"ml.g5.xlarge": 1}'), ('fg_henv', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('fg_queue', 'fg_env');

------------------------------------------------------------------------
-- The column: 10 seconds by default, 0 to 1 hour.
------------------------------------------------------------------------
SELECT name, fence_grace FROM quota_sched.job_queue WHERE name = 'fg_queue';
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET fence_grace = '-1 second' WHERE name = 'fg_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET fence_grace = '1 hour 1 second' WHERE name = 'fg_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET fence_grace = '1 month' WHERE name = 'fg_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET fence_grace = '1 day -23 hours 1 second' WHERE name = 'fg_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET fence_grace = NULL WHERE name = 'fg_queue'$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
	VALUES ('fg_bad', 'fg_henv', '-0.5 seconds')$$);
SELECT count(*) AS bad_queues FROM quota_sched.job_queue WHERE name = 'fg_bad';
SELECT name, fence_grace FROM quota_sched.job_queue WHERE name = 'fg_queue';
UPDATE quota_sched.job_queue SET fence_grace = '0' WHERE name = 'fg_queue';
UPDATE quota_sched.job_queue SET fence_grace = '1 hour' WHERE name = 'fg_queue';
SELECT name, fence_grace FROM quota_sched.job_queue WHERE name = 'fg_queue';

------------------------------------------------------------------------
-- fg_queue, fence_grace 1 hour: fg_job claimed with a 100 ms lease, then
-- fg_waiting (higher priority) waits for the instance.
------------------------------------------------------------------------
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('fg_queue', 'S', '{"ml.g5.xlarge": 1}', 'LEND');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('fg_job', 'fg_queue', 'S', 1, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('fg_queue');
SELECT name, state FROM quota_sched.claim('fg_agent', 'fg_queue', lease => '100 milliseconds');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('fg_waiting', 'fg_queue', 'S', 5, 'ml.g5.xlarge');
SELECT pg_sleep(0.3);

-- The lease ran out within the grace: nothing decided, the job keeps its agent.
SELECT * FROM pg_temp.pass('fg_queue');
SELECT * FROM pg_temp.jobs('fg_queue');

-- A heartbeat in the grace renews it: the job goes on, no lease lost.
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('fg_agent', '100 milliseconds') h JOIN quota_sched.job j ON j.id = h.job_id;
SELECT * FROM pg_temp.jobs('fg_queue');
SELECT name, state FROM quota_sched.report(pg_temp.id('fg_job'), 'fg_agent', 'RUNNING');
SELECT pg_sleep(0.3);
SELECT * FROM pg_temp.pass('fg_queue');
SELECT * FROM pg_temp.jobs('fg_queue');

-- The grace lowered below what has passed since the lease ran out: the
-- lease is lost, and the waiting job gets the instance in the same pass.
UPDATE quota_sched.job_queue SET fence_grace = '100 milliseconds' WHERE name = 'fg_queue';
SELECT * FROM pg_temp.pass('fg_queue');
SELECT name, state, status_reason, agent, lease_losses, failed_attempts
  FROM quota_sched.job WHERE job_queue = 'fg_queue' ORDER BY id;
SELECT j.name, e.from_state, e.to_state, e.reason
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'fg_job' AND e.to_state = 'RUNNABLE' AND e.from_state <> 'RUNNABLE' ORDER BY e.id;

------------------------------------------------------------------------
-- fg_hosts, fence_grace 1 hour: a job of 4, two per host, on fg_h1 and
-- fg_h2.  fg_h1 renews for an hour, fg_h2 for 100 ms.
------------------------------------------------------------------------
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
VALUES ('fg_hosts', 'fg_henv', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('fg_hosts', 'S', '{"gpu": 4}', 'LEND');
SET ROLE regress_fg_host;
SELECT name FROM quota_sched.agent_ready('fg_h1', 'fg_hosts', 'gpu', 2);
SELECT name FROM quota_sched.agent_ready('fg_h2', 'fg_hosts', 'gpu', 2);
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
                             instances_per_host)
VALUES ('fg_two', 'fg_hosts', 'S', 'gpu', 4, 2);
SELECT * FROM pg_temp.pass('fg_hosts');
SET ROLE regress_fg_host;
SELECT name, state FROM quota_sched.claim('fg_h1', 'fg_hosts', 'gpu', lease => '1 hour');
SELECT name, state FROM quota_sched.claim('fg_h2', 'fg_hosts', 'gpu', lease => '100 milliseconds');
RESET ROLE;
SELECT pg_sleep(0.3);

-- fg_h2's part ran out within the grace: no part lost, fg_h1's not stopped.
SELECT * FROM pg_temp.pass('fg_hosts');
SELECT * FROM pg_temp.jobs('fg_hosts');
SELECT rank, agent, state FROM quota_sched.job_parts WHERE job_id = pg_temp.id('fg_two') ORDER BY rank;

-- Past the grace: fg_h2's part is lost, fg_h1's stopped PEER_LOST.
UPDATE quota_sched.job_queue SET fence_grace = '100 milliseconds' WHERE name = 'fg_hosts';
SELECT * FROM pg_temp.pass('fg_hosts');
SELECT * FROM pg_temp.jobs('fg_hosts');
SELECT rank, agent, state FROM quota_sched.job_parts WHERE job_id = pg_temp.id('fg_two') ORDER BY rank;
SELECT count(quota_sched.terminate(id, 'done')) AS terminated
  FROM quota_sched.job WHERE job_queue IN ('fg_queue', 'fg_hosts') AND state NOT IN ('SUCCEEDED', 'FAILED');

SELECT * FROM quota_sched.held_capacity_drift();
