-- agent_wait (issue 42, item 4; src/agents/agent_wait.c): what a commit
-- leaves pending for an agent that waits, in one session: each call with
-- timeout 0 takes what is pending and returns at once.  The first call for
-- an agent and queue returns everything (what came before is not known);
-- a job placed on the agent, a job of the queue not placed (every agent
-- of the queue), a stop of a job it holds and a claim of another part of
-- a job of several parts wake it; a job placed on another agent, a rolled
-- back pass and another queue's jobs do not; a claim that leaves jobs
-- behind keeps its dispatch pending.  Then the refusals.

\i test/regress/include/helpers.sql

CREATE ROLE regress_aw_host NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_aw_user NOLOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_aw_host', NULL);
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('aw_env', '{"gpu": 8}'), ('aw_env2', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('aw_queue', 'aw_env', '1 hour'), ('aw_other', 'aw_env2', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('aw_queue', 'aw_s', '{"gpu": 8}', 'RESERVE'), ('aw_other', 'aw_o', '{"gpu": 8}', 'RESERVE');
SET ROLE regress_aw_host;
SELECT name FROM quota_sched.agent_ready('aw_1', 'aw_queue', 'gpu', 2);
SELECT name FROM quota_sched.agent_ready('aw_2', 'aw_queue', 'gpu', 2);
-- the first call: everything; then nothing
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
RESET ROLE;

-- submit(queue, share, name, n[, per_host]): a job, then the queue's pass
CREATE FUNCTION pg_temp.submit(q text, s text, job_name text, n int, per_host int DEFAULT NULL)
RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
								 instances_per_host)
	VALUES (job_name, q, s, 'gpu', n, per_host);
	PERFORM quota_sched.run_pass(q);
	RETURN (SELECT coalesce(array_to_string(part_agents, ','), '(not placed)')
			  FROM quota_sched.job WHERE name = job_name);
END
$$;

-- a job of 1, placed on aw_1 (best fit, ties to the least name): dispatch
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_a', 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
-- a job of 2, placed on aw_2 (aw_1 has 1 free): nothing for aw_1
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_b', 2);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
-- a pass rolled back: nothing
BEGIN;
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_c', 1);
ROLLBACK;
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
-- aw_1 claims aw_a; nothing; a stop of it (terminate): stop
SET ROLE regress_aw_host;
SELECT name, state FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu');
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
RESET ROLE;
SELECT t.state, t.stop_reason FROM quota_sched.job j, quota_sched.terminate(j.id) t
 WHERE j.name = 'aw_a';
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
-- (aw_1 acknowledges the stop: its instance is free)
SET ROLE regress_aw_host;
SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_1', 'STOPPED') r
 WHERE j.name = 'aw_a';
RESET ROLE;
-- two wake-ups before a call: both at once
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_b';
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_d', 1);
SET ROLE regress_aw_host;
SELECT name, state FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu');
RESET ROLE;
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_d';
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_e', 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_e';
SET ROLE regress_aw_host;
SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_1', 'STOPPED') r
 WHERE j.name = 'aw_d';
RESET ROLE;

-- peers: the session waits as aw_2; a job of two parts of 1, on aw_1 and
-- aw_2: dispatch; aw_1 claims its part: peers
CALL quota_sched.agent_wait('aw_2', 'aw_queue', 0);
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_pair', 2, 1);
CALL quota_sched.agent_wait('aw_2', 'aw_queue', 0);
SET ROLE regress_aw_host;
SELECT name, state FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu');
CALL quota_sched.agent_wait('aw_2', 'aw_queue', 0);
RESET ROLE;
-- its stop goes to the agent of its claimed part, aw_1, not to aw_2
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_pair';
CALL quota_sched.agent_wait('aw_2', 'aw_queue', 0);
SET ROLE regress_aw_host;
SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_1', 'STOPPED') r
 WHERE j.name = 'aw_pair';
RESET ROLE;

-- a queue with no host: its dispatches wake every agent that waits for
-- it, and only those
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT pg_temp.submit('aw_other', 'aw_o', 'aw_free', 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_f', 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name IN ('aw_free', 'aw_f');
-- a wait that times out: nothing (a CALL of its own, outside a block)
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 20);

-- a claim that takes jobs and leaves some behind for want of room keeps
-- its dispatch pending: the agent's next wait returns at once, with no
-- claim after each report to find them (doc/agents.md); a claim that
-- leaves nothing, or takes nothing, keeps nothing.  Two jobs of 1, both
-- placed on aw_1 (best fit); it claims one at a time.
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_g', 1), pg_temp.submit('aw_queue', 'aw_s', 'aw_h', 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SET ROLE regress_aw_host;
SELECT quota_sched.claim_left() AS left_before_any_claim;
SELECT name, state, quota_sched.claim_left() AS left
  FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu', max_jobs => 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT name, state, quota_sched.claim_left() AS left
  FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu', max_jobs => 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT name, state FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu');
SELECT quota_sched.claim_left() AS left_after_nothing;
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_1', 'SUCCEEDED') r
 WHERE j.name IN ('aw_g', 'aw_h') ORDER BY j.name;
RESET ROLE;
-- a job of 2 on aw_1, which claims with room for 1: takes nothing, keeps
-- nothing pending (it would claim again and again)
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_i', 2);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SET ROLE regress_aw_host;
SELECT name, state FROM quota_sched.claim('aw_1', 'aw_queue', 'gpu', max_instances => 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
RESET ROLE;
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_i';
-- jobs not placed: a claim that took all it could may have left some;
-- one that passed over a job too large for what it had left did (a job of
-- 2, then one of 1, with room for 1: it takes the second)
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT pg_temp.submit('aw_other', 'aw_o', 'aw_j', 1), pg_temp.submit('aw_other', 'aw_o', 'aw_k', 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SET ROLE regress_aw_host;
SELECT name, state FROM quota_sched.claim('aw_any', 'aw_other', max_jobs => 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT name, state FROM quota_sched.claim('aw_any', 'aw_other', max_jobs => 2);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
RESET ROLE;
SELECT pg_temp.submit('aw_other', 'aw_o', 'aw_l', 2), pg_temp.submit('aw_other', 'aw_o', 'aw_m', 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SET ROLE regress_aw_host;
SELECT name, state, quota_sched.claim_left() AS left
  FROM quota_sched.claim('aw_any', 'aw_other', max_jobs => 2, max_instances => 1);
CALL quota_sched.agent_wait('aw_any', 'aw_other', 0);
SELECT r.name, r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_any', 'SUCCEEDED') r
 WHERE j.name IN ('aw_j', 'aw_k', 'aw_m') ORDER BY j.name;
RESET ROLE;
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_l';
-- a claim whose parts take all its room looks for jobs not placed too: a
-- job of 1 placed on aw_1, one of aw_queue not placed (no agent of a
-- unit of its own), aw_1 claims with room for 1
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('aw_env3', '{"gpu": 8, "cpu": 8}');
UPDATE quota_sched.job_queue SET service_environment = 'aw_env3' WHERE name = 'aw_queue';
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 8, "cpu": 8}' WHERE name = 'aw_s';
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT pg_temp.submit('aw_queue', 'aw_s', 'aw_n', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('aw_o_cpu', 'aw_queue', 'aw_s', 'cpu', 1);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('aw_queue') WHERE action = 'DISPATCH';
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SET ROLE regress_aw_host;
SELECT name, state, quota_sched.claim_left() AS left
  FROM quota_sched.claim('aw_1', 'aw_queue', max_jobs => 1, max_instances => 1);
CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0);
SELECT r.state FROM quota_sched.job j, quota_sched.report(j.id, 'aw_1', 'SUCCEEDED') r
 WHERE j.name = 'aw_n';
RESET ROLE;
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'aw_o_cpu';
-- claim_left() is the agents'
SELECT has_function_privilege('quota_sched_user', 'quota_sched.claim_left()', 'EXECUTE')
	   AS users_may;

-- refused, and nothing taken
SELECT pg_temp.refused($$CALL quota_sched.agent_wait(NULL, 'aw_queue', 0)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('', 'aw_queue', 0)$$);
SELECT pg_temp.refused(format($$CALL quota_sched.agent_wait(%L, 'aw_queue', 0)$$, repeat('a', 129)));
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', NULL, 0)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', NULL)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', -1)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', 3600001)$$);
-- a wait in a transaction block (here, the function's), with nothing
-- pending: 25001; with 0, fine
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', 10)$$);
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0)$$);
-- users may not call it
SET ROLE regress_aw_user;
SELECT pg_temp.refused($$CALL quota_sched.agent_wait('aw_1', 'aw_queue', 0)$$);
RESET ROLE;

SELECT (quota_sched.terminate(id)).state FROM quota_sched.job
 WHERE job_queue IN ('aw_queue', 'aw_other') AND state NOT IN ('SUCCEEDED', 'FAILED');
DELETE FROM quota_sched.job_queue WHERE name IN ('aw_queue', 'aw_other');
DELETE FROM quota_sched.service_environment WHERE name IN ('aw_env', 'aw_env2', 'aw_env3');
DELETE FROM quota_sched.agent_access WHERE login = 'regress_aw_host';
DROP ROLE regress_aw_host, regress_aw_user;
