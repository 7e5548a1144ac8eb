# The launcher agent, quota-sched-agent (issue 12), as real processes against
# a server whose worker runs the passes: a job's lifecycle (success, an exit
# code, no command, the environment a job sees), a stop requested by
# terminate(), a job the database no longer gives the agent, an agent stopped
# with SIGTERM (its job released, no failed attempt), an agent killed with
# SIGKILL (its job dies with it, the lease runs out and another agent runs
# it), a preemption with a checkpoint and a resume from it, and the server
# restarted under a running agent.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use Time::HiRes qw(time usleep);
use Sys::Hostname ();
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $node = agents_node('agents');
$node->start;

# Two shares of one instance each that lend to each other: a job of lo may
# borrow hi's instance, and a job of hi then takes it back (a preemption).
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('a_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('a_queue', 'a_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('a_queue', 'lo', '{"gpu": 1}', 'LEND_AND_BORROW'),
	   ('a_queue', 'hi', '{"gpu": 1}', 'LEND_AND_BORROW');
CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);
SQL

ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=agent_host';
# the agents' logs stay with the test's (tmp_check/log/011_agent_NAME.log)
QsAgents::init($node, '011_agent');
my $logdir = $PostgreSQL::Test::Utils::log_path;

# start_agent(NAME, OPTIONS...): a real agent process
sub start_agent
{
	my ($name, @opts) = @_;
	return launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 'a_queue',
			'--same-user', '--checkpoint-root', "$tmp/ckpt-$name", @opts
		]);
}

# submit(NAME, SHARE, COMMAND (array ref, or undef for none), COLUMNS...): the job's id
sub submit
{
	my ($name, $share, $command, %cols) = @_;
	my $payload = JSON::PP->new->canonical->encode(defined $command ? { command => $command } : { step => 1 });
	$payload =~ s/'/''/g;
	my @names = ('name', 'job_queue', 'quota_share', 'capacity_unit', 'payload', keys %cols);
	my @values = ("'$name'", "'a_queue'", "'$share'", "'gpu'", "'$payload'", values %cols);
	return $node->safe_psql('postgres',
		'INSERT INTO quota_sched.job (' . join(', ', @names) . ') VALUES (' . join(', ', @values) . ') RETURNING id');
}


# ---------------------------------------------------------------------------
# A job's lifecycle
# ---------------------------------------------------------------------------
{
	# the agent's credentials, which its jobs must not see (trust here: unused)
	local $ENV{PGPASSWORD} = 'agent-secret';
	local $ENV{PGPASSFILE} = "$tmp/no-such-pgpass";
	start_agent('a1', '--instances', '2', '--lease', '20', '--heartbeat', '1', '--grace', '2');
}

my $ok = submit('ok', 'lo', [ 'sh', '-c', 'exit 0' ]);
ok(wait_for_job($ok, "state = 'SUCCEEDED'"), 'a command that exits 0: SUCCEEDED');
is($node->safe_psql('postgres', "SELECT exit_code FROM quota_sched.job_event WHERE job_id = $ok AND to_state = 'SUCCEEDED'"),
	'0', 'exit code 0 in the history');

my $three = submit('three', 'lo', [ 'sh', '-c', 'exit 3' ]);
ok(wait_for_job($three, "state = 'FAILED'"), 'a command that exits 3: FAILED');
is(job_field($three, 'status_reason'), 'exit code 3', 'its reason names the exit code');
is($node->safe_psql('postgres', "SELECT exit_code FROM quota_sched.job_event WHERE job_id = $three AND to_state = 'FAILED'"),
	'3', 'exit code 3 in the history');

my $nocmd = submit('nocmd', 'lo', undef);
ok(wait_for_job($nocmd, "state = 'FAILED'"), 'a job without a command: FAILED');
like(job_field($nocmd, 'status_reason'), qr/no command/, 'with a reason saying so');

# A command that is not an array of strings is refused at INSERT (23514,
# job_submit_validation.sql); a job stored before that check (0.2) still
# meets the agent's own: made here by changing a valid job's payload with
# the triggers off, before the agent can see it.
my ($rc, $out, $err) = $node->psql('postgres',
	q{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
	  VALUES ('notarray', 'a_queue', 'lo', 'gpu', '{"command": "sh -c true"}')});
like($err, qr/payload command of a job is a JSON string, not an array of strings/,
	'a command that is a string is refused at INSERT');
my $notarray = $node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
	VALUES ('notarray', 'a_queue', 'lo', 'gpu', '{"command": ["true"]}') RETURNING id \gset
	SET LOCAL session_replication_role = replica;
	UPDATE quota_sched.job SET payload = '{"command": "sh -c true"}' WHERE id = :id;
	COMMIT;
	SELECT :id;});
ok(wait_for_job($notarray, "state = 'FAILED'"), 'a stored command that is a string, not an array: FAILED');
like(job_field($notarray, 'status_reason'), qr/is a JSON string, not an array of strings/, 'with a reason saying so');

my $badexec = submit('badexec', 'lo', ['/nonexistent/program']);
ok(wait_for_job($badexec, "state = 'FAILED'"), 'a command that cannot be executed: FAILED');
like(job_field($badexec, 'status_reason'), qr{could not run "/nonexistent/program": No such file}, 'with the reason');

my $signalled = submit('signalled', 'lo', [ 'sh', '-c', 'kill -KILL $$' ]);
ok(wait_for_job($signalled, "state = 'FAILED'"), 'a command killed by a signal: FAILED');
is(job_field($signalled, 'status_reason'), 'killed by signal SIGKILL', 'the reason names the signal');

# What a job sees: its environment, a private checkpoint directory, an argv
# passed as is (no shell in between: spaces and quotes stay).
my $envfile = "$tmp/env.out";
my $env = submit('env', 'lo',
	[ 'sh', '-c', 'env | grep -E "^(QUOTA_SCHED_|PGPASS)" | sort > "$1"; stat -c "mode %a" "$QUOTA_SCHED_CHECKPOINT_DIR" >> "$1"; echo "arg [$2]" >> "$1"',
	  'sh', $envfile, q{two words 'and' "quotes"} ],
	instance_count => 2);
ok(wait_for_job($env, "state = 'SUCCEEDED'"), 'the environment job ends');
my $seen = slurp_file($envfile);
like($seen, qr/^QUOTA_SCHED_JOB_ID=$env$/m, 'QUOTA_SCHED_JOB_ID');
like($seen, qr/^QUOTA_SCHED_ATTEMPT=1$/m, 'QUOTA_SCHED_ATTEMPT');
like($seen, qr/^QUOTA_SCHED_INSTANCE_COUNT=2$/m, 'QUOTA_SCHED_INSTANCE_COUNT');
like($seen, qr/^QUOTA_SCHED_CHECKPOINT_DIR=\Q$tmp\E\/ckpt-a1\/job-$env$/m, 'QUOTA_SCHED_CHECKPOINT_DIR: under the root, per job');
like($seen, qr/^mode 700$/m, 'the checkpoint directory is private (0700)');
unlike($seen, qr/^PGPASS/m, 'the agent\'s PGPASSWORD and PGPASSFILE are not in it');
like($seen, qr/^arg \[two words 'and' "quotes"\]$/m, 'the argv reaches the command unchanged');
ok(!-e "$tmp/ckpt-a1/job-$env", 'the checkpoint directory is removed once the job has succeeded');
unlike($seen, qr/^QUOTA_SCHED_ARRAY_INDEX/m, 'a job in no array has no QUOTA_SCHED_ARRAY_INDEX');

# An array of 3 (scheduling.md 3.16): each job gets its index, under both
# names (AWS Batch's too), in a file of its own.
my $array = submit('arr', 'lo',
	[ 'sh', '-c', 'echo "$QUOTA_SCHED_ARRAY_INDEX $AWS_BATCH_JOB_ARRAY_INDEX" > "$1/arr-$QUOTA_SCHED_JOB_ID"', 'sh', $tmp ],
	array_size => 3);
ok(wait_for_job($array, "state = 'SUCCEEDED'")
	  && $node->poll_query_until('postgres',
		"SELECT count(*) = 3 FROM quota_sched.job WHERE array_id = $array AND state = 'SUCCEEDED'"),
	'the three jobs of the array end');
is(join(',', map { my ($id, $i) = split /\|/; slurp_file("$tmp/arr-$id") =~ s/\n//r eq "$i $i" ? $i : "bad:$id" }
		split /\n/, $node->safe_psql('postgres',
			"SELECT id, array_index FROM quota_sched.job WHERE array_id = $array ORDER BY array_index")),
   '0,1,2', 'each job of the array sees its index as QUOTA_SCHED_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_INDEX');

# ---------------------------------------------------------------------------
# Stops: terminate(), and a job the database no longer gives the agent
# ---------------------------------------------------------------------------
my $pidfile = "$tmp/term.pid";
my $term = submit('term', 'lo', [ 'sh', '-c', 'echo $$ > "$1"; exec sleep 600', 'sh', $pidfile ]);
ok(wait_for_file($pidfile, qr/^\d+$/m), 'the long job runs');
my $term_pid = slurp_file($pidfile) + 0;
$node->safe_psql('postgres', "SELECT quota_sched.terminate($term, 'enough')");
ok(wait_for_job($term, "state = 'FAILED'"), 'a job terminated while it runs ends FAILED');
is(job_field($term, 'status_reason'), 'enough', 'with the reason of terminate()');
ok(process_gone($term_pid), 'its process is gone');
like(agent_log('a1'), qr/job_stopping job=$term attempt=1: stop requested \(TERMINATED\): SIGTERM/,
	'the agent sent SIGTERM');

# An admin takes a job away (released, then failed at once, so nobody
# claims it again, and without a notification): the agent's next heartbeat
# no longer returns it, and the agent kills it.
$pidfile = "$tmp/gone.pid";
my $gone = submit('gone', 'lo', [ 'sh', '-c', 'echo $$ > "$1"; exec sleep 600', 'sh', $pidfile ]);
ok(wait_for_file($pidfile, qr/^\d+$/m), 'a long job runs');
my $gone_pid = slurp_file($pidfile) + 0;
$node->safe_psql('postgres',
	"BEGIN; SELECT quota_sched.release($gone, 'a1', 'drained'); SELECT quota_sched.terminate($gone); COMMIT;");
ok(process_gone($gone_pid), 'a job the database no longer gives the agent is killed at the next heartbeat');
like(agent_log('a1'), qr/job_stopping job=$gone attempt=1: the database no longer gives this job/,
	'the agent says why');
like(agent_log('a1'), qr/job_dropped job=$gone attempt=1: /, 'and reports nothing of it');

# each run of this job appends its pid to $pidfile
$pidfile = "$tmp/taken.pid";
my $taken = submit('taken', 'lo', [ 'sh', '-c', 'echo $$ >> "$1"; exec sleep 600', 'sh', $pidfile ], max_attempts => 2);
ok(wait_for_file($pidfile, qr/\A\d+\n\z/), 'another long job runs');
my ($taken_pid) = slurp_file($pidfile) =~ /(\d+)/;
# an admin releases it: the next pass dispatches it again, and the agent
# may claim it before its next heartbeat
$node->safe_psql('postgres', "SELECT quota_sched.release($taken, 'a1', 'drained')");
ok(process_gone($taken_pid), 'a job released by an admin, and dispatched again, is killed');
like(agent_log('a1'), qr/job_stopping job=$taken attempt=1: (the database no longer gives this job|claimed again)/,
	'the agent says why');

# ---------------------------------------------------------------------------
# SIGTERM: the agent stops its jobs, releases them and exits 0
# ---------------------------------------------------------------------------
ok(wait_for_file($pidfile, qr/\A\d+\n\d+\n\z/), 'the job, dispatched again, runs again');
ok(wait_for_job($taken, "state = 'RUNNING' AND agent = 'a1'"), 'on a1');
($taken_pid) = slurp_file($pidfile) =~ /\d+\n(\d+)/;
is(stop_agent('a1'), 0, 'an agent stopped with SIGTERM exits 0');
ok(process_gone($taken_pid), "its job's process is gone");
is(job_field($taken, 'failed_attempts'), '0', 'the released job counts no failed attempt');
is($node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.job_event WHERE job_id = $taken AND to_state = 'FAILED'"),
	'0', 'no FAILED in its history');
like(history($taken), qr/RUNNING>RUNNABLE \(agent a1 shut down\)/, 'the history shows the release');
ok(wait_for_job($taken, "state = 'SCHEDULED'"), 'it waits for another agent');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($taken)");

# ---------------------------------------------------------------------------
# SIGKILL: the job dies with the agent, the lease runs out, another agent runs it
# ---------------------------------------------------------------------------
my $attempts = "$tmp/killed.attempts";
start_agent('k1', '--lease', '3', '--heartbeat', '1');
my $killed = submit('killed', 'lo',
	[ 'sh', '-c', 'echo "$QUOTA_SCHED_ATTEMPT $QUOTA_SCHED_AGENT $$" >> "$1"; [ "$QUOTA_SCHED_ATTEMPT" = 1 ] && exec sleep 600; exit 0', 'sh', $attempts ],
	max_attempts => 2);
ok(wait_for_file($attempts, qr/^1 k1 \d+$/m), 'k1 runs the job');
my ($killed_pid) = slurp_file($attempts) =~ /^1 k1 (\d+)$/m;
kill 'KILL', agent_pid('k1');
forget_agent('k1')->finish;
SKIP:
{
	skip 'the job dies with its agent on Linux only', 1 unless $^O eq 'linux';
	ok(process_gone($killed_pid), "the job's process dies with its agent");
}
start_agent('k2', '--lease', '3', '--heartbeat', '1', '--log-format', 'json');
ok(wait_for_job($killed, "state = 'SUCCEEDED'"), 'after the lease ran out, another agent ran the job to its end');
is(job_field($killed, 'agent'), 'k2', 'the other agent');
like(slurp_file($attempts), qr/\A1 k1 \d+\n2 k2 \d+\n\z/, 'attempt 1 on k1, attempt 2 on k2, nothing else');
like(history($killed), qr/LEASE_EXPIRED/, 'the history shows the lease that ran out');
is(stop_agent('k2'), 0, 'k2 stops');
my @lines = split /\n/, agent_log('k2');
my @bad = grep {
	my $l = eval { decode_json($_) };
	!($l && $l->{agent} eq 'k2' && $l->{time} && $l->{level} && $l->{event} && defined $l->{message})
} @lines;
ok(@lines > 3 && !@bad, '--log-format=json: every line of k2\'s log is a JSON object with its keys')
  or diag(join("\n", @bad));
ok((grep { /"event":"job_reported","job_id":$killed,"attempt":2,/ } @lines), 'with the job and its attempt');

# ---------------------------------------------------------------------------
# An agent restarted under the same name releases what the database says it
# holds but it does not run
# ---------------------------------------------------------------------------
start_agent('again', '--lease', '30', '--heartbeat', '1');
my $runs = "$tmp/again.runs";
my $again = submit('again', 'lo', [ 'sh', '-c', 'echo $$ >> "$1"; exec sleep 600', 'sh', $runs ]);
ok(wait_for_file($runs, qr/\A\d+\n\z/), 'the agent runs the job');
kill 'KILL', agent_pid('again');
forget_agent('again')->finish;
start_agent('again', '--lease', '30', '--heartbeat', '1');
ok(wait_for_log('again', qr/job \Q$again\E: held by this agent in the database but not run here: released/),
	'restarted, it releases the job it no longer runs');
ok(wait_for_file($runs, qr/\A\d+\n\d+\n\z/), 'then claims it again and runs it');
like(history($again), qr/RUNNING>RUNNABLE \(agent again does not run it \(restarted\?\)\)/, 'the history shows the release');
is(job_field($again, 'failed_attempts'), '0', 'no failed attempt');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($again)");
ok(wait_for_job($again, "state = 'FAILED'"), 'terminated');
is(stop_agent('again'), 0, 'the agent stops');

# ---------------------------------------------------------------------------
# Preemption with a checkpoint: the job resumes from its step
# ---------------------------------------------------------------------------
start_agent('p1', '--instances', '2', '--lease', '20', '--heartbeat', '1', '--grace', '5');
my $steps = "$tmp/train.log";
my $train_script = <<'SH';
ck="$QUOTA_SCHED_CHECKPOINT_DIR/step"
step=0
[ -f "$ck" ] && step=$(cat "$ck")
echo "attempt $QUOTA_SCHED_ATTEMPT starts at $step" >> "$1"
while [ "$step" -lt 60 ]; do
	sleep 0.1
	step=$((step + 1))
	echo "$step" > "$ck.tmp" && mv "$ck.tmp" "$ck"
done
echo "done at $step" >> "$1"
SH
my $train = submit('train', 'lo', [ 'sh', '-c', $train_script, 'sh', $steps ], instance_count => 2);
ok(wait_for_file($steps, qr/^attempt 1 starts at 0$/m), 'the training job starts at step 0, borrowing hi\'s instance');
my $ckfile = "$tmp/ckpt-p1/job-$train/step";
ok(wait_for_file($ckfile, qr/^([3-9]|\d\d)$/m), 'it checkpoints a few steps');
my $urgent = submit('urgent', 'hi', [ 'sh', '-c', 'sleep 1' ]);
ok(wait_for_job($urgent, "state = 'SUCCEEDED'"), 'hi takes its instance back and its job runs');
ok(wait_for_job($train, "state = 'SUCCEEDED'"), 'the preempted job ends');
is(job_field($train, 'preemption_count'), '1', 'after one preemption');
my $log = slurp_file($steps);
my ($resumed_at) = $log =~ /^attempt 2 starts at (\d+)$/m;
ok(defined $resumed_at && $resumed_at > 0, "the resumed attempt starts from its checkpoint (step " . ($resumed_at // 'none') . ")");
like($log, qr/^done at 60$/m, 'and finishes');
like(agent_log('p1'), qr/job_reported job=$train attempt=1: reported STOPPED/, 'the agent reported the stop');

# ---------------------------------------------------------------------------
# The server restarted under a running agent
# ---------------------------------------------------------------------------
my $through = submit('through', 'lo', [ 'sh', '-c', 'sleep 4' ]);
ok(wait_for_job($through, "state = 'RUNNING'"), 'a job runs');
$node->restart;
ok(wait_for_job($through, "state = 'SUCCEEDED'"), 'it ends SUCCEEDED after the restart');
is(job_field($through, 'failed_attempts'), '0', 'no failed attempt');
like(agent_log('p1'), qr/ connection_lost: /, 'the agent lost its connection');
my @connected = agent_log('p1') =~ / connected: /g;
is(scalar @connected, 2, 'and connected again');
my $after = submit('after', 'lo', [ 'true' ]);
ok(wait_for_job($after, "state = 'SUCCEEDED'"), 'and runs the jobs submitted after the restart');

is(stop_agent('p1'), 0, 'p1 stops');

# ---------------------------------------------------------------------------
# Without notifications (--no-listen, as behind a transaction-mode pooler):
# the heartbeats alone bring the dispatches and the stops
# ---------------------------------------------------------------------------
start_agent('quiet', '--no-listen', '--lease', '10', '--heartbeat', '1', '--grace', '2');
like(agent_log('quiet'), qr/not listening/, 'the agent does not listen');
$pidfile = "$tmp/quiet.pid";
my $quiet = submit('quiet', 'lo', [ 'sh', '-c', 'echo $$ > "$1"; exec sleep 600', 'sh', $pidfile ]);
ok(wait_for_file($pidfile, qr/^\d+$/m), 'a heartbeat claims the job');
my $quiet_pid = slurp_file($pidfile) + 0;
$node->safe_psql('postgres', "SELECT quota_sched.terminate($quiet)");
ok(wait_for_job($quiet, "state = 'FAILED'"), 'a heartbeat brings the stop');
ok(process_gone($quiet_pid), 'and the process is gone');
is(stop_agent('quiet'), 0, 'quiet stops');

# ---------------------------------------------------------------------------
# The default agent name is HOST/QUEUE: two agents of one host for two
# queues, both left at the default, must not take each other's jobs for
# jobs they do not run.
# ---------------------------------------------------------------------------
{
	my $log = "$logdir/011_agent_default.log";
	my $h = IPC::Run::start([ $agent_bin, '--dbname', $connstr, '--queue', 'a_queue', '--same-user',
			'--log-format', 'json', '--checkpoint-root', "$tmp/ckpt-default" ],
		'<', \undef, '>>', $log, '2>>', $log);
	my $host = Sys::Hostname::hostname();
	my $seen = 0;
	for (1 .. 300)
	{
		last if ($seen = -f $log && slurp_file($log) =~ /"event":"connected"/);
		usleep(100_000);
	}
	ok($seen, 'an agent without --agent connects');
	like(slurp_file($log), qr/"agent":"\Q$host\E\/a_queue"/, 'its name is HOST/QUEUE');
	$h->signal('TERM');
	$h->finish;
}

# ---------------------------------------------------------------------------
# A statement that waits too long is cancelled (statement_timeout, a third
# of the lease): a session holds the queue's lock, which the claim waits
# for; the agent's loop goes on, and it claims again once the lock is let
# go.
# ---------------------------------------------------------------------------
start_agent('waits', '--lease', '3', '--heartbeat', '1');
my $locker = $node->background_psql('postgres');
$locker->query_safe("BEGIN; SELECT count(*) FROM quota_sched.run_pass('a_queue');");
ok(wait_for_log('waits', qr/claim failed: .*statement timeout \(SQLSTATE 57014\)/),
	'a claim held up by the queue\'s lock is cancelled');
$locker->query_safe("COMMIT;");
$locker->quit;
my $quick = submit('quick', 'lo', [ 'sh', '-c', 'exit 0' ]);
ok(wait_for_job($quick, "state = 'SUCCEEDED'"), 'once the lock is let go, the agent works on');
is(stop_agent('waits'), 0, 'waits stops');

# ---------------------------------------------------------------------------
# The lease the heartbeat returns: a session holds the job's row, so the
# heartbeats return it without renewing its lease; the agent counts the
# lease as the server does, and the job is stopped by the lease's end (by
# its shim, which sees no renewal: doc/agents.md, "Faults"; a pass takes it
# back once the row is free), rather than run on.
# ---------------------------------------------------------------------------
start_agent('renews', '--lease', '3', '--heartbeat', '1', '--grace', '1');
my $held = submit('held', 'lo', [ 'sh', '-c', 'exec sleep 60' ]);
ok(wait_for_job($held, "state = 'RUNNING'"), 'the job runs');
my $row_holder = $node->background_psql('postgres');
$row_holder->query_safe("BEGIN; SELECT id FROM quota_sched.job WHERE id = $held FOR UPDATE;");
ok(wait_for_log('renews', qr/lease_fenced job=$held |job_stopping job=$held .*lease ran out/),
	'its lease is not renewed: the job is stopped as it runs out');
$row_holder->query_safe("COMMIT;");
$row_holder->quit;
ok(wait_for_job($held, "state <> 'RUNNING' OR agent IS DISTINCT FROM 'renews'"),
	'and the job is no longer the agent\'s');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($held) FROM quota_sched.job WHERE id = $held AND state NOT IN ('SUCCEEDED', 'FAILED')");
is(stop_agent('renews'), 0, 'renews stops');

# ---------------------------------------------------------------------------
# An outage longer than the lease, with no pass to requeue the job meanwhile
# (the worker is off): the job's shim kills the job as its lease runs out;
# it ignores SIGTERM, but is gone by the lease's end all the same (SIGKILL
# then, whatever --grace: issue 40).  When the agent reconnects it takes
# the attempt as lost (nothing reported) and releases the job the database
# still gives it.
# ---------------------------------------------------------------------------
start_agent('cut', '--lease', '3', '--heartbeat', '1', '--grace', '30');
my $stubborn = submit('stubborn', 'lo', [ 'sh', '-c', "trap '' TERM; echo \$\$ > $tmp/stubborn.pid; exec sleep 60" ]);
ok(wait_for_job($stubborn, "state = 'RUNNING'"), 'the stubborn job runs');
ok(wait_for_file("$tmp/stubborn.pid", qr/^\d+\n/), 'it says its pid');
my $stubborn_pid = slurp_file("$tmp/stubborn.pid") + 0;
$node->safe_psql('postgres', q{
	ALTER SYSTEM SET quota_sched.enabled = off; SELECT pg_reload_conf();
	ALTER ROLE agent_host NOLOGIN;
	SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'agent_host';});
ok(wait_for_log('cut', qr/lease_fenced job=$stubborn /), 'the lease runs out: the shim stops the job');
ok(process_gone($stubborn_pid), 'deaf to SIGTERM, it is killed all the same');
my $lease_end = job_field($stubborn, 'extract(epoch FROM lease_until)');
ok(time() < $lease_end + 1, "by its lease's end ($lease_end)");
$node->safe_psql('postgres', 'ALTER ROLE agent_host LOGIN');
ok(wait_for_log('cut', qr/ connected: .*\n(?s:.*) connected: /), 'the agent reconnects');
ok(wait_for_job($stubborn, "state = 'RUNNABLE'"), 'the attempt gone, the agent releases the job');
like(history($stubborn), qr/RUNNING>RUNNABLE \(agent cut does not run it/, 'the history shows the release');
$node->safe_psql('postgres', "SELECT quota_sched.terminate($stubborn)");
ok(wait_for_job($stubborn, "state = 'FAILED'"), 'it is terminated before it runs again');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET quota_sched.enabled; SELECT pg_reload_conf();');
is(stop_agent('cut'), 0, 'cut stops');

# ---------------------------------------------------------------------------
# A report the database cannot take yet: a session holds the job's row (a
# user's open transaction that changed its priority), so report() gives up
# after 20 ms (55P03).  The agent keeps the job and tries again until the
# session lets go; it does not take the job as no longer its own, which
# would have the next heartbeat release it and the job run twice.
# ---------------------------------------------------------------------------
start_agent('patient', '--lease', '10', '--heartbeat', '1');
my $locked = submit('locked', 'lo', [ 'sh', '-c', "echo ran >> $tmp/locked_runs; sleep 1" ]);
ok(wait_for_job($locked, "state = 'RUNNING'"), 'the job runs');
my $holder = $node->background_psql('postgres');
$holder->query_safe("BEGIN; SELECT id FROM quota_sched.job WHERE id = $locked FOR UPDATE;");
ok(wait_for_log('patient', qr/job_retry job=$locked attempt=1: the report failed \(SQLSTATE 55P03\)/),
	'the report waits for the row: the agent will try again');
# heartbeats pass meanwhile (one a second): the agent tries again after 1 s,
# then after 2 s more
ok(wait_for_log('patient', qr/job_retry job=$locked attempt=1: the report failed \(SQLSTATE 55P03\): trying again in 3 s/),
	'the agent tries again, twice');
is(job_field($locked, 'state'), 'RUNNING', 'the job is still RUNNING, held by its agent');
$holder->query_safe("COMMIT;");
$holder->quit;
ok(wait_for_job($locked, "state = 'SUCCEEDED'"), 'once the row is free, the report goes through');
is(slurp_file("$tmp/locked_runs"), "ran\n", 'the job ran once');
is(history($locked), '>RUNNABLE; RUNNABLE>SCHEDULED; SCHEDULED>STARTING; STARTING>RUNNING; RUNNING>SUCCEEDED',
	'its history: one attempt, no release');
unlike(agent_log('patient'), qr/job_forgotten|job_released/, 'nothing forgotten or released');
is(stop_agent('patient'), 0, 'patient stops');

# ---------------------------------------------------------------------------
# --noop, --exit-after and --pickup-log (for benchmarks, bench/e2e): nothing
# runs, each claim is logged with its time, the agent exits with its CPU time
# ---------------------------------------------------------------------------
start_agent('bench', '--noop', '--exit-after', '2', '--instances', '2', '--pickup-log', "$tmp/pickups");
my @noop = map { submit("noop$_", 'lo', [ 'sh', '-c', "echo ran > $tmp/noop$_" ]) } 1 .. 2;
ok(wait_for_job($_, "state = 'SUCCEEDED'"), "--noop: job $_ SUCCEEDED") foreach @noop;
ok(!-e "$tmp/noop1" && !-e "$tmp/noop2", 'without running its command');
ok(wait_for_log('bench', qr/agent_exit: exiting: 2 job\(s\) reported, cpu_s \d+\.\d{3}/),
	'--exit-after 2: the agent exits after two jobs, and says its CPU time');
my $bench_h = forget_agent('bench');
$bench_h->finish;
is($bench_h->result(0), 0, 'with status 0');
my @pickups = split /\n/, slurp_file("$tmp/pickups");
is(join(',', sort map { (split / /)[0] } @pickups), join(',', sort @noop),
	'--pickup-log: a line for each job claimed');
my $now_us = time() * 1e6;
ok(!grep({ my $t = (split / /)[1]; $t !~ /^\d+$/ || abs($now_us - $t) > 600e6 } @pickups),
	'with the time of its claim, in microseconds since the epoch');
$node->stop;
done_testing();
