# End to end under concurrency: pgbench clients submit jobs, raise
# priorities and act as agents (claim, start, acknowledge stops, finish)
# while the background worker runs passes woken by their commits.  Beside
# them a team member, in a pgbench of their own, submits jobs and keeps
# locking them: rows of their RUNNABLE jobs (SELECT ... FOR UPDATE), an
# UPDATE of jobs that changes nothing, the job table in the strongest mode
# users may take, each held in a transaction left open a while.  None of it
# may hold up the scheduling of the others, or of a second queue.  An
# impostor, an agent login of its own, keeps trying to report on and
# heartbeat the jobs the agents claimed: it must be refused every time.  After
# the run the state must satisfy scheduling.md 3.1 (I1)-(I3), the job states must be
# coherent, the history must account for every job, and the counters of held
# capacity must match the jobs, right after the run, once every job has
# ended, and after a final pass.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib $FindBin::RealBin;
use QsWorker;

my $seconds = $ENV{QS_SOAK_SECONDS} // 15;

my $node = PostgreSQL::Test::Cluster->new('soak');
$node->init;
$node->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '200ms'
max_connections = 30
CONF
$node->start;

$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('soak_env', '{"gpu": 8, "cpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('soak', 'soak_env');
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('soak', 'lab', '{"gpu": 3, "cpu": 1}', 'LEND_AND_BORROW', 100, true),
	   ('soak', 'lend', '{"gpu": 2, "cpu": 2}', 'LEND', -1, true),
	   ('soak', 'reserve', '{"gpu": 2}', 'RESERVE', -1, false),
	   ('soak', 'greedy', '{"gpu": 1}', 'LEND_AND_BORROW', -1, false);
INSERT INTO quota_sched.service_environment VALUES ('calm_env', '{"gpu": 2}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('calm', 'calm_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('calm', 'team', '{"gpu": 2}', 'RESERVE');
CREATE ROLE soak_member LOGIN IN ROLE quota_sched_user;
CREATE ROLE soak_impostor LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('soak_impostor', NULL);
-- An agent's report of a job whose row a user holds locked fails with
-- 55P03: the agent tries again later (here: at its next round).
CREATE FUNCTION public.agent_report(job bigint, agent text, state text)
RETURNS quota_sched.job LANGUAGE plpgsql AS $$
BEGIN
	RETURN quota_sched.report(job, agent, state);
EXCEPTION WHEN lock_not_available THEN
	RETURN NULL;
END $$;
SQL

my $tmp = PostgreSQL::Test::Utils::tempdir;
my %scripts = (
	'submit.sql' => <<'SQL',
\set s random(1, 4)
\set p random(0, 5)
\set n random(1, 3)
\set u random(1, 4)
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('j', 'soak', (ARRAY['lab', 'lend', 'reserve', 'greedy'])[:s], :p,
		CASE WHEN :u = 1 AND :s <> 3 AND :s <> 4 THEN 'cpu' ELSE 'gpu' END, :n);
SQL
	'reprioritise.sql' => <<'SQL',
\set p random(0, 9)
-- the state again in the outer WHERE: the job may end meanwhile, and the
-- priority of an ended job cannot change (55000)
UPDATE quota_sched.job SET priority = :p
 WHERE id = (SELECT id FROM quota_sched.job WHERE job_queue = 'soak'
				AND state IN ('RUNNABLE', 'RUNNING') ORDER BY random() LIMIT 1)
   AND state IN ('RUNNABLE', 'RUNNING');
SQL
	'agent.sql' => <<'SQL',
\set max random(1, 3)
SELECT count(*) FROM quota_sched.claim('agent-' || :client_id, 'soak', max_jobs => :max);
SELECT count(r.*) FROM quota_sched.job j,
	   LATERAL public.agent_report(j.id, 'agent-' || :client_id, 'RUNNING') r
 WHERE j.agent = 'agent-' || :client_id AND j.state = 'STARTING';
SELECT count(r.*) FROM quota_sched.heartbeat('agent-' || :client_id) h,
	   LATERAL public.agent_report(h.job_id, 'agent-' || :client_id, 'STOPPED') r
 WHERE h.stop_reason IS NOT NULL;
SELECT count(r.*) FROM (SELECT id FROM quota_sched.job
						 WHERE agent = 'agent-' || :client_id AND state = 'RUNNING'
						   AND stop_reason IS NULL ORDER BY random() LIMIT 1) j,
	   LATERAL public.agent_report(j.id, 'agent-' || :client_id,
								  CASE WHEN random() < 0.2 THEN 'FAILED' ELSE 'SUCCEEDED' END) r;
SQL
	'calm.sql' => <<'SQL',
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('c', 'calm', 'team', 'gpu');
SELECT count(*) FROM quota_sched.claim('calm-' || :client_id, 'calm', max_jobs => 2, start => true);
SELECT count(r.*) FROM quota_sched.job j,
	   LATERAL quota_sched.report(j.id, 'calm-' || :client_id, 'SUCCEEDED') r
 WHERE j.agent = 'calm-' || :client_id AND j.state = 'RUNNING';
SQL
	'impostor.sql' => <<'SQL',
DO $$
DECLARE
	victim record;
	n bigint;
BEGIN
	SELECT id, agent INTO victim FROM quota_sched.job
	 WHERE job_queue = 'soak' AND state = 'RUNNING' ORDER BY random() LIMIT 1;
	IF victim.id IS NULL THEN
		RETURN;
	END IF;
	SELECT count(*) INTO n FROM quota_sched.heartbeat(victim.agent);
	IF n > 0 THEN
		RAISE EXCEPTION 'an impostor extended the leases of agent %', victim.agent;
	END IF;
	BEGIN
		PERFORM quota_sched.report(victim.id, victim.agent, 'SUCCEEDED');
		RAISE EXCEPTION 'an impostor reported on job %', victim.id;
	EXCEPTION WHEN insufficient_privilege OR object_not_in_prerequisite_state
			OR lock_not_available THEN
		NULL;	-- 42501; 55000 when the job ended meanwhile, 55P03 while a user holds it
	END;
END $$;
SQL
	'member_submit.sql' => <<'SQL',
\set p random(0, 9)
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('m', 'soak', 'lab', :p, 'gpu');
SQL
	'member_hold.sql' => <<'SQL',
BEGIN;
-- SKIP LOCKED: the member's two clients never wait for each other (one
-- waiting for the other's rows, the other left open in its transaction
-- once pgbench's time was up, hung the whole run under load)
SELECT count(*) FROM (SELECT id FROM quota_sched.job WHERE state = 'RUNNABLE'
					   ORDER BY random() LIMIT 2 FOR UPDATE SKIP LOCKED) l;
UPDATE quota_sched.job SET priority = priority WHERE false;
LOCK TABLE quota_sched.job IN ROW EXCLUSIVE MODE;
-- the workload: the locks are held a while (not a wait for the system)
SELECT pg_sleep(0.3);
COMMIT;
SQL
);
foreach my $f (keys %scripts)
{
	open(my $fh, '>', "$tmp/$f") or die;
	print $fh $scripts{$f};
	close($fh);
}

# The member's and the impostor's pgbench write to files: a harness that
# is started is not read while another runs, and a full pipe would stop
# its pgbench.  Each has a timeout, so that a run that hangs fails.
my ($stdout, $stderr);
my $limit = $seconds + 180;
my $member = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '2', '-j', '1', '-T', $seconds,
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-U', 'soak_member',
	  '-f', "$tmp/member_submit.sql\@1", '-f', "$tmp/member_hold.sql\@2" ],
	'>', "$tmp/member.out", '2>', "$tmp/member.err", IPC::Run::timeout($limit));
my $impostor = IPC::Run::start(
	[ 'pgbench', '-n', '-c', '1', '-j', '1', '-T', $seconds, '-R', '20',
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-U', 'soak_impostor',
	  '-f', "$tmp/impostor.sql" ],
	'>', "$tmp/impostor.out", '2>', "$tmp/impostor.err", IPC::Run::timeout($limit));
my $ok = IPC::Run::run(
	[ 'pgbench', '-n', '-c', '6', '-j', '2', '-T', $seconds,
	  '-h', $node->host, '-p', $node->port, '-d', 'postgres',
	  '-f', "$tmp/submit.sql\@2", '-f', "$tmp/reprioritise.sql\@1", '-f', "$tmp/agent.sql\@4",
	  '-f', "$tmp/calm.sql\@1" ],
	'>', \$stdout, '2>', \$stderr, IPC::Run::timeout($limit));
ok($ok, 'pgbench ran without a failed transaction') or diag($stderr);
like($stdout, qr/number of failed transactions: 0/, 'no transaction failed')
  or diag($stdout);
ok($member->finish, "the team member's pgbench ran without a failed transaction")
  or diag(slurp_file("$tmp/member.err"));
my $member_out = slurp_file("$tmp/member.out");
like($member_out, qr/number of failed transactions: 0/, "none of the member's transactions failed")
  or diag($member_out);
ok($impostor->finish, 'the impostor was refused every time')
  or diag(slurp_file("$tmp/impostor.err"));
my $impostor_out = slurp_file("$tmp/impostor.out");
like($impostor_out, qr/number of transactions actually processed: [1-9]/, 'the impostor tried')
  or diag($impostor_out);

# let the worker settle: pending stops are acknowledged by nobody now, so
# one more round (two: one of them began after the run) is enough
ok(wait_rounds($node, 2), 'the worker runs a round after the run');

sub check
{
	my ($name, $sql) = @_;
	is($node->safe_psql('postgres', $sql), '', $name);
}

# The counters of held capacity (scheduling.md 3.1) must match the jobs:
# held_capacity_drift() recounts them from the jobs and returns a row for
# each counter that disagrees (shown if any).
sub check_drift
{
	my ($when) = @_;
	is($node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'),
		'0', "counters of held capacity match the jobs $when")
	  or diag("held_capacity_drift() (queue, share, unit, kept/counted instances, stopping, jobs):\n"
		  . $node->safe_psql('postgres', 'SELECT d::text FROM quota_sched.held_capacity_drift() d'));
}
check_drift('after the soak');

my $counts = $node->safe_psql('postgres',
	"SELECT count(*) || ' jobs, ' || count(*) FILTER (WHERE preemption_count > 0) || ' preempted, '"
	  . " || (SELECT count(*) FROM quota_sched.pass_log) || ' passes'"
	  . " FROM quota_sched.job");
note("soak: $counts");
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM quota_sched.pass_log'), '>', 10,
	'the worker ran passes');
cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM quota_sched.job WHERE state = 'SUCCEEDED'"), '>', 10,
	'jobs ran to the end');
cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM quota_sched.job WHERE owner = 'soak_member' AND state <> 'RUNNABLE'"),
	'>', 5, "the member's jobs were scheduled too");
cmp_ok($node->safe_psql('postgres',
		"SELECT count(*) FROM quota_sched.job WHERE job_queue = 'calm' AND state = 'SUCCEEDED'"),
	'>', 10, 'the other queue was scheduled throughout');

# (I1)-(I3) with pending stops counted as holding (scheduling.md 3.1)
my $usage = <<'SQL';
WITH units AS (SELECT key AS unit, value::bigint AS e
				 FROM quota_sched.service_environment, jsonb_each_text(capacity_limits)
				WHERE name = 'soak_env'),
shares AS (SELECT s.name, u.unit, coalesce((s.capacity_limits ->> u.unit)::bigint, 0) AS c,
				  s.strategy, s.borrow_limit
			 FROM quota_sched.quota_share s, units u WHERE s.job_queue = 'soak'),
usage AS (SELECT sh.*, coalesce((SELECT sum(instance_count) FROM quota_sched.job j
								  WHERE j.job_queue = 'soak' AND j.quota_share = sh.name
									AND j.capacity_unit = sh.unit
									AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')), 0) AS used
			FROM shares sh)
SQL
check('(I1) no unit is used beyond the environment', $usage . <<'SQL');
SELECT u.unit FROM units u JOIN usage s ON s.unit = u.unit GROUP BY u.unit, u.e HAVING sum(s.used) > u.e
SQL
check('(I2) no share uses more than allowed(S,u)', $usage . <<'SQL');
SELECT name, unit FROM usage
 WHERE used > CASE WHEN strategy <> 'LEND_AND_BORROW' THEN c
				   WHEN borrow_limit = -1 THEN used
				   ELSE c * (100 + borrow_limit) / 100 END
SQL
check('(I3) borrowing is within the borrowable supply', $usage . <<'SQL');
SELECT u.unit FROM units u JOIN usage s ON s.unit = u.unit
 GROUP BY u.unit, u.e
HAVING sum(greatest(0, s.used - s.c)) >
	   sum(CASE WHEN s.strategy <> 'RESERVE' THEN greatest(0, s.c - s.used) ELSE 0 END)
	   + greatest(0, u.e - sum(s.c))
SQL

# coherent job states
check('agents hold exactly the claimed jobs', <<'SQL');
SELECT id, state FROM quota_sched.job
 WHERE (state IN ('STARTING', 'RUNNING') AND (agent IS NULL OR lease_until IS NULL))
	OR (state IN ('RUNNABLE', 'SCHEDULED') AND agent IS NOT NULL)
SQL
check('only RUNNABLE jobs are promised; stops only on claimed jobs', <<'SQL');
SELECT id, state FROM quota_sched.job
 WHERE (promised_at IS NOT NULL AND state <> 'RUNNABLE')
	OR (stop_reason IS NOT NULL AND state NOT IN ('STARTING', 'RUNNING'))
SQL
check('counters add up: the attempt number never exceeds what max_attempts allows', <<'SQL');
SELECT id FROM quota_sched.job WHERE failed_attempts > max_attempts
SQL

# the history accounts for every job
check('every job has exactly one submission event', <<'SQL');
SELECT j.id FROM quota_sched.job j
 WHERE (SELECT count(*) FROM quota_sched.job_event e WHERE e.job_id = j.id AND e.from_state IS NULL) <> 1
SQL
check("every job's last event leads to its state", <<'SQL');
SELECT j.id, j.state, e.to_state FROM quota_sched.job j
  JOIN LATERAL (SELECT to_state FROM quota_sched.job_event e WHERE e.job_id = j.id
				 ORDER BY e.id DESC LIMIT 1) e ON true
 WHERE e.to_state <> j.state
SQL
check('events chain: each from_state is the previous to_state', <<'SQL');
SELECT job_id FROM (SELECT job_id, from_state,
						   lag(to_state) OVER (PARTITION BY job_id ORDER BY id) AS previous
					  FROM quota_sched.job_event) e
 WHERE from_state IS DISTINCT FROM previous
SQL

# The worker is stopped, every held job ends as an agent would end it (the
# counters, summed over their stripes, come back to zero), and one job is
# submitted: a final pass dispatches it into empty shares.
$node->append_conf('postgresql.conf', 'quota_sched.enabled = off');
$node->reload;
ok(wait_setting($node, 'quota_sched.enabled', 'off'), 'quota_sched.enabled is off');
ok(wait_worker_quiet($node, 1), 'the worker runs no more rounds');
$node->safe_psql('postgres', <<'SQL');
SELECT count(*) FROM quota_sched.claim('final-agent', 'soak', max_jobs => 100000);
SELECT count(r.*) FROM quota_sched.job j, LATERAL quota_sched.report(j.id, j.agent, 'STOPPED') r
 WHERE j.job_queue = 'soak' AND j.state IN ('STARTING', 'RUNNING') AND j.stop_reason IS NOT NULL;
SELECT count(r.*) FROM quota_sched.job j, LATERAL quota_sched.report(j.id, j.agent, 'RUNNING') r
 WHERE j.job_queue = 'soak' AND j.state = 'STARTING';
SELECT count(r.*) FROM quota_sched.job j, LATERAL quota_sched.report(j.id, j.agent, 'SUCCEEDED') r
 WHERE j.job_queue = 'soak' AND j.state = 'RUNNING';
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit) VALUES ('final', 'soak', 'lab', 'gpu');
SQL
is($node->safe_psql('postgres',
		"SELECT count(*) FROM quota_sched.job WHERE job_queue = 'soak'"
		  . " AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')"),
	'0', 'no job holds capacity before the final pass');
check_drift('once every job has ended');
is($node->safe_psql('postgres',
		"SELECT count(*) FROM (SELECT FROM quota_sched.held_capacity WHERE job_queue = 'soak'"
		  . " GROUP BY quota_share, capacity_unit"
		  . " HAVING sum(instances) <> 0 OR sum(stopping_instances) <> 0 OR sum(jobs) <> 0) c"),
	'0', 'every counter is back to zero');
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.run_pass('soak')"), '>', 0,
	'the final pass decides');
check_drift('after the final pass');

$node->stop;
done_testing();
