# The update of a live database (issue 38): the release before the current
# one, built from git history (QsRelease), runs a cluster of its own with
# its worker and its agents running jobs; then the current build is
# installed into that PostgreSQL (make install, the server stopped for it),
# the server started again, and, once its library has met the old schema a
# while, ALTER EXTENSION quota_sched UPDATE is run.  Nothing is lost:
#
#   1. at the release before: jobs end, run, and wait (the queue is full);
#   2. between the restart and the update, every call of the library is
#      refused (SQLSTATE 55QS0, naming both versions, the update as its
#      hint): a user's submission and a pass; the agents' heartbeats and
#      a report of a job that ends then, which the agent of the release
#      before tries again; the worker says once that it waits; an agent of
#      the current version does not start work, saying why;
#   3. after the update: the worker says once that its passes resume, the
#      report of the job that ended in between is taken, the waiting job
#      runs, the agents of the release before go on (reports, claims), the
#      agent of the current version starts by itself and runs jobs;
#   4. every job ran exactly once (its command leaves its name in a file)
#      and ended SUCCEEDED once, none lost, its history one attempt;
#   5. a session that found the schema its library's own is refused once
#      the extension is dropped and created again at the release before
#      (the library's cache of the version follows pg_extension).
use strict;
use warnings;
use File::Basename;
use File::Copy;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;
use QsRelease;

my ($current, $previous) = versions();
my $tmp = PostgreSQL::Test::Utils::tempdir;

# The PostgreSQL of the test, a copy of the one under test, with the
# release before installed; its agent kept apart (the current build's
# make install replaces the installed one).
my $pg_config = private_install("$tmp/pg");
install_release($previous, $pg_config);
my $bindir = release_bin($pg_config);
my $old_agent = "$tmp/quota-sched-agent-$previous";
copy("$bindir/quota-sched-agent", $old_agent) or die "copy: $!";
chmod(0755, $old_agent);
like(`$old_agent --version`, qr/quota-sched-agent \Q$previous\E/, "the agent of $previous is built");

my $node = PostgreSQL::Test::Cluster->new('live', install_path => dirname($bindir));
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '300ms'
CONF
$node->start;
QsAgents::init($node, 'live');

sub sql { return $node->safe_psql('postgres', $_[0]); }

$node->safe_psql('postgres', q{
CREATE EXTENSION quota_sched;
CREATE ROLE live_agent LOGIN;
GRANT quota_sched_agent TO live_agent;
CREATE ROLE live_user LOGIN;
GRANT quota_sched_user TO live_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits)
VALUES ('live_env', '{"gpu": 4, "cpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('live_queue', 'live_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('live_queue', 'a', '{"gpu": 2, "cpu": 1}', 'LEND_AND_BORROW'),
	   ('live_queue', 'b', '{"gpu": 2, "cpu": 1}', 'LEND_AND_BORROW');
});
is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $previous,
	"quota_sched $previous is installed");

# A job's command leaves its name in "ran" when it starts, waits for the
# file go-NAME (the test says when it ends), and leaves its name in "done".
my @jobs;
sub submit_sql
{
	my ($name, $share, $unit) = @_;
	my $cmd = "echo $name >> $tmp/ran; while [ ! -e $tmp/go-$name ]; do sleep 0.1; done;"
	  . " echo $name >> $tmp/done";
	return qq{SET ROLE live_user;
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
		VALUES ('$name', 'live_queue', '$share', '$unit',
				jsonb_build_object('command', jsonb_build_array('sh', '-c', \$c\$$cmd\$c\$)))};
}
sub submit
{
	my ($name, $share, $unit) = @_;
	sql(submit_sql($name, $share, $unit));
	push @jobs, $name;
	return;
}
sub finish { open(my $fh, '>', "$tmp/go-$_") or die "$tmp/go-$_: $!" for @_; return; }
sub wait_state
{
	my ($name, $state) = @_;
	return $node->poll_query_until('postgres',
		qq{SELECT state = '$state' FROM quota_sched.job WHERE name = '$name'});
}
sub states
{
	return sql(q{SELECT string_agg(name || ' ' || state, ', ' ORDER BY name) FROM quota_sched.job});
}

my $connstr = $node->connstr('postgres') . ' user=live_agent';
sub start_agent
{
	my ($name, $bin, @opts) = @_;
	return launch_agent($name,
		[ $bin, '--dbname', $connstr, '--agent', $name, '--queue', 'live_queue',
		  '--checkpoint-root', "$tmp/ckpt-$name", '--log-dir', "$tmp/logs-$name",
		  '--lease', '60', '--heartbeat', '1', '--grace', '2', @opts ]);
}

#
# 1. At the release before: two of its agents of 2 gpus each.  s1 and s2
# end; w1, r1, r2 and r3 take the 4 gpus and run on; q1 waits.
#
start_agent('old1', $old_agent, '--capacity-unit', 'gpu', '--instances', '2');
start_agent('old2', $old_agent, '--capacity-unit', 'gpu', '--instances', '2');
finish('s1', 's2');
submit('s1', 'a', 'gpu');
submit('s2', 'b', 'gpu');
ok(wait_state('s1', 'SUCCEEDED') && wait_state('s2', 'SUCCEEDED'), "$previous: s1 and s2 ran and ended");
submit($_->[0], $_->[1], 'gpu') for ([ 'w1', 'a' ], [ 'r1', 'a' ], [ 'r2', 'b' ], [ 'r3', 'b' ]);
ok(wait_state($_, 'RUNNING'), "$previous: $_ runs") for qw(w1 r1 r2 r3);
submit('q1', 'a', 'gpu');
is(states(), 'q1 RUNNABLE, r1 RUNNING, r2 RUNNING, r3 RUNNING, s1 SUCCEEDED, s2 SUCCEEDED, w1 RUNNING',
	"$previous: the jobs before the update");

#
# 2. The current build installed, the server started again: the library
# meets the schema of the release before.
#
$node->stop('fast');
install_current($pg_config);
$node->start;
is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $previous,
	'after the restart the schema is still the release before\'s');

my $refusal = qr/ERROR:  55QS0: quota_sched \Q$previous\E is installed in this database, but its library is version \Q$current\E.*HINT:  Run ALTER EXTENSION quota_sched UPDATE\./s;
{
	my ($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\n" . submit_sql('x1', 'a', 'gpu'));
	like($stderr, $refusal, 'a submission is refused (55QS0), naming both versions, the update as its hint');
	($ret, $stdout, $stderr) = $node->psql('postgres',
		"\\set VERBOSITY verbose\nSELECT * FROM quota_sched.run_pass('live_queue')");
	like($stderr, $refusal, 'so is a pass');
}
my $waits = qr/LOG:  quota_sched worker: quota_sched \Q$previous\E is installed, but the library is version \Q$current\E: no passes until the extension is updated/;
ok($node->wait_for_log($waits), 'the worker says that it waits for the update');

# w1 ends now: its agent's report is refused, and tried again
finish('w1');
my $w1_agent = sql(q{SELECT agent FROM quota_sched.job WHERE name = 'w1'});
ok(wait_for_log($w1_agent, qr/job_retry.*report failed \(SQLSTATE 55QS0\)/),
	"the report of w1, which ended meanwhile, is refused (55QS0) and $w1_agent tries again");
ok(wait_for_log($_, qr/heartbeat failed: .*\(SQLSTATE 55QS0\)/), "${_}'s heartbeats are refused (55QS0)")
  for qw(old1 old2);
unlike(agent_log($w1_agent), qr/job_forgotten/, "$w1_agent forgets no job");

# an agent of the current version does not start on the old schema
my $new_log = "$PostgreSQL::Test::Utils::log_path/live_new1.log";
my $new1;
END { eval { $new1->kill_kill(grace => 10) if $new1; }; }
$new1 = IPC::Run::start(
	[ agent_bin_of($bindir), '--dbname', $connstr, '--agent', 'new1', '--queue', 'live_queue',
	  '--same-user', '--checkpoint-root', "$tmp/ckpt-new1", '--log-dir', "$tmp/logs-new1",
	  '--lease', '60', '--heartbeat', '1', '--grace', '2', '--capacity-unit', 'cpu', '--instances', '2' ],
	'<', \undef, '>>', $new_log, '2>>', $new_log);
ok(wait_for_log('new1', qr/database postgres has quota_sched \Q$previous\E, older than this agent \(\Q$current\E\): run ALTER EXTENSION quota_sched UPDATE there/),
	"an agent of $current says that the database is to be updated first");
unlike(agent_log('new1'), qr/ connected: /, 'and does not start work');
sleep(2);    # the window stays open a little longer: heartbeats and retries go on
is(states(), 'q1 RUNNABLE, r1 RUNNING, r2 RUNNING, r3 RUNNING, s1 SUCCEEDED, s2 SUCCEEDED, w1 RUNNING',
	'nothing changed in the window');

#
# 3. The update.
#
sql('ALTER EXTENSION quota_sched UPDATE');
is(sql(q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $current, "updated to $current");
my $resumes = qr/LOG:  quota_sched worker: quota_sched \Q$current\E is installed, the library's version: passes resume/;
ok($node->wait_for_log($resumes), 'the worker says that its passes resume');
ok(wait_state('w1', 'SUCCEEDED'), 'the report of w1, tried again, is taken: w1 SUCCEEDED');
ok(wait_state('q1', 'RUNNING'), 'q1, which waited, is dispatched and runs');
like(sql(q{SELECT agent FROM quota_sched.job WHERE name = 'q1'}), qr/^old[12]$/,
	"an agent of $previous claimed it");
finish('q1', 'r1', 'r2', 'r3');
ok(wait_state($_, 'SUCCEEDED'), "$_ SUCCEEDED, reported by an agent of $previous") for qw(q1 r1 r2 r3);
submit('n1', 'b', 'gpu');
finish('n1');
ok(wait_state('n1', 'SUCCEEDED'), "a job submitted after the update runs on an agent of $previous");

# the agent of the current version started by itself; it runs the cpu jobs
ok(wait_for_log('new1', qr/ connected: /), "the agent of $current connects once the database is updated");
finish('c1', 'c2');
submit('c1', 'a', 'cpu');
submit('c2', 'b', 'cpu');
ok(wait_state('c1', 'SUCCEEDED') && wait_state('c2', 'SUCCEEDED'), "the agent of $current runs jobs");
is(sql(q{SELECT string_agg(DISTINCT agent, ',') FROM quota_sched.job WHERE name IN ('c1', 'c2')}), 'new1',
	"they ran on the agent of $current");

#
# 4. Every job ran once, ended once, none lost.
#
my @expected = sort @jobs;
is(states(), join(', ', map { "$_ SUCCEEDED" } @expected), 'every job SUCCEEDED');
my @ran = sort split /\n/, slurp_file("$tmp/ran");
my @done = sort split /\n/, slurp_file("$tmp/done");
is_deeply(\@ran, \@expected, 'every job\'s command started exactly once');
is_deeply(\@done, \@expected, 'and ended exactly once');
is(sql(q{
	SELECT string_agg(j.name, ', ' ORDER BY j.name)
	  FROM quota_sched.job j
	 WHERE (j.failed_attempts, j.preemption_count, j.lease_losses, j.claim_requeues) <> (0, 0, 0, 0)
		OR (SELECT count(*) FROM quota_sched.job_event e
			 WHERE e.job_id = j.id AND e.kind = 'STATE' AND e.to_state = 'SCHEDULED') <> 1
		OR (SELECT count(*) FROM quota_sched.job_event e
			 WHERE e.job_id = j.id AND e.kind = 'STATE' AND e.to_state = 'SUCCEEDED') <> 1
		OR (SELECT count(*) FROM quota_sched.job_event e
			 WHERE e.job_id = j.id AND e.kind = 'STATE' AND e.from_state IS NOT NULL
			   AND e.to_state = 'RUNNABLE') <> 0}), '',
	'each job\'s history is one attempt: dispatched once, SUCCEEDED once, never requeued');
is(sql(q{SELECT count(*) FROM quota_sched.job_attempt WHERE exit_code = 0}), scalar(@expected),
	'each attempt\'s end is recorded, exit code 0');
is(sql(q{SELECT count(*) FROM quota_sched.held_capacity_drift()}), '0', 'the counters match the jobs');
my @waits = slurp_file($node->logfile) =~ /$waits/g;
my @resumes = slurp_file($node->logfile) =~ /$resumes/g;
is(scalar(@waits) . ' ' . scalar(@resumes), '1 1', 'the worker said each once');

stop_agent($_) for qw(old1 old2);
$new1->signal('TERM');
$new1->finish;

#
# 5. The version each session keeps follows pg_extension: a session that
# found the schema its own is refused once it is another.
#
$node->safe_psql('postgres', 'CREATE DATABASE inval');
$node->safe_psql('inval', 'CREATE EXTENSION quota_sched');
my $session = $node->background_psql('inval', on_error_stop => 0);
my $call = q{SELECT quota_sched.period_start('2026-12-05 10:00+00', 'DAY') IS NOT NULL};
is($session->query_safe($call), 't', 'a session calls the library');
$node->safe_psql('inval', "DROP EXTENSION quota_sched; CREATE EXTENSION quota_sched VERSION '$previous'");
$session->query($call);
like($session->{stderr}, qr/quota_sched \Q$previous\E is installed in this database, but its library is version \Q$current\E/,
	'the same session is refused once the extension is of another version');
$session->quit;

$node->stop;
done_testing();

# the agent of the current build, as installed in the test's PostgreSQL
sub agent_bin_of { return "$_[0]/quota-sched-agent"; }
