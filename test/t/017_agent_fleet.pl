# The shipped agent and the fleet (issue 21, item 2): it says what it can
# run (agent_ready) when it connects and again after every reconnection, a
# local agent with its --instances, its --labels and its --address (0.4),
# an external launcher with no bound, no labels and its name as address;
# bad --labels or --address stop it before it connects (exit code 2,
# saying why); with --drain, SIGTERM lets its jobs run to their end,
# claims nothing more, and exits once they are reported.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;
use IPC::Run;

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
		  . " || ' ' || state || ' ' || live || ' ' || labels || ' ' || address"
		  . " FROM quota_sched.agents WHERE agent = '$_[0]'");
}

# bad --labels or --address: exit code 2 before connecting, saying why
foreach my $bad (
	[ [ '--labels', 'Rack=r1' ], qr/--labels: key "Rack": a label key has only the characters/ ],
	[ [ '--labels', 'rack=r1,rack=r2' ], qr/--labels: key "rack" given twice/ ],
	[ [ '--labels', join(',', map { "k$_=v" } 1 .. 17) ], qr/--labels: an agent has at most 16 labels/ ],
	[ [ '--address', 'gpu 07' ], qr/--address "gpu 07": an address has no whitespace/ ])
{
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[
			$agent_bin, '--dbname', $connstr, '--agent', 'f_bad', '--queue', 'f_queue',
			'--capacity-unit', 'gpu', '--noop', @{ $bad->[0] }
		],
		'<', \undef, '>', \$out, '2>', \$err);
	is($? >> 8, 2, "$bad->[0][0]: exit code 2");
	like($err, $bad->[1], "$bad->[0][0] $bad->[0][1]: it says why");
}
is($node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.agent WHERE name = 'f_bad'"), '0',
	'no agent registered with them');

# a local agent registers with its instances, labels and address
start_agent('f1', '--same-user', '--instances', '2', '--drain', '--labels', 'rack=r1,nvlink=nvl-3',
	'--address', '127.0.0.2');
ok(wait_for_log('f1', qr/"event":"agent_ready"|agent_ready.*registered/), 'f1 says it registered');
is(agent_row('f1'), 'f_host f_queue gpu 2 ACTIVE true {"rack": "r1", "nvlink": "nvl-3"} 127.0.0.2',
	'f1 is known: its login, queue, unit, 2 instances, live, its labels and address');

# and again after a reconnection
$node->safe_psql('postgres', q{
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'f_host'});
ok(wait_for_log('f1', qr/registered[^\n]*\n(?:.*\n)*.*registered/), 'f1 registers again after its connection was lost');

# an external launcher registers with no bound
start_agent('f2', '--start-cmd', 'echo remote-1', '--status-cmd', 'echo RUNNING',
	'--stop-cmd', 'true');
ok(wait_for_log('f2', qr/registered/), 'f2 says it registered');
is(agent_row('f2'), 'f_host f_queue gpu none ACTIVE true {} f2',
	'an external launcher has no bound, no labels, its name as address');
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
