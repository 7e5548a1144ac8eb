# Without shared_preload_libraries = 'quota_sched' everything but the worker
# works, and pg_cron can run the passes (scheduling.md 6).  Debian's pg_cron 1.4
# schedules by the minute, so this test waits up to a minute and a half.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('cron');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'pg_cron'
cron.database_name = 'postgres'
cron.use_background_workers = on
max_worker_processes = 16
CONF
$node->start;

$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION pg_cron;
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('c_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('c_queue', 'c_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('c_queue', 'c_share', '{"gpu": 1}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('c_job', 'c_queue', 'c_share', 'gpu');
SQL

is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'0', 'not preloaded: no worker');
is($node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE name = 'c_job'"),
	'RUNNABLE', 'nothing runs passes yet');

$node->safe_psql('postgres',
	q{SELECT cron.schedule('quota_sched', '* * * * *', $$SELECT count(*) FROM quota_sched.run_pass()$$)});
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'c_job'"),
	'pg_cron runs the pass, which dispatches the job');
is($node->safe_psql('postgres',
		"SELECT count(*) > 0 FROM cron.job_run_details WHERE status = 'succeeded'"),
	't', 'the cron run succeeded');

$node->stop;
done_testing();
