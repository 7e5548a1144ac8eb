# The rounds of a stream of commits, paced (issue 42, item 1; scheduling.md
# 6, reference.md "Settings"): a round of passes starts no sooner than
# quota_sched.pass_min_interval after the last one began, so that a stream
# of commits is served by a round every interval, each taking all that
# committed since; a commit that finds the worker idle for longer is served
# at once.  With an interval of 5 s and a naptime of an hour (no round of
# the worker's own accord): a job submitted after a quiet spell is
# dispatched at once, and one submitted right after it waits for the
# interval (their dispatches' times are those of their passes, in
# job_event).  Set to 0 by a reload, a commit is served at once again.
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
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('p_queue', 'p_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('p_queue', 'p_share', '{"gpu": 10}', 'RESERVE');
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
submit('second');
cmp_ok(between('first', 'second'), '>=', 4,
	'a commit right after a round waits for the interval since the round began');

# 0: rounds are no longer held
$sql->("ALTER SYSTEM SET quota_sched.pass_min_interval = 0; SELECT pg_reload_conf()");
submit('third');
submit('fourth');
cmp_ok(between('third', 'fourth'), '<', 4, 'with 0, a commit right after a round is served at once');

# bounds: the setting's own
my ($ret, $out, $err) =
  $node->psql('postgres', "ALTER SYSTEM SET quota_sched.pass_min_interval = '2min'");
like($err, qr/outside the valid range.*\(0 \.\. 60000\)/, 'above a minute: refused');

done_testing();
