# A job that is not placed wakes one waiting agent that has room for it,
# not every agent of its queue (issue 42, items 1 and 2; agents.md
# "Waiting without LISTEN").  What an agent has room for is what its
# session's last claim said (max_instances less what it took, of the unit
# claimed or of any), given back by its reports that end an attempt; a
# dispatch that no waiting agent has room for wakes every agent of the
# queue that waits, as before.
#
# First three sessions, a, b and c, call agent_wait themselves: a and b
# claim jobs of any unit with room for one instance, c claims cpu with
# room for four.  Each scenario starts the three waits, lets the worker
# dispatch a job, waits until the number of sessions still waiting
# falls, cancels the others (a wait cancelled returns what was pending:
# every wake-up of the pass is set at its commit, before the job can be
# seen) and reads what each returned.
#
# Then three real agents, --noop, one instance each, no unit (nothing is
# placed), run ten jobs one at a time.  In the server's log, each job
# makes one agent return from agent_wait and call it again, not all three,
# and one claim, the one that takes it: a claim that leaves nothing behind
# keeps nothing pending, and an agent that waits does not claim again
# after its report (two claims a job when it did; four when every
# dispatch woke every agent).  The jobs are given at their dispatch to an
# agent that waits: the pass claims them for it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $node = agents_node('one_agent');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('o_env', '{"gpu": 32, "cpu": 32}'),
	('o_env2', '{"gpu": 32, "cpu": 32}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('o_queue', 'o_env'),
	('o_real', 'o_env2');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('o_queue', 's', '{"gpu": 32, "cpu": 32}', 'RESERVE'),
	('o_real', 's', '{"gpu": 32, "cpu": 32}', 'RESERVE');
SQL
my $sql = sub { return $node->safe_psql('postgres', $_[0]); };

my %s;
foreach my $n (qw(a b c))
{
	$s{$n} = $node->background_psql('postgres');
	$s{$n}->query_safe("SET application_name = 'wait_$n'");
	# the session's slot, with what came before taken
	$s{$n}->query_safe("CALL quota_sched.agent_wait('$n', 'o_queue', 0)");
}
# room(NAME, UNIT, MAX): a claim that takes nothing (none is SCHEDULED)
sub room
{
	my ($n, $unit, $max) = @_;
	$unit = defined $unit ? "'$unit'" : 'NULL';
	return $s{$n}->query_safe("SELECT count(*) FROM quota_sched.claim('$n', 'o_queue', $unit,"
		  . " max_jobs => $max, max_instances => $max)");
}
is(room('a', undef, 1) . room('b', undef, 1) . room('c', 'cpu', 4), '000',
	'a and b have room for one instance of any unit, c for four of cpu');

my $waiting_query = q{SELECT coalesce(string_agg(substr(application_name, 6), ','
	ORDER BY application_name), '') FROM pg_stat_activity
	WHERE application_name LIKE 'wait\_%' AND state = 'active' AND wait_event = 'Extension'};

# scenario(LABEL, UNIT, COUNT): the three wait, a job is dispatched; what
# each returned, as "a=...,b=...,c=..." (dispatch or nothing)
sub scenario
{
	my ($label, $unit, $count) = @_;
	foreach my $n (qw(a b c))
	{
		$s{$n}->query_until(qr/waiting_$n/,
			"\\echo waiting_$n\nCALL quota_sched.agent_wait('$n', 'o_queue', 300000);\n");
	}
	$node->poll_query_until('postgres', "SELECT ($waiting_query) = 'a,b,c'")
	  or die "$label: the three do not wait";
	my $id = $sql->(qq{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit,
		instance_count) VALUES ('$label', 'o_queue', 's', '$unit', $count) RETURNING id});
	$node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE id = $id")
	  or die "$label: the job is not dispatched";
	$node->poll_query_until('postgres', "SELECT ($waiting_query) <> 'a,b,c'")
	  or die "$label: nobody was woken";
	$sql->(q{SELECT pg_cancel_backend(pid) FROM pg_stat_activity
		WHERE application_name LIKE 'wait\_%' AND state = 'active' AND wait_event = 'Extension'});
	my @got;
	foreach my $n (qw(a b c))
	{
		my $out = $s{$n}->query_until(qr/\{[a-z,]*\}/, '');
		push @got, "$n=" . ($out =~ /\{dispatch\}/ ? 'dispatch' : $out =~ /\{\}/ ? '' : $out);
	}
	return (join(',', @got), $id);
}

my ($got, $job) = scenario('first', 'gpu', 1);
like($got, qr/^(a=dispatch,b=|a=,b=dispatch),c=$/,
	"a job of gpu wakes one of a and b, not c (cpu): $got");
my ($x, $y) = $got =~ /^a=dispatch/ ? ('a', 'b') : ('b', 'a');
is($s{$x}->query_safe("SELECT count(*) FROM quota_sched.claim('$x', 'o_queue', NULL,"
	  . " max_jobs => 1, max_instances => 1)"), '1', "$x, woken, claims it: no room left");

my $second;
($got, $second) = scenario('second', 'gpu', 1);
is($got, join(',', map { $_ eq $y ? "$_=dispatch" : "$_=" } qw(a b c)),
	"the next job of gpu wakes $y alone");
is($s{$y}->query_safe("SELECT count(*) FROM quota_sched.claim('$y', 'o_queue', NULL,"
	  . " max_jobs => 1, max_instances => 1)"), '1', "$y claims it");

($got) = scenario('third', 'gpu', 1);
is($got, 'a=dispatch,b=dispatch,c=dispatch',
	'a job of gpu no waiting agent has room for wakes every one');

# x's job succeeds: its instance is free again
is($s{$x}->query_safe("SELECT state FROM quota_sched.report($job, '$x', 'SUCCEEDED')"),
	'SUCCEEDED', "$x reports its job SUCCEEDED");
($got) = scenario('fourth', 'cpu', 2);
is($got, 'a=,b=,c=dispatch', 'a job of 2 cpu wakes c alone');
($got) = scenario('fifth', 'gpu', 1);
is($got, join(',', map { $_ eq $x ? "$_=dispatch" : "$_=" } qw(a b c)),
	"a job of gpu wakes $x, whose report gave its instance back");
# the dispatch took x's room; y's report rolled back gives nothing back
$s{$y}->query_safe("BEGIN; SELECT state FROM quota_sched.report($second, '$y', 'SUCCEEDED');"
	  . " ROLLBACK;");
($got) = scenario('sixth', 'gpu', 1);
is($got, 'a=dispatch,b=dispatch,c=dispatch',
	"$y, whose report was rolled back, has no room: every agent is woken");
$s{$_}->quit foreach qw(a b c);

# Real agents
my $agent_bin = agent_bin();
QsAgents::init($node, '036_dispatch_one_agent');
my $tmp = PostgreSQL::Test::Utils::tempdir;
foreach my $n (qw(ra rb rc))
{
	$sql->("CREATE ROLE o_$n LOGIN IN ROLE quota_sched_agent");
	$sql->("ALTER ROLE o_$n SET log_statement = 'all'");
	$sql->("INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('o_$n', NULL)");
	launch_agent($n,
		[
			$agent_bin, '--dbname', $node->connstr('postgres') . " user=o_$n application_name=one_$n",
			'--agent', $n, '--queue', 'o_real', '--instances', '1', '--noop', '--lease', '300',
			'--heartbeat', '100', '--checkpoint-root', "$tmp/ckpt-$n"
		]);
	ok(wait_for_log($n, qr/connected: .*; waiting with agent_wait/), "$n waits with agent_wait");
}
# the agents' claims so far (their sessions' prepared claim, qs_0), and
# their calls of agent_wait, in the log
sub claims
{
	my $n = () = slurp_file($node->logfile) =~ /one_r[abc] LOG:  execute qs_0:/g;
	return $n;
}
sub waits
{
	my $n = () = slurp_file($node->logfile) =~ /one_r[abc] LOG:  execute [^:]*: CALL quota_sched.agent_wait/g;
	return $n;
}
# each agent has claimed after its first wait (which returns everything)
foreach my $n (qw(ra rb rc))
{
	my $seen = 0;
	foreach (1 .. 600)
	{
		$seen = () = slurp_file($node->logfile) =~ /one_$n LOG:  execute qs_0:/g;
		last if $seen >= 1;
		usleep(100_000);
	}
	cmp_ok($seen, '>=', 1, "$n has claimed");
}
ok($node->poll_query_until('postgres', q{SELECT count(*) = 3 FROM pg_stat_activity
	WHERE application_name LIKE 'one\_r_' AND query LIKE 'CALL quota_sched.agent_wait%'
	  AND state = 'active' AND wait_event = 'Extension'}), 'the three wait');
my ($before, $waits_before) = (claims(), waits());
my %ran;
foreach my $i (1 .. 10)
{
	my $id = $sql->(qq{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit,
		instance_count) VALUES ('real_$i', 'o_real', 's', 'gpu', 1) RETURNING id});
	$node->poll_query_until('postgres', "SELECT state = 'SUCCEEDED' FROM quota_sched.job WHERE id = $id")
	  or die "job $id did not succeed";
	$ran{ $sql->("SELECT agent FROM quota_sched.job_attempt WHERE job_id = $id") }++;
}
my $claims = claims() - $before;
my $waits = waits() - $waits_before;
cmp_ok($waits, '<=', 15, "ten jobs, $waits calls of agent_wait (one a job; three when every dispatch woke every agent)");
cmp_ok($claims, '<=', 15, "ten jobs, $claims claims (one a job; two when each report claimed again)");
cmp_ok($claims, '>=', 10, 'the count sees at least the claim of each job');
cmp_ok(scalar(keys %ran), '>=', 2, 'the jobs went to more than one agent: ' . join(', ', sort keys %ran));
# given at their dispatch (agents.md, "Jobs given at their dispatch"): the
# agents wait with their --lease, so the pass claims the job for one that
# waits with room: its STARTING is the agent's, at the pass's time.  Each
# job finds at least one idle agent waiting, but for the moment between
# two of its waits (a heartbeat's, a timeout's)
my $given = $sql->(q{SELECT count(*) FROM quota_sched.job j
	JOIN quota_sched.job_event s ON s.job_id = j.id AND s.to_state = 'SCHEDULED'
	JOIN quota_sched.job_event c ON c.job_id = j.id AND c.to_state = 'STARTING'
	WHERE j.name LIKE 'real\_%' AND c.at = s.at AND c.actor = j.agent AND c.pass_id IS NULL});
cmp_ok($given, '>=', 5, "of the ten jobs, $given given at their dispatch");
is(stop_agent($_), 0, "$_ exits 0") foreach qw(ra rb rc);
done_testing();
