-- A STRICT share whose first job of a unit is held back (scheduling.md 3.2,
-- 3.10, 3.11), and the runnable timeout of a job no agent fits (3.9).
-- The share's later jobs of the unit wait behind the held-back job: no
-- decision says so (run_pass, even dry, returns nothing), so explain() of
-- a later job names that job (blocked_by STRICT_HEAD_HELD, the object
-- strict_head: its id, its name where the caller may see the job, its own
-- blocked_by and detail).  A job held NO_AGENT_FITS for longer than its
-- queue's runnable_timeout, counted from its reason's status_reason_at,
-- fails (RUNNABLE_TIMEOUT:NO_AGENT_FITS), and the jobs it held back start
-- in the same pass; one that an agent fits again is dispatched instead,
-- and one held back by its budget never times out.
--   phh_nlp   STRICT, submit_role regress_phh_nlp (ann, ben): 8 gpu, 2 tpu
--             with a budget of 0 tpu-hours (the unit forbidden)
--   phh_open  STRICT, no submit_role: each user sees only their own jobs;
--             4 cpu
-- Live agents: 4 gpu, 2 cpu.  Job ids and times are never printed; the
-- clock moves by setting times back (replica mode), never by waiting.

\i test/regress/include/helpers.sql

CREATE ROLE regress_phh_nlp NOLOGIN;
CREATE ROLE regress_phh_ann NOLOGIN IN ROLE quota_sched_user, regress_phh_nlp;
CREATE ROLE regress_phh_ben NOLOGIN IN ROLE quota_sched_user, regress_phh_nlp;
CREATE ROLE regress_phh_cat NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_phh_dan NOLOGIN IN ROLE quota_sched_user;
CREATE ROLE regress_phh_host NOLOGIN IN ROLE quota_sched_agent;
CREATE ROLE regress_phh_ops NOLOGIN IN ROLE quota_sched_admin;

-- pg_temp.id(job): a job's id, whoever asks (SECURITY DEFINER).
CREATE FUNCTION pg_temp.id(job_name text) RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$
	SELECT id FROM quota_sched.job WHERE name = job_name
$$;

-- pg_temp.jobs(): the jobs of the test, without times (a budget's
-- reason says until when: masked).
CREATE FUNCTION pg_temp.jobs()
RETURNS TABLE (name text, quota_share text, capacity_unit text, instance_count integer,
			   state text, status_reason text)
LANGUAGE sql AS $$
	SELECT name, quota_share, capacity_unit, instance_count, state,
		   regexp_replace(status_reason, ' until .*', ' until ...')
	  FROM quota_sched.job WHERE job_queue = 'phh_queue' ORDER BY id
$$;

-- pg_temp.why(job, head): explain() of a job as the current role, ids
-- masked: blocked_by, whether strict_head's job_id is the head's, its
-- name and blocked_by, and the detail.
CREATE FUNCTION pg_temp.why(job_name text, head_name text)
RETURNS TABLE (blocked_by text, head_is text, head_name text, head_blocked_by text,
			   detail text)
LANGUAGE sql AS $$
	SELECT e->>'blocked_by',
		   CASE WHEN e->'strict_head' IS NOT NULL
				THEN ((e->'strict_head'->>'job_id')::bigint = pg_temp.id(head_name))::text END,
		   e->'strict_head'->>'name', e->'strict_head'->>'blocked_by',
		   regexp_replace(e->>'detail', '([Jj]ob) \d+', '\1 N', 'g')
	  FROM quota_sched.explain(pg_temp.id(job_name)) e
$$;

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('phh_env', '{"gpu": 8, "tpu": 2, "cpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('phh_queue', 'phh_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, queueing,
									 submit_role, budget)
VALUES ('phh_queue', 'phh_nlp', '{"gpu": 8, "tpu": 2}', 'RESERVE', 'STRICT', 'regress_phh_nlp',
		'{"tpu": 0}'),
	   ('phh_queue', 'phh_open', '{"cpu": 4}', 'RESERVE', 'STRICT', NULL, '{}');
-- the agent login serves the queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_phh_host', 'phh_queue');

SET ROLE regress_phh_host;
SELECT name, instances FROM quota_sched.agent_ready('phh_gpu', 'phh_queue', 'gpu', 4);
SELECT name, instances FROM quota_sched.agent_ready('phh_cpu', 'phh_queue', 'cpu', 2);
RESET ROLE;

------------------------------------------------------------------------
-- Ann's 8-gpu job comes first in phh_nlp; no live agent has more than 4
-- gpu, so it is held back (NO_AGENT_FITS), and Ben's 1-gpu jobs behind it
-- wait with it though 8 gpu are idle: the share is STRICT.  The same for
-- Cat's 3-cpu job in phh_open, with Dan's 1-cpu job behind it; phh_nlp's
-- tpu jobs are all held back by the budget.  The pass decides nothing, a
-- dry run shows nothing.
------------------------------------------------------------------------
SET ROLE regress_phh_ann;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_big', 'phh_queue', 'phh_nlp', 'gpu', 8);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_tpu_first', 'phh_queue', 'phh_nlp', 'tpu', 1);
RESET ROLE;
SET ROLE regress_phh_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_small_1', 'phh_queue', 'phh_nlp', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_small_2', 'phh_queue', 'phh_nlp', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_tpu_second', 'phh_queue', 'phh_nlp', 'tpu', 1);
RESET ROLE;
SET ROLE regress_phh_cat;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_cat_big', 'phh_queue', 'phh_open', 'cpu', 3);
RESET ROLE;
SET ROLE regress_phh_dan;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_dan_small', 'phh_queue', 'phh_open', 'cpu', 1);
RESET ROLE;
SELECT * FROM pg_temp.pass('phh_queue');
SELECT count(*) AS dry_run_rows FROM quota_sched.run_pass('phh_queue', dry_run => true);
SELECT * FROM pg_temp.jobs();

-- explain() of a later job names the job ahead of it that holds it back,
-- with that job's own reason; Ben sees Ann's job (his team's).  A budget
-- holds back every job of the unit: the later tpu job says its own reason.
SET ROLE regress_phh_ben;
SELECT * FROM pg_temp.why('phh_small_2', 'phh_big');
SELECT blocked_by, head_is FROM pg_temp.why('phh_tpu_second', 'phh_tpu_first');
RESET ROLE;
SELECT e->'strict_head'->'instance_count' AS head_instances,
	   e->'strict_head'->'largest_agent' AS largest_agent,
	   e->'strict_head'->>'detail' AS head_detail
  FROM quota_sched.explain(pg_temp.id('phh_small_1')) e;
-- The held-back job itself says its own reason.
SELECT blocked_by, detail FROM pg_temp.why('phh_big', NULL);
-- phh_open has no submit_role: Dan may not see Cat's job, so it is named
-- by its id only; an admin sees its name.
SET ROLE regress_phh_dan;
SELECT * FROM pg_temp.why('phh_dan_small', 'phh_cat_big');
SELECT count(*) AS dan_sees_cat FROM quota_sched.job WHERE name = 'phh_cat_big';
RESET ROLE;
SET ROLE regress_phh_ops;
SELECT head_name FROM pg_temp.why('phh_dan_small', 'phh_cat_big');
RESET ROLE;

------------------------------------------------------------------------
-- The runnable timeout (3.9) of a job no agent fits.  The queue gets
-- runnable_timeout = 20 minutes.  It counts from the job's NO_AGENT_FITS
-- reason (status_reason_at: when it was first held so), not from its
-- submission: phh_big submitted an hour ago but held for 10 minutes does
-- not fail.
------------------------------------------------------------------------
UPDATE quota_sched.job_queue SET runnable_timeout = '20 minutes' WHERE name = 'phh_queue';
SET session_replication_role = replica;
UPDATE quota_sched.job
   SET submitted_at = now() - interval '1 hour', queued_at = now() - interval '1 hour',
	   status_reason_at = now() - interval '10 minutes'
 WHERE name = 'phh_big';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('phh_queue');

-- 21 minutes held: the pass fails it, and Ben's jobs start in the same
-- pass.  phh_tpu_first, held as long by its budget, never times out.
SET session_replication_role = replica;
UPDATE quota_sched.job SET status_reason_at = now() - interval '21 minutes'
 WHERE name IN ('phh_big', 'phh_tpu_first');
RESET session_replication_role;
SELECT * FROM pg_temp.pass('phh_queue');
SELECT * FROM pg_temp.jobs();
SELECT j.name, e.from_state, e.to_state, e.reason, e.actor,
	   e.pass_id = (SELECT max(id) FROM quota_sched.pass_log WHERE job_queue = 'phh_queue')
	   AS pass_id_is_the_pass
  FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
 WHERE j.name = 'phh_big' AND e.from_state IS NOT NULL;
SELECT dispatched, preempted, requeued, failed
  FROM quota_sched.pass_log WHERE job_queue = 'phh_queue' ORDER BY id;
SET ROLE regress_phh_ann;
SELECT blocked_by, detail FROM pg_temp.why('phh_big', NULL);
RESET ROLE;

-- A job in its claim backoff (3.10) holds back the later ones alike: Ben's
-- phh_next_1 is in its backoff (set here as a claim timeout sets it).
SET ROLE regress_phh_ben;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_next_1', 'phh_queue', 'phh_nlp', 'gpu', 1);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('phh_next_2', 'phh_queue', 'phh_nlp', 'gpu', 1);
RESET ROLE;
SET session_replication_role = replica;
UPDATE quota_sched.job SET claim_requeues = 1, claim_backoff_until = now() + interval '5 minutes'
 WHERE name = 'phh_next_1';
RESET session_replication_role;
SELECT * FROM pg_temp.pass('phh_queue');
SET ROLE regress_phh_ann;
SELECT blocked_by, head_is, head_name, head_blocked_by
  FROM pg_temp.why('phh_next_2', 'phh_next_1');
RESET ROLE;

-- Cat's job has been held as long, but a 4-cpu agent is live now: it is
-- dispatched, not failed; Dan's job behind it starts too.
SET session_replication_role = replica;
UPDATE quota_sched.job SET status_reason_at = now() - interval '21 minutes'
 WHERE name = 'phh_cat_big';
RESET session_replication_role;
SET ROLE regress_phh_host;
SELECT name, instances FROM quota_sched.agent_ready('phh_cpu', 'phh_queue', 'cpu', 4);
RESET ROLE;
SELECT * FROM pg_temp.pass('phh_queue');
SELECT * FROM pg_temp.jobs() WHERE quota_share = 'phh_open';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'phh_queue';
RESET session_replication_role;
DELETE FROM quota_sched.agent_access WHERE login = 'regress_phh_host';
DELETE FROM quota_sched.job_queue WHERE name = 'phh_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'phh_env';
DROP ROLE regress_phh_ann, regress_phh_ben, regress_phh_cat, regress_phh_dan,
	regress_phh_host, regress_phh_ops, regress_phh_nlp;
