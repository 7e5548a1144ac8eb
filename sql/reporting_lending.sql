/*
 * reporting_lending.sql
 *		Who lent to whom (doc/reporting.md, "Who lent to whom"): the
 *		changes of level that lending_parts (src/reports/lending_parts.c)
 *		sweeps, and lending(), the report in buckets.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.  It
 * comes after reporting_utilization.sql, whose functions it reads.
 */

/*
 * lendable(S,u) of a share's row as config_event keeps it (scheduling.md
 * 3.1), the core's rule (lendable()): what its idle capacity of u may
 * lend; 0 for a RESERVE or DISABLED share, and for no row.  A row
 * without state counts as ENABLED, one without lend_limit as -1.
 */
CREATE OR REPLACE FUNCTION quota_sched.lendable_of(share jsonb, unit text) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(quota_sched.lendable(quota_sched.capacity_of(share -> 'capacity_limits', unit),
									 share ->> 'strategy', coalesce(share ->> 'state', 'ENABLED'),
									 coalesce((share ->> 'lend_limit')::integer, -1)), 0);

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
 * "Who lent to whom"; the rule is src/core/lending.c's).
 * src/reports/lending_parts.c sweeps lending_deltas once, unit by unit, in
 * order of time: the work is the changes times the unit's shares.
 */
CREATE OR REPLACE FUNCTION quota_sched.lending_parts(q text, t0 timestamptz, t1 timestamptz, step interval)
RETURNS TABLE (capacity_unit text, bucket timestamptz, lender text, borrower text,
			   instance_seconds double precision)
AS 'MODULE_PATHNAME', 'qs_lending_parts'
LANGUAGE C STABLE;

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

REVOKE ALL ON FUNCTION quota_sched.lendable_of(jsonb, text),
	quota_sched.lending_deltas(text, timestamptz, timestamptz),
	quota_sched.lending_parts(text, timestamptz, timestamptz, interval),
	quota_sched.lending(text, timestamptz, timestamptz, interval) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.lending(text, timestamptz, timestamptz, interval)
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
