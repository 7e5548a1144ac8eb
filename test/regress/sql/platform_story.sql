-- The platform story of 0.2 (scheduling.md 3.1-3.3), one problem of 0.1 at
-- a time, each with the option that fixes it:
-- (1) a team's big job starves while the same team's later small jobs take
--     the room it needs: STRICT queueing keeps the team's order;
-- (2) a lender whose jobs arrive one by one gets its lent capacity back one
--     stop at a time: now each of its jobs gets its victim in the pass
--     that first sees it (three reclaims in three consecutive passes);
-- (3) a job preempted minutes after it started throws its work away:
--     min_runtime keeps a claimed job from preemption until it has run
--     that long, and explain says so;
-- (4) a lender lends only part of its capacity: lend_limit;
-- (5) borrowers share idle capacity by weight: borrow_order FAIR.
CREATE FUNCTION pg_temp.pass(q text) RETURNS TABLE (job text, action text, quota_share text, reason text)
LANGUAGE sql AS $$
	SELECT j.name, p.action, p.quota_share, p.reason
	  FROM quota_sched.run_pass(q) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n
$$;
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
-- an agent claims everything dispatched and reports it RUNNING
CREATE FUNCTION pg_temp.run_all(q text) RETURNS SETOF text LANGUAGE sql AS $$
	SELECT r.name FROM quota_sched.claim('ps_agent', q, max_jobs => 100) c,
		   LATERAL quota_sched.report(c.id, 'ps_agent', 'RUNNING') r ORDER BY r.name
$$;
CREATE FUNCTION pg_temp.states(q text) RETURNS TABLE (name text, state text, stop_reason text)
LANGUAGE sql AS $$
	SELECT name, state, stop_reason FROM quota_sched.job WHERE job_queue = q ORDER BY name
$$;

------------------------------------------------------------------------
-- (1) STRICT: two teams with the same jobs; nlp keeps BEST_EFFORT, cv
-- turns STRICT.  Each holds 1 of its 4 p4d instances; a 4-instance job at
-- priority 9 waits for the room, then 1-instance jobs at priority 0 come.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ps_env_strict', '{"ml.p4d.24xlarge": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ps_strict', 'ps_env_strict');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, queueing)
VALUES ('ps_strict', 'nlp', '{"ml.p4d.24xlarge": 4}', 'RESERVE', 'BEST_EFFORT'),
	   ('ps_strict', 'cv', '{"ml.p4d.24xlarge": 4}', 'RESERVE', 'STRICT');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('nlp_warm', 'ps_strict', 'nlp', 5, 'ml.p4d.24xlarge', 1),
	   ('cv_warm', 'ps_strict', 'cv', 5, 'ml.p4d.24xlarge', 1);
SELECT * FROM pg_temp.pass('ps_strict');
SELECT * FROM pg_temp.run_all('ps_strict');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('nlp_big', 'ps_strict', 'nlp', 9, 'ml.p4d.24xlarge', 4),
	   ('cv_big', 'ps_strict', 'cv', 9, 'ml.p4d.24xlarge', 4),
	   ('nlp_small_1', 'ps_strict', 'nlp', 0, 'ml.p4d.24xlarge', 1),
	   ('nlp_small_2', 'ps_strict', 'nlp', 0, 'ml.p4d.24xlarge', 1),
	   ('cv_small_1', 'ps_strict', 'cv', 0, 'ml.p4d.24xlarge', 1),
	   ('cv_small_2', 'ps_strict', 'cv', 0, 'ml.p4d.24xlarge', 1);
-- nlp's small jobs take the room its big job waits for; cv's wait behind cv_big
SELECT * FROM pg_temp.pass('ps_strict');
SELECT * FROM pg_temp.run_all('ps_strict');
-- the warm jobs end: cv_big starts at once; nlp_big still waits for its small jobs
SELECT name, state FROM quota_sched.report(pg_temp.id('nlp_warm'), 'ps_agent', 'SUCCEEDED');
SELECT name, state FROM quota_sched.report(pg_temp.id('cv_warm'), 'ps_agent', 'SUCCEEDED');
SELECT * FROM pg_temp.pass('ps_strict');
SELECT * FROM pg_temp.states('ps_strict');
SELECT e ->> 'blocked_by' AS nlp_big FROM quota_sched.explain(pg_temp.id('nlp_big')) e;
-- queue_snapshot keeps every job's place in dispatch order
SELECT queue_position, j.name FROM quota_sched.queue_snapshot('ps_strict') s
  JOIN quota_sched.job j ON j.id = s.job_id ORDER BY queue_position, j.name;
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- (2) One-by-one reclaims: research borrows all 3 of data's instances;
-- data's jobs then arrive one per pass.  Each pass stops one borrowed
-- job for the data job it first sees, while the earlier data jobs still
-- wait for their victims to stop.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ps_env_reclaim', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ps_reclaim', 'ps_env_reclaim');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ps_reclaim', 'research', '{}', 'LEND_AND_BORROW'),
	   ('ps_reclaim', 'data', '{"ml.g5.xlarge": 3}', 'LEND');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'research_' || i, 'ps_reclaim', 'research', 'ml.g5.xlarge' FROM generate_series(1, 3) i;
SELECT * FROM pg_temp.pass('ps_reclaim');
SELECT * FROM pg_temp.run_all('ps_reclaim');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('data_1', 'ps_reclaim', 'data', 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_reclaim');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('data_2', 'ps_reclaim', 'data', 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_reclaim');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('data_3', 'ps_reclaim', 'data', 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_reclaim');
SELECT j.name, j.state, j.stop_reason, f.name AS preempted_for, j.promised_at IS NOT NULL AS promised
  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.preempted_for
 WHERE j.job_queue = 'ps_reclaim' ORDER BY j.name;
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- (3) min_runtime: vision runs two low-priority jobs with in-share
-- preemption and a min_runtime of 10 minutes; a high-priority job comes
-- at once.  The claimed jobs are exempt; explain says until when.  Ten
-- minutes later (scheduled_at moved back, as if time had passed) the
-- latest one is preempted.  An unclaimed job is never exempt.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ps_env_runtime', '{"ml.g5.xlarge": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ps_runtime', 'ps_env_runtime');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, in_share_preemption, min_runtime)
VALUES ('ps_runtime', 'vision', '{"ml.g5.xlarge": 2}', 'RESERVE', true, '10 minutes');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('vision_low_1', 'ps_runtime', 'vision', 1, 'ml.g5.xlarge'),
	   ('vision_low_2', 'ps_runtime', 'vision', 1, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_runtime');
SELECT * FROM pg_temp.run_all('ps_runtime');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('vision_high', 'ps_runtime', 'vision', 8, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_runtime');
SELECT e ->> 'blocked_by' AS blocked_by,
	   (e ->> 'exempt_until')::timestamptz =
	   (SELECT min(scheduled_at) + interval '10 minutes' FROM quota_sched.job
		 WHERE name IN ('vision_low_1', 'vision_low_2')) AS until_the_earliest_end
  FROM quota_sched.explain(pg_temp.id('vision_high')) e;
-- ten minutes pass for vision_low_2 only: it is the only candidate
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = scheduled_at - interval '10 minutes'
 WHERE name = 'vision_low_2';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('ps_runtime');
SELECT name, state FROM quota_sched.report(pg_temp.id('vision_low_2'), 'ps_agent', 'STOPPED');
SELECT * FROM pg_temp.pass('ps_runtime');
SELECT * FROM pg_temp.run_all('ps_runtime');
-- vision_low_2 is RUNNABLE again; vision_high runs.  When it ends,
-- vision_low_2 is dispatched, and no agent claims it yet: an unclaimed job
-- is never exempt, so a top job preempts it at once (vision_low_1 is still
-- within its min_runtime).
SELECT * FROM pg_temp.states('ps_runtime');
SELECT name, state FROM quota_sched.report(pg_temp.id('vision_high'), 'ps_agent', 'SUCCEEDED');
SELECT * FROM pg_temp.pass('ps_runtime');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('vision_top', 'ps_runtime', 'vision', 9, 'ml.g5.xlarge');
SELECT * FROM pg_temp.pass('ps_runtime');
SELECT * FROM pg_temp.states('ps_runtime');
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- (4) lend_limit: data lends at most half of its 4 instances; research
-- borrows 2, and a 3-instance research job could never run.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ps_env_lend', '{"ml.g5.xlarge": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ps_lend', 'ps_env_lend');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, lend_limit)
VALUES ('ps_lend', 'research', '{}', 'LEND_AND_BORROW', -1),
	   ('ps_lend', 'data', '{"ml.g5.xlarge": 4}', 'LEND', 50);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'lend_' || i, 'ps_lend', 'research', 'ml.g5.xlarge', 1 FROM generate_series(1, 3) i
UNION ALL SELECT 'lend_big', 'ps_lend', 'research', 'ml.g5.xlarge', 3;
SELECT * FROM pg_temp.pass('ps_lend');
SELECT name, state, status_reason FROM quota_sched.job WHERE job_queue = 'ps_lend' ORDER BY name;
SELECT quota_share, in_use, borrowed, idle, lendable FROM quota_sched.share_usage
 WHERE job_queue = 'ps_lend' ORDER BY quota_share;
SELECT e ->> 'blocked_by' AS lend_3 FROM quota_sched.explain(pg_temp.id('lend_3')) e;
-- lending all of it: the third job starts and the big one is possible again
UPDATE quota_sched.quota_share SET lend_limit = -1 WHERE name = 'data' AND job_queue = 'ps_lend';
SELECT * FROM pg_temp.pass('ps_lend');
SELECT name, state, status_reason FROM quota_sched.job WHERE job_queue = 'ps_lend' ORDER BY name;
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- (5) FAIR: two borrowers each borrow 2 instances; one more can be lent.
-- FIFO gives it to the earlier job (asr's); FAIR to the share that would
-- borrow the least per unit of weight (tts, weight 3: 3/3 < 3/1).
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ps_env_fair', '{"ml.g5.xlarge": 7}');
INSERT INTO quota_sched.job_queue (name, service_environment, borrow_order)
VALUES ('ps_fair', 'ps_env_fair', 'FIFO');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, weight)
VALUES ('ps_fair', 'asr', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 1),
	   ('ps_fair', 'tts', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 3),
	   ('ps_fair', 'pool', '{"ml.g5.xlarge": 5}', 'LEND', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT s || '_' || i, 'ps_fair', s, 'ml.g5.xlarge'
  FROM generate_series(1, 3) i, unnest(ARRAY['asr', 'tts']) s ORDER BY i, s;
SELECT * FROM pg_temp.pass('ps_fair');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('asr_next', 'ps_fair', 'asr', 'ml.g5.xlarge'), ('tts_next', 'ps_fair', 'tts', 'ml.g5.xlarge');
-- in FIFO order, asr_next comes first
SELECT queue_position, j.name FROM quota_sched.queue_snapshot('ps_fair') s
  JOIN quota_sched.job j ON j.id = s.job_id ORDER BY queue_position;
UPDATE quota_sched.job_queue SET borrow_order = 'FAIR' WHERE name = 'ps_fair';
-- in FAIR order, tts_next does
SELECT queue_position, j.name FROM quota_sched.queue_snapshot('ps_fair') s
  JOIN quota_sched.job j ON j.id = s.job_id ORDER BY queue_position;
SELECT e ->> 'position_in_queue' AS tts_next_position
  FROM quota_sched.explain(pg_temp.id('tts_next')) e;
SELECT * FROM pg_temp.pass('ps_fair');
SELECT * FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'ps\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'ps\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'ps\_env\_%';
