-- run_pass (scheduling.md 3, 7): a dry run returns the decisions a pass would make
-- and writes nothing; a pass that decides nothing writes nothing either (no
-- transaction id is even assigned); run_pass(NULL) runs every queue in turn;
-- an unknown queue is invalid_parameter_value (22023); only admins may run a
-- pass (42501 for the user and agent roles).
--
-- pg_temp.refused() shows the SQLSTATE and message of a statement, with the
-- job id in the message replaced by N.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pdr_env', '{"ml.g5.xlarge": 2}'), ('pdr_env2', '{"ml.g5.xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('pdr_queue', 'pdr_env'), ('pdr_queue2', 'pdr_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('pdr_queue', 'pdr_a', '{"ml.g5.xlarge": 2}', 'LEND'),
       ('pdr_queue2', 'pdr_b', '{"ml.g5.xlarge": 1}', 'LEND');

-- pdr_queue: room for two of the three small jobs; pdr_big needs more than
-- the environment has (a dry run must not even set its status_reason).
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_j1', 'pdr_queue', 'pdr_a', 'ml.g5.xlarge', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_j2', 'pdr_queue', 'pdr_a', 'ml.g5.xlarge', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_j3', 'pdr_queue', 'pdr_a', 'ml.g5.xlarge', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_big', 'pdr_queue', 'pdr_a', 'ml.g5.xlarge', 5);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_k1', 'pdr_queue2', 'pdr_b', 'ml.g5.xlarge', 1);

CREATE TEMP TABLE pdr_jobs_before AS
SELECT * FROM quota_sched.job WHERE job_queue LIKE 'pdr\_%';

------------------------------------------------------------------------
-- A dry run returns the decisions and writes nothing: no transaction id is
-- assigned, no notification is sent (psql would print it after COMMIT),
-- no job changes, no job_event or pass_log row.
------------------------------------------------------------------------
LISTEN quota_sched_dispatch;
LISTEN quota_sched_stop;
BEGIN;
SELECT p.n, j.name, p.action, p.quota_share, p.reason
  FROM quota_sched.run_pass('pdr_queue', true) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n)
  JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
SELECT txid_current_if_assigned() IS NULL AS no_transaction_id;
COMMIT;
UNLISTEN *;
SELECT count(*) AS jobs_changed
  FROM quota_sched.job j JOIN pdr_jobs_before b USING (id)
 WHERE to_jsonb(j) <> to_jsonb(b);
SELECT name, state, status_reason FROM quota_sched.job WHERE job_queue = 'pdr_queue' ORDER BY id;
SELECT count(*) AS job_events
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.job_queue LIKE 'pdr\_%';
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue LIKE 'pdr\_%';

------------------------------------------------------------------------
-- The real pass makes exactly the decisions the dry run returned.
------------------------------------------------------------------------
CREATE TEMP TABLE pdr_dry AS
SELECT * FROM quota_sched.run_pass('pdr_queue', dry_run => true) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
CREATE TEMP TABLE pdr_real AS
SELECT * FROM quota_sched.run_pass('pdr_queue', dry_run => false) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
SELECT p.n, j.name, p.action, p.quota_share, p.reason
  FROM pdr_real p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY p.n;
SELECT (SELECT array_agg(row(job_id, action, quota_share, reason) ORDER BY n) FROM pdr_dry) =
       (SELECT array_agg(row(job_id, action, quota_share, reason) ORDER BY n) FROM pdr_real)
       AS dry_run_same_decisions;
-- ... and writes them, with the misconfiguration reason of pdr_big.
SELECT name, state, status_reason FROM quota_sched.job WHERE job_queue = 'pdr_queue' ORDER BY id;
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue = 'pdr_queue';

------------------------------------------------------------------------
-- A pass that decides nothing (pdr_j3 still has no room; pdr_big's reason
-- is already set) writes nothing: no transaction id, no pass_log row.
------------------------------------------------------------------------
CREATE TEMP TABLE pdr_jobs_idle AS
SELECT * FROM quota_sched.job WHERE job_queue LIKE 'pdr\_%';
BEGIN;
SELECT count(*) AS decisions FROM quota_sched.run_pass('pdr_queue');
SELECT txid_current_if_assigned() IS NULL AS no_transaction_id;
COMMIT;
-- Also a dry run that does decide something, and run_pass over a queue
-- with nothing to do, in one transaction.
BEGIN;
SELECT count(*) AS decisions FROM quota_sched.run_pass('pdr_queue2', true);
SELECT count(*) AS decisions FROM quota_sched.run_pass('pdr_queue');
SELECT txid_current_if_assigned() IS NULL AS no_transaction_id;
COMMIT;
SELECT count(*) AS jobs_changed
  FROM quota_sched.job j JOIN pdr_jobs_idle b USING (id)
 WHERE to_jsonb(j) <> to_jsonb(b);
SELECT count(*) AS pass_log_rows FROM quota_sched.pass_log WHERE job_queue LIKE 'pdr\_%';

------------------------------------------------------------------------
-- run_pass(NULL) runs the pass of every queue in turn: pdr_queue (pdr_j1
-- failed, so pdr_j3 gets its instance), then pdr_queue2; one pass_log row
-- per queue, and each job_event row carries the id of its own queue's pass.
------------------------------------------------------------------------
SELECT name, state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'pdr_j1'));
CREATE TEMP TABLE pdr_all AS
SELECT * FROM quota_sched.run_pass(NULL) WITH ORDINALITY AS p(job_id, action, quota_share, reason, n);
SELECT j.job_queue, j.name, p.action, p.quota_share, p.reason
  FROM pdr_all p JOIN quota_sched.job j ON j.id = p.job_id
 WHERE j.job_queue LIKE 'pdr\_%' ORDER BY j.job_queue, p.n;
SELECT job_queue, count(*) AS passes, sum(dispatched) AS dispatched
  FROM quota_sched.pass_log WHERE job_queue LIKE 'pdr\_%' GROUP BY job_queue ORDER BY job_queue;
SELECT j.name, e.from_state, e.to_state, e.actor,
       e.pass_id = (SELECT max(id) FROM quota_sched.pass_log l WHERE l.job_queue = j.job_queue)
       AS pass_id_is_its_queue_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name IN ('pdr_j3', 'pdr_k1') AND e.pass_id IS NOT NULL ORDER BY j.name;

------------------------------------------------------------------------
-- Unknown queue: 22023, with or without dry_run.
------------------------------------------------------------------------
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_no_such_queue')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_no_such_queue', true)$$);

------------------------------------------------------------------------
-- Only admins may run a pass.  pdr_j2 fails, so pdr_j4 could run: the
-- refused calls must not dispatch it, the admin's call does.
------------------------------------------------------------------------
CREATE ROLE regress_pdr_user NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_pdr_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_pdr_agent', NULL);
CREATE ROLE regress_pdr_admin NOLOGIN IN ROLE quota_sched_admin;
SELECT name, state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'pdr_j2'));
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pdr_j4', 'pdr_queue', 'pdr_a', 'ml.g5.xlarge', 1);
SET ROLE regress_pdr_user;
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_queue')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_queue', true)$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass()$$);
RESET ROLE;
SET ROLE regress_pdr_agent;
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_queue')$$);
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass()$$);
RESET ROLE;
SELECT name, state FROM quota_sched.job WHERE name = 'pdr_j4';
SET ROLE regress_pdr_admin;
SELECT pg_temp.refused($$SELECT * FROM quota_sched.run_pass('pdr_queue')$$);
RESET ROLE;
SELECT j.name, e.from_state, e.to_state,
       CASE WHEN e.actor = current_user THEN 'the submitter' ELSE e.actor END AS actor,
       e.pass_id = (SELECT max(id) FROM quota_sched.pass_log WHERE job_queue = 'pdr_queue') AS pass_id_is_the_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'pdr_j4' ORDER BY e.id;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'pdr\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'pdr\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'pdr\_%';
DROP ROLE regress_pdr_user, regress_pdr_agent, regress_pdr_admin;
