-- Dependencies (scheduling.md 3.17): a job's depends_on names jobs, or
-- arrays by their array_id, that must SUCCEED first.
--   Held back: RUNNABLE with the reason DEPENDENCY, no dispatch, explain
--     names what it waits for; in a STRICT share it is in no share's
--     order, so a higher-priority job waiting for a lower one behind it
--     in its share does not hold that one back.
--   The last dependency's success clears the reason, and the job is
--     dispatched; an array named by its id counts each of its jobs.
--   A dependency that FAILS (attempts spent, terminated) fails the job at
--     the next pass (DEPENDENCY_FAILED:<id>), and so on down a chain;
--     a dependency that had ended before the submission counts as ended.
--   The jobs of an array with depends_on wait each as index 0 does.
--   Refused, nothing written: an id that does not exist or that the
--     submitter may not see, of another queue (23503), more than 100 ids
--     (23514), a null id (22004), two dimensions (22023), the system's
--     columns set (42501), depends_on changed afterwards (42501).
-- Ids change from run to run: the output compares them, or names jobs.

\i test/regress/include/helpers.sql

CREATE ROLE regress_dp_a NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_dp_b NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_dp_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_dp_host', NULL);
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('dp_env', '{"gpu": 4}'), ('dp_other_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
VALUES ('dp_queue', 'dp_env', '0'), ('dp_other', 'dp_other_env', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, queueing,
									 submit_role)
VALUES ('dp_queue', 'A', '{"gpu": 2}', 'RESERVE', 'STRICT', 'regress_dp_a'),
	   ('dp_queue', 'B', '{"gpu": 2}', 'RESERVE', 'BEST_EFFORT', 'regress_dp_b'),
	   ('dp_other', 'A', '{"gpu": 4}', 'RESERVE', 'BEST_EFFORT', 'regress_dp_a');

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
-- a job's row, the ids in it as the names of their jobs
CREATE FUNCTION pg_temp.jobs()
RETURNS TABLE (name text, state text, status_reason text, waiting int, failed text,
			   has_dependents boolean)
LANGUAGE sql AS $$
	SELECT j.name, j.state,
		   regexp_replace(j.status_reason, ':\d+$', ':' || coalesce(f.name, '')), j.dependencies_waiting,
		   f.name, j.has_dependents
	  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.dependency_failed
	 WHERE j.job_queue = 'dp_queue' ORDER BY j.id
$$;
-- the pass's decisions, a DEPENDENCY_FAILED reason naming its job
CREATE FUNCTION pg_temp.deps_pass()
RETURNS TABLE (name text, action text, reason text)
LANGUAGE sql AS $$
	SELECT p.name, p.action,
		   regexp_replace(p.reason, ':\d+$', ':' || (SELECT f.name FROM quota_sched.job f
													  WHERE f.id::text = substring(p.reason from ':(\d+)$')))
	  FROM pg_temp.pass('dp_queue') p
$$;
-- an agent claims every job it may, and reports each RUNNING
CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text LANGUAGE sql AS $$
	SELECT r.name FROM quota_sched.claim('dp_agent', 'dp_queue', 'gpu', 10) c,
		   LATERAL quota_sched.report(c.id, 'dp_agent', 'RUNNING') r ORDER BY r.name
$$;
CREATE FUNCTION pg_temp.ends(job_name text, how text) RETURNS text LANGUAGE sql AS $$
	SELECT name || ' ' || state FROM quota_sched.report(pg_temp.id(job_name), 'dp_agent', how)
$$;

------------------------------------------------------------------------
-- Held back, in a STRICT share: eval (priority 9) depends on train
-- (priority 0, behind it in share order).  train is dispatched; eval waits
-- with the reason DEPENDENCY, and explain names train.
------------------------------------------------------------------------
SET ROLE regress_dp_a;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, priority)
VALUES ('train', 'dp_queue', 'A', 'gpu', 1, 0);
SELECT id AS train_id FROM quota_sched.job WHERE name = 'train' \gset
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, priority,
							 depends_on)
VALUES ('eval', 'dp_queue', 'A', 'gpu', 1, 9, ARRAY[pg_temp.id('train')])
RETURNING name, state, status_reason, dependencies_waiting;
SELECT e->>'blocked_by' AS blocked_by,
	   e->'waiting_for' = jsonb_build_array(pg_temp.id('train')) AS names_train,
	   e->'dependencies_waiting' AS waiting, e->'position_in_share' AS position_in_share,
	   replace(e->>'detail', '[' || pg_temp.id('train') || ']', '[train]') AS detail
  FROM quota_sched.explain(pg_temp.id('eval')) e;
RESET ROLE;
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.run_all();

-- train SUCCEEDS: eval waits no more, its reason cleared; dispatched.
SELECT pg_temp.ends('train', 'SUCCEEDED');
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('eval', 'SUCCEEDED');

------------------------------------------------------------------------
-- A chain that fails: c depends on b, b on a; a FAILS (its one attempt):
-- b fails at the next pass, c at the one after.
------------------------------------------------------------------------
SET ROLE regress_dp_a;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('a', 'dp_queue', 'A', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('b', 'dp_queue', 'A', 'gpu', 1, ARRAY[pg_temp.id('a')]);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('c', 'dp_queue', 'A', 'gpu', 1, ARRAY[pg_temp.id('b')]);
RESET ROLE;
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('a', 'FAILED');
SELECT * FROM pg_temp.jobs() WHERE name IN ('a', 'b', 'c');
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.jobs() WHERE name IN ('a', 'b', 'c');
-- the history says why
SELECT j.name, e.to_state, regexp_replace(e.reason, ':\d+$', ':N') AS reason
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name IN ('b', 'c') AND e.to_state = 'FAILED' ORDER BY j.name;

------------------------------------------------------------------------
-- Dependencies that ended before: on a SUCCEEDED job, nothing to wait
-- for; on a FAILED one, held, and failed at the next pass.  A terminated
-- RUNNABLE dependency fails its dependent too.
------------------------------------------------------------------------
-- (team B may not see team A's train: as if it did not exist)
SET ROLE regress_dp_b;
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) VALUES ('b_on_a', 'dp_queue', 'B', 'gpu', 1, ARRAY[%s])$$, :train_id));
RESET ROLE;
UPDATE quota_sched.quota_share SET submit_role = NULL WHERE name = 'B';
SET ROLE regress_dp_a;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('after_ok', 'dp_queue', 'B', 'gpu', 1, ARRAY[pg_temp.id('train')]);
SET ROLE regress_dp_a;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('after_failed', 'dp_queue', 'B', 'gpu', 1, ARRAY[pg_temp.id('train'), pg_temp.id('a')]);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('doomed', 'dp_queue', 'B', 'gpu', 4);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('after_doomed', 'dp_queue', 'B', 'gpu', 1, ARRAY[pg_temp.id('doomed')]);
SELECT name, state FROM quota_sched.terminate(pg_temp.id('doomed'), 'not needed');
RESET ROLE;
SELECT * FROM pg_temp.jobs() WHERE name LIKE 'after%' OR name = 'doomed';
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.jobs() WHERE name LIKE 'after%';
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('after_ok', 'SUCCEEDED');

------------------------------------------------------------------------
-- Arrays: judge depends on the array sweep (3 jobs) by its id: it waits
-- for 3, then 2, 1, none.  An array with depends_on (probe, 2 jobs, on
-- judge): each of its jobs waits as index 0 does.
------------------------------------------------------------------------
SET ROLE regress_dp_a;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size)
VALUES ('sweep', 'dp_queue', 'A', 'gpu', 1, 3);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on)
VALUES ('judge', 'dp_queue', 'A', 'gpu', 1, ARRAY[pg_temp.id('sweep[0]')]);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, array_size,
							 depends_on)
VALUES ('probe', 'dp_queue', 'A', 'gpu', 1, 2, ARRAY[pg_temp.id('judge')]);
RESET ROLE;
SELECT * FROM pg_temp.jobs() WHERE name ~ '^(sweep|judge|probe)';
-- share A has 2 instances: sweep[0] and sweep[1] run first
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('sweep[1]', 'SUCCEEDED');
SELECT name, dependencies_waiting FROM quota_sched.job WHERE name = 'judge';
SELECT pg_temp.ends('sweep[0]', 'SUCCEEDED');
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('sweep[2]', 'SUCCEEDED');
SELECT * FROM pg_temp.jobs() WHERE name ~ '^(judge|probe)';
SELECT * FROM pg_temp.deps_pass();
SELECT * FROM pg_temp.run_all();
SELECT pg_temp.ends('judge', 'SUCCEEDED');
SELECT * FROM pg_temp.jobs() WHERE name ~ '^(judge|probe)';
SELECT * FROM pg_temp.deps_pass();

------------------------------------------------------------------------
-- Refused, nothing written.
------------------------------------------------------------------------
SELECT count(*) AS jobs_before FROM quota_sched.job WHERE job_queue IN ('dp_queue', 'dp_other');
SET ROLE regress_dp_a;
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) VALUES ('x', 'dp_queue', 'A', 'gpu', 1, '{9000000000}')$$);
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) VALUES ('x', 'dp_other', 'A', 'gpu', 1, ARRAY[%s])$$, pg_temp.id('train')));
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) SELECT 'x', 'dp_queue', 'A', 'gpu', 1, array_agg(i) FROM generate_series(1, 101) i$$);
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) VALUES ('x', 'dp_queue', 'A', 'gpu', 1, ARRAY[%s, NULL])$$, pg_temp.id('train')));
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, depends_on) VALUES ('x', 'dp_queue', 'A', 'gpu', 1, ARRAY[[%s]])$$, pg_temp.id('train')));
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, dependencies_waiting) VALUES ('x', 'dp_queue', 'A', 'gpu', 1, 0)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, has_dependents) VALUES ('x', 'dp_queue', 'A', 'gpu', 1, false)$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job SET depends_on = '{}' WHERE name = 'judge'$$);
RESET ROLE;
SELECT count(*) AS jobs_after FROM quota_sched.job WHERE job_queue IN ('dp_queue', 'dp_other');
SELECT count(*) AS drift FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue IN ('dp_queue', 'dp_other');
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue IN ('dp_queue', 'dp_other');
DELETE FROM quota_sched.job_queue WHERE name IN ('dp_queue', 'dp_other');
DELETE FROM quota_sched.service_environment WHERE name IN ('dp_env', 'dp_other_env');
DELETE FROM quota_sched.agent_access WHERE login = 'regress_dp_host';
DROP ROLE regress_dp_a, regress_dp_b, regress_dp_host;
