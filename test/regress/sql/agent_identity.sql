-- Agent names bound to logins (issue 10, item 12).  claim() records the
-- calling role in agent_role; afterwards only that role, or an admin, may
-- heartbeat, report on or release the job: another agent login gets 42501
-- and changes nothing, whatever agent name it gives.  agent_role is cleared
-- wherever agent is (release, a requeue by a pass), kept when the job ends;
-- a job with no agent_role (claimed before the upgrade to 0.2) is open to
-- every agent login, as in 0.1.  Users can neither set nor change it.
-- Job ids and times are never printed.

\i test/regress/include/helpers.sql

-- pg_temp.aid_facts(): every column of the file's jobs and the number of
-- their job_event rows, to tell that a call changed nothing.
CREATE FUNCTION pg_temp.aid_facts() RETURNS text LANGUAGE sql AS $$
	SELECT (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
			 WHERE job_queue = 'aid_queue')
		   || ' events: ' ||
		   (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
			 WHERE j.job_queue = 'aid_queue')
$$;

-- pg_temp.aid_jobs(): each job's name, state, agent and the role that
-- claimed it ('-' for none).
CREATE FUNCTION pg_temp.aid_jobs() RETURNS TABLE (name text, state text, agent text, agent_role text)
LANGUAGE sql AS $$
	SELECT j.name, j.state, coalesce(j.agent, '-'), coalesce(to_jsonb(j) ->> 'agent_role', '-')
	  FROM quota_sched.job j WHERE j.job_queue = 'aid_queue' ORDER BY j.name
$$;

-- Two agent hosts, each with its own login; an operator who is an admin
-- and may call the agents' functions; a user who submits.
CREATE ROLE regress_aid_host_a NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_aid_host_b NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aid_host_a', NULL), ('regress_aid_host_b', NULL);
CREATE ROLE regress_aid_ops NOLOGIN IN ROLE quota_sched_admin, quota_sched_agent;
CREATE ROLE regress_aid_alice NOLOGIN IN ROLE quota_sched_user;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('aid_env', '{"gpu": 10}');
-- fence_grace 0: a lease is lost as soon as it runs out (pass_fence_grace shows the grace)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace) VALUES ('aid_queue', 'aid_env', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('aid_queue', 'aid_share', '{"gpu": 10}', 'RESERVE');

SET ROLE regress_aid_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES
	('aid_1', 'aid_queue', 'aid_share', 'gpu', 1),
	('aid_2', 'aid_queue', 'aid_share', 'gpu', 1),
	('aid_3', 'aid_queue', 'aid_share', 'gpu', 3),
	('aid_4', 'aid_queue', 'aid_share', 'gpu', 1),
	('aid_5', 'aid_queue', 'aid_share', 'gpu', 1),
	('aid_6', 'aid_queue', 'aid_share', 'gpu', 1);
RESET ROLE;
SELECT id AS aid_1 FROM quota_sched.job WHERE name = 'aid_1' \gset
SELECT id AS aid_2 FROM quota_sched.job WHERE name = 'aid_2' \gset
SELECT id AS aid_3 FROM quota_sched.job WHERE name = 'aid_3' \gset
SELECT id AS aid_4 FROM quota_sched.job WHERE name = 'aid_4' \gset
SELECT id AS aid_5 FROM quota_sched.job WHERE name = 'aid_5' \gset
SELECT id AS aid_6 FROM quota_sched.job WHERE name = 'aid_6' \gset

WITH p AS (SELECT * FROM quota_sched.run_pass('aid_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;

------------------------------------------------------------------------
-- claim records the calling role: host A takes aid_1 to aid_4 as agent
-- aid-host-a, host B takes aid_5 as aid-host-b, and aid_6 under host A's
-- agent name (names are not reserved: the login is what counts).
------------------------------------------------------------------------
SET ROLE regress_aid_host_a;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.claim('aid-host-a', 'aid_queue', max_jobs => 4, lease => '1 hour') r ORDER BY name;
RESET ROLE;
SET ROLE regress_aid_host_b;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.claim('aid-host-b', 'aid_queue', lease => '1 hour') r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.claim('aid-host-a', 'aid_queue', lease => '1 hour') r;
RESET ROLE;
SELECT * FROM pg_temp.aid_jobs();

------------------------------------------------------------------------
-- Host B acts on host A's jobs: 42501, nothing changes, whether it names
-- A's agent or its own, whatever the report, with or without attempt.
------------------------------------------------------------------------
SET ROLE regress_aid_host_b;
SELECT pg_temp.aid_facts() AS aid_facts \gset
SELECT stmt, pg_temp.refused(format(stmt, :aid_1)) AS outcome,
       pg_temp.aid_facts() = :'aid_facts' AS nothing_changed
  FROM (VALUES
	($$SELECT quota_sched.report(%s, 'aid-host-a', 'RUNNING')$$),
	($$SELECT quota_sched.report(%s, 'aid-host-a', 'SUCCEEDED')$$),
	($$SELECT quota_sched.report(%s, 'aid-host-a', 'FAILED', 'exit 1')$$),
	($$SELECT quota_sched.report(%s, 'aid-host-a', 'STOPPED')$$),
	($$SELECT quota_sched.report(%s, 'aid-host-a', 'RUNNING', attempt => 1)$$),
	($$SELECT quota_sched.release(%s, 'aid-host-a')$$),
	($$SELECT quota_sched.release(%s, 'aid-host-a', 'shutting down')$$),
	($$SELECT quota_sched.report(%s, 'aid-host-b', 'RUNNING')$$),
	($$SELECT quota_sched.release(%s, 'aid-host-b')$$)
  ) AS v(stmt);
-- Its heartbeat for agent aid-host-a covers only the job it claimed under
-- that name (aid_6): the leases of A's jobs stay.
SELECT lease_until AS aid_1_lease FROM quota_sched.job WHERE id = :aid_1 \gset
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('aid-host-a', '2 hours') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
SELECT name, lease_until = :'aid_1_lease' AS same_lease
  FROM quota_sched.job WHERE job_queue = 'aid_queue' AND name IN ('aid_1', 'aid_2', 'aid_3', 'aid_4')
 ORDER BY name;
-- And its heartbeat as aid-host-b covers aid_5.
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('aid-host-b') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
RESET ROLE;

------------------------------------------------------------------------
-- Host A acts on its own jobs: they work.  Its heartbeat as aid-host-a
-- covers aid_1 to aid_4, not aid_6 (B's claim under the same name), and
-- it may not act on aid_6.
------------------------------------------------------------------------
SET ROLE regress_aid_host_a;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('aid-host-a') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_1, 'aid-host-a', 'RUNNING') r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_2, 'aid-host-a', 'RUNNING', attempt => 1) r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_2, 'aid-host-a', 'SUCCEEDED') r;
-- A repeat by the role that claimed it is a no-op, as before.
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_2, 'aid-host-a', 'SUCCEEDED') r;
-- release clears agent and agent_role.
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role, status_reason
  FROM quota_sched.release(:aid_3, 'aid-host-a', 'draining') r;
SELECT pg_temp.aid_facts() AS aid_facts \gset
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'aid-host-a', 'RUNNING')$$, :aid_6)) AS outcome,
       pg_temp.aid_facts() = :'aid_facts' AS nothing_changed;
RESET ROLE;

-- Host B may not repeat the end of a job A claimed either: the job that
-- ended keeps its agent and agent_role.
SET ROLE regress_aid_host_b;
SELECT pg_temp.aid_facts() AS aid_facts \gset
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'aid-host-a', 'SUCCEEDED')$$, :aid_2)) AS outcome,
       pg_temp.aid_facts() = :'aid_facts' AS nothing_changed;
RESET ROLE;
SELECT * FROM pg_temp.aid_jobs();

------------------------------------------------------------------------
-- An admin may act for any agent: its heartbeat covers every job of the
-- agent name, whoever claimed it; its reports and releases work, and the
-- history names the admin as the actor.
------------------------------------------------------------------------
SET ROLE regress_aid_ops;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('aid-host-a') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_4, 'aid-host-a', 'RUNNING') r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role, status_reason
  FROM quota_sched.report(:aid_4, 'aid-host-a', 'FAILED', 'node lost') r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.release(:aid_6, 'aid-host-a') r;
RESET ROLE;

------------------------------------------------------------------------
-- A requeue by a pass clears agent_role with agent: host B claims the
-- released aid_3 with a short lease, which expires.
------------------------------------------------------------------------
WITH p AS (SELECT * FROM quota_sched.run_pass('aid_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SET ROLE regress_aid_host_b;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.claim('aid-host-b', 'aid_queue', max_jobs => 1, lease => '100 milliseconds') r
 ORDER BY name;
RESET ROLE;
-- the clock passes the 100 ms lease (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);
WITH p AS (SELECT * FROM quota_sched.run_pass('aid_queue'))
SELECT j.name, p.action, p.reason FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT * FROM pg_temp.aid_jobs();

------------------------------------------------------------------------
-- A job claimed before the upgrade to 0.2 has no agent_role (stood in for
-- here by clearing it as a restore would write it): any agent login may
-- act on it, as in 0.1.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET agent_role = NULL WHERE id = :aid_5;
RESET session_replication_role;
SET ROLE regress_aid_host_a;
SELECT j.name, h.stop_reason
  FROM quota_sched.heartbeat('aid-host-b') h JOIN quota_sched.job j ON j.id = h.job_id
 ORDER BY j.name;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_5, 'aid-host-b', 'RUNNING') r;
SELECT name, state, agent, to_jsonb(r) ->> 'agent_role' AS agent_role
  FROM quota_sched.report(:aid_5, 'aid-host-b', 'SUCCEEDED') r;
RESET ROLE;

------------------------------------------------------------------------
-- Users can neither set nor change agent_role (42501).
------------------------------------------------------------------------
SET ROLE regress_aid_alice;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, agent_role) VALUES ('aid_x', 'aid_queue', 'aid_share', 'gpu', 'regress_aid_alice')$$),
	($$UPDATE quota_sched.job SET agent_role = 'regress_aid_alice' WHERE name = 'aid_3'$$),
	($$UPDATE quota_sched.job SET agent_role = NULL WHERE name = 'aid_1'$$)
  ) AS v(stmt);
RESET ROLE;
SELECT * FROM pg_temp.aid_jobs();

-- The history: the agents' changes under their agent names, the admin's
-- under its role.
SELECT j.name, e.from_state, e.to_state, e.reason,
       CASE WHEN e.actor = current_user THEN '(superuser)' ELSE e.actor END AS actor,
       e.pass_id IS NOT NULL AS by_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'aid_queue' AND e.from_state IS NOT NULL ORDER BY j.name, e.id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'aid_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'aid_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'aid_env';
DROP FUNCTION pg_temp.aid_jobs();
DROP FUNCTION pg_temp.aid_facts();
DROP ROLE regress_aid_host_a, regress_aid_host_b, regress_aid_ops, regress_aid_alice;
