-- Placement on hosts (scheduling.md 3.13, 3.14) through SQL: four hosts
-- of 4 gpus in two racks; best fit keeps a hole whole; a job of 8 with
-- instances_per_host 4 is placed on two hosts, one part each, and is
-- STARTING only once both parts are claimed, RUNNING once both run; one
-- part that fails stops the other (PEER_FAILED), and the attempt fails
-- once both have stopped; a job of one rack (same_label) stays in it; a
-- job with no room on any host waits WAITING_FOR_HOSTS, and explain tells
-- the figures; a job not claimed by every part in time goes back
-- (NOT_CLAIMED) and its claimed part is told to let go; a borrowing job of
-- two hosts is reclaimed on both; job_parts and job_attempts show one row
-- per part.  Times are never printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_pp_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_pp_host', NULL);
CREATE ROLE regress_pp_user NOLOGIN IN ROLE quota_sched_user;

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
-- pp_jobs(): the jobs of the test with their placement, without times.
CREATE FUNCTION pg_temp.pp_jobs()
RETURNS TABLE (name text, state text, status_reason text, stop_reason text, agent text,
			   part_agents text[], part_instances integer[], failed_attempts integer)
LANGUAGE sql AS $$
	SELECT name, state, status_reason, stop_reason, agent, part_agents, part_instances,
		   failed_attempts
	  FROM quota_sched.job WHERE job_queue = 'pp_queue' AND state <> 'FAILED' ORDER BY id
$$;
-- pp_parts(job): its parts (job_parts), without times.
CREATE FUNCTION pg_temp.pp_parts(job_name text)
RETURNS TABLE (attempt integer, rank integer, agent text, address text, instances integer,
			   state text)
LANGUAGE sql AS $$
	SELECT p.attempt, p.rank, p.agent, p.address, p.instances, p.state
	  FROM quota_sched.job_parts p WHERE p.job_id = pg_temp.id(job_name)
	 ORDER BY p.attempt, p.rank
$$;
-- done(): every job of the test not ended yet is terminated (as an admin);
-- returns how many, and that the counters of held capacity match.
CREATE FUNCTION pg_temp.done(OUT terminated bigint, OUT drift bigint) LANGUAGE sql AS $$
	SELECT count(quota_sched.terminate(id, 'done')),
		   (SELECT count(*) FROM quota_sched.held_capacity_drift())
	  FROM quota_sched.job WHERE job_queue = 'pp_queue' AND state NOT IN ('SUCCEEDED', 'FAILED')
$$;
-- claim(agent): what the agent claims, with its rank from the placement.
CREATE FUNCTION pg_temp.claim(a text)
RETURNS TABLE (name text, state text, rank integer, instances integer, hosts integer)
LANGUAGE sql AS $$
	SELECT c.name, c.state, array_position(c.part_agents, a) - 1,
		   c.part_instances[array_position(c.part_agents, a)], cardinality(c.part_agents)
	  FROM quota_sched.claim(a, 'pp_queue', 'gpu', max_jobs => 10) c ORDER BY c.id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pp_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('pp_queue', 'pp_env', '1 minute');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pp_queue', 'pp_a', '{"gpu": 12}', 'LEND'),
	   ('pp_queue', 'pp_b', '{"gpu": 4}', 'LEND_AND_BORROW');

-- Four hosts of 4: h1, h2 in rack r1 (h2 at another address), h3, h4 in r2.
SET ROLE regress_pp_host;
SELECT name, instances, labels, address
  FROM quota_sched.agent_ready('h1', 'pp_queue', 'gpu', 4, '{"rack": "r1"}');
SELECT name, instances, labels, address
  FROM quota_sched.agent_ready('h2', 'pp_queue', 'gpu', 4, '{"rack": "r1"}', '10.0.0.2');
SELECT name FROM quota_sched.agent_ready('h3', 'pp_queue', 'gpu', 4, '{"rack": "r2"}');
SELECT name FROM quota_sched.agent_ready('h4', 'pp_queue', 'gpu', 4, '{"rack": "r2"}');
RESET ROLE;

------------------------------------------------------------------------
-- Best fit: a job of 2 on h1, then a job of 2 on h1 too (the least free
-- that holds it), so that a job of 4 still finds a whole host.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pp_two_a', 'pp_queue', 'pp_a', 'gpu', 2);
SELECT * FROM pg_temp.pass('pp_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pp_two_b', 'pp_queue', 'pp_a', 'gpu', 2),
	   ('pp_four', 'pp_queue', 'pp_a', 'gpu', 4);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, part_agents, part_instances FROM pg_temp.pp_jobs();
SELECT agent, held_jobs, held_instances, free_instances FROM quota_sched.agents
 WHERE job_queue = 'pp_queue' ORDER BY agent;
SELECT pg_temp.done();

------------------------------------------------------------------------
-- A job of 8, 4 on each host: two parts, ranks by instances then name.
-- STARTING only once both are claimed, RUNNING once both run.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, max_attempts)
VALUES ('pp_big', 'pp_queue', 'pp_a', 'gpu', 8, 4, 2);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, agent, part_agents, part_instances FROM pg_temp.pp_jobs();
SELECT * FROM pg_temp.pp_parts('pp_big');
-- only the agents it is placed on may claim it
SET ROLE regress_pp_host;
SELECT * FROM pg_temp.claim('h3');
SELECT * FROM pg_temp.claim('h1');
RESET ROLE;
SELECT name, state, agent FROM pg_temp.pp_jobs();
SELECT e->>'blocked_by' AS blocked_by, e->'parts' AS parts, e->>'detail' AS detail
  FROM quota_sched.explain(pg_temp.id('pp_big')) e;
SET ROLE regress_pp_host;
SELECT * FROM pg_temp.claim('h2');
RESET ROLE;
SELECT name, state, agent FROM pg_temp.pp_jobs();
SELECT * FROM pg_temp.pp_parts('pp_big');
SET ROLE regress_pp_host;
SELECT name, state FROM quota_sched.report(pg_temp.id('pp_big'), 'h1', 'RUNNING');
SELECT name, state FROM quota_sched.report(pg_temp.id('pp_big'), 'h2', 'RUNNING');
-- a repeat is a no-op; an agent with no part of the job is refused
SELECT name, state FROM quota_sched.report(pg_temp.id('pp_big'), 'h2', 'RUNNING');
SELECT pg_temp.refused($$SELECT quota_sched.report(pg_temp.id('pp_big'), 'h3', 'RUNNING')$$);
-- each agent's heartbeat renews its own part
SELECT job_id = pg_temp.id('pp_big') AS big, stop_reason FROM quota_sched.heartbeat('h1');
SELECT job_id = pg_temp.id('pp_big') AS big, stop_reason FROM quota_sched.heartbeat('h2');
RESET ROLE;
SELECT * FROM pg_temp.pp_parts('pp_big');

------------------------------------------------------------------------
-- A part fails: the other is stopped (PEER_FAILED), the job holds both
-- hosts until it has stopped, then the attempt fails (one of two).
------------------------------------------------------------------------
SET ROLE regress_pp_host;
SELECT name, state, stop_reason FROM quota_sched.report(pg_temp.id('pp_big'), 'h2', 'FAILED',
	exit_code => 137, output => 'killed');
SELECT job_id = pg_temp.id('pp_big') AS big, stop_reason FROM quota_sched.heartbeat('h1');
RESET ROLE;
SELECT * FROM pg_temp.pp_parts('pp_big');
SELECT quota_share, sum(instances) AS held FROM quota_sched.held_capacity
 WHERE job_queue = 'pp_queue' GROUP BY 1 ORDER BY 1;
SET ROLE regress_pp_host;
SELECT name, state, status_reason FROM quota_sched.report(pg_temp.id('pp_big'), 'h1', 'STOPPED',
	exit_code => 143);
RESET ROLE;
SELECT name, state, status_reason, failed_attempts, part_agents FROM pg_temp.pp_jobs();
SELECT * FROM pg_temp.pp_parts('pp_big');
SELECT attempt, rank, agent, exit_code, output FROM quota_sched.job_attempts
 WHERE job_id = pg_temp.id('pp_big') ORDER BY attempt, rank;
SELECT kind, to_state, reason FROM quota_sched.job_event
 WHERE job_id = pg_temp.id('pp_big') ORDER BY id;

------------------------------------------------------------------------
-- A job of one rack stays in it: racks r1 and r2 have 8 free each, the
-- job of 8 takes r1 (the least value on a tie); a job of 3 of a rack
-- takes h3 in r2, and a job of 3 with no constraint h4 (best fit).  A
-- job of 2 on each of one host has the capacity (pp_b borrows 1 of
-- pp_a's idle 1) but no host has 2 free: WAITING_FOR_HOSTS, with
-- explain's figures.
------------------------------------------------------------------------
SELECT pg_temp.done();
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 same_label)
VALUES ('pp_rack', 'pp_queue', 'pp_a', 'gpu', 8, 'rack'),
	   ('pp_rack3', 'pp_queue', 'pp_a', 'gpu', 3, 'rack');
SELECT * FROM pg_temp.pass('pp_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pp_other', 'pp_queue', 'pp_b', 'gpu', 3);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, status_reason, part_agents, part_instances FROM pg_temp.pp_jobs();
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('pp_pair', 'pp_queue', 'pp_b', 'gpu', 2, 2);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, status_reason FROM pg_temp.pp_jobs() WHERE name = 'pp_pair';
SELECT e->>'blocked_by' AS blocked_by, e->'hosts' AS hosts, e->'largest_free' AS largest_free,
	   e->'free_instances' AS free, e->'most_placeable' AS most, e->>'detail' AS detail
  FROM quota_sched.explain(pg_temp.id('pp_pair')) e;
-- held back: no host could ever take 5 on one host
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('pp_five', 'pp_queue', 'pp_b', 'gpu', 5, 5);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, status_reason FROM pg_temp.pp_jobs() WHERE name = 'pp_five';
SELECT e->>'blocked_by' AS blocked_by, e->'most_placeable' AS most
  FROM quota_sched.explain(pg_temp.id('pp_five')) e;
SELECT pg_temp.done();

------------------------------------------------------------------------
-- Not claimed in time by every part: back to RUNNABLE (NOT_CLAIMED), and
-- the claimed part is told to let go (heartbeat), then released.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('pp_slow', 'pp_queue', 'pp_a', 'gpu', 8, 4);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, part_agents FROM pg_temp.pp_jobs();
SET ROLE regress_pp_host;
SELECT * FROM pg_temp.claim('h1');
RESET ROLE;
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = scheduled_at - interval '2 minutes'
 WHERE name = 'pp_slow';
UPDATE quota_sched.job_part SET placed_at = placed_at - interval '2 minutes'
 WHERE job_id = pg_temp.id('pp_slow');
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, status_reason, agent, part_agents FROM pg_temp.pp_jobs();
SELECT * FROM pg_temp.pp_parts('pp_slow');
SET ROLE regress_pp_host;
SELECT job_id = pg_temp.id('pp_slow') AS slow, stop_reason FROM quota_sched.heartbeat('h1');
SELECT name, state FROM quota_sched.release(pg_temp.id('pp_slow'), 'h1');
SELECT count(*) FROM quota_sched.heartbeat('h1');
RESET ROLE;
SELECT * FROM pg_temp.pp_parts('pp_slow');
SELECT pg_temp.done();

------------------------------------------------------------------------
-- A borrower on two hosts is reclaimed on both: pp_b (own 4) runs a job
-- of 8, 4 on each of h3 and h4, beside pp_a's 8 on h1, h2; pp_a's job of
-- 4 (one host) reclaims: the borrower stops on both hosts, and the
-- preemptor is promised one of them.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('pp_own', 'pp_queue', 'pp_a', 'gpu', 8, 4);
SELECT * FROM pg_temp.pass('pp_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('pp_borrow', 'pp_queue', 'pp_b', 'gpu', 8, 4);
SELECT * FROM pg_temp.pass('pp_queue');
SET ROLE regress_pp_host;
SELECT * FROM pg_temp.claim('h1');
SELECT * FROM pg_temp.claim('h2');
SELECT * FROM pg_temp.claim('h3');
SELECT * FROM pg_temp.claim('h4');
RESET ROLE;
SELECT name, state, part_agents FROM pg_temp.pp_jobs();
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pp_reclaim', 'pp_queue', 'pp_a', 'gpu', 4);
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, stop_reason, part_agents FROM pg_temp.pp_jobs();
SET ROLE regress_pp_host;
SELECT job_id = pg_temp.id('pp_borrow') AS borrow, stop_reason FROM quota_sched.heartbeat('h3');
SELECT job_id = pg_temp.id('pp_borrow') AS borrow, stop_reason FROM quota_sched.heartbeat('h4');
SELECT name, state FROM quota_sched.report(pg_temp.id('pp_borrow'), 'h3', 'STOPPED');
RESET ROLE;
SELECT name, state, stop_reason FROM pg_temp.pp_jobs() WHERE name = 'pp_borrow';
SET ROLE regress_pp_host;
SELECT name, state, status_reason FROM quota_sched.report(pg_temp.id('pp_borrow'), 'h4', 'STOPPED');
RESET ROLE;
SELECT * FROM pg_temp.pass('pp_queue');
SELECT name, state, part_agents FROM pg_temp.pp_jobs();
SELECT count(*) FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- The skip bound of a class looks past a batch (the pass reads a share's
-- jobs with placement constraints in batches, and before each asks
-- whether any job of a class's size below its bound follows): in queue
-- pl_queue, on four hosts of 4, a job of 3 goes first (on g1), then come
-- ten jobs of 8 on four hosts (instances_per_host 2); the first is tried
-- and waits for hosts (only three hosts have 2 free), and the bound of its
-- class passes over the other nine; a later job of 4 of the same class,
-- beyond the first batch, is dispatched on two hosts.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pl_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pl_queue', 'pl_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pl_queue', 'pl_a', '{"gpu": 16}', 'RESERVE');
SET ROLE regress_pp_host;
SELECT count(a.name)
  FROM unnest('{g1,g2,g3,g4}'::text[]) g, quota_sched.agent_ready(g, 'pl_queue', 'gpu', 4) a;
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 priority)
VALUES ('pl_three', 'pl_queue', 'pl_a', 'gpu', 3, 10);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, priority)
SELECT 'pl_eight_' || i, 'pl_queue', 'pl_a', 'gpu', 8, 2, 9 FROM generate_series(1, 10) i;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, priority)
VALUES ('pl_four', 'pl_queue', 'pl_a', 'gpu', 4, 2, 1);
SELECT * FROM pg_temp.pass('pl_queue');
SELECT name, state, status_reason, part_agents, part_instances
  FROM quota_sched.job WHERE job_queue = 'pl_queue' AND name IN ('pl_three', 'pl_eight_1', 'pl_eight_2', 'pl_four')
 ORDER BY id;
SELECT count(*) FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- A pass keeps the classes it read while no job with placement
-- constraints enters a share's order (constrained_change): a class that
-- comes later is seen by the next pass.  pl_new, of a new class (2 on
-- one host each), comes after the nine jobs of 8 left (the first batch
-- holds eight of them): the next pass looks past the batch for it and
-- dispatches it.  pl_after, of another new class (4 on one host), waits
-- for pl_three; once pl_three succeeded, it enters the order and the next
-- pass places it on g4.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, priority)
VALUES ('pl_new', 'pl_queue', 'pl_a', 'gpu', 2, 1, 1);
SELECT * FROM pg_temp.pass('pl_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, depends_on)
VALUES ('pl_after', 'pl_queue', 'pl_a', 'gpu', 4, 4, ARRAY[pg_temp.id('pl_three')]);
SELECT * FROM pg_temp.pass('pl_queue');
SET ROLE regress_pp_host;
SELECT name, state FROM quota_sched.claim('g1', 'pl_queue', 'gpu', start => true);
SELECT name, state FROM quota_sched.report(pg_temp.id('pl_three'), 'g1', 'SUCCEEDED');
RESET ROLE;
SELECT * FROM pg_temp.pass('pl_queue');
SELECT name, state, status_reason, part_agents, part_instances
  FROM quota_sched.job WHERE job_queue = 'pl_queue' AND name IN ('pl_new', 'pl_after')
 ORDER BY id;
SELECT count(*) FROM quota_sched.held_capacity_drift();

-- Clean up: rows go with their queue.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue IN ('pp_queue', 'pl_queue');
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue IN ('pp_queue', 'pl_queue');
DELETE FROM quota_sched.job_queue WHERE name IN ('pp_queue', 'pl_queue');
DELETE FROM quota_sched.service_environment WHERE name IN ('pp_env', 'pl_env');
DROP ROLE regress_pp_host, regress_pp_user;
