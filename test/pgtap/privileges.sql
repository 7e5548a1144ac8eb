-- What each role may do, table by table and column by column (SPEC 8).
BEGIN;
SELECT plan(22);

SELECT tables_are('quota_sched', ARRAY['service_environment', 'job_queue', 'quota_share',
	'job', 'job_event', 'pass_log']);

-- Configuration: admins write, everybody reads.
SELECT table_privs_are('quota_sched', 'service_environment', 'quota_sched_admin',
	ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']);
SELECT table_privs_are('quota_sched', 'job_queue', 'quota_sched_admin',
	ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']);
SELECT table_privs_are('quota_sched', 'quota_share', 'quota_sched_admin',
	ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']);
SELECT table_privs_are('quota_sched', 'quota_share', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'quota_share', 'quota_sched_agent', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'quota_share', 'public', ARRAY[]::text[]);

-- Jobs: read through row-level security; no table-wide writes for anyone.
SELECT table_privs_are('quota_sched', 'job', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job', 'quota_sched_agent', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job', 'public', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_event', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_event', 'public', ARRAY[]::text[]);

-- Submitters insert only their columns and update only priority.
SELECT column_privs_are('quota_sched', 'job', 'name', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT']);
SELECT column_privs_are('quota_sched', 'job', 'priority', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT', 'UPDATE']);
SELECT column_privs_are('quota_sched', 'job', 'state', 'quota_sched_user', ARRAY['SELECT']);
SELECT column_privs_are('quota_sched', 'job', 'owner', 'quota_sched_user', ARRAY['SELECT']);
SELECT column_privs_are('quota_sched', 'job', 'id', 'quota_sched_user', ARRAY['SELECT']);
SELECT column_privs_are('quota_sched', 'job', 'priority', 'quota_sched_agent', ARRAY['SELECT']);

-- The functions of CHECK constraints are executable by the roles that write
-- those tables.
SELECT function_privs_are('quota_sched', 'check_capacity_map', ARRAY['jsonb', 'text'],
	'quota_sched_admin', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'check_capacity_map', ARRAY['jsonb', 'text'],
	'public', ARRAY[]::text[]);

-- Row-level security policies.
SELECT policies_are('quota_sched', 'job', ARRAY['job_admin', 'job_agent_read', 'job_user_read',
	'job_user_submit', 'job_user_reprioritise']);
SELECT policies_are('quota_sched', 'job_event', ARRAY['job_event_admin_agent', 'job_event_user']);

SELECT * FROM finish();
ROLLBACK;
