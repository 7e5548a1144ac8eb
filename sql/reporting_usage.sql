/*
 * reporting_usage.sql
 *		The reports of now: share_usage, share_budget, capacity_plan and
 *		config_review.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these views.  (Their
 * tables are in tables.sql.)  The reports of the past are in the other
 * reporting_*.sql files: reporting_preemptions.sql,
 * reporting_utilization.sql, reporting_lending.sql, reporting_rollup.sql,
 * reporting_accounting.sql.
 */

/*
 * The rules of the policy core that the reports show, called from C
 * (src/reports/rules_sql.c), so that a report and the pass share one text
 * of each (scheduling.md 3.1, 3.11): holds(state), 1 when a job in that
 * state holds capacity, else 0 (null, and names that are no state: 0);
 * allowed(S,u), null when unbounded; lendable(S,u) as the borrowable
 * supply counts it, 0 for a RESERVE or DISABLED share; and whether a share
 * spent its budget of a unit (spent >= budget * 3600 in doubles, a
 * negative budget none).  Executable by the roles that read the views, as
 * functions in a view are executed by its reader.
 */
CREATE OR REPLACE FUNCTION quota_sched.holds(state text) RETURNS integer
AS 'MODULE_PATHNAME', 'qs_holds'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.allowed(capacity bigint, strategy text, borrow_limit integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_allowed'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.lendable(capacity bigint, strategy text, share_state text,
												lend_limit integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'qs_lendable'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE OR REPLACE FUNCTION quota_sched.over_budget(spent double precision, budget_hours double precision)
RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_over_budget'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION quota_sched.holds(text), quota_sched.allowed(bigint, text, integer),
	quota_sched.lendable(bigint, text, text, integer),
	quota_sched.over_budget(double precision, double precision) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.holds(text), quota_sched.allowed(bigint, text, integer),
	quota_sched.lendable(bigint, text, text, integer),
	quota_sched.over_budget(double precision, double precision)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

/*
 * share_usage: per queue, share and unit, capacity, allowed (null when
 * unbounded), use, borrowing, idle capacity and lendable (the most of its
 * own capacity a share lends: lend_limit; 0 for a RESERVE or DISABLED
 * share), counted over all jobs (the view reads as its owner, so
 * row-level security does not narrow the counts): in use, the instances
 * of the jobs that hold them (holds()).  A capacity written 5.0 (an
 * integral number, accepted) is read through numeric, and allowed and
 * lendable are the core's, in 64 bits, so that no value a share may hold
 * breaks the view for everyone.  recent_borrow_hours (0.3, scheduling.md
 * 3.12; null when the queue has no fair_half_life): recent_borrow as the
 * last pass left it, carried on to now with what the share borrowed then.
 * waiting_since (0.3): when the share's RUNNABLE job of the unit that has
 * waited longest began to wait (its last attempt's stop, or its queueing
 * if it never ran; null: none waits), for the alert on long waits.
 */

CREATE OR REPLACE VIEW quota_sched.share_usage AS
WITH held AS (
	SELECT job_queue, quota_share, capacity_unit,
		   coalesce(sum(instance_count) FILTER (WHERE quota_sched.holds(state) = 1), 0) AS in_use,
		   count(*) FILTER (WHERE state = 'RUNNABLE') AS runnable_jobs,
		   count(*) FILTER (WHERE quota_sched.holds(state) = 1) AS active_jobs,
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
	   quota_sched.allowed(c.capacity, s.strategy, s.borrow_limit) AS allowed,
	   coalesce(h.in_use, 0) AS in_use,
	   greatest(0, coalesce(h.in_use, 0) - c.capacity) AS borrowed,
	   greatest(0, c.capacity - coalesce(h.in_use, 0)) AS idle,
	   coalesce(h.runnable_jobs, 0) AS runnable_jobs,
	   coalesce(h.active_jobs, 0) AS active_jobs,
	   quota_sched.lendable(c.capacity, s.strategy, s.state, s.lend_limit) AS lendable,
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
 * budget_hours is numeric, as the budget has it (0.5; trailing zeros
 * dropped: 1.500 is 1.5); exhausted is the pass's rule (over_budget:
 * policy.c's QsOverBudget, on the budget's nearest double).
 */
CREATE OR REPLACE VIEW quota_sched.share_budget AS
SELECT s.job_queue, s.name AS quota_share, b.capacity_unit, b.budget_hours,
	   coalesce(x.spent, 0) / 3600 AS spent_hours,
	   quota_sched.period_start(now(), s.budget_period) AS period_start,
	   quota_sched.period_end(now(), s.budget_period) AS period_end,
	   quota_sched.over_budget(coalesce(x.spent, 0), b.budget_hours::float8) AS exhausted
  FROM quota_sched.quota_share s
 CROSS JOIN LATERAL (SELECT k.key AS capacity_unit, trim_scale((s.budget ->> k.key)::numeric) AS budget_hours
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
 * from capacity_plan), churn a share invites (doc/reporting.md):
 * in-share preemption, or borrowing, without min_runtime, so that a job
 * may be preempted at once after its dispatch; and, with the jobs as they
 * are now, a share whose budget of a unit is spent (share_budget), so
 * that its jobs of it wait, while its lend_limit keeps idle instances of
 * its own from shares that may borrow them and have jobs of the unit
 * waiting: of its idle capacity beyond lendable (share_usage; what the
 * supply of scheduling.md 3.1 leaves out), what the environment really
 * has free (its capacity less what all the queue's jobs hold,
 * capacity_plan), so that capacity it lends beyond the limit, until the
 * next pass takes it back, is not called idle; the borrowers:
 * LEND_AND_BORROW shares below their allowed.
 */
CREATE OR REPLACE VIEW quota_sched.config_review AS
WITH usage AS (
	SELECT u.*, s.strategy, s.state, s.lend_limit
	  FROM quota_sched.share_usage u
	  JOIN quota_sched.quota_share s ON s.job_queue = u.job_queue AND s.name = u.quota_share),
free AS (
	SELECT p.job_queue, p.capacity_unit,
		   p.environment_capacity - coalesce((SELECT sum(o.in_use) FROM usage o
											   WHERE o.job_queue = p.job_queue
												 AND o.capacity_unit = p.capacity_unit), 0)
			 AS instances
	  FROM quota_sched.capacity_plan p)
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
 WHERE s.strategy = 'LEND_AND_BORROW' AND s.borrow_limit <> 0 AND s.min_runtime IS NULL
UNION ALL
SELECT u.job_queue, u.quota_share, u.capacity_unit, 'BUDGET_SPENT_LEND_LIMIT_KEEPS_IDLE',
	   format('the budget of share %s (%s instance-hours of %s per %s) is spent until %s, and its lend_limit of %s%% lends %s of its %s idle %s: %s stay idle while %s jobs of %s wait for %s: raise the lend_limit (-1 lends all its idle capacity), or the budget',
			  u.quota_share, b.budget_hours, u.capacity_unit, b.period, b.period_end,
			  u.lend_limit, u.lendable, u.idle, u.capacity_unit, k.kept, w.jobs,
			  w.shares, u.capacity_unit)
  FROM usage u
  JOIN (SELECT sb.*, s.budget_period AS period FROM quota_sched.share_budget sb
		  JOIN quota_sched.quota_share s ON s.job_queue = sb.job_queue AND s.name = sb.quota_share) b
	ON b.job_queue = u.job_queue AND b.quota_share = u.quota_share AND b.capacity_unit = u.capacity_unit
  JOIN free f ON f.job_queue = u.job_queue AND f.capacity_unit = u.capacity_unit
 CROSS JOIN LATERAL (SELECT least(u.idle - u.lendable, f.instances) AS kept) k
 CROSS JOIN LATERAL (
	SELECT sum(o.runnable_jobs) AS jobs,
		   string_agg(o.quota_share, ', ' ORDER BY o.quota_share COLLATE "C") AS shares
	  FROM usage o
	 WHERE o.job_queue = u.job_queue AND o.capacity_unit = u.capacity_unit
	   AND o.quota_share <> u.quota_share AND o.runnable_jobs > 0
	   AND o.strategy = 'LEND_AND_BORROW' AND (o.allowed IS NULL OR o.in_use < o.allowed)) w
 WHERE b.exhausted AND u.strategy <> 'RESERVE' AND u.state = 'ENABLED' AND k.kept > 0
   AND w.jobs > 0;

GRANT SELECT ON quota_sched.config_review
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
