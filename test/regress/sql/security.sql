-- Roles, privileges and row-level security (scheduling.md 8, 9): two users, an agent,
-- an admin and a role in none of quota_sched's roles, each through SET ROLE
-- from the superuser that runs this file.  Refusals are shown as
-- "SQLSTATE: message" through pg_temp.refused; job ids and times are never
-- printed.

-- pg_temp.refused() shows a statement's outcome: functions in the session's
-- own temporary schema stay usable after SET ROLE.
\i test/regress/include/helpers.sql

CREATE ROLE regress_alice;
CREATE ROLE regress_bob;
CREATE ROLE regress_agent;
CREATE ROLE regress_admin;
CREATE ROLE regress_nobody;
CREATE ROLE regress_team_a;
GRANT quota_sched_user TO regress_alice, regress_bob;
GRANT quota_sched_agent TO regress_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_agent', NULL);
GRANT quota_sched_admin TO regress_admin;
GRANT regress_team_a TO regress_alice;

-- The helper works for a role that has been granted nothing.
SET ROLE regress_nobody;
SELECT current_user, pg_temp.refused('SELECT 1') AS outcome;
RESET ROLE;

--
-- The admin writes configuration with plain INSERT, UPDATE and DELETE.
--
SET ROLE regress_admin;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('sec_env', '{"ml.g5.xlarge": 4}')$$),
	($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('sec_queue', 'sec_env')$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy) VALUES ('sec_queue', 'sec_open', '{"ml.g5.xlarge": 2}', 'LEND_AND_BORROW')$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role) VALUES ('sec_queue', 'sec_team_a', '{"ml.g5.xlarge": 2}', 'RESERVE', 'regress_team_a')$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('sec_queue', 'sec_spare', 'LEND')$$),
	($$UPDATE quota_sched.service_environment SET capacity_limits = '{"ml.g5.xlarge": 4, "ml.g5.2xlarge": 1}' WHERE name = 'sec_env'$$),
	($$UPDATE quota_sched.job_queue SET runnable_timeout = '1 hour' WHERE name = 'sec_queue'$$),
	($$UPDATE quota_sched.quota_share SET in_share_preemption = true WHERE job_queue = 'sec_queue' AND name = 'sec_open'$$),
	($$DELETE FROM quota_sched.quota_share WHERE job_queue = 'sec_queue' AND name = 'sec_spare'$$)
  ) AS v(stmt);
SELECT name, capacity_limits, state FROM quota_sched.service_environment WHERE name = 'sec_env';
SELECT name, service_environment, state, runnable_timeout FROM quota_sched.job_queue WHERE name = 'sec_queue';
SELECT job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption, state, submit_role
  FROM quota_sched.quota_share WHERE job_queue = 'sec_queue' ORDER BY name;
RESET ROLE;

--
-- Submitting.  Every SET ROLE here is from the superuser: the owner of a job
-- is still the role that submitted it, and so is the actor of its history.
--
SET ROLE regress_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('sec_alice_open', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'sec-token-alice');
-- regress_alice is a member of regress_team_a, the share's submit_role.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('sec_alice_team', 'sec_queue', 'sec_team_a', 'ml.g5.xlarge');
SELECT name, owner, owner = current_user AS is_current_user,
       owner = session_user AS is_session_user, state
  FROM quota_sched.job ORDER BY name;
RESET ROLE;

SET ROLE regress_bob;
-- A share with no submit_role takes any user.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority)
VALUES ('sec_bob_open', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 7);
-- regress_bob is not a member of regress_team_a.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('sec_bob_team', 'sec_queue', 'sec_team_a', 'ml.g5.xlarge')$$) AS outcome;
RESET ROLE;

-- As the superuser: the owners and the history, and nothing of the refused job.
SELECT name, quota_share, owner, priority, state
  FROM quota_sched.job WHERE job_queue = 'sec_queue' ORDER BY name;
SELECT j.name, e.kind, e.from_state, e.to_state, e.actor, e.pass_id
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'sec_queue' ORDER BY j.name, e.id;
SELECT id AS bob_job FROM quota_sched.job WHERE name = 'sec_bob_open' \gset
SELECT id AS alice_job FROM quota_sched.job WHERE name = 'sec_alice_open' \gset

--
-- Users see only their own jobs and their own jobs' history.
--
SET ROLE regress_alice;
SELECT name, owner FROM quota_sched.job ORDER BY name;
SELECT j.name, e.kind, e.to_state, e.actor
  FROM quota_sched.job_event e LEFT JOIN quota_sched.job j ON j.id = e.job_id
 ORDER BY j.name, e.id;
SELECT count(*) AS bob_job_rows FROM quota_sched.job WHERE id = :bob_job;
SELECT count(*) AS bob_event_rows FROM quota_sched.job_event WHERE job_id = :bob_job;
RESET ROLE;

SET ROLE regress_bob;
SELECT name, owner FROM quota_sched.job ORDER BY name;
SELECT j.name, e.kind, e.to_state, e.actor
  FROM quota_sched.job_event e LEFT JOIN quota_sched.job j ON j.id = e.job_id
 ORDER BY j.name, e.id;
SELECT count(*) AS alice_job_rows FROM quota_sched.job WHERE id = :alice_job;
SELECT count(*) AS alice_event_rows FROM quota_sched.job_event WHERE job_id = :alice_job;
RESET ROLE;

--
-- Users reprioritise their own jobs only; an UPDATE of another's job
-- touches no row.
--
SET ROLE regress_alice;
WITH u AS (UPDATE quota_sched.job SET priority = 5 WHERE name = 'sec_alice_open' RETURNING name, priority)
SELECT * FROM u;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE name = 'sec_bob_open' RETURNING 1)
SELECT count(*) AS rows_updated FROM u;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE id = :bob_job RETURNING 1)
SELECT count(*) AS rows_updated FROM u;
WITH u AS (UPDATE quota_sched.job SET priority = 9 RETURNING name)
SELECT name AS updated FROM u ORDER BY name;
RESET ROLE;
SELECT name, priority FROM quota_sched.job WHERE job_queue = 'sec_queue' ORDER BY name;

--
-- Users can neither set nor change a column the system keeps (42501), nor
-- any other column but priority, nor delete a job.
--
SET ROLE regress_alice;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, owner) VALUES ('sec_alice_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'regress_bob')$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, state) VALUES ('sec_alice_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'RUNNING')$$),
	($$INSERT INTO quota_sched.job (id, name, job_queue, quota_share, capacity_unit) VALUES (-1, 'sec_alice_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge')$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, agent) VALUES ('sec_alice_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'sec_agent')$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, submitted_at) VALUES ('sec_alice_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', now())$$),
	($$UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET owner = 'regress_bob' WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET queued_at = queued_at - interval '1 day' WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET failed_attempts = 0 WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET priority = 6, state = state WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET quota_share = 'sec_team_a' WHERE name = 'sec_alice_open'$$),
	($$DELETE FROM quota_sched.job WHERE name = 'sec_alice_open'$$)
  ) AS v(stmt);
SELECT name, owner, priority, state, failed_attempts FROM quota_sched.job ORDER BY name;
RESET ROLE;

-- The superuser, too, cannot set a system column of a new job.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, state) VALUES ('sec_super_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'RUNNING')$$) AS outcome;
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, owner) VALUES ('sec_super_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'regress_bob')$$) AS outcome;
SELECT count(*) AS sec_super_x FROM quota_sched.job WHERE name = 'sec_super_x';
-- Nor change one of an existing job (the job's id is masked).
SELECT regexp_replace(pg_temp.refused(stmt), 'job \d+', 'job N') AS outcome
  FROM (VALUES
	($$UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE name = 'sec_alice_open'$$),
	($$UPDATE quota_sched.job SET owner = 'regress_bob' WHERE name = 'sec_alice_open'$$)
  ) AS v(stmt);

--
-- Users cannot write history or the pass log, nor configuration.
--
SET ROLE regress_bob;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.job_event (job_id, at, to_state, actor) SELECT id, now(), 'SUCCEEDED', 'regress_bob' FROM quota_sched.job WHERE name = 'sec_bob_open'$$),
	($$UPDATE quota_sched.job_event SET actor = 'pass'$$),
	($$DELETE FROM quota_sched.job_event$$),
	($$INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at) VALUES ('sec_queue', now(), now())$$),
	($$UPDATE quota_sched.pass_log SET dispatched = 0$$),
	($$DELETE FROM quota_sched.pass_log$$),
	($$INSERT INTO quota_sched.service_environment (name) VALUES ('sec_bob_env')$$),
	($$UPDATE quota_sched.job_queue SET state = 'DISABLED' WHERE name = 'sec_queue'$$),
	($$UPDATE quota_sched.quota_share SET submit_role = NULL WHERE name = 'sec_team_a'$$),
	($$DELETE FROM quota_sched.quota_share WHERE name = 'sec_team_a'$$),
	($$SELECT nextval('quota_sched.job_id_seq')$$)
  ) AS v(stmt);
-- Reading configuration is allowed.
SELECT name, submit_role FROM quota_sched.quota_share WHERE job_queue = 'sec_queue' ORDER BY name;
RESET ROLE;

--
-- The admin sees and reprioritises every job, and every job's history, but
-- cannot change a system column either.
--
SET ROLE regress_admin;
SELECT name, owner, priority FROM quota_sched.job WHERE job_queue = 'sec_queue' ORDER BY name;
SELECT j.name, e.kind, e.to_state, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'sec_queue' ORDER BY j.name, e.id;
WITH u AS (UPDATE quota_sched.job SET priority = priority + 100 WHERE job_queue = 'sec_queue' RETURNING name, owner, priority)
SELECT * FROM u ORDER BY name;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$UPDATE quota_sched.job SET state = 'FAILED' WHERE name = 'sec_bob_open'$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, owner) VALUES ('sec_admin_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge', 'regress_bob')$$),
	($$INSERT INTO quota_sched.job_event (job_id, at, to_state, actor) SELECT id, now(), 'FAILED', 'regress_admin' FROM quota_sched.job WHERE name = 'sec_bob_open'$$)
  ) AS v(stmt);
-- A queue with jobs that have not ended cannot be deleted.
SELECT pg_temp.refused($$DELETE FROM quota_sched.job_queue WHERE name = 'sec_queue'$$) AS outcome;
RESET ROLE;

--
-- The agent sees every job and all history, but submits nothing, changes no
-- job directly and writes no configuration.
--
SET ROLE regress_agent;
SELECT name, owner, priority, state FROM quota_sched.job WHERE job_queue = 'sec_queue' ORDER BY name;
SELECT j.name, e.kind, e.to_state, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'sec_queue' ORDER BY j.name, e.id;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('sec_agent_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge')$$),
	($$UPDATE quota_sched.job SET priority = 1 WHERE name = 'sec_bob_open'$$),
	($$UPDATE quota_sched.job SET state = 'STARTING', agent = 'regress_agent' WHERE name = 'sec_bob_open'$$),
	($$DELETE FROM quota_sched.job WHERE name = 'sec_bob_open'$$),
	($$INSERT INTO quota_sched.job_event (job_id, at, to_state, actor) SELECT id, now(), 'STARTING', 'regress_agent' FROM quota_sched.job WHERE name = 'sec_bob_open'$$),
	($$INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at) VALUES ('sec_queue', now(), now())$$),
	($$INSERT INTO quota_sched.service_environment (name) VALUES ('sec_agent_env')$$),
	($$UPDATE quota_sched.quota_share SET strategy = 'RESERVE' WHERE name = 'sec_open'$$)
  ) AS v(stmt);
RESET ROLE;

--
-- A role in none of quota_sched's roles can neither read nor write anything
-- in the schema: every table and sequence, every function.
--
SET ROLE regress_nobody;
SELECT has_schema_privilege('quota_sched', 'USAGE') AS schema_usage;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$SELECT count(*) FROM quota_sched.job$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('sec_nobody_x', 'sec_queue', 'sec_open', 'ml.g5.xlarge')$$),
	($$UPDATE quota_sched.job SET priority = 1$$),
	($$SELECT count(*) FROM quota_sched.quota_share$$),
	($$INSERT INTO quota_sched.service_environment (name) VALUES ('sec_nobody_env')$$)
  ) AS v(stmt);
-- Every relation and function of the schema, with each kind of access.
SELECT DISTINCT pg_temp.refused(stmt) AS outcome
  FROM (SELECT format(s, c.relname)
		  FROM pg_class c,
			   unnest(ARRAY['SELECT * FROM quota_sched.%I', 'INSERT INTO quota_sched.%I DEFAULT VALUES',
							'UPDATE quota_sched.%I SET id = id', 'DELETE FROM quota_sched.%I',
							'TRUNCATE quota_sched.%I']) AS s
		 WHERE c.relnamespace = 'quota_sched'::regnamespace AND c.relkind IN ('r', 'p')
		UNION ALL
		SELECT format(s, c.relname)
		  FROM pg_class c,
			   unnest(ARRAY['SELECT * FROM quota_sched.%I', $$SELECT nextval('quota_sched.%I')$$]) AS s
		 WHERE c.relnamespace = 'quota_sched'::regnamespace AND c.relkind = 'S'
		UNION ALL
		SELECT format('SELECT quota_sched.%I(%s)', p.proname,
					  (SELECT string_agg(CASE WHEN y.typtype = 'p' THEN 'NULL'
											  ELSE format('NULL::%s', t::regtype) END, ', ' ORDER BY n)
						 FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a(t, n)
						 JOIN pg_type y ON y.oid = a.t))
		  FROM pg_proc p
		 WHERE p.pronamespace = 'quota_sched'::regnamespace) AS v(stmt);
RESET ROLE;

--
-- Nothing in the schema is granted to PUBLIC: not the schema, a table, a
-- column, a sequence or a function; and SECURITY DEFINER code pins its
-- search_path.
--
SELECT 'schema' AS kind, nspname AS name FROM pg_namespace
 WHERE nspname = 'quota_sched'
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(nspacl, acldefault('n', nspowner))) a WHERE a.grantee = 0)
UNION ALL
SELECT 'relation', relname FROM pg_class c
 WHERE relnamespace = 'quota_sched'::regnamespace
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(relacl, acldefault(CASE relkind WHEN 'S' THEN 's'::"char" ELSE 'r'::"char" END, relowner))) a
               WHERE a.grantee = 0)
UNION ALL
SELECT 'column', attrelid::regclass || '.' || attname FROM pg_attribute
 WHERE attrelid IN (SELECT oid FROM pg_class WHERE relnamespace = 'quota_sched'::regnamespace)
   AND attacl IS NOT NULL
   AND EXISTS (SELECT 1 FROM aclexplode(attacl) a WHERE a.grantee = 0)
UNION ALL
SELECT 'function', proname FROM pg_proc
 WHERE pronamespace = 'quota_sched'::regnamespace
   AND EXISTS (SELECT 1 FROM aclexplode(coalesce(proacl, acldefault('f', proowner))) a WHERE a.grantee = 0);
SELECT has_table_privilege('public', 'quota_sched.job', 'SELECT') AS public_select_job,
       has_any_column_privilege('public', 'quota_sched.job', 'INSERT') AS public_insert_job;
SELECT proname FROM pg_proc
 WHERE pronamespace = 'quota_sched'::regnamespace AND prosecdef
   AND NOT EXISTS (SELECT 1 FROM unnest(proconfig) AS c WHERE c LIKE 'search\_path=%');

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

--
-- Clean up: this file's jobs, configuration and roles.
--
DELETE FROM quota_sched.job WHERE job_queue = 'sec_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'sec_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'sec_env';
SELECT count(*) AS sec_events_left FROM quota_sched.job_event e
 WHERE NOT EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = e.job_id);
-- The jobs were deleted with the triggers on: still no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();
DROP ROLE regress_alice, regress_bob, regress_agent, regress_admin, regress_nobody, regress_team_a;
