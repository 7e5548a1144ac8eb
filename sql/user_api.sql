/*
 * user_api.sql
 *		What submitters call besides INSERT and UPDATE of jobs (scheduling.md
 *		7): terminate a job, explain why it waits, list their team shares.
 *
 * A function source: the install script and every update script run it
 * (CREATE OR REPLACE), so this is the one text of these functions.
 */

/*
 * terminate(job_id, reason, array): ends a job (scheduling.md 7); with
 * array => true, of the job of index 0 of an array, every job of the
 * array that has not ended.
 */
CREATE OR REPLACE FUNCTION quota_sched.terminate(job_id bigint, reason text DEFAULT 'Terminated by user',
	"array" boolean DEFAULT false)
RETURNS quota_sched.job
AS 'MODULE_PATHNAME', 'qs_terminate'
LANGUAGE C CALLED ON NULL INPUT;

CREATE OR REPLACE FUNCTION quota_sched.explain(job_id bigint)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'qs_explain'
LANGUAGE C STABLE CALLED ON NULL INPUT
SET jit = off;

/*
 * set_priority(job_id, priority): the UPDATE of a job's priority that says
 * why it changed nothing (src/user_api.c): P0002 when the job does not
 * exist, 42501 when it is not the caller's or their team's; returns the
 * priority the job had.
 */
CREATE OR REPLACE FUNCTION quota_sched.set_priority(job_id bigint, priority integer)
RETURNS integer
AS 'MODULE_PATHNAME', 'qs_set_priority'
LANGUAGE C CALLED ON NULL INPUT;

REVOKE ALL ON FUNCTION quota_sched.terminate(bigint, text, boolean), quota_sched.explain(bigint),
	quota_sched.set_priority(bigint, integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.terminate(bigint, text, boolean), quota_sched.explain(bigint),
	quota_sched.set_priority(bigint, integer)
	TO quota_sched_admin, quota_sched_user;

/*
 * team_shares(): the caller's team shares, those whose submit_role the
 * caller is a member of (has its privileges, directly or through other
 * roles, with INHERIT): the test of a submission, which explain() and
 * terminate() apply in C too (src/user_api.c).  A submit_role naming no
 * role matches nothing.
 *
 * The policies job_user_read and job_user_reprioritise (tables.sql) call
 * it in an uncorrelated IN, which PostgreSQL runs once per statement as a
 * hashed subplan: each row then costs one hash probe, not a subquery.  Its
 * body is parsed here (BEGIN ATOMIC) and it runs with a pinned
 * search_path, so no search_path of the caller's can change what it means;
 * the SET clause also keeps it from being inlined into every policy that
 * uses it (smaller plans, less for JIT to compile).
 */
CREATE OR REPLACE FUNCTION quota_sched.team_shares()
RETURNS TABLE (job_queue text, quota_share text)
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
BEGIN ATOMIC
	SELECT s.job_queue, s.name
	  FROM quota_sched.quota_share s
	  JOIN pg_catalog.pg_roles r ON r.rolname = s.submit_role
	 WHERE pg_catalog.pg_has_role(r.oid, 'USAGE');
END;

REVOKE ALL ON FUNCTION quota_sched.team_shares() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION quota_sched.team_shares()
	TO quota_sched_admin, quota_sched_agent, quota_sched_user;
