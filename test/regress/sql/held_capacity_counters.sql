-- The counters of held capacity (scheduling.md 3.1): per queue, share and unit,
-- the instances held by SCHEDULED, STARTING and RUNNING jobs, those of them
-- whose stop is pending, and the number of jobs holding them.  The job
-- triggers add each change of a job's state or stop_reason (and the
-- DELETE of a held job) to the counters of quota_sched.held_capacity in the
-- same transaction, in the stripe of the backend that makes the change (a
-- counter is the sum of its stripes).  Every path that moves them is driven here,
-- and after each step the counters of hcc_queue are shown, and
-- held_capacity_drift(), which recounts them from the jobs, shows no row.
-- A pass reads the counters, not the jobs: inflated by hand, they keep a
-- job that fits out.  Job ids and times are never printed.
--
--   hcc_a: RESERVE, 4 gpu, in-share preemption: a job's life, preemption.
--   hcc_b: RESERVE, 4 cpu: failures, release, terminate, leases, timeouts,
--          DELETE, rollbacks.
--   hcc_c: RESERVE, 1 gpu: deleted at the end, with its counter rows.
-- The agents' functions are called here as the superuser running the test.

\i test/regress/include/helpers.sql

-- pg_temp.counters(): each counter of hcc_queue, the sum of its stripes.
CREATE FUNCTION pg_temp.counters()
RETURNS TABLE (quota_share text, capacity_unit text, instances bigint,
			   stopping_instances bigint, jobs bigint)
LANGUAGE sql AS $$
	SELECT quota_share, capacity_unit, sum(instances)::bigint, sum(stopping_instances)::bigint,
		   sum(jobs)::bigint
	  FROM quota_sched.held_capacity WHERE job_queue = 'hcc_queue'
	 GROUP BY quota_share, capacity_unit
	 ORDER BY quota_share COLLATE "C", capacity_unit COLLATE "C"
$$;

-- pg_temp.pass() runs the pass of hcc_queue and shows its decisions in the
-- order made.
CREATE FUNCTION pg_temp.pass()
RETURNS TABLE (name text, action text, reason text)
LANGUAGE sql AS $$
	SELECT j.name, p.action, p.reason
	  FROM quota_sched.run_pass('hcc_queue') WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id
	 ORDER BY p.n
$$;

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'hcc_queue'
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hcc_env', '{"gpu": 8, "cpu": 4}');
-- fence_grace 0: a lease is lost as soon as it runs out (pass_fence_grace shows the grace)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace) VALUES ('hcc_queue', 'hcc_env', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, in_share_preemption)
VALUES ('hcc_queue', 'hcc_a', '{"gpu": 4}', 'RESERVE', true),
	   ('hcc_queue', 'hcc_b', '{"cpu": 4}', 'RESERVE', false),
	   ('hcc_queue', 'hcc_c', '{"gpu": 1}', 'RESERVE', false);

-- Nothing is held yet: no counter.
SELECT * FROM pg_temp.counters();

------------------------------------------------------------------------
-- Dispatch by a pass: RUNNABLE -> SCHEDULED holds the job's instances.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, max_attempts)
VALUES ('hcc_a_ok', 'hcc_queue', 'hcc_a', 'gpu', 2, 1),
	   ('hcc_b_retry', 'hcc_queue', 'hcc_b', 'cpu', 1, 2);
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Claim (SCHEDULED -> STARTING) and RUNNING: the jobs hold as much as
-- before.
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', max_jobs => 10) ORDER BY name;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_a_ok'), 'hcc_agent', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_b_retry'), 'hcc_agent', 'RUNNING');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- SUCCEEDED: the job holds nothing any more (-2 instances, -1 job).
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_a_ok'), 'hcc_agent', 'SUCCEEDED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- FAILED with an attempt left (scheduling.md 3.8): back to RUNNABLE, holding
-- nothing; a pass dispatches it again; FAILED again, with no
-- attempt left: it ends, holding nothing.
------------------------------------------------------------------------
SELECT name, state, failed_attempts
  FROM quota_sched.report(pg_temp.id('hcc_b_retry'), 'hcc_agent', 'FAILED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'cpu');
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_b_retry'), 'hcc_agent', 'RUNNING');
SELECT name, state, failed_attempts
  FROM quota_sched.report(pg_temp.id('hcc_b_retry'), 'hcc_agent', 'FAILED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- release (scheduling.md 5.2): the claimed job goes back to RUNNABLE and
-- holds nothing; a pass dispatches it again.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hcc_b_release', 'hcc_queue', 'hcc_b', 'cpu', 2);
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'cpu');
SELECT * FROM pg_temp.counters();
SELECT name, state, status_reason
  FROM quota_sched.release(pg_temp.id('hcc_b_release'), 'hcc_agent');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- terminate (scheduling.md 7): hcc_b_release, SCHEDULED and unclaimed, fails
-- at once and holds nothing; hcc_b_term, claimed, gets a stop and holds
-- its instance, now as stopping, until its agent reports STOPPED.
------------------------------------------------------------------------
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('hcc_b_release'));
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('hcc_b_term', 'hcc_queue', 'hcc_b', 'cpu');
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'cpu');
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('hcc_b_term'));
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state, stop_reason
  FROM quota_sched.report(pg_temp.id('hcc_b_term'), 'hcc_agent', 'STOPPED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Preemption (scheduling.md 3.3, 3.4, 3.6) of an unclaimed job: hcc_a_big (2,
-- claimed) and hcc_a_small (2, dispatched later, unclaimed) fill hcc_a;
-- hcc_a_high (1, priority 5) takes hcc_a_small as its victim, which stops
-- within the pass (PREEMPT, REQUEUE), and is dispatched in the same pass.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('hcc_a_big', 'hcc_queue', 'hcc_a', 1, 'gpu', 2);
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'gpu');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('hcc_a_small', 'hcc_queue', 'hcc_a', 1, 'gpu', 2);
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('hcc_a_high', 'hcc_queue', 'hcc_a', 5, 'gpu', 1);
SELECT * FROM pg_temp.pass();
SELECT name, state, agent, preemption_count FROM quota_sched.job
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_a' AND state <> 'SUCCEEDED' ORDER BY name;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Preemption of a claimed job: hcc_a_high_2 (2, priority 5) takes
-- hcc_a_big, whose stop is pending: stopping_instances rises to 2, the
-- instances stay held.  Its agent's STOPPED frees them; the next pass
-- dispatches the promised hcc_a_high_2.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('hcc_a_high_2', 'hcc_queue', 'hcc_a', 5, 'gpu', 2);
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state, stop_reason, preemption_count
  FROM quota_sched.report(pg_temp.id('hcc_a_big'), 'hcc_agent', 'STOPPED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
-- hcc_a_big and hcc_a_small cannot come back (hcc_a is 3 of 4 used): they
-- are terminated, holding nothing, which moves no counter.
SELECT name, state FROM quota_sched.terminate(pg_temp.id('hcc_a_big'));
SELECT name, state FROM quota_sched.terminate(pg_temp.id('hcc_a_small'));
SELECT * FROM pg_temp.counters();

------------------------------------------------------------------------
-- Lease expiry (scheduling.md 3.8, 3.10): hcc_b_lease is claimed with a
-- 100 ms lease; once it has run out, a pass requeues the job
-- (LEASE_EXPIRED, a lease lost, no failed attempt), and it holds nothing.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts)
VALUES ('hcc_b_lease', 'hcc_queue', 'hcc_b', 'cpu', 2);
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent_lease', 'hcc_queue', 'cpu', lease => '100 milliseconds');
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_b_lease'), 'hcc_agent_lease', 'RUNNING');
SELECT * FROM pg_temp.counters();
-- the clock passes the 100 ms lease (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);
SELECT * FROM pg_temp.pass();
SELECT name, state, failed_attempts, lease_losses, status_reason FROM quota_sched.job WHERE name = 'hcc_b_lease';
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state FROM quota_sched.terminate(pg_temp.id('hcc_b_lease'));

------------------------------------------------------------------------
-- Attempt timeout (scheduling.md 3.8): hcc_b_timeout runs with a 100 ms
-- timeout; once past it, a pass requests its stop (STOP, TIMEOUT):
-- stopping_instances rises; the agent's STOPPED ends the attempt (no
-- attempt left: FAILED) and frees the instance.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout)
VALUES ('hcc_b_timeout', 'hcc_queue', 'hcc_b', 'cpu', '100 milliseconds');
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'cpu', lease => '1 hour');
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_b_timeout'), 'hcc_agent', 'RUNNING');
-- the clock passes the 100 ms timeout (passes are run here: not a wait for the system)
SELECT pg_sleep(0.2);
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
SELECT name, state, failed_attempts, status_reason
  FROM quota_sched.report(pg_temp.id('hcc_b_timeout'), 'hcc_agent', 'STOPPED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- A superuser's DELETE of a held job whose stop is pending takes away its
-- instances, its stopping instances and the job.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hcc_b_deleted', 'hcc_queue', 'hcc_b', 'cpu', 3);
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'cpu');
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('hcc_b_deleted'));
SELECT * FROM pg_temp.counters();
DELETE FROM quota_sched.job WHERE name = 'hcc_b_deleted';
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Rolled back: hcc_a_high and hcc_a_high_2 (3 gpu) are claimed and run.
-- (1) A report inside a savepoint is rolled back with it
-- (ROLLBACK TO): the counters are as before, in the transaction and after
-- its commit.
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'gpu', max_jobs => 10) ORDER BY name;
SELECT r.name, r.state FROM unnest(ARRAY['hcc_a_high', 'hcc_a_high_2']) AS n(name),
	   quota_sched.report(pg_temp.id(n.name), 'hcc_agent', 'RUNNING') r ORDER BY r.name;
SELECT * FROM pg_temp.counters();
BEGIN;
SAVEPOINT before_report;
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_a_high_2'), 'hcc_agent', 'SUCCEEDED');
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
ROLLBACK TO SAVEPOINT before_report;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
COMMIT;
SELECT name, state FROM quota_sched.job WHERE name = 'hcc_a_high_2';
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

-- (2) A statement that fails after the job triggers tallied its change:
-- a trigger of the test's own, fired after job_usage_delete for each row,
-- refuses the DELETE of hcc_a_high_2.  Refused inside a savepoint, and
-- inside an exception block (pg_temp.refused): the counters are as before
-- and the transaction commits (a tally left unwritten would refuse the
-- commit).
CREATE FUNCTION pg_temp.hcc_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF OLD.name = 'hcc_a_high_2' THEN
		RAISE EXCEPTION 'hcc_a_high_2 may not be deleted';
	END IF;
	RETURN NULL;
END
$$;
CREATE TRIGGER zz_hcc_refuse AFTER DELETE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION pg_temp.hcc_refuse();
BEGIN;
SAVEPOINT before_delete;
\set VERBOSITY terse
DELETE FROM quota_sched.job WHERE name = 'hcc_a_high_2';
\set VERBOSITY default
ROLLBACK TO SAVEPOINT before_delete;
SELECT pg_temp.refused($$DELETE FROM quota_sched.job WHERE name = 'hcc_a_high_2'$$) AS outcome;
SELECT * FROM pg_temp.counters();
COMMIT;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();
DROP TRIGGER zz_hcc_refuse ON quota_sched.job;

-- (3) A subtransaction that fails and is caught inside another trigger of
-- the job, between the job's row trigger and its statement trigger, undoes
-- only what was done inside it (here a terminate of hcc_a_high, whose stop
-- is added to the counters in the subtransaction): the DELETE of
-- hcc_a_high_2 stands, and so must its change of the counters.  (The
-- abort of such a subtransaction once discarded the outer statement's whole
-- tally: the commit went through and the counters kept hcc_a_high_2's 2
-- instances.)
CREATE FUNCTION pg_temp.hcc_catch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	BEGIN
		PERFORM quota_sched.terminate(pg_temp.id('hcc_a_high'));
		PERFORM 1 / 0;
	EXCEPTION WHEN division_by_zero THEN
		NULL;
	END;
	RETURN NULL;
END
$$;
CREATE TRIGGER zz_hcc_catch AFTER DELETE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION pg_temp.hcc_catch();
DELETE FROM quota_sched.job WHERE name = 'hcc_a_high_2';
DROP TRIGGER zz_hcc_catch ON quota_sched.job;
SELECT name, state, stop_reason FROM quota_sched.job
 WHERE name IN ('hcc_a_high', 'hcc_a_high_2') ORDER BY name;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- TRUNCATE of the jobs inside a transaction: every counter is zero (its
-- rows are gone); rolled back, the counters are back.
------------------------------------------------------------------------
BEGIN;
TRUNCATE quota_sched.job;
SELECT * FROM pg_temp.counters();
SELECT count(*) AS counter_rows FROM quota_sched.held_capacity;
SELECT * FROM quota_sched.held_capacity_drift();
ROLLBACK;
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- A pass trusts the counters, not the jobs.  hcc_b holds nothing (by its
-- jobs and its counter); its counter row is inflated by hand to its 4
-- instances: the pass does not dispatch hcc_b_fits (1 cpu), which fits by
-- the jobs, and held_capacity_drift() reports the row.  Undone, the next
-- pass dispatches it.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('hcc_b_fits', 'hcc_queue', 'hcc_b', 'cpu');
SELECT quota_share, capacity_unit, max_capacity, in_use FROM quota_sched.share_usage
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_b';
UPDATE quota_sched.held_capacity SET instances = instances + 4
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_b' AND capacity_unit = 'cpu'
   AND stripe = (SELECT min(stripe) FROM quota_sched.held_capacity
                  WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_b' AND capacity_unit = 'cpu');
SELECT * FROM pg_temp.counters();
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.job WHERE name = 'hcc_b_fits';
SELECT * FROM quota_sched.held_capacity_drift();
UPDATE quota_sched.held_capacity SET instances = instances - 4
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_b' AND capacity_unit = 'cpu'
   AND stripe = (SELECT min(stripe) FROM quota_sched.held_capacity
                  WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_b' AND capacity_unit = 'cpu');
SELECT * FROM quota_sched.held_capacity_drift();
SELECT * FROM pg_temp.pass();
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Deleting a share takes its counter rows with it: hcc_c's job ran and
-- succeeded (its counter rows are left, at 0); once hcc_c is deleted, none
-- of its rows is left.  The pass wrote the dispatch to stripe 0, which only
-- passes write (a pass never waits for a counter row that a report or a
-- terminate not yet committed holds); the report wrote its own stripe.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('hcc_c_job', 'hcc_queue', 'hcc_c', 'gpu');
SELECT * FROM pg_temp.pass();
SELECT name, state FROM quota_sched.claim('hcc_agent', 'hcc_queue', 'gpu');
SELECT name, state FROM quota_sched.report(pg_temp.id('hcc_c_job'), 'hcc_agent', 'SUCCEEDED');
SELECT stripe = 0 AS pass_stripe, instances, jobs FROM quota_sched.held_capacity
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_c' ORDER BY 1 DESC;
SELECT count(*) AS hcc_c_counter_rows FROM quota_sched.held_capacity
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_c';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'hcc_queue' AND name = 'hcc_c';
SELECT count(*) AS hcc_c_counter_rows FROM quota_sched.held_capacity
 WHERE job_queue = 'hcc_queue' AND quota_share = 'hcc_c';
SELECT * FROM pg_temp.counters();
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'hcc_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'hcc_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'hcc_env';
SELECT count(*) AS hcc_counter_rows_left FROM quota_sched.held_capacity
 WHERE job_queue = 'hcc_queue';
DROP FUNCTION pg_temp.hcc_refuse();
DROP FUNCTION pg_temp.hcc_catch();
DROP FUNCTION pg_temp.counters();
DROP FUNCTION pg_temp.pass();
DROP FUNCTION pg_temp.id(text);
