-- What each role may do, table by table and column by column (scheduling.md 8).
BEGIN;
SELECT plan(124);

SELECT tables_are('quota_sched', ARRAY['service_environment', 'job_queue', 'quota_share',
	'job', 'job_event', 'pass_log', 'held_capacity', 'queue_status', 'usage_hourly', 'usage_rollup', 'usage_totals', 'config_event',
	'agent', 'agent_access', 'job_attempt', 'lending_hourly', 'held_change', 'borrow_memory',
	'job_part', 'host_held', 'host_held_change', 'agent_change', 'constrained_change',
	'job_preemption', 'share_change']);

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

-- Jobs: users read through row-level security; they may name any column in
-- INSERT, and the job triggers refuse all but their own columns; they may
-- UPDATE priority only (a column privilege: no table privilege lets them
-- LOCK TABLE job beyond ROW EXCLUSIVE).
SELECT table_privs_are('quota_sched', 'job', 'quota_sched_user', ARRAY['SELECT', 'INSERT']);
SELECT column_privs_are('quota_sched', 'job', 'priority', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT', 'UPDATE']);
SELECT column_privs_are('quota_sched', 'job', 'priority', 'quota_sched_admin',
	ARRAY['SELECT', 'INSERT', 'UPDATE']);
-- UPDATE on the other columns a submitter sets (0.3), so that the update
-- guard refuses a change of them saying that only priority may change
-- (job_update_guard.sql); the system's columns have none.
SELECT column_privs_are('quota_sched', 'job', 'instance_count', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT', 'UPDATE']);
SELECT column_privs_are('quota_sched', 'job', 'state', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT']);
SELECT table_privs_are('quota_sched', 'job', 'quota_sched_agent', ARRAY['SELECT']);
-- agent_role (0.2), the login that claimed a job: written by claim() only;
-- nobody may UPDATE it (the triggers refuse it in an INSERT).
SELECT col_type_is('quota_sched', 'job', 'agent_role', 'name', 'job.agent_role is a role name');
SELECT column_privs_are('quota_sched', 'job', 'agent_role', 'quota_sched_user',
	ARRAY['SELECT', 'INSERT']);
SELECT column_privs_are('quota_sched', 'job', 'agent_role', 'quota_sched_admin',
	ARRAY['SELECT', 'INSERT']);
SELECT column_privs_are('quota_sched', 'job', 'agent_role', 'quota_sched_agent', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job', 'public', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_event', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_event', 'public', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'pass_log', 'quota_sched_user', ARRAY['SELECT']);
-- The counters of held capacity are the job triggers' and the passes' alone.
SELECT table_privs_are('quota_sched', 'held_capacity', 'quota_sched_admin', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'held_capacity', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'held_capacity', 'quota_sched_user', ARRAY[]::text[]);
-- The hourly rollup of utilization: admins read it, rollup() writes it;
-- everyone reads utilization() (every share, for every role).
SELECT table_privs_are('quota_sched', 'usage_hourly', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'usage_hourly', 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'rollup', ARRAY['timestamptz'], 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'utilization', ARRAY['text', 'timestamptz', 'timestamptz', 'interval'],
	'quota_sched_user', ARRAY['EXECUTE']);
SELECT table_privs_are('quota_sched', 'usage_totals', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'usage_totals', 'quota_sched_user', ARRAY[]::text[]);
-- Who lent to whom (0.3): the same; everyone reads lending().
SELECT table_privs_are('quota_sched', 'lending_hourly', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'lending_hourly', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'lending_hourly', 'quota_sched_user', ARRAY[]::text[]);
-- fair share with memory (0.3): only the system writes them, admins read
SELECT table_privs_are('quota_sched', t, r, CASE WHEN r = 'quota_sched_admin' THEN ARRAY['SELECT'] ELSE ARRAY[]::text[] END)
  FROM unnest(ARRAY['held_change', 'borrow_memory']) AS t,
	   unnest(ARRAY['quota_sched_admin', 'quota_sched_agent', 'quota_sched_user']) AS r;
-- what the hosts hold and the generations of agents and of classes of
-- placement constraints (issue 39, item 6): only the system writes and
-- reads them; the preemptions it keeps, only the system and the view
-- preemptions (issue 42, item 7); the generations of shares (item 3)
SELECT table_privs_are('quota_sched', t, r, ARRAY[]::text[])
  FROM unnest(ARRAY['host_held', 'host_held_change', 'agent_change', 'constrained_change',
					'job_preemption', 'share_change']) AS t,
	   unnest(ARRAY['quota_sched_admin', 'quota_sched_agent', 'quota_sched_user']) AS r;
SELECT function_privs_are('quota_sched', 'lending', ARRAY['text', 'timestamptz', 'timestamptz', 'interval'],
	'quota_sched_user', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'lending_parts', ARRAY['text', 'timestamptz', 'timestamptz', 'interval'],
	'quota_sched_user', ARRAY[]::text[]);
-- metrics(): admins and monitoring (pg_monitor), not users or agents.
SELECT function_privs_are('quota_sched', 'metrics', ARRAY[]::text[], 'pg_monitor', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'metrics', ARRAY[]::text[], 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'metrics', ARRAY[]::text[], 'quota_sched_agent', ARRAY[]::text[]);
-- The jobs passes pass over (locked rows): admins read them, the passes write.
SELECT table_privs_are('quota_sched', 'queue_status', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'queue_status', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'queue_status', 'quota_sched_user', ARRAY[]::text[]);
-- The agents (0.3): admins read the table, agents its view (their own
-- rows), users neither; agent_ready() is the agents' and admins',
-- drain_agent() the admins'; only these functions write the table.
SELECT table_privs_are('quota_sched', 'agent', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'agent', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'agent', 'quota_sched_user', ARRAY[]::text[]);
-- agent_access (0.4): admins say which queues each agent login serves;
-- agents and users neither read nor write it; forget_agent() is the admins'.
SELECT table_privs_are('quota_sched', 'agent_access', 'quota_sched_admin', ARRAY['SELECT', 'INSERT', 'DELETE']);
SELECT table_privs_are('quota_sched', 'agent_access', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'agent_access', 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'forget_agent', ARRAY['text'], 'quota_sched_admin', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'forget_agent', ARRAY['text'], 'quota_sched_agent', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'forget_agent', ARRAY['text'], 'quota_sched_user', ARRAY[]::text[]);
-- job_part (0.4): read by everyone concerned through row-level security;
-- written by the pass and the agents' functions only.
SELECT table_privs_are('quota_sched', 'job_part', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_part', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_part', 'quota_sched_agent', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'agents', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'agents', 'quota_sched_agent', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'agents', 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'agent_ready', ARRAY['text', 'text', 'text', 'integer', 'jsonb', 'text'],
	'quota_sched_agent', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'agent_ready', ARRAY['text', 'text', 'text', 'integer', 'jsonb', 'text'],
	'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'drain_agent', ARRAY['text', 'boolean'],
	'quota_sched_admin', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'drain_agent', ARRAY['text', 'boolean'],
	'quota_sched_agent', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'drain_agent', ARRAY['text', 'boolean'],
	'public', ARRAY[]::text[]);
-- The attempts of jobs (0.3, issue 21): admins and users read the table
-- and its view job_attempts (users the rows of the jobs they see, through
-- row-level security), agents neither; nobody writes the table but
-- attempt_started(), report() and release(), the agents'.
SELECT table_privs_are('quota_sched', 'job_attempt', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_attempt', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_attempt', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_attempt', 'public', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_attempts', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_attempts', 'quota_sched_user', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'job_attempts', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_attempts', 'public', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'attempt_started',
	ARRAY['bigint', 'text', 'integer', 'text', 'text', 'text', 'integer', 'text[]'], 'quota_sched_agent', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'attempt_started',
	ARRAY['bigint', 'text', 'integer', 'text', 'text', 'text', 'integer', 'text[]'], 'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'attempt_started',
	ARRAY['bigint', 'text', 'integer', 'text', 'text', 'text', 'integer', 'text[]'], 'public', ARRAY[]::text[]);
-- job_peers() (0.4, a multi-host job's rendezvous): the agents'.
SELECT function_privs_are('quota_sched', 'job_peers', ARRAY['bigint', 'text'],
	'quota_sched_agent', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'job_peers', ARRAY['bigint', 'text'],
	'quota_sched_user', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'job_peers', ARRAY['bigint', 'text'],
	'public', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'job_attempt_forget', ARRAY[]::text[],
	'public', ARRAY[]::text[]);
SELECT ok((SELECT relrowsecurity FROM pg_class WHERE oid = 'quota_sched.job_attempt'::regclass),
	'job_attempt has row-level security');
SELECT ok((SELECT reloptions @> ARRAY['security_invoker=true'] FROM pg_class
			WHERE oid = 'quota_sched.job_attempts'::regclass),
	'job_attempts reads with the reader''s rights (row-level security applies)');
-- The history of the configuration: admins read it, its trigger alone
-- writes it (as the extension's owner).
SELECT table_privs_are('quota_sched', 'config_event', 'quota_sched_admin', ARRAY['SELECT']);
SELECT table_privs_are('quota_sched', 'config_event', 'quota_sched_agent', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'config_event', 'quota_sched_user', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'config_event', 'public', ARRAY[]::text[]);
SELECT sequence_privs_are('quota_sched', 'config_event_id_seq', 'quota_sched_admin', ARRAY[]::text[]);
SELECT function_privs_are('quota_sched', 'config_history', ARRAY[]::text[],
	'quota_sched_admin', ARRAY[]::text[]);
SELECT table_privs_are('quota_sched', 'job_id_seq', 'quota_sched_user', ARRAY[]::text[]);
SELECT ok(NOT has_table_privilege('quota_sched_user', 'quota_sched.job', 'DELETE'),
	'users cannot delete jobs');
-- Admins may delete jobs (a trigger lets only ended ones go, once the
-- rollup covers them: sql/prune.sql), and prune.
SELECT ok(has_table_privilege('quota_sched_admin', 'quota_sched.job', 'DELETE'),
	'admins may delete jobs');
SELECT ok(has_function_privilege('quota_sched_admin', 'quota_sched.prune(interval, integer)', 'EXECUTE')
		  AND NOT has_function_privilege('quota_sched_user', 'quota_sched.prune(interval, integer)', 'EXECUTE'),
	'admins may prune, users may not');
SELECT ok(NOT has_table_privilege('quota_sched_user', 'quota_sched.job', 'TRUNCATE'),
	'users cannot truncate jobs');
SELECT ok(NOT has_table_privilege('quota_sched_agent', 'quota_sched.job', 'INSERT'),
	'agents do not submit');

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
SELECT policies_are('quota_sched', 'job_attempt', ARRAY['job_attempt_admin', 'job_attempt_user']);
-- Users see their own jobs and those of their teams' shares (team_shares(),
-- which the policies call as the user); job_event_user follows job's
-- policies.
SELECT function_privs_are('quota_sched', 'team_shares', ARRAY[]::text[],
	'quota_sched_user', ARRAY['EXECUTE']);
SELECT function_privs_are('quota_sched', 'team_shares', ARRAY[]::text[],
	'public', ARRAY[]::text[]);
SELECT ok(pg_get_expr(p.e, 'quota_sched.job'::regclass) LIKE '%team_shares()%',
	format('policy %s admits the share''s team', p.what))
  FROM (SELECT polname || ' USING', polqual FROM pg_policy
		 WHERE polrelid = 'quota_sched.job'::regclass
		   AND polname IN ('job_user_read', 'job_user_reprioritise')
		UNION ALL
		SELECT polname || ' WITH CHECK', polwithcheck FROM pg_policy
		 WHERE polrelid = 'quota_sched.job'::regclass AND polname = 'job_user_reprioritise')
	   AS p(what, e)
 ORDER BY p.what;

SELECT * FROM finish();
ROLLBACK;
