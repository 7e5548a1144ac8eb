# Updates of populated databases of every earlier release to the current
# version ($current), compared with a fresh install, which runs one script
# (quota_sched--$current.sql, made from sql/).  PostgreSQL chains the
# released updates (sql/released/) and the update under work: 0.1 goes
# through 0.2 and 0.3, 0.2 through 0.3.  One library serves one schema
# (doc/releasing.md): each database is filled with its own release's
# library, built from git history (QsRelease), in a private copy of the
# PostgreSQL installation the tests run; then the current build is
# installed there and the server started again, as an operator does, and
# each database is updated.
#
#   1. "source", at the current version, holds jobs driven by the real API
#      into every interesting state: RUNNABLE (waiting, and one
#      misconfigured), SCHEDULED (unclaimed), STARTING, RUNNING, RUNNING
#      with a pending preemption stop (its preemptor promised), RUNNING with
#      a pending TIMEOUT stop, SUCCEEDED, FAILED, over two queues and two
#      capacity units, with their history and passes;
#   2. with the library of 0.1: "old", at 0.1, gets the rows of source over
#      the columns the 0.1 tables have (as a restore writes them,
#      session_replication_role = replica: the job triggers neither refuse
#      the system columns nor add history), the sequences' positions, and
#      no counters; "long" a queue and a job whose intervals 0.1 took and
#      0.2 bounds;
#   3. with the library of 0.2: "two", at 0.2, the rows of source without
#      what 0.3 added, and an hourly rollup 0.2 made;
#   4. with the library of 0.3: "three", at 0.3, every row of source but
#      agent_access's (0.4), without the columns 0.4 added to tables of 0.3,
#      and registrations of agents of 0.3; and a queue of its own whose
#      jobs run (one STARTING) on two agents of 4 instances registered and
#      claiming as the agent of 0.3 does (section 11);
#   5. with the current library, before ALTER EXTENSION UPDATE: every call
#      in those databases is refused (55QS0), naming both versions, the
#      update as its hint (section 8);
#   then each database is updated, and:
#   - the counters of held capacity the update creates match the jobs, and
#     it changed no row of any 0.1 table; the history of the configuration
#     starts with one BASELINE row per environment, queue and share, and
#     records the changes made after the update (section 3);
#   - each updated schema is the schema of a fresh install, by the catalogs
#     and by a normalised pg_dump --schema-only of the members (4, 9, 10);
#   - the scheduler goes on with the old data: the agent's reports, a pass
#     that dispatches the waiting and the promised jobs, a new submission,
#     with the counters consistent after each step; the jobs claimed in 0.1
#     have no agent_role (any agent login may act on them), those claimed
#     after the update record the claiming role, and another login may not
#     act on them (5);
#   - timeouts beyond 365 days are bounded (6);
#   - the policies of 0.2 on the old data: a member of a share's
#     submit_role sees, explains, reprioritises and terminates a
#     teammate's job of 0.1 (in 0.1 he saw nothing of it) (7);
#   - what each later release made of the rows of 0.2 and 0.3 (9, 10);
#   - the jobs running on the agents of 0.3 keep running: their agents
#     heartbeat, report and claim as before, job_parts derives their one
#     part each (the update writes none), and the pass counts them on
#     their hosts: a job with no room on them waits WAITING_FOR_HOSTS, one
#     with room goes where it is, and no host is booked beyond its
#     instances (11).
# As a bonus, the counters that the triggers kept in "source" while the
# jobs moved must equal those that the update from 0.1 computes from the
# same jobs.
use strict;
use warnings;
use File::Basename;
use FindBin;
use lib $FindBin::RealBin;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes;
use QsRelease;

# the version the sources make (quota_sched.control's default_version) and
# the releases a database updates from
my ($current, $previous, $from) = versions();
# the database this test fills at each of them
my %release_of = (old => '0.1', two => '0.2', three => '0.3');
is_deeply([ sort values %release_of ], $from,
	'a populated database of every release a database updates from: ' . join(', ', @$from));

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $pg_config = private_install("$tmp/pg");
my $node = PostgreSQL::Test::Cluster->new('upgrade', install_path => dirname(release_bin($pg_config)));
$node->init;
$node->append_conf('postgresql.conf',
	"shared_preload_libraries = 'quota_sched'\nquota_sched.enabled = off\n");
$node->start;

# switch_library(VERSION): the server stopped, that release (or the current
# build, for $current) installed, the server started again
sub switch_library
{
	my ($version) = @_;
	$node->stop;
	if ($version eq $current) { install_current($pg_config); }
	else { install_release($version, $pg_config); }
	$node->start;
	return;
}


sub sql
{
	my ($db, $query) = @_;
	return $node->safe_psql($db, $query);
}

sub as_role
{
	my ($db, $role, $query) = @_;
	return $node->safe_psql($db, "SET ROLE $role;\n$query");
}

# A pass over a queue, run by the admin: one line "job action [reason]" per
# decision, in the order decided.
sub run_pass_of
{
	my ($db, $queue) = @_;
	return as_role($db, 'regress_up_admin', qq{
		SELECT string_agg(concat_ws(' ', j.name, p.action, p.reason), E'\\n' ORDER BY p.n)
		  FROM quota_sched.run_pass('$queue') WITH ORDINALITY
			   AS p(job_id, action, quota_share, reason, n)
		  JOIN quota_sched.job j ON j.id = p.job_id});
}

# The agent "agent-1" claims (leases of an hour: none expires during the
# test) and reports, as the login regress_up_agent (report_as: as another).
sub claim
{
	my ($db, $queue) = @_;
	return as_role($db, 'regress_up_agent', qq{
		SELECT string_agg(name || ' ' || state, ', ' ORDER BY name COLLATE "C")
		  FROM quota_sched.claim('agent-1', '$queue', max_jobs => 10, lease => '1 hour')});
}

sub report_as
{
	my ($db, $role, $job, $state) = @_;
	return as_role($db, $role, qq{
		SELECT state FROM quota_sched.report(
			(SELECT id FROM quota_sched.job WHERE name = '$job'), 'agent-1', '$state')});
}

sub report
{
	my ($db, $job, $state) = @_;
	return report_as($db, 'regress_up_agent', $job, $state);
}

# The jobs' agent_role, as "name role" lines ('-' for none).
sub agent_roles
{
	my ($db, $names) = @_;
	return sql($db, qq{
		SELECT string_agg(name || ' ' || coalesce(agent_role, '-'), E'\n' ORDER BY name COLLATE "C")
		  FROM quota_sched.job WHERE name = ANY ('{$names}'::text[])});
}

# Every job: name, state, stop_reason, the job it stops for, whether it is
# promised, status_reason.
sub jobs
{
	my ($db) = @_;
	return sql($db, q{
		SELECT string_agg(concat_ws(' ', j.name, j.state, coalesce(j.stop_reason, '-'),
									coalesce('for:' || f.name, '-'),
									CASE WHEN j.promised_at IS NULL THEN '-' ELSE 'promised' END,
									coalesce(j.status_reason, '-')),
						  E'\n' ORDER BY j.name COLLATE "C")
		  FROM quota_sched.job j LEFT JOIN quota_sched.job f ON f.id = j.preempted_for});
}

# The held capacity per queue, share and unit, recounted here from the jobs
# (scheduling.md 3.1: SCHEDULED, STARTING and RUNNING jobs hold their
# instances, also while a stop is pending): "queue share unit instances
# stopping_instances jobs".
my $recount = q{
	SELECT coalesce(string_agg(concat_ws(' ', job_queue, quota_share, capacity_unit,
										 instances, stopping, jobs),
							   E'\n' ORDER BY job_queue COLLATE "C", quota_share COLLATE "C",
											  capacity_unit COLLATE "C"), '')
	  FROM (SELECT job_queue, quota_share, capacity_unit,
				   sum(instance_count) AS instances,
				   sum(CASE WHEN stop_reason IS NULL THEN 0 ELSE instance_count END) AS stopping,
				   count(*) AS jobs
			  FROM quota_sched.job
			 WHERE state = ANY (ARRAY['SCHEDULED', 'STARTING', 'RUNNING'])
			 GROUP BY 1, 2, 3) r};

# The counters as kept: held_capacity summed over its stripes, in the same
# form; all-zero counters (left behind when a share's last job
# ended) are no holding and are left out.
my $kept = q{
	SELECT coalesce(string_agg(concat_ws(' ', job_queue, quota_share, capacity_unit,
										 instances, stopping, jobs),
							   E'\n' ORDER BY job_queue COLLATE "C", quota_share COLLATE "C",
											  capacity_unit COLLATE "C"), '')
	  FROM (SELECT job_queue, quota_share, capacity_unit, sum(instances) AS instances,
				   sum(stopping_instances) AS stopping, sum(jobs) AS jobs
			  FROM quota_sched.held_capacity
			 GROUP BY 1, 2, 3) k
	 WHERE (instances, stopping, jobs) <> (0, 0, 0)};

# After a step in 0.2: the drift function finds nothing, and the counters
# as kept equal the recount.
sub counters_consistent
{
	my ($db, $step) = @_;
	is(as_role($db, 'regress_up_admin',
			'SELECT count(*) FROM quota_sched.held_capacity_drift()'),
		'0', "$db, $step: held_capacity_drift() returns no row");
	is(sql($db, $kept), sql($db, $recount),
		"$db, $step: the kept counters equal a recount from the jobs");
}

# The tables of the schema with their columns, as "a, b, c" in column order.
sub table_columns
{
	my ($db) = @_;
	my %columns;
	foreach my $line (split /\n/, sql($db, q{
		SELECT c.relname || ':' || string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum)
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		 WHERE c.relnamespace = 'quota_sched'::regnamespace AND c.relkind = 'r'
		   AND a.attnum > 0 AND NOT a.attisdropped
		 GROUP BY c.relname}))
	{
		my ($table, $cols) = split /:/, $line, 2;
		$columns{$table} = $cols;
	}
	return \%columns;
}

# Every row of each given table over the given columns, as jsonb text, sorted.
sub table_rows
{
	my ($db, $columns) = @_;
	my %rows;
	foreach my $t (sort keys %$columns)
	{
		# the update adds counters' rows holding nothing (stripe 0 of a
		# share and unit that held capacity this month and had none)
		my $where = $t eq 'held_capacity'
		  ? 'WHERE (instances, stopping_instances, jobs) <> (0, 0, 0)' : '';
		$rows{$t} = sql($db, qq{
			SELECT coalesce(string_agg(to_jsonb(x)::text, E'\\n' ORDER BY to_jsonb(x)::text), '')
			  FROM (SELECT $columns->{$t} FROM quota_sched.$t $where) x});
	}
	return \%rows;
}

# Each job as to_jsonb over the given columns, by id.
sub job_rows
{
	my ($db, $columns) = @_;
	my %rows = map { split /\|/, $_, 2 } split /\n/, sql($db, qq{
		SELECT id || '|' || to_jsonb(x)::text FROM (SELECT $columns FROM quota_sched.job) x});
	return \%rows;
}

sub sequence_values
{
	my ($db) = @_;
	my %values;
	foreach my $s (split /\n/, sql($db, q{
		SELECT relname FROM pg_class
		 WHERE relnamespace = 'quota_sched'::regnamespace AND relkind = 'S'}))
	{
		$values{$s} = sql($db, "SELECT last_value || ' ' || is_called FROM quota_sched.$s");
	}
	return \%values;
}

# Lines of two texts that only one of them has (for diagnostics).
sub line_diff
{
	my ($got, $want) = @_;
	my %g = map { $_ => 1 } split /\n/, $got;
	my %w = map { $_ => 1 } split /\n/, $want;
	my @out = ((map { "only in upgraded: $_" } grep { !$w{$_} } split /\n/, $got),
		(map { "only in fresh:    $_" } grep { !$g{$_} } split /\n/, $want));
	return @out ? join("\n", @out) : 'the same lines in another order';
}

#
# The schema, described from the catalogs.  pg_dump does not dump the
# members of an extension (only CREATE EXTENSION and the privileges changed
# since), so the definitions come from pg_get_*def and the catalogs.
# Normalisation: objects are named, never numbered (no OIDs); each section's
# lines are sorted (the catalogs' order is the order of creation, which an
# upgrade may change; a column's position is a field of its line); columns
# are numbered by position among the live ones (an upgrade that drops a
# column leaves a dropped attribute behind, a fresh install not); internal
# triggers (those of foreign keys, named after OIDs) are left out, their
# constraints being compared.  Nothing else is stripped: data-dependent
# catalog fields (relpages, reltuples, sequence positions) are not read.
#
my %catalog = (
	'1 relations' => q{
		SELECT format('%s kind=%s persistence=%s rls=%s force_rls=%s options=%s owner=%s acl=%s',
					  relname, relkind, relpersistence, relrowsecurity, relforcerowsecurity,
					  reloptions, pg_get_userbyid(relowner), relacl)
		  FROM pg_class WHERE relnamespace = 'quota_sched'::regnamespace},
	'2 columns' => q{
		SELECT format('%s.%s #%s %s notnull=%s default=%s identity=%s generated=%s collation=%s '
					  'storage=%s compression=%s acl=%s',
					  c.relname, a.attname,
					  row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum),
					  format_type(a.atttypid, a.atttypmod), a.attnotnull,
					  pg_get_expr(d.adbin, d.adrelid), a.attidentity, a.attgenerated,
					  a.attcollation::regcollation, a.attstorage, a.attcompression, a.attacl)
		  FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid
		  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		 WHERE c.relnamespace = 'quota_sched'::regnamespace AND a.attnum > 0
		   AND NOT a.attisdropped},
	'3 constraints' => q{
		SELECT format('%s %s %s type=%s %s deferrable=%s deferred=%s validated=%s',
					  conrelid::regclass, conname, contype, contypid::regtype,
					  pg_get_constraintdef(oid), condeferrable, condeferred, convalidated)
		  FROM pg_constraint WHERE connamespace = 'quota_sched'::regnamespace},
	'4 indexes' => q{
		SELECT format('%s unique=%s primary=%s clustered=%s valid=%s replident=%s',
					  pg_get_indexdef(i.indexrelid), i.indisunique, i.indisprimary,
					  i.indisclustered, i.indisvalid, i.indisreplident)
		  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
		 WHERE c.relnamespace = 'quota_sched'::regnamespace},
	'5 functions' => q{
		SELECT format(E'%s kind=%s owner=%s acl=%s\n%s', p.oid::regprocedure, p.prokind,
					  pg_get_userbyid(p.proowner), p.proacl,
					  CASE WHEN p.prokind IN ('f', 'p') THEN pg_get_functiondef(p.oid) END)
		  FROM pg_proc p WHERE p.pronamespace = 'quota_sched'::regnamespace},
	'6 triggers' => q{
		SELECT format('%s enabled=%s', pg_get_triggerdef(t.oid), t.tgenabled)
		  FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		 WHERE c.relnamespace = 'quota_sched'::regnamespace AND NOT t.tgisinternal},
	'7 policies' => q{
		SELECT format('%s on %s cmd=%s permissive=%s roles=%s using=%s check=%s',
					  p.polname, p.polrelid::regclass, p.polcmd, p.polpermissive,
					  (SELECT string_agg(CASE r WHEN 0 THEN 'PUBLIC' ELSE pg_get_userbyid(r) END,
										 ',' ORDER BY CASE r WHEN 0 THEN 'PUBLIC'
														   ELSE pg_get_userbyid(r)::text END)
						 FROM unnest(p.polroles) AS r),
					  pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid))
		  FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid
		 WHERE c.relnamespace = 'quota_sched'::regnamespace},
	'8 views' => q{
		SELECT format(E'%s\n%s', relname, pg_get_viewdef(oid))
		  FROM pg_class WHERE relnamespace = 'quota_sched'::regnamespace AND relkind IN ('v', 'm')},
	'9 sequences' => q{
		SELECT format('%s type=%s start=%s increment=%s min=%s max=%s cache=%s cycle=%s owned_by=%s',
					  c.relname, s.seqtypid::regtype, s.seqstart, s.seqincrement, s.seqmin,
					  s.seqmax, s.seqcache, s.seqcycle,
					  (SELECT d.refobjid::regclass || '.' || a.attname
						 FROM pg_depend d
						 JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
						WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
						  AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')))
		  FROM pg_sequence s JOIN pg_class c ON c.oid = s.seqrelid
		 WHERE c.relnamespace = 'quota_sched'::regnamespace},
	'10 types' => q{
		SELECT format('%s type=%s owner=%s acl=%s base=%s labels=%s', t.oid::regtype, t.typtype,
					  pg_get_userbyid(t.typowner), t.typacl, nullif(t.typbasetype, 0)::regtype,
					  (SELECT string_agg(enumlabel, ',' ORDER BY enumsortorder)
						 FROM pg_enum WHERE enumtypid = t.oid))
		  FROM pg_type t WHERE t.typnamespace = 'quota_sched'::regnamespace},
	'11 schema' => q{
		SELECT format('%s owner=%s acl=%s', nspname, pg_get_userbyid(nspowner), nspacl)
		  FROM pg_namespace WHERE nspname = 'quota_sched'},
	'12 extension' => q{
		SELECT format('version=%s owner=%s schema=%s relocatable=%s comment=%s', extversion,
					  pg_get_userbyid(extowner), extnamespace::regnamespace, extrelocatable,
					  obj_description(oid, 'pg_extension'))
		  FROM pg_extension WHERE extname = 'quota_sched'},
	'13 extension config' => q{
		SELECT format('%s condition=%L', x.rel::regclass, x.cond)
		  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS x(rel, cond)
		 WHERE e.extname = 'quota_sched'},
	# the objects that belong to the extension, by identity
	'14 members' => q{
		SELECT format('%s %s', i.type, i.identity)
		  FROM pg_depend d, pg_identify_object(d.classid, d.objid, d.objsubid) i
		 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'quota_sched')},
	# the privileges the extension's scripts left (pg_dump dumps only the
	# differences from them)
	'15 initial privileges' => q{
		SELECT format('%s %s %s', i.type, i.identity, ip.initprivs)
		  FROM pg_init_privs ip, pg_identify_object(ip.classoid, ip.objoid, ip.objsubid) i
		 WHERE ip.privtype = 'e'},
	'16 comments' => q{
		SELECT format('%s %s: %s', i.type, i.identity, d.description)
		  FROM pg_description d, pg_identify_object(d.classoid, d.objoid, d.objsubid) i
		 WHERE i.schema = 'quota_sched'},
);

sub describe_schema
{
	my ($db) = @_;
	my %description;
	foreach my $section (keys %catalog)
	{
		$description{$section} = sql($db,
			"SELECT coalesce(string_agg(x, E'\\n' ORDER BY x COLLATE \"C\"), '')"
			  . " FROM ($catalog{$section}) AS d(x)");
	}
	return \%description;
}

# The columns 0.3 added to tables of 0.2, and those 0.4 added to tables of
# 0.3: a new column of the update under work goes into @added_04.
my @added_03 = qw(claim_timeout max_lease_losses lease_losses claim_requeues
  claim_backoff_until terminated preempted_early lent_until fair_half_life budget budget_period
  changed_at spent_day spent_week spent_month);
my @added_04 = qw(instances_per_host same_label part_agents part_instances rank array_size array_id
	array_index devices fence_grace port depends_on dependencies_waiting dependency_failed has_dependents);

# without_columns($data, @columns): a pg_dump --data-only script without
# those columns (their COPY lists and fields), so that a database of an
# earlier release takes it.
sub without_columns
{
	my ($data, @columns) = @_;
	my %added = map { $_ => 1 } @columns;
	my (@out, @keep);
	my $in_copy = 0;
	foreach my $line (split /\n/, $data, -1)
	{
		if (!$in_copy && $line =~ /^COPY (\S+) \((.*)\) FROM stdin;$/)
		{
			my ($table, @cols) = ($1, split /, /, $2);
			@keep = grep { !$added{ $cols[$_] } } 0 .. $#cols;
			push @out, "COPY $table (" . join(', ', @cols[@keep]) . ") FROM stdin;";
			$in_copy = 1;
			next;
		}
		if ($in_copy && $line eq '\\.')
		{
			$in_copy = 0;
		}
		elsif ($in_copy)
		{
			$line = join("\t", (split /\t/, $line, -1)[@keep]);
		}
		push @out, $line;
	}
	return join("\n", @out);
}

#
# Roles and configuration.
#
$node->safe_psql('postgres', 'CREATE DATABASE source');
sql('source', 'CREATE EXTENSION quota_sched');
sql('source', q{
CREATE ROLE regress_up_admin;
CREATE ROLE regress_up_agent;
CREATE ROLE regress_up_agent2;
CREATE ROLE regress_up_alice;
CREATE ROLE regress_up_bob;
CREATE ROLE regress_up_carol;
CREATE ROLE regress_up_team_res;
GRANT quota_sched_admin TO regress_up_admin;
GRANT quota_sched_agent TO regress_up_agent, regress_up_agent2;
GRANT quota_sched_user TO regress_up_alice, regress_up_bob, regress_up_carol;
GRANT regress_up_team_res TO regress_up_carol, regress_up_bob;
INSERT INTO quota_sched.agent_access (login, job_queue)
VALUES ('regress_up_agent', NULL), ('regress_up_agent2', NULL);
});

# up_queue: 6 gpu and 4 cpu, all assigned to shares.  lab may borrow up to
# 100% of its own capacity and preempts its own lower-priority jobs; lend
# lends what it leaves idle; res keeps its own, and only the members of
# regress_up_team_res (carol and bob) submit to it.  up_q2 is a second queue
# with a unit of the same name, so that counters are told apart by queue.
as_role('source', 'regress_up_admin', q{
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES
	('up_env', '{"gpu": 6, "cpu": 4}'),
	('up_env2', '{"gpu": 1}');
INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout) VALUES
	('up_queue', 'up_env', '1 day'),
	('up_q2', 'up_env2', NULL);
INSERT INTO quota_sched.quota_share
	(job_queue, name, capacity_limits, strategy, borrow_limit, in_share_preemption)
VALUES ('up_queue', 'lab', '{"gpu": 2, "cpu": 2}', 'LEND_AND_BORROW', 100, true),
	   ('up_queue', 'lend', '{"gpu": 2, "cpu": 2}', 'LEND', -1, false),
	   ('up_queue', 'res', '{"gpu": 2}', 'RESERVE', -1, false),
	   ('up_q2', 'solo', '{"gpu": 1}', 'RESERVE', -1, false);
UPDATE quota_sched.quota_share SET submit_role = 'regress_up_team_res'
 WHERE job_queue = 'up_queue' AND name = 'res';
});

#
# 1. Jobs driven into every state, in "source".
#

# Pass 1: c_big (3 gpu) exceeds what res may hold (2): misconfigured.  c_done
# and c_fail run on res's own capacity and end.
as_role('source', 'regress_up_carol', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('c_big', 'up_queue', 'res', 'gpu', 3);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('c_done', 'up_queue', 'res', 'gpu');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('c_fail', 'up_queue', 'res', 'gpu');
});
is(run_pass_of('source', 'up_queue'), "c_done DISPATCH\nc_fail DISPATCH",
	'pass 1 dispatches c_done and c_fail, not the oversized c_big');
is(claim('source', 'up_queue'), 'c_done STARTING, c_fail STARTING', 'the agent claims them');
report('source', $_, 'RUNNING') for qw(c_done c_fail);
is(report('source', 'c_done', 'SUCCEEDED'), 'SUCCEEDED', 'c_done succeeds');
is(report('source', 'c_fail', 'FAILED'), 'FAILED', 'c_fail fails (one attempt)');

# Pass 2: c_run takes res's 2 gpu and c_wait waits behind it; a_low runs on
# lab's own 2 gpu, a_borrow borrows lend's idle 2 gpu; a_timeout (1 cpu, a
# timeout of 1 ms) and b_cpu (2 cpu) fit in their shares.  The order is that
# of scheduling.md 3.2: the jobs under the shares' cursors that fit in their
# own capacity first (a_low, b_cpu); then c_big under res's cursor, which
# fails, so that c_run comes under it; a_borrow must borrow, and a_timeout
# follows it in lab's share order (priority 0 after 1).
as_role('source', 'regress_up_carol', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('c_run', 'up_queue', 'res', 'gpu', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('c_wait', 'up_queue', 'res', 'gpu');
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('q2_run', 'up_q2', 'solo', 'gpu');
});
as_role('source', 'regress_up_alice', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('a_low', 'up_queue', 'lab', 1, 'gpu', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, priority, capacity_unit, instance_count)
VALUES ('a_borrow', 'up_queue', 'lab', 1, 'gpu', 2);
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, timeout)
VALUES ('a_timeout', 'up_queue', 'lab', 'cpu', '1 millisecond');
});
as_role('source', 'regress_up_bob', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('b_cpu', 'up_queue', 'lend', 'cpu', 2);
});
is(run_pass_of('source', 'up_queue'),
	"a_low DISPATCH\nb_cpu DISPATCH\nc_run DISPATCH\na_borrow DISPATCH\na_timeout DISPATCH",
	'pass 2 dispatches the jobs that fit, and a_borrow on borrowed capacity; c_wait waits');
is(run_pass_of('source', 'up_q2'), 'q2_run DISPATCH', 'the pass of up_q2 dispatches q2_run');
is(claim('source', 'up_queue'),
	'a_borrow STARTING, a_low STARTING, a_timeout STARTING, b_cpu STARTING, c_run STARTING',
	'the agent claims the five');
is(claim('source', 'up_q2'), 'q2_run STARTING', 'and q2_run');
report('source', $_, 'RUNNING') for qw(c_run a_low a_borrow a_timeout q2_run);

# Pass 3: a_timeout is past its timeout: asked to stop.  bob's b_gpu takes
# back lend's 2 gpu from lab (reclaim): a_borrow, claimed, is asked to stop,
# and b_gpu is promised the room.  a_cpu fits in lab's cpu: dispatched, left
# unclaimed.  (The clock passes a_timeout's millisecond; not a wait for
# the system.)
Time::HiRes::sleep(0.05);
as_role('source', 'regress_up_bob', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
VALUES ('b_gpu', 'up_queue', 'lend', 'gpu', 2);
});
as_role('source', 'regress_up_alice', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('a_cpu', 'up_queue', 'lab', 'cpu');
});
is(run_pass_of('source', 'up_queue'),
	"a_timeout STOP TIMEOUT\na_borrow PREEMPT CROSS_SHARE_PREEMPTION\na_cpu DISPATCH",
	'pass 3 stops a_timeout, preempts the claimed a_borrow for b_gpu, dispatches a_cpu');

my $states_before = <<'JOBS';
a_borrow RUNNING CROSS_SHARE_PREEMPTION for:b_gpu - -
a_cpu SCHEDULED - - - -
a_low RUNNING - - - -
a_timeout RUNNING TIMEOUT - - -
b_cpu STARTING - - - -
b_gpu RUNNABLE - - promised -
c_big RUNNABLE - - - MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED
c_done SUCCEEDED - - - -
c_fail FAILED - - - FAILED
c_run RUNNING - - - -
c_wait RUNNABLE - - - -
q2_run RUNNING - - - -
JOBS
chomp $states_before;
is(jobs('source'), $states_before, 'source: the jobs are in the states built');
is(sql('source', q{SELECT string_agg(DISTINCT owner, ',' ORDER BY owner) FROM quota_sched.job}),
	'regress_up_alice,regress_up_bob,regress_up_carol', 'source: jobs of three owners');

# What the jobs hold (one line per queue, share and unit: instances,
# stopping instances, jobs).
my $held_expected = <<'HELD';
up_q2 solo gpu 1 0 1
up_queue lab cpu 2 1 2
up_queue lab gpu 4 2 2
up_queue lend cpu 2 0 1
up_queue res gpu 2 0 1
HELD
chomp $held_expected;
is(sql('source', $recount), $held_expected, 'source: the recount of held capacity');
is(sql('source', $kept), $held_expected,
	'source: the counters the triggers kept while the jobs moved');
my $source_kept = sql('source', $kept);


#
# With the library of 0.1.
#
switch_library('0.1');

#
# The 0.1 database: its tables filled with source's rows.
#
$node->safe_psql('postgres', 'CREATE DATABASE old');
sql('old', q{CREATE EXTENSION quota_sched VERSION '0.1'});
is(sql('old', q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), '0.1',
	'old: quota_sched 0.1 installed');
is(sql('old', q{SELECT to_regclass('quota_sched.held_capacity') IS NULL}), 't',
	'old: no counters of held capacity in 0.1');

# The relations 0.1 dumps (its extconfig) are exactly what a 0.1
# installation holds of its users' data: copy each table's rows over the
# columns it has in 0.1, and each sequence's position.
my $old_columns = table_columns('old');
my @config = split /\n/, sql('old', q{
	SELECT c.relname || ' ' || c.relkind::text
	  FROM pg_extension e, unnest(e.extconfig) AS x(oid) JOIN pg_class c ON c.oid = x.oid
	 WHERE e.extname = 'quota_sched' ORDER BY 1});
my $copied = 0;
foreach my $entry (@config)
{
	my ($rel, $kind) = split / /, $entry;
	if ($kind eq 'S')
	{
		my ($last, $called) = split /\|/,
		  sql('source', "SELECT last_value, is_called FROM quota_sched.$rel");
		sql('old', "SELECT setval('quota_sched.$rel', $last, '$called')");
		next;
	}
	my $cols = $old_columns->{$rel};
	sql('source', "COPY (SELECT $cols FROM quota_sched.$rel) TO '$tmp/$rel.copy'");
	sql('old', "SET session_replication_role = replica;
				COPY quota_sched.$rel ($cols) FROM '$tmp/$rel.copy'");
	$copied++;
}
is($copied, scalar(keys %$old_columns), 'old: every 0.1 table is a config table and was copied');
is_deeply(table_rows('old', $old_columns), table_rows('source', $old_columns),
	'old: every row of every 0.1 table as in source');
is(jobs('old'), $states_before, 'old: the jobs are in the states built');
cmp_ok(sql('old', 'SELECT count(*) FROM quota_sched.job_event'), '>', 30,
	'old: the history of the jobs is there');
is(sql('old', 'SELECT count(*) FROM quota_sched.pass_log'), '4', 'old: four passes logged');

# Teams, in 0.1: bob is in res's team (its submit_role) but sees none of
# carol's jobs there, nor their history (the policies of 0.1: owners only).
# In 0.2 he sees them (section 7).
my $res_jobs = q{
	SELECT coalesce(string_agg(name, ' ' ORDER BY name COLLATE "C"), '')
	  FROM quota_sched.job WHERE quota_share = 'res'};
my $res_events = q{
	SELECT count(*) FROM quota_sched.job_event e
	 WHERE e.job_id IN (SELECT id FROM quota_sched.job WHERE quota_share = 'res')};
is(as_role('old', 'regress_up_bob', $res_jobs), '', 'old, 0.1: bob sees none of res\'s jobs');
is(as_role('old', 'regress_up_bob', $res_events), '0',
	'old, 0.1: nor their history');

# What the upgrade must leave alone: every row of every 0.1 table (each job
# by id), over the columns it has in 0.1 (columns a later 0.2 adds are the
# upgrade's to fill), and the sequences.
my $rows_before = table_rows('old', $old_columns);
my $jobs_before = job_rows('old', $old_columns->{job});
my $seqs_before = sequence_values('old');
is(scalar(keys %$jobs_before), 12, 'old: 12 jobs before the upgrade');

my $old_schema_before = describe_schema('old');

#
# 6. Intervals beyond 365 days, which 0.1 took: a running job's timeout and a
# queue's runnable_timeout of 300,000 years would make its deadline leave the
# range of timestamps.  The upgrade makes them 365 days (below, with the
# current library), and the queue's passes go on.
#
$node->safe_psql('postgres', 'CREATE DATABASE long');
sql('long', q{CREATE EXTENSION quota_sched VERSION '0.1'});
# The library of 0.1 takes them, as 0.1 did.
sql('long', q{
	INSERT INTO quota_sched.service_environment VALUES ('long_env', '{"gpu": 2}');
	INSERT INTO quota_sched.job_queue (name, service_environment, runnable_timeout)
	VALUES ('long_queue', 'long_env', '1 hour');
	UPDATE quota_sched.job_queue SET runnable_timeout = '300000 years' WHERE name = 'long_queue';
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES ('long_queue', 'long_share', '{"gpu": 2}', 'RESERVE');
	SET session_replication_role = replica;
	INSERT INTO quota_sched.job (id, name, job_queue, quota_share, priority, capacity_unit,
		instance_count, payload, timeout, owner, state, agent, lease_until, failed_attempts,
		preemption_count, submitted_at, queued_at, scheduled_at, started_at)
	VALUES (nextval('quota_sched.job_id_seq'), 'long_job', 'long_queue', 'long_share', 0, 'gpu', 1,
		'{}', '300000 years', 'postgres', 'RUNNING', 'long_agent', now() + interval '1 hour', 0, 0,
		now(), now(), now(), now())});

#
# With the library of 0.2.
#
switch_library('0.2');

#
# 9. A populated 0.2 database, updated (below, with the current library).
# "two" is created at 0.2, then given every row of "source", which the
# real API filled at the current version, whose tables are 0.2's but for
# those later releases added (empty or left out of the data) and the
# columns 0.3 and 0.4 added (left out: without_columns): its jobs in every
# state, their history and counters, the history of the configuration, and
# the sequences' positions, restored as pg_restore would (the data of the
# extension's tables, with the triggers off).
#
$node->safe_psql('postgres', 'CREATE DATABASE two');
sql('two', q{CREATE EXTENSION quota_sched VERSION '0.2'});
{
	my ($data, $stderr) = ('', '');
	IPC::Run::run([ 'pg_dump', '--data-only', '--exclude-table-data=quota_sched.agent',
			'--exclude-table-data=quota_sched.agent_access',
			'--exclude-table-data=quota_sched.job_attempt', '--exclude-table-data=quota_sched.job_part',
			'--exclude-table-data=quota_sched.lending_hourly',
			'--exclude-table-data=quota_sched.held_change', '--exclude-table-data=quota_sched.borrow_memory',
			'--exclude-table-data=quota_sched.host_held*', '--exclude-table-data=quota_sched.agent_change*',
			'--exclude-table-data=quota_sched.constrained_change*',
			'--exclude-table-data=quota_sched.job_preemption', '--exclude-table-data=quota_sched.share_change*',
			'-h', $node->host, '-p', $node->port, '-d', 'source' ],
		'>', \$data, '2>', \$stderr)
	  or die "pg_dump --data-only source: $stderr";
	$node->safe_psql('two', "SET session_replication_role = replica;\n" . without_columns($data, @added_03, @added_04));
}
# The hourly rollup of 0.2, three hours ago, of a queue of its own (its
# history written as 0.2 writes it): od_run was terminated while it ran
# (its TERMINATE event, then its end), od_bad failed by itself.  0.2 counted
# both failed; the rows it rolled up keep that after the update (0.3 does
# not recompute them), and terminations after it count apart.
my $old_hour = sql('two', q{SELECT date_trunc('hour', now()) - interval '3 hours'});
sql('two', qq{
	INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('od_env', '{"gpu": 3}');
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('od_queue', 'od_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES ('od_queue', 'od', '{"gpu": 2}', 'LEND'), ('od_queue', 'ob', '{"gpu": 1}', 'LEND_AND_BORROW');
	-- the configuration as it was before that hour
	UPDATE quota_sched.config_event SET at = '$old_hour'::timestamptz - interval '1 hour'
	 WHERE job_queue = 'od_queue' OR name = 'od_env';
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, reason, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt, priority)
	SELECT e.job_id, '$old_hour'::timestamptz + e.m * interval '1 minute', e.f, e.t, e.reason, 'x', e.kind,
		   'od_queue', 'od', 'gpu', 1, 1, 0
	  FROM (VALUES (9901, 0, NULL, 'RUNNABLE', NULL, 'STATE'), (9901, 5, 'RUNNABLE', 'SCHEDULED', NULL, 'STATE'),
				   (9901, 6, 'SCHEDULED', 'RUNNING', NULL, 'STATE'),
				   (9901, 10, 'RUNNING', 'RUNNING', 'not needed', 'TERMINATE'),
				   (9901, 15, 'RUNNING', 'FAILED', 'not needed', 'STATE'),
				   (9902, 0, NULL, 'RUNNABLE', NULL, 'STATE'), (9902, 5, 'RUNNABLE', 'SCHEDULED', NULL, 'STATE'),
				   (9902, 20, 'SCHEDULED', 'FAILED', 'exit 1', 'STATE')) AS e(job_id, m, f, t, reason, kind);
	-- ob_run (ob, 2 gpu) borrows 1 of od's idle gpus for 10 minutes
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, actor, kind, job_queue,
									   quota_share, capacity_unit, instance_count, attempt, priority)
	SELECT 9903, '$old_hour'::timestamptz + e.m * interval '1 minute', e.f, e.t, 'x', 'STATE',
		   'od_queue', 'ob', 'gpu', 2, 1, 0
	  FROM (VALUES (0, NULL, 'RUNNABLE'), (30, 'RUNNABLE', 'SCHEDULED'),
				   (40, 'SCHEDULED', 'SUCCEEDED')) AS e(m, f, t);
	SELECT quota_sched.rollup();
});
is(sql('two', qq{SELECT failed FROM quota_sched.usage_hourly WHERE job_queue = 'od_queue' AND quota_share = 'od'
				  AND hour = '$old_hour'}), '2', 'two, 0.2: its rollup counts the termination as a failure');
my $two_columns = table_columns('two');
my $two_rows_before = table_rows('two', $two_columns);
is(sql('two', 'SELECT count(*) FROM quota_sched.job'), sql('source', 'SELECT count(*) FROM quota_sched.job'),
	'two, 0.2: holds the jobs of source');

#
# With the library of 0.3.
#
switch_library('0.3');

#
# 10. A populated 0.3 database, updated (below, with the current library).
# "three" is created at 0.3, then given every row of "source" but
# agent_access's (0.4) and agent's (source registers none; its COPY names
# the columns of 0.4), without the columns 0.4 added (without_columns),
# restored as pg_restore would, and two
# registrations of 0.3: regress_up_agent2's agent of up_q2 with a lease of
# two days, and an agent of a login that no longer exists.  The update
# keeps every row (the lease cut to an hour; no labels, the name as
# address, ACTIVE since the update), lets every agent login serve every
# queue as 0.3 did (admins need no row), and leaves the schema of a fresh
# install; then the logins register (as an agent of 0.3 calls agent_ready,
# and with the labels and address of 0.4) and claim as before, and once
# an admin narrows a login's rows it is refused elsewhere, and its agents
# of those queues are forgotten (issue 37, item 2).
#
$node->safe_psql('postgres', 'CREATE DATABASE three');
sql('three', q{CREATE EXTENSION quota_sched VERSION '0.3'});
{
	my ($data, $stderr) = ('', '');
	IPC::Run::run([ 'pg_dump', '--data-only', '--exclude-table-data=quota_sched.agent_access',
			'--exclude-table-data=quota_sched.agent', '--exclude-table-data=quota_sched.job_part',
			'--exclude-table-data=quota_sched.host_held*', '--exclude-table-data=quota_sched.agent_change*',
			'--exclude-table-data=quota_sched.constrained_change*',
			'--exclude-table-data=quota_sched.job_preemption', '--exclude-table-data=quota_sched.share_change*',
			'-h', $node->host, '-p', $node->port, '-d', 'source' ],
		'>', \$data, '2>', \$stderr)
	  or die "pg_dump --data-only source: $stderr";
	$node->safe_psql('three', "SET session_replication_role = replica;\n" . without_columns($data, @added_04));
}
sql('three', q{
	CREATE ROLE regress_up_gone;
	INSERT INTO quota_sched.agent (name, login, job_queue, capacity_unit, instances,
								   registered_at, last_seen, lease)
	VALUES ('three-long', 'regress_up_agent2', 'up_q2', 'gpu', 4, now(), now(), '2 days'),
		   ('three-gone', 'regress_up_gone', 'up_queue', 'gpu', 1, now(), now(), '1 minute');
	DROP ROLE regress_up_gone;
	-- the output a job of 0.3 left, with its terminal's control sequences
	INSERT INTO quota_sched.job_attempt (job_id, attempt, agent, exit_code, output, started_at, ended_at)
	SELECT min(id), 1, 'three-out', 0, E'done\x1b]0;owned\x07\r\n', now(), now() FROM quota_sched.job
	ON CONFLICT (job_id, attempt) DO UPDATE SET output = excluded.output});
# A preemption that 0.3 kept in its history only (a STATE event with a
# preempted_for): c_done's attempt ended 7 minutes after its dispatch to
# make room for b_gpu, as a restore writes it.
sql('three', q{
	SET session_replication_role = replica;
	INSERT INTO quota_sched.job_event (job_id, at, from_state, to_state, reason, actor, job_queue,
		quota_share, capacity_unit, instance_count, attempt, priority, preempted_for)
	SELECT v.id, d.at + interval '7 minutes', 'RUNNING', 'RUNNABLE', 'CROSS_SHARE_PREEMPTION',
		   'agent-1', v.job_queue, v.quota_share, v.capacity_unit, v.instance_count, 1, v.priority,
		   (SELECT id FROM quota_sched.job WHERE name = 'b_gpu')
	  FROM quota_sched.job v
	  JOIN LATERAL (SELECT e.at FROM quota_sched.job_event e
					 WHERE e.job_id = v.id AND e.to_state = 'SCHEDULED'
					 ORDER BY e.id DESC LIMIT 1) d ON true
	 WHERE v.name = 'c_done'});

#
# 11. Jobs running on hosts registered in 0.3 (issue 39, item 5), in
# "three", in a queue of their own: h_queue (10 gpu, one share) and two
# agents of regress_up_agent, h-1 and h-2, of 4 instances each, which
# register (agent_ready's four arguments) and claim as the agent of 0.3
# does (max_instances: what it has free; a lease of an hour, which no
# step here outlives): h-1 runs h_three (3 gpu) and h_old (1), h-2 runs
# h_two (2) and has claimed h_start (1), STARTING; each said where its
# attempt runs (attempt_started).  h_old has no agent_role, as a job
# claimed in 0.1 has none (written as a restore would).  The update writes
# no parts for them (scheduling.md 3.14): job_parts derives each one's part
# from the job, rank 0 on the agent that claimed it, and the pass counts
# their instances on those hosts, so that none is booked twice; their
# agents go on heartbeating, reporting and claiming (below, "11, updated").
#
as_role('three', 'regress_up_admin', q{
	INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('h_env', '{"gpu": 10}');
	INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('h_queue', 'h_env');
	INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	VALUES ('h_queue', 'h_share', '{"gpu": 10}', 'RESERVE')});
is(as_role('three', 'regress_up_agent', q{
	SELECT string_agg(concat_ws(' ', a.name, a.instances, a.state), ', ' ORDER BY a.name)
	  FROM unnest(ARRAY['h-1', 'h-2']) AS n(name),
		   quota_sched.agent_ready(n.name, 'h_queue', 'gpu', 4) a}),
	'h-1 4 ACTIVE, h-2 4 ACTIVE', 'three, 0.3: two agents of 4 gpu register for h_queue');
as_role('three', 'regress_up_alice', q{
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('h_three', 'h_queue', 'h_share', 'gpu', 3), ('h_two', 'h_queue', 'h_share', 'gpu', 2),
		   ('h_start', 'h_queue', 'h_share', 'gpu', 1), ('h_old', 'h_queue', 'h_share', 'gpu', 1)});
is(run_pass_of('three', 'h_queue'),
	"h_three DISPATCH\nh_two DISPATCH\nh_start DISPATCH\nh_old DISPATCH",
	'three, 0.3: the pass of 0.3 dispatches the four (none larger than an agent)');

# claim_on(DB, AGENT, MAX_JOBS, MAX_INSTANCES): the claim of the agent of
# 0.3 in h_queue, as regress_up_agent, with a lease of an hour.
sub claim_on
{
	my ($db, $agent, $max_jobs, $max_instances) = @_;
	return as_role($db, 'regress_up_agent', qq{
		SELECT coalesce(string_agg(name || ' ' || state, ', ' ORDER BY name COLLATE "C"), '')
		  FROM quota_sched.claim('$agent', 'h_queue', 'gpu', max_jobs => $max_jobs,
								 lease => '1 hour', max_instances => $max_instances)});
}
# report_on(DB, JOB, AGENT, STATE): AGENT's report on JOB, as regress_up_agent
sub report_on
{
	my ($db, $job, $agent, $state) = @_;
	return as_role($db, 'regress_up_agent', qq{
		SELECT state FROM quota_sched.report(
			(SELECT id FROM quota_sched.job WHERE name = '$job'), '$agent', '$state')});
}
is(claim_on('three', 'h-1', 1, 4), 'h_three STARTING', 'three, 0.3: h-1, 4 free, claims h_three');
is(claim_on('three', 'h-2', 2, 4), 'h_start STARTING, h_two STARTING',
	'three, 0.3: h-2, 4 free, claims h_two and h_start');
is(claim_on('three', 'h-1', 1, 1), 'h_old STARTING', 'three, 0.3: h-1, 1 free, claims h_old');
is(as_role('three', 'regress_up_agent', q{
	SELECT string_agg(j.name || ' ' || s.host, ', ' ORDER BY j.name COLLATE "C")
	  FROM quota_sched.job j,
		   quota_sched.attempt_started(j.id, j.agent, 1, j.agent || '.example', '/var/log/' || j.name) s
	 WHERE j.job_queue = 'h_queue'}),
	'h_old h-1.example, h_start h-2.example, h_three h-1.example, h_two h-2.example',
	'three, 0.3: each says where its attempt runs');
is(as_role('three', 'regress_up_agent', q{
	SELECT string_agg(r.name || ' ' || r.state, ', ' ORDER BY r.name COLLATE "C")
	  FROM quota_sched.job j, quota_sched.report(j.id, j.agent, 'RUNNING') r
	 WHERE j.job_queue = 'h_queue' AND j.name <> 'h_start'}),
	'h_old RUNNING, h_three RUNNING, h_two RUNNING', 'three, 0.3: all but h_start run');
sql('three', q{SET session_replication_role = replica;
	UPDATE quota_sched.job SET agent_role = NULL WHERE name = 'h_old'});
# what the update must leave of them: their jobs' rows (with every other
# row of "three", below) and their attempts
my $h_attempts_before = sql('three', q{
	SELECT string_agg(to_jsonb(a)::text, E'\n' ORDER BY a.job_id)
	  FROM quota_sched.job_attempt a JOIN quota_sched.job j ON j.id = a.job_id
	 WHERE j.job_queue = 'h_queue'});
my $three_columns = table_columns('three');
is_deeply([ sort grep { !exists $three_columns->{$_} } keys %{ table_columns('source') } ],
	['agent_access', 'agent_change', 'constrained_change', 'host_held', 'host_held_change', 'job_part',
	 'job_preemption', 'share_change'],
	"three, 0.3: the tables of $current but agent_access, agent_change, constrained_change, host_held, host_held_change, job_part, job_preemption and share_change");
my $agents_before = sql('three', q{SELECT string_agg(name || ' ' || login || ' ' || lease, ', ' ORDER BY name)
									 FROM quota_sched.agent WHERE name LIKE 'three-%'});
delete $three_columns->{agent};
delete $three_columns->{job_attempt};
my $outputs_before = sql('three', q{SELECT count(*) FROM quota_sched.job_attempt});
my $three_rows_before = table_rows('three', $three_columns);

#
# With the current library.
#
switch_library($current);

#
# 8. The current library on the schemas of the releases before, until
# ALTER EXTENSION UPDATE (doc/operations.md): every call is refused with
# 55QS0, naming both versions, the update as its hint, rather than failing
# on a missing table or working on a schema it does not know: a pass, a
# submission, an agent's claim and report, an admin's change of the
# configuration (its trigger and its CHECKs are the library's); nothing
# changes.
#
foreach my $db (sort keys %release_of)
{
	my $version = $release_of{$db};
	my $jobs_then = jobs($db);
	foreach my $call (
		[ 'a pass', 'SELECT * FROM quota_sched.run_pass()' ],
		[ 'a submission', q{SET ROLE regress_up_alice;
			INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
			VALUES ('a_refused', 'up_queue', 'lab', 'cpu')} ],
		[ 'a claim', q{SET ROLE regress_up_agent;
			SELECT * FROM quota_sched.claim('agent-1', 'up_queue')} ],
		[ 'a report', q{SET ROLE regress_up_agent;
			SELECT state FROM quota_sched.report(
				(SELECT id FROM quota_sched.job WHERE name = 'b_cpu'), 'agent-1', 'RUNNING')} ],
		[ 'a change of the configuration', q{SET ROLE regress_up_admin;
			UPDATE quota_sched.quota_share SET borrow_limit = 50 WHERE name = 'lab'} ])
	{
		my ($ret, $stdout, $stderr) = $node->psql($db, "\\set VERBOSITY verbose\n$call->[1]");
		like($stderr,
			qr/ERROR:  55QS0: quota_sched \Q$version\E is installed in this database, but its library is version \Q$current\E.*HINT:  Run ALTER EXTENSION quota_sched UPDATE\./s,
			"$db, $version, before the update: $call->[0] is refused (55QS0), naming both versions, the update as its hint");
	}
	is(jobs($db), $jobs_then, "$db, $version, before the update: the jobs as they were");
	is(sql($db, q{SELECT borrow_limit FROM quota_sched.quota_share WHERE name = 'lab'}), '100',
		"$db, $version, before the update: the configuration as it was");
}


#
# 2. The upgrade.
#
# In a session of another IntervalStyle: the baseline of the configuration
# (below) writes up_queue's runnable_timeout as its trigger would, and the
# session's style is left as it was, also in the rest of its transaction.
my $before_upgrade = sql('old', 'SELECT clock_timestamp()');
is(sql('old', q{SET IntervalStyle = 'sql_standard';
	BEGIN; ALTER EXTENSION quota_sched UPDATE; SHOW IntervalStyle; COMMIT;}),
	'sql_standard', 'old: the update leaves the session\'s IntervalStyle alone');
is(sql('old', q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $current,
	"old: quota_sched is at $current after ALTER EXTENSION UPDATE");
# The scheduling options of 0.2 take their defaults, which behave as 0.1.
is(sql('old', q{SELECT string_agg(DISTINCT borrow_order, ',') FROM quota_sched.job_queue}),
	'FIFO', 'old, upgraded: every queue borrows FIFO');
is(sql('old', q{SELECT string_agg(DISTINCT format('%s %s %s %s', lend_limit, queueing,
					   coalesce(min_runtime::text, 'none'), weight), ',')
				  FROM quota_sched.quota_share}),
	'-1 BEST_EFFORT none 1', 'old, upgraded: every share lends all, BEST_EFFORT, no min_runtime, weight 1');
# A user's UPDATE of jobs takes no queue lock any more, and passes record
# the jobs they pass over in queue_status, which admins read.
# The events of 0.1 are states, and get the accounting columns of 0.2 from
# their jobs; no job was requeued here, so every one is of attempt 1.
is(sql('old', q{SELECT string_agg(DISTINCT kind, ',') || ' ' || count(*) FILTER (
				  WHERE job_queue IS NULL OR quota_share IS NULL OR capacity_unit IS NULL
					 OR instance_count IS NULL OR priority IS NULL OR attempt IS DISTINCT FROM 1)
				  FROM quota_sched.job_event}),
	'STATE 0', 'old, upgraded: the events of 0.1 are STATE events with their accounting columns');
is(sql('old', q{SELECT count(*) FROM quota_sched.job_event e JOIN quota_sched.job j ON j.id = e.job_id
				 WHERE (e.job_queue, e.quota_share, e.capacity_unit, e.instance_count)
					   IS DISTINCT FROM (j.job_queue, j.quota_share, j.capacity_unit, j.instance_count)}),
	'0', 'old, upgraded: each event has its job\'s queue, share, unit and instance count');
is(sql('old', q{SELECT count(*) FROM pg_trigger WHERE tgname = 'job_lock_queues'}), '0',
	'old, upgraded: the trigger that took every queue lock for a user UPDATE is gone');
is(as_role('old', 'regress_up_admin', 'SELECT count(*) FROM quota_sched.queue_status'), '0',
	'old, upgraded: queue_status is empty and admins read it');

#
# 3. The counters it made, and the rows it left alone.
#
is(as_role('old', 'regress_up_admin', 'SELECT count(*) FROM quota_sched.held_capacity_drift()'),
	'0', 'old, upgraded: held_capacity_drift() returns no row');
is(sql('old', 'SELECT count(*) FROM quota_sched.held_capacity WHERE stripe <> 0'), '0',
	'old, upgraded: each counter is written whole, in stripe 0');
my $held_after = sql('old', q{
	SELECT string_agg(concat_ws(' ', job_queue, quota_share, capacity_unit, instances,
								stopping_instances, jobs),
					  E'\n' ORDER BY job_queue COLLATE "C", quota_share COLLATE "C",
									 capacity_unit COLLATE "C")
	  FROM quota_sched.held_capacity});
is($held_after, sql('old', $recount), 'old, upgraded: held_capacity equals a recount from the jobs');
is($held_after, $held_expected,
	'old, upgraded: held_capacity has the instances, stopping instances and jobs of the states built');
is($held_after, $source_kept,
	'old, upgraded: the counters equal those the triggers kept in source for the same jobs');
# metrics() counts the dispatches of the 0.1 history (its events given
# their share and unit by the update).
my $dispatches_counted = as_role('old', 'regress_up_admin', q{
	SELECT string_agg(concat_ws(' ', r[1], r[2], r[3], r[4]), ', '
					  ORDER BY r[1] COLLATE "C", r[2] COLLATE "C", r[3] COLLATE "C")
	  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l(line),
		   regexp_match(l.line, '^quota_sched_dispatches_total\{job_queue="([^"]+)",quota_share="([^"]+)",capacity_unit="([^"]+)"\} ([1-9][0-9]*)$') AS r
	 WHERE r IS NOT NULL});
isnt($dispatches_counted, '', 'old, upgraded: metrics() counts dispatches');
is($dispatches_counted, sql('old', q{
	SELECT string_agg(concat_ws(' ', job_queue, quota_share, capacity_unit, n), ', '
					  ORDER BY job_queue COLLATE "C", quota_share COLLATE "C", capacity_unit COLLATE "C")
	  FROM (SELECT job_queue, quota_share, capacity_unit, count(*) AS n FROM quota_sched.job_event
			 WHERE kind = 'STATE' AND to_state = 'SCHEDULED' GROUP BY 1, 2, 3) d}),
	'old, upgraded: metrics() counts the dispatches of the 0.1 history');

my $jobs_after = job_rows('old', $old_columns->{job});
is(scalar(keys %$jobs_after), 12, 'old, upgraded: 12 jobs');
foreach my $id (sort { $a <=> $b } keys %$jobs_before)
{
	is($jobs_after->{$id}, $jobs_before->{$id}, "old, upgraded: job $id unchanged");
}
my $rows_after = table_rows('old', $old_columns);
foreach my $t (sort keys %$rows_before)
{
	isnt($rows_before->{$t}, '', "old: table $t had rows before the upgrade");
	is($rows_after->{$t}, $rows_before->{$t}, "old, upgraded: every row of $t unchanged");
}
my $seqs_after = sequence_values('old');
is_deeply({ map { $_ => $seqs_after->{$_} } keys %$seqs_before }, $seqs_before,
	'old, upgraded: the sequences unchanged');
is_deeply([ sort grep { !exists $seqs_before->{$_} } keys %$seqs_after ],
	['agent_change_seq', 'config_event_id_seq', 'constrained_change_seq', 'host_held_change_seq',
	 'share_change_seq'],
	'old, upgraded: five new sequences, those of agent_change, config_event, constrained_change, host_held_change and share_change');

# The history of the configuration (config_event) starts with the
# configuration the upgrade found: one BASELINE row per environment, queue
# and share, whose new is the row, at the upgrade's time, by the role that
# ran it.
is(sql('old', q{
	SELECT string_agg(concat_ws(' ', object, coalesce(job_queue, '-'), name, action),
					  E'\n' ORDER BY id)
	  FROM quota_sched.config_event}), <<'BASELINE' =~ s/\n\z//r,
service_environment - up_env BASELINE
service_environment - up_env2 BASELINE
job_queue up_q2 up_q2 BASELINE
job_queue up_queue up_queue BASELINE
quota_share up_q2 solo BASELINE
quota_share up_queue lab BASELINE
quota_share up_queue lend BASELINE
quota_share up_queue res BASELINE
BASELINE
	'old, upgraded: one BASELINE row per environment, queue and share');
is(sql('old', qq{
	SELECT count(*) FROM quota_sched.config_event c
	 WHERE c.old IS NULL AND c.actor = session_user
	   AND c.at > '$before_upgrade' AND c.at < clock_timestamp()
	   AND c.new = CASE c.object
			WHEN 'service_environment' THEN
				(SELECT to_jsonb(e) FROM quota_sched.service_environment e WHERE e.name = c.name)
			WHEN 'job_queue' THEN
				-- the 0.1 to 0.2 step wrote the baseline; 0.3 then added claim_timeout
				-- and fair_half_life, and the shares' budget and budget_period; 0.4
				-- fence_grace
				(SELECT to_jsonb(q) - 'claim_timeout' - 'fair_half_life' - 'fence_grace'
				   FROM quota_sched.job_queue q WHERE q.name = c.name)
			ELSE (SELECT to_jsonb(s) - 'budget' - 'budget_period' FROM quota_sched.quota_share s
				   WHERE s.job_queue = c.job_queue AND s.name = c.name) END}),
	'8', 'old, upgraded: each BASELINE row holds its whole row, at the upgrade\'s time, by its role');
is(sql('old', 'SELECT count(DISTINCT at) FROM quota_sched.config_event'), '1',
	'old, upgraded: the baseline has one time, the upgrade\'s transaction\'s');
# A change after the upgrade is recorded, by the admin who makes it.
as_role('old', 'regress_up_admin', q{
	UPDATE quota_sched.quota_share SET weight = 2 WHERE job_queue = 'up_q2' AND name = 'solo'});
is(as_role('old', 'regress_up_admin', q{
	SELECT concat_ws(' ', object, job_queue, name, action, actor, old ->> 'weight', new ->> 'weight',
					 old - 'budget' - 'budget_period' = (SELECT b.new FROM quota_sched.config_event b
							 WHERE b.action = 'BASELINE' AND b.name = 'solo'),
					 at > (SELECT max(b.at) FROM quota_sched.config_event b
						   WHERE b.action = 'BASELINE'))
	  FROM quota_sched.config_event WHERE action <> 'BASELINE'}),
	'quota_share up_q2 solo UPDATE regress_up_admin 1 2 t t',
	'old, upgraded: an admin\'s change after the upgrade is recorded, its old the baseline\'s row');

note('columns the upgrade added to 0.1 tables: ' . join(', ', map {
	my $t = $_;
	my %was = map { $_ => 1 } split /, /, ($old_columns->{$t} // '');
	map { "$t.$_" } grep { !$was{$_} } split /, /, table_columns('old')->{$t}
} sort keys %$old_columns));

#
# 4. The upgraded schema is that of a fresh install.
#
$node->safe_psql('postgres', 'CREATE DATABASE fresh');
sql('fresh', 'CREATE EXTENSION quota_sched');
is(sql('fresh', q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $current,
	"fresh: CREATE EXTENSION installs $current");
# It runs one script, the full one made from sql/: PostgreSQL takes an
# install script of the version asked for over a chain of updates, and
# this one creates each table whole (no ALTER TABLE, no data to move).
{
	my $script = `$pg_config --sharedir`;
	chomp $script;
	$script .= "/extension/quota_sched--$current.sql";
	ok(-f $script, "quota_sched--$current.sql is installed");
	my $text = slurp_file($script);
	like($text, qr/^CREATE TABLE quota_sched\.job \(/m, 'the install script creates the tables');
	unlike($text, qr/^(ALTER TABLE \S+\s+ADD|UPDATE |INSERT INTO quota_sched)/m,
		'the install script adds no column and moves no data');
}
# PostgreSQL chains the updates of each release: from the first, every
# one of them, the update under work last
is(sql('fresh', qq{SELECT path FROM pg_extension_update_paths('quota_sched')
				   WHERE source = '$from->[0]' AND target = '$current'}),
	join('--', @$from, $current), "an update from $from->[0] runs the deltas of each release");
is(sql('fresh', 'SELECT count(*) FROM quota_sched.config_event'), '0',
	'fresh: the history of the configuration starts empty');

my $fresh_schema = describe_schema('fresh');
my $old_schema   = describe_schema('old');
foreach my $section (sort { ($a =~ /^(\d+)/)[0] <=> ($b =~ /^(\d+)/)[0] } keys %catalog)
{
	# a section empty in both compares nothing: only comments may be
	isnt($fresh_schema->{$section}, '', "fresh: the catalogs list $section")
	  unless $section =~ /comments/;
	ok($old_schema->{$section} eq $fresh_schema->{$section},
		"upgraded schema as a fresh install: $section")
	  or diag(line_diff($old_schema->{$section}, $fresh_schema->{$section}));
}
# The comparison sees a difference where there is one: the 0.1 schema is
# not the fresh one.
my @differing = grep { $old_schema_before->{$_} ne $fresh_schema->{$_} } sort keys %catalog;
ok(scalar(@differing) > 0, 'the 0.1 schema differs from a fresh install')
  and note('sections the upgrade changed: ' . join(', ', @differing));

# The objects of the extension by identity, on their own: in particular
# every member of the fresh install is one of the upgraded extension's.
my %fresh_members = map { $_ => 1 } split /\n/, $fresh_schema->{'14 members'};
my %old_members   = map { $_ => 1 } split /\n/, $old_schema->{'14 members'};
is_deeply([ sort grep { !$old_members{$_} } keys %fresh_members ], [],
	'every member of a fresh install belongs to the upgraded extension');
is_deeply([ sort grep { !$fresh_members{$_} } keys %old_members ], [],
	'the upgraded extension has no member a fresh install lacks (job_holding is gone)');

# What pg_dump --schema-only writes of the two databases (CREATE EXTENSION,
# its comment, and the privileges that differ from those the scripts left)
# is the same.  Normalisation: comment lines (they name the server version),
# blank lines, and \restrict / \unrestrict, whose key is random per dump.
sub schema_dump
{
	my ($db) = @_;
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(
		[ 'pg_dump', '--schema-only', '-h', $node->host, '-p', $node->port, '-d', $db ],
		'>', \$stdout, '2>', \$stderr);
	ok($ok, "pg_dump --schema-only $db") or diag($stderr);
	return join("\n", grep { !/^--/ && !/^\s*$/ && !/^\\(un)?restrict / } split /\n/, $stdout);
}
my $old_dump   = schema_dump('old');
my $fresh_dump = schema_dump('fresh');
like($fresh_dump, qr/CREATE EXTENSION IF NOT EXISTS quota_sched WITH SCHEMA quota_sched;/,
	'fresh: the dump creates the extension');
ok($old_dump eq $fresh_dump, 'pg_dump --schema-only: the upgraded database as a fresh one')
  or diag(line_diff($old_dump, $fresh_dump));

# pg_dump writes the extension's members themselves in its binary-upgrade
# mode (pg_upgrade's): every table, column, constraint, index, trigger,
# policy, view, function with its text, and privilege, in one order.
# Normalisation: what that mode adds about the storage (OIDs, relfrozenxid,
# the missing values of added columns: binary_upgrade_* calls and the
# pg_class updates, with their comment lines), the sequences' positions
# (data), comments, blank lines and \restrict.  The rest must be the same
# text.
sub member_dump
{
	my ($db) = @_;
	my ($stdout, $stderr) = ('', '');
	my $ok = IPC::Run::run(
		[ 'pg_dump', '--schema-only', '--binary-upgrade', '-h', $node->host, '-p', $node->port,
		  '-d', $db ],
		'>', \$stdout, '2>', \$stderr);
	ok($ok, "pg_dump --schema-only --binary-upgrade $db") or diag($stderr);
	$stdout =~ s/^UPDATE pg_catalog\.pg_class\n\s*SET rel\w+ = .*\n\s*WHERE oid = .*;\n//mg;
	return join("\n", grep { !/^--/ && !/^\s*$/ && !/^\\(un)?restrict / && !/binary_upgrade_/
						   && !/^SELECT pg_catalog\.setval\(/ }
		  split /\n/, $stdout);
}
sub member_dumps_agree
{
	my ($db, $what) = @_;
	my ($got, $want) = (member_dump($db), member_dump('fresh'));
	like($want, qr/^CREATE FUNCTION quota_sched\.claim\(/m, 'the member dump has the functions');
	ok($got eq $want, "pg_dump of the members: $what as a fresh install")
	  or diag(line_diff($got, $want));
}
member_dumps_agree('old', 'the database updated from 0.1');

#
# 5. The scheduler goes on with the old data.
#

# A pass right away decides nothing: every job that waits is blocked by a
# pending stop or a full share.  It reads the counters the upgrade made:
# without them it would dispatch c_wait into res's full capacity; with the
# pending stops not counted as stopping, it would preempt a_low as well for
# b_gpu (both tried with a broken upgrade script).
is(run_pass_of('old', 'up_queue'), '', 'old, upgraded: a pass decides nothing while the stops are pending');
counters_consistent('old', 'after a pass with no decision');

# The jobs claimed in 0.1 have no agent_role: the update cannot know which
# login claimed them.  Any agent login may act on them, as in 0.1.
is(sql('old', q{SELECT count(*) FROM quota_sched.job WHERE agent_role IS NOT NULL}), '0',
	'old, upgraded: no job has an agent_role');

# The agent learns of the pending stops and carries them out; it reports
# the end of c_run (from another agent login) and q2_run.
is(as_role('old', 'regress_up_agent', q{
	SELECT string_agg(j.name || ' ' || h.stop_reason, ', ' ORDER BY j.name COLLATE "C")
	  FROM quota_sched.heartbeat('agent-1', lease => '1 hour') h
	  JOIN quota_sched.job j ON j.id = h.job_id WHERE h.stop_reason IS NOT NULL}),
	'a_borrow CROSS_SHARE_PREEMPTION, a_timeout TIMEOUT',
	'old, upgraded: the heartbeat returns the pending stops');
is(report('old', 'a_borrow', 'STOPPED'), 'RUNNABLE', 'old, upgraded: a_borrow stopped: RUNNABLE again');
counters_consistent('old', 'a_borrow stopped');
is(report('old', 'a_timeout', 'STOPPED'), 'FAILED',
	'old, upgraded: a_timeout stopped: its one attempt failed');
counters_consistent('old', 'a_timeout stopped');
is(report_as('old', 'regress_up_agent2', 'c_run', 'SUCCEEDED'), 'SUCCEEDED',
	'old, upgraded: c_run succeeded, reported by another agent login (claimed in 0.1, no role)');
counters_consistent('old', 'c_run succeeded');
is(report('old', 'q2_run', 'SUCCEEDED'), 'SUCCEEDED', 'old, upgraded: q2_run succeeded');
is(report('old', 'b_cpu', 'RUNNING'), 'RUNNING', 'old, upgraded: b_cpu started');
counters_consistent('old', 'q2_run succeeded, b_cpu started');

# Now b_gpu's victim is gone: the promised b_gpu is dispatched first, then
# c_wait on the capacity c_run left.  a_borrow waits: lend's capacity is
# b_gpu's now, and nothing else lends gpu.
is(run_pass_of('old', 'up_queue'), "b_gpu DISPATCH\nc_wait DISPATCH",
	'old, upgraded: the pass dispatches the promised b_gpu, then c_wait');
counters_consistent('old', 'after the pass');
is(claim('old', 'up_queue'), 'a_cpu STARTING, b_gpu STARTING, c_wait STARTING',
	'old, upgraded: the agent claims the dispatched jobs, a_cpu of before the upgrade among them');
counters_consistent('old', 'after the claims');
is(agent_roles('old', 'a_cpu,b_gpu,c_wait'),
	"a_cpu regress_up_agent\nb_gpu regress_up_agent\nc_wait regress_up_agent",
	'old, upgraded: claims record the claiming login');
{
	my ($ret, $stdout, $stderr) = $node->psql('old', q{
		SET ROLE regress_up_agent2;
		SELECT state FROM quota_sched.report(
			(SELECT id FROM quota_sched.job WHERE name = 'c_wait'), 'agent-1', 'RUNNING')});
	isnt($ret, 0, 'old, upgraded: another agent login may not report on a job claimed after the update');
	like($stderr,
		qr/ERROR:  role "regress_up_agent2" may not report on job \d+, which agent "agent-1" claimed as another role/,
		'old, upgraded: the refusal names the login and the agent');
	is(as_role('old', 'regress_up_agent2', q{
		SELECT count(*) FROM quota_sched.heartbeat('agent-1')
		 WHERE job_id IN (SELECT id FROM quota_sched.job WHERE name IN ('a_cpu', 'b_gpu', 'c_wait'))}),
		'0', 'old, upgraded: nor does its heartbeat cover them');
}

# 0.3's agents (doc/agents.md): the update made the table of agents, empty; the
# agent registers as its login, holding the jobs it claimed, and its
# heartbeat records its lease.
is(as_role('old', 'regress_up_admin', 'SELECT count(*) FROM quota_sched.agent'), '0',
	'old, upgraded: no agent is registered');
is(as_role('old', 'regress_up_agent', q{
	SELECT concat_ws(' ', name, login, job_queue, capacity_unit, instances, state)
	  FROM quota_sched.agent_ready('agent-1', 'up_queue', 'gpu', 4)}),
	'agent-1 regress_up_agent up_queue gpu 4 ACTIVE', 'old, upgraded: the agent registers');
as_role('old', 'regress_up_agent', q{SELECT count(*) FROM quota_sched.heartbeat('agent-1', '1 hour')});
is(as_role('old', 'regress_up_agent', q{
	SELECT concat_ws(' ', agent, state, live, held_jobs > 0)
	  FROM quota_sched.agents}), 'agent-1 ACTIVE t t',
	'old, upgraded: the agents view shows it live, holding its jobs');
is(as_role('old', 'regress_up_admin', q{SELECT lease FROM quota_sched.agent}), '01:00:00',
	'old, upgraded: its heartbeat recorded its lease');

# A new submission gets an id above the old ones, is dispatched on lab's
# free cpu, and is counted.
as_role('old', 'regress_up_alice', q{
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
VALUES ('a_new', 'up_queue', 'lab', 'cpu');
});
cmp_ok(sql('old', q{SELECT id FROM quota_sched.job WHERE name = 'a_new'}), '>',
	(sort { $b <=> $a } keys %$jobs_before)[0], 'old, upgraded: a new job id is above the old ones');
is(run_pass_of('old', 'up_queue'), 'a_new DISPATCH', 'old, upgraded: the new job is dispatched');
counters_consistent('old', 'after the new job');

my $states_after = <<'JOBS';
a_borrow RUNNABLE - for:b_gpu - CROSS_SHARE_PREEMPTION
a_cpu STARTING - - - -
a_low RUNNING - - - -
a_new SCHEDULED - - - -
a_timeout FAILED - - - TIMEOUT
b_cpu RUNNING - - - -
b_gpu STARTING - - - -
c_big RUNNABLE - - - MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED
c_done SUCCEEDED - - - -
c_fail FAILED - - - FAILED
c_run SUCCEEDED - - - -
c_wait STARTING - - - -
q2_run SUCCEEDED - - - -
JOBS
chomp $states_after;
is(jobs('old'), $states_after, 'old, upgraded: the jobs in the end');
my $held_end = <<'HELD';
up_queue lab cpu 2 0 2
up_queue lab gpu 2 0 1
up_queue lend cpu 2 0 1
up_queue lend gpu 2 0 1
up_queue res gpu 1 0 1
HELD
chomp $held_end;
is(sql('old', $recount), $held_end, 'old, upgraded: what they hold in the end');

# 6, updated.
sql('long', q{ALTER EXTENSION quota_sched UPDATE});
is(sql('long', q{SELECT timeout FROM quota_sched.job WHERE name = 'long_job'}), '365 days',
	'long, upgraded: a timeout of 300,000 years becomes 365 days');
is(sql('long', q{SELECT runnable_timeout FROM quota_sched.job_queue WHERE name = 'long_queue'}),
	'365 days', 'long, upgraded: so does a runnable_timeout');
is(sql('long', q{SELECT count(*) FROM quota_sched.run_pass('long_queue')}), '0',
	'long, upgraded: the queue\'s pass runs');

#
# 7. Teams on the upgraded data (the policies and the checks of explain and
# terminate of 0.2): bob, a member of res's submit_role, sees carol's jobs
# of res that 0.1 made, with their history, explains, reprioritises and
# terminates them; alice, in no team, sees none of them and is refused.
#
my $all_res_events = sql('old', $res_events);
cmp_ok($all_res_events, '>', 10, 'old, upgraded: res\'s jobs have their history');
is(as_role('old', 'regress_up_bob', $res_jobs), 'c_big c_done c_fail c_run c_wait',
	'old, upgraded: bob sees every job of res, carol\'s of 0.1 included');
is(as_role('old', 'regress_up_bob', $res_events), $all_res_events,
	'old, upgraded: and all of their history');
is(as_role('old', 'regress_up_bob', q{
	SELECT job_queue || ' ' || quota_share FROM quota_sched.team_shares()}), 'up_queue res',
	'old, upgraded: team_shares() names bob\'s team share');
is(as_role('old', 'regress_up_bob', q{
	SELECT quota_sched.explain(id) ->> 'blocked_by' FROM quota_sched.job WHERE name = 'c_big'}),
	'MISCONFIGURATION', 'old, upgraded: bob explains carol\'s c_big');
is(as_role('old', 'regress_up_bob', q{
	UPDATE quota_sched.job SET priority = 4 WHERE name = 'c_big' RETURNING priority}), '4',
	'old, upgraded: bob reprioritises carol\'s c_big');
is(as_role('old', 'regress_up_bob', q{
	SELECT state || ' ' || status_reason
	  FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'c_big'), 'by bob')}),
	'FAILED by bob', 'old, upgraded: bob terminates carol\'s c_big');
is(as_role('old', 'regress_up_alice', $res_jobs), '', 'old, upgraded: alice sees none of res\'s jobs');
is(as_role('old', 'regress_up_alice', $res_events), '0',
	'old, upgraded: nor their history');
{
	# the id read as the superuser: alice does not see the job
	my $c_wait = sql('old', q{SELECT id FROM quota_sched.job WHERE name = 'c_wait'});
	my ($ret, $stdout, $stderr) = $node->psql('old', qq{SET ROLE regress_up_alice;
		SELECT quota_sched.explain($c_wait)});
	isnt($ret, 0, 'old, upgraded: alice may not explain carol\'s c_wait');
	like($stderr, qr/may not explain job \d+, which it does not own/,
		'old, upgraded: refused as another\'s job (42501)');
}
counters_consistent('old', 'after the team\'s changes');

#
# 9, updated.
#
sql('two', 'ALTER EXTENSION quota_sched UPDATE');
is(sql('two', q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $current,
	"two: updated to $current");
is_deeply(table_rows('two', $two_columns), $two_rows_before, 'two, updated: every row as it was');
my $two_schema = describe_schema('two');
foreach my $section (sort keys %catalog)
{
	ok($two_schema->{$section} eq $fresh_schema->{$section},
		"schema updated from 0.2 as a fresh install: $section")
	  or diag(line_diff($two_schema->{$section}, $fresh_schema->{$section}));
}
member_dumps_agree('two', 'the database updated from 0.2');
counters_consistent('two', 'after the update');
ok(defined(run_pass_of('two', 'up_queue')), 'two, updated: a pass runs on the old rows');
counters_consistent('two', 'after a pass');

# The rollup of 0.2 kept as it was: failed 2, terminated 0 (the update
# added the column with 0); terminations after the update count apart
# (od_new, terminated while it waits), in utilization() and metrics().
is(sql('two', qq{SELECT failed || ' ' || terminated FROM quota_sched.usage_hourly
				  WHERE job_queue = 'od_queue' AND quota_share = 'od' AND hour = '$old_hour'}),
	'2 0', 'two, updated: the rollup of 0.2 keeps its counts (terminations in failed)');
is(sql('two', q{INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit)
				VALUES ('od_new', 'od_queue', 'od', 'gpu');
			  SELECT name || ' ' || state FROM quota_sched.terminate(
				(SELECT id FROM quota_sched.job WHERE name = 'od_new'), 'not needed')}),
	'od_new FAILED', 'two, updated: a job waiting is terminated');
my $od_span = qq{'$old_hour'::timestamptz, date_trunc('hour', now()) + interval '1 hour',
	date_trunc('hour', now()) + interval '1 hour' - '$old_hour'::timestamptz};
is(sql('two', qq{SELECT string_agg(coalesce(quota_share, 'env') || ' ' || failed || ' ' || terminated, ', '
						ORDER BY quota_share NULLS FIRST)
				   FROM quota_sched.utilization('od_queue', $od_span)}),
	'env 2 1, ob 0 0, od 2 1', 'two, updated: utilization() counts the old rollup\'s failures and the new termination apart');
# Who lent to whom: nothing computed by the update; the next rollup()
# computes the hours 0.2 rolled up from their history (od lent ob 1 gpu
# for 10 minutes), and lending() reads them.
is(sql('two', q{SELECT count(*) FROM quota_sched.lending_hourly}), '0',
	'two, updated: the update computes no lending');
sql('two', 'SELECT quota_sched.rollup()');
is(sql('two', qq{SELECT string_agg(capacity_unit || ' ' || coalesce(lender, 'unassigned') || ' ' || borrower
						|| ' ' || instance_seconds, ', ')
				   FROM quota_sched.lending_hourly WHERE job_queue = 'od_queue' AND hour = '$old_hour'}),
	'gpu od ob 600', 'two, updated: the next rollup computes the lending of the hours 0.2 rolled up');
is(sql('two', qq{SELECT (SELECT lent_until FROM quota_sched.usage_rollup WHERE job_queue = 'od_queue')
						= (SELECT rolled_until FROM quota_sched.usage_rollup WHERE job_queue = 'od_queue')}),
	't', 'two, updated: lending rolled up as far as the rest');
is(sql('two', qq{SELECT string_agg(lender_share || ' ' || borrower_share || ' ' || instance_seconds, ', ')
				   FROM quota_sched.lending('od_queue', $od_span)}),
	'od ob 600', 'two, updated: lending() reads it');
is(sql('two', q{SELECT string_agg(l, ', ' ORDER BY l)
				  FROM regexp_split_to_table(quota_sched.metrics(), E'\n') AS l
				 WHERE l ~ '^quota_sched_jobs_(failed|terminated)_total\{job_queue="od_queue",quota_share="od"'}),
	'quota_sched_jobs_failed_total{job_queue="od_queue",quota_share="od",capacity_unit="gpu"} 2, '
	  . 'quota_sched_jobs_terminated_total{job_queue="od_queue",quota_share="od",capacity_unit="gpu"} 1',
	'two, updated: metrics() keeps the old failures and counts the new termination apart');

# Budgets (scheduling.md 3.11): the update filled what each share held this
# day, week and month from the history (utilization() of 0.2), so that a
# budget set after the update counts the whole period; nothing else
# changed: no share has a budget, no queue a half-life.
is(sql('two', q{SELECT count(*) FROM quota_sched.quota_share WHERE budget <> '{}' OR budget_period <> 'MONTH'})
	  . ' ' . sql('two', q{SELECT count(*) FROM quota_sched.job_queue WHERE fair_half_life IS NOT NULL}),
	'0 0', 'two, updated: no budget, no half-life');
sql('two', q{UPDATE quota_sched.quota_share SET budget = '{"gpu": 1000}', budget_period = p.period
			   FROM (VALUES ('od', 'DAY'), ('ob', 'MONTH')) AS p(share, period)
			  WHERE job_queue = 'od_queue' AND name = p.share});
my $spent_vs_used = q{
	SELECT string_agg(b.quota_share || ' ' || (abs(b.spent_hours * 3600 - coalesce(u.used, 0)) < 0.01), ', '
					  ORDER BY b.quota_share)
	  FROM quota_sched.share_budget b
	  LEFT JOIN LATERAL (SELECT sum(x.used_instance_seconds) AS used
						   FROM quota_sched.utilization(b.job_queue, b.period_start, now(),
														now() - b.period_start) x
						  WHERE x.quota_share = b.quota_share AND x.capacity_unit = b.capacity_unit) u ON true
	 WHERE b.job_queue = 'od_queue'};
is(sql('two', $spent_vs_used), 'ob true, od true',
	'two, updated: what a budget counts as spent this period is what the history says was held');
is(sql('two', qq{SELECT ((SELECT spent_hours FROM quota_sched.share_budget WHERE quota_share = 'ob'
						   AND job_queue = 'od_queue') > 0)
						= ('$old_hour'::timestamptz + interval '30 minutes'
						   >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')}),
	't', 'two, updated: ob\'s 10 minutes of 2 gpus count in its month when they were in it');
#
# 10, updated.
#
sql('three', 'ALTER EXTENSION quota_sched UPDATE');
is(sql('three', q{SELECT extversion FROM pg_extension WHERE extname = 'quota_sched'}), $current,
	"three: updated to $current");
is_deeply(table_rows('three', $three_columns), $three_rows_before, 'three, updated: every other row as it was');
is(sql('three', q{SELECT string_agg(concat_ws(' ', victim_share, victim_name, victim_ran, preemptor_share,
											  preemptor_name, reason), ', ')
					FROM quota_sched.preemptions}),
	'res c_done 00:07:00 lend b_gpu CROSS_SHARE_PREEMPTION',
	'three, updated: the preemption kept in the history of 0.3 is in job_preemption, as preemptions showed it');
is($agents_before, 'three-gone regress_up_gone 00:01:00, three-long regress_up_agent2 2 days',
	'three, 0.3: its agents');
is(sql('three', q{SELECT string_agg(name || ' ' || login || ' ' || lease, ', ' ORDER BY name)
					FROM quota_sched.agent WHERE name LIKE 'three-%'}),
	'three-gone regress_up_gone 00:01:00, three-long regress_up_agent2 01:00:00',
	'three, updated: the agents kept, a registration\'s lease cut to an hour');
is(sql('three', q{SELECT string_agg(concat_ws(' ', a.agent, a.labels, a.address, a.state, a.draining_since IS NULL,
										   t.state_changed_at >= t.registered_at), ', ' ORDER BY a.agent)
					FROM quota_sched.agents a JOIN quota_sched.agent t ON t.name = a.agent
				   WHERE a.agent LIKE 'three-%'}),
	'three-gone {} three-gone ACTIVE t t, three-long {} three-long ACTIVE t t',
	'three, updated: the agents of 0.3 have no labels, their name as address, ACTIVE since the update');
is(sql('three', q{SELECT count(*) FROM quota_sched.job_attempt}), $outputs_before,
	'three, updated: the attempts kept');
is(sql('three', q{SELECT output = quota_sched.safe_output(E'done\x1b]0;owned\x07\r\n')
						AND strpos(output, chr(27)) = 0 AND strpos(output, chr(7)) = 0
						AND strpos(output, chr(13)) = 0
				   FROM quota_sched.job_attempt WHERE output LIKE 'done%'}),
	't',
	'three, updated: the output kept is made safe to show (its control characters as pictures)');
is(sql('three', q{SELECT string_agg(login || ' ' || coalesce(job_queue, 'every queue'), ', '
									ORDER BY login, job_queue)
					FROM quota_sched.agent_access WHERE login LIKE 'regress\_up\_%'}),
	'regress_up_agent every queue, regress_up_agent2 every queue',
	'three, updated: each agent login serves every queue, as in 0.3');
my $three_schema = describe_schema('three');
foreach my $section (sort keys %catalog)
{
	ok($three_schema->{$section} eq $fresh_schema->{$section},
		"schema updated from 0.3 as a fresh install: $section")
	  or diag(line_diff($three_schema->{$section}, $fresh_schema->{$section}));
}
member_dumps_agree('three', 'the database updated from 0.3');
counters_consistent('three', 'after the update');
ok(defined(run_pass_of('three', 'up_queue')), 'three, updated: a pass runs on the old rows');
counters_consistent('three', 'after a pass');
is(as_role('three', 'regress_up_agent2', q{
		SELECT name || ' ' || job_queue FROM quota_sched.agent_ready('three-long', 'up_q2', 'gpu', 4)}),
	'three-long up_q2', 'three, updated: a login registers as before');
is(as_role('three', 'regress_up_agent2', q{
		SELECT concat_ws(' ', name, labels, address)
		  FROM quota_sched.agent_ready('three-long', 'up_q2', 'gpu', 4, '{"rack": "r2"}', '10.0.0.2')}),
	'three-long {"rack": "r2"} 10.0.0.2', 'three, updated: and with labels and an address');
ok(defined(claim('three', 'up_queue')), 'three, updated: and claims as before');
sql('three', q{
	INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('regress_up_agent2', 'up_queue');
	DELETE FROM quota_sched.agent_access WHERE login = 'regress_up_agent2' AND job_queue IS NULL});
my ($ret, $stdout, $stderr) = $node->psql('three', q{SET ROLE regress_up_agent2;
	SELECT quota_sched.agent_ready('three-long', 'up_q2', 'gpu', 4)});
like($stderr, qr/login "regress_up_agent2" may not serve job queue "up_q2"/,
	'three, narrowed: a login is refused where it no longer serves');
is(sql('three', q{SELECT count(*) FROM quota_sched.agent WHERE name LIKE 'three-%'}), '0',
	'three, narrowed: its agent of that queue is forgotten, and so is the agent of a login that no longer exists');

# The placement constraints of 0.4 (issue 39): the jobs of 0.3 have none;
# a submitter sets them on the updated database, and a bad one is refused.
is(sql('three', q{SELECT count(*) FROM quota_sched.job
				   WHERE instances_per_host IS NOT NULL OR same_label IS NOT NULL}),
	'0', 'three, updated: the jobs of 0.3 have no instances_per_host, no same_label');
is(as_role('three', 'regress_up_alice', q{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
									 instances_per_host, same_label)
		VALUES ('three_placed', 'up_queue', 'lab', 'cpu', 2, 1, 'rack')
		RETURNING instances_per_host || ' ' || same_label}),
	'1 rack', 'three, updated: a submission sets instances_per_host and same_label');
($ret, $stdout, $stderr) = $node->psql('three', qq{\\set VERBOSITY verbose
	SET ROLE regress_up_alice;
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
								 instances_per_host)
	VALUES ('three_misplaced', 'up_queue', 'lab', 'cpu', 4, 3)});
like($stderr, qr/ERROR:  23514: instances_per_host 3 does not divide instance_count 4/,
	'three, updated: an instances_per_host that does not divide instance_count is refused (23514)');

#
# 11, updated: the jobs that ran on the hosts of 0.3 keep running on them,
# their parts derived from the jobs (no job_part rows), and the pass
# counts them on those hosts: a job that fits the pool but not the room
# left on the hosts waits WAITING_FOR_HOSTS, one that fits goes to the host
# with room, and no host is booked beyond its instances.
#
is(sql('three', q{
	SELECT count(*) FILTER (WHERE part_agents IS NOT NULL OR part_instances IS NOT NULL) || ' '
		   || (SELECT count(*) FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id
				WHERE j.job_queue = 'h_queue')
	  FROM quota_sched.job WHERE job_queue = 'h_queue'}),
	'0 0', 'three, updated: the update wrote no parts for the jobs claimed on hosts of 0.3');
# the parts of h_queue's jobs as their owner sees them (job_parts):
# "job attempt rank agent address instances state"
my $h_parts = q{
	SELECT string_agg(concat_ws(' ', j.name, p.attempt, p.rank, p.agent, p.address, p.instances, p.state),
					  E'\n' ORDER BY j.name COLLATE "C", p.attempt, p.rank)
	  FROM quota_sched.job_parts p JOIN quota_sched.job j ON j.id = p.job_id
	 WHERE j.job_queue = 'h_queue'};
is(as_role('three', 'regress_up_alice', $h_parts), <<'PARTS' =~ s/\n\z//r,
h_old 1 0 h-1 h-1 1 RUNNING
h_start 1 0 h-2 h-2 1 CLAIMED
h_three 1 0 h-1 h-1 3 RUNNING
h_two 1 0 h-2 h-2 2 RUNNING
PARTS
	'three, updated: job_parts derives each one\'s part: rank 0 on its agent, its instances and state');
is(sql('three', q{
	SELECT string_agg((to_jsonb(a) - 'rank' - 'devices' - 'port')::text, E'\n' ORDER BY a.job_id)
	  FROM quota_sched.job_attempt a JOIN quota_sched.job j ON j.id = a.job_id
	 WHERE j.job_queue = 'h_queue'}),
	$h_attempts_before, 'three, updated: their attempts as they were');
is(as_role('three', 'regress_up_alice', q{
	SELECT string_agg(concat_ws(' ', name, attempt, rank, agent, host), ', ' ORDER BY name COLLATE "C")
	  FROM quota_sched.job_attempts WHERE job_queue = 'h_queue'}),
	'h_old 1 0 h-1 h-1.example, h_start 1 0 h-2 h-2.example, h_three 1 0 h-1 h-1.example, '
	  . 'h_two 1 0 h-2 h-2.example',
	'three, updated: job_attempts shows each attempt as rank 0, where it runs');

# The agents, as the agent of 0.3 refreshes them (agent_ready's four
# arguments): live, each holding what runs on it.
is(as_role('three', 'regress_up_agent', q{
	SELECT string_agg(concat_ws(' ', a.name, a.instances, a.state), ', ' ORDER BY a.name)
	  FROM unnest(ARRAY['h-1', 'h-2']) AS n(name),
		   quota_sched.agent_ready(n.name, 'h_queue', 'gpu', 4) a}),
	'h-1 4 ACTIVE, h-2 4 ACTIVE', 'three, updated: the agents of 0.3 register again as before');
# "agent live instances held_jobs held_instances free_instances", and what
# is booked on each host by the parts (derived or not) of the jobs that
# hold capacity
my $h_agents = q{
	SELECT string_agg(concat_ws(' ', agent, live, instances, held_jobs, held_instances, free_instances),
					  E'\n' ORDER BY agent)
	  FROM quota_sched.agents WHERE job_queue = 'h_queue'};
my $h_booked = q{
	SELECT string_agg(concat_ws(' ', a.name, a.instances, coalesce(b.booked, 0),
								coalesce(b.booked, 0) <= a.instances),
					  E'\n' ORDER BY a.name)
	  FROM quota_sched.agent a
	  LEFT JOIN (SELECT p.agent, sum(p.instances) AS booked
				   FROM quota_sched.job_parts p JOIN quota_sched.job j ON j.id = p.job_id
				  WHERE j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')
					AND p.state IN ('PLACED', 'CLAIMED', 'RUNNING')
				  GROUP BY p.agent) b ON b.agent = a.name
	 WHERE a.job_queue = 'h_queue'};
is(as_role('three', 'regress_up_agent', $h_agents), "h-1 t 4 2 4 0\nh-2 t 4 2 3 1",
	'three, updated: the agents view counts what runs on each agent, and its free instances');
is(sql('three', $h_booked), "h-1 4 4 t\nh-2 4 3 t",
	'three, updated: the parts book no host beyond its instances');

# They keep running: each agent's heartbeat renews its jobs' leases and
# asks no stop.
foreach my $hb ([ 'h-1', 'h_old, h_three' ], [ 'h-2', 'h_start, h_two' ])
{
	my ($agent, $names) = @$hb;
	is(as_role('three', 'regress_up_agent', qq{
		SELECT concat_ws(' ', string_agg(j.name, ', ' ORDER BY j.name COLLATE "C"),
						 bool_and(h.stop_reason IS NULL),
						 bool_and(h.lease_until > now() + interval '119 minutes'))
		  FROM quota_sched.heartbeat('$agent', lease => '2 hours') h
		  JOIN quota_sched.job j ON j.id = h.job_id}),
		"$names t t", "three, updated: $agent\'s heartbeat returns $names, no stop, their leases renewed");
}
is(sql('three', q{
	SELECT string_agg(concat_ws(' ', name, lease_until > now() + interval '119 minutes'), ', '
					  ORDER BY name COLLATE "C")
	  FROM quota_sched.job WHERE job_queue = 'h_queue'}),
	'h_old t, h_start t, h_three t, h_two t', 'three, updated: the jobs\' leases are renewed');
counters_consistent('three', 'the jobs on hosts of 0.3 heartbeat');

# The pass counts them on their hosts: h_wait (2 gpu) fits the pool (7 of
# its 10 gpu held) but no host has 2 free (h-1 0, h-2 1): it waits
# WAITING_FOR_HOSTS (were the derived parts not counted, it would go to an
# empty host); h_fit (1) goes to h-2, the one host with room.
as_role('three', 'regress_up_alice', q{
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('h_wait', 'h_queue', 'h_share', 'gpu', 2)});
is(run_pass_of('three', 'h_queue'), '', 'three, updated: the pass does not dispatch h_wait');
is(as_role('three', 'regress_up_alice', q{
	SELECT concat_ws(' ', j.state, j.status_reason, e ->> 'blocked_by', e ->> 'hosts', e ->> 'largest_free',
					 e ->> 'free_instances')
	  FROM quota_sched.job j, quota_sched.explain(j.id) e WHERE j.name = 'h_wait'}),
	'RUNNABLE WAITING_FOR_HOSTS WAITING_FOR_HOSTS 2 1 1',
	'three, updated: h_wait waits for hosts, explain counting 1 free on 2 hosts');
as_role('three', 'regress_up_alice', q{
	INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count)
	VALUES ('h_fit', 'h_queue', 'h_share', 'gpu', 1)});
is(run_pass_of('three', 'h_queue'), 'h_fit DISPATCH', 'three, updated: the pass dispatches h_fit');
is(sql('three', q{SELECT concat_ws(' ', part_agents, part_instances) FROM quota_sched.job WHERE name = 'h_fit'}),
	'{h-2} {1}', 'three, updated: h_fit is placed on h-2, the host with room');
is(sql('three', $h_booked), "h-1 4 4 t\nh-2 4 4 t",
	'three, updated, h_fit placed: no host booked beyond its instances');
is(as_role('three', 'regress_up_agent', $h_agents), "h-1 t 4 2 4 0\nh-2 t 4 3 4 0",
	'three, updated, h_fit placed: the agents view counts it on h-2');
counters_consistent('three', 'h_fit dispatched');

# The agent of 0.3 claims as before (claim's arguments of 0.3): h-1 gets
# nothing, h_fit being placed on h-2, which gets it.
is(claim_on('three', 'h-1', 10, 4), '', 'three, updated: h-1\'s claim takes nothing');
is(claim_on('three', 'h-2', 10, 4), 'h_fit STARTING', 'three, updated: h-2 claims h_fit');

# Their agents report as before: h_start runs (its derived part RUNNING),
# h_three succeeds, and the room it leaves on h-1 takes h_wait.
is(report_on('three', 'h_start', 'h-2', 'RUNNING'), 'RUNNING', 'three, updated: h_start runs');
is(report_on('three', 'h_three', 'h-1', 'SUCCEEDED'), 'SUCCEEDED', 'three, updated: h_three succeeds');
counters_consistent('three', 'h_three succeeded');
is(as_role('three', 'regress_up_agent', $h_agents), "h-1 t 4 1 1 3\nh-2 t 4 3 4 0",
	'three, updated, h_three succeeded: h-1 has 3 free');
is(run_pass_of('three', 'h_queue'), 'h_wait DISPATCH', 'three, updated: the pass dispatches h_wait');
is(sql('three', q{SELECT concat_ws(' ', part_agents, part_instances) FROM quota_sched.job WHERE name = 'h_wait'}),
	'{h-1} {2}', 'three, updated: h_wait is placed on h-1');
is(as_role('three', 'regress_up_alice', $h_parts), <<'PARTS' =~ s/\n\z//r,
h_fit 1 0 h-2 h-2 1 CLAIMED
h_old 1 0 h-1 h-1 1 RUNNING
h_start 1 0 h-2 h-2 1 RUNNING
h_two 1 0 h-2 h-2 2 RUNNING
h_wait 1 0 h-1 h-1 2 PLACED
PARTS
	'three, updated: job_parts shows the derived parts beside those placed since');
is(sql('three', $h_booked), "h-1 4 3 t\nh-2 4 4 t",
	'three, updated, h_wait placed: no host booked beyond its instances');
counters_consistent('three', 'h_wait dispatched');

# A stop reaches a job of 0.3 through its agent's heartbeat: alice
# terminates h_old, h-1 is told, stops it, and its instance is free.
is(as_role('three', 'regress_up_alice', q{
	SELECT concat_ws(' ', state, stop_reason)
	  FROM quota_sched.terminate((SELECT id FROM quota_sched.job WHERE name = 'h_old'), 'not needed')}),
	'RUNNING TERMINATED', 'three, updated: alice terminates h_old: a stop is pending');
is(as_role('three', 'regress_up_agent', q{
	SELECT string_agg(concat_ws(' ', j.name, coalesce(h.stop_reason, '-')), ', ' ORDER BY j.name COLLATE "C")
	  FROM quota_sched.heartbeat('h-1', lease => '2 hours') h JOIN quota_sched.job j ON j.id = h.job_id}),
	'h_old TERMINATED', 'three, updated: h-1\'s heartbeat tells it to stop h_old');
is(report_on('three', 'h_old', 'h-1', 'STOPPED'), 'FAILED', 'three, updated: h_old stopped: terminated');
counters_consistent('three', 'h_old terminated');
is(sql('three', $h_booked), "h-1 4 2 t\nh-2 4 4 t", 'three, updated, h_old terminated: its instance is free');
is(as_role('three', 'regress_up_agent', $h_agents), "h-1 t 4 1 2 2\nh-2 t 4 3 4 0",
	'three, updated, h_old terminated: h-1 has 2 free');

# Dependencies of 0.4 (issue 41) on the updated database: the jobs of 0.3
# have none and no dependents; a new job depends on h_start, claimed in
# 0.3 and running: held back DEPENDENCY while h-1 has room, dispatched
# once h_start has succeeded.
is(sql('three', q{SELECT count(*) FROM quota_sched.job
				   WHERE depends_on IS NOT NULL OR dependencies_waiting IS NOT NULL
				      OR dependency_failed IS NOT NULL OR has_dependents IS NOT NULL}),
	'0', 'three, updated: the jobs of 0.3 depend on nothing and have no dependents');
is(as_role('three', 'regress_up_alice', q{
		INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count,
									 depends_on)
		SELECT 'h_after', job_queue, quota_share, 'gpu', 1, ARRAY[id]
		  FROM quota_sched.job WHERE name = 'h_start'
		RETURNING concat_ws(' ', state, status_reason, dependencies_waiting)}),
	'RUNNABLE DEPENDENCY 1', 'three, updated: a job depending on a job of 0.3 waits for it');
is(run_pass_of('three', 'h_queue'), '', 'three, updated: the pass does not dispatch h_after');
is(report_on('three', 'h_start', 'h-2', 'SUCCEEDED'), 'SUCCEEDED', 'three, updated: h_start succeeds');
is(sql('three', q{SELECT concat_ws(' ', state, dependencies_waiting) FROM quota_sched.job
				   WHERE name = 'h_after'}),
	'RUNNABLE', 'three, updated: h_after waits no more');
is(run_pass_of('three', 'h_queue'), 'h_after DISPATCH', 'three, updated: the pass dispatches h_after');

$node->stop;
done_testing();
