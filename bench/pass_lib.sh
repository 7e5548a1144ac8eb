# bench/pass_lib.sh: sourced by bench/pass and bench/report, after
# bench/cluster.sh.  pass_sql makes the schema bench, with the loaders of
# the jobs (written in replica mode, with the counters of held capacity
# they hold) and the timing of a pass; check_counters checks those
# counters; median, idle_median and one_dispatch measure passes (see
# bench/README.md, bench/pass).  bench_psql runs against BENCH_DB
# (default postgres), so that a script may load and time queues in two
# databases of one cluster.

idle_runs=51
one_dispatch_runs=21

# pass_sql: the schema bench (in the database bench_psql connects to, where
# quota_sched is installed)
pass_sql() {
	bench_psql <<'SQL'
CREATE SCHEMA bench;
-- pass_ms: the time of one pass, in milliseconds
CREATE FUNCTION bench.pass_ms(q text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz := clock_timestamp(); n bigint;
BEGIN
	SELECT count(*) INTO n FROM quota_sched.run_pass(q);
	RETURN extract(epoch FROM clock_timestamp() - t0) * 1000;
END $$;
-- count_held: the counters of held capacity of a queue's jobs, and of
-- what their parts hold on each host, with the mark of a fold, as the
-- queue's first pass that places a job leaves them (held_cache.c).  Jobs
-- written in replica mode bypass the triggers that keep the counters
-- (usage.c, host_usage.c), so the loaders write them from the jobs.
CREATE FUNCTION bench.count_held(q text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.held_capacity
	SELECT job_queue, quota_share, capacity_unit, 0, sum(instance_count),
		   coalesce(sum(instance_count) FILTER (WHERE stop_reason IS NOT NULL), 0), count(*),
		   now(), 0, 0, 0
	  FROM quota_sched.job
	 WHERE job_queue = q AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')
	 GROUP BY job_queue, quota_share, capacity_unit;
	INSERT INTO quota_sched.host_held
	SELECT j.job_queue, j.capacity_unit, p.agent, sum(p.instances),
		   coalesce(sum(p.instances) FILTER (WHERE j.stop_reason IS NOT NULL), 0)
	  FROM quota_sched.job j, unnest(j.part_agents, j.part_instances) AS p(agent, instances)
	 WHERE j.job_queue = q AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')
	 GROUP BY j.job_queue, j.capacity_unit, p.agent;
	INSERT INTO quota_sched.host_held_change (job_queue, generation)
	VALUES (q, nextval('quota_sched.host_held_change_seq'))
$$;
-- options: the scheduling options of 0.2 on a loaded queue: FAIR, the odd
-- shares STRICT, weights 1 to 5, a min_runtime of an hour, and lending
-- shares lend at most half of their capacity.
CREATE FUNCTION bench.options(q text) RETURNS void LANGUAGE sql AS $$
	UPDATE quota_sched.job_queue SET borrow_order = 'FAIR' WHERE name = q;
	UPDATE quota_sched.quota_share
	   SET queueing = CASE WHEN substr(name, 2)::int % 2 = 1 THEN 'STRICT' ELSE 'BEST_EFFORT' END,
		   weight = 1 + substr(name, 2)::int % 5,
		   min_runtime = '1 hour',
		   lend_limit = CASE WHEN strategy = 'RESERVE' THEN -1 ELSE 50 END
	 WHERE job_queue = q;
$$;
-- options_03: those of 0.2, and a budget on every share (never spent: the
-- pass reads it and what was spent, and dispatches as before), its period
-- DAY, WEEK or MONTH in turn, and a half-life of a day on the queue
CREATE FUNCTION bench.options_03(q text) RETURNS void LANGUAGE sql AS $$
	SELECT bench.options(q);
	UPDATE quota_sched.job_queue SET fair_half_life = '1 day' WHERE name = q;
	UPDATE quota_sched.quota_share
	   SET budget = '{"gpu": 1000000}',
		   budget_period = (ARRAY['DAY', 'WEEK', 'MONTH'])[1 + substr(name, 2)::int % 3]
	 WHERE job_queue = q;
$$;
-- unload: the jobs, their history and the counters, gone (one queue is
-- loaded at a time).  Truncated, so that the next queue's tables and
-- indexes are as large as its own jobs make them: the plans of a pass are
-- chosen from these sizes, and figures would otherwise depend on the
-- queues loaded before.
CREATE FUNCTION bench.unload() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL session_replication_role = replica;
	TRUNCATE quota_sched.job, quota_sched.job_event, quota_sched.pass_log,
		quota_sched.held_capacity, quota_sched.host_held, quota_sched.host_held_change;
END $$;
-- load_backlog: N RUNNABLE jobs of one instance of queue Q spread over its
-- shares s1..sS (job i in share 1 + i % S, priority i % 10, queued i ms
-- ago), written in replica mode (the caller set it)
CREATE FUNCTION bench.load_backlog(q text, shares int, backlog int) RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, owner, state, failed_attempts, preemption_count, lease_losses, claim_requeues,
		submitted_at, queued_at)
	SELECT nextval('quota_sched.job_id_seq'), 'j' || i, q, 's' || (1 + i % shares), i % 10, 'gpu',
		   1, '{"command": ["python", "train.py"]}', 'postgres', 'RUNNABLE', 0, 0, 0, 0,
		   now(), now() - (i || ' ms')::interval
	  FROM generate_series(1, backlog) i
$$;
-- load: a queue of S RESERVE shares of one instance each, every one held by
-- a SCHEDULED job, and N RUNNABLE jobs spread over the shares, written in
-- replica mode (the submit path is measured by bench/submit)
CREATE FUNCTION bench.load(q text, shares int, backlog int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.service_environment VALUES (q || '_env', jsonb_build_object('gpu', shares));
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES (q, q || '_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	SELECT q, 's' || i, '{"gpu": 1}', 'RESERVE' FROM generate_series(1, shares) i;
	SET LOCAL session_replication_role = replica;
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, owner, state, failed_attempts, preemption_count, lease_losses, claim_requeues,
		submitted_at, queued_at, scheduled_at)
	SELECT nextval('quota_sched.job_id_seq'), 'held' || i, q, 's' || i, 0, 'gpu', 1, '{}',
		   'postgres', 'SCHEDULED', 0, 0, 0, 0, now(), now(), now()
	  FROM generate_series(1, shares) i;
	PERFORM bench.load_backlog(q, shares, backlog);
	PERFORM bench.count_held(q);
END $$;
-- load_holding: a queue of S shares, RESERVE, LEND and LEND_AND_BORROW (no
-- borrow limit) in turn, whose own capacities add up to the environment's,
-- every one filled by its holding jobs of one instance: H in all, spread
-- over the shares; in each share a quarter SCHEDULED and unclaimed, a
-- quarter STARTING and a half RUNNING (half of those with a timeout), the
-- claimed ones with a lease an hour ahead, with priorities 0 to 9; and R
-- RUNNABLE jobs spread over the shares, none of which fits: no share has
-- idle capacity to lend or is below its own capacity (nothing to reclaim),
-- and none has in-share preemption.  Written in replica mode, as by load.
CREATE FUNCTION bench.load_holding(q text, shares int, holding int, backlog int)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.service_environment VALUES (q || '_env', jsonb_build_object('gpu', holding));
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES (q, q || '_env');
	-- share i holds the jobs k (0 <= k < H) with k % S = i - 1
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	SELECT q, 's' || i,
		   jsonb_build_object('gpu', holding / shares + (i - 1 < holding % shares)::int),
		   (ARRAY['RESERVE', 'LEND', 'LEND_AND_BORROW'])[1 + i % 3]
	  FROM generate_series(1, shares) i;
	SET LOCAL session_replication_role = replica;
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, timeout, owner, state, agent, lease_until, failed_attempts,
		preemption_count, lease_losses, claim_requeues, submitted_at, queued_at, scheduled_at, started_at)
	SELECT nextval('quota_sched.job_id_seq'), 'held' || k, q, 's' || (1 + k % shares), j % 10,
		   'gpu', 1, '{"command": ["python", "train.py"]}',
		   CASE WHEN j % 4 = 3 THEN interval '7 days' END, 'postgres',
		   (ARRAY['SCHEDULED', 'STARTING', 'RUNNING', 'RUNNING'])[1 + j % 4],
		   CASE WHEN j % 4 > 0 THEN 'agent' || k % 50 END,
		   CASE WHEN j % 4 > 0 THEN now() + interval '1 hour' END, 0, 0, 0, 0,
		   now() - interval '1 day', now() - interval '1 day',
		   now() - interval '1 minute' - (k || ' ms')::interval,
		   CASE WHEN j % 4 >= 2 THEN now() - (k || ' ms')::interval END
	  FROM generate_series(0, holding - 1) k, LATERAL (SELECT k / shares) AS s(j);
	PERFORM bench.load_backlog(q, shares, backlog);
	PERFORM bench.count_held(q);
END $$;
-- load_skip: a queue of one RESERVE share of 10,000 instances, 9,998 of
-- them held by a SCHEDULED job, and N RUNNABLE jobs of one priority, none
-- of which fits (each would in an empty environment), their sizes
-- decreasing in share order from N + 2 to 3 (dir -1) or increasing from 3
-- to N + 2 (dir 1).  Written in replica mode, as by load.
CREATE FUNCTION bench.load_skip(q text, backlog int, dir int) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO quota_sched.service_environment VALUES (q || '_env', '{"gpu": 10000}');
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES (q, q || '_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES (q, 's1', '{"gpu": 10000}', 'RESERVE');
	SET LOCAL session_replication_role = replica;
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, owner, state, failed_attempts, preemption_count, lease_losses, claim_requeues,
		submitted_at, queued_at, scheduled_at)
	VALUES (nextval('quota_sched.job_id_seq'), 'held', q, 's1', 0, 'gpu', 9998, '{}',
		    'postgres', 'SCHEDULED', 0, 0, 0, 0, now(), now(), now());
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, owner, state, failed_attempts, preemption_count, lease_losses, claim_requeues,
		submitted_at, queued_at)
	SELECT nextval('quota_sched.job_id_seq'), 'j' || i, q, 's1', 0, 'gpu',
		   CASE WHEN dir < 0 THEN backlog + 3 - i ELSE 2 + i END,
		   '{"command": ["python", "train.py"]}', 'postgres', 'RUNNABLE', 0, 0, 0, 0,
		   now(), now() - interval '1 day' + (i || ' ms')::interval
	  FROM generate_series(1, backlog) i;
	PERFORM bench.count_held(q);
END $$;
-- skip_pass: the time of one pass in milliseconds, and the index tuples of
-- quota_sched.job it read
CREATE FUNCTION bench.skip_pass(q text, OUT ms float8, OUT reads bigint) LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; r0 bigint; n bigint;
BEGIN
	SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) INTO r0
	  FROM pg_index WHERE indrelid = 'quota_sched.job'::regclass;
	t0 := clock_timestamp();
	SELECT count(*) INTO n FROM quota_sched.run_pass(q);
	ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
	SELECT sum(pg_stat_get_xact_tuples_returned(indexrelid)) - r0 INTO reads
	  FROM pg_index WHERE indrelid = 'quota_sched.job'::regclass;
	IF n > 0 THEN
		RAISE EXCEPTION 'the pass of % made % decisions, none expected', q, n;
	END IF;
END $$;
SQL
}

# the counters must match the jobs loaded, or the pass would not see what
# they hold
check_counters() {
	local drift
	drift=$(bench_psql -At -c "SELECT count(*) FROM quota_sched.held_capacity_drift()")
	[ "$drift" = 0 ] || bench_die "the counters of held capacity do not match the jobs loaded" \
		"($drift rows of quota_sched.held_capacity_drift())"
	drift=$(bench_psql -At -c "SELECT count(*) FROM quota_sched.host_held_drift()")
	[ "$drift" = 0 ] || bench_die "the counters of what the hosts hold do not match the jobs loaded" \
		"($drift rows of quota_sched.host_held_drift())"
}

# median: the middle of the first fields of the lines of stdin, with the
# rest of that line
median() {
	local lines
	lines=$(sort -n)
	sed -n "$(( ($(wc -l <<<"$lines") + 1) / 2 ))p" <<<"$lines"
}

# idle_median Q: the median time of an idle pass of queue Q, in ms, of
# $idle_runs passes after 5 warm-up ones, in one session (its plans are
# kept).
idle_median() {
	local q=$1
	bench_psql -At <<SQL
SELECT bench.pass_ms('$q') FROM generate_series(1, 5) \g /dev/null
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 3)
  FROM (SELECT bench.pass_ms('$q') AS ms FROM generate_series(1, $idle_runs)) t;
SQL
}

# one_dispatch Q SHARE RUNNABLE: the one-dispatch passes of queue Q, one
# line each: its time in ms and the jobs it dispatched (of the RUNNABLE
# jobs the queue has).
#
# One more instance for SHARE (and for the environment), inside a
# transaction rolled back: the pass dispatches that share's first job and
# nothing else.  All runs, after 3 discarded ones, in one session, so that
# each pass uses the plans it keeps (as the worker's passes do).  The
# statement trigger of the configuration tables invalidates them
# (config_changed, a relcache invalidation), so the plans that read them
# would be analyzed and planned again in the timed pass (a fifth of its
# time at 20 shares): a cost of the configuration change, once, which a
# pass after a job ends does not pay.  A dry run first takes it.  No VACUUM
# between runs: a run leaves a few dead row versions (one of the job, of a
# counter and of each configuration row, a change row, a job_event and a
# pass_log row), which do not move the median, while a VACUUM would
# invalidate the saved plans too (it updates pg_class).
one_dispatch() {
	local q=$1 target=$2 runnable=$3
	for _ in $(seq $((3 + one_dispatch_runs))); do
		one_dispatch_sql "$q" "$target" "$runnable"
	done | bench_psql -At | tail -n "$one_dispatch_runs"
}

# one_dispatch_sql Q SHARE RUNNABLE: the SQL of one run of one_dispatch,
# which prints its line
one_dispatch_sql() {
	local q=$1 target=$2 runnable=$3
	cat <<SQL
BEGIN;
UPDATE quota_sched.service_environment
   SET capacity_limits = jsonb_build_object('gpu', (capacity_limits->>'gpu')::int + 1)
 WHERE name = '${q}_env';
UPDATE quota_sched.quota_share
   SET capacity_limits = jsonb_build_object('gpu', (capacity_limits->>'gpu')::int + 1)
 WHERE job_queue = '$q' AND name = '$target';
SELECT count(*) FROM quota_sched.run_pass('$q', dry_run => true) \g /dev/null
SELECT round(bench.pass_ms('$q')::numeric, 3) AS ms \gset
SELECT :'ms' || ' ' || ($runnable - count(*)) FROM quota_sched.job
 WHERE job_queue = '$q' AND state = 'RUNNABLE';
ROLLBACK;
SQL
}

# idle_medians Q1 Q2: the median times of idle passes of queues Q1 and Q2,
# "ms1 ms2", their passes taken in turn ($idle_runs each, after 5 warm-up
# ones each), so that a change of the machine's speed during the runs
# weighs on both alike.
idle_medians() {
	local a=$1 b=$2
	bench_psql -At -F ' ' <<SQL
SELECT bench.pass_ms('$a'), bench.pass_ms('$b') FROM generate_series(1, 5) \g /dev/null
SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ma)::numeric, 3),
	   round(percentile_cont(0.5) WITHIN GROUP (ORDER BY mb)::numeric, 3)
  FROM (SELECT bench.pass_ms('$a') AS ma, bench.pass_ms('$b') AS mb
		  FROM generate_series(1, $idle_runs)) t;
SQL
}

# one_dispatches Q1 Q2 SHARE RUNNABLE: the one-dispatch runs of queues Q1
# and Q2 in turn (as one_dispatch, in one session), a line each: the
# queue's number (1 or 2), the time in ms and the jobs dispatched.
one_dispatches() {
	local a=$1 b=$2 target=$3 runnable=$4
	for _ in $(seq $((3 + one_dispatch_runs))); do
		one_dispatch_sql "$a" "$target" "$runnable" | sed "s/^SELECT :'ms' ||/SELECT '1 ' || :'ms' ||/"
		one_dispatch_sql "$b" "$target" "$runnable" | sed "s/^SELECT :'ms' ||/SELECT '2 ' || :'ms' ||/"
	done | bench_psql -At | tail -n $((2 * one_dispatch_runs))
}
