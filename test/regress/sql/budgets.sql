-- scheduling.md 3.11: budgets.  A share's budget maps a unit to
-- instance-hours per calendar period (budget_period DAY, WEEK from Monday,
-- or MONTH, in UTC); spent(S,u) is what its jobs held since the period
-- began, kept by the counters of held capacity.  A RUNNABLE job of a share
-- that spent its budget of the unit is not dispatched, gets no victims,
-- loses a promise at the re-check and wants none of its share's idle
-- capacity (which stays lendable); a budget never stops a job that holds.
--
-- Environment of 8000 gpus; vision and nlp own 4000 each.  Times are never
-- printed: a figure that depends on the clock is compared with another.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('bu_env', '{"gpu": 8000, "cpu": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('bu_queue', 'bu_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit, budget)
VALUES ('bu_queue', 'vision', '{"gpu": 4000, "cpu": 5}', 'LEND_AND_BORROW', -1, '{"gpu": 1}'),
       ('bu_queue', 'nlp', '{"gpu": 4000, "cpu": 5}', 'LEND_AND_BORROW', -1, '{}');

-- The view: one row per share and unit of a budget (cpu has none), the
-- period the current month.
SELECT quota_share, capacity_unit, budget_hours, spent_hours, exhausted,
	   period_start = date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS month_start,
	   period_end = (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC'
		 AS month_end
  FROM quota_sched.share_budget WHERE job_queue = 'bu_queue';

------------------------------------------------------------------------
-- spent is what the share's jobs held: 3600 gpus for at least a second
-- spend the budget of one instance-hour, whatever runs as the clock goes.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('bu_big', 'bu_queue', 'vision', 'gpu', 3600);
SELECT * FROM pg_temp.pass('bu_queue');
-- wait (polling, each check its own transaction) until it is spent
DO $$
BEGIN
	FOR i IN 1..1200 LOOP
		EXIT WHEN (SELECT exhausted FROM quota_sched.share_budget
					WHERE job_queue = 'bu_queue' AND quota_share = 'vision');
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
SELECT quota_share, capacity_unit, budget_hours, spent_hours >= 1 AS spent_it, exhausted
  FROM quota_sched.share_budget WHERE job_queue = 'bu_queue';
-- the same figure as utilization()'s use of the month, from the history
SELECT abs(b.spent_hours * 3600 - u.used_instance_seconds) < 0.001 AS spent_is_used
  FROM quota_sched.share_budget b,
	   quota_sched.utilization('bu_queue', b.period_start, now(), now() - b.period_start) u
 WHERE b.job_queue = 'bu_queue' AND u.quota_share = 'vision' AND u.capacity_unit = 'gpu';

-- Over budget: vision's next job of gpu waits, its cpu job (no budget)
-- runs, and bu_big keeps running (a budget never stops a holding job).
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('bu_v_next', 'bu_queue', 'vision', 'gpu', 300),
       ('bu_v_cpu', 'bu_queue', 'vision', 'cpu', 1),
       ('bu_v_huge', 'bu_queue', 'vision', 'gpu', 9000);
SELECT * FROM pg_temp.pass('bu_queue');
SELECT name, state, stop_reason FROM quota_sched.job WHERE job_queue = 'bu_queue' ORDER BY id;
-- its status_reason says so, with the end of the period; a misconfiguration
-- (bu_v_huge needs more than the environment has) takes precedence
SELECT j.name, regexp_replace(j.status_reason, ' until .*', '') AS status_reason,
	   substring(j.status_reason from ' until (.*)$')::timestamptz = b.period_end AS until_the_period_ends
  FROM quota_sched.job j, quota_sched.share_budget b
 WHERE j.job_queue = 'bu_queue' AND j.state = 'RUNNABLE' AND b.job_queue = 'bu_queue'
 ORDER BY j.id;
SELECT e ->> 'blocked_by' AS blocked_by, e -> 'budget_hours' AS budget_hours,
	   (e ->> 'spent_hours')::float8 >= 1 AS spent_it, e ->> 'budget_period' AS budget_period,
	   (e ->> 'period_end')::timestamptz = b.period_end AS ends_with_the_period
  FROM quota_sched.job j, quota_sched.explain(j.id) e, quota_sched.share_budget b
 WHERE j.name = 'bu_v_next' AND b.job_queue = 'bu_queue' AND b.quota_share = 'vision';

-- Its share's idle capacity stays lendable: vision holds 3600 of its
-- 4000; bu_v_next (300) fits in the 400 idle but wants none of it, so
-- nlp borrows all 400 (4000 own + 400).
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('bu_n_own', 'bu_queue', 'nlp', 'gpu', 4000),
       ('bu_n_borrow', 'bu_queue', 'nlp', 'gpu', 400);
SELECT * FROM pg_temp.pass('bu_queue');
-- an agent claims them all (a claimed victim stops when its agent says so)
SELECT count(*) AS claimed FROM quota_sched.claim('bu_agent', 'bu_queue', max_jobs => 10);

-- No victims: vision is owed the 400 nlp borrows, yet bu_v_next reclaims
-- nothing while over budget.
SELECT * FROM pg_temp.pass('bu_queue');
SELECT name, state, stop_reason FROM quota_sched.job WHERE job_queue = 'bu_queue' ORDER BY id;

-- A larger budget: bu_v_next reclaims its capacity (cross-share preemption
-- of nlp's borrower) and is promised it.
UPDATE quota_sched.quota_share SET budget = '{"gpu": 1000}' WHERE job_queue = 'bu_queue' AND name = 'vision';
SELECT * FROM pg_temp.pass('bu_queue');
SELECT name, state, stop_reason, promised_at IS NOT NULL AS promised, status_reason
  FROM quota_sched.job WHERE job_queue = 'bu_queue' ORDER BY id;

-- A budget of 0 forbids the unit: the promise lapses at the re-check.
UPDATE quota_sched.quota_share SET budget = '{"gpu": 0}' WHERE job_queue = 'bu_queue' AND name = 'vision';
SELECT * FROM pg_temp.pass('bu_queue');
SELECT name, state, promised_at IS NOT NULL AS promised, regexp_replace(status_reason, ' until .*', '')
  FROM quota_sched.job WHERE job_queue = 'bu_queue' AND name = 'bu_v_next';
SELECT kind FROM quota_sched.job_event
 WHERE job_id = (SELECT id FROM quota_sched.job WHERE name = 'bu_v_next') AND kind LIKE 'PROMISE%'
 ORDER BY id;
SELECT quota_share, budget_hours, exhausted FROM quota_sched.share_budget WHERE job_queue = 'bu_queue';

-- metrics(): the budget and what was spent, per share and unit
SELECT regexp_replace(l, ' [0-9.]+$', '') AS metric,
	   (regexp_match(l, ' ([0-9.]+)$'))[1]::float8 > 0 AS positive
  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l
 WHERE l LIKE 'quota_sched_share_budget%' AND l LIKE '%bu_queue%';
-- in instance-seconds, Prometheus's base unit: share_budget's hours times
-- 3600 (one statement: the same now() for both)
UPDATE quota_sched.quota_share SET budget = '{"gpu": 2}' WHERE job_queue = 'bu_queue' AND name = 'vision';
SELECT (regexp_match(m.text, 'quota_sched_share_budget_instance_seconds\{job_queue="bu_queue"[^}]*\} (\S+)'))[1]
		 AS budget_seconds,
	   (regexp_match(m.text, 'quota_sched_share_budget_spent_instance_seconds\{job_queue="bu_queue"[^}]*\} (\S+)'))[1]::numeric
		 = round((b.spent_hours * 3600)::numeric, 3) AS spent_in_seconds
  FROM quota_sched.metrics() AS m(text), quota_sched.share_budget b
 WHERE b.job_queue = 'bu_queue' AND b.quota_share = 'vision';
UPDATE quota_sched.quota_share SET budget = '{"gpu": 0}' WHERE job_queue = 'bu_queue' AND name = 'vision';

------------------------------------------------------------------------
-- A fraction of an instance-hour (0.4): a budget of 0.5 a DAY is 1800
-- instance-seconds.  h30 and h29 each run a job of 1 gpu; their counters
-- are then moved on by hand to what the job held in 30 and 29 minutes
-- (spent_day, with changed_at now: the pass of the same transaction reads
-- exactly that).  h30 spent its budget: its next job waits
-- BUDGET_EXHAUSTED; h29 has a minute left: its next job runs.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('bu_frac_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('bu_frac', 'bu_frac_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, budget, budget_period)
VALUES ('bu_frac', 'h30', '{"gpu": 4}', 'RESERVE', '{"gpu": 0.5}', 'DAY'),
       ('bu_frac', 'h29', '{"gpu": 4}', 'RESERVE', '{"gpu": 0.5}', 'DAY');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bu_h30_first', 'bu_frac', 'h30', 'gpu'), ('bu_h29_first', 'bu_frac', 'h29', 'gpu');
SELECT * FROM pg_temp.pass('bu_frac');
BEGIN;
UPDATE quota_sched.held_capacity
   SET spent_day = instances * CASE quota_share WHEN 'h30' THEN 30 ELSE 29 END * 60,
	   spent_week = instances * CASE quota_share WHEN 'h30' THEN 30 ELSE 29 END * 60,
	   spent_month = instances * CASE quota_share WHEN 'h30' THEN 30 ELSE 29 END * 60,
	   changed_at = now()
 WHERE job_queue = 'bu_frac';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bu_h30_next', 'bu_frac', 'h30', 'gpu'), ('bu_h29_next', 'bu_frac', 'h29', 'gpu');
SELECT * FROM pg_temp.pass('bu_frac');
SELECT name, state, regexp_replace(status_reason, ' until .*', '') AS status_reason
  FROM quota_sched.job WHERE job_queue = 'bu_frac' ORDER BY id;
SELECT quota_share, budget_hours, spent_hours * 3600 AS spent_seconds, exhausted
  FROM quota_sched.share_budget WHERE job_queue = 'bu_frac' ORDER BY quota_share;
SELECT e ->> 'blocked_by' AS blocked_by, e -> 'budget_hours' AS budget_hours,
	   e -> 'spent_hours' AS spent_hours, e ->> 'budget_period' AS budget_period, e ->> 'detail' ~ 'budget of 0.5 instance-hours' AS detail
  FROM quota_sched.job j, quota_sched.explain(j.id) e WHERE j.name = 'bu_h30_next';
-- metrics(): 0.5 instance-hours are 1800 instance-seconds
SELECT regexp_replace(l, '^(\S+)\{.*quota_share="([^"]+)".*\} ', '\1 \2 ') AS sample
  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l
 WHERE l LIKE 'quota_sched_share_budget%' AND l LIKE '%bu_frac%' ORDER BY 1;
COMMIT;

------------------------------------------------------------------------
-- The closed forms, at fixed times (UTC): what a stripe spent carries on
-- within its period and starts again with the next; a change committed
-- out of order gives the same figure.
------------------------------------------------------------------------
SET TimeZone = 'UTC';
SELECT p AS period, quota_sched.period_start('2026-03-04 05:06:07+00', p) AS period_start,
	   quota_sched.period_end('2026-03-04 05:06:07+00', p) AS period_end
  FROM unnest(ARRAY['DAY', 'WEEK', 'MONTH']) AS p;
-- 2 instances since 2026-01-31 23:00 held 3600 s of them before February
SELECT quota_sched.spent_at(100, '2026-01-31 23:00+00', 2, '2026-01-31 23:30+00', 'MONTH') AS same_month,
	   quota_sched.spent_at(100, '2026-01-31 23:00+00', 2, '2026-02-01 01:00+00', 'MONTH') AS next_month,
	   quota_sched.spent_at(100, '2026-01-31 23:00+00', 2, '2026-02-01 01:00+00', 'WEEK') AS same_week;
-- +3 at 10:00 and -1 at 10:30, written in either order, read at 11:00:
-- 3 x 3600 - 1 x 1800 = 9000 either way
WITH a AS (SELECT quota_sched.spent_after(0, '2026-03-04 10:00+00', 0, 3, '2026-03-04 10:00+00', 'DAY') AS s),
	 b AS (SELECT quota_sched.spent_after(a.s, '2026-03-04 10:00+00', 3, -1, '2026-03-04 10:30+00', 'DAY') AS s FROM a),
	 c AS (SELECT quota_sched.spent_after(0, '2026-03-04 10:30+00', 0, -1, '2026-03-04 10:30+00', 'DAY') AS s),
	 d AS (SELECT quota_sched.spent_after(c.s, '2026-03-04 10:30+00', -1, 3, '2026-03-04 10:00+00', 'DAY') AS s FROM c)
SELECT quota_sched.spent_at(b.s, '2026-03-04 10:30+00', 2, '2026-03-04 11:00+00', 'DAY') AS in_order,
	   quota_sched.spent_at(d.s, '2026-03-04 10:30+00', 2, '2026-03-04 11:00+00', 'DAY') AS out_of_order
  FROM b, d;
-- a change from the day before, written after one of today: counted from midnight
SELECT quota_sched.spent_after(0, '2026-03-04 01:00+00', 1, 2, '2026-03-03 23:00+00', 'DAY') AS late;
RESET TimeZone;

------------------------------------------------------------------------
-- Bad input: the CHECKs refuse it (23514), naming the share and the
-- value.  A budget is a number of instance-hours from 0 to 2147483647 with
-- at most 3 decimals: not negative, not a string, not 1e400 nor a
-- ten-thousandth.  JSON has no NaN: the parser refuses the literal
-- (22P02), and a NaN made jsonb is the string "NaN".
------------------------------------------------------------------------
SELECT v AS budget, pg_temp.refused(format(
	$$UPDATE quota_sched.quota_share SET budget = %L WHERE job_queue = 'bu_queue' AND name = 'nlp'$$, v))
  FROM unnest(ARRAY['{"gpu": -1}', '[1]', '{"bad unit": 1}', '{"gpu": 3000000000}',
					'{"gpu": -0.5}', '{"gpu": "0.5"}', '{"gpu": 1e400}', '{"gpu": 0.0005}',
					'{"gpu": 2147483647.5}', '{"gpu": NaN}', '{"gpu": Infinity}']) AS v;
SELECT v AS budget, pg_temp.refused(format(
	$$UPDATE quota_sched.quota_share SET budget = jsonb_build_object('gpu', %L::float8)
	   WHERE job_queue = 'bu_queue' AND name = 'nlp'$$, v))
  FROM unnest(ARRAY['NaN', 'Infinity']) AS v;
-- accepted: a fraction, trailing zeros, a thousandth, the bound
BEGIN;
SELECT v AS budget, pg_temp.refused(format(
	$$UPDATE quota_sched.quota_share SET budget = %L WHERE job_queue = 'bu_queue' AND name = 'nlp'$$, v))
  FROM unnest(ARRAY['{"gpu": 0.5}', '{"gpu": 1.500}', '{"gpu": 0.001}', '{"gpu": 2147483647.000}']) AS v;
SELECT budget, budget_hours FROM quota_sched.quota_share s
  JOIN quota_sched.share_budget b ON b.job_queue = s.job_queue AND b.quota_share = s.name
 WHERE s.job_queue = 'bu_queue' AND s.name = 'nlp';
ROLLBACK;
SELECT v AS budget_period, pg_temp.refused(format(
	$$UPDATE quota_sched.quota_share SET budget_period = %L WHERE job_queue = 'bu_queue' AND name = 'nlp'$$, v))
  FROM unnest(ARRAY['YEAR', 'month', '', NULL]) AS v;
-- nothing changed
SELECT name, budget, budget_period FROM quota_sched.quota_share WHERE job_queue = 'bu_queue' ORDER BY name;
SELECT pg_temp.refused($$SELECT quota_sched.period_end('294276-12-31', 'MONTH')$$) AS past_the_end,
	   pg_temp.refused($$SELECT quota_sched.spent_at(0, 'infinity', 1, now(), 'DAY')$$) AS infinite;
