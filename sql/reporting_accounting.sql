/*
 * reporting_accounting.sql
 *		job_accounting: each job's accounting, from the job and its history.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of this view.
 */

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
