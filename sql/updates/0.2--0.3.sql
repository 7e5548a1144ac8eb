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
 * 0.3 changes no table yet.
 */
