-- The scheduling options of 0.2 (scheduling.md 1, 3.1-3.3, 9): a queue's
-- borrow_order, and a share's lend_limit, queueing, min_runtime and
-- weight.  Their defaults keep 0.1's behaviour; bad values are
-- check_violation (23514), a null where a value is required
-- not_null_violation (23502), and nothing is stored.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('co_env', '{"ml.g5.xlarge": 10}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('co_queue', 'co_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('co_queue', 'co_reserve', '{"ml.g5.xlarge": 2}', 'RESERVE'),
	   ('co_queue', 'co_lend', '{"ml.g5.xlarge": 5}', 'LEND'),
	   ('co_queue', 'co_borrow', '{"ml.g5.xlarge": 3}', 'LEND_AND_BORROW');

-- Defaults: FIFO; lend all, BEST_EFFORT, no min_runtime, weight 1.
SELECT name, borrow_order FROM quota_sched.job_queue WHERE name = 'co_queue';
SELECT name, lend_limit, queueing, min_runtime, weight FROM quota_sched.quota_share
 WHERE job_queue = 'co_queue' ORDER BY name;

-- Accepted: the bounds.
SELECT stmt, pg_temp.refused(stmt) FROM (VALUES
	($$UPDATE quota_sched.job_queue SET borrow_order = 'FAIR' WHERE name = 'co_queue'$$),
	($$UPDATE quota_sched.job_queue SET borrow_order = 'FIFO' WHERE name = 'co_queue'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = 0 WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = 100 WHERE name = 'co_borrow'$$),
	($$UPDATE quota_sched.quota_share SET queueing = 'STRICT' WHERE name = 'co_reserve'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '1 microsecond' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '365 days' WHERE name = 'co_borrow'$$),
	($$UPDATE quota_sched.quota_share SET weight = 10000 WHERE name = 'co_reserve'$$),
	($$UPDATE quota_sched.quota_share SET weight = 1 WHERE name = 'co_lend'$$)
) AS v(stmt);

-- Refused, each alone, and nothing changes.
SELECT stmt, pg_temp.refused(stmt) FROM (VALUES
	($$UPDATE quota_sched.job_queue SET borrow_order = 'fair' WHERE name = 'co_queue'$$),
	($$UPDATE quota_sched.job_queue SET borrow_order = 'ROUND_ROBIN' WHERE name = 'co_queue'$$),
	($$UPDATE quota_sched.job_queue SET borrow_order = NULL WHERE name = 'co_queue'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = -2 WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = 101 WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = 50 WHERE name = 'co_reserve'$$),
	($$UPDATE quota_sched.quota_share SET lend_limit = NULL WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET strategy = 'RESERVE' WHERE name = 'co_borrow'$$),
	($$UPDATE quota_sched.quota_share SET queueing = 'strict' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET queueing = 'FIFO' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET queueing = NULL WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '0' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '-1 hour' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '1 day -25 hours' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '365 days 1 second' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET min_runtime = '300000 years' WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET weight = 0 WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET weight = 10001 WHERE name = 'co_lend'$$),
	($$UPDATE quota_sched.quota_share SET weight = NULL WHERE name = 'co_lend'$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, lend_limit) VALUES ('co_queue', 'co_new', 'RESERVE', 0)$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, queueing) VALUES ('co_queue', 'co_new', 'LEND', '')$$),
	($$INSERT INTO quota_sched.quota_share (job_queue, name, strategy, weight) VALUES ('co_queue', 'co_new', 'LEND', -3)$$)
) AS v(stmt);
-- A huge bad value is quoted in the message only in part.
SELECT pg_temp.refused(format($$UPDATE quota_sched.quota_share SET queueing = %L WHERE name = 'co_lend'$$,
							  repeat('x', 100000))) AS huge_value;
SELECT name, borrow_order FROM quota_sched.job_queue WHERE name = 'co_queue';
SELECT name, strategy, lend_limit, queueing, min_runtime, weight FROM quota_sched.quota_share
 WHERE job_queue = 'co_queue' ORDER BY name;

-- share_usage shows lendable: floor(C * lend_limit / 100), C for -1, and 0
-- for a share that lends nothing (RESERVE, DISABLED).
UPDATE quota_sched.quota_share SET lend_limit = 50 WHERE name = 'co_borrow';
SELECT quota_share, max_capacity, lendable FROM quota_sched.share_usage
 WHERE job_queue = 'co_queue' ORDER BY quota_share;
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE name = 'co_borrow';
SELECT quota_share, max_capacity, lendable FROM quota_sched.share_usage
 WHERE job_queue = 'co_queue' ORDER BY quota_share;

SELECT * FROM quota_sched.held_capacity_drift();
DELETE FROM quota_sched.job_queue WHERE name = 'co_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'co_env';
