-- bench/submit_full.sql: one job submission through the full path
-- (BEFORE INSERT validation trigger, RLS, job_event history trigger).
\set prio random(0, 9999)
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload)
VALUES ('bench_job', 'bench_queue', 'bench_share', :prio, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}');
