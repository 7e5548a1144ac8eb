/* quota_sched 0.3 as released, kept as it was (doc/releasing.md): never edit it.  Made at the release from sql/src and sql/updates, as the Makefile makes the scripts of the current version. */
\echo Use "CREATE EXTENSION quota_sched" to load this file. \quit

/* ===== sql/src/roles.sql ===== */

/*
 * roles.sql
 *		The three roles of the extension and their use of its schema.
 *
 * Roles are cluster-wide: they are created when missing, NOLOGIN, and
 * outlive the extension (pg_dumpall --globals-only dumps them).  Logins
 * are granted them (doc/operations.md).  Run by the install script only.
 */

DO $roles$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['quota_sched_admin', 'quota_sched_agent', 'quota_sched_user']
	LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
		END IF;
	END LOOP;
END
$roles$;

REVOKE ALL ON SCHEMA quota_sched FROM PUBLIC;
GRANT USAGE ON SCHEMA quota_sched TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/validation.sql ===== */

/*
 * validation.sql
 *		The functions that the tables' CHECK constraints and indexes call.
 *
 * A function source: the install script runs it before it creates the
 * tables, and every update script runs it again (CREATE OR REPLACE), so
 * this is the one text of these functions.
 */

/* ---------------------------------------------------------------------
 * Check functions used by CHECK constraints.  Each returns true or raises
 * check_violation with a message naming the object and the bad value
 * (src/checks.c).  The CHECKs of the configuration tables run as whoever
 * writes them: admins.
 * ------------------------------------------------------------------- */

CREATE OR REPLACE FUNCTION quota_sched.check_name(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_name'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_capacity_map(value jsonb, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_capacity_map'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_state(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_state'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_strategy(strategy text, borrow_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_strategy'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_runnable_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_runnable_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_claim_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_claim_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* a queue's borrow_order, a share's queueing */
CREATE OR REPLACE FUNCTION quota_sched.check_choice(value text, column_name text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_choice'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_lend_limit(strategy text, lend_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_lend_limit'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_min_runtime(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_min_runtime'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.check_weight(weight integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_weight'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* a queue's fair_half_life, with its borrow_order: not STRICT (null is none) */
CREATE OR REPLACE FUNCTION quota_sched.check_fair_half_life(value interval, borrow_order text,
	what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_fair_half_life'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

REVOKE ALL ON FUNCTION quota_sched.check_name(text, text),
	quota_sched.check_capacity_map(jsonb, text),
	quota_sched.check_state(text, text),
	quota_sched.check_strategy(text, integer, text),
	quota_sched.check_runnable_timeout(interval, text),
	quota_sched.check_claim_timeout(interval, text),
	quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text),
	quota_sched.check_fair_half_life(interval, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.check_name(text, text),
	quota_sched.check_capacity_map(jsonb, text),
	quota_sched.check_state(text, text),
	quota_sched.check_strategy(text, integer, text),
	quota_sched.check_runnable_timeout(interval, text),
	quota_sched.check_claim_timeout(interval, text),
	quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text),
	quota_sched.check_fair_half_life(interval, text, text) TO quota_sched_admin;

/*
 * in_transaction_block: whether the statement runs inside a transaction
 * block, where a procedure cannot COMMIT (prune() refuses to start there,
 * 25001, src/checks.c).
 */
CREATE OR REPLACE FUNCTION quota_sched.in_transaction_block()
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_in_transaction_block'
LANGUAGE C VOLATILE PARALLEL RESTRICTED;

REVOKE ALL ON FUNCTION quota_sched.in_transaction_block() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.in_transaction_block() TO quota_sched_admin;

/*
 * The end of an attempt with a timeout: started_at + timeout, days and
 * months counted in UTC (so that it can be indexed: job_deadline).  Index
 * maintenance evaluates it as whoever writes the job.
 */
CREATE OR REPLACE FUNCTION quota_sched.attempt_deadline(started_at timestamptz, timeout interval)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((started_at AT TIME ZONE 'UTC') + timeout) AT TIME ZONE 'UTC';

REVOKE ALL ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/triggers.sql ===== */

/*
 * triggers.sql
 *		The functions of the tables' triggers (the triggers themselves are
 *		in tables.sql): validation of submissions and of changes to jobs,
 *		a job's history, the counters of held capacity, the configuration's
 *		history and cache, and the refusals of deletions.
 *
 * A function source: the install script runs it before it creates the
 * tables, and every update script runs it again (CREATE OR REPLACE), so
 * this is the one text of these functions.
 */

/* Jobs: validation of submissions and changes, history (src/job_*.c). */
CREATE OR REPLACE FUNCTION quota_sched.job_before_insert()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_before_insert'
LANGUAGE C;

CREATE OR REPLACE FUNCTION quota_sched.job_before_update()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_before_update'
LANGUAGE C;

CREATE OR REPLACE FUNCTION quota_sched.job_history()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_history'
LANGUAGE C;

/*
 * A job's history goes with it.  job_event.job_id has no foreign key: its
 * check would cost every submission an index probe and a row lock; this
 * statement trigger deletes the history of deleted jobs instead.
 */
CREATE OR REPLACE FUNCTION quota_sched.job_history_delete()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM quota_sched.job_event e USING deleted_jobs d WHERE e.job_id = d.id;
	RETURN NULL;
END
$$;

/*
 * The counters of held capacity (held_capacity, tables.sql): each change
 * of a job's state or stop_reason adds its difference, in the same
 * transaction, to its counter's stripe (src/usage.c).
 */
CREATE OR REPLACE FUNCTION quota_sched.job_usage()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_usage'
LANGUAGE C;

CREATE OR REPLACE FUNCTION quota_sched.job_usage_flush()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_usage_flush'
LANGUAGE C;

/*
 * What a stripe of the counters held in the current day, week or month
 * (held_capacity, tables.sql): spent_after gives it after a change (the
 * flush writes it), spent_at at a time (the pass and share_budget read it).
 */
CREATE OR REPLACE FUNCTION quota_sched.spent_after(spent double precision,
	changed_at timestamptz, instances bigint, delta bigint, at timestamptz, period text)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qs_spent_after'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.spent_at(spent double precision,
	changed_at timestamptz, instances bigint, at timestamptz, period text)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qs_spent_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* the calendar period (UTC) of a budget_period that holds a time, and its end */
CREATE OR REPLACE FUNCTION quota_sched.period_start(at timestamptz, period text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'qs_period_start'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.period_end(at timestamptz, period text)
RETURNS timestamptz
AS 'MODULE_PATHNAME', 'qs_period_end'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* recent_borrow (scheduling.md 3.12) at a time, from its value at another */
CREATE OR REPLACE FUNCTION quota_sched.recent_borrow_at(recent double precision, at timestamptz,
	borrowed bigint, t timestamptz, half_life interval)
RETURNS double precision
AS 'MODULE_PATHNAME', 'qs_recent_borrow_at'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION
	quota_sched.recent_borrow_at(double precision, timestamptz, bigint, timestamptz, interval),
	quota_sched.period_start(timestamptz, text), quota_sched.period_end(timestamptz, text),
	quota_sched.spent_after(double precision, timestamptz, bigint, bigint, timestamptz, text),
	quota_sched.spent_at(double precision, timestamptz, bigint, timestamptz, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
	quota_sched.recent_borrow_at(double precision, timestamptz, bigint, timestamptz, interval),
	quota_sched.period_start(timestamptz, text), quota_sched.period_end(timestamptz, text),
	quota_sched.spent_at(double precision, timestamptz, bigint, timestamptz, text)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * Configuration changes invalidate the backends' cached configuration (and
 * take effect at the next pass).
 */
CREATE OR REPLACE FUNCTION quota_sched.config_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_config_changed'
LANGUAGE C;

/*
 * Deleting a queue or share: refused while it has a job that has not ended;
 * otherwise its jobs and their history go with it (ON DELETE CASCADE), and
 * a share's counters of held capacity and memory of borrowing with it.
 */
CREATE OR REPLACE FUNCTION quota_sched.refuse_delete_with_live_jobs()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	live bigint;
	what text;
BEGIN
	IF TG_TABLE_NAME = 'job_queue' THEN
		SELECT count(*) INTO live FROM quota_sched.job
		 WHERE job_queue = OLD.name AND state NOT IN ('SUCCEEDED', 'FAILED');
		what := format('job queue "%s"', OLD.name);
	ELSE
		SELECT count(*) INTO live FROM quota_sched.job
		 WHERE job_queue = OLD.job_queue AND quota_share = OLD.name
		   AND state NOT IN ('SUCCEEDED', 'FAILED');
		what := format('quota share "%s" of job queue "%s"', OLD.name, OLD.job_queue);
	END IF;
	IF live > 0 THEN
		RAISE EXCEPTION 'cannot delete % while it has % job(s) that have not ended', what, live
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'Wait for them to end, or terminate them with quota_sched.terminate().';
	END IF;
	IF TG_TABLE_NAME = 'quota_share' THEN
		DELETE FROM quota_sched.held_capacity
		 WHERE job_queue = OLD.job_queue AND quota_share = OLD.name;
		DELETE FROM quota_sched.borrow_memory
		 WHERE job_queue = OLD.job_queue AND quota_share = OLD.name;
	END IF;
	RETURN OLD;
END
$$;

/*
 * warn_capacity_plan: after a write of the configuration, a WARNING for each
 * unit of the queues it touched that a share names and the environment
 * lacks, or whose shares are promised more than the environment has.
 */
CREATE OR REPLACE FUNCTION quota_sched.warn_capacity_plan()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	queues text[];
	r record;
BEGIN
	-- "changed" is the statement's transition table of new rows
	IF TG_TABLE_NAME = 'quota_share' THEN
		SELECT array_agg(DISTINCT c.job_queue) INTO queues FROM changed c;
	ELSIF TG_TABLE_NAME = 'job_queue' THEN
		SELECT array_agg(c.name) INTO queues FROM changed c;
	ELSE
		SELECT array_agg(q.name) INTO queues
		  FROM quota_sched.job_queue q JOIN changed c ON c.name = q.service_environment;
	END IF;
	FOR r IN
		SELECT p.* FROM quota_sched.capacity_plan p
		 WHERE p.job_queue = ANY (queues) AND (NOT p.in_environment OR p.overcommitted > 0)
		 ORDER BY p.job_queue COLLATE "C", p.capacity_unit COLLATE "C"
	LOOP
		IF NOT r.in_environment THEN
			RAISE WARNING 'quota shares of job queue "%" have % x % that its service environment does not have',
				r.job_queue, r.shares_capacity, r.capacity_unit
				USING HINT = 'Jobs of that unit cannot run; see quota_sched.capacity_plan.';
		ELSE
			RAISE WARNING 'quota shares of job queue "%" are promised % x %, more than the % of its service environment',
				r.job_queue, r.shares_capacity, r.capacity_unit, r.environment_capacity
				USING HINT = 'The environment''s limit holds: not every share can have its capacity at once; see quota_sched.capacity_plan.';
		END IF;
	END LOOP;
	RETURN NULL;
END
$$;


/*
 * config_history: one config_event row for each INSERT, UPDATE and DELETE
 * of an environment, queue or share, in the transaction that makes it
 * (tables.sql says what each column holds).  actor is the role of SET
 * ROLE, else the session's login: the changes PostgreSQL makes as the
 * tables' owner (cascades) and those made through a SECURITY DEFINER
 * function are still the admin's.  An UPDATE that changes no value writes
 * nothing; a TRUNCATE records a DELETE for each row it removes.  It writes
 * as the extension's owner, so admins need no privilege on config_event.
 */
CREATE OR REPLACE FUNCTION quota_sched.config_history()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET IntervalStyle = 'postgres'
AS $$
DECLARE
	-- the caller's role: SECURITY DEFINER changed current_user, not these
	actor text := CASE current_setting('role') WHEN 'none' THEN session_user::text
					   ELSE current_setting('role') END;
	olds jsonb[];
	news jsonb[];
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		EXECUTE format('SELECT coalesce(array_agg(to_jsonb(t)), ''{}'') FROM quota_sched.%I t',
					   TG_TABLE_NAME) INTO olds;
		news := '{}';
	ELSIF TG_OP = 'INSERT' THEN
		olds := ARRAY[NULL];
		news := ARRAY[to_jsonb(NEW)];
	ELSIF TG_OP = 'DELETE' THEN
		olds := ARRAY[to_jsonb(OLD)];
		news := ARRAY[NULL];
	ELSIF OLD IS NOT DISTINCT FROM NEW THEN
		RETURN NULL;
	ELSE
		olds := ARRAY[to_jsonb(OLD)];
		news := ARRAY[to_jsonb(NEW)];
	END IF;
	INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, old, new)
	SELECT now(), actor, TG_TABLE_NAME,
		   CASE TG_TABLE_NAME WHEN 'job_queue' THEN r.row ->> 'name' ELSE r.row ->> 'job_queue' END,
		   r.row ->> 'name', CASE TG_OP WHEN 'TRUNCATE' THEN 'DELETE' ELSE TG_OP END, c.old, c.new
	  FROM unnest(olds, news) AS c(old, new), LATERAL (SELECT coalesce(c.new, c.old)) AS r(row);
	RETURN NULL;
END
$$;


/*
 * job_before_delete: an admin may delete a job that has ended once the
 * hourly rollup covers its history (its figures stay in usage_hourly and
 * lending_hourly: the earlier of rolled_until and lent_until); a
 * live job, or one that ended after the rollup of its queue, is refused
 * (55000).  The deletion of a queue or share still takes its ended jobs
 * with it, whatever the rollup, and superusers are not checked.
 */
CREATE OR REPLACE FUNCTION quota_sched.job_before_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	rolled timestamptz;
BEGIN
	-- a cascade from the deletion of its queue or share; a superuser's
	-- DELETE (the counters of held capacity follow any deletion)
	IF pg_trigger_depth() > 1 OR current_setting('is_superuser') = 'on' THEN
		RETURN OLD;
	END IF;
	IF OLD.state NOT IN ('SUCCEEDED', 'FAILED') THEN
		RAISE EXCEPTION 'job % has not ended (%): it cannot be deleted', OLD.id, OLD.state
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'quota_sched.terminate() ends a job.';
	END IF;
	SELECT least(r.rolled_until, coalesce(r.lent_until, '-infinity')) INTO rolled
	  FROM quota_sched.usage_rollup r WHERE r.job_queue = OLD.job_queue;
	IF rolled IS NULL OR OLD.status_reason_at IS NULL OR OLD.status_reason_at >= rolled THEN
		RAISE EXCEPTION 'job % ended after the hourly rollup of job queue "%"%: its history is still needed',
			OLD.id, OLD.job_queue, coalesce(' (until ' || rolled || ')', '')
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'quota_sched.rollup() covers the hours that are over; quota_sched.prune() rolls up, then deletes.';
	END IF;
	RETURN OLD;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.job_before_insert(), quota_sched.job_before_update(),
	quota_sched.job_history(), quota_sched.job_history_delete(),
	quota_sched.job_usage(), quota_sched.job_usage_flush(), quota_sched.config_changed(),
	quota_sched.refuse_delete_with_live_jobs(), quota_sched.warn_capacity_plan(),
	quota_sched.config_history(), quota_sched.job_before_delete() FROM PUBLIC;

/* ===== sql/src/tables.sql ===== */

/*
 * tables.sql
 *		Every table, sequence and index of the extension, the tables'
 *		triggers, what pg_dump dumps of them, and their privileges.
 *
 * Run by the install script only: an update changes these objects in its
 * own script (sql/updates/), then this file is changed to match, so that
 * a fresh install and an updated database have the same catalog
 * (test/t/006_upgrade.pl compares them).  Columns are in the order an
 * update leaves them (an added column comes last).
 */

/* ---------------------------------------------------------------------
 * Configuration (scheduling.md 2): environments, queues, shares.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.service_environment (
	name			text PRIMARY KEY
		CHECK (quota_sched.check_name(name, 'service environment')),
	capacity_limits jsonb NOT NULL DEFAULT '{}'
		CHECK (quota_sched.check_capacity_map(capacity_limits, 'service environment ' || name)),
	state			text NOT NULL DEFAULT 'ENABLED'
		CHECK (quota_sched.check_state(state, 'service environment ' || name))
);

CREATE TABLE quota_sched.job_queue (
	name			text PRIMARY KEY
		CHECK (quota_sched.check_name(name, 'job queue')),
	service_environment text NOT NULL UNIQUE
		REFERENCES quota_sched.service_environment (name) ON UPDATE CASCADE,
	state			text NOT NULL DEFAULT 'ENABLED'
		CHECK (quota_sched.check_state(state, 'job queue ' || name)),
	runnable_timeout interval
		CHECK (quota_sched.check_runnable_timeout(runnable_timeout, 'job queue ' || name)),
	borrow_order	text NOT NULL DEFAULT 'FIFO'
		CHECK (quota_sched.check_choice(borrow_order, 'borrow_order', 'job queue ' || name)),
	claim_timeout	interval DEFAULT '5 minutes'
		CHECK (quota_sched.check_claim_timeout(claim_timeout, 'job queue ' || name)),
	fair_half_life	interval,
	CONSTRAINT job_queue_fair_half_life_check
		CHECK (quota_sched.check_fair_half_life(fair_half_life, borrow_order, 'job queue ' || name))
);

/*
 * The CHECKs of quota_share that read two columns are named as 0.1 and 0.2
 * named them when they added them one by one, so that a fresh install and
 * an updated database have the same constraints.
 */
CREATE TABLE quota_sched.quota_share (
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	name			text NOT NULL
		CHECK (quota_sched.check_name(name, 'quota share')),
	capacity_limits jsonb NOT NULL DEFAULT '{}',
	strategy		text NOT NULL,
	borrow_limit	integer NOT NULL DEFAULT -1,
	in_share_preemption boolean NOT NULL DEFAULT false,
	state			text NOT NULL DEFAULT 'ENABLED',
	submit_role		name,
	lend_limit		integer NOT NULL DEFAULT -1,
	queueing		text NOT NULL DEFAULT 'BEST_EFFORT',
	min_runtime		interval,
	weight			integer NOT NULL DEFAULT 1,
	budget			jsonb NOT NULL DEFAULT '{}',
	budget_period	text NOT NULL DEFAULT 'MONTH',
	PRIMARY KEY (job_queue, name),
	CONSTRAINT quota_share_check
		CHECK (quota_sched.check_capacity_map(capacity_limits, 'quota share ' || name)),
	CONSTRAINT quota_share_check1 CHECK (quota_sched.check_state(state, 'quota share ' || name)),
	CONSTRAINT quota_share_check2
		CHECK (quota_sched.check_strategy(strategy, borrow_limit, 'quota share ' || name)),
	CONSTRAINT quota_share_check3
		CHECK (quota_sched.check_choice(queueing, 'queueing', 'quota share ' || name)),
	CONSTRAINT quota_share_check4
		CHECK (quota_sched.check_min_runtime(min_runtime, 'quota share ' || name)),
	CONSTRAINT quota_share_check5 CHECK (quota_sched.check_weight(weight, 'quota share ' || name)),
	CONSTRAINT quota_share_check6
		CHECK (quota_sched.check_lend_limit(strategy, lend_limit, 'quota share ' || name)),
	CONSTRAINT quota_share_budget_check
		CHECK (quota_sched.check_capacity_map(budget, 'the budget of quota share ' || name)),
	CONSTRAINT quota_share_budget_period_check
		CHECK (quota_sched.check_choice(budget_period, 'budget_period', 'quota share ' || name))
);

/* ---------------------------------------------------------------------
 * Jobs.  System columns have no defaults: the insert trigger fills them and
 * refuses a value given by the submitter.  agent_role is the login that
 * claimed the job: only it (or an admin) may heartbeat, report on or
 * release the job afterwards; jobs claimed before 0.2 have none, and any
 * agent login may act on them.  The fleet's columns (0.3, scheduling.md
 * 3.10): lease_losses counts leases that ran out (past max_lease_losses,
 * which the submitter may set, the job fails); claim_requeues counts the
 * times no agent claimed it within its queue's claim_timeout, and
 * claim_backoff_until holds it back from dispatch after such a requeue.
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.job_id_seq;

CREATE TABLE quota_sched.job (
	id				bigint PRIMARY KEY,
	name			text NOT NULL,
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	priority		integer NOT NULL DEFAULT 0,
	capacity_unit	text NOT NULL,
	instance_count	integer NOT NULL,
	payload			jsonb,
	max_attempts	integer NOT NULL DEFAULT 1,
	preemption_retries integer,
	timeout			interval,
	client_token	text UNIQUE,
	tags			jsonb,
	owner			name NOT NULL,
	state			text NOT NULL,
	status_reason	text,
	status_reason_at timestamptz,
	stop_reason		text,
	stop_requested_at timestamptz,
	preempted_for	bigint,
	promised_at		timestamptz,
	agent			text,
	lease_until		timestamptz,
	failed_attempts integer NOT NULL,
	preemption_count integer NOT NULL,
	submitted_at	timestamptz NOT NULL,
	queued_at		timestamptz NOT NULL,
	scheduled_at	timestamptz,
	started_at		timestamptz,
	stopped_at		timestamptz,
	agent_role		name,
	max_lease_losses integer NOT NULL DEFAULT 3,
	lease_losses	integer NOT NULL,
	claim_requeues	integer NOT NULL,
	claim_backoff_until timestamptz,
	CONSTRAINT job_state_check CHECK (state IN ('SUBMITTED', 'PENDING', 'RUNNABLE', 'SCHEDULED',
						  'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED')),
	CONSTRAINT job_share_fkey FOREIGN KEY (job_queue, quota_share)
		REFERENCES quota_sched.quota_share (job_queue, name) ON DELETE CASCADE
);

ALTER SEQUENCE quota_sched.job_id_seq OWNED BY quota_sched.job.id;

/*
 * The heads of each share's RUNNABLE jobs of a unit, in share order
 * (scheduling.md 3.2); also the loose index scan for the (share, unit)
 * pairs with jobs.
 */
CREATE INDEX job_runnable_share_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority DESC, queued_at, id)
	WHERE state = 'RUNNABLE';
/* Promised jobs (3.6) and misconfigured ones (3.7, 3.9). */
CREATE INDEX job_promised ON quota_sched.job (job_queue, promised_at, id)
	WHERE state = 'RUNNABLE' AND promised_at IS NOT NULL;
CREATE INDEX job_misconfigured ON quota_sched.job (job_queue, status_reason_at)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'MISCONFIGURATION:%';
/* Jobs larger than every live agent (3.10), for clearing their reason. */
CREATE INDEX job_no_agent_fits ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS';
/* RUNNABLE jobs of a share whose budget of the unit is spent (3.11) */
CREATE INDEX job_budget_exhausted ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'BUDGET_EXHAUSTED%';
/* Unclaimed jobs, oldest first (claim). */
CREATE INDEX job_claimable ON quota_sched.job (job_queue, scheduled_at, id)
	WHERE state = 'SCHEDULED' AND agent IS NULL;
/* The smallest waiting jobs of a lender, per unit (wanted capacity, 3.2). */
CREATE INDEX job_runnable_by_size ON quota_sched.job
	(job_queue, quota_share, capacity_unit, instance_count)
	WHERE state = 'RUNNABLE';
/* An agent's held jobs (heartbeat). */
CREATE INDEX job_agent_held ON quota_sched.job (agent)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING');
/*
 * What a pass reads of the held jobs, and only what it needs: those whose
 * lease expired or whose attempt passed its deadline, those stopping for a
 * promised job, and, when it looks for victims, a share's jobs in victim
 * order (3.4), as far as it goes.
 */
CREATE INDEX job_victim_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority, scheduled_at DESC, id DESC)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND stop_reason IS NULL;
CREATE INDEX job_lease ON quota_sched.job (job_queue, lease_until)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND agent IS NOT NULL;
CREATE INDEX job_deadline ON quota_sched.job
	(job_queue, quota_sched.attempt_deadline(started_at, timeout))
	WHERE state = 'RUNNING' AND timeout IS NOT NULL AND stop_reason IS NULL;
CREATE INDEX job_stopping_for ON quota_sched.job (job_queue, preempted_for)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND stop_reason IS NOT NULL
	  AND preempted_for IS NOT NULL;
/* Ended jobs, oldest first (prune). */
CREATE INDEX job_ended ON quota_sched.job (status_reason_at)
	WHERE state IN ('SUCCEEDED', 'FAILED');

/* ---------------------------------------------------------------------
 * Counters of held capacity (scheduling.md 3.1): per queue, share and
 * unit, the instances held by SCHEDULED, STARTING and RUNNING jobs, those
 * of them whose stop is pending, and how many jobs hold them.  A pass reads
 * these rows instead of the jobs.
 *
 * Every change of a job's state or stop_reason adds its difference, in the
 * same transaction (the job_usage triggers, src/usage.c), to one of a few
 * stripes of its counter: the stripe of the backend that makes it (1 + its
 * process number modulo 15), so that concurrent reports rarely wait for
 * one another's row, or stripe 0 for a pass, which nobody else writes (a
 * pass never waits for a counter's row).  A counter is the sum of its stripes; rows are only
 * ever updated in place (no index column changes, room left on each page),
 * so they leave no dead index entries behind however fast jobs churn.
 * Nobody else writes them.
 *
 * Each stripe also keeps what its instances were held for (spent(S,u) of
 * scheduling.md 3.11, in instance-seconds): changed_at is the time of its
 * last change (the transaction's start, as job_event.at), and spent_day,
 * spent_week and spent_month what it held from the start of the calendar
 * day, week and month (UTC) of changed_at up to changed_at; it has held
 * `instances` since.  So spent is known at any time in closed form
 * (quota_sched.spent_at) for every budget_period, and changing a share's
 * budget or period needs no history.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.held_capacity (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	stripe			smallint NOT NULL,
	instances		bigint NOT NULL,
	stopping_instances bigint NOT NULL,
	jobs			bigint NOT NULL,
	changed_at		timestamptz NOT NULL,
	spent_day		double precision NOT NULL,
	spent_week		double precision NOT NULL,
	spent_month		double precision NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, stripe)
) WITH (fillfactor = 50);

/* ---------------------------------------------------------------------
 * Passes and the history of jobs.
 *
 * job_event holds a job's complete history (accounting): besides each
 * change of state (kind STATE), the requests to stop (STOP, with the
 * reason and the job it makes room for; TERMINATE when a user asked, the
 * user being the actor), priority changes (PRIORITY: old_priority,
 * priority), and promises made and lapsed (PROMISE, PROMISE_LAPSED).  An
 * event that ends an attempt carries the exit code its agent reported, and
 * the job it made room for when preemption ended it.  Every event carries
 * what accounting needs without a join to the job, which may be deleted
 * later: queue, share, unit, instance count, the attempt during which it
 * happened (1 + failed_attempts + preemption_count + lease_losses before the change),
 * and the job's priority.  A dispatch carries how long the job waited
 * since it last became RUNNABLE (waited).
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.pass_log_id_seq;

CREATE TABLE quota_sched.pass_log (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.pass_log_id_seq'),
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	started_at		timestamptz NOT NULL,
	finished_at		timestamptz NOT NULL,
	dispatched		integer NOT NULL DEFAULT 0,
	preempted		integer NOT NULL DEFAULT 0,
	requeued		integer NOT NULL DEFAULT 0,
	failed			integer NOT NULL DEFAULT 0
);

ALTER SEQUENCE quota_sched.pass_log_id_seq OWNED BY quota_sched.pass_log.id;

CREATE SEQUENCE quota_sched.job_event_id_seq;

CREATE TABLE quota_sched.job_event (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.job_event_id_seq'),
	job_id			bigint NOT NULL,	/* quota_sched.job (id); see job_history_delete */
	at				timestamptz NOT NULL,
	pass_id			bigint,
	from_state		text,
	to_state		text NOT NULL,
	reason			text,
	actor			text NOT NULL,
	kind			text NOT NULL DEFAULT 'STATE',
	job_queue		text,
	quota_share		text,
	capacity_unit	text,
	instance_count	integer,
	attempt			integer,
	priority		integer,
	old_priority	integer,
	preempted_for	bigint,
	exit_code		integer,
	waited			interval
);

ALTER SEQUENCE quota_sched.job_event_id_seq OWNED BY quota_sched.job_event.id;

CREATE INDEX job_event_job ON quota_sched.job_event (job_id, id);
/*
 * Reports read the history by time (the hours after the rollup): events
 * are written in about the order of their times, so a BRIN index finds
 * them at almost no cost to the writes.
 */
CREATE INDEX job_event_at ON quota_sched.job_event USING brin (at);

/*
 * queue_status: per queue, the jobs its passes passed over because
 * another transaction held their rows locked (at most 100, by id), since
 * when, and for how many passes in a row.  Only the pass writes it; the
 * row of a queue appears at the first job passed over.
 */
CREATE TABLE quota_sched.queue_status (
	job_queue		text PRIMARY KEY
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	passed_over		bigint[] NOT NULL,
	passed_over_since timestamptz,
	passed_over_passes integer NOT NULL
);

/* ---------------------------------------------------------------------
 * The history of the configuration: one config_event row for each INSERT,
 * UPDATE and DELETE of an environment, queue or share, in the transaction
 * that makes it (config_history, triggers.sql), so that reports can tell
 * each share's and environment's capacity and limits at any past time.
 *
 * at is the transaction's start (as job_event.at); actor the role acting.
 * job_queue is null for an environment, the queue's name for a queue and a
 * share; name and job_queue are the new row's for an INSERT or UPDATE (a
 * rename is recorded under the new name, the old one in old), the old
 * row's for a DELETE.  old and new are the whole rows (to_jsonb; intervals
 * in IntervalStyle postgres, whatever the writer's session uses).  An
 * update of the extension that adds the history records the configuration
 * there is as BASELINE rows.  Changes made with the triggers off
 * (session_replication_role = replica, as a restore does) are not
 * recorded.  The index answers "the row of share (q, s) in force at time
 * t": the last of (object, job_queue, name) at or before t.
 * ------------------------------------------------------------------- */

CREATE SEQUENCE quota_sched.config_event_id_seq;

CREATE TABLE quota_sched.config_event (
	id				bigint PRIMARY KEY DEFAULT nextval('quota_sched.config_event_id_seq'),
	at				timestamptz NOT NULL,
	actor			text NOT NULL,
	object			text NOT NULL
		CHECK (object IN ('service_environment', 'job_queue', 'quota_share')),
	job_queue		text,
	name			text NOT NULL,
	action			text NOT NULL
		CHECK (action IN ('INSERT', 'UPDATE', 'DELETE', 'BASELINE')),
	old				jsonb,
	new				jsonb,
	CHECK ((job_queue IS NULL) = (object = 'service_environment')),
	CHECK ((old IS NULL) = (action IN ('INSERT', 'BASELINE'))
		   AND (new IS NULL) = (action = 'DELETE'))
);

ALTER SEQUENCE quota_sched.config_event_id_seq OWNED BY quota_sched.config_event.id;

CREATE INDEX config_event_object ON quota_sched.config_event (object, job_queue, name, at, id);

/* ---------------------------------------------------------------------
 * The hourly rollup (reporting.sql): per queue, share (null: the
 * environment) and unit, each hour's integrals and event counts, and the
 * levels at its end; usage_rollup says until when each queue is rolled up
 * (an hour's edge); usage_totals keeps the counts of usage_counters over
 * the hours rolled up, so that metrics() never goes back, however the
 * history is pruned.  Written by rollup() only.  (terminated and
 * preempted_early are last: the update to 0.3 adds them, and keeps 0 in
 * the rows rolled up before, whose failed counted terminations too.)
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.usage_hourly (
	job_queue		text NOT NULL,
	quota_share		text,
	capacity_unit	text NOT NULL,
	hour			timestamptz NOT NULL,
	capacity		double precision NOT NULL,
	used			double precision NOT NULL,
	own				double precision NOT NULL,
	borrowed		double precision NOT NULL,
	idle			double precision NOT NULL,
	usage_end		bigint NOT NULL,
	capacity_end	bigint NOT NULL,
	dispatched		bigint NOT NULL,
	succeeded		bigint NOT NULL,
	failed			bigint NOT NULL,
	preempted		bigint NOT NULL,
	preempting		bigint NOT NULL,
	waits			real[] NOT NULL,
	terminated		bigint NOT NULL,	/* FAILED by a terminate(), not in failed */
	preempted_early	bigint NOT NULL		/* of preempted, after less than a minute */
);
CREATE UNIQUE INDEX usage_hourly_key ON quota_sched.usage_hourly
	(job_queue, hour, coalesce(quota_share, ''), capacity_unit);

CREATE TABLE quota_sched.usage_rollup (
	job_queue		text PRIMARY KEY,
	rolled_until	timestamptz NOT NULL,
	lent_until		timestamptz		/* lending_hourly's end (null: none yet) */
);

CREATE TABLE quota_sched.usage_totals (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	counter			text NOT NULL,
	value			bigint NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, counter)
);

/*
 * Who lent to whom (lending_parts in reporting.sql): per queue, unit, hour,
 * lender (null: the environment's unassigned capacity) and borrower, the
 * instance-seconds the borrower held of the lender's capacity, for the
 * hours up to usage_rollup.lent_until.  Written by rollup() only.
 */
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

/* ---------------------------------------------------------------------
 * The agents the scheduler knows (scheduling.md 3.10, doc/agents.md): one row per
 * agent name that called agent_ready, bound to the login that did (only
 * it, or an admin, refreshes the row), with what it says it can run: its
 * queue, unit and instances in all (null: no bound, as an external
 * launcher that provisions each job).  last_seen is its last agent_ready,
 * claim or heartbeat; lease the lease of its last claim or heartbeat
 * (null: it took none yet).  Written by the agents' functions only
 * (src/fleet.c); read through the view agents.
 * ------------------------------------------------------------------- */

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
/* A queue's agents of a unit (the pass's agent bound, explain). */
CREATE INDEX agent_queue_unit ON quota_sched.agent (job_queue, capacity_unit);

/* ---------------------------------------------------------------------
 * job_attempt (issue 21, "a job's own output"): what the agent that ran an
 * attempt of a job says of it, for "why did my job fail" without access to
 * the host: where it ran (host), where the agent keeps its output there
 * (log_path), the external launcher's handle, and at the attempt's end its
 * exit code and the last 4096 bytes of its output.  One row per (job,
 * attempt number); a run released (no attempt counted) and run again
 * under the same number replaces the row.  Written only by the agents'
 * functions (attempt_started, report, release: src/job_attempt.c) as the
 * job's agent; read by users through row-level security (policies.sql:
 * the rows of the jobs they see) and the view job_attempts.  The rows of
 * a deleted (pruned) job, or of a TRUNCATE of jobs, go with it (the
 * triggers of job_attempt_forget, agent_api.sql: no foreign key, which
 * would make a TRUNCATE of job need CASCADE).
 * ------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------
 * Triggers (their functions: triggers.sql).
 * ------------------------------------------------------------------- */

CREATE TRIGGER job_before_insert BEFORE INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_insert();
CREATE TRIGGER job_before_update BEFORE UPDATE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_update();
CREATE TRIGGER job_before_delete BEFORE DELETE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_delete();
CREATE TRIGGER job_history_insert AFTER INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_history();
CREATE TRIGGER job_history_update
	AFTER UPDATE OF state, stop_reason, priority, promised_at ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR (NEW.stop_reason IS NOT NULL
						   AND OLD.stop_reason IS DISTINCT FROM NEW.stop_reason)
					   OR OLD.priority IS DISTINCT FROM NEW.priority
					   OR (OLD.promised_at IS NULL) <> (NEW.promised_at IS NULL))
	EXECUTE FUNCTION quota_sched.job_history();
CREATE TRIGGER job_history_delete AFTER DELETE ON quota_sched.job
	REFERENCING OLD TABLE AS deleted_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_history_delete();
CREATE TRIGGER job_usage_update AFTER UPDATE OF state, stop_reason ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR OLD.stop_reason IS DISTINCT FROM NEW.stop_reason)
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_delete AFTER DELETE ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IN ('SCHEDULED', 'STARTING', 'RUNNING'))
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_flush AFTER UPDATE OR DELETE OR TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_usage_flush();

CREATE TRIGGER service_environment_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.service_environment
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER job_queue_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.job_queue
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER quota_share_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();

CREATE TRIGGER job_queue_before_delete BEFORE DELETE ON quota_sched.job_queue
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();
CREATE TRIGGER quota_share_before_delete BEFORE DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();

CREATE TRIGGER quota_share_plan_insert AFTER INSERT ON quota_sched.quota_share
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER quota_share_plan_update AFTER UPDATE ON quota_sched.quota_share
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER service_environment_plan_update AFTER UPDATE ON quota_sched.service_environment
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();
CREATE TRIGGER job_queue_plan_insert AFTER INSERT ON quota_sched.job_queue
	REFERENCING NEW TABLE AS changed
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.warn_capacity_plan();

CREATE TRIGGER service_environment_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.service_environment
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER service_environment_history_truncate
	BEFORE TRUNCATE ON quota_sched.service_environment
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER job_queue_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.job_queue
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER job_queue_history_truncate
	BEFORE TRUNCATE ON quota_sched.job_queue
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER quota_share_history
	AFTER INSERT OR UPDATE OR DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.config_history();
CREATE TRIGGER quota_share_history_truncate
	BEFORE TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_history();

/* ---------------------------------------------------------------------
 * Fair share with memory (scheduling.md 3.12), for queues with a
 * fair_half_life.  held_change: every change of held capacity of such a
 * queue (the transaction's start, the share, the unit, the instances added
 * or taken), written by the job_usage_flush trigger (src/usage.c) in the
 * transaction of the change, inserted only, so that no writer waits for
 * another; the next pass reads the rows committed and deletes them.
 * borrow_memory: per share and unit, recent_borrow (instance-seconds) at
 * `at`, with the instances held then, after every change read, and the
 * capacity limit in force since: between two changes borrowed(S,u) is
 * constant, so the pass carries recent_borrow on in closed form from one
 * change to the next (src/borrow_memory.c).  Only the pass writes it, the
 * rows of the cells that changed.  half_life is the queue's when the
 * memory began: another one starts it again from 0.
 * ------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------
 * Dump and restore: every table and sequence holding user data.
 * ------------------------------------------------------------------- */

SELECT pg_catalog.pg_extension_config_dump('quota_sched.service_environment', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_queue', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.quota_share', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_event', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.pass_log', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_event_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.pass_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_capacity', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.queue_status', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_hourly', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_rollup', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_totals', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.lending_hourly', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent', '');
/* job_attempt (issue 21, a job's own output) */
SELECT pg_catalog.pg_extension_config_dump('quota_sched.job_attempt', '');
/* fair share with memory (scheduling.md 3.12) */
SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_change', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.borrow_memory', '');

/* ---------------------------------------------------------------------
 * Privileges (scheduling.md 8).  Nothing for PUBLIC.
 * ------------------------------------------------------------------- */

REVOKE ALL ON quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share,
	quota_sched.job, quota_sched.job_event, quota_sched.pass_log, quota_sched.held_capacity,
	quota_sched.queue_status, quota_sched.config_event, quota_sched.usage_hourly,
	quota_sched.usage_rollup, quota_sched.usage_totals, quota_sched.lending_hourly,
	quota_sched.agent, quota_sched.held_change, quota_sched.borrow_memory FROM PUBLIC;
REVOKE ALL ON SEQUENCE quota_sched.job_id_seq, quota_sched.job_event_id_seq,
	quota_sched.pass_log_id_seq, quota_sched.config_event_id_seq FROM PUBLIC;

/* Configuration: admins write it, everybody reads it. */
GRANT SELECT ON quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT INSERT, UPDATE, DELETE ON quota_sched.service_environment, quota_sched.job_queue,
	quota_sched.quota_share TO quota_sched_admin;

/*
 * Jobs.  Submitters may name any column in INSERT so that the job
 * triggers, not a bare "permission denied", tell them which column they
 * may not set: the triggers refuse every system column on INSERT and every
 * change but priority on UPDATE, for every role.  For the same reason
 * users and admins have UPDATE on the submitter's columns (0.3): an UPDATE
 * of instance_count reaches job_before_update, which refuses it (42501)
 * saying that only priority may change, where "permission denied for
 * table job" said nothing of it.  Only priority ever changes; the system's
 * columns keep no UPDATE privilege at all.  The privileges are the
 * columns', not the table's.  With UPDATE on the table, any team member could LOCK TABLE
 * quota_sched.job IN ACCESS EXCLUSIVE MODE and stall every queue; LOCK
 * TABLE beyond ROW EXCLUSIVE needs a table privilege.  Admins may delete
 * jobs that have ended (job_before_delete) and old passes (prune).
 */
GRANT SELECT, INSERT ON quota_sched.job TO quota_sched_admin, quota_sched_user;
GRANT SELECT ON quota_sched.job TO quota_sched_agent;
GRANT UPDATE (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload,
	max_attempts, preemption_retries, timeout, client_token, tags, max_lease_losses)
	ON quota_sched.job TO quota_sched_admin, quota_sched_user;
GRANT SELECT ON quota_sched.job_event, quota_sched.pass_log
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT DELETE ON quota_sched.job, quota_sched.pass_log TO quota_sched_admin;

/* What only the system writes, admins read. */
GRANT SELECT ON quota_sched.queue_status, quota_sched.config_event, quota_sched.usage_hourly,
	quota_sched.usage_rollup, quota_sched.usage_totals, quota_sched.lending_hourly,
	quota_sched.agent, quota_sched.held_change, quota_sched.borrow_memory TO quota_sched_admin;

/*
 * job_attempt (issue 21, a job's own output): admins and users read it
 * (row-level security, policies.sql, keeps a user to the rows of the jobs
 * they see); only the agents' functions write it.
 */
REVOKE ALL ON quota_sched.job_attempt FROM PUBLIC;
GRANT SELECT ON quota_sched.job_attempt TO quota_sched_admin, quota_sched_user;

/* ===== sql/src/pass_api.sql ===== */

/*
 * pass_api.sql
 *		The scheduling pass (scheduling.md 3) as admins call it, the queue's
 *		order as a pass sees it, and the check of the counters it reads.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 */

CREATE OR REPLACE FUNCTION quota_sched.run_pass(job_queue text DEFAULT NULL, dry_run boolean DEFAULT false)
RETURNS TABLE (job_id bigint, action text, quota_share text, reason text)
AS 'MODULE_PATHNAME', 'qs_run_pass'
LANGUAGE C CALLED ON NULL INPUT
SET jit = off;	/* a pass is many tiny queries; JIT would cost more than them */

CREATE OR REPLACE FUNCTION quota_sched.queue_snapshot(job_queue text, max_jobs integer DEFAULT 100)
RETURNS TABLE (queue_position integer, job_id bigint, quota_share text, priority integer,
			   queued_at timestamptz, capacity_unit text, instance_count integer, name text)
AS 'MODULE_PATHNAME', 'qs_queue_snapshot'
LANGUAGE C STABLE CALLED ON NULL INPUT
SET jit = off;

/*
 * The counters that do not match the jobs, recounted from them: none,
 * unless jobs were changed with the triggers off (session_replication_role
 * = replica) other than by a restore of a dump.
 */
CREATE OR REPLACE FUNCTION quota_sched.held_capacity_drift()
RETURNS TABLE (job_queue text, quota_share text, capacity_unit text,
			   kept_instances bigint, counted_instances bigint,
			   kept_stopping_instances bigint, counted_stopping_instances bigint,
			   kept_jobs bigint, counted_jobs bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	WITH counted AS (
		SELECT j.job_queue, j.quota_share, j.capacity_unit,
			   sum(j.instance_count)::bigint AS instances,
			   coalesce(sum(j.instance_count) FILTER (WHERE j.stop_reason IS NOT NULL), 0)::bigint
				   AS stopping_instances,
			   count(*) AS jobs
		  FROM quota_sched.job j
		 WHERE j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')
		 GROUP BY 1, 2, 3),
	kept AS (
		SELECT c.job_queue, c.quota_share, c.capacity_unit, sum(c.instances)::bigint AS instances,
			   sum(c.stopping_instances)::bigint AS stopping_instances, sum(c.jobs)::bigint AS jobs
		  FROM quota_sched.held_capacity c
		 GROUP BY 1, 2, 3)
	SELECT job_queue, quota_share, capacity_unit,
		   coalesce(k.instances, 0), coalesce(c.instances, 0),
		   coalesce(k.stopping_instances, 0), coalesce(c.stopping_instances, 0),
		   coalesce(k.jobs, 0), coalesce(c.jobs, 0)
	  FROM counted c FULL JOIN kept k USING (job_queue, quota_share, capacity_unit)
	 WHERE (coalesce(k.instances, 0), coalesce(k.stopping_instances, 0), coalesce(k.jobs, 0))
		   IS DISTINCT FROM
		   (coalesce(c.instances, 0), coalesce(c.stopping_instances, 0), coalesce(c.jobs, 0))
	 ORDER BY 1, 2, 3
$$;

REVOKE ALL ON FUNCTION quota_sched.held_capacity_drift() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.held_capacity_drift() TO quota_sched_admin;

REVOKE ALL ON FUNCTION quota_sched.run_pass(text, boolean),
	quota_sched.queue_snapshot(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.run_pass(text, boolean) TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.queue_snapshot(text, integer)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/agent_api.sql ===== */

/*
 * agent_api.sql
 *		What launcher agents call (scheduling.md 5.2, doc/agents.md): claim
 *		dispatched jobs, renew their leases, report their states, release
 *		them.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.  A
 * change of a signature or result type needs a DROP FUNCTION in the
 * update's own script first (sql/updates/).
 */

/*
 * claim(..., start => true): the jobs claimed are RUNNING at once (an
 * agent that starts what it claims saves the round trip of the RUNNING
 * report).
 */
CREATE OR REPLACE FUNCTION quota_sched.claim(agent text, job_queue text, capacity_unit text DEFAULT NULL,
	max_jobs integer DEFAULT 1, lease interval DEFAULT '60 seconds',
	max_instances integer DEFAULT NULL, start boolean DEFAULT false)
RETURNS SETOF quota_sched.job
AS 'MODULE_PATHNAME', 'qs_claim'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * heartbeat() returns each job's lease as it is now: a job whose row
 * another transaction holds keeps the lease it had (the heartbeat does not
 * wait for the row), and an agent that counts on a renewed lease would
 * run the job past the moment a pass takes it back.
 */
CREATE OR REPLACE FUNCTION quota_sched.heartbeat(agent text, lease interval DEFAULT '60 seconds')
RETURNS TABLE (job_id bigint, stop_reason text, lease_until timestamptz)
AS 'MODULE_PATHNAME', 'qs_heartbeat'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * report(..., attempt => N): a report about an attempt that is over
 * (1 + failed_attempts + preemption_count + lease_losses moved on) changes nothing, so
 * that a report retried after a lost reply never lands on the job's next
 * attempt.  report(..., exit_code => N): the attempt's exit code, kept in
 * the history with its end.  report(..., output => TEXT) and
 * release(..., output => TEXT), at an attempt's end: the last lines of
 * its output, kept in job_attempt with the exit code (at most the last
 * 4096 bytes, cut at a character boundary; more than 65536 is refused,
 * 22001).  Agents of 0.2 call both without output.
 */
CREATE OR REPLACE FUNCTION quota_sched.report(job_id bigint, agent text, state text, reason text DEFAULT NULL,
	attempt integer DEFAULT NULL, exit_code integer DEFAULT NULL, output text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_report'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.release(job_id bigint, agent text, reason text DEFAULT NULL,
	output text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_release'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * attempt_started(job_id, agent, attempt, host, log_path, handle): the
 * agent that holds the job says where its attempt runs: the host, the
 * file of its output there, and (external launcher) its handle, which a
 * second call gives once the start command printed it (a null keeps what
 * the row has).  Returns the attempt's row of job_attempt; null (a no-op)
 * for an attempt that is over.  The same checks as report(): another
 * login's job is refused (42501), a job the agent does not hold too
 * (55000).
 */
CREATE OR REPLACE FUNCTION quota_sched.attempt_started(job_id bigint, agent text, attempt integer,
	host text, log_path text, handle text DEFAULT NULL)
RETURNS quota_sched.job_attempt
AS 'MODULE_PATHNAME', 'qs_attempt_started'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer, text),
	quota_sched.release(bigint, text, text, text),
	quota_sched.attempt_started(bigint, text, integer, text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer, text),
	quota_sched.release(bigint, text, text, text),
	quota_sched.attempt_started(bigint, text, integer, text, text, text)
	TO quota_sched_agent;

/*
 * The agents the scheduler knows (scheduling.md 3.10, doc/agents.md).
 * agent_ready() registers or refreshes the calling login's agent and
 * returns its row; a name another login registered is refused (42501)
 * unless the caller is an admin.  drain_agent() (admins) sets an agent
 * DRAINING, or ACTIVE again, and returns its row; an unknown agent raises
 * no_data_found (P0002).
 */
CREATE OR REPLACE FUNCTION quota_sched.agent_ready(agent text, job_queue text, capacity_unit text,
	instances integer DEFAULT NULL)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_agent_ready'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.drain_agent(agent text, draining boolean DEFAULT true)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_drain_agent'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.agent_ready(text, text, text, integer),
	quota_sched.drain_agent(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.agent_ready(text, text, text, integer)
	TO quota_sched_admin, quota_sched_agent;
GRANT EXECUTE ON FUNCTION quota_sched.drain_agent(text, boolean) TO quota_sched_admin;

/*
 * agents: each agent, whether it is live (its last agent_ready, claim or
 * heartbeat younger than its last lease, 60 seconds if it took none), and
 * the jobs and instances it holds (SCHEDULED, STARTING, RUNNING with its
 * name).  Admins see every agent; an agent login sees those it
 * registered.  The view reads as its owner (the table has no privilege for
 * agents), so it is a security barrier: no function of the caller's sees
 * a row before the filter.
 */
CREATE OR REPLACE VIEW quota_sched.agents WITH (security_barrier = true) AS
SELECT a.name AS agent, a.login, a.job_queue, a.capacity_unit, a.instances, a.state,
	   a.last_seen + coalesce(a.lease, interval '60 seconds') > pg_catalog.now() AS live,
	   a.last_seen, h.held_jobs, h.held_instances
  FROM quota_sched.agent a
	   CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS held_jobs,
			   coalesce(pg_catalog.sum(j.instance_count), 0) AS held_instances
		  FROM quota_sched.job j
		 WHERE j.agent = a.name AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')) h
 WHERE a.login = CURRENT_USER
	OR pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_admin', 'USAGE');

REVOKE ALL ON quota_sched.agents FROM PUBLIC;
GRANT SELECT ON quota_sched.agents TO quota_sched_admin, quota_sched_agent;

/*
 * job_attempt_forget: the attempts of deleted jobs (prune(), an admin's
 * DELETE, a cascade from their share or queue) and of a TRUNCATE of jobs
 * go with them, as their history does (job_history_delete).  Triggers,
 * not a foreign key, which would refuse a TRUNCATE of job without CASCADE.
 * The triggers are made here, after the table (tables.sql, or the
 * update's own script) and the function: CREATE OR REPLACE TRIGGER, so
 * that every update may run this file again.
 */
CREATE OR REPLACE FUNCTION quota_sched.job_attempt_forget()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		DELETE FROM quota_sched.job_attempt;
	ELSE
		DELETE FROM quota_sched.job_attempt a USING deleted_jobs d WHERE a.job_id = d.id;
	END IF;
	RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.job_attempt_forget() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_attempt_delete AFTER DELETE ON quota_sched.job
	REFERENCING OLD TABLE AS deleted_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_attempt_forget();
CREATE OR REPLACE TRIGGER job_attempt_truncate AFTER TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_attempt_forget();

/*
 * job_attempts (issue 21, a job's own output): "why did my job fail", each
 * attempt of a job with where it ran, its exit code and the last lines of
 * its output, beside the job's name, owner and state.  Read with the
 * reader's rights (security_invoker): row-level security on job and
 * job_attempt shows a user the attempts of their own and their teams'
 * jobs (owner, members of the share's submit_role), admins every one; of
 * another team's jobs nothing, not even that they exist.
 */
CREATE OR REPLACE VIEW quota_sched.job_attempts WITH (security_invoker = true) AS
SELECT a.job_id, j.name, j.owner, j.job_queue, j.quota_share, j.state, j.status_reason,
	   a.attempt, a.agent, a.host, a.log_path, a.handle, a.exit_code, a.output,
	   a.started_at, a.ended_at
  FROM quota_sched.job_attempt a
  JOIN quota_sched.job j ON j.id = a.job_id;

REVOKE ALL ON quota_sched.job_attempts FROM PUBLIC;
GRANT SELECT ON quota_sched.job_attempts TO quota_sched_admin, quota_sched_user;

/* ===== sql/src/user_api.sql ===== */

/*
 * user_api.sql
 *		What submitters call besides INSERT and UPDATE of jobs (scheduling.md
 *		7): terminate a job, explain why it waits, list their team shares.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 */

CREATE OR REPLACE FUNCTION quota_sched.terminate(job_id bigint, reason text DEFAULT 'Terminated by user')
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_terminate'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.explain(job_id bigint)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'qs_explain'
LANGUAGE C STABLE CALLED ON NULL INPUT
SET jit = off;

/*
 * set_priority(job_id, priority): the UPDATE of a job's priority that says
 * why it changed nothing (src/user_api.c): P0002 when the job does not
 * exist, 42501 when it is not the caller's or their team's; returns the
 * priority the job had.
 */
CREATE OR REPLACE FUNCTION quota_sched.set_priority(job_id bigint, priority integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'qs_set_priority'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.terminate(bigint, text), quota_sched.explain(bigint),
	quota_sched.set_priority(bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.terminate(bigint, text), quota_sched.explain(bigint),
	quota_sched.set_priority(bigint, integer)
	TO quota_sched_admin, quota_sched_user;

/*
 * team_shares(): the caller's team shares, those whose submit_role the
 * caller is a member of (has its privileges, directly or through other
 * roles, with INHERIT): the test of a submission, which explain() and
 * terminate() apply in C too (src/user_api.c).  A submit_role naming no
 * role matches nothing.
 *
 * The policies job_user_read and job_user_reprioritise (tables.sql) call
 * it in an uncorrelated IN, which PostgreSQL runs once per statement as a
 * hashed subplan: each row then costs one hash probe, not a subquery.  Its
 * body is parsed here (BEGIN ATOMIC) and it runs with a pinned
 * search_path, so no search_path of the caller's can change what it means;
 * the SET clause also keeps it from being inlined into every policy that
 * uses it (smaller plans, less for JIT to compile).
 */
CREATE OR REPLACE FUNCTION quota_sched.team_shares()
RETURNS TABLE (job_queue text, quota_share text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT s.job_queue, s.name
	  FROM quota_sched.quota_share s
	  JOIN pg_catalog.pg_roles r ON r.rolname = s.submit_role
	 WHERE pg_catalog.pg_has_role(r.oid, 'USAGE');
END;

REVOKE ALL ON FUNCTION quota_sched.team_shares() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.team_shares()
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/reporting.sql ===== */

/*
 * reporting.sql
 *		Plain-SQL reports: share_usage and capacity_plan (now), and from the
 *		history (accounting): utilization() with its hourly rollup,
 *		job_accounting, and the retention of ended jobs (prune).
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these views and
 * functions.  (Their tables are in tables.sql.)
 */

/*
 * share_usage: per queue, share and unit, capacity, allowed (null when
 * unbounded), use, borrowing, idle capacity and lendable (the most of its
 * own capacity a share lends: lend_limit; 0 for a RESERVE or DISABLED
 * share), counted over all jobs (the view reads as its owner, so
 * row-level security does not narrow the counts).  A capacity written 5.0
 * (an integral number, accepted) is read through numeric, and allowed is
 * computed in bigint, so that no value a share may hold breaks the view
 * for everyone.  recent_borrow_hours (0.3, scheduling.md 3.12; null when
 * the queue has no fair_half_life): recent_borrow as the last pass left
 * it, carried on to now with what the share borrowed then.
 * waiting_since (0.3): when the share's RUNNABLE job of the unit that has
 * waited longest began to wait (its last attempt's stop, or its queueing
 * if it never ran; null: none waits), for the alert on long waits.
 */

CREATE OR REPLACE VIEW quota_sched.share_usage AS
WITH held AS (
	SELECT job_queue, quota_share, capacity_unit,
		   coalesce(sum(instance_count) FILTER (WHERE state <> 'RUNNABLE'), 0) AS in_use,
		   count(*) FILTER (WHERE state = 'RUNNABLE') AS runnable_jobs,
		   count(*) FILTER (WHERE state <> 'RUNNABLE') AS active_jobs,
		   min(coalesce(stopped_at, queued_at)) FILTER (WHERE state = 'RUNNABLE') AS waiting_since
	  FROM quota_sched.job
	 WHERE state IN ('RUNNABLE', 'SCHEDULED', 'STARTING', 'RUNNING')
	 GROUP BY job_queue, quota_share, capacity_unit),
units AS (
	SELECT s.job_queue, s.name AS quota_share, k.capacity_unit
	  FROM quota_sched.quota_share s,
		   LATERAL jsonb_object_keys(s.capacity_limits) AS k(capacity_unit)
	UNION
	SELECT job_queue, quota_share, capacity_unit FROM held)
SELECT u.job_queue, u.quota_share, u.capacity_unit,
	   c.capacity AS max_capacity,
	   CASE WHEN s.strategy <> 'LEND_AND_BORROW' THEN c.capacity
			WHEN s.borrow_limit = -1 THEN NULL
			ELSE (c.capacity * (100 + s.borrow_limit::bigint)) / 100 END AS allowed,
	   coalesce(h.in_use, 0) AS in_use,
	   greatest(0, coalesce(h.in_use, 0) - c.capacity) AS borrowed,
	   greatest(0, c.capacity - coalesce(h.in_use, 0)) AS idle,
	   coalesce(h.runnable_jobs, 0) AS runnable_jobs,
	   coalesce(h.active_jobs, 0) AS active_jobs,
	   CASE WHEN s.strategy = 'RESERVE' OR s.state <> 'ENABLED' THEN 0
			WHEN s.lend_limit = -1 THEN c.capacity
			ELSE (c.capacity * s.lend_limit) / 100 END AS lendable,
	   CASE WHEN q.fair_half_life IS NOT NULL
			THEN coalesce(quota_sched.recent_borrow_at(m.recent, m.at, greatest(0, m.held - m.capacity),
													   greatest(now(), m.at), m.half_life), 0) / 3600
			END AS recent_borrow_hours,
	   h.waiting_since
  FROM units u
  JOIN quota_sched.quota_share s ON s.job_queue = u.job_queue AND s.name = u.quota_share
  JOIN quota_sched.job_queue q ON q.name = u.job_queue
  LEFT JOIN quota_sched.borrow_memory m ON m.job_queue = u.job_queue AND m.quota_share = u.quota_share
				  AND m.capacity_unit = u.capacity_unit AND m.half_life = q.fair_half_life
  CROSS JOIN LATERAL (SELECT coalesce((s.capacity_limits ->> u.capacity_unit)::numeric::bigint, 0)
						  AS capacity) c
  LEFT JOIN held h ON h.job_queue = u.job_queue AND h.quota_share = u.quota_share
				  AND h.capacity_unit = u.capacity_unit;

REVOKE ALL ON quota_sched.share_usage FROM PUBLIC;
GRANT SELECT ON quota_sched.share_usage TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * share_budget: per share and unit of its budget (scheduling.md 3.11), the
 * budget, what the share spent in the current period (from the counters of
 * held capacity, up to now: the rule of the pass), the period, and whether
 * the budget is spent.  Read as its owner, by every role, as share_usage.
 */
CREATE OR REPLACE VIEW quota_sched.share_budget AS
SELECT s.job_queue, s.name AS quota_share, b.capacity_unit, b.budget_hours,
	   coalesce(x.spent, 0) / 3600 AS spent_hours,
	   quota_sched.period_start(now(), s.budget_period) AS period_start,
	   quota_sched.period_end(now(), s.budget_period) AS period_end,
	   coalesce(x.spent, 0) >= b.budget_hours * 3600.0 AS exhausted
  FROM quota_sched.quota_share s
 CROSS JOIN LATERAL (SELECT k.key AS capacity_unit, (s.budget ->> k.key)::numeric::bigint AS budget_hours
					   FROM jsonb_object_keys(s.budget) AS k(key)) b
  LEFT JOIN LATERAL (
	SELECT sum(quota_sched.spent_at(CASE s.budget_period WHEN 'DAY' THEN h.spent_day
															WHEN 'WEEK' THEN h.spent_week
															ELSE h.spent_month END,
									h.changed_at, h.instances, now(), s.budget_period)) AS spent
	  FROM quota_sched.held_capacity h
	 WHERE h.job_queue = s.job_queue AND h.quota_share = s.name
	   AND h.capacity_unit = b.capacity_unit) x ON true;

REVOKE ALL ON quota_sched.share_budget FROM PUBLIC;
GRANT SELECT ON quota_sched.share_budget TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ---------------------------------------------------------------------
 * The capacity plan: per queue and unit, what the environment has and what
 * its shares are promised.  A share may name a unit the environment lacks,
 * and the shares of a queue may be promised more than the environment has
 * (the passes then hold the environment's limit, scheduling.md 3.1): both
 * are allowed, but say so at the write.
 * ------------------------------------------------------------------- */
CREATE OR REPLACE VIEW quota_sched.capacity_plan AS
WITH units AS (
	SELECT q.name AS job_queue, k.capacity_unit
	  FROM quota_sched.job_queue q
	  JOIN quota_sched.service_environment e ON e.name = q.service_environment,
		   LATERAL jsonb_object_keys(e.capacity_limits) AS k(capacity_unit)
	UNION
	SELECT s.job_queue, k.capacity_unit
	  FROM quota_sched.quota_share s,
		   LATERAL jsonb_object_keys(s.capacity_limits) AS k(capacity_unit))
SELECT u.job_queue, u.capacity_unit,
	   e.capacity_limits ? u.capacity_unit AS in_environment,
	   c.environment_capacity, c.shares_capacity,
	   greatest(0, c.environment_capacity - c.shares_capacity) AS unassigned,
	   greatest(0, c.shares_capacity - c.environment_capacity) AS overcommitted
  FROM units u
  JOIN quota_sched.job_queue q ON q.name = u.job_queue
  JOIN quota_sched.service_environment e ON e.name = q.service_environment
  CROSS JOIN LATERAL (
	SELECT coalesce((e.capacity_limits ->> u.capacity_unit)::numeric::bigint, 0)
			   AS environment_capacity,
		   coalesce(sum((s.capacity_limits ->> u.capacity_unit)::numeric)::bigint, 0)
			   AS shares_capacity
	  FROM quota_sched.quota_share s
	 WHERE s.job_queue = u.job_queue AND s.capacity_limits ? u.capacity_unit) c;

GRANT SELECT ON quota_sched.capacity_plan
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * config_review: what in the configuration as it is now is allowed but
 * likely to hurt, one row per finding: a unit the shares name and the
 * environment lacks, shares promised more than the environment has (both
 * from capacity_plan), and churn a share invites (doc/reporting.md):
 * in-share preemption, or borrowing, without min_runtime, so that a job
 * may be preempted at once after its dispatch.
 */
CREATE OR REPLACE VIEW quota_sched.config_review AS
SELECT p.job_queue, NULL::text AS quota_share, p.capacity_unit,
	   CASE WHEN NOT p.in_environment THEN 'UNIT_NOT_IN_ENVIRONMENT' ELSE 'OVERCOMMITTED' END
		 AS finding,
	   CASE WHEN NOT p.in_environment
			THEN format('the shares have %s x %s, which the service environment does not have: their jobs cannot run',
						p.shares_capacity, p.capacity_unit)
			ELSE format('the shares are promised %s x %s, more than the %s of the service environment: not every share can have its capacity at once',
						p.shares_capacity, p.capacity_unit, p.environment_capacity)
	   END AS detail
  FROM quota_sched.capacity_plan p
 WHERE NOT p.in_environment OR p.overcommitted > 0
UNION ALL
SELECT s.job_queue, s.name, NULL, 'IN_SHARE_PREEMPTION_WITHOUT_MIN_RUNTIME',
	   'a job of the share may be preempted for a job of higher priority of the same share at once after its dispatch: set min_runtime to the time a job needs to do useful work and checkpoint'
  FROM quota_sched.quota_share s
 WHERE s.in_share_preemption AND s.min_runtime IS NULL
UNION ALL
SELECT s.job_queue, s.name, NULL, 'BORROWING_WITHOUT_MIN_RUNTIME',
	   'a job of the share that runs on borrowed capacity may be preempted when a lender takes its capacity back, at once after its dispatch: set min_runtime to the time a job needs to do useful work and checkpoint'
  FROM quota_sched.quota_share s
 WHERE s.strategy = 'LEND_AND_BORROW' AND s.borrow_limit <> 0 AND s.min_runtime IS NULL;

GRANT SELECT ON quota_sched.config_review
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * How long the attempt that a job's event at (id event) ended had run:
 * since the job's last dispatch before it.  A preemption after less than
 * a minute is churn (utilization()'s preempted_early, metrics()'
 * quota_sched_preempted_early_attempts_total).
 */
CREATE OR REPLACE FUNCTION quota_sched.attempt_ran(job bigint, event bigint, at timestamptz)
RETURNS interval
LANGUAGE sql STABLE
BEGIN ATOMIC
	SELECT at - (SELECT d.at FROM quota_sched.job_event d
				  WHERE d.job_id = job AND d.id < event AND d.kind = 'STATE'
					AND d.to_state = 'SCHEDULED'
				  ORDER BY d.id DESC LIMIT 1);
END;

/*
 * preemptions: every attempt that a preemption ended (its STATE event with
 * a preempted_for), from the history: when, the victim's share, job, size
 * and how long its attempt had run since its dispatch, the preemptor's
 * share and job, and the reason.  Every role sees every row, as every role
 * sees every share's figures (doc/reference.md, "What a team sees of
 * another"); a job's name only where the caller may see the job (the
 * policies of quota_sched.job: admins and agents every job, a user their
 * own and those of their teams' shares).  The view reads as its owner, so
 * that a team sees the preemptions its jobs caused in other teams' shares.
 */
CREATE OR REPLACE VIEW quota_sched.preemptions WITH (security_barrier = true) AS
WITH caller AS (
	SELECT pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_admin', 'USAGE')
		   OR pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_agent', 'USAGE') AS sees_all,
		   ARRAY(SELECT t.job_queue || '/' || t.quota_share FROM quota_sched.team_shares() t)
			 AS teams)
SELECT e.at, e.job_queue, e.capacity_unit, e.instance_count,
	   e.quota_share AS victim_share, e.job_id AS victim_job,
	   CASE WHEN c.sees_all OR v.owner = CURRENT_USER
				 OR e.job_queue || '/' || e.quota_share = ANY (c.teams)
			THEN v.name END AS victim_name,
	   e.at - d.at AS victim_ran,
	   p.quota_share AS preemptor_share, e.preempted_for AS preemptor_job,
	   CASE WHEN c.sees_all OR pj.owner = CURRENT_USER
				 OR p.job_queue || '/' || p.quota_share = ANY (c.teams)
			THEN pj.name END AS preemptor_name,
	   e.reason
  FROM quota_sched.job_event e
	   CROSS JOIN caller c
	   LEFT JOIN quota_sched.job v ON v.id = e.job_id
	   LEFT JOIN quota_sched.job pj ON pj.id = e.preempted_for
	   -- attempt_ran()'s rule, as a join: a view's rows are read many at a
	   -- time, where the function is called once per row
	   LEFT JOIN LATERAL (
		SELECT s.at FROM quota_sched.job_event s
		 WHERE s.job_id = e.job_id AND s.id < e.id AND s.kind = 'STATE' AND s.to_state = 'SCHEDULED'
		 ORDER BY s.id DESC LIMIT 1) d ON true
	   LEFT JOIN LATERAL (
		SELECT s.job_queue, s.quota_share FROM quota_sched.job_event s
		 WHERE s.job_id = e.preempted_for ORDER BY s.id LIMIT 1) p ON true
 WHERE e.kind = 'STATE' AND e.preempted_for IS NOT NULL;

REVOKE ALL ON quota_sched.preemptions FROM PUBLIC;
GRANT SELECT ON quota_sched.preemptions
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ---------------------------------------------------------------------
 * Utilization (accounting).  The instances a share holds of a unit change
 * only at the STATE events of its jobs (a job holds its instance_count
 * while SCHEDULED, STARTING or RUNNING), and its own capacity, and the
 * environment's, only at the configuration's events (config_event): the
 * levels are step functions of time, known exactly from the history.
 * usage_buckets() integrates them over buckets.  The hourly rollup
 * (usage_hourly) keeps the integrals of each past hour and the levels at
 * its end, so that a report reads the rollup for the hours it has and the
 * history only after them, and so that pruning the history keeps the
 * figures.
 * ------------------------------------------------------------------- */

/* 1 when a state holds capacity, else 0 (null: 0). */
CREATE OR REPLACE FUNCTION quota_sched.holds(state text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce((state IN ('SCHEDULED', 'STARTING', 'RUNNING'))::integer, 0);

/* The capacity of a unit in a capacity map (0: absent, or no map). */
CREATE OR REPLACE FUNCTION quota_sched.capacity_of(map jsonb, unit text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce((map ->> unit)::numeric::bigint, 0);

/*
 * The changes of level of a queue's shares and environment in [t0, t1),
 * by (share, unit): du instances held, dc own capacity.  The environment's
 * rows have quota_share null (du 0, dc its capacity).  A queue is counted
 * against the environment it has now.
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_changes(q text, t0 timestamptz, t1 timestamptz)
RETURNS TABLE (quota_share text, capacity_unit text, at timestamptz, du bigint, dc bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT e.quota_share, e.capacity_unit, e.at,
		   e.instance_count::bigint * (quota_sched.holds(e.to_state) - quota_sched.holds(e.from_state)),
		   0::bigint
	  FROM quota_sched.job_event e
	 WHERE e.job_queue = q AND e.kind = 'STATE' AND e.at >= t0 AND e.at < t1
	   AND quota_sched.holds(e.to_state) <> quota_sched.holds(e.from_state)
	UNION ALL
	SELECT CASE c.object WHEN 'quota_share' THEN c.name END, u.unit, c.at, 0::bigint,
		   quota_sched.capacity_of(c.new -> 'capacity_limits', u.unit)
		   - quota_sched.capacity_of(c.old -> 'capacity_limits', u.unit)
	  FROM quota_sched.config_event c
	 CROSS JOIN LATERAL (SELECT jsonb_object_keys(coalesce(c.old -> 'capacity_limits', '{}')
											   || coalesce(c.new -> 'capacity_limits', '{}'))) AS u(unit)
	 WHERE c.at >= t0 AND c.at < t1
	   AND ((c.object = 'quota_share' AND c.job_queue = q)
			OR (c.object = 'service_environment'
				AND c.name = (SELECT service_environment FROM quota_sched.job_queue WHERE name = q)));
END;

/*
 * The levels of a queue's shares and environment at t0, by (share, unit):
 * u instances held, c own capacity (the environment's: share null).  From
 * the rollup's levels at the end of the last hour it has before t0, and
 * the history after it; from the whole history before t0 if the queue has
 * no rollup.
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_start(q text, t0 timestamptz)
RETURNS TABLE (quota_share text, capacity_unit text, u bigint, c bigint)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	edge timestamptz;
BEGIN
	SELECT least(r.rolled_until, date_trunc('hour', t0)) INTO edge
	  FROM quota_sched.usage_rollup r WHERE r.job_queue = q;
	IF edge IS NULL THEN
		edge := '-infinity';
	END IF;
	RETURN QUERY
	SELECT x.quota_share, x.capacity_unit, sum(x.u)::bigint, sum(x.c)::bigint
	  FROM (SELECT h.quota_share, h.capacity_unit, h.usage_end AS u, h.capacity_end AS c
			  FROM quota_sched.usage_hourly h
			 WHERE h.job_queue = q AND h.hour = edge - interval '1 hour'
			UNION ALL
			SELECT ch.quota_share, ch.capacity_unit, ch.du, ch.dc
			  FROM quota_sched.usage_changes(q, edge, t0) ch) x
	 GROUP BY 1, 2;
END
$$;

/*
 * The integrals of a queue's levels over the buckets of width step from
 * t0 up to t1, by (share, unit; share null: the environment), in
 * instance-seconds: capacity (own, or the environment's), used, own (used
 * within the own capacity), borrowed (used beyond it), idle (own capacity
 * not used: lent or unused); and the levels at the bucket's end.  A bucket
 * where nothing was held, owned or changed has no row.  The environment's
 * rows carry its capacity only (used and idle are the shares' sums).
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_buckets(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (quota_share text, capacity_unit text, bucket timestamptz,
			   capacity double precision, used double precision, own double precision,
			   borrowed double precision, idle double precision,
			   usage_end bigint, capacity_end bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	WITH start AS (SELECT * FROM quota_sched.usage_start(q, t0)),
	changes AS (SELECT * FROM quota_sched.usage_changes(q, t0, t1)),
	pairs AS (SELECT DISTINCT s.quota_share, s.capacity_unit FROM start s
			  UNION SELECT ch.quota_share, ch.capacity_unit FROM changes ch),
	points AS (
		SELECT s.quota_share, s.capacity_unit, t0 AS at, s.u AS du, s.c AS dc, 0 AS o FROM start s
		UNION ALL
		SELECT p.quota_share, p.capacity_unit, e.edge, 0, 0, 1
		  FROM pairs p, generate_series(t0, t1, step) AS e(edge)
		 WHERE e.edge < t1
		UNION ALL
		SELECT ch.quota_share, ch.capacity_unit, ch.at, ch.du, ch.dc, 2 FROM changes ch),
	levels AS (
		SELECT pt.quota_share, pt.capacity_unit, pt.at,
			   sum(pt.du) OVER w AS u, sum(pt.dc) OVER w AS c,
			   coalesce(lead(pt.at) OVER w, t1) AS next_at,
			   date_bin(step, pt.at, t0) AS bucket,
			   row_number() OVER w AS n
		  FROM points pt
		WINDOW w AS (PARTITION BY pt.quota_share, pt.capacity_unit ORDER BY pt.at, pt.o
					 ROWS UNBOUNDED PRECEDING)),
	segments AS (
		SELECT l.*, extract(epoch FROM l.next_at - l.at)::double precision AS secs FROM levels l)
	SELECT sg.quota_share, sg.capacity_unit, sg.bucket,
		   sum(sg.c * sg.secs), sum(sg.u * sg.secs), sum(least(sg.u, sg.c) * sg.secs),
		   sum(greatest(sg.u - sg.c, 0) * sg.secs), sum(greatest(sg.c - sg.u, 0) * sg.secs),
		   (array_agg(sg.u ORDER BY sg.n DESC))[1]::bigint,
		   (array_agg(sg.c ORDER BY sg.n DESC))[1]::bigint
	  FROM segments sg
	 GROUP BY 1, 2, 3
	HAVING max(abs(sg.u) + abs(sg.c)) > 0;
END;

/*
 * The events of a queue's jobs in the buckets of width step from t0 up to
 * t1, by (share, unit): jobs dispatched, succeeded, failed, terminated
 * (ended FAILED after a terminate(): a TERMINATE event before it, which
 * terminate() writes also of a job it fails at once; such a job is not
 * counted failed); attempts ended
 * by preemption (preempted) and attempts of other jobs this share's jobs
 * preempted (preempting), and of the attempts ended by preemption those
 * that had run less than a minute (preempted_early: churn); and the waits
 * of the jobs dispatched, in seconds, since they last became RUNNABLE
 * (job_event.waited), in order.
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_counts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (quota_share text, capacity_unit text, bucket timestamptz,
			   dispatched bigint, succeeded bigint, failed bigint, terminated bigint,
			   preempted bigint, preempting bigint, waits real[], preempted_early bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	WITH ev AS (
		SELECT e.*, date_bin(step, e.at, t0) AS bucket,
			   e.to_state = 'FAILED'
			   AND EXISTS (SELECT FROM quota_sched.job_event t
							WHERE t.job_id = e.job_id AND t.kind = 'TERMINATE' AND t.id < e.id)
				 AS by_user,
			   e.preempted_for IS NOT NULL
			   AND quota_sched.attempt_ran(e.job_id, e.id, e.at) < interval '1 minute' AS early
		  FROM quota_sched.job_event e
		 WHERE e.job_queue = q AND e.kind = 'STATE' AND e.at >= t0 AND e.at < t1),
	own AS (
		SELECT ev.quota_share, ev.capacity_unit, ev.bucket,
			   count(*) FILTER (WHERE ev.to_state = 'SCHEDULED') AS dispatched,
			   count(*) FILTER (WHERE ev.to_state = 'SUCCEEDED') AS succeeded,
			   count(*) FILTER (WHERE ev.to_state = 'FAILED' AND NOT ev.by_user) AS failed,
			   count(*) FILTER (WHERE ev.by_user) AS terminated,
			   count(*) FILTER (WHERE ev.preempted_for IS NOT NULL) AS preempted,
			   coalesce(array_agg(extract(epoch FROM ev.waited)::real ORDER BY ev.waited)
						FILTER (WHERE ev.waited IS NOT NULL), '{}') AS waits,
			   count(*) FILTER (WHERE ev.early) AS preempted_early
		  FROM ev
		 GROUP BY 1, 2, 3),
	caused AS (
		SELECT p.quota_share, ev.capacity_unit, ev.bucket, count(*) AS preempting
		  FROM ev
		  JOIN LATERAL (SELECT s.quota_share FROM quota_sched.job_event s
						 WHERE s.job_id = ev.preempted_for ORDER BY s.id LIMIT 1) p ON true
		 WHERE ev.preempted_for IS NOT NULL
		 GROUP BY 1, 2, 3)
	SELECT coalesce(o.quota_share, c.quota_share), coalesce(o.capacity_unit, c.capacity_unit),
		   coalesce(o.bucket, c.bucket), coalesce(o.dispatched, 0), coalesce(o.succeeded, 0),
		   coalesce(o.failed, 0), coalesce(o.terminated, 0), coalesce(o.preempted, 0),
		   coalesce(c.preempting, 0),
		   coalesce(o.waits, '{}'), coalesce(o.preempted_early, 0)
	  FROM own o FULL JOIN caused c
		ON c.quota_share = o.quota_share AND c.capacity_unit = o.capacity_unit
	   AND c.bucket = o.bucket;
END;

/*
 * usage_buckets and usage_counts side by side: one row per (share, unit,
 * bucket) with anything to report, as usage_hourly keeps it.
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_parts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (quota_share text, capacity_unit text, bucket timestamptz,
			   capacity double precision, used double precision, own double precision,
			   borrowed double precision, idle double precision,
			   usage_end bigint, capacity_end bigint, dispatched bigint, succeeded bigint,
			   failed bigint, terminated bigint, preempted bigint, preempting bigint,
			   waits real[], preempted_early bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT coalesce(b.quota_share, c.quota_share), coalesce(b.capacity_unit, c.capacity_unit),
		   coalesce(b.bucket, c.bucket), coalesce(b.capacity, 0), coalesce(b.used, 0),
		   coalesce(b.own, 0), coalesce(b.borrowed, 0), coalesce(b.idle, 0),
		   coalesce(b.usage_end, 0), coalesce(b.capacity_end, 0),
		   coalesce(c.dispatched, 0), coalesce(c.succeeded, 0), coalesce(c.failed, 0),
		   coalesce(c.terminated, 0), coalesce(c.preempted, 0), coalesce(c.preempting, 0),
		   coalesce(c.waits, '{}'), coalesce(c.preempted_early, 0)
	  FROM quota_sched.usage_buckets(q, t0, t1, step) b
	  FULL JOIN quota_sched.usage_counts(q, t0, t1, step) c
		ON c.quota_share IS NOT DISTINCT FROM b.quota_share
	   AND c.capacity_unit = b.capacity_unit AND c.bucket = b.bucket;
END;

/*
 * lendable(S,u) of a share's row as config_event keeps it (scheduling.md
 * 3.1): what its idle capacity of u may lend; 0 for a RESERVE or DISABLED
 * share, and for no row.
 */
CREATE OR REPLACE FUNCTION quota_sched.lendable_of(share jsonb, unit text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN share ->> 'strategy' IN ('LEND', 'LEND_AND_BORROW')
			 AND coalesce(share ->> 'state', 'ENABLED') = 'ENABLED'
			THEN quota_sched.capacity_of(share -> 'capacity_limits', unit)
				 * CASE WHEN coalesce((share ->> 'lend_limit')::integer, -1) >= 0
						THEN (share ->> 'lend_limit')::integer ELSE 100 END / 100
			ELSE 0 END;

/*
 * The changes of level that lending_parts sweeps, in [t0, t1) (at t0 the
 * levels then), by (unit, share; share null: the environment): du
 * instances held and dc own capacity, as usage_buckets counts them, and dl
 * the share's lendable capacity, from the configuration's history
 * (config_event, never pruned).
 */
CREATE OR REPLACE FUNCTION quota_sched.lending_deltas(q text, t0 timestamptz, t1 timestamptz)
RETURNS TABLE (capacity_unit text, quota_share text, at timestamptz, du bigint, dc bigint, dl bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT s.capacity_unit, s.quota_share, t0, s.u, s.c, 0::bigint
	  FROM quota_sched.usage_start(q, t0) s
	UNION ALL
	SELECT ch.capacity_unit, ch.quota_share, ch.at, ch.du, ch.dc, 0
	  FROM quota_sched.usage_changes(q, t0, t1) ch
	UNION ALL
	SELECT u.unit, c.name, greatest(c.at, t0), 0, 0,
		   quota_sched.lendable_of(c.new, u.unit) - quota_sched.lendable_of(c.old, u.unit)
	  FROM quota_sched.config_event c
	 CROSS JOIN LATERAL (SELECT jsonb_object_keys(coalesce(c.old -> 'capacity_limits', '{}')
											   || coalesce(c.new -> 'capacity_limits', '{}'))) AS u(unit)
	 WHERE c.object = 'quota_share' AND c.job_queue = q AND c.at < t1;
END;

/*
 * Who lent the capacity a queue's shares borrowed, in the buckets of width
 * step from t0 up to t1, by unit, lender (null: the environment's
 * unassigned capacity) and borrower, in instance-seconds (reporting.md,
 * "Who lent to whom"; the rule is src/core/lending.c's).  src/lending.c
 * sweeps lending_deltas once, unit by unit, in order of time: the work is
 * the changes times the unit's shares.
 */
CREATE OR REPLACE FUNCTION quota_sched.lending_parts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (capacity_unit text, bucket timestamptz, lender text, borrower text,
			   instance_seconds double precision)
AS 'MODULE_PATHNAME', 'qs_lending_parts'
LANGUAGE C STABLE;

/*
 * The counts of a queue's events in [t0, t1) by (share, unit) and counter:
 * 'dispatched', 'succeeded', 'failed', 'terminated' (jobs, as
 * usage_counts counts them), 'preempted' (attempts ended
 * by preemption), 'preempted_early' (those of them that had run less than
 * a minute since their dispatch: churn), and 'stop:' and the reason of each stop requested of a
 * held job (a user's terminate: 'stop:TERMINATED'; not the TERMINATE
 * event of a job terminate() failed at once, in the same transaction: no
 * agent was asked to stop it).  metrics() adds those after the rollup to
 * usage_totals.
 */
CREATE OR REPLACE FUNCTION quota_sched.usage_counters(q text, t0 timestamptz, t1 timestamptz)
RETURNS TABLE (quota_share text, capacity_unit text, counter text, value bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT e.quota_share, e.capacity_unit, c.counter, count(*)
	  FROM quota_sched.job_event e
	 CROSS JOIN LATERAL unnest(ARRAY[
		   CASE WHEN e.kind = 'STATE' AND e.to_state = 'SCHEDULED' THEN 'dispatched' END,
		   CASE WHEN e.kind <> 'STATE' OR e.to_state NOT IN ('SUCCEEDED', 'FAILED') THEN NULL
				WHEN e.to_state = 'FAILED'
				 AND EXISTS (SELECT FROM quota_sched.job_event t
							  WHERE t.job_id = e.job_id AND t.kind = 'TERMINATE' AND t.id < e.id)
				THEN 'terminated'
				ELSE lower(e.to_state) END,
		   CASE WHEN e.kind = 'STATE' AND e.preempted_for IS NOT NULL THEN 'preempted' END,
		   CASE WHEN e.kind = 'STATE' AND e.preempted_for IS NOT NULL
				 AND quota_sched.attempt_ran(e.job_id, e.id, e.at) < interval '1 minute'
				THEN 'preempted_early' END,
		   CASE WHEN e.kind = 'STOP' THEN 'stop:' || e.reason
				WHEN e.kind = 'TERMINATE'
				 AND NOT EXISTS (SELECT FROM quota_sched.job_event f
								  WHERE f.job_id = e.job_id AND f.id > e.id AND f.at = e.at
									AND f.kind = 'STATE' AND f.to_state = 'FAILED')
				THEN 'stop:TERMINATED' END]) AS c(counter)
	 WHERE e.job_queue = q AND e.at >= t0 AND e.at < t1
	   AND e.quota_share IS NOT NULL AND c.counter IS NOT NULL
	 GROUP BY 1, 2, 3;
END;

/*
 * The counts of usage_counters over each queue's hours rolled up, kept by
 * rollup() with the hourly rows: metrics() reads its counters from here
 * and the history after the rollup, so they never go back, however the
 * history is pruned.
 */

/*
 * rollup() brings the hourly rollup of every queue up to the last whole
 * hour before the oldest open transaction started (an event is stamped
 * with its transaction's start, so one not yet committed is never older),
 * or before up_to (never past now: an hour that has not happened would be
 * rolled up without the events still to come, and the jobs that end in it
 * could be deleted at once); a null or infinite up_to is refused (22023).
 * It returns the number of queue-hours it rolled up.  The
 * background worker calls it after the first full round of each hour;
 * without the worker, pg_cron can (doc/operations.md).  A queue's first rollup starts
 * at the hour of its first event or of its shares' first configuration (the
 * last whole hour if it has neither); it reads the whole history, once.
 */
CREATE OR REPLACE FUNCTION quota_sched.rollup(up_to timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	horizon timestamptz;
	q text;
	t0 timestamptz;
	t1 timestamptz;
	l0 timestamptz;
	l1 timestamptz;
	lent_to timestamptz;
	origin timestamptz;
	hours bigint := 0;
BEGIN
	IF up_to IS NULL OR NOT isfinite(up_to) THEN
		RAISE EXCEPTION 'invalid up_to %', coalesce(up_to::text, 'NULL')
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'up_to is a finite time; the rollup never goes past now.';
	END IF;
	SELECT date_trunc('hour', least(up_to, now(), min(a.xact_start))) INTO horizon
	  FROM pg_stat_activity a WHERE a.xact_start IS NOT NULL AND a.pid <> pg_backend_pid();
	FOR q IN SELECT name FROM quota_sched.job_queue ORDER BY name COLLATE "C" LOOP
		SELECT r.rolled_until, r.lent_until INTO t0, l0
		  FROM quota_sched.usage_rollup r WHERE r.job_queue = q;
		IF t0 IS NULL OR l0 IS NULL THEN
			SELECT date_trunc('hour', least(
					   (SELECT min(e.at) FROM quota_sched.job_event e WHERE e.job_queue = q),
					   (SELECT min(c.at) FROM quota_sched.config_event c
						 WHERE c.object = 'quota_share' AND c.job_queue = q)))
			  INTO origin;
			-- a queue with no history at all: its first rollup is the last
			-- whole hour, so that it has a rollup row and its next rollup
			-- does not look through the whole history again
			origin := coalesce(origin, horizon - interval '1 hour');
		END IF;
		t0 := coalesce(t0, origin);
		WHILE t0 < horizon LOOP
			t1 := least(horizon, t0 + interval '7 days');
			INSERT INTO quota_sched.usage_hourly
				(job_queue, quota_share, capacity_unit, hour, capacity, used, own, borrowed, idle,
				 usage_end, capacity_end, dispatched, succeeded, failed, terminated, preempted,
				 preempting, waits, preempted_early)
			SELECT q, p.* FROM quota_sched.usage_parts(q, t0, t1, interval '1 hour') p;
			INSERT INTO quota_sched.usage_totals AS u
			SELECT q, c.* FROM quota_sched.usage_counters(q, t0, t1) c
			ON CONFLICT (job_queue, quota_share, capacity_unit, counter)
			DO UPDATE SET value = u.value + excluded.value;
			INSERT INTO quota_sched.usage_rollup AS r (job_queue, rolled_until) VALUES (q, t1)
			ON CONFLICT (job_queue) DO UPDATE SET rolled_until = excluded.rolled_until;
			hours := hours + extract(epoch FROM t1 - t0)::bigint / 3600;
			t0 := t1;
		END LOOP;
		-- who lent to whom, up to the same hour, a day at a time: the first
		-- time from the queue's first hour (after an update from 0.2, also
		-- the hours 0.2 rolled up, from the history that is left of them),
		-- at most a week of it a call, so that catching up on a long
		-- history never holds up the worker's round for long
		l0 := coalesce(l0, origin);
		lent_to := least(t0, l0 + interval '7 days');
		WHILE l0 < lent_to LOOP
			l1 := least(lent_to, l0 + interval '1 day');
			INSERT INTO quota_sched.lending_hourly
				(job_queue, capacity_unit, hour, lender, borrower, instance_seconds)
			SELECT q, p.* FROM quota_sched.lending_parts(q, l0, l1, interval '1 hour') p;
			UPDATE quota_sched.usage_rollup r SET lent_until = l1 WHERE r.job_queue = q;
			l0 := l1;
		END LOOP;
	END LOOP;
	RETURN hours;
END
$$;

/*
 * The plan of a report over [from, to) in buckets of width bucket, from a
 * rollup kept until rolled (null: none), shared by utilization() and
 * lending(), which refuse what it refuses (22023, with a detail): the
 * bucket as date_bin() counts it, a day 24 hours (w; one longer than the
 * range is the range); how far the rollup's hours are read (rolled_to: not
 * at all for a bucket that is not a whole number of hours, or a from not
 * on an hour); the first edge of a bucket at or after it (first_edge: the
 * history from the one to the other is one part, of the bucket the rollup
 * ends in, and after it one part a bucket); and the first edge after which
 * nothing changes (levels_from: an event is stamped with its transaction's
 * start, so nothing changes after now but for history written by hand;
 * from there the levels hold, and each bucket's figures are those levels
 * times its length, without a step through the history).
 */
CREATE OR REPLACE FUNCTION quota_sched.report_plan(report text, q text, "from" timestamptz,
												   "to" timestamptz, bucket interval,
												   rolled timestamptz,
												   OUT w interval, OUT rolled_to timestamptz,
												   OUT first_edge timestamptz, OUT levels_from timestamptz)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	secs double precision := extract(epoch FROM bucket);
	hourly boolean := secs >= 3600 AND secs::bigint % 3600 = 0
					  AND date_trunc('hour', "from") = "from";
	span numeric;
	last timestamptz;
BEGIN
	IF q IS NULL OR "from" IS NULL OR "to" IS NULL OR bucket IS NULL THEN
		RAISE EXCEPTION '%() needs a job queue, from, to and a bucket', report
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT EXISTS (SELECT FROM quota_sched.job_queue jq WHERE jq.name = q) THEN
		RAISE EXCEPTION 'job queue "%" does not exist', left(q, 64)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- A second at least: the cost is the number of buckets (at most 100,000
	-- below), not their width; short buckets show a short run step by step.
	IF secs < 1 OR date_part('month', bucket) <> 0 OR date_part('year', bucket) <> 0 THEN
		RAISE EXCEPTION 'invalid bucket %', bucket
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A bucket is at least a second, in days, hours, minutes or seconds.';
	END IF;
	-- The range's length in seconds, exactly (to - from, an interval,
	-- would wrap around beyond 292,000 years and let any range through).
	span := extract(epoch FROM "to") - extract(epoch FROM "from");
	IF NOT isfinite("from") OR NOT isfinite("to") OR NOT ("from" < "to")
	   OR span / secs::numeric > 100000 OR span >= 9223372036854 THEN
		RAISE EXCEPTION 'invalid range from % to % in buckets of %', "from", "to", bucket
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'from and to are finite, from comes before to, the range is shorter '
						   'than 292,000 years and has at most 100,000 buckets.';
	END IF;
	w := CASE WHEN secs::numeric >= span THEN "to" - "from" ELSE bucket END;
	w := w - make_interval(days => date_part('day', w)::integer)
		 + date_part('day', w) * interval '24 hours';
	rolled_to := CASE WHEN hourly THEN greatest(least(coalesce(rolled, "from"), "to"), "from")
					  ELSE "from" END;
	first_edge := date_bin(w, rolled_to, "from");
	IF first_edge < rolled_to THEN
		first_edge := least(first_edge + w, "to");
	END IF;
	last := greatest(now(),
					 (SELECT max(e.at) FROM quota_sched.job_event e
					   WHERE e.at > now() AND e.job_queue = q),
					 (SELECT max(c.at) FROM quota_sched.config_event c WHERE c.at > now()));
	levels_from := date_bin(w, least(greatest(last, first_edge), "to"), "from");
	IF levels_from < least(greatest(last, first_edge), "to") THEN
		levels_from := least(levels_from + w, "to");
	END IF;
END
$$;

/*
 * utilization(job_queue, from, to, bucket): per bucket (from from, of
 * width bucket), share and unit, and per bucket and unit for the
 * environment (quota_share null): see doc/reporting.md.
 *
 * Hours the rollup covers are summed from its rows (a row per share, unit
 * and hour that had anything), the rest from the history, in buckets of
 * the width asked (the first of them may start inside a bucket, where the
 * rollup ends): the work is the rows read, and the buckets times the
 * (share, unit) pairs after the rollup, never an hour of the range at a
 * time.  A bucket that is not a whole number of hours, or a from that is
 * not on an hour, is computed from the history alone.  Buckets are counted
 * as date_bin() counts them, a day 24 hours, whatever the caller's
 * TimeZone.
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization(job_queue text, "from" timestamptz, "to" timestamptz,
										bucket interval DEFAULT '1 hour')
RETURNS TABLE (bucket_start timestamptz, quota_share text, capacity_unit text,
			   capacity double precision, used_instance_seconds double precision,
			   own_instance_seconds double precision, borrowed_instance_seconds double precision,
			   idle_instance_seconds double precision, dispatched bigint, succeeded bigint,
			   failed bigint, terminated bigint, preempted bigint, preempting bigint,
			   preempted_early bigint, wait_p50_seconds real, wait_p95_seconds real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	q text := utilization.job_queue;
	w interval;
	rolled timestamptz;
	edge timestamptz;
	cut timestamptz;
	visible text[];
BEGIN
	SELECT p.w, p.rolled_to, p.first_edge, p.levels_from INTO w, rolled, edge, cut
	  FROM quota_sched.report_plan('utilization', q, "from", "to", utilization.bucket,
								   (SELECT r.rolled_until FROM quota_sched.usage_rollup r
									 WHERE r.job_queue = utilization.job_queue)) p;
	-- every share's figures, for every role (reference.md, "What a team
	-- sees of another"), as share_usage shows them now
	visible := ARRAY(SELECT s.name FROM quota_sched.quota_share s WHERE s.job_queue = q);
	RETURN QUERY
	WITH parts AS (
		SELECT h.quota_share, h.capacity_unit, h.hour AS at, h.capacity, h.used, h.own,
			   h.borrowed, h.idle, h.dispatched, h.succeeded, h.failed, h.terminated,
			   h.preempted, h.preempting, h.preempted_early, h.waits
		  FROM quota_sched.usage_hourly h
		 WHERE h.job_queue = q AND h.hour >= "from" AND h.hour < rolled
		UNION ALL
		SELECT p.quota_share, p.capacity_unit, p.bucket, p.capacity, p.used, p.own, p.borrowed,
			   p.idle, p.dispatched, p.succeeded, p.failed, p.terminated, p.preempted,
			   p.preempting, p.preempted_early, p.waits
		  FROM quota_sched.usage_parts(q, rolled, edge, edge - rolled) p
		 WHERE rolled < edge
		UNION ALL
		SELECT p.quota_share, p.capacity_unit, p.bucket, p.capacity, p.used, p.own, p.borrowed,
			   p.idle, p.dispatched, p.succeeded, p.failed, p.terminated, p.preempted,
			   p.preempting, p.preempted_early, p.waits
		  FROM quota_sched.usage_parts(q, edge, cut, w) p
		 WHERE edge < cut
),
	flat AS (SELECT date_bin(w, p.at, "from") AS b, p.* FROM parts p),
	-- the parts' figures, and a row for each wait (the percentiles of a
	-- bucket are over all the waits of its parts), grouped in one pass
	cells AS (
		SELECT f.b, f.quota_share, f.capacity_unit, f.capacity, f.used, f.own, f.borrowed,
			   f.idle, f.dispatched, f.succeeded, f.failed, f.terminated, f.preempted,
			   f.preempting, f.preempted_early, NULL::real AS wait
		  FROM flat f
		UNION ALL
		SELECT f.b, f.quota_share, f.capacity_unit, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
			   NULL, NULL, NULL, NULL, NULL, x.wait
		  FROM flat f, unnest(f.waits) AS x(wait)),
	sums AS (
		SELECT c.b, c.quota_share, c.capacity_unit, sum(c.capacity) AS capacity,
			   sum(c.used) AS used, sum(c.own) AS own, sum(c.borrowed) AS borrowed,
			   sum(c.idle) AS idle, sum(c.dispatched)::bigint AS dispatched,
			   sum(c.succeeded)::bigint AS succeeded, sum(c.failed)::bigint AS failed,
			   sum(c.terminated)::bigint AS terminated,
			   sum(c.preempted)::bigint AS preempted, sum(c.preempting)::bigint AS preempting,
			   sum(c.preempted_early)::bigint AS preempted_early,
			   percentile_disc(0.5) WITHIN GROUP (ORDER BY c.wait)
				 FILTER (WHERE c.wait IS NOT NULL) AS p50,
			   percentile_disc(0.95) WITHIN GROUP (ORDER BY c.wait)
				 FILTER (WHERE c.wait IS NOT NULL) AS p95
		  FROM cells c GROUP BY 1, 2, 3),
	-- after cut: the levels there, and the buckets (each of them after cut
	-- whole, so no bucket has figures from both sides)
	held AS (
		SELECT st.quota_share, st.capacity_unit, st.u, st.c
		  FROM quota_sched.usage_start(q, cut) st
		 WHERE cut < "to" AND abs(st.u) + abs(st.c) > 0),
	tail AS (
		SELECT g.b, extract(epoch FROM least(g.b + w, "to") - g.b)::double precision AS secs
		  FROM generate_series(cut, "to", w) AS g(b) WHERE cut < "to" AND g.b < "to"),
	env_held AS (
		SELECT e.capacity_unit, e.c, sh.u
		  FROM held e
		  LEFT JOIN (SELECT h.capacity_unit, sum(h.u)::bigint AS u FROM held h
					  WHERE h.quota_share IS NOT NULL GROUP BY 1) sh
			ON sh.capacity_unit = e.capacity_unit
		 WHERE e.quota_share IS NULL)
	SELECT s.b, s.quota_share, s.capacity_unit,
		   s.capacity / extract(epoch FROM least(s.b + w, "to") - s.b)::double precision,
		   s.used, s.own, s.borrowed, s.idle, s.dispatched, s.succeeded, s.failed,
		   s.terminated, s.preempted, s.preempting, s.preempted_early, s.p50, s.p95
	  FROM sums s
	 WHERE s.quota_share = ANY (visible)
	UNION ALL
	-- the environment's rows: its capacity, and the sums of all its shares
	SELECT s.b, NULL, s.capacity_unit,
		   sum(s.capacity) FILTER (WHERE s.quota_share IS NULL)
			 / extract(epoch FROM least(s.b + w, "to") - s.b)::double precision,
		   sum(s.used) FILTER (WHERE s.quota_share IS NOT NULL), NULL, NULL,
		   sum(s.capacity) FILTER (WHERE s.quota_share IS NULL)
			 - coalesce(sum(s.used) FILTER (WHERE s.quota_share IS NOT NULL), 0),
		   sum(s.dispatched) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.succeeded) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.failed) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.terminated) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.preempted) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.preempting) FILTER (WHERE s.quota_share IS NOT NULL)::bigint,
		   sum(s.preempted_early) FILTER (WHERE s.quota_share IS NOT NULL)::bigint, NULL, NULL
	  FROM sums s
	 GROUP BY s.b, s.capacity_unit
	HAVING count(*) FILTER (WHERE s.quota_share IS NULL) > 0
	UNION ALL
	SELECT t.b, h.quota_share, h.capacity_unit, h.c * t.secs / t.secs, h.u * t.secs,
		   least(h.u, h.c) * t.secs, greatest(h.u - h.c, 0) * t.secs,
		   greatest(h.c - h.u, 0) * t.secs, 0, 0, 0, 0, 0, 0, 0, NULL, NULL
	  FROM held h, tail t
	 WHERE h.quota_share = ANY (visible)
	UNION ALL
	SELECT t.b, NULL, e.capacity_unit, e.c * t.secs / t.secs, e.u * t.secs, NULL, NULL,
		   e.c * t.secs - coalesce(e.u * t.secs, 0), e.u * 0, e.u * 0, e.u * 0, e.u * 0,
		   e.u * 0, e.u * 0, e.u * 0, NULL, NULL
	  FROM env_held e, tail t
	 ORDER BY 1, 2 NULLS FIRST, 3;
END
$$;

/*
 * lending(job_queue, from, to, bucket): per bucket (from from, of width
 * bucket), unit, lender (null: the environment's unassigned capacity) and
 * borrower, the instance-seconds the borrower held of the lender's
 * capacity, by the rule of lending_parts (reporting.md, "Who lent to
 * whom"); for every role, as utilization() (reference.md, "What a team
 * sees of another").  Hours the lending rollup covers (usage_rollup.
 * lent_until) are summed from lending_hourly, the rest computed from the
 * history, and after the last change the levels hold, as utilization()
 * reads them (report_plan); it refuses what utilization() refuses.
 */
CREATE OR REPLACE FUNCTION quota_sched.lending(job_queue text, "from" timestamptz, "to" timestamptz,
									bucket interval DEFAULT '1 hour')
RETURNS TABLE (bucket_start timestamptz, capacity_unit text, lender_share text,
			   borrower_share text, instance_seconds double precision)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	q text := lending.job_queue;
	w interval;
	rolled timestamptz;
	edge timestamptz;
	cut timestamptz;
BEGIN
	SELECT p.w, p.rolled_to, p.first_edge, p.levels_from INTO w, rolled, edge, cut
	  FROM quota_sched.report_plan('lending', q, "from", "to", lending.bucket,
								   (SELECT r.lent_until FROM quota_sched.usage_rollup r
									 WHERE r.job_queue = lending.job_queue)) p;
	RETURN QUERY
	WITH parts AS (
		SELECT h.capacity_unit, h.hour AS at, h.lender, h.borrower, h.instance_seconds AS secs
		  FROM quota_sched.lending_hourly h
		 WHERE h.job_queue = q AND h.hour >= "from" AND h.hour < rolled
		UNION ALL
		SELECT p.capacity_unit, p.bucket, p.lender, p.borrower, p.instance_seconds
		  FROM quota_sched.lending_parts(q, rolled, edge, edge - rolled) p
		 WHERE rolled < edge
		UNION ALL
		SELECT p.capacity_unit, p.bucket, p.lender, p.borrower, p.instance_seconds
		  FROM quota_sched.lending_parts(q, edge, cut, w) p
		 WHERE edge < cut
		UNION ALL
		-- after cut the levels hold: what was lent from cut to the end, in
		-- proportion to each bucket's length
		SELECT p.capacity_unit, g.b, p.lender, p.borrower,
			   p.instance_seconds * extract(epoch FROM least(g.b + w, "to") - g.b)::double precision
			   / extract(epoch FROM "to" - cut)::double precision
		  FROM quota_sched.lending_parts(q, cut, "to", "to" - cut) p,
			   generate_series(cut, "to", w) AS g(b)
		 WHERE cut < "to" AND g.b < "to")
	SELECT date_bin(w, p.at, "from"), p.capacity_unit, p.lender, p.borrower, sum(p.secs)
	  FROM parts p
	 GROUP BY 1, 2, 3, 4
	 ORDER BY 1, 2, 3 NULLS FIRST, 4;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.holds(text), quota_sched.capacity_of(jsonb, text),
	quota_sched.usage_changes(text, timestamptz, timestamptz),
	quota_sched.usage_start(text, timestamptz),
	quota_sched.usage_buckets(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_parts(text, timestamptz, timestamptz, interval),
	quota_sched.lendable_of(jsonb, text),
	quota_sched.lending_deltas(text, timestamptz, timestamptz),
	quota_sched.lending_parts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counters(text, timestamptz, timestamptz),
	quota_sched.attempt_ran(bigint, bigint, timestamptz),
	quota_sched.report_plan(text, text, timestamptz, timestamptz, interval, timestamptz),
	quota_sched.lending(text, timestamptz, timestamptz, interval),
	quota_sched.rollup(timestamptz),
	quota_sched.utilization(text, timestamptz, timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.holds(text) TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT EXECUTE ON FUNCTION quota_sched.rollup(timestamptz) TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.utilization(text, timestamptz, timestamptz, interval),
	quota_sched.lending(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * Retention.  prune(older_than) deletes, in batches of its own
 * transactions, the ended jobs (with their history, job_history_delete)
 * and the pass_log rows older than the horizon, after bringing the rollup
 * up to date; an ended job goes only once the rollup covers it
 * (job_before_delete), so its figures stay in usage_hourly and
 * lending_hourly.
 *
 * (No SET search_path: a procedure with one cannot commit.  It runs with
 * the caller's rights, and names everything with its schema.)  Inside a
 * transaction block it refuses to start (25001); called from a function
 * (an atomic context) its first COMMIT still fails (2D000).
 */
CREATE OR REPLACE PROCEDURE quota_sched.prune(older_than interval, batch integer DEFAULT 10000)
LANGUAGE plpgsql
AS $$
DECLARE
	horizon timestamptz;
	n bigint;
	jobs bigint := 0;
	passes bigint := 0;
BEGIN
	IF older_than IS NULL OR older_than <= interval '0' THEN
		RAISE EXCEPTION 'invalid older_than %', older_than
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'older_than is positive.';
	END IF;
	IF batch IS NULL OR batch < 1 THEN
		RAISE EXCEPTION 'invalid batch %', batch
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'batch is at least 1.';
	END IF;
	horizon := pg_catalog.now() - older_than;
	-- it commits: inside BEGIN ... COMMIT its first COMMIT would fail with
	-- "invalid transaction termination", which says nothing of why
	IF quota_sched.in_transaction_block() THEN
		RAISE EXCEPTION 'quota_sched.prune() cannot run inside a transaction block'
			USING ERRCODE = 'active_sql_transaction',
				  DETAIL = 'It deletes in batches, each committed on its own.',
				  HINT = 'CALL it on its own, outside BEGIN ... COMMIT (in psql with AUTOCOMMIT on).';
	END IF;
	PERFORM quota_sched.rollup();
	COMMIT;
	LOOP
		DELETE FROM quota_sched.job j
		 WHERE j.id IN (
			SELECT e.id FROM quota_sched.job e
			  JOIN quota_sched.usage_rollup r ON r.job_queue = e.job_queue
			 WHERE e.state IN ('SUCCEEDED', 'FAILED')
			   AND e.status_reason_at < least(horizon, r.rolled_until,
											  coalesce(r.lent_until, '-infinity'))
			 LIMIT batch);
		GET DIAGNOSTICS n = ROW_COUNT;
		jobs := jobs + n;
		COMMIT;
		EXIT WHEN n < batch;
	END LOOP;
	LOOP
		DELETE FROM quota_sched.pass_log p
		 WHERE p.id IN (SELECT l.id FROM quota_sched.pass_log l
						 WHERE l.finished_at < horizon LIMIT batch);
		GET DIAGNOSTICS n = ROW_COUNT;
		passes := passes + n;
		COMMIT;
		EXIT WHEN n < batch;
	END LOOP;
	RAISE NOTICE 'quota_sched.prune: % ended jobs (with their history) and % pass_log rows older than %',
		jobs, passes, older_than;
END
$$;
REVOKE ALL ON PROCEDURE quota_sched.prune(interval, integer) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE quota_sched.prune(interval, integer) TO quota_sched_admin;

/* ---------------------------------------------------------------------
 * job_accounting: a job's accounting, as Slurm's sacct shows it, from the
 * job and its history; read with the reader's rights (security_invoker),
 * so that row-level security shows a user their own and their teams' jobs,
 * and admins and agents every job.  held_seconds is the time the job held
 * its instances, over all its attempts (until now for a job that holds
 * them); instance_seconds is that times its instance count.  attempts
 * is the number of attempts the job was dispatched for: those that ended
 * and were counted (failed, preempted, lease lost; a claim timeout is none)
 * and the one it holds or succeeded in, or, for a job that failed while
 * held, the attempt that ended it (its STATE row's attempt) if no counter
 * counted it (terminated); a job that is RUNNABLE, or failed while
 * RUNNABLE, made only those counted (0 if never dispatched).
 * terminated: it ended FAILED after a terminate() (its history has a
 * TERMINATE event), a cancellation rather than a failure.
 * ------------------------------------------------------------------- */
CREATE OR REPLACE VIEW quota_sched.job_accounting WITH (security_invoker = true) AS
SELECT j.id AS job_id, j.name, j.job_queue, j.quota_share, j.capacity_unit, j.instance_count,
	   j.owner, j.state, j.status_reason, j.submitted_at, a.first_dispatched_at,
	   CASE WHEN j.state IN ('SUCCEEDED', 'FAILED') THEN j.status_reason_at END AS ended_at,
	   j.failed_attempts + j.preemption_count + j.lease_losses
		 + CASE WHEN j.state IN ('SCHEDULED', 'STARTING', 'RUNNING', 'SUCCEEDED') THEN 1
				WHEN j.state = 'FAILED'
				THEN greatest(a.ended_attempt
							  - (j.failed_attempts + j.preemption_count + j.lease_losses), 0)
				ELSE 0 END AS attempts,
	   j.failed_attempts,
	   j.preemption_count AS preemptions, a.waited, a.held_seconds,
	   a.held_seconds * j.instance_count AS instance_seconds, a.last_exit_code,
	   j.state = 'FAILED' AND a.terminated AS terminated
  FROM quota_sched.job j
  LEFT JOIN LATERAL (
	SELECT min(e.at) FILTER (WHERE e.kind = 'STATE' AND e.to_state = 'SCHEDULED') AS first_dispatched_at,
		   sum(e.waited) AS waited,
		   coalesce(sum((quota_sched.holds(e.from_state) - quota_sched.holds(e.to_state))
						* extract(epoch FROM e.at)) FILTER (WHERE e.kind = 'STATE'), 0)
			 + quota_sched.holds(j.state) * extract(epoch FROM now()) AS held_seconds,
		   (array_agg(e.exit_code ORDER BY e.id DESC)
			  FILTER (WHERE e.exit_code IS NOT NULL))[1] AS last_exit_code,
		   max(e.attempt) FILTER (WHERE e.kind = 'STATE' AND e.to_state = 'FAILED'
								  AND quota_sched.holds(e.from_state) = 1) AS ended_attempt,
		   coalesce(bool_or(e.kind = 'TERMINATE'), false) AS terminated
	  FROM quota_sched.job_event e WHERE e.job_id = j.id) a ON true;
REVOKE ALL ON quota_sched.job_accounting FROM PUBLIC;
GRANT SELECT ON quota_sched.job_accounting TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/whatif.sql ===== */

/*
 * whatif.sql
 *		What-if (scheduling.md 3.13): replay a queue's recorded workload
 *		under its configuration as it is and under a candidate change, in
 *		an ideal world, beside what the history itself says.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 *
 * replay_run (src/replay_sql.c) runs the baseline and the candidate
 * through the policy core (src/core/replay.c); replay_recorded reads the
 * same figures from the history; replay and replay_jobs, the API, put
 * them side by side.  All three scenarios give one row per job of the
 * workload and, with job_id null, one per share and unit with what it
 * borrowed.
 */

/*
 * replay_apply(job_queue, changes): applies a candidate change to the
 * configuration tables, so that they validate it as they validate any
 * change.  replay_run calls it in a subtransaction that it rolls back once
 * it has read the configuration: nothing stays.  Only the extension's
 * owner may call it.
 */
CREATE OR REPLACE FUNCTION quota_sched.replay_apply(job_queue text, changes jsonb)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	q text := replay_apply.job_queue;
	env text;
	k text;
	v jsonb;
BEGIN
	SELECT c INTO k FROM jsonb_object_keys(changes) c
	 WHERE c NOT IN ('quota_share', 'job_queue', 'service_environment') LIMIT 1;
	IF k IS NOT NULL THEN
		RAISE EXCEPTION 'changes name "%", which is not quota_share, job_queue or service_environment',
			left(k, 64)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT jq.service_environment INTO env FROM quota_sched.job_queue jq WHERE jq.name = q;
	IF changes ? 'service_environment' THEN
		PERFORM quota_sched.replay_set_row('service_environment', changes -> 'service_environment',
										   'service environment', ARRAY['name'], ARRAY[env]);
	END IF;
	IF changes ? 'job_queue' THEN
		PERFORM quota_sched.replay_set_row('job_queue', changes -> 'job_queue', 'job queue',
										   ARRAY['name'], ARRAY[q]);
	END IF;
	IF changes ? 'quota_share' THEN
		IF jsonb_typeof(changes -> 'quota_share') <> 'object' THEN
			RAISE EXCEPTION 'changes -> ''quota_share'' must map share names to their changes, not %',
				left((changes -> 'quota_share')::text, 64)
				USING ERRCODE = 'invalid_parameter_value';
		END IF;
		FOR k, v IN SELECT * FROM jsonb_each(changes -> 'quota_share') LOOP
			PERFORM quota_sched.replay_set_row('quota_share', v, format('quota share %s', left(k, 64)),
											   ARRAY['job_queue', 'name'], ARRAY[q, k]);
		END LOOP;
	END IF;
END
$$;

/*
 * replay_set_row(table, columns, what, key columns, key values): sets the
 * given columns of one configuration row, or inserts the row (its other
 * columns their defaults) when no row has that key.  A key that is not a
 * column is 42703, as in an UPDATE; the key columns cannot change.
 */
CREATE OR REPLACE FUNCTION quota_sched.replay_set_row(tab text, cols jsonb, what text,
													  key_cols text[], key_vals text[])
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	names text;
	bad text;
	cond text;
	n bigint;
BEGIN
	IF jsonb_typeof(cols) IS DISTINCT FROM 'object' THEN
		RAISE EXCEPTION 'the changes of % must be a JSON object of columns, not %', what,
			left(cols::text, 64)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	SELECT c INTO bad FROM jsonb_object_keys(cols) c
	 WHERE c = ANY (key_cols)
		OR NOT EXISTS (SELECT 1 FROM pg_attribute a
						WHERE a.attrelid = format('quota_sched.%I', tab)::regclass
						  AND a.attname = c AND a.attnum > 0 AND NOT a.attisdropped)
	 LIMIT 1;
	IF bad = ANY (key_cols) THEN
		RAISE EXCEPTION 'the changes of % cannot change its %', what, bad
			USING ERRCODE = 'invalid_parameter_value';
	ELSIF bad IS NOT NULL THEN
		RAISE EXCEPTION 'column "%" of relation "%" does not exist', left(bad, 64), tab
			USING ERRCODE = 'undefined_column';
	END IF;
	SELECT string_agg(quote_ident(c), ', ' ORDER BY c) INTO names FROM jsonb_object_keys(cols) c;
	SELECT string_agg(format('%I = $2[%s]', key_cols[i], i), ' AND ') INTO cond
	  FROM generate_subscripts(key_cols, 1) i;
	IF names IS NOT NULL THEN
		EXECUTE format('UPDATE quota_sched.%I SET (%s) = (SELECT %s FROM jsonb_populate_record(NULL::quota_sched.%I, $1)) WHERE %s',
					   tab, names, names, tab, cond)
		  USING cols, key_vals;
	ELSE
		EXECUTE format('SELECT 1 FROM quota_sched.%I WHERE %s', tab, cond) USING cols, key_vals;
	END IF;
	GET DIAGNOSTICS n = ROW_COUNT;
	IF n = 0 THEN
		EXECUTE format('INSERT INTO quota_sched.%I (%s%s) SELECT %s%s FROM jsonb_populate_record(NULL::quota_sched.%I, $1)',
					   tab, (SELECT string_agg(quote_ident(c), ', ') FROM unnest(key_cols) c),
					   coalesce(', ' || names, ''),
					   (SELECT string_agg(format('$2[%s]', i), ', ') FROM generate_subscripts(key_cols, 1) i),
					   coalesce(', ' || names, ''), tab)
		  USING cols, key_vals;
	END IF;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.replay_apply(text, jsonb),
	quota_sched.replay_set_row(text, jsonb, text, text[], text[]) FROM PUBLIC;

/*
 * replay_workload(job_queue, from, to): the workload of a replay, one row
 * per job: those submitted in [from, to), and those submitted before that
 * had not ended at from (they arrive at from).  Its priority at its
 * arrival and its changes after; its work, the running time of its last
 * attempt that ended in the window (from its start, or from `from` for an
 * attempt running then), null when it did not end so (it works until the
 * end); whether that attempt ended FAILED; and when the history
 * terminated it (it leaves the replay then).
 */
CREATE OR REPLACE FUNCTION quota_sched.replay_workload(job_queue text, "from" timestamptz,
													   "to" timestamptz)
RETURNS TABLE (job_id bigint, quota_share text, capacity_unit text, instance_count integer,
			   priority integer, arrival timestamptz, queued_at timestamptz, timeout interval,
			   max_attempts integer, preemption_retries integer, change_at timestamptz[],
			   change_to integer[], work interval, fails boolean, leave_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	SELECT j.id, j.quota_share, j.capacity_unit, j.instance_count,
		   coalesce(p.priority, j.priority), a.arrival, j.queued_at, j.timeout,
		   j.max_attempts, j.preemption_retries, c.change_at, c.change_to,
		   CASE WHEN t.at IS NULL AND e.to_state IN ('SUCCEEDED', 'FAILED')
				THEN e.at - greatest(r.at, a.arrival) END,
		   coalesce(t.at IS NULL AND e.to_state = 'FAILED', false), t.at
	  FROM quota_sched.job j
	 CROSS JOIN LATERAL (SELECT greatest(j.submitted_at, "from") AS arrival) a
	  LEFT JOIN LATERAL (
		SELECT x.priority FROM quota_sched.job_event x
		 WHERE x.job_id = j.id AND x.at <= a.arrival ORDER BY x.id DESC LIMIT 1) p ON true
	  LEFT JOIN LATERAL (
		SELECT array_agg(x.at ORDER BY x.id) AS change_at, array_agg(x.priority ORDER BY x.id) AS change_to
		  FROM quota_sched.job_event x
		 WHERE x.job_id = j.id AND x.kind = 'PRIORITY' AND x.at > a.arrival AND x.at < "to") c ON true
	  LEFT JOIN LATERAL (
		SELECT x.id, x.at FROM quota_sched.job_event x
		 WHERE x.job_id = j.id AND x.kind = 'STATE' AND x.to_state = 'RUNNING' AND x.at < "to"
		 ORDER BY x.id DESC LIMIT 1) r ON true
	  LEFT JOIN LATERAL (
		SELECT x.at, x.to_state FROM quota_sched.job_event x
		 WHERE x.job_id = j.id AND x.kind = 'STATE' AND x.id > r.id AND x.to_state <> 'RUNNING'
		   AND x.at < "to"
		 ORDER BY x.id LIMIT 1) e ON true
	  LEFT JOIN LATERAL (
		SELECT x.at FROM quota_sched.job_event x
		 WHERE x.job_id = j.id AND x.kind = 'TERMINATE' AND x.at >= a.arrival AND x.at < "to"
		 ORDER BY x.id LIMIT 1) t ON true
	 WHERE j.job_queue = replay_workload.job_queue AND j.submitted_at < "to"
	   AND NOT EXISTS (SELECT 1 FROM quota_sched.job_event x
						WHERE x.job_id = j.id AND x.kind = 'STATE'
						  AND x.to_state IN ('SUCCEEDED', 'FAILED') AND x.at < "from")
	 ORDER BY a.arrival, j.queued_at, j.id
$$;

REVOKE ALL ON FUNCTION quota_sched.replay_workload(text, timestamptz, timestamptz) FROM PUBLIC;

CREATE OR REPLACE FUNCTION quota_sched.replay_run(job_queue text, "from" timestamptz,
												  "to" timestamptz, changes jsonb)
RETURNS TABLE (scenario text, job_id bigint, quota_share text, capacity_unit text,
			   arrival timestamptz, first_dispatch timestamptz, ended_at timestamptz, state text,
			   preemptions integer, preempted bigint, held_seconds double precision,
			   lost_seconds double precision, borrowed_seconds double precision)
AS 'MODULE_PATHNAME', 'qs_replay_run'
LANGUAGE C VOLATILE CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.replay_check(job_queue text, "from" timestamptz,
													"to" timestamptz, changes jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'qs_replay_check'
LANGUAGE C STABLE CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.replay_run(text, timestamptz, timestamptz, jsonb),
	quota_sched.replay_check(text, timestamptz, timestamptz, jsonb) FROM PUBLIC;

/*
 * replay_recorded(job_queue, from, to): the same rows from the history
 * itself (scenario 'recorded'): a job that held capacity at `from` counts
 * as dispatched then; a held interval ends at the next change of state
 * that ends its attempt, lost when a preemption ended it (3.6: the
 * reasons CROSS_SHARE_PREEMPTION, IN_SHARE_PREEMPTION, CAPACITY_REDUCED).
 */
CREATE OR REPLACE FUNCTION quota_sched.replay_recorded(job_queue text, "from" timestamptz,
													   "to" timestamptz)
RETURNS TABLE (scenario text, job_id bigint, quota_share text, capacity_unit text,
			   arrival timestamptz, first_dispatch timestamptz, ended_at timestamptz, state text,
			   preemptions integer, preempted bigint, held_seconds double precision,
			   lost_seconds double precision, borrowed_seconds double precision)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
	WITH w AS (
		SELECT wl.job_id, wl.quota_share, wl.capacity_unit, wl.instance_count, wl.arrival
		  FROM quota_sched.replay_workload(replay_recorded.job_queue, "from", "to") wl),
	held AS (
		SELECT s.job_id, greatest(s.at, "from") AS a, least(coalesce(e.at, "to"), "to") AS b,
			   coalesce(e.reason IN ('CROSS_SHARE_PREEMPTION', 'IN_SHARE_PREEMPTION', 'CAPACITY_REDUCED'),
						false) AS lost
		  FROM w
		  JOIN quota_sched.job_event s ON s.job_id = w.job_id AND s.kind = 'STATE'
									   AND s.to_state = 'SCHEDULED' AND s.at < "to"
		  LEFT JOIN LATERAL (
			SELECT x.at, x.reason FROM quota_sched.job_event x
			 WHERE x.job_id = s.job_id AND x.id > s.id AND x.kind = 'STATE'
			   AND x.to_state NOT IN ('SCHEDULED', 'STARTING', 'RUNNING')
			 ORDER BY x.id LIMIT 1) e ON true
		 WHERE coalesce(e.at, "to") > "from"),
	h AS (
		SELECT held.job_id, min(held.a) AS a, bool_or(held.b = "to") AS holding,
			   count(*) FILTER (WHERE held.lost AND held.b < "to")::int AS lost_n,
			   sum(extract(epoch FROM held.b - held.a)) AS held_s,
			   sum(extract(epoch FROM held.b - held.a)) FILTER (WHERE held.lost AND held.b < "to") AS lost_s
		  FROM held GROUP BY held.job_id),
	p AS (
		SELECT x.preempted_for AS job_id, count(*) AS n
		  FROM quota_sched.job_event x
		 WHERE x.preempted_for IS NOT NULL AND x.job_queue = replay_recorded.job_queue
		   AND x.kind = 'STATE' AND x.at >= "from" AND x.at < "to"
		   AND x.from_state IN ('SCHEDULED', 'STARTING', 'RUNNING')
		   AND x.to_state NOT IN ('SCHEDULED', 'STARTING', 'RUNNING')
		 GROUP BY x.preempted_for)
	SELECT 'recorded', w.job_id, w.quota_share, w.capacity_unit, w.arrival,
		   greatest(h.a, w.arrival), f.at,
		   coalesce(f.to_state, CASE WHEN h.holding THEN 'RUNNING' ELSE 'RUNNABLE' END),
		   coalesce(h.lost_n, 0), coalesce(p.n, 0),
		   coalesce(h.held_s, 0) * w.instance_count, coalesce(h.lost_s, 0) * w.instance_count,
		   NULL::double precision
	  FROM w
	  LEFT JOIN h ON h.job_id = w.job_id
	  LEFT JOIN p ON p.job_id = w.job_id
	  LEFT JOIN LATERAL (
		SELECT x.at, x.to_state FROM quota_sched.job_event x
		 WHERE x.job_id = w.job_id AND x.kind = 'STATE' AND x.to_state IN ('SUCCEEDED', 'FAILED')
		   AND x.at < "to"
		 ORDER BY x.id LIMIT 1) f ON true
	UNION ALL
	SELECT 'recorded', NULL, u.quota_share, u.capacity_unit, NULL, NULL, NULL, NULL, NULL, NULL,
		   NULL, NULL, sum(u.borrowed_instance_seconds)
	  FROM quota_sched.utilization(replay_recorded.job_queue, "from", "to", "to" - "from") u
	 WHERE u.quota_share IS NOT NULL
	 GROUP BY u.quota_share, u.capacity_unit
$$;

REVOKE ALL ON FUNCTION quota_sched.replay_recorded(text, timestamptz, timestamptz) FROM PUBLIC;

/*
 * replay(job_queue, from, to, changes): per scenario (recorded, baseline,
 * candidate), share and unit: the jobs of the workload, those that ended
 * by `to`, the attempts preemption ended, the wait from arrival to first
 * dispatch (p50, p95; a job never dispatched waits until `to`), the
 * instance-hours held in [from, to), of them borrowed, and those held by
 * attempts a preemption ended.  Admins.
 */
CREATE OR REPLACE FUNCTION quota_sched.replay(job_queue text, "from" timestamptz, "to" timestamptz,
											  changes jsonb DEFAULT '{}')
RETURNS TABLE (scenario text, quota_share text, capacity_unit text, jobs integer,
			   finished integer, preemptions integer, wait_p50 interval, wait_p95 interval,
			   used_hours double precision, borrowed_hours double precision,
			   lost_hours double precision)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	PERFORM quota_sched.replay_check(replay.job_queue, "from", "to", changes);
	RETURN QUERY
	WITH r AS (
		SELECT * FROM quota_sched.replay_recorded(replay.job_queue, "from", "to")
		UNION ALL
		SELECT * FROM quota_sched.replay_run(replay.job_queue, "from", "to", changes))
	SELECT r.scenario, r.quota_share, r.capacity_unit,
		   count(r.job_id)::int,
		   count(r.ended_at)::int,
		   coalesce(sum(r.preemptions), 0)::int,
		   make_interval(secs => round(percentile_cont(0.5) WITHIN GROUP (ORDER BY
				extract(epoch FROM coalesce(r.first_dispatch, "to") - r.arrival))::numeric, 3)),
		   make_interval(secs => round(percentile_cont(0.95) WITHIN GROUP (ORDER BY
				extract(epoch FROM coalesce(r.first_dispatch, "to") - r.arrival))::numeric, 3)),
		   coalesce(sum(r.held_seconds), 0) / 3600,
		   coalesce(sum(r.borrowed_seconds), 0) / 3600,
		   coalesce(sum(r.lost_seconds), 0) / 3600
	  FROM r
	 GROUP BY r.scenario, r.quota_share, r.capacity_unit
	 ORDER BY array_position(ARRAY['recorded', 'baseline', 'candidate'], r.scenario),
			  r.quota_share COLLATE "C", r.capacity_unit COLLATE "C";
END
$$;

/*
 * replay_jobs(job_queue, from, to, changes, share, max_jobs): why the
 * candidate differs: the jobs (of one share, or all) whose wait changed
 * most from the baseline to the candidate, each with its wait in the
 * three scenarios (null: not dispatched by `to`), the attempts preemption
 * ended and the attempts it ended of others, in the baseline and the
 * candidate.  Admins.
 */
CREATE OR REPLACE FUNCTION quota_sched.replay_jobs(job_queue text, "from" timestamptz,
												   "to" timestamptz, changes jsonb DEFAULT '{}',
												   share text DEFAULT NULL,
												   max_jobs integer DEFAULT 20)
RETURNS TABLE (job_id bigint, quota_share text, capacity_unit text, arrival timestamptz,
			   wait_recorded interval, wait_baseline interval, wait_candidate interval,
			   preemptions_baseline integer, preemptions_candidate integer,
			   preempted_baseline bigint, preempted_candidate bigint)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
BEGIN
	PERFORM quota_sched.replay_check(replay_jobs.job_queue, "from", "to", changes);
	IF max_jobs IS NULL OR max_jobs < 1 OR max_jobs > 10000 THEN
		RAISE EXCEPTION 'invalid max_jobs %', max_jobs
			USING ERRCODE = 'invalid_parameter_value', DETAIL = 'max_jobs is from 1 to 10000.';
	END IF;
	RETURN QUERY
	WITH r AS (
		SELECT * FROM quota_sched.replay_recorded(replay_jobs.job_queue, "from", "to")
		UNION ALL
		SELECT * FROM quota_sched.replay_run(replay_jobs.job_queue, "from", "to", changes)),
	j AS (
		SELECT r.job_id, min(r.quota_share) AS quota_share, min(r.capacity_unit) AS capacity_unit,
			   min(r.arrival) AS arrival,
			   min(r.first_dispatch - r.arrival) FILTER (WHERE r.scenario = 'recorded') AS wr,
			   min(r.first_dispatch - r.arrival) FILTER (WHERE r.scenario = 'baseline') AS wb,
			   min(r.first_dispatch - r.arrival) FILTER (WHERE r.scenario = 'candidate') AS wc,
			   min(r.preemptions) FILTER (WHERE r.scenario = 'baseline') AS pb,
			   min(r.preemptions) FILTER (WHERE r.scenario = 'candidate') AS pc,
			   min(r.preempted) FILTER (WHERE r.scenario = 'baseline') AS xb,
			   min(r.preempted) FILTER (WHERE r.scenario = 'candidate') AS xc
		  FROM r WHERE r.job_id IS NOT NULL
		 GROUP BY r.job_id)
	SELECT j.job_id, j.quota_share, j.capacity_unit, j.arrival, j.wr, j.wb, j.wc, j.pb, j.pc, j.xb, j.xc
	  FROM j
	 WHERE share IS NULL OR j.quota_share = share
	 ORDER BY abs(extract(epoch FROM coalesce(j.wc, "to" - j.arrival) - coalesce(j.wb, "to" - j.arrival))) DESC,
			  j.job_id
	 LIMIT max_jobs;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.replay(text, timestamptz, timestamptz, jsonb),
	quota_sched.replay_jobs(text, timestamptz, timestamptz, jsonb, text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.replay(text, timestamptz, timestamptz, jsonb),
	quota_sched.replay_jobs(text, timestamptz, timestamptz, jsonb, text, integer)
	TO quota_sched_admin;

/* ===== sql/src/metrics.sql ===== */

/*
 * metrics.sql
 *		The activity counters of the passes and the worker, and metrics():
 *		every metric in the Prometheus text format.
 *
 * A function source: the install script and every update script run it.
 */

/* ---------------------------------------------------------------------
 * Metrics (Prometheus).  pass_stats() and worker_stats() read the
 * activity counters the passes and the worker keep in shared memory
 * (stats.c); metrics() returns every metric in the Prometheus text format
 * (doc/reporting.md, "Metrics").  Its counters of jobs come from
 * usage_totals and the history after the rollup, read in one statement
 * (one snapshot), so a rollup or a prune never makes them go back.  JIT
 * is off: the planner's estimates for the functions it reads would have it
 * compile, for 100 ms, a statement that runs in a few.
 *
 * Without shared_preload_libraries = 'quota_sched' there are no such
 * counters (stats.c sets them up only when the library is preloaded):
 * metrics() then says so, with quota_sched_stats_available 0 (1 when they
 * are kept: the shared memory named "quota_sched stats" exists), and
 * leaves out the figures of passes and of the worker rather than show
 * zeros that would read as "no pass ran"; quota_sched_worker_up is 0.
 * ------------------------------------------------------------------- */
CREATE OR REPLACE FUNCTION quota_sched.pass_stats()
RETURNS TABLE (job_queue text, passes bigint, last_pass_at timestamptz,
			   last_pass_seconds double precision, given_up_in_a_row integer, given_up bigint)
AS 'MODULE_PATHNAME', 'qs_pass_stats'
LANGUAGE C VOLATILE;

CREATE OR REPLACE FUNCTION quota_sched.worker_stats(OUT running boolean, OUT started_at timestamptz,
										 OUT last_round_at timestamptz, OUT rounds bigint)
AS 'MODULE_PATHNAME', 'qs_worker_stats'
LANGUAGE C VOLATILE;

/* The label set {k1="v1",k2="v2",...} of the pairs, its values escaped. */
CREATE OR REPLACE FUNCTION quota_sched.metric_labels(VARIADIC pairs text[]) RETURNS text
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT '{' || string_agg(pairs[i] || '="'
							 || replace(replace(replace(coalesce(pairs[i + 1], ''),
														E'\\', E'\\\\'), '"', E'\\"'),
										E'\n', E'\\n')
							 || '"', ',' ORDER BY i) || '}'
	  FROM generate_subscripts(pairs, 1) AS g(i)
	 WHERE i % 2 = 1;
END;

CREATE OR REPLACE FUNCTION quota_sched.metrics() RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
BEGIN ATOMIC
	WITH families(name, type, help) AS (VALUES
		('quota_sched_share_capacity_instances', 'gauge', 'The own capacity of the share (capacity_limits).'),
		('quota_sched_share_in_use_instances', 'gauge', 'Instances held by the share''s jobs (SCHEDULED, STARTING, RUNNING).'),
		('quota_sched_share_borrowed_instances', 'gauge', 'Instances the share holds beyond its own capacity.'),
		('quota_sched_share_idle_instances', 'gauge', 'Own capacity the share does not use (lent or unused).'),
		('quota_sched_share_lendable_instances', 'gauge', 'Own capacity the share may lend.'),
		('quota_sched_share_runnable_jobs', 'gauge', 'Jobs of the share waiting for capacity (RUNNABLE).'),
		('quota_sched_share_longest_wait_seconds', 'gauge', 'How long the share''s longest-waiting RUNNABLE job has waited since it last became RUNNABLE (0: none waits).'),
		('quota_sched_share_recent_borrow_instance_hours', 'gauge', 'The share''s recent borrowing, decayed by the queue''s fair_half_life (FAIR order).'),
		('quota_sched_share_budget_instance_hours', 'gauge', 'The share''s budget of the unit for its budget_period.'),
		('quota_sched_share_budget_spent_instance_hours', 'gauge', 'Instance-hours the share''s jobs held in the current budget period.'),
		('quota_sched_environment_capacity_instances', 'gauge', 'The capacity of the service environment.'),
		('quota_sched_dispatches_total', 'counter', 'Jobs dispatched (RUNNABLE to SCHEDULED).'),
		('quota_sched_jobs_succeeded_total', 'counter', 'Jobs that ended SUCCEEDED.'),
		('quota_sched_jobs_failed_total', 'counter', 'Jobs that ended FAILED, but for those terminated.'),
		('quota_sched_jobs_terminated_total', 'counter', 'Jobs that ended FAILED after a terminate() (cancelled by a user or admin).'),
		('quota_sched_preempted_attempts_total', 'counter', 'Attempts ended by preemption.'),
		('quota_sched_preempted_early_attempts_total', 'counter', 'Attempts ended by preemption less than a minute after their dispatch (churn).'),
		('quota_sched_stop_requests_total', 'counter', 'Stops requested of held jobs, by reason.'),
		('quota_sched_passes_total', 'counter', 'Passes run since the server started.'),
		('quota_sched_last_pass_duration_seconds', 'gauge', 'How long the queue''s last pass took.'),
		('quota_sched_last_pass_timestamp_seconds', 'gauge', 'When the queue''s last pass ended.'),
		('quota_sched_passes_given_up_total', 'counter', 'Worker rounds that gave up the queue''s pass: its lock was held too long.'),
		('quota_sched_passes_given_up_in_a_row', 'gauge', 'Worker rounds in a row, up to now, that gave up the queue''s pass.'),
		('quota_sched_passed_over_jobs', 'gauge', 'Jobs the last pass passed over: another transaction held their rows.'),
		('quota_sched_passed_over_passes', 'gauge', 'Passes in a row that passed over jobs.'),
		('quota_sched_rollup_until_timestamp_seconds', 'gauge', 'Until when the queue''s hourly rollup is done.'),
		('quota_sched_worker_up', 'gauge', '1 when the background worker runs in this database, enabled.'),
		('quota_sched_worker_start_timestamp_seconds', 'gauge', 'When the background worker started.'),
		('quota_sched_worker_last_round_timestamp_seconds', 'gauge', 'When the background worker''s last round ended.'),
		('quota_sched_worker_rounds_total', 'counter', 'Rounds of the background worker since the server started.'),
		('quota_sched_stats_available', 'gauge', '1 when the library is preloaded (shared_preload_libraries) and keeps the counters of passes and of the worker; 0: it is not, and their metrics are absent.')),
	stats AS (SELECT EXISTS (SELECT FROM pg_catalog.pg_shmem_allocations a
							  WHERE a.name = 'quota_sched stats') AS available),
	queues AS (SELECT q.name, r.rolled_until FROM quota_sched.job_queue q
				 LEFT JOIN quota_sched.usage_rollup r ON r.job_queue = q.name),
	shares AS (SELECT u.*, quota_sched.metric_labels('job_queue', u.job_queue, 'quota_share', u.quota_share,
													 'capacity_unit', u.capacity_unit) AS labels
				 FROM quota_sched.share_usage u),
	budgets AS (SELECT b.*, quota_sched.metric_labels('job_queue', b.job_queue, 'quota_share', b.quota_share,
													  'capacity_unit', b.capacity_unit) AS labels
				  FROM quota_sched.share_budget b),
	counts AS (
		SELECT t.job_queue, t.quota_share, t.capacity_unit, t.counter, sum(t.value) AS value
		  FROM (SELECT u.job_queue, u.quota_share, u.capacity_unit, u.counter, u.value
				  FROM quota_sched.usage_totals u
				 WHERE u.job_queue IN (SELECT q.name FROM queues q)
				UNION ALL
				SELECT q.name, c.quota_share, c.capacity_unit, c.counter, c.value
				  FROM queues q
				 CROSS JOIN LATERAL quota_sched.usage_counters(q.name, coalesce(q.rolled_until, '-infinity'),
																'infinity') c
				UNION ALL
				SELECT s.job_queue, s.quota_share, s.capacity_unit, k.counter, 0
				  FROM shares s,
					   unnest(ARRAY['dispatched', 'succeeded', 'failed', 'terminated', 'preempted',
									 'preempted_early']) AS k(counter)) t
		 GROUP BY 1, 2, 3, 4),
	passes AS (SELECT p.*, quota_sched.metric_labels('job_queue', q.name) AS labels
				 FROM queues q LEFT JOIN quota_sched.pass_stats() p ON p.job_queue = q.name
				WHERE (SELECT st.available FROM stats st)),
	worker AS (SELECT w.*, w.running AND current_database() = current_setting('quota_sched.database', true)
						   AND current_setting('quota_sched.enabled', true)::boolean AS up
				 FROM quota_sched.worker_stats() w),
	samples(name, labels, value) AS (
		SELECT 'quota_sched_share_capacity_instances', s.labels, s.max_capacity::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_in_use_instances', s.labels, s.in_use::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_borrowed_instances', s.labels, s.borrowed::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_idle_instances', s.labels, s.idle::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_lendable_instances', s.labels, s.lendable::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_runnable_jobs', s.labels, s.runnable_jobs::text FROM shares s
		UNION ALL SELECT 'quota_sched_share_longest_wait_seconds', s.labels,
						 coalesce(round(greatest(extract(epoch FROM now() - s.waiting_since), 0), 3)::text, '0')
					FROM shares s
		UNION ALL
		SELECT 'quota_sched_share_recent_borrow_instance_hours', s.labels,
			   round(s.recent_borrow_hours::numeric, 6)::text
		  FROM shares s WHERE s.recent_borrow_hours IS NOT NULL
		UNION ALL
		SELECT 'quota_sched_share_budget_instance_hours', b.labels, b.budget_hours::text FROM budgets b
		UNION ALL
		SELECT 'quota_sched_share_budget_spent_instance_hours', b.labels, round(b.spent_hours::numeric, 6)::text
		  FROM budgets b
		UNION ALL
		SELECT 'quota_sched_environment_capacity_instances',
			   quota_sched.metric_labels('service_environment', e.name, 'capacity_unit', k.key),
			   quota_sched.capacity_of(e.capacity_limits, k.key)::text
		  FROM quota_sched.service_environment e, jsonb_object_keys(e.capacity_limits) AS k(key)
		UNION ALL
		SELECT CASE c.counter WHEN 'dispatched' THEN 'quota_sched_dispatches_total'
							  WHEN 'succeeded' THEN 'quota_sched_jobs_succeeded_total'
							  WHEN 'failed' THEN 'quota_sched_jobs_failed_total'
							  WHEN 'terminated' THEN 'quota_sched_jobs_terminated_total'
							  WHEN 'preempted' THEN 'quota_sched_preempted_attempts_total'
							  WHEN 'preempted_early' THEN 'quota_sched_preempted_early_attempts_total'
							  ELSE 'quota_sched_stop_requests_total' END,
			   CASE WHEN c.counter LIKE 'stop:%'
					THEN quota_sched.metric_labels('job_queue', c.job_queue, 'quota_share', c.quota_share,
												   'capacity_unit', c.capacity_unit,
												   'reason', substr(c.counter, 6))
					ELSE quota_sched.metric_labels('job_queue', c.job_queue, 'quota_share', c.quota_share,
												   'capacity_unit', c.capacity_unit) END,
			   c.value::text
		  FROM counts c
		UNION ALL SELECT 'quota_sched_passes_total', p.labels, coalesce(p.passes, 0)::text FROM passes p
		UNION ALL
		SELECT 'quota_sched_last_pass_duration_seconds', p.labels, p.last_pass_seconds::text
		  FROM passes p WHERE p.last_pass_at IS NOT NULL
		UNION ALL
		SELECT 'quota_sched_last_pass_timestamp_seconds', p.labels, extract(epoch FROM p.last_pass_at)::text
		  FROM passes p WHERE p.last_pass_at IS NOT NULL
		UNION ALL
		SELECT 'quota_sched_passes_given_up_total', p.labels, coalesce(p.given_up, 0)::text FROM passes p
		UNION ALL
		SELECT 'quota_sched_passes_given_up_in_a_row', p.labels, coalesce(p.given_up_in_a_row, 0)::text
		  FROM passes p
		UNION ALL
		SELECT 'quota_sched_passed_over_jobs', quota_sched.metric_labels('job_queue', q.name),
			   coalesce(cardinality(st.passed_over), 0)::text
		  FROM queues q LEFT JOIN quota_sched.queue_status st ON st.job_queue = q.name
		UNION ALL
		SELECT 'quota_sched_passed_over_passes', quota_sched.metric_labels('job_queue', q.name),
			   coalesce(st.passed_over_passes, 0)::text
		  FROM queues q LEFT JOIN quota_sched.queue_status st ON st.job_queue = q.name
		UNION ALL
		SELECT 'quota_sched_rollup_until_timestamp_seconds', quota_sched.metric_labels('job_queue', q.name),
			   extract(epoch FROM q.rolled_until)::text
		  FROM queues q WHERE q.rolled_until IS NOT NULL
		UNION ALL SELECT 'quota_sched_worker_up', '', w.up::integer::text FROM worker w
		UNION ALL
		SELECT 'quota_sched_worker_start_timestamp_seconds', '', extract(epoch FROM w.started_at)::text
		  FROM worker w WHERE w.up
		UNION ALL
		SELECT 'quota_sched_worker_last_round_timestamp_seconds', '', extract(epoch FROM w.last_round_at)::text
		  FROM worker w WHERE w.up AND w.last_round_at IS NOT NULL
		UNION ALL SELECT 'quota_sched_worker_rounds_total', '', w.rounds::text FROM worker w WHERE w.up
		UNION ALL SELECT 'quota_sched_stats_available', '', st.available::integer::text FROM stats st)
	SELECT coalesce(string_agg(b.block, '' ORDER BY b.name), '')
	  FROM (SELECT f.name, '# HELP ' || f.name || ' ' || f.help || E'\n# TYPE ' || f.name || ' ' || f.type
						   || E'\n' || string_agg(s.name || s.labels || ' ' || s.value || E'\n', ''
												  ORDER BY s.labels COLLATE "C") AS block
			  FROM families f JOIN samples s ON s.name = f.name
			 GROUP BY f.name, f.type, f.help) b;
END;

REVOKE ALL ON FUNCTION quota_sched.pass_stats(), quota_sched.worker_stats(),
	quota_sched.metric_labels(text[]), quota_sched.metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.pass_stats(), quota_sched.worker_stats(),
	quota_sched.metrics() TO quota_sched_admin, pg_monitor;
GRANT USAGE ON SCHEMA quota_sched TO pg_monitor;

/* ===== sql/src/chart.sql ===== */

/*
 * chart.sql
 *		utilization_svg(): the utilization report drawn as an SVG chart.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 */

/* ---------------------------------------------------------------------
 * The chart.  utilization_svg() draws what
 * utilization() returns as one SVG document, one panel a capacity unit:
 * the instances each share used on average in each bucket, stacked by
 * share (own capacity solid, borrowed hatched), each share's own capacity
 * as a dashed step line and the environment's as a solid one.  It calls
 * utilization() with the caller's rights, so a user's chart has the
 * shares they may see, and its errors (22023) are utilization()'s.
 * Every bar and line carries its figures in data-* attributes, so that a
 * test (sql/utilization_svg.sql) reads the chart back with xpath() and
 * compares it with utilization().
 * ------------------------------------------------------------------- */

/*
 * Text for XML content and attribute values: & < > " ' escaped, and the
 * C0 controls XML 1.0 does not allow (all but tab, newline and carriage
 * return) dropped.  Names of queues, shares and units cannot hold any of
 * these (src/checks.c), but a chart stays a well-formed document whatever
 * names may become.  (A body in SQL: resolved when created, whatever the
 * caller's search_path.)
 */
CREATE OR REPLACE FUNCTION quota_sched.xml_escape(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
		pg_catalog.regexp_replace(value, '[\x01-\x08\x0B\x0C\x0E-\x1F]', '', 'g'),
		'&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&apos;');

/* A number as a chart writes it: rounded to digits, no trailing zeros. */
CREATE OR REPLACE FUNCTION quota_sched.svg_number(value double precision, digits integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.trim_scale(pg_catalog.round(value::numeric, digits))::text;

/*
 * utilization_svg(job_queue, from, to, bucket): the chart of
 * utilization(job_queue, from, to, bucket), in UTC.
 *
 * At most 2,000 buckets (22023 beyond, before utilization() does any
 * work): the plot is 960 pixels wide, or a pixel a bucket beyond 960
 * buckets, so that every bucket stays visible; and the document grows
 * with buckets x shares x units: some 250 bytes a bar (with its tooltip),
 * 30 a step of a share's line (with its halo), so that 2,000 buckets of
 * ten busy shares make some 6 MB a unit, which a browser still opens.  Empty bars are not
 * drawn.  A range without rows (before any history of the configuration)
 * gives a chart that says "no usage".
 *
 * TimeZone is UTC inside, for utilization() as well: buckets of days are
 * then 24 hours long wherever the caller is, as date_bin() counts them, and
 * the time axis is in UTC.  The document is built by string_agg() over
 * sets (no string grown in a loop but the panels', one a unit).  Plans
 * are made for each call's figures: a generic plan, which a session gets
 * after five calls, joins the buckets with the rows of utilization() in a
 * nested loop, some ten times slower at 2,000 buckets.
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization_svg(job_queue text, "from" timestamptz, "to" timestamptz,
											bucket interval DEFAULT '1 hour')
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET TimeZone = 'UTC'
SET plan_cache_mode = force_custom_plan
AS $$
DECLARE
	q text := utilization_svg.job_queue;
	width interval := utilization_svg.bucket;
	t0 timestamptz := "from";
	t1 timestamptz := "to";
	-- layout, in pixels: left margin (y labels), plot's height, a panel's
	-- height (its title, plot and time axis) and where panels start
	lm constant integer := 64;
	ph constant integer := 220;
	pt constant integer := 28;
	panel_h constant integer := 304;
	top_y constant integer := 56;
	pw integer;
	span double precision;
	wsecs numeric;
	-- utilization()'s rows, a column each
	ub timestamptz[];
	us text[];
	uu text[];
	uc double precision[];
	uo double precision[];
	uw double precision[];
	units text[];
	shares text[];
	colours text[];
	subtitle text;
	head text;
	defs text;
	xaxis text;
	panels text := '';
	legend text;
	lw integer;
	lh integer;
	tw integer;
	th integer;
	cu text;
	p integer;
	ymax numeric;
	ystep numeric;
	ytop numeric;
	mag numeric;
	tick interval;
	label_fmt text;
	yaxis text;
	bars text;
	lines text;
	dash_gap integer;
BEGIN
	-- The chart's own bound, when the arguments are otherwise sound
	-- (utilization() judges them, a bucket below a second included, and
	-- allows 100,000 buckets and finite ranges; t1 - t0 is not taken: it
	-- fails on infinity and wraps around beyond 292,000 years).
	IF isfinite(t0) AND isfinite(t1) AND t0 < t1 AND extract(epoch FROM width) >= 1
	   AND (extract(epoch FROM t1) - extract(epoch FROM t0)) / extract(epoch FROM width) > 2000 THEN
		RAISE EXCEPTION 'too many buckets for a chart: from % to % in buckets of %', t0, t1, width
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A chart has at most 2,000 buckets.',
				  HINT = 'Use larger buckets, or utilization() for the figures.';
	END IF;
	SELECT array_agg(r.bucket_start), array_agg(r.quota_share), array_agg(r.capacity_unit),
		   array_agg(r.capacity), array_agg(r.own_instance_seconds),
		   array_agg(r.borrowed_instance_seconds)
	  INTO ub, us, uu, uc, uo, uw
	  FROM quota_sched.utilization(q, t0, t1, width) r;

	wsecs := extract(epoch FROM width);
	span := extract(epoch FROM t1 - t0);
	pw := greatest(960, ceil(span / wsecs)::integer);
	subtitle := format('from %s to %s UTC, buckets of %s',
					   to_char(t0, 'YYYY-MM-DD HH24:MI:SS'), to_char(t1, 'YYYY-MM-DD HH24:MI:SS'),
					   CASE WHEN wsecs % 86400 = 0 THEN trim_scale(wsecs / 86400) || ' day'
							WHEN wsecs % 3600 = 0 THEN trim_scale(wsecs / 3600) || ' hour'
							WHEN wsecs % 60 = 0 THEN trim_scale(wsecs / 60) || ' minute'
							ELSE trim_scale(wsecs) || ' second' END
					   || CASE WHEN wsecs IN (1, 60, 3600, 86400) THEN '' ELSE 's' END);
	head := format('<text class="title" x="16" y="24" font-size="16" font-weight="bold">'
				   'Utilization of job queue %s</text>' || E'\n'
				   '<text class="subtitle" x="16" y="44" fill="#444">%s</text>' || E'\n',
				   quota_sched.xml_escape(q), subtitle);

	IF ub IS NULL THEN
		RETURN format('<svg xmlns="http://www.w3.org/2000/svg" width="640" height="100" '
					  'viewBox="0 0 640 100" font-family="sans-serif" font-size="12">' || E'\n'
					  '<title>Utilization of job queue %s</title>' || E'\n'
					  '<rect width="100%%" height="100%%" fill="white"/>' || E'\n'
					  '%s<text class="no-usage" x="16" y="76">no usage: no history of jobs or '
					  'capacity in this range</text>' || E'\n</svg>\n',
					  quota_sched.xml_escape(q), head);
	END IF;

	-- Shares in the order of their names, each with its colour in every
	-- panel: ten distinct ones, then hues a golden angle apart.
	SELECT array_agg(s.sh ORDER BY s.sh COLLATE "C"),
		   array_agg(CASE WHEN s.k < 10
						  THEN (ARRAY['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f',
									  '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'])[s.k + 1]
						  ELSE format('hsl(%s,55%%,45%%)', (s.k * 137) % 360) END
					 ORDER BY s.sh COLLATE "C")
	  INTO shares, colours
	  FROM (SELECT d.sh, (row_number() OVER (ORDER BY d.sh COLLATE "C") - 1)::integer AS k
			  FROM (SELECT DISTINCT x.sh FROM unnest(us) AS x(sh) WHERE x.sh IS NOT NULL) d) s;
	SELECT array_agg(DISTINCT x.un COLLATE "C" ORDER BY x.un COLLATE "C") INTO units FROM unnest(uu) AS x(un);

	-- Borrowed instances: the share's colour, hatched (and grey in the
	-- legend).
	SELECT string_agg(format('<pattern id="hatch-%s" patternUnits="userSpaceOnUse" width="6" height="6" '
							 'patternTransform="rotate(45)"><rect width="6" height="6" fill="%s" '
							 'fill-opacity="0.3"/><rect width="3" height="6" fill="%s"/></pattern>',
							 s.id, s.colour, s.colour), E'\n' ORDER BY s.k)
	  INTO defs
	  FROM (SELECT c.k, (c.k - 1)::text AS id, c.colour FROM unnest(colours) WITH ORDINALITY AS c(colour, k)
			UNION ALL
			SELECT 0, 'legend', '#777777') s;

	-- Shares of equal capacities draw their lines on one another: the
	-- dashes of up to four of them take turns.
	dash_gap := greatest(3, 6 * (least(cardinality(shares), 4) - 1));

	-- The time axis, the same in every panel: ticks at round UTC times,
	-- the fewest that leave about 100 pixels between labels.
	SELECT c.iv INTO tick
	  FROM unnest(ARRAY['1 second', '2 seconds', '5 seconds', '10 seconds', '15 seconds',
						'30 seconds', '1 minute', '2 minutes', '5 minutes', '10 minutes',
						'15 minutes', '30 minutes', '1 hour', '2 hours', '3 hours', '6 hours',
						'12 hours', '1 day', '2 days', '7 days', '1 month', '3 months', '6 months',
						'1 year', '2 years', '5 years', '10 years', '20 years', '50 years',
						'100 years', '200 years', '500 years', '1000 years']::interval[])
		   WITH ORDINALITY AS c(iv, n)
	 WHERE span / extract(epoch FROM c.iv) <= greatest(2, pw / 100)
	 ORDER BY c.n LIMIT 1;
	label_fmt := CASE WHEN tick < interval '1 minute' THEN 'HH24:MI:SS'
					  WHEN tick < interval '1 day' THEN 'HH24:MI'
					  WHEN tick < interval '1 month' THEN 'YYYY-MM-DD'
					  WHEN tick < interval '1 year' THEN 'YYYY-MM'
					  ELSE 'YYYY' END;
	WITH ticks AS (
		SELECT g.t
		  FROM generate_series(
				CASE WHEN tick < interval '1 month'
					 -- weeks start on Monday (2000-01-03)
					 THEN date_bin(tick, t0, timestamptz '2000-01-03 00:00+00')
					 ELSE make_timestamptz((floor(extract(year FROM t0)
												  / greatest(1, extract(year FROM tick)))
											* greatest(1, extract(year FROM tick)))::integer,
										   1, 1, 0, 0, 0, 'UTC') END,
				t1, tick) AS g(t)
		 WHERE tick IS NOT NULL AND g.t >= t0),
	labelled AS (
		SELECT tk.t, lm + pw * extract(epoch FROM tk.t - t0) / span AS x,
			   to_char(tk.t, label_fmt) AS label,
			   -- under times of day, the date where it changes
			   CASE WHEN tick < interval '1 day'
					 AND to_char(tk.t, 'YYYY-MM-DD') IS DISTINCT FROM
						 lag(to_char(tk.t, 'YYYY-MM-DD')) OVER (ORDER BY tk.t)
					THEN to_char(tk.t, 'YYYY-MM-DD') END AS day
		  FROM ticks tk)
	SELECT format('<g class="x-axis" font-size="11" fill="#333">' || E'\n'
				  '<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>' || E'\n',
				  lm, pt + ph, lm + pw, pt + ph)
		   || coalesce(string_agg(
				format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#333"/>'
					   '<text class="tick" x="%s" y="%s" text-anchor="middle">%s</text>',
					   quota_sched.svg_number(l.x, 2), pt + ph, quota_sched.svg_number(l.x, 2),
					   pt + ph + 5, quota_sched.svg_number(l.x, 2), pt + ph + 17, l.label)
				|| CASE WHEN l.day IS NULL THEN ''
						ELSE format('<text class="tick-day" x="%s" y="%s" text-anchor="middle">%s</text>',
									quota_sched.svg_number(l.x, 2), pt + ph + 30, l.day) END,
				E'\n' ORDER BY l.t) || E'\n', '')
		   || format('<text x="%s" y="%s" text-anchor="end">time (UTC)</text>' || E'\n</g>\n',
					 lm + pw, pt + ph + 44)
	  INTO xaxis
	  FROM labelled l;

	p := 0;
	FOREACH cu IN ARRAY units LOOP
		-- The highest point of the panel: a bucket's stack of bars, or a
		-- capacity; the y axis goes up to the round number above it, in
		-- steps of 1, 2 or 5 times a power of ten, about five of them.
		SELECT max(greatest(r.cap, coalesce(r.own, 0) + coalesce(r.bor, 0)))::numeric
		  INTO ymax
		  FROM (SELECT x.b, x.sh, x.cap,
					   sum(x.own / extract(epoch FROM least(x.b + width, t1) - x.b)) OVER (PARTITION BY x.b) AS own,
					   sum(x.bor / extract(epoch FROM least(x.b + width, t1) - x.b)) OVER (PARTITION BY x.b) AS bor
				  FROM unnest(ub, us, uu, uc, uo, uw) AS x(b, sh, un, cap, own, bor)
				 WHERE x.un = cu) r;
		-- (a tenth above it: lines at the top stay clear of the frame)
		ymax := greatest(coalesce(ymax, 0), 0.9) * 1.1;
		mag := power(10::numeric, floor(log(ymax / 5)));
		ystep := CASE WHEN ymax / 5 <= mag THEN mag WHEN ymax / 5 <= 2 * mag THEN 2 * mag
					  WHEN ymax / 5 <= 5 * mag THEN 5 * mag ELSE 10 * mag END;
		ytop := ceil(ymax / ystep) * ystep;

		SELECT string_agg(format('<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#ddd"/>'
								 '<text x="%s" y="%s" text-anchor="end" font-size="11" fill="#333">%s</text>',
								 lm, quota_sched.svg_number(y.py, 2), lm + pw, quota_sched.svg_number(y.py, 2),
								 lm - 6, quota_sched.svg_number(y.py + 4, 2), trim_scale(y.v)),
						  E'\n' ORDER BY y.v)
		  INTO yaxis
		  FROM (SELECT g.i * ystep AS v, pt + ph - (g.i * ystep / ytop * ph)::double precision AS py
				  FROM generate_series(0, (ytop / ystep)::integer) AS g(i)) y;

		-- The bars: each share's own instances then its borrowed ones, on
		-- top of the shares before it.
		WITH bk AS (
			SELECT g.b, lm + pw * extract(epoch FROM g.b - t0) / span AS x0,
				   lm + pw * extract(epoch FROM least(g.b + width, t1) - t0) / span AS x1,
				   extract(epoch FROM least(g.b + width, t1) - g.b)::double precision AS secs,
				   replace(to_char(g.b, 'YYYY-MM-DD"T"HH24:MI:SS.US'), '.000000', '') || 'Z' AS iso
			  FROM generate_series(t0, t1, width) AS g(b) WHERE g.b < t1),
		seg AS (
			SELECT bk.*, x.sh, array_position(shares, x.sh) - 1 AS k, s.o, s.part,
				   s.isecs / bk.secs AS v
			  FROM unnest(ub, us, uu, uc, uo, uw) AS x(b, sh, un, cap, own, bor)
			  JOIN bk ON bk.b = x.b
			 CROSS JOIN LATERAL (VALUES (0, 'own', x.own), (1, 'borrowed', x.bor)) AS s(o, part, isecs)
			 WHERE x.un = cu AND x.sh IS NOT NULL AND s.isecs > 0),
		stack AS (
			SELECT seg.*, sum(seg.v) OVER (PARTITION BY seg.b ORDER BY seg.k, seg.o
										   ROWS UNBOUNDED PRECEDING) AS cum
			  FROM seg)
		SELECT string_agg(format('<rect class="%s" data-share="%s" data-unit="%s" data-bucket="%s" '
								 'data-instances="%s" x="%s" y="%s" width="%s" height="%s" fill="%s">'
								 '<title>%s, %s: %s instances from %s</title></rect>',
								 st.part, quota_sched.xml_escape(st.sh), quota_sched.xml_escape(cu),
								 st.iso, quota_sched.svg_number(st.v, 3),
								 quota_sched.svg_number(st.x0, 2),
								 quota_sched.svg_number(pt + ph - st.cum / ytop::double precision * ph, 2),
								 quota_sched.svg_number(st.x1 - st.x0, 2),
								 quota_sched.svg_number(st.v / ytop::double precision * ph, 2),
								 CASE st.o WHEN 0 THEN colours[st.k + 1]
										   ELSE format('url(#hatch-%s)', st.k) END,
								 quota_sched.xml_escape(st.sh), st.part,
								 quota_sched.svg_number(st.v, 3), st.iso),
						  E'\n' ORDER BY st.b, st.k, st.o)
		  INTO bars
		  FROM stack st;

		-- The capacities, as step lines over every bucket (no row: none):
		-- each share's own, dashed in its colour, then the environment's.
		WITH bk AS (
			SELECT g.b, g.i,
				   lm + pw * extract(epoch FROM g.b - t0) / span AS x0,
				   lm + pw * extract(epoch FROM least(g.b + width, t1) - t0) / span AS x1
			  FROM generate_series(t0, t1, width) WITH ORDINALITY AS g(b, i) WHERE g.b < t1),
		caps AS (
			SELECT x.b, x.sh, x.cap FROM unnest(ub, us, uu, uc) AS x(b, sh, un, cap) WHERE x.un = cu),
		series AS (
			SELECT DISTINCT r.sh, CASE WHEN r.sh IS NULL THEN -1 ELSE array_position(shares, r.sh) - 1 END AS k
			  FROM caps r),
		points AS (
			SELECT s.sh, s.k, bk.i, bk.x0, bk.x1, coalesce(r.cap, 0) AS cap,
				   quota_sched.svg_number(pt + ph - coalesce(r.cap, 0) / ytop::double precision * ph, 2) AS py
			  FROM series s CROSS JOIN bk
			  LEFT JOIN caps r ON r.b = bk.b AND r.sh IS NOT DISTINCT FROM s.sh)
		-- (The shares' lines have a white halo under them all, so that
		-- each shows over the bars of its own colour.)
		SELECT coalesce(string_agg(format('<path class="halo" d="%s" fill="none" stroke="white" '
										  'stroke-width="4" stroke-opacity="0.8"/>', l.d),
								   E'\n' ORDER BY l.k DESC) FILTER (WHERE l.k >= 0) || E'\n', '')
			   || string_agg(format('<path class="%s"%s data-unit="%s" data-capacity="%s" d="%s" fill="none" %s/>',
									CASE WHEN l.k < 0 THEN 'env-capacity' ELSE 'capacity' END,
									CASE WHEN l.k < 0 THEN ''
										 ELSE format(' data-share="%s"', quota_sched.xml_escape(l.sh)) END,
									quota_sched.xml_escape(cu), l.caps, l.d,
									CASE WHEN l.k < 0 THEN 'stroke="#222" stroke-width="2"'
										 ELSE format('stroke="%s" stroke-width="2" stroke-dasharray="6 %s" '
													 'stroke-dashoffset="%s"', colours[l.k + 1], dash_gap,
													 6 * (l.k % 4)) END),
						  E'\n' ORDER BY l.k DESC)
		  INTO lines
		  FROM (SELECT pts.sh, pts.k,
					   string_agg(quota_sched.svg_number(pts.cap, 3), ' ' ORDER BY pts.i) AS caps,
					   string_agg(CASE WHEN pts.i = 1
									   THEN format('M%s %sH%s', quota_sched.svg_number(pts.x0, 2),
												   pts.py, quota_sched.svg_number(pts.x1, 2))
									   ELSE format('V%sH%s', pts.py, quota_sched.svg_number(pts.x1, 2)) END,
								  '' ORDER BY pts.i) AS d
				  FROM points pts GROUP BY pts.sh, pts.k) l;

		panels := panels
			|| format('<g class="panel" data-unit="%s" transform="translate(0,%s)">' || E'\n'
					  '<text class="unit" x="%s" y="18" font-weight="bold">%s</text>' || E'\n'
					  '<text x="%s" y="%s" transform="rotate(-90 %s %s)" text-anchor="middle" '
					  'font-size="11" fill="#333">instances</text>' || E'\n',
					  quota_sched.xml_escape(cu), top_y + p * panel_h, lm,
					  quota_sched.xml_escape(cu), 14, pt + ph / 2, 14, pt + ph / 2)
			|| yaxis || E'\n'
			|| '<g class="bars" shape-rendering="crispEdges">' || E'\n'
			|| coalesce(bars || E'\n', '') || '</g>' || E'\n'
			|| '<g class="lines">' || E'\n' || coalesce(lines || E'\n', '') || '</g>' || E'\n'
			|| xaxis || '</g>' || E'\n';
		p := p + 1;
	END LOOP;

	-- The legend, right of the panels: the shares' colours, then what
	-- the bars and the lines are.
	lw := 48 + 7 * greatest(27, (SELECT max(length(s.sh)) FROM unnest(shares) AS s(sh)));
	SELECT format('<g class="legend" transform="translate(%s,%s)">' || E'\n'
				  '<text x="0" y="%s" font-weight="bold">shares</text>' || E'\n',
				  lm + pw + 24, top_y, 18)
		   || coalesce(string_agg(format('<rect class="legend-share" data-share="%s" x="0" y="%s" '
										 'width="14" height="14" fill="%s"/>'
										 '<text x="20" y="%s">%s</text>',
										 quota_sched.xml_escape(s.sh), 10 + 20 * s.k, colours[s.k],
										 21 + 20 * s.k, quota_sched.xml_escape(s.sh)),
								  E'\n' ORDER BY s.k) || E'\n', '')
	  INTO legend
	  FROM unnest(shares) WITH ORDINALITY AS s(sh, k);
	lh := 10 + 20 * (coalesce(cardinality(shares), 0) + 1);
	legend := legend || format(
		'<rect x="0" y="%s" width="14" height="14" fill="#777"/><text x="20" y="%s">own capacity used</text>' || E'\n'
		'<rect x="0" y="%s" width="14" height="14" fill="url(#hatch-legend)"/><text x="20" y="%s">borrowed</text>' || E'\n'
		'<line x1="0" y1="%s" x2="14" y2="%s" stroke="#777" stroke-width="2" stroke-dasharray="6 3"/>'
		'<text x="20" y="%s">a share''s own capacity</text>' || E'\n'
		'<line x1="0" y1="%s" x2="14" y2="%s" stroke="#222" stroke-width="2"/>'
		'<text x="20" y="%s">the environment''s capacity</text>' || E'\n</g>\n',
		lh, lh + 11, lh + 20, lh + 31, lh + 47, lh + 47, lh + 51, lh + 67, lh + 67, lh + 71);
	lh := lh + 80;

	tw := lm + pw + 24 + lw;
	th := top_y + greatest(p * panel_h, lh) + 8;
	RETURN format('<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" '
				  'font-family="sans-serif" font-size="12">' || E'\n'
				  '<title>Utilization of job queue %s</title>' || E'\n'
				  '<desc>Instances in use on average in each bucket, stacked by share: within the '
				  'share''s own capacity solid, borrowed hatched. Dashed lines: each share''s own '
				  'capacity; solid line: the environment''s capacity. %s.</desc>' || E'\n'
				  '<defs>' || E'\n' || '%s' || E'\n</defs>\n'
				  '<rect width="100%%" height="100%%" fill="white"/>' || E'\n',
				  tw, th, tw, th, quota_sched.xml_escape(q), subtitle, defs)
		   || head || panels || legend || '</svg>' || E'\n';
END
$$;

REVOKE ALL ON FUNCTION quota_sched.xml_escape(text), quota_sched.svg_number(double precision, integer),
	quota_sched.utilization_svg(text, timestamptz, timestamptz, interval) FROM PUBLIC;
-- utilization_svg() runs with the caller's rights: the callers of
-- utilization() call its helpers too.
GRANT EXECUTE ON FUNCTION quota_sched.xml_escape(text), quota_sched.svg_number(double precision, integer),
	quota_sched.utilization_svg(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ===== sql/src/policies.sql ===== */

/*
 * policies.sql
 *		Row-level security: who sees and changes which jobs and history
 *		(scheduling.md 8).
 *
 * Run by the install script only, after the functions the policies call
 * (team_shares(), user_api.sql); an update changes a policy in its own
 * script (ALTER POLICY) and this file to match.
 *
 * Admins see and change every job, agents see every job.  A user sees,
 * reprioritises (and explains and terminates, src/user_api.c) their own
 * jobs and those of the shares of their teams (a share's submit_role; a
 * share without one keeps each user to their own jobs, and an owner keeps
 * their own jobs after leaving the team), as the members of a Slurm account
 * or a Kueue namespace do.  A user sees the history of the jobs they see:
 * job_event_user reads the job through job's own policies (they apply
 * inside a policy's subquery too), so the two rules cannot drift apart; it
 * is an EXISTS, so that the history of one job reads one job by its key.
 */

ALTER TABLE quota_sched.job ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_admin ON quota_sched.job TO quota_sched_admin
	USING (true) WITH CHECK (true);
CREATE POLICY job_agent_read ON quota_sched.job FOR SELECT TO quota_sched_agent
	USING (true);
CREATE POLICY job_user_read ON quota_sched.job FOR SELECT TO quota_sched_user
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t));
CREATE POLICY job_user_submit ON quota_sched.job FOR INSERT TO quota_sched_user
	WITH CHECK (owner = current_user);
CREATE POLICY job_user_reprioritise ON quota_sched.job FOR UPDATE TO quota_sched_user
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t))
	WITH CHECK (owner = current_user
				OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
												  FROM quota_sched.team_shares() t));

ALTER TABLE quota_sched.job_event ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_event_admin_agent ON quota_sched.job_event FOR SELECT
	TO quota_sched_admin, quota_sched_agent USING (true);
CREATE POLICY job_event_user ON quota_sched.job_event FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_event.job_id));

/*
 * job_attempt (issue 21, a job's own output): admins see every row; a user
 * sees the attempts of the jobs they see, through job's own policies (as
 * job_event_user).  Agents have no privilege on the table.
 */
ALTER TABLE quota_sched.job_attempt ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_attempt_admin ON quota_sched.job_attempt FOR SELECT TO quota_sched_admin
	USING (true);
CREATE POLICY job_attempt_user ON quota_sched.job_attempt FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_attempt.job_id));
