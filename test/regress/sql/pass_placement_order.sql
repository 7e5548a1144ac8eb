-- The jobs with placement constraints of a placed unit are read apart from
-- the others (their skip rule's bound is their own, scheduling.md 3.13),
-- and the pass still tries a share's jobs in share order across both
-- (src/pass/pass_load.c, SplitNext): a share of 6 on four hosts of 4, and,
-- in share order, A (2), B (4 on two hosts: instances_per_host 2), C (3),
-- D (4 on two hosts), E (1), F (2, same_label rack).  In share order A and
-- B fill the share and the others wait; read one kind after the other, A,
-- C and E would have filled it.  Grown to 9, the share takes C (next in
-- share order) and not E; grown to 13, D and neither E nor F.

\i test/regress/include/helpers.sql

CREATE ROLE regress_ppo_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_ppo_host', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ppo_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('ppo_queue', 'ppo_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ppo_queue', 'ppo_s', '{"gpu": 6}', 'RESERVE');
SET ROLE regress_ppo_host;
SELECT count(*) FROM (
	SELECT quota_sched.agent_ready('h' || i, 'ppo_queue', 'gpu', 4,
								   jsonb_build_object('rack', 'r' || (i + 1) / 2))
	  FROM generate_series(1, 4) i) r;
RESET ROLE;

-- one statement: share order is priority, then id
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, same_label, priority)
VALUES ('A', 'ppo_queue', 'ppo_s', 'gpu', 2, NULL, NULL, 9),
	   ('B', 'ppo_queue', 'ppo_s', 'gpu', 4, 2, NULL, 8),
	   ('C', 'ppo_queue', 'ppo_s', 'gpu', 3, NULL, NULL, 7),
	   ('D', 'ppo_queue', 'ppo_s', 'gpu', 4, 2, NULL, 6),
	   ('E', 'ppo_queue', 'ppo_s', 'gpu', 1, NULL, NULL, 5),
	   ('F', 'ppo_queue', 'ppo_s', 'gpu', 2, NULL, 'rack', 4);
SELECT action, count(*) FROM pg_temp.pass('ppo_queue') GROUP BY 1 ORDER BY 1;
SELECT name, state, cardinality(part_agents) AS hosts
  FROM quota_sched.job WHERE job_queue = 'ppo_queue' ORDER BY priority DESC;

-- The share grows to 9: C (3) fits beside A and B; D (4) does not, and
-- E (1) no longer fits once C holds; F (2) neither.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 9}'
 WHERE job_queue = 'ppo_queue' AND name = 'ppo_s';
SELECT action, count(*) FROM pg_temp.pass('ppo_queue') GROUP BY 1 ORDER BY 1;
SELECT name, state, cardinality(part_agents) AS hosts
  FROM quota_sched.job WHERE job_queue = 'ppo_queue' ORDER BY priority DESC;

-- The share grows to 13: D (4 on two hosts) fits; then E (1) does not
-- (14), and F (2) neither: the pass went on past D in share order.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 13}'
 WHERE job_queue = 'ppo_queue' AND name = 'ppo_s';
SELECT action, count(*) FROM pg_temp.pass('ppo_queue') GROUP BY 1 ORDER BY 1;
SELECT name, state, cardinality(part_agents) AS hosts
  FROM quota_sched.job WHERE job_queue = 'ppo_queue' ORDER BY priority DESC;
SELECT count(*) FROM quota_sched.held_capacity_drift();
-- What each host holds and has free (agents), and where the waiting jobs
-- would go if each were dispatched now (queue_snapshot): E (1) on h3, the
-- host with the least room that holds it (best fit); F (2 in one rack) on
-- h4 alone, the fewest hosts of rack r2, the only one with 2 free.
SELECT agent, labels->>'rack' AS rack, held_instances, free_instances
  FROM quota_sched.agents WHERE job_queue = 'ppo_queue' ORDER BY agent;
SELECT queue_position, name, instance_count, hosts, host_instances
  FROM quota_sched.queue_snapshot('ppo_queue');

SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'ppo_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'ppo_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'ppo_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'ppo_env';
DROP ROLE regress_ppo_host;
