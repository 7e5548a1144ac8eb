# The shipped agent and the fleet (issue 21, item 2): it says what it can
# run (agent_ready) when it connects and again after every reconnection, a
# local agent with its --instances, an external launcher with no bound;
# with --drain, SIGTERM lets its jobs run to their end, claims nothing
# more, and exits once they are reported.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
my $node = agents_node('fleet');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('f_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('f_queue', 'f_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('f_queue', 'f_share', '{"gpu": 4}', 'RESERVE');
CREATE ROLE f_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('f_host', NULL);
SQL
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=f_host';
QsAgents::init($node, '017_agent_fleet');

sub start_agent
{
	my ($name, @opts) = @_;
	return launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 'f_queue',
			'--capacity-unit', 'gpu', '--checkpoint-root', "$tmp/ckpt-$name", '--heartbeat', '1',
			@opts
		]);
}

sub submit
{
	my ($name, $command) = @_;
	return $node->safe_psql('postgres', qq{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
		VALUES ('$name', 'f_queue', 'f_share', 'gpu', '{"command": $command}') RETURNING id});
}

sub agent_row
{
	return $node->safe_psql('postgres',
		"SELECT login || ' ' || job_queue || ' ' || capacity_unit || ' ' || coalesce(instances::text, 'none')"
		  . " || ' ' || state || ' ' || live FROM quota_sched.agents WHERE agent = '$_[0]'");
}

# a local agent registers with its instances
start_agent('f1', '--same-user', '--instances', '2', '--drain');
ok(wait_for_log('f1', qr/"event":"agent_ready"|agent_ready.*registered/), 'f1 says it registered');
is(agent_row('f1'), 'f_host f_queue gpu 2 ACTIVE true', 'f1 is known: its login, queue, unit, 2 instances, live');

# and again after a reconnection
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'f_host'});
ok(wait_for_log('f1', qr/registered[^\n]*\n(?:.*\n)*.*registered/), 'f1 registers again after its connection was lost');

# an external launcher registers with no bound
start_agent('f2', '--start-cmd', 'echo remote-1', '--status-cmd', 'echo RUNNING',
	'--stop-cmd', 'true');
ok(wait_for_log('f2', qr/registered/), 'f2 says it registered');
is(agent_row('f2'), 'f_host f_queue gpu none ACTIVE true', 'an external launcher has no bound');
is(stop_agent('f2'), 0, 'f2 exits 0');

# --drain: a running job runs to its end; nothing more is claimed
my $flag = "$tmp/release";
my $long = submit('long', qq{["sh", "-c", "while [ ! -f $flag ]; do sleep 0.1; done"]});
ok(wait_for_job($long, "state = 'RUNNING'"), 'f1 runs the long job');
my $h = forget_agent('f1');
$h->signal('TERM');
ok(wait_for_log('f1', qr/draining/), 'SIGTERM with --drain: f1 drains');
my $late = submit('late', '["true"]');
ok(wait_for_job($late, "state = 'SCHEDULED'"), 'a job submitted meanwhile is dispatched');
# a heartbeat after the dispatch: an agent that claims would have claimed it
ok($node->poll_query_until('postgres', qq{
		SELECT a.last_seen > j.scheduled_at FROM quota_sched.agents a, quota_sched.job j
		 WHERE a.agent = 'f1' AND j.id = $late}), 'f1 heartbeats after the dispatch');
is(job_field($long, 'state'), 'RUNNING', 'the long job still runs');
open(my $fh, '>', $flag) or die "could not write $flag: $!";
close $fh;
ok(wait_for_job($long, "state = 'SUCCEEDED'"), 'it runs to its end and is reported SUCCEEDED');
$h->finish;
is($h->result(0), 0, 'then f1 exits 0');
is(job_field($late, "state || ' ' || coalesce(agent, 'none')"), 'SCHEDULED none',
	'f1 claimed nothing while it drained');

done_testing();
