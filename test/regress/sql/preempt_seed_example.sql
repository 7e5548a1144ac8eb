-- The seed example (scheduling.md 3, "Worked example"), step by step, with an agent claiming its
-- work and acknowledging stops (scheduling.md 3.2-3.6):
-- (1) QS1 submits high (3), med (2), low (1): high runs on QS1's own
--     capacity, med on capacity borrowed from QS2, low waits (QS3 reserves).
-- (2) QS2 submits qs2_job_1 (1): med is preempted across shares and, once
--     stopped, is RUNNABLE again; then qs2_job_1 runs.
-- (3) low is raised to priority 4: in-share preemption stops high, low runs,
--     high is RUNNABLE again.
CREATE FUNCTION pg_temp.pass(q text) RETURNS TABLE (job text, action text, quota_share text, reason text)
LANGUAGE sql AS $$
	SELECT j.name, p.action, p.quota_share, p.reason
	  FROM quota_sched.run_pass(q) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n
$$;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (name text, state text, stop_reason text,
	preempted_for text, promised boolean, preemption_count int)
LANGUAGE sql AS $$
	SELECT j.name, j.state, j.stop_reason, f.name, j.promised_at IS NOT NULL, j.preemption_count
	  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.preempted_for
	 WHERE j.job_queue = 'pre_queue' ORDER BY j.name
$$;
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'pre_queue'
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pre_env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pre_queue', 'pre_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('pre_queue', 'QS1', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 200, true),
	   ('pre_queue', 'QS2', '{"ml.g5.xlarge": 1}', 'LEND', -1, false),
	   ('pre_queue', 'QS3', '{"ml.g5.xlarge": 1}', 'RESERVE', -1, false);

-- (1)
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('qs1_job_high', 'pre_queue', 'QS1', 3, 'ml.g5.xlarge'),
	   ('qs1_job_med', 'pre_queue', 'QS1', 2, 'ml.g5.xlarge'),
	   ('qs1_job_low', 'pre_queue', 'QS1', 1, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('pre_queue');
SELECT name, state FROM quota_sched.claim('pre_agent', 'pre_queue', max_jobs => 10) ORDER BY name;
SELECT name, state FROM quota_sched.report(pg_temp.id('qs1_job_high'), 'pre_agent', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('qs1_job_med'), 'pre_agent', 'RUNNING');
SELECT quota_share, in_use, borrowed, idle, runnable_jobs FROM quota_sched.share_usage
 WHERE job_queue = 'pre_queue' ORDER BY quota_share;

-- (2) QS2 takes back the instance it lent.
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('qs2_job_1', 'pre_queue', 'QS2', 1, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('pre_queue');
SELECT * FROM pg_temp.jobs();
-- med's stop is pending: the counters of held capacity, stopping_instances too, must match the jobs.
SELECT * FROM quota_sched.held_capacity_drift();
-- the agent learns of the stop from its heartbeat (and the stop notification)
SELECT j.name, h.stop_reason FROM quota_sched.heartbeat('pre_agent') h
  JOIN quota_sched.job j ON j.id = h.job_id ORDER BY j.name;
SELECT jsonb_build_object('blocked_by', e -> 'blocked_by') AS qs2_job_1
  FROM quota_sched.explain(pg_temp.id('qs2_job_1')) e;
-- while med stops, nothing else happens
SELECT * FROM pg_temp.pass('pre_queue');
SELECT name, state, stop_reason, preemption_count, status_reason
  FROM quota_sched.report(pg_temp.id('qs1_job_med'), 'pre_agent', 'STOPPED');
SELECT * FROM pg_temp.pass('pre_queue');
SELECT * FROM pg_temp.jobs();
SELECT name, state FROM quota_sched.claim('pre_agent', 'pre_queue') ORDER BY name;
SELECT name, state FROM quota_sched.report(pg_temp.id('qs2_job_1'), 'pre_agent', 'RUNNING');

-- (3) low is raised above high: in-share preemption.
UPDATE quota_sched.job SET priority = 4 WHERE name = 'qs1_job_low';
SELECT * FROM pg_temp.pass('pre_queue');
SELECT * FROM pg_temp.jobs();
SELECT name, state, preemption_count
  FROM quota_sched.report(pg_temp.id('qs1_job_high'), 'pre_agent', 'STOPPED');
SELECT * FROM pg_temp.pass('pre_queue');
SELECT * FROM pg_temp.jobs();

-- The history of med: preempted once, attempt 2 waits.
SELECT e.kind, e.from_state, e.to_state, e.reason,
       CASE e.actor WHEN current_user THEN '(submitter)' ELSE e.actor END AS actor,
       e.pass_id IS NOT NULL AS by_pass
  FROM quota_sched.job_event e WHERE e.job_id = pg_temp.id('qs1_job_med') ORDER BY e.id;
SELECT dispatched, preempted, requeued, failed FROM quota_sched.pass_log
 WHERE job_queue = 'pre_queue' ORDER BY id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'pre_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'pre_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'pre_env';
