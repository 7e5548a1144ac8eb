# The background worker (scheduling.md 6): woken by commits, polling every naptime,
# writing nothing when nothing changes, surviving errors and restarts (its own
# and its launcher's), and never running on a standby.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use FindBin;
use lib $FindBin::RealBin;
use QsWorker;

my $node = PostgreSQL::Test::Cluster->new('primary');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '1h'
CONF
$node->start;

$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('w_env', '{"gpu": 10}');
-- fence_grace 0: a lease is lost as soon as it runs out (the grace: below)
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
VALUES ('w_queue', 'w_env', '0');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('w_queue', 'w_share', '{"gpu": 10}', 'RESERVE');
SQL

ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

sub submit
{
	my ($name, $queue) = @_;
	$queue //= 'w_queue';
	my $share = $queue eq 'w_queue' ? 'w_share' : "${queue}_share";
	$node->safe_psql('postgres',
		"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)"
		  . " VALUES ('$name', '$queue', '$share', 'gpu')");
}

sub state_of
{
	my ($name) = @_;
	return $node->safe_psql('postgres', "SELECT state FROM quota_sched.job WHERE name = '$name'");
}

# A commit wakes the worker: with a naptime of an hour, the job is
# dispatched at once.
my $t0 = time;
submit('woken');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'woken'"),
	'a commit wakes the worker, which dispatches the job');
cmp_ok(time - $t0, '<', 30, 'well before the naptime of an hour');

# The worker reports its statistics after each transaction, so its updates
# of jobs show in pg_stat_user_tables, where autovacuum reads them, while it
# runs and not only when it exits.  Statistics flush asynchronously: poll.
sub job_updates
{
	return $node->safe_psql('postgres',
		"SELECT n_tup_upd FROM pg_stat_user_tables WHERE relid = 'quota_sched.job'::regclass");
}
my $updates = job_updates();
submit('counted');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'counted'"),
	'the worker dispatches another job');
ok($node->poll_query_until('postgres',
		"SELECT n_tup_upd > $updates FROM pg_stat_user_tables WHERE relid = 'quota_sched.job'::regclass"),
	"pg_stat_user_tables counts the worker's updates of jobs");

# Nothing changes: the worker polls every 100 ms and writes nothing.  (Once
# an hour it rolls up the hour before, which had activity: the check keeps
# clear of an hour's edge.)  With a naptime of an hour it ran no round of
# its own accord: rounds that come without commits show the new naptime in
# effect.
$node->safe_psql('postgres', "ALTER SYSTEM SET quota_sched.naptime = '100ms'; SELECT pg_reload_conf()");
ok(wait_rounds($node, 3), 'with a naptime of 100 ms the worker runs rounds of its own accord');
my $edge_hour = $node->safe_psql('postgres',
	"SELECT date_trunc('hour', now()) FROM (SELECT date_trunc('hour', now() + interval '10 seconds')"
	  . " = date_trunc('hour', now()) AS clear) c WHERE NOT clear");
if ($edge_hour ne '')
{
	# within 10 s of the hour's edge: past it, the first round rolls up the
	# hour before (two rounds: one of them began in the new hour)
	$node->poll_query_until('postgres', "SELECT date_trunc('hour', now()) > '$edge_hour'");
	wait_rounds($node, 2);
}
my $xmax = $node->safe_psql('postgres', 'SELECT pg_snapshot_xmax(pg_current_snapshot())');
my $passes = $node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.pass_log');
ok(wait_rounds($node, 10), 'the idle worker runs ten more rounds');
is($node->safe_psql('postgres', 'SELECT pg_snapshot_xmax(pg_current_snapshot())'), $xmax,
	'an idle worker assigns no transaction id');
is($node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.pass_log'), $passes,
	'an idle worker writes no pass_log row');

# With wake_on_commit off it only polls: nothing happens for an hour's
# naptime; a short naptime brings the job in.  The sessions from now on
# have wake_on_commit off, and the worker, no round for 2 s, its naptime of
# an hour.
$node->safe_psql('postgres',
	"ALTER SYSTEM SET quota_sched.wake_on_commit = off; ALTER SYSTEM SET quota_sched.naptime = '1h';"
	  . " SELECT pg_reload_conf()");
ok(wait_setting($node, 'quota_sched.wake_on_commit', 'off'), 'wake_on_commit is off');
ok(wait_worker_quiet($node, 2), 'the worker no longer polls every 100 ms');
my $rounds = worker_rounds($node);
submit('polled');
# Not a wait for the system: that nothing comes.  A commit that woke the
# worker would have its round dispatch the job at once; 3 s give it time.
sleep 3;
is(state_of('polled'), 'RUNNABLE', 'wake_on_commit off: a commit does not wake the worker');
is(worker_rounds($node), $rounds, 'no round ran');
$node->safe_psql('postgres', "ALTER SYSTEM SET quota_sched.naptime = '200ms'; SELECT pg_reload_conf()");
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'polled'"),
	'the worker polls every naptime');
$node->safe_psql('postgres',
	"ALTER SYSTEM RESET quota_sched.wake_on_commit; ALTER SYSTEM SET quota_sched.naptime = '1h';"
	  . " SELECT pg_reload_conf()");
ok(wait_setting($node, 'quota_sched.wake_on_commit', 'on'), 'wake_on_commit is on again');
ok(wait_worker_quiet($node, 2), 'the worker no longer polls every 200 ms');

# Only commits that may change a decision wake the worker (scheduling.md 6).
# 'waiting' is inserted with the triggers off, so it wakes nobody: a pass
# would dispatch it, but claims, a RUNNING report and a heartbeat do not
# run one; the SUCCEEDED report that frees an instance does.  An UPDATE in
# the same transaction has job_scan_floor (ENABLE ALWAYS) note it, as a
# submission is noted: the worker's check before a pass reads the floors,
# and a row they do not know waits for their check of every 10 s.
submit('held');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'held'"),
	'the worker dispatches held');
$node->safe_psql('postgres', <<'SQL');
SET session_replication_role = replica;
INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
	instance_count, owner, state, failed_attempts, preemption_count, lease_losses, claim_requeues,
	submitted_at, queued_at)
VALUES (nextval('quota_sched.job_id_seq'), 'waiting', 'w_queue', 'w_share', 0, 'gpu', 1,
	current_user, 'RUNNABLE', 0, 0, 0, 0, now(), now());
UPDATE quota_sched.job SET priority = priority WHERE name = 'waiting';
SQL
my $held = $node->safe_psql('postgres', "SELECT id FROM quota_sched.job WHERE name = 'held'");
ok(wait_worker_quiet($node, 0), "the round that dispatched held is over");
$rounds = worker_rounds($node);
$node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.claim('w_agent', 'w_queue', max_jobs => 10)");
# Not a wait for the system: that nothing comes (a round would dispatch
# waiting at once), twice.
sleep 2;
is(state_of('waiting'), 'RUNNABLE', 'a claim does not wake the worker');
$node->safe_psql('postgres', "SELECT state FROM quota_sched.report($held, 'w_agent', 'RUNNING')");
$node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.heartbeat('w_agent')");
sleep 2;
is(state_of('waiting'), 'RUNNABLE', 'a RUNNING report and a heartbeat do not wake the worker');
is(worker_rounds($node), $rounds, 'no round ran');
$t0 = time;
$node->safe_psql('postgres', "SELECT state FROM quota_sched.report($held, 'w_agent', 'SUCCEEDED')");
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'waiting'"),
	'a SUCCEEDED report wakes the worker');
cmp_ok(time - $t0, '<', 30, 'well before the naptime of an hour');

# A round woken by commits runs only the passes of queues where a job
# waits; time-based work waits for the full round of the naptime (an hour
# here).  'waiting' is claimed with a one-second lease that then expires; a
# SUCCEEDED report in a queue with nothing RUNNABLE wakes the worker, which
# passes over the queue: the lease is not acted on.  A submission makes the
# queue's pass run, and it ends the expired attempt too.
$node->safe_psql('postgres',
	"SELECT count(*) FROM quota_sched.claim('w_agent2', 'w_queue', lease => '1 second')");
is(state_of('waiting'), 'STARTING', 'waiting is claimed with a one-second lease');
ok($node->poll_query_until('postgres', "SELECT lease_until < now() FROM quota_sched.job WHERE name = 'waiting'"),
	'the lease runs out');
my $woken = $node->safe_psql('postgres', "SELECT id FROM quota_sched.job WHERE name = 'woken'");
ok(wait_worker_quiet($node, 0), 'the worker waits');
$rounds = worker_rounds($node);
$node->safe_psql('postgres', "SELECT state FROM quota_sched.report($woken, 'w_agent', 'SUCCEEDED')");
ok($node->poll_query_until('postgres', "SELECT rounds > $rounds FROM quota_sched.worker_stats()"),
	'the SUCCEEDED report wakes the worker');
is(state_of('waiting'), 'STARTING',
	'with nothing RUNNABLE, a woken round passes over the queue: the expired lease waits');
submit('after_lease');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'after_lease'"),
	'a submission makes the pass run');
isnt(state_of('waiting'), 'STARTING', 'and that pass ends the expired attempt');

# A job held back only because its victims are within their share's
# min_runtime (scheduling.md 3.3) gets them when the exemption ends: the
# worker runs a round then, not at its naptime (an hour here).
$node->safe_psql('postgres', <<'SQL');
INSERT INTO quota_sched.service_environment VALUES ('m_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('m_queue', 'm_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, in_share_preemption, min_runtime)
VALUES ('m_queue', 'm_queue_share', '{"gpu": 2}', 'RESERVE', true, '4 seconds');
SQL
submit('m_low_1', 'm_queue');
submit('m_low_2', 'm_queue');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM quota_sched.job WHERE name LIKE 'm_low_%' AND state = 'SCHEDULED'"),
	'min_runtime: the two low jobs are dispatched');
$node->safe_psql('postgres',
	"SELECT count(*) FROM quota_sched.claim('m_agent', 'm_queue', max_jobs => 2)");
ok(wait_worker_quiet($node, 0), 'the worker waits');
$rounds = worker_rounds($node);
$t0 = time;
$node->safe_psql('postgres',
	"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, priority)"
	  . " VALUES ('m_high', 'm_queue', 'm_queue_share', 'gpu', 5)");
ok($node->poll_query_until('postgres', "SELECT rounds > $rounds FROM quota_sched.worker_stats()"),
	'min_runtime: the submission wakes the worker');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM quota_sched.job WHERE name LIKE 'm_low_%' AND stop_reason IS NOT NULL"),
	'0', 'min_runtime: the claimed low jobs are exempt at first');
is($node->safe_psql('postgres',
		"SELECT quota_sched.explain(id) ->> 'blocked_by' FROM quota_sched.job WHERE name = 'm_high'"),
	'VICTIMS_EXEMPT', 'min_runtime: explain says why m_high waits');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM quota_sched.job WHERE name LIKE 'm_low_%'"
		  . " AND stop_reason = 'IN_SHARE_PREEMPTION'"),
	'min_runtime: a low job is preempted once its exemption ends');
cmp_ok(time - $t0, '<', 30, 'min_runtime: by a round at the exemption\'s end, not at the naptime');

# A lease that ran out is taken back only the queue's fence_grace after
# (scheduling.md 3.10): a pass within the grace leaves the job, and the
# worker runs a full round when the grace ends, not at its naptime (an hour
# here), though the queue has nothing RUNNABLE by then (the job that made
# the pass run was terminated, a round that passes over the queue).
$node->safe_psql('postgres', <<'SQL');
INSERT INTO quota_sched.service_environment VALUES ('f_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment, fence_grace)
VALUES ('f_queue', 'f_env', '3 seconds');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('f_queue', 'f_queue_share', '{"gpu": 1}', 'RESERVE');
SQL
submit('f_held', 'f_queue');
ok($node->poll_query_until('postgres', "SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'f_held'"),
	'fence_grace: the job is dispatched');
$node->safe_psql('postgres',
	"SELECT count(*) FROM quota_sched.claim('f_agent', 'f_queue', lease => '1 second')");
ok($node->poll_query_until('postgres', "SELECT lease_until < now() FROM quota_sched.job WHERE name = 'f_held'"),
	'fence_grace: its lease runs out');
ok(wait_worker_quiet($node, 0), 'the worker waits');
$rounds = worker_rounds($node);
$t0 = time;
submit('f_wait', 'f_queue');
ok($node->poll_query_until('postgres', "SELECT rounds > $rounds FROM quota_sched.worker_stats()"),
	'fence_grace: a submission makes the queue\'s pass run');
is(state_of('f_held'), 'STARTING', 'fence_grace: within the grace the job is left to its agent');
$node->safe_psql('postgres',
	"SELECT quota_sched.terminate(id) FROM quota_sched.job WHERE name = 'f_wait'");
is(state_of('f_wait'), 'FAILED', 'fence_grace: the queue has nothing RUNNABLE any more');
ok($node->poll_query_until('postgres',
		"SELECT lease_losses = 1 FROM quota_sched.job WHERE name = 'f_held'"),
	'fence_grace: the lease is lost once the grace has passed');
is($node->safe_psql('postgres', q{
	SELECT e.at >= s.at + interval '4 seconds'
	  FROM quota_sched.job j
	  JOIN quota_sched.job_event e ON e.job_id = j.id AND e.reason = 'LEASE_EXPIRED'
	  JOIN quota_sched.job_event s ON s.job_id = j.id AND s.to_state = 'STARTING'
	 WHERE j.name = 'f_held'}), 't',
	'fence_grace: no sooner than fence_grace (3 s) after the lease (1 s from the claim) ran out');
cmp_ok(time - $t0, '<', 60, 'fence_grace: by a round at the grace\'s end, not at the naptime');

# quota_sched.enabled = off: no passes.  A session that has it off wakes
# no worker, and the worker, woken by the reload, reads it before a round.
$node->safe_psql('postgres', "ALTER SYSTEM SET quota_sched.enabled = off; SELECT pg_reload_conf()");
ok(wait_setting($node, 'quota_sched.enabled', 'off'), 'quota_sched.enabled is off');
ok(wait_worker_quiet($node, 0), 'the worker waits');
$rounds = worker_rounds($node);
submit('disabled');
# Not a wait for the system: that nothing comes.
sleep 2;
is(state_of('disabled'), 'RUNNABLE', 'quota_sched.enabled off: no pass');
is(worker_rounds($node), $rounds, 'no round ran');
$node->safe_psql('postgres', "ALTER SYSTEM RESET quota_sched.enabled; SELECT pg_reload_conf()");
submit('enabled_again');
ok($node->poll_query_until('postgres',
		"SELECT bool_and(state = 'SCHEDULED') FROM quota_sched.job WHERE name IN ('disabled', 'enabled_again')"),
	'enabled again: the worker catches up');

# An error in one queue's pass is reported; other queues go on, and the
# failing queue recovers once the cause is gone.
$node->safe_psql('postgres', <<'SQL');
INSERT INTO quota_sched.service_environment VALUES ('boom_env', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('boom', 'boom_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('boom', 'boom_share', '{"gpu": 1}', 'RESERVE');
CREATE FUNCTION public.boom() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.job_queue = 'boom' THEN RAISE EXCEPTION 'boom: a pass that fails'; END IF;
	RETURN NEW;
END $$;
CREATE TRIGGER boom BEFORE INSERT ON quota_sched.pass_log FOR EACH ROW EXECUTE FUNCTION public.boom();
SQL
my $log_offset = -s $node->logfile;
submit('boom_job', 'boom');
ok($node->wait_for_log(qr/boom: a pass that fails/, $log_offset), 'the error is reported');
submit('after_boom');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'after_boom'"),
	'other queues go on after an error');
is(state_of('boom_job'), 'RUNNABLE', 'the failing pass changed nothing');
$node->safe_psql('postgres', 'DROP TRIGGER boom ON quota_sched.pass_log');
$node->safe_psql('postgres', "UPDATE quota_sched.quota_share SET state = state WHERE name = 'boom_share'");
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'boom_job'"),
	'the failing queue recovers');

# The worker rolls up utilization after the first full round of each hour
# (a new worker at once): a job that held an instance of r_queue from three
# hours ago to two hours ago (written as history) is in the rollup after the
# restart below.  The queue is created with that history, in one
# transaction: a rollup that finds a queue with no history at all rolls it
# up to the start of the hour at once (sql/released/quota_sched--0.1--0.2.sql,
# rollup()), and history written afterwards for the hours before would
# never be rolled up.  (w_queue, created before its share, may have been
# rolled up so by the first round after CREATE EXTENSION.)  The hour is the
# one the history was written in, not the poll's: an hour's edge may pass.
my $hour = $node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO quota_sched.service_environment VALUES ('r_env', '{"gpu": 1}');
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('r_queue', 'r_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES ('r_queue', 'r_share', '{"gpu": 1}', 'RESERVE');
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt, priority)
	SELECT 999999, date_trunc('hour', now()) - v.ago, v.f, v.t, 'test', 'STATE', 'r_queue',
		   'r_share', 'gpu', 1, 1, 0
	  FROM (VALUES (interval '3 hours', NULL, 'SCHEDULED'),
				   (interval '2 hours', 'SCHEDULED', 'SUCCEEDED')) AS v(ago, f, t);
	SELECT date_trunc('hour', now());
	COMMIT;});

# The worker is restarted when it dies.
my $pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'");
$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker' AND pid <> $pid"),
	'the worker is restarted');
ok($node->poll_query_until('postgres', qq{
		SELECT rolled_until >= '$hour'
		   AND (SELECT used FROM quota_sched.usage_hourly
				 WHERE job_queue = 'r_queue' AND quota_share IS NOT NULL
				   AND hour = timestamptz '$hour' - interval '3 hours') = 3600
		  FROM quota_sched.usage_rollup WHERE job_queue = 'r_queue'}),
	'the new worker rolls up the hours before this one')
  or diag($node->safe_psql('postgres', 'SELECT now(); TABLE quota_sched.usage_rollup'));
submit('after_restart');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'after_restart'"),
	'and works');

# The launcher is restarted when it dies; its worker goes with it, and the
# new launcher starts one worker again.
my $launcher = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'quota_sched launcher'");
$pid = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'");
$node->safe_psql('postgres', "SELECT pg_terminate_backend($launcher)");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_stat_activity WHERE pid = $pid"),
	'the worker goes with its launcher');
ok($node->poll_query_until('postgres',
		"SELECT count(*) FILTER (WHERE backend_type = 'quota_sched launcher' AND pid <> $launcher) = 1"
		  . " AND count(*) FILTER (WHERE backend_type = 'quota_sched worker') = 1 FROM pg_stat_activity"),
	'the launcher is restarted, and starts the worker again');
# Not a wait for the system: that no second worker comes (the launcher
# would start it at once).
sleep 1;
is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'1', 'one worker, not two');
submit('after_launcher');
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'after_launcher'"),
	'and it works');

# While it waits the worker is idle in pg_stat_activity, even before its
# first round (here it starts while quota_sched.enabled is off).
$node->safe_psql('postgres', 'ALTER SYSTEM SET quota_sched.enabled = off');
$node->restart;
ok($node->poll_query_until('postgres',
		"SELECT state = 'idle' FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'pg_stat_activity shows the waiting worker as idle');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET quota_sched.enabled; SELECT pg_reload_conf()');

# Never on a standby.
$node->backup('backup');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'backup', has_streaming => 1);
$standby->start;
$node->wait_for_catchup($standby);
# Not a wait for the system: that no launcher comes (the postmaster would
# start it once the standby is up, which it is).
sleep 2;
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type IN ('quota_sched worker', 'quota_sched launcher')"),
	'0', 'no worker and no launcher on a standby');
$standby->stop;

$node->stop;
done_testing();
