# Monitoring end to end (issue 25, items 3 and 4), with the real servers:
# the shipped alert rules (monitoring/quota_sched-alerts.yml) pass
# `promtool check rules` and their tests (`promtool test rules`), and name
# only metrics that metrics() has; then the route of doc/operations.md
# ("Scraping the metrics"): metrics() written to a .prom file, atomically,
# Debian's node_exporter serving it with its textfile collector, Debian's
# Prometheus scraping that with the rules loaded.  Prometheus's HTTP API
# then answers with the figures the database has: a share's in-use and
# idle instances, the worker's up, a registered agent's live and
# instances; the rule for a spent budget fires for the share whose budget
# is spent and for no other, the rule for an agent down is pending or
# firing for the ACTIVE agent last seen long ago and for no other (not
# for a live one, nor for a dead one that drains and holds nothing), and
# the worker-down alert is not even pending.  The binaries come from test/setup.sh
# (QS_PROMTOOL, QS_PROMETHEUS, QS_NODE_EXPORTER); without them the test
# is skipped, unless QS_REQUIRE_PROMTOOL is set (test/run sets it).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use HTTP::Tiny;
use JSON::PP;
use Cwd qw(abs_path);
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents qw(agents_node);

my ($promtool, $prometheus, $exporter) =
  map { $ENV{$_} // '' } qw(QS_PROMTOOL QS_PROMETHEUS QS_NODE_EXPORTER);
if (grep { $_ eq '' || !-x $_ } $promtool, $prometheus, $exporter)
{
	if ($ENV{QS_REQUIRE_PROMTOOL})
	{
		fail('QS_PROMTOOL, QS_PROMETHEUS and QS_NODE_EXPORTER name the binaries');
		done_testing();
		exit;
	}
	plan skip_all => 'promtool, prometheus or node_exporter is not available';
}
my $rules = abs_path('monitoring/quota_sched-alerts.yml');

# 1. The rules, and their tests
my ($out, $err) = ('', '');
ok(IPC::Run::run([ $promtool, 'check', 'rules', $rules ], '>', \$out, '2>', \$err),
	'promtool check rules: the rules parse') or diag("$out$err");
($out, $err) = ('', '');
ok(IPC::Run::run([ $promtool, 'test', 'rules', abs_path('monitoring/quota_sched-alerts.test.yml') ],
		'>', \$out, '2>', \$err),
	'promtool test rules: each rule fires on its series and not on the others') or diag("$out$err");

# 2. A database with the worker, a queue, and jobs the worker dispatches
my $node = agents_node('prometheus');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
CREATE ROLE pm_monitor LOGIN IN ROLE pg_monitor;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('pm_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('pm_queue', 'pm_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, budget)
VALUES ('pm_queue', 'pm_busy', '{"gpu": 4}', 'RESERVE', '{}'),
	   ('pm_queue', 'pm_broke', '{"gpu": 4}', 'RESERVE', '{"gpu": 0}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('pm_a', 'pm_queue', 'pm_busy', 'gpu', 2), ('pm_b', 'pm_queue', 'pm_busy', 'gpu', 1);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM quota_sched.job WHERE state = 'SCHEDULED'"),
	'the worker dispatches the two jobs');
my %db = map { split /\|/ } split /\n/, $node->safe_psql('postgres',
	"SELECT quota_share || '|' || in_use || E'\\n' || quota_share || '_idle|' || idle
	   FROM quota_sched.share_usage WHERE job_queue = 'pm_queue'");
is("$db{pm_busy}/$db{pm_busy_idle}", '3/1', 'the database: pm_busy holds 3 gpus, 1 idle');

# The fleet: pm_a live (its heartbeat's lease of an hour), pm_b drained
# and pm_c ACTIVE, both last seen two minutes ago (not live), holding
# nothing.
$node->safe_psql('postgres', <<'SQL');
CREATE ROLE pm_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('pm_host', 'pm_queue');
SET ROLE pm_host;
SELECT count(*) FROM quota_sched.agent_ready('pm_a', 'pm_queue', 'gpu', 8, '{"rack": "r1"}', '127.0.0.1');
SELECT count(*) FROM quota_sched.heartbeat('pm_a', '1 hour');
SELECT count(*) FROM quota_sched.agent_ready('pm_b', 'pm_queue', 'gpu', 4);
SELECT count(*) FROM quota_sched.agent_ready('pm_c', 'pm_queue', 'gpu', 4);
RESET ROLE;
SELECT count(*) FROM quota_sched.drain_agent('pm_b');
UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name IN ('pm_b', 'pm_c');
SQL
is($node->safe_psql('postgres',
		"SELECT string_agg(agent || ' ' || live || ' ' || state, ', ' ORDER BY agent) FROM quota_sched.agents"),
	'pm_a true ACTIVE, pm_b false DRAINING, pm_c false ACTIVE', 'the database: pm_a live, pm_b and pm_c not');

# Every metric the rules name is one that metrics() has (a # TYPE line).
my $metrics = $node->safe_psql('postgres', 'SELECT quota_sched.metrics()',
	extra_params => [ '-U', 'pm_monitor' ]);
my %typed = map { /^# TYPE (\S+)/ ? ($1 => 1) : () } split /\n/, $metrics;
my %named = map { $_ => 1 } (slurp_file($rules) =~ /\b(quota_sched_[a-z_]+)/g);
my @unknown = grep { !$typed{$_} } sort keys %named;
ok(keys %named >= 8 && !@unknown, 'the rules name ' . scalar(keys %named) . ' metrics, all of metrics()')
  or diag("not in metrics(): @unknown");

# 3. The textfile route: the file written as the docs' cron line writes it
my $dir = PostgreSQL::Test::Utils::tempdir;
mkdir "$dir/textfile" or die "mkdir: $!";
sub write_metrics
{
	my $text = $node->safe_psql('postgres', 'SELECT quota_sched.metrics()',
		extra_params => [ '-U', 'pm_monitor' ]);
	open my $fh, '>', "$dir/textfile/quota_sched.prom.tmp" or die "open: $!";
	print $fh "$text\n";
	close $fh or die "close: $!";
	rename "$dir/textfile/quota_sched.prom.tmp", "$dir/textfile/quota_sched.prom" or die "rename: $!";
}
write_metrics();

my $exporter_port = PostgreSQL::Test::Cluster::get_free_port();
my $prom_port = PostgreSQL::Test::Cluster::get_free_port();
my $logdir = $PostgreSQL::Test::Utils::log_path;
my $ne = IPC::Run::start(
	[
		$exporter, '--collector.disable-defaults', '--collector.textfile',
		"--collector.textfile.directory=$dir/textfile", "--web.listen-address=127.0.0.1:$exporter_port"
	],
	'<', \undef, '>', "$logdir/021_node_exporter.log", '2>&1');
open my $cf, '>', "$dir/prometheus.yml" or die "open: $!";
print $cf <<"YML";
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $rules
scrape_configs:
  - job_name: quota_sched
    static_configs:
      - targets: ['127.0.0.1:$exporter_port']
YML
close $cf or die "close: $!";
my $prom = IPC::Run::start(
	[
		$prometheus, "--config.file=$dir/prometheus.yml", "--storage.tsdb.path=$dir/tsdb",
		"--web.listen-address=127.0.0.1:$prom_port"
	],
	'<', \undef, '>', "$logdir/021_prometheus.log", '2>&1');

my $http = HTTP::Tiny->new(timeout => 5);
# query(PROMQL): the result vector of an instant query ([] until it answers)
sub query
{
	my ($q) = @_;
	my $r = $http->get("http://127.0.0.1:$prom_port/api/v1/query?query=" . uri($q));
	return [] unless $r->{success};
	return decode_json($r->{content})->{data}{result};
}
sub uri
{
	my ($s) = @_;
	$s =~ s/([^A-Za-z0-9\-_.~])/sprintf('%%%02X', ord $1)/ge;
	return $s;
}
# poll(CODE): whether CODE returns true within the timeout (rewriting the
# metrics file meanwhile, as the cron job would)
sub poll
{
	my ($code) = @_;
	my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
	while (time() < $deadline)
	{
		return 1 if $code->();
		write_metrics();
		usleep(200_000);
	}
	return 0;
}
sub value
{
	my ($q) = @_;
	my $r = query($q);
	return @$r == 1 ? $r->[0]{value}[1] : undef;
}

ok(poll(sub { (value('up{job="quota_sched"}') // '') eq '1' }), 'Prometheus scrapes node_exporter (up is 1)');
ok(poll(sub { defined value('node_textfile_mtime_seconds{file=~"(.*/)?quota_sched[.]prom"}') }),
	'node_exporter exports the mtime of the file as the rule QuotaSchedMetricsStale reads it');
ok( poll(sub { (value('quota_sched_share_in_use_instances{quota_share="pm_busy"}') // '') eq $db{pm_busy} }),
	"Prometheus has pm_busy's in-use instances as the database has them ($db{pm_busy})");
is(value('quota_sched_share_idle_instances{quota_share="pm_busy",capacity_unit="gpu"}'),
	$db{pm_busy_idle}, "and its idle instances ($db{pm_busy_idle})");
my $up = $node->safe_psql('postgres', 'SELECT running::int FROM quota_sched.worker_stats()');
is($up, '1', 'the database: the worker runs');
is(value('quota_sched_worker_up'), $up, "Prometheus: quota_sched_worker_up is $up");
is(value('quota_sched_agent_live{agent="pm_a",job_queue="pm_queue",capacity_unit="gpu"}') . ' '
	  . value('quota_sched_agent_instances{agent="pm_a"}'),
	'1 8', 'Prometheus: the agent pm_a is live, with its 8 instances');
is(value('quota_sched_agent_live{agent="pm_c"}'), '0', 'and pm_c is not live');

# the rules: the spent budget fires (no `for`), for pm_broke alone
sub alerts
{
	my $r = $http->get("http://127.0.0.1:$prom_port/api/v1/alerts");
	return [] unless $r->{success};
	return decode_json($r->{content})->{data}{alerts};
}
ok( poll(sub { grep { $_->{labels}{alertname} eq 'QuotaSchedBudgetSpent' && $_->{state} eq 'firing' } @{ alerts() } }),
	'the alert QuotaSchedBudgetSpent fires');
my @fired = map { "$_->{labels}{alertname}:" . ($_->{labels}{quota_share} // '') . ":$_->{state}" } @{ alerts() };
is_deeply([ grep { /^QuotaSchedBudget/ } @fired ], ['QuotaSchedBudgetSpent:pm_broke:firing'],
	'for pm_broke, whose budget of 0 is spent, and for no other share');
ok(!grep({ /^QuotaSchedWorker/ } @fired), 'no alert about the worker, pending or firing') or diag("@fired");
ok( poll(sub { grep { $_->{labels}{alertname} eq 'QuotaSchedAgentDown' } @{ alerts() } }),
	'the alert QuotaSchedAgentDown is pending (or firing)');
my @down = sort map { $_->{labels}{agent} } grep { $_->{labels}{alertname} eq 'QuotaSchedAgentDown' } @{ alerts() };
is("@down", 'pm_c', 'for pm_c, ACTIVE and not live, and for no other agent');

$prom->signal('TERM');
$ne->signal('TERM');
$prom->finish;
$ne->finish;
$node->stop;
done_testing();
