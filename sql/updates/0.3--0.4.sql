/*
 * sql/updates/0.3--0.4.sql
 *		The changes of tables, data and catalog from 0.3 to 0.4.
 *
 * The build makes quota_sched--0.3--0.4.sql of this file followed by every
 * function source (sql/src: validation, triggers, the APIs, reporting,
 * metrics, chart), which recreate each function and view as 0.4 has it
 * (CREATE OR REPLACE).  So this file holds only what those cannot do:
 * ALTER TABLE and the data it needs, new tables (and the same change in
 * sql/src/tables.sql), DROP FUNCTION before a function's signature or
 * result type changes (and DROP VIEW before a view's column changes
 * type), ALTER POLICY.  test/t/006_upgrade.pl checks that an
 * updated database has the catalog of a fresh install, and that a
 * populated 0.3 database keeps what it had.
 */

/*
 * agent_access (issue 37, item 2; tables.sql has its comment): in 0.3
 * every agent login served every queue.  The update allows each login the
 * queues it served: those of the agents it registered and of the jobs it
 * claimed (agent_role), so that no fleet stops at the update; logins that
 * no longer exist are left out.  A registration's lease is at most
 * quota_sched.max_agent_lease (an hour by default) from 0.4 on: longer
 * ones are cut to an hour here.
 */
CREATE TABLE quota_sched.agent_access (
	login			name NOT NULL,
	job_queue		text
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	granted_at		timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT agent_access_unique UNIQUE NULLS NOT DISTINCT (login, job_queue)
);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent_access', '');
REVOKE ALL ON quota_sched.agent_access FROM PUBLIC;
GRANT SELECT, INSERT, DELETE ON quota_sched.agent_access TO quota_sched_admin;

INSERT INTO quota_sched.agent_access (login, job_queue)
SELECT DISTINCT u.login, u.job_queue
  FROM (SELECT a.login, a.job_queue FROM quota_sched.agent a
		UNION
		SELECT j.agent_role, j.job_queue FROM quota_sched.job j WHERE j.agent_role IS NOT NULL) u
 WHERE EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname = u.login);

UPDATE quota_sched.agent SET lease = interval '1 hour' WHERE lease > interval '1 hour';

/*
 * Budgets with a fraction of an instance-hour (issue 37, item 5;
 * scheduling.md 3.11): share_budget.budget_hours is numeric (was bigint),
 * a new column type, so the view goes, with config_review and metrics()
 * (BEGIN ATOMIC), which read it; the sources recreate all three, with
 * their privileges (to the extension's roles and pg_monitor: a privilege
 * granted on them to another role is to be granted again).  The table
 * keeps its CHECK: check_capacity_map admits fractions in a budget.
 */
DROP FUNCTION quota_sched.metrics();
DROP VIEW quota_sched.config_review;
DROP VIEW quota_sched.share_budget;
