-- Arrays of jobs (scheduling.md 3.16): one INSERT with array_size submits
-- that many jobs, each a job of its own, named NAME[INDEX], with the
-- array's id (that of index 0, the row inserted) and its index, every
-- other column as inserted (but client_token, which index 0 keeps: a
-- retried INSERT ... ON CONFLICT submits nothing again); bad sizes and
-- array columns set by hand are refused, and nothing is half-written;
-- terminate(array => true) of index 0 ends every job of the array that has
-- not ended.

\i test/regress/include/helpers.sql

CREATE ROLE regress_ja_user NOLOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ja_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ja_queue', 'ja_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ja_queue', 'ja_share', '{"gpu": 4}', 'RESERVE');

CREATE FUNCTION pg_temp.ja_jobs()
RETURNS TABLE (name text, array_of text, array_index integer, array_size integer, state text,
			   priority integer, payload jsonb, client_token text, owner name, events bigint)
LANGUAGE sql AS $$
	SELECT j.name, a.name, j.array_index, j.array_size, j.state, j.priority, j.payload,
		   j.client_token, j.owner,
		   (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_id = j.id)
	  FROM quota_sched.job j LEFT JOIN quota_sched.job a ON a.id = j.array_id
	 WHERE j.job_queue = 'ja_queue' ORDER BY j.id
$$;

-- A user submits an array of 3: the INSERT returns index 0; the array's
-- three jobs are there, as the user's.
SET ROLE regress_ja_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 priority, payload, array_size, client_token)
VALUES ('sweep', 'ja_queue', 'ja_share', 'gpu', 1, 5, '{"lr": [0.1, 0.01, 0.001]}', 3, 'ja-1')
RETURNING name, array_index, array_size, array_id = id AS array_id_is_its_id;
-- the same INSERT, retried with its token, submits nothing
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 priority, payload, array_size, client_token)
VALUES ('sweep', 'ja_queue', 'ja_share', 'gpu', 1, 5, '{"lr": [0.1, 0.01, 0.001]}', 3, 'ja-1')
ON CONFLICT (client_token) DO NOTHING RETURNING name;
RESET ROLE;
SELECT * FROM pg_temp.ja_jobs();

-- Refused, with nothing written: sizes out of 2 to 10,000 (23514), a name
-- too long for its index, array columns given by the submitter (42501), a
-- change of array_size afterwards (42501).
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size) VALUES ('bad', 'ja_queue', 'ja_share', 'gpu', 1, 1)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size) VALUES ('bad', 'ja_queue', 'ja_share', 'gpu', 1, 10001)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size) VALUES (repeat('n', 123), 'ja_queue', 'ja_share', 'gpu', 1, 2)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size, array_index) VALUES ('bad', 'ja_queue', 'ja_share', 'gpu', 1, 2, 1)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_id) VALUES ('bad', 'ja_queue', 'ja_share', 'gpu', 1, 1)$$);
-- an array refused (its share does not exist) writes no job
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size) VALUES ('big', 'ja_queue', 'nope', 'gpu', 1, 2)$$);
SET ROLE regress_ja_user;
SELECT pg_temp.refused($$UPDATE quota_sched.job SET array_size = 4 WHERE name = 'sweep[0]'$$);
RESET ROLE;
SELECT count(*) AS jobs FROM quota_sched.job WHERE job_queue = 'ja_queue';

-- The pass dispatches the array's jobs as any others (capacity 4, one
-- instance each).
SELECT action, count(*) FROM pg_temp.pass('ja_queue') GROUP BY 1;

-- terminate(array => true) takes the array's id, index 0's: every job of
-- the array ends; of another job of the array, or of a job in none, it is
-- refused (22023).
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('single', 'ja_queue', 'ja_share', 'gpu', 1);
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s, "array" => true)',
							  (SELECT id FROM quota_sched.job WHERE name = 'sweep[1]')));
SELECT pg_temp.refused(format('SELECT quota_sched.terminate(%s, "array" => true)',
							  (SELECT id FROM quota_sched.job WHERE name = 'single')));
SET ROLE regress_ja_user;
SELECT name, state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'sweep[0]'),
											  'sweep cancelled', "array" => true);
RESET ROLE;
SELECT name, state, stop_reason FROM quota_sched.job WHERE job_queue = 'ja_queue' ORDER BY id;
SELECT count(*) AS drift FROM quota_sched.held_capacity_drift();

-- An array of 10,000, the most: one statement.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 array_size)
VALUES ('big', 'ja_queue', 'ja_share', 'gpu', 1, 10000);
SELECT count(*), min(array_index), max(array_index), count(DISTINCT name)
  FROM quota_sched.job WHERE job_queue = 'ja_queue' AND name LIKE 'big[%';

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ja_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'ja_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'ja_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ja_env';
DROP ROLE regress_ja_user;
