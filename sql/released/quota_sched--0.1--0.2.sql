/*
 * quota_sched--0.1--0.2.sql
 *		From 0.1 to 0.2.  A new installation runs quota_sched--0.1.sql and
 *		then this script; an existing one runs it through
 *		ALTER EXTENSION quota_sched UPDATE.
 */

\echo Use "ALTER EXTENSION quota_sched UPDATE TO '0.2'" to load this file. \quit

/*
 * 0.2 bounds every interval it adds to a time at 365 days (timeouts,
 * runnable timeouts, leases, minimum runtimes), so that no sum leaves the
 * range of timestamps and breaks the passes of a queue.  0.1 took any
 * positive interval: longer ones, which could never end anyway, become 365
 * days (the triggers of 0.1 would refuse the change to a job).
 */
SET LOCAL session_replication_role = replica;
UPDATE quota_sched.job SET timeout = interval '365 days'
 WHERE timeout > interval '365 days';
UPDATE quota_sched.job_queue SET runnable_timeout = interval '365 days'
 WHERE runnable_timeout > interval '365 days';
RESET session_replication_role;

/* ---------------------------------------------------------------------
 * Counters of held capacity (scheduling.md 3.1): per queue, share and
 * unit, the instances held by SCHEDULED, STARTING and RUNNING jobs, those
 * of them whose stop is pending, and how many jobs hold them.  A pass reads
 * these rows instead of the jobs.
 *
 * Every change of a job's state or stop_reason adds its difference, in the
 * same transaction (the job_usage triggers, usage.c), to one of a few
 * stripes of its counter: the stripe of the backend that makes it (its
 * process number modulo 16), so that concurrent reports rarely wait for
 * one another's row.  A counter is the sum of its stripes; rows are only
 * ever updated in place (no index column changes, room left on each page),
 * so they leave no dead index entries behind however fast jobs churn.
 * Nobody else writes them.
 * ------------------------------------------------------------------- */

CREATE TABLE quota_sched.held_capacity (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	stripe			smallint NOT NULL,
	instances		bigint NOT NULL,
	stopping_instances bigint NOT NULL,
	jobs			bigint NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, stripe)
) WITH (fillfactor = 50);

/*
 * The counters of the jobs already there.  No job may change until the
 * triggers that keep the counters exist (the end of this script's
 * transaction): a change between this count and them would be lost.
 */
LOCK TABLE quota_sched.job IN SHARE ROW EXCLUSIVE MODE;
INSERT INTO quota_sched.held_capacity
SELECT job_queue, quota_share, capacity_unit, 0, sum(instance_count),
	   coalesce(sum(instance_count) FILTER (WHERE stop_reason IS NOT NULL), 0), count(*)
  FROM quota_sched.job
 WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING')
 GROUP BY job_queue, quota_share, capacity_unit;

CREATE FUNCTION quota_sched.job_usage()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_usage'
LANGUAGE C;

CREATE FUNCTION quota_sched.job_usage_flush()
RETURNS trigger
AS 'MODULE_PATHNAME', 'qs_job_usage_flush'
LANGUAGE C;

CREATE TRIGGER job_usage_update AFTER UPDATE OF state, stop_reason ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR OLD.stop_reason IS DISTINCT FROM NEW.stop_reason)
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_delete AFTER DELETE ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IN ('SCHEDULED', 'STARTING', 'RUNNING'))
	EXECUTE FUNCTION quota_sched.job_usage();
CREATE TRIGGER job_usage_flush AFTER UPDATE OR DELETE OR TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_usage_flush();

/*
 * Deleting a share or queue (refused while it has live jobs) takes its
 * counters with it.
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
	END IF;
	RETURN OLD;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.job_usage(), quota_sched.job_usage_flush() FROM PUBLIC;

/*
 * The counters that do not match the jobs, recounted from them: none,
 * unless jobs were changed with the triggers off (session_replication_role
 * = replica) other than by a restore of a dump.
 */
CREATE FUNCTION quota_sched.held_capacity_drift()
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

SELECT pg_catalog.pg_extension_config_dump('quota_sched.held_capacity', '');
REVOKE ALL ON quota_sched.held_capacity FROM PUBLIC;

/* ---------------------------------------------------------------------
 * What a pass reads of the held jobs, through indexes, and only what it
 * needs: those whose lease expired or whose attempt passed its deadline,
 * those stopping for a promised job, and, when it looks for victims, a
 * share's jobs in victim order (scheduling.md 3.4), as far as it goes.
 * ------------------------------------------------------------------- */

/*
 * The end of an attempt with a timeout: started_at + timeout, days and
 * months counted in UTC (so that it can be indexed).
 */
CREATE FUNCTION quota_sched.attempt_deadline(started_at timestamptz, timeout interval)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ((started_at AT TIME ZONE 'UTC') + timeout) AT TIME ZONE 'UTC';

/* index maintenance evaluates it as whoever writes the job */
REVOKE ALL ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.attempt_deadline(timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

DROP INDEX quota_sched.job_holding;
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

/* ---------------------------------------------------------------------
 * New scheduling options (scheduling.md 3.1-3.3): a queue's borrow order,
 * and per share a lend limit, strict queueing, a minimum runtime before
 * preemption and a weight in the FAIR borrow order.
 * ------------------------------------------------------------------- */

CREATE FUNCTION quota_sched.check_choice(value text, column_name text, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_choice'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_lend_limit(strategy text, lend_limit integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_lend_limit'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_min_runtime(value interval, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_min_runtime'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE FUNCTION quota_sched.check_weight(weight integer, what text)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_check_weight'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

/* the CHECKs of the configuration tables run as whoever writes them */
REVOKE ALL ON FUNCTION quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.check_choice(text, text, text),
	quota_sched.check_lend_limit(text, integer, text),
	quota_sched.check_min_runtime(interval, text),
	quota_sched.check_weight(integer, text) TO quota_sched_admin;

ALTER TABLE quota_sched.job_queue
	ADD COLUMN borrow_order text NOT NULL DEFAULT 'FIFO'
		CHECK (quota_sched.check_choice(borrow_order, 'borrow_order', 'job queue ' || name));

ALTER TABLE quota_sched.quota_share
	ADD COLUMN lend_limit integer NOT NULL DEFAULT -1,
	ADD COLUMN queueing text NOT NULL DEFAULT 'BEST_EFFORT'
		CHECK (quota_sched.check_choice(queueing, 'queueing', 'quota share ' || name)),
	ADD COLUMN min_runtime interval
		CHECK (quota_sched.check_min_runtime(min_runtime, 'quota share ' || name)),
	ADD COLUMN weight integer NOT NULL DEFAULT 1
		CHECK (quota_sched.check_weight(weight, 'quota share ' || name)),
	ADD CHECK (quota_sched.check_lend_limit(strategy, lend_limit, 'quota share ' || name));

/*
 * share_usage gains lendable: the most of its own capacity a share lends
 * (lend_limit); 0 for a RESERVE or DISABLED share, which lends nothing.  A
 * capacity written 5.0 (an integral number, accepted) is read through
 * numeric, and allowed is computed in bigint, so that no value a share may
 * hold breaks the view for everyone.
 */
CREATE OR REPLACE VIEW quota_sched.share_usage AS
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
			ELSE (c.capacity * (100 + s.borrow_limit::bigint)) / 100 END AS allowed,
	   coalesce(h.in_use, 0) AS in_use,
	   greatest(0, coalesce(h.in_use, 0) - c.capacity) AS borrowed,
	   greatest(0, c.capacity - coalesce(h.in_use, 0)) AS idle,
	   coalesce(h.runnable_jobs, 0) AS runnable_jobs,
	   coalesce(h.active_jobs, 0) AS active_jobs,
	   CASE WHEN s.strategy = 'RESERVE' OR s.state <> 'ENABLED' THEN 0
			WHEN s.lend_limit = -1 THEN c.capacity
			ELSE (c.capacity * s.lend_limit) / 100 END AS lendable
  FROM units u
  JOIN quota_sched.quota_share s ON s.job_queue = u.job_queue AND s.name = u.quota_share
  CROSS JOIN LATERAL (SELECT coalesce((s.capacity_limits ->> u.capacity_unit)::numeric::bigint, 0)
						  AS capacity) c
  LEFT JOIN held h ON h.job_queue = u.job_queue AND h.quota_share = u.quota_share
				  AND h.capacity_unit = u.capacity_unit;

/* ---------------------------------------------------------------------
 * Users and admins may UPDATE a job's priority only: the privilege is the
 * column's, not the table's.  With UPDATE on the table, any team member
 * could LOCK TABLE quota_sched.job IN ACCESS EXCLUSIVE MODE and stall every
 * queue; LOCK TABLE beyond ROW EXCLUSIVE needs a table privilege.
 * ------------------------------------------------------------------- */
REVOKE UPDATE ON quota_sched.job FROM quota_sched_admin, quota_sched_user;
GRANT UPDATE (priority) ON quota_sched.job TO quota_sched_admin, quota_sched_user;

/* ---------------------------------------------------------------------
 * claim(..., start => true): the jobs claimed are RUNNING at once (an
 * agent that starts what it claims saves the round trip of the RUNNING
 * report).  A new parameter is a new signature: the function of 0.1 goes.
 * ------------------------------------------------------------------- */
DROP FUNCTION quota_sched.claim(text, text, text, integer, interval, integer);
CREATE FUNCTION quota_sched.claim(agent text, job_queue text, capacity_unit text DEFAULT NULL,
	max_jobs integer DEFAULT 1, lease interval DEFAULT '60 seconds',
	max_instances integer DEFAULT NULL, start boolean DEFAULT false)
RETURNS SETOF quota_sched.job
AS 'MODULE_PATHNAME', 'qs_claim'
LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean)
	FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean)
	TO quota_sched_agent;

/* ---------------------------------------------------------------------
 * The capacity plan: per queue and unit, what the environment has and what
 * its shares are promised.  A share may name a unit the environment lacks,
 * and the shares of a queue may be promised more than the environment has
 * (the passes then hold the environment's limit, scheduling.md 3.1): both
 * are allowed, but say so at the write.
 * ------------------------------------------------------------------- */
CREATE VIEW quota_sched.capacity_plan AS
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
 * warn_capacity_plan: after a write of the configuration, a WARNING for each
 * unit of the queues it touched that a share names and the environment
 * lacks, or whose shares are promised more than the environment has.
 */
CREATE FUNCTION quota_sched.warn_capacity_plan()
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
REVOKE ALL ON FUNCTION quota_sched.warn_capacity_plan() FROM PUBLIC;

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

/* ---------------------------------------------------------------------
 * report(..., attempt => N): a report about an attempt that is over
 * (1 + failed_attempts + preemption_count moved on) changes nothing, so
 * that a report retried after a lost reply never lands on the job's next
 * attempt.  report(..., exit_code => N): the attempt's exit code, kept in
 * the history with its end.  New parameters are a new signature: the
 * function of 0.1 goes.
 * ------------------------------------------------------------------- */
DROP FUNCTION quota_sched.report(bigint, text, text, text);
CREATE FUNCTION quota_sched.report(job_id bigint, agent text, state text, reason text DEFAULT NULL,
	attempt integer DEFAULT NULL, exit_code integer DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_report'
LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION quota_sched.report(bigint, text, text, text, integer, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.report(bigint, text, text, text, integer, integer)
	TO quota_sched_agent;

/* ---------------------------------------------------------------------
 * A user's UPDATE of jobs takes no queue lock.  In 0.1 it took every
 * queue's lock until the user's transaction ended, so an open transaction
 * after any UPDATE of jobs (even one that changed no row) stalled every
 * pass of every queue.  A pass now reads in one snapshot and never waits
 * for a row a user holds locked: it passes over the job instead.
 * ------------------------------------------------------------------- */
DROP TRIGGER job_lock_queues ON quota_sched.job;
DROP FUNCTION quota_sched.job_lock_queues();

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
SELECT pg_catalog.pg_extension_config_dump('quota_sched.queue_status', '');
REVOKE ALL ON quota_sched.queue_status FROM PUBLIC;
GRANT SELECT ON quota_sched.queue_status TO quota_sched_admin;

/* ---------------------------------------------------------------------
 * Teams: the members of a quota share's submit_role see, reprioritise,
 * explain and terminate the share's jobs, and see their history, as the
 * members of a Slurm account or a Kueue namespace do; a share without a
 * submit_role keeps the rule of 0.1 (each user their own jobs), and an
 * owner keeps their own jobs after leaving the team.  "Member" is the test
 * of a submission: the role has the privileges of submit_role (directly or
 * through other roles, with INHERIT).  explain() and terminate() apply the
 * same test in C (user.c).
 *
 * team_shares() lists the caller's team shares.  job_user_read and
 * job_user_reprioritise call it in an uncorrelated IN, which PostgreSQL
 * runs once per statement as a hashed subplan: each row then costs one
 * hash probe, not a subquery.  Its body is parsed here (BEGIN ATOMIC) and
 * it runs with a pinned search_path, so no search_path of the caller's
 * can change what it means; the SET clause also keeps it from being
 * inlined into every policy that uses it (smaller plans, less for JIT to
 * compile).  A submit_role naming no role matches nothing.
 *
 * job_event_user: a user sees the history of the jobs it sees.  The EXISTS
 * reads the job through job's own policies (they apply inside a policy's
 * subquery too), so the two rules cannot drift apart; it stays an EXISTS,
 * as in 0.1, so that the history of one job reads one job by its key.
 * ------------------------------------------------------------------- */
CREATE FUNCTION quota_sched.team_shares()
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

ALTER POLICY job_user_read ON quota_sched.job
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t));
ALTER POLICY job_user_reprioritise ON quota_sched.job
	USING (owner = current_user
		   OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
											 FROM quota_sched.team_shares() t))
	WITH CHECK (owner = current_user
				OR (job_queue, quota_share) IN (SELECT t.job_queue, t.quota_share
												  FROM quota_sched.team_shares() t));
ALTER POLICY job_event_user ON quota_sched.job_event
	USING (EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = job_event.job_id));

/* ---------------------------------------------------------------------
 * Agent names bound to logins: claim() records the calling role in
 * agent_role, and only that role (or an admin) may heartbeat, report on or
 * release the job afterwards.  It is cleared and kept with agent.  Jobs
 * claimed before the update have none: every agent login may act on them,
 * as in 0.1, until they are requeued or end.  A system column: the job
 * triggers refuse it from users, who may read it as the rest of their jobs.
 * ------------------------------------------------------------------- */
ALTER TABLE quota_sched.job ADD COLUMN agent_role name;

/* ---------------------------------------------------------------------
 * The complete history of a job (accounting).  Besides each change of
 * state (kind STATE), job_event records the requests to stop (STOP, with
 * the reason and the job it makes room for; TERMINATE when a user asked,
 * the user being the actor), priority changes (PRIORITY: old_priority,
 * priority), and promises made and lapsed (PROMISE, PROMISE_LAPSED).  An
 * event that ends an attempt carries the exit code its agent reported, and
 * the job it made room for when preemption ended it.  Every event carries
 * what accounting needs without a join to the job, which may be deleted
 * later: queue, share, unit, instance count, the attempt during which it
 * happened (1 + failed_attempts + preemption_count before the change),
 * and the job's priority.  A dispatch carries how long the job waited
 * since it last became RUNNABLE (waited).
 *
 * The events of 0.1 are states: they get their job's queue, share, unit,
 * instance count and priority, and the attempt they happened in, counted
 * from the history: an attempt ends when a held job goes back to RUNNABLE,
 * unless it was released (status RELEASED; a release with a reason of its
 * own is counted as an end, the one inexact case).
 * ------------------------------------------------------------------- */
ALTER TABLE quota_sched.job_event
	ADD COLUMN kind text NOT NULL DEFAULT 'STATE',
	ADD COLUMN job_queue text,
	ADD COLUMN quota_share text,
	ADD COLUMN capacity_unit text,
	ADD COLUMN instance_count integer,
	ADD COLUMN attempt integer,
	ADD COLUMN priority integer,
	ADD COLUMN old_priority integer,
	ADD COLUMN preempted_for bigint,
	ADD COLUMN exit_code integer,
	ADD COLUMN waited interval;

WITH a AS (
	SELECT id, 1 + count(*) FILTER (WHERE from_state IN ('SCHEDULED', 'STARTING', 'RUNNING')
										AND to_state = 'RUNNABLE'
										AND reason IS DISTINCT FROM 'RELEASED')
					 OVER (PARTITION BY job_id ORDER BY id
						   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS attempt,
		   CASE WHEN to_state = 'SCHEDULED' THEN
				at - (max(at) FILTER (WHERE to_state = 'RUNNABLE')
					  OVER (PARTITION BY job_id ORDER BY id
							ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) END AS waited
	  FROM quota_sched.job_event)
UPDATE quota_sched.job_event e
   SET job_queue = j.job_queue, quota_share = j.quota_share, capacity_unit = j.capacity_unit,
	   instance_count = j.instance_count, priority = j.priority, attempt = a.attempt,
	   waited = a.waited
  FROM quota_sched.job j, a
 WHERE j.id = e.job_id AND a.id = e.id;

DROP TRIGGER job_history_update ON quota_sched.job;
CREATE TRIGGER job_history_update
	AFTER UPDATE OF state, stop_reason, priority, promised_at ON quota_sched.job
	FOR EACH ROW WHEN (OLD.state IS DISTINCT FROM NEW.state
					   OR (OLD.stop_reason IS NULL AND NEW.stop_reason IS NOT NULL)
					   OR OLD.priority IS DISTINCT FROM NEW.priority
					   OR (OLD.promised_at IS NULL) <> (NEW.promised_at IS NULL))
	EXECUTE FUNCTION quota_sched.job_history();

/* ---------------------------------------------------------------------
 * The history of the configuration (issue 11): one config_event row for
 * each INSERT, UPDATE and DELETE of an environment, queue or share, in the
 * transaction that makes it, so that reports can tell each share's and
 * environment's capacity and limits at any past time.
 *
 * at is the transaction's start (as job_event.at); actor the role acting:
 * the role of SET ROLE, else the session's login.  That is current_user
 * as the caller's statement sees it, but read so that the changes
 * PostgreSQL makes as the tables' owner (the cascades of a queue's
 * deletion to its shares and of an environment's rename to its queue)
 * are still the admin's, and so is a change made through a SECURITY
 * DEFINER function.  job_queue is null for an environment, the queue's
 * name for a queue and a share; name and job_queue are the new row's for
 * an INSERT or UPDATE (a rename is recorded under the new name, the old
 * one in old), the old row's for a DELETE.  old and new are the whole rows
 * (to_jsonb; intervals in IntervalStyle postgres, whatever the writer's
 * session uses).  An UPDATE that changes no column's value writes nothing.
 * A TRUNCATE (the owner's alone) records a DELETE for every row it
 * removes.  Changes made with the triggers off (session_replication_role
 * = replica, as a restore does) are not recorded.
 *
 * The trigger writes as the extension's owner (SECURITY DEFINER), so that
 * admins need no privilege on config_event: they read it, nobody but the
 * trigger writes it.  The index answers "the row of share (q, s) in force
 * at time t": the last of (object, job_queue, name) at or before t.
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

CREATE FUNCTION quota_sched.config_history()
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
REVOKE ALL ON FUNCTION quota_sched.config_history() FROM PUBLIC;

/*
 * No configuration may change between the baseline below and the
 * triggers (the end of this script's transaction): such a change would be
 * in neither.
 */
LOCK TABLE quota_sched.service_environment, quota_sched.job_queue, quota_sched.quota_share
	IN SHARE ROW EXCLUSIVE MODE;

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

/*
 * The configuration there is when the history starts: one BASELINE row per
 * environment, queue and share (none in a new installation), so that the
 * capacity is known from the update on.  Intervals are written as the
 * trigger writes them (IntervalStyle postgres); the caller's IntervalStyle
 * is put back after (a SET LOCAL here would last until the end of the
 * caller's transaction).
 */
DO $baseline$
DECLARE
	style text := pg_catalog.current_setting('IntervalStyle');
BEGIN
	PERFORM pg_catalog.set_config('IntervalStyle', 'postgres', true);
	INSERT INTO quota_sched.config_event (at, actor, object, job_queue, name, action, new)
	SELECT pg_catalog.now(),
		   CASE pg_catalog.current_setting('role') WHEN 'none' THEN session_user::text
				ELSE pg_catalog.current_setting('role') END,
		   b.object, b.job_queue, b.name, 'BASELINE', b.new
	  FROM (SELECT 1, 'service_environment', NULL, e.name, pg_catalog.to_jsonb(e)
			  FROM quota_sched.service_environment e
			UNION ALL
			SELECT 2, 'job_queue', q.name, q.name, pg_catalog.to_jsonb(q) FROM quota_sched.job_queue q
			UNION ALL
			SELECT 3, 'quota_share', s.job_queue, s.name, pg_catalog.to_jsonb(s)
			  FROM quota_sched.quota_share s)
		   AS b(n, object, job_queue, name, new)
	 ORDER BY b.n, b.job_queue COLLATE "C", b.name COLLATE "C";
	PERFORM pg_catalog.set_config('IntervalStyle', style, true);
END
$baseline$;

SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.config_event_id_seq', '');
REVOKE ALL ON quota_sched.config_event, quota_sched.config_event_id_seq FROM PUBLIC;
GRANT SELECT ON quota_sched.config_event TO quota_sched_admin;

/* ---------------------------------------------------------------------
 * Utilization (accounting).  The instances a share holds of a unit change
 * only at the STATE events of its jobs (a job holds its instance_count
 * while SCHEDULED, STARTING or RUNNING), and its own capacity, and the
 * environment's, only at the configuration's events (config_event): the
 * levels are step functions of time, known exactly from the history.
 * usage_levels() turns them into segments of constant levels, cut at the
 * edges of buckets; usage_buckets() integrates them.  The hourly rollup
 * (usage_hourly) keeps the integrals of each past hour and the levels at
 * its end, so that a report reads the rollup for the hours it has and the
 * history only after them, and so that pruning the history keeps the
 * figures.
 * ------------------------------------------------------------------- */


/*
 * The hourly rollup: per queue, share (null: the environment) and unit,
 * each hour's integrals and event counts, and the levels at its end
 * (usage_buckets, usage_counts); usage_rollup says until when each queue
 * is rolled up (an hour's edge).  Written by rollup() only.
 */
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
	waits			real[] NOT NULL
);
CREATE UNIQUE INDEX usage_hourly_key ON quota_sched.usage_hourly
	(job_queue, hour, coalesce(quota_share, ''), capacity_unit);

/*
 * Reports read the history by time (the hours after the rollup): events
 * are written in about the order of their times, so a BRIN index finds
 * them at almost no cost to the writes.
 */
CREATE INDEX job_event_at ON quota_sched.job_event USING brin (at);

CREATE TABLE quota_sched.usage_rollup (
	job_queue		text PRIMARY KEY,
	rolled_until	timestamptz NOT NULL
);

/* 1 when a state holds capacity, else 0 (null: 0). */
CREATE FUNCTION quota_sched.holds(state text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce((state IN ('SCHEDULED', 'STARTING', 'RUNNING'))::integer, 0);

/* The capacity of a unit in a capacity map (0: absent, or no map). */
CREATE FUNCTION quota_sched.capacity_of(map jsonb, unit text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce((map ->> unit)::numeric::bigint, 0);

/*
 * The changes of level of a queue's shares and environment in [t0, t1),
 * by (share, unit): du instances held, dc own capacity.  The environment's
 * rows have quota_share null (du 0, dc its capacity).  A queue is counted
 * against the environment it has now.
 */
CREATE FUNCTION quota_sched.usage_changes(q text, t0 timestamptz, t1 timestamptz)
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
CREATE FUNCTION quota_sched.usage_start(q text, t0 timestamptz)
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
CREATE FUNCTION quota_sched.usage_buckets(q text, t0 timestamptz, t1 timestamptz, step interval)
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
 * t1, by (share, unit): jobs dispatched, succeeded, failed; attempts ended
 * by preemption (preempted) and attempts of other jobs this share's jobs
 * preempted (preempting); and the waits of the jobs dispatched, in
 * seconds, since they last became RUNNABLE (job_event.waited), in order.
 */
CREATE FUNCTION quota_sched.usage_counts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (quota_share text, capacity_unit text, bucket timestamptz,
			   dispatched bigint, succeeded bigint, failed bigint, preempted bigint,
			   preempting bigint, waits real[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	WITH ev AS (
		SELECT e.*, date_bin(step, e.at, t0) AS bucket
		  FROM quota_sched.job_event e
		 WHERE e.job_queue = q AND e.kind = 'STATE' AND e.at >= t0 AND e.at < t1),
	own AS (
		SELECT ev.quota_share, ev.capacity_unit, ev.bucket,
			   count(*) FILTER (WHERE ev.to_state = 'SCHEDULED') AS dispatched,
			   count(*) FILTER (WHERE ev.to_state = 'SUCCEEDED') AS succeeded,
			   count(*) FILTER (WHERE ev.to_state = 'FAILED') AS failed,
			   count(*) FILTER (WHERE ev.preempted_for IS NOT NULL) AS preempted,
			   coalesce(array_agg(extract(epoch FROM ev.waited)::real ORDER BY ev.waited)
						FILTER (WHERE ev.waited IS NOT NULL), '{}') AS waits
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
		   coalesce(o.failed, 0), coalesce(o.preempted, 0), coalesce(c.preempting, 0),
		   coalesce(o.waits, '{}')
	  FROM own o FULL JOIN caused c
		ON c.quota_share = o.quota_share AND c.capacity_unit = o.capacity_unit
	   AND c.bucket = o.bucket;
END;

/*
 * usage_buckets and usage_counts side by side: one row per (share, unit,
 * bucket) with anything to report, as usage_hourly keeps it.
 */
CREATE FUNCTION quota_sched.usage_parts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (quota_share text, capacity_unit text, bucket timestamptz,
			   capacity double precision, used double precision, own double precision,
			   borrowed double precision, idle double precision,
			   usage_end bigint, capacity_end bigint, dispatched bigint, succeeded bigint,
			   failed bigint, preempted bigint, preempting bigint, waits real[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT coalesce(b.quota_share, c.quota_share), coalesce(b.capacity_unit, c.capacity_unit),
		   coalesce(b.bucket, c.bucket), coalesce(b.capacity, 0), coalesce(b.used, 0),
		   coalesce(b.own, 0), coalesce(b.borrowed, 0), coalesce(b.idle, 0),
		   coalesce(b.usage_end, 0), coalesce(b.capacity_end, 0),
		   coalesce(c.dispatched, 0), coalesce(c.succeeded, 0), coalesce(c.failed, 0),
		   coalesce(c.preempted, 0), coalesce(c.preempting, 0), coalesce(c.waits, '{}')
	  FROM quota_sched.usage_buckets(q, t0, t1, step) b
	  FULL JOIN quota_sched.usage_counts(q, t0, t1, step) c
		ON c.quota_share IS NOT DISTINCT FROM b.quota_share
	   AND c.capacity_unit = b.capacity_unit AND c.bucket = b.bucket;
END;

/*
 * The counts of a queue's events in [t0, t1) by (share, unit) and counter:
 * 'dispatched', 'succeeded', 'failed' (jobs), 'preempted' (attempts ended
 * by preemption), and 'stop:' and the reason of each stop requested of a
 * held job (a user's terminate: 'stop:TERMINATED').  metrics() adds those
 * after the rollup to usage_totals.
 */
CREATE FUNCTION quota_sched.usage_counters(q text, t0 timestamptz, t1 timestamptz)
RETURNS TABLE (quota_share text, capacity_unit text, counter text, value bigint)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT e.quota_share, e.capacity_unit, c.counter, count(*)
	  FROM quota_sched.job_event e
	 CROSS JOIN LATERAL unnest(ARRAY[
		   CASE WHEN e.kind = 'STATE' AND e.to_state = 'SCHEDULED' THEN 'dispatched' END,
		   CASE WHEN e.kind = 'STATE' AND e.to_state IN ('SUCCEEDED', 'FAILED')
				THEN lower(e.to_state) END,
		   CASE WHEN e.kind = 'STATE' AND e.preempted_for IS NOT NULL THEN 'preempted' END,
		   CASE WHEN e.kind = 'STOP' THEN 'stop:' || e.reason
				WHEN e.kind = 'TERMINATE' THEN 'stop:TERMINATED' END]) AS c(counter)
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
CREATE TABLE quota_sched.usage_totals (
	job_queue		text NOT NULL,
	quota_share		text NOT NULL,
	capacity_unit	text NOT NULL,
	counter			text NOT NULL,
	value			bigint NOT NULL,
	PRIMARY KEY (job_queue, quota_share, capacity_unit, counter)
);

/*
 * rollup() brings the hourly rollup of every queue up to the last whole
 * hour before the oldest open transaction started (an event is stamped
 * with its transaction's start, so one not yet committed is never older),
 * or before up_to; it returns the number of queue-hours it rolled up.  The
 * background worker calls it after the first full round of each hour;
 * without the worker, pg_cron can (README).  A queue's first rollup starts
 * at the hour of its first event or of its shares' first configuration (the
 * last whole hour if it has neither); it reads the whole history, once.
 */
CREATE FUNCTION quota_sched.rollup(up_to timestamptz DEFAULT now())
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
	horizon timestamptz;
	q text;
	t0 timestamptz;
	t1 timestamptz;
	hours bigint := 0;
BEGIN
	SELECT date_trunc('hour', least(up_to, min(a.xact_start))) INTO horizon
	  FROM pg_stat_activity a WHERE a.xact_start IS NOT NULL AND a.pid <> pg_backend_pid();
	FOR q IN SELECT name FROM quota_sched.job_queue ORDER BY name COLLATE "C" LOOP
		SELECT r.rolled_until INTO t0 FROM quota_sched.usage_rollup r WHERE r.job_queue = q;
		IF t0 IS NULL THEN
			SELECT date_trunc('hour', least(
					   (SELECT min(e.at) FROM quota_sched.job_event e WHERE e.job_queue = q),
					   (SELECT min(c.at) FROM quota_sched.config_event c
						 WHERE c.object = 'quota_share' AND c.job_queue = q)))
			  INTO t0;
		END IF;
		-- a queue with no history at all: its first rollup is the last
		-- whole hour, so that it has a rollup row and its next rollup does
		-- not look through the whole history again
		t0 := coalesce(t0, horizon - interval '1 hour');
		WHILE t0 < horizon LOOP
			t1 := least(horizon, t0 + interval '7 days');
			INSERT INTO quota_sched.usage_hourly
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
	END LOOP;
	RETURN hours;
END
$$;

/*
 * utilization(job_queue, from, to, bucket): per bucket (from from, of
 * width bucket), share and unit, and per bucket and unit for the
 * environment (quota_share null): see the README's Reporting section.
 * Hours the rollup covers come from it, the rest from the history; a
 * bucket that is not a whole number of hours, or a from that is not on
 * an hour, is computed from the history alone.
 */
CREATE FUNCTION quota_sched.utilization(job_queue text, "from" timestamptz, "to" timestamptz,
										bucket interval DEFAULT '1 hour')
RETURNS TABLE (bucket_start timestamptz, quota_share text, capacity_unit text,
			   capacity double precision, used_instance_seconds double precision,
			   own_instance_seconds double precision, borrowed_instance_seconds double precision,
			   idle_instance_seconds double precision, dispatched bigint, succeeded bigint,
			   failed bigint, preempted bigint, preempting bigint,
			   wait_p50_seconds real, wait_p95_seconds real)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
AS $$
DECLARE
	q text := utilization.job_queue;
	caller name := CASE current_setting('role') WHEN 'none' THEN session_user
					   ELSE current_setting('role')::name END;
	secs double precision := extract(epoch FROM utilization.bucket);
	hourly boolean := secs >= 3600 AND secs::bigint % 3600 = 0
					  AND date_trunc('hour', "from") = "from";
	width interval := utilization.bucket;
	step interval := CASE WHEN hourly THEN interval '1 hour' ELSE utilization.bucket END;
	rolled timestamptz;
	everything boolean;
BEGIN
	IF q IS NULL OR "from" IS NULL OR "to" IS NULL OR utilization.bucket IS NULL THEN
		RAISE EXCEPTION 'utilization() needs a job queue, from, to and a bucket'
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	IF NOT EXISTS (SELECT FROM quota_sched.job_queue jq WHERE jq.name = q) THEN
		RAISE EXCEPTION 'job queue "%" does not exist', left(q, 64)
			USING ERRCODE = 'invalid_parameter_value';
	END IF;
	-- A second at least: the cost is the number of buckets (at most 100,000
	-- below), not their width; short buckets show a short run step by step.
	IF secs < 1 OR date_part('month', width) <> 0 OR date_part('year', width) <> 0 THEN
		RAISE EXCEPTION 'invalid bucket %', width
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'A bucket is at least a second, in days, hours, minutes or seconds.';
	END IF;
	IF NOT ("from" < "to") OR extract(epoch FROM "to" - "from") / secs > 100000 THEN
		RAISE EXCEPTION 'invalid range from % to % in buckets of %', "from", "to", width
			USING ERRCODE = 'invalid_parameter_value',
				  DETAIL = 'from comes before to, and the range has at most 100,000 buckets.';
	END IF;
	SELECT r.rolled_until INTO rolled FROM quota_sched.usage_rollup r WHERE r.job_queue = q;
	rolled := CASE WHEN hourly THEN greatest(least(coalesce(rolled, "from"), "to"), "from")
				   ELSE "from" END;
	everything := pg_has_role(caller, 'quota_sched_admin', 'USAGE')
				  OR pg_has_role(caller, 'quota_sched_agent', 'USAGE');
	RETURN QUERY
	WITH parts AS (
		SELECT h.quota_share, h.capacity_unit, h.hour AS at, h.capacity, h.used, h.own,
			   h.borrowed, h.idle, h.dispatched, h.succeeded, h.failed, h.preempted,
			   h.preempting, h.waits
		  FROM quota_sched.usage_hourly h
		 WHERE h.job_queue = q AND h.hour >= "from" AND h.hour < rolled
		UNION ALL
		SELECT p.quota_share, p.capacity_unit, p.bucket, p.capacity, p.used, p.own, p.borrowed,
			   p.idle, p.dispatched, p.succeeded, p.failed, p.preempted, p.preempting, p.waits
		  FROM quota_sched.usage_parts(q, rolled, "to", step) p
		 WHERE rolled < "to"),
	flat AS (SELECT date_bin(width, p.at, "from") AS b, p.* FROM parts p),
	sums AS (
		SELECT f.b, f.quota_share, f.capacity_unit, sum(f.capacity) AS capacity,
			   sum(f.used) AS used, sum(f.own) AS own, sum(f.borrowed) AS borrowed,
			   sum(f.idle) AS idle, sum(f.dispatched)::bigint AS dispatched,
			   sum(f.succeeded)::bigint AS succeeded, sum(f.failed)::bigint AS failed,
			   sum(f.preempted)::bigint AS preempted, sum(f.preempting)::bigint AS preempting
		  FROM flat f GROUP BY 1, 2, 3),
	waits AS (
		-- buckets of one part each (step = width): read off the sorted waits
		SELECT f.b, f.quota_share, f.capacity_unit,
			   f.waits[ceil(0.5 * cardinality(f.waits))::integer] AS p50,
			   f.waits[ceil(0.95 * cardinality(f.waits))::integer] AS p95
		  FROM flat f WHERE step = width AND cardinality(f.waits) > 0
		UNION ALL
		SELECT f.b, f.quota_share, f.capacity_unit,
			   percentile_disc(0.5) WITHIN GROUP (ORDER BY w.w),
			   percentile_disc(0.95) WITHIN GROUP (ORDER BY w.w)
		  FROM flat f, unnest(f.waits) AS w(w) WHERE step <> width GROUP BY 1, 2, 3),
	visible AS (
		SELECT s.name FROM quota_sched.quota_share s
		 WHERE s.job_queue = q
		   AND (everything OR s.submit_role IS NULL
				OR EXISTS (SELECT FROM pg_catalog.pg_roles r
							WHERE r.rolname = s.submit_role
							  AND pg_has_role(caller, r.oid, 'USAGE'))))
	SELECT s.b, s.quota_share, s.capacity_unit,
		   s.capacity / extract(epoch FROM least(s.b + width, "to") - s.b)::double precision,
		   s.used, s.own, s.borrowed, s.idle, s.dispatched, s.succeeded, s.failed,
		   s.preempted, s.preempting, w.p50, w.p95
	  FROM sums s
	  LEFT JOIN waits w ON w.b = s.b AND w.quota_share = s.quota_share
	   AND w.capacity_unit = s.capacity_unit
	 WHERE s.quota_share IN (SELECT v.name FROM visible v)
	UNION ALL
	SELECT e.b, NULL, e.capacity_unit,
		   e.capacity / extract(epoch FROM least(e.b + width, "to") - e.b)::double precision,
		   u.used, NULL, NULL, e.capacity - coalesce(u.used, 0), u.dispatched, u.succeeded,
		   u.failed, u.preempted, u.preempting, NULL, NULL
	  FROM sums e
	  LEFT JOIN (SELECT s.b, s.capacity_unit, sum(s.used) AS used,
						sum(s.dispatched)::bigint AS dispatched, sum(s.succeeded)::bigint AS succeeded,
						sum(s.failed)::bigint AS failed, sum(s.preempted)::bigint AS preempted,
						sum(s.preempting)::bigint AS preempting
				   FROM sums s WHERE s.quota_share IS NOT NULL GROUP BY 1, 2) u
		ON u.b = e.b AND u.capacity_unit = e.capacity_unit
	 WHERE e.quota_share IS NULL
	 ORDER BY 1, 2 NULLS FIRST, 3;
END
$$;

REVOKE ALL ON quota_sched.usage_hourly, quota_sched.usage_rollup, quota_sched.usage_totals
	FROM PUBLIC;
GRANT SELECT ON quota_sched.usage_hourly, quota_sched.usage_rollup, quota_sched.usage_totals
	TO quota_sched_admin;
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_hourly', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_rollup', '');
SELECT pg_catalog.pg_extension_config_dump('quota_sched.usage_totals', '');
REVOKE ALL ON FUNCTION quota_sched.holds(text), quota_sched.capacity_of(jsonb, text),
	quota_sched.usage_changes(text, timestamptz, timestamptz),
	quota_sched.usage_start(text, timestamptz),
	quota_sched.usage_buckets(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_parts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counters(text, timestamptz, timestamptz),
	quota_sched.rollup(timestamptz),
	quota_sched.utilization(text, timestamptz, timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.rollup(timestamptz) TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.utilization(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ---------------------------------------------------------------------
 * Retention (accounting).  Admins may delete jobs that have ended, once
 * the hourly rollup covers their history (their figures stay in
 * usage_hourly); a job's history goes with it (job_history_delete).  A
 * live job, or one that ended after the rollup of its queue, is refused
 * (55000).  Deleting a queue or share still takes its ended jobs with it,
 * whatever the rollup, and superusers are not checked.  prune(older_than) deletes, in batches of its own
 * transactions, the ended jobs and the pass_log rows older than the
 * horizon, after bringing the rollup up to date.
 * ------------------------------------------------------------------- */
CREATE INDEX job_ended ON quota_sched.job (status_reason_at)
	WHERE state IN ('SUCCEEDED', 'FAILED');

CREATE FUNCTION quota_sched.job_before_delete()
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
	SELECT r.rolled_until INTO rolled FROM quota_sched.usage_rollup r
	 WHERE r.job_queue = OLD.job_queue;
	IF rolled IS NULL OR OLD.status_reason_at IS NULL OR OLD.status_reason_at >= rolled THEN
		RAISE EXCEPTION 'job % ended after the hourly rollup of job queue "%"%: its history is still needed',
			OLD.id, OLD.job_queue, coalesce(' (until ' || rolled || ')', '')
			USING ERRCODE = 'object_not_in_prerequisite_state',
				  HINT = 'quota_sched.rollup() covers the hours that are over; quota_sched.prune() rolls up, then deletes.';
	END IF;
	RETURN OLD;
END
$$;
REVOKE ALL ON FUNCTION quota_sched.job_before_delete() FROM PUBLIC;
CREATE TRIGGER job_before_delete BEFORE DELETE ON quota_sched.job
	FOR EACH ROW EXECUTE FUNCTION quota_sched.job_before_delete();

GRANT DELETE ON quota_sched.job, quota_sched.pass_log TO quota_sched_admin;

/*
 * (No SET search_path: a procedure with one cannot commit.  It runs with
 * the caller's rights, and names everything with its schema.)
 */
CREATE PROCEDURE quota_sched.prune(older_than interval, batch integer DEFAULT 10000)
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
	PERFORM quota_sched.rollup();
	COMMIT;
	LOOP
		DELETE FROM quota_sched.job j
		 WHERE j.id IN (
			SELECT e.id FROM quota_sched.job e
			  JOIN quota_sched.usage_rollup r ON r.job_queue = e.job_queue
			 WHERE e.state IN ('SUCCEEDED', 'FAILED')
			   AND e.status_reason_at < least(horizon, r.rolled_until)
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
 * them); instance_seconds is that times its instance count.
 * ------------------------------------------------------------------- */
CREATE VIEW quota_sched.job_accounting WITH (security_invoker = true) AS
SELECT j.id AS job_id, j.name, j.job_queue, j.quota_share, j.capacity_unit, j.instance_count,
	   j.owner, j.state, j.status_reason, j.submitted_at, a.first_dispatched_at,
	   CASE WHEN j.state IN ('SUCCEEDED', 'FAILED') THEN j.status_reason_at END AS ended_at,
	   1 + j.failed_attempts + j.preemption_count AS attempts, j.failed_attempts,
	   j.preemption_count AS preemptions, a.waited, a.held_seconds,
	   a.held_seconds * j.instance_count AS instance_seconds, a.last_exit_code
  FROM quota_sched.job j
  LEFT JOIN LATERAL (
	SELECT min(e.at) FILTER (WHERE e.kind = 'STATE' AND e.to_state = 'SCHEDULED') AS first_dispatched_at,
		   sum(e.waited) AS waited,
		   coalesce(sum((quota_sched.holds(e.from_state) - quota_sched.holds(e.to_state))
						* extract(epoch FROM e.at)) FILTER (WHERE e.kind = 'STATE'), 0)
			 + quota_sched.holds(j.state) * extract(epoch FROM now()) AS held_seconds,
		   (array_agg(e.exit_code ORDER BY e.id DESC)
			  FILTER (WHERE e.exit_code IS NOT NULL))[1] AS last_exit_code
	  FROM quota_sched.job_event e WHERE e.job_id = j.id) a ON true;
REVOKE ALL ON quota_sched.job_accounting FROM PUBLIC;
GRANT SELECT ON quota_sched.job_accounting TO quota_sched_admin, quota_sched_agent, quota_sched_user;
GRANT EXECUTE ON FUNCTION quota_sched.holds(text) TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/* ---------------------------------------------------------------------
 * Metrics (Prometheus).  pass_stats() and worker_stats() read the
 * activity counters the passes and the worker keep in shared memory
 * (stats.c); metrics() returns every metric in the Prometheus text format
 * (README, "Reporting: metrics").  Its counters of jobs come from
 * usage_totals and the history after the rollup, read in one statement
 * (one snapshot), so a rollup or a prune never makes them go back.  JIT
 * is off: the planner's estimates for the functions it reads would have it
 * compile, for 100 ms, a statement that runs in a few.
 * ------------------------------------------------------------------- */
CREATE FUNCTION quota_sched.pass_stats()
RETURNS TABLE (job_queue text, passes bigint, last_pass_at timestamptz,
			   last_pass_seconds double precision, given_up_in_a_row integer, given_up bigint)
AS 'MODULE_PATHNAME', 'qs_pass_stats'
LANGUAGE C VOLATILE;

CREATE FUNCTION quota_sched.worker_stats(OUT running boolean, OUT started_at timestamptz,
										 OUT last_round_at timestamptz, OUT rounds bigint)
AS 'MODULE_PATHNAME', 'qs_worker_stats'
LANGUAGE C VOLATILE;

/* The label set {k1="v1",k2="v2",...} of the pairs, its values escaped. */
CREATE FUNCTION quota_sched.metric_labels(VARIADIC pairs text[]) RETURNS text
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

CREATE FUNCTION quota_sched.metrics() RETURNS text
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
		('quota_sched_environment_capacity_instances', 'gauge', 'The capacity of the service environment.'),
		('quota_sched_dispatches_total', 'counter', 'Jobs dispatched (RUNNABLE to SCHEDULED).'),
		('quota_sched_jobs_succeeded_total', 'counter', 'Jobs that ended SUCCEEDED.'),
		('quota_sched_jobs_failed_total', 'counter', 'Jobs that ended FAILED.'),
		('quota_sched_preempted_attempts_total', 'counter', 'Attempts ended by preemption.'),
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
		('quota_sched_worker_rounds_total', 'counter', 'Rounds of the background worker since the server started.')),
	queues AS (SELECT q.name, r.rolled_until FROM quota_sched.job_queue q
				 LEFT JOIN quota_sched.usage_rollup r ON r.job_queue = q.name),
	shares AS (SELECT u.*, quota_sched.metric_labels('job_queue', u.job_queue, 'quota_share', u.quota_share,
													 'capacity_unit', u.capacity_unit) AS labels
				 FROM quota_sched.share_usage u),
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
					   unnest(ARRAY['dispatched', 'succeeded', 'failed', 'preempted']) AS k(counter)) t
		 GROUP BY 1, 2, 3, 4),
	passes AS (SELECT p.*, quota_sched.metric_labels('job_queue', q.name) AS labels
				 FROM queues q LEFT JOIN quota_sched.pass_stats() p ON p.job_queue = q.name),
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
		UNION ALL
		SELECT 'quota_sched_environment_capacity_instances',
			   quota_sched.metric_labels('service_environment', e.name, 'capacity_unit', k.key),
			   quota_sched.capacity_of(e.capacity_limits, k.key)::text
		  FROM quota_sched.service_environment e, jsonb_object_keys(e.capacity_limits) AS k(key)
		UNION ALL
		SELECT CASE c.counter WHEN 'dispatched' THEN 'quota_sched_dispatches_total'
							  WHEN 'succeeded' THEN 'quota_sched_jobs_succeeded_total'
							  WHEN 'failed' THEN 'quota_sched_jobs_failed_total'
							  WHEN 'preempted' THEN 'quota_sched_preempted_attempts_total'
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
		UNION ALL SELECT 'quota_sched_worker_rounds_total', '', w.rounds::text FROM worker w WHERE w.up)
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

/* ---------------------------------------------------------------------
 * Reporting: a chart (issue 11, item 5).  utilization_svg() draws what
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
CREATE FUNCTION quota_sched.xml_escape(value text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
RETURN pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(pg_catalog.replace(
		pg_catalog.regexp_replace(value, '[\x01-\x08\x0B\x0C\x0E-\x1F]', '', 'g'),
		'&', '&amp;'), '<', '&lt;'), '>', '&gt;'), '"', '&quot;'), '''', '&apos;');

/* A number as a chart writes it: rounded to digits, no trailing zeros. */
CREATE FUNCTION quota_sched.svg_number(value double precision, digits integer) RETURNS text
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
CREATE FUNCTION quota_sched.utilization_svg(job_queue text, "from" timestamptz, "to" timestamptz,
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
	-- allows 100,000 buckets).
	IF t0 < t1 AND extract(epoch FROM width) >= 1
	   AND extract(epoch FROM t1 - t0) / extract(epoch FROM width) > 2000 THEN
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

/* ---------------------------------------------------------------------
 * heartbeat() also returns each job's lease as it is now: a job whose row
 * another transaction holds keeps the lease it had (the heartbeat does not
 * wait for the row), and an agent that counts on a renewed lease would
 * run the job past the moment a pass takes it back.  A new result type
 * is a new function: the function of 0.1 goes.
 * ------------------------------------------------------------------- */
DROP FUNCTION quota_sched.heartbeat(text, interval);
CREATE FUNCTION quota_sched.heartbeat(agent text, lease interval DEFAULT '60 seconds')
RETURNS TABLE (job_id bigint, stop_reason text, lease_until timestamptz)
AS 'MODULE_PATHNAME', 'qs_heartbeat'
LANGUAGE C CALLED ON NULL INPUT;
REVOKE ALL ON FUNCTION quota_sched.heartbeat(text, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.heartbeat(text, interval) TO quota_sched_agent;
