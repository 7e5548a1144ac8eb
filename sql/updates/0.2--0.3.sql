/*
 * sql/updates/0.2--0.3.sql
 *		The changes of tables, data and catalog from 0.2 to 0.3.
 *
 * The build makes quota_sched--0.2--0.3.sql of this file followed by every
 * function source (sql/src: validation, triggers, the APIs, reporting,
 * metrics, chart), which recreate each function and view as 0.3 has it
 * (CREATE OR REPLACE).  So this file holds only what those cannot do:
 * ALTER TABLE and the data it needs, new tables (and the same change in
 * sql/src/tables.sql), DROP FUNCTION before a function's signature or
 * result type changes, ALTER POLICY.  test/t/006_upgrade.pl checks that an
 * updated database has the catalog of a fresh install.
 *
 * 0.3 adds the table of agents (SPEC 11.4; tables.sql has its comment).
 */

CREATE TABLE quota_sched.agent (
	name			text PRIMARY KEY,
	login			name NOT NULL,
	job_queue		text NOT NULL
		REFERENCES quota_sched.job_queue (name) ON DELETE CASCADE,
	capacity_unit	text NOT NULL,
	instances		integer,
	state			text NOT NULL DEFAULT 'ACTIVE',
	registered_at	timestamptz NOT NULL,
	last_seen		timestamptz NOT NULL,
	lease			interval,
	CONSTRAINT agent_name_check CHECK (octet_length(name) BETWEEN 1 AND 128),
	CONSTRAINT agent_instances_check CHECK (instances IS NULL OR instances >= 1),
	CONSTRAINT agent_state_check CHECK (state IN ('ACTIVE', 'DRAINING')),
	CONSTRAINT agent_lease_check CHECK (lease IS NULL OR lease > interval '0')
);
SELECT pg_catalog.pg_extension_config_dump('quota_sched.agent', '');
REVOKE ALL ON quota_sched.agent FROM PUBLIC;
GRANT SELECT ON quota_sched.agent TO quota_sched_admin;
