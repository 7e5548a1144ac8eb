-- What the hosts hold, as a pass reads it (issue 39, item 6;
-- src/pass/held_cache.c): the rows of host_held, kept by the backend
-- between passes while the fold's mark it saw is the one a pass sees, and
-- the changes not yet folded (host_held_change), which every pass that
-- places a job reads; more than 16 of them, the pass folds them into
-- host_held under a new mark.  Each step shows where a probe job of 3
-- gpus goes (best fit on three hosts of 4: the first host by name with the
-- fewest free instances that fit it) and whether its pass read host_held
-- (quota_sched.host_held_reads(): how many times this backend did): so a
-- kept row or a change that is wrong, or kept rows used past a fold that
-- was rolled back, place the probe elsewhere.

\i test/regress/include/helpers.sql

CREATE ROLE regress_hk_host NOLOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_hk_host', NULL);

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('hk_env', '{"gpu": 64}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('hk_queue', 'hk_env', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hk_queue', 'hk_a', '{"gpu": 64}', 'RESERVE');
SET ROLE regress_hk_host;
SELECT name FROM quota_sched.agent_ready('hk_1', 'hk_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('hk_2', 'hk_queue', 'gpu', 4);
SELECT name FROM quota_sched.agent_ready('hk_3', 'hk_queue', 'gpu', 4);
RESET ROLE;

-- probe(): submits a probe job of 3, runs the pass, returns where the
-- probe went and whether the pass scanned host_held; the probe is then
-- terminated and deleted.
CREATE FUNCTION pg_temp.probe(OUT placed text[], OUT read_host_held boolean)
LANGUAGE plpgsql AS $$
DECLARE
	probe bigint;
	reads bigint := quota_sched.host_held_reads();
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('hk_probe', 'hk_queue', 'hk_a', 'gpu', 3) RETURNING id INTO probe;
	PERFORM quota_sched.run_pass('hk_queue');
	read_host_held := quota_sched.host_held_reads() > reads;
	SELECT part_agents INTO placed FROM quota_sched.job WHERE id = probe;
	PERFORM quota_sched.terminate(probe);
	DELETE FROM quota_sched.job WHERE id = probe;
END
$$;
-- fill(name, n): a job of n gpus, dispatched; returns where it went
CREATE FUNCTION pg_temp.fill(job_name text, n int) RETURNS text[] LANGUAGE plpgsql AS $$
DECLARE
	placed text[];
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES (job_name, 'hk_queue', 'hk_a', 'gpu', n);
	PERFORM quota_sched.run_pass('hk_queue');
	SELECT part_agents INTO placed FROM quota_sched.job WHERE name = job_name;
	RETURN placed;
END
$$;
-- state(): the queue's rows of host_held_change (marks and changes), and
-- its drift
CREATE FUNCTION pg_temp.state(OUT marks bigint, OUT changes bigint, OUT kept text,
							  OUT drift bigint)
LANGUAGE sql AS $$
	SELECT count(*) FILTER (WHERE capacity_unit IS NULL),
		   count(*) FILTER (WHERE capacity_unit IS NOT NULL),
		   (SELECT string_agg(agent || '=' || instances, ' ' ORDER BY agent)
			  FROM quota_sched.host_held WHERE job_queue = 'hk_queue'),
		   (SELECT count(*) FROM quota_sched.host_held_drift() WHERE job_queue = 'hk_queue')
	  FROM quota_sched.host_held_change WHERE job_queue = 'hk_queue'
$$;
-- churn(k): k jobs of 1 submitted and dispatched in one pass, then each
-- terminated: k changes and no pass
CREATE FUNCTION pg_temp.churn(k int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	SELECT 'hk_churn', 'hk_queue', 'hk_a', 'gpu', 1 FROM generate_series(1, k);
	PERFORM quota_sched.run_pass('hk_queue');
	PERFORM quota_sched.terminate(id) FROM quota_sched.job WHERE name = 'hk_churn';
	DELETE FROM quota_sched.job WHERE name = 'hk_churn';
END
$$;

-- The first pass that places a job finds no mark: it reads host_held, and
-- folds (a mark).  hk_a1 (2) goes to hk_1; the probe, in the next pass,
-- which reads host_held and keeps its rows, to hk_2.
SELECT pg_temp.fill('hk_a1', 2);
SELECT * FROM pg_temp.state();
SELECT * FROM pg_temp.probe();
-- From now on the kept rows and the changes serve: hk_b1 (1) goes to hk_1
-- (2 free: best fit), the probe to hk_2, with no read of host_held.
SELECT pg_temp.fill('hk_b1', 1);
SELECT * FROM pg_temp.probe();
-- A change: hk_a1 ends; the probe fits hk_1 again (3 free: best fit).
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'hk_a1';
SELECT * FROM pg_temp.probe();
-- Many changes (more than 16): the probe's pass reads them, places the
-- probe on hk_1, and folds them into host_held, bringing the kept rows up
-- to its mark: the changes left are the probe's own.
SELECT pg_temp.churn(8);
SELECT changes > 16 AS many FROM pg_temp.state();
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.state();
-- hk_c1 (2) goes to hk_1 (3 free: best fit), which holds 3 then; after
-- more changes and a fold, the kept rows say so: the probe goes to hk_2.
SELECT pg_temp.fill('hk_c1', 2);
SELECT pg_temp.churn(8), pg_temp.churn(8);
SELECT changes > 16 AS many FROM pg_temp.state();
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.state();
SELECT * FROM pg_temp.probe();
-- A fold rolled back: hk_c1 ends and a fold in the transaction counts it
-- (the probe fits hk_1 again); rolled back, hk_c1 holds hk_1 again, and
-- the fold's mark is never seen: the next pass reads host_held again.
BEGIN;
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job WHERE name = 'hk_c1';
SELECT pg_temp.churn(8), pg_temp.churn(8);
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.state();
ROLLBACK;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- Every job ended: the counters at zero, no drift.
SELECT (quota_sched.terminate(id)).state FROM quota_sched.job
 WHERE job_queue = 'hk_queue' AND state NOT IN ('SUCCEEDED', 'FAILED') ORDER BY id;
SELECT pg_temp.churn(8), pg_temp.churn(8);
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.state();

SELECT name FROM quota_sched.forget_agent('hk_1');
SELECT name FROM quota_sched.forget_agent('hk_2');
SELECT name FROM quota_sched.forget_agent('hk_3');
DELETE FROM quota_sched.job WHERE job_queue = 'hk_queue';
DELETE FROM quota_sched.host_held WHERE job_queue = 'hk_queue';
DELETE FROM quota_sched.host_held_change WHERE job_queue = 'hk_queue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'hk_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'hk_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'hk_env';
DELETE FROM quota_sched.agent_access WHERE login = 'regress_hk_host';
DROP ROLE regress_hk_host;
