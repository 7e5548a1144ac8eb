-- release() and heartbeat() (scheduling.md 5.2), and an agent's reports while a stop
-- is pending (scheduling.md 3.6, 3.8).  release gives a held job back: RUNNABLE at
-- once, queued_at kept, counters unchanged, agent cleared.  heartbeat
-- extends the lease of every job the agent holds and returns each with the
-- stop it must make.  A terminated job fails when its agent reports
-- STOPPED; SUCCEEDED or FAILED reported while a stop is pending stand, and
-- the stop is void.  Job ids and times are never printed.

\i test/regress/include/helpers.sql

-- pg_temp.arh_facts(): every column of the file's jobs and the number of
-- their job_event rows, to tell that a call changed nothing.
CREATE FUNCTION pg_temp.arh_facts() RETURNS text LANGUAGE sql AS $$
	SELECT (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
			 WHERE job_queue = 'arh_queue')
		   || ' events: ' ||
		   (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
			 WHERE j.job_queue = 'arh_queue')
$$;

CREATE ROLE regress_arh_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_arh_agent', NULL);
CREATE ROLE regress_arh_admin NOLOGIN IN ROLE quota_sched_admin;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('arh_env', '{"ml.g5.xlarge": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('arh_queue', 'arh_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('arh_queue', 'arh_share', '{"ml.g5.xlarge": 10}', 'RESERVE');

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES
	('arh_release', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 3),
	('arh_starting', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 1),
	('arh_running', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 1),
	('arh_terminated', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 3),
	('arh_succeeds', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 3),
	('arh_fails', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 2),
	('arh_elsewhere', 'arh_queue', 'arh_share', 'ml.g5.xlarge', 1);
SELECT id AS arh_release FROM quota_sched.job WHERE name = 'arh_release' \gset
SELECT id AS arh_terminated FROM quota_sched.job WHERE name = 'arh_terminated' \gset
SELECT id AS arh_succeeds FROM quota_sched.job WHERE name = 'arh_succeeds' \gset
SELECT id AS arh_fails FROM quota_sched.job WHERE name = 'arh_fails' \gset
SELECT id AS arh_elsewhere FROM quota_sched.job WHERE name = 'arh_elsewhere' \gset

WITH p AS (SELECT * FROM quota_sched.run_pass('arh_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
-- arh_agent takes six jobs, arh_agent_2 the last; all but arh_starting run.
-- Both agents use the login regress_arh_agent, which may then act on the
-- jobs they claimed (agent_identity.sql).
SET ROLE regress_arh_agent;
SELECT name, state, agent FROM quota_sched.claim('arh_agent', 'arh_queue', NULL, 6) ORDER BY name;
SELECT name, state, agent FROM quota_sched.claim('arh_agent_2', 'arh_queue', NULL, 6) ORDER BY name;
SELECT r.name, r.state
  FROM quota_sched.job j, quota_sched.report(j.id, j.agent, 'RUNNING') r
 WHERE j.job_queue = 'arh_queue' AND j.name <> 'arh_starting' ORDER BY r.name;
RESET ROLE;

------------------------------------------------------------------------
-- release
------------------------------------------------------------------------
-- By an agent that does not hold the job: 55000, nothing changes.
SELECT pg_temp.arh_facts() AS arh_facts \gset
SELECT pg_temp.refused(format($$SELECT quota_sched.release(%s, 'arh_agent_2')$$, :arh_release)) AS outcome,
       pg_temp.arh_facts() = :'arh_facts' AS nothing_changed;
SELECT pg_temp.refused(format($$SELECT quota_sched.release(%s, 'arh_agent')$$, :arh_elsewhere)) AS outcome,
       pg_temp.arh_facts() = :'arh_facts' AS nothing_changed;
-- No such job, bad arguments.
SELECT stmt, pg_temp.refused(stmt) AS outcome, pg_temp.arh_facts() = :'arh_facts' AS nothing_changed
  FROM (VALUES
	($$SELECT quota_sched.release(-1, 'arh_agent')$$),
	($$SELECT quota_sched.release(NULL, 'arh_agent')$$),
	($$SELECT quota_sched.release(-1, NULL)$$),
	($$SELECT quota_sched.release(-1, '')$$)
  ) AS v(stmt);

-- By its holder: RUNNABLE at once, queued_at kept, counters unchanged,
-- agent and lease cleared; the reason given is the status_reason.
SET ROLE regress_arh_agent;
SELECT name, state, agent, lease_until IS NULL AS no_lease, queued_at = submitted_at AS same_queued_at,
       failed_attempts, preemption_count, 1 + failed_attempts + preemption_count + lease_losses AS attempt, status_reason
  FROM quota_sched.release(:arh_release, 'arh_agent', 'agent shutting down');
RESET ROLE;
-- The agent no longer holds it: a report of any state is 55000 and
-- changes nothing (none of them repeats the job's current state).
SELECT pg_temp.arh_facts() AS arh_facts \gset
SELECT state, pg_temp.refused(format($$SELECT quota_sched.report(%s, 'arh_agent', %L)$$, :arh_release, state)) AS outcome,
       pg_temp.arh_facts() = :'arh_facts' AS nothing_changed
  FROM unnest(ARRAY['RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED']) AS state;
-- It is dispatched again as a new job would be, and its next attempt is
-- still the first.
WITH p AS (SELECT * FROM quota_sched.run_pass('arh_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT name, state, agent, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('arh_agent_3', 'arh_queue');

------------------------------------------------------------------------
-- heartbeat: every job the agent holds, STARTING or RUNNING, with no stop
-- to make; each lease becomes now() + lease.  Other agents' leases stay.
------------------------------------------------------------------------
SELECT lease_until AS arh_elsewhere_lease FROM quota_sched.job WHERE name = 'arh_elsewhere' \gset
-- In one transaction, so that now() is the heartbeat's.
BEGIN;
SET ROLE regress_arh_agent;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('arh_agent', '10 minutes') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
RESET ROLE;
SELECT name, state, agent,
       CASE WHEN lease_until = now() + interval '10 minutes' THEN 'now() + 10 minutes'
            WHEN lease_until = :'arh_elsewhere_lease' THEN 'unchanged'
            ELSE 'other' END AS lease
  FROM quota_sched.job WHERE job_queue = 'arh_queue' AND agent IS NOT NULL ORDER BY name;
COMMIT;
-- A heartbeat changes no state and writes no history.
CREATE TEMP VIEW arh_states AS
SELECT (SELECT string_agg(name || ':' || state || ':' || coalesce(agent, '-'), ' ' ORDER BY name)
          FROM quota_sched.job WHERE job_queue = 'arh_queue') AS states,
       (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
         WHERE j.job_queue = 'arh_queue') AS events;
CREATE TEMP TABLE arh_before AS SELECT * FROM arh_states;
SELECT count(*) AS held FROM quota_sched.heartbeat('arh_agent');
SELECT b.states = n.states AS same_states, b.events = n.events AS same_events
  FROM arh_before b, arh_states n;
-- An agent that holds nothing gets nothing.
SELECT count(*) AS held FROM quota_sched.heartbeat('arh_agent_idle');
-- Bad arguments.
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$SELECT quota_sched.heartbeat(NULL)$$),
	($$SELECT quota_sched.heartbeat('')$$),
	($$SELECT quota_sched.heartbeat('arh_agent', '0')$$),
	($$SELECT quota_sched.heartbeat('arh_agent', '-1 minute')$$),
	($$SELECT quota_sched.heartbeat('arh_agent', NULL)$$)
  ) AS v(stmt);

------------------------------------------------------------------------
-- Three claimed jobs are terminated: each keeps its state, with a stop
-- pending, and heartbeat tells the agent to stop them.
------------------------------------------------------------------------
SET ROLE regress_arh_admin;
SELECT t.name, t.state, t.stop_reason, t.stop_requested_at IS NOT NULL AS stop_requested
  FROM unnest(ARRAY[:arh_terminated, :arh_succeeds, :arh_fails]::bigint[]) AS i(id),
       quota_sched.terminate(i.id) t
 ORDER BY t.name;
RESET ROLE;
-- Stops pending: the counters of held capacity, stopping_instances too, must match the jobs.
SELECT * FROM quota_sched.held_capacity_drift();
BEGIN;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('arh_agent', '1 day') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
-- The lease of a job with a stop pending goes no further than
-- stop_requested_at + quota_sched.stop_timeout (scheduling.md 3.8).
SELECT name, stop_reason,
       CASE WHEN stop_requested_at IS NULL THEN lease_until = now() + interval '1 day'
            ELSE lease_until = stop_requested_at + current_setting('quota_sched.stop_timeout')::interval
       END AS lease_as_required
  FROM quota_sched.job WHERE job_queue = 'arh_queue' AND agent = 'arh_agent' ORDER BY name;
COMMIT;

-- The agent's login acts again.
SET ROLE regress_arh_agent;
-- STOPPED by another agent: 55000.
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'arh_agent_2', 'STOPPED')$$, :arh_terminated)) AS outcome;
-- The agent stops arh_terminated: FAILED although it has attempts left,
-- the stop cleared, the agent kept.
SELECT name, state, agent, failed_attempts, max_attempts, stop_reason, stop_requested_at IS NULL AS no_stop,
       lease_until IS NULL AS no_lease
  FROM quota_sched.report(:arh_terminated, 'arh_agent', 'STOPPED');

-- SUCCEEDED while the stop is pending stands, and the stop is void.
SELECT name, state, agent, stop_reason, stop_requested_at IS NULL AS no_stop
  FROM quota_sched.report(:arh_succeeds, 'arh_agent', 'SUCCEEDED');

-- FAILED while the stop is pending, with attempts left: back to RUNNABLE
-- as usual, failed_attempts 1, the stop void, the agent cleared.
SELECT name, state, agent, failed_attempts, stop_reason, stop_requested_at IS NULL AS no_stop,
       queued_at = submitted_at AS same_queued_at
  FROM quota_sched.report(:arh_fails, 'arh_agent', 'FAILED');

-- What the agent still holds: no stop to make.
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('arh_agent') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
RESET ROLE;

------------------------------------------------------------------------
-- The history: one row per change of state, the agent as the actor of
-- what it reported or released, the admin of nothing (a terminate of a
-- claimed job changes no state).
------------------------------------------------------------------------
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason,
       CASE WHEN e.actor = current_user THEN '(superuser)' ELSE e.actor END AS actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'arh_queue' AND e.from_state IS NOT NULL AND e.from_state <> 'RUNNABLE'
 ORDER BY j.name, e.id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'arh_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'arh_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'arh_env';
DROP VIEW arh_states;
DROP TABLE arh_before;
DROP FUNCTION pg_temp.arh_facts();
DROP ROLE regress_arh_agent, regress_arh_admin;
