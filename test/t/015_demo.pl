# The demo (demo/setup.sql, demo/demo.sql, demo/train.sh) as demo/run runs
# it, with the worker and two real agents: it runs to its end, and what it
# prints says what the seed example should: in step 1 med borrows, in step
# 2 QS2 takes its instance back from med, in step 3 low preempts high in
# its share, the preempted jobs resume from a step above 0, every job
# succeeds.  So the README's first command cannot rot unnoticed.  The test
# runs as postgres, so its agents run their jobs as their own user
# (--same-user); demo/run's run as root, their jobs as nobody (--run-as).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use File::Copy;

my $bindir = `pg_config --bindir`;
chomp $bindir;
my $agent_bin = -x "$bindir/quota-sched-agent" ? "$bindir/quota-sched-agent" : 'agent/quota-sched-agent';

my $node = PostgreSQL::Test::Cluster->new('demo');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
CONF
$node->start;

my $tmp = PostgreSQL::Test::Utils::tempdir;
copy("demo/train.sh", "$tmp/train.sh") or die "copy: $!";
mkdir "$tmp/checkpoints" or die "mkdir: $!";
mkdir "$tmp/progress" or die "mkdir: $!";

my ($out, $err) = ('', '');
ok(IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
					 '-f', 'demo/setup.sql' ], '>', \$out, '2>', \$err),
	'demo/setup.sql runs') or diag($err);

my $logdir = $PostgreSQL::Test::Utils::log_path;
my @agents;
foreach my $spec ([ 'agent-a', 2 ], [ 'agent-b', 1 ])
{
	my $log = "$logdir/015_demo_$spec->[0].log";
	push @agents, IPC::Run::start(
		[
			$agent_bin, '--dbname', $node->connstr('postgres') . ' user=launcher',
			'--agent', $spec->[0], '--queue', 'ml-queue', '--instances', $spec->[1], '--same-user',
			'--lease', '10', '--heartbeat', '1', '--grace', '5',
			'--checkpoint-root', "$tmp/checkpoints", '--keep-checkpoints'
		],
		'<', \undef, '>>', $log, '2>>', $log);
}

($out, $err) = ('', '');
my $ok = IPC::Run::run([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-v', "train=$tmp/train.sh",
		'-v', "progress=$tmp/progress", '-d', $node->connstr('postgres'), '-f', 'demo/demo.sql' ],
	'>', \$out, '2>', \$err, IPC::Run::timeout(150));
ok($ok, 'demo/demo.sql runs to its end') or diag("$err\n$out");
note($out);

# what each step printed (psql's aligned tables: "|"-separated cells)
like($out, qr/qs1_job_high \| QS1\s+\|\s+3 \| RUNNING\s+\| agent-\w\s+\| own/,
	'step 1: high runs on QS1\'s own instance');
like($out, qr/qs1_job_med\s+\| QS1\s+\|\s+2 \| RUNNING\s+\| agent-\w\s+\| borrowed/,
	'step 1: med runs on a borrowed instance');
like($out, qr/NO_BORROWABLE_SUPPLY/, 'step 1: low waits, nothing to borrow');
like($out, qr/qs1_job_med\s+\| CROSS_SHARE_PREEMPTION \| qs2_job_1/,
	'step 2: med is preempted for qs2_job_1');
like($out, qr/qs1_job_high \| IN_SHARE_PREEMPTION\s+\| qs1_job_low/,
	'step 3: high is preempted in its share for low');
like($out, qr/qs1_job_high \|\s+1 \| attempt 1 started at step 0; attempt 2 started at step [1-9]/,
	'high resumes from its checkpoint');
like($out, qr/qs1_job_med\s+\|\s+1 \| attempt 1 started at step 0; attempt 2 started at step [1-9]/,
	'med resumes from its checkpoint');
is($node->safe_psql('postgres', "SELECT string_agg(state, ',' ORDER BY id) FROM quota_sched.job"),
	'SUCCEEDED,SUCCEEDED,SUCCEEDED,SUCCEEDED', 'every job succeeded');
like($out, qr/^ QS1\s+\|\s+\d+ \|\s+\d+ \|\s+[1-9]\d* \|/m, 'the summary shows QS1 borrowed');
like($out, qr/^ QS2\s+\| QS1\s+\|\s+[1-9]\d*$/m, 'who lent to whom: QS2 lent QS1');
unlike($out, qr/^ QS3\s+\| QS1/m, 'QS3, RESERVE, lent nothing');
# the what-if: the baseline replays the run (2 preemptions in QS1, 10 s
# borrowed: a job's 40 steps of a quarter second, more on a loaded machine,
# whose steps take longer: 12 to 14 s beside stress-ng --cpu 2); had QS2
# reserved its instance, QS1 borrows nothing and only high is preempted
# (by low), and med waits for an instance of QS1
like($out, qr/^ baseline\s+\| QS1\s+\|\s+3 \|\s+3 \|\s+2 \|.*\|\s+1\d \|\s+\d+$/m,
	'what-if: the baseline replays the run: 2 preemptions, 10 to 19 s borrowed');
like($out, qr/^ candidate \| QS1\s+\|\s+3 \|\s+3 \|\s+1 \|.*\|\s+0 \|\s+\d+$/m,
	'what-if: with QS2 RESERVE, QS1 borrows nothing and 1 preemption is left');
like($out, qr/^ qs1_job_med\s+\| QS1\s+\|\s+[\d.]+ \|\s+[01]\.\d \|\s+(?:[5-9]|\d\d)\.\d \|\s+1 \|\s+0 \|/m,
	'why: med, first, waits in the candidate and is no longer preempted');

$_->signal('TERM') foreach @agents;
$_->finish foreach @agents;
$node->stop;
done_testing();
