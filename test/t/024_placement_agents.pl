# Placement on hosts with real agents (issue 39, "done when";
# scheduling.md 3.13, 3.14): four quota-sched-agent processes of 4
# instances each, a1 and a2 in rack r1, a3 and a4 in rack r2, each at an
# address of its own, with the worker running the passes.  Best fit keeps
# a hole of 4 whole; a job of 8 with instances_per_host 4 runs on two
# agents, STARTING only once both parts are claimed and RUNNING only once
# both run, and each agent runs and reports its own part; a part whose
# process is killed makes the other part stop (PEER_FAILED) and the
# attempt fails once both stopped; a cross-share reclaim stops both parts
# of a borrower and places its owner's job where they ran; a job of one
# rack (same_label) stays in one rack, and waits for room there rather
# than spread over two; a job not claimed by every part within the claim
# timeout goes back, and the agent whose part waited for it lets go.
# The commands are small shell loops that wait for a flag file;
# everything is polled.
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

my $node = agents_node('placement');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('p_env', '{"gpu": 16}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('p_queue', 'p_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('p_queue', 'a', '{"gpu": 12}', 'LEND'),
	   ('p_queue', 'b', '{"gpu": 4}', 'LEND_AND_BORROW');
CREATE ROLE p_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('p_host', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $connstr = $node->connstr('postgres') . ' user=p_host';
QsAgents::init($node, '024_placement_agents');

# the four hosts: name, rack, address
my @hosts = ([ 'a1', 'r1', '127.0.0.2' ], [ 'a2', 'r1', '127.0.0.3' ],
	[ 'a3', 'r2', '127.0.0.4' ], [ 'a4', 'r2', '127.0.0.5' ]);
foreach my $h (@hosts)
{
	my ($name, $rack, $address) = @$h;
	launch_agent($name,
		[
			$agent_bin, '--dbname', $connstr, '--agent', $name, '--queue', 'p_queue', '--same-user',
			'--capacity-unit', 'gpu', '--instances', '4', '--labels', "rack=$rack",
			'--address', $address, '--lease', '20', '--heartbeat', '1', '--grace', '5',
			'--checkpoint-root', "$tmp/ckpt-$name", '--log-dir', "$tmp/logs-$name"
		]);
}
ok( $node->poll_query_until('postgres', q{
		SELECT string_agg(agent || ' ' || instances || ' ' || (labels->>'rack') || ' ' || address, ', '
		                  ORDER BY agent)
		  FROM quota_sched.agents WHERE live AND state = 'ACTIVE'},
		'a1 4 r1 127.0.0.2, a2 4 r1 127.0.0.3, a3 4 r2 127.0.0.4, a4 4 r2 127.0.0.5'),
	'the four agents are live hosts of 4 with their racks and addresses');

# submit(SHARE, NAME, INSTANCES, SCRIPT[, COLUMN => VALUE ...]): a job
# running sh -c SCRIPT, its id
sub submit
{
	my ($share, $name, $instances, $script, %more) = @_;
	$script =~ s/'/''/g;
	my $cols = join('', map { ", $_" } sort keys %more);
	my $vals = join('', map { ", $more{$_}" } sort keys %more);
	return $node->safe_psql('postgres', qq{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
									 payload$cols)
		VALUES ('$name', 'p_queue', '$share', 'gpu', $instances,
				jsonb_build_object('command', jsonb_build_array('sh', '-c', '$script'))$vals)
		RETURNING id});
}

# wait(FLAG, MARKER): a script that waits for the flag file; the marker
# is in its command line, to find its process
sub wait_script
{
	my ($flag, $marker) = @_;
	$marker //= 'none';
	return "marker=$marker; echo \"part on \$QUOTA_SCHED_AGENT of \$QUOTA_SCHED_INSTANCE_COUNT\";"
	  . " while [ ! -f $tmp/$flag ]; do sleep 0.1; done; echo done";
}

sub flag
{
	open(my $fh, '>', "$tmp/$_[0]") or die "could not write $tmp/$_[0]: $!";
	close $fh;
}

sub sql { return $node->safe_psql('postgres', $_[0]); }

# placed(ID): the parts of the job's latest placement, "agent:instances"
# in rank order
sub placed
{
	return sql(qq{
		SELECT string_agg(agent || ':' || instances, ' ' ORDER BY rank) FROM quota_sched.job_part
		 WHERE job_id = $_[0] AND placed_at = (SELECT max(placed_at) FROM quota_sched.job_part
		                                        WHERE job_id = $_[0])});
}

# procs(MARKER, AGENT): the pids of the processes whose command line has
# the marker, started by the agent (QUOTA_SCHED_AGENT in their environment)
sub procs
{
	my ($marker, $agent) = @_;
	my @pids;
	foreach my $dir (glob('/proc/[0-9]*'))
	{
		my ($pid) = $dir =~ m{(\d+)$};
		my ($cmdline, $environ);
		next unless open(my $c, '<', "$dir/cmdline");
		{ local $/; $cmdline = <$c> // ''; }
		close $c;
		next unless index($cmdline, "marker=$marker;") >= 0;
		next unless open(my $e, '<', "$dir/environ");
		{ local $/; $environ = <$e> // ''; }
		close $e;
		push @pids, $pid if "\0$environ" =~ /\0QUOTA_SCHED_AGENT=\Q$agent\E\0/;
	}
	return @pids;
}

# wait_procs(MARKER, AGENT): the one process of the marker on the agent,
# once it runs (undef if none within 30 s)
sub wait_procs
{
	my ($marker, $agent) = @_;
	foreach (1 .. 300)
	{
		my @pids = procs($marker, $agent);
		return $pids[0] if @pids == 1;
		select(undef, undef, undef, 0.1);
	}
	return undef;
}

sub free_all
{
	return $node->poll_query_until('postgres', q{
		SELECT bool_and(free_instances = 4) AND count(*) = 4 FROM quota_sched.agents});
}

# ---------------------------------------------------------------------------
# 1. Best fit: two jobs of 2 share one agent, so that a job of 4 finds a
# whole agent.  A part counts its own instances on its agent: beside a
# job of 4 as two parts of 2, an agent runs a job of 2 too.
# ---------------------------------------------------------------------------
my $two_a = submit('a', 'two_a', 2, wait_script('f1'));
ok(wait_for_job($two_a, "state = 'RUNNING'"), 'a job of 2 runs');
my $two_b = submit('a', 'two_b', 2, wait_script('f1'));
ok(wait_for_job($two_b, "state = 'RUNNING'"), 'a second job of 2 runs');
my $four = submit('a', 'four', 4, wait_script('f1'));
ok(wait_for_job($four, "state = 'RUNNING'"), 'a job of 4 runs');
is(placed($two_a) . ', ' . placed($two_b) . ', ' . placed($four), 'a1:2, a1:2, a2:4',
	'best fit: both jobs of 2 on a1, the job of 4 on the whole a2');
is( sql(q{SELECT string_agg(agent || ' ' || held_instances || ' ' || free_instances, ', ' ORDER BY agent)
		    FROM quota_sched.agents}),
	'a1 4 0, a2 4 0, a3 0 4, a4 0 4', 'the agents view: a1 and a2 full, a3 and a4 whole');
is( sql(qq{SELECT string_agg(job_id || ' ' || agent || ' ' || rank || ' ' || state, ', ' ORDER BY job_id)
		     FROM quota_sched.job_parts WHERE job_id IN ($two_a, $two_b, $four)}),
	"$two_a a1 0 RUNNING, $two_b a1 0 RUNNING, $four a2 0 RUNNING",
	'job_parts: one running part each, on the agent that runs it');
flag('f1');
foreach my $id ($two_a, $two_b, $four)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id succeeds");
}
ok(free_all(), 'every agent is whole again');

my $pairs = submit('a', 'pairs', 4, wait_script('f1b'), instances_per_host => 2);
ok(wait_for_job($pairs, "state = 'RUNNING'"), 'a job of 4, 2 on each host, runs');
is(placed($pairs), 'a1:2 a2:2', 'on a1 and a2, 2 each');
my $beside = submit('a', 'beside', 2, wait_script('f1b'));
ok(wait_for_job($beside, "state = 'RUNNING'"),
	'a job of 2 placed beside a part of 2 is claimed and runs');
is(placed($beside), 'a1:2', 'on a1 (best fit), beside the part');
flag('f1b');
foreach my $id ($pairs, $beside)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id succeeds");
}
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 2. A job of 8, 4 per host, on two agents (a1 and a2: the least names of
# the hosts with room).  a2 is stopped (SIGSTOP) before the dispatch: a1
# claims and starts its part, and the job stays SCHEDULED until a2, let
# go on, claims its own; it is STARTING and RUNNING only then.  a1's part
# waits for its peer (doc/agents.md "Running a multi-host job"): its
# command starts only once a2 claimed.  Each agent ran its part and
# reported it.
# ---------------------------------------------------------------------------
ok(kill('STOP', agent_pid('a2')), 'a2 is stopped (SIGSTOP)');
my $big = submit('a', 'big', 8, wait_script('f2', 'big'), instances_per_host => 4);
ok( $node->poll_query_until('postgres', qq{
		SELECT string_agg(agent || ' ' || state, ', ' ORDER BY rank) FROM quota_sched.job_part
		 WHERE job_id = $big}, 'a1 RUNNING, a2 PLACED'),
	'the job of 8 is placed on a1 and a2; a1 claimed its part, a2 not');
ok(wait_for_log('a1', qr/job_waiting job=$big\b/), "a1's part waits for its peer");
ok( $node->poll_query_until('postgres', qq{
		SELECT lease_until > claimed_at + interval '20 seconds' FROM quota_sched.job_part
		 WHERE job_id = $big AND agent = 'a1'}),
	"a1's heartbeat renews its part's lease meanwhile");
is(scalar(procs('big', 'a1')), 0, 'and its command has not started');
is(job_field($big, "state || ' ' || coalesce(agent, 'none')"), 'SCHEDULED a1',
	'the job is still SCHEDULED (claimed: its agent is rank 0\'s) while a2 has not claimed');
ok(kill('CONT', agent_pid('a2')), 'a2 goes on (SIGCONT)');
ok(wait_for_job($big, "state = 'RUNNING'"), 'a2 claims its part: the job runs');
ok(defined wait_procs('big', 'a2'), "a2 runs its part's command");
is( sql(qq{
		SELECT bool_and(s.at >= p.claimed_at) || ' ' || bool_or(s.at > p.claimed_at)
		       || ' ' || bool_and(r.at >= p.claimed_at) || ' ' || count(*)
		  FROM quota_sched.job_part p,
		       (SELECT at FROM quota_sched.job_event WHERE job_id = $big AND to_state = 'STARTING'
		           AND kind = 'STATE') s,
		       (SELECT at FROM quota_sched.job_event WHERE job_id = $big AND to_state = 'RUNNING'
		           AND kind = 'STATE') r
		 WHERE p.job_id = $big}),
	'true true true 2',
	'history: STARTING not before either part was claimed (and after a1\'s), RUNNING once both ran');
is(history($big), '>RUNNABLE; RUNNABLE>SCHEDULED; SCHEDULED>STARTING; STARTING>RUNNING',
	'one dispatch, one STARTING, one RUNNING');
flag('f2');
ok(wait_for_job($big, "state = 'SUCCEEDED'"), 'both parts end: the job of 8 succeeds');
is( sql(qq{
		SELECT string_agg(attempt || ' ' || rank || ' ' || agent || ' ' || exit_code || ' '
		                  || regexp_replace(btrim(output, E'\\n'), '\\n', '|', 'g'), '; '
		                  ORDER BY rank)
		  FROM quota_sched.job_attempts WHERE job_id = $big}),
	'1 0 a1 0 part on a1 of 8|done; 1 1 a2 0 part on a2 of 8|done',
	'job_attempts: one row per part, each agent\'s own output (QUOTA_SCHED_INSTANCE_COUNT the job\'s 8) and exit code');
like(slurp_file(sql("SELECT log_path FROM quota_sched.job_attempts WHERE job_id = $big AND rank = 0")),
	qr/\[quota-sched-agent\] a part of 4 instance\(s\) of a job of 8: waiting for its peers\n\[quota-sched-agent\] every part claimed after [\d.]+ s: rank 0 of 2, rendezvous at 127\.0\.0\.2:\d+\n/,
	"a1's output file says its part waited, then where it stands");
is( sql(qq{SELECT string_agg(rank || ' ' || (log_path LIKE '$tmp/logs-' || agent || '/$big/%')
		                  || ' ' || (started_at IS NOT NULL AND ended_at IS NOT NULL), ', ' ORDER BY rank)
		     FROM quota_sched.job_attempts WHERE job_id = $big}),
	'0 true true, 1 true true', 'each part\'s row has its start, its end and its agent\'s log file');
is( sql(qq{SELECT string_agg(agent || ' ' || state || ' ' || exit_code, ', ' ORDER BY rank)
		     FROM quota_sched.job_parts WHERE job_id = $big}),
	'a1 ENDED 0, a2 ENDED 0', 'job_parts: both parts ended with exit code 0');
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 3. A part's process killed (SIGKILL) on one agent: the other part is
# stopped (PEER_FAILED), its process ends, and once both stopped the
# attempt fails; of max_attempts 2 the job is back RUNNABLE and runs again.
# ---------------------------------------------------------------------------
my $fail = submit('a', 'fail', 8, wait_script('f3', 'fail'), instances_per_host => 4,
	max_attempts => 2);
ok(wait_for_job($fail, "state = 'RUNNING'"), 'a job of 8 on two hosts runs');
my ($r0, $r1) = split / /, sql("SELECT array_to_string(part_agents, ' ') FROM quota_sched.job WHERE id = $fail");
my $victim = wait_procs('fail', $r1);
my $peer = wait_procs('fail', $r0);
ok(defined $victim && defined $peer, "each of $r0 and $r1 runs its part's command");
ok(kill('KILL', $victim), "the process of rank 1's part, on $r1, is killed (SIGKILL)");
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM quota_sched.job_event
		 WHERE job_id = $fail AND kind = 'STOP' AND reason = 'PEER_FAILED'}),
	'the job gets a stop: PEER_FAILED');
ok(process_gone($peer), "the other part's process, on $r0, ends");
ok( $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM quota_sched.job_event
		                WHERE job_id = $fail AND from_state = 'RUNNING' AND to_state = 'RUNNABLE'
		                  AND reason = 'FAILED')}),
	'once both stopped, the attempt fails: back to RUNNABLE');
is(job_field($fail, 'failed_attempts'), '1', 'failed_attempts 1 (of max_attempts 2)');
is( sql(qq{SELECT string_agg(rank || ' ' || agent || ' ' || state || ' ' || coalesce(p.ended_as, '-'), ', '
		            ORDER BY rank)
		     FROM quota_sched.job_part p WHERE job_id = $fail AND attempt = 1}),
	"0 $r0 ENDED STOPPED, 1 $r1 ENDED FAILED", 'attempt 1: rank 1 failed, rank 0 stopped');
like( sql(qq{SELECT string_agg(rank || ' ' || agent || ' ' || coalesce(exit_code::text, '-'), ', '
		            ORDER BY rank)
		     FROM quota_sched.job_attempts WHERE job_id = $fail AND attempt = 1}),
	qr/^0 $r0 \S+, 1 $r1 \S+$/, 'job_attempts: attempt 1 has a row per part');
ok(wait_for_job($fail, "state = 'RUNNING' AND failed_attempts = 1"), 'attempt 2 runs on two hosts');
flag('f3');
ok(wait_for_job($fail, "state = 'SUCCEEDED'"), 'and succeeds');
is( sql(qq{SELECT string_agg(DISTINCT attempt::text, ' ') FROM quota_sched.job_attempts
		    WHERE job_id = $fail}), '1 2', 'job_attempts: both attempts');
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 4. A cross-share reclaim: share b (own 4) borrows for a job of 8 on two
# hosts; share a's job of 8 (within its own 12) finds one free host, and
# reclaims: both parts of the borrower stop, and a's job runs where they
# ran.
# ---------------------------------------------------------------------------
my $own4 = submit('a', 'own4', 4, wait_script('f4'));
ok(wait_for_job($own4, "state = 'RUNNING'"), "share a's job of 4 runs");
is(placed($own4), 'a1:4', 'on a1');
my $borrow = submit('b', 'borrow', 8, wait_script('f4', 'borrow'), instances_per_host => 4);
ok(wait_for_job($borrow, "state = 'RUNNING'"), "share b's job of 8 runs, borrowing 4");
my $borrow_hosts = sql("SELECT array_to_string(part_agents, ' ') FROM quota_sched.job WHERE id = $borrow");
is($borrow_hosts, 'a2 a3', 'on a2 and a3');
my @borrow_pids = map { wait_procs('borrow', $_) } qw(a2 a3);
ok(defined $borrow_pids[0] && defined $borrow_pids[1], 'a2 and a3 each run its part');
my $own8 = submit('a', 'own8', 8, wait_script('f4'), instances_per_host => 4);
ok( $node->poll_query_until('postgres', qq{
		SELECT count(*) = 1 FROM quota_sched.job_event
		 WHERE job_id = $borrow AND kind = 'STOP' AND reason = 'CROSS_SHARE_PREEMPTION'}),
	"share a's job of 8 reclaims: the borrower gets a stop, CROSS_SHARE_PREEMPTION");
ok(process_gone($borrow_pids[0]) && process_gone($borrow_pids[1]),
	"both of the borrower's processes end");
ok(wait_for_job($own8, "state = 'RUNNING'"), "share a's job of 8 runs");
is(placed($own8), 'a2:4 a3:4', 'where the borrower ran: a2 and a3');
is( sql(qq{SELECT string_agg(agent || ' ' || state || ' ' || ended_as, ', ' ORDER BY rank)
		     FROM quota_sched.job_part WHERE job_id = $borrow AND attempt = 1}),
	'a2 ENDED STOPPED, a3 ENDED STOPPED', "both of the borrower's parts stopped");
is(job_field($borrow, "state || ' ' || preemption_count || ' ' || failed_attempts"), 'RUNNABLE 1 0',
	'the borrower waits again: one preemption, no failed attempt');
flag('f4');
foreach my $id ($own4, $own8, $borrow)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id succeeds");
}
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 5. A job of one rack (same_label 'rack') stays in it: with 2 free on a1
# (r1) and 4 on a4 (r2) it waits WAITING_FOR_HOSTS (a job of 6 without the
# constraint would run on a4 and a1); once a2 is free it runs on a1 and
# a2, both of r1.
# ---------------------------------------------------------------------------
my $x2 = submit('a', 'x2', 2, wait_script('f5'));
ok(wait_for_job($x2, "state = 'RUNNING'"), 'a job of 2 runs');
my $y4 = submit('b', 'y4', 4, wait_script('f5y'));
ok(wait_for_job($y4, "state = 'RUNNING'"), 'a job of 4 runs');
my $z4 = submit('a', 'z4', 4, wait_script('f5'));
ok(wait_for_job($z4, "state = 'RUNNING'"), 'another job of 4 runs');
is(placed($x2) . ', ' . placed($y4) . ', ' . placed($z4), 'a1:2, a2:4, a3:4', 'on a1, a2 and a3');
my $rack = submit('a', 'rack', 6, wait_script('f5'), same_label => q{'rack'});
ok(wait_for_job($rack, "state = 'RUNNABLE' AND status_reason = 'WAITING_FOR_HOSTS'"),
	'a job of 6 of one rack waits WAITING_FOR_HOSTS: r1 has 2 free, r2 4');
is(sql("SELECT sum(free_instances) FROM quota_sched.agents"), '6', 'while 6 are free over both racks');
flag('f5y');
ok(wait_for_job($y4, "state = 'SUCCEEDED'"), 'the job on a2 ends');
ok(wait_for_job($rack, "state = 'RUNNING'"), 'the job of one rack runs');
is(placed($rack), 'a2:4 a1:2', 'on a2 and a1');
is( sql(qq{SELECT count(DISTINCT a.labels->>'rack') || ' ' || min(a.labels->>'rack')
		     FROM quota_sched.job_parts p JOIN quota_sched.agents a ON a.agent = p.agent
		    WHERE p.job_id = $rack}),
	'1 r1', 'all its parts are on agents of one rack');
flag('f5');
foreach my $id ($x2, $z4, $rack)
{
	ok(wait_for_job($id, "state = 'SUCCEEDED'"), "job $id succeeds");
}
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 6. Not claimed by every part in time (a claim timeout of 4 s; a2 stopped
# meanwhile): the job goes back (NOT_CLAIMED), and a1, which had claimed
# its part (waiting for a2's), is told to let go: its part ends without
# running.  Once a2 goes on, the job runs on two hosts and succeeds.
# ---------------------------------------------------------------------------
sql("UPDATE quota_sched.job_queue SET claim_timeout = '4 seconds' WHERE name = 'p_queue'");
ok(kill('STOP', agent_pid('a2')), 'a2 is stopped (SIGSTOP)');
my $slow = submit('a', 'slow', 8, wait_script('f6', 'slow'), instances_per_host => 4);
ok(wait_for_log('a1', qr/job_waiting job=$slow\b/), 'a1 claims its part, which waits for its peer');
ok( $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM quota_sched.job_event
		                WHERE job_id = $slow AND from_state = 'SCHEDULED' AND to_state = 'RUNNABLE'
		                  AND reason = 'NOT_CLAIMED')}),
	'a2 does not claim its part in time: the job goes back, NOT_CLAIMED');
ok(kill('CONT', agent_pid('a2')), 'a2 goes on (SIGCONT)');
ok(wait_for_log('a1', qr/job_not_started job=$slow\b.*stop requested \(NOT_CLAIMED\)/),
	'a1 is told to let go: its part ends without running');
is(scalar(procs('slow', 'a1')), 0, 'a1 started no command of it');
ok( $node->poll_query_until('postgres', qq{
		SELECT state = 'ENDED' FROM quota_sched.job_part WHERE job_id = $slow AND agent = 'a1'
		 ORDER BY placed_at LIMIT 1}),
	"a1's part of that placement has ended");
ok(wait_for_job($slow, "state = 'RUNNING'"), 'the job is dispatched again and runs on two hosts');
is(job_field($slow, "failed_attempts || ' ' || claim_requeues || ' ' || cardinality(part_agents)"),
	'0 1 2', 'no failed attempt, one claim requeue');
flag('f6');
ok(wait_for_job($slow, "state = 'SUCCEEDED'"), 'and succeeds');
sql("UPDATE quota_sched.job_queue SET claim_timeout = DEFAULT WHERE name = 'p_queue'");
ok(free_all(), 'every agent is whole again');

# ---------------------------------------------------------------------------
# 7. The same with a claim timeout of 3.5 s: the job may be placed again
# on a1 before a1 ended its part of the first placement (which waited for
# its peer: it never ran; before the rendezvous it ran, and a test here
# had it deaf to SIGTERM).  a1's report of that part is about that part,
# not the new one; a1 claims the new part, and runs it to its end: no
# heartbeat tells it to let go of the new part.
# ---------------------------------------------------------------------------
sql("UPDATE quota_sched.job_queue SET claim_timeout = '3.5 seconds' WHERE name = 'p_queue'");
ok(kill('STOP', agent_pid('a2')), 'a2 is stopped (SIGSTOP)');
my $stubborn = submit('a', 'stubborn', 8,
	"if [ ! -e $tmp/stubborn-once ]; then : > $tmp/stubborn-once; trap '' TERM; fi; "
	  . wait_script('f7', 'stubborn'),
	instances_per_host => 4);
ok(wait_for_log('a1', qr/job_waiting job=$stubborn\b/), 'a1 claims its part, which waits for its peer');
ok( $node->poll_query_until('postgres', qq{
		SELECT EXISTS (SELECT FROM quota_sched.job_event
		                WHERE job_id = $stubborn AND from_state = 'SCHEDULED' AND to_state = 'RUNNABLE'
		                  AND reason = 'NOT_CLAIMED')}),
	'a2 does not claim its part in time: the job goes back, NOT_CLAIMED');
ok(kill('CONT', agent_pid('a2')), 'a2 goes on (SIGCONT)');
ok(wait_for_job($stubborn, "state = 'RUNNING'"), 'the job runs on two hosts');
my $a1_again = wait_procs('stubborn', 'a1');
ok(defined $a1_again, "a1 runs its new part's command");
ok( $node->poll_query_until('postgres', qq{
		SELECT p.lease_until > p.claimed_at + interval '21.5 seconds'
		  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id
		 WHERE p.job_id = $stubborn AND p.agent = 'a1' AND p.placed_at = j.scheduled_at}),
	"a1's heartbeats renew its new part");
ok(kill(0, $a1_again), 'and its command runs on');
is(job_field($stubborn, 'state'), 'RUNNING', 'the job still runs');
flag('f7');
ok(wait_for_job($stubborn, "state = 'SUCCEEDED'"), 'and succeeds');
is(job_field($stubborn, "failed_attempts || ' ' || (claim_requeues >= 1) || ' ' || preemption_count"),
	'0 true 0', 'no failed attempt, no preemption: only claim requeues');
is( sql(qq{SELECT count(*) FROM quota_sched.job_event
		    WHERE job_id = $stubborn AND reason IN ('RELEASED', 'PEER_RELEASED', 'NOT_CLAIMED')
		      AND kind = 'STOP'}), '0', 'no part was stopped or released by mistake');
is( sql(qq{SELECT count(*) FROM quota_sched.job_part
		    WHERE job_id = $stubborn AND state IN ('CLAIMED', 'RUNNING')}),
	'0', 'no part of it is left held');
unlike(agent_log('a1'),
	qr/job_forgotten job=$stubborn\b|sql_error job=$stubborn\b[^\n]*: (?:report|release) failed/,
	"a1 had no report of it refused (a job_peers refused once the job went back is no report)");
like(agent_log('a1'), qr/job_reported job=$stubborn attempt=1: reported STOPPED/,
	'a1 reported its part of the first placement STOPPED');
sql("UPDATE quota_sched.job_queue SET claim_timeout = DEFAULT WHERE name = 'p_queue'");
ok(free_all(), 'every agent is whole again');
is(sql('SELECT count(*) FROM quota_sched.held_capacity_drift()'), '0',
	'the counters of held capacity match the jobs');

foreach my $h (@hosts)
{
	is(stop_agent($h->[0]), 0, "$h->[0] exits 0");
}
done_testing();
