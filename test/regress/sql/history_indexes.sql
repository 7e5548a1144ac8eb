-- History rows are written directly, bypassing the executor's privilege
-- checks but not its index machinery: an admin may add expression and
-- partial indexes to job_event, and they are kept up to date.
INSERT INTO quota_sched.service_environment VALUES ('hix_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('hix_queue', 'hix_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hix_queue', 'hix_share', '{"gpu": 1}', 'RESERVE');

CREATE INDEX hix_actor_lower ON quota_sched.job_event (lower(actor));
CREATE INDEX hix_scheduled ON quota_sched.job_event (job_id) WHERE to_state = 'SCHEDULED';

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('hix_a', 'hix_queue', 'hix_share', 'gpu'), ('hix_b', 'hix_queue', 'hix_share', 'gpu');
SELECT count(*) AS decisions FROM quota_sched.run_pass('hix_queue');

-- the indexes answer as the table does
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SELECT count(*) AS by_expression_index FROM quota_sched.job_event e
  JOIN quota_sched.job j ON j.id = e.job_id
 WHERE lower(e.actor) = 'pass' AND j.job_queue = 'hix_queue';
SELECT count(*) AS by_partial_index FROM quota_sched.job_event e
  JOIN quota_sched.job j ON j.id = e.job_id
 WHERE e.to_state = 'SCHEDULED' AND j.job_queue = 'hix_queue';
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT count(*) FILTER (WHERE lower(actor) = 'pass') AS by_table_pass,
	   count(*) FILTER (WHERE to_state = 'SCHEDULED') AS by_table_scheduled
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'hix_queue';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

DROP INDEX quota_sched.hix_actor_lower, quota_sched.hix_scheduled;
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'hix_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'hix_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'hix_env';
