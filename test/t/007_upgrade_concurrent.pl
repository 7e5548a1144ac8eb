# The update from the first release (to the current version, through every
# release between) against a job that changes at the same time, with the
# worker running.  The first step (0.1 to 0.2) counts the held jobs into the
# counters of held capacity before the triggers that keep them exist, so it
# must keep jobs from changing until it commits.
#
# One library serves one schema (doc/releasing.md): the database is made
# by the library of 0.1 (QsRelease builds it from git history), then the
# current build is installed and the server started again.  Until ALTER
# EXTENSION quota_sched UPDATE, the library refuses every call (55QS0): an
# agent's report is refused; what may still change a job is a write the
# library has no part in, a superuser's UPDATE with the triggers off (as a
# restore writes).  Such a change is left open in one session; the update,
# in another, waits for it; once it commits and the update is done, the
# counters match the jobs (the change is counted, not lost).  The worker
# says once (a LOG) that it waits for the update, and once that its passes
# resume after it.
use strict;
use warnings;
use File::Basename;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use QsRelease;

my ($current, $previous, $from) = versions();
my $first = $from->[0];

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $pg_config = private_install("$tmp/pg");
install_release($first, $pg_config);
my $node = PostgreSQL::Test::Cluster->new('upgrade_concurrent',
	install_path => dirname(release_bin($pg_config)));
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '200ms'
CONF
$node->start;

# A database of the first release with one RUNNING job of agent 'uc_agent',
# the configuration made by its library, the job written as a restore
# would (replica mode).
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('uc_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('uc_queue', 'uc_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('uc_queue', 'uc_share', '{"gpu": 4}', 'RESERVE');
SET session_replication_role = replica;
INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
	instance_count, owner, state, agent, lease_until, failed_attempts, preemption_count,
	submitted_at, queued_at, scheduled_at, started_at)
VALUES (nextval('quota_sched.job_id_seq'), 'uc_job', 'uc_queue', 'uc_share', 0, 'gpu', 2,
	current_user, 'RUNNING', 'uc_agent', now() + interval '1 hour', 0, 0,
	now(), now(), now(), now());
SQL
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'"),
	$first, "quota_sched $first is installed");
my $id = $node->safe_psql('postgres', "SELECT id FROM quota_sched.job WHERE name = 'uc_job'");

# The current build, installed with the server stopped.
$node->stop;
install_current($pg_config);
$node->start;

my $waits = qr/LOG:  quota_sched worker: quota_sched \Q$first\E is installed, but the library is version \Q$current\E: no passes until the extension is updated/;
my $resumes = qr/LOG:  quota_sched worker: quota_sched \Q$current\E is installed, the library's version: passes resume/;
ok($node->wait_for_log($waits), 'the worker says that it waits for the update');

my ($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT state FROM quota_sched.report($id, 'uc_agent', 'SUCCEEDED')");
like($stderr, qr/ERROR:  55QS0: quota_sched \Q$first\E is installed in this database, but its library is version \Q$current\E/,
	'an agent\'s report is refused until the update (55QS0)');

# A superuser's change of the job, with the triggers off, not committed yet.
my $writer = $node->background_psql('postgres');
$writer->query_safe('BEGIN');
$writer->query_safe(q{SET LOCAL session_replication_role = replica});
is($writer->query_safe("UPDATE quota_sched.job SET state = 'SUCCEEDED', lease_until = NULL,"
		. " stopped_at = now() WHERE id = $id RETURNING state"),
	'SUCCEEDED', 'the job is changed, in an open transaction');

# The update waits for it.
my $upgrade = $node->background_psql('postgres');
$upgrade->query_until(qr/upgrading/, "\\echo upgrading\nALTER EXTENSION quota_sched UPDATE;\n");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity"
		  . " WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER EXTENSION%'"),
	'the update waits for the job being changed');

$writer->query_safe('COMMIT');
$writer->quit;
$upgrade->quit;

is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'"),
	$current, 'the update is done');
is($node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE id = $id"),
	'SUCCEEDED', 'the change committed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'),
	'0', 'the counters match the jobs: the change is counted');

# The worker's passes resume, and it says so once.
my $offset = $node->wait_for_log($resumes);
ok($offset, 'the worker says that its passes resume');
my $rounds = $node->safe_psql('postgres', 'SELECT rounds FROM quota_sched.worker_stats()');
ok($node->poll_query_until('postgres', "SELECT rounds >= $rounds + 3 FROM quota_sched.worker_stats()"),
	'the worker goes on running rounds');
my @waits = slurp_file($node->logfile) =~ /$waits/g;
my @resumes = slurp_file($node->logfile) =~ /$resumes/g;
is(scalar(@waits) . ' ' . scalar(@resumes), '1 1', 'each said once');
is($node->safe_psql('postgres',
		"SELECT coalesce(sum(instances), 0) FROM quota_sched.held_capacity WHERE job_queue = 'uc_queue'"),
	'0', 'nothing is held');

$node->stop;
done_testing();
