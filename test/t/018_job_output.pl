# A job's own output (issue 21): real agents write each attempt's stdout and
# stderr to a file of its own under --log-dir, bounded by --log-max-bytes,
# and tell the database where the attempt ran (host, file, the external
# launcher's handle) and, at its end, its exit code and the last 4 KiB of
# its output.  The job's team reads it in quota_sched.job_attempts; another
# team sees nothing of it.  A local job that prints lines and exits 3, one
# that prints more than the bound, and external-launcher jobs
# (agent/examples/sagemaker-launcher.sh) that succeed and fail.
use strict;
use warnings;
use Cwd qw(abs_path);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use Sys::Hostname ();
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");
my $launcher = abs_path('agent/examples/sagemaker-launcher.sh');

my $node = agents_node('output');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('o_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('o_queue', 'o_env');
CREATE ROLE team_a NOLOGIN;
CREATE ROLE team_b NOLOGIN;
CREATE ROLE ann LOGIN IN ROLE quota_sched_user, team_a;
CREATE ROLE amy LOGIN IN ROLE quota_sched_user, team_a;
CREATE ROLE ben LOGIN IN ROLE quota_sched_user, team_b;
CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('o_queue', 'a', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_a'),
	   ('o_queue', 'b', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_b');
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $logs = "$tmp/logs";
my $connstr = $node->connstr('postgres') . ' user=agent_host';
QsAgents::init($node, '018_job_output');

# submit(WHO, SHARE, NAME, PAYLOAD): a job of WHO's, its id
sub submit
{
	my ($who, $share, $name, $payload) = @_;
	my $json = JSON::PP->new->canonical->encode($payload);
	$json =~ s/'/''/g;
	return $node->safe_psql('postgres', qq{SET ROLE $who;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES ('$name', 'o_queue', '$share', 'gpu', '$json') RETURNING id});
}

# as(WHO, SQL): the answer of SQL run as WHO
sub as
{
	my ($who, $sql) = @_;
	return $node->safe_psql('postgres', "SET ROLE $who; $sql");
}

# ---------------------------------------------------------------------------
# A local job that prints lines on both streams and exits 3
# ---------------------------------------------------------------------------
launch_agent('l1',
	[
		$agent_bin, '--dbname', $connstr, '--agent', 'l1', '--queue', 'o_queue', '--same-user',
		'--checkpoint-root', "$tmp/ckpt-l1", '--log-dir', $logs, '--log-max-bytes', '8192',
		'--heartbeat', '1'
	]);
ok(-d $logs, 'the agent made its log directory');
is((stat $logs)[2] & 07777, 0750, 'the log directory is 0750');

my $script = 'echo "first line"; echo "on stderr" >&2; for i in 1 2 3; do echo "line $i"; done; '
  . 'printf "caf\303\251\n"; echo "last line"; exit 3';
my $fails = submit('ann', 'a', 'fails', { command => [ 'sh', '-c', $script ] });
ok(wait_for_job($fails, "state = 'FAILED'"), 'the job that exits 3 FAILED');
my $file = "$logs/$fails/attempt-1.log";
ok(-f $file, "its output is in $file");
my $text = -f $file ? slurp_file($file) : '';
like($text, qr/\Afirst line\n/, 'the file has its stdout from the first line');
like($text, qr/^on stderr$/m, 'and its stderr');
like($text, qr/^line 3\ncafé\nlast line\n\z/m, 'to the last line');
is((stat $file)[2] & 07777, 0640, 'the file is 0640');
is((stat "$logs/$fails")[2] & 07777, 0750, "the job's directory is 0750");
unlike(agent_log('l1'), qr/^(first line|on stderr|last line)$/m, "the job's output is not in the agent's log");

my $host = Sys::Hostname::hostname();
is( as('ann',
		"SELECT attempt || '|' || exit_code || '|' || host || '|' || log_path || '|' || agent"
		  . " FROM quota_sched.job_attempts WHERE job_id = $fails"),
	"1|3|$host|$file|l1",
	'its owner sees the attempt: exit code 3, the host, the file, the agent');
is(as('ann', "SELECT output FROM quota_sched.job_attempts WHERE job_id = $fails"),
	"first line\non stderr\nline 1\nline 2\nline 3\ncafé\nlast line\n",
	'and the last lines of its output');
is(as('amy', "SELECT exit_code FROM quota_sched.job_attempts WHERE job_id = $fails"),
	'3', 'her team mate sees it too');
is(as('ben', "SELECT count(*) FROM quota_sched.job_attempts WHERE job_id = $fails"),
	'0', 'another team sees nothing of it');
is(as('ben', "SELECT count(*) FROM quota_sched.job_attempt WHERE job_id = $fails"),
	'0', 'nor in the table');

# More than --log-max-bytes: the file keeps the first 8192 bytes and says
# what was left out; the database gets the end, 4096 bytes at most.
my $chatty = submit('ben', 'b', 'chatty',
	{ command => [ 'sh', '-c', 'i=0; while [ $i -lt 400 ]; do echo "line $i of the chatty job"; i=$((i+1)); done; echo the end' ] });
ok(wait_for_job($chatty, "state = 'SUCCEEDED'"), 'the chatty job SUCCEEDED');
my $chatty_text = slurp_file("$logs/$chatty/attempt-1.log");
like($chatty_text, qr/\Aline 0 of the chatty job\n/, 'its file begins with its first line');
like($chatty_text, qr/\[quota-sched-agent\] \d+ more bytes of output not kept here \(--log-max-bytes=8192\)\n\z/,
	'and ends with what the bound left out');
ok(length($chatty_text) < 8192 + 200, 'the file is bounded: ' . length($chatty_text) . ' bytes');
my ($out_len, $out_end) = split /\|/,
  as('ben', "SELECT octet_length(output) || '|' || right(output, 35) FROM quota_sched.job_attempts WHERE job_id = $chatty");
ok($out_len > 4000 && $out_len <= 4096, "its tail in the database: $out_len bytes, at most 4096");
is($out_end, "line 399 of the chatty job\nthe end\n", 'the tail is the end of the output');
is(as('ann', "SELECT count(*) FROM quota_sched.job_attempts WHERE job_id = $chatty"),
	'0', 'the first team sees nothing of the second team\'s job');
is(stop_agent('l1'), 0, 'the local agent stops');

# ---------------------------------------------------------------------------
# The external launcher: what its commands print, and the handle
# ---------------------------------------------------------------------------
my $service = "$tmp/service";
mkdir $service or die "mkdir $service: $!";
$ENV{QS_STANDIN_DIR} = $service;
launch_agent('x1',
	[
		$agent_bin, '--dbname', $connstr, '--agent', 'x1', '--queue', 'o_queue',
		'--checkpoint-root', "$tmp/ckpt-x1", '--log-dir', $logs, '--heartbeat', '1',
		'--status-interval', '0.5',
		'--start-cmd', qq{echo "starting on the stand-in" >&2; exec '$launcher' start},
		'--status-cmd', qq{exec '$launcher' status}, '--stop-cmd', qq{exec '$launcher' stop}
	]);
my $remote = submit('ann', 'a', 'remote', { training_image => 'img:1', seconds => 1, exit_code => 3 });
ok($node->poll_query_until('postgres',
		"SELECT handle LIKE 'qs-$remote-1-%' FROM quota_sched.job_attempt WHERE job_id = $remote"),
	'the remote job\'s handle is in the database while it runs');
ok(wait_for_job($remote, "state = 'FAILED'"), 'the remote job that exits 3 FAILED');
my ($handle) = agent_log('x1') =~ /job_started job=$remote attempt=1: remote handle (\S+),/;
is( as('amy',
		"SELECT handle || '|' || exit_code || '|' || host || '|' || log_path FROM quota_sched.job_attempts"
		  . " WHERE job_id = $remote"),
	"$handle|3|$host|$logs/$remote/attempt-1.log",
	'its team sees the handle, the exit code 3, the host and the file');
my $remote_text = slurp_file("$logs/$remote/attempt-1.log");
like($remote_text, qr/\[quota-sched-agent\] the start command runs \(pid \d+\)\n(?s:.*)starting on the stand-in\n/,
	"the file has what the start command printed");
like($remote_text, qr/^\Q$handle\E$/m, 'its handle among it');
like($remote_text, qr/^FAILED 3\b/m, 'and what the status command printed');
like(as('ann', "SELECT output FROM quota_sched.job_attempts WHERE job_id = $remote"),
	qr/FAILED 3/, 'the tail in the database has the status that ended it');
is(as('ben', "SELECT count(*) FROM quota_sched.job_attempts WHERE job_id = $remote"),
	'0', 'another team sees nothing of the remote job');
is(stop_agent('x1'), 0, 'the external agent stops');

done_testing();
