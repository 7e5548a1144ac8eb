-- The seed example (AWS Batch quota management): one environment of three
-- ml.g5.xlarge instances, three shares of one instance each; QS1 borrows,
-- QS2 takes its capacity back, QS1 reorders its own work by priority.
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

-- a second between the steps, so that the chart of the run (demo/run
-- draws it at the end, in buckets of a second, from the first whole
-- second after the configuration) shows each
DO $$ BEGIN PERFORM pg_sleep(1); END $$;

\echo '== step 1, one scheduling pass: high runs on QS1''s own capacity, med borrows QS2''s idle'
\echo '   instance, low waits because QS3 reserves its capacity (RESERVE never lends)'
SELECT j.name, p.action, p.quota_share
  FROM quota_sched.run_pass('ml-queue') WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
SELECT quota_share, max_capacity, allowed, in_use, borrowed, idle, runnable_jobs
  FROM quota_sched.share_usage ORDER BY quota_share;

\echo '== why is qs1_job_low not running?'
SELECT jsonb_pretty(quota_sched.explain(id) - 'job_id') AS explain
  FROM quota_sched.job WHERE name = 'qs1_job_low';

\echo '== a launcher agent claims its work and starts it'
CREATE ROLE launcher IN ROLE quota_sched_agent;
SET ROLE launcher;
SELECT name, state, agent FROM quota_sched.claim('agent-1', 'ml-queue', max_jobs => 10) ORDER BY id;
SELECT r.name, r.state FROM quota_sched.job j, quota_sched.report(j.id, 'agent-1', 'RUNNING') r
 WHERE j.state = 'STARTING' ORDER BY j.id;
RESET ROLE;

DO $$ BEGIN PERFORM pg_sleep(1); END $$;

\echo '== step 2: QS2 submits qs2_job_1 and takes back the instance it lent to QS1'
CREATE ROLE team_qs2 IN ROLE quota_sched_user;
SET ROLE team_qs2;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('qs2_job_1', 'ml-queue', 'QS2', 1, 'ml.g5.xlarge');
RESET ROLE;
SELECT j.name, p.action, p.reason FROM quota_sched.run_pass('ml-queue') p
  JOIN quota_sched.job j ON j.id = p.job_id;
\echo '   the agent learns of the stop (NOTIFY quota_sched_stop, or its heartbeat) and stops med'
SET ROLE launcher;
SELECT j.name, h.stop_reason FROM quota_sched.heartbeat('agent-1') h
  JOIN quota_sched.job j ON j.id = h.job_id ORDER BY j.id;
SELECT r.name, r.state, r.preemption_count
  FROM quota_sched.job j, quota_sched.report(j.id, 'agent-1', 'STOPPED') r
 WHERE j.name = 'qs1_job_med';
RESET ROLE;
SELECT j.name, p.action FROM quota_sched.run_pass('ml-queue') p JOIN quota_sched.job j ON j.id = p.job_id;
SET ROLE launcher;
SELECT name, state FROM quota_sched.claim('agent-1', 'ml-queue');
RESET ROLE;

DO $$ BEGIN PERFORM pg_sleep(1); END $$;

\echo '== step 3: team QS1 raises qs1_job_low to priority 4: in-share preemption stops high'
SET ROLE team_qs1;
UPDATE quota_sched.job SET priority = 4 WHERE name = 'qs1_job_low';
RESET ROLE;
SELECT j.name, p.action, p.reason FROM quota_sched.run_pass('ml-queue') p
  JOIN quota_sched.job j ON j.id = p.job_id;
SET ROLE launcher;
SELECT r.name, r.state, r.preemption_count
  FROM quota_sched.job j, quota_sched.report(j.id, 'agent-1', 'STOPPED') r
 WHERE j.name = 'qs1_job_high';
RESET ROLE;
SELECT j.name, p.action FROM quota_sched.run_pass('ml-queue') p JOIN quota_sched.job j ON j.id = p.job_id;
SELECT name, priority, state, preemption_count FROM quota_sched.job ORDER BY id;
SELECT quota_share, in_use, borrowed, idle, runnable_jobs FROM quota_sched.share_usage ORDER BY quota_share;

DO $$ BEGIN PERFORM pg_sleep(1); END $$;

\echo '== history of qs1_job_med: one job_event row per change of state'
SELECT e.from_state, e.to_state, e.reason, e.actor, e.pass_id IS NOT NULL AS by_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'qs1_job_med' ORDER BY e.id;
SELECT id, dispatched, preempted, requeued, failed FROM quota_sched.pass_log ORDER BY id;

\echo '== the background worker: turned on, it runs a pass soon after every commit'
\echo '   (team QS1 raises qs1_job_med above low, whose instance no agent has claimed yet)'
ALTER SYSTEM SET quota_sched.enabled = on;
DO $$ BEGIN PERFORM pg_reload_conf(); PERFORM pg_sleep(1); END $$;
SET ROLE team_qs1;
UPDATE quota_sched.job SET priority = 5 WHERE name = 'qs1_job_med';
RESET ROLE;
DO $$ BEGIN PERFORM pg_sleep(1); END $$;
SELECT name, priority, state, stop_reason FROM quota_sched.job ORDER BY id;
