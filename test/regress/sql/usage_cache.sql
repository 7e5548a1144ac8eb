-- The counters a pass keeps (issue 42, item 3; src/pass/usage_cache.c): a
-- pass reads a queue's counters of held capacity again only after a
-- transaction that wrote quota_sched.held_capacity committed, whatever
-- wrote it; passes with nothing held changed take what the backend kept
-- (quota_sched.held_capacity_reads(): how many times this backend read
-- them).  uc_a has 2 gpus, both held by uc_holder (SCHEDULED), so a probe
-- of 1 gpu waits, unless the counters say they are free: each write of
-- them below changes what the next pass decides of the probe, which a
-- pass that took stale counters would not.

\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('uc_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('uc_queue', 'uc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('uc_queue', 'uc_a', '{"gpu": 2}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('uc_holder', 'uc_queue', 'uc_a', 'gpu', 2);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('uc_queue') WHERE action = 'DISPATCH';

-- probe(): submits the probe, runs the pass, and returns the probe's
-- state and how many times this backend read the counters since the last
-- probe; the probe is then taken away.
CREATE TEMP TABLE uc_reads AS SELECT quota_sched.held_capacity_reads() AS n;
CREATE FUNCTION pg_temp.probe(OUT state text, OUT reads bigint)
LANGUAGE plpgsql AS $$
DECLARE
	probe bigint;
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('uc_probe', 'uc_queue', 'uc_a', 'gpu', 1) RETURNING id INTO probe;
	PERFORM quota_sched.run_pass('uc_queue');
	SELECT j.state INTO state FROM quota_sched.job j WHERE j.id = probe;
	SELECT quota_sched.held_capacity_reads() - n INTO reads FROM uc_reads;
	UPDATE uc_reads SET n = quota_sched.held_capacity_reads();
	DELETE FROM quota_sched.job WHERE id = probe;
END
$$;

-- The first pass reads the counters; the next, with nothing held changed, not.
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- An admin's UPDATE of the counters (no job changed): the next pass reads
-- them and dispatches the probe; deleting the probe gives its gpu back (a
-- write: read again); the counters put back, read again, the probe waits.
UPDATE quota_sched.held_capacity SET instances = instances - 2
 WHERE job_queue = 'uc_queue' AND quota_share = 'uc_a' AND stripe = 0;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
UPDATE quota_sched.held_capacity SET instances = instances + 2
 WHERE job_queue = 'uc_queue' AND quota_share = 'uc_a' AND stripe = 0;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- A write rolled back: the passes inside the transaction read what it
-- wrote, and keep nothing; after the rollback, the pass takes what was
-- kept before it, which is right again (2: the reads inside, whose count
-- in uc_reads went back with the transaction).
BEGIN;
UPDATE quota_sched.held_capacity SET instances = instances - 2
 WHERE job_queue = 'uc_queue' AND quota_share = 'uc_a' AND stripe = 0;
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
ROLLBACK;
SELECT * FROM pg_temp.probe();
-- A write with session_replication_role = replica counts too (ENABLE ALWAYS).
SET session_replication_role = replica;
UPDATE quota_sched.held_capacity SET instances = instances - 2
 WHERE job_queue = 'uc_queue' AND quota_share = 'uc_a' AND stripe = 0;
RESET session_replication_role;
SELECT * FROM pg_temp.probe();
SET session_replication_role = replica;
UPDATE quota_sched.held_capacity SET instances = instances + 2
 WHERE job_queue = 'uc_queue' AND quota_share = 'uc_a' AND stripe = 0;
RESET session_replication_role;
SELECT * FROM pg_temp.probe();
-- The holder ends (terminate: the job_usage triggers write the counters):
-- read again, and the probe dispatched.
SELECT count(quota_sched.terminate(id)) FROM quota_sched.job WHERE name = 'uc_holder';
SELECT state FROM quota_sched.job WHERE name = 'uc_holder';
SELECT * FROM pg_temp.probe();
SELECT * FROM pg_temp.probe();
-- Only admins may call held_capacity_reads().
SELECT has_function_privilege('quota_sched_user', 'quota_sched.held_capacity_reads()', 'EXECUTE')
	   AS users_may;

DELETE FROM quota_sched.job WHERE job_queue = 'uc_queue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'uc_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'uc_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'uc_env';
