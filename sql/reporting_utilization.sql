/*
 * reporting_utilization.sql
 *		Utilization (accounting): the levels of the shares and the
 *		environment over time, from the history and the hourly rollup, and
 *		utilization(), the report of them in buckets.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.  (The
 * rollup itself is in reporting_rollup.sql, its tables in tables.sql.)
 */

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
 * The parts of utilization() before levels_from, one row per share (null:
 * the environment), unit and hour or bucket: the rollup's hours of
 * [from, rolled), then from the history one part of the bucket the rollup
 * ends in, [rolled, edge), and one part a bucket of width w from edge to
 * cut (report_plan).
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization_parts(q text, "from" timestamptz, w interval,
														 rolled timestamptz, edge timestamptz,
														 cut timestamptz)
RETURNS TABLE (quota_share text, capacity_unit text, at timestamptz, capacity double precision,
			   used double precision, own double precision, borrowed double precision,
			   idle double precision, dispatched bigint, succeeded bigint, failed bigint,
			   terminated bigint, preempted bigint, preempting bigint, preempted_early bigint,
			   waits real[])
LANGUAGE sql STABLE
BEGIN ATOMIC
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
	 WHERE edge < cut;
END;

/*
 * The parts of utilization_parts summed by bucket (from from, of width w),
 * share and unit, with the percentiles of the waits: those of a bucket
 * are over all the waits of its parts.  A bucket of one part (every
 * bucket of an hourly report from an hour) reads them off its waits,
 * which usage_counts sorted (and so the rollup's rows), as
 * percentile_disc() counts (the ceil(f * n)-th).  The parts come in the
 * order of their buckets, each followed by a row for each of its waits
 * when its bucket has several parts, so that the grouping needs no sort
 * and percentile_disc() sorts the waits of one bucket at a time, not a
 * row for each dispatch of the range (issue 42, item 7: a month of a
 * million jobs).
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization_sums(q text, "from" timestamptz, w interval,
														rolled timestamptz, edge timestamptz,
														cut timestamptz)
RETURNS TABLE (b timestamptz, quota_share text, capacity_unit text, capacity double precision,
			   used double precision, own double precision, borrowed double precision,
			   idle double precision, dispatched bigint, succeeded bigint, failed bigint,
			   terminated bigint, preempted bigint, preempting bigint, preempted_early bigint,
			   p50 real, p95 real)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH flat AS (
		SELECT g.b, count(*) OVER (PARTITION BY g.b, p.quota_share, p.capacity_unit) AS parts, p.*
		  FROM quota_sched.utilization_parts(q, "from", w, rolled, edge, cut) p,
			   LATERAL (SELECT date_bin(w, p.at, "from") AS b) g
		 ORDER BY g.b, p.quota_share, p.capacity_unit)
	SELECT f.b, f.quota_share, f.capacity_unit, sum(f.capacity) FILTER (WHERE c.head) AS capacity,
		   sum(f.used) FILTER (WHERE c.head) AS used, sum(f.own) FILTER (WHERE c.head) AS own,
		   sum(f.borrowed) FILTER (WHERE c.head) AS borrowed,
		   sum(f.idle) FILTER (WHERE c.head) AS idle,
		   sum(f.dispatched) FILTER (WHERE c.head)::bigint AS dispatched,
		   sum(f.succeeded) FILTER (WHERE c.head)::bigint AS succeeded,
		   sum(f.failed) FILTER (WHERE c.head)::bigint AS failed,
		   sum(f.terminated) FILTER (WHERE c.head)::bigint AS terminated,
		   sum(f.preempted) FILTER (WHERE c.head)::bigint AS preempted,
		   sum(f.preempting) FILTER (WHERE c.head)::bigint AS preempting,
		   sum(f.preempted_early) FILTER (WHERE c.head)::bigint AS preempted_early,
		   coalesce(max(f.waits[ceil(0.5::double precision * cardinality(f.waits))::integer])
					  FILTER (WHERE f.parts = 1),
					percentile_disc(0.5) WITHIN GROUP (ORDER BY c.wait)
					  FILTER (WHERE c.wait IS NOT NULL)) AS p50,
		   coalesce(max(f.waits[ceil(0.95::double precision * cardinality(f.waits))::integer])
					  FILTER (WHERE f.parts = 1),
					percentile_disc(0.95) WITHIN GROUP (ORDER BY c.wait)
					  FILTER (WHERE c.wait IS NOT NULL)) AS p95
	  FROM flat f
	 CROSS JOIN LATERAL (SELECT true AS head, NULL::real AS wait
						 UNION ALL
						 SELECT false, x.wait FROM unnest(f.waits) AS x(wait) WHERE f.parts > 1) c
	 GROUP BY 1, 2, 3;
END;

/*
 * The rows of utilization() from cut to "to", where the levels hold (no
 * event after cut but history written by hand): the levels at cut times
 * each bucket's length (each bucket after cut whole, so no bucket has
 * figures from both sides), for the shares of visible and for the
 * environment.
 */
CREATE OR REPLACE FUNCTION quota_sched.utilization_tail(q text, "to" timestamptz, w interval,
														cut timestamptz, visible text[])
RETURNS TABLE (b timestamptz, quota_share text, capacity_unit text, capacity double precision,
			   used double precision, own double precision, borrowed double precision,
			   idle double precision, dispatched bigint, succeeded bigint, failed bigint,
			   terminated bigint, preempted bigint, preempting bigint, preempted_early bigint,
			   p50 real, p95 real)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH held AS (
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
	SELECT t.b, h.quota_share, h.capacity_unit, h.c * t.secs / t.secs, h.u * t.secs,
		   least(h.u, h.c) * t.secs, greatest(h.u - h.c, 0) * t.secs,
		   greatest(h.c - h.u, 0) * t.secs, 0, 0, 0, 0, 0, 0, 0, NULL::real, NULL::real
	  FROM held h, tail t
	 WHERE h.quota_share = ANY (visible)
	UNION ALL
	SELECT t.b, NULL, e.capacity_unit, e.c * t.secs / t.secs, e.u * t.secs, NULL, NULL,
		   e.c * t.secs - coalesce(e.u * t.secs, 0), e.u * 0, e.u * 0, e.u * 0, e.u * 0,
		   e.u * 0, e.u * 0, e.u * 0, NULL, NULL
	  FROM env_held e, tail t;
END;

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
 * time (utilization_parts, utilization_sums).  A bucket that is not a
 * whole number of hours, or a from that is not on an hour, is computed
 * from the history alone.  After the last change the levels hold
 * (utilization_tail).  Buckets are counted as date_bin() counts them, a
 * day 24 hours, whatever the caller's TimeZone.
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
	WITH sums AS (SELECT * FROM quota_sched.utilization_sums(q, "from", w, rolled, edge, cut))
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
	SELECT * FROM quota_sched.utilization_tail(q, "to", w, cut, visible)
	 ORDER BY 1, 2 NULLS FIRST, 3;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.capacity_of(jsonb, text),
	quota_sched.usage_changes(text, timestamptz, timestamptz),
	quota_sched.usage_start(text, timestamptz),
	quota_sched.usage_buckets(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_parts(text, timestamptz, timestamptz, interval),
	quota_sched.usage_counters(text, timestamptz, timestamptz),
	quota_sched.report_plan(text, text, timestamptz, timestamptz, interval, timestamptz),
	quota_sched.utilization_parts(text, timestamptz, interval, timestamptz, timestamptz, timestamptz),
	quota_sched.utilization_sums(text, timestamptz, interval, timestamptz, timestamptz, timestamptz),
	quota_sched.utilization_tail(text, timestamptz, interval, timestamptz, text[]),
	quota_sched.utilization(text, timestamptz, timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.utilization(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
