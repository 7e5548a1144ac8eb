# QsWorker: what the TAP tests of the background worker share (003, 005,
# 009): marks of what the worker has done, read from worker_stats() and
# pg_stat_activity, so that a test waits for the worker itself rather than
# for a fixed time.  Each takes the node, and the database the extension is
# in (default postgres).
package QsWorker;

use strict;
use warnings;
use Exporter 'import';

our @EXPORT = qw(worker_rounds wait_rounds wait_worker_quiet wait_setting);

# worker_rounds(NODE[, DB]): the rounds the worker has ended since the
# server started (a worker's restart does not reset them)
sub worker_rounds
{
	my ($node, $db) = @_;
	return $node->safe_psql($db // 'postgres', 'SELECT rounds FROM quota_sched.worker_stats()');
}

# wait_rounds(NODE, N[, DB]): whether the worker ends N more rounds than it
# has now (within the poll's timeout).  With N of 2 or more, one of them
# began after the call.
sub wait_rounds
{
	my ($node, $n, $db) = @_;
	my $rounds = worker_rounds($node, $db);
	return $node->poll_query_until($db // 'postgres',
		"SELECT rounds >= $rounds + $n FROM quota_sched.worker_stats()");
}

# wait_worker_quiet(NODE, SECONDS[, DB]): whether the worker comes to wait
# (idle in pg_stat_activity, which a round never is) with no round ended
# for SECONDS.  With 0: the round under way, if any, is over.  With SECONDS
# well above the naptime it had: it runs no more rounds of its own accord,
# so that a longer naptime, or quota_sched.enabled off, has taken effect.
sub wait_worker_quiet
{
	my ($node, $seconds, $db) = @_;
	return $node->poll_query_until($db // 'postgres', qq{
		SELECT a.state = 'idle'
		   AND coalesce(now() - w.last_round_at > interval '$seconds seconds', true)
		  FROM quota_sched.worker_stats() w, pg_stat_activity a
		 WHERE a.backend_type = 'quota_sched worker'});
}

# wait_setting(NODE, NAME, VALUE): whether a new session has NAME = VALUE:
# the server has read its configuration again (pg_reload_conf()), and every
# session from now on has it
sub wait_setting
{
	my ($node, $name, $value) = @_;
	return $node->poll_query_until('postgres', "SELECT current_setting('$name')", $value);
}

1;
