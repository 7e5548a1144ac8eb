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
			   queued_at timestamptz, capacity_unit text, instance_count integer, name text,
			   hosts text[], host_instances integer[])
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

/*
 * The counters of what the hosts hold (host_held with the changes not
 * yet folded into it, host_held_change) that do not match the parts of
 * the holding jobs, recounted from them (jobs with no
 * part_agents count nothing there): none, as for held_capacity_drift().
 */
CREATE OR REPLACE FUNCTION quota_sched.host_held_drift()
RETURNS TABLE (job_queue text, capacity_unit text, agent text,
			   kept_instances bigint, counted_instances bigint,
			   kept_stopping_instances bigint, counted_stopping_instances bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
	WITH counted AS (
		SELECT j.job_queue, j.capacity_unit, p.agent, sum(p.instances)::bigint AS instances,
			   coalesce(sum(p.instances) FILTER (WHERE j.stop_reason IS NOT NULL), 0)::bigint
				   AS stopping_instances
		  FROM quota_sched.job j, unnest(j.part_agents, j.part_instances) AS p(agent, instances)
		 WHERE j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')
		 GROUP BY 1, 2, 3),
	kept AS (
		SELECT h.job_queue, h.capacity_unit, h.agent, sum(h.instances)::bigint AS instances,
			   sum(h.stopping_instances)::bigint AS stopping_instances
		  FROM (SELECT job_queue, capacity_unit, agent, instances, stopping_instances
				  FROM quota_sched.host_held
				UNION ALL
				SELECT job_queue, capacity_unit, agent, instances, stopping_instances
				  FROM quota_sched.host_held_change WHERE capacity_unit IS NOT NULL) h
		 GROUP BY 1, 2, 3)
	SELECT job_queue, capacity_unit, agent,
		   coalesce(k.instances, 0), coalesce(c.instances, 0),
		   coalesce(k.stopping_instances, 0), coalesce(c.stopping_instances, 0)
	  FROM counted c FULL JOIN kept k USING (job_queue, capacity_unit, agent)
	 WHERE (coalesce(k.instances, 0), coalesce(k.stopping_instances, 0))
		   IS DISTINCT FROM (coalesce(c.instances, 0), coalesce(c.stopping_instances, 0))
	 ORDER BY 1, 2, 3
$$;

/*
 * How many times this backend read a queue's agents rather than take its
 * cache of hosts (src/pass/host_cache.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.host_cache_reloads()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_host_cache_reloads'
LANGUAGE C VOLATILE STRICT;

/*
 * How many times this backend read a queue's rows of host_held rather than
 * take those it kept (src/pass/held_cache.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.host_held_reads()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_host_held_reads'
LANGUAGE C VOLATILE STRICT;

/*
 * How many times this backend read a queue's shares rather than take those
 * it kept (src/pass/host_cache.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.share_config_reads()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_share_config_reads'
LANGUAGE C VOLATILE STRICT;

/*
 * How many times this backend read a queue's counters of held capacity
 * rather than take those it kept (src/pass/usage_cache.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.held_capacity_reads()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_held_capacity_reads'
LANGUAGE C VOLATILE STRICT;

/*
 * How many pairs (a share and unit) whose first RUNNABLE jobs this
 * backend's passes read rather than take those it kept
 * (src/pass/heads_cache.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.runnable_heads_reads()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_runnable_heads_reads'
LANGUAGE C VOLATILE STRICT;

/*
 * How many times this backend's passes left out the misconfiguration check,
 * which would have changed nothing (src/pass/pass_apply.c): for tests.
 */
CREATE OR REPLACE FUNCTION quota_sched.misconfiguration_skips()
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_misconfiguration_skips'
LANGUAGE C VOLATILE STRICT;

REVOKE ALL ON FUNCTION quota_sched.host_cache_reloads(), quota_sched.host_held_reads(),
	quota_sched.share_config_reads(), quota_sched.held_capacity_reads(),
	quota_sched.runnable_heads_reads(), quota_sched.misconfiguration_skips() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.host_cache_reloads(), quota_sched.host_held_reads(),
	quota_sched.share_config_reads(), quota_sched.held_capacity_reads(),
	quota_sched.runnable_heads_reads(), quota_sched.misconfiguration_skips() TO quota_sched_admin;

REVOKE ALL ON FUNCTION quota_sched.held_capacity_drift(), quota_sched.host_held_drift()
	FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.held_capacity_drift(), quota_sched.host_held_drift()
	TO quota_sched_admin;

REVOKE ALL ON FUNCTION quota_sched.run_pass(text, boolean),
	quota_sched.queue_snapshot(text, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.run_pass(text, boolean) TO quota_sched_admin;
GRANT EXECUTE ON FUNCTION quota_sched.queue_snapshot(text, integer)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
