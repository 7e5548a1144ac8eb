-- The seed example (scheduling.md 3, "Worked example"), step 1 (scheduling.md 3.1, 3.2, 4): an environment
-- of three ml.g5.xlarge instances; QS1 (LEND_AND_BORROW, borrow_limit 200,
-- in-share preemption), QS2 (LEND) and QS3 (RESERVE) own one instance each.
-- QS1 submits three jobs.  One pass: qs1_job_high runs on QS1's own
-- instance, qs1_job_med on the instance borrowed from QS2, and qs1_job_low
-- waits: QS3 reserves its instance, and QS1 may borrow nothing else.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pse_env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pse_queue', 'pse_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('pse_queue', 'QS1', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 200, true),
       ('pse_queue', 'QS2', '{"ml.g5.xlarge": 1}', 'LEND', -1, false),
       ('pse_queue', 'QS3', '{"ml.g5.xlarge": 1}', 'RESERVE', -1, false);

INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload)
VALUES ('qs1_job_high', 'pse_queue', 'QS1', 3, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}'),
       ('qs1_job_med',  'pse_queue', 'QS1', 2, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}'),
       ('qs1_job_low',  'pse_queue', 'QS1', 1, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}');

-- Before any pass: nothing held, nothing logged.
SELECT name, state FROM quota_sched.job WHERE job_queue = 'pse_queue' ORDER BY priority DESC;
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pse_queue';

------------------------------------------------------------------------
-- The pass: its decisions, in the order it made them.
------------------------------------------------------------------------
CREATE TEMP TABLE pse_pass1 AS
SELECT p.* FROM quota_sched.run_pass('pse_queue') WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
SELECT p.n, j.name, p.action, p.quota_share, p.reason
  FROM pse_pass1 p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;

-- The jobs: high and med SCHEDULED (with scheduled_at), low RUNNABLE and
-- not misconfigured (it could run if QS2 or QS1 freed an instance).
SELECT name, state, scheduled_at IS NOT NULL AS scheduled_at_set, status_reason,
       agent, promised_at IS NOT NULL AS promised
  FROM quota_sched.job WHERE job_queue = 'pse_queue' ORDER BY priority DESC;

-- Usage: QS1 holds 2 (its own instance and one borrowed from QS2), within
-- allowed 3 = floor(1 * 300 / 100); QS2 and QS3 run nothing, so by scheduling.md 3.1
-- each shows its instance idle.
SELECT quota_share, capacity_unit, max_capacity, allowed, in_use, borrowed, idle,
       runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pse_queue' ORDER BY quota_share, capacity_unit;
-- (I1): the environment is not overcommitted.
SELECT sum(in_use) AS instances_held FROM quota_sched.share_usage WHERE job_queue = 'pse_queue';

-- History: one row per change of state; the pass's rows carry its id and
-- actor 'pass'.
SELECT j.name, e.from_state, e.to_state, e.reason,
       e.actor = 'pass' AS by_pass, e.actor = current_user AS by_submitter,
       e.pass_id = (SELECT id FROM quota_sched.pass_log WHERE job_queue = 'pse_queue') AS pass_id_is_the_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'pse_queue' ORDER BY e.id;

-- One pass_log row, with its counts.
SELECT job_queue, dispatched, preempted, requeued, failed,
       finished_at >= started_at AS finished_after_start
  FROM quota_sched.pass_log WHERE job_queue = 'pse_queue';

------------------------------------------------------------------------
-- A second pass decides nothing: no rows, no pass_log row, no job_event.
------------------------------------------------------------------------
SELECT count(*) AS decisions FROM quota_sched.run_pass('pse_queue');
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pse_queue';
SELECT count(*) AS job_events
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'pse_queue';
SELECT name, state FROM quota_sched.job WHERE job_queue = 'pse_queue' ORDER BY priority DESC;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled, then drop
-- the configuration, which takes the jobs and their history with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'pse_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'pse_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'pse_env';
