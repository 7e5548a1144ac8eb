# The upgrade from 0.1 (to the current version, through 0.2 and 0.3) against a job that changes at
# the same time: the 0.1--0.2 update
# script counts the held jobs into the counters of held capacity before the
# triggers that keep them exist, so it must keep jobs from changing until
# it commits.  An agent's SUCCEEDED report is left open in one session; the
# upgrade, in another, waits for it; once the report commits and the upgrade
# is done, the counters match the jobs (the report is counted, not lost).
# The worker runs: it says once (a WARNING) that it waits for the update,
# and once (a LOG) that its passes resume after it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

# the version the sources make: quota_sched.control's default_version
my ($current) = slurp_file('quota_sched.control') =~ /^default_version = '([^']+)'$/m;

my $node = PostgreSQL::Test::Cluster->new('upgrade_concurrent');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '200ms'
CONF
$node->start;

# A 0.1 database with one RUNNING job of agent 'uc_agent', written as a
# restore would (replica mode: the library does not schedule with the
# 0.1 schema).
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched VERSION '0.1';
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
my $id = $node->safe_psql('postgres', "SELECT id FROM quota_sched.job WHERE name = 'uc_job'");

my $waits = qr/quota_sched worker: quota_sched 0\.1 is installed, but the library is version \Q$current\E: no passes until the extension is updated/;
my $resumes = qr/LOG:  quota_sched worker: quota_sched \Q$current\E is installed, the library's version: passes resume/;
ok($node->wait_for_log($waits), 'the worker says that it waits for the update');

# The agent's report, not committed yet.
my $agent = $node->background_psql('postgres');
$agent->query_safe('BEGIN');
is($agent->query_safe("SELECT state FROM quota_sched.report($id, 'uc_agent', 'SUCCEEDED')"),
	'SUCCEEDED', 'the report is made, in an open transaction');

# The upgrade waits for it.
my $upgrade = $node->background_psql('postgres');
$upgrade->query_until(qr/upgrading/, "\\echo upgrading\nALTER EXTENSION quota_sched UPDATE;\n");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity"
		  . " WHERE wait_event_type = 'Lock' AND query LIKE 'ALTER EXTENSION%'"),
	'the upgrade waits for the job being changed');

$agent->query_safe('COMMIT');
$agent->quit;
$upgrade->quit;

is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'"),
	$current, 'the upgrade is done');
is($node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE id = $id"),
	'SUCCEEDED', 'the report committed');
is($node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'),
	'0', 'the counters match the jobs: the report is counted');

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
