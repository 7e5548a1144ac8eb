-- Bad inputs at every SQL function (issue 20, "a fresh count"): every
-- function of schema quota_sched that an admin, an agent, a user or
-- pg_monitor may call, taken from pg_proc (so that a new function is not
-- forgotten: one without an entry in pg_temp.bi_sample below is listed, and
-- this test fails), called with a valid sample of its arguments, then for
-- each argument with bad values in its place (NULL; per type: extremes,
-- zero, negatives, 2^31, huge intervals and interval overflow, infinite
-- timestamps, 1 MB of text, control characters and odd bytes, empty and
-- blank strings, names of nothing, JSON of the wrong shape, a value of the
-- wrong type), the others valid: as the superuser and as a member of the
-- least of the extension's roles that may call it.
--
-- Each attempt is a statement of its own (\gexec), so that
-- statement_timeout bounds it, and runs in a subtransaction that is always
-- rolled back: an error is recorded with its SQLSTATE, a call that goes
-- through is recorded as accepted (and whether it changed any table), then
-- undone, so that every attempt starts from the same state.  Accepted
-- calls are listed with the reason each is right (pg_temp.bi_justified),
-- or as a finding; errors of class XX and timeouts are listed too.  The
-- tables' contents (a fingerprint of every table of the schema, read as
-- the superuser) are the same after the sweep as before.  Nothing printed
-- depends on ids, times or the tests run before.
\i test/regress/include/helpers.sql
SET TimeZone = 'UTC';

-- The fixture: a queue with two shares, a team and its user, an agent.
CREATE ROLE regress_bi_admin IN ROLE quota_sched_admin;
CREATE ROLE regress_bi_agent IN ROLE quota_sched_agent;
-- the agent logins serve every queue (agent_access, doc/agents.md)
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_bi_agent', NULL);
CREATE ROLE regress_bi_user IN ROLE quota_sched_user;
CREATE ROLE regress_bi_monitor IN ROLE pg_monitor;
CREATE ROLE regress_bi_team;
GRANT regress_bi_team TO regress_bi_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('bi_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('bi_queue', 'bi_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('bi_queue', 'bi_a', '{"gpu": 2}', 'LEND_AND_BORROW', 'regress_bi_team'),
	   ('bi_queue', 'bi_b', '{"gpu": 2}', 'LEND', NULL);
-- bi_held: RUNNING, claimed by the agent; bi_done: SUCCEEDED; bi_sched:
-- SCHEDULED, unclaimed; bi_wait: RUNNABLE.  All the user's.
SET ROLE regress_bi_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bi_held', 'bi_queue', 'bi_a', 'gpu'), ('bi_done', 'bi_queue', 'bi_a', 'gpu');
RESET ROLE;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('bi_queue');
SET ROLE regress_bi_agent;
SELECT count(*) AS claimed FROM quota_sched.claim('bi_agent', 'bi_queue', max_jobs => 2, start => true);
SELECT state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'bi_done'),
									 'bi_agent', 'SUCCEEDED', exit_code => 0);
RESET ROLE;
SET ROLE regress_bi_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bi_sched', 'bi_queue', 'bi_a', 'gpu');
RESET ROLE;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('bi_queue');
SET ROLE regress_bi_user;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('bi_wait', 'bi_queue', 'bi_a', 'gpu');
RESET ROLE;
-- The agent is registered (agent_ready); bi_other_agent is the
-- superuser's, another login's for the agent.
SET ROLE regress_bi_agent;
SELECT name, login, state FROM quota_sched.agent_ready('bi_agent', 'bi_queue', 'gpu', 4);
RESET ROLE;
SELECT name, state FROM quota_sched.agent_ready('bi_other_agent', 'bi_queue', 'gpu');
SELECT name, state, agent FROM quota_sched.job WHERE job_queue = 'bi_queue' ORDER BY name;
SELECT id AS held_id FROM quota_sched.job WHERE name = 'bi_held' \gset
SELECT id AS done_id FROM quota_sched.job WHERE name = 'bi_done' \gset
SELECT id AS sched_id FROM quota_sched.job WHERE name = 'bi_sched' \gset
SELECT id AS wait_id FROM quota_sched.job WHERE name = 'bi_wait' \gset

-- The callable functions: EXECUTE for one of the extension's roles or
-- pg_monitor (which has USAGE on the schema).  Trigger functions, which
-- PUBLIC may execute, are tried apart: called directly, each must refuse.
CREATE TEMP TABLE bi_callable AS
SELECT p.oid::regprocedure AS fn, p.prokind, p.prorettype = 'trigger'::regtype AS is_trigger
  FROM pg_proc p
 WHERE p.pronamespace = 'quota_sched'::regnamespace
   AND (has_function_privilege('quota_sched_admin', p.oid, 'EXECUTE')
		OR has_function_privilege('quota_sched_agent', p.oid, 'EXECUTE')
		OR has_function_privilege('quota_sched_user', p.oid, 'EXECUTE')
		OR has_function_privilege('pg_monitor', p.oid, 'EXECUTE'));

-- A valid sample of the arguments of each callable function (SQL
-- expressions), and the least role that may call it.  accepted_state: the
-- SQLSTATE that means the call went through (prune() commits, which it
-- cannot do in the attempt's transaction block: refusing to start there,
-- 25001, after its checks of the arguments, means they were taken).
-- extras: bad values of one argument beyond those of its type, as [label,
-- expression] pairs.
CREATE TEMP TABLE bi_sample (
	fn regprocedure PRIMARY KEY,
	role text NOT NULL,
	args text[] NOT NULL,
	accepted_state text,
	extras jsonb NOT NULL DEFAULT '{}'
);
INSERT INTO bi_sample (fn, role, args, accepted_state, extras) VALUES
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'regress_bi_agent',
	 ARRAY[$$'bi_agent'$$, $$'bi_queue'$$, $$'gpu'$$, '1', $$'60 seconds'$$, '2', 'false'], NULL,
	 $${"capacity_unit": [["unit unknown in the queue", "'cpu'"]]}$$),
	('quota_sched.heartbeat(text, interval)', 'regress_bi_agent',
	 ARRAY[$$'bi_agent'$$, $$'60 seconds'$$], NULL, '{}'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'regress_bi_agent',
	 ARRAY[$$'bi_agent'$$, $$'bi_queue'$$, '0', 'NULL', $$'60 seconds'$$], NULL, '{}'),
	('quota_sched.claim_left()', 'regress_bi_agent', '{}', NULL, '{}'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'regress_bi_agent',
	 ARRAY[$$'bi_agent'$$, $$'bi_queue'$$, $$'gpu'$$, '4', $$'{"rack": "r1"}'$$, $$'10.0.0.7'$$], NULL,
	 $${"capacity_unit": [["unit unknown in the queue", "'cpu'"]],
		"agent": [["another login's agent", "'bi_other_agent'"]]}$$),
	('quota_sched.drain_agent(text, boolean)', 'regress_bi_admin',
	 ARRAY[$$'bi_agent'$$, 'true'], NULL, '{}'),
	('quota_sched.forget_agent(text)', 'regress_bi_admin', ARRAY[$$'bi_agent'$$], NULL, '{}'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'regress_bi_agent',
	 ARRAY[:'held_id', $$'bi_agent'$$, $$'SUCCEEDED'$$, $$'done'$$, '1', '0', $$E'the last\nlines'$$], NULL,
	 jsonb_build_object(
		'job_id', jsonb_build_array(jsonb_build_array('a RUNNABLE job', :'wait_id'),
									jsonb_build_array('an ended job', :'done_id'),
									jsonb_build_array('an unclaimed job', :'sched_id')),
		'agent', $$[["another agent", "'bi_other_agent'"]]$$::jsonb,
		'state', $$[["lowercase", "'succeeded'"], ["STOPPED without a stop", "'STOPPED'"],
					["RELEASED", "'RELEASED'"]]$$::jsonb,
		'attempt', $$[["an attempt that is over", "2"]]$$::jsonb)),
	('quota_sched.release(bigint, text, text, text)', 'regress_bi_agent',
	 ARRAY[:'held_id', $$'bi_agent'$$, $$'released'$$, $$'partial output'$$], NULL,
	 jsonb_build_object(
		'job_id', jsonb_build_array(jsonb_build_array('a RUNNABLE job', :'wait_id'),
									jsonb_build_array('an ended job', :'done_id')),
		'agent', $$[["another agent", "'bi_other_agent'"]]$$::jsonb)),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'regress_bi_agent',
	 ARRAY[:'held_id', $$'bi_agent'$$, '1', $$'gpu-host-1'$$, $$'/logs/1/attempt-1.log'$$,
		   $$'arn:aws:sagemaker:job/bi-1'$$, '29500', $$ARRAY['0', 'GPU-8d3f']$$], NULL,
	 jsonb_build_object(
		'job_id', jsonb_build_array(jsonb_build_array('a RUNNABLE job', :'wait_id'),
									jsonb_build_array('an ended job', :'done_id')),
		'agent', $$[["another agent", "'bi_other_agent'"]]$$::jsonb,
		'attempt', $$[["an attempt that is over", "2"]]$$::jsonb)),
	('quota_sched.job_peers(bigint, text)', 'regress_bi_agent',
	 ARRAY[:'held_id', $$'bi_agent'$$], NULL,
	 jsonb_build_object(
		'job_id', jsonb_build_array(jsonb_build_array('a RUNNABLE job', :'wait_id'),
									jsonb_build_array('an ended job', :'done_id')),
		'agent', $$[["another agent", "'bi_other_agent'"]]$$::jsonb)),
	('quota_sched.terminate(bigint, text, boolean)', 'regress_bi_user',
	 ARRAY[:'wait_id', $$'stop it'$$, 'false'], NULL,
	 jsonb_build_object('job_id', jsonb_build_array(jsonb_build_array('an ended job', :'done_id')))),
	('quota_sched.set_priority(bigint, integer)', 'regress_bi_user',
	 ARRAY[:'wait_id', '5'], NULL,
	 jsonb_build_object('job_id', jsonb_build_array(jsonb_build_array('an ended job', :'done_id')))),
	('quota_sched.explain(bigint)', 'regress_bi_user', ARRAY[:'wait_id'], NULL, '{}'),
	('quota_sched.queue_snapshot(text, integer)', 'regress_bi_user',
	 ARRAY[$$'bi_queue'$$, '10'], NULL, $${"max_jobs": [["above the horizon", "10001"]]}$$),
	('quota_sched.team_shares()', 'regress_bi_user', '{}', NULL, '{}'),
	('quota_sched.run_pass(text, boolean)', 'regress_bi_admin', ARRAY[$$'bi_queue'$$, 'false'], NULL, '{}'),
	('quota_sched.held_capacity_drift()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.host_held_drift()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.host_cache_reloads()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.host_held_reads()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.share_config_reads()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.held_capacity_reads()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.runnable_heads_reads()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.misconfiguration_skips()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.core_words()', 'regress_bi_user', '{}', NULL, '{}'),
	('quota_sched.attempt_deadline(timestamp with time zone, interval)', 'regress_bi_user',
	 ARRAY['now()', $$'1 hour'$$], NULL, '{}'),
	('quota_sched.holds(text)', 'regress_bi_user', ARRAY[$$'RUNNING'$$], NULL, '{}'),
	('quota_sched.allowed(bigint, text, integer)', 'regress_bi_user',
	 ARRAY['2', $$'LEND_AND_BORROW'$$, '50'], NULL, '{}'),
	('quota_sched.lendable(bigint, text, text, integer)', 'regress_bi_user',
	 ARRAY['4', $$'LEND'$$, $$'ENABLED'$$, '50'], NULL, '{}'),
	('quota_sched.over_budget(double precision, double precision)', 'regress_bi_user',
	 ARRAY['1800', '0.5'], NULL, '{}'),
	('quota_sched.utilization(text, timestamp with time zone, timestamp with time zone, interval)',
	 'regress_bi_user', ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'1 hour'$$], NULL,
	 $${"from": [["a century back", "now() - interval '100 years'"]]}$$),
	('quota_sched.lending(text, timestamp with time zone, timestamp with time zone, interval)',
	 'regress_bi_user', ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'1 hour'$$], NULL,
	 $${"from": [["a century back", "now() - interval '100 years'"]]}$$),
	('quota_sched.utilization_svg(text, timestamp with time zone, timestamp with time zone, interval)',
	 'regress_bi_user', ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'1 hour'$$], NULL,
	 $${"from": [["a century back", "now() - interval '100 years'"]]}$$),
	('quota_sched.rollup(timestamp with time zone)', 'regress_bi_admin', ARRAY['now()'], NULL,
	 $${"up_to": [["tomorrow", "now() + interval '1 day'"]]}$$),
	('quota_sched.prune(interval, integer)', 'regress_bi_admin', ARRAY[$$'30 days'$$, '100'], '25001', '{}'),
	('quota_sched.metrics()', 'regress_bi_monitor', '{}', NULL, '{}'),
	('quota_sched.replay(text, timestamp with time zone, timestamp with time zone, jsonb)',
	 'regress_bi_admin', ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'{}'$$], NULL,
	 $${"changes": [["a bad capacity", "'{\"quota_share\": {\"bi_a\": {\"capacity_limits\": {\"gpu\": -1}}}}'"],
					["an unknown column", "'{\"job_queue\": {\"colour\": 1}}'"]]}$$),
	('quota_sched.replay_jobs(text, timestamp with time zone, timestamp with time zone, jsonb, text, integer)',
	 'regress_bi_admin', ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'{}'$$, 'NULL', '20'],
	 NULL, $${"max_jobs": [["above the most", "10001"]]}$$),
	('quota_sched.in_transaction_block()', 'regress_bi_admin', '{}', NULL, '{}'),
	('quota_sched.pass_stats()', 'regress_bi_monitor', '{}', NULL, '{}'),
	('quota_sched.worker_stats()', 'regress_bi_monitor', '{}', NULL, '{}'),
	('quota_sched.xml_escape(text)', 'regress_bi_user', ARRAY[$$'a < b'$$], NULL, '{}'),
	('quota_sched.svg_number(double precision, integer)', 'regress_bi_user', ARRAY['1.25', '1'], NULL, '{}'),
	('quota_sched.svg_frame(timestamp with time zone, timestamp with time zone, interval)', 'regress_bi_user',
	 ARRAY[$$now() - interval '2 hours'$$, 'now()', $$'1 hour'$$], NULL, '{}'),
	('quota_sched.svg_chart(text, timestamp with time zone, timestamp with time zone, interval, timestamp with time zone[], text[], text[], double precision[], double precision[], double precision[])',
	 'regress_bi_user',
	 ARRAY[$$'bi_queue'$$, $$now() - interval '2 hours'$$, 'now()', $$'1 hour'$$,
		   $$ARRAY[now() - interval '2 hours']$$, $$ARRAY['bi_a']$$, $$ARRAY['gpu']$$, 'ARRAY[7200::float8]',
		   'ARRAY[3600::float8]', 'ARRAY[0::float8]'], NULL, '{}'),
	('quota_sched.check_name(text, text)', 'regress_bi_admin', ARRAY[$$'bi_x'$$, $$'job queue'$$], NULL, '{}'),
	('quota_sched.check_capacity_map(jsonb, text)', 'regress_bi_admin',
	 ARRAY[$$'{"gpu": 1}'$$, $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_budget(jsonb, text)', 'regress_bi_admin',
	 ARRAY[$$'{"gpu": 0.5}'$$, $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_state(text, text)', 'regress_bi_admin', ARRAY[$$'ENABLED'$$, $$'job queue bi_x'$$], NULL, '{}'),
	('quota_sched.check_strategy(text, integer, text)', 'regress_bi_admin',
	 ARRAY[$$'LEND_AND_BORROW'$$, '-1', $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_runnable_timeout(interval, text)', 'regress_bi_admin',
	 ARRAY[$$'1 hour'$$, $$'job queue bi_x'$$], NULL, '{}'),
	('quota_sched.check_claim_timeout(interval, text)', 'regress_bi_admin',
	 ARRAY[$$'5 minutes'$$, $$'job queue bi_x'$$], NULL, '{}'),
	('quota_sched.check_fence_grace(interval, text)', 'regress_bi_admin',
	 ARRAY[$$'10 seconds'$$, $$'job queue bi_x'$$], NULL, '{}'),
	('quota_sched.check_choice(text, text, text)', 'regress_bi_admin',
	 ARRAY[$$'FIFO'$$, $$'borrow_order'$$, $$'job queue bi_x'$$], NULL, '{}'),
	('quota_sched.check_lend_limit(text, integer, text)', 'regress_bi_admin',
	 ARRAY[$$'LEND'$$, '50', $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_min_runtime(interval, text)', 'regress_bi_admin',
	 ARRAY[$$'1 hour'$$, $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_weight(integer, text)', 'regress_bi_admin', ARRAY['3', $$'quota share bi_x'$$], NULL, '{}'),
	('quota_sched.check_fair_half_life(interval, text, text)', 'regress_bi_admin',
	 ARRAY[$$'1 day'$$, $$'FAIR'$$, $$'job queue bi_x'$$], NULL,
	 $${"borrow_order": [["FIFO", "'FIFO'"]], "value": [["30 seconds", "'30 seconds'"]]}$$),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 'regress_bi_user', ARRAY['3600', $$now() - interval '1 hour'$$, '2', 'now()', $$'MONTH'$$], NULL,
	 $${"period": [["lowercase", "'month'"]]}$$),
	('quota_sched.period_start(timestamp with time zone, text)', 'regress_bi_user',
	 ARRAY['now()', $$'WEEK'$$], NULL, $${"period": [["lowercase", "'week'"]]}$$),
	('quota_sched.period_end(timestamp with time zone, text)', 'regress_bi_user',
	 ARRAY['now()', $$'DAY'$$], NULL, $${"period": [["lowercase", "'day'"]]}$$),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 'regress_bi_user', ARRAY['7200', $$now() - interval '1 hour'$$, '2', 'now()', $$'6 hours'$$], NULL,
	 $${"half_life": [["30 seconds", "'30 seconds'"], ["400 days", "'400 days'"]]}$$);

-- Every callable function has a sample, and every sample a callable
-- function, of as many arguments: none listed here.
SELECT c.fn AS callable_without_sample FROM bi_callable c
 WHERE NOT c.is_trigger AND NOT EXISTS (SELECT FROM bi_sample s WHERE s.fn = c.fn);
SELECT s.fn AS sample_of_no_callable_function FROM bi_sample s
 WHERE NOT EXISTS (SELECT FROM bi_callable c WHERE c.fn = s.fn AND NOT c.is_trigger)
	OR cardinality(s.args) <> (SELECT pronargs FROM pg_proc WHERE oid = s.fn);

-- The bad values of each type: a label, an SQL expression, and whether it
-- is cast to the argument's type (a value of the wrong type is not).
CREATE TEMP TABLE bi_bad (type text, label text, expr text, cast_it boolean DEFAULT true);
INSERT INTO bi_bad (type, label, expr, cast_it) VALUES
	('*', 'NULL', 'NULL', true),
	('text', 'empty', $$''$$, true),
	('text', 'blank', $$' '$$, true),
	('text', 'a name of nothing', $$'bi_no_such_thing'$$, true),
	('text', '129 characters', $$repeat('n', 129)$$, true),
	('text', '1 MB', $$repeat('x', 1048576)$$, true),
	('text', 'control characters', $$E'bi\x01\x1b[31m\x7f\n'$$, true),
	('text', 'odd bytes', $$E'bi\xc3\x28\xff'$$, true),
	('text', 'non-ASCII', $$U&'bi\00e9\+01F600'$$, true),
	('text', 'quotes and SQL', $$'x''; DROP TABLE quota_sched.job; --'$$, true),
	('text', 'wrong type (integer)', '42', false),
	('bigint', 'zero', '0', true),
	('bigint', '-1', '-1', true),
	('bigint', '2^31', '2147483648', true),
	('bigint', 'max', '9223372036854775807', true),
	('bigint', 'min', '-9223372036854775808', true),
	('bigint', 'out of range', '9223372036854775808', true),
	('bigint', 'wrong type (interval)', $$interval '1 hour'$$, false),
	('integer', 'zero', '0', true),
	('integer', '-1', '-1', true),
	('integer', 'max', '2147483647', true),
	('integer', 'min', '-2147483648', true),
	('integer', '2^31', '2147483648', true),
	('integer', 'wrong type (interval)', $$interval '1 hour'$$, false),
	('interval', 'zero', $$'0'$$, true),
	('interval', 'negative', $$'-1 second'$$, true),
	('interval', 'a microsecond', $$'1 microsecond'$$, true),
	('interval', 'a month', $$'1 month'$$, true),
	('interval', '178000000 years', $$'178000000 years'$$, true),
	('interval', '-178000000 years', $$'-178000000 years'$$, true),
	('interval', '1000000000 years', $$'1000000000 years'$$, true),
	('interval', 'overflow', $$interval '178000000 years' * 2$$, true),
	('interval', 'max microseconds', $$'2562047788 hours 54.775807 seconds'$$, true),
	('interval', 'wrong type (integer)', '42', false),
	('timestamp with time zone', 'infinity', $$'infinity'$$, true),
	('timestamp with time zone', '-infinity', $$'-infinity'$$, true),
	('timestamp with time zone', 'the last', $$'294276-12-31 23:59:59.999999+00'$$, true),
	('timestamp with time zone', 'the first', $$'4714-11-24 00:00:00+00 BC'$$, true),
	('timestamp with time zone', 'beyond the last', $$'294277-01-01 00:00:00+00'$$, true),
	('timestamp with time zone', 'epoch', $$'epoch'$$, true),
	('timestamp with time zone', 'in 10000 years', $$now() + interval '10000 years'$$, true),
	('timestamp with time zone', 'wrong type (integer)', '42', false),
	('boolean', 'wrong type (integer)', '42', false),
	('jsonb', 'an array', $$'[]'$$, true),
	('jsonb', 'a string', $$'"x"'$$, true),
	('jsonb', 'JSON null', $$'null'$$, true),
	('jsonb', 'empty object', $$'{}'$$, true),
	('jsonb', 'a string capacity', $$'{"gpu": "3"}'$$, true),
	('jsonb', 'a negative capacity', $$'{"gpu": -1}'$$, true),
	('jsonb', 'a huge capacity', $$'{"gpu": 1e1000}'$$, true),
	('jsonb', 'a fraction', $$'{"gpu": 1.5}'$$, true),
	('jsonb', 'a bad unit', $$'{"g p u": 1}'$$, true),
	('jsonb', 'nested 10000 deep', $$repeat('[', 10000) || repeat(']', 10000)$$, true),
	('jsonb', '1 MB', $$jsonb_build_object('gpu', repeat('x', 1048576))$$, true),
	('jsonb', 'malformed', $$'{'$$, true),
	('jsonb', 'wrong type (integer)', '42', false),
	('double precision', 'NaN', $$'NaN'$$, true),
	('double precision', 'Infinity', $$'Infinity'$$, true),
	('double precision', '-Infinity', $$'-Infinity'$$, true),
	('double precision', '1e308', '1e308', true),
	('double precision', '-1e308', '-1e308', true),
	('double precision', 'tiny', '1e-308', true),
	('double precision', 'wrong type (text)', $$text 'x'$$, false);

-- The attempts: per function, argument and bad value, as the superuser
-- (role none) and as the sample's role.  before_call: the value cannot be
-- made (or has the wrong type), so PostgreSQL refuses the call before the
-- function runs.
CREATE TEMP TABLE bi_attempt (
	id serial PRIMARY KEY,
	fn regprocedure,
	argname text,
	label text,
	role text,
	stmt text,
	before_call boolean,
	accepted_state text,
	sqlstate text,
	message text,
	stored boolean
);
CREATE FUNCTION pg_temp.bi_call(s bi_sample, a text[]) RETURNS text LANGUAGE sql AS $$
	SELECT CASE WHEN p.prokind = 'p' THEN 'CALL ' || s.fn::regproc::text || '(' || array_to_string(a, ', ') || ')'
				ELSE 'SELECT count(*) FROM ' || s.fn::regproc::text || '(' || array_to_string(a, ', ') || ')' END
	  FROM pg_proc p WHERE p.oid = s.fn
$$;
-- Whether a value can be made of a type (its expression evaluated and cast).
CREATE FUNCTION pg_temp.bi_makes(expr text, type text) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE format('SELECT (%s)::%s', expr, type);
	RETURN true;
EXCEPTION WHEN OTHERS THEN
	RETURN false;
END
$$;
CREATE TEMP TABLE bi_value AS
SELECT s.fn, i AS argno, coalesce(p.proargnames[i], '$' || i) AS argname,
	   format_type(p.proargtypes[i - 1], NULL) AS type, v.label, v.expr, v.cast_it
  FROM bi_sample s JOIN pg_proc p ON p.oid = s.fn,
	   generate_series(1, p.pronargs) AS i,
	   LATERAL (SELECT b.label, b.expr, b.cast_it FROM bi_bad b
				 WHERE b.type IN ('*', format_type(p.proargtypes[i - 1], NULL))
				UNION ALL
				SELECT x ->> 0, x ->> 1, true
				  FROM jsonb_array_elements(s.extras -> coalesce(p.proargnames[i], '$' || i)) AS x) AS v;
INSERT INTO bi_attempt (fn, argname, label, role, stmt, before_call, accepted_state)
SELECT v.fn, v.argname, v.label, r.role,
	   pg_temp.bi_call(s, s.args[:v.argno - 1]
						  || CASE WHEN v.cast_it THEN format('(%s)::%s', v.expr, v.type) ELSE v.expr END
						  || s.args[v.argno + 1:]),
	   NOT v.cast_it OR NOT pg_temp.bi_makes(v.expr, v.type), s.accepted_state
  FROM bi_value v JOIN bi_sample s ON s.fn = v.fn,
	   LATERAL (VALUES (1, 'none'), (2, s.role)) AS r(n, role)
 ORDER BY v.fn::text, v.argno, v.label, r.n;

-- The fingerprint of every table of the schema, read as the superuser.
CREATE FUNCTION pg_temp.bi_fingerprint() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	t regclass;
	h text;
	acc text := '';
BEGIN
	FOR t IN SELECT c.oid FROM pg_class c
			  WHERE c.relnamespace = 'quota_sched'::regnamespace AND c.relkind IN ('r', 'p')
			  ORDER BY c.relname LOOP
		EXECUTE format($q$SELECT md5(coalesce(string_agg(x::text, E'\n' ORDER BY x::text), '')) FROM %s x$q$, t)
		   INTO h;
		acc := acc || t::text || ':' || h || E'\n';
	END LOOP;
	RETURN md5(acc);
END
$$;
CREATE TEMP TABLE bi_before AS SELECT pg_temp.bi_fingerprint() AS fp;

-- One attempt, in a subtransaction that is always rolled back: a call that
-- goes through raises QSBI0 (after noting whether it changed a table).
CREATE FUNCTION pg_temp.bi_attempt(attempt_id integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	a bi_attempt;
	st text;
	msg text;
	changed boolean;
BEGIN
	SELECT * INTO a FROM bi_attempt WHERE id = attempt_id;
	BEGIN
		PERFORM set_config('role', a.role, true);
		EXECUTE a.stmt;
		PERFORM set_config('role', 'none', true);
		changed := pg_temp.bi_fingerprint() <> (SELECT fp FROM bi_before);
		RAISE EXCEPTION USING ERRCODE = 'QSBI0', MESSAGE = changed::text;
	EXCEPTION
		WHEN query_canceled THEN
			st := '57014';
		WHEN OTHERS THEN
			st := SQLSTATE;
			msg := SQLERRM;
			IF st = 'QSBI0' THEN
				changed := msg::boolean;
				msg := NULL;
			END IF;
	END;
	UPDATE bi_attempt SET sqlstate = st, message = msg, stored = coalesce(changed, false)
	 WHERE id = attempt_id;
END
$$;

-- A statement as a role, in a subtransaction always rolled back: its
-- SQLSTATE, QSBI0 when it went through.
CREATE FUNCTION pg_temp.bi_as(role text, stmt text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('role', role, true);
	EXECUTE stmt;
	RAISE EXCEPTION USING ERRCODE = 'QSBI0';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$$;

-- Every sample call goes through, as the superuser and as its role (else
-- the bad values would be refused for another reason): none listed here.
SET statement_timeout = '5s';
SELECT fn, role, sqlstate FROM (
	SELECT s.fn, r.role, s.accepted_state, pg_temp.bi_as(r.role, pg_temp.bi_call(s, s.args)) AS sqlstate
	  FROM bi_sample s, LATERAL (VALUES ('none'), (s.role)) AS r(role)) v
 WHERE sqlstate NOT IN ('QSBI0', coalesce(accepted_state, 'QSBI0'));
RESET statement_timeout;

-- Trigger functions called directly: each refuses (0A000), as every role
-- of the extension: none listed here.
SELECT fn AS trigger_function, role, sqlstate FROM (
	SELECT c.fn, r.role, pg_temp.bi_as(r.role, 'SELECT ' || c.fn::regproc::text || '()') AS sqlstate
	  FROM bi_callable c,
		   (VALUES ('none'), ('regress_bi_admin'), ('regress_bi_agent'), ('regress_bi_user')) AS r(role)
	 WHERE c.is_trigger) t
 WHERE sqlstate <> '0A000';
SELECT count(*) AS trigger_functions FROM bi_callable WHERE is_trigger;

-- The sweep: each attempt a statement of its own, at most 1 s.
SET client_min_messages = error;
SET statement_timeout = '1s';
\set ECHO none
\o /dev/null
SELECT format('SELECT pg_temp.bi_attempt(%s)', id) FROM bi_attempt ORDER BY id \gexec
\o
\set ECHO all
RESET statement_timeout;
RESET client_min_messages;

-- Why a call that goes through with a bad value is right, per function,
-- argument and value (argname or label NULL: any).  A call accepted
-- without a reason here or a known finding (bi_known) is listed below as a
-- FINDING.
CREATE TEMP TABLE bi_justified (fn regprocedure, argname text, label text, why text);
INSERT INTO bi_justified VALUES
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'capacity_unit', 'NULL',
	 'the documented default: any unit'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'max_instances', 'NULL',
	 'the documented default: no bound'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', NULL, 'max',
	 'an upper bound: claims what there is'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'agent', 'a name of nothing',
	 'any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'agent', 'non-ASCII',
	 'any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'agent', 'quotes and SQL',
	 'any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'agent', 'a name of nothing',
	 'any name of 1 to 128 bytes, not blank, without control characters: an agent not registered is woken by what names it'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'agent', 'non-ASCII',
	 'any name of 1 to 128 bytes, not blank, without control characters: an agent not registered is woken by what names it'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'agent', 'quotes and SQL',
	 'any name of 1 to 128 bytes, not blank, without control characters: an agent not registered is woken by what names it'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'job_queue', 'a name of nothing',
	 'a queue of nothing wakes nothing, as a LISTEN on a channel nobody notifies'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'job_queue', 'non-ASCII',
	 'a queue of nothing wakes nothing, as a LISTEN on a channel nobody notifies'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'job_queue', 'quotes and SQL',
	 'a queue of nothing wakes nothing, as a LISTEN on a channel nobody notifies'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'timeout_ms', 'zero',
	 'the documented call that waits not: what is pending, at once'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'woken', 'NULL',
	 'the output argument: what is given is not read'),
	('quota_sched.heartbeat(text, interval)', 'agent', 'a name of nothing',
	 'an agent holding no job: nothing to renew, nothing returned'),
	('quota_sched.heartbeat(text, interval)', 'agent', 'non-ASCII',
	 'an agent holding no job: nothing to renew, nothing returned'),
	('quota_sched.heartbeat(text, interval)', 'agent', 'quotes and SQL',
	 'an agent holding no job: nothing to renew, nothing returned'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'agent', 'a name of nothing',
	 'a new agent: any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'agent', 'non-ASCII',
	 'a new agent: any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'agent', 'quotes and SQL',
	 'a new agent: any name of 1 to 128 bytes, not blank, without control characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'agent', 'another login''s agent',
	 'an admin (the superuser) refreshes any agent; another agent login gets 42501'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'instances', 'NULL',
	 'the documented default: no bound (an external launcher)'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'instances', 'max',
	 'any count of at least 1'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'labels', 'empty object',
	 'the documented default: no labels'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'labels', 'a string capacity',
	 'a valid label: a key of [a-z0-9_.-], a string of 1 to 128 characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'address', 'NULL',
	 'the documented default: the agent''s name'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'address', 'a name of nothing',
	 'an address: 1 to 253 characters, no whitespace or control characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'address', '129 characters',
	 'an address: 1 to 253 characters, no whitespace or control characters'),
	('quota_sched.agent_ready(text, text, text, integer, jsonb, text)', 'address', 'non-ASCII',
	 'an address: 1 to 253 characters, no whitespace or control characters'),
	('quota_sched.claim(text, text, text, integer, interval, integer, boolean)', 'lease', NULL,
	 'a positive lease of at most 365 days (a month counts 30 days)'),
	('quota_sched.heartbeat(text, interval)', 'lease', NULL,
	 'a positive lease of at most 365 days (a month counts 30 days)'),
	('quota_sched.agent_wait(text, text, integer, text[], interval)', 'lease', NULL,
	 'null (the default: no job is given at its dispatch), or a positive lease of at most 365 days (a month counts 30 days)'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'reason', NULL,
	 'free text of at most 1,024 bytes, kept as the status reason (null: none)'),
	('quota_sched.release(bigint, text, text, text)', 'reason', NULL,
	 'free text of at most 1,024 bytes, kept as the status reason (null: none)'),
	('quota_sched.terminate(bigint, text, boolean)', 'reason', NULL,
	 'free text of at most 1,024 bytes, kept as the status reason (null refused)'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'attempt', NULL,
	 'null: the current attempt; another: a retry about an attempt that is over, a no-op'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'exit_code', NULL,
	 'any exit code (null: none), kept in the history'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'job_id', 'an ended job',
	 'the state the agent reported already: a repeat, a no-op'),
	('quota_sched.report(bigint, text, text, text, integer, integer, text)', 'output', NULL,
	 'free text, a job''s output: its last 4096 bytes kept (null: none); over 65536 bytes refused'),
	('quota_sched.release(bigint, text, text, text)', 'output', NULL,
	 'free text, a job''s output: its last 4096 bytes kept (null: none); over 65536 bytes refused'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'host', NULL,
	 'any text of at most 255 bytes without control characters, not empty (null: none, or kept)'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'log_path', NULL,
	 'any text of at most 4096 bytes without control characters, not empty (null: none, or kept)'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'handle', NULL,
	 'any text of at most 1024 bytes without control characters, not empty (null: none, or kept)'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'port', NULL,
	 'the rendezvous port (null: none, or kept)'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'devices', NULL,
	 'null: none, or kept'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'attempt',
	 'an attempt that is over', 'a retry about an attempt that is over: a no-op (null)'),
	('quota_sched.attempt_started(bigint, text, integer, text, text, text, integer, text[])', 'attempt', 'max',
	 'an attempt not begun: a no-op (null)'),
	('quota_sched.run_pass(text, boolean)', 'job_queue', 'NULL', 'the documented default: every queue'),
	('quota_sched.set_priority(bigint, integer)', 'priority', 'zero', 'the lowest priority (0 to 9999): valid'),
	('quota_sched.prune(interval, integer)', NULL, NULL,
	 'a positive horizon, a batch of at least 1: valid (it reached its check of the transaction block)'),
	('quota_sched.attempt_deadline(timestamp with time zone, interval)', NULL, NULL,
	 'the function of an index on job: null in, null out; infinite times stay infinite'),
	('quota_sched.holds(text)', 'state', NULL, 'a pure function: 1 for a state that holds capacity, else 0'),
	('quota_sched.allowed(bigint, text, integer)', NULL, 'NULL', 'STRICT rule of share_usage: null in, null out'),
	('quota_sched.allowed(bigint, text, integer)', 'capacity', 'zero', 'a valid capacity: 0'),
	('quota_sched.allowed(bigint, text, integer)', 'borrow_limit', NULL, 'valid: -1 (unbounded) or at least 0'),
	('quota_sched.lendable(bigint, text, text, integer)', NULL, 'NULL',
	 'STRICT rule of share_usage: null in, null out'),
	('quota_sched.lendable(bigint, text, text, integer)', 'capacity', 'zero', 'a valid capacity: 0'),
	('quota_sched.lendable(bigint, text, text, integer)', 'lend_limit', NULL, 'valid: -1 (all) or 0 to 100'),
	('quota_sched.over_budget(double precision, double precision)', NULL, NULL,
	 'the pass''s comparison (QsOverBudget) of any figures, a negative budget none; STRICT: null in, null out'),
	('quota_sched.xml_escape(text)', 'value', NULL, 'escapes any text (STRICT: null in, null out)'),
	('quota_sched.svg_number(double precision, integer)', NULL, 'NULL', 'STRICT: null in, null out'),
	('quota_sched.svg_number(double precision, integer)', NULL, NULL,
	 'a helper of the chart, which gives it finite figures and 0 to 3 digits'),
	('quota_sched.svg_frame(timestamp with time zone, timestamp with time zone, interval)', NULL, NULL,
	 'the chart''s frame: null for a range utilization() refuses (it says why), 22023 beyond 2,000 buckets'),
	('quota_sched.svg_chart(text, timestamp with time zone, timestamp with time zone, interval, timestamp with time zone[], text[], text[], double precision[], double precision[], double precision[])',
	 NULL, NULL,
	 'draws the rows it is given (utilization()''s): any name escaped, any figures; a range it does not draw refused (22023)'),
	('quota_sched.rollup(timestamp with time zone)', 'up_to', 'epoch',
	 'a horizon in the past: nothing more to roll up'),
	('quota_sched.check_capacity_map(jsonb, text)', 'value', 'empty object', 'a valid map: no capacity'),
	('quota_sched.check_budget(jsonb, text)', 'value', 'empty object', 'a valid budget: none'),
	('quota_sched.check_budget(jsonb, text)', 'value', 'a fraction', 'a budget takes fractions (0.4)'),
	('quota_sched.check_lend_limit(text, integer, text)', 'lend_limit', NULL, 'valid: -1 (all) or 0 to 100'),
	('quota_sched.check_lend_limit(text, integer, text)', 'strategy', NULL,
	 'STRICT check of a CHECK constraint: null passes, NOT NULL is the column''s'),
	('quota_sched.check_strategy(text, integer, text)', 'borrow_limit', NULL,
	 'valid: -1 (unbounded) or at least 0'),
	('quota_sched.check_min_runtime(interval, text)', 'value', NULL, 'valid: positive, at most 365 days'),
	('quota_sched.check_runnable_timeout(interval, text)', 'value', NULL, 'valid: positive, at most 365 days'),
	('quota_sched.check_claim_timeout(interval, text)', 'value', NULL, 'valid: 1 second to 365 days'),
	('quota_sched.check_fence_grace(interval, text)', 'value', NULL, 'valid: 0 to 1 hour'),
	('quota_sched.check_fair_half_life(interval, text, text)', 'value', 'NULL', 'null: the queue has no half-life'),
	('quota_sched.check_fair_half_life(interval, text, text)', 'value', NULL,
	 'valid: 1 minute to 365 days'),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 NULL, 'NULL', 'STRICT arithmetic of share_budget: null in, null out'),
	('quota_sched.period_start(timestamp with time zone, text)', NULL, 'NULL',
	 'STRICT arithmetic of share_budget: null in, null out'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 NULL, 'NULL', 'STRICT arithmetic of share_usage: null in, null out'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 'recent', NULL, 'any figure: the passes keep it, this only carries it on in time'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 'borrowed', NULL, 'any count: the passes keep it, this only carries it on in time'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 'at', NULL, 'any finite time: the figure carried on from it (infinite ones are refused, 22008)'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 't', NULL, 'any finite time: the figure carried on to it (infinite ones are refused, 22008)'),
	('quota_sched.recent_borrow_at(double precision, timestamp with time zone, bigint, timestamp with time zone, interval)',
	 'half_life', NULL, 'a half-life of 1 minute to 365 days: valid'),
	('quota_sched.period_end(timestamp with time zone, text)', NULL, 'NULL',
	 'STRICT arithmetic of share_budget: null in, null out'),
	('quota_sched.period_start(timestamp with time zone, text)', 'at', NULL,
	 'any finite time has its period (infinite ones, and one whose period starts before the range, are refused, 22008)'),
	('quota_sched.period_end(timestamp with time zone, text)', 'at', NULL,
	 'any finite time has its period (infinite ones, and one whose period ends past the range, are refused, 22008)'),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 'at', NULL, 'any finite time: the figure carried on to it (infinite ones are refused, 22008)'),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 'changed_at', NULL, 'any finite time: the figure carried on from it (infinite ones are refused, 22008)'),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 'spent', NULL, 'any figure: the counters keep it, this only carries it on in time'),
	('quota_sched.spent_at(double precision, timestamp with time zone, bigint, timestamp with time zone, text)',
	 'instances', NULL, 'any count: the counters keep it, this only carries it on in time'),
	('quota_sched.check_name(text, text)', 'value', 'a name of nothing', 'a valid name'),
	('quota_sched.replay(text, timestamp with time zone, timestamp with time zone, jsonb)',
	 'changes', 'empty object', 'no change: the candidate is the baseline'),
	('quota_sched.replay_jobs(text, timestamp with time zone, timestamp with time zone, jsonb, text, integer)',
	 'changes', 'empty object', 'no change: the candidate is the baseline'),
	('quota_sched.replay_jobs(text, timestamp with time zone, timestamp with time zone, jsonb, text, integer)',
	 'share', NULL, 'a filter of the rows: null keeps every share, a name no share has keeps none');
-- The check functions of the CHECK constraints of the configuration: null
-- passes (STRICT; NOT NULL is the column's), and what (and check_choice's
-- column_name) is the label of the message.
INSERT INTO bi_justified
SELECT s.fn, NULL, 'NULL', 'STRICT check of a CHECK constraint: null passes, NOT NULL is the column''s'
  FROM bi_sample s WHERE s.fn::text LIKE 'quota_sched.check\_%';
INSERT INTO bi_justified
SELECT s.fn, 'what', NULL, 'the label of the message, any text'
  FROM bi_sample s WHERE s.fn::text LIKE 'quota_sched.check\_%';

INSERT INTO bi_justified VALUES
	('quota_sched.utilization(text, timestamp with time zone, timestamp with time zone, interval)',
	 'bucket', 'max microseconds',
	 'one bucket as long as the range: the work is bounded by the range and the rollup, not the bucket'),
	('quota_sched.lending(text, timestamp with time zone, timestamp with time zone, interval)',
	 'bucket', 'max microseconds',
	 'one bucket as long as the range: the work is bounded by the range and the rollup, not the bucket'),
	('quota_sched.rollup(timestamp with time zone)', 'up_to', NULL,
	 'a finite time: the rollup goes up to the last whole hour before it or now, whichever is earlier');

-- Findings known and not fixed yet: each is listed as KNOWN (none now).
CREATE TEMP TABLE bi_known (fn regprocedure, argname text, label text, note text);

CREATE TEMP VIEW bi_outcome AS
SELECT a.*,
	   CASE WHEN a.sqlstate = 'QSBI0' OR a.sqlstate = a.accepted_state THEN 'accepted'
			WHEN a.sqlstate = '57014' THEN 'timed out'
			WHEN a.sqlstate LIKE 'XX%' THEN 'internal error'
			WHEN a.sqlstate IS NULL THEN 'not run'
			ELSE 'clean error' END AS outcome,
	   (SELECT j.why FROM bi_justified j
		 WHERE j.fn = a.fn AND (j.argname IS NULL OR j.argname = a.argname)
		   AND (j.label IS NULL OR j.label = a.label) LIMIT 1) AS why,
	   (SELECT k.note FROM bi_known k
		 WHERE k.fn = a.fn AND (k.argname IS NULL OR k.argname = a.argname)
		   AND (k.label IS NULL OR k.label = a.label) LIMIT 1) AS known
  FROM bi_attempt a;

-- Per function: attempts (as both roles), those PostgreSQL refused before
-- the call, clean errors, accepted calls, timeouts and internal errors.
SELECT fn::regproc AS function, count(*) AS attempts,
	   count(*) FILTER (WHERE before_call) AS before_call,
	   count(*) FILTER (WHERE outcome = 'clean error') AS clean_errors,
	   count(*) FILTER (WHERE outcome = 'accepted') AS accepted,
	   count(*) FILTER (WHERE outcome = 'timed out') AS timed_out,
	   count(*) FILTER (WHERE outcome IN ('internal error', 'not run')) AS internal
  FROM bi_outcome GROUP BY fn ORDER BY fn::text;

-- The SQLSTATEs of the clean errors, and how many.
SELECT sqlstate, count(*) FROM bi_outcome WHERE outcome = 'clean error' GROUP BY 1 ORDER BY 1;

-- The calls accepted with a bad value, per function and argument, and why
-- that is right (KNOWN, or a FINDING, when it is not); stored: the call
-- changed a table (then undone).  Each as the superuser and as the member
-- role alike (the outcomes that differ are listed below).
SELECT fn::regproc AS function, argname, string_agg(DISTINCT label, ', ' ORDER BY label) AS "values",
	   bool_or(stored) AS stored, coalesce(why, known, 'FINDING') AS why
  FROM bi_outcome WHERE outcome = 'accepted'
 GROUP BY fn, argname, coalesce(why, known, 'FINDING') ORDER BY fn::text, argname, 3;

-- Timeouts and internal errors: each KNOWN or a FINDING.
SELECT fn::regproc AS function, argname, string_agg(DISTINCT label, ', ' ORDER BY label) AS "values",
	   outcome, min(left(message, 60)) AS message, coalesce(known, 'FINDING') AS note
  FROM bi_outcome WHERE outcome IN ('timed out', 'internal error', 'not run')
 GROUP BY fn, argname, outcome, coalesce(known, 'FINDING') ORDER BY fn::text, argname, outcome;

-- Errors whose message is longer than 1,000 bytes (a bad value quoted
-- whole, where a message quotes at most its first 64 bytes): a FINDING
-- unless KNOWN.
SELECT fn::regproc AS function, argname, string_agg(DISTINCT label, ', ' ORDER BY label) AS "values",
	   max(octet_length(message)) AS longest, coalesce(known, 'FINDING') AS note
  FROM bi_outcome WHERE octet_length(message) > 1000
 GROUP BY fn, argname, coalesce(known, 'FINDING') ORDER BY fn::text, argname;

-- The outcomes that differ between the superuser and the member role.
SELECT a.fn::regproc AS function, a.argname, a.label, a.sqlstate AS superuser, b.sqlstate AS member
  FROM bi_outcome a JOIN bi_outcome b ON b.fn = a.fn AND b.argname = a.argname AND b.label = a.label
	   AND b.role <> 'none'
 WHERE a.role = 'none' AND a.sqlstate IS DISTINCT FROM b.sqlstate
 ORDER BY a.fn::text, a.argname, a.label;

-- The tally; nothing stored: the tables are as before, and no lock of the
-- sweep is left.
SELECT count(*) AS attempts,
	   count(*) FILTER (WHERE outcome = 'clean error') AS clean_errors,
	   count(*) FILTER (WHERE outcome = 'clean error' AND before_call) AS of_them_before_the_call,
	   count(*) FILTER (WHERE outcome = 'accepted') AS accepted,
	   count(*) FILTER (WHERE outcome = 'accepted' AND why IS NOT NULL) AS rightly,
	   count(*) FILTER (WHERE outcome <> 'clean error' AND why IS NULL AND known IS NOT NULL) AS known,
	   count(*) FILTER (WHERE outcome <> 'clean error' AND why IS NULL AND known IS NULL) AS findings,
	   count(*) FILTER (WHERE outcome = 'timed out') AS timed_out,
	   count(*) FILTER (WHERE outcome IN ('internal error', 'not run')) AS internal_errors
  FROM bi_outcome;
SELECT pg_temp.bi_fingerprint() = (SELECT fp FROM bi_before) AS nothing_stored,
	   (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory') AS locks_left;

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'bi_queue';
RESET session_replication_role;
DELETE FROM quota_sched.held_capacity WHERE job_queue = 'bi_queue';
DELETE FROM quota_sched.job_queue WHERE name = 'bi_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'bi_env';
DROP ROLE regress_bi_admin, regress_bi_agent, regress_bi_user, regress_bi_monitor, regress_bi_team;
