/*
 * quota_sched--0.1.sql
 *		Data model, validation, history, roles and row-level security.
 *
 * Never edit this file once released: add quota_sched--0.1--0.2.sql instead.
 */

\echo Use "CREATE EXTENSION quota_sched" to load this file. \quit

/*
 * Roles are cluster-wide: create them when missing; they outlive the
 * extension (pg_dumpall --globals-only dumps them).
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

/* ---------------------------------------------------------------------
 * Check functions used by CHECK constraints.  Each returns true or raises
 * check_violation with a message naming the object and the bad value.
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.check_name(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_name'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_capacity_map(value jsonb, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_capacity_map'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_state(value text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_state'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_strategy(strategy text, borrow_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_strategy'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_runnable_timeout(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_runnable_timeout'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* ---------------------------------------------------------------------
 * Configuration
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
		CHECK (quota_sched.check_runnable_timeout(runnable_timeout, 'job queue ' || name))
);

CREATE TABLE quota_sched.quota_share (
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	name			text NOT NULL
		CHECK (quota_sched.check_name(name, 'quota share')),
	capacity_limits jsonb NOT NULL DEFAULT '{}'
		CHECK (quota_sched.check_capacity_map(capacity_limits, 'quota share ' || name)),
	strategy		text NOT NULL,
	borrow_limit	integer NOT NULL DEFAULT -1,
	in_share_preemption boolean NOT NULL DEFAULT false,
	state			text NOT NULL DEFAULT 'ENABLED'
		CHECK (quota_sched.check_state(state, 'quota share ' || name)),
	submit_role		name,
	PRIMARY KEY (job_queue, name),
	CHECK (quota_sched.check_strategy(strategy, borrow_limit, 'quota share ' || name))
);

/* ---------------------------------------------------------------------
 * Jobs.  System columns have no defaults: the insert trigger fills them and
 * refuses a value given by the submitter.
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
	CONSTRAINT job_state_check CHECK (state IN ('SUBMITTED', 'PENDING', 'RUNNABLE', 'SCHEDULED',
						  'STARTING', 'RUNNING', 'SUCCEEDED', 'FAILED')),
	CONSTRAINT job_share_fkey FOREIGN KEY (job_queue, quota_share)
		REFERENCES quota_sched.quota_share (job_queue, name) ON DELETE CASCADE
);

ALTER SEQUENCE quota_sched.job_id_seq OWNED BY quota_sched.job.id;

/*
 * The heads of each share's RUNNABLE jobs of a unit, in share order (SPEC
 * 3.2); also the loose index scan for the (share, unit) pairs with jobs.
 */
CREATE INDEX job_runnable_share_order ON quota_sched.job
	(job_queue, quota_share, capacity_unit, priority DESC, queued_at, id)
	WHERE state = 'RUNNABLE';
/* Promised jobs (SPEC 3.6) and misconfigured ones (3.7, 3.9). */
CREATE INDEX job_promised ON quota_sched.job (job_queue, promised_at, id)
	WHERE state = 'RUNNABLE' AND promised_at IS NOT NULL;
CREATE INDEX job_misconfigured ON quota_sched.job (job_queue, status_reason_at)
	WHERE state = 'RUNNABLE' AND status_reason LIKE 'MISCONFIGURATION:%';
/* Unclaimed jobs, oldest first (claim). */
CREATE INDEX job_claimable ON quota_sched.job (job_queue, scheduled_at, id)
	WHERE state = 'SCHEDULED' AND agent IS NULL;
/* The smallest waiting jobs of a lender, per unit (wanted capacity, 3.2). */
CREATE INDEX job_runnable_by_size ON quota_sched.job
	(job_queue, quota_share, capacity_unit, instance_count)
	WHERE state = 'RUNNABLE';
/* Jobs holding capacity (3.1). */
CREATE INDEX job_holding ON quota_sched.job (job_queue, quota_share, capacity_unit)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING');
/* An agent's held jobs (heartbeat). */
CREATE INDEX job_agent_held ON quota_sched.job (agent)
	WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING');

/* ---------------------------------------------------------------------
 * History and passes
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
	actor			text NOT NULL
);

ALTER SEQUENCE quota_sched.job_event_id_seq OWNED BY quota_sched.job_event.id;

CREATE INDEX job_event_job ON quota_sched.job_event (job_id, id);

/* ---------------------------------------------------------------------
 * Triggers
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.job_before_insert()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_before_insert'
LANGUAGE C;

CREATE FUNCTION quota_sched.job_before_update()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_before_update'
LANGUAGE C;

CREATE FUNCTION quota_sched.job_history()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_history'
LANGUAGE C;

CREATE FUNCTION quota_sched.job_lock_queues()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_lock_queues'
LANGUAGE C;

CREATE TRIGGER job_before_insert BEFORE INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_insert();
CREATE TRIGGER job_lock_queues BEFORE UPDATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_lock_queues();
CREATE TRIGGER job_before_update BEFORE UPDATE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_update();
CREATE TRIGGER job_history_insert AFTER INSERT ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_history();
CREATE TRIGGER job_history_update AFTER UPDATE OF state ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state)
	EXECUTE FUNCTION quota_sched.job_history();

/*
 * A job's history goes with it.  job_event.job_id has no foreign key: its
 * check would cost every submission an index probe and a row lock; this
 * statement trigger deletes the history of deleted jobs instead.
 */
CREATE FUNCTION quota_sched.job_history_delete()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM quota_sched.job_event e USING deleted_jobs d WHERE e.job_id = d.id;
	RETURN NULL;
END
$$;

CREATE TRIGGER job_history_delete AFTER DELETE ON quota_sched.job
	REFERENCING OLD TABLE AS deleted_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_history_delete();

/*
 * Configuration changes invalidate the backends' cached configuration (and
 * take effect at the next pass).
 */
CREATE FUNCTION quota_sched.config_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_config_changed'
LANGUAGE C;

CREATE TRIGGER service_environment_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.service_environment
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER job_queue_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.job_queue
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();
CREATE TRIGGER quota_share_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON quota_sched.quota_share
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.config_changed();

/*
 * Deleting a queue or share: refused while it has a job that has not ended;
 * otherwise its jobs and their history go with it (ON DELETE CASCADE).
 */
CREATE FUNCTION quota_sched.refuse_delete_with_live_jobs()
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
	RETURN OLD;
END
$$;

CREATE TRIGGER job_queue_before_delete BEFORE DELETE ON quota_sched.job_queue
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();
CREATE TRIGGER quota_share_before_delete BEFORE DELETE ON quota_sched.quota_share
	FOR EACH ROW EXECUTE FUNCTION quota_sched.refuse_delete_with_live_jobs();

/* ---------------------------------------------------------------------
 * The scheduling pass (SPEC 3)
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.run_pass(job_queue text DEFAULT NULL, dry_run boolean DEFAULT false)
RETURNS TABLE (job_id bigint, action text, quota_share text, reason text)
AS 'MODULE_PATHNAME', 'qs_run_pass'
LANGUAGE C CALLED ON NULL INPUT
SET jit = off;	/* a pass is many tiny queries; JIT would cost more than them */

/* ---------------------------------------------------------------------
 * Launcher agents (SPEC 5.2)
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.claim(agent text, job_queue text, capacity_unit text DEFAULT NULL,
	max_jobs integer DEFAULT 1, lease interval DEFAULT '60 seconds',
	max_instances integer DEFAULT NULL)
RETURNS SETOF quota_sched.job
AS 'MODULE_PATHNAME', 'qs_claim'
LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION quota_sched.heartbeat(agent text, lease interval DEFAULT '60 seconds')
RETURNS TABLE (job_id bigint, stop_reason text)
AS 'MODULE_PATHNAME', 'qs_heartbeat'
LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION quota_sched.report(job_id bigint, agent text, state text, reason text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_report'
LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION quota_sched.release(job_id bigint, agent text, reason text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_release'
LANGUAGE C CALLED ON NULL INPUT;

/* ---------------------------------------------------------------------
 * Users, reporting and control (SPEC 7)
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.terminate(job_id bigint, reason text DEFAULT 'Terminated by user')
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_terminate'
LANGUAGE C CALLED ON NULL INPUT;

CREATE FUNCTION quota_sched.explain(job_id bigint)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'qs_explain'
LANGUAGE C STABLE CALLED ON NULL INPUT
SET jit = off;

CREATE FUNCTION quota_sched.queue_snapshot(job_queue text, max_jobs integer DEFAULT 100)
RETURNS TABLE (queue_position integer, job_id bigint, quota_share text, priority integer,
			   queued_at timestamptz)
AS 'MODULE_PATHNAME', 'qs_queue_snapshot'
LANGUAGE C STABLE CALLED ON NULL INPUT
SET jit = off;

/*
 * Per queue, share and unit: capacity, allowed (null when unbounded), use,
 * borrowing and idle capacity, counted over all jobs (the view reads as its
 * owner, so row-level security does not narrow the counts).
 */
CREATE VIEW quota_sched.share_usage AS
WITH held AS (
	SELECT job_queue, quota_share, capacity_unit,
		   coalesce(sum(instance_count) FILTER (WHERE state <> 'RUNNABLE'), 0) AS in_use,
		   count(*) FILTER (WHERE state = 'RUNNABLE') AS runnable_jobs,
		   count(*) FILTER (WHERE state <> 'RUNNABLE') AS active_jobs
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
			ELSE (c.capacity * (100 + s.borrow_limit)) / 100 END AS allowed,
	   coalesce(h.in_use, 0) AS in_use,
	   greatest(0, coalesce(h.in_use, 0) - c.capacity) AS borrowed,
	   greatest(0, c.capacity - coalesce(h.in_use, 0)) AS idle,
	   coalesce(h.runnable_jobs, 0) AS runnable_jobs,
	   coalesce(h.active_jobs, 0) AS active_jobs
  FROM units u
  JOIN quota_sched.quota_share s ON s.job_queue = u.job_queue AND s.name = u.quota_share
  CROSS JOIN LATERAL (SELECT coalesce((s.capacity_limits ->> u.capacity_unit)::bigint, 0)
						  AS capacity) c
  LEFT JOIN held h ON h.job_queue = u.job_queue AND h.quota_share = u.quota_share
				  AND h.capacity_unit = u.capacity_unit;

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

/* ---------------------------------------------------------------------
 * Privileges and row-level security (SPEC 8)
 * ------------------------------------------------------------------- */

REVOKE ALL ON SCHEMA quota_sched FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA quota_sched FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA quota_sched FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA quota_sched FROM PUBLIC;

GRANT USAGE ON SCHEMA quota_sched TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT EXECUTE ON FUNCTION quota_sched.run_pass(text, boolean) TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text),
	quota_sched.release(bigint, text, text)
	TO quota_sched_agent;
GRANT EXECUTE ON FUNCTION quota_sched.terminate(bigint, text), quota_sched.explain(bigint)
	TO quota_sched_admin, quota_sched_user;
GRANT EXECUTE ON FUNCTION quota_sched.queue_snapshot(text, integer)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT SELECT ON quota_sched.share_usage TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* Configuration: admins write it, everybody reads it. */
GRANT SELECT ON quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT INSERT, UPDATE, DELETE ON quota_sched.service_environment, quota_sched.job_queue,
	quota_sched.quota_share TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.check_name(text, text),
	quota_sched.check_capacity_map(jsonb, text),
	quota_sched.check_state(text, text),
	quota_sched.check_strategy(text, integer, text),
	quota_sched.check_runnable_timeout(interval, text)
	TO quota_sched_admin;

/*
 * Jobs.  Submitters may name any column in INSERT and UPDATE so that the
 * job triggers, not a bare "permission denied", tell them which column they
 * may not set or change: the triggers refuse every system column on INSERT
 * and every change but priority on UPDATE, for every role.
 */
GRANT SELECT, INSERT, UPDATE ON quota_sched.job TO quota_sched_admin, quota_sched_user;
GRANT SELECT ON quota_sched.job TO quota_sched_agent;
GRANT SELECT ON quota_sched.job_event, quota_sched.pass_log
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

ALTER TABLE quota_sched.job ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_admin ON quota_sched.job TO quota_sched_admin
	USING (true) WITH CHECK (true);
CREATE POLICY job_agent_read ON quota_sched.job FOR SELECT TO quota_sched_agent
	USING (true);
CREATE POLICY job_user_read ON quota_sched.job FOR SELECT TO quota_sched_user
	USING (owner = current_user);
CREATE POLICY job_user_submit ON quota_sched.job FOR INSERT TO quota_sched_user
	WITH CHECK (owner = current_user);
CREATE POLICY job_user_reprioritise ON quota_sched.job FOR UPDATE TO quota_sched_user
	USING (owner = current_user) WITH CHECK (owner = current_user);

ALTER TABLE quota_sched.job_event ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_event_admin_agent ON quota_sched.job_event FOR SELECT
	TO quota_sched_admin, quota_sched_agent USING (true);
CREATE POLICY job_event_user ON quota_sched.job_event FOR SELECT TO quota_sched_user
	USING (EXISTS (SELECT 1 FROM quota_sched.job j
				   WHERE j.id = job_event.job_id AND j.owner = current_user));
