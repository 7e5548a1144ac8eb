-- A part its agent was told to let go (scheduling.md 3.14: the job was not
-- claimed by every part in time and went back, NOT_CLAIMED) while the job
-- is placed again on the same agent: the agent's report of it is about
-- that part, the one it holds, not the new part placed on it; and an
-- agent that claims the new part has let go of the old one (a claim of a
-- job ends the agent's parts of its earlier placements), so that
-- heartbeat returns the job once, with no stop.  Found with real agents
-- (test/t/024_placement_agents.pl): a part slow to stop, its report
-- refused as "not claimed", was left RUNNING for ever, its NOT_CLAIMED
-- returned by every heartbeat beside the new part, which the agent then
-- stopped.  Times are never printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_plg_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_plg_host', NULL);

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;
-- parts(job): its parts, placement by placement (current: of the job's
-- placement now), without times.
CREATE FUNCTION pg_temp.parts(job_name text)
RETURNS TABLE (current boolean, rank integer, agent text, state text, ended_as text,
			   stop_reason text)
LANGUAGE sql AS $$
	SELECT p.placed_at = j.scheduled_at, p.rank, p.agent, p.state, p.ended_as, p.stop_reason
	  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id
	 WHERE j.name = job_name ORDER BY p.placed_at, p.rank
$$;
-- age(job): the job's dispatch and placement two minutes back (as a test
-- may: its history and counters are not touched), so that the claim
-- timeout of 1 minute has passed; lift(job): its claim backoff over.
CREATE FUNCTION pg_temp.age(job_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL session_replication_role = replica;
	UPDATE quota_sched.job j SET scheduled_at = j.scheduled_at - interval '2 minutes'
	 WHERE j.name = job_name;
	UPDATE quota_sched.job_part p SET placed_at = p.placed_at - interval '2 minutes'
	 WHERE p.job_id = pg_temp.id(job_name);
END
$$;
CREATE FUNCTION pg_temp.lift(job_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL session_replication_role = replica;
	UPDATE quota_sched.job j SET claim_backoff_until = now() - interval '1 second'
	 WHERE j.name = job_name;
END
$$;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('plg_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('plg_queue', 'plg_env', '1 minute');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('plg_queue', 'plg_share', '{"gpu": 8}', 'RESERVE');
SET ROLE regress_plg_host;
SELECT name FROM quota_sched.agent_ready('h1', 'plg_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('h2', 'plg_queue', 'gpu', 4);
RESET ROLE;

------------------------------------------------------------------------
-- h1 claims (and starts) its part; h2 does not claim in time; the job
-- is placed again on both while h1 still stops its part.  h1's report
-- of that part ends it; the new part stays PLACED, and h1 claims it.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('plg_slow', 'plg_queue', 'plg_share', 'gpu', 8, 4);
SELECT * FROM pg_temp.pass('plg_queue');
SET ROLE regress_plg_host;
SELECT name, state FROM quota_sched.claim('h1', 'plg_queue', 'gpu', start => true);
RESET ROLE;
SELECT pg_temp.age('plg_slow');
SELECT * FROM pg_temp.pass('plg_queue');
SELECT pg_temp.lift('plg_slow');
SELECT * FROM pg_temp.pass('plg_queue');
SELECT state, part_agents FROM quota_sched.job WHERE name = 'plg_slow';
SELECT * FROM pg_temp.parts('plg_slow');
SET ROLE regress_plg_host;
-- the old part is told to let go; the new one is not claimed yet
SELECT job_id = pg_temp.id('plg_slow') AS slow, stop_reason FROM quota_sched.heartbeat('h1');
-- the report of the part h1 stopped is about that part
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_slow'), 'h1', 'STOPPED',
	attempt => 1, exit_code => 143);
RESET ROLE;
SELECT * FROM pg_temp.parts('plg_slow');
SET ROLE regress_plg_host;
SELECT count(*) FROM quota_sched.heartbeat('h1');
SELECT name, state FROM quota_sched.claim('h1', 'plg_queue', 'gpu', start => true);
SELECT name, state FROM quota_sched.claim('h2', 'plg_queue', 'gpu', start => true);
SELECT job_id = pg_temp.id('plg_slow') AS slow, stop_reason FROM quota_sched.heartbeat('h1');
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_slow'), 'h1', 'SUCCEEDED', attempt => 1);
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_slow'), 'h2', 'SUCCEEDED', attempt => 1);
RESET ROLE;
SELECT * FROM pg_temp.parts('plg_slow');

------------------------------------------------------------------------
-- h1 claims the new part without a word of the old one (an agent that
-- gave up its old attempt when it claimed the job again): the old part
-- ends at the claim, and heartbeat returns the job once, with no stop.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('plg_again', 'plg_queue', 'plg_share', 'gpu', 8, 4);
SELECT * FROM pg_temp.pass('plg_queue');
SET ROLE regress_plg_host;
SELECT name, state FROM quota_sched.claim('h1', 'plg_queue', 'gpu', start => true);
RESET ROLE;
SELECT pg_temp.age('plg_again');
SELECT * FROM pg_temp.pass('plg_queue');
SELECT pg_temp.lift('plg_again');
SELECT * FROM pg_temp.pass('plg_queue');
SELECT state, part_agents FROM quota_sched.job WHERE name = 'plg_again';
SET ROLE regress_plg_host;
SELECT name, state FROM quota_sched.claim('h1', 'plg_queue', 'gpu', start => true);
SELECT job_id = pg_temp.id('plg_again') AS again, stop_reason FROM quota_sched.heartbeat('h1');
RESET ROLE;
SELECT * FROM pg_temp.parts('plg_again');
SET ROLE regress_plg_host;
-- a late report of the old part lands on the part h1 holds now: a
-- repeat of its state, nothing changes
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_again'), 'h1', 'RUNNING', attempt => 1);
SELECT name, state FROM quota_sched.claim('h2', 'plg_queue', 'gpu', start => true);
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_again'), 'h1', 'SUCCEEDED', attempt => 1);
SELECT name, state FROM quota_sched.report(pg_temp.id('plg_again'), 'h2', 'SUCCEEDED', attempt => 1);
SELECT count(*) FROM quota_sched.heartbeat('h1');
RESET ROLE;
SELECT * FROM pg_temp.parts('plg_again');
SELECT count(*) FROM quota_sched.held_capacity_drift();

-- Clean up: rows go with their queue.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'plg_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'plg_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'plg_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'plg_env';
DROP ROLE regress_plg_host;
