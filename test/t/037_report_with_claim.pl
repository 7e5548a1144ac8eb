# A job's report and the claim after it, in one transaction (issue 42,
# item 1; agents.md "The agent protocol").  An agent that claims again
# after a report (it has jobs left to take: claim_left(); or it does not
# wait with agent_wait) sends the report and the claim together: one
# round trip and one commit, where there were two.
#
# First, one --noop agent of one instance takes five jobs dispatched at
# once, one at a time: the SUCCEEDED event of each job but the last is in
# the transaction of the next job's claim (the same xmin in job_event),
# and every job ran once.
#
# Then a claim that fails in that transaction takes the report with it:
# the agent tells the report alone at once, and the job ends.  An agent
# whose login logs its statements runs a job (sleep) with another one left
# to take; the login's access to the queue is taken away while it runs, so
# the claim at the job's end fails (42501).  The job SUCCEEDED all the
# same, its report sent twice (with the claim, then alone), and its
# history has one end.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
my $node = agents_node('report_claim');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('r_env', '{"gpu": 32}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('r_queue', 'r_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('r_queue', 's', '{"gpu": 32}', 'RESERVE');
CREATE ROLE r_a LOGIN IN ROLE quota_sched_agent;
CREATE ROLE r_b LOGIN IN ROLE quota_sched_agent;
ALTER ROLE r_b SET log_statement = 'all';
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('r_a', NULL), ('r_b', 'r_queue');
SQL
QsAgents::init($node, '037_report_with_claim');
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $sql = sub { return $node->safe_psql('postgres', $_[0]); };

# launch(NAME, LOGIN, OPTIONS...): an agent of one instance, no unit
sub launch
{
	my ($name, $login, @opts) = @_;
	launch_agent($name,
		[
			$agent_bin, '--dbname', $node->connstr('postgres') . " user=$login application_name=$name",
			'--agent', $name, '--queue', 'r_queue', '--instances', '1', '--lease', '300',
			'--heartbeat', '100', '--same-user', '--checkpoint-root', "$tmp/ckpt-$name", @opts
		]);
}

# submit(COUNT, COMMAND): COUNT jobs in one statement; their ids, in order
sub submit
{
	my ($count, $command) = @_;
	return split /\n/, $sql->(
		"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, payload)"
		  . " SELECT 'r' || g, 'r_queue', 's', 'gpu', 1, '{\"command\": $command}'"
		  . " FROM generate_series(1, $count) g RETURNING id");
}

# --- five jobs, one agent: each report with the next claim
launch('r_one', 'r_a', '--noop');
my @ids = submit(5, '["true"]');
my $list = join(',', @ids);
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 5 FROM quota_sched.job WHERE id IN ($list) AND state = 'SUCCEEDED'"),
	'the five jobs SUCCEEDED');
is( $sql->(
		"SELECT string_agg(s.job_id::text || '>' || c.job_id, ',' ORDER BY s.job_id)"
		  . " FROM quota_sched.job_event s JOIN quota_sched.job_event c"
		  . " ON c.xmin = s.xmin AND c.job_id <> s.job_id AND c.to_state = 'RUNNING'"
		  . " WHERE s.job_id IN ($list) AND s.to_state = 'SUCCEEDED'"),
	join(',', map { "$ids[$_]>$ids[$_ + 1]" } 0 .. 3),
	'each job but the last ended in the transaction of the claim of the next');
is( $sql->(
		"SELECT count(*) FROM quota_sched.job_event WHERE job_id IN ($list) AND to_state = 'RUNNING'"),
	'5', 'each job ran once');
is(stop_agent('r_one'), 0, 'the agent stopped cleanly');

# --- a claim that fails takes the report with it: the report goes alone
launch('r_two', 'r_b');
my ($a_id, $b_id) = submit(2, '["sleep", "2"]');
ok(wait_for_job($a_id, "state = 'RUNNING' AND agent = 'r_two'")
	  || wait_for_job($b_id, "state = 'RUNNING' AND agent = 'r_two'"),
	'the agent runs one of the two jobs');
my $ran = job_field($a_id, 'state') eq 'RUNNING' ? $a_id : $b_id;
my $left = $ran == $a_id ? $b_id : $a_id;
$sql->("DELETE FROM quota_sched.agent_access WHERE login = 'r_b'");
ok(wait_for_job($ran, "state = 'SUCCEEDED'"), 'the job it ran SUCCEEDED');
ok(wait_for_log('r_two', qr/claim failed: .*SQLSTATE 42501/), 'the claim with its report failed');
my $log = slurp_file($node->logfile);
my $reports = () = $log =~ /r_two LOG:  execute qs_1: SELECT state FROM quota_sched\.report/g;
is($reports, 2, 'the report was sent with the claim, then alone');
like(history($ran), qr/^[^;]*(; (?!RUNNING>)[^;]*)*; RUNNING>SUCCEEDED$/, 'its history has one end');
isnt(job_field($left, 'state'), 'RUNNING', 'the other job was not taken');
is(stop_agent('r_two'), 0, 'the agent stopped cleanly');

done_testing();
