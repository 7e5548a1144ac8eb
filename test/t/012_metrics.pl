# metrics() with the worker running (issue 11, item 6): the worker's
# metrics; a queue whose lock a session holds shows its rounds given up, in
# a row and in all; a job whose row a user holds is shown passed over; the
# output passes `promtool check metrics` (Debian's prometheus package,
# which test/setup.sh unpacks: QS_PROMTOOL); after a restart the counters of
# passes start again from zero while those of jobs keep their values; a
# restored copy of the database in the same cluster shows neither the
# worker nor the passes of the original; in a cluster without the preload,
# metrics() says the counters of passes and of the worker are not kept,
# and shows none.  The fleet (0.4): a series per registered agent, with
# the figures of the view agents (live, draining and since when, its
# instances, held and free, when it was last seen).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('metrics');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.naptime = '200ms'
CONF
$node->start;
# The queue and its share in one transaction: a rollup (the worker's, after
# its first full round) that found the queue without its share, with no
# history at all, would roll it up to the start of the hour at once, and
# metrics() would show a rollup (4. below).  The queue has a fair_half_life
# and the share a budget (far from spent), so that every metric is there.
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
CREATE ROLE mt_member LOGIN IN ROLE quota_sched_user;
CREATE ROLE mt_monitor LOGIN IN ROLE pg_monitor;
BEGIN;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('mt_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment, borrow_order, fair_half_life)
VALUES ('mt_queue', 'mt_env', 'FAIR', '1 hour');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, budget)
VALUES ('mt_queue', 'mt_share', '{"gpu": 4}', 'RESERVE', '{"gpu": 1000}');
COMMIT;
SQL

# The value of one sample of metrics(), read as the monitoring role;
# undef when absent.
sub sample
{
	my ($metric, $labels) = @_;
	my $text = $node->safe_psql('postgres', 'SELECT quota_sched.metrics()',
		extra_params => [ '-U', 'mt_monitor' ]);
	for my $line (split /\n/, $text)
	{
		return $1 if $line =~ /^\Q$metric$labels\E (\S+)$/;
	}
	return undef;
}

sub submit
{
	my ($name) = @_;
	$node->safe_psql('postgres', qq{
		SET ROLE mt_member;
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
		VALUES ('$name', 'mt_queue', 'mt_share', 'gpu')});
}

my $q = '{job_queue="mt_queue"}';
my $s = '{job_queue="mt_queue",quota_share="mt_share",capacity_unit="gpu"}';

# 1. The worker: up, its rounds counted, its last round recent.
submit('first');
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'first'"),
	'the worker dispatches');
is(sample('quota_sched_worker_up', ''), '1', 'the worker is up');
my $rounds = sample('quota_sched_worker_rounds_total', '');
ok($node->poll_query_until('postgres', qq{
		SELECT rounds > $rounds FROM quota_sched.worker_stats()}), 'its rounds are counted');
my $last = sample('quota_sched_worker_last_round_timestamp_seconds', '');
my $now = $node->safe_psql('postgres', 'SELECT extract(epoch FROM now())');
ok(abs($now - $last) < 60, 'its last round was a moment ago');
ok(sample('quota_sched_worker_start_timestamp_seconds', '') <= $last, 'it started before');
is(sample('quota_sched_dispatches_total', $s), '1', 'one dispatch');
ok(sample('quota_sched_passes_total', $q) >= 1, 'passes are counted');
is(sample('quota_sched_share_in_use_instances', $s), '1', 'one instance in use');

# 2. A session holds the queue's lock: the rounds that give up its pass are
# counted, in a row and in all; when it lets go, the count in a row goes
# back to 0 and the total stays.
my $admin = $node->background_psql('postgres');
$admin->query_safe("BEGIN; SELECT count(*) FROM quota_sched.run_pass('mt_queue');");
ok($node->poll_query_until('postgres', q{
		SELECT given_up_in_a_row >= 3 FROM quota_sched.pass_stats() WHERE job_queue = 'mt_queue'}),
	'rounds given up are counted');
ok(sample('quota_sched_passes_given_up_in_a_row', $q) >= 3, 'metrics() shows them in a row');
$admin->query_safe("COMMIT;");
ok($node->poll_query_until('postgres', q{
		SELECT given_up_in_a_row = 0 FROM quota_sched.pass_stats() WHERE job_queue = 'mt_queue'}),
	'once the lock is let go, none in a row');
ok(sample('quota_sched_passes_given_up_total', $q) >= 3, 'and the total stays');
$admin->quit;

# 3. A user holds the row of a waiting job: it is passed over.
$node->safe_psql('postgres', "UPDATE quota_sched.service_environment SET state = 'DISABLED'");
submit('held');
my $member = $node->background_psql('postgres');
$member->query_safe("SET ROLE mt_member; BEGIN;");
$member->query_safe("SELECT name FROM quota_sched.job WHERE name = 'held' FOR UPDATE;");
$node->safe_psql('postgres', "UPDATE quota_sched.service_environment SET state = 'ENABLED'");
ok($node->poll_query_until('postgres', "SELECT cardinality(passed_over) = 1 FROM quota_sched.queue_status"),
	'the held job is passed over');
is(sample('quota_sched_passed_over_jobs', $q), '1', 'metrics() shows it');
ok(sample('quota_sched_passed_over_passes', $q) >= 1, 'and for how many passes');

# 4. The whole output, through promtool: every metric is there (a
# terminate for the stop requests) but the rollup's, which appears once an
# hour has been rolled up (sql/metrics.sql).  promtool must say nothing:
# its lint (a unit other than Prometheus's base units, seconds and bytes;
# a counter without _total) is a failure here, whatever its exit code.
$node->safe_psql('postgres', q{
	SELECT count(*) FROM quota_sched.agent_ready('mt_agent', 'mt_queue', 'gpu', 4, '{"rack": "r1"}');
	SELECT count(*) FROM quota_sched.claim('mt_agent', 'mt_queue');
	SELECT quota_sched.terminate(id) FROM quota_sched.job WHERE name = 'first';});
is(sample('quota_sched_stop_requests_total', '{job_queue="mt_queue",quota_share="mt_share",capacity_unit="gpu",reason="TERMINATED"}'),
	'1', 'a stop requested by a terminate');

# The fleet: mt_agent (4 instances) holds the job "first", whose stop is
# pending; mt_drained (2) is drained and holds nothing; mt_remote has no
# bound; mt_gone was last seen two minutes ago, with no lease.
$node->safe_psql('postgres', q{
	SELECT count(*) FROM quota_sched.agent_ready('mt_drained', 'mt_queue', 'gpu', 2);
	SELECT count(*) FROM quota_sched.drain_agent('mt_drained');
	SELECT count(*) FROM quota_sched.agent_ready('mt_remote', 'mt_queue', 'gpu');
	SELECT count(*) FROM quota_sched.agent_ready('mt_gone', 'mt_queue', 'gpu', 1);
	UPDATE quota_sched.agent SET last_seen = now() - interval '2 minutes' WHERE name = 'mt_gone';});
my %fleet = map { my ($a, $v) = split /\|/; ($a => $v) } split /\n/, $node->safe_psql('postgres', q{
	SELECT agent || '|' || concat_ws(' ', live::int, (state = 'DRAINING')::int, coalesce(instances::text, '-'),
									held_instances, coalesce(free_instances::text, '-'))
	  FROM quota_sched.agents});
# one agent's sample of the metrics read once ('-': absent)
my $fleet_text = $node->safe_psql('postgres', 'SELECT quota_sched.metrics()',
	extra_params => [ '-U', 'mt_monitor' ]);
sub agent_sample
{
	my ($metric, $agent) = @_;
	my $series = qq(quota_sched_agent_$metric\{agent="$agent",job_queue="mt_queue",capacity_unit="gpu"\});
	return $fleet_text =~ /^\Q$series\E (\S+)$/m ? $1 : '-';
}
foreach my $agent (sort keys %fleet)
{
	is(join(' ', map { agent_sample($_, $agent) } qw(live draining instances held_instances free_instances)),
		$fleet{$agent}, "$agent: metrics() has the agents view's figures ($fleet{$agent})");
}
is_deeply(\%fleet, { mt_agent => '1 0 4 1 3', mt_drained => '1 1 2 0 2', mt_remote => '1 0 - 0 -',
		mt_gone => '0 0 1 0 1' },
	'the view: mt_agent live, holding 1 of its 4; mt_drained draining; mt_remote with no bound; mt_gone not live');
my %times = map { my ($a, $v) = split /\|/; ($a => $v) } split /\n/, $node->safe_psql('postgres', q{
	SELECT name || '|' || extract(epoch FROM last_seen) || ' '
		   || coalesce(CASE WHEN state = 'DRAINING' THEN extract(epoch FROM state_changed_at)::text END, '-')
	  FROM quota_sched.agent});
foreach my $agent (sort keys %times)
{
	is(agent_sample('last_seen_timestamp_seconds', $agent) . ' '
		  . agent_sample('draining_since_timestamp_seconds', $agent),
		$times{$agent}, "$agent: when it was last seen, and drains since (only when it drains)");
}
my $text = $node->safe_psql('postgres', 'SELECT quota_sched.metrics()',
	extra_params => [ '-U', 'mt_monitor' ]) . "\n";
my $file = $node->basedir . '/metrics.txt';
PostgreSQL::Test::Utils::append_to_file($file, $text);
my @families = ($text =~ /^# TYPE (\S+)/mg);
# Once an hour's edge has passed since the history began, the worker has
# rolled up the hour before: then the rollup's family is there too.
my $rolled = $node->safe_psql('postgres', 'SELECT count(*) > 0 FROM quota_sched.usage_rollup') eq 't';
is(scalar(grep { /rollup/ } @families), $rolled ? 1 : 0,
	$rolled ? 'an hour is rolled up: its family is there' : 'no rollup yet');
is(scalar(@families), $rolled ? 38 : 37, 'every other metric family is there');
is(sample('quota_sched_stats_available', ''), '1', 'preloaded: the counters of passes are kept');
SKIP:
{
	my $promtool = $ENV{QS_PROMTOOL} // '';
	skip 'promtool is not available (QS_PROMTOOL)', 1
	  if $promtool eq '' && !$ENV{QS_REQUIRE_PROMTOOL};
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $promtool, 'check', 'metrics' ], '<', $file, '>', \$out, '2>', \$err);
	ok($ok && "$out$err" eq '', 'promtool check metrics accepts it, with no lint')
	  or diag("promtool: $out $err");
}
$member->query_safe("COMMIT;");
$member->quit;
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'held'"),
	'the held job is dispatched once let go');

# 5. A restart: passes count from zero again, jobs keep their counts.
my $dispatches = sample('quota_sched_dispatches_total', $s);
is($dispatches, '2', 'two dispatches');
my $passes = sample('quota_sched_passes_total', $q);
$node->restart;
is(sample('quota_sched_dispatches_total', $s), $dispatches, 'the count of dispatches survives a restart');
ok(sample('quota_sched_passes_total', $q) < $passes, 'the count of passes starts again');
ok($node->poll_query_until('postgres', q{
		SELECT running AND rounds > 0 FROM quota_sched.worker_stats()}), 'the worker runs again');

# 6. A restored copy of the database, in the same cluster (issue 37, item
# 5): shared memory is the server's, but the worker runs in postgres
# (quota_sched.database) and its passes are those of postgres's mt_queue.
# In the copy, which has a queue of the same name, worker_stats() says no
# worker runs, pass_stats() has no passes, and metrics() says the same;
# postgres still has them all.
my $tmp = PostgreSQL::Test::Utils::tempdir;
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/postgres.dump", '-d', 'postgres' ],
	'pg_dump -Fc postgres');
$node->safe_psql('postgres', 'CREATE DATABASE mt_copy');
{
	local $ENV{PGOPTIONS} = '-c session_replication_role=replica';
	$node->command_ok([ 'pg_restore', '--exit-on-error', '-d', 'mt_copy', "$tmp/postgres.dump" ],
		'restored as mt_copy');
}
ok($node->poll_query_until('postgres', q{
		SELECT passes > 0 FROM quota_sched.pass_stats() WHERE job_queue = 'mt_queue'}),
	'postgres: the worker passes mt_queue');
is($node->safe_psql('mt_copy', q{
		SELECT concat_ws(' ', running, started_at IS NULL, last_round_at IS NULL, rounds)
		  FROM quota_sched.worker_stats()}),
	'f t t 0', 'mt_copy: worker_stats() says no worker runs there, with no times and no rounds');
is($node->safe_psql('postgres', 'SELECT running AND rounds > 0 FROM quota_sched.worker_stats()'),
	't', 'postgres: the worker runs, with its rounds');
is($node->safe_psql('mt_copy', 'SELECT count(*) FROM quota_sched.pass_stats()'), '0',
	'mt_copy: pass_stats() has none of the passes of postgres\'s mt_queue');
my $copy_text = $node->safe_psql('mt_copy', 'SELECT quota_sched.metrics()');
like($copy_text, qr/^quota_sched_worker_up 0$/m, 'mt_copy: metrics() says the worker is not up');
unlike($copy_text, qr/^quota_sched_worker_(start|last_round|rounds)/m, 'nor shows its figures');
like($copy_text, qr/^quota_sched_passes_total\Q$q\E 0$/m, 'nor the passes of postgres');
is(sample('quota_sched_worker_up', ''), '1', 'postgres: metrics() says the worker is up');
ok(sample('quota_sched_passes_total', $q) > 0, 'and counts its passes');

$node->stop;

# 7. Without the preload there are no counters of passes or of the worker
# (issue 20, item 9): metrics() says so, with quota_sched_stats_available
# 0, and shows none of their figures, even after a pass (zeros would read
# as "no pass ran"); the other figures are there, and promtool takes it.
my $plain = PostgreSQL::Test::Cluster->new('metrics_plain');
$plain->init;
$plain->start;
$plain->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('mp_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('mp_queue', 'mp_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('mp_queue', 'mp_share', '{"gpu": 1}', 'RESERVE');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('mp_job', 'mp_queue', 'mp_share', 'gpu');
SELECT count(*) FROM quota_sched.run_pass('mp_queue');
SQL
my $plain_text = $plain->safe_psql('postgres', 'SELECT quota_sched.metrics()') . "\n";
like($plain_text, qr/^quota_sched_stats_available 0$/m, 'not preloaded: metrics() says the counters are not kept');
like($plain_text, qr/^# HELP quota_sched_stats_available .*preloaded/m, 'its HELP says why');
unlike($plain_text, qr/^quota_sched_(passes|last_pass|worker_(start|last_round|rounds))/m,
	'no figure of passes or of the worker');
like($plain_text, qr/^quota_sched_worker_up 0$/m, 'the worker is not up');
like($plain_text, qr/^quota_sched_dispatches_total\{job_queue="mp_queue",[^}]*\} 1$/m,
	'the figures of jobs are there');
SKIP:
{
	my $promtool = $ENV{QS_PROMTOOL} // '';
	skip 'promtool is not available (QS_PROMTOOL)', 1
	  if $promtool eq '' && !$ENV{QS_REQUIRE_PROMTOOL};
	my $plain_file = $plain->basedir . '/metrics.txt';
	PostgreSQL::Test::Utils::append_to_file($plain_file, $plain_text);
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $promtool, 'check', 'metrics' ], '<', $plain_file, '>', \$out, '2>', \$err);
	ok($ok && "$out$err" eq '', 'promtool check metrics accepts it without the preload, with no lint')
	  or diag("promtool: $out $err");
}
$plain->stop;
done_testing();
