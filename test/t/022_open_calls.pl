# No call left open stalls a queue (issue 37, item 1), as a rule: every
# function that quota_sched_user or quota_sched_agent may execute, found
# in the catalog (so that a function added later is covered without a word
# here), is called by a member of team a, or by an agent login, in a
# transaction left open; meanwhile team b submits a job to the same queue,
# which the worker must dispatch without giving up a pass of the queue.
# The statements a user runs on jobs (INSERT, UPDATE of priority) are
# checked the same way.
#
# Each call must succeed (a call that fails aborts its transaction and so
# proves nothing): its arguments without a default are given by their
# names (%value_of), else by their types (%value_of_type); a function
# whose arguments neither names fails here, saying which.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $node = agents_node('open_calls');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
CREATE ROLE oc_a LOGIN IN ROLE quota_sched_user;
CREATE ROLE oc_b LOGIN IN ROLE quota_sched_user;
CREATE ROLE oc_agent LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('oc_env', '{"gpu": 100}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('oc_q', 'oc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('oc_q', 'oc_sa', '{"gpu": 1}', 'RESERVE', 'oc_a'),
	   ('oc_q', 'oc_sb', '{"gpu": 99}', 'RESERVE', 'oc_b');
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('oc_agent', 'oc_q');
SQL

sub state_of
{
	return $node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE name = '$_[0]'");
}

sub submit
{
	my ($role, $name, $share) = @_;
	return $node->safe_psql('postgres', qq{
		SET ROLE $role;
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
		VALUES ('$name', 'oc_q', '$share', 'gpu') RETURNING id});
}

# team a's job a_held runs on agent oc_h1 (oc_agent's), a_wait waits;
# oc_h1 is an agent with no bound, so that the many jobs of team b the
# checks submit are dispatched as capacity allows, wherever (not placed on
# hosts: scheduling.md 3.13)
my $held = submit('oc_a', 'a_held', 'oc_sa');
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE id = $held"),
	'a_held is dispatched');
$node->safe_psql('postgres', qq{
	SET ROLE oc_agent;
	SELECT quota_sched.agent_ready('oc_h1', 'oc_q', 'gpu', NULL);
	SELECT count(*) FROM quota_sched.claim('oc_h1', 'oc_q', lease => '1 hour');
	SELECT state FROM quota_sched.report($held, 'oc_h1', 'RUNNING');});
is(state_of('a_held'), 'RUNNING', 'a_held runs on oc_h1');
my $waiting = submit('oc_a', 'a_wait', 'oc_sa');

# the value of an argument without a default, by its name, for a caller
# of each role (user: team a's member, agent: oc_agent)
my %value_of = (
	job_id => { user => $waiting, agent => $held },
	agent => "'oc_h1'",
	job_queue => "'oc_q'",
	capacity_unit => "'gpu'",
	quota_share => "'oc_sa'",
	state => "'RUNNING'",
	strategy => "'LEND'",
	share_state => "'ENABLED'",
	priority => '7',
	attempt => '1',
	host => "'oc-host'",
	log_path => "'/tmp/oc.log'",
	handle => "'oc-handle'",
	reason => "'an open call'",
	lease => "'60 seconds'",
	instances => '8',
	from => "now() - interval '1 day'",
	to => 'now()',
	period => "'DAY'");
# else, by its type
my %value_of_type = (
	'timestamp with time zone' => 'now()',
	interval => "'1 hour'",
	integer => '1',
	bigint => '1',
	boolean => 'false',
	'double precision' => '1.5',
	jsonb => "'{}'",
	text => "'oc'",
	'text[]' => "'{}'",
	'timestamp with time zone[]' => "'{}'",
	'double precision[]' => "'{}'");

# every function the role may execute, with its arguments without a
# default (name and type), one per line: "signature|name:type,..."
sub functions_of
{
	my ($role) = @_;
	my $rows = $node->safe_psql('postgres', qq{
		SELECT p.oid::regprocedure || '|' || coalesce(string_agg(
				   coalesce(p.proargnames[a.n], '') || ':' || format_type(p.proargtypes[a.n - 1], NULL),
				   ',' ORDER BY a.n), '')
		  FROM pg_proc p
		  JOIN pg_namespace s ON s.oid = p.pronamespace AND s.nspname = 'quota_sched'
		  LEFT JOIN LATERAL generate_series(1, p.pronargs - p.pronargdefaults) AS a(n) ON true
		 WHERE has_function_privilege('$role', p.oid, 'EXECUTE')
		   AND p.prokind IN ('f', 'p')
		   AND p.prorettype NOT IN ('trigger'::regtype, 'event_trigger'::regtype)
		 GROUP BY p.oid ORDER BY 1});
	return split /\n/, $rows;
}

# the call of a function: "SELECT f(v, ...)" (CALL for a procedure), or
# undef and the argument it has no value for
sub call_of
{
	my ($line, $kind) = @_;
	my ($signature, $args) = split /\|/, $line, 2;
	(my $name = $signature) =~ s/\(.*//s;
	my @values;
	for my $arg (split /,/, $args // '')
	{
		my ($arg_name, $type) = split /:/, $arg, 2;
		my $v = $value_of{$arg_name} // $value_of_type{$type};
		return (undef, "$arg_name $type") unless defined $v;
		push @values, ref $v ? $v->{$kind} : $v;
	}
	my $is_procedure = $node->safe_psql('postgres',
		"SELECT prokind = 'p' FROM pg_proc WHERE oid = '$signature'::regprocedure") eq 't';
	return (($is_procedure ? 'CALL ' : 'SELECT ') . "$name(" . join(', ', @values) . ")");
}

# the given_up count of the queue's passes
sub given_up
{
	return $node->safe_psql('postgres',
		"SELECT coalesce(sum(given_up), 0) FROM quota_sched.pass_stats() WHERE job_queue = 'oc_q'");
}

# with STATEMENT run by LOGIN in a transaction left open: team b's new job
# is dispatched, and no pass of the queue is given up meanwhile
my $n = 0;
sub check_open
{
	my ($login, $statement, $what) = @_;
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	$session->query_safe("SET ROLE $login; BEGIN;");
	my ($out, $err) = $session->query($statement);
	my $failed = defined $session->{stderr} && $session->{stderr} =~ /ERROR/;
	ok(!$failed, "$what: the call succeeds in the open transaction")
	  or diag($session->{stderr});
	$session->{stderr} = '';
	my $before = given_up();
	my $job = submit('oc_b', 'b_' . ++$n, 'oc_sb');
	my $dispatched = 0;
	for (1 .. 600)
	{
		my $now = $node->safe_psql('postgres', qq{
			SELECT (state <> 'RUNNABLE')::int || ' ' || (SELECT coalesce(sum(given_up), 0)
			  FROM quota_sched.pass_stats() WHERE job_queue = 'oc_q')
			  FROM quota_sched.job WHERE id = $job});
		my ($done, $up) = split / /, $now;
		$dispatched = $done;
		last if $done || $up > $before;
		usleep(100_000);
	}
	ok($dispatched, "$what: another team's job is dispatched while it is open");
	is(given_up(), $before, "$what: no pass of the queue is given up");
	$session->query_safe('ROLLBACK;');
	$session->quit;
}

my %login_of = (user => 'oc_a', agent => 'oc_agent');
for my $kind ('user', 'agent')
{
	my @functions = functions_of("quota_sched_$kind");
	cmp_ok(scalar @functions, '>=', 5, "quota_sched_$kind may execute functions");
	for my $line (@functions)
	{
		my ($call, $missing) = call_of($line, $kind);
		my ($signature) = split /\|/, $line;
		if (!defined $call)
		{
			fail("$kind: $signature: no value for its argument $missing (add one to this test)");
			next;
		}
		check_open($login_of{$kind}, "$call;", "$kind: $signature");
	}
}

# the statements a user runs on jobs
check_open('oc_a', "INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('a_more', 'oc_q', 'oc_sa', 'gpu');", 'user: INSERT of a job');
check_open('oc_a', "UPDATE quota_sched.job SET priority = 9 WHERE id = $waiting;",
	'user: UPDATE of a priority');

$node->stop;
done_testing();
