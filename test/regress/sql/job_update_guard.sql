-- After INSERT, only priority may change (scheduling.md 2).  Any other change by a
-- user is insufficient_privilege (42501), with the column named; that holds
-- for a superuser too (these tests run as one), since only the extension's
-- own code changes the columns the system keeps.
--
-- pg_temp.refused() shows the SQLSTATE and message of a statement, with the
-- job id in the message replaced by <id>.
CREATE FUNCTION pg_temp.refused(stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE stmt;
	RETURN 'accepted';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE || ': ' || regexp_replace(SQLERRM, 'job \d+', 'job <id>');
END
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('jug_env', '{"ml.g5.xlarge": 8, "ml.p4d.24xlarge": 2}'),
       ('jug_env2', '{"ml.g5.xlarge": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('jug_queue', 'jug_env'), ('jug_queue2', 'jug_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy)
VALUES ('jug_queue', 'jug_share', 'LEND'), ('jug_queue', 'jug_share2', 'LEND'),
       ('jug_queue2', 'jug_share', 'LEND');

INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count,
                             payload, max_attempts, preemption_retries, timeout, client_token, tags)
VALUES ('jug_job', 'jug_queue', 'jug_share', 10, 'ml.g5.xlarge', 2,
        '{"command": ["python", "train.py"]}', 3, 2, '1 hour', 'jug-token', '{"team": "a"}');
CREATE TEMP TABLE jug_submitted AS SELECT * FROM quota_sched.job WHERE name = 'jug_job';

-- pg_temp.unchanged() tells whether every column but priority is as submitted.
CREATE FUNCTION pg_temp.unchanged() RETURNS boolean LANGUAGE sql AS $$
	SELECT to_jsonb(j) - 'priority' = to_jsonb(s) - 'priority'
	  FROM quota_sched.job j JOIN jug_submitted s USING (id)
$$;

------------------------------------------------------------------------
-- Priority may change, within 0..9999 (23514).
------------------------------------------------------------------------
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 500 WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = priority + 1 WHERE name = 'jug_job'$$);
SELECT name, priority, pg_temp.unchanged() AS rest_unchanged FROM quota_sched.job WHERE name = 'jug_job';
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = -1 WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 10000 WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = NULL WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 0 WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 9999 WHERE name = 'jug_job'$$);
SELECT name, priority, pg_temp.unchanged() AS rest_unchanged FROM quota_sched.job WHERE name = 'jug_job';

------------------------------------------------------------------------
-- Every other column, the submitter's and the system's, is refused (42501).
------------------------------------------------------------------------
SELECT col AS "column", val AS new_value,
       pg_temp.refused(format('UPDATE quota_sched.job SET %I = %s WHERE name = ''jug_job''', col, val)) AS result
  FROM (VALUES (1, 'name', '''jug_renamed'''),
               (2, 'job_queue', '''jug_queue2'''),
               (3, 'quota_share', '''jug_share2'''),
               (4, 'capacity_unit', '''ml.p4d.24xlarge'''),
               (5, 'instance_count', '1'),
               (6, 'payload', '''{"command": ["python", "other.py"]}'''),
               (7, 'payload', 'NULL'),
               (8, 'max_attempts', '10'),
               (9, 'preemption_retries', 'NULL'),
               (10, 'timeout', '''2 hours'''),
               (11, 'client_token', '''jug-other-token'''),
               (12, 'tags', '''{"team": "b"}'''),
               (13, 'tags', 'NULL'),
               (14, 'id', 'id + 1000000'),
               (15, 'owner', '''regress_someone_else'''),
               (16, 'state', '''SUCCEEDED'''),
               (17, 'status_reason', '''MISCONFIGURATION:made up'''),
               (18, 'status_reason_at', 'now()'),
               (19, 'stop_reason', '''TERMINATED'''),
               (20, 'stop_requested_at', 'now()'),
               (21, 'preempted_for', 'id'),
               (22, 'promised_at', 'now()'),
               (23, 'agent', '''agent-1'''),
               (24, 'lease_until', 'now() + ''1 hour'''),
               (25, 'failed_attempts', '1'),
               (26, 'preemption_count', '1'),
               (27, 'submitted_at', 'submitted_at - interval ''1 hour'''),
               (28, 'queued_at', '''2000-01-01'''),
               (29, 'scheduled_at', 'now()'),
               (30, 'started_at', 'now()'),
               (31, 'stopped_at', 'now()'),
               (32, 'agent_role', 'current_user')) AS v(n, col, val)
 ORDER BY n;
SELECT name, priority, pg_temp.unchanged() AS rest_unchanged FROM quota_sched.job WHERE name = 'jug_job';

------------------------------------------------------------------------
-- Naming any other column in SET is refused, even to set the value it has:
-- only priority may be named (and the whole statement is refused).
------------------------------------------------------------------------
SELECT pg_temp.refused($$UPDATE quota_sched.job SET payload = payload WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET name = 'jug_job', tags = tags, state = state, submitted_at = submitted_at WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 42, timeout = timeout, payload = payload WHERE name = 'jug_job'$$);
SELECT name, priority, pg_temp.unchanged() AS rest_unchanged FROM quota_sched.job WHERE name = 'jug_job';

------------------------------------------------------------------------
-- A change of priority together with a change of another column is refused
-- whole: the priority stays as it was.
------------------------------------------------------------------------
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 7, instance_count = 4 WHERE name = 'jug_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 7, state = 'FAILED' WHERE name = 'jug_job'$$);
SELECT name, priority, pg_temp.unchanged() AS rest_unchanged FROM quota_sched.job WHERE name = 'jug_job';

-- No change of state happened: the history has the submission, and a
-- PRIORITY row for each priority that went through.
SELECT e.kind, e.from_state, e.to_state, e.old_priority, e.priority
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'jug_job' ORDER BY e.id;

------------------------------------------------------------------------
-- A submitter (role quota_sched_user) reprioritises its own job; it may
-- change nothing else.
------------------------------------------------------------------------
CREATE ROLE regress_jug_user NOLOGIN IN ROLE quota_sched_user;
SET ROLE regress_jug_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('jug_user_job', 'jug_queue', 'jug_share', 'ml.g5.xlarge');
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 77 WHERE name = 'jug_user_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 10000 WHERE name = 'jug_user_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instance_count = 2 WHERE name = 'jug_user_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET state = 'SUCCEEDED' WHERE name = 'jug_user_job'$$);
-- every column a submitter sets is UPDATE-able as a privilege (0.3), so
-- that the guard, not "permission denied for table job", answers: each is
-- refused, even set to its own value, with a hint that only priority may
-- change; the system's columns (state above) have no UPDATE privilege.
SELECT col, pg_temp.refused(format('UPDATE quota_sched.job SET %I = %I WHERE name = %L',
                                   col, col, 'jug_user_job'))
  FROM unnest(ARRAY['name', 'job_queue', 'quota_share', 'capacity_unit', 'instance_count',
                    'payload', 'max_attempts', 'preemption_retries', 'timeout', 'client_token',
                    'tags', 'max_lease_losses', 'instances_per_host', 'same_label']) AS col;
-- what the user sees with it: the hint
DO $$
DECLARE
	hint text;
BEGIN
	UPDATE quota_sched.job SET instance_count = 2 WHERE name = 'jug_user_job';
EXCEPTION WHEN insufficient_privilege THEN
	GET STACKED DIAGNOSTICS hint = PG_EXCEPTION_HINT;
	RAISE NOTICE 'HINT: %', hint;
END
$$;
SELECT name, priority, instance_count, state FROM quota_sched.job WHERE name = 'jug_user_job';
-- Another's job is hidden from the user's UPDATE by row-level security:
-- "UPDATE 0", nothing said.  set_priority() says why: 42501 for a job
-- that is not theirs or their team's, P0002 for no such job (no more than
-- terminate() and explain() reveal); on their own job it returns the
-- priority it had, and the update guard's rules hold (range, ended jobs).
WITH u AS (UPDATE quota_sched.job SET priority = 3 WHERE name = 'jug_job' RETURNING 1)
SELECT count(*) AS rows_updated FROM u;
SELECT pg_temp.refused(format('SELECT quota_sched.set_priority(%s, 3)',
                              (SELECT id FROM quota_sched.job WHERE name = 'jug_user_job') + 1000000));
RESET ROLE;
SELECT id AS jug_job_id FROM quota_sched.job WHERE name = 'jug_job' \gset
SET ROLE regress_jug_user;
SELECT pg_temp.refused(format('SELECT quota_sched.set_priority(%s, 3)', :jug_job_id)) AS another_users_job;
SELECT quota_sched.set_priority(id, 78) AS priority_before FROM quota_sched.job WHERE name = 'jug_user_job';
SELECT pg_temp.refused(format('SELECT quota_sched.set_priority(%s, -1)',
                              (SELECT id FROM quota_sched.job WHERE name = 'jug_user_job')));
SELECT name, priority FROM quota_sched.job WHERE name = 'jug_user_job';
SELECT e.kind, e.old_priority, e.priority, e.actor = 'regress_jug_user' AS by_the_user
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'jug_user_job' AND e.kind = 'PRIORITY' ORDER BY e.id;
RESET ROLE;
SELECT name, priority FROM quota_sched.job WHERE name = 'jug_job';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled
-- (session_replication_role = replica; there is no scheduler here), then
-- drop the configuration, which takes the jobs with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'jug\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'jug\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'jug\_%';
DROP ROLE regress_jug_user;
