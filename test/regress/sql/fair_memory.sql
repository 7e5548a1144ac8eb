-- scheduling.md 3.12: fair share with memory.  With borrow_order FAIR and a
-- fair_half_life H, the second choice of 3.2 (no job under the cursors fits
-- in its own capacity) takes the job whose share has the least
-- recent_borrow / weight: what it borrowed, each instance-second weighted
-- by 2^(-age / H); then the 0.2 FAIR key, then (queued_at, id).
--
-- Two queues alike but for the half-life: an environment of 100 gpus;
-- lender L owns 60 and uses 50 of them; A and B own 20 each.  A borrows 40
-- for a while, then stops; then A and B each want 30 (10 borrowed), and
-- only 10 can be lent: without memory A's older job wins the tie, with it
-- B, who borrowed nothing lately.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('fm_env', '{"gpu": 100}'), ('fm_env0', '{"gpu": 100}');
INSERT INTO quota_sched.job_queue (name, service_environment, borrow_order, fair_half_life)
VALUES ('fm_queue', 'fm_env', 'FAIR', '1 hour'), ('fm_queue0', 'fm_env0', 'FAIR', NULL);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
SELECT q, s, c::jsonb, t, b
  FROM unnest(ARRAY['fm_queue', 'fm_queue0']) AS q,
	   (VALUES ('L', '{"gpu": 60}', 'LEND', -1), ('A', '{"gpu": 20}', 'LEND_AND_BORROW', -1),
			   ('B', '{"gpu": 20}', 'LEND_AND_BORROW', -1)) AS v(s, c, t, b);

-- A borrows 40 of L's gpus (L's own job comes later)
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'a_heavy', q, 'A', 'gpu', 60 FROM unnest(ARRAY['fm_queue', 'fm_queue0']) AS q;
SELECT * FROM pg_temp.pass('fm_queue');
SELECT * FROM pg_temp.pass('fm_queue0');
-- the changes of held capacity of the queue with a half-life are noted for
-- its next pass (the other queue's are not)
SELECT job_queue, quota_share, capacity_unit, delta FROM quota_sched.held_change ORDER BY 1, 2;
-- wait (polling) until the clock has moved on
DO $$
DECLARE
	t0 timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() < t0 + interval '50 milliseconds' LOOP
		PERFORM pg_sleep(0.01);
	END LOOP;
END
$$;
SELECT j.job_queue, t.name, t.state
  FROM quota_sched.job j, quota_sched.terminate(j.id, 'done borrowing') t
 WHERE j.name = 'a_heavy' ORDER BY j.job_queue;
SELECT * FROM pg_temp.pass('fm_queue');
SELECT * FROM pg_temp.pass('fm_queue0');
-- the pass read the changes and deleted them; its memory has A's borrowing
SELECT count(*) AS changes_left FROM quota_sched.held_change WHERE job_queue = 'fm_queue';
SELECT quota_share, capacity_unit, held, capacity, recent > 0 AS remembers
  FROM quota_sched.borrow_memory WHERE job_queue = 'fm_queue' ORDER BY 1;
SELECT job_queue, quota_share, recent_borrow_hours > 0 AS borrowed_lately
  FROM quota_sched.share_usage WHERE job_queue LIKE 'fm_queue%' ORDER BY 1, 2;

-- recent_borrow is exact: 40 borrowed from the dispatch to the end, decayed
-- with H = 1 hour: 40 x H / ln 2 x (2^(-(t - end) / H) - 2^(-(t - start) / H))
WITH e AS (
	SELECT min(e.at) FILTER (WHERE e.to_state = 'SCHEDULED') AS t_start,
		   min(e.at) FILTER (WHERE e.to_state = 'FAILED') AS t_end
	  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
	 WHERE j.name = 'a_heavy' AND j.job_queue = 'fm_queue'),
 u AS (SELECT now() AS t, recent_borrow_hours * 3600 AS kept FROM quota_sched.share_usage
		WHERE job_queue = 'fm_queue' AND quota_share = 'A')
SELECT abs(u.kept - 40 * 3600 / ln(2) * (power(2, -extract(epoch FROM u.t - e.t_end) / 3600)
										  - power(2, -extract(epoch FROM u.t - e.t_start) / 3600)))
	   < 1e-6 * u.kept AS exact
  FROM e, u;

-- L uses 50 of its 60; A and B each want 30 (10 borrowed), A first
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'l_own', q, 'L', 'gpu', 50 FROM unnest(ARRAY['fm_queue', 'fm_queue0']) AS q;
SELECT * FROM pg_temp.pass('fm_queue');
SELECT * FROM pg_temp.pass('fm_queue0');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'a_next', q, 'A', 'gpu', 30 FROM unnest(ARRAY['fm_queue', 'fm_queue0']) AS q;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'b_next', q, 'B', 'gpu', 30 FROM unnest(ARRAY['fm_queue', 'fm_queue0']) AS q;
-- with the half-life, B (nothing borrowed lately) gets the idle capacity
SELECT * FROM pg_temp.pass('fm_queue');
-- without, the tie of the 0.2 key (10 per weight each) goes to A's older job
SELECT * FROM pg_temp.pass('fm_queue0');

-- metrics(): the gauge, for the queue with a half-life only, in
-- instance-seconds (Prometheus's base unit): share_usage's hours times 3600
SELECT regexp_replace(l, ' [0-9.e+-]+$', '') AS metric
  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l
 WHERE l LIKE 'quota_sched_share_recent_borrow%' AND l LIKE '%fm_queue%' ORDER BY 1;
SELECT u.quota_share,
	   (regexp_match(m.text, 'quota_sched_share_recent_borrow_instance_seconds\{job_queue="fm_queue",quota_share="'
						   || u.quota_share || '"[^}]*\} (\S+)'))[1]::numeric
		 = round((u.recent_borrow_hours * 3600)::numeric, 3) AS in_seconds
  FROM quota_sched.metrics() AS m(text), quota_sched.share_usage u
 WHERE u.job_queue = 'fm_queue' ORDER BY 1;

-- Another half-life starts the memory again from 0, at the next pass.
UPDATE quota_sched.job_queue SET fair_half_life = '2 hours' WHERE name = 'fm_queue';
SELECT quota_share, recent_borrow_hours FROM quota_sched.share_usage
 WHERE job_queue = 'fm_queue' ORDER BY 1;
SELECT * FROM pg_temp.pass('fm_queue');
SELECT quota_share, half_life, recent FROM quota_sched.borrow_memory
 WHERE job_queue = 'fm_queue' ORDER BY 1;

-- Bad input (23514): out of range, or without FAIR.
SELECT v AS fair_half_life, pg_temp.refused(format(
	$$UPDATE quota_sched.job_queue SET fair_half_life = %L WHERE name = 'fm_queue0'$$, v))
  FROM unnest(ARRAY['59 seconds', '366 days', '-1 hour', '1 minute', '365 days']) AS v;
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET borrow_order = 'FIFO' WHERE name = 'fm_queue'$$)
	   AS fifo_with_a_half_life,
	   pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment, fair_half_life)
						 VALUES ('fm_fifo', 'fm_env0', '1 day')$$) AS new_fifo_queue_with_one;
SELECT name, borrow_order, fair_half_life FROM quota_sched.job_queue WHERE name LIKE 'fm_%' ORDER BY 1;
