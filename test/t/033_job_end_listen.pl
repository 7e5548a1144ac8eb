# The notification of a job's end on quota_sched_job_end (scheduling.md
# 5.1; src/jobs/job_end.c, issue 42): the commit that ends a job sends it
# only while a backend of the server listens on the channel, so that the
# reports of agents that nobody waits on do not commit one at a time behind
# PostgreSQL's lock for notifications.  A LISTEN waits until no commit
# that found no listener runs, so that a client that listens and then
# reads a job not ended yet is told of its end: here a commit held by a
# synchronous standby that never comes.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('job_end');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.enabled = off
CONF
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('je_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('je_queue', 'je_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('je_queue', 'je_share', '{"gpu": 1}', 'RESERVE');
SQL

# run(name): submits a job, dispatches it and has agent je_agent run it;
# returns its id
sub run
{
	my ($name) = @_;
	return $node->safe_psql('postgres', qq{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
		VALUES ('$name', 'je_queue', 'je_share', 'gpu');
		DO \$\$ BEGIN
			PERFORM * FROM quota_sched.run_pass('je_queue');
			PERFORM quota_sched.report(c.id, 'je_agent', 'RUNNING')
			   FROM quota_sched.claim('je_agent', 'je_queue') c;
		END \$\$;
		SELECT id FROM quota_sched.job WHERE name = '$name' AND state = 'RUNNING'});
}

# queued(): whether the ends of 300 jobs, terminated while RUNNABLE in one
# transaction, queued notifications: the notification queue's use, counted
# in pages of 8 kB, grows by about three (while $holder, below, keeps the
# queue's tail where it is)
sub queued
{
	return $node->safe_psql('postgres', q{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
		SELECT 'je_many', 'je_queue', 'je_share', 'gpu' FROM generate_series(1, 300);
		SELECT pg_notification_queue_usage() AS before \gset
		SELECT count(*) FROM quota_sched.job j, quota_sched.terminate(j.id) t
		 WHERE j.name = 'je_many' AND j.state = 'RUNNABLE' \g /dev/null
		SELECT pg_notification_queue_usage() > :before});
}

# 1. Nobody listens: no notification.  A session listens: the ends are
# queued (it reads none while in a transaction, so they stay queued) and
# it is told.  It leaves: none again.  Meanwhile a session that listens on
# another channel, in a transaction, holds the queue's tail, so that
# whatever is queued stays counted.
my $holder = $node->background_psql('postgres');
$holder->query_safe('LISTEN je_other');
$holder->query_safe('BEGIN');
is(queued(), 'f', 'nobody listens: the end of a job sends no notification');
my $listener = $node->background_psql('postgres');
$listener->query_safe('LISTEN quota_sched_job_end');
$listener->query_safe('BEGIN');
is(queued(), 't', 'a session listens: the ends of jobs are notified');
my $id = run('je_2');
like($id, qr/^\d+$/, 'a job runs');
$node->safe_psql('postgres', "SELECT state FROM quota_sched.report($id, 'je_agent', 'SUCCEEDED')");
like($listener->query_safe('COMMIT'),
	qr/Asynchronous notification "quota_sched_job_end" with payload "\{"job_id":$id,"state":"SUCCEEDED","job_queue":"je_queue"\}"/,
	'and the listener gets it');
my $listener_pid = $listener->query_safe('SELECT pg_backend_pid()');
$listener->quit;
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $listener_pid"),
	'the listener is gone');
is(queued(), 'f', 'once it has gone, no notification again');
$holder->query_safe('COMMIT');
$holder->quit;

# 2. A commit that found no listener and has not finished: a synchronous
# standby that never comes holds it.  A LISTEN meanwhile waits for it; once
# it is done, the LISTEN returns and the job is seen ended.  (Only the
# report writes once the standby is named; a LISTEN and reads do not wait
# for it.)
$id = run('je_4');
# (the checkpointer, which tells the backends that a standby is named,
# reads the setting before it does the CHECKPOINT asked after the reload)
$node->safe_psql('postgres',
	"ALTER SYSTEM SET synchronous_standby_names = 'nobody'; SELECT pg_reload_conf();");
$node->safe_psql('postgres', 'CHECKPOINT');
my $reporter = $node->background_psql('postgres');
my $reporter_pid = $reporter->query_safe('SELECT pg_backend_pid()');
$reporter->query_safe('BEGIN');
$reporter->query_safe("SELECT state FROM quota_sched.report($id, 'je_agent', 'SUCCEEDED')");
$reporter->{stdin} .= "COMMIT;\n";
$reporter->{run}->pump_nb;
ok($node->poll_query_until('postgres',
		"SELECT wait_event = 'SyncRep' FROM pg_stat_activity WHERE pid = $reporter_pid"),
	'the commit that ends the job waits for the standby');
my $late = $node->background_psql('postgres');
my $late_pid = $late->query_safe('SELECT pg_backend_pid()');
$late->{stdin} .= "LISTEN quota_sched_job_end;\n\\echo listening\n";
$late->{run}->pump_nb;
ok($node->poll_query_until('postgres',
		"SELECT wait_event_type = 'Extension' FROM pg_stat_activity WHERE pid = $late_pid"),
	'a LISTEN meanwhile waits for that commit');
is($node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE id = $id"), 'RUNNING',
	'whose end is not seen yet');
$node->safe_psql('postgres', "SELECT pg_cancel_backend($reporter_pid)");
$late->query_until(qr/listening/, '');
is($late->query_safe("SELECT state FROM quota_sched.job WHERE id = $id"), 'SUCCEEDED',
	'once the commit is done, the LISTEN returns, and the job is seen ended');
$late->quit;
$reporter->quit;
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET synchronous_standby_names; SELECT pg_reload_conf();");

$node->stop;
done_testing();
