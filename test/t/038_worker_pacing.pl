# The rounds of a stream of commits, paced (issue 42, item 1; scheduling.md
# 6, reference.md "Settings"): after a round during which commits came,
# the next round starts no sooner than quota_sched.pass_min_interval after
# that one began, so that a stream of commits is served by a round every
# interval, each taking all that committed since; a commit that finds the
# worker idle is served at once.  With an interval of 5 s and a naptime of
# an hour (no round of the worker's own accord), the dispatches' times
# being those of their passes (job_event): a job submitted after a quiet
# spell is dispatched at once, and so is one submitted right after a round
# during which nothing came.  Then a round is kept running (its pass of
# another queue waits for that queue's lock, held by an admin's pass in an
# open transaction) while a job is submitted: that job waits for the
# interval since the round began.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsWorker;

my $node = PostgreSQL::Test::Cluster->new('pacing');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '1h'
quota_sched.pass_min_interval = '5s'
CONF
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('p_env', '{"gpu": 10}');
INSERT INTO quota_sched.service_environment (name, capacity_limits, state)
VALUES ('q_env', '{"gpu": 10}', 'DISABLED');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('p_queue', 'p_env'),
	('q_queue', 'q_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('p_queue', 'p_share', '{"gpu": 10}', 'RESERVE'), ('q_queue', 'q_share', '{"gpu": 10}', 'RESERVE');
-- a job the passes of q_queue (after p_queue's in a round) never dispatch
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('waits', 'q_queue', 'q_share', 'gpu');
SQL
my $sql = sub { return $node->safe_psql('postgres', $_[0]); };

# submit(NAME): waits until the job is dispatched; the seconds from its
# submission to the pass that dispatched it
sub submit
{
	my ($name) = @_;
	$sql->("INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)"
		  . " VALUES ('$name', 'p_queue', 'p_share', 'gpu')");
	$node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = '$name'")
	  or die "job $name was not dispatched";
	return $sql->("SELECT extract(epoch FROM e.at - j.submitted_at) FROM quota_sched.job j"
		  . " JOIN quota_sched.job_event e ON e.job_id = j.id AND e.to_state = 'SCHEDULED'"
		  . " WHERE j.name = '$name'");
}

# the seconds between the passes that dispatched two jobs
sub between
{
	my ($first, $second) = @_;
	return $sql->("SELECT extract(epoch FROM b.at - a.at) FROM quota_sched.job_event a,"
		  . " quota_sched.job_event b WHERE a.to_state = 'SCHEDULED' AND b.to_state = 'SCHEDULED'"
		  . " AND a.job_id = (SELECT id FROM quota_sched.job WHERE name = '$first')"
		  . " AND b.job_id = (SELECT id FROM quota_sched.job WHERE name = '$second')");
}

# a quiet spell longer than the interval: the next commit is served at once
ok(wait_worker_quiet($node, 6), 'the worker is idle, no round for longer than the interval');
cmp_ok(submit('first'), '<', 5, 'a commit after a quiet spell is served at once');
# right after a round during which nothing came: at once too
ok(wait_worker_quiet($node, 0), 'the round is over');
submit('second');
cmp_ok(between('first', 'second'), '<', 4, 'a commit right after a quiet round is served at once');

# a commit during a round: the next round waits for the interval
my $admin = $node->background_psql('postgres');
$admin->query_safe("BEGIN; SELECT count(*) FROM quota_sched.run_pass('q_queue')");
ok(wait_worker_quiet($node, 6), 'a quiet spell again');
$sql->("INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)"
	  . " VALUES ('third', 'p_queue', 'p_share', 'gpu')");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"
		  . " AND wait_event_type = 'Lock'"),
	'the round dispatched the job and waits for the other queue\'s lock');
$sql->("INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)"
	  . " VALUES ('fourth', 'p_queue', 'p_share', 'gpu')");
$admin->query_safe('COMMIT');
$admin->quit;
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'fourth'"),
	'the job submitted during the round is dispatched');
cmp_ok(between('third', 'fourth'), '>=', 4,
	'by the next round, held until the interval since the round began');

# bounds: the setting's own
my ($ret, $out, $err) =
  $node->psql('postgres', "ALTER SYSTEM SET quota_sched.pass_min_interval = '2min'");
like($err, qr/outside the valid range.*\(0 \.\. 60000\)/, 'above a minute: refused');

done_testing();
