-- Preview (reference.md, "Previewing a change"): inside a transaction, after
-- a configuration change that is not committed, run_pass(q, dry_run => true)
-- returns what the next pass would decide under it.  A lowered limit shows
-- the stops it would cause (CAPACITY_REDUCED), a raised one the dispatches
-- it would allow; the preview writes nothing (no job, history, pass_log or
-- counter changes, no notification even when the change is committed), and the real pass after the change commits
-- makes exactly the decisions previewed.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('pv_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pv_queue', 'pv_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pv_queue', 'pv_a', '{"gpu": 2}', 'RESERVE'),
       ('pv_queue', 'pv_b', '{"gpu": 2}', 'RESERVE');
-- pv_a runs two jobs of one gpu (priorities 1 and 2); pv_b runs one of two
-- gpus and has one of two waiting.
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pv_a_low', 'pv_queue', 'pv_a', 1, 'gpu', 1),
       ('pv_a_high', 'pv_queue', 'pv_a', 2, 'gpu', 1),
       ('pv_b_run', 'pv_queue', 'pv_b', 0, 'gpu', 2);
SELECT * FROM pg_temp.pass('pv_queue');
SELECT name, state FROM quota_sched.claim('pv_agent', 'pv_queue', 'gpu', 10) ORDER BY name;
SELECT count(*) AS running FROM quota_sched.job j,
	   LATERAL quota_sched.report(j.id, 'pv_agent', 'RUNNING') r WHERE j.job_queue = 'pv_queue';
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pv_b_wait', 'pv_queue', 'pv_b', 0, 'gpu', 2);
SELECT count(*) AS decisions FROM quota_sched.run_pass('pv_queue');

-- what must not move: every job, the history, the passes, the counters
CREATE TEMP VIEW pv_state AS
SELECT (SELECT jsonb_agg(to_jsonb(j) ORDER BY id) FROM quota_sched.job j WHERE job_queue = 'pv_queue') AS jobs,
	   (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_queue = 'pv_queue') AS events,
	   (SELECT count(*) FROM quota_sched.pass_log WHERE job_queue = 'pv_queue') AS passes,
	   (SELECT jsonb_agg(to_jsonb(h) ORDER BY quota_share, stripe) FROM quota_sched.held_capacity h
		 WHERE job_queue = 'pv_queue') AS counters;
CREATE TEMP TABLE pv_before AS SELECT * FROM pv_state;

------------------------------------------------------------------------
-- A lowered limit: pv_a from 2 gpus to 1.  The preview shows the stop of
-- pv_a's lower-priority job (its victim order): PREEMPT, CAPACITY_REDUCED;
-- the ROLLBACK leaves all as it was, and the next pass decides nothing.
------------------------------------------------------------------------
LISTEN quota_sched_dispatch;
LISTEN quota_sched_stop;
BEGIN;
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 1}'
 WHERE job_queue = 'pv_queue' AND name = 'pv_a';
SELECT p.n, j.name, p.action, p.quota_share, p.reason
  FROM quota_sched.run_pass('pv_queue', dry_run => true) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
SELECT (SELECT jobs FROM pv_state) = (SELECT jobs FROM pv_before) AS jobs_unchanged;
ROLLBACK;
SELECT s.jobs = b.jobs AS jobs_unchanged, s.events = b.events AS no_history,
	   s.passes = b.passes AS no_pass_log, s.counters = b.counters AS counters_unchanged
  FROM pv_state s, pv_before b;
SELECT count(*) AS decisions FROM quota_sched.run_pass('pv_queue');

------------------------------------------------------------------------
-- A raised limit, committed: the environment gets 2 more gpus and pv_b 2
-- more.  The preview shows pv_b_wait dispatched and nothing else and
-- sends no notification (psql would print it after the COMMIT); the jobs
-- stay as they were until the real pass, which makes the previewed
-- decisions.
------------------------------------------------------------------------
BEGIN;
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 6}' WHERE name = 'pv_env';
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 4}'
 WHERE job_queue = 'pv_queue' AND name = 'pv_b';
CREATE TEMP TABLE pv_preview AS
SELECT * FROM quota_sched.run_pass('pv_queue', dry_run => true) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
SELECT p.n, j.name, p.action, p.quota_share, p.reason
  FROM pv_preview p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
COMMIT;
UNLISTEN *;
SELECT s.jobs = b.jobs AS jobs_unchanged, s.events = b.events AS no_history,
	   s.passes = b.passes AS no_pass_log, s.counters = b.counters AS counters_unchanged
  FROM pv_state s, pv_before b;
CREATE TEMP TABLE pv_real AS
SELECT * FROM quota_sched.run_pass('pv_queue') WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
SELECT (SELECT array_agg(row(job_id, action, quota_share, reason) ORDER BY n) FROM pv_preview) =
	   (SELECT array_agg(row(job_id, action, quota_share, reason) ORDER BY n) FROM pv_real)
	   AS real_pass_as_previewed;
SELECT name, state FROM quota_sched.job WHERE job_queue = 'pv_queue' ORDER BY id;

------------------------------------------------------------------------
-- A preview of a change the tables refuse never runs: the UPDATE fails
-- with its own SQLSTATE (23514 here) and the transaction is aborted.
------------------------------------------------------------------------
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": -1}'
						 WHERE job_queue = 'pv_queue' AND name = 'pv_a'$$);
