# The launcher agent, quota-sched-agent (issue 12), under the faults of a
# connection: a primary with a streaming standby promoted under running
# agents, which follow it (a multi-host connection string with
# target_session_attrs=read-write) with no job lost or run twice; and a
# connection lost without a server restart (pg_terminate_backend).  A
# notification missed and recovered by the heartbeat is 011_agent's
# --no-listen test.
#
# The jobs wait for a "go" file, so that they end exactly when the test says:
# while their agent cannot reach any primary, and their ends must be told
# after the reconnection.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents qw(agent_bin launch_agent agent_log wait_for_log stop_agent);

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '300ms'
CONF
$primary->start;

# Four instances, one share: four jobs run at once, the others wait.
$primary->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('f_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('f_queue', 'f_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('f_queue', 'f_share', '{"gpu": 4}', 'RESERVE');
CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);
SQL
ok($primary->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs on the primary');

# The standby preloads quota_sched too (its configuration comes with the
# backup); its worker waits for the end of recovery.
$primary->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'backup', has_streaming => 1);
$standby->start;
# Synchronous replication, set after the backup so that the promoted
# standby does not wait for a standby of its own: what the primary has
# acknowledged to an agent (a claim, a report) is on the standby.  With
# asynchronous replication, a claim or a report acknowledged and lost with
# the primary would be lost by the replication itself, not by the agent.
$primary->append_conf('postgresql.conf', "synchronous_standby_names = '*'\n");
$primary->reload;
$primary->wait_for_catchup($standby);
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'0', 'no worker on the standby');

my $tmp = PostgreSQL::Test::Utils::tempdir;
# both servers, the primary first; libpq skips the one that is not read-write
my $host = $primary->host;
my $multi = "host=$host,$host port=" . $primary->port . ',' . $standby->port
  . ' dbname=postgres user=agent_host target_session_attrs=read-write connect_timeout=5';
QsAgents::init($primary, '013_agent_failover');

sub start_agent
{
	my ($name, @opts) = @_;
	launch_agent($name,
		[
			$agent_bin, '--dbname', "$multi application_name=$name", '--agent', $name,
			'--queue', 'f_queue', '--same-user', '--checkpoint-root', "$tmp/ckpt-$name", @opts
		]);
}

# A job that writes "start ATTEMPT AGENT" to its own file, waits for the
# file $gate, then writes "end ATTEMPT" and exits 0.
my $runs = "$tmp/runs";
mkdir $runs or die;

sub submit
{
	my ($node, $name, $gate) = @_;
	my $payload = JSON::PP->new->canonical->encode(
		{
			command => [
				'sh', '-c',
				'f="$1/$QUOTA_SCHED_JOB_ID"; echo "start $QUOTA_SCHED_ATTEMPT $QUOTA_SCHED_AGENT" >> "$f";'
				  . ' while [ ! -e "$2" ]; do sleep 0.1; done; echo "end $QUOTA_SCHED_ATTEMPT" >> "$f"',
				'sh', $runs, $gate
			]
		});
	return $node->safe_psql('postgres',
		"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)"
		  . " VALUES ('$name', 'f_queue', 'f_share', 'gpu', '$payload') RETURNING id");
}

sub runs_of { return -f "$runs/$_[0]" ? slurp_file("$runs/$_[0]") : ''; }

sub wait_until
{
	my ($cond) = @_;
	for (1 .. 600)
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return 0;
}

sub history
{
	my ($node, $id) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(coalesce(from_state, '') || '>' || to_state || coalesce(' (' || reason || ')', ''), '; ' ORDER BY id)"
		  . " FROM quota_sched.job_event WHERE job_id = $id");
}
# the whole history of a job run once, without a retry, a release or an expiry
my $once = '>RUNNABLE; RUNNABLE>SCHEDULED; SCHEDULED>STARTING; STARTING>RUNNING; RUNNING>SUCCEEDED';

# ---------------------------------------------------------------------------
# A failover under running agents
# ---------------------------------------------------------------------------
# A lease longer than the outage: the jobs are not killed, nor expired.
start_agent($_, '--instances', '2', '--lease', '30', '--heartbeat', '1') foreach ('f1', 'f2');
like(agent_log('f1'), qr/ connected: connected to \S+:${\ $primary->port} /, 'the agents connect to the primary');

my $gate1 = "$tmp/go1";
my @jobs = map { submit($primary, "f$_", $gate1) } 1 .. 6;
ok($primary->poll_query_until('postgres',
		"SELECT count(*) = 4 FROM quota_sched.job WHERE state = 'RUNNING'"),
	'four jobs run, on the two agents');
ok(wait_until(sub { (grep { runs_of($_) =~ /^start 1 / } @jobs) == 4 }), 'their processes started');
is($primary->safe_psql('postgres', "SELECT count(*) FROM quota_sched.job WHERE state = 'RUNNABLE'"),
	'2', 'two wait for instances, not dispatched: the worker of the new primary will dispatch them');
my @running = grep { runs_of($_) ne '' } @jobs;
$primary->wait_for_catchup($standby);

$primary->stop('immediate');
ok(wait_for_log($_, qr/ connection_lost: /), "agent $_ lost its connection") foreach ('f1', 'f2');
# the running jobs end while no server takes writes: their ends cannot be told
open(my $fh, '>', $gate1) or die;
close $fh;
ok(wait_until(sub { (grep { runs_of($_) =~ /^end 1$/m } @running) == 4 }), 'the four jobs end during the outage');
ok(wait_for_log($_, qr/ connect_failed: /), "agent $_ cannot connect meanwhile") foreach ('f1', 'f2');
# the backoff doubles from 1 s to a ceiling of 5 s: an agent is back within
# about 5 s of a promotion (with a ceiling of 30 s, a 15 s failover under
# Patroni stopped dispatch for 31 s)
my $tries = qr/ connect_failed: .*; next try in (\d+) s$/m;
ok(wait_until(sub { (() = agent_log('f1') =~ /$tries/g) >= 4 }), 'agent f1 tries four times');
is(join(' ', (agent_log('f1') =~ /$tries/g)[0 .. 3]), '1 2 4 5', 'its waits: 1, 2 and 4 s, then the ceiling, 5 s');
unlike(agent_log('f1') . agent_log('f2'), qr/ job_reported /, 'nothing is reported before the promotion');

$standby->promote;
ok($standby->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker starts on the promoted standby');
ok(wait_for_log($_, qr/ connected: connected to \S+:${\ $standby->port} /), "agent $_ follows it")
  foreach ('f1', 'f2');
ok($standby->poll_query_until('postgres',
		"SELECT count(*) = 6 FROM quota_sched.job WHERE state = 'SUCCEEDED'"),
	'every job ends SUCCEEDED on the new primary');

foreach my $id (@jobs)
{
	like(runs_of($id), qr/\Astart 1 f[12]\nend 1\n\z/, "job $id ran once, as attempt 1");
	is(history($standby, $id), $once, "job $id: dispatched, claimed, run and ended once");
}
is($standby->safe_psql('postgres', 'SELECT sum(failed_attempts + preemption_count) FROM quota_sched.job'),
	'0', 'no failed attempt, no preemption');
my $reported = () = (agent_log('f1') . agent_log('f2')) =~ / job_reported job=\d+ attempt=1: reported SUCCEEDED; the job is now SUCCEEDED$/mg;
is($reported, 6, 'the agents reported six ends, each once');
unlike(agent_log('f1') . agent_log('f2'), qr/ job_(forgotten|dropped|released|stopping|killed) /,
	'and dropped, released or stopped none');

# ---------------------------------------------------------------------------
# A connection lost without a server restart
# ---------------------------------------------------------------------------
my $gate2 = "$tmp/go2";
my $cut = submit($standby, 'cut', $gate2);
ok(wait_until(sub { runs_of($cut) =~ /^start 1 / }), 'a job runs');
my ($agent) = runs_of($cut) =~ /^start 1 (\S+)$/m;
my @connected = agent_log($agent) =~ / connected: /g;
my @lost = agent_log($agent) =~ / connection_lost: /g;
my $old_pid = $standby->safe_psql('postgres', "SELECT pid FROM pg_stat_activity WHERE application_name = '$agent'");
like($old_pid, qr/\A\d+\z/, "its agent $agent has one backend");
$standby->safe_psql('postgres', "SELECT pg_terminate_backend($old_pid)");
ok(wait_until(sub { my @c = agent_log($agent) =~ / connected: /g; @c == @connected + 1 }),
	'the agent connects again');
my @lost_now = agent_log($agent) =~ / connection_lost: /g;
is(scalar @lost_now, @lost + 1, 'after the loss of its connection');
like(agent_log($agent), qr/terminating connection due to administrator command/, 'which the server explained');
ok($standby->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE application_name = '$agent' AND pid <> $old_pid"),
	'with a new backend');
open($fh, '>', $gate2) or die;
close $fh;
ok($standby->poll_query_until('postgres', "SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $cut"),
	'the job ends SUCCEEDED');
like(runs_of($cut), qr/\Astart 1 \S+\nend 1\n\z/, 'it ran once');
is($standby->safe_psql('postgres', "SELECT failed_attempts + preemption_count FROM quota_sched.job WHERE id = $cut"),
	'0', 'no failed attempt');
is(history($standby, $cut), $once, 'its history: dispatched, claimed, run and ended once');

is(stop_agent($_), 0, "agent $_ stops") foreach ('f1', 'f2');
$standby->stop;
done_testing();
