-- The history of the configuration (issue 11, item 1): every INSERT, UPDATE
-- and DELETE of an environment, queue or share leaves one row in
-- quota_sched.config_event, in the transaction that makes it, with the
-- transaction's time, the acting role (the role of SET ROLE, not the
-- session's login nor the extension's owner), the object's key, and the
-- whole row before and after (to_jsonb).  An UPDATE that changes nothing
-- leaves nothing; a queue's deletion leaves a row for each of its shares too.
-- Admins read the history; users and agents do not, and nobody writes it
-- but the triggers.  Ids and times are never printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_ch_admin;
CREATE ROLE regress_ch_admin2;
CREATE ROLE regress_ch_user;
CREATE ROLE regress_ch_agent;
GRANT quota_sched_admin TO regress_ch_admin, regress_ch_admin2;
GRANT quota_sched_user TO regress_ch_user;
GRANT quota_sched_agent TO regress_ch_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ch_agent', NULL);

-- pg_temp.new_events(): the rows of this file's objects (names starting
-- "ch_") written since the last call, in order.  "now" tells that the row's
-- time is the transaction's (call it in the transaction of the change);
-- "whole" that old and new hold every column of the row; "change" is the
-- row for an INSERT or DELETE, and the columns that changed for an UPDATE.
CREATE TEMP TABLE ch_seen (last_id bigint);
INSERT INTO ch_seen SELECT coalesce(max(id), 0) FROM quota_sched.config_event;
CREATE FUNCTION pg_temp.new_events()
RETURNS TABLE (object text, job_queue text, name text, action text, actor text,
			   now boolean, whole boolean, change text)
LANGUAGE sql AS $$
	WITH e AS (
		SELECT * FROM quota_sched.config_event
		 WHERE id > (SELECT last_id FROM ch_seen)
		   AND (name LIKE 'ch\_%' OR job_queue LIKE 'ch\_%'
				OR old ->> 'name' LIKE 'ch\_%' OR new ->> 'name' LIKE 'ch\_%')),
	seen AS (
		UPDATE ch_seen SET last_id = coalesce((SELECT max(id) FROM quota_sched.config_event), 0))
	SELECT e.object, e.job_queue, e.name, e.action, e.actor, e.at = now(),
		   (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(coalesce(e.new, e.old)) AS k)
			   = (SELECT array_agg(a.attname::text ORDER BY a.attname::text) FROM pg_attribute a
				   WHERE a.attrelid = ('quota_sched.' || e.object)::regclass
					 AND a.attnum > 0 AND NOT a.attisdropped)
		   AND (e.old IS NULL OR e.new IS NULL
				OR (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(e.old) AS k)
				   = (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(e.new) AS k)),
		   CASE WHEN e.old IS NULL THEN e.new::text
				WHEN e.new IS NULL THEN e.old::text
				ELSE (SELECT string_agg(format('%s: %s -> %s', o.key, o.value, n.value), ', '
										ORDER BY o.key)
						FROM jsonb_each(e.old) o JOIN jsonb_each(e.new) n USING (key)
					   WHERE o.value IS DISTINCT FROM n.value) END
	  FROM e ORDER BY e.id
$$;

------------------------------------------------------------------------
-- An admin (through SET ROLE) creates an environment, its queue and two
-- shares: four INSERT rows, the admin's, at the transaction's time.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ch_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ch_queue', 'ch_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('ch_queue', 'ch_a', '{"gpu": 4}', 'LEND_AND_BORROW', 50),
	   ('ch_queue', 'ch_b', '{"gpu": 4}', 'LEND', -1);
RESET ROLE;
SELECT * FROM pg_temp.new_events();
-- the actor is the role set, not the login of the session
SELECT DISTINCT actor = session_user AS actor_is_login FROM quota_sched.config_event
 WHERE job_queue = 'ch_queue';
COMMIT;

------------------------------------------------------------------------
-- Updates of every kind of setting: limits, strategy, borrow and lend
-- limits, states, options.  One row per row changed, several columns in
-- one row when one UPDATE changes them together.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 12, "cpu": 4}'
 WHERE name = 'ch_env';
UPDATE quota_sched.service_environment SET state = 'DISABLED' WHERE name = 'ch_env';
UPDATE quota_sched.job_queue SET runnable_timeout = '2 hours', borrow_order = 'FAIR'
 WHERE name = 'ch_queue';
UPDATE quota_sched.job_queue SET state = 'DISABLED' WHERE name = 'ch_queue';
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 6}', borrow_limit = 100
 WHERE job_queue = 'ch_queue' AND name = 'ch_a';
UPDATE quota_sched.quota_share SET strategy = 'RESERVE', borrow_limit = -1
 WHERE job_queue = 'ch_queue' AND name = 'ch_a';
UPDATE quota_sched.quota_share SET lend_limit = 50, weight = 3, in_share_preemption = true
 WHERE job_queue = 'ch_queue' AND name = 'ch_b';
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE job_queue = 'ch_queue';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
COMMIT;

------------------------------------------------------------------------
-- An UPDATE that changes nothing writes nothing: setting the same values,
-- a capacity map written another way, a statement that matches no row.
-- In a statement over both shares only the one that changes is recorded.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
UPDATE quota_sched.quota_share SET borrow_limit = borrow_limit, state = 'DISABLED'
 WHERE job_queue = 'ch_queue';
UPDATE quota_sched.service_environment SET capacity_limits = '{"cpu":4,"gpu":12}'
 WHERE name = 'ch_env';
UPDATE quota_sched.job_queue SET state = 'ENABLED' WHERE name = 'ch_no_such_queue';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
SET ROLE regress_ch_admin;
UPDATE quota_sched.quota_share SET weight = 3 WHERE job_queue = 'ch_queue';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
COMMIT;

------------------------------------------------------------------------
-- Another admin's change is its own; a superuser without SET ROLE is
-- recorded as its login.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin2;
UPDATE quota_sched.quota_share SET state = 'ENABLED'
 WHERE job_queue = 'ch_queue' AND name = 'ch_b';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
UPDATE quota_sched.job_queue SET state = 'ENABLED' WHERE name = 'ch_queue';
SELECT object, name, action, actor = session_user AS actor_is_login, now, change
  FROM pg_temp.new_events();
COMMIT;

------------------------------------------------------------------------
-- A change rolled back leaves no row: the history is written in the
-- transaction that makes the change.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
UPDATE quota_sched.service_environment SET state = 'ENABLED' WHERE name = 'ch_env';
RESET ROLE;
ROLLBACK;
SELECT * FROM pg_temp.new_events();

------------------------------------------------------------------------
-- Intervals are recorded in one style (IntervalStyle postgres), whatever
-- the writer's session uses (pg_regress runs with postgres_verbose).
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
SET LOCAL IntervalStyle = 'iso_8601';
UPDATE quota_sched.job_queue SET runnable_timeout = '1 day 30 minutes' WHERE name = 'ch_queue';
RESET ROLE;
SELECT name, action, change FROM pg_temp.new_events();
COMMIT;

------------------------------------------------------------------------
-- Renames are updates whose old and new differ in name; the row is under
-- the new name.  Renaming the environment renames it in its queue too
-- (ON UPDATE CASCADE): that is the queue's UPDATE, by the same admin,
-- although PostgreSQL runs the cascade as the tables' owner.
------------------------------------------------------------------------
BEGIN;
SET ROLE regress_ch_admin;
UPDATE quota_sched.service_environment SET name = 'ch_env_renamed' WHERE name = 'ch_env';
UPDATE quota_sched.quota_share SET name = 'ch_b_renamed'
 WHERE job_queue = 'ch_queue' AND name = 'ch_b';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
COMMIT;

------------------------------------------------------------------------
-- Deletes: a share on its own; then the queue, whose remaining shares go
-- with it (ON DELETE CASCADE), each with its DELETE row, by the admin
-- (the cascade, too, runs as the tables' owner); then the environment.
------------------------------------------------------------------------
SET ROLE regress_ch_admin;
INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('ch_queue', 'ch_c', 'LEND');
RESET ROLE;
SELECT object, job_queue, name, action FROM pg_temp.new_events();
BEGIN;
SET ROLE regress_ch_admin;
DELETE FROM quota_sched.quota_share WHERE job_queue = 'ch_queue' AND name = 'ch_a';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
COMMIT;
BEGIN;
SET ROLE regress_ch_admin;
DELETE FROM quota_sched.job_queue WHERE name = 'ch_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ch_env_renamed';
RESET ROLE;
SELECT * FROM pg_temp.new_events();
COMMIT;

-- The whole history of this file's objects, in order.
SELECT object, job_queue, name, action,
	   CASE WHEN actor = session_user THEN '(the login)' ELSE actor END AS actor
  FROM quota_sched.config_event
 WHERE name LIKE 'ch\_%' OR job_queue LIKE 'ch\_%'
 ORDER BY id;

------------------------------------------------------------------------
-- A TRUNCATE (only the owner may) records a DELETE for every row it
-- removes.  Rolled back: it would empty every other file's configuration.
------------------------------------------------------------------------
BEGIN;
INSERT INTO quota_sched.service_environment (name) VALUES ('ch_t_env');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ch_t_queue', 'ch_t_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy)
VALUES ('ch_t_queue', 'ch_t_1', 'LEND'), ('ch_t_queue', 'ch_t_2', 'LEND');
CREATE TEMP TABLE ch_shares_before ON COMMIT DROP AS
	SELECT to_jsonb(s) AS old FROM quota_sched.quota_share s;
TRUNCATE quota_sched.quota_share CASCADE;
SELECT count(*) >= 2 AS some_shares,
	   (SELECT array_agg(old ORDER BY old) FROM ch_shares_before)
	   = (SELECT array_agg(old ORDER BY old) FROM quota_sched.config_event
		   WHERE object = 'quota_share' AND action = 'DELETE' AND new IS NULL AND at = now()
			 AND id > (SELECT last_id FROM ch_seen)) AS each_recorded
  FROM ch_shares_before;
ROLLBACK;

------------------------------------------------------------------------
-- Who may read and write the history: admins read it; users, agents and
-- admins write nothing to it, nor draw from its sequence (42501).
------------------------------------------------------------------------
SET ROLE regress_ch_user;
SELECT pg_temp.refused('SELECT count(*) FROM quota_sched.config_event') AS user_select;
SET ROLE regress_ch_agent;
SELECT pg_temp.refused('SELECT count(*) FROM quota_sched.config_event') AS agent_select;
SET ROLE regress_ch_admin;
SELECT pg_temp.refused('SELECT count(*) FROM quota_sched.config_event') AS admin_select;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$INSERT INTO quota_sched.config_event (at, actor, object, name, action) VALUES (now(), 'x', 'job_queue', 'ch_x', 'INSERT')$$),
	($$UPDATE quota_sched.config_event SET actor = 'somebody else'$$),
	($$DELETE FROM quota_sched.config_event$$),
	($$TRUNCATE quota_sched.config_event$$),
	($$SELECT nextval('quota_sched.config_event_id_seq')$$)
  ) AS v(stmt);
RESET ROLE;
SELECT grantee, privilege_type FROM information_schema.role_table_grants
 WHERE table_schema = 'quota_sched' AND table_name = 'config_event' AND grantee <> current_user
 ORDER BY 1, 2;
-- The trigger function runs as the extension's owner, with a pinned
-- search_path, and nobody may call it.
SELECT prosecdef, proconfig,
	   EXISTS (SELECT 1 FROM aclexplode(coalesce(proacl, acldefault('f', proowner))) a
				WHERE a.grantee <> proowner) AS granted_to_anyone
  FROM pg_proc WHERE oid = 'quota_sched.config_history()'::regprocedure;

-- A fresh install has no BASELINE rows: those are the upgrade's.
SELECT count(*) AS baseline_rows FROM quota_sched.config_event WHERE action = 'BASELINE';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

DROP FUNCTION pg_temp.new_events();
DROP TABLE ch_seen;
DROP ROLE regress_ch_admin, regress_ch_admin2, regress_ch_user, regress_ch_agent;
