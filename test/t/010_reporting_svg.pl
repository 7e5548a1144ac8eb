# utilization_svg() (issue 11, item 5) against a real history, checked by
# xmllint: a few seconds of passes (a share on its own capacity and on
# borrowed capacity, a job terminated, another share taking its capacity)
# give a chart in buckets of a second, written to a file as `psql -At`
# would; xmllint parses it, and its bars and lines, counted with XPath,
# are those of utilization() over the same range.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(sleep);

my $node = PostgreSQL::Test::Cluster->new('svg');
$node->init;
$node->start;

$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('svg_env', '{"gpu": 3}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('svg_queue', 'svg_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('svg_queue', 'lender', '{"gpu": 1}', 'LEND'),
	   ('svg_queue', 'borrower', '{"gpu": 1}', 'LEND_AND_BORROW');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('b1', 'svg_queue', 'borrower', 'gpu'), ('b2', 'svg_queue', 'borrower', 'gpu');
SELECT count(*) FROM quota_sched.run_pass('svg_queue');
SQL

# Every event is stamped with its transaction's start: a second or more
# between the steps puts them in buckets of their own.  (The clock, not a
# wait for the system: no worker runs.)
sleep(1.2);
$node->safe_psql('postgres', <<'SQL');
SELECT state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'b2'));
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('l1', 'svg_queue', 'lender', 'gpu');
SQL
$node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.run_pass('svg_queue')");
# (the clock again: the last step's bucket ends before now)
sleep(1.2);

my ($from, $to) = split /\|/, $node->safe_psql('postgres',
	"SELECT date_trunc('second', min(at)), now() FROM quota_sched.config_event WHERE object = 'quota_share'");
my $args = "'svg_queue', '$from', '$to', '1 second'";

# The chart, as psql -At writes it (the demo's way).
my $file = PostgreSQL::Test::Utils::tempdir() . '/chart.svg';
my ($stdout, $stderr);
$node->psql('postgres', "SELECT quota_sched.utilization_svg($args)",
	stdout => \$stdout, stderr => \$stderr);
is($stderr, '', 'utilization_svg() runs');
open(my $fh, '>', $file) or die "$file: $!";
print $fh $stdout, "\n";
close($fh);

command_ok([ 'xmllint', '--noout', $file ], 'xmllint parses the chart');

# count(XPath) of the chart, by xmllint
sub xcount
{
	my ($xpath) = @_;
	my ($out, $err);
	IPC::Run::run([ 'xmllint', '--xpath', "count($xpath)", $file ], '>', \$out, '2>', \$err)
	  or die "xmllint --xpath $xpath: $err";
	chomp $out;
	return $out;
}

my %expected = split /[|\n]/, $node->safe_psql('postgres', <<SQL);
SELECT 'own', count(*) FILTER (WHERE own_instance_seconds > 0) FROM quota_sched.utilization($args)
UNION ALL
SELECT 'borrowed', count(*) FILTER (WHERE borrowed_instance_seconds > 0) FROM quota_sched.utilization($args)
UNION ALL
SELECT 'shares', count(DISTINCT (quota_share, capacity_unit)) FROM quota_sched.utilization($args)
 WHERE quota_share IS NOT NULL
SQL
note("utilization($args): bars of own instances $expected{own}, of borrowed $expected{borrowed}, "
	  . "share and unit pairs $expected{shares}");
cmp_ok($expected{own}, '>', 0, 'the history has own instances in use');
cmp_ok($expected{borrowed}, '>', 0, 'and borrowed ones');
is(xcount('//*[local-name()="rect"][@class="own"]'), $expected{own},
	'a bar of own instances for each bucket and share of utilization() that has them');
is(xcount('//*[local-name()="rect"][@class="borrowed"]'), $expected{borrowed},
	'a bar of borrowed instances for each that has them');
is(xcount('//*[local-name()="path"][@class="capacity"]'), $expected{shares},
	"a line of each share's own capacity");
is(xcount('//*[local-name()="path"][@class="env-capacity"]'), 1, "a line of the environment's");
is(xcount('/*[local-name()="svg" and namespace-uri()="http://www.w3.org/2000/svg"]'), 1,
	'the root is an SVG element');

$node->stop;
done_testing();
