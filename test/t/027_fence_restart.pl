# A lost lease fenced, and restarts that keep jobs (issue 40; doc/agents.md,
# "Upgrading agents without stopping jobs"; scheduling.md 3.10), with real
# agents and the worker:
# (a) an agent SIGSTOPped past its lease (4 s; the queue's fence_grace 3 s):
#     its parts' shims kill the jobs on their own, by the lease's end; the
#     pass takes the jobs back only fence_grace after it; another agent
#     runs them; no two copies of a job ever run at once (each copy writes
#     its start and a tick every 0.1 s to a file of the job's);
# (b) an agent made to exit with SIGUSR2 and started again with the same
#     name and state directory adopts its running job: the same processes,
#     no release and no lease lost, the job ends SUCCEEDED with its first
#     attempt, its output whole in its file and in job_attempts;
# (c) an agent that exits with SIGUSR2 and comes back after its job's
#     lease ran out does not adopt it: the shim killed it, alone, and the
#     job runs again.
# Everything is polled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $node = agents_node('fence');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES
	('e_fence', '{"cpu": 2}'), ('e_keep', '{"cpu": 1}'), ('e_late', '{"cpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace) VALUES
	('q_fence', 'e_fence', '3 seconds'), ('q_keep', 'e_keep', '3 seconds'),
	('q_late', 'e_late', '3 seconds');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy) VALUES
	('q_fence', 's', '{"cpu": 2}', 'LEND'), ('q_keep', 's', '{"cpu": 1}', 'LEND'),
	('q_late', 's', '{"cpu": 1}', 'LEND');
CREATE ROLE f_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('f_host', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=f_host';
QsAgents::init($node, '027_fence_restart');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# agent(LOG, NAME, QUEUE, LEASE, MORE...): a running agent of one
# instance of cpu, its state directory $tmp/state-NAME
sub agent
{
	my ($log, $name, $queue, $lease, @more) = @_;
	return launch_agent($log,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', $queue, '--same-user',
			'--capacity-unit', 'cpu', '--lease', $lease, '--heartbeat', '1', '--grace', '1',
			'--checkpoint-root', "$tmp/ckpt-$name", '--log-dir', "$tmp/logs-$name",
			'--state-dir', "$tmp/state-$name", @more
		]);
}

# submit(QUEUE, NAME, SCRIPT): a job of one cpu running sh -c SCRIPT, its id
sub submit
{
	my ($queue, $name, $script) = @_;
	$script =~ s/'/''/g;
	return sql(qq{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
		VALUES ('$name', '$queue', 's', 'cpu',
				jsonb_build_object('command', jsonb_build_array('sh', '-c', '$script')))
		RETURNING id});
}

# procs(MARKER): the pids of the processes whose command line has the
# marker, but for a child of one of them
sub procs
{
	my ($marker) = @_;
	my %ppid;
	foreach my $dir (glob('/proc/[0-9]*'))
	{
		# the parent first: a process gone by then is none
		open(my $st, '<', "$dir/stat") or next;
		my $stat = do { local $/; <$st> } // '';
		close $st;
		open(my $fh, '<', "$dir/cmdline") or next;
		my $cmd = do { local $/; <$fh> } // '';
		close $fh;
		next unless $cmd =~ /marker=$marker\b/ && $stat =~ /\) \S (\d+)/;
		$ppid{ $dir =~ s{/proc/}{}r } = $1;
	}
	# a shell's child between its fork and its exec (of sleep) has the
	# shell's command line for a moment: not one of the job's processes
	return sort { $a <=> $b } grep { !exists $ppid{ $ppid{$_} } } keys %ppid;
}

# copies(FILE): each copy's interval, [attempt, start, last tick], in order of start
sub copies
{
	my ($file) = @_;
	my %copy;
	foreach my $line (split /\n/, slurp_file($file))
	{
		my ($what, $at, $attempt) = split / /, $line;
		next unless defined $attempt;
		$copy{$attempt}[0] = $at if $what eq 'start';
		$copy{$attempt}[1] = $at;
	}
	return map { [ $_, @{ $copy{$_} } ] } sort { $copy{$a}[0] <=> $copy{$b}[0] } keys %copy;
}

########################################################################
# (a) an agent SIGSTOPped past its lease
########################################################################
agent('fa', 'fa', 'q_fence', '4', '--instances', '2');
my %runs;
foreach my $n (1, 2)
{
	my $file = "$tmp/runs-$n";
	my $id = submit('q_fence', "fence_$n",
		"marker=fence_$n; echo \"start \$(date +%s.%N) \$QUOTA_SCHED_ATTEMPT\" >> $file;"
		  . " i=0; while [ \$i -lt 80 ]; do echo \"tick \$(date +%s.%N) \$QUOTA_SCHED_ATTEMPT\" >> $file;"
		  . " sleep 0.1; i=\$((i + 1)); done");
	$runs{$id} = $file;
}
foreach my $id (sort keys %runs)
{
	ok(wait_for_job($id, "state = 'RUNNING' AND agent = 'fa'"), "job $id runs on fa");
	ok(wait_for_file($runs{$id}, qr/^tick /m), "job $id ticks");
}
my @pids = (procs('fence_1'), procs('fence_2'));
ok(@pids >= 2, "the jobs' processes: @pids");

kill 'STOP', agent_pid('fa');
my $gone = 1;
$gone &&= process_gone($_) foreach @pids;
ok($gone, 'the jobs of the stopped agent are killed by their shims, the agent still stopped');
# read once no renewal can come any more, before the pass takes them back
my %lease_end = map {
	$_ => sql("SELECT extract(epoch FROM lease_until) FROM quota_sched.job WHERE id = $_")
} keys %runs;
ok(!grep({ $_ eq '' } values %lease_end), 'the jobs are still held when their processes are gone');
like(`ps -o stat= -p ${\ agent_pid('fa')}`, qr/T/, 'the agent is stopped all along');
foreach my $id (sort keys %runs)
{
	my @c = copies($runs{$id});
	ok($c[-1][2] <= $lease_end{$id},
		"job $id: its last tick ($c[-1][2]) is before its lease's end ($lease_end{$id})");
	ok(wait_for_job($id, "lease_losses = 1"),
		"job $id: the pass takes it back, a lease lost");
	my $at = sql("SELECT extract(epoch FROM at) FROM quota_sched.job_event"
		  . " WHERE job_id = $id AND reason = 'LEASE_EXPIRED' AND to_state = 'RUNNABLE'");
	ok($at >= $lease_end{$id} + 3,
		"job $id: taken back at $at, no sooner than fence_grace (3 s) after its lease's end ($lease_end{$id})");
}
agent('fb', 'fb', 'q_fence', '20', '--instances', '2');
foreach my $id (sort keys %runs)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id: another agent runs it to its end");
	my @c = copies($runs{$id});
	is(scalar(@c), 2, "job $id: two copies ran");
	ok($c[0][2] < $c[1][1],
		"job $id: the first copy's last tick ($c[0][2]) is before the second's start ($c[1][1]): never two at once");
}
kill 'CONT', agent_pid('fa');
ok(wait_for_log('fa', qr/lease_fenced/), "fa's log: the shims fenced the parts");
ok(wait_for_log('fa', qr/the shim killed it: its lease ran out/),
	'fa, woken, takes the ends as lost: nothing reported');
is(sql("SELECT count(*) FROM quota_sched.job_event WHERE job_queue = 'q_fence' AND actor = 'fa'"
	  . " AND to_state IN ('SUCCEEDED', 'FAILED', 'STOPPED')"), '0',
	'fa reported no end of the killed copies');
stop_agent($_) foreach ('fa', 'fb');

########################################################################
# (b) an agent restarted with its jobs kept
########################################################################
agent('ra', 'ra', 'q_keep', '10');
my $kid = submit('q_keep', 'keep_1',
	'marker=keep_1; i=1; while [ $i -le 60 ]; do echo "line $i"; sleep 0.1; i=$((i + 1)); done');
ok(wait_for_job($kid, "state = 'RUNNING' AND agent = 'ra'"), 'the job runs on ra');
my $logfile = "$tmp/logs-ra/$kid/attempt-1.log";
ok(wait_for_file($logfile, qr/^line 3$/m), 'its output comes');
my @before = procs('keep_1');
my $ra = forget_agent('ra');
kill 'USR2', $ra->{KIDS}[0]{PID};
$ra->finish;
is($ra->result(0), 0, 'SIGUSR2: the agent exits 0');
like(slurp_file("$PostgreSQL::Test::Utils::log_path/027_fence_restart_ra.log"),
	qr/keeping 1 part\(s\) running/, 'it says it keeps its part running');
is(join(' ', procs('keep_1')), join(' ', @before), 'the job runs on without its agent: the same processes');
agent('ra2', 'ra', 'q_keep', '10');
ok(wait_for_log('ra2', qr/job_adopted|adopted/), 'the agent started again adopts the job');
is(join(' ', procs('keep_1')), join(' ', @before), 'the same processes');
ok(wait_for_job($kid, "state = 'SUCCEEDED'"), 'the job ends SUCCEEDED');
is(job_field($kid, "failed_attempts || ' ' || lease_losses || ' ' || preemption_count"), '0 0 0',
	'no failed attempt, no lease lost');
unlike(history($kid), qr/RELEASED|LEASE_EXPIRED|released|RUNNABLE \(/,
	'no release and no lease lost in its history: ' . history($kid));
is(sql("SELECT string_agg(attempt || ' ' || agent || ' ' || exit_code, ', ') FROM quota_sched.job_attempts"
	  . " WHERE job_id = $kid"), '1 ra 0', 'one attempt, on ra, exit code 0');
is(slurp_file($logfile), join('', map { "line $_\n" } 1 .. 60), 'its output file is whole: lines 1 to 60');
like(sql("SELECT output FROM quota_sched.job_attempts WHERE job_id = $kid"), qr/line 59\nline 60\n$/,
	'the output in job_attempts ends with its last lines');
stop_agent('ra2');

########################################################################
# (c) a restart after the lease ran out
########################################################################
agent('rc', 'rc', 'q_late', '4');
my $lid = submit('q_late', 'late_1', 'marker=late_1; echo "attempt $QUOTA_SCHED_ATTEMPT"; sleep 60');
ok(wait_for_job($lid, "state = 'RUNNING' AND agent = 'rc'"), 'the job runs on rc');
my @late = procs('late_1');
ok(@late == 1, "its process: @late");
my $shim = (split ' ', (split /\)/, slurp_file("/proc/$late[0]/stat"))[-1])[1];
my $rc = forget_agent('rc');
kill 'USR2', $rc->{KIDS}[0]{PID};
$rc->finish;
is($rc->result(0), 0, 'SIGUSR2: the agent exits 0');
ok(process_gone($late[0]), 'no agent: the shim kills the job once its lease runs out');
ok(wait_for_file("$tmp/state-rc/$shim.end"), "the shim ($shim) has written its end");
like(slurp_file("$PostgreSQL::Test::Utils::log_path/027_fence_restart_rc.log"), qr/lease_fenced/,
	'the shim says it fenced the part');
agent('rc2', 'rc', 'q_late', '4');
ok(wait_for_log('rc2', qr/the shim killed it: its lease ran out/),
	'the agent started again takes the part as lost, not adopted');
unlike(QsAgents::agent_log('rc2'), qr/job_adopted/, 'nothing adopted');
ok($node->poll_query_until('postgres', "SELECT count(*) = 2 FROM quota_sched.job_event"
	  . " WHERE job_id = $lid AND to_state = 'RUNNING'"), 'the job runs again: ' . history($lid));
sql("SELECT quota_sched.terminate($lid, 'done')");
stop_agent('rc2');

done_testing();
