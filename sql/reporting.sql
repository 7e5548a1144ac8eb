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
 * budget_hours is numeric, as the budget has it (0.5; trailing zeros
 * dropped: 1.500 is 1.5); exhausted compares in float8, as the pass does
 * (policy.c, QsOverBudget: the budget's nearest double times 3600).
 */
CREATE OR REPLACE VIEW quota_sched.share_budget AS
SELECT s.job_queue, s.name AS quota_share, b.capacity_unit, b.budget_hours,
	   coalesce(x.spent, 0) / 3600 AS spent_hours,
	   quota_sched.period_start(now(), s.budget_period) AS period_start,
	   quota_sched.period_end(now(), s.budget_period) AS period_end,
	   coalesce(x.spent, 0) >= b.budget_hours::float8 * 3600 AS exhausted
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

/*
 * How long the attempt that a job's event at (id event) ended had run:
 * since the job's last dispatch before it.
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
 * Whether the preemption of a job's event at (id event), of share s of
 * queue q, ended its attempt early: before the share's min_runtime had
 * run since the dispatch (attempt_ran), the min_runtime in force then, as
 * the configuration's history has it (config_event: the share's last row
 * at or before at); a minute where the share had none, or the history has
 * no row of the share then (before the update to 0.2, which began it and
 * brought min_runtime).  Churn: utilization()'s preempted_early, metrics()'
 * quota_sched_preempted_early_attempts_total.
 */
CREATE OR REPLACE FUNCTION quota_sched.preempted_early(job bigint, event bigint, at timestamptz,
													   q text, s text)
RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT quota_sched.attempt_ran(job, event, at)
		   < coalesce((SELECT (c.new ->> 'min_runtime')::interval
						 FROM quota_sched.config_event c
						WHERE c.object = 'quota_share' AND c.job_queue = preempted_early.q
						  AND c.name = preempted_early.s AND c.at <= preempted_early.at
						ORDER BY c.at DESC, c.id DESC LIMIT 1),
					  interval '1 minute');
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
 * that had not run their share's min_runtime, or a minute where it had
 * none (preempted_early: churn); and the waits
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
			   AND quota_sched.preempted_early(e.job_id, e.id, e.at, e.job_queue, e.quota_share)
				 AS early
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
 * by preemption), 'preempted_early' (those of them that had not run their
 * share's min_runtime since their dispatch, or a minute where it had none:
 * churn), and 'stop:' and the reason of each stop requested of a
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
				 AND quota_sched.preempted_early(e.job_id, e.id, e.at, e.job_queue, e.quota_share)
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
	quota_sched.preempted_early(bigint, bigint, timestamptz, text, text),
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
