-- The rows a pass reads stay linear in the jobs it tries (scheduling.md 3.2,
-- the skip rule; issue 10, item 5).  Each queue has one RESERVE share whose
-- capacity a dispatched job holds but for 2 instances, and a backlog of one
-- priority, none of which fits (none is misconfigured: each would fit in an
-- empty environment):
--
--   psr_dec: 3,000 jobs whose sizes decrease in share order (3,002 down to
--            3).  Each is tried and narrows the skip bound, so the pass tries
--            them all; each narrowing must not read the share's jobs again
--            from the start.
--   psr_inc: 3,000 jobs whose sizes increase (3 up to 3,002): the first is
--            tried and the skip bound passes over every later one, which the
--            pass must not read one by one.
--   psr_uni: 3,000 jobs of 3 instances: the same.
--
-- Within one transaction, the index tuples the pass reads from
-- quota_sched.job (pg_stat_get_xact_tuples_returned over its indexes), the
-- heap tuples it fetches through them, and those it reads sequentially, are
-- compared with the jobs tried.  Only booleans and figures that do not
-- depend on timing or plans are printed.

CREATE FUNCTION pg_temp.setup(q text, sizes text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.service_environment (name, capacity_limits)
	VALUES (q || '_env', '{"gpu": 10000}');
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES (q, q || '_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES (q, 's', '{"gpu": 10000}', 'RESERVE');
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES (q || '_holder', q, 's', 'gpu', 9998);
	-- the holder is dispatched (and holds 9,998 instances) before the backlog
	-- exists
	PERFORM count(*) FROM quota_sched.run_pass(q);
	-- one statement: one queued_at, share order by id
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	SELECT q || '_' || i, q, 's', 'gpu',
		   CASE sizes WHEN 'decreasing' THEN 3003 - i WHEN 'increasing' THEN 2 + i ELSE 3 END
	  FROM generate_series(1, 3000) i ORDER BY i;
END $$;

SELECT pg_temp.setup('psr_dec', 'decreasing');
SELECT pg_temp.setup('psr_inc', 'increasing');
SELECT pg_temp.setup('psr_uni', 'uniform');

-- psr_pl: a unit placed on two hosts of 5,000 (rack r1), where the jobs
-- with placement constraints have skip bounds of their own, one per class
-- (scheduling.md 3.13): 3,000 jobs in turn of 3 instances, of 4 on two
-- hosts (instances_per_host 2), and of 4 in one rack (same_label rack).
-- The first of each kind is tried; each class's bound then passes over
-- the rest of its jobs, which the pass must not read one by one either.
CREATE ROLE regress_psr_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('psr_pl_env', '{"gpu": 10000}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('psr_pl', 'psr_pl_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('psr_pl', 's', '{"gpu": 10000}', 'RESERVE');
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_psr_host', 'psr_pl');
SET ROLE regress_psr_host;
SELECT count(quota_sched.agent_ready('psr_h' || i, 'psr_pl', 'gpu', 5000, '{"rack": "r1"}'))
  FROM generate_series(1, 2) i;
RESET ROLE;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('psr_pl_holder', 'psr_pl', 's', 'gpu', 9998);
SELECT count(*) FROM quota_sched.run_pass('psr_pl');
SELECT state, part_agents, part_instances FROM quota_sched.job WHERE name = 'psr_pl_holder';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, same_label)
SELECT 'psr_pl_' || i, 'psr_pl', 's', 'gpu', CASE i % 3 WHEN 0 THEN 3 ELSE 4 END,
	   CASE i % 3 WHEN 1 THEN 2 END, CASE i % 3 WHEN 2 THEN 'rack' END
  FROM generate_series(1, 3000) i ORDER BY i;
SELECT job_queue, state, count(*), min(instance_count), max(instance_count)
  FROM quota_sched.job WHERE job_queue LIKE 'psr\_%' GROUP BY 1, 2 ORDER BY 1, 2;
ANALYZE quota_sched.job;

-- The reads of quota_sched.job so far in this transaction.
CREATE FUNCTION pg_temp.job_reads(OUT idx_read bigint, OUT idx_fetch bigint, OUT seq_read bigint)
LANGUAGE sql AS $$
	SELECT (SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid))::bigint
			  FROM pg_index WHERE indrelid = 'quota_sched.job'::regclass),
		   idx_tup_fetch, seq_tup_read
	  FROM pg_stat_xact_user_tables WHERE relid = 'quota_sched.job'::regclass
$$;

-- pass_reads(q, tried): runs a pass of q; its decisions, and whether what it
-- read of quota_sched.job stays within a small multiple of the jobs it
-- tries (plus a constant for the reads every pass makes).
CREATE FUNCTION pg_temp.pass_reads(q text, tried int)
RETURNS TABLE (decisions bigint, index_reads_linear boolean, heap_fetches_linear boolean,
			   no_seq_reads boolean)
LANGUAGE plpgsql AS $$
DECLARE
	r0 record;
	r1 record;
	n bigint;
BEGIN
	SELECT * INTO r0 FROM pg_temp.job_reads();
	SELECT count(*) INTO n FROM quota_sched.run_pass(q);
	SELECT * INTO r1 FROM pg_temp.job_reads();
	RETURN QUERY SELECT n, r1.idx_read - r0.idx_read <= 3 * tried + 200,
		r1.idx_fetch - r0.idx_fetch <= 3 * tried + 200, r1.seq_read = r0.seq_read;
END $$;

BEGIN;
SELECT * FROM pg_temp.pass_reads('psr_dec', 3000);
COMMIT;
BEGIN;
SELECT * FROM pg_temp.pass_reads('psr_inc', 1);
COMMIT;
BEGIN;
SELECT * FROM pg_temp.pass_reads('psr_uni', 1);
COMMIT;
BEGIN;
SELECT * FROM pg_temp.pass_reads('psr_pl', 3);
COMMIT;
-- a second pass of each, with the plans made
BEGIN;
SELECT * FROM pg_temp.pass_reads('psr_dec', 3000);
SELECT * FROM pg_temp.pass_reads('psr_inc', 1);
SELECT * FROM pg_temp.pass_reads('psr_uni', 1);
SELECT * FROM pg_temp.pass_reads('psr_pl', 3);
COMMIT;

-- With 1,000 more instances (rolled back): in psr_dec the first job that
-- fits (1,002 instances) is dispatched and every smaller one is still
-- tried; in psr_inc the jobs of 3 to 44 instances are dispatched (987 of
-- the 1,002), and the job of 45 is tried: the skip bound then passes over
-- the rest, which the pass must not read one by one although smaller jobs
-- (those just dispatched) come before them.
CREATE FUNCTION pg_temp.more_capacity(q text) RETURNS void LANGUAGE sql AS $$
	UPDATE quota_sched.service_environment SET capacity_limits = '{"gpu": 11000}'
	 WHERE name = q || '_env';
	UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 11000}' WHERE job_queue = q;
$$;
CREATE FUNCTION pg_temp.scheduled(q text)
RETURNS TABLE (jobs bigint, smallest int, largest int, instances bigint) LANGUAGE sql AS $$
	SELECT count(*), min(instance_count), max(instance_count), sum(instance_count)
	  FROM quota_sched.job
	 WHERE job_queue = q AND state = 'SCHEDULED' AND name <> q || '_holder'
$$;
BEGIN;
SELECT pg_temp.more_capacity('psr_dec');
SELECT * FROM pg_temp.pass_reads('psr_dec', 3000);
SELECT * FROM pg_temp.scheduled('psr_dec');
ROLLBACK;
BEGIN;
SELECT pg_temp.more_capacity('psr_inc');
SELECT * FROM pg_temp.pass_reads('psr_inc', 43);
SELECT * FROM pg_temp.scheduled('psr_inc');
ROLLBACK;

-- nothing was dispatched, and nothing marked misconfigured
SELECT job_queue, state, count(*), count(status_reason)
  FROM quota_sched.job WHERE job_queue LIKE 'psr\_%' GROUP BY 1, 2 ORDER BY 1, 2;

-- Clean up: end the jobs with the extension's triggers disabled (the
-- counters of held capacity with them), then drop the configuration,
-- which takes the jobs and their history with it.  (Left behind, 9,000
-- RUNNABLE jobs made later files' plans and passes slower.)
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'psr\_%';
DELETE FROM quota_sched.held_capacity WHERE job_queue LIKE 'psr\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'psr\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'psr\_%';
SELECT count(*) AS jobs_left FROM quota_sched.job WHERE job_queue LIKE 'psr\_%';
SELECT * FROM quota_sched.held_capacity_drift();
DROP ROLE regress_psr_host;
