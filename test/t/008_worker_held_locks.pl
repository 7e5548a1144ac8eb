# The worker against locks held for long (issue 10, item 4): a user holding
# a job's row, and a session holding a queue's lock in an open transaction.
# The worker never waits on the row: it passes over the job, schedules the
# rest, and after three passes says so in a WARNING.  A queue whose lock it
# cannot get within a naptime is passed over; after three rounds in a row it
# names the holder in a WARNING, and logs when passes run again; explain()
# says the queue is locked meanwhile.  A member's terminate() in a
# transaction left open holds no queue's lock (issue 20, item 1).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('held_locks');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.naptime = '200ms'
CONF
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
CREATE ROLE hl_member LOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits, state)
VALUES ('hl_env', '{"gpu": 4}', 'DISABLED');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('hl_queue', 'hl_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('hl_queue', 'hl_share', '{"gpu": 4}', 'RESERVE');
SQL

sub submit
{
	my ($name, $priority) = @_;
	$node->safe_psql('postgres', qq{
		SET ROLE hl_member;
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority)
		VALUES ('$name', 'hl_queue', 'hl_share', 'gpu', $priority)});
}

sub state_of
{
	my ($name) = @_;
	return $node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE name = '$name'");
}

# 1. The member holds the row of a job of their own, first in its share.
# The worker dispatches the other job, and warns.
my $offset = -s $node->logfile;
submit('held', 9);
submit('next', 0);
my $member = $node->background_psql('postgres');
$member->query_safe("SET ROLE hl_member; BEGIN;");
$member->query_safe("SELECT name FROM quota_sched.job WHERE name = 'held' FOR UPDATE;");
$node->safe_psql('postgres', "UPDATE quota_sched.service_environment SET state = 'ENABLED'");
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'next'"),
	'a job whose row a user holds holds up no other job');
is(state_of('held'), 'RUNNABLE', 'the held job is passed over');
ok($node->wait_for_log(qr/WARNING:  job queue "hl_queue": 3 passes in a row have passed over 1 job/,
		$offset), 'after three passes, a WARNING');
is($node->safe_psql('postgres', q{
		SELECT j.name FROM quota_sched.queue_status s JOIN quota_sched.job j ON j.id = ANY (s.passed_over)}),
	'held', 'queue_status lists the job');
$member->query_safe("COMMIT;");
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'held'"),
	'once the user lets go, the worker dispatches it');
ok($node->poll_query_until('postgres', "SELECT passed_over = '{}' FROM quota_sched.queue_status"),
	'and queue_status forgets it');
$member->quit;

# 2. A session holds the queue's lock: an admin's pass in a transaction left
# open.  After three rounds given up, a WARNING names the session.
$offset = -s $node->logfile;
my $admin = $node->background_psql('postgres');
$admin->query_safe("BEGIN; SELECT count(*) FROM quota_sched.run_pass('hl_queue');");
my $pid = $admin->query_safe("SELECT pg_backend_pid();");
$pid =~ s/\s+//g;
like($pid, qr/^\d+$/, 'the admin session has a pid');
ok($node->wait_for_log(
		qr/WARNING:  quota_sched worker: 3 passes in a row of job queue "hl_queue" were given up.*\n.*DETAIL:  Held by process \Q$pid\E\./,
		$offset), 'after three rounds given up, a WARNING names the holder');
# rounds that gave the pass up after the submission (two more: one of
# them began after it)
my $given_up = $node->safe_psql('postgres',
	"SELECT given_up FROM quota_sched.pass_stats() WHERE job_queue = 'hl_queue'");
submit('while_held', 0);
ok($node->poll_query_until('postgres',
		"SELECT given_up >= $given_up + 2 FROM quota_sched.pass_stats() WHERE job_queue = 'hl_queue'"),
	'the worker gives up the pass while the lock is held');
is(state_of('while_held'), 'RUNNABLE', 'nothing is dispatched while the lock is held');
# explain says why (issue 20, item 1): the member is not told whose
# session it is, an admin is
my $explain = q{SELECT quota_sched.explain(id) ->> '%s' FROM quota_sched.job WHERE name = 'while_held'};
is($node->safe_psql('postgres', sprintf("SET ROLE hl_member; $explain", 'blocked_by')),
	'QUEUE_LOCKED', 'explain: the queue is locked');
my $detail = $node->safe_psql('postgres', sprintf("SET ROLE hl_member; $explain", 'detail'));
like($detail, qr/^The scheduler gave up the last \d+ passes of job queue "hl_queue": another session held the queue's lock/,
	'explain: the passes are given up');
unlike($detail, qr/process/, 'explain: a member is not told the holder');
like($detail, qr/an admin's run_pass\(\) in a transaction that has not ended/,
	'explain: the detail names what can hold the lock');
unlike($detail, qr/claim|report|heartbeat/, 'explain: and no call that holds it only while it runs');
like($node->safe_psql('postgres', sprintf($explain, 'detail')), qr/ Held now by process \Q$pid\E\.$/,
	'explain: an admin is told the holder');
$admin->query_safe("COMMIT;");
ok($node->wait_for_log(qr/LOG:  quota_sched worker: the passes of job queue "hl_queue" run again/, $offset),
	'when the lock is free, a LOG says passes run again');
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'while_held'"),
	'and the job is dispatched');
$admin->quit;
is($node->safe_psql('postgres',
		"SELECT quota_sched.explain(id) ->> 'blocked_by' FROM quota_sched.job WHERE name = 'while_held'"),
	'WAITING_FOR_AGENT', 'explain: once passes run again, the queue is not said to be locked');

# 3. A member's terminate() in a transaction left open (issue 20, item 1):
# of a job that can never run (more instances than the environment has).
# The worker gives up no pass: another team's job is dispatched while the
# transaction stays open.
$node->safe_psql('postgres', <<'SQL');
CREATE ROLE st_other LOGIN IN ROLE quota_sched_user;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('st_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('st_queue', 'st_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('st_queue', 'st_mine', '{"gpu": 2}', 'LEND_AND_BORROW', 'hl_member'),
	   ('st_queue', 'st_theirs', '{"gpu": 2}', 'LEND_AND_BORROW', 'st_other');
SET ROLE hl_member;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('st_never', 'st_queue', 'st_mine', 'gpu', 5);
SQL
ok($node->poll_query_until('postgres',
		"SELECT status_reason LIKE 'MISCONFIGURATION:%' FROM quota_sched.job WHERE name = 'st_never'"),
	'the job that can never run is misconfigured');
$member = $node->background_psql('postgres');
$member->query_safe("SET ROLE hl_member; BEGIN;");
is($member->query_safe(
		"SELECT state FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'st_never'));"),
	'FAILED', 'the member terminates it, and leaves the transaction open');
$node->safe_psql('postgres', q{
	SET ROLE st_other;
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('st_ready', 'st_queue', 'st_theirs', 'gpu')});
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'st_ready'"),
	'another team\'s job is dispatched while the transaction is open');
is($node->safe_psql('postgres',
		"SELECT given_up_in_a_row FROM quota_sched.pass_stats() WHERE job_queue = 'st_queue'"),
	'0', 'no pass of the queue was given up');
is(state_of('st_never'), 'RUNNABLE', 'the terminate is not seen before it commits');
$member->query_safe("COMMIT;");
is(state_of('st_never'), 'FAILED', 'and is once it commits');
$member->quit;

$node->stop;
done_testing();
