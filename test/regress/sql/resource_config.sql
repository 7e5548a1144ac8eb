-- A job's capacity unit and instance count (scheduling.md 2): an explicit
-- column, or payload->'ResourceConfig' (InstanceType and InstanceCount, as
-- in a SageMaker CreateTrainingJob request), which must agree when both are
-- given; else instance_count is 1.  Each of the two is decided on its own.
\i test/regress/include/helpers.sql

INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('rc_env', '{"ml.g5.xlarge": 8, "ml.p4d.24xlarge": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('rc_queue', 'rc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, strategy, capacity_limits)
VALUES ('rc_queue', 'rc_share', 'LEND', '{"ml.g5.xlarge": 8, "ml.p4d.24xlarge": 2}');

-- Both from the payload.
INSERT INTO quota_sched.job (name, job_queue, quota_share, payload)
VALUES ('rc_01_both_from_payload', 'rc_queue', 'rc_share',
        '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}');
-- A whole CreateTrainingJob request as payload.
INSERT INTO quota_sched.job (name, job_queue, quota_share, payload)
VALUES ('rc_02_training_job_request', 'rc_queue', 'rc_share',
        '{"TrainingJobName": "llm-finetune",
          "AlgorithmSpecification": {"TrainingImage": "train:latest", "TrainingInputMode": "File"},
          "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 4, "VolumeSizeInGB": 50},
          "StoppingCondition": {"MaxRuntimeInSeconds": 86400}}');
-- InstanceCount absent: one instance.
INSERT INTO quota_sched.job (name, job_queue, quota_share, payload)
VALUES ('rc_03_type_only', 'rc_queue', 'rc_share',
        '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge"}}');
-- Columns that agree with ResourceConfig are taken (columns that disagree
-- are refused, below).
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES ('rc_04_unit_column_agrees', 'rc_queue', 'rc_share', 'ml.p4d.24xlarge',
        '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, instance_count, payload)
VALUES ('rc_05_count_column_agrees', 'rc_queue', 'rc_share', 2,
        '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, payload)
VALUES ('rc_06_both_columns_agree', 'rc_queue', 'rc_share', 'ml.p4d.24xlarge', 2,
        '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}');
-- The unit from the column, the count from the payload.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES ('rc_07_count_only_in_payload', 'rc_queue', 'rc_share', 'ml.g5.xlarge',
        '{"ResourceConfig": {"InstanceCount": 6}}');
-- No ResourceConfig, or no payload at all: one instance.
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES ('rc_08_no_resource_config', 'rc_queue', 'rc_share', 'ml.g5.xlarge',
        '{"command": ["python", "train.py"]}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('rc_09_no_payload', 'rc_queue', 'rc_share', 'ml.g5.xlarge');

-- The payload itself is stored as given.
SELECT name, capacity_unit, instance_count, payload->'ResourceConfig' AS resource_config
  FROM quota_sched.job WHERE job_queue = 'rc_queue' ORDER BY name COLLATE "C";

-- Bad values in ResourceConfig are refused like the columns they stand for:
-- InstanceType must be a string naming a unit of the environment (23514,
-- 23503); InstanceCount an integer >= 1 (23514).
SELECT resource_config,
       pg_temp.refused(format(
		$$INSERT INTO quota_sched.job (name, job_queue, quota_share, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', %L)$$,
		jsonb_build_object('ResourceConfig', resource_config::jsonb))) AS result
  FROM (VALUES ('{"InstanceType": 5}'),
               ('{"InstanceType": ["ml.g5.xlarge"]}'),
               ('{"InstanceType": true}'),
               ('{"InstanceType": "ml.trn1.32xlarge"}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": "2"}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": true}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": 0}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": 1.5}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": -1}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": 2147483648}'),
               ('{"InstanceType": "ml.g5.xlarge", "InstanceCount": 1e30}')) AS v(resource_config);

-- A column that disagrees with ResourceConfig is refused (23514): which
-- one the job should run with would be a guess.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', 'ml.g5.xlarge', '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, instance_count, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', 3, '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', 'ml.g5.xlarge', 5, '{"ResourceConfig": {"InstanceType": "ml.p4d.24xlarge", "InstanceCount": 2}}')$$);

-- An explicit column that is bad is refused, even when the payload has a
-- good value.
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, instance_count, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', 0, '{"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}}')$$);
SELECT pg_temp.refused($$INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload) VALUES ('rc_bad', 'rc_queue', 'rc_share', 'ml.trn1.32xlarge', '{"ResourceConfig": {"InstanceType": "ml.g5.xlarge"}}')$$);

-- None of the refused jobs was stored.
SELECT count(*) AS refused_jobs_stored FROM quota_sched.job WHERE name = 'rc_bad';

-- The counters of held capacity must match the jobs: no drift rows.
SELECT * FROM quota_sched.held_capacity_drift();

-- Clean up: end the jobs with the extension's triggers disabled
-- (session_replication_role = replica; there is no scheduler here), then
-- drop the configuration, which takes the jobs with it.
SET session_replication_role = replica;
UPDATE quota_sched.job SET state = 'FAILED' WHERE job_queue = 'rc_queue';
RESET session_replication_role;
DELETE FROM quota_sched.job_queue WHERE name = 'rc_queue';
DELETE FROM quota_sched.service_environment WHERE name = 'rc_env';
