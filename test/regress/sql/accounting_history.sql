-- The complete history of jobs, for accounting (issue 11, item 1): besides
-- each change of state (a dispatch with how long the job waited since it
-- last became RUNNABLE), job_event records stop requests (with the reason
-- and the job they make room for), terminations by users (the user is the
-- actor), priority changes (old and new), promises made and lapsed, and
-- each attempt's end with the exit code its agent reported.  Every row
-- carries the queue, share, unit, instance count, attempt and priority, so
-- that accounting needs no join to a job that may be deleted.
CREATE FUNCTION pg_temp.pass(q text) RETURNS TABLE (job text, action text, reason text)
LANGUAGE sql AS $$
	SELECT j.name, p.action, p.reason
	  FROM quota_sched.run_pass(q) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
	  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n
$$;
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'ah_queue'
$$;
-- The events of a job, with the job a stop makes room for by name.
CREATE FUNCTION pg_temp.events(job_name text)
RETURNS TABLE (kind text, from_state text, to_state text, reason text, attempt int,
			   priority int, old_priority int, preempted_for text, exit_code int,
			   waited_since_runnable boolean, actor text)
LANGUAGE sql AS $$
	SELECT e.kind, e.from_state, e.to_state, e.reason, e.attempt, e.priority, e.old_priority,
		   f.name, e.exit_code,
		   e.waited = e.at - (SELECT max(r.at) FROM quota_sched.job_event r
							   WHERE r.job_id = e.job_id AND r.id < e.id AND r.kind = 'STATE'
							     AND r.to_state = 'RUNNABLE'),
		   CASE WHEN e.actor = session_user THEN '<superuser>' ELSE e.actor END
	  FROM quota_sched.job_event e LEFT JOIN quota_sched.job f ON f.id = e.preempted_for
	 WHERE e.job_id = pg_temp.id(job_name) ORDER BY e.id
$$;

DO $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'regress_ah_user') THEN
		CREATE ROLE regress_ah_user IN ROLE quota_sched_user;
	END IF;
END $$;

-- Two instances: A (LEND_AND_BORROW, 1) borrows B's (LEND, 1).
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ah_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ah_queue', 'ah_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ah_queue', 'A', '{"gpu": 1}', 'LEND_AND_BORROW'),
	   ('ah_queue', 'B', '{"gpu": 1}', 'LEND');

-- ah_own runs on A's instance, ah_borrower on B's.
SET ROLE regress_ah_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts)
VALUES ('ah_own', 'ah_queue', 'A', 'gpu', 2), ('ah_borrower', 'ah_queue', 'A', 'gpu', 1);
RESET ROLE;
SELECT * FROM pg_temp.pass('ah_queue');
SELECT name, state FROM quota_sched.claim('ah_agent', 'ah_queue', max_jobs => 2, start => true)
 ORDER BY name;

-- B wants its instance back: ah_borrower is asked to stop for ah_lender (a
-- STOP row naming it) and ah_lender is promised the room (PROMISE).
SET ROLE regress_ah_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ah_lender', 'ah_queue', 'B', 'gpu');
RESET ROLE;
SELECT * FROM pg_temp.pass('ah_queue');

-- The environment loses an instance before the victim stops: ah_lender
-- could not start even then, so its promise lapses (PROMISE_LAPSED); the
-- victim stops all the same, and once it has, ah_lender starts as any job
-- that fits.
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 1}' WHERE name = 'ah_env';
SELECT * FROM pg_temp.pass('ah_queue');
UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 2}' WHERE name = 'ah_env';
SELECT * FROM pg_temp.pass('ah_queue');

-- The victim stops (exit code 143): its attempt ends by preemption, and the
-- end names the preemptor.  ah_lender starts.
SELECT name, state, stop_reason FROM quota_sched.report(pg_temp.id('ah_borrower'), 'ah_agent',
														 'STOPPED', exit_code => 143);
SELECT * FROM pg_temp.pass('ah_queue');
SELECT name, state FROM quota_sched.claim('ah_agent', 'ah_queue', start => true);
SELECT * FROM pg_temp.events('ah_borrower');
SELECT * FROM pg_temp.events('ah_lender');

-- ah_own fails with exit code 3 and is retried (attempt 2), which succeeds
-- with exit code 0.
SELECT name, state FROM quota_sched.report(pg_temp.id('ah_own'), 'ah_agent', 'FAILED', 'exit 3',
										   exit_code => 3);
SELECT * FROM pg_temp.pass('ah_queue');
SELECT name, state FROM quota_sched.claim('ah_agent', 'ah_queue', start => true);
SELECT name, state FROM quota_sched.report(pg_temp.id('ah_own'), 'ah_agent', 'SUCCEEDED',
										   exit_code => 0);
SELECT * FROM pg_temp.events('ah_own');

-- The user raises the waiting ah_borrower (PRIORITY, old and new, the user
-- the actor), and terminates ah_lender while the agent holds it: the
-- TERMINATE row is the user's, with their reason; the end is the agent's.
SET ROLE regress_ah_user;
UPDATE quota_sched.job SET priority = 7 WHERE name = 'ah_borrower';
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('ah_lender'), 'not needed');
RESET ROLE;
SELECT name, state FROM quota_sched.report(pg_temp.id('ah_lender'), 'ah_agent', 'STOPPED');
SELECT * FROM pg_temp.events('ah_borrower') WHERE kind = 'PRIORITY';
SELECT * FROM pg_temp.events('ah_lender');

-- The user terminates ah_borrower, waiting (RUNNABLE, no agent): it fails
-- at once, and its history has a TERMINATE row before the end, as
-- ah_lender's has (issue 22, item 2: reports count both as terminated).
-- ah_broken, a job of one attempt, fails by itself: a failure.
SET ROLE regress_ah_user;
SELECT name, state, status_reason FROM quota_sched.terminate(pg_temp.id('ah_borrower'), 'too late');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('ah_broken', 'ah_queue', 'A', 'gpu');
RESET ROLE;
SELECT * FROM pg_temp.events('ah_borrower') WHERE kind = 'TERMINATE' OR to_state = 'FAILED';
SELECT * FROM pg_temp.pass('ah_queue');
SELECT name, state FROM quota_sched.claim('ah_agent', 'ah_queue', start => true);
SELECT name, state, status_reason FROM quota_sched.report(pg_temp.id('ah_broken'), 'ah_agent',
														   'FAILED', 'exit 1', exit_code => 1);

-- job_accounting, as the user sees it (row-level security): whether a
-- user terminated it, attempts (those dispatched: ah_borrower, preempted
-- once, then terminated while waiting, made one), preemptions, the last
-- exit code; the
-- times held are those of the history (compared, not printed: they depend
-- on when the test runs).
SET ROLE regress_ah_user;
SELECT a.name, a.state, a.terminated, a.attempts, a.failed_attempts, a.preemptions, a.last_exit_code,
	   a.waited IS NOT NULL AS waited_known, a.first_dispatched_at IS NOT NULL AS dispatched,
	   a.ended_at IS NOT NULL AS ended,
	   a.held_seconds = (SELECT coalesce(sum(extract(epoch FROM l.at - e.at)), 0)
						   FROM quota_sched.job_event e
						   CROSS JOIN LATERAL (SELECT n.at FROM quota_sched.job_event n
												WHERE n.job_id = e.job_id AND n.id > e.id
												  AND n.kind = 'STATE'
												  AND n.to_state IN ('RUNNABLE', 'SUCCEEDED', 'FAILED')
												ORDER BY n.id LIMIT 1) l
						  WHERE e.job_id = a.job_id AND e.kind = 'STATE'
							AND e.to_state = 'SCHEDULED') AS held_as_history,
	   a.instance_seconds = a.held_seconds * a.instance_count AS instance_seconds_ok
  FROM quota_sched.job_accounting a WHERE a.job_queue = 'ah_queue' ORDER BY a.name;
RESET ROLE;

-- Every event carries the accounting columns.
SELECT count(*) AS events,
	   count(*) FILTER (WHERE job_queue IS NULL OR quota_share IS NULL OR capacity_unit IS NULL
						  OR instance_count IS NULL OR attempt IS NULL OR priority IS NULL)
		 AS missing_accounting_columns
  FROM quota_sched.job_event WHERE job_queue = 'ah_queue';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled, then drop
-- the configuration, which takes the jobs and their history with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ah_queue';
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'ah_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'ah_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ah_env';
