-- Every change of a job's state appends one job_event row in the same
-- transaction, the INSERT too (scheduling.md 4): from_state null, to_state RUNNABLE,
-- at the transaction's time (so equal to the job's submitted_at), actor the
-- submitting role, pass_id null.  Nothing else appends history.
\i test/regress/include/helpers.sql

-- pg_temp.history() lists the job_event rows of the test's jobs; the
-- superuser running the tests is shown as <superuser>, since its name
-- depends on the installation.
CREATE FUNCTION pg_temp.history()
RETURNS TABLE (job text, kind text, from_state text, to_state text, reason text,
               pass_id bigint, actor text, at_is_submitted_at boolean)
LANGUAGE sql AS $$
	SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, e.pass_id,
	       CASE WHEN e.actor = session_user THEN '<superuser>' ELSE e.actor END,
	       e.at = j.submitted_at
	  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
	 WHERE j.job_queue = 'jh_queue'
	 ORDER BY j.name COLLATE "C", e.id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('jh_env', '{"ml.g5.xlarge": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('jh_queue', 'jh_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy)
VALUES ('jh_queue', 'jh_share', 'LEND');
CREATE ROLE regress_jh_submitter NOLOGIN IN ROLE quota_sched_user;

------------------------------------------------------------------------
-- A submission appends one row, written as the submitting role.  Both jobs
-- of one transaction have the transaction's time, however far apart their
-- INSERTs were.
------------------------------------------------------------------------
SET ROLE regress_jh_submitter;
BEGIN;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jh_first', 'jh_queue', 'jh_share', 'ml.g5.xlarge');
-- the clock moves on within the transaction (not a wait for the system)
SELECT pg_sleep(0.05);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jh_second', 'jh_queue', 'jh_share', 'ml.g5.xlarge');
SELECT j.name, j.owner, e.at = now() AS at_is_transaction_time,
       e.at < statement_timestamp() AS at_before_this_statement
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'jh_queue' ORDER BY j.name COLLATE "C";
COMMIT;
RESET ROLE;
SELECT * FROM pg_temp.history();

-- A superuser's submission names the superuser.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jh_by_superuser', 'jh_queue', 'jh_share', 'ml.g5.xlarge');
SELECT e.actor = current_user AS actor_is_submitter, j.owner = current_user AS owner_is_submitter
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'jh_by_superuser';

------------------------------------------------------------------------
-- A change of priority is no change of state, but it is recorded: a
-- PRIORITY row each (from_state = to_state), with the old and new priority
-- and the role that made it.
------------------------------------------------------------------------
SELECT count(*) AS events_before FROM quota_sched.job_event \gset
UPDATE quota_sched.job SET priority = 100 WHERE name = 'jh_first';
SET ROLE regress_jh_submitter;
UPDATE quota_sched.job SET priority = 200 WHERE name = 'jh_second';
RESET ROLE;
SELECT count(*) - :events_before AS new_events FROM quota_sched.job_event;
SELECT j.name, e.kind, e.from_state, e.to_state, e.old_priority, e.priority,
       CASE WHEN e.actor = session_user THEN '<superuser>' ELSE e.actor END AS actor
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE e.id > (SELECT max(id) - 2 FROM quota_sched.job_event) ORDER BY e.id;
SELECT count(*) AS events_before FROM quota_sched.job_event \gset

------------------------------------------------------------------------
-- A refused submission appends nothing, and neither does a multi-row INSERT
-- with one bad row: the statement stores nothing at all.
------------------------------------------------------------------------
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority) VALUES ('jh_refused', 'jh_queue', 'jh_share', 'ml.g5.xlarge', 10000)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('jh_refused', 'jh_queue', 'jh_share', 'ml.p4d.24xlarge')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count) VALUES ('jh_batch_ok_1', 'jh_queue', 'jh_share', 'ml.g5.xlarge', 1), ('jh_batch_ok_2', 'jh_queue', 'jh_share', 'ml.g5.xlarge', 1), ('jh_batch_bad', 'jh_queue', 'jh_share', 'ml.g5.xlarge', 0)$$);
SELECT count(*) - :events_before AS new_events FROM quota_sched.job_event;
SELECT count(*) AS refused_jobs FROM quota_sched.job WHERE name LIKE 'jh\_refused' OR name LIKE 'jh\_batch\_%';

------------------------------------------------------------------------
-- A multi-row INSERT appends one row per job.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jh_multi_a', 'jh_queue', 'jh_share', 'ml.g5.xlarge'),
       ('jh_multi_b', 'jh_queue', 'jh_share', 'ml.g5.xlarge'),
       ('jh_multi_c', 'jh_queue', 'jh_share', 'ml.g5.xlarge');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'jh_series_' || i, 'jh_queue', 'jh_share', 'ml.g5.xlarge' FROM generate_series(1, 5) AS i;
SELECT count(*) - :events_before AS new_events FROM quota_sched.job_event;
SELECT * FROM pg_temp.history();

------------------------------------------------------------------------
-- A rolled-back submission leaves neither job nor history.
------------------------------------------------------------------------
SELECT count(*) AS events_before FROM quota_sched.job_event \gset
BEGIN;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jh_rolled_back', 'jh_queue', 'jh_share', 'ml.g5.xlarge');
SELECT job, to_state FROM pg_temp.history() WHERE job = 'jh_rolled_back';
ROLLBACK;
SELECT count(*) AS jobs FROM quota_sched.job WHERE name = 'jh_rolled_back';
SELECT count(*) - :events_before AS new_events FROM quota_sched.job_event;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled
-- (session_replication_role = replica; there is no scheduler here), then
-- drop the configuration, which takes the jobs and their history with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE job_queue = 'jh_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'jh_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'jh_env';
DROP ROLE regress_jh_submitter;
