-- bench/setup.sql: run by bench/submit as superuser in a throwaway cluster.
\set ON_ERROR_STOP on
SET client_min_messages = warning;

CREATE EXTENSION quota_sched;

-- One environment, one queue, one share open to every submitter.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
	VALUES ('bench_env', '{"ml.g5.xlarge": 64}');
INSERT INTO quota_sched.job_queue (name, service_environment)
	VALUES ('bench_queue', 'bench_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
	VALUES ('bench_queue', 'bench_share', '{"ml.g5.xlarge": 64}', 'LEND_AND_BORROW', NULL);

CREATE ROLE bench_user LOGIN IN ROLE quota_sched_user;

/*
 * bench.plain_job: the baseline.  LIKE ... INCLUDING ALL copies the columns,
 * types, defaults, NOT NULLs, CHECK constraints, primary key, unique
 * (client_token) and every index, the partial ones included, so the copy
 * follows quota_sched.job as its definition changes.  LIKE copies neither
 * triggers nor row-level security (which is what we want) nor foreign keys,
 * which are added below from quota_sched.job's own definitions.
 *
 * quota_sched.job's system columns have no defaults: its BEFORE INSERT
 * trigger fills them (and refuses a value from the submitter).  plain_job
 * has no trigger, so it gets defaults that fill them the same way: id from
 * its own sequence, owner current_user, state 'RUNNABLE', counters 0 (0.3's
 * lease_losses and claim_requeues too),
 * submitted_at and queued_at now() (the transaction's start time, which is
 * what the trigger uses).
 */
CREATE SCHEMA bench;
CREATE TABLE bench.plain_job (LIKE quota_sched.job INCLUDING ALL);
CREATE SEQUENCE bench.plain_job_id_seq OWNED BY bench.plain_job.id;
ALTER TABLE bench.plain_job
	ALTER id SET DEFAULT nextval('bench.plain_job_id_seq'),
	ALTER owner SET DEFAULT current_user,
	ALTER state SET DEFAULT 'RUNNABLE',
	ALTER failed_attempts SET DEFAULT 0,
	ALTER preemption_count SET DEFAULT 0,
	ALTER lease_losses SET DEFAULT 0,
	ALTER claim_requeues SET DEFAULT 0,
	ALTER submitted_at SET DEFAULT now(),
	ALTER queued_at SET DEFAULT now();

DO $fk$
DECLARE
	c record;
BEGIN
	FOR c IN SELECT conname, pg_get_constraintdef(oid) AS def
			   FROM pg_constraint
			  WHERE conrelid = 'quota_sched.job'::regclass AND contype = 'f'
	LOOP
		EXECUTE format('ALTER TABLE bench.plain_job ADD CONSTRAINT %I %s', c.conname, c.def);
	END LOOP;
END
$fk$;

-- The same privileges as a submitter has on quota_sched.job.
GRANT USAGE ON SCHEMA bench TO bench_user;
GRANT SELECT ON bench.plain_job TO bench_user;
GRANT INSERT (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload,
			  max_attempts, preemption_retries, timeout, client_token, tags)
	ON bench.plain_job TO bench_user;
GRANT USAGE ON SEQUENCE bench.plain_job_id_seq TO bench_user;

-- Both tables must have the same indexes and constraints (names aside).
DO $same$
DECLARE
	missing text;
BEGIN
	SELECT string_agg(d, E'\n') INTO missing FROM (
		(SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') AS d
		   FROM pg_index WHERE indrelid = 'quota_sched.job'::regclass
		 UNION ALL
		 SELECT pg_get_constraintdef(oid) FROM pg_constraint
		  WHERE conrelid = 'quota_sched.job'::regclass)
		EXCEPT ALL
		(SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '')
		   FROM pg_index WHERE indrelid = 'bench.plain_job'::regclass
		 UNION ALL
		 SELECT pg_get_constraintdef(oid) FROM pg_constraint
		  WHERE conrelid = 'bench.plain_job'::regclass)) x;
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'bench.plain_job lacks these indexes or constraints of quota_sched.job: %', missing;
	END IF;
	IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'bench.plain_job'::regclass AND NOT tgisinternal) THEN
		RAISE EXCEPTION 'bench.plain_job must have no triggers';
	END IF;
END
$same$;
