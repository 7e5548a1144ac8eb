# Dump and restore (scheduling.md 10): a database using quota_sched, with jobs of
# several owners in every state scheduling.md 4 names and their history, dumped with
# pg_dump and restored the way doc/operations.md documents
#
#   PGOPTIONS='-c session_replication_role=replica' pg_restore --exit-on-error -d DB FILE
#
# gives back every row of every table unchanged, and the sequences continue
# above the highest dumped id.  Both the custom and the plain format are
# tested, and so is a restore without the replica setting, to show that the
# instruction of doc/operations.md is needed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;

my $replica = '-c session_replication_role=replica';

my $node = PostgreSQL::Test::Cluster->new('dump_restore');
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'quota_sched'\nquota_sched.enabled = off\n");
$node->start;

$node->safe_psql('postgres', 'CREATE DATABASE src');
$node->safe_psql('src', 'CREATE EXTENSION quota_sched');

# Roles are cluster-wide: the restored databases below live in the same
# cluster, so they find them.
$node->safe_psql(
	'src', q{
CREATE ROLE regress_dr_admin;
CREATE ROLE regress_dr_agent;
CREATE ROLE regress_dr_alice;
CREATE ROLE regress_dr_bob;
CREATE ROLE regress_dr_carol;
CREATE ROLE regress_dr_team;
GRANT quota_sched_admin TO regress_dr_admin;
GRANT quota_sched_agent TO regress_dr_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_dr_agent', NULL);
GRANT quota_sched_user TO regress_dr_alice, regress_dr_bob, regress_dr_carol;
GRANT regress_dr_team TO regress_dr_alice;
});

# Configuration, written by the admin.
$node->safe_psql(
	'src', q{
SET ROLE regress_dr_admin;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES
	('dr_env', '{"ml.g5.xlarge": 8, "ml.p4d.24xlarge": 2}'),
	('dr_env_off', '{"ml.g5.xlarge": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout) VALUES
	('dr_queue', 'dr_env', '2 hours'),
	('dr_queue_off', 'dr_env_off', NULL);
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption, submit_role)
VALUES
	('dr_queue', 'team_a', '{"ml.g5.xlarge": 4}', 'LEND_AND_BORROW', 200, true, 'regress_dr_team'),
	('dr_queue', 'team_b', '{"ml.g5.xlarge": 2, "ml.p4d.24xlarge": 2}', 'LEND', -1, false, NULL),
	('dr_queue', 'team_c', '{"ml.g5.xlarge": 2}', 'RESERVE', -1, false, NULL),
	('dr_queue_off', 'idle', '{}', 'LEND', -1, false, NULL);
UPDATE quota_sched.quota_share SET state = 'DISABLED' WHERE job_queue = 'dr_queue_off';
UPDATE quota_sched.job_queue SET state = 'DISABLED' WHERE name = 'dr_queue_off';
UPDATE quota_sched.service_environment SET state = 'DISABLED' WHERE name = 'dr_env_off';
INSERT INTO quota_sched.quota_share (job_queue, name, strategy) VALUES ('dr_queue', 'gone', 'LEND');
DELETE FROM quota_sched.quota_share WHERE job_queue = 'dr_queue' AND name = 'gone';
});
# Those writes are the history of the configuration (config_event): an
# INSERT, UPDATE or DELETE row each, the admin's.
is($node->safe_psql('src', q{
	SELECT string_agg(action || ' ' || count, ', ' ORDER BY action)
	  FROM (SELECT action, count(*) FROM quota_sched.config_event
			 WHERE actor = 'regress_dr_admin' GROUP BY action) a}),
	'DELETE 1, INSERT 9, UPDATE 3', 'src: the configuration\'s history, by the admin');

# Jobs, submitted by their owners.  The payloads carry characters that COPY
# must escape, and one is large enough to be TOASTed.
$node->safe_psql(
	'src', q{
SET ROLE regress_dr_alice;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count,
	payload, max_attempts, preemption_retries, timeout, client_token, tags)
VALUES ('dr_a1', 'dr_queue', 'team_a', 5, 'ml.g5.xlarge', 2,
	'{"command": ["python", "train.py", "--note", "tab\tnewline\nback\\\\slash \"quoted\" é ✓"]}',
	3, 2, '1 hour', 'token-a1', '{"team": "a", "run": 1}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, payload)
VALUES ('dr_a2', 'dr_queue', 'team_a',
	'{"ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}}');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
SELECT 'dr_a3', 'dr_queue', 'team_b', 'ml.p4d.24xlarge',
	jsonb_build_object('blob', string_agg(md5(i::text), ''))
  FROM generate_series(1, 4000) AS i;
RESET ROLE;

SET ROLE regress_dr_bob;
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit)
VALUES ('dr_b1', 'dr_queue', 'team_b', 1, 'ml.g5.xlarge'),
	('dr_b2', 'dr_queue', 'team_b', 2, 'ml.g5.xlarge'),
	('dr_b3', 'dr_queue', 'team_b', 3, 'ml.p4d.24xlarge');
RESET ROLE;

SET ROLE regress_dr_carol;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)
VALUES ('dr_c1', 'dr_queue', 'team_c', 'ml.g5.xlarge', 'token-c1'),
	('dr_c2', 'dr_queue', 'team_c', 'ml.g5.xlarge', NULL);
RESET ROLE;

SET ROLE regress_dr_admin;
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('dr_d1', 'dr_queue', 'team_b', 'ml.g5.xlarge');
RESET ROLE;
});

# Jobs in every state, with history and passes.  This stands in for the
# scheduler and the agents until they exist: as superuser, with
# session_replication_role = replica so that the job triggers neither refuse
# the changes of system columns nor append history, the state and its
# columns are set directly and the matching job_event and pass_log rows are
# inserted by hand.
$node->safe_psql(
	'src', q{
SET session_replication_role = replica;
CREATE FUNCTION pg_temp.move(p_job text, p_to text, p_actor text, p_pass bigint,
							 p_reason text, p_at timestamptz)
RETURNS void LANGUAGE sql AS $$
	INSERT INTO quota_sched.job_event (job_id, at, pass_id, from_state, to_state, reason, actor,
									   job_queue, quota_share, capacity_unit, instance_count,
									   attempt, priority)
	SELECT id, p_at, p_pass, state, p_to, p_reason, p_actor,
		   job_queue, quota_share, capacity_unit, instance_count,
		   1 + failed_attempts + preemption_count + lease_losses, priority
	  FROM quota_sched.job WHERE name = p_job;
	UPDATE quota_sched.job
	   SET state = p_to, status_reason = p_reason, status_reason_at = p_at
	 WHERE name = p_job;
$$;
DO $$
DECLARE
	t0 timestamptz := now() - interval '3 hours';
	p1 bigint;
	p2 bigint;
	p3 bigint;
BEGIN
	INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at, dispatched)
	VALUES ('dr_queue', t0 + '1 min', t0 + '1 min 0.25 s', 7) RETURNING id INTO p1;
	PERFORM pg_temp.move(j, 'SCHEDULED', 'pass', p1, 'dispatched', t0 + '1 min')
	   FROM unnest(ARRAY['dr_a1', 'dr_a2', 'dr_a3', 'dr_b1', 'dr_b2', 'dr_b3', 'dr_d1']) AS j;
	PERFORM pg_temp.move(j, 'STARTING', 'agent-1', NULL, 'claimed', t0 + '2 min')
	   FROM unnest(ARRAY['dr_a1', 'dr_a2', 'dr_a3', 'dr_b2', 'dr_b3', 'dr_d1']) AS j;
	PERFORM pg_temp.move(j, 'RUNNING', 'agent-1', NULL, 'started', t0 + '3 min')
	   FROM unnest(ARRAY['dr_a1', 'dr_a2', 'dr_a3', 'dr_b3', 'dr_d1']) AS j;
	PERFORM pg_temp.move('dr_a3', 'SUCCEEDED', 'agent-1', NULL, 'exit 0', t0 + '30 min');
	PERFORM pg_temp.move('dr_b3', 'FAILED', 'agent-1', NULL, 'exit 1', t0 + '40 min');

	-- carol's reserved share takes its capacity back from alice's dr_a2.
	INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at, dispatched, preempted, requeued)
	VALUES ('dr_queue', t0 + '50 min', t0 + '50 min 0.5 s', 0, 1, 1) RETURNING id INTO p2;
	PERFORM pg_temp.move('dr_a2', 'RUNNABLE', 'pass', p2, 'preempted for dr_c1', t0 + '50 min');
	UPDATE quota_sched.job
	   SET preemption_count = 1, stop_reason = 'CROSS_SHARE_PREEMPTION',
		   stop_requested_at = t0 + '50 min', stopped_at = t0 + '51 min',
		   preempted_for = (SELECT id FROM quota_sched.job WHERE name = 'dr_c1')
	 WHERE name = 'dr_a2';
	-- what the history trigger keeps of that preemption (job_preemption)
	INSERT INTO quota_sched.job_preemption
	SELECT v.id, (SELECT max(e.id) FROM quota_sched.job_event e WHERE e.job_id = v.id),
		   t0 + '50 min', v.job_queue, v.capacity_unit, v.instance_count, v.quota_share, v.owner,
		   v.name, interval '49 min', p.id, p.quota_share, p.owner, p.name, 'CROSS_SHARE_PREEMPTION'
	  FROM quota_sched.job v, quota_sched.job p WHERE v.name = 'dr_a2' AND p.name = 'dr_c1';

	INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at, dispatched, failed)
	VALUES ('dr_queue', t0 + '52 min', t0 + '52 min 0.1 s', 1, 0) RETURNING id INTO p3;
	PERFORM pg_temp.move('dr_c1', 'SCHEDULED', 'pass', p3, 'dispatched', t0 + '52 min');
	PERFORM pg_temp.move('dr_c1', 'STARTING', 'agent-2', NULL, 'claimed', t0 + '53 min');
	PERFORM pg_temp.move('dr_c1', 'RUNNING', 'agent-2', NULL, 'started', t0 + '54 min');

	-- The admin terminates dr_d1.
	PERFORM pg_temp.move('dr_d1', 'FAILED', 'regress_dr_admin', NULL, 'terminated', t0 + '60 min');

	-- The columns that go with each state.  agent-1 claimed as the login
	-- regress_dr_agent; dr_c1 stands for a job claimed before 0.2, with no
	-- agent_role.
	UPDATE quota_sched.job
	   SET scheduled_at = t0 + '1 min', agent = 'agent-1', agent_role = 'regress_dr_agent'
	 WHERE name IN ('dr_a1', 'dr_a2', 'dr_a3', 'dr_b1', 'dr_b2', 'dr_b3', 'dr_d1');
	UPDATE quota_sched.job SET scheduled_at = t0 + '52 min', agent = 'agent-2' WHERE name = 'dr_c1';
	UPDATE quota_sched.job SET promised_at = t0 + '50 min' WHERE name = 'dr_c1';
	UPDATE quota_sched.job SET lease_until = now() + interval '5 min'
	 WHERE name IN ('dr_a1', 'dr_b1', 'dr_b2', 'dr_c1');
	UPDATE quota_sched.job SET started_at = t0 + '3 min'
	 WHERE name IN ('dr_a1', 'dr_a2', 'dr_a3', 'dr_b3', 'dr_d1');
	UPDATE quota_sched.job SET started_at = t0 + '54 min' WHERE name = 'dr_c1';
	UPDATE quota_sched.job SET stopped_at = t0 + '30 min' WHERE name = 'dr_a3';
	UPDATE quota_sched.job SET stopped_at = t0 + '40 min', failed_attempts = 1, stop_reason = 'TIMEOUT'
	 WHERE name = 'dr_b3';
	UPDATE quota_sched.job
	   SET stopped_at = t0 + '61 min', stop_reason = 'TERMINATED',
		   stop_requested_at = t0 + '60 min'
	 WHERE name = 'dr_d1';
END
$$;
-- The counters of held capacity, as the job triggers would have kept them,
-- spread over two stripes: dr_c1's in stripe 3, the others' in stripe 0,
-- with what each held this day, week and month (scheduling.md 3.11).
INSERT INTO quota_sched.held_capacity
SELECT job_queue, quota_share, capacity_unit, 0, sum(instance_count),
	   coalesce(sum(instance_count) FILTER (WHERE stop_reason IS NOT NULL), 0), count(*),
	   now() - interval '5 min', 600, 1200.5, 86400
  FROM quota_sched.job
 WHERE state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND name <> 'dr_c1'
 GROUP BY 1, 2, 3;
INSERT INTO quota_sched.held_capacity
SELECT job_queue, quota_share, capacity_unit, 3, instance_count, 0, 1, now() - interval '1 min', 60, 60, 60
  FROM quota_sched.job WHERE name = 'dr_c1';
-- The passes of dr_queue passed over dr_a2, whose row a user held locked.
INSERT INTO quota_sched.queue_status (job_queue, passed_over, passed_over_since, passed_over_passes)
SELECT 'dr_queue', ARRAY[id], now() - interval '1 min', 4 FROM quota_sched.job WHERE name = 'dr_a2';
-- The hourly rollup of the hours before this one (the jobs' history began
-- three hours ago).
SELECT quota_sched.rollup();
-- Who lent to whom in an hour before, as rollup() writes it (the history's
-- configuration is of now: nothing was lent in it): team_b lent team_a,
-- and the unassigned capacity did.
INSERT INTO quota_sched.lending_hourly
VALUES ('dr_queue', 'ml.g5.xlarge', date_trunc('hour', now()) - interval '5 hours', 'team_b', 'team_a', 1800.5),
	('dr_queue', 'ml.g5.xlarge', date_trunc('hour', now()) - interval '5 hours', NULL, 'team_a', 0.25);
-- The memory of borrowing (0.3, scheduling.md 3.12) a pass of a half-life
-- of 6 hours left, and a change not read yet.
INSERT INTO quota_sched.borrow_memory
VALUES ('dr_queue', 'team_a', 'ml.g5.xlarge', '6 hours', now() - interval '10 min', 3, 2, 5400.125);
INSERT INTO quota_sched.held_change
VALUES ('dr_queue', 'team_a', 'ml.g5.xlarge', now() - interval '2 min', -1);
-- The agents (0.3): agent-1 registered by its login, draining, with the
-- lease of its last heartbeat; an external launcher with no bound that
-- took no lease yet.
INSERT INTO quota_sched.agent (name, login, job_queue, capacity_unit, instances, state,
							   registered_at, last_seen, lease)
VALUES ('agent-1', 'regress_dr_agent', 'dr_queue', 'ml.g5.xlarge', 4, 'DRAINING',
		now() - interval '1 hour', now() - interval '1 min', '5 minutes'),
	   ('launcher-1', 'regress_dr_agent', 'dr_queue', 'ml.p4d.24xlarge', NULL, 'ACTIVE',
		now() - interval '2 hours', now() - interval '2 hours', NULL);
-- The attempts agent-1 told of (0.3, job_attempt): where they ran, their
-- exit codes and the last of their output; dr_c1's attempt runs.
INSERT INTO quota_sched.job_attempt (job_id, attempt, agent, host, log_path, handle, exit_code,
									 output, started_at, ended_at)
SELECT id, 1, agent, 'gpu-host-1', '/var/lib/quota-sched-agent/logs/' || id || '/attempt-1.log',
	   CASE WHEN name = 'dr_c1' THEN 'arn:aws:sagemaker:training-job/dr-c1' END,
	   CASE name WHEN 'dr_a3' THEN 0 WHEN 'dr_b3' THEN 1 END,
	   CASE name WHEN 'dr_a3' THEN E'epoch 3: loss 0.12\ndone\n'
				 WHEN 'dr_b3' THEN E'Traceback (most recent call last):\nMemoryError\n' END,
	   started_at, CASE WHEN state IN ('SUCCEEDED', 'FAILED') THEN status_reason_at END
  FROM quota_sched.job WHERE name IN ('dr_a3', 'dr_b3', 'dr_c1');
-- A job placed on hosts (0.4, job_part, scheduling.md 3.14): dr_a3 ran as
-- one part on agent-1, which ended SUCCEEDED.
INSERT INTO quota_sched.job_part (job_id, placed_at, attempt, rank, agent, address, instances,
								  state, claimed_at, ended_at, ended_as, exit_code)
SELECT id, scheduled_at, 1, 0, 'agent-1', 'gpu-host-1', instance_count, 'ENDED', scheduled_at,
	   status_reason_at, 'SUCCEEDED', 0
  FROM quota_sched.job WHERE name = 'dr_a3';
UPDATE quota_sched.job SET part_agents = '{agent-1}', part_instances = ARRAY[instance_count]
 WHERE name = 'dr_a3';
-- dr_a1 runs as one part on agent-1 (0.4); what it holds there, as the job
-- triggers would have counted it and a pass folded it (host_held, with
-- the fold's mark in host_held_change; issue 39, item 6), and a
-- generation of dr_queue's agents (agent_change) and of its classes of
-- placement constraints (constrained_change).
INSERT INTO quota_sched.job_part (job_id, placed_at, attempt, rank, agent, address, instances,
								  state, claimed_at, lease_until, agent_role)
SELECT id, scheduled_at, 1, 0, 'agent-1', 'gpu-host-1', instance_count, 'RUNNING', scheduled_at,
	   lease_until, agent_role
  FROM quota_sched.job WHERE name = 'dr_a1';
UPDATE quota_sched.job SET part_agents = '{agent-1}', part_instances = ARRAY[instance_count]
 WHERE name = 'dr_a1';
INSERT INTO quota_sched.host_held
SELECT job_queue, capacity_unit, 'agent-1', instance_count, 0
  FROM quota_sched.job WHERE name = 'dr_a1';
INSERT INTO quota_sched.host_held_change (job_queue, generation)
VALUES ('dr_queue', nextval('quota_sched.host_held_change_seq'));
INSERT INTO quota_sched.agent_change VALUES ('dr_queue', nextval('quota_sched.agent_change_seq'));
INSERT INTO quota_sched.constrained_change
VALUES ('dr_queue', nextval('quota_sched.constrained_change_seq'));
});

is( $node->safe_psql('src',
		'SELECT string_agg(DISTINCT state, \',\' ORDER BY state) FROM quota_sched.job'),
	'FAILED,RUNNABLE,RUNNING,SCHEDULED,STARTING,SUCCEEDED',
	'src has jobs in every state of scheduling.md 4');
is( $node->safe_psql('src',
		'SELECT string_agg(DISTINCT owner, \',\' ORDER BY owner) FROM quota_sched.job'),
	'regress_dr_admin,regress_dr_alice,regress_dr_bob,regress_dr_carol',
	'src has jobs of several owners');
is( $node->safe_psql('src',
		q{SELECT string_agg(DISTINCT coalesce(agent_role, '-'), ',' ORDER BY coalesce(agent_role, '-'))
		    FROM quota_sched.job WHERE agent IS NOT NULL}),
	'-,regress_dr_agent', 'src has claimed jobs with and without an agent_role');
# 9 submissions; 7 + 6 + 5 moves of the first pass and agent-1, an end and
# a failure; 1 preemption; 3 moves of dr_c1; 1 termination.
is($node->safe_psql('src', 'SELECT count(*) FROM quota_sched.job_event'),
	'34', 'src history: the replica-mode updates appended no history of their own');

# Every row of every table of the schema, by table; the sequences.
sub schema_tables
{
	my ($db) = @_;
	return split /\n/, $node->safe_psql($db,
		q{SELECT relname FROM pg_class
		   WHERE relnamespace = 'quota_sched'::regnamespace AND relkind IN ('r', 'p')
		   ORDER BY 1});
}

sub table_rows
{
	my ($db) = @_;
	my %rows;
	foreach my $t (schema_tables($db))
	{
		$rows{$t} = $node->safe_psql($db,
			qq{SELECT coalesce(string_agg(t::text, E'\\n' ORDER BY t::text), '')
			     FROM quota_sched.$t t});
	}
	return \%rows;
}

sub sequence_values
{
	my ($db) = @_;
	my %values;
	my @seqs = split /\n/, $node->safe_psql($db,
		q{SELECT relname FROM pg_class
		   WHERE relnamespace = 'quota_sched'::regnamespace AND relkind = 'S' ORDER BY 1});
	foreach my $s (@seqs)
	{
		$values{$s} = $node->safe_psql($db,
			"SELECT last_value || ' ' || is_called FROM quota_sched.$s");
	}
	return \%values;
}

# The privileges of the schema's objects: the restore must not lose a grant
# or add one (nothing to PUBLIC).
my $acl_query = q{
	SELECT string_agg(format('%s %s %s', relname, relacl,
		(SELECT string_agg(attname || '=' || attacl::text, ',' ORDER BY attnum)
		   FROM pg_attribute WHERE attrelid = c.oid AND attacl IS NOT NULL)), E'\n' ORDER BY relname)
	  FROM pg_class c WHERE relnamespace = 'quota_sched'::regnamespace};

my $src_rows = table_rows('src');
my $src_seqs = sequence_values('src');
my $src_acl  = $node->safe_psql('src', $acl_query);
is(scalar(keys %$src_rows), 25, 'src: 25 tables in schema quota_sched');
is($node->safe_psql('src', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'), '0',
	'src: the counters of held capacity match the jobs');
is($node->safe_psql('src', 'SELECT count(*) FROM quota_sched.host_held_drift()'), '0',
	'src: the counters of what the hosts hold match the jobs');
is(scalar(keys %$src_seqs), 8, 'src: 8 sequences in schema quota_sched');
foreach my $t (sort keys %$src_rows)
{
	isnt($src_rows->{$t}, '', "src: table $t has rows");
}

my ($max_job, $max_event, $max_pass, $max_config) = split /\|/, $node->safe_psql('src',
	q{SELECT (SELECT max(id) FROM quota_sched.job), (SELECT max(id) FROM quota_sched.job_event),
	         (SELECT max(id) FROM quota_sched.pass_log),
	         (SELECT max(id) FROM quota_sched.config_event)});
my $alice_jobs = $node->safe_psql('src',
	q{SET ROLE regress_dr_alice; SELECT string_agg(name, ',' ORDER BY name) FROM quota_sched.job});
is($alice_jobs, 'dr_a1,dr_a2,dr_a3', 'src: alice sees her own jobs only');

# Compares a restored database with src, table by table and row by row.
sub compare_with_src
{
	my ($db) = @_;
	my $rows = table_rows($db);
	is(scalar(keys %$rows), 25, "$db: 25 tables compared");
	is($node->safe_psql($db, 'SELECT count(*) FROM quota_sched.held_capacity_drift()'), '0',
		"$db: the counters of held capacity match the jobs");
	is_deeply([ sort keys %$rows ], [ sort keys %$src_rows ], "$db: the same tables as src");
	foreach my $t (sort keys %$src_rows)
	{
		is($rows->{$t}, $src_rows->{$t}, "$db: every row of $t as in src");
	}
	my $seqs = sequence_values($db);
	is(scalar(keys %$seqs), 8, "$db: 8 sequences compared");
	foreach my $s (sort keys %$src_seqs)
	{
		is($seqs->{$s}, $src_seqs->{$s}, "$db: sequence $s as in src");
	}
	is($node->safe_psql($db, $acl_query), $src_acl, "$db: privileges as in src");
	is( $node->safe_psql($db,
			q{SET ROLE regress_dr_alice;
			  SELECT string_agg(name, ',' ORDER BY name) FROM quota_sched.job}),
		$alice_jobs, "$db: row-level security still shows alice her own jobs only");
}

# After a restore: new rows continue above the highest dumped ids, and the
# triggers work again (owner, RUNNABLE, history of the submission).
sub continues_after_restore
{
	my ($db) = @_;
	$node->safe_psql($db,
		q{SET ROLE regress_dr_alice;
		  INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
		  VALUES ('dr_after_restore', 'dr_queue', 'team_a', 'ml.g5.xlarge');});
	my ($id, $owner, $state) = split /\|/, $node->safe_psql($db,
		q{SELECT id, owner, state FROM quota_sched.job WHERE name = 'dr_after_restore'});
	cmp_ok($id, '>', $max_job, "$db: a new job's id is above the highest dumped id");
	is("$owner $state", 'regress_dr_alice RUNNABLE', "$db: a new job is alice's and RUNNABLE");
	my ($event_id, $event) = split /\|/, $node->safe_psql($db,
		qq{SELECT id, coalesce(from_state, '-') || ' ' || to_state || ' ' || actor
		     FROM quota_sched.job_event WHERE job_id = $id});
	cmp_ok($event_id, '>', $max_event,
		"$db: the new job's history row id is above the highest dumped one");
	is($event, '- RUNNABLE regress_dr_alice', "$db: the submission is in the history");
	my $pass_id = $node->safe_psql($db,
		q{INSERT INTO quota_sched.pass_log (job_queue, started_at, finished_at)
		  VALUES ('dr_queue', now(), now()) RETURNING id});
	cmp_ok($pass_id, '>', $max_pass, "$db: a new pass_log id is above the highest dumped one");
	# the history triggers of the configuration work again too
	$node->safe_psql($db,
		q{SET ROLE regress_dr_admin;
		  UPDATE quota_sched.quota_share SET weight = 2
		   WHERE job_queue = 'dr_queue' AND name = 'team_c';});
	my ($config_id, $config) = split /\|/, $node->safe_psql($db,
		q{SELECT id, concat_ws(' ', action, name, old ->> 'weight', new ->> 'weight', actor)
		    FROM quota_sched.config_event ORDER BY id DESC LIMIT 1});
	cmp_ok($config_id, '>', $max_config,
		"$db: a configuration change's history row id is above the highest dumped one");
	is($config, 'UPDATE team_c 1 2 regress_dr_admin', "$db: the change is in the configuration's history");
}

my $tmp = PostgreSQL::Test::Utils::tempdir;

#
# Custom format, restored as doc/operations.md documents.
#
$node->command_ok([ 'pg_dump', '-Fc', '-f', "$tmp/src.dump", '-d', 'src' ],
	'pg_dump -Fc src');
$node->safe_psql('postgres', 'CREATE DATABASE dst');
{
	local $ENV{PGOPTIONS} = $replica;
	$node->command_ok(
		[ 'pg_restore', '--exit-on-error', '-d', 'dst', "$tmp/src.dump" ],
		'pg_restore under session_replication_role = replica');
}
compare_with_src('dst');
continues_after_restore('dst');

#
# A dump of a live database holds the jobs its agents held at the dump, with
# live leases.  The procedure of doc/operations.md ("Held jobs after a
# restore"), run in the restored database before any agent or worker uses
# it: every STARTING or RUNNING job is released as its agent by the
# superuser, which costs no attempt; the old agent's heartbeat then gives
# it nothing (its agent kills what it still runs), and its reports are
# refused.
#
my $held_query = q{
	SELECT string_agg(concat_ws(' ', name, state, coalesce(agent, '-'),
			   lease_until IS NOT NULL AND lease_until > now(),
			   failed_attempts, preemption_count, lease_losses), ', ' ORDER BY name)
	  FROM quota_sched.job WHERE name IN ('dr_a1', 'dr_b1', 'dr_b2', 'dr_c1')};
is($node->safe_psql('dst', $held_query),
	'dr_a1 RUNNING agent-1 t 0 0 0, dr_b1 SCHEDULED agent-1 t 0 0 0, '
	  . 'dr_b2 STARTING agent-1 t 0 0 0, dr_c1 RUNNING agent-2 t 0 0 0',
	'dst: the restored jobs are held by the dumped agents, with live leases');
is($node->safe_psql('dst', q{
	SELECT string_agg(j.name || ' ' || r.state, ', ' ORDER BY j.id)
	  FROM quota_sched.job j
		   CROSS JOIN LATERAL quota_sched.release(j.id, j.agent, 'requeued after a restore') r
	 WHERE j.state IN ('STARTING', 'RUNNING')}),
	'dr_a1 RUNNABLE, dr_b2 RUNNABLE, dr_c1 RUNNABLE',
	'dst: the documented release requeues every STARTING and RUNNING job');
is($node->safe_psql('dst', $held_query),
	'dr_a1 RUNNABLE - f 0 0 0, dr_b1 SCHEDULED agent-1 t 0 0 0, '
	  . 'dr_b2 RUNNABLE - f 0 0 0, dr_c1 RUNNABLE - f 0 0 0',
	'dst: no agent, no lease, no attempt counted (a dispatched job is left to its claim)');
is($node->safe_psql('dst', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'), '0',
	'dst: the counters of held capacity match the jobs after the release');
is($node->safe_psql('dst', q{SET ROLE regress_dr_agent; SELECT count(*) FROM quota_sched.heartbeat('agent-1')}),
	'0', 'dst: the old agent\'s heartbeat gives it nothing (it kills what it still runs)');
my ($ret, $stdout, $stderr) = $node->psql('dst', q{
	SET ROLE regress_dr_agent;
	SELECT state FROM quota_sched.report((SELECT id FROM quota_sched.job WHERE name = 'dr_a1'),
										 'agent-1', 'SUCCEEDED')});
isnt($ret, 0, 'dst: the old agent\'s report of a released job is refused');
like($stderr, qr/job \d+ is not held by agent "agent-1"/, 'dst: as a job it does not hold (55000)');

#
# Plain format piped through psql, with the same setting.
#
$node->safe_psql('postgres', 'CREATE DATABASE dst_plain');
{
	local $ENV{PGHOST}     = $node->host;
	local $ENV{PGPORT}     = $node->port;
	local $ENV{PGOPTIONS}  = $replica;
	my $stderr = '';
	my $ok = IPC::Run::run(
		[ 'pg_dump', '-Fp', '-d', 'src' ], '|',
		[ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'dst_plain' ],
		'>', '/dev/null', '2>', \$stderr);
	ok($ok, 'pg_dump -Fp src | psql under session_replication_role = replica');
	is($stderr, '', 'plain restore printed no error');
}
compare_with_src('dst_plain');
continues_after_restore('dst_plain');

#
# Without the replica setting the restore does not give the rows back.
# pg_dump restores the data of the configuration first, before its history
# (config_event): the tables that refer to job_queue (agent, quota_share,
# ...) put the queues and their environments ahead of everything else.  The
# history triggers fire on their COPYs and record each row as a new INSERT,
# with an id from a sequence not yet restored, which the history in the
# dump already has: the COPY of config_event fails, and the history of the
# configuration is lost, the restore's own INSERTs in its place.  The job
# table's BEFORE INSERT trigger refuses every job row, since the dump sets
# the columns the system keeps (id, owner, state, ...).
#
$node->safe_psql('postgres', 'CREATE DATABASE dst_bad');
$node->command_fails_like(
	[ 'pg_restore', '--exit-on-error', '-d', 'dst_bad', "$tmp/src.dump" ],
	qr/duplicate key value violates unique constraint "config_event_pkey"/,
	'pg_restore without session_replication_role = replica fails on the configuration');

# Without --exit-on-error it goes on past the errors and loses the
# configuration and the jobs, leaving their history behind without them.
$node->safe_psql('postgres', 'CREATE DATABASE dst_bad_continue');
{
	my ($stdout, $stderr);
	local %ENV = (%ENV, PGHOST => $node->host, PGPORT => $node->port);
	delete $ENV{PGOPTIONS};
	my $ok = IPC::Run::run([ 'pg_restore', '-d', 'dst_bad_continue', "$tmp/src.dump" ],
		'>', \$stdout, '2>', \$stderr);
	ok(!$ok, 'pg_restore without replica and without --exit-on-error reports errors');
	like($stderr, qr/errors ignored on restore/, 'pg_restore counts the ignored errors');
	like($stderr, qr/duplicate key value violates unique constraint "config_event_pkey"/,
		'without replica: the configuration rows are recorded again, over the restored history');
	like($stderr, qr/column "[a-z_]+" of a job is set by quota_sched, not by the submitter/,
		'without replica: the job rows are refused');
}
my $bad_rows = table_rows('dst_bad_continue');
is($bad_rows->{job}, '', 'without replica: no job is restored');
is($node->safe_psql('dst_bad_continue',
		'SELECT count(*) > 0 FROM quota_sched.job_event e'
		. ' WHERE NOT EXISTS (SELECT 1 FROM quota_sched.job j WHERE j.id = e.job_id)'),
	't', 'without replica: the history comes back without its jobs');
isnt($src_rows->{service_environment}, '', 'src has environments');
is($bad_rows->{service_environment}, $src_rows->{service_environment},
	'without replica: the environments come back');
is($node->safe_psql('src', q{SELECT count(*) > 0 FROM quota_sched.config_event WHERE action <> 'INSERT'}),
	't', 'src has a history of the configuration beyond its INSERTs');
is($node->safe_psql('dst_bad_continue',
		q{SELECT count(*) > 0 AND bool_and(action = 'INSERT')
		    FROM quota_sched.config_event}),
	't', 'without replica: the history of the configuration is lost, the restore\'s INSERTs in its place');

$node->stop;
done_testing();
