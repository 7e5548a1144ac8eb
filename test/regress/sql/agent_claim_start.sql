-- claim(..., start => true) (doc/agents.md): the jobs claimed are
-- RUNNING at once, with started_at, as if the agent had reported RUNNING;
-- their history shows STARTING then RUNNING, though each row is written
-- once.  Without it they are STARTING.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('cs_env', '{"gpu": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cs_queue', 'cs_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('cs_queue', 'cs_share', '{"gpu": 3}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'cs_' || i, 'cs_queue', 'cs_share', 'gpu' FROM generate_series(1, 3) i;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('cs_queue');

-- (issue 42: each job's row is written once, STARTING and RUNNING in one
-- UPDATE: the updates of quota_sched.job the claim adds to the backend's
-- count)
BEGIN;
SELECT n_tup_upd AS updates_before FROM pg_stat_xact_user_tables
 WHERE relid = 'quota_sched.job'::regclass \gset
SELECT name, state, agent, started_at IS NOT NULL AS started, lease_until > now() AS leased
  FROM quota_sched.claim('cs_agent', 'cs_queue', max_jobs => 2, start => true) ORDER BY name;
SELECT n_tup_upd - :updates_before AS job_rows_written FROM pg_stat_xact_user_tables
 WHERE relid = 'quota_sched.job'::regclass;
COMMIT;
SELECT name, state, started_at IS NOT NULL AS started
  FROM quota_sched.claim('cs_agent', 'cs_queue') ORDER BY name;
SELECT j.name, e.from_state, e.to_state FROM quota_sched.job_event e
  JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'cs_queue' AND e.to_state <> 'RUNNABLE' ORDER BY j.name, e.id;
-- a job started by its claim ends as usual; a repeated RUNNING is a no-op
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'cs_1'),
										   'cs_agent', 'RUNNING');
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'cs_1'),
										   'cs_agent', 'SUCCEEDED');
-- start => null is refused (22023), not taken for the default (issue 20,
-- item 8): a caller's unset variable must not pass unnoticed
\i test/regress/include/helpers.sql
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.claim('cs_agent', 'cs_queue', start => NULL)$$);

-- The same for a job placed on hosts (12.3), of one part and of two: the
-- claim that takes its last part, with start, writes the job's row once,
-- from SCHEDULED to RUNNING, and its history is the same as unplaced.
CREATE ROLE regress_cs_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_cs_host', 'cs_queue');
SET ROLE regress_cs_host;
SELECT name FROM quota_sched.agent_ready('cs_h1', 'cs_queue', 'gpu', 1);
SELECT name FROM quota_sched.agent_ready('cs_h2', 'cs_queue', 'gpu', 1);
RESET ROLE;
-- (cs_2 and cs_3 end first: the placed job needs the whole capacity)
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'cs_2'),
										   'cs_agent', 'SUCCEEDED');
SELECT name, state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'cs_3'),
										   'cs_agent', 'SUCCEEDED');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('cs_placed_two', 'cs_queue', 'cs_share', 'gpu', 2, 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('cs_queue');
SET ROLE regress_cs_host;
SELECT name, state FROM quota_sched.claim('cs_h1', 'cs_queue', start => true);
BEGIN;
SELECT n_tup_upd AS updates_before FROM pg_stat_xact_user_tables
 WHERE relid = 'quota_sched.job'::regclass \gset
SELECT name, state, started_at IS NOT NULL AS started
  FROM quota_sched.claim('cs_h2', 'cs_queue', start => true);
SELECT n_tup_upd - :updates_before AS job_rows_written FROM pg_stat_xact_user_tables
 WHERE relid = 'quota_sched.job'::regclass;
COMMIT;
RESET ROLE;
SELECT e.from_state, e.to_state, e.actor FROM quota_sched.job_event e
  JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'cs_placed_two' ORDER BY e.id;
SELECT state, started_at IS NOT NULL AS started, agent FROM quota_sched.job
 WHERE name = 'cs_placed_two';

SELECT * FROM quota_sched.held_capacity_drift();
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'cs_queue';
RESET session_replication_role;
DELETE FROM quota_sched.agent WHERE job_queue = 'cs_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'cs_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'cs_env';
DROP ROLE regress_cs_host;
