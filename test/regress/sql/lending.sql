-- lending() (issue 22, item 3): who lent the capacity a share borrowed,
-- against figures computed by hand with the rule of doc/reporting.md ("Who
-- lent to whom").  The history is written directly (jobs 9101 to 9108
-- exist only in it), and so is the configuration's, as it was on
-- 2026-02-01 from 09:00:
--   environment l_env: 10 gpu; shares vision (LEND, 4), speech
--   (LEND_AND_BORROW, 2, lend_limit 50: lends at most 1), audio (RESERVE,
--   2: never lends), nlp (LEND_AND_BORROW, 1); 9 assigned, 1 unassigned.
--   At 11:15 vision is DISABLED (it lends nothing from then on).
--   9101 nlp 4 gpu 10:00-10:30 (borrows 3); 9102 vision 3 gpu 10:10-10:20;
--   9104 nlp 2 gpu and 9105 speech 3 gpu, 10:40-11:00 (each borrows 1);
--   9106 nlp 3 gpu 11:00-11:30 (borrows 2); 9107 nlp 4 gpu 11:40-11:50
--   (borrows 3, more than the 2 left to lend); 9108 nlp 2 gpu from 12:00,
--   still held (borrows 1).
SET TimeZone = 'UTC';
\i test/regress/include/helpers.sql
CREATE ROLE regress_l_nlp;
CREATE ROLE regress_l_ann IN ROLE quota_sched_user, regress_l_nlp;
CREATE ROLE regress_l_bob IN ROLE quota_sched_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('l_env', '{"gpu": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('l_queue', 'l_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit,
									 lend_limit, submit_role)
VALUES ('l_queue', 'vision', '{"gpu": 4}', 'LEND', -1, -1, NULL),
	   ('l_queue', 'speech', '{"gpu": 2}', 'LEND_AND_BORROW', -1, 50, NULL),
	   ('l_queue', 'audio', '{"gpu": 2}', 'RESERVE', -1, -1, NULL),
	   ('l_queue', 'nlp', '{"gpu": 1}', 'LEND_AND_BORROW', -1, -1, 'regress_l_nlp');
-- the configuration's history as it was then, in place of today's
DELETE FROM quota_sched.config_event WHERE job_queue = 'l_queue' OR name = 'l_env';
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new)
SELECT '2026-02-01 09:00+00', 'x', c.object, c.q, c.name, 'INSERT', NULL, c.new::jsonb
  FROM (VALUES ('service_environment', NULL, 'l_env', '{"capacity_limits": {"gpu": 10}}'),
			   ('quota_share', 'l_queue', 'vision',
				'{"strategy": "LEND", "capacity_limits": {"gpu": 4}, "lend_limit": -1, "state": "ENABLED"}'),
			   ('quota_share', 'l_queue', 'speech',
				'{"strategy": "LEND_AND_BORROW", "capacity_limits": {"gpu": 2}, "lend_limit": 50, "state": "ENABLED"}'),
			   ('quota_share', 'l_queue', 'audio',
				'{"strategy": "RESERVE", "capacity_limits": {"gpu": 2}, "lend_limit": -1, "state": "ENABLED"}'),
			   ('quota_share', 'l_queue', 'nlp',
				'{"strategy": "LEND_AND_BORROW", "capacity_limits": {"gpu": 1}, "lend_limit": -1, "state": "ENABLED"}'))
	   AS c(object, q, name, new);
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new) VALUES
 ('2026-02-01 11:15+00', 'x', 'quota_share', 'l_queue', 'vision', 'UPDATE',
  '{"strategy": "LEND", "capacity_limits": {"gpu": 4}, "lend_limit": -1, "state": "ENABLED"}',
  '{"strategy": "LEND", "capacity_limits": {"gpu": 4}, "lend_limit": -1, "state": "DISABLED"}');
CREATE FUNCTION pg_temp.held(job bigint, share text, n int, t0 text, t1 text)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt, priority)
	SELECT job, ('2026-02-01 ' || x.t || '+00')::timestamptz, x.f, x.s, 'x', 'STATE', 'l_queue',
		   share, 'gpu', n, 1, 0
	  FROM (VALUES (t0, 'RUNNABLE', 'SCHEDULED'), (t1, 'SCHEDULED', 'SUCCEEDED')) AS x(t, f, s)
	 WHERE x.t IS NOT NULL
$$;
SELECT pg_temp.held(9101, 'nlp', 4, '10:00', '10:30'), pg_temp.held(9102, 'vision', 3, '10:10', '10:20'),
	   pg_temp.held(9104, 'nlp', 2, '10:40', '11:00'), pg_temp.held(9105, 'speech', 3, '10:40', '11:00'),
	   pg_temp.held(9106, 'nlp', 3, '11:00', '11:30'), pg_temp.held(9107, 'nlp', 4, '11:40', '11:50'),
	   pg_temp.held(9108, 'nlp', 2, '12:00', NULL);

-- By hand (instance-seconds; unassigned first, then the lenders in
-- proportion to min(idle, lendable)):
--   10:00-10:10 and 10:20-10:30, nlp borrows 3: 1 unassigned, 2 from
--     vision (may lend 4) and speech (may lend 1) as 4:1, 1.6 and 0.4;
--     1200 s: unassigned 1200, vision 1920, speech 480.
--   10:10-10:20, vision holds 3 (may lend 1): 1 unassigned, 1 vision,
--     1 speech; 600 s each.
--   10:40-11:00, nlp and speech borrow 1 each: the unassigned 1 halved,
--     600 s to each; the rest, 1, from vision (speech borrows: lends
--     nothing), 600 s to each.
--   hour 10: unassigned->nlp 2400, vision->nlp 2520 + 600 = 3120,
--     speech->nlp 1080, unassigned->speech 600, vision->speech 600.
--   11:00-11:15, nlp borrows 2: 1 unassigned, 1 from vision and speech as
--     4:1; 900 s: unassigned 900, vision 720, speech 180.  11:15-11:30,
--     vision DISABLED: 1 unassigned, 1 speech; 900 s each.  11:40-11:50,
--     nlp borrows 3 of the 2 left (unassigned 1, speech 1): 600 s each,
--     the third lent by no one.
--   hour 11: unassigned->nlp 2400, vision->nlp 720, speech->nlp 1680.
--   from 12:00: unassigned->nlp 3600 an hour.
-- audio (RESERVE) lends nothing.
SELECT bucket_start, capacity_unit AS unit, lender_share AS lender, borrower_share AS borrower,
	   round(instance_seconds::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 09:00+00', '2026-02-01 13:00+00');

-- Of each borrower's borrowed instance-seconds (utilization()), all is
-- lent by someone but the 600 of 11:40-11:50.
SELECT u.bucket_start, u.quota_share AS borrower, u.borrowed_instance_seconds AS borrowed,
	   round(sum(l.instance_seconds)::numeric, 6) AS lent
  FROM quota_sched.utilization('l_queue', '2026-02-01 10:00+00', '2026-02-01 13:00+00') u
  JOIN quota_sched.lending('l_queue', '2026-02-01 10:00+00', '2026-02-01 13:00+00') l
	ON l.bucket_start = u.bucket_start AND l.borrower_share = u.quota_share
 GROUP BY 1, 2, 3 ORDER BY 1, 2;

-- Buckets of 20 minutes (from the history alone) and one of the whole day.
SELECT bucket_start, lender_share AS lender, borrower_share AS borrower,
	   round(instance_seconds::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 10:00+00', '2026-02-01 11:00+00', '20 minutes');
SELECT bucket_start, lender_share AS lender, borrower_share AS borrower,
	   round(instance_seconds::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 00:00+00', '2026-02-02 00:00+00', '1 day');

-- After now the levels hold: 9108 still borrows 1 unassigned gpu.
SELECT bucket_start - date_trunc('hour', now()) AS bucket, lender_share AS lender,
	   borrower_share AS borrower, round(instance_seconds::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', date_trunc('hour', now()) + interval '1 hour',
						   date_trunc('hour', now()) + interval '4 hours');

-- The rollup keeps the same figures (lending_hourly), and lending() reads
-- them for the hours it covers: nothing differs from the history's.
CREATE TEMP TABLE before_rollup AS
SELECT * FROM quota_sched.lending('l_queue', '2026-02-01 09:00+00', '2026-02-01 13:00+00');
SELECT quota_sched.rollup() > 0 AS rolled_up;
-- a week of lending a call: 9108 has held since February, and the rollup
-- catches up on its lending over calls
SELECT lent_until = '2026-02-08 09:00+00' AS a_week, rolled_until > lent_until AS behind
  FROM quota_sched.usage_rollup WHERE job_queue = 'l_queue';
DO $$
DECLARE
	calls integer := 1;
BEGIN
	WHILE (SELECT lent_until < rolled_until FROM quota_sched.usage_rollup WHERE job_queue = 'l_queue') LOOP
		PERFORM quota_sched.rollup();
		calls := calls + 1;
	END LOOP;
	RAISE NOTICE 'caught up in % calls: %', CASE WHEN calls > 40 THEN 'over 40' ELSE calls::text END,
		(SELECT lent_until = rolled_until FROM quota_sched.usage_rollup WHERE job_queue = 'l_queue');
END
$$;
SELECT hour, lender, borrower, round(instance_seconds::numeric, 6) AS seconds
  FROM quota_sched.lending_hourly
 WHERE job_queue = 'l_queue' AND hour < '2026-02-01 13:00+00' ORDER BY 1, 2 NULLS FIRST, 3;
-- (the hours' sums are those of the history to the microsecond)
SELECT count(*) AS rows_differing
  FROM (SELECT b.bucket_start, b.lender_share, b.borrower_share, round(b.instance_seconds::numeric, 6)
		  FROM before_rollup b
		EXCEPT
		SELECT l.bucket_start, l.lender_share, l.borrower_share, round(l.instance_seconds::numeric, 6)
		  FROM quota_sched.lending('l_queue', '2026-02-01 09:00+00', '2026-02-01 13:00+00') l) d;
-- what lending() reads is the rollup's: a row changed there shows
UPDATE quota_sched.lending_hourly SET instance_seconds = 1 WHERE job_queue = 'l_queue'
   AND hour = '2026-02-01 11:00+00' AND lender = 'vision';
SELECT lender_share, borrower_share, instance_seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 11:00+00', '2026-02-01 12:00+00')
 WHERE lender_share = 'vision';
UPDATE quota_sched.lending_hourly SET instance_seconds = 720 WHERE job_queue = 'l_queue'
   AND hour = '2026-02-01 11:00+00' AND lender = 'vision';

-- Both teams read it: a member of nlp sees what vision lent nlp, and so
-- does a role of no team (every share's figures, for every role).
SET ROLE regress_l_ann;
SELECT lender_share, borrower_share, round(sum(instance_seconds)::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 10:00+00', '2026-02-01 12:00+00') GROUP BY 1, 2
 ORDER BY 1 NULLS FIRST, 2;
SET ROLE regress_l_bob;
SELECT lender_share, borrower_share, round(sum(instance_seconds)::numeric, 6) AS seconds
  FROM quota_sched.lending('l_queue', '2026-02-01 10:00+00', '2026-02-01 12:00+00') GROUP BY 1, 2
 ORDER BY 1 NULLS FIRST, 2;
-- the rollup's table itself stays the admins'
SELECT pg_temp.refused('SELECT * FROM quota_sched.lending_hourly');
RESET ROLE;

-- Many lenders (more than the sweep's first allocation of 16 shares):
-- l2_big (1 gpu of its own) holds 3 for 1000 s while the 20 shares of one
-- gpu each are idle, all 21 gpus assigned: each lends 2/20 of a gpu, 100
-- instance-seconds.
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('l2_env', '{"gpu": 21}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('l2_queue', 'l2_env');
DELETE FROM quota_sched.config_event WHERE name = 'l2_env';
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new)
SELECT '2026-02-01 09:00+00'::timestamptz, 'x', 'quota_share', 'l2_queue', n, 'INSERT', NULL::jsonb,
	   jsonb_build_object('strategy', 'LEND_AND_BORROW', 'capacity_limits', '{"gpu": 1}'::jsonb,
						  'lend_limit', -1, 'state', 'ENABLED')
  FROM (SELECT 'l2_' || lpad(i::text, 2, '0') FROM generate_series(1, 20) i UNION ALL SELECT 'l2_big') AS x(n)
UNION ALL
SELECT '2026-02-01 09:00+00', 'x', 'service_environment', NULL, 'l2_env', 'INSERT', NULL,
	   '{"capacity_limits": {"gpu": 21}}';
INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
								   quota_share, capacity_unit, instance_count, attempt, priority)
VALUES (9201, '2026-02-01 10:00+00', 'RUNNABLE', 'SCHEDULED', 'x', 'STATE', 'l2_queue', 'l2_big', 'gpu', 3, 1, 0),
	   (9201, '2026-02-01 10:16:40+00', 'SCHEDULED', 'SUCCEEDED', 'x', 'STATE', 'l2_queue', 'l2_big', 'gpu', 3, 1, 0);
SELECT count(*) AS lenders, min(round(instance_seconds::numeric, 6)) AS least,
	   max(round(instance_seconds::numeric, 6)) AS most,
	   count(*) FILTER (WHERE lender_share IS NULL) AS unassigned
  FROM quota_sched.lending('l2_queue', '2026-02-01 10:00+00', '2026-02-01 11:00+00');
DELETE FROM quota_sched.job_event WHERE job_queue = 'l2_queue';
DELETE FROM quota_sched.config_event WHERE job_queue = 'l2_queue' OR name = 'l2_env';
DELETE FROM quota_sched.job_queue WHERE name = 'l2_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'l2_env';

-- Bad input: utilization()'s rules, with lending()'s name.
SELECT pg_temp.refused($$SELECT * FROM quota_sched.lending('no_such_queue', '2026-01-01', '2026-01-02')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.lending('l_queue', NULL, '2026-01-02')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.lending('l_queue', '2026-01-02', '2026-01-01')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.lending('l_queue', '2026-01-01', '2027-01-01', '1 minute')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.lending('l_queue', '2026-01-01', 'infinity')$$);

-- Clean up.
DROP ROLE regress_l_ann, regress_l_bob, regress_l_nlp;
DELETE FROM quota_sched.job_event WHERE job_queue = 'l_queue';
DELETE FROM quota_sched.usage_hourly WHERE job_queue = 'l_queue';
DELETE FROM quota_sched.lending_hourly WHERE job_queue = 'l_queue';
DELETE FROM quota_sched.usage_totals WHERE job_queue = 'l_queue';
DELETE FROM quota_sched.usage_rollup WHERE job_queue = 'l_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'l_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'l_env';
