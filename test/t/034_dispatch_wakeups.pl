# What makes a real agent claim (issue 42, item 4; scheduling.md 5.1,
# agents.md "The agent protocol" and "Waiting without LISTEN").  Every
# agent that listens hears every dispatch of the database, and an agent
# used to claim on each: a fleet of N hosts ran N claims a job.  A
# listening agent (--wake listen) now claims on a dispatch only when the
# payload names neither another queue nor another agent; an agent that
# waits with agent_wait (the default) is woken only by what concerns it.
# Two agents, wa and wb, hosts of one instance in w_queue, --noop; wb's
# login logs its statements, so its claims are counted in the server's
# log (its sessions' application_name is wake_b).  Ten jobs placed on wa
# one after the other, and five jobs of another queue, dispatched: wb
# claims for none of them.  Then wa drains and a job is placed on wb: wb
# claims it.  Once with wb listening, once with wb waiting (then its
# session is seen in agent_wait, holding no snapshot).  First, an agent
# whose login may not call agent_wait listens instead, and takes its work.  Heartbeats are 100
# s apart, so the claims they bring do not fall within the test.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
my $node = agents_node('wakeups');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('w_env', '{"gpu": 32}'), ('w_env2', '{"gpu": 32}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('w_queue', 'w_env'),
	('w_other', 'w_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('w_queue', 'a', '{"gpu": 32}', 'RESERVE'), ('w_other', 'o', '{"gpu": 32}', 'RESERVE');
CREATE ROLE w_a LOGIN IN ROLE quota_sched_agent;
CREATE ROLE w_b LOGIN IN ROLE quota_sched_agent;
CREATE ROLE w_c LOGIN IN ROLE quota_sched_agent;
ALTER ROLE w_b SET log_statement = 'all';
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('w_a', NULL), ('w_b', NULL), ('w_c', NULL);
-- w_c may not call agent_wait: its agent falls back to LISTEN
REVOKE EXECUTE ON PROCEDURE quota_sched.agent_wait(text, text, integer, text[], interval) FROM quota_sched_agent;
GRANT EXECUTE ON PROCEDURE quota_sched.agent_wait(text, text, integer, text[], interval) TO w_a, w_b;
SQL
QsAgents::init($node, '034_dispatch_wakeups');
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $sql = sub { return $node->safe_psql('postgres', $_[0]); };

# launch(NAME, LOGIN, APPLICATION_NAME, WAKE, LOG)
sub launch
{
	my ($name, $login, $app, $wake, $log) = @_;
	launch_agent($log,
		[
			$agent_bin, '--dbname', $node->connstr('postgres') . " user=$login application_name=$app",
			'--agent', $name, '--queue', 'w_queue', '--capacity-unit', 'gpu', '--instances', '1',
			'--noop', '--lease', '300', '--heartbeat', '100', '--wake', $wake,
			'--checkpoint-root', "$tmp/ckpt-$log"
		]);
}

# wb's claims so far: the lines of the server's log where its session runs
# the agent's prepared claim (qs_0)
sub claims_of_wb
{
	my $n = () = slurp_file($node->logfile) =~ /wake_b LOG:  execute qs_0:/g;
	return $n;
}

# submit(QUEUE, SHARE, NAME): a job of 1, its id
sub submit
{
	return $sql->(qq{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit,
		instance_count) VALUES ('$_[2]', '$_[0]', '$_[1]', 'gpu', 1) RETURNING id});
}

launch('wa', 'w_a', 'wake_a', 'wait', 'wa');
ok(wait_for_log('wa', qr/connected: .*; waiting with agent_wait/), 'wa waits with agent_wait');
# an agent whose first agent_wait fails (here 42501) listens instead, and
# still takes its work: a job placed on it while wa drains
launch('wc', 'w_c', 'wake_c', 'wait', 'wc');
ok(wait_for_log('wc', qr/connected: .*; listening/), 'wc, refused agent_wait, listens');
ok(wait_for_log('wc', qr/registered for queue w_queue/), 'wc registered');
$sql->("SELECT state FROM quota_sched.drain_agent('wa')");
my $to_c = submit('w_queue', 'a', 'w_to_c');
ok($node->poll_query_until('postgres', "SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $to_c"),
	'its job succeeded');
is($sql->("SELECT string_agg(agent, ',') FROM quota_sched.job_part WHERE job_id = $to_c"), 'wc',
	'on wc');
is(stop_agent('wc'), 0, 'wc exits 0');
$sql->("SELECT name FROM quota_sched.forget_agent('wc')");
$sql->("SELECT state FROM quota_sched.drain_agent('wa', false)");

# scenario(WAKE): wb started with --wake WAKE, the jobs, wb's claims
sub scenario
{
	my ($wake) = @_;
	my $start = claims_of_wb();
	launch('wb', 'w_b', 'wake_b', $wake, "wb_$wake");
	ok(wait_for_log("wb_$wake", qr/registered for queue w_queue/), "$wake: wb registered");
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = 2 FROM quota_sched.agents WHERE live AND state = 'ACTIVE'"),
		"$wake: wa and wb are live hosts");
	# wb claims once it has connected and registered (and once more after
	# its first heartbeat): wait until it has
	my $before;
	for (1 .. 600)
	{
		$before = claims_of_wb();
		last if $before > $start;
		usleep(100_000);
	}
	cmp_ok($before, '>', $start, "$wake: wb's first claims are in the log ($before)");

	# ten jobs, one at a time, each placed on wa (best fit, ties to the
	# least name) and done before the next
	my @where;
	foreach my $i (1 .. 10)
	{
		my $id = submit('w_queue', 'a', "w_job_$wake");
		$node->poll_query_until('postgres',
			"SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $id")
		  or die "job $id did not succeed";
		push @where, $sql->("SELECT string_agg(agent, ',') FROM quota_sched.job_part WHERE job_id = $id");
	}
	is(join(' ', @where), join(' ', ('wa') x 10), "$wake: the ten jobs ran on wa");
	# five jobs of another queue, which has no host: dispatched, for anyone
	$sql->(qq{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
		SELECT 'w_elsewhere_$wake', 'w_other', 'o', 'gpu', 1 FROM generate_series(1, 5)});
	ok($node->poll_query_until('postgres',
			"SELECT count(*) = 5 FROM quota_sched.job WHERE name = 'w_elsewhere_$wake' AND state = 'SCHEDULED'"),
		"$wake: the other queue's jobs are dispatched");

	# wa drains; a job placed on wb.  wb learns of its work in order, so
	# once it has this job it has heard every dispatch before.
	$sql->("SELECT state FROM quota_sched.drain_agent('wa')");
	my $last = submit('w_queue', 'a', "w_last_$wake");
	ok($node->poll_query_until('postgres',
			"SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $last"),
		"$wake: the last job succeeded");
	is($sql->("SELECT string_agg(agent, ',') FROM quota_sched.job_part WHERE job_id = $last"),
		'wb', "$wake: it ran on wb");
	ok(wait_for_log("wb_$wake", qr/reported SUCCEEDED/), "$wake: wb reported it");
	# its claim, the claim after its report, and one more at most (3 here):
	# none for the eleven passes that dispatched jobs not its own (each pass
	# a claim, 14 in all, when every dispatch made it claim)
	my $after = claims_of_wb();
	cmp_ok($after - $before, '<=', 4,
		"$wake: wb claimed for its own job only: $before claims before the jobs, $after after");
	cmp_ok($after - $before, '>=', 1, "$wake: the count sees its claim of its own job");
	$sql->("SELECT state FROM quota_sched.drain_agent('wa', false)");
	return;
}

scenario('listen');
is(stop_agent('wb_listen'), 0, 'the listening wb exits 0');
scenario('wait');
# the waiting wb's session: in agent_wait, holding no snapshot
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		 WHERE application_name = 'wake_b' AND query LIKE 'CALL quota_sched.agent_wait%'
		   AND state = 'active' AND wait_event = 'Extension' AND backend_xmin IS NULL}),
	'wb waits in agent_wait, with no snapshot');
like(agent_log('wb_wait'), qr/connected: .*; waiting with agent_wait/, 'its log says so');

is(stop_agent('wa'), 0, 'wa exits 0');
is(stop_agent('wb_wait'), 0, 'wb exits 0');
# the backends of the agents that waited are gone with them (the wait
# ends when its client closes)
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) = 0 FROM pg_stat_activity WHERE application_name IN ('wake_a', 'wake_b')}),
	"the agents' sessions are gone");
done_testing();
