# Runs the pgTAP suite (test/pgtap/*.sql) with pg_prove against a throwaway
# cluster with quota_sched preloaded.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('pgtap');
$node->init;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'quota_sched'\n");
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION pgtap; CREATE EXTENSION quota_sched;');

my @files = sort glob('test/pgtap/*.sql');
ok(scalar(@files) > 0, 'there are pgTAP files');
foreach my $file (@files)
{
	my ($stdout, $stderr);
	my $ok = IPC::Run::run(
		[ 'pg_prove', '--host', $node->host, '--port', $node->port,
		  '--dbname', 'postgres', '--username', $ENV{USER} // 'postgres', $file ],
		'>', \$stdout, '2>', \$stderr);
	diag($stdout) unless $ok;
	diag($stderr) unless $ok;
	ok($ok, "pg_prove $file");
}

$node->stop;
done_testing();
