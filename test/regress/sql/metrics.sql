-- metrics() (issue 11, item 6): the Prometheus text format, line by line;
-- its gauges against share_usage; its counters against the history, the
-- same after a rollup and after the history is pruned; passes counted
-- (dry runs not); who may read it.
SET TimeZone = 'UTC';
\i test/regress/include/helpers.sql
-- The samples of metrics(), one row each: metric, labels, value.
CREATE FUNCTION pg_temp.samples() RETURNS TABLE (metric text, labels text, value numeric)
LANGUAGE sql AS $$
	SELECT m[1], coalesce(m[2], ''), m[3]::numeric
	  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l(line),
		   regexp_match(l.line, '^([a-z_]+)(\{[^}]*\})? (\S+)$') AS m
	 WHERE l.line !~ '^#' AND l.line <> ''
$$;
CREATE FUNCTION pg_temp.sample(name text, lbl text) RETURNS numeric LANGUAGE sql AS $$
	SELECT value FROM pg_temp.samples() WHERE metric = name AND labels = lbl
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('m_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('m_queue', 'm_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('m_queue', 'A', '{"gpu": 2}', 'LEND_AND_BORROW', -1);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('m_queue', 'B', '{"gpu": 2}', 'LEND');

-- A borrows one of B's instances; then B's job takes it back.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'a' || i, 'm_queue', 'A', 'gpu' FROM generate_series(1, 4) i;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('m_queue') WHERE action = 'DISPATCH';
SELECT count(*) AS dry_run_decisions FROM quota_sched.run_pass('m_queue', dry_run => true);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('b1', 'm_queue', 'B', 'gpu');
SELECT action, quota_share, reason FROM quota_sched.run_pass('m_queue') ORDER BY action;
SELECT count(*) AS claimed FROM quota_sched.claim('m_agent', 'm_queue', max_jobs => 10);
SELECT name, (quota_sched.report(id, 'm_agent', 'RUNNING')).state FROM quota_sched.job
 WHERE job_queue = 'm_queue' AND state = 'STARTING' ORDER BY name;

-- The gauges of m_queue's shares (A borrows one of B's instances),
-- against share_usage.
SELECT metric, labels, value FROM pg_temp.samples()
 WHERE labels LIKE '%"m_queue"%' AND metric LIKE 'quota_sched_share_%'
   AND metric <> 'quota_sched_share_longest_wait_seconds' ORDER BY 1, 2;
-- the longest wait (0.3): A's waiting job was preempted, so it has waited
-- since its stop, not since it was queued (its queued_at is kept); now()
-- is the transaction's, in metrics() as here.  B has none waiting: 0.
SELECT u.quota_share, pg_temp.sample('quota_sched_share_longest_wait_seconds',
		format('{job_queue="m_queue",quota_share="%s",capacity_unit="gpu"}', u.quota_share))
	   = coalesce(round(extract(epoch FROM now() - u.waiting_since), 3), 0) AS longest_wait_right,
	   u.waiting_since = w.stopped AS since_its_stop, u.waiting_since > w.queued AS not_since_queued,
	   u.waiting_since IS NULL AS none_waits
  FROM quota_sched.share_usage u,
	   LATERAL (SELECT min(stopped_at) AS stopped, min(queued_at) AS queued FROM quota_sched.job
				 WHERE state = 'RUNNABLE' AND job_queue = u.job_queue AND quota_share = u.quota_share) w
 WHERE u.job_queue = 'm_queue' ORDER BY 1;
SELECT count(*) AS differing
  FROM quota_sched.share_usage u,
	   LATERAL (VALUES ('capacity', u.max_capacity), ('in_use', u.in_use), ('borrowed', u.borrowed),
					   ('idle', u.idle), ('lendable', u.lendable),
					   ('runnable_jobs', u.runnable_jobs)) AS g(k, v)
 WHERE u.job_queue = 'm_queue'
   AND pg_temp.sample('quota_sched_share_' || g.k || CASE WHEN g.k = 'runnable_jobs' THEN '' ELSE '_instances' END,
					  format('{job_queue="%s",quota_share="%s",capacity_unit="%s"}',
							 u.job_queue, u.quota_share, u.capacity_unit)) IS DISTINCT FROM g.v;
SELECT name, (quota_sched.report(id, 'm_agent', 'SUCCEEDED', exit_code => 0)).state
  FROM quota_sched.job WHERE name = 'a1';
SELECT name, (quota_sched.report(id, 'm_agent', 'FAILED', exit_code => 2)).state
  FROM quota_sched.job WHERE name = 'a2';

-- Every line is a HELP, a TYPE or a sample; the samples of a metric follow
-- its HELP and TYPE; every counter's name ends in _total; no metric comes
-- twice.
WITH lines AS (
	SELECT n, line FROM regexp_split_to_table(quota_sched.metrics(), E'\n') WITH ORDINALITY AS l(line, n)),
kinds AS (
	SELECT n, line,
		   CASE WHEN line ~ '^# HELP [a-z_]+ \S.*$' THEN 'help'
				WHEN line ~ '^# TYPE [a-z_]+ (counter|gauge)$' THEN 'type'
				WHEN line ~ '^[a-z_]+(\{[a-z_]+="([^"\\]|\\.)*"(,[a-z_]+="([^"\\]|\\.)*")*\})? -?[0-9]+(\.[0-9]+)?(e[-+][0-9]+)?$'
					THEN 'sample'
				WHEN line = '' THEN 'end' END AS kind,
		   (regexp_match(line, '^(?:# (?:HELP|TYPE) )?([a-z_]+)'))[1] AS metric
	  FROM lines)
SELECT 'malformed' AS problem, line FROM kinds WHERE kind IS NULL
UNION ALL
SELECT 'not last', line FROM kinds WHERE kind = 'end' AND n <> (SELECT max(n) FROM kinds)
UNION ALL
SELECT 'sample before its TYPE', k.line FROM kinds k
 WHERE k.kind = 'sample'
   AND NOT EXISTS (SELECT FROM kinds t WHERE t.kind = 'type' AND t.metric = k.metric AND t.n < k.n
					  AND NOT EXISTS (SELECT FROM kinds o WHERE o.n > t.n AND o.n < k.n
										 AND o.kind <> 'end' AND o.metric <> k.metric))
UNION ALL
SELECT 'counter without _total', line FROM kinds WHERE kind = 'type' AND line ~ 'counter$' AND metric !~ '_total$'
UNION ALL
SELECT 'TYPE twice', metric FROM kinds WHERE kind = 'type' GROUP BY metric HAVING count(*) > 1;

SELECT metric, labels, value FROM pg_temp.samples()
 WHERE labels LIKE '%"m_env"%' OR (labels LIKE '%"m_queue"%' AND metric ~ '_total$') ORDER BY 1, 2;

-- Passes: the two passes of m_queue so far (not the dry run), then one more.
SELECT pg_temp.sample('quota_sched_passes_total', '{job_queue="m_queue"}') AS passes;
SELECT clock_timestamp() AS before_pass \gset
SELECT count(*) AS decisions FROM quota_sched.run_pass('m_queue');
SELECT pg_temp.sample('quota_sched_passes_total', '{job_queue="m_queue"}') AS passes,
	   pg_temp.sample('quota_sched_last_pass_duration_seconds', '{job_queue="m_queue"}') BETWEEN 0 AND 10
		   AS duration_plausible,
	   to_timestamp(pg_temp.sample('quota_sched_last_pass_timestamp_seconds', '{job_queue="m_queue"}'))
		   BETWEEN :'before_pass' AND clock_timestamp() AS ended_after_before_pass;
-- The worker is off here (quota_sched.enabled is off, and its database is
-- another): it is down, and nothing else of it is shown.
SELECT metric, labels, value FROM pg_temp.samples() WHERE metric LIKE 'quota_sched_worker%';

-- Cancellations apart from failures (issue 22, item 2): a3 is terminated
-- while it runs (its agent reports it stopped), a5 while it waits (it
-- fails at once): A's jobs_terminated_total is 2, its jobs_failed_total
-- stays 1 (a2), and a stop TERMINATED is counted for a3 only.
SELECT name, (quota_sched.terminate(id, 'not needed')).stop_reason FROM quota_sched.job WHERE name = 'a3';
SELECT name, (quota_sched.report(id, 'm_agent', 'STOPPED')).state FROM quota_sched.job WHERE name = 'a3';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('a5', 'm_queue', 'A', 'gpu');
SELECT name, (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'a5';
SELECT metric, labels, value FROM pg_temp.samples()
 WHERE labels LIKE '%"m_queue"%'
   AND metric IN ('quota_sched_jobs_failed_total', 'quota_sched_jobs_terminated_total',
				  'quota_sched_stop_requests_total')
 ORDER BY 1, 2;

-- The counters stay what they were after a rollup and after a prune.  A
-- history written directly, in hours long past (jobs 9101 and 9102 exist
-- only in it): a dispatch, a cross-share stop, a preemption, a success, a
-- failure, a user's terminate, a preemption 30 s after a dispatch.
-- The counters of m_queue's jobs (not of its passes).
CREATE FUNCTION pg_temp.job_counters() RETURNS TABLE (metric text, labels text, value numeric)
LANGUAGE sql AS $$
	SELECT * FROM pg_temp.samples()
	 WHERE labels LIKE '%"m_queue"%' AND metric ~ '_total$' AND metric <> 'quota_sched_passes_total'
$$;
CREATE TEMP TABLE counters_live AS SELECT * FROM pg_temp.job_counters();
CREATE FUNCTION pg_temp.ev(job bigint, share text, t text, kind text, f text, s text,
						   reason text DEFAULT NULL, pf bigint DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt,
									   priority, reason, preempted_for)
	VALUES (job, ('2026-01-01 ' || t || '+00')::timestamptz, f, s, 'x', kind, 'm_queue', share,
			'gpu', 1, 1, 0, reason, pf)
$$;
SELECT pg_temp.ev(9101, 'A', '00:00', 'STATE', NULL, 'RUNNABLE'),
	   pg_temp.ev(9101, 'A', '00:10', 'STATE', 'RUNNABLE', 'SCHEDULED'),
	   pg_temp.ev(9101, 'A', '00:20', 'STOP', 'SCHEDULED', 'SCHEDULED', 'CROSS_SHARE_PREEMPTION', 9102),
	   pg_temp.ev(9101, 'A', '00:25', 'STATE', 'SCHEDULED', 'RUNNABLE', NULL, 9102),
	   pg_temp.ev(9101, 'A', '01:10', 'STATE', 'RUNNABLE', 'SCHEDULED'),
	   pg_temp.ev(9101, 'A', '01:40', 'STATE', 'SCHEDULED', 'SUCCEEDED'),
	   pg_temp.ev(9102, 'B', '00:15', 'STATE', NULL, 'RUNNABLE'),
	   pg_temp.ev(9102, 'B', '00:25', 'STATE', 'RUNNABLE', 'SCHEDULED'),
	   pg_temp.ev(9102, 'B', '01:30', 'TERMINATE', 'SCHEDULED', 'SCHEDULED', 'no longer needed'),
	   pg_temp.ev(9102, 'B', '01:35', 'STATE', 'SCHEDULED', 'FAILED'),
	   pg_temp.ev(9103, 'B', '00:30', 'STATE', NULL, 'RUNNABLE'),
	   pg_temp.ev(9103, 'B', '00:40', 'STATE', 'RUNNABLE', 'SCHEDULED'),
	   pg_temp.ev(9103, 'B', '00:40:30', 'STATE', 'SCHEDULED', 'RUNNABLE', NULL, 9101);
CREATE TEMP TABLE counters_before AS SELECT * FROM pg_temp.job_counters();
-- What the old history added: A 2 dispatches, 1 preempted (after 15
-- minutes), 1 success, 1 cross-share stop; B 2 dispatches, 1 termination
-- (not a failure), 1 stop TERMINATED, 1 preempted 30 s after its dispatch
-- (9103, by 9101: churn, preempted_early).
SELECT b.metric, b.labels, b.value - coalesce(l.value, 0) AS added
  FROM counters_before b LEFT JOIN counters_live l USING (metric, labels)
 WHERE b.value IS DISTINCT FROM l.value ORDER BY 1, 2;
SELECT quota_sched.rollup('2026-01-01 02:00+00') > 0 AS rolled_up;
SELECT counter, quota_share, value FROM quota_sched.usage_totals WHERE job_queue = 'm_queue' ORDER BY 1, 2;
SELECT count(*) AS differing FROM (
	(TABLE counters_before EXCEPT SELECT * FROM pg_temp.job_counters())
	UNION ALL
	(SELECT * FROM pg_temp.job_counters() EXCEPT TABLE counters_before)) d;
DELETE FROM quota_sched.job_event WHERE job_queue = 'm_queue' AND at < '2026-01-01 02:00+00';
SELECT count(*) AS differing FROM (
	(TABLE counters_before EXCEPT SELECT * FROM pg_temp.job_counters())
	UNION ALL
	(SELECT * FROM pg_temp.job_counters() EXCEPT TABLE counters_before)) d;
SELECT metric, labels, value FROM pg_temp.samples()
 WHERE metric = 'quota_sched_rollup_until_timestamp_seconds' AND labels LIKE '%"m_queue"%';

-- Label values are escaped as the format asks: a backslash, a double quote
-- and a newline.
SELECT quota_sched.metric_labels('a', E'x\\y"z\nw', 'b', '') AS labels;

-- Who may read it: admins and pg_monitor, not users or agents.
CREATE ROLE regress_m_user IN ROLE quota_sched_user;
CREATE ROLE regress_m_agent IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_m_agent', NULL);
CREATE ROLE regress_m_admin IN ROLE quota_sched_admin;
CREATE ROLE regress_m_monitor IN ROLE pg_monitor;
CREATE FUNCTION pg_temp.as_role(who text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	result text;
BEGIN
	EXECUTE format('SET ROLE %I', who);
	result := pg_temp.refused('SELECT quota_sched.metrics()');
	RESET ROLE;
	RETURN result;
END
$$;
SELECT who, pg_temp.as_role(who) FROM unnest(ARRAY['regress_m_user', 'regress_m_agent',
												  'regress_m_admin', 'regress_m_monitor']) AS who;

-- Clean up.
DROP ROLE regress_m_user, regress_m_agent, regress_m_admin, regress_m_monitor;
DELETE FROM quota_sched.job WHERE job_queue = 'm_queue';
DELETE FROM quota_sched.job_event WHERE job_queue = 'm_queue';
DELETE FROM quota_sched.usage_hourly WHERE job_queue = 'm_queue';
DELETE FROM quota_sched.usage_totals WHERE job_queue = 'm_queue';
DELETE FROM quota_sched.usage_rollup WHERE job_queue = 'm_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'm_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'm_env';
