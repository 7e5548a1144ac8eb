-- Submitting a job is a plain INSERT into quota_sched.job (scheduling.md 2).  The
-- INSERT validates everything; bad input fails the statement with the
-- SQLSTATE of scheduling.md 9 and stores nothing: no job and no job_event row.
--
-- pg_temp.submit() runs one statement and returns its outcome ('accepted',
-- or SQLSTATE and message) and what it stored: the change in the number of
-- job and job_event rows.
CREATE FUNCTION pg_temp.submit(stmt text, OUT result text, OUT stored text)
LANGUAGE plpgsql AS $$
DECLARE
	jobs0 bigint := (SELECT count(*) FROM quota_sched.job);
	events0 bigint := (SELECT count(*) FROM quota_sched.job_event);
	jobs bigint;
	events bigint;
BEGIN
	BEGIN
		EXECUTE stmt;
		result := 'accepted';
	EXCEPTION WHEN OTHERS THEN
		result := SQLSTATE || ': ' || SQLERRM;
	END;
	jobs := (SELECT count(*) FROM quota_sched.job) - jobs0;
	events := (SELECT count(*) FROM quota_sched.job_event) - events0;
	stored := CASE WHEN jobs = 0 AND events = 0 THEN 'nothing'
				   ELSE format('%s job(s), %s event(s)', jobs, events) END;
END
$$;

-- pg_temp.submit_with() submits a valid job to jsv_queue/jsv_share on
-- ml.g5.xlarge, named name, with one more column set to a value (SQL text).
CREATE FUNCTION pg_temp.submit_with(name text, col text, val text, OUT result text, OUT stored text)
LANGUAGE sql AS $$
	SELECT * FROM pg_temp.submit(format(
		'INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, %I)'
		' VALUES (%L, ''jsv_queue'', ''jsv_share'', ''ml.g5.xlarge'', %s)', col, name, val))
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('jsv_env', '{"ml.g5.xlarge": 8, "ml.p4d.24xlarge": 2}'),
       ('jsv_env2', '{"ml.g5.xlarge": 8, "ml.p5.48xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('jsv_queue', 'jsv_env'), ('jsv_queue2', 'jsv_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits)
VALUES ('jsv_queue', 'jsv_share', 'LEND_AND_BORROW', '{"ml.g5.xlarge": 4}'),
       ('jsv_queue', 'jsv_share_off', 'LEND', '{"ml.g5.xlarge": 4}'),
       ('jsv_queue2', 'jsv_other_share', 'LEND', '{"ml.g5.xlarge": 4}');

------------------------------------------------------------------------
-- A valid submission: the system fills its columns, the rest have their
-- defaults (priority 0, one instance, one attempt, no limits).  It is
-- submitted at the time of its transaction.
------------------------------------------------------------------------
BEGIN;
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
	VALUES ('jsv_plain', 'jsv_queue', 'jsv_share', 'ml.g5.xlarge', '{"command": ["python", "train.py"]}')$$);
\x on
SELECT name, job_queue, quota_share, priority, capacity_unit, instance_count, payload,
       max_attempts, preemption_retries, timeout, client_token, tags,
       owner = current_user AS owner_is_submitter, state, status_reason, status_reason_at,
       stop_reason, stop_requested_at, preempted_for, promised_at, agent, lease_until,
       failed_attempts, preemption_count, submitted_at = now() AS submitted_now,
       queued_at = submitted_at AS queued_at_submission, scheduled_at, started_at, stopped_at
  FROM quota_sched.job WHERE name = 'jsv_plain';
\x off
COMMIT;

------------------------------------------------------------------------
-- Job names: 1 to 128 characters of [A-Za-z0-9_-] (23514); required (23502).
------------------------------------------------------------------------
SELECT label, r.*
  FROM (VALUES ('empty', quote_literal('')),
               ('129 characters', quote_literal('jsv_' || repeat('n', 125))),
               ('a space', quote_literal('jsv job')),
               ('a dot', quote_literal('jsv.job')),
               ('a slash', quote_literal('jsv/job')),
               ('not ASCII', quote_literal('jsv_jöb')),
               ('null', 'NULL'),
               ('128 characters', quote_literal('jsv_' || repeat('n', 124))),
               ('every allowed character', quote_literal('jsv_AZaz09-_'))) AS v(label, name),
       LATERAL pg_temp.submit(format(
		'INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)'
		' VALUES (%s, ''jsv_queue'', ''jsv_share'', ''ml.g5.xlarge'')', name)) AS r;

------------------------------------------------------------------------
-- Value ranges (23514): priority 0..9999, instance_count >= 1,
-- max_attempts 1..10, preemption_retries >= 0 or null (unlimited), timeout
-- positive or null (none), tags a JSON object, client_token 1 to 255
-- characters (scheduling.md is silent on its length).
------------------------------------------------------------------------
SELECT col AS "column", val AS value, r.*
  FROM (VALUES (1, 'priority', '-1'), (2, 'priority', '10000'),
               (3, 'priority', '0'), (4, 'priority', '9999'),
               (5, 'instance_count', '0'), (6, 'instance_count', '-1'),
               (7, 'instance_count', '1'), (8, 'instance_count', '2147483647'),
               (9, 'max_attempts', '0'), (10, 'max_attempts', '11'),
               (11, 'max_attempts', '1'), (12, 'max_attempts', '10'),
               (13, 'preemption_retries', '-1'), (14, 'preemption_retries', '0'),
               (15, 'preemption_retries', 'NULL'), (16, 'preemption_retries', '1000'),
               (17, 'timeout', '''0'''), (18, 'timeout', '''-1 minute'''),
               (19, 'timeout', '''1 second'''), (20, 'timeout', 'NULL'),
               (21, 'tags', '''[]'''), (22, 'tags', '''"team-a"'''),
               (23, 'tags', '''1'''), (24, 'tags', '''null'''),
               (25, 'tags', '''{}'''), (26, 'tags', '''{"team": "a"}'''), (27, 'tags', 'NULL'),
               (28, 'client_token', ''''''), (29, 'client_token', 'repeat(''t'', 256)'),
               (30, 'client_token', 'repeat(''t'', 255)'), (31, 'client_token', '''jsv-token'''))
       AS v(n, col, val),
       LATERAL pg_temp.submit_with('jsv_value_' || lpad(n::text, 2, '0'), col, val) AS r
 ORDER BY n;

------------------------------------------------------------------------
-- The payload is at most 1 MiB (1048576 bytes) as text; more is 54000.
-- {"data": "xxx..."} is 12 bytes plus the x's.
------------------------------------------------------------------------
SELECT * FROM pg_temp.submit_with('jsv_payload_limit', 'payload',
	$$jsonb_build_object('data', repeat('x', 1048576 - 12))$$);
SELECT * FROM pg_temp.submit_with('jsv_payload_over', 'payload',
	$$jsonb_build_object('data', repeat('x', 1048576 - 12 + 1))$$);
SELECT * FROM pg_temp.submit_with('jsv_payload_over', 'payload',
	$$jsonb_build_object('data', repeat('x', 2 * 1048576))$$);
-- What counts is the text, not the stored size: numbers written with an
-- exponent are small in jsonb but long as text (1e130000 is 130001 digits),
-- so nine of them are 1170027 bytes as text.
SELECT * FROM pg_temp.submit_with('jsv_payload_digits', 'payload',
	$$('[' || repeat('1e130000, ', 8) || '1e130000]')::jsonb$$);
SELECT name, octet_length(payload::text) AS payload_bytes
  FROM quota_sched.job WHERE name LIKE 'jsv\_payload%' ORDER BY name COLLATE "C";

------------------------------------------------------------------------
-- The queue, the share and the capacity unit must exist (23503, the message
-- names the value); the share must be one of that queue's.
------------------------------------------------------------------------
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_no_such_queue', 'jsv_share', 'ml.g5.xlarge')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_no_such_share', 'ml.g5.xlarge')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_other_share', 'ml.g5.xlarge')$$);
-- A unit of no environment, and a unit of another queue's environment.
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share', 'ml.trn1.32xlarge')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share', 'ml.p5.48xlarge')$$);
-- A unit the environment has, though the share has none of it, is accepted.
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_unit_of_environment', 'jsv_queue', 'jsv_share', 'ml.p4d.24xlarge')$$);
-- Queue and share are required (23502).
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_share', 'ml.g5.xlarge')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'ml.g5.xlarge')$$);

------------------------------------------------------------------------
-- No capacity unit at all, neither the column nor
-- payload->'ResourceConfig'->'InstanceType': 23502.
------------------------------------------------------------------------
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share', NULL)$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, instance_count, payload)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share', 2, '{"ResourceConfig": {"InstanceCount": 2}}')$$);

------------------------------------------------------------------------
-- A DISABLED queue or share accepts no new jobs (55000); a DISABLED
-- environment still does (it only stops dispatching).
------------------------------------------------------------------------
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE job_queue = 'jsv_queue' AND name = 'jsv_share_off';
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share_off', 'ml.g5.xlarge')$$);

UPDATE quota_sched.job_queue SET state = 'DISABLED' WHERE name = 'jsv_queue';
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_share', 'ml.g5.xlarge')$$);
UPDATE quota_sched.job_queue SET state = 'ENABLED' WHERE name = 'jsv_queue';

UPDATE quota_sched.service_environment SET state = 'DISABLED' WHERE name = 'jsv_env';
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_environment_disabled', 'jsv_queue', 'jsv_share', 'ml.g5.xlarge')$$);
UPDATE quota_sched.service_environment SET state = 'ENABLED' WHERE name = 'jsv_env';

------------------------------------------------------------------------
-- A share with a submit_role takes jobs only from members of that role
-- (42501).
------------------------------------------------------------------------
CREATE ROLE regress_jsv_team NOLOGIN;
CREATE ROLE regress_jsv_member NOLOGIN IN ROLE quota_sched_user, regress_jsv_team;
CREATE ROLE regress_jsv_outsider NOLOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.quota_share (job_queue, name, strategy, submit_role)
VALUES ('jsv_queue', 'jsv_team_share', 'LEND', 'regress_jsv_team');
SET ROLE regress_jsv_outsider;
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_bad', 'jsv_queue', 'jsv_team_share', 'ml.g5.xlarge')$$);
SET ROLE regress_jsv_member;
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('jsv_team_member', 'jsv_queue', 'jsv_team_share', 'ml.g5.xlarge')$$);
RESET ROLE;

------------------------------------------------------------------------
-- Columns the system keeps cannot be set by the submitter (42501, the
-- message names the column), not even to the value the system would give.
------------------------------------------------------------------------
SELECT col AS "column", r.*
  FROM (VALUES (1, 'id', '1'), (2, 'owner', 'current_user'), (3, 'state', '''RUNNABLE'''),
               (4, 'status_reason', '''none'''), (5, 'status_reason_at', 'now()'),
               (6, 'stop_reason', '''TERMINATED'''), (7, 'stop_requested_at', 'now()'),
               (8, 'preempted_for', '1'), (9, 'promised_at', 'now()'),
               (10, 'agent', '''agent-1'''), (11, 'lease_until', 'now()'),
               (12, 'failed_attempts', '0'), (13, 'preemption_count', '0'),
               (14, 'submitted_at', 'now()'), (15, 'queued_at', '''2000-01-01'''),
               (16, 'scheduled_at', 'now()'), (17, 'started_at', 'now()'),
               (18, 'stopped_at', 'now()'), (19, 'agent_role', 'current_user')) AS v(n, col, val),
       LATERAL pg_temp.submit_with('jsv_system_column', col, val) AS r
 ORDER BY n;

------------------------------------------------------------------------
-- payload->'command', when present, is a non-empty JSON array of strings
-- (the argv the agent runs): anything else is refused at INSERT (23514),
-- not claimed and failed by an agent later.  A payload without "command"
-- is accepted (an external launcher may need none).
------------------------------------------------------------------------
SELECT label, r.*
  FROM (VALUES (1, 'a string', '{"command": "python train.py"}'),
               (2, 'an empty array', '{"command": []}'),
               (3, 'a number element', '{"command": ["python", 3]}'),
               (4, 'a null element', '{"command": ["python", "train.py", null]}'),
               (5, 'a nested array', '{"command": [["python"]]}'),
               (6, 'an object', '{"command": {"argv": ["python"]}}'),
               (7, 'a JSON null', '{"command": null}'),
               (8, 'no command', '{"step": 1}'),
               (9, 'an array of strings', '{"command": ["python", "train.py", ""]}'),
               (10, 'a payload that is an array', '["python", "train.py"]')) AS v(n, label, payload),
       LATERAL pg_temp.submit_with('jsv_command_' || n, 'payload', quote_literal(payload)) AS r
 ORDER BY n;
-- the hint of a string command shows the form it must have
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES ('jsv_command_hint', 'jsv_queue', 'jsv_share', 'ml.g5.xlarge', '{"command": "python train.py"}');

------------------------------------------------------------------------
-- A job the configuration as it is cannot run is stored, with a NOTICE
-- (not an error: the configuration may change) naming the limit: the
-- pass's rule of MISCONFIGURATION reasons (scheduling.md 3.7), from the
-- same code.  jsv_fit_env has 4 gpu; the borrower has 1 of its own, the
-- lender 1, the reserve 1, 1 is unassigned: the borrower can have at most
-- 1 + 1 + 1 = 3, the reserve 1.  At most 5 notices per statement.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('jsv_fit_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('jsv_fit_queue', 'jsv_fit_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits)
VALUES ('jsv_fit_queue', 'borrower', 'LEND_AND_BORROW', '{"gpu": 1}'),
       ('jsv_fit_queue', 'lender', 'LEND', '{"gpu": 1}'),
       ('jsv_fit_queue', 'reserve', 'RESERVE', '{"gpu": 1}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('jsv_fit_env_max', 'jsv_fit_queue', 'borrower', 'gpu', 5);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('jsv_fit_reach', 'jsv_fit_queue', 'borrower', 'gpu', 4);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('jsv_fit_reserve', 'jsv_fit_queue', 'reserve', 'gpu', 2);
-- these fit: no notice
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('jsv_fit_ok', 'jsv_fit_queue', 'borrower', 'gpu', 3),
       ('jsv_fit_reserve_ok', 'jsv_fit_queue', 'reserve', 'gpu', 1);
-- a bulk INSERT of 8 such jobs: 5 notices, then one that says the rest are left out
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'jsv_fit_bulk_' || i, 'jsv_fit_queue', 'lender', 'gpu', 2 FROM generate_series(1, 8) i;
-- the pass gives each of them the reason its notice named
SELECT count(*) > 0 AS pass_decided FROM quota_sched.run_pass('jsv_fit_queue');
SELECT name, instance_count, status_reason FROM quota_sched.job
 WHERE job_queue = 'jsv_fit_queue' AND name NOT LIKE 'jsv_fit_bulk_%' ORDER BY name COLLATE "C";
SELECT count(*) AS bulk_jobs, min(status_reason) AS reason, count(DISTINCT status_reason) AS reasons
  FROM quota_sched.job WHERE name LIKE 'jsv_fit_bulk_%';
-- once the environment has 8, 5 x gpu fits the borrower (1 + 5 unassigned + 1): no notice
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 8}' WHERE name = 'jsv_fit_env';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('jsv_fit_after_change', 'jsv_fit_queue', 'borrower', 'gpu', 5);

------------------------------------------------------------------------
-- Only the accepted submissions were stored, each RUNNABLE with one
-- job_event row.
------------------------------------------------------------------------
SELECT CASE WHEN length(j.name) > 40 THEN left(j.name, 12) || '...(' || length(j.name) || ')'
            ELSE j.name END AS name,
       j.quota_share, j.priority, j.capacity_unit, j.instance_count, j.max_attempts,
       j.preemption_retries, j.timeout, j.tags, length(j.client_token) AS token_length,
       j.state, (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_id = j.id) AS events
  FROM quota_sched.job j
 WHERE j.job_queue LIKE 'jsv\_%'
 ORDER BY j.name COLLATE "C";

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.  The jobs are ended first, as superuser with the extension's
-- triggers disabled (session_replication_role = replica), since there is no
-- scheduler here to end them; then the configuration goes, with them.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'jsv\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'jsv\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'jsv\_%';
DROP ROLE regress_jsv_member, regress_jsv_outsider, regress_jsv_team;
SELECT count(*) AS jobs_left FROM quota_sched.job WHERE job_queue LIKE 'jsv\_%';
