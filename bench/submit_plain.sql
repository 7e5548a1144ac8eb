-- bench/submit_plain.sql: the same INSERT into bench.plain_job, a copy of
-- quota_sched.job without triggers or RLS (the baseline).
\set prio random(0, 9999)
INSERT INTO bench.plain_job (name, job_queue, quota_share, priority, capacity_unit, instance_count, payload)
VALUES ('bench_job', 'bench_queue', 'bench_share', :prio, 'ml.g5.xlarge', 1, '{"command": ["python", "train.py"]}');
