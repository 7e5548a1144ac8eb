-- The counters of what the hosts hold (host_held; issue 39, item 6): per
-- queue, unit and agent, the instances of the parts of SCHEDULED, STARTING
-- and RUNNING jobs placed on it, and of them those stopping, kept by the
-- job triggers.  After each path that moves a part (dispatch, claim, run,
-- stop request, report of the end, peer stop, lost lease, release,
-- terminate, an admin's UPDATE, a subtransaction rolled back, DELETE and
-- TRUNCATE of jobs) the counters equal the recount (host_held_drift(): no
-- row).  A job claimed while its unit was not placed (no part_agents)
-- counts on its agent's host, through the separate read of the pass.

\i test/regress/include/helpers.sql

CREATE ROLE regress_hh_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_hh_host', NULL);

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
-- held(): what each host holds by the counters (held/stopping), and how
-- many rows host_held_drift() returns for the queue (other tests leave
-- counters of their queues behind when they end their jobs in replica
-- mode) and held_capacity_drift() returns.
CREATE FUNCTION pg_temp.held(OUT hosts text, OUT host_drift bigint, OUT share_drift bigint)
LANGUAGE sql AS $$
	SELECT (SELECT string_agg(agent || '=' || i || '/' || s, ' ' ORDER BY agent)
			  FROM (SELECT agent, sum(instances) AS i, sum(stopping_instances) AS s
					  FROM (SELECT agent, instances, stopping_instances FROM quota_sched.host_held
							 WHERE job_queue = 'hh_queue'
							UNION ALL
							SELECT agent, instances, stopping_instances
							  FROM quota_sched.host_held_change
							 WHERE job_queue = 'hh_queue' AND agent IS NOT NULL) c
					 GROUP BY agent HAVING sum(instances) <> 0 OR sum(stopping_instances) <> 0) h),
		   (SELECT count(*) FROM quota_sched.host_held_drift() WHERE job_queue = 'hh_queue'),
		   (SELECT count(*) FROM quota_sched.held_capacity_drift())
$$;
CREATE FUNCTION pg_temp.jobs()
RETURNS TABLE (name text, state text, stop_reason text, part_agents text[],
			   part_instances integer[])
LANGUAGE sql AS $$
	SELECT name, state, stop_reason, part_agents, part_instances
	  FROM quota_sched.job WHERE job_queue = 'hh_queue' AND state NOT IN ('SUCCEEDED', 'FAILED')
	 ORDER BY id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hh_env', '{"gpu": 16}');
-- (fence_grace 0: a lease that runs out is acted on at once)
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout, fence_grace)
VALUES ('hh_queue', 'hh_env', '1 hour', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hh_queue', 'hh_a', '{"gpu": 16}', 'RESERVE');

------------------------------------------------------------------------
-- A job claimed before its unit is placed: no parts; it holds on the
-- host of the agent that claimed it once that agent registers.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hh_old', 'hh_queue', 'hh_a', 'gpu', 4);
SELECT * FROM pg_temp.pass('hh_queue');
SET ROLE regress_hh_host;
SELECT name, state, agent, part_agents FROM quota_sched.claim('hh_h1', 'hh_queue', 'gpu');
-- four hosts of 4: hh_h1 to hh_h4
SELECT name FROM quota_sched.agent_ready('hh_h1', 'hh_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('hh_h2', 'hh_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('hh_h3', 'hh_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('hh_h4', 'hh_queue', 'gpu', 4);
RESET ROLE;
SELECT * FROM pg_temp.held();
-- a job of 4 does not go to hh_h1, which hh_old fills
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hh_four', 'hh_queue', 'hh_a', 'gpu', 4);
SELECT * FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.held();
SELECT (quota_sched.terminate(pg_temp.id('hh_four'))).state AS terminated;
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- Dispatch, claim, run: a job of 8 on two hosts and a job of 2.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('hh_big', 'hh_queue', 'hh_a', 'gpu', 8, 4);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hh_two', 'hh_queue', 'hh_a', 'gpu', 2);
SELECT * FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.held();
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.claim('hh_h2', 'hh_queue', 'gpu', max_jobs => 10) ORDER BY id;
SELECT name, state FROM quota_sched.claim('hh_h3', 'hh_queue', 'gpu', max_jobs => 10) ORDER BY id;
SELECT name, state FROM quota_sched.claim('hh_h4', 'hh_queue', 'gpu', max_jobs => 10) ORDER BY id;
RESET ROLE;
SELECT * FROM pg_temp.held();
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.report(pg_temp.id('hh_big'), 'hh_h2', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('hh_big'), 'hh_h3', 'RUNNING');
RESET ROLE;
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- A part that fails stops its peer (PEER_FAILED, stopping); the peer's
-- report of its end ends the job: its hosts hold nothing.
------------------------------------------------------------------------
SET ROLE regress_hh_host;
SELECT name, state, stop_reason FROM quota_sched.report(pg_temp.id('hh_big'), 'hh_h2', 'FAILED');
RESET ROLE;
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.held();
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.report(pg_temp.id('hh_big'), 'hh_h3', 'FAILED');
RESET ROLE;
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- A stop request (terminate of a claimed job: stopping), then the report
-- of its end.
------------------------------------------------------------------------
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('hh_two'));
SELECT * FROM pg_temp.held();
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.report(pg_temp.id('hh_two'), 'hh_h4', 'FAILED');
RESET ROLE;
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- Release: a claimed job given back goes RUNNABLE and is placed again.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 max_attempts)
VALUES ('hh_rel', 'hh_queue', 'hh_a', 'gpu', 3, 3);
SELECT * FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.held();
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.claim(
	(SELECT part_agents[1] FROM quota_sched.job WHERE name = 'hh_rel'), 'hh_queue', 'gpu');
SELECT name, state FROM quota_sched.release(pg_temp.id('hh_rel'),
	(SELECT part_agents[1] FROM quota_sched.job WHERE name = 'hh_rel'));
RESET ROLE;
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- A lost lease (the claim's lease of a second): the pass takes the job back.
------------------------------------------------------------------------
SELECT * FROM pg_temp.pass('hh_queue');
SET ROLE regress_hh_host;
SELECT name, state FROM quota_sched.claim(
	(SELECT part_agents[1] FROM quota_sched.job WHERE name = 'hh_rel'), 'hh_queue', 'gpu',
	lease => '1 second');
RESET ROLE;
SELECT pg_sleep(1.2);
SELECT name, action, reason FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.jobs();
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- A pass rolled back to a savepoint leaves the counters as they were.
------------------------------------------------------------------------
SELECT (quota_sched.terminate(pg_temp.id('hh_rel'))).state AS terminated;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hh_sp', 'hh_queue', 'hh_a', 'gpu', 1);
BEGIN;
SAVEPOINT a;
SELECT name, action FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.held();
ROLLBACK TO SAVEPOINT a;
SELECT * FROM pg_temp.held();
COMMIT;
SELECT * FROM pg_temp.held();

------------------------------------------------------------------------
-- An admin's own statements: an UPDATE that moves a job's parts (the
-- update guard off), a DELETE of a holding job (the delete guard off),
-- and a TRUNCATE of the jobs.
------------------------------------------------------------------------
SELECT name, action FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.held();
ALTER TABLE quota_sched.job DISABLE TRIGGER job_before_update;
UPDATE quota_sched.job SET part_agents = '{hh_h4}' WHERE name = 'hh_sp';
SELECT * FROM pg_temp.held();
UPDATE quota_sched.job SET stop_reason = 'TERMINATED' WHERE name = 'hh_sp';
SELECT * FROM pg_temp.held();
ALTER TABLE quota_sched.job ENABLE TRIGGER job_before_update;
ALTER TABLE quota_sched.job DISABLE TRIGGER job_before_delete;
DELETE FROM quota_sched.job WHERE name = 'hh_sp';
ALTER TABLE quota_sched.job ENABLE TRIGGER job_before_delete;
SELECT * FROM pg_temp.held();
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('hh_last', 'hh_queue', 'hh_a', 'gpu', 2);
SELECT name, action FROM pg_temp.pass('hh_queue');
SELECT * FROM pg_temp.held();
-- (in a transaction rolled back: the other tests' jobs stay)
BEGIN;
TRUNCATE quota_sched.job CASCADE;
SELECT * FROM pg_temp.held();
SELECT count(*) AS rows_left FROM quota_sched.host_held;
ROLLBACK;
SELECT (quota_sched.terminate(pg_temp.id('hh_last'))).state AS terminated;
SELECT (quota_sched.terminate(pg_temp.id('hh_old'))).state AS terminated;
SELECT * FROM pg_temp.held();
