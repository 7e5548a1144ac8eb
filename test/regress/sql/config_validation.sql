-- Configuration tables validate every value (scheduling.md 1, 9): capacity maps,
-- names, states, strategies and borrow limits, runnable timeouts, and the
-- keys between environments, queues and shares.  Bad values are
-- check_violation (23514); a missing parent is foreign_key_violation (23503);
-- a second queue on one environment is unique_violation (23505).
--
-- pg_temp.refused() runs a statement and shows its SQLSTATE and message, or
-- 'accepted'.
\i test/regress/include/helpers.sql

------------------------------------------------------------------------
-- Capacity maps: a jsonb object from a capacity unit (1 to 128 characters
-- of [A-Za-z0-9._-]) to an integral JSON number from 0 to 2147483647.
------------------------------------------------------------------------

-- Accepted: the bounds 0 and 2147483647, and the empty map.
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('cv_env', '{"ml.g5.xlarge": 0, "ml.p4d.24xlarge": 2147483647}'),
       ('cv_env_empty', '{}');
-- capacity_limits and state have defaults: {} and ENABLED.
INSERT INTO quota_sched.service_environment (name) VALUES ('cv_env_defaults');
SELECT name, capacity_limits, state FROM quota_sched.service_environment
 WHERE name LIKE 'cv\_%' ORDER BY name COLLATE "C";

-- A unit name of exactly 128 characters is accepted.
SELECT pg_temp.refused(format(
	$$INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cv_env_long_unit', %L)$$,
	jsonb_build_object(repeat('u', 128), 1)));

-- Refused, each alone: not an object, a value that is not an integral number
-- from 0 to 2147483647, a bad key.
SELECT capacity_limits,
       pg_temp.refused(format(
		$$INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cv_env_bad', %L)$$,
		capacity_limits)) AS result
  FROM (VALUES ('[]'), ('[{"ml.g5.xlarge": 3}]'), ('"3"'), ('3'), ('null'), ('true'),
               ('{"ml.g5.xlarge": "3"}'),
               ('{"ml.g5.xlarge": 1.5}'),
               ('{"ml.g5.xlarge": -1}'),
               ('{"ml.g5.xlarge": true}'),
               ('{"ml.g5.xlarge": null}'),
               ('{"ml.g5.xlarge": [3]}'),
               ('{"ml.g5.xlarge": {"count": 3}}'),
               ('{"ml.g5.xlarge": 2147483648}'),
               ('{"ml.g5.xlarge": 1e20}'),
               ('{"ml g5": 1}'),
               ('{"ml/g5": 1}'),
               ('{"": 1}')) AS v(capacity_limits);

-- A unit name of 129 characters is refused.
SELECT pg_temp.refused(format(
	$$INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cv_env_bad', %L)$$,
	jsonb_build_object(repeat('u', 129), 1)));

-- A capacity map is NOT NULL.
SELECT pg_temp.refused($$INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cv_env_bad', NULL)$$);

-- The same rules hold on UPDATE, and for the capacity maps of shares (below).
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET capacity_limits = '{"ml.g5.xlarge": -1}' WHERE name = 'cv_env'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET capacity_limits = '["ml.g5.xlarge"]' WHERE name = 'cv_env'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET capacity_limits = '{"ml.g5.xlarge": 4}' WHERE name = 'cv_env'$$);

-- Nothing refused was stored: only the accepted environments exist, and
-- cv_env has the map of the accepted UPDATE.
SELECT name, capacity_limits FROM quota_sched.service_environment
 WHERE name LIKE 'cv\_%' AND name <> 'cv_env_long_unit' ORDER BY name COLLATE "C";

------------------------------------------------------------------------
-- Names of environments, queues and shares: 1 to 128 characters of
-- [A-Za-z0-9_-].
------------------------------------------------------------------------

SELECT label,
       pg_temp.refused(format(
		$$INSERT INTO quota_sched.service_environment (name) VALUES (%L)$$, name)) AS result
  FROM (VALUES ('empty', ''),
               ('129 characters', 'cv_' || repeat('n', 126)),
               ('a space', 'cv env'),
               ('a dot', 'cv.env'),
               ('a slash', 'cv/env'),
               ('not ASCII', 'cv_envé'),
               ('128 characters', 'cv_' || repeat('n', 125)),
               ('every allowed character', 'cv_AZaz09-_')) AS v(label, name);
SELECT pg_temp.refused($$INSERT INTO quota_sched.service_environment (name) VALUES (NULL)$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET name = 'cv env' WHERE name = 'cv_env_defaults'$$);

------------------------------------------------------------------------
-- State: ENABLED or DISABLED.
------------------------------------------------------------------------

SELECT pg_temp.refused($$INSERT INTO quota_sched.service_environment (name, state) VALUES ('cv_env_bad', 'enabled')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.service_environment (name, state) VALUES ('cv_env_bad', 'PAUSED')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.service_environment (name, state) VALUES ('cv_env_bad', NULL)$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET state = 'OFF' WHERE name = 'cv_env_defaults'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET state = 'DISABLED' WHERE name = 'cv_env_defaults'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.service_environment SET state = 'ENABLED' WHERE name = 'cv_env_defaults'$$);

------------------------------------------------------------------------
-- Job queues: one per environment, on an environment that exists; a
-- positive runnable_timeout or none.
------------------------------------------------------------------------

INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv_queue', 'cv_env');
SELECT name, service_environment, state, runnable_timeout
  FROM quota_sched.job_queue WHERE name = 'cv_queue';

-- A second queue on the same environment.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv_queue_2', 'cv_env')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv_queue_2', 'cv_env_empty')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET service_environment = 'cv_env' WHERE name = 'cv_queue_2'$$);
-- An environment that does not exist.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv_queue_3', 'cv_no_such_env')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET service_environment = 'cv_no_such_env' WHERE name = 'cv_queue_2'$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv_queue_3', NULL)$$);

-- Queue names and states follow the same rules as environments.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('', 'cv_env_defaults')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv queue', 'cv_env_defaults')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cv.queue', 'cv_env_defaults')$$);
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.job_queue (name, service_environment) VALUES (%L, 'cv_env_defaults')$$,
	'cv_' || repeat('q', 126)));
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment, state) VALUES ('cv_queue_3', 'cv_env_defaults', 'disabled')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET name = 'cv queue' WHERE name = 'cv_queue_2'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.job_queue SET state = 'STOPPED' WHERE name = 'cv_queue_2'$$);

-- runnable_timeout: null (none) or positive.
SELECT runnable_timeout,
       pg_temp.refused(format(
		$$UPDATE quota_sched.job_queue SET runnable_timeout = %L WHERE name = 'cv_queue_2'$$,
		runnable_timeout)) AS result
  FROM (VALUES ('0'::interval), ('-5 minutes'), ('1 day -24 hours'),
               ('1 second'), ('1 hour'), (NULL)) AS v(runnable_timeout);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout) VALUES ('cv_queue_3', 'cv_env_defaults', '-1 hour')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout) VALUES ('cv_queue_3', 'cv_env_defaults', '30 minutes')$$);

SELECT name, service_environment, state, runnable_timeout
  FROM quota_sched.job_queue WHERE name LIKE 'cv\_%' ORDER BY name COLLATE "C";

------------------------------------------------------------------------
-- Quota shares: strategy RESERVE, LEND or LEND_AND_BORROW; borrow_limit -1
-- (unlimited) or, for LEND_AND_BORROW only, a percentage from 0 up; a queue
-- that exists; the pair (queue, name) is the key.
------------------------------------------------------------------------

-- Defaults: capacity_limits {}, borrow_limit -1, no in-share preemption,
-- ENABLED, anyone may submit.
INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', 'cv_share', 'RESERVE');
SELECT job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption, state, submit_role
  FROM quota_sched.quota_share WHERE name = 'cv_share';

SELECT strategy, borrow_limit,
       pg_temp.refused(format(
		$$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, borrow_limit) VALUES ('cv_queue', %L, %L, %s)$$,
		'cv_share_' || n, strategy, borrow_limit)) AS result
  FROM (VALUES (1, 'RESERVE', -1), (2, 'LEND', -1), (3, 'LEND_AND_BORROW', -1),
               (4, 'LEND_AND_BORROW', 0), (5, 'LEND_AND_BORROW', 200),
               (6, 'LEND_AND_BORROW', -2), (7, 'RESERVE', -2), (8, 'LEND', -100),
               (9, 'RESERVE', 50), (10, 'LEND', 50), (11, 'RESERVE', 0), (12, 'LEND', 0),
               (13, 'BORROW', -1), (14, 'reserve', -1), (15, '', -1)) AS v(n, strategy, borrow_limit);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', 'cv_share_bad', NULL)$$);

-- The same on UPDATE: the pair is checked together, whichever side changes.
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET borrow_limit = 50 WHERE job_queue = 'cv_queue' AND name = 'cv_share_2'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET strategy = 'LEND' WHERE job_queue = 'cv_queue' AND name = 'cv_share_5'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET borrow_limit = -2 WHERE job_queue = 'cv_queue' AND name = 'cv_share_5'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET strategy = 'BORROW' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET strategy = 'LEND', borrow_limit = -1 WHERE job_queue = 'cv_queue' AND name = 'cv_share_5'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET strategy = 'LEND_AND_BORROW', borrow_limit = 50 WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);

-- Capacity maps of shares follow the rules of section 1.
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits) VALUES ('cv_queue', 'cv_share_bad', 'LEND', '{"ml.g5.xlarge": 1.5}')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits) VALUES ('cv_queue', 'cv_share_bad', 'LEND', '{"ml.g5.xlarge": "3"}')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits) VALUES ('cv_queue', 'cv_share_bad', 'LEND', '"ml.g5.xlarge"')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": -3}' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET capacity_limits = '{"ml.g5.xlarge": 3}' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);

-- Share names and states.
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', '', 'LEND')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', 'cv share', 'LEND')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', 'cv.share', 'LEND')$$);
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', %L, 'LEND')$$,
	'cv_' || repeat('s', 126)));
SELECT pg_temp.refused(format($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', %L, 'LEND')$$,
	'cv_' || repeat('s', 125)));
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, state) VALUES ('cv_queue', 'cv_share_bad', 'LEND', 'Disabled')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET state = 'PAUSED' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET name = 'cv share' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);

-- A share on a queue that does not exist.
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_no_such_queue', 'cv_share', 'LEND')$$);
SELECT pg_temp.refused($$UPDATE quota_sched.quota_share SET job_queue = 'cv_no_such_queue' WHERE job_queue = 'cv_queue' AND name = 'cv_share_1'$$);
-- The same share name may exist in two queues, but only once per queue.
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue_2', 'cv_share', 'LEND')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('cv_queue', 'cv_share', 'LEND')$$);

-- Only the accepted shares were stored, with the accepted updates.
SELECT job_queue, name, capacity_limits, strategy, borrow_limit, state
  FROM quota_sched.quota_share WHERE job_queue LIKE 'cv\_%' AND length(name) < 100
 ORDER BY job_queue COLLATE "C", name COLLATE "C";
SELECT count(*) AS shares_with_128_character_names
  FROM quota_sched.quota_share WHERE job_queue = 'cv_queue' AND length(name) = 128;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up (no jobs, so nothing refuses the deletes).
DELETE FROM quota_sched.job_queue WHERE name LIKE 'cv\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'cv\_%';
SELECT count(*) AS left_over FROM quota_sched.quota_share WHERE job_queue LIKE 'cv\_%';
