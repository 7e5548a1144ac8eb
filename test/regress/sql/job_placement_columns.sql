-- A job's placement constraints (issue 39, scheduling.md 3.13): two columns a
-- submitter may set in the INSERT, fixed after it.
--   instances_per_host: null (any split), or from 1 to instance_count and a
--     divisor of it, the instance_count the job runs with: given, from the
--     payload's ResourceConfig.InstanceCount, or 1;
--   same_label: null (none), or a label key, 1 to 63 characters of
--     [a-z0-9_.-].
-- Anything else fails the INSERT with check_violation (23514) and stores
-- nothing; an UPDATE of either is refused (42501) as one of capacity_unit.
-- The placement that uses them is the pass's (not tried here).
\i test/regress/include/helpers.sql

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

-- pg_temp.place() submits a job named name to jpc_queue/jpc_share on gpu
-- with the given instance_count (null: left out), instances_per_host and
-- same_label (SQL text, 'DEFAULT' to leave it as the table has it).
CREATE FUNCTION pg_temp.place(name text, instance_count text, per_host text, label text,
							  OUT result text, OUT stored text)
LANGUAGE sql AS $$
	SELECT * FROM pg_temp.submit(format(
		'INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,'
		' instances_per_host, same_label) VALUES (%L, ''jpc_queue'', ''jpc_share'', ''gpu'','
		' %s, %s, %s)', name, coalesce(instance_count, 'DEFAULT'), per_host, label))
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('jpc_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('jpc_queue', 'jpc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits)
VALUES ('jpc_queue', 'jpc_share', 'LEND_AND_BORROW', '{"gpu": 16}');

------------------------------------------------------------------------
-- Accepted and stored as given; left out, both are null.
------------------------------------------------------------------------
SELECT v.name, p.*
  FROM (VALUES ('jpc_none', '8', 'DEFAULT', 'DEFAULT'),
			   ('jpc_nulls', '8', 'NULL', 'NULL'),
			   ('jpc_1x8', '8', '1', 'DEFAULT'),
			   ('jpc_2x4', '8', '4', 'DEFAULT'),
			   ('jpc_8x1', '8', '8', 'DEFAULT'),
			   ('jpc_one', NULL, '1', 'DEFAULT'),
			   ('jpc_rack', '8', '2', '''rack'''),
			   ('jpc_short', '4', 'NULL', '''a'''),
			   ('jpc_chars', '4', 'DEFAULT', '''nv.link_2-x'''),
			   ('jpc_long', '4', 'DEFAULT', quote_literal(repeat('k', 63)))) AS v(name, n, k, l),
	   pg_temp.place(v.name, v.n, v.k, v.l) AS p;
SELECT name, instance_count, instances_per_host, same_label, state
  FROM quota_sched.job WHERE job_queue = 'jpc_queue' ORDER BY id;

-- The instance count from the payload (no instance_count column): 6 runs
-- as 2 hosts of 3 or 6 hosts of 1.
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, payload, instances_per_host, same_label)
	VALUES ('jpc_payload', 'jpc_queue', 'jpc_share',
			'{"ResourceConfig": {"InstanceType": "gpu", "InstanceCount": 6}}', 3, 'zone')$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, payload, instances_per_host)
	VALUES ('jpc_payload1', 'jpc_queue', 'jpc_share',
			'{"ResourceConfig": {"InstanceType": "gpu", "InstanceCount": 6}}', 1)$$);
SELECT name, capacity_unit, instance_count, instances_per_host, same_label
  FROM quota_sched.job WHERE name LIKE 'jpc\_payload%' ORDER BY id;

------------------------------------------------------------------------
-- Refused with check_violation; nothing stored.
------------------------------------------------------------------------
-- instances_per_host: not a divisor, out of 1..instance_count, the
-- default instance_count of 1.
SELECT v.name, p.*
  FROM (VALUES ('jpc_3of8', '8', '3'),
			   ('jpc_5of8', '8', '5'),
			   ('jpc_0', '8', '0'),
			   ('jpc_neg', '8', '-2'),
			   ('jpc_16of8', '8', '16'),
			   ('jpc_2of1', NULL, '2'),
			   ('jpc_max', '8', '2147483647')) AS v(name, n, k),
	   pg_temp.place(v.name, v.n, v.k, 'DEFAULT') AS p;
-- with the instance count from the payload
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, payload, instances_per_host)
	VALUES ('jpc_payload4', 'jpc_queue', 'jpc_share',
			'{"ResourceConfig": {"InstanceType": "gpu", "InstanceCount": 6}}', 4)$$);
SELECT * FROM pg_temp.submit($$
	INSERT INTO quota_sched.job (name, job_queue, quota_share, payload, instances_per_host)
	VALUES ('jpc_payload12', 'jpc_queue', 'jpc_share',
			'{"ResourceConfig": {"InstanceType": "gpu", "InstanceCount": 6}}', 12)$$);
-- same_label: empty, upper case, a space, a letter outside a-z, too long,
-- other punctuation, a newline, a label with its value
SELECT v.name, p.*
  FROM (VALUES ('jpc_empty', ''''''),
			   ('jpc_upper', '''Rack'''),
			   ('jpc_space', '''rack zone'''),
			   ('jpc_umlaut', '''räck'''),
			   ('jpc_64', quote_literal(repeat('k', 64))),
			   ('jpc_slash', '''rack/1'''),
			   ('jpc_newline', 'E''rack\n'''),
			   ('jpc_pair', '''rack=r12''')) AS v(name, l),
	   pg_temp.place(v.name, '4', 'DEFAULT', v.l) AS p;
-- a long value is shortened in the message
SELECT * FROM pg_temp.place('jpc_huge', '4', 'DEFAULT', quote_literal(repeat('K', 5000)));
SELECT count(*) AS refused_jobs_stored FROM quota_sched.job
 WHERE job_queue = 'jpc_queue' AND name NOT IN ('jpc_none', 'jpc_nulls', 'jpc_1x8', 'jpc_2x4',
	'jpc_8x1', 'jpc_one', 'jpc_rack', 'jpc_short', 'jpc_chars', 'jpc_long', 'jpc_payload',
	'jpc_payload1');

-- What the submitter reads: the detail and the hint.
DO $$
DECLARE
	msg text;
	detail text;
	hint text;
BEGIN
	FOR i IN 1..3 LOOP
		BEGIN
			INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
										 instances_per_host, same_label)
			VALUES ('jpc_diag', 'jpc_queue', 'jpc_share', 'gpu', 8,
					CASE i WHEN 1 THEN 3 WHEN 2 THEN 9 ELSE NULL END,
					CASE i WHEN 3 THEN 'Rack' END);
		EXCEPTION WHEN check_violation THEN
			GET STACKED DIAGNOSTICS msg = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL,
				hint = PG_EXCEPTION_HINT;
			RAISE NOTICE E'%\nDETAIL: %\nHINT: %', msg, detail, hint;
		END;
	END LOOP;
END
$$;

------------------------------------------------------------------------
-- Fixed once submitted: an UPDATE naming either is refused (42501), as
-- one of capacity_unit, from null, to null, to another value or to its
-- own; with priority, the whole UPDATE is refused.
------------------------------------------------------------------------
CREATE TEMP TABLE jpc_submitted AS SELECT * FROM quota_sched.job WHERE job_queue = 'jpc_queue';
SELECT pg_temp.refused($$UPDATE quota_sched.job SET capacity_unit = 'gpu' WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instances_per_host = 4 WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instances_per_host = 2 WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instances_per_host = NULL WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instances_per_host = 2 WHERE name = 'jpc_none'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET same_label = 'zone' WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET same_label = same_label WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET same_label = NULL WHERE name = 'jpc_rack'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET same_label = 'rack' WHERE name = 'jpc_none'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 5, same_label = 'zone' WHERE name = 'jpc_rack'$$);
-- a submitter (role quota_sched_user) gets the guard's answer too, not
-- "permission denied": the columns are UPDATE-able as a privilege
CREATE ROLE regress_jpc_user NOLOGIN IN ROLE quota_sched_user;
SET ROLE regress_jpc_user;
SELECT * FROM pg_temp.place('jpc_user_job', '4', '2', '''rack''');
SELECT name, instance_count, instances_per_host, same_label, owner
  FROM quota_sched.job WHERE name = 'jpc_user_job';
SELECT pg_temp.refused($$UPDATE quota_sched.job SET instances_per_host = 4 WHERE name = 'jpc_user_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET same_label = 'zone' WHERE name = 'jpc_user_job'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET priority = 3 WHERE name = 'jpc_user_job'$$);
RESET ROLE;
SELECT count(*) AS changed FROM quota_sched.job j JOIN jpc_submitted s USING (id)
 WHERE to_jsonb(j) <> to_jsonb(s);
SELECT name, priority, instances_per_host, same_label FROM quota_sched.job
 WHERE name IN ('jpc_rack', 'jpc_user_job') ORDER BY name;

------------------------------------------------------------------------
-- The table's CHECKs say the same, for rows the trigger does not see (a
-- restore, the extension's own writes): with the triggers off
-- (session_replication_role = replica), a value the trigger refuses is
-- refused by the CHECK, and one it accepts is accepted.
------------------------------------------------------------------------
SET session_replication_role = replica;
SELECT v.col, v.val, pg_temp.refused(format(
		'UPDATE quota_sched.job SET %I = %s WHERE name = ''jpc_rack''', v.col, v.val)) AS result
  FROM (VALUES ('instances_per_host', '3'), ('instances_per_host', '0'),
			   ('instances_per_host', '-8'), ('instances_per_host', '16'),
			   ('instances_per_host', '4'), ('instances_per_host', '8'),
			   ('instances_per_host', 'NULL'),
			   ('same_label', ''''''), ('same_label', '''Rack'''),
			   ('same_label', quote_literal(repeat('k', 64))), ('same_label', 'E''rack\n'''),
			   ('same_label', '''räck'''), ('same_label', '''rack=r12'''),
			   ('same_label', quote_literal(repeat('k', 63))), ('same_label', '''nv.link_2-x'''),
			   ('same_label', 'NULL')) AS v(col, val);
RESET session_replication_role;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled (there is
-- no scheduler here), then drop the configuration, which takes the jobs.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'jpc_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'jpc_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'jpc_env';
DROP ROLE regress_jpc_user;
