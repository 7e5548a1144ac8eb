-- A job's preempted_for belongs to the preemption that stopped it and to
-- nothing after (scheduling.md 3.5, 3.6; reference.md, the history of a
-- job): a job preempted in its share, then dispatched again, carries no
-- preemptor on the job row, and a later stop that is no preemption (a
-- capacity repair, a timeout) has a null preempted_for on its STOP and
-- STATE rows, so that utilization()'s preempted and preempting count the
-- preemption once.  Then job_accounting.attempts: the attempts the job was
-- dispatched for (never dispatched 0; a failed last attempt counted once; a
-- claim timeout no attempt).  Times are moved back in replica mode, never
-- waited for.

\i test/regress/include/helpers.sql

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'hpf_queue'
$$;
CREATE FUNCTION pg_temp.jobs() RETURNS TABLE (name text, state text, stop_reason text,
	preempted_for text, preemption_count int, failed_attempts int)
LANGUAGE sql AS $$
	SELECT j.name, j.state, j.stop_reason, f.name, j.preemption_count, j.failed_attempts
	  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.preempted_for
	 WHERE j.job_queue = 'hpf_queue' ORDER BY j.name
$$;
CREATE FUNCTION pg_temp.report(job_name text, state text) RETURNS text LANGUAGE sql AS $$
	SELECT r.name || ' ' || r.state
	  FROM quota_sched.report(pg_temp.id(job_name), 'hpf_agent', state) r
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hpf_env', '{"ua": 1, "ub": 1}');
-- fence_grace 0: a lease is lost as soon as it runs out (pass_fence_grace shows the grace)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace) VALUES ('hpf_queue', 'hpf_env', '0');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, in_share_preemption)
VALUES ('hpf_queue', 'S1', '{"ua": 1}', 'RESERVE', true),
	   ('hpf_queue', 'S2', '{"ub": 1}', 'RESERVE', true);

-- a (S1) and t (S2, one attempt, a timeout) run.
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('a', 'hpf_queue', 'S1', 1, 'ua');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, timeout)
VALUES ('t', 'hpf_queue', 'S2', 1, 'ub', '1 hour');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue', max_jobs => 10) ORDER BY name;
SELECT pg_temp.report('a', 'RUNNING'), pg_temp.report('t', 'RUNNING');

-- x1 and x2 preempt them in their shares, run and succeed.
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('x1', 'hpf_queue', 'S1', 5, 'ua'), ('x2', 'hpf_queue', 'S2', 5, 'ub');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT pg_temp.report('a', 'STOPPED'), pg_temp.report('t', 'STOPPED');
SELECT * FROM pg_temp.jobs();
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue', max_jobs => 10) ORDER BY name;
SELECT pg_temp.report('x1', 'RUNNING'), pg_temp.report('x2', 'RUNNING');
SELECT pg_temp.report('x1', 'SUCCEEDED'), pg_temp.report('x2', 'SUCCEEDED');

-- a and t are dispatched again: no preemptor on their rows any more.
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT * FROM pg_temp.jobs();
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue', max_jobs => 10) ORDER BY name;
SELECT pg_temp.report('a', 'RUNNING'), pg_temp.report('t', 'RUNNING');

-- A capacity repair stops a: CAPACITY_REDUCED, no preemptor.
UPDATE quota_sched.service_environment SET capacity_limits = '{"ua": 0, "ub": 1}'
 WHERE name = 'hpf_env';
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.report('a', 'STOPPED');

-- t runs past its timeout: STOP TIMEOUT, no preemptor; it fails (its only attempt).
SET session_replication_role = replica;
UPDATE quota_sched.job SET started_at = now() - interval '2 hours' WHERE id = pg_temp.id('t');
RESET session_replication_role;
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT * FROM pg_temp.jobs();
SELECT pg_temp.report('t', 'STOPPED');
SELECT * FROM pg_temp.jobs();

-- The histories: preempted_for on the in-share preemption's rows only.
SELECT j.name, e.kind, e.from_state, e.to_state, e.reason, f.name AS preempted_for, e.attempt
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
  LEFT JOIN quota_sched.job f ON f.id = e.preempted_for
 WHERE j.name IN ('a', 't') AND j.job_queue = 'hpf_queue' ORDER BY j.name, e.id;

-- utilization: one preemption in each share, caused by each share once.
SELECT quota_share, sum(preempted) AS preempted, sum(preempting) AS preempting,
	   sum(dispatched) AS dispatched, sum(succeeded) AS succeeded, sum(failed) AS failed
  FROM quota_sched.utilization('hpf_queue', now() - interval '1 hour', now() + interval '1 hour',
							   '2 hours')
 WHERE quota_share IS NOT NULL GROUP BY 1 ORDER BY 1;

------------------------------------------------------------------------
-- job_accounting.attempts: the attempts the job was dispatched for.
------------------------------------------------------------------------
-- f fails at its only attempt; k is terminated while it runs; l loses its
-- lease, is dispatched again and then not claimed in time; n never runs
-- (ua has no capacity any more).
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('f', 'hpf_queue', 'S2', 3, 'ub'), ('k', 'hpf_queue', 'S2', 2, 'ub'),
	   ('l', 'hpf_queue', 'S2', 1, 'ub'), ('n', 'hpf_queue', 'S1', 1, 'ua');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue') ORDER BY name;
SELECT pg_temp.report('f', 'FAILED');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue') ORDER BY name;
SELECT pg_temp.report('k', 'RUNNING');
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('k'), 'not needed');
SELECT pg_temp.report('k', 'STOPPED');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state FROM quota_sched.claim('hpf_agent', 'hpf_queue') ORDER BY name;
SELECT pg_temp.report('l', 'RUNNING');
SET session_replication_role = replica;
UPDATE quota_sched.job SET lease_until = now() - interval '1 second' WHERE id = pg_temp.id('l');
RESET session_replication_role;
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state, lease_losses, claim_requeues FROM quota_sched.job WHERE id = pg_temp.id('l');
SELECT name, attempts FROM quota_sched.job_accounting WHERE job_id = pg_temp.id('l');
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, attempts FROM quota_sched.job_accounting WHERE job_id = pg_temp.id('l');
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '10 minutes' WHERE id = pg_temp.id('l');
RESET session_replication_role;
SELECT name, action, quota_share, reason FROM pg_temp.pass('hpf_queue');
SELECT name, state, lease_losses, claim_requeues FROM quota_sched.job WHERE id = pg_temp.id('l');
-- a is RUNNABLE after two stopped attempts; terminated so, it ran twice.
SELECT name, attempts FROM quota_sched.job_accounting WHERE job_id = pg_temp.id('a');
SELECT name, state FROM quota_sched.terminate(pg_temp.id('a'), 'given up');
SELECT a.name, a.state, a.attempts, a.failed_attempts, a.preemptions, j.lease_losses,
	   j.claim_requeues
  FROM quota_sched.job_accounting a JOIN quota_sched.job j ON j.id = a.job_id
 WHERE a.job_queue = 'hpf_queue' ORDER BY a.name;
-- and n, terminated while it waits, made no attempt.
SELECT name, state FROM quota_sched.terminate(pg_temp.id('n'), 'given up');
SELECT name, state, attempts FROM quota_sched.job_accounting WHERE job_id = pg_temp.id('n');

-- The counters of held capacity match the jobs.
SELECT * FROM quota_sched.held_capacity_drift();

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'hpf_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'hpf_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'hpf_env';
