-- explain(), queue_snapshot() and the share_usage view (scheduling.md 7, 3.1, 3.7).
-- One queue, one capacity unit per situation:
--   ml.g5.xlarge      uex_reserve (RESERVE, 2) is full: OWN_CAPACITY_FULL
--   ml.g5.2xlarge     uex_borrow (LEND_AND_BORROW 100%, 1) uses its allowed 2:
--                     BORROW_LIMIT
--   ml.p4d.24xlarge   uex_greedy (LEND_AND_BORROW unlimited, 1) must borrow,
--                     but only RESERVE capacity is idle: NO_BORROWABLE_SUPPLY
--   ml.p5.48xlarge    the shares' capacities (2 + 2) exceed the
--                     environment's 2, which uex_lend uses: ENVIRONMENT_FULL
--   ml.trn1.32xlarge  jobs larger than the share or the environment:
--                     MISCONFIGURATION
-- Job ids and times are never printed: explain() output loses its job_id.

\i test/regress/include/helpers.sql

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint
LANGUAGE sql AS $$ SELECT id FROM quota_sched.job WHERE name = job_name $$;

CREATE ROLE regress_uex_alice NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_uex_bob NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_uex_agent NOLOGIN IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_uex_agent', NULL);
CREATE ROLE regress_uex_admin NOLOGIN IN ROLE quota_sched_admin;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('uex_env', '{"ml.g5.xlarge": 10, "ml.g5.2xlarge": 10, "ml.p4d.24xlarge": 3,
                     "ml.p5.48xlarge": 2, "ml.trn1.32xlarge": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('uex_queue', 'uex_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit) VALUES
	('uex_queue', 'uex_reserve', '{"ml.g5.xlarge": 2, "ml.p4d.24xlarge": 2, "ml.p5.48xlarge": 2, "ml.trn1.32xlarge": 2}', 'RESERVE', -1),
	('uex_queue', 'uex_borrow', '{"ml.g5.2xlarge": 1}', 'LEND_AND_BORROW', 100),
	('uex_queue', 'uex_greedy', '{"ml.p4d.24xlarge": 1}', 'LEND_AND_BORROW', -1),
	('uex_queue', 'uex_lend', '{"ml.g5.2xlarge": 4, "ml.p5.48xlarge": 2}', 'LEND', -1);

------------------------------------------------------------------------
-- The jobs that hold capacity: dispatched by one pass; all but
-- uex_r_scheduled are then claimed and RUNNING.
------------------------------------------------------------------------
SET ROLE regress_uex_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('uex_r_running', 'uex_queue', 'uex_reserve', 'ml.g5.xlarge'),
	('uex_r_scheduled', 'uex_queue', 'uex_reserve', 'ml.g5.xlarge');
RESET ROLE;
SET ROLE regress_uex_bob;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('uex_b_running_1', 'uex_queue', 'uex_borrow', 'ml.g5.2xlarge'),
	('uex_b_running_2', 'uex_queue', 'uex_borrow', 'ml.g5.2xlarge'),
	('uex_g_running', 'uex_queue', 'uex_greedy', 'ml.p4d.24xlarge'),
	('uex_l_running_1', 'uex_queue', 'uex_lend', 'ml.p5.48xlarge'),
	('uex_l_running_2', 'uex_queue', 'uex_lend', 'ml.p5.48xlarge');
RESET ROLE;
WITH p AS (SELECT * FROM quota_sched.run_pass('uex_queue'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
SELECT name, state FROM quota_sched.claim('uex_agent', 'uex_queue', 'ml.g5.xlarge', 1);
SELECT name, state FROM quota_sched.claim('uex_agent', 'uex_queue', 'ml.g5.2xlarge', 10) ORDER BY name;
SELECT name, state FROM quota_sched.claim('uex_agent', 'uex_queue', 'ml.p4d.24xlarge', 10) ORDER BY name;
SELECT name, state FROM quota_sched.claim('uex_agent', 'uex_queue', 'ml.p5.48xlarge', 10) ORDER BY name;
SELECT r.name, r.state
  FROM quota_sched.job j, quota_sched.report(j.id, 'uex_agent', 'RUNNING') r
 WHERE j.job_queue = 'uex_queue' AND j.state = 'STARTING' ORDER BY r.name;

------------------------------------------------------------------------
-- The waiting jobs, submitted in three transactions: uex_g_waiting first,
-- then uex_reserve's five (the one of priority 5 after the one of
-- priority 1), then uex_b_waiting.  The pass dispatches none of them and
-- marks the two misconfigured ones.
------------------------------------------------------------------------
SET ROLE regress_uex_bob;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('uex_g_waiting', 'uex_queue', 'uex_greedy', 'ml.p4d.24xlarge');
RESET ROLE;
SET ROLE regress_uex_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, priority) VALUES
	('uex_r_low', 'uex_queue', 'uex_reserve', 'ml.g5.xlarge', 1, 1),
	('uex_r_high', 'uex_queue', 'uex_reserve', 'ml.g5.xlarge', 1, 5),
	('uex_r_env', 'uex_queue', 'uex_reserve', 'ml.p5.48xlarge', 1, 0),
	('uex_r_over_quota', 'uex_queue', 'uex_reserve', 'ml.trn1.32xlarge', 3, 0),
	('uex_r_over_env', 'uex_queue', 'uex_reserve', 'ml.trn1.32xlarge', 5, 0);
RESET ROLE;
SET ROLE regress_uex_bob;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('uex_b_waiting', 'uex_queue', 'uex_borrow', 'ml.g5.2xlarge');
RESET ROLE;
SELECT count(*) AS decisions FROM quota_sched.run_pass('uex_queue');
SELECT name, quota_share, state, status_reason
  FROM quota_sched.job WHERE job_queue = 'uex_queue' ORDER BY quota_share, name;

------------------------------------------------------------------------
-- explain, as the owner (alice) or an admin.  position_in_share counts
-- from 1 at the head of the share (priority DESC, queued_at, id);
-- position_in_queue follows the dispatch order.
------------------------------------------------------------------------
-- The keys, for one job.
SET ROLE regress_uex_alice;
SELECT quota_sched.explain(id) - 'job_id' AS explain
  FROM quota_sched.job WHERE name = 'uex_r_high';
SELECT name, e->>'state' AS state, e->'position_in_share' AS in_share, e->'position_in_queue' AS in_queue,
       e->>'blocked_by' AS blocked_by
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.job_queue = 'uex_queue' ORDER BY j.quota_share, e->'position_in_share', j.name;
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT name, e->>'state' AS state, e->'position_in_share' AS in_share, e->'position_in_queue' AS in_queue,
       e->>'blocked_by' AS blocked_by
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.job_queue = 'uex_queue' AND j.owner = 'regress_uex_bob'
 ORDER BY j.quota_share, e->'position_in_share', j.name;
-- The detail sentences.
SELECT name, e->>'blocked_by' AS blocked_by,
       regexp_replace(e->>'detail', '[0-9]+ s ago', 'N s ago') AS detail
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.name IN ('uex_r_high', 'uex_b_waiting', 'uex_g_waiting', 'uex_r_env', 'uex_r_over_quota',
                  'uex_r_over_env', 'uex_r_scheduled', 'uex_r_running')
 ORDER BY j.name;
RESET ROLE;

-- The numbers behind each capacity code, of the state checked (in_future:
-- once pending stops complete and promises hold): the share's (usage
-- without the job; allowed null: unbounded), the environment's E(u) and
-- usage, and for NO_BORROWABLE_SUPPLY the supply: uex_greedy's 1 + 1 would
-- borrow 1, and no share with capacity of the unit lends (uex_reserve is
-- RESERVE).
SET ROLE regress_uex_alice;
SELECT name, e->>'blocked_by' AS blocked_by, e->>'capacity_unit' AS unit, e->'instance_count' AS count,
       e->'in_future' AS in_future, e->'share' AS share, e->'environment' AS environment
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.name IN ('uex_r_high', 'uex_r_env') ORDER BY j.name;
RESET ROLE;
SET ROLE regress_uex_bob;
SELECT name, e->>'blocked_by' AS blocked_by, e->'share' AS share, e->'environment' AS environment,
       e->'supply' AS supply
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.name IN ('uex_b_waiting', 'uex_g_waiting') ORDER BY j.name;
RESET ROLE;
-- Codes that are no capacity check have none of those keys; a SCHEDULED
-- job of a queue and unit no agent registered for says so.
SET ROLE regress_uex_alice;
SELECT name, e->>'blocked_by' AS blocked_by, e ?| array['share', 'environment', 'supply'] AS capacity_keys,
       e->'agents' AS agents, e->'waiting_seconds' >= '0' AS waited,
       (e->>'scheduled_at')::timestamptz = j.scheduled_at AS scheduled_at
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.name IN ('uex_r_over_env', 'uex_r_scheduled', 'uex_r_running') ORDER BY j.name;
RESET ROLE;

-- Another user's job: 42501; no such job: P0002.
SELECT id AS uex_b_waiting FROM quota_sched.job WHERE name = 'uex_b_waiting' \gset
SELECT id AS uex_r_high FROM quota_sched.job WHERE name = 'uex_r_high' \gset
SET ROLE regress_uex_alice;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :uex_b_waiting)) AS outcome;
SELECT pg_temp.refused('SELECT quota_sched.explain(-1)') AS outcome;
RESET ROLE;
SET ROLE regress_uex_bob;
SELECT pg_temp.refused(format('SELECT quota_sched.explain(%s)', :uex_r_high)) AS outcome;
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT pg_temp.refused('SELECT quota_sched.explain(-1)') AS outcome;
RESET ROLE;

------------------------------------------------------------------------
-- queue_snapshot: the front of the queue in dispatch order, then the head
-- of each share not in the front.
------------------------------------------------------------------------
SELECT s.queue_position, j.name, s.quota_share, s.capacity_unit, s.instance_count, s.priority,
       s.queued_at = j.queued_at AS same_queued_at, s.name = j.name AS named,
       (s.capacity_unit, s.instance_count) = (j.capacity_unit, j.instance_count) AS same_unit_and_size
  FROM quota_sched.queue_snapshot('uex_queue') s JOIN quota_sched.job j ON j.id = s.job_id
 ORDER BY s.queue_position NULLS LAST, j.name;
SELECT s.queue_position, j.name, s.quota_share, s.priority
  FROM quota_sched.queue_snapshot('uex_queue', 3) s JOIN quota_sched.job j ON j.id = s.job_id
 ORDER BY s.queue_position NULLS LAST, j.name;
SELECT s.queue_position, j.name, s.quota_share, s.priority
  FROM quota_sched.queue_snapshot('uex_queue', 1) s JOIN quota_sched.job j ON j.id = s.job_id
 ORDER BY s.queue_position NULLS LAST, j.name;
SELECT stmt, pg_temp.refused(stmt) AS outcome
  FROM (VALUES
	($$SELECT quota_sched.queue_snapshot('uex_queue', 0)$$),
	($$SELECT quota_sched.queue_snapshot('uex_queue', -1)$$),
	($$SELECT quota_sched.queue_snapshot(NULL)$$)
  ) AS v(stmt);
-- Readable by all three roles, with every job in it, each with its unit
-- and size; the name only of the jobs the caller may see in
-- quota_sched.job: alice her own (no share here has a team), bob his,
-- agents and admins every job.
SET ROLE regress_uex_alice;
SELECT count(*) AS jobs, count(capacity_unit) AS with_unit, count(instance_count) AS with_size,
       string_agg(name, ', ' ORDER BY name) AS named
  FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
SET ROLE regress_uex_bob;
SELECT count(*) AS jobs, count(name) AS named,
       bool_and(name IS NULL OR name NOT LIKE 'uex\_r\_%') AS none_of_alices
  FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
SET ROLE regress_uex_agent;
SELECT count(*) AS jobs, count(name) AS named FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT count(*) AS jobs, count(name) AS named FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
-- row_security off in the caller's session changes nothing: the names are
-- read with it on.
SET ROLE regress_uex_alice;
SET row_security = off;
SELECT count(*) AS jobs, count(name) AS named FROM quota_sched.queue_snapshot('uex_queue');
RESET row_security;
RESET ROLE;

------------------------------------------------------------------------
-- share_usage, per share and unit: its own capacity, what it may use
-- (null: unbounded), what it holds, borrows and leaves idle, and its
-- RUNNABLE and active jobs, counted over all jobs whoever reads.
------------------------------------------------------------------------
SELECT quota_share, capacity_unit, max_capacity, allowed, in_use, borrowed, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'uex_queue' ORDER BY quota_share, capacity_unit;
CREATE TEMP TABLE uex_usage AS
SELECT * FROM quota_sched.share_usage WHERE job_queue = 'uex_queue';
GRANT SELECT ON uex_usage TO regress_uex_alice, regress_uex_agent, regress_uex_admin;
SET ROLE regress_uex_alice;
SELECT count(*) AS rows, count(*) = (SELECT count(*) FROM uex_usage) AS all_rows,
       NOT EXISTS (SELECT * FROM quota_sched.share_usage WHERE job_queue = 'uex_queue'
                   EXCEPT SELECT * FROM uex_usage) AS same_counts
  FROM quota_sched.share_usage WHERE job_queue = 'uex_queue';
RESET ROLE;
SET ROLE regress_uex_agent;
SELECT count(*) AS rows, count(*) = (SELECT count(*) FROM uex_usage) AS all_rows,
       NOT EXISTS (SELECT * FROM quota_sched.share_usage WHERE job_queue = 'uex_queue'
                   EXCEPT SELECT * FROM uex_usage) AS same_counts
  FROM quota_sched.share_usage WHERE job_queue = 'uex_queue';
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT count(*) AS rows, count(*) = (SELECT count(*) FROM uex_usage) AS all_rows,
       NOT EXISTS (SELECT * FROM quota_sched.share_usage WHERE job_queue = 'uex_queue'
                   EXCEPT SELECT * FROM uex_usage) AS same_counts
  FROM quota_sched.share_usage WHERE job_queue = 'uex_queue';
RESET ROLE;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

------------------------------------------------------------------------
-- The numbers behind NO_BORROWABLE_SUPPLY with lenders, and the agents
-- behind WAITING_FOR_AGENT, in a second queue.  gpu: unassigned 1;
-- uex_w_borrow (LEND_AND_BORROW, 1) holds 1 and its uex_w_big needs 4,
-- borrowing 4; uex_w_lend (LEND, 2) has 2 idle, of which its waiting job
-- wants 1; uex_w_quarter (LEND_AND_BORROW, 4, lend_limit 25) holds 2 (a
-- SCHEDULED job), 2 idle of which it lends at most 1; uex_w_keep
-- (RESERVE) lends nothing, and the tpu shares have no gpu: the supply is
-- 3.  tpu: 22 lenders of 1 each (lend_limit 50), 20 listed.
------------------------------------------------------------------------
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('uex_env2', '{"gpu": 9, "cpu": 2, "tpu": 45}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('uex_fleet', 'uex_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit, lend_limit) VALUES
	('uex_fleet', 'uex_w_borrow', '{"gpu": 1, "cpu": 1, "tpu": 1}', 'LEND_AND_BORROW', -1, -1),
	('uex_fleet', 'uex_w_lend', '{"gpu": 2}', 'LEND', -1, -1),
	('uex_fleet', 'uex_w_quarter', '{"gpu": 4}', 'LEND_AND_BORROW', -1, 25),
	('uex_fleet', 'uex_w_keep', '{"gpu": 1}', 'RESERVE', -1, -1);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, lend_limit)
SELECT 'uex_fleet', format('uex_w_t%s', lpad(g::text, 2, '0')), '{"tpu": 2}', 'LEND', 50
  FROM generate_series(1, 22) g;
SET ROLE regress_uex_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count) VALUES
	('uex_w_own', 'uex_fleet', 'uex_w_borrow', 'gpu', 1),
	('uex_w_pair', 'uex_fleet', 'uex_w_quarter', 'gpu', 2),
	('uex_w_cpu', 'uex_fleet', 'uex_w_borrow', 'cpu', 1);
RESET ROLE;
WITH p AS (SELECT * FROM quota_sched.run_pass('uex_fleet'))
SELECT j.name, p.action FROM p JOIN quota_sched.job j ON j.id = p.job_id ORDER BY j.name;
-- Submitted after the last pass: uex_w_lend's job waits too.
SET ROLE regress_uex_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count) VALUES
	('uex_w_wants', 'uex_fleet', 'uex_w_lend', 'gpu', 1),
	('uex_w_big', 'uex_fleet', 'uex_w_borrow', 'gpu', 4),
	('uex_w_tpu', 'uex_fleet', 'uex_w_borrow', 'tpu', 24);
SELECT e->>'blocked_by' AS blocked_by, e->'share' AS share, (e->'supply') - 'lenders' AS supply,
       e->>'detail' AS detail
  FROM quota_sched.explain(pg_temp.id('uex_w_big')) e;
SELECT l.*
  FROM quota_sched.explain(pg_temp.id('uex_w_big')) e,
	   jsonb_to_recordset(e->'supply'->'lenders')
	     AS l(quota_share text, capacity int, usage int, idle int, lendable_idle int, wanted int, lends int);
SELECT e->>'blocked_by' AS blocked_by, (e->'supply') - 'lenders' AS supply,
       jsonb_array_length(e->'supply'->'lenders') AS listed,
       e->'supply'->'lenders'->0 AS first, e->'supply'->'lenders'->19 AS last
  FROM quota_sched.explain(pg_temp.id('uex_w_tpu')) e;
RESET ROLE;

-- WAITING_FOR_AGENT: agents of uex_fleet's gpu that can take uex_w_pair
-- (2 instances): uex_ag_any (no bound, holds uex_w_own, which it claims)
-- and uex_ag_eight; not uex_ag_one (1 instance), uex_ag_drained, uex_ag_gone
-- (not seen for 2 minutes), nor uex_ag_cpu (another unit).
SET ROLE regress_uex_agent;
SELECT count(*) AS registered FROM (VALUES ('uex_ag_any', 'gpu', NULL), ('uex_ag_eight', 'gpu', 8),
	('uex_ag_one', 'gpu', 1), ('uex_ag_drained', 'gpu', NULL), ('uex_ag_gone', 'gpu', NULL),
	('uex_ag_cpu', 'cpu', NULL)) AS v(agent, unit, instances),
	quota_sched.agent_ready(v.agent, 'uex_fleet', v.unit, v.instances);
SELECT name, state FROM quota_sched.claim('uex_ag_any', 'uex_fleet', 'gpu', 1);
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT name, state FROM quota_sched.drain_agent('uex_ag_drained');
RESET ROLE;
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'uex_ag_gone';
-- The owner sees the agents' names; an admin their logins too.
SET ROLE regress_uex_alice;
SELECT e->>'blocked_by' AS blocked_by, e->'agents' AS agents,
       regexp_replace(e->>'detail', '[0-9]+ s ago', 'N s ago') AS detail
  FROM quota_sched.explain(pg_temp.id('uex_w_pair')) e;
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT e->'agents'->'list' AS list FROM quota_sched.explain(pg_temp.id('uex_w_pair')) e;
RESET ROLE;
-- None can take it: uex_ag_any and uex_ag_eight drained too.
SET ROLE regress_uex_admin;
SELECT d.name, d.state FROM unnest(array['uex_ag_any', 'uex_ag_eight']) AS a(name),
	quota_sched.drain_agent(a.name) d ORDER BY d.name;
RESET ROLE;
SET ROLE regress_uex_alice;
SELECT e->'agents' AS agents, regexp_replace(e->>'detail', '[0-9]+ s ago', 'N s ago') AS detail
  FROM quota_sched.explain(pg_temp.id('uex_w_pair')) e;
RESET ROLE;
-- At most 20 agents listed, by name, and how many more: uex_ag_cpu and 22
-- others can take uex_w_cpu.
SET ROLE regress_uex_agent;
SELECT count(*) AS registered
  FROM generate_series(1, 22) g,
	   quota_sched.agent_ready(format('uex_ag_c%s', lpad(g::text, 2, '0')), 'uex_fleet', 'cpu');
RESET ROLE;
SET ROLE regress_uex_alice;
SELECT (e->'agents') - 'list' AS agents, jsonb_array_length(e->'agents'->'list') AS listed,
       e->'agents'->'list'->0->>'agent' AS first, e->'agents'->'list'->19->>'agent' AS last,
       regexp_replace(e->>'detail', '[0-9]+ s ago', 'N s ago') AS detail
  FROM quota_sched.explain(pg_temp.id('uex_w_cpu')) e;
RESET ROLE;

------------------------------------------------------------------------
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue IN ('uex_queue', 'uex_fleet');
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name IN ('uex_queue', 'uex_fleet');
DELETE FROM quota_sched.service_environment WHERE name IN ('uex_env', 'uex_env2');
DROP TABLE uex_usage;
DROP ROLE regress_uex_alice, regress_uex_bob, regress_uex_agent, regress_uex_admin;
