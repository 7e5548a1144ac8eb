-- terminate() (scheduling.md 7, 4, 9): a RUNNABLE job or one no agent has claimed
-- fails at once, with the reason given (default 'Terminated by user') as
-- its status_reason; a claimed one gets a stop (stop_reason TERMINATED,
-- stop_requested_at) and keeps its state until its agent reports STOPPED,
-- when it fails.  An ended job is 55000, no such job P0002.  Owners may
-- terminate their own jobs, not another user's (42501); admins any job.
-- The actor of the job_event row is the role that terminated.  Job ids and
-- times are never printed.

\i test/regress/include/helpers.sql

-- pg_temp.utm_facts(): every column of the file's jobs and the number of
-- their job_event rows, read as the superuser whoever calls, to tell that
-- a refused call changed nothing.
CREATE FUNCTION pg_temp.utm_facts() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
	SELECT (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
			 WHERE job_queue = 'utm_queue')
		   || ' events: ' ||
		   (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
			 WHERE j.job_queue = 'utm_queue')
$$;

CREATE ROLE regress_utm_alice NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_utm_bob NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_utm_admin NOLOGIN IN ROLE quota_sched_admin;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('utm_env', '{"ml.g5.xlarge": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('utm_queue', 'utm_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('utm_queue', 'utm_share', '{"ml.g5.xlarge": 10}', 'RESERVE');

-- Every job may be attempted 3 times: termination is never retried.
SET ROLE regress_utm_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES
	('utm_runnable', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_runnable_reason', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_scheduled', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_running', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_starting', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_succeeded', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3);
RESET ROLE;
SET ROLE regress_utm_bob;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES
	('utm_bob_runnable', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3),
	('utm_bob_running', 'utm_queue', 'utm_share', 'ml.g5.xlarge', 3);
RESET ROLE;
SELECT id AS utm_runnable FROM quota_sched.job WHERE name = 'utm_runnable' \gset
SELECT id AS utm_runnable_reason FROM quota_sched.job WHERE name = 'utm_runnable_reason' \gset
SELECT id AS utm_scheduled FROM quota_sched.job WHERE name = 'utm_scheduled' \gset
SELECT id AS utm_running FROM quota_sched.job WHERE name = 'utm_running' \gset
SELECT id AS utm_starting FROM quota_sched.job WHERE name = 'utm_starting' \gset
SELECT id AS utm_succeeded FROM quota_sched.job WHERE name = 'utm_succeeded' \gset
SELECT id AS utm_bob_runnable FROM quota_sched.job WHERE name = 'utm_bob_runnable' \gset
SELECT id AS utm_bob_running FROM quota_sched.job WHERE name = 'utm_bob_running' \gset

------------------------------------------------------------------------
-- RUNNABLE jobs fail at once, with the default reason or the one given.
------------------------------------------------------------------------
SET ROLE regress_utm_alice;
SELECT name, state, status_reason, status_reason_at IS NOT NULL AS reason_at, failed_attempts,
       stop_reason, stop_requested_at IS NULL AS no_stop, agent
  FROM quota_sched.terminate(:utm_runnable);
SELECT name, state, status_reason
  FROM quota_sched.terminate(:utm_runnable_reason, 'no longer needed');
-- Another user's job: 42501, nothing changes.
SELECT pg_temp.utm_facts() AS utm_facts \gset
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :utm_bob_runnable)) AS outcome,
       pg_temp.utm_facts() = :'utm_facts' AS nothing_changed;
RESET ROLE;
-- An admin terminates any job.
SET ROLE regress_utm_admin;
SELECT name, owner, state, status_reason FROM quota_sched.terminate(:utm_bob_runnable, 'quota review');
RESET ROLE;

------------------------------------------------------------------------
-- A SCHEDULED job that no agent has claimed fails at once.
------------------------------------------------------------------------
WITH p AS (SELECT * FROM quota_sched.run_pass('utm_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SET ROLE regress_utm_alice;
SELECT name, state, agent, status_reason, stop_reason
  FROM quota_sched.terminate(:utm_scheduled);
RESET ROLE;
SELECT quota_share, capacity_unit, in_use, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'utm_queue';

------------------------------------------------------------------------
-- Claimed jobs get a stop and keep their state.
------------------------------------------------------------------------
SELECT name, state, agent FROM quota_sched.claim('utm_agent', 'utm_queue', NULL, 10) ORDER BY name;
SELECT r.name, r.state
  FROM unnest(ARRAY[:utm_running, :utm_succeeded, :utm_bob_running]::bigint[]) AS i(id),
       quota_sched.report(i.id, 'utm_agent', 'RUNNING') r ORDER BY r.name;
SELECT name, state FROM quota_sched.report(:utm_succeeded, 'utm_agent', 'SUCCEEDED');

SET ROLE regress_utm_alice;
SELECT name, state, agent, stop_reason, stop_requested_at IS NOT NULL AS stop_requested
  FROM quota_sched.terminate(:utm_running, 'wrong data set');
-- Not bob's job.
SELECT pg_temp.utm_facts() AS utm_facts \gset
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :utm_bob_running)) AS outcome,
       pg_temp.utm_facts() = :'utm_facts' AS nothing_changed;
RESET ROLE;
SET ROLE regress_utm_bob;
-- Not alice's job.
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :utm_starting)) AS outcome,
       pg_temp.utm_facts() = :'utm_facts' AS nothing_changed;
-- His own.
SELECT name, state, agent, stop_reason, stop_requested_at IS NOT NULL AS stop_requested
  FROM quota_sched.terminate(:utm_bob_running);
RESET ROLE;
SET ROLE regress_utm_admin;
SELECT name, state, agent, stop_reason, stop_requested_at IS NOT NULL AS stop_requested
  FROM quota_sched.terminate(:utm_starting);
RESET ROLE;

-- Stops pending: the counters of held capacity, stopping_instances too, must match the jobs.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Ended jobs: 55000; no such job: P0002; each changes nothing.
------------------------------------------------------------------------
SELECT pg_temp.utm_facts() AS utm_facts \gset
SET ROLE regress_utm_alice;
SELECT job, pg_temp.refused(format('SELECT quota_sched.terminate(%s)', id)) AS outcome,
       pg_temp.utm_facts() = :'utm_facts' AS nothing_changed
  FROM (VALUES ('utm_runnable (FAILED)', :utm_runnable),
               ('utm_scheduled (FAILED)', :utm_scheduled),
               ('utm_succeeded (SUCCEEDED)', :utm_succeeded),
               ('no such job', -1)) AS v(job, id);
RESET ROLE;
SET ROLE regress_utm_admin;
SELECT job, pg_temp.refused(format('SELECT quota_sched.terminate(%s)', id)) AS outcome,
       pg_temp.utm_facts() = :'utm_facts' AS nothing_changed
  FROM (VALUES ('utm_bob_runnable (FAILED)', :utm_bob_runnable),
               ('utm_succeeded (SUCCEEDED)', :utm_succeeded),
               ('no such job', -1)) AS v(job, id);
RESET ROLE;

------------------------------------------------------------------------
-- The agent is told to stop them; once it reports STOPPED they fail,
-- although each has attempts left.
------------------------------------------------------------------------
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('utm_agent') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
SELECT name, state, agent, failed_attempts, stop_reason, stop_requested_at IS NULL AS no_stop
  FROM quota_sched.job WHERE job_queue = 'utm_queue' AND state IN ('STARTING', 'RUNNING') ORDER BY name;
SELECT r.name, r.state, r.agent, r.failed_attempts, r.stop_reason, r.stop_requested_at IS NULL AS no_stop
  FROM unnest(ARRAY[:utm_running, :utm_starting, :utm_bob_running]::bigint[]) AS i(id),
       quota_sched.report(i.id, 'utm_agent', 'STOPPED') r ORDER BY r.name;

SELECT name, owner, state, failed_attempts FROM quota_sched.job WHERE job_queue = 'utm_queue' ORDER BY name;
SELECT quota_share, capacity_unit, in_use, active_jobs, runnable_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'utm_queue';

------------------------------------------------------------------------
-- The history: every terminated job has a TERMINATE row, the role that
-- terminated it the actor (issue 22, item 2: reports count it apart from
-- failures); one that failed at once has that role as the end's actor
-- too; a claimed one fails by its agent's STOPPED.
------------------------------------------------------------------------
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'utm_queue' ORDER BY j.name, e.id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'utm_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'utm_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'utm_env';
DROP FUNCTION pg_temp.utm_facts();
DROP ROLE regress_utm_alice, regress_utm_bob, regress_utm_admin;
