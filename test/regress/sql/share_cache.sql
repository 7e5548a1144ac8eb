-- The shares a pass keeps (issue 42, item 3; src/pass/host_cache.c): a
-- pass reads a queue's shares again only when its snapshot sees another
-- set of the queue's rows of share_change, which every insert, update and
-- delete of one of its shares adds to.  Each change below changes what the
-- next pass decides of a probe job, and makes it read the shares again
-- (quota_sched.share_config_reads(): how many times this backend read
-- them); passes with nothing changed, and a change of another queue's
-- shares, do not.  The probe asks for 3 gpus of share sc_a: beyond
-- sc_a's 2 it is misconfigured, within 3 it is dispatched.

\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('sc_env', '{"gpu": 4}'), ('sc_env2', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('sc_queue', 'sc_env'), ('sc_other', 'sc_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('sc_queue', 'sc_a', '{"gpu": 2}', 'RESERVE'), ('sc_queue', 'sc_b', '{"gpu": 2}', 'RESERVE'),
	   ('sc_other', 'sc_o', '{"gpu": 4}', 'RESERVE');

-- probe(): submits the probe, runs the pass, and returns the probe's
-- state and reason and how many times this backend read the queue's
-- shares since the last probe; the probe is then taken away.
CREATE TEMP TABLE sc_reads AS SELECT quota_sched.share_config_reads() AS n;
CREATE FUNCTION pg_temp.probe(OUT state text, OUT reason text, OUT reads bigint)
LANGUAGE plpgsql AS $$
DECLARE
	probe bigint;
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('sc_probe', 'sc_queue', 'sc_a', 'gpu', 3) RETURNING id INTO probe;
	PERFORM quota_sched.run_pass('sc_queue');
	SELECT j.state, j.status_reason INTO state, reason FROM quota_sched.job j WHERE j.id = probe;
	PERFORM quota_sched.terminate(probe);
	DELETE FROM quota_sched.job WHERE id = probe;
	SELECT quota_sched.share_config_reads() - n INTO reads FROM sc_reads;
	UPDATE sc_reads SET n = quota_sched.share_config_reads();
END
$$;

-- The first pass reads the shares; the next, with nothing changed, not.
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- sc_a's capacity raised: read again, the probe dispatched; then kept.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 3}'
 WHERE job_queue = 'sc_queue' AND name = 'sc_a';
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- A change rolled back: the pass inside sees it (read again); the next
-- one, after the rollback, does not trust what was read then (2: the
-- count before the read inside went back with the transaction).
BEGIN;
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 2}'
 WHERE job_queue = 'sc_queue' AND name = 'sc_a';
SELECT * FROM pg_temp.probe();
ROLLBACK;
SELECT * FROM pg_temp.probe();
-- Another queue's share changes: no read.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 3}'
 WHERE job_queue = 'sc_other' AND name = 'sc_o';
SELECT * FROM pg_temp.probe();
-- A share added (sc_c takes a gpu sc_b had), then deleted: each read.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 1}'
 WHERE job_queue = 'sc_queue' AND name = 'sc_b';
SELECT * FROM pg_temp.probe();
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('sc_queue', 'sc_c', '{"gpu": 1}', 'RESERVE');
SELECT * FROM pg_temp.probe();
DELETE FROM quota_sched.quota_share WHERE job_queue = 'sc_queue' AND name = 'sc_c';
SELECT * FROM pg_temp.probe();
-- sc_a back to 2 gpus, then LEND_AND_BORROW: it may borrow the gpu no
-- share has, and the probe runs again.
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 2}'
 WHERE job_queue = 'sc_queue' AND name = 'sc_a';
SELECT * FROM pg_temp.probe();
UPDATE quota_sched.quota_share SET strategy = 'LEND_AND_BORROW'
 WHERE job_queue = 'sc_queue' AND name = 'sc_a';
SELECT * FROM pg_temp.probe();
-- More than 16 rows of the queue in share_change: the pass that read them
-- replaces them by one (a new generation: the next pass reads once more).
DO $$ BEGIN FOR i IN 1..20 LOOP
	UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 1}'
	 WHERE job_queue = 'sc_queue' AND name = 'sc_b';
END LOOP; END $$;
SELECT count(*) > 16 AS many FROM quota_sched.share_change WHERE job_queue = 'sc_queue';
SELECT * FROM pg_temp.probe();
SELECT count(*) AS changes_kept FROM quota_sched.share_change WHERE job_queue = 'sc_queue';
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- Only admins may call share_config_reads().
SELECT has_function_privilege('quota_sched_user', 'quota_sched.share_config_reads()', 'EXECUTE')
	   AS users_may;

DELETE FROM quota_sched.job WHERE job_queue IN ('sc_queue', 'sc_other');
DELETE FROM quota_sched.quota_share WHERE job_queue IN ('sc_queue', 'sc_other');
DELETE FROM quota_sched.job_queue WHERE name IN ('sc_queue', 'sc_other');
DELETE FROM quota_sched.service_environment WHERE name IN ('sc_env', 'sc_env2');
