-- claim() (scheduling.md 5.2): an agent takes SCHEDULED unclaimed jobs of a queue,
-- of a capacity unit (null: any), oldest scheduled_at first then lowest id,
-- up to max_jobs, passing over a job that would take the total beyond
-- max_instances; each becomes STARTING, held by the agent until
-- lease_until = now() + lease.  Bad arguments are 22023 and change nothing.
-- Jobs are made SCHEDULED by run_pass() as the superuser; job ids and times
-- are never printed.

\i test/regress/include/helpers.sql

CREATE ROLE regress_acl_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_acl_agent', NULL);

-- The share may use one ml.g5.xlarge at first, so that a 2-instance job
-- submitted first is dispatched in a later pass than a 1-instance job
-- submitted after it.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('acl_env', '{"ml.g5.xlarge": 10, "ml.p4d.24xlarge": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('acl_queue', 'acl_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('acl_queue', 'acl_share', '{"ml.g5.xlarge": 1, "ml.p4d.24xlarge": 4}', 'RESERVE');

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('acl_a', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('acl_b', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 1);

-- Pass 1 dispatches acl_b only.
WITH p AS (SELECT * FROM quota_sched.run_pass('acl_queue'))
SELECT j.name, p.action, p.reason FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;

-- Pass 2, after the limit is raised, dispatches acl_a and the later jobs,
-- all with the same scheduled_at, later than acl_b's.
UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": 10, "ml.p4d.24xlarge": 4}'
 WHERE job_queue = 'acl_queue' AND name = 'acl_share';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('acl_c', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 1),
       ('acl_d', 'acl_queue', 'acl_share', 'ml.p4d.24xlarge', 1),
       ('acl_e', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 2),
       ('acl_f', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 1),
       ('acl_g', 'acl_queue', 'acl_share', 'ml.p4d.24xlarge', 2),
       ('acl_h', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 1),
       ('acl_i', 'acl_queue', 'acl_share', 'ml.g5.xlarge', 2);
WITH p AS (SELECT * FROM quota_sched.run_pass('acl_queue'))
SELECT j.name, p.action, p.reason FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;

-- The claim order: acl_b (scheduled first), then the rest by id.
SELECT name, capacity_unit, instance_count, state, agent,
       scheduled_at = (SELECT min(scheduled_at) FROM quota_sched.job WHERE job_queue = 'acl_queue') AS first_pass
  FROM quota_sched.job WHERE job_queue = 'acl_queue' ORDER BY scheduled_at, id;

------------------------------------------------------------------------
-- Defaults: one job, of any unit, for 60 seconds.  acl_b comes before
-- acl_a, whose id is lower but which was scheduled later.
------------------------------------------------------------------------
SELECT name, state, agent, lease_until = now() + interval '60 seconds' AS lease_60s
  FROM quota_sched.claim('acl_agent_1', 'acl_queue') ORDER BY scheduled_at, id;

-- max_jobs 2 and a lease of 5 minutes, as a role with quota_sched_agent.
SET ROLE regress_acl_agent;
SELECT name, state, agent, lease_until = now() + interval '5 minutes' AS lease_5min
  FROM quota_sched.claim('acl_agent_1', 'acl_queue', NULL, 2, '5 minutes') ORDER BY scheduled_at, id;
RESET ROLE;

-- One unit only: both ml.p4d.24xlarge jobs, not the ml.g5.xlarge ones
-- scheduled in the same pass with lower ids.
SELECT name, capacity_unit, state, agent
  FROM quota_sched.claim('acl_agent_2', 'acl_queue', 'ml.p4d.24xlarge', 10) ORDER BY scheduled_at, id;

------------------------------------------------------------------------
-- Bad arguments: 22023, and nothing changes.
------------------------------------------------------------------------
CREATE TEMP TABLE acl_before AS
SELECT (SELECT count(*) FROM quota_sched.job WHERE job_queue = 'acl_queue' AND state = 'SCHEDULED') AS scheduled,
       (SELECT count(*) FROM quota_sched.job WHERE job_queue = 'acl_queue' AND state = 'STARTING') AS starting,
       (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
         WHERE j.job_queue = 'acl_queue') AS events,
       (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
         WHERE job_queue = 'acl_queue') AS rows;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$SELECT quota_sched.claim(NULL, 'acl_queue')$$),
	($$SELECT quota_sched.claim('', 'acl_queue')$$),
	($$SELECT quota_sched.claim('acl_agent_3', NULL)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 0)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, -1)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, NULL)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 1, '0')$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 1, '-10 seconds')$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 1, NULL)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 1, '60 seconds', 0)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 1, '60 seconds', -2)$$),
	($$SELECT quota_sched.claim('acl_agent_3', 'acl_no_such_queue')$$)
  ) AS v(stmt);
SELECT b.scheduled = n.scheduled AS same_scheduled, b.starting = n.starting AS same_starting,
       b.events = n.events AS same_events, b.rows = n.rows AS same_rows
  FROM acl_before b,
       (SELECT (SELECT count(*) FROM quota_sched.job WHERE job_queue = 'acl_queue' AND state = 'SCHEDULED') AS scheduled,
               (SELECT count(*) FROM quota_sched.job WHERE job_queue = 'acl_queue' AND state = 'STARTING') AS starting,
               (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
                 WHERE j.job_queue = 'acl_queue') AS events,
               (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
                 WHERE job_queue = 'acl_queue') AS rows) n;

------------------------------------------------------------------------
-- max_instances: left are acl_e (2), acl_f (1), acl_h (1), acl_i (2).
-- With a bound of 1, acl_e would go beyond it and is passed over: acl_f.
------------------------------------------------------------------------
SELECT name, instance_count, state, agent
  FROM quota_sched.claim('acl_agent_3', 'acl_queue', 'ml.g5.xlarge', 10, '60 seconds', 1) ORDER BY scheduled_at, id;
-- With a bound of 3: acl_e (2) and acl_h (1); acl_i (2) would go beyond it.
SELECT name, instance_count, state, agent
  FROM quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 10, '60 seconds', 3) ORDER BY scheduled_at, id;
-- With a bound of 1, acl_i (2) alone is too big: nothing.
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 10, '60 seconds', 1);
-- No bound: acl_i.
SELECT name, instance_count, state, agent
  FROM quota_sched.claim('acl_agent_3', 'acl_queue', NULL, 10) ORDER BY scheduled_at, id;

------------------------------------------------------------------------
-- Claimed jobs are not claimed again, by the same agent or another.
------------------------------------------------------------------------
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_1', 'acl_queue', NULL, 100);
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_4', 'acl_queue', NULL, 100);

-- Every job is STARTING, held by the agent that claimed it, and its lease
-- is in the future.
SELECT name, state, agent, lease_until > now() AS leased, started_at IS NULL AS not_started
  FROM quota_sched.job WHERE job_queue = 'acl_queue' ORDER BY name;

-- Each claim appended one job_event row per job, with the agent as actor
-- and no pass.
SELECT j.name, e.from_state, e.to_state, e.actor, e.pass_id IS NULL AS no_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'acl_queue' AND e.to_state = 'STARTING' ORDER BY j.name, e.id;
SELECT j.name, count(*) AS events
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'acl_queue' GROUP BY j.name ORDER BY j.name;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- A session keeps the units the capacity maps name (src/jobs/job_store.c)
-- until the configuration changes: a unit taken out of every map, which
-- no job holds, is refused at the next claim of the same session, and one
-- put back is known again.
------------------------------------------------------------------------
UPDATE quota_sched.service_environment SET capacity_limits = capacity_limits || '{"acl_tmp": 1}'
 WHERE name = 'acl_env';
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_5', 'acl_queue', 'acl_tmp');
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_5', 'acl_queue', 'acl_tmp');
UPDATE quota_sched.service_environment SET capacity_limits = capacity_limits - 'acl_tmp'
 WHERE name = 'acl_env';
SELECT pg_temp.refused($$SELECT quota_sched.claim('acl_agent_5', 'acl_queue', 'acl_tmp')$$);
UPDATE quota_sched.quota_share SET capacity_limits = capacity_limits || '{"acl_tmp": 1}'
 WHERE job_queue = 'acl_queue' AND name = 'acl_share';
SELECT count(*) AS claimed FROM quota_sched.claim('acl_agent_5', 'acl_queue', 'acl_tmp');
UPDATE quota_sched.quota_share SET capacity_limits = capacity_limits - 'acl_tmp'
 WHERE job_queue = 'acl_queue' AND name = 'acl_share';
SELECT pg_temp.refused($$SELECT quota_sched.claim('acl_agent_5', 'acl_queue', 'acl_tmp')$$);

------------------------------------------------------------------------
-- Clean up: end the jobs with the extension's triggers disabled, then
-- delete the configuration, which takes the jobs with it.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'acl_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'acl_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'acl_env';
DROP TABLE acl_before;
DROP ROLE regress_acl_agent;
