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
