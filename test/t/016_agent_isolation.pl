# quota-sched-agent keeps its jobs apart from itself and from each other
# (issue 20), tested with real jobs that try to escape, as the agent's own
# OS user (--same-user): a job that reads the environment and memory of its
# parent (the shim) and of the agent, with PGPASSWORD set for the agent; a
# password in --dbname, looked for in ps; a job that plants files, a symlink
# and a FIFO as the next jobs' checkpoint directories (repaired: they run,
# no attempt lost), and one that breaks the checkpoint root (the next job
# released, not failed); jobs that leave processes behind in other sessions,
# that end by themselves, are terminated, time out, ignore SIGTERM, kill
# their shim, or whose agent is killed: none of those processes outlives its
# job; an argument over Linux's limit; a 1 MiB payload handed to an external
# launcher's start command.  --run-as (as root) is test/agent/run_as.sh.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use JSON::PP;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $node = agents_node('isolation');
# the agents' login needs its password (SCRAM), so that the agent must
# hand libpq the PGPASSWORD it took out of its environment, at every
# connection
my $hba = slurp_file($node->data_dir . '/pg_hba.conf');
open(my $hfh, '>', $node->data_dir . '/pg_hba.conf') or die;
print $hfh "local all agent_pw scram-sha-256\nhost all agent_pw 127.0.0.1/32 scram-sha-256\n$hba";
close $hfh;
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('i_env', '{"gpu": 4}'), ('x_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('i_queue', 'i_env'), ('x_queue', 'x_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('i_queue', 'team', '{"gpu": 4}', 'LEND_AND_BORROW'),
	   ('x_queue', 'team', '{"gpu": 4}', 'LEND_AND_BORROW');
SET password_encryption = 'scram-sha-256';
CREATE ROLE agent_pw LOGIN PASSWORD 'agent-secret' IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_pw', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=agent_pw';
QsAgents::init($node, '016_agent_isolation');
# the root in a folder of its own, which a job may close (below)
mkdir "$tmp/p" or die;
my $root = "$tmp/p/ckpt";

# submit(NAME, QUEUE, PAYLOAD (hash ref), COLUMNS...): the job's id
sub submit
{
	my ($name, $queue, $payload, %cols) = @_;
	my $json = JSON::PP->new->canonical->encode($payload);
	$json =~ s/'/''/g;
	my @names = ('name', 'job_queue', 'quota_share', 'capacity_unit', 'payload', keys %cols);
	my @values = ("'$name'", "'$queue'", "'team'", "'gpu'", "'$json'", values %cols);
	return $node->safe_psql('postgres',
		'INSERT INTO quota_sched.job (' . join(', ', @names) . ') VALUES (' . join(', ', @values) . ') RETURNING id');
}

sub run_job { my ($name, @argv) = @_; return submit($name, 'i_queue', { command => \@argv }); }

# a process of this user that is still there (not a zombie)
sub alive
{
	my ($pid) = @_;
	return 0 unless kill(0, $pid);
	my $stat = -r "/proc/$pid/stat" ? slurp_file("/proc/$pid/stat") : '';
	return $stat !~ /\) Z /;
}

# process_ends(PID): whether it is gone within 15 s
sub process_ends
{
	my ($pid) = @_;
	for (1 .. 150)
	{
		return 1 unless alive($pid);
		usleep(100_000);
	}
	return 0;
}

# ---------------------------------------------------------------------------
# The agent's secrets: PGPASSWORD is in its environment when it starts; a job
# reads what it can of its parent (the shim) and of the agent
# ---------------------------------------------------------------------------
{
	local $ENV{PGPASSWORD} = 'agent-secret';
	launch_agent('iso',
		[
			$agent_bin, '--dbname', $connstr, '--agent', 'iso', '--queue', 'i_queue', '--same-user',
			'--checkpoint-root', $root, '--instances', '4', '--lease', '20',
			'--heartbeat', '1', '--grace', '2'
		]);
}
my $iso_pid = agent_pid('iso');
my $spy_out = "$tmp/spy.out";
my $spy = run_job('spy', 'sh', '-c',
	q{for p in $PPID $2; do echo "== $p"; tr '\0' '\n' < /proc/$p/environ; cat /proc/$p/mem > /dev/null; done > "$1" 2>&1;}
	  . q{ env | grep -c '^PGPASSWORD=' >> "$1"; true},
	'sh', $spy_out, "$iso_pid");
ok(wait_for_job($spy, "state = 'SUCCEEDED'"), 'the spying job ends');
my $seen = slurp_file($spy_out);
unlike($seen, qr/agent-secret/, 'the agent\'s password is nowhere in what the job could read');
my @environ = $seen =~ m{/proc/\d+/environ: Permission denied}g;
is(scalar @environ, 2, "the shim's and the agent's environments are closed to the job (Permission denied)")
  or diag($seen);
my @mem = $seen =~ m{/proc/\d+/mem: Permission denied}g;
is(scalar @mem, 2, "and so is their memory") or diag($seen);
like($seen, qr/^0$/m, 'PGPASSWORD is not in the job\'s environment');
ok(!open(my $efh, '<', "/proc/$iso_pid/environ") && $!{EACCES},
	'the agent\'s environment is closed to its user (the test) too');
# the password, now out of its environment, still serves each connection
$node->safe_psql('postgres', "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'agent_pw'");
ok(wait_for_log('iso', qr/ connected: (?s:.*) connected: /), 'the agent connects again with the password it kept');

# a password in --dbname is hidden from ps once read
launch_agent('cmdline',
	[
		$agent_bin, '--dbname', "$connstr password=agent-secret", '--agent', 'cmdline',
		'--queue', 'x_queue', '--same-user', '--checkpoint-root', "$tmp/ckpt-cmdline"
	]);
my $cmdline = slurp_file('/proc/' . agent_pid('cmdline') . '/cmdline');
unlike($cmdline, qr/agent-secret/, 'a password in --dbname is not in /proc/PID/cmdline');
like($cmdline, qr/--dbname\0\*+\0/, 'the argument is overwritten');
is(stop_agent('cmdline'), 0, 'that agent stops');

# ---------------------------------------------------------------------------
# Checkpoints: a job plants a file, a symlink and a FIFO where the next jobs'
# directories go; the agent removes them (without following the symlink)
# and runs the jobs
# ---------------------------------------------------------------------------
my $victim = "$tmp/victim";
mkdir $victim or die;
chmod 0755, $victim;
PostgreSQL::Test::Utils::append_to_file("$victim/keep", "kept\n");
my $plant = run_job('plant', 'sh', '-c',
	q{r=$(dirname "$QUOTA_SCHED_CHECKPOINT_DIR"); n=$QUOTA_SCHED_JOB_ID;}
	  . q{ echo x > "$r/job-$((n + 1))" && ln -s "$1" "$r/job-$((n + 2))" && mkfifo "$r/job-$((n + 3))"},
	'sh', $victim);
ok(wait_for_job($plant, "state = 'SUCCEEDED'"), 'the planting job ends');
ok(-f "$root/job-" . ($plant + 1) && -l "$root/job-" . ($plant + 2) && -p "$root/job-" . ($plant + 3),
	'it planted a file, a symlink and a FIFO in the root');
my @next = map { run_job("next$_", 'sh', '-c', 'test -d "$QUOTA_SCHED_CHECKPOINT_DIR" -a ! -L "$QUOTA_SCHED_CHECKPOINT_DIR"') } 1 .. 3;
is_deeply(\@next, [ $plant + 1, $plant + 2, $plant + 3 ], 'the next jobs have the ids it aimed at');
foreach my $id (@next)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id runs in a directory of its own");
	is(job_field($id, 'failed_attempts'), '0', "job $id lost no attempt");
	is(history($id), '>RUNNABLE; RUNNABLE>SCHEDULED; SCHEDULED>STARTING; STARTING>RUNNING; RUNNING>SUCCEEDED',
		"job $id: one attempt, no release");
}
like(agent_log('iso'), qr/checkpoint_repaired: .*job-\Q$next[1]\E" was not a directory/, 'the agent says what it repaired');
is(slurp_file("$victim/keep"), "kept\n", 'the symlink was not followed: its target keeps its file');
is(sprintf('%o', (stat $victim)[2] & 07777), '755', 'and its mode');

# A job breaks the root: moved away, a file in its place, its folder closed.
# The next job cannot have its directory: it is released (no attempt
# counted), and runs once the root can be made again.
my $breaker = run_job('breaker', 'sh', '-c',
	q{r=$(dirname "$QUOTA_SCHED_CHECKPOINT_DIR"); mv "$r" "$r.away" && echo x > "$r" && chmod 0500 "$(dirname "$r")"});
ok(wait_for_job($breaker, "state = 'SUCCEEDED'"), 'the breaking job ends');
my $unlucky = run_job('unlucky', 'true');
ok(wait_for_log('iso', qr/job_released job=$unlucky attempt=1: released \(agent iso could not prepare its checkpoint directory: could not remove/),
	'the next job is released: the agent could not prepare its directory');
ok(wait_for_log('iso', qr/claims_paused: /), 'and it pauses its claims');
is(job_field($unlucky, 'failed_attempts'), '0', 'the released job counts no failed attempt');
chmod 0700, "$tmp/p";
ok(wait_for_job($unlucky, "state = 'SUCCEEDED'"), 'once the root can be made again, it runs');
is(job_field($unlucky, 'failed_attempts'), '0', 'with no attempt lost');
unlike(history($unlucky), qr/FAILED/, 'its history shows no failure');

# ---------------------------------------------------------------------------
# Processes a job leaves behind, in a session of their own (setsid): gone
# when the job ends, whichever way it ends
# ---------------------------------------------------------------------------
# a job that starts a sleeper (its pid in FILE), then runs TAIL
sub leaver
{
	my ($name, $file, $tail, %cols) = @_;
	return submit($name, 'i_queue',
		{ command => [ 'sh', '-c', q{setsid sh -c 'echo $$ > "$1"; exec sleep 300' sh "$1" & } . $tail, 'sh', $file ] },
		%cols);
}

my $done = leaver('done', "$tmp/done.pid", 'while [ ! -s "$1" ]; do sleep 0.1; done; exit 0');
ok(wait_for_job($done, "state = 'SUCCEEDED'"), 'a job that leaves a sleeper and exits 0: SUCCEEDED');
my $done_pid = slurp_file("$tmp/done.pid") + 0;
ok(process_ends($done_pid), "its sleeper, in another session, is gone once the job is reported");
like(agent_log('iso'), qr/job_leftovers job=$done attempt=1: the job's first process ended: SIGTERM to the 1 process/,
	'the agent says what it ended');

my $term = leaver('term', "$tmp/term.pid", 'exec sleep 600');
ok(wait_for_file("$tmp/term.pid", qr/^\d+$/m), 'a job with a sleeper runs');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($term)");
ok(wait_for_job($term, "state = 'FAILED'"), 'terminated');
ok(process_ends(slurp_file("$tmp/term.pid") + 0), 'its sleeper is gone');

my $late = leaver('late', "$tmp/late.pid", 'exec sleep 600', timeout => "'2 seconds'");
ok(wait_for_file("$tmp/late.pid", qr/^\d+$/m), 'a job with a timeout and a sleeper runs');
ok(wait_for_job($late, "state = 'FAILED'"), 'it times out');
ok(process_ends(slurp_file("$tmp/late.pid") + 0), 'its sleeper is gone');

my $deaf = submit('deaf', 'i_queue',
	{ command => [ 'sh', '-c', q{setsid sh -c 'trap "" TERM; echo $$ > "$1"; while :; do sleep 1; done' sh "$1" & while [ ! -s "$1" ]; do sleep 0.1; done}, 'sh', "$tmp/deaf.pid" ] });
ok(wait_for_job($deaf, "state = 'SUCCEEDED'"), 'a job that leaves a process deaf to SIGTERM: SUCCEEDED');
ok(!alive(slurp_file("$tmp/deaf.pid") + 0), 'the process was killed (SIGKILL after the grace) before the job was reported');

my $rebel = leaver('rebel', "$tmp/rebel.pid", 'while [ ! -s "$1" ]; do sleep 0.1; done; kill -KILL $PPID; exec sleep 600');
ok(wait_for_job($rebel, "state = 'FAILED'"), 'a job that kills its shim: FAILED');
is(job_field($rebel, 'status_reason'), 'killed by signal SIGKILL', 'as the shim died');
ok(process_ends(slurp_file("$tmp/rebel.pid") + 0), 'its sleeper, adopted by the agent, is killed');
like(agent_log('iso'), qr/stray_killed: killed process \d+/, 'the agent says so');

# ---------------------------------------------------------------------------
# An argument longer than Linux takes: the job fails with a reason that
# says so, before any fork; one byte less runs
# ---------------------------------------------------------------------------
my $huge = run_job('huge', 'sh', '-c', 'exit 0', 'sh', 'x' x 131072);
ok(wait_for_job($huge, "state = 'FAILED'"), 'an argument of 131072 bytes: FAILED');
is(job_field($huge, 'status_reason'),
	"argument 4 of the job's command is 131072 bytes, over Linux's 131072-byte limit per argument; pass big inputs in a file",
	'the reason says why');
my $edge = run_job('edge', 'sh', '-c', 'test ${#1} -eq 131071', 'sh', 'x' x 131071);
ok(wait_for_job($edge, "state = 'SUCCEEDED'"), 'an argument of 131071 bytes (and its NUL) runs');

# ---------------------------------------------------------------------------
# The agent killed with SIGKILL: what its job started goes with the job
# ---------------------------------------------------------------------------
my $orphan = leaver('orphan', "$tmp/orphan.pid", 'echo $$ > "$1.main"; exec sleep 600');
ok(wait_for_file("$tmp/orphan.pid", qr/^\d+$/m) && wait_for_file("$tmp/orphan.pid.main", qr/^\d+$/m),
	'a job with a sleeper runs');
kill 'KILL', $iso_pid;
forget_agent('iso')->finish;
ok(process_ends(slurp_file("$tmp/orphan.pid.main") + 0), "the job's first process dies with its agent");
ok(process_ends(slurp_file("$tmp/orphan.pid") + 0), 'so does its sleeper, in another session');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($orphan)");

# ---------------------------------------------------------------------------
# A payload of 1 MiB (the database's limit) reaches an external launcher's
# start command, on its stdin and in QUOTA_SCHED_PAYLOAD_FILE; a small one
# also in QUOTA_SCHED_PAYLOAD, as before
# ---------------------------------------------------------------------------
my $out = "$tmp/ext";
mkdir $out or die;
$ENV{QS_OUT} = $out;
my $start_cmd = q{d="$QS_OUT/$QUOTA_SCHED_JOB_ID"; mkdir "$d"; cat > "$d/stdin"; cp "$QUOTA_SCHED_PAYLOAD_FILE" "$d/file"; }
  . q{echo "$QUOTA_SCHED_PAYLOAD_FILE" > "$d/path"; stat -c %a "$QUOTA_SCHED_PAYLOAD_FILE" > "$d/mode"; }
  . q{if [ -n "${QUOTA_SCHED_PAYLOAD+set}" ]; then printf %s "$QUOTA_SCHED_PAYLOAD" > "$d/env"; fi; echo "handle-$QUOTA_SCHED_JOB_ID"};
{
	local $ENV{PGPASSWORD} = 'agent-secret';
	launch_agent('ext',
		[
			$agent_bin, '--dbname', $connstr, '--agent', 'ext', '--queue', 'x_queue',
			'--checkpoint-root', "$tmp/ckpt-ext", '--heartbeat', '1', '--status-interval', '0.5',
			'--start-cmd', $start_cmd, '--status-cmd', 'echo SUCCEEDED', '--stop-cmd', 'true'
		]);
}
# {"blob": "xxx..."} as the server writes it: 1048576 bytes in all
my $blob = 'x' x (1048576 - length('{"blob": ""}'));
my $big = submit('big', 'x_queue', { blob => $blob });
ok(wait_for_job($big, "state = 'SUCCEEDED'"), 'a job with a payload of 1 MiB: SUCCEEDED');
my $payload_text = qq({"blob": "$blob"});
is(length($payload_text), 1048576, 'the payload is 1 MiB as text');
ok(slurp_file("$out/$big/stdin") eq $payload_text, 'the start command read the whole payload on its stdin');
ok(slurp_file("$out/$big/file") eq $payload_text, 'and in QUOTA_SCHED_PAYLOAD_FILE');
is(slurp_file("$out/$big/mode"), "600\n", 'a file of mode 0600');
my $path = slurp_file("$out/$big/path") =~ s/\n\z//r;
ok(!-e $path, 'removed once the start command had ended');
ok(!-e "$out/$big/env", 'QUOTA_SCHED_PAYLOAD is not set: the payload is over Linux\'s limit per string');
my $small = submit('small', 'x_queue', { note => 'small' });
ok(wait_for_job($small, "state = 'SUCCEEDED'"), 'a job with a small payload: SUCCEEDED');
is(slurp_file("$out/$small/env"), '{"note": "small"}', 'QUOTA_SCHED_PAYLOAD holds it, as before');
is(slurp_file("$out/$small/stdin"), '{"note": "small"}', 'and stdin');
is(stop_agent('ext'), 0, 'the external agent stops');

$node->stop;
done_testing();
