-- Retention (issue 11, item 4): admins delete ended jobs once the hourly
-- rollup covers them, and prune(older_than) does it in batches; the
-- utilization of the pruned hours stays (from the rollup).
SET TimeZone = 'UTC';
-- times relative to base, three days ago on the hour (printed as offsets)
SELECT date_trunc('hour', now()) - interval '72 hours' AS base \gset
\i test/regress/include/helpers.sql
DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'regress_pr_admin') THEN
		CREATE ROLE regress_pr_admin IN ROLE quota_sched_admin;
	END IF;
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'regress_pr_user') THEN
		CREATE ROLE regress_pr_user IN ROLE quota_sched_user;
	END IF;
END $$;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('pr_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pr_queue', 'pr_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pr_queue', 'S', '{"gpu": 2}', 'RESERVE');
-- The share's capacity since base.
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new) VALUES
 (:'base', 'x', 'service_environment', NULL, 'pr_env', 'INSERT', NULL, '{"capacity_limits": {"gpu": 2}}'),
 (:'base', 'x', 'quota_share', 'pr_queue', 'S', 'INSERT', NULL, '{"capacity_limits": {"gpu": 2}}');

-- Three jobs: pr_old ran from base to base + 1:30 and succeeded;
-- pr_recent ended just now; pr_live is RUNNABLE.  (Written as a restore
-- would, with their history at those times.)
SET ROLE regress_pr_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('pr_old', 'pr_queue', 'S', 'gpu'), ('pr_recent', 'pr_queue', 'S', 'gpu'),
	   ('pr_live', 'pr_queue', 'S', 'gpu');
RESET ROLE;
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'SUCCEEDED', status_reason_at = :'base'::timestamptz + interval '90 min',
	   submitted_at = :'base', queued_at = :'base'
 WHERE name = 'pr_old';
UPDATE quota_sched.job_event e SET at = :'base'
  FROM quota_sched.job j WHERE j.id = e.job_id AND j.name = 'pr_old';
INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
								   quota_share, capacity_unit, instance_count, attempt, priority,
								   waited)
SELECT id, v.at, v.f, v.t, 'x', 'STATE', 'pr_queue', 'S', 'gpu', 1, 1, 0, v.w
  FROM quota_sched.job, (VALUES (:'base'::timestamptz, 'RUNNABLE', 'SCHEDULED', interval '0'),
								(:'base'::timestamptz + interval '90 min', 'SCHEDULED', 'SUCCEEDED', NULL)) v(at, f, t, w)
 WHERE name = 'pr_old';
UPDATE quota_sched.job SET state = 'FAILED', status_reason_at = now() WHERE name = 'pr_recent';
RESET session_replication_role;

SELECT bucket_start - :'base' AS bucket, quota_share, used_instance_seconds AS used, succeeded
  FROM quota_sched.utilization('pr_queue', :'base', :'base'::timestamptz + interval '2 hours')
 WHERE quota_share = 'S';

-- Users may not delete jobs; admins may not delete a live job, nor one the
-- rollup does not cover yet (55000).
SET ROLE regress_pr_user;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'pr_old'$$);
SET ROLE regress_pr_admin;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'pr_live'$$);
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'pr_old'$$);
RESET ROLE;

-- prune(): bad arguments (22023), then the rollup and the deletion of what
-- ended more than a day ago: pr_old and its history.
SELECT pg_temp.refused($$CALL quota_sched.prune('0 days')$$);
SELECT pg_temp.refused($$CALL quota_sched.prune('1 day', 0)$$);
-- Inside a transaction block it refuses to start, saying why (25001), not
-- "invalid transaction termination" at its first COMMIT; nothing is done.
BEGIN;
SET LOCAL ROLE regress_pr_admin;
CALL quota_sched.prune('1 day', 1);
ROLLBACK;
SET ROLE regress_pr_admin;
CALL quota_sched.prune('1 day', 1);
RESET ROLE;
SELECT name, state FROM quota_sched.job WHERE job_queue = 'pr_queue' ORDER BY name;
SELECT count(*) AS events_of_pr_old FROM quota_sched.job_event e
 WHERE e.job_queue = 'pr_queue' AND e.at < :'base'::timestamptz + interval '1 day';
-- The figures of the pruned hours stay.
SELECT bucket_start - :'base' AS bucket, quota_share, used_instance_seconds AS used, succeeded
  FROM quota_sched.utilization('pr_queue', :'base', :'base'::timestamptz + interval '2 hours')
 WHERE quota_share = 'S';
-- pr_recent is still needed (its hour is not over); an admin may delete it
-- once the rollup covers it.
SET ROLE regress_pr_admin;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'pr_recent'$$);
RESET ROLE;

-- rollup() never goes past now (issue 20, item 3): asked for two days
-- ahead, it stops at the hour now is in, so an event of this hour, written
-- after it (job 9901 dispatched on the hour, 1 gpu), still counts, and
-- pr_recent, which ended this hour, stays until its hour is rolled up.
BEGIN;
SELECT quota_sched.rollup(now() + interval '2 days') >= 0 AS rolled_up;
INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
								   quota_share, capacity_unit, instance_count, attempt, priority,
								   waited)
VALUES (9901, date_trunc('hour', now()), 'RUNNABLE', 'SCHEDULED', 'x', 'STATE', 'pr_queue', 'S',
		'gpu', 1, 1, 0, '0');
COMMIT;
SELECT r.rolled_until <= e.at AS not_past_now
  FROM quota_sched.usage_rollup r, quota_sched.job_event e
 WHERE r.job_queue = 'pr_queue' AND e.job_id = 9901;
SELECT u.quota_share, u.used_instance_seconds AS used, u.dispatched
  FROM quota_sched.job_event e,
	   quota_sched.utilization('pr_queue', e.at, e.at + interval '1 hour') u
 WHERE e.job_id = 9901 AND u.quota_share = 'S';
SET ROLE regress_pr_admin;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'pr_recent'$$);
RESET ROLE;
DELETE FROM quota_sched.job_event WHERE job_id = 9901;

-- Deleting the queue takes its ended jobs with it, whatever the rollup.
UPDATE quota_sched.job SET state = 'FAILED' WHERE false;
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'pr_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'pr_queue';
SELECT count(*) AS jobs_left FROM quota_sched.job WHERE job_queue = 'pr_queue';
DELETE FROM quota_sched.usage_hourly WHERE job_queue = 'pr_queue';
DELETE FROM quota_sched.usage_totals WHERE job_queue = 'pr_queue';
DELETE FROM quota_sched.usage_rollup WHERE job_queue = 'pr_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'pr_env';
SELECT * FROM quota_sched.held_capacity_drift();
