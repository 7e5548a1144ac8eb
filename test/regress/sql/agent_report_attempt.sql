-- report(..., attempt => N): a report about an attempt that is over changes
-- nothing.  An agent reports FAILED for attempt 1; the reply is lost; the
-- job is retried and the same agent claims attempt 2; its retried report of
-- attempt 1 must not fail attempt 2 too.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ra_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ra_queue', 'ra_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ra_queue', 'ra_share', '{"gpu": 1}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts)
VALUES ('ra_job', 'ra_queue', 'ra_share', 'gpu', 3);
CREATE FUNCTION pg_temp.id() RETURNS bigint LANGUAGE sql AS
	$$ SELECT id FROM quota_sched.job WHERE name = 'ra_job' $$;

SELECT count(*) AS dispatched FROM quota_sched.run_pass('ra_queue');
SELECT name, state, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('ra_agent', 'ra_queue', start => true);
SELECT state, failed_attempts
  FROM quota_sched.report(pg_temp.id(), 'ra_agent', 'FAILED', 'exit code 1', attempt => 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('ra_queue');
SELECT name, state, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('ra_agent', 'ra_queue', start => true);
-- the retry of attempt 1's report: nothing changes
SELECT state, failed_attempts
  FROM quota_sched.report(pg_temp.id(), 'ra_agent', 'FAILED', 'exit code 1', attempt => 1);
-- attempt 2's own report applies
SELECT state, failed_attempts
  FROM quota_sched.report(pg_temp.id(), 'ra_agent', 'SUCCEEDED', attempt => 2);
-- a report naming no attempt is taken as before; attempt 0 is refused
SELECT state FROM quota_sched.report(pg_temp.id(), 'ra_agent', 'SUCCEEDED');
DO $$ BEGIN
	PERFORM quota_sched.report(pg_temp.id(), 'ra_agent', 'SUCCEEDED', attempt => 0);
EXCEPTION WHEN invalid_parameter_value THEN RAISE NOTICE 'refused: %', SQLERRM;
END $$;
SELECT e.from_state, e.to_state, e.reason FROM quota_sched.job_event e
 WHERE e.job_id = pg_temp.id() ORDER BY e.id;

SELECT * FROM quota_sched.held_capacity_drift();
DELETE FROM quota_sched.job_queue WHERE name = 'ra_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ra_env';
