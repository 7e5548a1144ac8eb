-- What-if (scheduling.md 3.15): replay(job_queue, from, to, changes) runs
-- the recorded workload through the passes in an ideal world, under the
-- configuration as it is (baseline) and with a change (candidate), beside
-- the history's own figures (recorded); replay_jobs says which jobs'
-- waits changed.  The history here is made by real passes and an agent.
-- The baseline agrees with the recorded history where the agent was
-- prompt (the same dispatch order, the same preemptions); each candidate
-- reacts as its rule says; changes are validated as the tables validate
-- them, and nothing is kept.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('rp_env', '{"gpu": 2}'), ('rp_env2', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('rp_queue', 'rp_env'), ('rp_queue2', 'rp_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('rp_queue', 'rp_a', '{"gpu": 1}', 'LEND_AND_BORROW'),
       ('rp_queue', 'rp_b', '{"gpu": 1}', 'LEND'),
       ('rp_queue2', 'rp_c', '{"gpu": 1}', 'RESERVE');

CREATE FUNCTION pg_temp.id(n text) RETURNS bigint LANGUAGE sql AS
$$ SELECT id FROM quota_sched.job WHERE name = n $$;
-- the agent: claims what is dispatched and reports it RUNNING
CREATE FUNCTION pg_temp.agent(q text) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT (quota_sched.report(c.id, 'rp_agent', 'RUNNING')).name
	  FROM quota_sched.claim('rp_agent', q, 'gpu', 10) c ORDER BY 1
$$;
CREATE FUNCTION pg_temp.report(n text, s text) RETURNS text LANGUAGE sql AS
$$ SELECT (quota_sched.report(pg_temp.id(n), 'rp_agent', s)).state $$;
-- outlast_gap(n): waits until job n has run for well longer than b1 came
-- after a2 (twice that, and at least 0.3 s): its work in the replay
CREATE FUNCTION pg_temp.outlast_gap(n text) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	gap interval := (SELECT b.submitted_at - a.submitted_at FROM quota_sched.job a, quota_sched.job b
					  WHERE a.name = 'a2' AND b.name = 'b1');
BEGIN
	WHILE clock_timestamp() - (SELECT started_at FROM quota_sched.job WHERE name = n)
		  < greatest(interval '0.3 seconds', 2 * gap) LOOP
		PERFORM pg_sleep(0.05);
	END LOOP;
END $$;

------------------------------------------------------------------------
-- The history.  rp_queue: a1 runs on rp_a's own gpu, a2 borrows rp_b's;
-- b1 comes and takes it back (a2 is preempted and waits); a1 ends, and a2
-- runs again on rp_a's gpu.  rp_queue2: c_low runs, c_high (priority 5)
-- waits for it (no in-share preemption).
------------------------------------------------------------------------
CREATE TEMP TABLE rp_t AS SELECT clock_timestamp() - interval '1 second' AS t0;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('a1', 'rp_queue', 'rp_a', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('a2', 'rp_queue', 'rp_a', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('c_low', 'rp_queue2', 'rp_c', 1, 'gpu', 1);
SELECT * FROM pg_temp.pass('rp_queue');
SELECT * FROM pg_temp.pass('rp_queue2');
SELECT pg_temp.agent('rp_queue') UNION ALL SELECT pg_temp.agent('rp_queue2');
SELECT pg_sleep(0.05);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('b1', 'rp_queue', 'rp_b', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('c_high', 'rp_queue2', 'rp_c', 5, 'gpu', 1);
SELECT * FROM pg_temp.pass('rp_queue');
SELECT * FROM pg_temp.pass('rp_queue2');
SELECT pg_temp.report('a2', 'STOPPED');
SELECT * FROM pg_temp.pass('rp_queue');
SELECT pg_temp.agent('rp_queue');
-- a1's work in the replay runs until it is well longer than b1 came after
-- a2, so that in the replay too a2 still borrows when b1 comes, however
-- slow the machine made the statements between them (a1 done first, a2
-- would borrow no more)
SELECT pg_temp.outlast_gap('a1');
SELECT pg_temp.report('a1', 'SUCCEEDED'), pg_temp.report('c_low', 'SUCCEEDED');
SELECT * FROM pg_temp.pass('rp_queue');
SELECT * FROM pg_temp.pass('rp_queue2');
SELECT pg_temp.agent('rp_queue') UNION ALL SELECT pg_temp.agent('rp_queue2');
-- a2's last attempt, its work in the replay, runs until it is well longer
-- than b1 came after a2 (twice that, and at least 0.3 s), so that in the
-- replay too b1 comes while a2 runs, however slow the machine made the
-- statements between them
SELECT pg_temp.outlast_gap('a2');
SELECT pg_temp.report('b1', 'SUCCEEDED'), pg_temp.report('a2', 'SUCCEEDED'),
	   pg_temp.report('c_high', 'SUCCEEDED');
ALTER TABLE rp_t ADD COLUMN t1 timestamptz;
UPDATE rp_t SET t1 = clock_timestamp() + interval '1 second';

-- every scenario's rows, kept for the checks below (replay_run and
-- replay_recorded are the internals of replay and replay_jobs)
CREATE TEMP TABLE rp_rows AS
SELECT r.*, j.name FROM rp_t,
	   LATERAL (SELECT * FROM quota_sched.replay_recorded('rp_queue', t0, t1)
				UNION ALL SELECT * FROM quota_sched.replay_run('rp_queue', t0, t1, '{}')) r
  LEFT JOIN quota_sched.job j ON j.id = r.job_id;

------------------------------------------------------------------------
-- The baseline agrees with the recorded history: the same jobs, the same
-- dispatch order, the same preemptions suffered and caused, the same
-- outcome; waits within the agent's latency (the ideal agent is prompt).
------------------------------------------------------------------------
SELECT scenario, string_agg(name, ' ' ORDER BY first_dispatch, name) AS dispatch_order,
	   string_agg(format('%s:%s/%s', name, preemptions, preempted), ' ' ORDER BY name) AS preempted_caused,
	   string_agg(format('%s:%s', name, state), ' ' ORDER BY name) AS outcome
  FROM rp_rows WHERE job_id IS NOT NULL AND scenario IN ('recorded', 'baseline')
 GROUP BY scenario ORDER BY scenario DESC;
SELECT r.name, abs(extract(epoch FROM (b.first_dispatch - b.arrival) - (r.first_dispatch - r.arrival))) < 0.5
	   AS same_wait
  FROM rp_rows r JOIN rp_rows b ON b.job_id = r.job_id AND b.scenario = 'baseline'
 WHERE r.scenario = 'recorded' ORDER BY r.name;
-- a2's first attempt was lost, and rp_a borrowed while it ran, in both
SELECT scenario, name, lost_seconds > 0 AS lost_some, held_seconds > lost_seconds AS held_more
  FROM rp_rows WHERE name = 'a2' AND scenario IN ('recorded', 'baseline') ORDER BY scenario DESC;
SELECT scenario, quota_share, borrowed_seconds > 0 AS borrowed
  FROM rp_rows WHERE job_id IS NULL AND scenario IN ('recorded', 'baseline') ORDER BY scenario DESC, 2;

------------------------------------------------------------------------
-- replay(): the figures per scenario, share and unit.  With no change the
-- candidate is the baseline.
------------------------------------------------------------------------
SELECT scenario, quota_share, capacity_unit, jobs, finished, preemptions,
	   wait_p95 > interval '0' AS waited, used_hours > 0 AS used,
	   borrowed_hours > 0 AS borrowed, lost_hours > 0 AS lost
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1);

------------------------------------------------------------------------
-- Candidates.  rp_b RESERVE: it lends nothing, so a2 waits for a1 and is
-- never preempted; replay_jobs puts a2 first, its wait grown.
------------------------------------------------------------------------
SELECT quota_share, preemptions, borrowed_hours > 0 AS borrowed, wait_p95 > interval '0' AS waited
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1, '{"quota_share": {"rp_b": {"strategy": "RESERVE"}}}')
 WHERE scenario = 'candidate';
SELECT j.name, wait_candidate > wait_baseline AS waits_longer, preemptions_baseline, preemptions_candidate,
	   preempted_baseline, preempted_candidate
  FROM rp_t, quota_sched.replay_jobs('rp_queue', t0, t1, '{"quota_share": {"rp_b": {"strategy": "RESERVE"}}}',
									 max_jobs => 1) r
  JOIN quota_sched.job j ON j.id = r.job_id;
-- capacity doubled: nobody waits, nobody is preempted, nobody borrows
SELECT quota_share, preemptions, wait_p95, borrowed_hours
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1,
		'{"service_environment": {"capacity_limits": {"gpu": 4}},
		  "quota_share": {"rp_a": {"capacity_limits": {"gpu": 2}}, "rp_b": {"capacity_limits": {"gpu": 2}}}}')
 WHERE scenario = 'candidate';
-- a budget of 0 gpu-hours on rp_b: b1 is held back (never dispatched), so
-- nothing is reclaimed from a2
SELECT quota_share, jobs, finished, preemptions, wait_p50 >= interval '1 second' AS waits_to_the_end
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1, '{"quota_share": {"rp_b": {"budget": {"gpu": 0}}}}')
 WHERE scenario = 'candidate';
-- half a gpu-hour on rp_b (a budget with a fraction, 0.4): the history's
-- second spends little of it, so b1 runs and reclaims its gpu from a2, as
-- in the baseline
SELECT quota_share, jobs, finished, preemptions, wait_p50 >= interval '1 second' AS waits_to_the_end
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1, '{"quota_share": {"rp_b": {"budget": {"gpu": 0.5}}}}')
 WHERE scenario = 'candidate';
-- rp_queue2 with in-share preemption: c_high's wait falls to nothing and
-- c_low is its victim
SELECT j.name, wait_baseline > interval '0' AS waited_before, wait_candidate = interval '0' AS waits_not,
	   preemptions_candidate, preempted_candidate
  FROM rp_t, quota_sched.replay_jobs('rp_queue2', t0, t1,
		'{"quota_share": {"rp_c": {"in_share_preemption": true}}}') r
  JOIN quota_sched.job j ON j.id = r.job_id ORDER BY j.name;
-- a share that does not exist is added (its other columns their defaults);
-- it has no jobs, but lends its gpu: a2 is not preempted
SELECT scenario, quota_share, jobs, preemptions
  FROM rp_t, quota_sched.replay('rp_queue', t0, t1,
		'{"service_environment": {"capacity_limits": {"gpu": 3}},
		  "quota_share": {"rp_new": {"capacity_limits": {"gpu": 1}, "strategy": "LEND"}}}')
 WHERE scenario = 'candidate';

------------------------------------------------------------------------
-- Fair share with memory (3.12) in the replay.  rp_queue3: rp_x and rp_y
-- each own one gpu, rp_l lends one.  x2 borrowed rp_l's gpu for a while;
-- then x3 and y2 came together (one INSERT: the same queued_at), both to
-- borrow it, and FIFO gave it to x3.  FAIR alone ties (both would borrow
-- 1) and x3 still goes first; with a half-life rp_x has borrowed lately
-- and rp_y not, so y2 goes first.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('rp_env3', '{"gpu": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('rp_queue3', 'rp_env3');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('rp_queue3', 'rp_l', '{"gpu": 1}', 'LEND'),
       ('rp_queue3', 'rp_x', '{"gpu": 1}', 'LEND_AND_BORROW'),
       ('rp_queue3', 'rp_y', '{"gpu": 1}', 'LEND_AND_BORROW');
CREATE TEMP TABLE rp_t3 AS SELECT clock_timestamp() - interval '1 second' AS t0, NULL::timestamptz AS t1;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('x1', 'rp_queue3', 'rp_x', 'gpu', 1), ('x2', 'rp_queue3', 'rp_x', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('y1', 'rp_queue3', 'rp_y', 'gpu', 1);
SELECT * FROM pg_temp.pass('rp_queue3');
SELECT pg_temp.agent('rp_queue3');
SELECT pg_sleep(0.1);
SELECT pg_temp.report('x2', 'SUCCEEDED');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('x3', 'rp_queue3', 'rp_x', 'gpu', 1), ('y2', 'rp_queue3', 'rp_y', 'gpu', 1);
SELECT * FROM pg_temp.pass('rp_queue3');
SELECT pg_temp.agent('rp_queue3');
-- (x1 and y1 work in the replay for longer than x3 and y2 came after them)
SELECT pg_sleep(0.3);
SELECT pg_temp.report('x1', 'SUCCEEDED'), pg_temp.report('y1', 'SUCCEEDED'), pg_temp.report('x3', 'SUCCEEDED');
SELECT * FROM pg_temp.pass('rp_queue3');
SELECT pg_temp.agent('rp_queue3');
SELECT pg_temp.report('y2', 'SUCCEEDED');
UPDATE rp_t3 SET t1 = clock_timestamp() + interval '1 second';
SELECT c.label, string_agg(j.name, ' ' ORDER BY r.first_dispatch, j.name) AS dispatch_order
  FROM rp_t3,
	   (VALUES ('recorded', 'recorded', '{}'), ('baseline', 'baseline', '{}'),
			   ('FAIR', 'candidate', '{"job_queue": {"borrow_order": "FAIR"}}'),
			   ('FAIR, half-life', 'candidate', '{"job_queue": {"borrow_order": "FAIR", "fair_half_life": "1 hour"}}'))
		AS c(label, scenario, changes),
	   LATERAL (SELECT * FROM quota_sched.replay_recorded('rp_queue3', t0, t1)
				UNION ALL SELECT * FROM quota_sched.replay_run('rp_queue3', t0, t1, c.changes::jsonb)) r
  JOIN quota_sched.job j ON j.id = r.job_id
 WHERE r.scenario = c.scenario AND j.name IN ('x3', 'y2')
 GROUP BY c.label ORDER BY min(array_position(ARRAY['recorded', 'baseline', 'FAIR', 'FAIR, half-life'], c.label));

------------------------------------------------------------------------
-- Changes are validated as the tables validate them (the same SQLSTATE
-- and message), and nothing is kept: the configuration and its history
-- are as they were.
------------------------------------------------------------------------
CREATE TEMP TABLE rp_config AS
SELECT (SELECT jsonb_agg(to_jsonb(s) ORDER BY name) FROM quota_sched.quota_share s WHERE job_queue LIKE 'rp_%') AS shares,
	   (SELECT count(*) FROM quota_sched.config_event) AS events;
SELECT v AS changes, pg_temp.refused(format(
	$$SELECT count(*) FROM rp_t, quota_sched.replay('rp_queue', t0, t1, %L)$$, v))
  FROM unnest(ARRAY[
	'{"quota_share": {"rp_a": {"capacity_limits": {"gpu": -1}}}}',
	'{"quota_share": {"rp_a": {"strategy": "SHARE"}}}',
	'{"quota_share": {"rp_a": {"weight": 0}}}',
	'{"quota_share": {"rp_a": {"colour": "red"}}}',
	'{"quota_share": {"rp_a": {"name": "rp_z"}}}',
	'{"quota_share": {"rp_a": [1]}}',
	'{"quota_share": [1]}',
	'{"job_queue": {"borrow_order": "RANDOM"}}',
	'{"job_queue": {"fair_half_life": "1 day"}}',
	'{"service_environment": {"capacity_limits": {"gpu": 1.5}}}',
	'{"quota_share": {"rp_b": {"budget": {"gpu": 0.0005}}}}',
	'{"quota_share": {"rp_b": {"budget": {"gpu": "0.5"}}}}',
	'{"quota_share": {"rp_x": {"strategy": "LEND"}}}',
	'{"quota_shares": {}}',
	'[]',
	'"x"']) AS v;
SELECT split_part(pg_temp.refused($$SELECT count(*) FROM quota_sched.replay('rp_queue', now(), now() - interval '1 hour')$$), ' from', 1) AS backwards,
	   split_part(pg_temp.refused($$SELECT count(*) FROM quota_sched.replay('rp_queue', now() - interval '400 days', now())$$), ' from', 1) AS too_long,
	   pg_temp.refused($$SELECT count(*) FROM quota_sched.replay('rp_nope', now() - interval '1 day', now())$$) AS no_queue,
	   pg_temp.refused($$SELECT count(*) FROM quota_sched.replay('rp_queue', NULL, now())$$) AS null_from,
	   pg_temp.refused($$SELECT count(*) FROM quota_sched.replay_jobs('rp_queue', now() - interval '1 day', now(), max_jobs => 0)$$) AS no_jobs;
SELECT pg_temp.refused($$SELECT count(*) FROM quota_sched.replay_jobs('rp_queue', now() - interval '1 day', now(), '[1]')$$) AS not_an_object;
SELECT (SELECT jsonb_agg(to_jsonb(s) ORDER BY name) FROM quota_sched.quota_share s WHERE job_queue LIKE 'rp_%') = shares
	   AS shares_unchanged,
	   (SELECT count(*) FROM quota_sched.config_event) = events AS no_config_history
  FROM rp_config;

------------------------------------------------------------------------
-- Only admins may replay.
------------------------------------------------------------------------
CREATE ROLE regress_rp_user NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_rp_admin NOLOGIN IN ROLE quota_sched_admin;
GRANT SELECT ON rp_t TO regress_rp_user, regress_rp_admin;
SET ROLE regress_rp_user;
SELECT pg_temp.refused($$SELECT count(*) FROM rp_t, quota_sched.replay('rp_queue', t0, t1)$$);
SELECT pg_temp.refused($$SELECT count(*) FROM rp_t, quota_sched.replay_run('rp_queue', t0, t1, '{}')$$);
RESET ROLE;
SET ROLE regress_rp_admin;
SELECT count(*) > 0 AS admin_replays FROM rp_t, quota_sched.replay('rp_queue', t0, t1);
RESET ROLE;
