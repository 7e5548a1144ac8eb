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
 * the history with its end.  report(..., output => TEXT) and
 * release(..., output => TEXT), at an attempt's end: the last lines of
 * its output, kept in job_attempt with the exit code (at most the last
 * 4096 bytes, cut at a character boundary; more than 65536 is refused,
 * 22001).  Agents of 0.2 call both without output.
 */
CREATE OR REPLACE FUNCTION quota_sched.report(job_id bigint, agent text, state text, reason text DEFAULT NULL,
	attempt integer DEFAULT NULL, exit_code integer DEFAULT NULL, output text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_report'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.release(job_id bigint, agent text, reason text DEFAULT NULL,
	output text DEFAULT NULL)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_release'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * attempt_started(job_id, agent, attempt, host, log_path, handle, port,
 * devices): the agent that holds the job says where its attempt runs: the
 * host, the file of its output there, (external launcher) its handle,
 * which a second call gives once the start command printed it, (rank 0's
 * agent) the rendezvous port, and the host's devices (GPU indexes or
 * UUIDs) it gave the part (a null keeps what the row has).  Returns the
 * attempt's row of job_attempt; null (a no-op)
 * for an attempt that is over.  The same checks as report(): another
 * login's job is refused (42501), a job the agent does not hold too
 * (55000).  port (0.4, doc/agents.md "Running a multi-host job"): the
 * rendezvous port that the agent holding rank 0 chose on its address,
 * 1 to 65535 (22023); from the agent of another rank it is refused
 * (55000); given again, the same port is a no-op and another one is
 * refused (55000).  A port given notifies quota_sched_peers (payload:
 * the job's id), as a claim of a part of a job placed on hosts does.
 */
CREATE OR REPLACE FUNCTION quota_sched.attempt_started(job_id bigint, agent text, attempt integer,
	host text, log_path text, handle text DEFAULT NULL, port integer DEFAULT NULL,
	devices text[] DEFAULT NULL)
RETURNS quota_sched.job_attempt
AS 'MODULE_PATHNAME', 'qs_attempt_started'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * job_peers(job_id, agent) (0.4, doc/agents.md "Running a multi-host
 * job"): the parts of the job's current placement, in rank order, for an
 * agent the job is placed on: each part's rank, agent, address,
 * instances, whether it is claimed, the rendezvous port (rank 0's, once
 * its agent gave it) and the attempt.  A job that is not placed on hosts
 * gives its one part, rank 0 on the agent that claimed it.  Only an agent
 * the job is placed on now may ask, as the login that claimed its part
 * (or, not claimed yet, the login it registered with), else 42501; an
 * admin may ask for any agent.  An unknown job is P0002.  It takes no
 * lock: agents waiting for their peers call it again and again.
 */
CREATE OR REPLACE FUNCTION quota_sched.job_peers(job_id bigint, agent text)
RETURNS TABLE (rank integer, peer_agent text, address text, instances integer, claimed boolean,
	port integer, attempt integer)
AS 'MODULE_PATHNAME', 'qs_job_peers'
LANGUAGE C STABLE CALLED ON NULL INPUT;

/*
 * safe_output(output): an attempt's output as it may be shown in a
 * terminal (src/job_attempt.c, QsSafeOutput): text, newlines and tabs as
 * they are, other control characters neutralised.  report() and release()
 * keep output so; the update to 0.4 made the output kept before so.  Not
 * granted: nobody needs to call it.
 */
CREATE OR REPLACE FUNCTION quota_sched.safe_output(output text)
RETURNS text
AS 'MODULE_PATHNAME', 'qs_safe_output'
LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
REVOKE ALL ON FUNCTION quota_sched.safe_output(text) FROM PUBLIC;

/*
 * agent_wait(): an agent waits for a dispatch to it, a stop of a job it
 * holds or a peer of a job of several parts, woken by the commit that made
 * it, without LISTEN (src/agents/agent_wait.c): every listener of the
 * database is woken at every commit that notifies.  With a lease, a pass
 * may give it, while it waits, the jobs it dispatches (claimed for the
 * agent in the pass; its next claim returns them).  A procedure: it
 * commits the CALL's transaction before it waits, so as to hold no
 * snapshot meanwhile.
 */
CREATE OR REPLACE PROCEDURE quota_sched.agent_wait(agent text, job_queue text, timeout_ms integer,
	INOUT woken text[] DEFAULT NULL, lease interval DEFAULT NULL)
AS 'MODULE_PATHNAME', 'qs_agent_wait'
LANGUAGE C;
REVOKE ALL ON PROCEDURE quota_sched.agent_wait(text, text, integer, text[], interval) FROM PUBLIC;
GRANT EXECUTE ON PROCEDURE quota_sched.agent_wait(text, text, integer, text[], interval)
	TO quota_sched_agent;

/*
 * claim_left(): whether this session's last claim took jobs and left
 * claimable ones behind for want of room (src/agents/agent_api.c,
 * ClaimAll), which also keeps the agent's dispatch pending for its next
 * agent_wait: an agent that reads it in the claim's statement claims again
 * as soon as it has room, without a wait first.
 */
CREATE OR REPLACE FUNCTION quota_sched.claim_left() RETURNS boolean
AS 'MODULE_PATHNAME', 'qs_claim_left'
LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION quota_sched.claim_left() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.claim_left() TO quota_sched_agent;

REVOKE ALL ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer, text),
	quota_sched.release(bigint, text, text, text),
	quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[]),
	quota_sched.job_peers(bigint, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.claim(text, text, text, integer, interval, integer, boolean),
	quota_sched.heartbeat(text, interval),
	quota_sched.report(bigint, text, text, text, integer, integer, text),
	quota_sched.release(bigint, text, text, text),
	quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[]),
	quota_sched.job_peers(bigint, text)
	TO quota_sched_agent;

/*
 * The agents the scheduler knows (scheduling.md 3.10, doc/agents.md).
 * agent_ready() registers or refreshes the calling login's agent and
 * returns its row; a name another login registered is refused (42501)
 * unless the caller is an admin.  Its labels and address (0.4,
 * doc/agents.md): bad ones are 22023 (src/agents/host_checks.c); an
 * agent of 0.3 calls it with four arguments, and gets no labels and its
 * name as address.  drain_agent() (admins) sets an agent DRAINING, or
 * ACTIVE again, and returns its row; an unknown agent raises
 * no_data_found (P0002).
 */
CREATE OR REPLACE FUNCTION quota_sched.agent_ready(agent text, job_queue text, capacity_unit text,
	instances integer DEFAULT NULL, labels jsonb DEFAULT '{}', address text DEFAULT NULL)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_agent_ready'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.drain_agent(agent text, draining boolean DEFAULT true)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_drain_agent'
LANGUAGE C CALLED ON NULL INPUT;

/*
 * forget_agent() (admins): removes an agent's registration and returns
 * the row it had; an unknown agent raises no_data_found (P0002).  The
 * jobs it holds are not touched: they run on, or lose their lease when
 * no heartbeat renews it.  An agent that calls agent_ready() again is
 * registered anew (if its login may still serve the queue).
 */
CREATE OR REPLACE FUNCTION quota_sched.forget_agent(agent text)
RETURNS quota_sched.agent
AS 'MODULE_PATHNAME', 'qs_forget_agent'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.agent_ready(text, text, text, integer, jsonb, text),
	quota_sched.drain_agent(text, boolean), quota_sched.forget_agent(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.agent_ready(text, text, text, integer, jsonb, text)
	TO quota_sched_admin, quota_sched_agent;
GRANT EXECUTE ON FUNCTION quota_sched.drain_agent(text, boolean), quota_sched.forget_agent(text)
	TO quota_sched_admin;

/*
 * agent_access (tables.sql): a row names a role that exists (42704
 * otherwise, rather than a row that allows nobody), and a row deleted
 * forgets the agents whose login it allowed their queue and no other row
 * still allows (a login that no longer exists is allowed nothing; an
 * admin's agents stay: admins act for any agent).  The
 * triggers are made here, after the table and the functions: CREATE OR
 * REPLACE TRIGGER, so that every update may run this file again.
 */
CREATE OR REPLACE FUNCTION quota_sched.agent_access_check()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = NEW.login) THEN
		RAISE EXCEPTION 'role "%" does not exist', NEW.login
			USING ERRCODE = 'undefined_object',
				  HINT = 'agent_access names the login of an agent (or a role its logins are members of).';
	END IF;
	RETURN NEW;
END
$$;

CREATE OR REPLACE FUNCTION quota_sched.agent_access_revoke()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	DELETE FROM quota_sched.agent a
	 WHERE NOT coalesce((
			SELECT l.rolsuper OR pg_catalog.pg_has_role(l.oid, 'quota_sched_admin', 'USAGE')
				   OR EXISTS (SELECT FROM quota_sched.agent_access x
								JOIN pg_catalog.pg_roles r ON r.rolname = x.login
							   WHERE (x.job_queue = a.job_queue OR x.job_queue IS NULL)
								 AND pg_catalog.pg_has_role(l.oid, r.oid, 'USAGE'))
			  FROM pg_catalog.pg_roles l WHERE l.rolname = a.login), false);
	RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.agent_access_check(), quota_sched.agent_access_revoke()
	FROM PUBLIC;

CREATE OR REPLACE TRIGGER agent_access_check BEFORE INSERT OR UPDATE ON quota_sched.agent_access
	FOR EACH ROW EXECUTE FUNCTION quota_sched.agent_access_check();
CREATE OR REPLACE TRIGGER agent_access_revoke AFTER DELETE OR UPDATE ON quota_sched.agent_access
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.agent_access_revoke();

/*
 * agents: each agent, whether it is live (its last agent_ready, claim or
 * heartbeat younger than its last lease, 60 seconds if it took none), and
 * the jobs and instances it holds (the lateral h, the one place that
 * counts them: SCHEDULED, STARTING, RUNNING with its name, and of jobs
 * placed on hosts the parts placed on it that have not ended, scheduling.md
 * 3.14; a part that ended while its peers stop holds its host for the
 * pass until they have, not here); then (0.4) its
 * labels, its address (its name when it gave none), since when it drains
 * (null: ACTIVE) and its free instances (instances less those it holds,
 * at least 0; null: no bound).  metrics() shows the same figures.  Admins
 * see every agent; an agent login sees those it registered.  The view
 * reads as its owner (the table has no privilege for agents), so it is a
 * security barrier: no function of the caller's sees a row before the
 * filter.
 */
CREATE OR REPLACE VIEW quota_sched.agents WITH (security_barrier = true) AS
SELECT a.name AS agent, a.login, a.job_queue, a.capacity_unit, a.instances, a.state,
	   a.last_seen + coalesce(a.lease, interval '60 seconds') > pg_catalog.now() AS live,
	   a.last_seen, h.held_jobs, h.held_instances,
	   a.labels, coalesce(a.address, a.name) AS address,
	   CASE WHEN a.state = 'DRAINING' THEN a.state_changed_at END AS draining_since,
	   CASE WHEN a.instances IS NOT NULL THEN greatest(a.instances - h.held_instances, 0) END
		   AS free_instances
  FROM quota_sched.agent a
	   CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS held_jobs, coalesce(pg_catalog.sum(x.n), 0) AS held_instances
		  FROM (SELECT j.instance_count AS n FROM quota_sched.job j
				 WHERE j.agent = a.name AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')
				   AND j.part_agents IS NULL
				UNION ALL
				SELECT p.instances FROM quota_sched.job_part p
				  JOIN quota_sched.job j ON j.id = p.job_id AND j.scheduled_at = p.placed_at
				 WHERE p.agent = a.name AND p.state IN ('PLACED', 'CLAIMED', 'RUNNING')
				   AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')) x) h
 WHERE a.login = CURRENT_USER
	OR pg_catalog.pg_has_role(CURRENT_USER, 'quota_sched_admin', 'USAGE');

REVOKE ALL ON quota_sched.agents FROM PUBLIC;
GRANT SELECT ON quota_sched.agents TO quota_sched_admin, quota_sched_agent;

/*
 * job_attempt_forget: the attempts of deleted jobs (prune(), an admin's
 * DELETE, a cascade from their share or queue) and of a TRUNCATE of jobs
 * go with them, as their history does (job_history_delete).  Triggers,
 * not a foreign key, which would refuse a TRUNCATE of job without CASCADE.
 * The triggers are made here, after the table (tables.sql, or the
 * update's own script) and the function: CREATE OR REPLACE TRIGGER, so
 * that every update may run this file again.
 */
CREATE OR REPLACE FUNCTION quota_sched.job_attempt_forget()
RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
	IF TG_OP = 'TRUNCATE' THEN
		DELETE FROM quota_sched.job_attempt;
		DELETE FROM quota_sched.job_part;
	ELSE
		DELETE FROM quota_sched.job_attempt a USING deleted_jobs d WHERE a.job_id = d.id;
		DELETE FROM quota_sched.job_part p USING deleted_jobs d WHERE p.job_id = d.id;
	END IF;
	RETURN NULL;
END
$$;

REVOKE ALL ON FUNCTION quota_sched.job_attempt_forget() FROM PUBLIC;

CREATE OR REPLACE TRIGGER job_attempt_delete AFTER DELETE ON quota_sched.job
	REFERENCING OLD TABLE AS deleted_jobs
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_attempt_forget();
CREATE OR REPLACE TRIGGER job_attempt_truncate AFTER TRUNCATE ON quota_sched.job
	FOR EACH STATEMENT EXECUTE FUNCTION quota_sched.job_attempt_forget();

/*
 * job_attempts (issue 21, a job's own output): "why did my job fail", each
 * attempt of a job (each part of it, rank, for a job placed on several
 * hosts: scheduling.md 3.14) with where it ran, its exit code and the last lines of
 * its output, beside the job's name, owner and state.  Read with the
 * reader's rights (security_invoker): row-level security on job and
 * job_attempt shows a user the attempts of their own and their teams'
 * jobs (owner, members of the share's submit_role), admins every one; of
 * another team's jobs nothing, not even that they exist.  port (0.4): the
 * rendezvous port of the attempt (rank 0's row; attempt_started).
 */
CREATE OR REPLACE VIEW quota_sched.job_attempts WITH (security_invoker = true) AS
SELECT a.job_id, j.name, j.owner, j.job_queue, j.quota_share, j.state, j.status_reason,
	   a.attempt, a.agent, a.host, a.log_path, a.handle, a.exit_code, a.output,
	   a.started_at, a.ended_at, a.rank, a.devices, a.port
  FROM quota_sched.job_attempt a
  JOIN quota_sched.job j ON j.id = a.job_id;

REVOKE ALL ON quota_sched.job_attempts FROM PUBLIC;
GRANT SELECT ON quota_sched.job_attempts TO quota_sched_admin, quota_sched_user;

/*
 * job_parts (scheduling.md 3.14): per job and attempt, one row per part:
 * where it is placed (rank, agent, address, instances), its state, the
 * exit code it reported and the rendezvous port.  A job of a unit that is
 * not placed has one part, rank 0, on the agent that claimed it: its
 * current attempt's, from the job (CLAIMED while STARTING, RUNNING while
 * RUNNING).  Read with the reader's rights: row-level security on job and
 * job_part shows the job's team and admins its parts, and an agent login
 * the parts placed on its agents.
 */
CREATE OR REPLACE VIEW quota_sched.job_parts WITH (security_invoker = true) AS
SELECT p.job_id, p.attempt, p.rank, p.agent, p.address, p.instances, p.state, p.exit_code,
	   p.port, p.lease_until, p.claimed_at, p.ended_at
  FROM quota_sched.job_part p
UNION ALL
SELECT j.id, 1 + j.failed_attempts + j.preemption_count + j.lease_losses, 0, j.agent, j.agent,
	   j.instance_count, CASE WHEN j.state = 'RUNNING' THEN 'RUNNING' ELSE 'CLAIMED' END,
	   NULL, NULL, j.lease_until, j.started_at, NULL
  FROM quota_sched.job j
 WHERE j.state IN ('STARTING', 'RUNNING') AND j.agent IS NOT NULL AND j.part_agents IS NULL;

REVOKE ALL ON quota_sched.job_parts FROM PUBLIC;
GRANT SELECT ON quota_sched.job_parts TO quota_sched_admin, quota_sched_user, quota_sched_agent;
