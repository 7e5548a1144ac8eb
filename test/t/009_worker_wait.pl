# The background worker when quota_sched.database does not exist (issue 10,
# item 19): the launcher waits quietly, one LOG line, until the database is
# created, then starts the worker there without a restart of the server; when
# the database is dropped, the worker goes and the launcher waits again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use QsWorker;

my $node = PostgreSQL::Test::Cluster->new('wait');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'later'
quota_sched.naptime = '1s'
CONF
$node->start;

my $waiting = qr/database "later" does not exist; waiting for it/;

# the log from offset on, and how many of its lines match re
sub log_from
{
	my ($offset) = @_;
	return slurp_file($node->logfile, $offset);
}

sub count_lines
{
	my ($text, $re) = @_;
	return scalar(grep { /$re/ } split /\n/, $text);
}

sub workers
{
	my ($type) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched $type'");
}

# Waiting: one LOG line over 15 s (the worker used to die FATAL every 10 s).
# Not a wait for the system: that nothing comes for longer than the 10 s.
sleep 15;
my $log = log_from(0);
is(count_lines($log, $waiting), 1, 'it says so once');
is(count_lines($log, qr/FATAL/), 0, 'and nothing dies');
is(workers('launcher'), '1', 'the launcher runs');
is(workers('worker'), '0', 'no worker yet');

# The database is created: the worker starts there and runs passes.
$node->safe_psql('postgres', 'CREATE DATABASE later');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"
		  . " AND datname = 'later'"),
	'once the database exists, the worker runs in it');
$node->safe_psql('later', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('l_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('l_queue', 'l_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('l_queue', 'l_share', '{"gpu": 4}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('first', 'l_queue', 'l_share', 'gpu');
SQL
ok($node->poll_query_until('later',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'first'"),
	'the worker dispatches a job there');
isnt($node->safe_psql('later', 'SELECT count(*) FROM quota_sched.pass_log'), '0',
	'and logs its passes');

# Commits still wake the worker (the shared slot names it, not the
# launcher): with a naptime of an hour, a job is dispatched at once.
$node->safe_psql('postgres', "ALTER SYSTEM SET quota_sched.naptime = '1h'; SELECT pg_reload_conf()");
ok(wait_worker_quiet($node, 3, 'later'), 'the worker no longer polls every second');
my $t0 = time;
$node->safe_psql('later',
	"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)"
	  . " VALUES ('woken', 'l_queue', 'l_share', 'gpu')");
ok($node->poll_query_until('later',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'woken'"),
	'a commit wakes the worker');
cmp_ok(time - $t0, '<', 30, 'well before the naptime of an hour');
$node->safe_psql('postgres', "ALTER SYSTEM RESET quota_sched.naptime; SELECT pg_reload_conf()");

# The database is dropped (a plain DROP DATABASE: the worker steps aside):
# the worker goes and the launcher waits again, saying so once.
my $offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP DATABASE later');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'DROP DATABASE: the worker goes');
ok($node->wait_for_log($waiting, $offset), 'the launcher waits again');
# Not a wait for the system: that nothing comes for longer than the
# launcher's restart delay (10 s).
sleep 12;
$log = log_from($offset);
is(count_lines($log, $waiting), 1, 'it says so once');
is(count_lines($log, qr/FATAL:.*does not exist/), 0, 'and nothing dies for the missing database');
is(workers('launcher'), '1', 'the launcher still runs');
is(workers('worker'), '0', 'and no worker');

# Created again, it is served again.
$node->safe_psql('postgres', 'CREATE DATABASE later');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"
		  . " AND datname = 'later'"),
	'created again, the database gets its worker again');

# DROP DATABASE ... WITH (FORCE) ends the worker too.
$offset = -s $node->logfile;
$node->safe_psql('postgres', 'DROP DATABASE later WITH (FORCE)');
ok($node->wait_for_log($waiting, $offset), 'WITH (FORCE): the launcher waits again');
is(workers('worker'), '0', 'and no worker runs');

# Stopping the server is prompt.
$t0 = time;
$node->stop;
cmp_ok(time - $t0, '<', 10, 'the server stops promptly');
done_testing();
