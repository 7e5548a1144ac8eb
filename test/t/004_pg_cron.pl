# Without shared_preload_libraries = 'quota_sched' everything but the worker
# works, and pg_cron can run the passes (scheduling.md 6).  Debian's pg_cron 1.4
# schedules by the minute, so this test waits up to a minute and a half.
#
# The server listens on a Unix socket alone (as demo/run's), and pg_cron runs
# its jobs over libpq: they fail with "connection failed" until cron.host
# names the socket directory, and a job scheduled before that keeps
# "localhost" in cron.job.nodename until the UPDATE of doc/operations.md
# ("Without the worker: pg_cron") points it at the socket.
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
CONF
$node->start;
is($node->safe_psql('postgres', 'SHOW listen_addresses'), '', 'the server listens on a Unix socket alone');

# A job scheduled while cron.host is its default, localhost.
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION pg_cron;
SELECT cron.schedule('earlier', '* * * * *', 'SELECT 1');
SQL
is($node->safe_psql('postgres', "SELECT nodename FROM cron.job WHERE jobname = 'earlier'"),
	'localhost', 'a job scheduled before cron.host is set has localhost');

# cron.host: the socket directory (a postmaster setting).
my $socket_dir = $node->host;
$node->append_conf('postgresql.conf', "cron.host = '$socket_dir'\n");
$node->restart;

$node->safe_psql('postgres', <<'SQL');
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
is($node->safe_psql('postgres', "SELECT nodename FROM cron.job WHERE jobname = 'quota_sched'"),
	$socket_dir, 'a job scheduled after has the socket directory');
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'c_job'"),
	'pg_cron runs the pass over the socket, which dispatches the job');
# whether a run of the cron job named %s has ended; how its runs ended
my $ended = q{
	SELECT count(*) > 0 FROM cron.job_run_details
	 WHERE jobid = (SELECT jobid FROM cron.job WHERE jobname = '%s') AND status IN ('failed', 'succeeded')};
my $how = q{
	SELECT string_agg(DISTINCT status || CASE status WHEN 'failed' THEN ': ' || return_message ELSE '' END, ', ')
	  FROM cron.job_run_details
	 WHERE jobid = (SELECT jobid FROM cron.job WHERE jobname = '%s') AND status IN ('failed', 'succeeded')};
ok($node->poll_query_until('postgres', sprintf($ended, 'quota_sched')), 'the cron run of the pass ended');
is($node->safe_psql('postgres', sprintf($how, 'quota_sched')), 'succeeded', 'and succeeded');
ok($node->poll_query_until('postgres', sprintf($ended, 'earlier')), 'the job scheduled earlier has run too');
is($node->safe_psql('postgres', sprintf($how, 'earlier')),
	'failed: connection failed', 'and failed: localhost is no socket');

# The UPDATE of doc/operations.md points it at the socket as the other.
is($node->safe_psql('postgres', q{
		UPDATE cron.job SET nodename = current_setting('cron.host') WHERE nodename = 'localhost';
		SELECT count(DISTINCT nodename) || ' ' || min(nodename) FROM cron.job}),
	"1 $socket_dir", 'the documented UPDATE gives every job the socket directory');

$node->stop;
done_testing();
