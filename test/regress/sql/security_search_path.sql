-- Code the extension runs as its owner (a superuser) never resolves a type,
-- operator or function through a search_path the caller chose.  Each attack
-- below would make the hijacking function run as the owner; it raises, so a
-- hijack would show as an error, and the roles stay what they were.
\i test/regress/include/helpers.sql

CREATE ROLE regress_ssp_agent IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ssp_agent', NULL);
CREATE ROLE regress_ssp_user IN ROLE quota_sched_user;
CREATE SCHEMA regress_ssp_evil AUTHORIZATION regress_ssp_user;
GRANT TEMPORARY ON DATABASE contrib_regression TO regress_ssp_agent, regress_ssp_user;

INSERT INTO quota_sched.service_environment VALUES ('ssp_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ssp_queue', 'ssp_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ssp_queue', 'ssp_share', '{"gpu": 2}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ssp_one', 'ssp_queue', 'ssp_share', 'gpu');
SELECT count(*) FROM quota_sched.run_pass('ssp_queue');

-- An agent puts a domain named "text" in pg_temp, whose check would run
-- as whoever evaluates it, and calls claim().
SET ROLE regress_ssp_agent;
CREATE FUNCTION pg_temp.hijack(t pg_catalog.text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'hijacked as %', current_user;
END $$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.hijack(VALUE));
SELECT name, state FROM quota_sched.claim('ssp_agent', 'ssp_queue', 'gpu');
SELECT r.name, r.state FROM quota_sched.job j, quota_sched.report(j.id, 'ssp_agent', 'RUNNING') r
 WHERE j.name = 'ssp_one';
SELECT count(*) FROM quota_sched.heartbeat('ssp_agent');
DROP DOMAIN pg_temp.text;
DROP FUNCTION pg_temp.hijack(pg_catalog.text);
RESET ROLE;

-- A user shadows the text equality operator in a schema of its own, first
-- on its search_path, and submits, reprioritises, explains, terminates.
SET ROLE regress_ssp_user;
CREATE FUNCTION regress_ssp_evil.eq(a text, b text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'hijacked as %', current_user;
END $$;
CREATE OPERATOR regress_ssp_evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = regress_ssp_evil.eq);
SET search_path = regress_ssp_evil, pg_catalog;
SELECT pg_temp.refused($$SELECT 'a'::text = 'b'::text$$) AS the_operator_is_active;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ssp_two', 'ssp_queue', 'ssp_share', 'gpu');
UPDATE quota_sched.job SET priority = 3 WHERE name OPERATOR(pg_catalog.=) 'ssp_two';
SELECT quota_sched.explain(id) ->> 'blocked_by' AS blocked_by
  FROM quota_sched.job WHERE name OPERATOR(pg_catalog.=) 'ssp_two';
SELECT state FROM quota_sched.terminate(
	(SELECT id FROM quota_sched.job WHERE name OPERATOR(pg_catalog.=) 'ssp_two'));
RESET search_path;
RESET ROLE;

SELECT rolname, rolsuper FROM pg_roles WHERE rolname LIKE 'regress_ssp_%' ORDER BY 1;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ssp_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'ssp_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ssp_env';
DROP SCHEMA regress_ssp_evil CASCADE;
REVOKE TEMPORARY ON DATABASE contrib_regression FROM regress_ssp_agent, regress_ssp_user;
DROP ROLE regress_ssp_agent, regress_ssp_user;
