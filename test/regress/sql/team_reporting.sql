-- Team reporting (issue 11, item 7; issue 22, item 4): what each role
-- sees of the reports.  Every role sees every share in utilization(), as
-- in share_usage (reference.md, "What a team sees of another"); a team's
-- members see their team's jobs in job_accounting; of a share without a
-- submit_role each user sees only their own jobs; admins and agents see
-- everything; metrics() is for admins and monitoring only.  Shares:
--   tr_a     submit_role regress_tr_team_a (ann, amy)
--   tr_b     submit_role regress_tr_team_b (ben)
--   tr_open  no submit_role
-- Times and figures depend on the clock: only who sees what is printed.

CREATE ROLE regress_tr_team_a NOLOGIN;
CREATE ROLE regress_tr_team_b NOLOGIN;
CREATE ROLE regress_tr_ann NOLOGIN IN ROLE quota_sched_user, regress_tr_team_a;
CREATE ROLE regress_tr_amy NOLOGIN IN ROLE quota_sched_user, regress_tr_team_a;
CREATE ROLE regress_tr_ben NOLOGIN IN ROLE quota_sched_user, regress_tr_team_b;
CREATE ROLE regress_tr_out NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_tr_admin NOLOGIN IN ROLE quota_sched_admin;
CREATE ROLE regress_tr_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_tr_agent', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('tr_env', '{"gpu": 6}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('tr_queue', 'tr_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role) VALUES
	('tr_queue', 'tr_a', '{"gpu": 2}', 'RESERVE', 'regress_tr_team_a'),
	('tr_queue', 'tr_b', '{"gpu": 2}', 'RESERVE', 'regress_tr_team_b'),
	('tr_queue', 'tr_open', '{"gpu": 2}', 'RESERVE', NULL);

SET ROLE regress_tr_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('ann_a', 'tr_queue', 'tr_a', 'gpu'), ('ann_open', 'tr_queue', 'tr_open', 'gpu');
SET ROLE regress_tr_amy;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('amy_a', 'tr_queue', 'tr_a', 'gpu');
SET ROLE regress_tr_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('ben_b', 'tr_queue', 'tr_b', 'gpu'), ('ben_open', 'tr_queue', 'tr_open', 'gpu');
SET ROLE regress_tr_out;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('out_open', 'tr_queue', 'tr_open', 'gpu');
RESET ROLE;
-- Every job runs; ann_a ends.
SELECT count(*) AS dispatched FROM quota_sched.run_pass('tr_queue');
SELECT count(*) AS claimed FROM quota_sched.claim('tr_agent', 'tr_queue', max_jobs => 10, start => true);
SELECT (quota_sched.report(id, 'tr_agent', 'SUCCEEDED', exit_code => 0)).state
  FROM quota_sched.job WHERE name = 'ann_a';

-- pg_temp.seen_as(who): what role who sees: the shares of utilization()
-- (the environment's row as "env"), and the jobs of job_accounting with
-- their instance-seconds known.
CREATE FUNCTION pg_temp.seen_as(who text) RETURNS TABLE (report text, seen text)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SET ROLE %I', who);
	RETURN QUERY
	SELECT 'utilization', string_agg(DISTINCT coalesce(u.quota_share, 'env'), ' ')
	  FROM quota_sched.utilization('tr_queue', date_trunc('hour', now()),
								   date_trunc('hour', now()) + interval '1 hour') u;
	RETURN QUERY
	SELECT 'job_accounting', string_agg(a.name || CASE WHEN a.instance_seconds >= 0 THEN '' ELSE '?' END,
										' ' ORDER BY a.name)
	  FROM quota_sched.job_accounting a WHERE a.job_queue = 'tr_queue';
	RESET ROLE;
END
$$;
SELECT who, r.report, r.seen
  FROM unnest(ARRAY['regress_tr_ann', 'regress_tr_amy', 'regress_tr_ben', 'regress_tr_out',
					'regress_tr_admin', 'regress_tr_agent']) AS who,
	   pg_temp.seen_as(who) AS r;

-- A team's figures as its members read them: the team's jobs, per share
-- (what Slurm's sacct -A gives an account's members).
SET ROLE regress_tr_amy;
SELECT quota_share, count(*) AS jobs, count(*) FILTER (WHERE state = 'SUCCEEDED') AS succeeded,
	   sum(attempts) AS attempts, min(last_exit_code) AS last_exit_code
  FROM quota_sched.job_accounting WHERE job_queue = 'tr_queue' GROUP BY 1 ORDER BY 1;
RESET ROLE;

-- Cancellations apart from failures (issue 22, item 2): ben terminates
-- ben_b while it runs (its agent reports it stopped) and ben_wait,
-- dispatched but not claimed (it fails at once); amy_a fails by itself.  A
-- team's report counts tr_a's failure as failed, tr_b's cancellations as
-- terminated (utilization(), job_accounting), as each team reads it.
SET ROLE regress_tr_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('ben_wait', 'tr_queue', 'tr_b', 'gpu');
RESET ROLE;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('tr_queue');
SET ROLE regress_tr_ben;
SELECT name, state, agent IS NULL AS unclaimed, stop_reason
  FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'ben_wait'), 'not needed');
SELECT name, state, stop_reason
  FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'ben_b'), 'wrong data');
RESET ROLE;
SELECT name, state, status_reason
  FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'ben_b'), 'tr_agent', 'STOPPED');
SELECT name, state, status_reason
  FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'amy_a'), 'tr_agent', 'FAILED',
						  exit_code => 1);
CREATE FUNCTION pg_temp.ended_as(who text)
RETURNS TABLE (report text, share text, failed numeric, terminated numeric)
LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SET ROLE %I', who);
	RETURN QUERY
	SELECT 'utilization', coalesce(u.quota_share, 'env'), sum(u.failed), sum(u.terminated)
	  FROM quota_sched.utilization('tr_queue', date_trunc('hour', now()) - interval '1 day',
								   date_trunc('hour', now()) + interval '1 hour', '25 hours') u
	 GROUP BY 2;
	RETURN QUERY
	SELECT 'job_accounting', a.quota_share,
		   count(*) FILTER (WHERE a.state = 'FAILED' AND NOT a.terminated)::numeric,
		   count(*) FILTER (WHERE a.terminated)::numeric
	  FROM quota_sched.job_accounting a WHERE a.job_queue = 'tr_queue' GROUP BY 2;
	RESET ROLE;
END
$$;
SELECT who, r.* FROM unnest(ARRAY['regress_tr_amy', 'regress_tr_ben', 'regress_tr_admin']) AS who,
	   pg_temp.ended_as(who) AS r ORDER BY 1, 2, 3;
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
DELETE FROM quota_sched.job WHERE job_queue = 'tr_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'tr_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'tr_env';
DROP ROLE regress_tr_team_a, regress_tr_team_b, regress_tr_ann, regress_tr_amy, regress_tr_ben,
	regress_tr_out, regress_tr_admin, regress_tr_agent;
