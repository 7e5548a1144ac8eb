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
 * (src/reports/stats.c), those of the caller's database: in another
 * database than the worker's (a restored copy of it in the same server)
 * no worker runs and no pass of the worker's queues is shown.  metrics()
 * returns every metric in the Prometheus text format (doc/reporting.md,
 * "Metrics"), one statement whose parts are the metric_* functions below.
 * Its counters of jobs come from usage_totals and the history after the
 * rollup, read in one statement (one snapshot), so a rollup or a prune
 * never makes them go back.  JIT
 * is off: the planner's estimates for the functions it reads would have it
 * compile, for 100 ms, a statement that runs in a few.  Times are in
 * seconds, Prometheus's base unit (promtool check metrics warns of any
 * other): budgets, what was spent and recent borrowing in
 * instance-seconds, where share_budget and share_usage have them in hours.
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

/*
 * The families of metrics(): each metric's name, type and help (metrics()
 * orders them by name).
 */
CREATE OR REPLACE FUNCTION quota_sched.metric_families()
RETURNS TABLE (name text, type text, help text)
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
	SELECT f.name, f.type, f.help FROM (VALUES
		('quota_sched_share_capacity_instances', 'gauge', 'The own capacity of the share (capacity_limits).'),
		('quota_sched_share_in_use_instances', 'gauge', 'Instances held by the share''s jobs (SCHEDULED, STARTING, RUNNING).'),
		('quota_sched_share_borrowed_instances', 'gauge', 'Instances the share holds beyond its own capacity.'),
		('quota_sched_share_idle_instances', 'gauge', 'Own capacity the share does not use (lent or unused).'),
		('quota_sched_share_lendable_instances', 'gauge', 'Own capacity the share may lend.'),
		('quota_sched_share_runnable_jobs', 'gauge', 'Jobs of the share waiting for capacity (RUNNABLE).'),
		('quota_sched_share_longest_wait_seconds', 'gauge', 'How long the share''s longest-waiting RUNNABLE job has waited since it last became RUNNABLE (0: none waits).'),
		('quota_sched_share_recent_borrow_instance_seconds', 'gauge', 'The share''s recent borrowing in instance-seconds, decayed by the queue''s fair_half_life (FAIR order).'),
		('quota_sched_share_budget_instance_seconds', 'gauge', 'The share''s budget of the unit for its budget_period, in instance-seconds (its budget in instance-hours times 3600).'),
		('quota_sched_share_budget_spent_instance_seconds', 'gauge', 'Instance-seconds the share''s jobs held in the current budget period.'),
		('quota_sched_environment_capacity_instances', 'gauge', 'The capacity of the service environment.'),
		('quota_sched_agent_live', 'gauge', '1 when the registered agent is live: its last agent_ready, claim or heartbeat is younger than its last lease (60 s if it took none).'),
		('quota_sched_agent_draining', 'gauge', '1 when the agent is DRAINING (drain_agent): it claims nothing new.'),
		('quota_sched_agent_draining_since_timestamp_seconds', 'gauge', 'Since when the DRAINING agent drains (absent for an ACTIVE agent).'),
		('quota_sched_agent_instances', 'gauge', 'The instances the agent says it has in all (absent for an agent with no bound).'),
		('quota_sched_agent_held_instances', 'gauge', 'Instances of the jobs the agent holds (SCHEDULED, STARTING, RUNNING).'),
		('quota_sched_agent_free_instances', 'gauge', 'The agent''s instances less those it holds, at least 0 (absent for an agent with no bound).'),
		('quota_sched_agent_last_seen_timestamp_seconds', 'gauge', 'When the agent last called agent_ready, claim or heartbeat.'),
		('quota_sched_dispatches_total', 'counter', 'Jobs dispatched (RUNNABLE to SCHEDULED).'),
		('quota_sched_jobs_succeeded_total', 'counter', 'Jobs that ended SUCCEEDED.'),
		('quota_sched_jobs_failed_total', 'counter', 'Jobs that ended FAILED, but for those terminated.'),
		('quota_sched_jobs_terminated_total', 'counter', 'Jobs that ended FAILED after a terminate() (cancelled by a user or admin).'),
		('quota_sched_preempted_attempts_total', 'counter', 'Attempts ended by preemption.'),
		('quota_sched_preempted_early_attempts_total', 'counter', 'Attempts ended by preemption before their share''s min_runtime (a minute where it had none) had run since their dispatch (churn).'),
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
		('quota_sched_stats_available', 'gauge', '1 when the library is preloaded (shared_preload_libraries) and keeps the counters of passes and of the worker; 0: it is not, and their metrics are absent.')) AS f(name, type, help);
END;

/*
 * The samples of metrics() (name, labels, value), family by family, of
 * the shares as share_usage has them (its rows, read once by metrics()):
 * their capacity, use and waits now.
 */
CREATE OR REPLACE FUNCTION quota_sched.metric_shares(share_rows quota_sched.share_usage[])
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH shares AS (SELECT u.*, quota_sched.metric_labels('job_queue', u.job_queue, 'quota_share', u.quota_share,
														  'capacity_unit', u.capacity_unit) AS labels
					  FROM unnest(share_rows) u)
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
	SELECT 'quota_sched_share_recent_borrow_instance_seconds', s.labels,
		   round((s.recent_borrow_hours * 3600)::numeric, 3)::text
	  FROM shares s WHERE s.recent_borrow_hours IS NOT NULL;
END;

/* The samples of the budgets (share_budget) and of the environments' capacity. */
CREATE OR REPLACE FUNCTION quota_sched.metric_budgets()
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH budgets AS (SELECT b.*, quota_sched.metric_labels('job_queue', b.job_queue, 'quota_share', b.quota_share,
														   'capacity_unit', b.capacity_unit) AS labels
					   FROM quota_sched.share_budget b)
	SELECT 'quota_sched_share_budget_instance_seconds', b.labels, trim_scale(b.budget_hours * 3600)::text
	  FROM budgets b
	UNION ALL
	SELECT 'quota_sched_share_budget_spent_instance_seconds', b.labels,
		   round((b.spent_hours * 3600)::numeric, 3)::text
	  FROM budgets b
	UNION ALL
	SELECT 'quota_sched_environment_capacity_instances',
		   quota_sched.metric_labels('service_environment', e.name, 'capacity_unit', k.key),
		   quota_sched.capacity_of(e.capacity_limits, k.key)::text
	  FROM quota_sched.service_environment e, jsonb_object_keys(e.capacity_limits) AS k(key);
END;

/*
 * The samples of the registered agents, as the view agents has them (its
 * held and free instances counted there, once), labelled by agent, queue
 * and unit.  metrics() reads the view as the extension's owner, who sees
 * every agent.
 */
CREATE OR REPLACE FUNCTION quota_sched.metric_agents()
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH agents AS (SELECT a.*, quota_sched.metric_labels('agent', a.agent, 'job_queue', a.job_queue,
														  'capacity_unit', a.capacity_unit) AS series
					  FROM quota_sched.agents a)
	SELECT 'quota_sched_agent_live', g.series, g.live::integer::text FROM agents g
	UNION ALL
	SELECT 'quota_sched_agent_draining', g.series, (g.state = 'DRAINING')::integer::text FROM agents g
	UNION ALL
	SELECT 'quota_sched_agent_draining_since_timestamp_seconds', g.series,
		   extract(epoch FROM g.draining_since)::text
	  FROM agents g WHERE g.draining_since IS NOT NULL
	UNION ALL
	SELECT 'quota_sched_agent_instances', g.series, g.instances::text
	  FROM agents g WHERE g.instances IS NOT NULL
	UNION ALL SELECT 'quota_sched_agent_held_instances', g.series, g.held_instances::text FROM agents g
	UNION ALL
	SELECT 'quota_sched_agent_free_instances', g.series, g.free_instances::text
	  FROM agents g WHERE g.free_instances IS NOT NULL
	UNION ALL
	SELECT 'quota_sched_agent_last_seen_timestamp_seconds', g.series,
		   extract(epoch FROM g.last_seen)::text
	  FROM agents g;
END;

/*
 * The samples of the counters of jobs: from usage_totals and the history
 * after the rollup, read in one statement (one snapshot: the caller's), so
 * a rollup or a prune never makes them go back; every share of share_rows
 * has each counter of jobs, 0 if it has none.
 */
CREATE OR REPLACE FUNCTION quota_sched.metric_counters(share_rows quota_sched.share_usage[])
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH queues AS (SELECT q.name, r.rolled_until FROM quota_sched.job_queue q
					  LEFT JOIN quota_sched.usage_rollup r ON r.job_queue = q.name),
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
				  FROM unnest(share_rows) s,
					   unnest(ARRAY['dispatched', 'succeeded', 'failed', 'terminated', 'preempted',
									 'preempted_early']) AS k(counter)) t
		 GROUP BY 1, 2, 3, 4)
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
	  FROM counts c;
END;

/*
 * The samples of each queue: its passes (pass_stats(), when the library
 * keeps them: stats_available), the jobs its last pass passed over, and
 * how far its rollup is done.
 */
CREATE OR REPLACE FUNCTION quota_sched.metric_queues(stats_available boolean)
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH queues AS (SELECT q.name, r.rolled_until FROM quota_sched.job_queue q
					  LEFT JOIN quota_sched.usage_rollup r ON r.job_queue = q.name),
	passes AS (SELECT p.*, quota_sched.metric_labels('job_queue', q.name) AS labels
				 FROM queues q LEFT JOIN quota_sched.pass_stats() p ON p.job_queue = q.name
				WHERE stats_available)
	SELECT 'quota_sched_passes_total', p.labels, coalesce(p.passes, 0)::text FROM passes p
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
	  FROM queues q WHERE q.rolled_until IS NOT NULL;
END;

/* The samples of the background worker (worker_stats()). */
CREATE OR REPLACE FUNCTION quota_sched.metric_worker()
RETURNS TABLE (name text, labels text, value text)
LANGUAGE sql STABLE
BEGIN ATOMIC
	WITH worker AS (SELECT w.*, w.running AND current_database() = current_setting('quota_sched.database', true)
								AND current_setting('quota_sched.enabled', true)::boolean AS up
					  FROM quota_sched.worker_stats() w)
	SELECT 'quota_sched_worker_up', '', w.up::integer::text FROM worker w
	UNION ALL
	SELECT 'quota_sched_worker_start_timestamp_seconds', '', extract(epoch FROM w.started_at)::text
	  FROM worker w WHERE w.up
	UNION ALL
	SELECT 'quota_sched_worker_last_round_timestamp_seconds', '', extract(epoch FROM w.last_round_at)::text
	  FROM worker w WHERE w.up AND w.last_round_at IS NOT NULL
	UNION ALL SELECT 'quota_sched_worker_rounds_total', '', w.rounds::text FROM worker w WHERE w.up;
END;

/*
 * metrics(): every family that has samples, by name, each sample of it by
 * its labels.  share_usage is read once, for the shares' gauges and their
 * counters of jobs.
 */
CREATE OR REPLACE FUNCTION quota_sched.metrics() RETURNS text
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET jit = off
BEGIN ATOMIC
	WITH stats AS (SELECT EXISTS (SELECT FROM pg_catalog.pg_shmem_allocations a
								   WHERE a.name = 'quota_sched stats') AS available),
	shares AS (SELECT array_agg(u) AS share_rows FROM quota_sched.share_usage u),
	samples(name, labels, value) AS (
		SELECT * FROM quota_sched.metric_shares((SELECT s.share_rows FROM shares s))
		UNION ALL SELECT * FROM quota_sched.metric_budgets()
		UNION ALL SELECT * FROM quota_sched.metric_agents()
		UNION ALL SELECT * FROM quota_sched.metric_counters((SELECT s.share_rows FROM shares s))
		UNION ALL SELECT * FROM quota_sched.metric_queues((SELECT st.available FROM stats st))
		UNION ALL SELECT * FROM quota_sched.metric_worker()
		UNION ALL SELECT 'quota_sched_stats_available', '', st.available::integer::text FROM stats st)
	SELECT coalesce(string_agg(b.block, '' ORDER BY b.name), '')
	  FROM (SELECT f.name, '# HELP ' || f.name || ' ' || f.help || E'\n# TYPE ' || f.name || ' ' || f.type
						   || E'\n' || string_agg(s.name || s.labels || ' ' || s.value || E'\n', ''
												  ORDER BY s.labels COLLATE "C") AS block
			  FROM quota_sched.metric_families() f JOIN samples s ON s.name = f.name
			 GROUP BY f.name, f.type, f.help) b;
END;

REVOKE ALL ON FUNCTION quota_sched.pass_stats(), quota_sched.worker_stats(),
	quota_sched.metric_labels(text[]), quota_sched.metric_families(),
	quota_sched.metric_shares(quota_sched.share_usage[]), quota_sched.metric_budgets(),
	quota_sched.metric_agents(), quota_sched.metric_counters(quota_sched.share_usage[]),
	quota_sched.metric_queues(boolean),
	quota_sched.metric_worker(), quota_sched.metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.pass_stats(), quota_sched.worker_stats(),
	quota_sched.metrics() TO quota_sched_admin, pg_monitor;
GRANT USAGE ON SCHEMA quota_sched TO pg_monitor;
