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

\i sql/include/helpers.sql

CREATE ROLE regress_uex_alice NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_uex_bob NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_uex_agent NOLOGIN IN ROLE quota_sched_agent;
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
SELECT name, e->>'blocked_by' AS blocked_by, e->>'detail' AS detail
  FROM quota_sched.job j, quota_sched.explain(j.id) e
 WHERE j.name IN ('uex_r_high', 'uex_b_waiting', 'uex_g_waiting', 'uex_r_env', 'uex_r_over_quota',
                  'uex_r_over_env', 'uex_r_scheduled', 'uex_r_running')
 ORDER BY j.name;
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
SELECT s.queue_position, j.name, s.quota_share, s.priority, s.queued_at = j.queued_at AS same_queued_at
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
-- Readable by all three roles, with every job in it.
SET ROLE regress_uex_alice;
SELECT count(*) AS jobs FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
SET ROLE regress_uex_agent;
SELECT count(*) AS jobs FROM quota_sched.queue_snapshot('uex_queue');
RESET ROLE;
SET ROLE regress_uex_admin;
SELECT count(*) AS jobs FROM quota_sched.queue_snapshot('uex_queue');
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
-- Clean up.
------------------------------------------------------------------------
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'uex_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'uex_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'uex_env';
DROP TABLE uex_usage;
DROP ROLE regress_uex_alice, regress_uex_bob, regress_uex_agent, regress_uex_admin;
