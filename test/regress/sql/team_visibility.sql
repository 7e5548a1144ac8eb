-- Teams (doc/operations.md, "Roles and security"): the members of a quota share's
-- submit_role see, explain, reprioritise and terminate the jobs of that
-- share, and see their history, whoever submitted them.  Two teams of two
-- members each, an outsider, a member through a sub-team, an admin and an
-- agent.  Shares:
--   tv_a     submit_role regress_tv_team_a (ann, amy; sam through regress_tv_sub_a)
--   tv_b     submit_role regress_tv_team_b (ben, bea)
--   tv_open  no submit_role: any user submits, each sees only their own jobs
--   tv_ghost submit_role naming a role that does not exist: admins only
-- A member who leaves the team keeps their own jobs and loses the others'.
-- Refusals are shown as "SQLSTATE: message"; job ids and times are never
-- printed.

\i test/regress/include/helpers.sql

-- pg_temp.refused_as(who, stmt): pg_temp.refused(stmt) run as role who.
CREATE FUNCTION pg_temp.refused_as(who text, stmt text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	outcome text;
BEGIN
	EXECUTE format('SET ROLE %I', who);
	outcome := pg_temp.refused(stmt);
	RESET ROLE;
	RETURN outcome;
END
$$;

-- pg_temp.tv_facts(): every column of the file's jobs and the number of
-- their job_event rows, read as the superuser whoever calls, to tell that
-- a refused call changed nothing.
CREATE FUNCTION pg_temp.tv_facts() RETURNS text LANGUAGE sql SECURITY DEFINER AS $$
	SELECT (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
			 WHERE job_queue = 'tv_queue')
		   || ' events: ' ||
		   (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
			 WHERE j.job_queue = 'tv_queue')
$$;

-- pg_temp.tv_seen(who): the names of the jobs of tv_queue that role who
-- sees, and for each the number of its job_event rows who sees.
CREATE FUNCTION pg_temp.tv_seen(who text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	seen text;
BEGIN
	EXECUTE format('SET ROLE %I', who);
	EXECUTE $q$
		SELECT coalesce(string_agg(j.name || '(' || (SELECT count(*) FROM quota_sched.job_event e
													  WHERE e.job_id = j.id) || ')',
								   ' ' ORDER BY j.name COLLATE "C"), '-')
		  FROM quota_sched.job j WHERE j.job_queue = 'tv_queue'$q$ INTO seen;
	RESET ROLE;
	RETURN seen;
END
$$;

CREATE ROLE regress_tv_team_a NOLOGIN;
CREATE ROLE regress_tv_team_b NOLOGIN;
CREATE ROLE regress_tv_sub_a NOLOGIN IN ROLE regress_tv_team_a;
CREATE ROLE regress_tv_ann NOLOGIN IN ROLE quota_sched_user, regress_tv_team_a;
CREATE ROLE regress_tv_amy NOLOGIN IN ROLE quota_sched_user, regress_tv_team_a;
CREATE ROLE regress_tv_sam NOLOGIN IN ROLE quota_sched_user, regress_tv_sub_a;
CREATE ROLE regress_tv_ben NOLOGIN IN ROLE quota_sched_user, regress_tv_team_b;
CREATE ROLE regress_tv_bea NOLOGIN IN ROLE quota_sched_user, regress_tv_team_b;
CREATE ROLE regress_tv_out NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_tv_admin NOLOGIN IN ROLE quota_sched_admin;
CREATE ROLE regress_tv_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_tv_agent', NULL);

SET ROLE regress_tv_admin;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('tv_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('tv_queue', 'tv_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role) VALUES
	('tv_queue', 'tv_a', '{"gpu": 2}', 'RESERVE', 'regress_tv_team_a'),
	('tv_queue', 'tv_b', '{"gpu": 2}', 'RESERVE', 'regress_tv_team_b'),
	('tv_queue', 'tv_open', '{"gpu": 2}', 'RESERVE', NULL),
	('tv_queue', 'tv_ghost', '{"gpu": 2}', 'RESERVE', 'regress_tv_no_such_role');
-- An admin's job in a team's share is the team's too.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('admin_a', 'tv_queue', 'tv_a', 'gpu'),
	   ('admin_ghost', 'tv_queue', 'tv_ghost', 'gpu');
RESET ROLE;

SET ROLE regress_tv_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('ann_a1', 'tv_queue', 'tv_a', 'gpu'),
	('ann_a2', 'tv_queue', 'tv_a', 'gpu'),
	('ann_a3', 'tv_queue', 'tv_a', 'gpu'),
	('ann_open', 'tv_queue', 'tv_open', 'gpu');
RESET ROLE;
SET ROLE regress_tv_amy;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('amy_a', 'tv_queue', 'tv_a', 'gpu'),
	('amy_open', 'tv_queue', 'tv_open', 'gpu');
RESET ROLE;
SET ROLE regress_tv_sam;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('sam_a', 'tv_queue', 'tv_a', 'gpu');
RESET ROLE;
SET ROLE regress_tv_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('ben_b', 'tv_queue', 'tv_b', 'gpu'),
	('ben_open', 'tv_queue', 'tv_open', 'gpu');
RESET ROLE;
SET ROLE regress_tv_bea;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bea_b', 'tv_queue', 'tv_b', 'gpu');
RESET ROLE;
SET ROLE regress_tv_out;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('out_open', 'tv_queue', 'tv_open', 'gpu');
-- The outsider may not submit to a team's share (unchanged).
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('out_a', 'tv_queue', 'tv_a', 'gpu')$$) AS outcome;
RESET ROLE;

SELECT id AS ann_a1 FROM quota_sched.job WHERE name = 'ann_a1' \gset
SELECT id AS ann_a2 FROM quota_sched.job WHERE name = 'ann_a2' \gset
SELECT id AS ann_a3 FROM quota_sched.job WHERE name = 'ann_a3' \gset
SELECT id AS amy_a FROM quota_sched.job WHERE name = 'amy_a' \gset
SELECT id AS amy_open FROM quota_sched.job WHERE name = 'amy_open' \gset
SELECT id AS ben_b FROM quota_sched.job WHERE name = 'ben_b' \gset
SELECT id AS bea_b FROM quota_sched.job WHERE name = 'bea_b' \gset
SELECT id AS admin_ghost FROM quota_sched.job WHERE name = 'admin_ghost' \gset

-- Two of team A's jobs run, so that a teammate's terminate requests a stop.
WITH p AS (SELECT * FROM quota_sched.run_pass('tv_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SET ROLE regress_tv_agent;
SELECT name, state FROM quota_sched.claim('tv_agent', 'tv_queue', max_jobs => 10, start => true)
 ORDER BY name;
RESET ROLE;

------------------------------------------------------------------------
-- Who sees which jobs, and how many history rows of each.  A member sees
-- every job of the team's share (a sub-team's member too) and only their
-- own in tv_open; the outsider only their own; nobody but the admin and
-- the agent sees tv_ghost's job.
------------------------------------------------------------------------
SELECT who, pg_temp.tv_seen(who) AS seen
  FROM (VALUES ('regress_tv_ann'), ('regress_tv_amy'), ('regress_tv_sam'), ('regress_tv_ben'),
			   ('regress_tv_bea'), ('regress_tv_out'), ('regress_tv_admin'), ('regress_tv_agent'))
	   AS r(who);

-- The history of a teammate's job by id, and nothing of another team's.
SET ROLE regress_tv_amy;
SELECT e.kind, e.from_state, e.to_state, e.actor
  FROM quota_sched.job_event e WHERE e.job_id = :ann_a1 ORDER BY e.id;
SELECT count(*) AS ben_b_rows FROM quota_sched.job WHERE id = :ben_b;
SELECT count(*) AS ben_b_events FROM quota_sched.job_event WHERE job_id = :ben_b;
SELECT count(*) AS amy_open_rows FROM quota_sched.job WHERE id = :amy_open;
RESET ROLE;
SET ROLE regress_tv_out;
SELECT count(*) AS team_a_rows FROM quota_sched.job WHERE quota_share = 'tv_a';
SELECT count(*) AS team_a_events FROM quota_sched.job_event WHERE job_id = :ann_a1;
RESET ROLE;

------------------------------------------------------------------------
-- explain: a teammate's job, yes; another team's, the outsider, a job in
-- tv_open of another user, and the ghost share's: 42501, with nothing of
-- the job in the message.
------------------------------------------------------------------------
SET ROLE regress_tv_amy;
SELECT e - 'job_id' - 'detail' AS explained FROM quota_sched.explain(:ann_a1) AS e;
SELECT e - 'job_id' - 'detail' AS explained FROM quota_sched.explain(:ann_a2) AS e;
RESET ROLE;
SET ROLE regress_tv_sam;
SELECT e ->> 'state' AS state FROM quota_sched.explain(:amy_a) AS e;
RESET ROLE;
SELECT r.who, j.job,
	   pg_temp.refused_as(r.who, format('SELECT quota_sched.explain(%s)', j.id)) AS outcome
  FROM (VALUES ('regress_tv_ben'), ('regress_tv_out')) AS r(who),
	   (VALUES ('ann_a1', :ann_a1), ('amy_a', :amy_a)) AS j(job, id)
 ORDER BY 1, 2;
SET ROLE regress_tv_ann;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :amy_open)) AS tv_open_other;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :ben_b)) AS other_team;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :admin_ghost)) AS ghost_share;
-- no such job: P0002, as before
SELECT pg_temp.refused('SELECT quota_sched.explain(-1)') AS no_such_job;
RESET ROLE;

------------------------------------------------------------------------
-- Reprioritise: a teammate's job, yes; others' jobs: no row touched.
------------------------------------------------------------------------
SET ROLE regress_tv_amy;
WITH u AS (UPDATE quota_sched.job SET priority = 5 WHERE id = :ann_a1 RETURNING name, priority)
SELECT * FROM u;
-- only priority changes, for team members too
SELECT pg_temp.refused(format('UPDATE quota_sched.job SET payload = %L WHERE id = %s',
							  '{}', :ann_a1)) AS other_column;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE id IN (:ben_b, :amy_open) RETURNING 1)
SELECT count(*) AS rows_updated_own_only FROM u;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE id = :ben_b RETURNING 1)
SELECT count(*) AS rows_updated_other_team FROM u;
RESET ROLE;
SET ROLE regress_tv_ann;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE id = :amy_open RETURNING 1)
SELECT count(*) AS rows_updated_tv_open_other FROM u;
RESET ROLE;
SET ROLE regress_tv_out;
WITH u AS (UPDATE quota_sched.job SET priority = 9 WHERE quota_share IN ('tv_a', 'tv_b') RETURNING 1)
SELECT count(*) AS rows_updated_outsider FROM u;
RESET ROLE;
SET ROLE regress_tv_bea;
WITH u AS (UPDATE quota_sched.job SET priority = 3 WHERE quota_share = 'tv_b' RETURNING name)
SELECT name FROM u ORDER BY name;
RESET ROLE;
SELECT name, priority FROM quota_sched.job WHERE job_queue = 'tv_queue' ORDER BY name;

------------------------------------------------------------------------
-- Terminate: another team, the outsider and a tv_open job of another
-- user: 42501 and nothing changes.  A teammate's RUNNABLE job fails at
-- once and a running one gets its stop; the history names who did it.
------------------------------------------------------------------------
SELECT pg_temp.tv_facts() AS tv_facts \gset
SELECT r.who, j.job,
	   pg_temp.refused_as(r.who, format('SELECT quota_sched.terminate(%s)', j.id)) AS outcome
  FROM (VALUES ('regress_tv_ben'), ('regress_tv_out')) AS r(who),
	   (VALUES ('ann_a1', :ann_a1), ('ann_a2', :ann_a2)) AS j(job, id)
 ORDER BY 1, 2;
SELECT pg_temp.tv_facts() = :'tv_facts' AS nothing_changed;
SET ROLE regress_tv_ann;
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :amy_open)) AS tv_open_other,
	   pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :bea_b)) AS other_team,
	   pg_temp.tv_facts() = :'tv_facts' AS nothing_changed;
RESET ROLE;
SET ROLE regress_tv_amy;
SELECT name, state FROM quota_sched.job WHERE id IN (:ann_a1, :ann_a2) ORDER BY name;
SELECT name, state, stop_reason FROM quota_sched.terminate(:ann_a1, 'amy cleans up');
SELECT name, state, status_reason FROM quota_sched.terminate(:ann_a2, 'amy cleans up');
RESET ROLE;
SET ROLE regress_tv_ben;
SELECT name, state, stop_reason FROM quota_sched.terminate(:bea_b, 'ben cleans up');
RESET ROLE;
-- The agent stops the running ones.
SET ROLE regress_tv_agent;
SELECT name, state, status_reason FROM quota_sched.report(:ann_a1, 'tv_agent', 'STOPPED');
SELECT name, state, status_reason FROM quota_sched.report(:bea_b, 'tv_agent', 'STOPPED');
RESET ROLE;
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name IN ('ann_a1', 'ann_a2', 'bea_b') AND e.to_state = 'FAILED' ORDER BY j.name, e.id;

------------------------------------------------------------------------
-- Leaving the team: ann keeps her own jobs in tv_a (history, explain,
-- priority, terminate) and loses amy's and sam's; her teammates still see
-- hers, through the share.
------------------------------------------------------------------------
REVOKE regress_tv_team_a FROM regress_tv_ann;
SELECT pg_temp.tv_seen('regress_tv_ann') AS ann_sees;
SET ROLE regress_tv_ann;
SELECT e ->> 'state' AS own_job_state FROM quota_sched.explain(:ann_a3) AS e;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :amy_a)) AS former_teammate;
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s)', :amy_a)) AS former_teammate;
WITH u AS (UPDATE quota_sched.job SET priority = 1
			WHERE quota_share = 'tv_a' AND state = 'RUNNABLE' RETURNING name)
SELECT name FROM u ORDER BY name;
SELECT name, state, status_reason FROM quota_sched.terminate(:ann_a3, 'ann left');
RESET ROLE;
SELECT pg_temp.tv_seen('regress_tv_amy') AS amy_sees;

------------------------------------------------------------------------
-- Visibility follows the share's submit_role as it is now: team B's
-- share opened to everyone makes it "own jobs only" for ben and bea.
------------------------------------------------------------------------
UPDATE quota_sched.quota_share SET submit_role = NULL WHERE job_queue = 'tv_queue' AND name = 'tv_b';
SELECT pg_temp.tv_seen('regress_tv_ben') AS ben_sees;
SET ROLE regress_tv_ben;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :bea_b)) AS former_team_job;
RESET ROLE;

-- queue_snapshot still lists every job of the queue for every user, with
-- the names of those the user sees in quota_sched.job only: its own for a
-- user of no team, its team's and its own for a team member (as tv_seen
-- lists them); all for an admin.
SET ROLE regress_tv_out;
SELECT count(*) AS snapshot_rows, count(name) AS named FROM quota_sched.queue_snapshot('tv_queue');
RESET ROLE;
SET ROLE regress_tv_amy;
SELECT s.quota_share, count(*) AS snapshot_rows, string_agg(s.name, ', ' ORDER BY s.name) AS named
  FROM quota_sched.queue_snapshot('tv_queue') s GROUP BY 1 ORDER BY 1;
RESET ROLE;
SELECT pg_temp.tv_seen('regress_tv_amy') AS amy_sees;
SET ROLE regress_tv_admin;
SELECT count(*) AS snapshot_rows, count(name) AS named FROM quota_sched.queue_snapshot('tv_queue');
RESET ROLE;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'tv_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'tv_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'tv_env';
DROP FUNCTION pg_temp.tv_seen(text);
DROP FUNCTION pg_temp.refused_as(text, text);
DROP FUNCTION pg_temp.tv_facts();
DROP ROLE regress_tv_ann, regress_tv_amy, regress_tv_sam, regress_tv_ben, regress_tv_bea,
	regress_tv_out, regress_tv_admin, regress_tv_agent, regress_tv_sub_a,
	regress_tv_team_a, regress_tv_team_b;
