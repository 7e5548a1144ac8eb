# The fleet with real agents, end to end (issue 21, "done when"): two hosts
# of 4 instances each and a job that wants 5 on one host, larger than
# both, which waits NO_AGENT_FITS and holds nothing (a job of 5 with any
# split runs on both: scheduling.md 3.13); a host SIGKILLed while it runs checkpointing jobs,
# which come back without a failed attempt; jobs dispatched while no agent
# runs, which come back after the queue's claim timeout and run once an
# agent is back, resuming from their checkpoints; an agent drained by an
# admin, whose job ends normally while it takes nothing new; a failing
# job's last lines, which its team reads and another team does not.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $node = agents_node('story');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('s_env', '{"gpu": 8}');
INSERT INTO quota_sched.job_queue (name, service_environment, claim_timeout)
VALUES ('s_queue', 's_env', '2 seconds');
CREATE ROLE team_a NOLOGIN;
CREATE ROLE team_b NOLOGIN;
CREATE ROLE ann LOGIN IN ROLE quota_sched_user, team_a;
CREATE ROLE ben LOGIN IN ROLE quota_sched_user, team_b;
CREATE ROLE s_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('s_host', NULL);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('s_queue', 'a', '{"gpu": 6}', 'LEND_AND_BORROW', 'team_a'),
	   ('s_queue', 'b', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_b');
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=s_host';
QsAgents::init($node, '019_fleet_story');

# a host agent of 4 instances; all share one checkpoint root, as hosts
# would share a file system, so that a job resumes wherever it runs next
sub start_host
{
	my ($name) = @_;
	launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 's_queue', '--same-user',
			'--capacity-unit', 'gpu', '--instances', '4', '--lease', '5', '--heartbeat', '1',
			'--grace', '2', '--checkpoint-root', "$tmp/ckpt", '--keep-checkpoints',
			'--log-dir', "$tmp/logs"
		]);
	ok($node->poll_query_until('postgres',
			"SELECT live AND state = 'ACTIVE' AND instances = 4 FROM quota_sched.agents WHERE agent = '$name'"),
		"$name is registered: live, ACTIVE, 4 instances");
}

# submit(WHO, SHARE, NAME, INSTANCES, COMMAND): a job of WHO's, its id
sub submit
{
	my ($who, $share, $name, $instances, $command, $per_host) = @_;
	$command =~ s/'/''/g;
	$per_host //= 'NULL';
	return $node->safe_psql('postgres', qq{SET ROLE $who;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
							 instances_per_host, payload)
VALUES ('$name', 's_queue', '$share', 'gpu', $instances, $per_host,
		jsonb_build_object('command', jsonb_build_array('sh', '-c', '$command'))) RETURNING id});
}

sub as
{
	my ($who, $sql) = @_;
	return $node->safe_psql('postgres', "SET ROLE $who; $sql");
}

sub held
{
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(instances), 0) FROM quota_sched.held_capacity WHERE job_queue = 's_queue'");
}

# ---------------------------------------------------------------------------
# A job that wants more on one host than any agent has waits NO_AGENT_FITS
# and holds nothing
# ---------------------------------------------------------------------------
start_host('h1');
start_host('h2');
my $big = submit('ann', 'a', 'big', 5, 'true', 5);
ok(wait_for_job($big, "state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS'"),
	'a job of 5 instances on one host, within its share and the environment, waits NO_AGENT_FITS beside two 4-instance hosts');
is(held(), '0', 'it holds nothing');
is( as('ann', "SELECT (e->>'blocked_by') || ' ' || (e->>'largest_agent') FROM quota_sched.explain($big) e"),
	'NO_AGENT_FITS 4', 'explain names the largest live agent');
my $four = submit('ann', 'a', 'four', 4, 'true');
ok(wait_for_job($four, "state = 'SUCCEEDED'"), 'a 4-instance job of the same share runs meanwhile');
is(job_field($big, "state || ' ' || status_reason || ' ' || coalesce(agent, 'none')"),
	'RUNNABLE NO_AGENT_FITS none', 'the large job still waits');
unlike(history($big), qr/SCHEDULED/, 'it was never dispatched: its history has no SCHEDULED');
is(job_field($big, 'claim_requeues'), '0', 'nor requeued unclaimed');
as('ann', "SELECT quota_sched.terminate($big, 'too large for this fleet')");
ok(wait_for_job($big, "state = 'FAILED'"), 'its owner terminates it');

# ---------------------------------------------------------------------------
# A SIGKILLed host: its checkpointing jobs come back without a failed
# attempt; dispatched while no agent runs, they come back after the claim
# timeout; they resume on the next host from their checkpoints
# ---------------------------------------------------------------------------
is(stop_agent('h2'), 0, 'h2 stops (SIGTERM)');
# a checkpointing job: its first attempt saves a step and runs until it is
# killed; a later one finds the step and ends
my $ckpt_cmd = "echo \"\$QUOTA_SCHED_ATTEMPT \$QUOTA_SCHED_AGENT\" >> $tmp/trace-\$QUOTA_SCHED_JOB_ID;"
  . ' if [ -f "$QUOTA_SCHED_CHECKPOINT_DIR/step" ]; then echo resumed; exit 0; fi;'
  . ' echo 1 > "$QUOTA_SCHED_CHECKPOINT_DIR/step"; while :; do sleep 0.1; done';
my @ckpt = map { submit('ann', 'a', "ckpt$_", 1, $ckpt_cmd) } 1 .. 3;
foreach my $id (@ckpt)
{
	ok(wait_for_job($id, "state = 'RUNNING' AND agent = 'h1'"), "checkpointing job $id runs on h1");
	ok(wait_for_file("$tmp/ckpt/job-$id/step"), "job $id saved its step");
}
kill 'KILL', agent_pid('h1');
forget_agent('h1');
foreach my $id (@ckpt)
{
	ok(wait_for_job($id, 'lease_losses = 1'), "job $id: its lease ran out, a lease loss");
}
my $orphan = submit('ann', 'a', 'orphan', 1, 'echo orphan ran');
foreach my $id (@ckpt, $orphan)
{
	ok( $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM quota_sched.job_event
		                WHERE job_id = $id AND from_state = 'SCHEDULED' AND to_state = 'RUNNABLE'
		                  AND reason = 'NOT_CLAIMED')}),
		"job $id, dispatched while no agent runs, comes back after the claim timeout");
	is(job_field($id, "failed_attempts || ' ' || (claim_requeues >= 1)"),
		'0 true', "job $id has no failed attempt and counts its claim requeue");
}
start_host('h3');
foreach my $id (@ckpt)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id runs on h3 and succeeds (max_attempts 1)");
	is(job_field($id, "agent || ' ' || failed_attempts || ' ' || lease_losses || ' ' || max_attempts"),
		'h3 0 1 1', "job $id: h3, no failed attempt, one lease loss, of max_attempts 1");
	is(slurp_file("$tmp/trace-$id"), "1 h1\n2 h3\n", "job $id: attempt 1 on h1, attempt 2 on h3");
	is( as('ann',
			"SELECT string_agg(attempt || ' ' || agent || ' ' || coalesce(exit_code::text, '-') || ' '"
			  . " || coalesce(btrim(output, E'\\n'), '-'), '; ' ORDER BY attempt)"
			  . " FROM quota_sched.job_attempts WHERE job_id = $id"),
		'1 h1 - -; 2 h3 0 resumed', "job $id: its team sees both attempts, the second resumed");
}
ok(wait_for_job($orphan, "state = 'SUCCEEDED' AND agent = 'h3'"), 'the job dispatched to no agent runs on h3');
like(history($orphan), qr/SCHEDULED>RUNNABLE \(NOT_CLAIMED\).*RUNNABLE>SCHEDULED/, 'its history: not claimed, dispatched again');

# ---------------------------------------------------------------------------
# A drained agent takes nothing new; its job ends normally
# ---------------------------------------------------------------------------
my $flag = "$tmp/release";
my $long = submit('ann', 'a', 'long', 1, "while [ ! -f $flag ]; do sleep 0.1; done");
ok(wait_for_job($long, "state = 'RUNNING' AND agent = 'h3'"), 'h3 runs the long job');
is($node->safe_psql('postgres', "SELECT (quota_sched.drain_agent('h3')).state"),
	'DRAINING', 'an admin drains h3');
my $after = submit('ann', 'a', 'after', 1, 'true');
ok(wait_for_job($after, "state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS'"),
	'a job submitted now waits: no live agent is ACTIVE');
ok( $node->poll_query_until('postgres', qq{
		SELECT a.last_seen > j.submitted_at FROM quota_sched.agents a, quota_sched.job j
		 WHERE a.agent = 'h3' AND j.id = $after}), 'h3 heartbeats after the submission');
is(job_field($after, "state || ' ' || coalesce(agent, 'none')"), 'RUNNABLE none', 'h3 took nothing new');
is(job_field($long, "state || ' ' || agent"), 'RUNNING h3', 'the long job still runs on h3');
open(my $fh, '>', $flag) or die "could not write $flag: $!";
close $fh;
ok(wait_for_job($long, "state = 'SUCCEEDED'"), 'the long job ends normally: SUCCEEDED');
start_host('h4');
ok(wait_for_job($after, "state = 'SUCCEEDED' AND agent = 'h4'"), 'the waiting job runs on the next active host');

# ---------------------------------------------------------------------------
# A failing job's last lines: its team reads them, another team does not
# ---------------------------------------------------------------------------
my $broken = submit('ann', 'a', 'broken', 1,
	'echo loading shard 7; echo "CUDA error: out of memory at step 1200" >&2; exit 3');
ok(wait_for_job($broken, "state = 'FAILED'"), 'a failing job fails');
is( as('ann',
		"SELECT exit_code || ' ' || (output LIKE '%loading shard 7%CUDA error: out of memory at step 1200%')"
		  . " FROM quota_sched.job_attempts WHERE job_id = $broken"),
	'3 true', 'its team reads the exit code and the last lines of its output');
is(as('ben', "SELECT count(*) FROM quota_sched.job_attempts WHERE job_id = $broken"),
	'0', 'another team sees nothing of it');
is(as('ben', "SELECT count(*) FROM quota_sched.job_attempts"), '0', 'nor of any attempt of team a');

foreach my $name ('h3', 'h4')
{
	is(stop_agent($name), 0, "$name exits 0");
}
done_testing();
