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

CREATE OR REPLACE FUNCTION quota_sched.job_scan_floor()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_scan_floor'
LANGUAGE C;

CREATE OR REPLACE FUNCTION quota_sched.job_history()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_history'
LANGUAGE C;

/*
 * A job's history goes with it.  job_event.job_id has no foreign key: its
 * check would cost every submission an index probe and a row lock; this
 * statement trigger deletes the history of deleted jobs instead, their
 * preemptions (job_preemption) with it, and forgets the owner and name of
 * a deleted preemptor (the view preemptions showed them from its job).
 */
CREATE OR REPLACE FUNCTION quota_sched.job_history_delete()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM quota_sched.job_event e USING deleted_jobs d WHERE e.job_id = d.id;
	DELETE FROM quota_sched.job_preemption p USING deleted_jobs d WHERE p.victim_job = d.id;
	UPDATE quota_sched.job_preemption p SET preemptor_owner = NULL, preemptor_name = NULL
	  FROM deleted_jobs d WHERE p.preemptor_job = d.id;
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

CREATE OR REPLACE FUNCTION quota_sched.held_capacity_written()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_held_capacity_written'
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
/*
 * A queue's agents changed their hosts (agent_change), or its shares
 * changed (share_change; tables.sql has both): a row of a new generation
 * of the queue in the table of changes named by the trigger's argument,
 * and of the queue the row left when it moved; on a truncate, of every
 * queue that has one.
 */
CREATE OR REPLACE FUNCTION quota_sched.queue_generation()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	add text := format('INSERT INTO quota_sched.%I VALUES ($1, nextval(%L))',
					   TG_ARGV[0], 'quota_sched.' || TG_ARGV[0] || '_seq');
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		EXECUTE format('INSERT INTO quota_sched.%1$I SELECT q, nextval(%2$L)'
					   ' FROM (SELECT DISTINCT job_queue FROM quota_sched.%1$I) AS d(q)',
					   TG_ARGV[0], 'quota_sched.' || TG_ARGV[0] || '_seq');
		RETURN NULL;
	END IF;
	IF TG_OP <> 'INSERT' THEN
		EXECUTE add USING OLD.job_queue;
	END IF;
	IF TG_OP = 'INSERT' OR (TG_OP = 'UPDATE' AND NEW.job_queue <> OLD.job_queue) THEN
		EXECUTE add USING NEW.job_queue;
	END IF;
	RETURN NULL;
END
$$;

/*
 * A job with placement constraints entered its share's order
 * (constrained_change, tables.sql): a new generation of its queue's
 * classes.  The trigger of updates; a submission's is written by
 * job_history() (src/jobs/job_history.c).
 */
CREATE OR REPLACE FUNCTION quota_sched.job_constrained_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_constrained_changed'
LANGUAGE C;

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
	quota_sched.config_history(), quota_sched.job_before_delete(),
	quota_sched.queue_generation(), quota_sched.job_constrained_changed(),
	quota_sched.job_scan_floor(), quota_sched.held_capacity_written() FROM PUBLIC;
