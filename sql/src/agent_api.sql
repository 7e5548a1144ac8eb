/*
 * agent_api.sql
 *		What launcher agents call (scheduling.md 5.2, doc/agents.md): claim
 *		dispatched jobs, renew their leases, report their states, release
 *		them.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.  A
 * change of a signature or result type needs a DROP FUNCTION in the
 * update's own script first (sql/updates/).
 */

/*
 * claim(..., start => true): the jobs claimed are RUNNING at once (an
 * agent that starts what it claims saves the round trip of the RUNNING
 * report).
 */
CREATE OR REPLACE FUNCTION quota_sched.claim(agent text, job_queue text, capacity_unit text DEFAULT NULL,
	max_jobs integer DEFAULT 1, lease interval DEFAULT '60 seconds',
	max_instances integer DEFAULT NULL, start boolean DEFAULT false)
RETURNS SETOF quota_sched.job
AS 'MODULE_PATHNAME', 'qs_claim'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * heartbeat() returns each job's lease as it is now: a job whose row
 * another transaction holds keeps the lease it had (the heartbeat does not
 * wait for the row), and an agent that counts on a renewed lease would
 * run the job past the moment a pass takes it back.
 */
CREATE OR REPLACE FUNCTION quota_sched.heartbeat(agent text, lease interval DEFAULT '60 seconds')
RETURNS TABLE (job_id bigint, stop_reason text, lease_until timestamptz)
AS 'MODULE_PATHNAME', 'qs_heartbeat'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * report(..., attempt => N): a report about an attempt that is over
 * (1 + failed_attempts + preemption_count + lease_losses moved on) changes nothing, so
 * that a report retried after a lost reply never lands on the job's next
 * attempt.  report(..., exit_code => N): the attempt's exit code, kept in
 * the history with its end.
 */
CREATE OR REPLACE FUNCTION quota_sched.report(job_id bigint, agent text, state text, reason text DEFAULT NULL,
	attempt integer DEFAULT NULL, exit_code integer DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_report'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.release(job_id bigint, agent text, reason text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_release'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer),
	quota_sched.release(bigint, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer),
	quota_sched.release(bigint, text, text)
	TO quota_sched_agent;

/*
 * The agents the scheduler knows (scheduling.md 3.10, doc/agents.md).
 * agent_ready() registers or refreshes the calling login's agent and
 * returns its row; a name another login registered is refused (42501)
 * unless the caller is an admin.  drain_agent() (admins) sets an agent
 * DRAINING, or ACTIVE again, and returns its row; an unknown agent raises
 * no_data_found (P0002).
 */
CREATE OR REPLACE FUNCTION quota_sched.agent_ready(agent text, job_queue text, capacity_unit text,
	instances integer DEFAULT NULL)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_agent_ready'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.drain_agent(agent text, draining boolean DEFAULT true)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_drain_agent'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.agent_ready(text, text, text, integer),
	quota_sched.drain_agent(text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.agent_ready(text, text, text, integer)
	TO quota_sched_admin, quota_sched_agent;
GRANT EXECUTE ON FUNCTION quota_sched.drain_agent(text, boolean) TO quota_sched_admin;

/*
 * agents: each agent, whether it is live (its last agent_ready, claim or
 * heartbeat younger than its last lease, 60 seconds if it took none), and
 * the jobs and instances it holds (SCHEDULED, STARTING, RUNNING with its
 * name).  Admins see every agent; an agent login sees those it
 * registered.  The view reads as its owner (the table has no privilege for
 * agents), so it is a security barrier: no function of the caller's sees
 * a row before the filter.
 */
CREATE OR REPLACE VIEW quota_sched.agents WITH (security_barrier = true) AS
SELECT a.name AS agent, a.login, a.job_queue, a.capacity_unit, a.instances, a.state,
	   a.last_seen + coalesce(a.lease, interval '60 seconds') > pg_catalog.now() AS live,
	   a.last_seen, h.held_jobs, h.held_instances
  FROM quota_sched.agent a
	   CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS held_jobs,
			   coalesce(pg_catalog.sum(j.instance_count), 0) AS held_instances
		  FROM quota_sched.job j
		 WHERE j.agent = a.name AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')) h
 WHERE a.login = CURRENT_USER
	OR pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_admin', 'USAGE');

REVOKE ALL ON quota_sched.agents FROM PUBLIC;
GRANT SELECT ON quota_sched.agents TO quota_sched_admin, quota_sched_agent;
