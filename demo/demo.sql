-- The seed example (AWS Batch quota management): one environment of three
-- ml.g5.xlarge instances, three shares of one instance each.  Preemption
-- (steps 2 and 3 of the example) comes with the next release.
\pset footer off
\echo '== configuration'
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ml-env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ml-queue', 'ml-env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('ml-queue', 'QS1', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 200, true),
	   ('ml-queue', 'QS2', '{"ml.g5.xlarge": 1}', 'LEND', -1, false),
	   ('ml-queue', 'QS3', '{"ml.g5.xlarge": 1}', 'RESERVE', -1, false);
SELECT name, capacity_limits, strategy, borrow_limit, in_share_preemption
  FROM quota_sched.quota_share ORDER BY name;

\echo '== team QS1 submits three jobs with INSERT'
CREATE ROLE team_qs1 IN ROLE quota_sched_user;
SET ROLE team_qs1;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload)
VALUES ('qs1_job_high', 'ml-queue', 'QS1', 3, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}'),
	   ('qs1_job_med',  'ml-queue', 'QS1', 2, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}'),
	   ('qs1_job_low',  'ml-queue', 'QS1', 1, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}');
SELECT id, name, owner, priority, capacity_unit, instance_count, state FROM quota_sched.job ORDER BY id;

\echo '== a bad submission is refused with a clear error, and nothing is stored'
\set ON_ERROR_STOP 0
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('too_urgent', 'ml-queue', 'QS1', 10000, 'ml.g5.xlarge');
\set ON_ERROR_STOP 1
RESET ROLE;

\echo '== one scheduling pass: high runs on QS1''s own capacity, med borrows QS2''s idle'
\echo '   instance, low waits because QS3 reserves its capacity (RESERVE never lends)'
SELECT j.name, p.action, p.quota_share
  FROM quota_sched.run_pass('ml-queue') WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
SELECT quota_share, max_capacity, allowed, in_use, borrowed, idle, runnable_jobs
  FROM quota_sched.share_usage ORDER BY quota_share;

\echo '== why is qs1_job_low not running?'
SELECT jsonb_pretty(quota_sched.explain(id) - 'job_id') AS explain
  FROM quota_sched.job WHERE name = 'qs1_job_low';

\echo '== a launcher agent claims its work, starts it, and one job finishes'
CREATE ROLE launcher IN ROLE quota_sched_agent;
SET ROLE launcher;
SELECT name, state, agent FROM quota_sched.claim('agent-1', 'ml-queue', max_jobs => 10) ORDER BY id;
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'qs1_job_high'),
	'agent-1', 'RUNNING');
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'qs1_job_high'),
	'agent-1', 'SUCCEEDED');
RESET ROLE;

\echo '== the next pass gives the freed instance to qs1_job_low'
SELECT j.name, p.action FROM quota_sched.run_pass('ml-queue') p JOIN quota_sched.job j ON j.id = p.job_id;

\echo '== history: one job_event row per change of state'
SELECT j.name, e.from_state, e.to_state, e.actor, e.pass_id IS NOT NULL AS by_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id ORDER BY e.id;
SELECT id, dispatched, preempted, requeued, failed FROM quota_sched.pass_log ORDER BY id;
