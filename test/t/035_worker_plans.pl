# The background worker keeps the plans of its statements (src/base/query.c):
# each statement it runs through SPI is planned once, then again only when
# something changes (the job table doubles, a configuration change, an
# invalidation), not at each run.  A saved plan of a table with row-level
# security is made again whenever the role or the search_path of a run
# differs from the last: the worker's check for RUNNABLE jobs before a pass
# (worker.c, PassStep) once ran the pass's probe of the pairs' floors as
# the worker's own user, and the pass as the extension's owner, so the probe
# was planned at every call, doubling the worker's CPU at 20 jobs/s
# (issue 42).  Here the real worker dispatches 60 jobs submitted one by
# one, each waited for, then ended (terminated: a job's end wakes the
# worker), and pg_stat_statements (track = all, track_planning) counts the
# plans of every statement run at least once a job.
#
# It counts the probes too.  A submission lowers its pair's floor, so the
# check before a pass knows without a statement that the pass has a job
# to read; and a pass that dispatched every job of a pair leaves its floor
# past every key at its commit (pass_apply.c, AdvanceFloors), so the check
# woken by the job's end runs no statement and no pass (issue 42, items 1
# and 2).  Without that, each end ran a pass, as each check ran a probe.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('worker_plans');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched, pg_stat_statements'
quota_sched.database = 'postgres'
quota_sched.naptime = '1h'
pg_stat_statements.track = all
pg_stat_statements.track_planning = on
# no invalidation from an ANALYZE: the worker's rounds after the first are
# the ones between full rounds, which check for RUNNABLE jobs first
autovacuum = off
CONF
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION pg_stat_statements;
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('wp_env', '{"gpu": 1000}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('wp_queue', 'wp_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('wp_queue', 'wp_share', '{"gpu": 1000}', 'RESERVE');
SQL

# A first job, so that every plan of a pass exists before the count starts
# (the configuration written above invalidated some of them).
$node->safe_psql('postgres', q{
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
	VALUES ('wp_first', 'wp_queue', 'wp_share', 'gpu')});
ok($node->poll_query_until('postgres',
		"SELECT state = 'SCHEDULED' FROM quota_sched.job WHERE name = 'wp_first'"),
	'the worker dispatches a first job');
$node->safe_psql('postgres', 'SELECT pg_stat_statements_reset()');

# 60 jobs, one at a time, in one session (a session plans its own
# statements once: the submission's checks), each committed alone and
# polled for until the worker has dispatched it (at most 60 s each).
my $done = $node->safe_psql('postgres', q{
	DO $$
	DECLARE
		deadline timestamptz;
		rounds bigint;
	BEGIN
		FOR i IN 1 .. 60 LOOP
			INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
			VALUES ('wp_' || i, 'wp_queue', 'wp_share', 'gpu');
			COMMIT;
			deadline := clock_timestamp() + interval '60 s';
			WHILE NOT EXISTS (SELECT FROM quota_sched.job
							   WHERE name = 'wp_' || i AND state = 'SCHEDULED') LOOP
				IF clock_timestamp() > deadline THEN
					RAISE EXCEPTION 'job wp_% was not dispatched within 60 s', i;
				END IF;
				PERFORM pg_sleep(0.01);
			END LOOP;
			-- its end, and a round of the worker after it
			rounds := (SELECT w.rounds FROM quota_sched.worker_stats() w);
			PERFORM quota_sched.terminate(id) FROM quota_sched.job WHERE name = 'wp_' || i;
			COMMIT;
			WHILE (SELECT w.rounds FROM quota_sched.worker_stats() w) <= rounds LOOP
				IF clock_timestamp() > deadline THEN
					RAISE EXCEPTION 'no round of the worker after the end of job wp_%', i;
				END IF;
				PERFORM pg_sleep(0.01);
			END LOOP;
		END LOOP;
	END $$;
	SELECT count(*) FILTER (WHERE state = 'SCHEDULED') || ' ' || count(*) FILTER (WHERE state = 'FAILED')
	  FROM quota_sched.job WHERE name LIKE 'wp\_%'});
is($done, '1 60', 'the worker dispatches 60 jobs submitted one by one, each woken by its commit, and each ends');

# Every statement run at least once a job: the worker's, and the
# submissions' (of one session).
my $rows = $node->safe_psql('postgres', q{
	SELECT calls, plans, left(regexp_replace(query, '\s+', ' ', 'g'), 100)
	  FROM pg_stat_statements s
	 WHERE calls >= 60 AND query NOT LIKE '%pg_stat_statements%'
	 ORDER BY plans DESC});
my @often = map { [split /\|/, $_, 3] } grep { $_ ne '' } split /\n/, $rows;
cmp_ok(scalar(@often), '>=', 10, 'several statements ran at least once a job')
  or diag($rows);
# The pass reads the pairs' first jobs, which is its probe
# (job_store_pass.c, ReadPairsHeads): once a job, at its dispatch.  The
# check before a pass probes nothing: after a submission it knows, after
# a job's end there is nothing (its pair's floor is past every key).
my $calls = sub {
	my ($re) = @_;
	my $n = 0;
	foreach (split /\n/, $node->safe_psql('postgres',
			q{SELECT calls || '|' || regexp_replace(query, '\s+', ' ', 'g') FROM pg_stat_statements}))
	{
		my ($c, $q) = split /\|/, $_, 2;
		$n += $c if $q =~ $re;
	}
	return $n;
};
my $heads = $calls->(qr/^SELECT j\.\*, p\.i AS pair FROM unnest/);
my $probes = $calls->(qr/^SELECT p\.i, f\.priority, f\.queued_at, f\.id/);
cmp_ok($heads, '>=', 60, "the passes read the pairs' first jobs at each dispatch ($heads reads)");
cmp_ok($heads, '<', 70, "and at no job's end ($heads reads; 120 when each end ran a pass)");
cmp_ok($probes, '<', 10, "the checks before a pass probed no pair ($probes probes; 120 before)");
# A statement PostgreSQL plans in its own way (PL/pgSQL's here, a foreign
# key's check) has 5 custom plans, then a generic one: 6.  Without the
# fix, the probe was planned at each of its 120 runs.
# (Not the foreign-key check of terminate()'s second write of a job, in
# this test's own session: PostgreSQL plans it anew at each run.)
for my $s (grep { $_->[2] !~ /^SELECT \$\d+ FROM ONLY "quota_sched"\."quota_share"/ } @often)
{
	cmp_ok($s->[1], '<=', 6, "planned at most 6 times in $s->[0] runs: $s->[2]")
	  or diag($rows);
}

$node->stop;
done_testing();
