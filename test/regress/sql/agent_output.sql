-- A job's own output (issue 21): what the agent that runs an attempt says
-- of it (attempt_started: host, log file, handle; report and release: exit
-- code, the last of its output), in job_attempt, and who reads it (the
-- view job_attempts): the job's owner and team, admins; not another team,
-- not an agent.  The bounds of what is sent, the identity checks of
-- report(), and the rows going with their pruned job.  Refusals are shown
-- as "SQLSTATE: message"; ids and times are not printed.
\i test/regress/include/helpers.sql
SET TimeZone = 'UTC';

CREATE ROLE regress_ao_team_a NOLOGIN;
CREATE ROLE regress_ao_team_b NOLOGIN;
CREATE ROLE regress_ao_ann NOLOGIN IN ROLE quota_sched_user, regress_ao_team_a;
CREATE ROLE regress_ao_amy NOLOGIN IN ROLE quota_sched_user, regress_ao_team_a;
CREATE ROLE regress_ao_ben NOLOGIN IN ROLE quota_sched_user, regress_ao_team_b;
CREATE ROLE regress_ao_admin NOLOGIN IN ROLE quota_sched_admin;
CREATE ROLE regress_ao_agent NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_ao_other NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ao_agent', NULL), ('regress_ao_other', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ao_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ao_queue', 'ao_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role) VALUES
	('ao_queue', 'ao_a', '{"gpu": 2}', 'RESERVE', 'regress_ao_team_a'),
	('ao_queue', 'ao_b', '{"gpu": 2}', 'RESERVE', 'regress_ao_team_b');
SET ROLE regress_ao_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts)
VALUES ('ao_job', 'ao_queue', 'ao_a', 'gpu', 2);
SET ROLE regress_ao_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ao_b_job', 'ao_queue', 'ao_b', 'gpu');
RESET ROLE;
SELECT id AS job_id FROM quota_sched.job WHERE name = 'ao_job' \gset
SELECT id AS b_id FROM quota_sched.job WHERE name = 'ao_b_job' \gset

SELECT count(*) AS dispatched FROM quota_sched.run_pass('ao_queue');
SET ROLE regress_ao_agent;
SELECT name, state FROM quota_sched.claim('ao_agent', 'ao_queue', max_jobs => 2, start => true)
 ORDER BY name;

-- The attempt starts: host and log file; the row is the attempt's.
SELECT attempt, agent, host, log_path, handle, exit_code, output, started_at IS NOT NULL AS started,
	   ended_at
  FROM quota_sched.attempt_started(:job_id, 'ao_agent', 1, 'gpu-host-1',
								   '/var/lib/quota-sched-agent/logs/1/attempt-1.log');
SELECT host FROM quota_sched.attempt_started(:b_id, 'ao_agent', 1, 'gpu-host-2', NULL);

-- Bounds: host 255 bytes, log_path 4096, handle 1024 (54000); no control
-- characters, not empty (22023); an attempt from 1, not null (22023).
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, %L, NULL)$$,
							  :job_id, repeat('h', 256)));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, %L)$$,
							  :job_id, repeat('p', 4097)));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, %L)$$,
							  :job_id, repeat('x', 1025)));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, %L, NULL)$$,
							  :job_id, E'gpu\nhost'));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, %L)$$,
							  :job_id, E'\x1b[31m'));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, '', NULL)$$,
							  :job_id));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 0, 'h', NULL)$$,
							  :job_id));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', NULL, 'h', NULL)$$,
							  :job_id));
SELECT pg_temp.refused($$SELECT quota_sched.attempt_started(-1, 'ao_agent', 1, 'h', NULL)$$);
-- an attempt that is over, or not begun: a no-op (null)
SELECT quota_sched.attempt_started(:job_id, 'ao_agent', 2, 'gpu-host-9', NULL) IS NULL AS no_op;

-- Identity: another login may not write about the job (42501), another
-- agent name of the same login holds nothing (55000).
SET ROLE regress_ao_other;
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, 'evil', NULL)$$,
							  :job_id));
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'ao_agent', 'FAILED', attempt => 1, output => 'evil')$$,
							  :job_id));
SELECT pg_temp.refused(format($$SELECT quota_sched.release(%s, 'ao_agent', 'evil', 'evil')$$,
							  :job_id));
SET ROLE regress_ao_agent;
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_other_agent', 1, 'evil', NULL)$$,
							  :job_id));

-- The handle, once the start command printed it: the rest stays.
SELECT host, log_path, handle
  FROM quota_sched.attempt_started(:job_id, 'ao_agent', 1, NULL, NULL, 'arn:aws:sagemaker:job/ao-1');

-- The devices the agent gave the part (its --devices): kept by a null,
-- each name 1 to 128 bytes without control characters, 1 to 256 of them,
-- none null (22004) or twice, one dimension (22023); nothing stored.
SELECT host, handle, devices
  FROM quota_sched.attempt_started(:job_id, 'ao_agent', 1, NULL, NULL, devices => ARRAY['2', '3']);
SELECT devices FROM quota_sched.attempt_started(:job_id, 'ao_agent', 1, NULL, NULL);
SELECT devices
  FROM quota_sched.attempt_started(:b_id, 'ao_agent', 1, NULL, NULL,
								   devices => ARRAY['GPU-8d3f5a2e-1c4b-4e2a-9f0d-3b6c7a1e2f40']);
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, devices => %L)$$,
							  :job_id, x.d))
  FROM (VALUES ('{}'), ('{0,NULL}'), ('{0,0}'), ('{""}'), ('{{0,1},{2,3}}')) x(d);
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, devices => %L)$$,
							  :job_id, ARRAY[repeat('g', 129)]));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, devices => %L)$$,
							  :job_id, ARRAY[E'GPU\n0']));
SELECT pg_temp.refused(format($$SELECT quota_sched.attempt_started(%s, 'ao_agent', 1, NULL, NULL, devices => %L)$$,
							  :job_id, (SELECT array_agg(i::text) FROM generate_series(0, 256) i)));
SELECT devices AS still FROM quota_sched.attempt_started(:job_id, 'ao_agent', 1, NULL, NULL);

-- Output: with RUNNING it is refused (22023); over 65536 bytes too (54000).
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'ao_agent', 'RUNNING', output => 'x')$$,
							  :job_id));
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'ao_agent', 'FAILED', attempt => 1, output => %L)$$,
							  :job_id, repeat('x', 65537)));
-- The attempt fails with exit code 3 and 6000 bytes of output, in
-- two-byte characters: the last 4096 bytes at most are kept, whole
-- characters.
SELECT state, failed_attempts
  FROM quota_sched.report(:job_id, 'ao_agent', 'FAILED', 'exit code 3', attempt => 1,
						  exit_code => 3, output => 'first line' || repeat('é', 3000) || E'\nlast line\n');
RESET ROLE;
SELECT attempt, host, log_path, handle, exit_code, octet_length(output) AS bytes,
	   right(output, 11) AS tail, left(output, 1) AS head, ended_at IS NOT NULL AS ended
  FROM quota_sched.job_attempt WHERE job_id = :job_id ORDER BY attempt;
-- a retry of that report (a lost reply) changes nothing
SET ROLE regress_ao_agent;
SELECT state, failed_attempts
  FROM quota_sched.report(:job_id, 'ao_agent', 'FAILED', 'exit code 3', attempt => 1,
						  exit_code => 3, output => 'retried');
RESET ROLE;
SELECT attempt, right(output, 10) AS tail FROM quota_sched.job_attempt WHERE job_id = :job_id;

-- Attempt 2 runs and is released (the agent shut down): its output is
-- kept; run again under the same number (no attempt counted), the row
-- starts anew.
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ao_queue');
SET ROLE regress_ao_agent;
SELECT name, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('ao_agent', 'ao_queue', start => true);
SELECT attempt, host FROM quota_sched.attempt_started(:job_id, 'ao_agent', 2, 'gpu-host-1', '/l/2');
SELECT state FROM quota_sched.release(:job_id, 'ao_agent', 'agent shut down', E'partial\n');
RESET ROLE;
SELECT attempt, host, exit_code, right(output, 8) AS output, ended_at IS NOT NULL AS ended
  FROM quota_sched.job_attempt WHERE job_id = :job_id ORDER BY attempt;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ao_queue');
SET ROLE regress_ao_agent;
SELECT name, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('ao_agent2', 'ao_queue', start => true);
SELECT attempt, agent, host, output, ended_at
  FROM quota_sched.attempt_started(:job_id, 'ao_agent2', 2, 'gpu-host-3', '/l/2b');
-- an agent of 0.2 reports without output: the exit code is kept
SELECT state FROM quota_sched.report(:job_id, 'ao_agent2', 'SUCCEEDED', NULL, 2, 0);
-- ao_b_job's output tries to take over its reader's terminal (issue 37,
-- item 4): a window title, a clipboard write, a clear screen, a carriage
-- return that draws a fake prompt over its line, a C1 CSI and a
-- right-to-left override, after 1400 ESC.  The text, newlines and tabs
-- are kept; each C0 control shows as its picture (ESC as U+241B, three
-- bytes), a carriage return as a newline, the C1 control and the override
-- as U+FFFD; what is kept is at most 4096 bytes, cut at a character.
SELECT state FROM quota_sched.report(:b_id, 'ao_agent', 'SUCCEEDED', attempt => 1, exit_code => 0,
	output => repeat(E'\x1b', 1400)
			  || E'b done\n\x1b]0;owned\x07\x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b[Hstep\t1\r\n'
			  || E'loss 0.5\r$ sudo rm -rf / ' || U&'\009B31m \202Esdrawkcab' || E'\x7f\n');
RESET ROLE;
SELECT substr(output, strpos(output, 'b done')) AS output, octet_length(output) AS bytes,
	   left(output, 1) AS head, output !~ E'[\\x01-\\x08\\x0b-\\x1f\\x7f]' AS no_c0_but_newline_and_tab
  FROM quota_sched.job_attempt WHERE job_id = :b_id;

-- Who sees what: the owner and her team see their job's attempts; the
-- other team sees nothing of them (and its own); an admin sees all; an
-- agent may not read the table or the view.
CREATE FUNCTION pg_temp.ao_seen(who text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	seen text;
BEGIN
	EXECUTE format('SET ROLE %I', who);
	SELECT coalesce(string_agg(name || '#' || attempt || ':' || coalesce(exit_code::text, '-')
							   || ':' || coalesce(host, '-'), ' ' ORDER BY name, attempt), '-')
	  INTO seen FROM quota_sched.job_attempts WHERE job_queue = 'ao_queue';
	seen := seen || ' / table: ' || (SELECT count(*) FROM quota_sched.job_attempt a
									  WHERE a.job_id IN (SELECT id FROM quota_sched.job
														  WHERE job_queue = 'ao_queue')
										 OR a.agent LIKE 'ao\_%');
	RESET ROLE;
	RETURN seen;
END
$$;
SELECT who, pg_temp.ao_seen(who) AS seen
  FROM unnest(ARRAY['regress_ao_ann', 'regress_ao_amy', 'regress_ao_ben', 'regress_ao_admin']) who;
SET ROLE regress_ao_ben;
SELECT count(*) AS ben_sees_ao_job FROM quota_sched.job_attempt WHERE job_id = :job_id;
SELECT count(*) AS ben_sees_ao_job FROM quota_sched.job_attempts WHERE job_id = :job_id;
SET ROLE regress_ao_agent;
SELECT pg_temp.refused('SELECT * FROM quota_sched.job_attempt');
SELECT pg_temp.refused('SELECT * FROM quota_sched.job_attempts');
-- nobody writes the table but the functions
SET ROLE regress_ao_admin;
SELECT pg_temp.refused(format($$UPDATE quota_sched.job_attempt SET output = 'x' WHERE job_id = %s$$, :job_id));
SELECT pg_temp.refused(format($$DELETE FROM quota_sched.job_attempt WHERE job_id = %s$$, :job_id));
SET ROLE regress_ao_ann;
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job_attempt (job_id, attempt, agent) VALUES (%s, 9, 'x')$$, :job_id));
RESET ROLE;

-- Pruning: the attempts of a deleted job go with it (prune() deletes
-- ended jobs as an admin's DELETE does, once the rollup covers them; the
-- superuser's DELETE here skips that wait, the trigger is the same); a
-- TRUNCATE of jobs takes them all (undone here).
BEGIN;
TRUNCATE quota_sched.job;
SELECT count(*) AS after_truncate FROM quota_sched.job_attempt;
ROLLBACK;
DELETE FROM quota_sched.job WHERE id = :job_id;
SELECT job_id = :job_id AS pruned_job, count(*) FROM quota_sched.job_attempt
 WHERE job_id IN (:job_id, :b_id) GROUP BY 1 ORDER BY 1;

SELECT * FROM quota_sched.held_capacity_drift();
DELETE FROM quota_sched.job_queue WHERE name = 'ao_queue';
SELECT count(*) AS left_over FROM quota_sched.job_attempt WHERE job_id IN (:job_id, :b_id);
DELETE FROM quota_sched.service_environment WHERE name = 'ao_env';
DROP ROLE regress_ao_ann, regress_ao_amy, regress_ao_ben, regress_ao_admin, regress_ao_agent,
	regress_ao_other, regress_ao_team_a, regress_ao_team_b;
