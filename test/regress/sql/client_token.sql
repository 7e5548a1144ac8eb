-- client_token makes a submission idempotent (scheduling.md 2): it is optional and
-- unique, so a second INSERT with the same token is a unique_violation
-- (23505), and INSERT ... ON CONFLICT (client_token) DO NOTHING submits a
-- job once however often it is retried.
\i test/regress/include/helpers.sql

-- pg_temp.stored() lists the jobs of the test's queues, with their tokens
-- and their number of job_event rows.
CREATE FUNCTION pg_temp.stored()
RETURNS TABLE (name text, job_queue text, priority integer, client_token text, events bigint)
LANGUAGE sql AS $$
	SELECT j.name, j.job_queue, j.priority, j.client_token,
	       (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_id = j.id)
	  FROM quota_sched.job j
	 WHERE j.job_queue LIKE 'ct\_%'
	 ORDER BY j.name COLLATE "C", j.job_queue COLLATE "C"
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ct_env', '{"ml.g5.xlarge": 8}'), ('ct_env2', '{"ml.g5.xlarge": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('ct_queue', 'ct_env'), ('ct_queue2', 'ct_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy)
VALUES ('ct_queue', 'ct_share', 'LEND'), ('ct_queue2', 'ct_share', 'LEND');

------------------------------------------------------------------------
-- A repeated token is a unique_violation, whatever else the job says and
-- whichever queue it goes to.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('ct_first', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-1');
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token) VALUES ('ct_first', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-1')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority, client_token) VALUES ('ct_other', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 5, 'ct-token-1')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token) VALUES ('ct_first', 'ct_queue2', 'ct_share', 'ml.g5.xlarge', 'ct-token-1')$$);
SELECT * FROM pg_temp.stored();

------------------------------------------------------------------------
-- ON CONFLICT (client_token) DO NOTHING: the first submission stores the job
-- (and its one job_event row); a retry returns no row and stores nothing,
-- and the job stays as first submitted.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('ct_idempotent', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-2')
ON CONFLICT (client_token) DO NOTHING
RETURNING name, state;
SELECT count(*) AS jobs_before FROM quota_sched.job \gset
SELECT count(*) AS events_before FROM quota_sched.job_event \gset
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('ct_idempotent', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-2')
ON CONFLICT (client_token) DO NOTHING
RETURNING name, state;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority, client_token)
VALUES ('ct_idempotent_retry', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 9, 'ct-token-2')
ON CONFLICT (client_token) DO NOTHING
RETURNING name, state;
SELECT (SELECT count(*) FROM quota_sched.job) - :jobs_before AS new_jobs,
       (SELECT count(*) FROM quota_sched.job_event) - :events_before AS new_events;
SELECT * FROM pg_temp.stored();

-- A batch retried whole stores only the jobs it had not stored before; a
-- token repeated inside one batch is stored once.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('ct_batch_a', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-2'),
       ('ct_batch_b', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-3'),
       ('ct_batch_c', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-3')
ON CONFLICT (client_token) DO NOTHING
RETURNING name, client_token;
SELECT * FROM pg_temp.stored();

------------------------------------------------------------------------
-- A token another team used: a 23505 that says the token is taken and how
-- to go on, naming neither the job nor its team (the bare unique index
-- said 'duplicate key value violates unique constraint
-- "job_client_token_key"').  ON CONFLICT, also in a CTE, still does
-- nothing, and the index stays the guard under races.
------------------------------------------------------------------------
CREATE ROLE regress_ct_other IN ROLE quota_sched_user;
SET ROLE regress_ct_other;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('ct_theirs', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-1');
WITH ins AS (INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
             VALUES ('ct_theirs', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-1')
             ON CONFLICT (client_token) DO NOTHING RETURNING id)
SELECT count(*) AS stored FROM ins;
-- and from a function (SPI): the statement the trigger runs in is the one told
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token) VALUES ('ct_theirs', 'ct_queue', 'ct_share', 'ml.g5.xlarge', 'ct-token-1') ON CONFLICT (client_token) DO NOTHING$$) AS in_a_function;
RESET ROLE;
SELECT * FROM pg_temp.stored();

------------------------------------------------------------------------
-- Without a token there is nothing to conflict with: every submission is a
-- new job.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ct_no_token', 'ct_queue', 'ct_share', 'ml.g5.xlarge')
ON CONFLICT (client_token) DO NOTHING;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ct_no_token', 'ct_queue', 'ct_share', 'ml.g5.xlarge')
ON CONFLICT (client_token) DO NOTHING;
SELECT * FROM pg_temp.stored();

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled
-- (session_replication_role = replica; there is no scheduler here), then
-- drop the configuration, which takes the jobs with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE job_queue LIKE 'ct\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'ct\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'ct\_%';
DROP ROLE regress_ct_other;
