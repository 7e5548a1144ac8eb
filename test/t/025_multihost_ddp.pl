# A real multi-host training run (issue 40; doc/agents.md "Running a
# multi-host job"): four quota-sched-agent processes of 2 instances, d1 to
# d4 at 127.0.0.2 to 127.0.0.5, and the worker.  A job of 4, 2 per host,
# runs test/ddp/train.py, a small PyTorch DDP program (gloo on CPU, one
# process per host, init_method env://), on two agents:
#
# 1. The rendezvous: with d2 stopped (SIGSTOP), d1 claims its part and
#    waits, its command not started, the job SCHEDULED; once d2 claims, d1
#    (rank 0) chooses the port, both parts start with the variables of
#    their place (MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK, the PET_* and
#    SM_* ones, QUOTA_SCHED_HOSTS, ...), and both ranks end with the same
#    weights, in their outputs in job_attempts.
# 2. The same training by a borrower's job, preempted in the middle by a
#    cross-share reclaim, resumes from its checkpoint on OTHER hosts: d1 and
#    d2 are drained once it has checkpointed, so that the owner's job runs
#    on d3 and d4 and the borrower, once it ended, there too (the
#    checkpoint root is shared by the four agents, as a network file
#    system is by real hosts).  Both ranks print the step they resumed
#    from and end with the weights of the uninterrupted run of part 1;
#    the job ends SUCCEEDED with both ranks' output of both attempts in
#    job_attempts.
#
# python3-torch is needed (test/setup.sh installs it): without it the test
# fails, it does not skip.  Everything is polled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $python = '/usr/bin/python3';
my $train = "$FindBin::RealBin/../ddp/train.py";
my $steps = 30;
ok(system($python, '-c', 'import torch, torch.distributed') == 0,
	"$python has PyTorch (python3-torch, test/setup.sh)");
ok(-f $train, "the training program: $train");

my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");

my $node = agents_node('ddp');
$node->start;
# the pool: 6 gpus; the owner's share 4, lent when idle; the team's 2, and
# it borrows
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('d_env', '{"gpu": 6}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('d_queue', 'd_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('d_queue', 'owner', '{"gpu": 4}', 'LEND'),
	   ('d_queue', 'team', '{"gpu": 2}', 'LEND_AND_BORROW');
CREATE ROLE d_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('d_host', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=d_host';
QsAgents::init($node, '025_multihost_ddp');

my @hosts = ([ 'd1', 'r1', '127.0.0.2' ], [ 'd2', 'r1', '127.0.0.3' ],
	[ 'd3', 'r2', '127.0.0.4' ], [ 'd4', 'r2', '127.0.0.5' ]);
foreach my $h (@hosts)
{
	my ($name, $rack, $address) = @$h;
	launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 'd_queue', '--same-user',
			'--capacity-unit', 'gpu', '--instances', '2', '--labels', "rack=$rack",
			'--address', $address, '--lease', '20', '--heartbeat', '1', '--grace', '5',
			'--checkpoint-root', "$tmp/ckpt", '--log-dir', "$tmp/logs-$name"
		]);
}
ok( $node->poll_query_until('postgres', q{
		SELECT string_agg(agent || ' ' || instances || ' ' || address, ', ' ORDER BY agent)
		  FROM quota_sched.agents WHERE live AND state = 'ACTIVE'},
		'd1 2 127.0.0.2, d2 2 127.0.0.3, d3 2 127.0.0.4, d4 2 127.0.0.5'),
	'the four agents are live hosts of 2 at their addresses');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# submit(SHARE, NAME, ARGV): a job of 4, 2 per host, running ARGV; its id
sub submit
{
	my ($share, $name, @argv) = @_;
	my $command = join(', ', map { my $a = $_; $a =~ s/'/''/g; "'$a'" } @argv);
	return sql(qq{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
									 instances_per_host, payload)
		VALUES ('$name', 'd_queue', '$share', 'gpu', 4, 2,
				jsonb_build_object('command', jsonb_build_array($command)))
		RETURNING id});
}

# placed(ID): the parts of the job's latest placement, "agent:instances"
sub placed
{
	return sql(qq{
		SELECT string_agg(agent || ':' || instances, ' ' ORDER BY rank) FROM quota_sched.job_part
		 WHERE job_id = $_[0] AND placed_at = (SELECT max(placed_at) FROM quota_sched.job_part
		                                        WHERE job_id = $_[0])});
}

# output(ID, ATTEMPT, RANK): that part's output in job_attempts
sub output
{
	my ($id, $attempt, $rank) = @_;
	return sql(qq{SELECT output FROM quota_sched.job_attempts
		WHERE job_id = $id AND attempt = $attempt AND rank = $rank});
}

# weights(TEXT): the digest of the final weights a rank printed
sub weights
{
	my ($rank_output) = @_;
	return $rank_output =~ /done after step $steps, weights ([0-9a-f]{16})/ ? $1 : 'none';
}

# ---------------------------------------------------------------------------
# 1. The rendezvous, and a run of both ranks to the same weights.
# ---------------------------------------------------------------------------
my $d2 = QsAgents::agent_pid('d2');
kill 'STOP', $d2;
my $ddp = submit('owner', 'ddp', $python, $train, $steps);
ok( $node->poll_query_until('postgres', qq{
		SELECT state = 'CLAIMED' OR state = 'RUNNING' FROM quota_sched.job_part
		 WHERE job_id = $ddp AND agent = 'd1'}),
	'd1 claims its part while d2 is stopped');
is(placed($ddp), 'd1:2 d2:2', 'the job is placed on d1 and d2, 2 each');
my $log1 = "$tmp/logs-d1/$ddp/attempt-1.log";
ok(wait_for_file($log1, qr/waiting for its peers/), "d1's part waits for its peers (its output says so)");
ok(QsAgents::wait_for_log('d1', qr/job_waiting|waiting for its peers/), "d1's log says it waits");
unlike(slurp_file($log1), qr/^rank /m, "d1 has not started the command");
is(sql("SELECT state FROM quota_sched.job WHERE id = $ddp"), 'SCHEDULED',
	'the job is SCHEDULED: its part on d2 is not claimed');
is( sql(qq{SELECT string_agg(rank || ' ' || claimed || ' ' || coalesce(port::text, '-'), ', ' ORDER BY rank)
		     FROM quota_sched.job_peers($ddp, 'd1')}),
	'0 true -, 1 false -', "job_peers: d1's part claimed, d2's not, no port yet");
kill 'CONT', $d2;
ok(wait_for_job($ddp, "state = 'SUCCEEDED'"), 'd2 claims, both parts run, the job succeeds');
my $port = sql("SELECT port FROM quota_sched.job_parts WHERE job_id = $ddp AND rank = 0");
like($port, qr/^\d+$/, "rank 0's agent gave a rendezvous port: $port");
is( sql(qq{SELECT string_agg(rank || ' ' || agent || ' ' || exit_code, ', ' ORDER BY rank)
		     FROM quota_sched.job_attempts WHERE job_id = $ddp}),
	'0 d1 0, 1 d2 0', 'job_attempts: rank 0 on d1 and rank 1 on d2, both exit 0');
my ($out0, $out1) = (output($ddp, 1, 0), output($ddp, 1, 1));
note("rank 0's output:\n$out0\nrank 1's output:\n$out1");
# the agent's own lines are in the attempt's file, not in its tail
my ($file0, $file1) = split /\n/, sql(qq{SELECT log_path FROM quota_sched.job_attempts
	WHERE job_id = $ddp ORDER BY rank});
like(slurp_file($file0),
	qr/^\[quota-sched-agent\] a part of 2 instance\(s\) of a job of 4: waiting for its peers\n\[quota-sched-agent\] every part claimed after [\d.]+ s: rank 0 of 2, rendezvous at 127\.0\.0\.2:$port\n/,
	"rank 0's output file: it waited, then its place and the rendezvous");
like(slurp_file($file1), qr/\[quota-sched-agent\] every part claimed after [\d.]+ s: rank 1 of 2, rendezvous at 127\.0\.0\.2:$port\n/,
	"rank 1's too");
like($out0,
	qr/QUOTA_SCHED_NUM_HOSTS=2 QUOTA_SCHED_HOST_RANK=0 QUOTA_SCHED_HOSTS=127\.0\.0\.2,127\.0\.0\.3 QUOTA_SCHED_INSTANCES_ON_HOST=2 MASTER_ADDR=127\.0\.0\.2 MASTER_PORT=$port NNODES=2 NODE_RANK=0 WORLD_SIZE=2 RANK=0 PET_NNODES=2 PET_NODE_RANK=0 PET_MASTER_ADDR=127\.0\.0\.2 PET_MASTER_PORT=$port PET_NPROC_PER_NODE=2 SM_HOSTS=\["127\.0\.0\.2","127\.0\.0\.3"\] SM_CURRENT_HOST=127\.0\.0\.2 SM_NUM_GPUS=2/,
	"rank 0's variables");
like($out1,
	qr/QUOTA_SCHED_HOST_RANK=1 .* MASTER_ADDR=127\.0\.0\.2 MASTER_PORT=$port NNODES=2 NODE_RANK=1 WORLD_SIZE=2 RANK=1 .* SM_CURRENT_HOST=127\.0\.0\.3 /,
	"rank 1's variables");
my $reference = weights($out0);
like($reference, qr/^[0-9a-f]{16}$/, "rank 0 ends with weights $reference");
is(weights($out1), $reference, 'rank 1 ends with the same weights');
ok( $node->poll_query_until('postgres',
		q{SELECT bool_and(free_instances = 2) AND count(*) = 4 FROM quota_sched.agents}),
	'every agent is free again');

# ---------------------------------------------------------------------------
# 2. The team's job (borrowing 2 of the owner's) checkpoints, is preempted
# by the owner's job, and resumes on d3 and d4 from its checkpoint.
# ---------------------------------------------------------------------------
my $team = submit('team', 'team_ddp', $python, $train, $steps, '0.3');
ok(wait_for_job($team, "state = 'RUNNING'"), "the team's job runs, borrowing");
is(placed($team), 'd1:2 d2:2', 'on d1 and d2');
ok(wait_for_file("$tmp/ckpt/job-$team/step", qr/^([3-9]|\d\d)$/m),
	'it checkpointed step 3 or later');
# d1 and d2 drain: what runs there ends, nothing new goes there
sql("SELECT quota_sched.drain_agent('d1'), quota_sched.drain_agent('d2')");
my $flag = "$tmp/owner-done";
my $owner = submit('owner', 'owner_job', 'sh', '-c',
	"while [ ! -f $flag ]; do sleep 0.1; done; echo owner done");
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM quota_sched.job_event
		 WHERE job_id = $team AND kind = 'STOP' AND reason = 'CROSS_SHARE_PREEMPTION'}),
	"the owner's job reclaims: the team's job gets a stop, CROSS_SHARE_PREEMPTION");
ok(wait_for_job($owner, "state = 'RUNNING'"), "the owner's job runs");
is(placed($owner), 'd3:2 d4:2', 'on d3 and d4 (d1 and d2 drain)');
ok(wait_for_job($team, "state = 'RUNNABLE' AND preemption_count = 1"),
	"the team's job waits again, preempted once");
is( sql(qq{SELECT string_agg(agent || ' ' || ended_as, ', ' ORDER BY rank)
		     FROM quota_sched.job_part WHERE job_id = $team AND attempt = 1}),
	'd1 STOPPED, d2 STOPPED', 'both of its parts stopped');
open(my $fh, '>', $flag) or die "could not write $flag: $!";
close $fh;
ok(wait_for_job($owner, "state = 'SUCCEEDED'"), "the owner's job ends");
ok(wait_for_job($team, "state = 'SUCCEEDED'"), "the team's job runs again and succeeds");
is( sql(qq{SELECT string_agg(attempt || ' ' || rank || ' ' || agent
		                     || CASE WHEN attempt = 2 THEN ' ' || exit_code ELSE '' END,
		                     ', ' ORDER BY attempt, rank)
		     FROM quota_sched.job_attempts WHERE job_id = $team}),
	'1 0 d1, 1 1 d2, 2 0 d3 0, 2 1 d4 0',
	'job_attempts: attempt 1 on d1 and d2 (stopped), attempt 2 on d3 and d4 (exit 0)');
my ($res0, $res1) = (output($team, 2, 0), output($team, 2, 1));
note("attempt 2, rank 0's output:\n$res0\nrank 1's output:\n$res1");
my ($from0) = $res0 =~ /rank 0: resumed from step (\d+)/;
my ($from1) = $res1 =~ /rank 1: resumed from step (\d+)/;
ok(defined $from0 && $from0 >= 3, 'rank 0 resumed from its checkpoint: step ' . ($from0 // 'none'));
is($from1, $from0, 'rank 1 from the same step');
like($res0, qr/MASTER_ADDR=127\.0\.0\.4 /, 'the rendezvous is on d3 now');
is(weights($res0), $reference, 'rank 0 ends with the weights of the uninterrupted run');
is(weights($res1), $reference, 'and so does rank 1');
like(output($team, 1, 0), qr/rank 0: step \d+ loss/, "attempt 1's output is kept too");

# ---------------------------------------------------------------------------
# 3. A job of one host waits for nothing: rank 0 of 1, at its agent's
# address, with a port of its own, given with attempt_started.
# ---------------------------------------------------------------------------
my $one = sql(q{
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, payload)
	VALUES ('one', 'd_queue', 'owner', 'gpu', 2, jsonb_build_object('command', jsonb_build_array(
		'sh', '-c', 'env | grep -E "^(QUOTA_SCHED_(NUM_HOSTS|HOST_RANK|HOSTS|INSTANCES_ON_HOST)|MASTER_ADDR|MASTER_PORT|WORLD_SIZE|RANK|SM_[A-Z_]+)=" | LC_ALL=C sort')))
	RETURNING id});
ok(wait_for_job($one, "state = 'SUCCEEDED'"), 'a job of one host runs and succeeds');
my ($one_agent, $one_port, $one_out) = split /\|/, sql(qq{
	SELECT agent || '|' || port || '|' || output FROM quota_sched.job_attempts WHERE job_id = $one});
my %address = map { $_->[0] => $_->[2] } @hosts;
like($one_agent, qr/^d[34]$/, "on $one_agent (d1 and d2 drain)");
like($one_port, qr/^\d+$/, "its port, in job_attempts: $one_port");
is( $one_out,
	join('', map { "$_\n" } "MASTER_ADDR=$address{$one_agent}", "MASTER_PORT=$one_port",
		'QUOTA_SCHED_HOSTS=' . $address{$one_agent}, 'QUOTA_SCHED_HOST_RANK=0',
		'QUOTA_SCHED_INSTANCES_ON_HOST=2', 'QUOTA_SCHED_NUM_HOSTS=1', 'RANK=0',
		qq{SM_CURRENT_HOST=$address{$one_agent}}, 'SM_HOSTS=["' . $address{$one_agent} . '"]',
		'SM_NUM_GPUS=2', 'WORLD_SIZE=1'),
	'its variables: rank 0 of 1, the rendezvous at its own address');

done_testing();
