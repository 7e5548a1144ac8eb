# The settings of quota_sched in postgresql.conf of a server that does not
# preload the library (doc/operations.md, "Without the worker: pg_cron"):
# a quota_sched.database line left there must not give a WARNING in every
# session that loads the library (MarkGUCPrefixReserved removes the
# placeholders of a prefix that the library does not define); a misspelt
# quota_sched.* name still does, as PostgreSQL says of any.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('no_preload');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
quota_sched.database = 'postgres'
quota_sched.naptime = '500ms'
quota_sched.stop_timeout = '2min'
CONF
$node->start;

$node->safe_psql('postgres', 'CREATE EXTENSION quota_sched');

# A session that loads the library: a C function of it (and a trigger).
my $load = q{
	SELECT running FROM quota_sched.worker_stats();
	INSERT INTO quota_sched.service_environment VALUES ('np_env_' || md5(random()::text), '{"gpu": 1}');
};

my ($ret, $stdout, $stderr) = $node->psql('postgres', $load);
is($ret, 0, 'a session that loads the library succeeds');
is($stdout, 'f', 'not preloaded: no worker');
is($stderr, '', 'and gives no WARNING for the quota_sched.* lines of postgresql.conf');

($ret, $stdout, $stderr) = $node->psql('postgres', $load . q{
	SHOW quota_sched.database;
	SHOW quota_sched.naptime;
	SELECT context FROM pg_settings WHERE name = 'quota_sched.database';
});
is($stdout, "f\npostgres\n500ms\nsighup",
	'the settings keep their values; quota_sched.database is read at reload, and does nothing');
is($stderr, '', 'a second session: no WARNING either');

# A name the library does not define is a mistake: PostgreSQL says so.
$node->append_conf('postgresql.conf', "quota_sched.napptime = '1s'\n");
$node->reload;
ok( $node->poll_query_until(
		'postgres', "SELECT current_setting('quota_sched.napptime', true)", '1s'),
	'a new session has the misspelt line (the reload is done)');
($ret, $stdout, $stderr) = $node->psql('postgres', $load);
like($stderr, qr/invalid configuration parameter name "quota_sched\.napptime", removing it/,
	'a misspelt quota_sched.* name gives the WARNING');
unlike($stderr, qr/quota_sched\.database/, 'which names it alone');

$node->stop;
done_testing();
