-- Values a share may hold must not break what every team reads: a capacity
-- written 5.0 (accepted as 5) and the largest borrow_limit leave
-- share_usage readable, with the right figures.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hi_env', '{"ml.g5.xlarge": 10.0}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('hi_queue', 'hi_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('hi_queue', 'hi_point_zero', '{"ml.g5.xlarge": 5.0}', 'LEND_AND_BORROW', 100),
	   ('hi_queue', 'hi_huge_borrow', '{"ml.g5.xlarge": 2147483647}', 'LEND_AND_BORROW', 2147483647);
SELECT quota_share, max_capacity, allowed, idle, lendable FROM quota_sched.share_usage
 WHERE job_queue = 'hi_queue' ORDER BY quota_share;
-- Promising the shares more than the environment has warns at the write;
-- capacity_plan shows it per queue and unit, as it shows a unit the shares
-- name and the environment lacks.
UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": 5, "ml.p4d.24xlarge": 1}'
 WHERE name = 'hi_point_zero';
SELECT * FROM quota_sched.capacity_plan WHERE job_queue = 'hi_queue' ORDER BY capacity_unit;
UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": 5}'
 WHERE name = 'hi_point_zero';
-- the pass reads them alike
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hi_job', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', 5);
SELECT action FROM quota_sched.run_pass('hi_queue');

-- A priority change of an ended job is refused (55000); a live one's goes
-- through.
\i test/regress/include/helpers.sql
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority)
VALUES ('hi_ended', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', 3),
	   ('hi_live', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', 3);
SELECT state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'hi_ended'));
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 9 WHERE name = 'hi_ended'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 9 WHERE name = 'hi_live'$$);
SELECT name, state, priority FROM quota_sched.job WHERE name LIKE 'hi\_%' ORDER BY name;

-- SUCCEEDED reported for a STARTING job (no RUNNING report first): the job
-- ran, so RUNNING is implied: started_at is set and the history shows it.
SELECT name, state FROM quota_sched.claim('hi_agent', 'hi_queue');
SELECT state, started_at IS NOT NULL AS started
  FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'hi_job'), 'hi_agent',
						  'SUCCEEDED');
SELECT e.from_state, e.to_state FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'hi_job' ORDER BY e.id;

-- Every interval added to a time is positive and at most 365 days, so that
-- no deadline leaves the range of timestamps: a job's timeout and a queue's
-- runnable_timeout (23514), an agent's lease (22023).
SELECT stmt, pg_temp.refused(stmt) FROM (VALUES
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout) VALUES ('hi_t1', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', '300000 years')$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout) VALUES ('hi_t2', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', '365 days 1 second')$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout) VALUES ('hi_t3', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', '365 days')$$),
	($$UPDATE quota_sched.job_queue SET runnable_timeout = '300000 years' WHERE name = 'hi_queue'$$),
	($$UPDATE quota_sched.job_queue SET runnable_timeout = '13 months' WHERE name = 'hi_queue'$$),
	($$UPDATE quota_sched.job_queue SET runnable_timeout = '12 months' WHERE name = 'hi_queue'$$),
	($$SELECT count(*) FROM quota_sched.claim('hi_agent', 'hi_queue', lease => '290000 years')$$),
	($$SELECT count(*) FROM quota_sched.heartbeat('hi_agent', lease => '366 days')$$),
	($$SELECT count(*) FROM quota_sched.heartbeat('hi_agent', lease => '365 days')$$)
) AS v(stmt);
SELECT name, timeout FROM quota_sched.job WHERE name LIKE 'hi\_t%' ORDER BY name;

-- claim: a capacity unit the queue does not know is refused (22023), not a
-- silent empty claim; the message quotes a huge one only in part; any
-- max_jobs is taken.
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.claim('hi_agent', 'hi_queue', 'ml.g5.xlarg')$$);
SELECT pg_temp.refused(format($$SELECT count(*) FROM quota_sched.claim('hi_agent', 'hi_queue', %L)$$,
							  repeat('u', 100000)));
SELECT pg_temp.refused(format($$SELECT count(*) FROM quota_sched.claim('hi_agent', %L)$$,
							  repeat('q', 100000)));
SELECT count(*) AS dispatched FROM quota_sched.run_pass('hi_queue');
SELECT count(*) FROM quota_sched.claim('hi_agent', 'hi_queue', 'ml.g5.xlarge', max_jobs => 2147483647);

-- Nulls where a value is required are 23502; tags and reasons are capped
-- (54000) like the payload; messages quote a huge value only in part.
SELECT left(stmt, 60) AS stmt, pg_temp.refused(stmt) FROM (VALUES
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES ('hi_n1', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', NULL)$$),
	($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority) VALUES ('hi_n2', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', NULL)$$),
	(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, tags) VALUES ('hi_n3', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', %L)$$,
			jsonb_build_object('t', repeat('x', 65536)))),
	(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, tags) VALUES ('hi_n4', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', %L)$$,
			to_jsonb(repeat('x', 1000)))),
	(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES (%L, 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge')$$,
			repeat('n', 100000) || '!')),
	(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('hi_n5', 'hi_queue', %L, 'ml.g5.xlarge')$$,
			repeat('s', 100000))),
	(format($$SELECT state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'hi_live'), %L)$$,
			repeat('r', 1025))),
	(format($$SELECT state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'hi_live'), 'hi_agent', 'FAILED', %L)$$,
			repeat('r', 1025))),
	(format($$SELECT state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'hi_live'), 'hi_agent', %L)$$,
			repeat('S', 100000)))
) AS v(stmt);
SELECT count(*) AS stored FROM quota_sched.job WHERE name LIKE 'hi\_n%';

-- A team member may change priorities but not lock the job table beyond
-- ROW EXCLUSIVE: its UPDATE privilege is priority's, not the table's.
CREATE ROLE regress_hi_user IN ROLE quota_sched_user;
SET ROLE regress_hi_user;
SELECT pg_temp.refused($$LOCK TABLE quota_sched.job IN ACCESS EXCLUSIVE MODE$$);
SELECT pg_temp.refused($$LOCK TABLE quota_sched.job IN SHARE MODE$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 1 WHERE false$$);
RESET ROLE;
DROP ROLE regress_hi_user;

SELECT * FROM quota_sched.held_capacity_drift();

-- Jobs whose share row is gone (foreign keys bypassed, as by a restore
-- with session_replication_role = replica) are left alone by the pass,
-- with one WARNING per such share that names its live jobs by id, with
-- their states: held ones, whether due for time-based work (a lease run
-- out) or not, and RUNNABLE ones (issue 20, item 9: a held job whose lease
-- had not run out passed in silence).  The pass goes on with the queue's
-- other jobs.  The orphans get the ids a restore would write, fixed here
-- so that the WARNING's detail does not depend on the tests run before.
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hi_queue', 'hi_doomed', '{"ml.g5.xlarge": 2}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout)
SELECT 'hi_orphan_' || i, 'hi_queue', 'hi_doomed', 'ml.g5.xlarge', '1 hour'
  FROM generate_series(1, 3) i;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('hi_queue');
SELECT count(*) AS claimed FROM quota_sched.claim('hi_agent', 'hi_queue', max_jobs => 2, start => true);
SET session_replication_role = replica;
UPDATE quota_sched.job_event e SET job_id = 990000 + substr(j.name, 11)::int
  FROM quota_sched.job j WHERE j.id = e.job_id AND j.name LIKE 'hi\_orphan\_%';
UPDATE quota_sched.job SET id = 990000 + substr(name, 11)::int WHERE name LIKE 'hi\_orphan\_%';
UPDATE quota_sched.job SET lease_until = now() - interval '1 minute' WHERE name = 'hi_orphan_1';
DELETE FROM quota_sched.quota_share WHERE name = 'hi_doomed';
RESET session_replication_role;
-- A new session, as after a restore: the triggers that tell a backend's
-- passes that a queue's shares changed (share_change) did not fire in
-- replica mode, and this backend's passes keep the shares they read.
\c -
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('hi_after', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge');
SELECT j.name, p.action FROM quota_sched.run_pass('hi_queue') p
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT CASE WHEN name = 'hi_after' THEN NULL ELSE id END AS id, name, state FROM quota_sched.job
 WHERE name LIKE 'hi\_orphan\_%' OR name = 'hi_after' ORDER BY name;
-- explain and queue_snapshot read the queue as a pass does, and say so
-- too; explain of the orphan itself says that its share is missing.
\set VERBOSITY terse
SELECT e ->> 'blocked_by' AS blocked_by, e ->> 'detail' AS detail FROM quota_sched.explain(990003) e;
SELECT count(*) AS snapshot_rows FROM quota_sched.queue_snapshot('hi_queue');
\set VERBOSITY default
-- a pass with nothing to decide still says so
SELECT count(*) AS decided FROM quota_sched.run_pass('hi_queue');
SELECT * FROM quota_sched.held_capacity_drift();
-- The orphans' held instances still count in the environment's use: hi_fill
-- (6 instances) would fit hi_point_zero's limits (10 with borrowing) and
-- the environment's 10 beside the other shares' 3 without the orphans' 2,
-- not with them.
SELECT sum(instance_count) AS held_by_share FROM quota_sched.job
 WHERE job_queue = 'hi_queue' AND state IN ('SCHEDULED', 'STARTING', 'RUNNING') GROUP BY quota_share = 'hi_doomed' ORDER BY 1;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hi_fill', 'hi_queue', 'hi_point_zero', 'ml.g5.xlarge', 6);
\set VERBOSITY terse
SELECT count(*) AS dispatched FROM quota_sched.run_pass('hi_queue');
SELECT e ->> 'blocked_by' AS blocked_by FROM quota_sched.explain((SELECT id FROM quota_sched.job WHERE name = 'hi_fill')) e;
\set VERBOSITY default

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'hi_queue';
-- the counters of the share deleted past its trigger
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'hi_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'hi_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'hi_env';
