# The launcher agent with an external launcher (issue 12, item 4):
# --start-cmd, --status-cmd and --stop-cmd run each job on "another system",
# here the stand-in service of agent/examples/sagemaker-launcher.sh (a
# directory, and a detached process per training job).  Real agent
# processes: a remote job that succeeds, one that fails with an exit code, a
# start command that fails or hangs, terminate() of a running remote job, a
# job the database takes away, a remote job stopped by someone else, a status
# command that hangs (killed after --cmd-timeout while the agent goes on
# serving), and the agent stopped with SIGTERM (the remote job stopped and
# its job released, no failed attempt).
use strict;
use warnings;
use Cwd qw(abs_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");
my $launcher = abs_path('agent/examples/sagemaker-launcher.sh');
ok(-x $launcher, "the example launcher is there: $launcher");

# ---------------------------------------------------------------------------
# Options: the three commands go together
# ---------------------------------------------------------------------------
foreach my $opts ([ '--start-cmd', 'x' ], [ '--start-cmd', 'x', '--status-cmd', 'y' ], [ '--stop-cmd', 'z' ])
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $agent_bin, '--queue', 'q', '--checkpoint-root', PostgreSQL::Test::Utils::tempdir, @$opts ],
		'<', \undef, '>', \$out, '2>', \$err);
	is($? >> 8, 2, "@$opts alone: exit code 2");
	like($err, qr/--start-cmd, --status-cmd and --stop-cmd go together/, "@$opts alone: says why");
}
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $agent_bin, '--queue', 'q', '--checkpoint-root', PostgreSQL::Test::Utils::tempdir,
			'--start-cmd', 'x', '--status-cmd', 'y', '--stop-cmd', 'z', '--noop' ],
		'<', \undef, '>', \$out, '2>', \$err);
	is($? >> 8, 2, '--noop with the commands: exit code 2');
	my $help = `$agent_bin --help`;
	like($help, qr/--start-cmd=CMD.*--status-cmd=CMD.*--stop-cmd=CMD.*--status-interval.*--cmd-timeout/s,
		'--help documents the commands');
	like($help, qr/agent name, 1 to 128 bytes/, '--help gives the limit of --agent in bytes');
}
# --agent: 1 to 128 bytes, as the server's CHECK (octet_length) counts them
# (issue 37, item 5): 65 characters of two bytes each are refused, and the
# message says bytes, not characters.
{
	my ($out, $err) = ('', '');
	IPC::Run::run([ $agent_bin, '--queue', 'q', '--checkpoint-root', PostgreSQL::Test::Utils::tempdir,
			'--agent', "\xc3\xa9" x 65 ],
		'<', \undef, '>', \$out, '2>', \$err);
	is($? >> 8, 2, '--agent of 65 two-byte characters (130 bytes): exit code 2');
	like($err, qr/--agent must have 1 to 128 bytes/, 'says the limit is 128 bytes');
}

my $node = agents_node('external');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('x_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('x_queue', 'x_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('x_queue', 'team', '{"gpu": 4}', 'LEND_AND_BORROW');
CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
# the stand-in service, in the environment the agent passes on to its commands
my $service = "$tmp/service";
mkdir $service or die "mkdir $service: $!";
$ENV{QS_STANDIN_DIR} = $service;
my $connstr = $node->connstr('postgres') . ' user=agent_host';
QsAgents::init($node, '014_agent_external');

# The start and status commands record the environment they saw; a status
# command hangs for a job while the file hang-ID is there.
# A start command hangs while the file hang-start is there.
my $start_cmd = qq{env | grep ^QUOTA_SCHED_ | sort > "\$QS_STANDIN_DIR/env-start-\$QUOTA_SCHED_JOB_ID"; }
  . qq{if [ -e "\$QS_STANDIN_DIR/hang-start" ]; then echo \$\$ > "\$QS_STANDIN_DIR/start-hung.pid"; exec sleep 600; fi; }
  . qq{if [ -e "\$QS_STANDIN_DIR/latin1-start" ]; then printf 'Fehler: Gr\\374\\337e\\n' >&2; exit 1; fi; }
  . qq{exec '$launcher' start};
my $status_cmd = qq{env | grep ^QUOTA_SCHED_ | sort > "\$QS_STANDIN_DIR/env-status-\$QUOTA_SCHED_JOB_ID"; }
  . qq{if [ -e "\$QS_STANDIN_DIR/hang-\$QUOTA_SCHED_JOB_ID" ]; then echo \$\$ > "\$QS_STANDIN_DIR/hung.pid"; exec sleep 600; fi; }
  . qq{exec '$launcher' status};
# A stop command fails once while the file fail-stop-once is there, and
# does nothing for a job while the file deaf-ID is there.
my $stop_cmd = qq{if [ -e "\$QS_STANDIN_DIR/fail-stop-once" ]; then rm -f "\$QS_STANDIN_DIR/fail-stop-once"; }
  . qq{echo "ThrottlingException: Rate exceeded" >&2; exit 1; fi; }
  . qq{if [ -e "\$QS_STANDIN_DIR/deaf-\$QUOTA_SCHED_JOB_ID" ]; then exit 0; fi; }
  . qq{exec '$launcher' stop};

sub start_agent
{
	my ($name, @opts) = @_;
	return launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 'x_queue',
			'--checkpoint-root', "$tmp/ckpt-$name",
			'--start-cmd', $start_cmd, '--status-cmd', $status_cmd, '--stop-cmd', $stop_cmd, @opts
		]);
}

# submit(NAME, PAYLOAD (hash ref), COLUMNS...): the job's id
sub submit
{
	my ($name, $payload, %cols) = @_;
	my $json = JSON::PP->new->canonical->encode($payload);
	$json =~ s/'/''/g;
	my @names = ('name', 'job_queue', 'quota_share', 'capacity_unit', 'payload', keys %cols);
	my @values = ("'$name'", "'x_queue'", "'team'", "'gpu'", "'$json'", values %cols);
	return $node->safe_psql('postgres',
		'INSERT INTO quota_sched.job (' . join(', ', @names) . ') VALUES (' . join(', ', @values) . ') RETURNING id');
}


# the handle the agent logged for a job, and the stand-in's folder for it
sub handle_of
{
	my ($name, $id) = @_;
	return undef unless wait_for_log($name, qr/job_started job=$id attempt=\d+: remote handle (\S+),/);
	my ($handle) = agent_log($name) =~ /job_started job=$id attempt=\d+: remote handle (\S+),/;
	return $handle;
}

sub standin_status
{
	my ($handle) = @_;
	my $f = "$service/$handle/status";
	return -f $f ? (slurp_file($f) =~ s/\s+\z//r) : '';
}

# ---------------------------------------------------------------------------
# A remote job that succeeds, one that fails, a start that fails
# ---------------------------------------------------------------------------
start_agent('x1', '--instances', '2', '--lease', '20', '--heartbeat', '1', '--grace', '5',
	'--status-interval', '0.5', '--cmd-timeout', '5');

my $ok = submit('ok', { training_image => 'img:1', seconds => 1, exit_code => 0, note => q{it's "quoted"} },
	instance_count => 2);
ok(wait_for_job($ok, "state = 'SUCCEEDED'"), 'a remote job that completes: SUCCEEDED');
my $ok_handle = handle_of('x1', $ok);
like($ok_handle, qr/^qs-$ok-1-\d+-\d+$/, "the start command's first line is the handle");
is(standin_status($ok_handle), 'Completed', 'the stand-in ran it to its end');
is($node->safe_psql('postgres', "SELECT exit_code FROM quota_sched.job_event WHERE job_id = $ok AND to_state = 'SUCCEEDED'"),
	'0', 'exit code 0 in the history');
my $env = slurp_file("$service/env-start-$ok");
like($env, qr/^QUOTA_SCHED_JOB_ID=$ok$/m, 'the start command sees QUOTA_SCHED_JOB_ID');
like($env, qr/^QUOTA_SCHED_ATTEMPT=1$/m, 'QUOTA_SCHED_ATTEMPT');
like($env, qr/^QUOTA_SCHED_INSTANCE_COUNT=2$/m, 'QUOTA_SCHED_INSTANCE_COUNT');
like($env, qr/^QUOTA_SCHED_AGENT=x1$/m, 'QUOTA_SCHED_AGENT');
like($env, qr/^QUOTA_SCHED_CHECKPOINT_DIR=\Q$tmp\E\/ckpt-x1\/job-$ok$/m, 'QUOTA_SCHED_CHECKPOINT_DIR');
my ($payload_seen) = $env =~ /^QUOTA_SCHED_PAYLOAD=(.*)$/m;
is_deeply(decode_json($payload_seen // '{}'),
	{ training_image => 'img:1', seconds => 1, exit_code => 0, note => q{it's "quoted"} },
	'QUOTA_SCHED_PAYLOAD: the payload, unchanged');
unlike($env, qr/^QUOTA_SCHED_HANDLE=/m, 'no handle yet');
like(slurp_file("$service/env-status-$ok"), qr/^QUOTA_SCHED_HANDLE=\Q$ok_handle\E$/m,
	'the status command sees QUOTA_SCHED_HANDLE');

my $three = submit('three', { training_image => 'img:1', seconds => 1, exit_code => 3 });
ok(wait_for_job($three, "state = 'FAILED'"), 'a remote job that fails: FAILED');
is(job_field($three, 'status_reason'), 'exit code 3', 'its reason names the exit code');
is($node->safe_psql('postgres', "SELECT exit_code FROM quota_sched.job_event WHERE job_id = $three AND to_state = 'FAILED'"),
	'3', 'exit code 3 in the history');

my $bad = submit('bad', { seconds => 1 });
ok(wait_for_job($bad, "state = 'FAILED'"), 'a job the start command refuses: FAILED');
is(job_field($bad, 'status_reason'),
	'the start command failed (exit code 1: ValidationException: the payload has no training_image)',
	'with the reason, from the command\'s exit code and stderr');
like(agent_log('x1'), qr/command_output job=$bad attempt=1: start command: ValidationException/,
	"the command's stderr is in the agent's log");

# A start command whose error is not UTF-8 (Latin-1 here): the reason's
# invalid bytes become "?", so that the server takes the report at once.
PostgreSQL::Test::Utils::append_to_file("$service/latin1-start", '');
my $latin1 = submit('latin1', { training_image => 'img:1', seconds => 1 });
ok(wait_for_job($latin1, "state = 'FAILED'"), 'a start command that fails in Latin-1: FAILED');
is(job_field($latin1, 'status_reason'), 'the start command failed (exit code 1: Fehler: Gr??e)',
	'its reason, with each invalid byte made "?"');
unlike(agent_log('x1'), qr/job_retry job=$latin1 /, 'the first report is taken');
unlink "$service/latin1-start";

# ---------------------------------------------------------------------------
# terminate() of a running remote job: the stop command, then STOPPED
# ---------------------------------------------------------------------------
my $term = submit('term', { training_image => 'img:1', seconds => 600 });
my $term_handle = handle_of('x1', $term);
ok(defined $term_handle, 'a long remote job started');
ok(wait_for_job($term, "state = 'RUNNING'"), 'it is RUNNING');
my $term_pid = slurp_file("$service/$term_handle/pid") + 0;
ok(kill(0, $term_pid), 'the stand-in training job runs');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($term, 'enough')");
ok(wait_for_job($term, "state = 'FAILED'"), 'terminated while it runs remotely: FAILED');
is(job_field($term, 'status_reason'), 'enough', 'with the reason of terminate()');
is(standin_status($term_handle), 'Stopped', 'the stop command stopped the remote job');
ok(process_gone($term_pid), 'the stand-in training job is gone');
like(agent_log('x1'), qr/job_stopping job=$term attempt=1: stop requested \(TERMINATED\): the stop command for \Q$term_handle\E/,
	'the agent ran the stop command');
like(agent_log('x1'), qr/job_reported job=$term attempt=1: reported STOPPED/, 'and reported STOPPED once the remote job had stopped');

# ---------------------------------------------------------------------------
# A job the database no longer gives the agent: the stop command, nothing
# reported; a remote job stopped by someone else: FAILED; a start command
# that hangs: killed, FAILED
# ---------------------------------------------------------------------------
my $gone = submit('gone', { training_image => 'img:1', seconds => 600 });
my $gone_handle = handle_of('x1', $gone);
ok(defined $gone_handle, 'a long remote job started');
open(my $fs, '>', "$service/fail-stop-once") or die;
close $fs;
$node->safe_psql('postgres',
	"BEGIN; SELECT quota_sched.release($gone, 'x1', 'drained'); SELECT quota_sched.terminate($gone); COMMIT;");
ok(wait_for_log('x1', qr/job_dropped job=$gone attempt=1: /), 'the agent forgets the job the database took away');
like(agent_log('x1'), qr/job_stopping job=$gone attempt=1: the database no longer gives this job to the agent: the stop command/,
	'after running the stop command');
like(agent_log('x1'), qr/stop_failed job=$gone attempt=1: the stop command of \Q$gone_handle\E failed \(exit code 1: ThrottlingException: Rate exceeded\); trying again/,
	'a stop command that fails is logged');
like(agent_log('x1'), qr/stop_sent job=$gone attempt=1: /, 'and run again');
is(standin_status($gone_handle), 'Stopped', 'which stopped the remote job');
unlike(agent_log('x1'), qr/job_reported job=$gone /, 'and reports nothing of it');

# A remote job that does not stop: the agent waits --grace, then reports it stopped
my $deaf = submit('deaf', { training_image => 'img:1', seconds => 600 });
my $deaf_handle = handle_of('x1', $deaf);
ok(defined $deaf_handle, 'a long remote job started');
open(my $fd, '>', "$service/deaf-$deaf") or die;
close $fd;
$node->safe_psql('postgres', "SELECT quota_sched.terminate($deaf, 'enough')");
ok(wait_for_log('x1', qr/stop_sent job=$deaf attempt=1: /), 'terminated: the stop command runs');
my $t0 = time;
ok(wait_for_job($deaf, "state = 'FAILED'"), 'a remote job that does not stop ends');
ok(time - $t0 >= 3, 'after the grace period (' . (time - $t0) . ' s)');
like(agent_log('x1'), qr/stop_unconfirmed job=$deaf attempt=1: the remote job \Q$deaf_handle\E has not said it stopped within the grace period/,
	'the agent says it gave up waiting');
is(standin_status($deaf_handle), 'InProgress', 'the stand-in still runs it');
kill 'TERM', slurp_file("$service/$deaf_handle/pid") + 0;

my $outside = submit('outside', { training_image => 'img:1', seconds => 600 });
my $outside_handle = handle_of('x1', $outside);
ok(defined $outside_handle, 'a long remote job started');
{
	local $ENV{QUOTA_SCHED_HANDLE} = $outside_handle;
	is(system($launcher, 'stop'), 0, 'someone stops it on the other system');
}
ok(wait_for_job($outside, "state = 'FAILED'"), 'a remote job stopped, not by the agent: FAILED');
is(job_field($outside, 'status_reason'), "the remote job $outside_handle was stopped, not by this agent",
	'with a reason saying so');

open(my $hs, '>', "$service/hang-start") or die;
close $hs;
my $stuck = submit('stuck', { training_image => 'img:1', seconds => 1 });
ok(wait_for_job($stuck, "state = 'FAILED'"), 'a start command that hangs: FAILED');
is(job_field($stuck, 'status_reason'),
	'the start command failed (did not finish within 5 s (--cmd-timeout): killed)', 'once killed, with a reason saying so');
ok(process_gone(slurp_file("$service/start-hung.pid") + 0), 'the hung start command is gone');
unlink "$service/hang-start";

# ---------------------------------------------------------------------------
# A status command that hangs is killed after --cmd-timeout; the agent goes
# on serving meanwhile
# ---------------------------------------------------------------------------
my $slow = submit('slow', { training_image => 'img:1', seconds => 600 });
my $slow_handle = handle_of('x1', $slow);
ok(defined $slow_handle, 'another long remote job started');
my $slow_pid = slurp_file("$service/$slow_handle/pid") + 0;
open(my $fh, '>', "$service/hang-$slow") or die;
close $fh;
ok(wait_for_file("$service/hung.pid", qr/^\d+$/m), 'its status command hangs');
my $hung_pid = slurp_file("$service/hung.pid") + 0;
my $quick = submit('quick', { training_image => 'img:1', seconds => 1, exit_code => 0 });
ok(wait_for_job($quick, "state = 'SUCCEEDED'"), 'meanwhile another job is claimed, started, polled and reported');
ok(wait_for_log('x1', qr/status_timeout job=$slow attempt=1: the status command of \Q$slow_handle\E did not finish within 5 s/),
	'the hung status command is killed after --cmd-timeout');
my $x1_log = agent_log('x1');
ok(index($x1_log, "job_reported job=$quick ") >= 0
	  && index($x1_log, "job_reported job=$quick ") < index($x1_log, "status_timeout job=$slow "),
	'the other job was reported while the status command hung, before it was killed');
ok(process_gone($hung_pid), 'the hung process is gone');
unlink "$service/hang-$slow";
unlink "$service/hung.pid";
my $polls = () = agent_log('x1') =~ /status_timeout job=$slow /g;
ok($polls >= 1, "the job stays RUNNING ($polls status command(s) timed out)");
is(job_field($slow, 'state'), 'RUNNING', 'and is still RUNNING');

# ---------------------------------------------------------------------------
# SIGTERM: the agent stops the remote job, releases its job and exits 0
# ---------------------------------------------------------------------------
is(stop_agent('x1'), 0, 'an agent stopped with SIGTERM exits 0');
is(standin_status($slow_handle), 'Stopped', 'it stopped the remote job first');
ok(process_gone($slow_pid), 'the stand-in training job is gone');
is(job_field($slow, 'failed_attempts'), '0', 'the released job counts no failed attempt');
like(history($slow), qr/RUNNING>RUNNABLE \(agent x1 shut down\)/, 'the history shows the release');
like(agent_log('x1'), qr/job_released job=$slow attempt=1: /, 'the agent says so');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($slow)");

# no stand-in training job is left behind
my @left = grep { kill(0, $_) } map { slurp_file($_) + 0 } glob("$service/*/pid");
is(scalar @left, 0, 'no stand-in training job is left running');
kill 'KILL', @left if @left;
$node->stop;
done_testing();
