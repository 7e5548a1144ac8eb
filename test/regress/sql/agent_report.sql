-- report() (scheduling.md 5.2, 3.8, 4): an agent reports RUNNING, SUCCEEDED, FAILED
-- or STOPPED for a job it holds.  FAILED with attempts left sends the job
-- back to RUNNABLE (failed_attempts + 1, queued_at kept, agent cleared);
-- repeating the job's current state by the same agent is a no-op returning
-- the job; a report for a job the agent does not hold or an illegal
-- transition is 55000, no such job P0002, a bad argument 22023, and an
-- error changes nothing.  Every change of state appends one job_event row
-- whose actor is the agent.  Job ids and times are never printed.

\i test/regress/include/helpers.sql

-- pg_temp.arp_facts(): every column of the file's jobs and the number of
-- their job_event rows, to tell that an error changed nothing.
CREATE FUNCTION pg_temp.arp_facts() RETURNS text LANGUAGE sql AS $$
	SELECT (SELECT string_agg(to_jsonb(j)::text, ',' ORDER BY id) FROM quota_sched.job j
			 WHERE job_queue = 'arp_queue')
		   || ' events: ' ||
		   (SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
			 WHERE j.job_queue = 'arp_queue')
$$;

CREATE ROLE regress_arp_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_arp_agent', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('arp_env', '{"ml.g5.xlarge": 10, "ml.p4d.24xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('arp_queue', 'arp_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('arp_queue', 'arp_share', '{"ml.g5.xlarge": 10, "ml.p4d.24xlarge": 1}', 'RESERVE');

INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('arp_ok', 'arp_queue', 'arp_share', 'ml.g5.xlarge');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, max_attempts) VALUES
	('arp_retry', 'arp_queue', 'arp_share', 'ml.g5.xlarge', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('arp_other', 'arp_queue', 'arp_share', 'ml.g5.xlarge');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('arp_unclaimed', 'arp_queue', 'arp_share', 'ml.p4d.24xlarge');

SELECT id AS arp_ok FROM quota_sched.job WHERE name = 'arp_ok' \gset
SELECT id AS arp_retry FROM quota_sched.job WHERE name = 'arp_retry' \gset
SELECT id AS arp_other FROM quota_sched.job WHERE name = 'arp_other' \gset
SELECT id AS arp_unclaimed FROM quota_sched.job WHERE name = 'arp_unclaimed' \gset
SELECT queued_at AS arp_retry_queued_at FROM quota_sched.job WHERE name = 'arp_retry' \gset

WITH p AS (SELECT * FROM quota_sched.run_pass('arp_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
-- The agent claims the three ml.g5.xlarge jobs and leaves arp_unclaimed
-- SCHEDULED.  It works as a role with quota_sched_agent, the login it
-- claims with and then reports with (agent_identity.sql).
SET ROLE regress_arp_agent;
SELECT name, state, agent
  FROM quota_sched.claim('arp_agent', 'arp_queue', 'ml.g5.xlarge', 10) ORDER BY name;

------------------------------------------------------------------------
-- RUNNING: STARTING -> RUNNING, started_at set.  Again: a no-op.
------------------------------------------------------------------------
SELECT name, state, agent, started_at IS NOT NULL AS started, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.report(:arp_ok, 'arp_agent', 'RUNNING');
SELECT started_at AS arp_ok_started_at FROM quota_sched.job WHERE id = :arp_ok \gset
SELECT pg_temp.arp_facts() AS arp_facts \gset
SELECT name, state, agent, started_at = :'arp_ok_started_at' AS same_started_at
  FROM quota_sched.report(:arp_ok, 'arp_agent', 'RUNNING');
SELECT pg_temp.arp_facts() = :'arp_facts' AS nothing_changed;

------------------------------------------------------------------------
-- SUCCEEDED: the job ends, keeps its agent, loses its lease; the reason
-- given is the status_reason.  Again: a no-op returning the job.
------------------------------------------------------------------------
SELECT name, state, agent, lease_until IS NULL AS no_lease, stopped_at IS NOT NULL AS stopped,
       status_reason
  FROM quota_sched.report(:arp_ok, 'arp_agent', 'SUCCEEDED', 'exit code 0');
SELECT pg_temp.arp_facts() AS arp_facts \gset
SELECT name, state, agent
  FROM quota_sched.report(:arp_ok, 'arp_agent', 'SUCCEEDED', 'exit code 0');
SELECT pg_temp.arp_facts() = :'arp_facts' AS nothing_changed;

------------------------------------------------------------------------
-- FAILED with max_attempts 2: back to RUNNABLE, failed_attempts 1,
-- queued_at kept, agent and lease cleared.
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.report(:arp_retry, 'arp_agent', 'RUNNING');
SELECT name, state, agent, lease_until IS NULL AS no_lease, failed_attempts, preemption_count,
       queued_at = :'arp_retry_queued_at' AS same_queued_at, status_reason
  FROM quota_sched.report(:arp_retry, 'arp_agent', 'FAILED', 'exit code 1');
-- FAILED again by the same agent, now that the job is RUNNABLE:
SELECT pg_temp.arp_facts() AS arp_facts \gset
-- The job's current state is RUNNABLE, not FAILED: repeating FAILED is no
-- repeat of it, and the agent no longer holds the job: 55000 (scheduling.md 5.2).
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'arp_agent', 'FAILED', 'exit code 1')$$,
	:arp_retry)) AS outcome;
SELECT pg_temp.arp_facts() = :'arp_facts' AS nothing_changed;
-- Nor are STOPPED, RUNNING or SUCCEEDED: 55000.
SELECT pg_temp.refused(format($$SELECT quota_sched.report(%s, 'arp_agent', %L)$$, :arp_retry, state)) AS outcome,
       state, pg_temp.arp_facts() = :'arp_facts' AS nothing_changed
  FROM unnest(ARRAY['STOPPED', 'RUNNING', 'SUCCEEDED']) AS state;

-- The pass dispatches it again; the agent claims it: the second attempt.
RESET ROLE;
WITH p AS (SELECT * FROM quota_sched.run_pass('arp_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SET ROLE regress_arp_agent;
SELECT name, state, agent, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.claim('arp_agent', 'arp_queue', 'ml.g5.xlarge', 10);
SELECT name, state, 1 + failed_attempts + preemption_count + lease_losses AS attempt
  FROM quota_sched.report(:arp_retry, 'arp_agent', 'RUNNING');
-- The second failure exhausts max_attempts: FAILED, agent kept.
SELECT name, state, agent, lease_until IS NULL AS no_lease, failed_attempts,
       queued_at = :'arp_retry_queued_at' AS same_queued_at, status_reason
  FROM quota_sched.report(:arp_retry, 'arp_agent', 'FAILED', 'exit code 2');
SELECT pg_temp.arp_facts() AS arp_facts \gset
SELECT name, state, agent, failed_attempts
  FROM quota_sched.report(:arp_retry, 'arp_agent', 'FAILED', 'exit code 2');
SELECT pg_temp.arp_facts() = :'arp_facts' AS nothing_changed;

------------------------------------------------------------------------
-- Errors, each changing nothing: arp_other is STARTING, held by
-- arp_agent, with no stop pending.
------------------------------------------------------------------------
SELECT pg_temp.arp_facts() AS arp_facts \gset
SELECT n, job, quote_nullable(agent) AS agent, quote_nullable(state) AS state,
       pg_temp.refused(format('SELECT quota_sched.report(%s, %L, %L)',
                              CASE job WHEN '(no such job)' THEN '-1' WHEN '(null)' THEN 'NULL'
                                   ELSE (SELECT id::text FROM quota_sched.job WHERE name = job) END,
                              agent, state)) AS outcome,
       pg_temp.arp_facts() = :'arp_facts' AS nothing_changed
  FROM (VALUES
	-- no stop to acknowledge
	(1, 'arp_other', 'arp_agent', 'STOPPED'),
	-- another agent
	(2, 'arp_other', 'arp_agent_2', 'RUNNING'),
	(3, 'arp_other', 'arp_agent_2', 'SUCCEEDED'),
	(4, 'arp_other', 'arp_agent_2', 'FAILED'),
	(5, 'arp_other', 'arp_agent_2', 'STOPPED'),
	-- a job that no agent holds, or that has ended
	(6, 'arp_unclaimed', 'arp_agent', 'RUNNING'),
	(7, 'arp_unclaimed', 'arp_agent', 'SUCCEEDED'),
	(8, 'arp_ok', 'arp_agent', 'RUNNING'),
	(9, 'arp_ok', 'arp_agent', 'FAILED'),
	(10, 'arp_retry', 'arp_agent', 'RUNNING'),
	(11, 'arp_retry', 'arp_agent', 'SUCCEEDED'),
	(12, 'arp_ok', 'arp_agent_2', 'SUCCEEDED'),
	-- no such job
	(13, '(no such job)', 'arp_agent', 'RUNNING'),
	-- bad arguments
	(14, 'arp_other', 'arp_agent', 'DONE'),
	(15, 'arp_other', 'arp_agent', 'STARTING'),
	(16, 'arp_other', 'arp_agent', 'running'),
	(17, 'arp_other', 'arp_agent', NULL),
	(18, 'arp_other', NULL, 'RUNNING'),
	(19, 'arp_other', '', 'RUNNING'),
	(20, '(null)', 'arp_agent', 'RUNNING')
  ) AS v(n, job, agent, state)
 ORDER BY n;
SELECT name, state, agent FROM quota_sched.job WHERE id = :arp_other;

-- The holder's report is taken: RUNNING, then FAILED with one attempt.
SELECT name, state, agent FROM quota_sched.report(:arp_other, 'arp_agent', 'RUNNING');
SELECT name, state, agent, failed_attempts, status_reason
  FROM quota_sched.report(:arp_other, 'arp_agent', 'FAILED');
RESET ROLE;

------------------------------------------------------------------------
-- The history: one row per change of state, the agent as actor of every
-- change it reported.
------------------------------------------------------------------------
SELECT j.name, e.from_state, e.to_state, e.reason,
       CASE WHEN e.actor = current_user THEN '(superuser)' ELSE e.actor END AS actor,
       e.pass_id IS NOT NULL AS by_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue = 'arp_queue' ORDER BY j.name, e.id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'arp_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'arp_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'arp_env';
DROP FUNCTION pg_temp.arp_facts();
DROP ROLE regress_arp_agent;
