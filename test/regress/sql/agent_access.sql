-- Which queues an agent login serves (issue 37, item 2; doc/agents.md,
-- "Which queues a login serves"): admins write agent_access; a login
-- serves no queue until a row allows it one, or every queue with a null
-- job_queue, or what a role it is a member of is allowed.  agent_ready()
-- and claim() elsewhere are 42501 and write nothing.  A registration
-- records a lease of at most quota_sched.max_agent_lease.  Deleting a row
-- forgets the agents it no longer allows; their jobs run on.  Admins
-- remove an agent with forget_agent().  The red team's repro: a rogue
-- login's agent_ready(..., 1) and heartbeat(lease => '365 days') held
-- every larger job of the unit NO_AGENT_FITS for a year.

\i test/regress/include/helpers.sql

CREATE ROLE regress_aa_host NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_aa_rogue NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_aa_fleet NOLOGIN;
CREATE ROLE regress_aa_member NOLOGIN IN ROLE quota_sched_agent, regress_aa_fleet;
CREATE ROLE regress_aa_ops NOLOGIN IN ROLE quota_sched_admin, quota_sched_agent;
CREATE ROLE regress_aa_alice NOLOGIN IN ROLE quota_sched_user;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('aa_env1', '{"gpu": 8}'), ('aa_env2', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('aa_q1', 'aa_env1'), ('aa_q2', 'aa_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('aa_q1', 'aa_s1', '{"gpu": 8}', 'RESERVE'), ('aa_q2', 'aa_s2', '{"gpu": 8}', 'RESERVE');

-- 1. No row: registration and claims are refused, with the INSERT an
-- admin would run as the hint, and nothing is written.
SET ROLE regress_aa_rogue;
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('aa_rogue', 'aa_q1', 'gpu', 1)$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.claim('aa_rogue', 'aa_q1')$$);
SELECT quota_sched.agent_ready('aa_rogue', 'aa_q1', 'gpu', 1);
RESET ROLE;
SELECT count(*) AS rogue_rows FROM quota_sched.agent WHERE name = 'aa_rogue';

-- Only admins write agent_access, and a row names a role that exists.
SET ROLE regress_aa_rogue;
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_rogue', NULL)$$);
RESET ROLE;
SET ROLE regress_aa_alice;
SELECT pg_temp.refused($$SELECT * FROM quota_sched.agent_access$$);
RESET ROLE;
SET ROLE regress_aa_ops;
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_nobody', 'aa_q1')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_host', 'aa_no_queue')$$);

-- 2. A row for one queue: that queue, not the other.  Rows are unique per
-- login and queue, the null queue included.
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_host', 'aa_q1');
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_host', 'aa_q1')$$);
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_fleet', NULL);
SELECT pg_temp.refused($$INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aa_fleet', NULL)$$);
RESET ROLE;
SET ROLE regress_aa_host;
SELECT name, login, job_queue, instances FROM quota_sched.agent_ready('aa_host', 'aa_q1', 'gpu', 4);
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('aa_host2', 'aa_q2', 'gpu', 4)$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.claim('aa_host', 'aa_q2')$$);
SELECT count(*) AS claimed FROM quota_sched.claim('aa_host', 'aa_q1');
RESET ROLE;

-- 3. A null queue allows every queue, and a member of an allowed role is
-- allowed (regress_aa_member is in regress_aa_fleet).
SET ROLE regress_aa_member;
SELECT name, login, job_queue FROM quota_sched.agent_ready('aa_member_1', 'aa_q1', 'gpu', 2);
SELECT name, login, job_queue FROM quota_sched.agent_ready('aa_member_2', 'aa_q2', 'gpu', 2);
RESET ROLE;

-- 4. Admins serve every queue without a row.
SET ROLE regress_aa_ops;
SELECT name, login, job_queue FROM quota_sched.agent_ready('aa_ops', 'aa_q2', 'gpu', 8);
SELECT count(*) AS claimed FROM quota_sched.claim('aa_ops', 'aa_q2');
RESET ROLE;

-- 5. The lease a registration records is at most max_agent_lease (an
-- hour): a heartbeat asking for 365 days keeps the agent live for an hour
-- at most.  Only the server's configuration sets it.
SHOW quota_sched.max_agent_lease;
SET ROLE regress_aa_host;
SELECT count(*) FROM quota_sched.heartbeat('aa_host', lease => '365 days');
SELECT pg_temp.refused($$SET quota_sched.max_agent_lease = '365d'$$);
RESET ROLE;
SELECT name, lease FROM quota_sched.agent WHERE name = 'aa_host';
UPDATE quota_sched.agent SET last_seen = now() - interval '61 minutes' WHERE name = 'aa_host';
SELECT agent, live FROM quota_sched.agents WHERE agent = 'aa_host';

-- 6. The red team's repro, with access: a small registration holds a
-- larger job NO_AGENT_FITS while it is live; forget_agent() (admins)
-- removes it, and the job is dispatched.  It returns the row it removed;
-- an unknown agent is P0002, a non-admin 42501.
SELECT name, state FROM quota_sched.agent_ready('aa_tiny', 'aa_q1', 'gpu', 1);
DELETE FROM quota_sched.agent WHERE name IN ('aa_member_1', 'aa_host');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('aa_big', 'aa_q1', 'aa_s1', 'gpu', 2);
SELECT * FROM pg_temp.pass('aa_q1');
SELECT status_reason FROM quota_sched.job WHERE name = 'aa_big';
SET ROLE regress_aa_rogue;
SELECT pg_temp.refused($$SELECT quota_sched.forget_agent('aa_tiny')$$);
RESET ROLE;
SET ROLE regress_aa_ops;
SELECT name, login, instances FROM quota_sched.forget_agent('aa_tiny');
SELECT pg_temp.refused($$SELECT quota_sched.forget_agent('aa_tiny')$$);
RESET ROLE;
SELECT * FROM pg_temp.pass('aa_q1');

-- 7. Deleting a row forgets the agents it no longer allows: the member's
-- agent of aa_q2 goes with the fleet's row; an admin's agent stays.  Jobs
-- claimed before run on: their agent heartbeats and reports as before.
SET ROLE regress_aa_member;
SELECT name, state FROM quota_sched.claim('aa_member_2', 'aa_q2');
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('aa_small', 'aa_q2', 'aa_s2', 'gpu');
SELECT * FROM pg_temp.pass('aa_q2');
SET ROLE regress_aa_member;
SELECT name, state FROM quota_sched.claim('aa_member_2', 'aa_q2');
RESET ROLE;
DELETE FROM quota_sched.agent_access WHERE login = 'regress_aa_fleet';
SELECT name FROM quota_sched.agent WHERE job_queue LIKE 'aa\_%' ORDER BY name;
SET ROLE regress_aa_member;
SELECT count(*) AS renewed FROM quota_sched.heartbeat('aa_member_2');
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'aa_small'),
										   'aa_member_2', 'SUCCEEDED');
SELECT pg_temp.refused($$SELECT * FROM quota_sched.claim('aa_member_2', 'aa_q2')$$);
RESET ROLE;

-- Clean up: rows go with their queue.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'aa\_%';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue LIKE 'aa\_%';
DELETE FROM quota_sched.job_queue WHERE name LIKE 'aa\_%';
SELECT count(*) AS access_left FROM quota_sched.agent_access WHERE job_queue IS NOT NULL AND login LIKE 'regress_aa%';
DELETE FROM quota_sched.agent_access WHERE login LIKE 'regress_aa%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'aa\_env_';
DROP ROLE regress_aa_host, regress_aa_rogue, regress_aa_member, regress_aa_fleet, regress_aa_ops,
	regress_aa_alice;
