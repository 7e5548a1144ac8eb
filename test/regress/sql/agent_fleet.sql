-- The agents the scheduler knows (doc/agents.md, scheduling.md 3.10): agent_ready()
-- registers or refreshes an agent for the calling login (another login's
-- name is refused, 42501, but for an admin), claim() and heartbeat() of a
-- registered agent refresh its last_seen and lease (an unregistered agent
-- works as before, and gets no row), the view agents tells whether each is
-- live and what it holds, each login seeing its own, and drain_agent()
-- (admins) makes an agent claim nothing while its jobs run on to their
-- end.  Times are never printed.

\i test/regress/include/helpers.sql

-- pg_temp.af_agents(): the agent table's rows, without the times:
-- seen_lately, last seen less than a minute ago (the test sets last_seen
-- back by hand to tell a refresh), and registered_at not after last_seen.
CREATE FUNCTION pg_temp.af_agents()
RETURNS TABLE (name text, login name, job_queue text, capacity_unit text, instances integer,
			   state text, lease interval, seen_lately boolean, registered_first boolean)
LANGUAGE sql AS $$
	SELECT a.name, a.login, a.job_queue, a.capacity_unit, a.instances, a.state, a.lease,
		   a.last_seen > now() - interval '1 minute', a.registered_at <= a.last_seen
	  FROM quota_sched.agent a WHERE a.job_queue LIKE 'af\_%' ORDER BY a.name
$$;

CREATE ROLE regress_af_host_a NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_af_host_b NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_af_ops NOLOGIN IN ROLE quota_sched_admin;
CREATE ROLE regress_af_alice NOLOGIN IN ROLE quota_sched_user;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('af_env', '{"gpu": 8, "cpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('af_queue', 'af_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('af_queue', 'af_share', '{"gpu": 8, "cpu": 8}', 'RESERVE');
-- both hosts serve the queue (agent_access: sql/agent_access.sql)
INSERT INTO quota_sched.agent_access (login, job_queue)
VALUES ('regress_af_host_a', 'af_queue'), ('regress_af_host_b', 'af_queue');

-- Registration: the row is the caller's, ACTIVE, with no lease yet; the
-- result is the row.
SET ROLE regress_af_host_a;
SELECT name, login, job_queue, capacity_unit, instances, state, lease
  FROM quota_sched.agent_ready('af_a', 'af_queue', 'gpu', 4);
SELECT agent, login, instances, state, live, held_jobs, held_instances FROM quota_sched.agents;
RESET ROLE;
SELECT * FROM pg_temp.af_agents();

-- Bad arguments: null agent, queue or unit, an unknown queue or unit,
-- instances below 1, a blank or too long name.
SET ROLE regress_af_host_a;
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready(NULL, 'af_queue', 'gpu')$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', NULL, 'gpu')$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', 'af_queue', NULL)$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', 'af_no_queue', 'gpu')$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', 'af_queue', 'tpu')$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', 'af_queue', 'gpu', 0)$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_x', 'af_queue', 'gpu', -1)$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready(' ', 'af_queue', 'gpu')$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready(repeat('a', 129), 'af_queue', 'gpu')$$);
RESET ROLE;

-- Refresh by its login: unit and instances change (null: no bound), the
-- state and registration stay.  Another login may not take the name; an
-- admin may refresh it, and the login stays the agent's.
SET ROLE regress_af_host_a;
SELECT name, login, capacity_unit, instances, state
  FROM quota_sched.agent_ready('af_a', 'af_queue', 'cpu', NULL);
SELECT name, login, capacity_unit, instances, state
  FROM quota_sched.agent_ready('af_a', 'af_queue', 'gpu', 4);
RESET ROLE;
SET ROLE regress_af_host_b;
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_a', 'af_queue', 'gpu', 8)$$);
SELECT name, login, instances FROM quota_sched.agent_ready('af_b', 'af_queue', 'gpu', 2);
RESET ROLE;
SET ROLE regress_af_ops;
SELECT name, login, instances FROM quota_sched.agent_ready('af_a', 'af_queue', 'gpu', 3);
RESET ROLE;
SELECT * FROM pg_temp.af_agents();

-- Visibility: each agent login sees its own rows; an admin all; a user
-- is not granted the view nor the table; agents not the table.
SET ROLE regress_af_host_a;
SELECT agent, login FROM quota_sched.agents ORDER BY agent;
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.agent$$);
RESET ROLE;
SET ROLE regress_af_host_b;
SELECT agent, login FROM quota_sched.agents ORDER BY agent;
RESET ROLE;
SET ROLE regress_af_ops;
SELECT agent, login FROM quota_sched.agents WHERE job_queue = 'af_queue' ORDER BY agent;
SELECT count(*) FROM quota_sched.agent WHERE job_queue = 'af_queue';
RESET ROLE;
SET ROLE regress_af_alice;
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.agents$$);
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.agent$$);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('af_u', 'af_queue', 'gpu')$$);
RESET ROLE;
-- A function of the caller's in the query sees no row of another login
-- (security barrier).
CREATE FUNCTION pg_temp.af_peek(a text) RETURNS boolean LANGUAGE plpgsql COST 0.0001 AS $$
BEGIN
	RAISE NOTICE 'peeked at %', a;
	RETURN true;
END
$$;
SET ROLE regress_af_host_b;
SELECT agent FROM quota_sched.agents WHERE pg_temp.af_peek(agent);
RESET ROLE;

-- Live: last_seen younger than the last lease (60 s when none).  af_b
-- last seen 2 minutes ago, with no lease: not live; af_a with a lease of
-- an hour seen 2 minutes ago: live.
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name IN ('af_a', 'af_b');
UPDATE quota_sched.agent SET lease = interval '1 hour' WHERE name = 'af_a';
SELECT agent, live FROM quota_sched.agents WHERE job_queue = 'af_queue' ORDER BY agent;
-- Seen 2 hours ago with its lease of an hour: af_a is not live either;
-- then seen 2 minutes ago again.
UPDATE quota_sched.agent SET last_seen = now() - interval '2 hours' WHERE name = 'af_a';
SELECT agent, live FROM quota_sched.agents WHERE agent = 'af_a';
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'af_a';

-- A claim and a heartbeat refresh last_seen and lease, and only for the
-- agent's own login; an unregistered agent claims and heartbeats as
-- before and gets no row.  The jobs are of cpu, for which no agent is
-- registered: any agent may claim them (gpu is placed on its agents,
-- scheduling.md 3.13: pass_placement).
SET ROLE regress_af_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('af_1', 'af_queue', 'af_share', 'cpu', 2),
	   ('af_2', 'af_queue', 'af_share', 'cpu', 1),
	   ('af_3', 'af_queue', 'af_share', 'cpu', 1);
RESET ROLE;
SELECT name, action FROM pg_temp.pass('af_queue');
SET ROLE regress_af_host_b;
SELECT name, state FROM quota_sched.claim('af_b', 'af_queue', 'cpu', lease => '5 minutes');
RESET ROLE;
SELECT name, lease, seen_lately FROM pg_temp.af_agents();
SET ROLE regress_af_host_a;
-- af_b's name from another login: the claim goes through (agent names are
-- free to claim with), the row stays af_b's own
SELECT name, state FROM quota_sched.claim('af_b', 'af_queue', 'cpu', lease => '7 minutes');
SELECT name, state FROM quota_sched.claim('af_unregistered', 'af_queue', 'cpu', lease => '9 minutes');
RESET ROLE;
SELECT name, lease, seen_lately FROM pg_temp.af_agents();
SELECT count(*) AS unregistered_rows FROM quota_sched.agent WHERE name = 'af_unregistered';
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'af_b';
SET ROLE regress_af_host_b;
SELECT count(*) FROM quota_sched.heartbeat('af_b', '3 minutes');
RESET ROLE;
SELECT name, lease, seen_lately FROM pg_temp.af_agents();
SELECT agent, live, held_jobs, held_instances FROM quota_sched.agents
 WHERE job_queue = 'af_queue' ORDER BY agent;

-- drain_agent: admins only; a null or unknown agent, a null draining are
-- refused.
SET ROLE regress_af_host_b;
SELECT pg_temp.refused($$SELECT quota_sched.drain_agent('af_b')$$);
RESET ROLE;
SET ROLE regress_af_ops;
SELECT pg_temp.refused($$SELECT quota_sched.drain_agent(NULL)$$);
SELECT pg_temp.refused($$SELECT quota_sched.drain_agent('af_b', NULL)$$);
SELECT pg_temp.refused($$SELECT quota_sched.drain_agent('af_nobody')$$);
SELECT name, state FROM quota_sched.drain_agent('af_b');
RESET ROLE;

-- Draining: af_b claims nothing (no error) though a job waits unclaimed,
-- heartbeats and reports its job to its end; agent_ready keeps it
-- draining; drain_agent(..., false) makes it ACTIVE again and it claims.
SET ROLE regress_af_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('af_4', 'af_queue', 'af_share', 'cpu');
RESET ROLE;
SELECT name, action FROM pg_temp.pass('af_queue');
SET ROLE regress_af_host_b;
SELECT name, state FROM quota_sched.claim('af_b', 'af_queue', 'cpu', max_jobs => 5);
SELECT count(*) FROM quota_sched.heartbeat('af_b');
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'af_1'),
										   'af_b', 'SUCCEEDED');
SELECT name, state FROM quota_sched.agent_ready('af_b', 'af_queue', 'gpu', 2);
SELECT name, state FROM quota_sched.claim('af_b', 'af_queue', 'cpu', max_jobs => 5);
RESET ROLE;
SELECT agent, state, held_jobs, held_instances FROM quota_sched.agents WHERE agent = 'af_b';
SET ROLE regress_af_ops;
SELECT name, state FROM quota_sched.drain_agent('af_b', false);
RESET ROLE;
SET ROLE regress_af_host_b;
SELECT name, state FROM quota_sched.claim('af_b', 'af_queue', 'cpu', max_jobs => 5);
RESET ROLE;
SELECT agent, state, held_jobs, held_instances FROM quota_sched.agents WHERE agent = 'af_b';

-- The table's CHECKs (only the agents' functions write it).
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET state = 'GONE' WHERE name = 'af_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET instances = 0 WHERE name = 'af_a'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.agent SET lease = '-1 second' WHERE name = 'af_a'$$);

-- Clean up: the agents go with their queue.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'af_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'af_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'af_queue';
SELECT count(*) AS agents_left FROM quota_sched.agent WHERE name LIKE 'af\_%';
DELETE FROM quota_sched.service_environment WHERE name = 'af_env';
DROP FUNCTION pg_temp.af_peek(text);
DROP FUNCTION pg_temp.af_agents();
DROP ROLE regress_af_host_a, regress_af_host_b, regress_af_ops, regress_af_alice;
