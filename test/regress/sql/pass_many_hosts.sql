-- A pass that places on many hosts at once (issue 42, item 4: found by
-- bench/e2e's fleet test, whose first pass dispatched 950 jobs onto 950
-- hosts and crashed the worker).  The arrays a pass sends with its writes
-- are built element by element (QsArray, src/base/query.c); they had a
-- fixed room, counted by decision, and two of them could be given more:
-- the held instances' changes, one per host a pass changes (room for 16),
-- and the parts of the jobs dispatched (room for one per decision).
-- Written past their room, they corrupted the backend's memory.  Each
-- step here checks every row such a pass writes.

CREATE ROLE regress_mh_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_mh_host', NULL);
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('mh_env', '{"gpu": 4096}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('mh_queue', 'mh_env', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('mh_queue', 'mh_a', '{"gpu": 4096}', 'RESERVE');

-- 400 hosts of 1 gpu each, and 400 jobs of 1: one pass dispatches them
-- all, each onto a host of its own.
SET ROLE regress_mh_host;
SELECT count(*) FROM generate_series(1, 400) AS i,
	LATERAL quota_sched.agent_ready(format('mh_%s', lpad(i::text, 3, '0')), 'mh_queue', 'gpu', 1);
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
SELECT 'mh_one', 'mh_queue', 'mh_a', 'gpu', 1 FROM generate_series(1, 400);
SELECT action, count(*) FROM quota_sched.run_pass('mh_queue') GROUP BY action;
-- every job SCHEDULED on one host, every host given one job
SELECT state, count(*) AS jobs, count(DISTINCT part_agents[1]) AS hosts,
	   min(cardinality(part_agents)) AS min_parts, max(cardinality(part_agents)) AS max_parts
  FROM quota_sched.job WHERE name = 'mh_one' GROUP BY state;
SELECT count(*) AS parts, count(DISTINCT p.agent) AS hosts, sum(p.instances) AS instances
  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id WHERE j.name = 'mh_one';
-- what the hosts hold, as the pass counted it: one instance each, nothing drifts
SELECT count(*) AS hosts, min(held_instances), max(held_instances), sum(free_instances) AS free
  FROM quota_sched.agents WHERE job_queue = 'mh_queue';
SELECT count(*) AS drift FROM quota_sched.host_held_drift() WHERE job_queue = 'mh_queue';

-- Those jobs end; then one job of 300 parts, alone in its pass.
SELECT count(*) FROM quota_sched.job j, LATERAL quota_sched.terminate(j.id) WHERE j.name = 'mh_one';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host)
VALUES ('mh_wide', 'mh_queue', 'mh_a', 'gpu', 300, 1);
SELECT action, count(*) FROM quota_sched.run_pass('mh_queue') GROUP BY action;
SELECT state, cardinality(part_agents) AS parts, cardinality(part_instances) AS sizes,
	   (SELECT count(DISTINCT a) FROM unnest(part_agents) AS a) AS hosts
  FROM quota_sched.job WHERE name = 'mh_wide';
-- its parts in rank order, each on the host the job's placement names
SELECT count(*) AS parts, min(p.rank), max(p.rank),
	   count(*) FILTER (WHERE p.agent = j.part_agents[p.rank + 1]) AS as_placed
  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id WHERE j.name = 'mh_wide';
SELECT count(*) FILTER (WHERE held_instances = 1) AS holding, sum(free_instances) AS free
  FROM quota_sched.agents WHERE job_queue = 'mh_queue';
SELECT count(*) AS drift FROM quota_sched.host_held_drift() WHERE job_queue = 'mh_queue';

SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'mh_wide';
DELETE FROM quota_sched.job_queue WHERE name = 'mh_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'mh_env';
DELETE FROM quota_sched.agent_access WHERE login = 'regress_mh_host';
DROP ROLE regress_mh_host;
