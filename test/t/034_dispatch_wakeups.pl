# Which dispatch notifications make a real agent claim (issue 42, item 4;
# scheduling.md 5.1, agents.md "The agent protocol").  Every agent that
# listens hears every dispatch of the database; an agent claimed on each,
# so a fleet of N hosts ran N claims a job.  It now claims on a dispatch
# only when the payload does not name another queue or another agent.
# Two agents, wa and wb, hosts of one instance in w_queue, --noop; wb's
# login logs its statements, so its claims are counted in the server's
# log (its sessions' application_name is wake_b).  Ten jobs placed on wa
# one after the other, and five jobs of another queue, dispatched: wb
# claims for none of them.  Then wa drains and a job is placed on wb: wb
# claims it (the notification names wb).  Heartbeats are 100 s apart, so
# the claims they bring do not fall within the test.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
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
ALTER ROLE w_b SET log_statement = 'all';
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('w_a', NULL), ('w_b', NULL);
SQL
QsAgents::init($node, '034_dispatch_wakeups');
my $tmp = PostgreSQL::Test::Utils::tempdir;

foreach my $a ([ 'wa', 'w_a', 'wake_a' ], [ 'wb', 'w_b', 'wake_b' ])
{
	my ($name, $login, $app) = @$a;
	launch_agent($name,
		[
			$agent_bin, '--dbname', $node->connstr('postgres') . " user=$login application_name=$app",
			'--agent', $name, '--queue', 'w_queue', '--capacity-unit', 'gpu', '--instances', '1',
			'--noop', '--lease', '300', '--heartbeat', '100', '--checkpoint-root', "$tmp/ckpt-$name"
		]);
}
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM quota_sched.agents WHERE live AND state = 'ACTIVE'"),
	'wa and wb are live hosts');

# wb's claims so far: the lines of the server's log where its session runs
# the agent's prepared claim (qs_0)
sub claims_of_wb
{
	my $n = () = slurp_file($node->logfile) =~ /wake_b LOG:  execute qs_0:/g;
	return $n;
}
my $sql = sub { return $node->safe_psql('postgres', $_[0]); };
# wb claims once it has connected and registered (and once more after its
# first heartbeat): wait until it has
ok(wait_for_log('wb', qr/registered for queue w_queue/), 'wb registered');
ok($node->poll_query_until('postgres',
		"SELECT last_seen IS NOT NULL FROM quota_sched.agent WHERE name = 'wb'"),
	'wb was seen');
my $before;
for (1 .. 600)
{
	$before = claims_of_wb();
	last if $before >= 1;
	usleep(100_000);
}
cmp_ok($before, '>=', 1, "wb's first claims are in the log ($before)");

# ten jobs, one at a time, each placed on wa (best fit, ties to the least
# name) and done before the next
my @where;
foreach my $i (1 .. 10)
{
	my $id = $sql->(q{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit,
		instance_count) VALUES ('w_job', 'w_queue', 'a', 'gpu', 1) RETURNING id});
	$node->poll_query_until('postgres',
		"SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $id")
	  or die "job $id did not succeed";
	push @where, $sql->("SELECT string_agg(agent, ',') FROM quota_sched.job_part WHERE job_id = $id");
}
is(join(' ', @where), join(' ', ('wa') x 10), 'the ten jobs ran on wa');
# five jobs of another queue, which has no host: dispatched, for anyone
$sql->(q{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	SELECT 'w_elsewhere', 'w_other', 'o', 'gpu', 1 FROM generate_series(1, 5)});
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 5 FROM quota_sched.job WHERE name = 'w_elsewhere' AND state = 'SCHEDULED'"),
	"the other queue's jobs are dispatched");

# wa drains; a job placed on wb.  wb reads its notifications in order, so
# once it has this job it has read every one before.
$sql->("SELECT state FROM quota_sched.drain_agent('wa')");
my $last = $sql->(q{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit,
	instance_count) VALUES ('w_last', 'w_queue', 'a', 'gpu', 1) RETURNING id});
ok($node->poll_query_until('postgres',
		"SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $last"), 'the last job succeeded');
is($sql->("SELECT string_agg(agent, ',') FROM quota_sched.job_part WHERE job_id = $last"),
	'wb', 'it ran on wb');
ok(wait_for_log('wb', qr/reported SUCCEEDED/), 'wb reported it');
# its claim, the claim after its report, and one more at most (3 here):
# none for the eleven passes that dispatched jobs not its own (each pass a
# claim, 14 in all, when every dispatch made it claim)
my $after = claims_of_wb();
cmp_ok($after - $before, '<=', 4,
	"wb claimed for its own job only: $before claims before the jobs, $after after");
cmp_ok($after - $before, '>=', 1, 'the count sees its claim of its own job');

is(stop_agent('wa'), 0, 'wa exits 0');
is(stop_agent('wb'), 0, 'wb exits 0');
done_testing();
