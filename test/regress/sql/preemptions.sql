-- preemptions (issue 22, item 4: "who preempted us?"): every attempt a
-- preemption ended, with both sides' shares, the reason, when, and how long
-- the victim's attempt had run; each role sees every row (every share's
-- figures are everyone's: reference.md, "What a team sees of another"),
-- a job's name only where it may see the job.  Share pa (team A) takes its
-- capacity back from pb (team B), which borrowed it; then a job of pb of
-- higher priority preempts one of its own share.
\i test/regress/include/helpers.sql

CREATE ROLE regress_pq_team_a NOLOGIN;
CREATE ROLE regress_pq_team_b NOLOGIN;
CREATE ROLE regress_pq_ann NOLOGIN IN ROLE quota_sched_user, regress_pq_team_a;
CREATE ROLE regress_pq_ben NOLOGIN IN ROLE quota_sched_user, regress_pq_team_b;
CREATE ROLE regress_pq_out NOLOGIN IN ROLE quota_sched_user;
GRANT regress_pq_ann, regress_pq_ben TO CURRENT_USER;

CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name AND job_queue = 'pq_queue'
$$;
CREATE FUNCTION pg_temp.report(job_name text, state text) RETURNS text LANGUAGE sql AS $$
	SELECT r.name || ' ' || r.state
	  FROM quota_sched.report(pg_temp.id(job_name), 'pq_agent', state) r
$$;
CREATE FUNCTION pg_temp.run_all() RETURNS SETOF text LANGUAGE sql AS $$
	SELECT pg_temp.report(c.name, 'RUNNING')
	  FROM quota_sched.claim('pq_agent', 'pq_queue', max_jobs => 10) c ORDER BY c.name
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('pq_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pq_queue', 'pq_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, in_share_preemption, submit_role)
VALUES ('pq_queue', 'pa', '{"gpu": 1}', 'LEND_AND_BORROW', false, 'regress_pq_team_a'),
	   ('pq_queue', 'pb', '{"gpu": 1}', 'LEND_AND_BORROW', true, 'regress_pq_team_b');

-- ben's b1 runs on pb's own capacity, b2 on what it borrows of pa's.
SET ROLE regress_pq_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('b1', 'pq_queue', 'pb', 'gpu');
RESET ROLE;
SELECT name, action FROM pg_temp.pass('pq_queue');
SET ROLE regress_pq_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('b2', 'pq_queue', 'pb', 'gpu');
RESET ROLE;
SELECT name, action FROM pg_temp.pass('pq_queue');
SELECT * FROM pg_temp.run_all();

-- ann's a1 takes pa's capacity back: b2 is preempted across shares.
SET ROLE regress_pq_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('a1', 'pq_queue', 'pa', 'gpu');
RESET ROLE;
SELECT name, action, reason FROM pg_temp.pass('pq_queue');
SELECT pg_temp.report('b2', 'STOPPED');
SELECT name, action FROM pg_temp.pass('pq_queue');
SELECT * FROM pg_temp.run_all();

-- ben's urgent job preempts b1 inside pb.
SET ROLE regress_pq_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority) VALUES
	('b_urgent', 'pq_queue', 'pb', 'gpu', 9);
RESET ROLE;
SELECT name, action, reason FROM pg_temp.pass('pq_queue');
SELECT pg_temp.report('b1', 'STOPPED');

-- Who preempted us, as each role: both rows for all; names where the
-- caller may see the job.
CREATE FUNCTION pg_temp.seen() RETURNS TABLE (victim_share text, victim_name text,
	preemptor_share text, preemptor_name text, reason text, ran_ok boolean)
LANGUAGE sql AS $$
	SELECT p.victim_share, p.victim_name, p.preemptor_share, p.preemptor_name, p.reason,
		   p.victim_ran > interval '0' AND p.victim_ran < interval '1 hour'
	  FROM quota_sched.preemptions p
	 WHERE p.job_queue = 'pq_queue' ORDER BY p.at, p.victim_share
$$;
SELECT * FROM pg_temp.seen();
SET ROLE regress_pq_ann;
SELECT * FROM pg_temp.seen();
SET ROLE regress_pq_ben;
SELECT * FROM pg_temp.seen();
SET ROLE regress_pq_out;
SELECT * FROM pg_temp.seen();
RESET ROLE;
-- The ids are the jobs' (as the superuser sees them).
SELECT v.name AS victim, w.name AS preemptor
  FROM quota_sched.preemptions p
  JOIN quota_sched.job v ON v.id = p.victim_job
  JOIN quota_sched.job w ON w.id = p.preemptor_job
 WHERE p.job_queue = 'pq_queue' ORDER BY p.at;
-- A stop that is no preemption has no row: a1 is terminated.
SET ROLE regress_pq_ann;
SELECT state FROM quota_sched.terminate(pg_temp.id('a1'));
RESET ROLE;
SELECT pg_temp.report('a1', 'STOPPED');
SELECT count(*) AS rows FROM quota_sched.preemptions WHERE job_queue = 'pq_queue';

-- A job terminated while a preemption stops it (issue 22, item 2): its
-- history has a TERMINATE row, without the preemptor, and reports count
-- it as terminated.  pa's capacity is free again: b1 borrows it, a2 takes
-- it back, and ben terminates b1 before its agent stops it.
SELECT name, action FROM pg_temp.pass('pq_queue');
SELECT * FROM pg_temp.run_all();
SET ROLE regress_pq_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES
	('a2', 'pq_queue', 'pa', 'gpu');
RESET ROLE;
SELECT name, action, reason FROM pg_temp.pass('pq_queue');
SET ROLE regress_pq_ben;
SELECT name, state, stop_reason FROM quota_sched.terminate(pg_temp.id('b1'), 'not needed');
RESET ROLE;
SELECT pg_temp.report('b1', 'STOPPED');
SELECT e.kind, e.to_state, e.reason, e.preempted_for IS NOT NULL AS has_preemptor
  FROM quota_sched.job_event e WHERE e.job_id = pg_temp.id('b1') ORDER BY e.id;
SELECT name, state, terminated FROM quota_sched.job_accounting WHERE name = 'b1';

-- What the view reads (issue 42, item 7): the row job_preemption has for
-- each STATE event with a preempted_for, written by the history trigger
-- beside it, with how long the attempt ran as attempt_ran() finds it in
-- the history.
SELECT count(*) AS events, count(p.event_id) AS rows,
	   count(*) FILTER (WHERE p.victim_ran = quota_sched.attempt_ran(e.job_id, e.id, e.at))
		 AS ran_as_history
  FROM quota_sched.job_event e
  LEFT JOIN quota_sched.job_preemption p ON p.victim_job = e.job_id AND p.event_id = e.id
 WHERE e.job_queue = 'pq_queue' AND e.kind = 'STATE' AND e.preempted_for IS NOT NULL;
-- A deleted preemptor's owner and name are forgotten, its share kept; a
-- deleted victim's rows go with its history.
DELETE FROM quota_sched.job WHERE id = pg_temp.id('a1');
SET ROLE regress_pq_ben;
SELECT victim_name, preemptor_share, preemptor_job IS NOT NULL AS has_preemptor, preemptor_name
  FROM quota_sched.preemptions WHERE job_queue = 'pq_queue' ORDER BY at, victim_share;
RESET ROLE;
SELECT victim_name, preemptor_share, preemptor_name
  FROM quota_sched.preemptions WHERE job_queue = 'pq_queue' ORDER BY at, victim_share;
DELETE FROM quota_sched.job WHERE id = pg_temp.id('b2');
SELECT victim_name, preemptor_share, preemptor_name
  FROM quota_sched.preemptions WHERE job_queue = 'pq_queue' ORDER BY at, victim_share;
SELECT count(*) AS rows_of_b2 FROM quota_sched.job_preemption WHERE victim_share = 'pb'
   AND victim_job NOT IN (SELECT id FROM quota_sched.job);

DELETE FROM quota_sched.job WHERE job_queue = 'pq_queue';
DROP ROLE regress_pq_ann, regress_pq_ben, regress_pq_out, regress_pq_team_a, regress_pq_team_b;
