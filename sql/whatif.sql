/*
 * whatif.sql
 *		What-if (scheduling.md 3.15): replay a queue's recorded workload
 *		under its configuration as it is and under a candidate change, in
 *		an ideal world, beside what the history itself says.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 *
 * replay_run (src/reports/replay_sql.c) runs the baseline and the candidate
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
 * is_preemption(reason): whether a change of state's reason names a
 * preemption (3.6: CROSS_SHARE_PREEMPTION, IN_SHARE_PREEMPTION,
 * CAPACITY_REDUCED), the policy core's rule (QsIsPreemption,
 * src/reports/rules_sql.c).
 */
CREATE OR REPLACE FUNCTION quota_sched.is_preemption(reason text) RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_is_preemption'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

REVOKE ALL ON FUNCTION quota_sched.is_preemption(text) FROM PUBLIC;

/*
 * replay_recorded(job_queue, from, to): the same rows from the history
 * itself (scenario 'recorded'): a job that held capacity at `from` counts
 * as dispatched then; a held interval ends at the next change of state
 * that ends its attempt (to a state that holds nothing: holds()), lost
 * when a preemption ended it (is_preemption).
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
			   coalesce(quota_sched.is_preemption(e.reason), false) AS lost
		  FROM w
		  JOIN quota_sched.job_event s ON s.job_id = w.job_id AND s.kind = 'STATE'
									   AND s.to_state = 'SCHEDULED' AND s.at < "to"
		  LEFT JOIN LATERAL (
			SELECT x.at, x.reason FROM quota_sched.job_event x
			 WHERE x.job_id = s.job_id AND x.id > s.id AND x.kind = 'STATE'
			   AND quota_sched.holds(x.to_state) = 0
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
		   AND quota_sched.holds(x.from_state) = 1 AND quota_sched.holds(x.to_state) = 0
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
