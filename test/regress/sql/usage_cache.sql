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
-- With a budget, what was spent moves with the time, not with writes: the
-- counters are kept as stored, and what they spent is computed at the
-- time of each pass that takes them.  uc_b's holder holds all 1,200 gpus
-- (a third of an instance-hour a second); its probe waits for capacity
-- while the budget (1,000 hours) is far.  Once it spent an hour, the budget
-- is set to 1 hour (a change of the share, not of the counters): the next
-- pass takes the counters it kept, and finds the budget spent at its time.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('uc_benv', '{"gpu": 1200}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('uc_bqueue', 'uc_benv');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, budget)
VALUES ('uc_bqueue', 'uc_b', '{"gpu": 1200}', 'RESERVE', '{"gpu": 1000}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('uc_bholder', 'uc_bqueue', 'uc_b', 'gpu', 1200);
SELECT count(*) AS dispatched FROM quota_sched.run_pass('uc_bqueue') WHERE action = 'DISPATCH';
CREATE FUNCTION pg_temp.budget_probe(OUT state text, OUT reason text, OUT reads bigint)
LANGUAGE plpgsql AS $$
DECLARE
	probe bigint;
BEGIN
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('uc_bprobe', 'uc_bqueue', 'uc_b', 'gpu', 1) RETURNING id INTO probe;
	PERFORM quota_sched.run_pass('uc_bqueue');
	SELECT j.state, split_part(j.status_reason, ':', 1) INTO state, reason
	  FROM quota_sched.job j WHERE j.id = probe;
	SELECT quota_sched.held_capacity_reads() - n INTO reads FROM uc_reads;
	UPDATE uc_reads SET n = quota_sched.held_capacity_reads();
	DELETE FROM quota_sched.job WHERE id = probe;
END
$$;
SELECT * FROM pg_temp.budget_probe();
SELECT * FROM pg_temp.budget_probe();
-- wait (polling, each check its own transaction) until an hour is spent
DO $$
BEGIN
	FOR i IN 1..1200 LOOP
		EXIT WHEN (SELECT spent_hours >= 1 FROM quota_sched.share_budget
					WHERE job_queue = 'uc_bqueue' AND quota_share = 'uc_b');
		COMMIT;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
UPDATE quota_sched.quota_share SET budget = '{"gpu": 1}'
 WHERE job_queue = 'uc_bqueue' AND name = 'uc_b';
SELECT * FROM pg_temp.budget_probe();
SELECT exhausted FROM quota_sched.share_budget WHERE job_queue = 'uc_bqueue';
DELETE FROM quota_sched.job WHERE job_queue = 'uc_bqueue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'uc_bqueue';
DELETE FROM quota_sched.job_queue WHERE name = 'uc_bqueue';
DELETE FROM quota_sched.service_environment WHERE name = 'uc_benv';

-- The memory of borrowing (FAIR with a half-life) is kept with the
-- counters, and read again after a write of the counters, of the memory or
-- of its changes (held_capacity_reads() counts both reads).  The
-- environment has 100 gpus; lender L owns 60 and uses 50; A and B own 20
-- each and will each want 30 (10 borrowed), of which 10 can be lent.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('uc_fenv', '{"gpu": 100}');
INSERT INTO quota_sched.job_queue (name, service_environment, borrow_order, fair_half_life)
VALUES ('uc_fqueue', 'uc_fenv', 'FAIR', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('uc_fqueue', 'L', '{"gpu": 60}', 'LEND', -1),
	   ('uc_fqueue', 'A', '{"gpu": 20}', 'LEND_AND_BORROW', -1),
	   ('uc_fqueue', 'B', '{"gpu": 20}', 'LEND_AND_BORROW', -1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('uc_lown', 'uc_fqueue', 'L', 'gpu', 50);
CREATE FUNCTION pg_temp.fair_pass(OUT dispatched text, OUT reads bigint)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT string_agg(j.name, ', ' ORDER BY j.name) INTO dispatched
	  FROM quota_sched.run_pass('uc_fqueue') p JOIN quota_sched.job j ON j.id = p.job_id
	 WHERE p.action = 'DISPATCH';
	SELECT quota_sched.held_capacity_reads() - n INTO reads FROM uc_reads;
	UPDATE uc_reads SET n = quota_sched.held_capacity_reads();
END
$$;
-- the dispatch, the memory written (every cell is new), read again, kept
SELECT * FROM pg_temp.fair_pass();
SELECT * FROM pg_temp.fair_pass();
SELECT * FROM pg_temp.fair_pass();
SELECT * FROM pg_temp.fair_pass();
-- a change of held capacity written by hand, with session_replication_role
-- = replica (ENABLE ALWAYS): read again (and deleted by the pass, a write:
-- read again), then kept
SET session_replication_role = replica;
INSERT INTO quota_sched.held_change VALUES ('uc_fqueue', 'A', 'gpu', now(), 0);
RESET session_replication_role;
SELECT * FROM pg_temp.fair_pass();
SELECT * FROM pg_temp.fair_pass();
SELECT * FROM pg_temp.fair_pass();
-- the memory written by hand: B borrowed a lot lately.  B's job comes
-- first, so that a pass with B's memory as kept (none: a tie) would take
-- it; the pass reads the memory again, and A gets the idle capacity.
SET session_replication_role = replica;
UPDATE quota_sched.borrow_memory SET recent = 1e9
 WHERE job_queue = 'uc_fqueue' AND quota_share = 'B';
RESET session_replication_role;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('uc_bnext', 'uc_fqueue', 'B', 'gpu', 30);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('uc_anext', 'uc_fqueue', 'A', 'gpu', 30);
SELECT * FROM pg_temp.fair_pass();
DELETE FROM quota_sched.job WHERE job_queue = 'uc_fqueue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'uc_fqueue';
DELETE FROM quota_sched.job_queue WHERE name = 'uc_fqueue';
DELETE FROM quota_sched.service_environment WHERE name = 'uc_fenv';
DELETE FROM quota_sched.held_change WHERE job_queue = 'uc_fqueue';

-- Only admins may call held_capacity_reads().
SELECT has_function_privilege('quota_sched_user', 'quota_sched.held_capacity_reads()', 'EXECUTE')
	   AS users_may;

DELETE FROM quota_sched.job WHERE job_queue = 'uc_queue';
DELETE FROM quota_sched.quota_share WHERE job_queue = 'uc_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'uc_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'uc_env';
