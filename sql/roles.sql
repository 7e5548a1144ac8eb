/*
 * roles.sql
 *		The three roles of the extension and their use of its schema.
 *
 * Roles are cluster-wide: they are created when missing, NOLOGIN, and
 * outlive the extension (pg_dumpall --globals-only dumps them).  Logins
 * are granted them (doc/operations.md).  Run by the install script only.
 */

DO $roles$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY ARRAY['quota_sched_admin', 'quota_sched_agent', 'quota_sched_user']
	LOOP
		IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r) THEN
			EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r);
		END IF;
	END LOOP;
END
$roles$;

REVOKE ALL ON SCHEMA quota_sched FROM PUBLIC;
GRANT USAGE ON SCHEMA quota_sched TO quota_sched_admin, quota_sched_agent, quota_sched_user;
