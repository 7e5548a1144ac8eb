-- config_review: what in the configuration is allowed but likely to hurt,
-- one row per finding, readable by every role (issue 22, item 5: churn
-- nobody is told about).  A share with in-share preemption and no
-- min_runtime, one that borrows with none, a unit the environment lacks,
-- shares promised more than the environment has; and the shares that
-- invite no churn have no row.
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cr_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cr_queue', 'cr_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, borrow_limit,
									 in_share_preemption, min_runtime)
VALUES ('cr_queue', 'churny', '{"gpu": 1}', 'RESERVE', -1, true, NULL),
	   ('cr_queue', 'guarded', '{"gpu": 1}', 'RESERVE', -1, true, '10 minutes'),
	   ('cr_queue', 'borrower', '{"gpu": 1}', 'LEND_AND_BORROW', -1, false, NULL),
	   ('cr_queue', 'guarded_borrower', '{"gpu": 1}', 'LEND_AND_BORROW', 2, false, '5 minutes'),
	   ('cr_queue', 'no_borrowing', '{"gpu": 1}', 'LEND_AND_BORROW', 0, false, NULL),
	   ('cr_queue', 'lender', '{"gpu": 1}', 'LEND', -1, false, NULL);
SELECT quota_share, capacity_unit, finding FROM quota_sched.config_review
 WHERE job_queue = 'cr_queue' ORDER BY quota_share COLLATE "C" NULLS FIRST, capacity_unit, finding;
-- the detail says what to do
SELECT finding, detail FROM quota_sched.config_review
 WHERE job_queue = 'cr_queue' AND quota_share = 'churny';
-- a member of no share's team reads it too
CREATE ROLE cr_member LOGIN IN ROLE quota_sched_user;
SET ROLE cr_member;
SELECT count(*) AS findings FROM quota_sched.config_review WHERE job_queue = 'cr_queue';
RESET ROLE;
-- setting min_runtime ends the finding
UPDATE quota_sched.quota_share SET min_runtime = '2 minutes' WHERE job_queue = 'cr_queue' AND name = 'churny';
UPDATE quota_sched.quota_share SET capacity_limits = '{"gpu": 1, "tpu": 2}'
 WHERE job_queue = 'cr_queue' AND name = 'lender';
SELECT quota_share, capacity_unit, finding FROM quota_sched.config_review
 WHERE job_queue = 'cr_queue' ORDER BY quota_share COLLATE "C" NULLS FIRST, capacity_unit, finding;
DROP ROLE cr_member;

-- A budget spent while the lend_limit keeps idle capacity from waiting
-- jobs (issue 37, item 5: a spent budget with lend_limit 50 left 2 of 4
-- gpus idle while 51 jobs waited).  vision (LEND, 4 gpu, lend_limit 50)
-- has a budget of 0: spent, its jobs of gpu never start, and it lends 2 of
-- its 4 idle gpus; nlp (LEND_AND_BORROW, 4 gpu) has 10 jobs of 1 gpu.  A
-- pass dispatches 6 (4 own, 2 borrowed): 2 gpus stay idle while 4 wait.
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('cr_budget_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('cr_budget', 'cr_budget_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, lend_limit, budget)
VALUES ('cr_budget', 'vision', '{"gpu": 4}', 'LEND', 50, '{"gpu": 0}');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, min_runtime)
VALUES ('cr_budget', 'nlp', '{"gpu": 4}', 'LEND_AND_BORROW', '10 minutes');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
SELECT 'cr_nlp_' || i, 'cr_budget', 'nlp', 'gpu' FROM generate_series(1, 10) AS i;
SELECT count(*) AS dispatched FROM quota_sched.run_pass('cr_budget') WHERE action = 'DISPATCH';
SELECT quota_share, in_use, idle, lendable, runnable_jobs FROM quota_sched.share_usage
 WHERE job_queue = 'cr_budget' ORDER BY 1;
-- the finding names the share, the figures and what to change (the end of
-- the period, which depends on today, left out)
SELECT quota_share, capacity_unit, finding,
	   regexp_replace(detail, ' until [^,]*, ', ' until ..., ') AS detail
  FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
SELECT regexp_replace(detail, '.* until (.*), and .*', '\1')::timestamptz = period_end AS until_period_end
  FROM quota_sched.config_review c JOIN quota_sched.share_budget b USING (job_queue, quota_share, capacity_unit)
 WHERE c.job_queue = 'cr_budget';
-- Only when all of it is true now: not with the budget left; not with
-- lend_limit -1 (the next pass lends the other 2); not when the limit is
-- lowered again while nlp holds all 4 (nothing is idle until the next pass
-- takes 2 back, and then it is); not when no share that may borrow has
-- jobs waiting (nlp made LEND).
UPDATE quota_sched.quota_share SET budget = '{"gpu": 1000}' WHERE job_queue = 'cr_budget' AND name = 'vision';
SELECT count(*) AS findings FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
UPDATE quota_sched.quota_share SET budget = '{"gpu": 0}', lend_limit = -1
 WHERE job_queue = 'cr_budget' AND name = 'vision';
SELECT count(*) AS findings FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
SELECT action, count(*) FROM quota_sched.run_pass('cr_budget') GROUP BY 1 ORDER BY 1;
UPDATE quota_sched.quota_share SET lend_limit = 50 WHERE job_queue = 'cr_budget' AND name = 'vision';
SELECT count(*) AS findings FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
SELECT action, count(*) FROM quota_sched.run_pass('cr_budget') GROUP BY 1 ORDER BY 1;
SELECT quota_share, capacity_unit, finding FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
UPDATE quota_sched.quota_share SET strategy = 'LEND', borrow_limit = -1
 WHERE job_queue = 'cr_budget' AND name = 'nlp';
SELECT count(*) AS findings FROM quota_sched.config_review WHERE job_queue = 'cr_budget';
