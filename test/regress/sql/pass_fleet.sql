-- The pass and the fleet (scheduling.md 3.10): a job larger than every
-- live, active agent of its unit is not dispatched and holds nothing
-- (NO_AGENT_FITS), while a unit no agent registered for dispatches as
-- before and an unbounded agent lifts the bound; a SCHEDULED job no agent
-- claimed within the queue's claim_timeout goes back to RUNNABLE
-- (NOT_CLAIMED, no attempt counted, queued_at kept) and is held back for
-- claim_timeout * 2^(k-1), at most an hour (CLAIM_BACKOFF); the
-- claim_timeout column's bounds.  Times are never printed; the test moves
-- the clock by setting times back (replica mode), never by waiting.

\i test/regress/include/helpers.sql

CREATE ROLE regress_pf_host_a NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_pf_host_b NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_pf_host_a', NULL), ('regress_pf_host_b', NULL);
CREATE ROLE regress_pf_ops NOLOGIN IN ROLE quota_sched_admin;

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;

-- pg_temp.pf_jobs(): the jobs of the test, without times.
CREATE FUNCTION pg_temp.pf_jobs()
RETURNS TABLE (name text, state text, status_reason text, failed_attempts integer,
			   claim_requeues integer, held_back boolean)
LANGUAGE sql AS $$
	SELECT name, state, status_reason, failed_attempts, claim_requeues,
		   coalesce(claim_backoff_until > now(), false)
	  FROM quota_sched.job WHERE job_queue LIKE 'pf\_%' ORDER BY id
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pf_env', '{"gpu": 8, "cpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pf_queue', 'pf_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pf_queue', 'pf_share', '{"gpu": 8, "cpu": 4}', 'RESERVE');

-- claim_timeout: 5 minutes by default; null for none; at least 1 second
-- and at most 365 days.
SELECT claim_timeout FROM quota_sched.job_queue WHERE name = 'pf_queue';
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET claim_timeout = '0.5 seconds' WHERE name = 'pf_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET claim_timeout = '-1 minute' WHERE name = 'pf_queue'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET claim_timeout = '400 days' WHERE name = 'pf_queue'$$);
UPDATE quota_sched.job_queue SET claim_timeout = NULL WHERE name = 'pf_queue';
UPDATE quota_sched.job_queue SET claim_timeout = '1 second' WHERE name = 'pf_queue';
UPDATE quota_sched.job_queue SET claim_timeout = DEFAULT WHERE name = 'pf_queue';
-- max_lease_losses: 3 by default, 0 to 10, set at submission only.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, max_lease_losses)
                         VALUES ('pf_bad', 'pf_queue', 'pf_share', 'gpu', 1, 11)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, max_lease_losses)
                         VALUES ('pf_bad', 'pf_queue', 'pf_share', 'gpu', 1, -1)$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, lease_losses)
                         VALUES ('pf_bad', 'pf_queue', 'pf_share', 'gpu', 1, 0)$$);

------------------------------------------------------------------------
-- No agent registered for gpu: a 5-instance job is dispatched as before.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pf_before', 'pf_queue', 'pf_share', 'gpu', 5);
SELECT * FROM pg_temp.pass('pf_queue');
SELECT name, state FROM quota_sched.terminate(pg_temp.id('pf_before'));

------------------------------------------------------------------------
-- Two live agents of 4 gpus: a job of 5 instances on one host is held
-- back (NO_AGENT_FITS, no victims, nothing held: a job of 5 with any split
-- would run on both, scheduling.md 3.13); a 4-instance job behind it in
-- the same share is dispatched (the held-back job does not count as
-- tried), as is a cpu job (no agent registered for cpu).
------------------------------------------------------------------------
SET ROLE regress_pf_host_a;
SELECT name, instances FROM quota_sched.agent_ready('pf_a', 'pf_queue', 'gpu', 4);
RESET ROLE;
SET ROLE regress_pf_host_b;
SELECT name, instances FROM quota_sched.agent_ready('pf_b', 'pf_queue', 'gpu', 4);
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, priority,
							 instances_per_host)
VALUES ('pf_big', 'pf_queue', 'pf_share', 'gpu', 5, 9, 5),
       ('pf_four', 'pf_queue', 'pf_share', 'gpu', 4, 1, NULL),
       ('pf_cpu', 'pf_queue', 'pf_share', 'cpu', 4, 1, NULL);
SELECT * FROM pg_temp.pass('pf_queue');
SELECT * FROM pg_temp.pf_jobs() WHERE name IN ('pf_big', 'pf_four', 'pf_cpu');
SELECT quota_share, capacity_unit, sum(instances) AS held FROM quota_sched.held_capacity
 WHERE job_queue = 'pf_queue' GROUP BY 1, 2 ORDER BY 2;
SELECT e->>'blocked_by' AS blocked_by, e->'largest_agent' AS largest_agent,
       e->'instance_count' AS instance_count, e->>'detail' AS detail
  FROM quota_sched.explain(pg_temp.id('pf_big')) e;
-- A second pass decides nothing more.
SELECT * FROM pg_temp.pass('pf_queue');

-- An agent whose last_seen is older than its lease is not live: with only
-- pf_b live the bound stays 4.  Draining pf_b leaves no active live agent
-- for gpu: the bound is 0, a 1-instance job waits too.
SET session_replication_role = replica;
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'pf_a';
RESET session_replication_role;
SELECT (quota_sched.drain_agent('pf_b')).state;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pf_one', 'pf_queue', 'pf_share', 'gpu', 1);
SELECT * FROM pg_temp.pass('pf_queue');
SELECT e->>'blocked_by' AS blocked_by, e->'largest_agent' AS largest_agent
  FROM quota_sched.explain(pg_temp.id('pf_one')) e;
SELECT (quota_sched.drain_agent('pf_b', false)).state;

-- An 8-gpu agent registers and pf_four ends: the big job fits, is
-- dispatched and its reason clears; so is pf_one (5 + 1 of the share's 8).
SET ROLE regress_pf_host_a;
SELECT name, instances FROM quota_sched.agent_ready('pf_a', 'pf_queue', 'gpu', 8);
RESET ROLE;
SELECT name, state FROM quota_sched.terminate(pg_temp.id('pf_four'));
SELECT * FROM pg_temp.pass('pf_queue');
SELECT * FROM pg_temp.pf_jobs() WHERE name IN ('pf_big', 'pf_one');

-- An unbounded live agent (an external launcher) lifts the bound: pf_a
-- back to 4 and pf_b unbounded; a 6-gpu job is not held back (it waits
-- for capacity, not for an agent).
SELECT name, state FROM quota_sched.terminate(pg_temp.id('pf_big'));
SELECT name, state FROM quota_sched.terminate(pg_temp.id('pf_one'));
SELECT name, state FROM quota_sched.terminate(pg_temp.id('pf_cpu'));
SET ROLE regress_pf_host_a;
SELECT name, instances FROM quota_sched.agent_ready('pf_a', 'pf_queue', 'gpu', 4);
RESET ROLE;
SET ROLE regress_pf_host_b;
SELECT name, instances FROM quota_sched.agent_ready('pf_b', 'pf_queue', 'gpu');
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pf_six', 'pf_queue', 'pf_share', 'gpu', 6);
SELECT * FROM pg_temp.pass('pf_queue');
SELECT * FROM pg_temp.pf_jobs() WHERE name = 'pf_six';

------------------------------------------------------------------------
-- Claim timeout: pf_six was dispatched and nobody claims it.  Once its
-- scheduled_at is older than the claim timeout, the pass requeues it
-- (NOT_CLAIMED): RUNNABLE, no failed attempt, queued_at kept, held back
-- for 5 minutes; explain says CLAIM_BACKOFF, and passes leave it alone.
------------------------------------------------------------------------
CREATE TEMP TABLE pf_queued AS SELECT name, queued_at FROM quota_sched.job WHERE name = 'pf_six';
SELECT * FROM pg_temp.pass('pf_queue');
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '6 minutes' WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SELECT * FROM pg_temp.pf_jobs() WHERE name = 'pf_six';
SELECT j.queued_at = q.queued_at AS queued_at_kept,
       round(extract(epoch FROM j.claim_backoff_until - now()) / 60) AS backoff_minutes,
       j.agent IS NULL AS no_agent
  FROM quota_sched.job j JOIN pf_queued q USING (name);
SELECT e->>'blocked_by' AS blocked_by, e->'claim_requeues' AS claim_requeues,
       (e->>'backoff_until')::timestamptz = j.claim_backoff_until AS backoff_until_given
  FROM quota_sched.job j, quota_sched.explain(j.id) e WHERE j.name = 'pf_six';
SELECT * FROM pg_temp.pass('pf_queue');
SELECT from_state, to_state, reason FROM quota_sched.job_event
 WHERE job_id = pg_temp.id('pf_six') ORDER BY id;

-- The backoff over, it is dispatched again; a second timeout doubles it
-- (10 minutes); past the sixth the backoff is one hour at most.
SET session_replication_role = replica;
UPDATE quota_sched.job SET claim_backoff_until = now() - interval '1 second' WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '6 minutes' WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SELECT claim_requeues, round(extract(epoch FROM claim_backoff_until - now()) / 60) AS backoff_minutes
  FROM quota_sched.job WHERE name = 'pf_six';
SET session_replication_role = replica;
UPDATE quota_sched.job SET claim_backoff_until = now() - interval '1 second', claim_requeues = 6
 WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '6 minutes' WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SELECT claim_requeues, round(extract(epoch FROM claim_backoff_until - now()) / 60) AS backoff_minutes,
       failed_attempts
  FROM quota_sched.job WHERE name = 'pf_six';

-- A claimed job is never requeued by the claim timeout; with no claim
-- timeout nothing is.
SET session_replication_role = replica;
UPDATE quota_sched.job SET claim_backoff_until = NULL WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SET ROLE regress_pf_host_b;
SELECT name, state FROM quota_sched.claim('pf_b', 'pf_queue', 'gpu');
RESET ROLE;
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '6 minutes' WHERE name = 'pf_six';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pf_never', 'pf_queue', 'pf_share', 'gpu', 1);
UPDATE quota_sched.job_queue SET claim_timeout = NULL WHERE name = 'pf_queue';
SELECT * FROM pg_temp.pass('pf_queue');
SET session_replication_role = replica;
UPDATE quota_sched.job SET scheduled_at = now() - interval '10 days' WHERE name = 'pf_never';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('pf_queue');
SELECT * FROM pg_temp.pf_jobs() WHERE name IN ('pf_six', 'pf_never');

------------------------------------------------------------------------
-- A login registers at most 1000 agents (each pass of a queue reads its
-- live agents): pf_b and 999 more, then a new name is 54000 while a
-- refresh of one it has goes on.
------------------------------------------------------------------------
SET ROLE regress_pf_host_b;
SELECT count(quota_sched.agent_ready('pf_many_' || g, 'pf_queue', 'gpu', 1))
  FROM generate_series(1, 999) g;
SELECT pg_temp.refused($$SELECT quota_sched.agent_ready('pf_one_more', 'pf_queue', 'gpu', 1)$$);
SELECT name FROM quota_sched.agent_ready('pf_many_7', 'pf_queue', 'gpu', 2);
RESET ROLE;
SELECT count(*) FROM quota_sched.agent WHERE login = 'regress_pf_host_b';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'pf\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'pf\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'pf\_%';
DROP ROLE regress_pf_host_a, regress_pf_host_b, regress_pf_ops;
