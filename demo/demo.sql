-- The seed example, run by the background worker and two launcher agents
-- (quota-sched-agent, started by demo/run: agent-a runs two instances,
-- agent-b one).  Each job is demo/train.sh: 40 steps of a quarter of a
-- second, a checkpoint after each.  After each of the seed's three steps:
-- who runs on whose capacity, what was preempted and why.  At the end: the
-- preempted jobs resumed from their checkpoints, and the utilization.
-- psql variables: train (the path of train.sh), progress (the folder
-- where each job notes its steps and attempts, for all to read: train.sh).
\pset footer off
SET demo.progress = :'progress';
SELECT set_config('demo.started', clock_timestamp()::text, false) \g /dev/null

-- pg_temp.wait_until(condition): waits until the SQL condition holds
-- (what the worker and the agents do happens in other sessions).
CREATE FUNCTION pg_temp.wait_until(cond text, seconds integer DEFAULT 60) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	ok boolean;
	deadline timestamptz := clock_timestamp() + seconds * interval '1 second';
BEGIN
	LOOP
		EXECUTE 'SELECT ' || cond INTO ok;
		EXIT WHEN ok;
		IF clock_timestamp() > deadline THEN
			RAISE EXCEPTION 'demo: still not true after % s: %', seconds, cond;
		END IF;
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;

-- pg_temp.step(job): the last step its checkpoint saved (0: none yet), the
-- last line of PROGRESS/job-ID.step, to which train.sh appends each step.
CREATE FUNCTION pg_temp.step(job_name text) RETURNS integer LANGUAGE sql AS $$
	SELECT coalesce((regexp_match(pg_read_file(current_setting('demo.progress') || '/job-' || j.id || '.step',
											   0, 100000, true), '(\d+)\n$'))[1]::integer, 0)
	  FROM quota_sched.job j WHERE j.name = job_name
$$;

-- pg_temp.who_runs(): each job, where it runs, and on whose capacity: a
-- share's held jobs, in the order they were dispatched, use its own
-- instances first; the rest is borrowed from shares that lend.
CREATE FUNCTION pg_temp.who_runs()
RETURNS TABLE (job text, share text, priority integer, state text, agent text, capacity text,
			   step integer)
LANGUAGE sql AS $$
	SELECT j.name, j.quota_share, j.priority, j.state, coalesce(j.agent, ''),
		   CASE WHEN h.n IS NULL THEN ''
				WHEN h.n <= (s.capacity_limits ->> j.capacity_unit)::integer THEN 'own'
				ELSE 'borrowed' END,
		   pg_temp.step(j.name)
	  FROM quota_sched.job j
	  JOIN quota_sched.quota_share s ON s.job_queue = j.job_queue AND s.name = j.quota_share
	  LEFT JOIN (SELECT id, row_number() OVER (PARTITION BY quota_share ORDER BY scheduled_at, id) AS n
				   FROM quota_sched.job WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING')) h
		ON h.id = j.id
	 ORDER BY j.id
$$;

-- pg_temp.preemptions(): the stops requested since the last call, and why.
CREATE TEMP TABLE shown (last_event bigint);
INSERT INTO shown VALUES (0);
CREATE FUNCTION pg_temp.preemptions()
RETURNS TABLE (stopped text, reason text, to_make_room_for text, at_step integer)
LANGUAGE plpgsql AS $$
BEGIN
	RETURN QUERY
	SELECT j.name, e.reason, coalesce(p.name, ''), pg_temp.step(j.name)
	  FROM quota_sched.job_event e
	  JOIN quota_sched.job j ON j.id = e.job_id
	  LEFT JOIN quota_sched.job p ON p.id = e.preempted_for
	 WHERE e.kind IN ('STOP', 'TERMINATE') AND e.id > (SELECT last_event FROM shown)
	 ORDER BY e.id;
	UPDATE shown SET last_event = (SELECT coalesce(max(id), 0) FROM quota_sched.job_event);
END
$$;

\echo '== step 1: team QS1 submits three jobs (priorities 3, 2, 1) with INSERT'
SET ROLE team_qs1;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, payload)
SELECT n, 'ml-queue', 'QS1', p, 'ml.g5.xlarge',
	   jsonb_build_object('command', jsonb_build_array('sh', :'train', '40', :'progress'))
  FROM (VALUES ('qs1_job_high', 3), ('qs1_job_med', 2), ('qs1_job_low', 1)) AS v(n, p);
RESET ROLE;
SELECT pg_temp.wait_until($$(SELECT count(*) = 2 FROM quota_sched.job WHERE state = 'RUNNING')
						   AND pg_temp.step('qs1_job_med') >= 8$$) \g /dev/null
\echo '   high runs on QS1''s own instance, med on the one QS2 lends; low waits: QS3 reserves its own'
SELECT * FROM pg_temp.who_runs();
SELECT e ->> 'blocked_by' AS low_blocked_by, e ->> 'detail' AS detail
  FROM quota_sched.job j, quota_sched.explain(j.id) AS e WHERE j.name = 'qs1_job_low';

\echo '== step 2: team QS2 submits a job: QS2 takes back the instance it lent'
SELECT pg_temp.preemptions() \g /dev/null
SET ROLE team_qs2;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, payload)
VALUES ('qs2_job_1', 'ml-queue', 'QS2', 1, 'ml.g5.xlarge',
		jsonb_build_object('command', jsonb_build_array('sh', :'train', '40', :'progress')));
RESET ROLE;
SELECT pg_temp.wait_until($$(SELECT state = 'RUNNING' FROM quota_sched.job WHERE name = 'qs2_job_1')$$) \g /dev/null
SELECT * FROM pg_temp.preemptions();
SELECT * FROM pg_temp.who_runs();

\echo '== step 3: team QS1 raises qs1_job_low to priority 4: in-share preemption stops high'
SET ROLE team_qs1;
UPDATE quota_sched.job SET priority = 4 WHERE name = 'qs1_job_low';
RESET ROLE;
SELECT pg_temp.wait_until($$(SELECT state = 'RUNNING' FROM quota_sched.job WHERE name = 'qs1_job_low')$$) \g /dev/null
SELECT * FROM pg_temp.preemptions();
SELECT * FROM pg_temp.who_runs();

\echo '== every job runs to its end; the preempted ones resume from their checkpoints'
SELECT pg_temp.wait_until($$(SELECT bool_and(state = 'SUCCEEDED') FROM quota_sched.job)$$, 120) \g /dev/null
SELECT j.name AS job, j.preemption_count AS preemptions,
	   replace(rtrim(pg_read_file(current_setting('demo.progress') || '/job-' || j.id || '.attempts',
										0, 10000, true), E'\n'),
			   E'\n', '; ') AS attempts
  FROM quota_sched.job j ORDER BY j.id;

\echo '== utilization of the run, per share (quota_sched.utilization(), one bucket)'
SELECT coalesce(u.quota_share, '(all)') AS share,
	   round(u.used_instance_seconds) AS used_s, round(u.own_instance_seconds) AS own_s,
	   round(u.borrowed_instance_seconds) AS borrowed_s, round(u.idle_instance_seconds) AS idle_s,
	   u.dispatched, u.preempted, u.preempting, u.succeeded, round(u.wait_p50_seconds) AS wait_p50_s
  FROM quota_sched.utilization('ml-queue', date_trunc('second', current_setting('demo.started')::timestamptz),
							   now(), ceil(extract(epoch FROM now() - current_setting('demo.started')::timestamptz)) * interval '1 second' + interval '1 second') u
 ORDER BY u.quota_share NULLS LAST;
\echo '== who lent to whom (quota_sched.lending()): QS3 is RESERVE and lends nothing'
SELECT l.lender_share AS lender, l.borrower_share AS borrower, round(l.instance_seconds) AS lent_s
  FROM quota_sched.lending('ml-queue', date_trunc('second', current_setting('demo.started')::timestamptz),
						   now(), ceil(extract(epoch FROM now() - current_setting('demo.started')::timestamptz)) * interval '1 second' + interval '1 second') l
 ORDER BY 1 NULLS FIRST, 2;
\echo '== each job''s accounting (quota_sched.job_accounting)'
SELECT name AS job, quota_share AS share, attempts, preemptions, round(extract(epoch FROM waited)) AS waited_s,
	   round(held_seconds) AS held_s, last_exit_code
  FROM quota_sched.job_accounting ORDER BY job_id;

\echo '== what-if (quota_sched.replay()): this run replayed as it is, and had QS2 reserved its'
\echo '   instance instead of lending it (nothing is changed: the replay runs in memory), to a'
\echo '   minute from now so that the work the candidate delays can finish'
SELECT r.scenario, r.quota_share AS share, r.jobs, r.finished, r.preemptions,
	   round(extract(epoch FROM r.wait_p50)::numeric, 1) AS wait_p50_s,
	   round(extract(epoch FROM r.wait_p95)::numeric, 1) AS wait_p95_s,
	   round((r.used_hours * 3600)::numeric) AS used_s,
	   round((r.borrowed_hours * 3600)::numeric) AS borrowed_s,
	   round((r.lost_hours * 3600)::numeric) AS lost_s
  FROM quota_sched.replay('ml-queue', current_setting('demo.started')::timestamptz,
						  now() + interval '1 minute', '{"quota_share": {"QS2": {"strategy": "RESERVE"}}}') r;
\echo '== why (quota_sched.replay_jobs()): the jobs whose wait changed most'
SELECT j.name AS job, r.quota_share AS share,
	   round(extract(epoch FROM r.wait_recorded)::numeric, 1) AS wait_recorded_s,
	   round(extract(epoch FROM r.wait_baseline)::numeric, 1) AS wait_baseline_s,
	   round(extract(epoch FROM r.wait_candidate)::numeric, 1) AS wait_candidate_s,
	   r.preemptions_baseline AS preempted_b, r.preemptions_candidate AS preempted_c,
	   r.preempted_baseline AS preempting_b, r.preempted_candidate AS preempting_c
  FROM quota_sched.replay_jobs('ml-queue', current_setting('demo.started')::timestamptz,
							   now() + interval '1 minute', '{"quota_share": {"QS2": {"strategy": "RESERVE"}}}') r
  JOIN quota_sched.job j ON j.id = r.job_id;
