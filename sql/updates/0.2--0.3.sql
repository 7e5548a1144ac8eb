/*
 * sql/updates/0.2--0.3.sql
 *		The changes of tables, data and catalog from 0.2 to 0.3.
 *
 * The build makes quota_sched--0.2--0.3.sql of this file followed by every
 * function source (sql/src: validation, triggers, the APIs, reporting,
 * metrics, chart), which recreate each function and view as 0.3 has it
 * (CREATE OR REPLACE).  So this file holds only what those cannot do:
 * ALTER TABLE and the data it needs, new tables (and the same change in
 * sql/src/tables.sql), DROP FUNCTION before a function's signature or
 * result type changes, ALTER POLICY.  test/t/006_upgrade.pl checks that an
 * updated database has the catalog of a fresh install.
 *
 * 0.3 adds the table of agents, the queues' claim_timeout, the jobs'
 * columns of lease losses and claim timeouts (scheduling.md 3.10;
 * tables.sql has their comments) and the table of the jobs' attempts
 * (job_attempt: where each ran, how it ended, its output's last lines).
 * The jobs' system columns have no defaults in a fresh install: the
 * update fills the rows it has with 0 and drops the default.  The hourly
 * rollup gains a count of jobs terminated (usage_hourly.terminated, kept
 * apart from failed from 0.3 on) and of attempts preempted after less
 * than a minute (preempted_early; rows rolled up before keep their
 * counts, both 0: the history they came from may be pruned), and so do the
 * functions that compute it and utilization(), which go first.
 *
 * Budgets and fair share with memory (scheduling.md 3.11, 3.12): a share's
 * budget and budget_period, a queue's fair_half_life, and what each stripe
 * of the counters of held capacity held this day, week and month
 * (held_capacity, tables.sql), filled from the history by 0.2's
 * utilization(); until an admin sets a budget or a half-life, nothing
 * schedules differently.
 */

/* the CHECK of claim_timeout needs it before the function sources run */
CREATE OR REPLACE FUNCTION quota_sched.check_claim_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_claim_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE OR REPLACE FUNCTION quota_sched.check_fair_half_life(value interval, borrow_order text,
	what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_fair_half_life'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

ALTER TABLE quota_sched.job_queue ADD COLUMN claim_timeout interval DEFAULT '5 minutes'
	CHECK (quota_sched.check_claim_timeout(claim_timeout, 'job queue ' || name));

ALTER TABLE quota_sched.job
	ADD COLUMN max_lease_losses integer NOT NULL DEFAULT 3,
	ADD COLUMN lease_losses integer NOT NULL DEFAULT 0,
	ADD COLUMN claim_requeues integer NOT NULL DEFAULT 0,
	ADD COLUMN claim_backoff_until timestamptz;
ALTER TABLE quota_sched.job ALTER COLUMN lease_losses DROP DEFAULT,
	ALTER COLUMN claim_requeues DROP DEFAULT;
CREATE INDEX job_no_agent_fits ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS';

CREATE TABLE quota_sched.agent (
	name			text PRIMARY KEY,
	login			name NOT NULL,
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	capacity_unit	text NOT NULL,
	instances		integer,
	state			text NOT NULL DEFAULT 'ACTIVE',
	registered_at	timestamptz NOT NULL,
	last_seen		timestamptz NOT NULL,
	lease			interval,
	CONSTRAINT agent_name_check CHECK (octet_length(name) BETWEEN 1 AND 128),
	CONSTRAINT agent_instances_check CHECK (instances IS NULL OR instances >= 1),
	CONSTRAINT agent_state_check CHECK (state IN ('ACTIVE', 'DRAINING')),
	CONSTRAINT agent_lease_check CHECK (lease IS NULL OR lease > interval '0')
);
CREATE INDEX agent_queue_unit ON quota_sched.agent (job_queue, capacity_unit);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent', '');
REVOKE ALL ON quota_sched.agent FROM PUBLIC;
GRANT SELECT ON quota_sched.agent TO quota_sched_admin;

/*
 * job_attempt (issue 21, a job's own output; tables.sql has its comment,
 * policies.sql its policies, agent_api.sql the triggers that delete the
 * rows of deleted jobs).  report() and release() gain a last argument,
 * output: their old signatures go first, so that CREATE OR REPLACE makes
 * the new ones (a call of 0.2's form, without output, still resolves).
 */
CREATE TABLE quota_sched.job_attempt (
	job_id			bigint NOT NULL,	/* quota_sched.job (id); see job_attempt_forget */
	attempt			integer NOT NULL,
	agent			text NOT NULL,
	host			text,
	log_path		text,
	handle			text,
	exit_code		integer,
	output			text,
	started_at		timestamptz,
	ended_at		timestamptz,
	PRIMARY KEY (job_id, attempt),
	CONSTRAINT job_attempt_attempt_check CHECK (attempt >= 1),
	CONSTRAINT job_attempt_host_check CHECK (octet_length(host) <= 255),
	CONSTRAINT job_attempt_log_path_check CHECK (octet_length(log_path) <= 4096),
	CONSTRAINT job_attempt_handle_check CHECK (octet_length(handle) <= 1024),
	CONSTRAINT job_attempt_output_check CHECK (octet_length(output) <= 4096)
);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_attempt', '');
REVOKE ALL ON quota_sched.job_attempt FROM PUBLIC;
GRANT SELECT ON quota_sched.job_attempt TO quota_sched_admin, quota_sched_user;
ALTER TABLE quota_sched.job_attempt ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_attempt_admin ON quota_sched.job_attempt FOR SELECT TO quota_sched_admin
	USING (true);
CREATE POLICY job_attempt_user ON quota_sched.job_attempt FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_attempt.job_id));

DROP FUNCTION quota_sched.report(bigint, text, text, text, integer, integer);
DROP FUNCTION quota_sched.release(bigint, text, text);
/* queue_snapshot's rows have the job's unit, size and (where the caller sees it) name */
DROP FUNCTION quota_sched.queue_snapshot(text, integer);

/*
 * UPDATE on the submitter's columns (tables.sql says why): job_before_update
 * refuses every change but priority, with a message saying so.
 */
GRANT UPDATE (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload,
	max_attempts, preemption_retries, timeout, client_token, tags, max_lease_losses)
	ON quota_sched.job TO quota_sched_admin, quota_sched_user;

ALTER TABLE quota_sched.job_queue ADD COLUMN fair_half_life interval,
	ADD CONSTRAINT job_queue_fair_half_life_check
		CHECK (quota_sched.check_fair_half_life(fair_half_life, borrow_order, 'job queue ' || name));
ALTER TABLE quota_sched.quota_share ADD COLUMN budget jsonb NOT NULL DEFAULT '{}',
	ADD COLUMN budget_period text NOT NULL DEFAULT 'MONTH',
	ADD CONSTRAINT quota_share_budget_check
		CHECK (quota_sched.check_capacity_map(budget, 'the budget of quota share ' || name)),
	ADD CONSTRAINT quota_share_budget_period_check
		CHECK (quota_sched.check_choice(budget_period, 'budget_period', 'quota share ' || name));

CREATE INDEX job_budget_exhausted ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'BUDGET_EXHAUSTED%';

ALTER TABLE quota_sched.held_capacity ADD COLUMN changed_at timestamptz NOT NULL DEFAULT now(),
	ADD COLUMN spent_day double precision NOT NULL DEFAULT 0,
	ADD COLUMN spent_week double precision NOT NULL DEFAULT 0,
	ADD COLUMN spent_month double precision NOT NULL DEFAULT 0;
ALTER TABLE quota_sched.held_capacity ALTER COLUMN changed_at DROP DEFAULT,
	ALTER COLUMN spent_day DROP DEFAULT, ALTER COLUMN spent_week DROP DEFAULT,
	ALTER COLUMN spent_month DROP DEFAULT;
/*
 * Every stripe changed now, its spent figures 0; the first stripe of each
 * share and unit (a new stripe 0 when it has none) then takes what the
 * history says they held since the start of this day, week and month.
 */
WITH hist AS (
	SELECT q.name AS job_queue, x.quota_share, x.capacity_unit,
		   coalesce(sum(x.used) FILTER (WHERE x.period = 'day'), 0) AS d,
		   coalesce(sum(x.used) FILTER (WHERE x.period = 'week'), 0) AS w,
		   coalesce(sum(x.used) FILTER (WHERE x.period = 'month'), 0) AS m
	  FROM quota_sched.job_queue q
	 CROSS JOIN (VALUES ('day'), ('week'), ('month')) AS p(period)
	 CROSS JOIN LATERAL (
		SELECT (date_trunc(p.period, now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS since) AS s
	 CROSS JOIN LATERAL (
		SELECT p.period, u.quota_share, u.capacity_unit, u.used_instance_seconds AS used
		  FROM quota_sched.utilization(q.name, s.since, now(),
									   greatest(now() - s.since, interval '1 second')) u
		 WHERE u.quota_share IS NOT NULL AND u.used_instance_seconds > 0
		   AND now() > s.since) AS x
	 GROUP BY q.name, x.quota_share, x.capacity_unit),
first_stripe AS (
	SELECT job_queue, quota_share, capacity_unit, min(stripe) AS stripe
	  FROM quota_sched.held_capacity GROUP BY 1, 2, 3),
filled AS (
	UPDATE quota_sched.held_capacity h SET spent_day = hist.d, spent_week = hist.w, spent_month = hist.m
	  FROM hist JOIN first_stripe f USING (job_queue, quota_share, capacity_unit)
	 WHERE h.job_queue = hist.job_queue AND h.quota_share = hist.quota_share
	   AND h.capacity_unit = hist.capacity_unit AND h.stripe = f.stripe)
INSERT INTO quota_sched.held_capacity
SELECT hist.job_queue, hist.quota_share, hist.capacity_unit, 0, 0, 0, 0, now(), hist.d, hist.w, hist.m
  FROM hist
 WHERE NOT EXISTS (SELECT FROM first_stripe f
					WHERE (f.job_queue, f.quota_share, f.capacity_unit)
						  = (hist.job_queue, hist.quota_share, hist.capacity_unit));

/* fair share with memory (tables.sql has their comment): empty */
CREATE TABLE quota_sched.held_change (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	at				timestamptz NOT NULL,
	delta			bigint NOT NULL
);
CREATE INDEX held_change_queue ON quota_sched.held_change (job_queue);
CREATE TABLE quota_sched.borrow_memory (
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	half_life		interval NOT NULL,
	at				timestamptz NOT NULL,
	held			bigint NOT NULL,
	capacity		bigint NOT NULL,
	recent			double precision NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit)
);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.borrow_memory', '');
REVOKE ALL ON quota_sched.held_change, quota_sched.borrow_memory FROM PUBLIC;
GRANT SELECT ON quota_sched.held_change, quota_sched.borrow_memory TO quota_sched_admin;

ALTER TABLE quota_sched.usage_hourly ADD COLUMN terminated bigint NOT NULL DEFAULT 0,
	ADD COLUMN preempted_early bigint NOT NULL DEFAULT 0;
ALTER TABLE quota_sched.usage_hourly ALTER COLUMN terminated DROP DEFAULT,
	ALTER COLUMN preempted_early DROP DEFAULT;
DROP FUNCTION quota_sched.utilization(text, timestamptz, timestamptz, interval);
DROP FUNCTION quota_sched.usage_parts(text, timestamptz, timestamptz, interval);
DROP FUNCTION quota_sched.usage_counts(text, timestamptz, timestamptz, interval);

/*
 * Who lent to whom (lending_hourly; tables.sql has its comment), rolled up
 * by rollup() up to usage_rollup.lent_until.  Nothing is computed here:
 * the next rollup() computes the hours 0.2 rolled up from the history that
 * is left of them (the jobs pruned before lack from them).
 */
ALTER TABLE quota_sched.usage_rollup ADD COLUMN lent_until timestamptz;
CREATE TABLE quota_sched.lending_hourly (
	job_queue		text NOT NULL,
	capacity_unit	text NOT NULL,
	hour			timestamptz NOT NULL,
	lender			text,
	borrower		text NOT NULL,
	instance_seconds double precision NOT NULL
);
CREATE UNIQUE INDEX lending_hourly_key ON quota_sched.lending_hourly
	(job_queue, hour, capacity_unit, coalesce(lender, ''), borrower);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.lending_hourly', '');
REVOKE ALL ON quota_sched.lending_hourly FROM PUBLIC;
GRANT SELECT ON quota_sched.lending_hourly TO quota_sched_admin;

/*
 * job_history_update also fires when a stop's reason changes (a
 * terminate() of a job stopping for another reason), so that every
 * terminated job has its TERMINATE event (tables.sql has the same).
 */
DROP TRIGGER job_history_update ON quota_sched.job;
CREATE TRIGGER job_history_update
	AFTER UPDATE OF state, stop_reason, priority, promised_at ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR (NEW.stop_reason IS NOT NULL
						   AND OLD.stop_reason IS DISTINCT FROM NEW.stop_reason)
					   OR OLD.priority IS DISTINCT FROM NEW.priority
					   OR (OLD.promised_at IS NULL) <> (NEW.promised_at IS NULL))
	EXECUTE FUNCTION quota_sched.job_history();
