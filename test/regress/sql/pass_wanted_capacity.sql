-- scheduling.md 3.2: a borrower takes no idle capacity that its lenders' own waiting
-- jobs want.  For a job that must borrow, each other lender's idle capacity
-- counts less what that lender wants: the sizes of its RUNNABLE jobs that
-- are not misconfigured and each fit in its idle capacity, summed, capped.
--
-- Three instances.  X (LEND_AND_BORROW, unlimited) owns one and uses it; Y
-- (LEND) owns two, idle.  X's pwc_x_borrow2 (2 instances, must borrow) is
-- older than both of Y's waiting jobs; Y's head pwc_y_too_big (priority 5,
-- 3 instances) cannot start, so no job under the cursors fits in its own
-- capacity and the borrower comes first (FIFO).  Y wants one instance for
-- pwc_y_small, so only one of Y's two idle instances is borrowable: the
-- borrower waits and pwc_y_small runs.  Without pwc_y_small (second queue),
-- nothing of Y's idle capacity is wanted (pwc_y_too_big does not fit in
-- it), and the borrower gets both instances.
--
-- pg_temp.pass(q) runs the pass of a queue and shows its decisions in the
-- order it made them.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('pwc_env', '{"ml.g5.xlarge": 3}'), ('pwc_env2', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment)
VALUES ('pwc_queue', 'pwc_env'), ('pwc_queue2', 'pwc_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit)
VALUES ('pwc_queue', 'X', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', -1),
       ('pwc_queue', 'Y', '{"ml.g5.xlarge": 2}', 'LEND', -1),
       ('pwc_queue2', 'X', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', -1),
       ('pwc_queue2', 'Y', '{"ml.g5.xlarge": 2}', 'LEND', -1);

------------------------------------------------------------------------
-- Y's waiting job wants one of its idle instances.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_x_own', 'pwc_queue', 'X', 0, 'ml.g5.xlarge', 1);
SELECT * FROM pg_temp.pass('pwc_queue');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_x_borrow2', 'pwc_queue', 'X', 0, 'ml.g5.xlarge', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_y_too_big', 'pwc_queue', 'Y', 5, 'ml.g5.xlarge', 3);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_y_small', 'pwc_queue', 'Y', 0, 'ml.g5.xlarge', 1);
SELECT * FROM pg_temp.pass('pwc_queue');
-- pwc_x_borrow2 waits, not misconfigured (X may reach 1 + 2 = 3 instances);
-- pwc_y_too_big needs more than Y is allowed.
SELECT name, quota_share, priority, instance_count, state, status_reason
  FROM quota_sched.job WHERE job_queue = 'pwc_queue' ORDER BY id;
SELECT quota_share, in_use, borrowed, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pwc_queue' ORDER BY quota_share;

------------------------------------------------------------------------
-- The same without pwc_y_small: the idle capacity nobody wants is lent.
------------------------------------------------------------------------
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_x_own', 'pwc_queue2', 'X', 0, 'ml.g5.xlarge', 1);
SELECT * FROM pg_temp.pass('pwc_queue2');
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_x_borrow2', 'pwc_queue2', 'X', 0, 'ml.g5.xlarge', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('pwc_y_too_big', 'pwc_queue2', 'Y', 5, 'ml.g5.xlarge', 3);
SELECT * FROM pg_temp.pass('pwc_queue2');
SELECT name, quota_share, priority, instance_count, state, status_reason
  FROM quota_sched.job WHERE job_queue = 'pwc_queue2' ORDER BY id;
SELECT quota_share, in_use, borrowed, idle, runnable_jobs, active_jobs
  FROM quota_sched.share_usage WHERE job_queue = 'pwc_queue2' ORDER BY quota_share;

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue LIKE 'pwc\_%';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name LIKE 'pwc\_%';
DELETE FROM quota_sched.service_environment WHERE name LIKE 'pwc\_%';
