-- The seed example's configuration (AWS Batch quota management): one
-- environment of three ml.g5.xlarge instances, three shares of one
-- instance each; the roles of two teams and of the launcher agents.
-- demo/run runs this, starts two agents, then runs demo/demo.sql.
\pset footer off
\echo '== configuration: three ml.g5.xlarge instances, three shares of one instance each'
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('ml-env', '{"ml.g5.xlarge": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ml-queue', 'ml-env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('ml-queue', 'QS1', '{"ml.g5.xlarge": 1}', 'LEND_AND_BORROW', 200, true),
	   ('ml-queue', 'QS2', '{"ml.g5.xlarge": 1}', 'LEND', -1, false),
	   ('ml-queue', 'QS3', '{"ml.g5.xlarge": 1}', 'RESERVE', -1, false);
SELECT name, capacity_limits, strategy, borrow_limit, in_share_preemption
  FROM quota_sched.quota_share ORDER BY name;
CREATE ROLE team_qs1 IN ROLE quota_sched_user;
CREATE ROLE team_qs2 IN ROLE quota_sched_user;
-- the login of the launcher agents (trust authentication in this cluster)
CREATE ROLE launcher LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('launcher', NULL);
