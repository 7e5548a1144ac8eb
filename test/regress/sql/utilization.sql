-- utilization() (issue 11, item 2), with events at known times, against
-- figures computed by hand.  The history is written directly (jobs 9001 to
-- 9003 exist only in it, as after a prune), and so is the configuration's
-- (config_event), as it was on 2026-01-01:
--   environment u_env: 4 gpu; shares A (LEND_AND_BORROW) and B (LEND): 2 gpu
--   each; at 02:10 A's own capacity is lowered to 1.
--   9001 (A, 1 gpu): submitted 00:00, dispatched 00:30, succeeds 02:15:
--     it straddles the edges of hours 0, 1 and 2.
--   9002 (A, 2 gpu): submitted 00:00, dispatched 01:00 (borrowing 1 of B's),
--     preempted at 01:30 for 9003, dispatched again 02:00, fails 02:30.
--   9003 (B, 1 gpu): submitted 01:20, dispatched 01:30, succeeds 02:45.
-- By hand, A's instances held: 1 from 00:30, 3 from 01:00, 1 from 01:30,
-- 3 from 02:00, 2 from 02:15, 0 from 02:30; B's: 1 from 01:30 to 02:45.
SET TimeZone = 'UTC';
\i test/regress/include/helpers.sql
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('u_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('u_queue', 'u_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('u_queue', 'A', '{"gpu": 2}', 'LEND_AND_BORROW'), ('u_queue', 'B', '{"gpu": 2}', 'LEND');
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new) VALUES
 ('2026-01-01 00:00+00', 'x', 'service_environment', NULL, 'u_env', 'INSERT', NULL, '{"capacity_limits": {"gpu": 4}}'),
 ('2026-01-01 00:00+00', 'x', 'quota_share', 'u_queue', 'A', 'INSERT', NULL, '{"capacity_limits": {"gpu": 2}}'),
 ('2026-01-01 00:00+00', 'x', 'quota_share', 'u_queue', 'B', 'INSERT', NULL, '{"capacity_limits": {"gpu": 2}}'),
 ('2026-01-01 02:10+00', 'x', 'quota_share', 'u_queue', 'A', 'UPDATE', '{"capacity_limits": {"gpu": 2}}',
  '{"capacity_limits": {"gpu": 1}}');
CREATE FUNCTION pg_temp.ev(job bigint, share text, n int, t text, f text, s text,
						   waited interval DEFAULT NULL, pf bigint DEFAULT NULL)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt,
									   priority, waited, preempted_for)
	VALUES (job, ('2026-01-01 ' || t || '+00')::timestamptz, f, s, 'x', 'STATE', 'u_queue', share,
			'gpu', n, 1, 0, waited, pf)
$$;
SELECT pg_temp.ev(9001, 'A', 1, '00:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9001, 'A', 1, '00:30', 'RUNNABLE', 'SCHEDULED', '30 min'),
	   pg_temp.ev(9001, 'A', 1, '00:31', 'SCHEDULED', 'STARTING'),
	   pg_temp.ev(9001, 'A', 1, '00:32', 'STARTING', 'RUNNING'),
	   pg_temp.ev(9001, 'A', 1, '02:15', 'RUNNING', 'SUCCEEDED'),
	   pg_temp.ev(9002, 'A', 2, '00:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9002, 'A', 2, '01:00', 'RUNNABLE', 'SCHEDULED', '1 hour'),
	   pg_temp.ev(9002, 'A', 2, '01:30', 'SCHEDULED', 'RUNNABLE', NULL, 9003),
	   pg_temp.ev(9002, 'A', 2, '02:00', 'RUNNABLE', 'SCHEDULED', '30 min'),
	   pg_temp.ev(9002, 'A', 2, '02:30', 'SCHEDULED', 'FAILED'),
	   pg_temp.ev(9003, 'B', 1, '01:20', NULL, 'RUNNABLE'),
	   pg_temp.ev(9003, 'B', 1, '01:30', 'RUNNABLE', 'SCHEDULED', '10 min'),
	   pg_temp.ev(9003, 'B', 1, '02:45', 'SCHEDULED', 'SUCCEEDED');

-- Hourly, by hand (instance-seconds):
--   hour 0, A: used 1 x 1800 = 1800, all own; idle 2 x 1800 + 1 x 1800 = 5400;
--     one dispatch, waited 1800 s.  B: idle 7200.  Environment: 4 gpu,
--     used 1800, idle 12600.
--   hour 1, A: 3 x 1800 + 1 x 1800 = 7200 used, of which borrowed 1 x 1800;
--     idle 1 x 1800; one dispatch (3600 s), one preemption suffered.
--     B: used 1800, idle 2 x 1800 + 1 x 1800 = 5400; one dispatch (600 s),
--     one preemption caused.  Environment: used 9000, idle 5400.
--   hour 2, A: capacity 2 for 600 s then 1 for 3000 s: 1.1667 on average;
--     used 3 x 600 + 3 x 300 + 2 x 900 = 4500, of which borrowed 1 x 600 +
--     2 x 300 + 1 x 900 = 2100; idle 1 x 1800 (02:30 to 03:00); one
--     dispatch (1800 s), one success, one failure.  B: used 2700, idle
--     1 x 2700 + 2 x 900 = 4500, one success.  Environment: used 7200,
--     idle 7200.
SELECT bucket_start, quota_share AS share, capacity_unit AS unit, round(capacity::numeric, 4) AS capacity,
	   used_instance_seconds AS used, own_instance_seconds AS own,
	   borrowed_instance_seconds AS borrowed, idle_instance_seconds AS idle, dispatched,
	   succeeded, failed, preempted, preempting, wait_p50_seconds AS p50, wait_p95_seconds AS p95
  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00');

-- One bucket of three hours: the sums, and the waits' percentiles over all
-- three dispatches of A (1800, 1800, 3600: p50 1800, p95 3600).
SELECT bucket_start, quota_share AS share, round(capacity::numeric, 4) AS capacity,
	   used_instance_seconds AS used, own_instance_seconds AS own,
	   borrowed_instance_seconds AS borrowed, idle_instance_seconds AS idle, dispatched,
	   succeeded, failed, preempted, preempting, wait_p50_seconds AS p50, wait_p95_seconds AS p95
  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00', '3 hours');

-- Buckets of 20 minutes (from the history alone): the first hour of A.
SELECT bucket_start, quota_share AS share, used_instance_seconds AS used,
	   idle_instance_seconds AS idle, dispatched
  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 01:00+00', '20 minutes')
 WHERE quota_share = 'A';

-- Buckets of a second: 9001 holds its instance from 00:30:00 on.
SELECT bucket_start, quota_share AS share, used_instance_seconds AS used,
	   idle_instance_seconds AS idle, dispatched
  FROM quota_sched.utilization('u_queue', '2026-01-01 00:29:58+00', '2026-01-01 00:30:02+00', '1 second')
 WHERE quota_share = 'A';

CREATE TEMP TABLE before_rollup AS
SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00');

-- The rollup of hours 0 and 1, as rollup() would write it at 02:00; the
-- report from it and the history after it is the same.
-- (u_empty, a queue with no share and no history, gets a rollup row at its
-- first rollup: the last whole hour, so later rollups do not look through
-- the whole history for its first event every time.)
INSERT INTO quota_sched.service_environment (name) VALUES ('u_empty_env');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('u_empty', 'u_empty_env');
SELECT quota_sched.rollup('2026-01-01 02:00+00') >= 3 AS rolled_up;
SELECT job_queue, rolled_until FROM quota_sched.usage_rollup WHERE job_queue IN ('u_queue', 'u_empty')
 ORDER BY 1;
SELECT quota_share AS share, hour, used, own, borrowed, idle, usage_end, capacity_end,
	   dispatched, waits
  FROM quota_sched.usage_hourly WHERE job_queue = 'u_queue' ORDER BY hour, quota_share NULLS FIRST;
SELECT count(*) AS differing FROM (
	(TABLE before_rollup EXCEPT
	 SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00'))
	UNION ALL
	(SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00')
	 EXCEPT TABLE before_rollup)) d;

-- The history before 02:00 pruned: hours 0 and 1 come from the rollup, and
-- hour 2 from the history after it, starting from the levels the rollup
-- kept; the report is the same.
DELETE FROM quota_sched.job_event WHERE job_queue = 'u_queue' AND at < '2026-01-01 02:00+00';
SELECT count(*) AS differing FROM (
	(TABLE before_rollup EXCEPT
	 SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00'))
	UNION ALL
	(SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 03:00+00')
	 EXCEPT TABLE before_rollup)) d;

-- A retry: 9004 (B, 1 gpu) is submitted at 04:00, dispatched at 04:10,
-- its first attempt fails at 04:30 and it is requeued; dispatched again at
-- 04:50, it succeeds at 05:00.  By hand, hour 4 of B: used 20 + 10 minutes
-- = 1800 s, two dispatches (waits 600 and 1200 s: p50 600, p95 1200), no
-- job ended; hour 5: one success, nothing held.
SELECT pg_temp.ev(9004, 'B', 1, '04:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9004, 'B', 1, '04:10', 'RUNNABLE', 'SCHEDULED', '10 min'),
	   pg_temp.ev(9004, 'B', 1, '04:11', 'SCHEDULED', 'RUNNING'),
	   pg_temp.ev(9004, 'B', 1, '04:30', 'RUNNING', 'RUNNABLE'),
	   pg_temp.ev(9004, 'B', 1, '04:50', 'RUNNABLE', 'SCHEDULED', '20 min'),
	   pg_temp.ev(9004, 'B', 1, '05:00', 'SCHEDULED', 'SUCCEEDED');
SELECT bucket_start, quota_share AS share, used_instance_seconds AS used,
	   idle_instance_seconds AS idle, dispatched, succeeded, failed, preempted,
	   wait_p50_seconds AS p50, wait_p95_seconds AS p95
  FROM quota_sched.utilization('u_queue', '2026-01-01 04:00+00', '2026-01-01 06:00+00')
 WHERE quota_share = 'B';

-- Long ranges cost their buckets, not their hours (issue 20, item 2).  30
-- years in one bucket (10957 days; with at most 20 MB of temporary files,
-- where the work by the hour wrote some 300 MB): used, own, borrowed and
-- the counts are the sums of the first six hours, hourly (nothing is held
-- after them); the capacity is that of every change of the configuration
-- (config_event: those above, and the rows this test inserted, recorded
-- now), each held from its time to the end; idle grows by the capacity
-- after the six hours.  The waits are all of the bucket's dispatches: A's
-- 1800, 3600 and 1800 s, B's 600, 600 and 1200 s.  The capacity and idle
-- of the rows recorded now have microseconds: compared within 0.001
-- instance-seconds, as a rounding to 3 decimals of a float8 of 1e9 seconds
-- may fall on either side of a half.
SET temp_file_limit = '20MB';
WITH short AS (
	SELECT quota_share, sum(capacity * 3600) AS cap, sum(used_instance_seconds) AS used,
		   sum(own_instance_seconds) AS own, sum(borrowed_instance_seconds) AS borrowed,
		   sum(idle_instance_seconds) AS idle, sum(dispatched) AS dispatched,
		   sum(succeeded) AS succeeded, sum(failed) AS failed, sum(preempted) AS preempted,
		   sum(preempting) AS preempting
	  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 06:00+00')
	 GROUP BY 1),
config AS (
	SELECT CASE c.object WHEN 'quota_share' THEN c.name END AS quota_share,
		   sum((quota_sched.capacity_of(c.new -> 'capacity_limits', 'gpu')
				- quota_sched.capacity_of(c.old -> 'capacity_limits', 'gpu'))
			   * extract(epoch FROM '2056-01-01 00:00+00' - greatest(c.at, '2026-01-01 00:00+00'))) AS cap
	  FROM quota_sched.config_event c
	 WHERE (c.object = 'quota_share' AND c.job_queue = 'u_queue')
		OR (c.object = 'service_environment' AND c.name = 'u_env')
	 GROUP BY 1),
long AS (
	SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2056-01-01 00:00+00',
										  '10957 days'))
SELECT l.bucket_start, l.quota_share AS share,
	   abs((l.capacity * extract(epoch FROM interval '10957 days'))::numeric - c.cap)
		 < 0.001 AS capacity_ok,
	   l.used_instance_seconds AS used, l.used_instance_seconds = s.used AS used_ok,
	   l.own_instance_seconds IS NOT DISTINCT FROM s.own AS own_ok,
	   l.borrowed_instance_seconds IS NOT DISTINCT FROM s.borrowed AS borrowed_ok,
	   abs(l.idle_instance_seconds::numeric - (s.idle::numeric + c.cap - s.cap::numeric))
		 < 0.001 AS idle_ok,
	   (l.dispatched, l.succeeded, l.failed, l.preempted, l.preempting)
		 = (s.dispatched, s.succeeded, s.failed, s.preempted, s.preempting) AS counts_ok,
	   l.dispatched, l.wait_p50_seconds AS p50, l.wait_p95_seconds AS p95
  FROM long l
  JOIN short s ON s.quota_share IS NOT DISTINCT FROM l.quota_share
  JOIN config c ON c.quota_share IS NOT DISTINCT FROM l.quota_share
 ORDER BY 2 NULLS FIRST;
-- 30 years up to 06:00 in one bucket: the sums of the six hours.
SELECT l.quota_share AS share,
	   round((l.capacity * extract(epoch FROM interval '10957 days'))::numeric, 3)
		 = round(s.cap::numeric, 3) AS capacity_ok,
	   (l.used_instance_seconds, l.own_instance_seconds, l.borrowed_instance_seconds,
		l.idle_instance_seconds, l.dispatched, l.succeeded, l.failed, l.preempted, l.preempting)
		 IS NOT DISTINCT FROM
	   (s.used, s.own, s.borrowed, s.idle, s.dispatched, s.succeeded, s.failed, s.preempted,
		s.preempting) AS sums_ok
  FROM quota_sched.utilization('u_queue', '1996-01-02 06:00+00', '2026-01-01 06:00+00', '10957 days') l
  JOIN (SELECT quota_share, sum(capacity * 3600) AS cap, sum(used_instance_seconds) AS used,
			   sum(own_instance_seconds) AS own, sum(borrowed_instance_seconds) AS borrowed,
			   sum(idle_instance_seconds) AS idle, sum(dispatched) AS dispatched,
			   sum(succeeded) AS succeeded, sum(failed) AS failed, sum(preempted) AS preempted,
			   sum(preempting) AS preempting
		  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 06:00+00')
		 GROUP BY 1) s ON s.quota_share IS NOT DISTINCT FROM l.quota_share
 ORDER BY 1 NULLS FIRST;
-- Buckets of 5 hours: the first holds rollup hours (0 and 1) and history
-- (2 to 4), the second history and the hours after now; the same sums as
-- the hourly report's.
SELECT count(*) AS differing FROM (
	(SELECT bucket_start, quota_share, capacity_unit, round(capacity::numeric, 6) AS capacity,
			used_instance_seconds, idle_instance_seconds, dispatched, succeeded, failed, preempted
	   FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 10:00+00', '5 hours')
	 EXCEPT
	 SELECT date_bin('5 hours', bucket_start, '2026-01-01 00:00+00'), quota_share, capacity_unit,
			round((sum(capacity) / 5)::numeric, 6), sum(used_instance_seconds),
			sum(idle_instance_seconds), sum(dispatched), sum(succeeded), sum(failed),
			sum(preempted)
	   FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-01 10:00+00')
	  GROUP BY 1, 2, 3)) d;
-- The widest range accepted (22023 beyond, below): from 4713 BC to the
-- year 285000, in 106 buckets of a million days, 104 of them (from the
-- one 2026 is in) with rows for A, B and the environment; A used 13500
-- instance-seconds in all.
SELECT count(*) AS rows, sum(used_instance_seconds) FILTER (WHERE quota_share = 'A') AS used_a
  FROM quota_sched.utilization('u_queue', '4713-11-24 00:00+00 BC', '285000-01-01 00:00+00',
							   '1000000 days');
RESET temp_file_limit;

-- Cancellations apart from failures (issue 22, item 2).  In hour 7, three
-- jobs of B (1 gpu), each dispatched at 07:05 after 5 minutes: 9005 is
-- terminated unclaimed at 07:10 (terminate() writes its TERMINATE event
-- and fails it at once), 9006 is terminated while it runs (its TERMINATE
-- event at 07:20, its agent reports it stopped at 07:30, it fails), and
-- 9007 fails by itself at 07:40.  By hand: three dispatches, one failure,
-- two terminations; used 300 + 1500 + 2100 = 3900 instance-seconds.  The
-- same after the rollup, which keeps them apart (usage_hourly, and the
-- totals metrics() counts from: there one stop TERMINATED, 9006's; 9005
-- was failed at once, in the transaction of its TERMINATE event).
CREATE FUNCTION pg_temp.terminate_ev(job bigint, t text, s text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, reason, actor, kind,
									   job_queue, quota_share, capacity_unit, instance_count,
									   attempt, priority)
	VALUES (job, ('2026-01-01 ' || t || '+00')::timestamptz, s, s, 'not needed', 'x', 'TERMINATE',
			'u_queue', 'B', 'gpu', 1, 1, 0)
$$;
SELECT pg_temp.ev(9005, 'B', 1, '07:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9005, 'B', 1, '07:05', 'RUNNABLE', 'SCHEDULED', '5 min'),
	   pg_temp.terminate_ev(9005, '07:10', 'SCHEDULED'),
	   pg_temp.ev(9005, 'B', 1, '07:10', 'SCHEDULED', 'FAILED'),
	   pg_temp.ev(9006, 'B', 1, '07:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9006, 'B', 1, '07:05', 'RUNNABLE', 'SCHEDULED', '5 min'),
	   pg_temp.ev(9006, 'B', 1, '07:06', 'SCHEDULED', 'RUNNING'),
	   pg_temp.terminate_ev(9006, '07:20', 'RUNNING'),
	   pg_temp.ev(9006, 'B', 1, '07:30', 'RUNNING', 'FAILED'),
	   pg_temp.ev(9007, 'B', 1, '07:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9007, 'B', 1, '07:05', 'RUNNABLE', 'SCHEDULED', '5 min'),
	   pg_temp.ev(9007, 'B', 1, '07:06', 'SCHEDULED', 'RUNNING'),
	   pg_temp.ev(9007, 'B', 1, '07:40', 'RUNNING', 'FAILED');
CREATE TEMP TABLE cancel_before AS
SELECT bucket_start, quota_share AS share, used_instance_seconds AS used, dispatched, succeeded,
	   failed, terminated
  FROM quota_sched.utilization('u_queue', '2026-01-01 07:00+00', '2026-01-01 08:00+00');
TABLE cancel_before ORDER BY share NULLS FIRST;
SELECT quota_sched.rollup('2026-01-01 09:00+00') > 0 AS rolled_up;
SELECT quota_share AS share, hour, used, dispatched, succeeded, failed, terminated
  FROM quota_sched.usage_hourly
 WHERE job_queue = 'u_queue' AND hour = '2026-01-01 07:00+00' ORDER BY quota_share NULLS FIRST;
SELECT counter, value FROM quota_sched.usage_totals
 WHERE job_queue = 'u_queue' AND quota_share = 'B' AND counter IN ('failed', 'terminated', 'stop:TERMINATED')
 ORDER BY 1;
SELECT count(*) AS differing FROM (
	(TABLE cancel_before EXCEPT
	 SELECT bucket_start, quota_share, used_instance_seconds, dispatched, succeeded, failed, terminated
	   FROM quota_sched.utilization('u_queue', '2026-01-01 07:00+00', '2026-01-01 08:00+00'))) d;
-- in one bucket of a day, from the rollup
SELECT quota_share AS share, failed, terminated
  FROM quota_sched.utilization('u_queue', '2026-01-01 00:00+00', '2026-01-02 00:00+00', '1 day')
 ORDER BY 1 NULLS FIRST;

-- Churn (issue 22, item 5): of the attempts preemption ended, those that
-- had run less than a minute since their dispatch.  In hour 9, 9008 (A,
-- 1 gpu) is dispatched at 09:00:00 and preempted for 9003 at 09:00:40;
-- 9009 (A, 1 gpu) is dispatched at 09:10 and preempted at 09:15.  By
-- hand: A preempted 2, of them early 1; B (9003's) preempting 2.  The
-- same after the rollup (usage_hourly.preempted_early).
SELECT pg_temp.ev(9008, 'A', 1, '09:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9008, 'A', 1, '09:00:00', 'RUNNABLE', 'SCHEDULED', '0 s'),
	   pg_temp.ev(9008, 'A', 1, '09:00:40', 'SCHEDULED', 'RUNNABLE', NULL, 9003),
	   pg_temp.ev(9009, 'A', 1, '09:00', NULL, 'RUNNABLE'),
	   pg_temp.ev(9009, 'A', 1, '09:10', 'RUNNABLE', 'SCHEDULED', '10 min'),
	   pg_temp.ev(9009, 'A', 1, '09:15', 'SCHEDULED', 'RUNNABLE', NULL, 9003);
CREATE TEMP TABLE churn_before AS
SELECT bucket_start, quota_share AS share, preempted, preempting, preempted_early
  FROM quota_sched.utilization('u_queue', '2026-01-01 09:00+00', '2026-01-01 10:00+00');
TABLE churn_before ORDER BY share NULLS FIRST;
SELECT quota_sched.rollup('2026-01-01 10:00+00') > 0 AS rolled_up;
SELECT quota_share AS share, preempted, preempting, preempted_early FROM quota_sched.usage_hourly
 WHERE job_queue = 'u_queue' AND hour = '2026-01-01 09:00+00' ORDER BY quota_share NULLS FIRST;
SELECT count(*) AS differing FROM (
	(TABLE churn_before EXCEPT
	 SELECT bucket_start, quota_share, preempted, preempting, preempted_early
	   FROM quota_sched.utilization('u_queue', '2026-01-01 09:00+00', '2026-01-01 10:00+00'))) d;

-- Early is before the victim's share's min_runtime (issue 37, item 5), as
-- the configuration's history has it at the preemption; a minute where
-- the share has none.  At 10:00 A's min_runtime becomes 10 minutes and B's
-- 30 seconds; at 11:30 A's is unset again (the shares' rows now have none
-- at all).  In hour 11: 9010 (A) is dispatched at 11:00 and preempted at
-- 11:05 for 9011: early (5 minutes, short of A's 10), though it ran more
-- than a minute; 9011 (B) is dispatched at 11:05 and preempted at 11:05:45
-- for 9010: not early (45 s, past B's 30), though it ran less than a
-- minute; 9012 (A) is dispatched at 11:40 and preempted at 11:42 for 9011:
-- not early (A has no min_runtime then: 2 minutes, past a minute).  By hand: A
-- preempted 2, early 1, preempting 1; B preempted 1, early 0, preempting
-- 2.  The same after the rollup.
INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new) VALUES
 ('2026-01-01 10:00+00', 'x', 'quota_share', 'u_queue', 'A', 'UPDATE', '{"capacity_limits": {"gpu": 1}}',
  '{"capacity_limits": {"gpu": 1}, "min_runtime": "00:10:00"}'),
 ('2026-01-01 10:00+00', 'x', 'quota_share', 'u_queue', 'B', 'UPDATE', '{"capacity_limits": {"gpu": 2}}',
  '{"capacity_limits": {"gpu": 2}, "min_runtime": "00:00:30"}'),
 ('2026-01-01 11:30+00', 'x', 'quota_share', 'u_queue', 'A', 'UPDATE',
  '{"capacity_limits": {"gpu": 1}, "min_runtime": "00:10:00"}',
  '{"capacity_limits": {"gpu": 1}, "min_runtime": null}');
SELECT pg_temp.ev(9010, 'A', 1, '10:50', NULL, 'RUNNABLE'),
	   pg_temp.ev(9010, 'A', 1, '11:00', 'RUNNABLE', 'SCHEDULED', '10 min'),
	   pg_temp.ev(9010, 'A', 1, '11:05', 'SCHEDULED', 'RUNNABLE', NULL, 9011),
	   pg_temp.ev(9011, 'B', 1, '10:50', NULL, 'RUNNABLE'),
	   pg_temp.ev(9011, 'B', 1, '11:05', 'RUNNABLE', 'SCHEDULED', '15 min'),
	   pg_temp.ev(9011, 'B', 1, '11:05:45', 'SCHEDULED', 'RUNNABLE', NULL, 9010),
	   pg_temp.ev(9012, 'A', 1, '11:30', NULL, 'RUNNABLE'),
	   pg_temp.ev(9012, 'A', 1, '11:40', 'RUNNABLE', 'SCHEDULED', '10 min'),
	   pg_temp.ev(9012, 'A', 1, '11:42', 'SCHEDULED', 'RUNNABLE', NULL, 9011);
CREATE TEMP TABLE early_before AS
SELECT bucket_start, quota_share AS share, preempted, preempting, preempted_early
  FROM quota_sched.utilization('u_queue', '2026-01-01 11:00+00', '2026-01-01 12:00+00');
TABLE early_before ORDER BY share NULLS FIRST;
SELECT quota_sched.rollup('2026-01-01 12:00+00') > 0 AS rolled_up;
SELECT quota_share AS share, preempted, preempting, preempted_early FROM quota_sched.usage_hourly
 WHERE job_queue = 'u_queue' AND hour = '2026-01-01 11:00+00' ORDER BY quota_share NULLS FIRST;
SELECT quota_share AS share, value AS preempted_early FROM quota_sched.usage_totals
 WHERE job_queue = 'u_queue' AND counter = 'preempted_early' ORDER BY 1;

-- Bad arguments: 22023.
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('no_such_queue', '2026-01-01', '2026-01-02')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-02', '2026-01-01')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01', '2026-01-02', '500 milliseconds')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01', '2027-01-01', '1 minute')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01', '2026-01-03', '1 second')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01', '2026-03-01', '1 month')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', NULL, '2026-03-01')$$);
-- infinite, or longer than an interval holds (292,000 years: to - from
-- wrapped around, and let the work by the hour through)
SET statement_timeout = '20s';
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '2026-01-01', 'infinity')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '-infinity', '2026-01-01', '100000 days')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '1970-01-01 00:00+00', '294276-12-31 23:00+00', '1 hour')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.utilization('u_queue', '4713-11-24 00:00+00 BC', '294276-12-31 23:00+00', '2147483647 days')$$);
-- rollup(): never past now, and a finite up_to (issue 20, item 3)
SELECT pg_temp.refused($$SELECT quota_sched.rollup(NULL)$$);
SELECT pg_temp.refused($$SELECT quota_sched.rollup('infinity')$$);
SELECT pg_temp.refused($$SELECT quota_sched.rollup('-infinity')$$);
RESET statement_timeout;

-- Clean up.
DELETE FROM quota_sched.job_event WHERE job_queue = 'u_queue';
DELETE FROM quota_sched.usage_hourly WHERE job_queue = 'u_queue';
DELETE FROM quota_sched.usage_totals WHERE job_queue = 'u_queue';
DELETE FROM quota_sched.usage_rollup WHERE job_queue = 'u_queue';
DELETE FROM quota_sched.usage_hourly WHERE job_queue = 'u_empty';
DELETE FROM quota_sched.usage_rollup WHERE job_queue = 'u_empty';
DELETE FROM quota_sched.job_queue WHERE name IN ('u_queue', 'u_empty');
DELETE FROM quota_sched.service_environment WHERE name IN ('u_env', 'u_empty_env');
