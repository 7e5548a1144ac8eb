/*
 * reporting_preemptions.sql
 *		The attempts preemption ended: how long an attempt ran
 *		(attempt_ran), whether its preemption came before its share's
 *		min_runtime (preempted_early: churn), and the view preemptions.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions and
 * this view.
 */

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
 * a preempted_for), from job_preemption, which the history trigger writes
 * beside that event: when, the victim's share, job, size and how long its
 * attempt had run since its dispatch, the preemptor's share and job, and
 * the reason.  Every role sees every row, as every role sees every share's
 * figures (doc/reference.md, "What a team sees of another"); a job's name
 * only where the caller may see the job (the policies of quota_sched.job:
 * admins and agents every job, a user their own and those of their teams'
 * shares).  The view reads as its owner, so that a team sees the
 * preemptions its jobs caused in other teams' shares.
 *
 * A row needs no other row (issue 42, item 7): looked up from the events
 * and the jobs row by row, a month of 50,000 preemptions among a million
 * jobs took 2.3 s, most of it planning the lookups with JIT.
 */
CREATE OR REPLACE VIEW quota_sched.preemptions WITH (security_barrier = true) AS
WITH caller AS (
	SELECT pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_admin', 'USAGE')
		   OR pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_agent', 'USAGE') AS sees_all,
		   ARRAY(SELECT t.job_queue || '/' || t.quota_share FROM quota_sched.team_shares() t)
			 AS teams)
SELECT p.at, p.job_queue, p.capacity_unit, p.instance_count, p.victim_share, p.victim_job,
	   CASE WHEN c.sees_all OR p.victim_owner = CURRENT_USER
				 OR p.job_queue || '/' || p.victim_share = ANY (c.teams)
			THEN p.victim_name END AS victim_name,
	   p.victim_ran, p.preemptor_share, p.preemptor_job,
	   CASE WHEN c.sees_all OR p.preemptor_owner = CURRENT_USER
				 OR p.job_queue || '/' || p.preemptor_share = ANY (c.teams)
			THEN p.preemptor_name END AS preemptor_name,
	   p.reason
  FROM quota_sched.job_preemption p CROSS JOIN caller c;

REVOKE ALL ON quota_sched.preemptions FROM PUBLIC;
GRANT SELECT ON quota_sched.preemptions
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;

REVOKE ALL ON FUNCTION quota_sched.attempt_ran(bigint, bigint, timestamptz),
	quota_sched.preempted_early(bigint, bigint, timestamptz, text, text) FROM PUBLIC;
