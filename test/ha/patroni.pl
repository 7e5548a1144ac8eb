# quota_sched under Patroni (issue 25, item 1), with the real components: a
# local etcd, three Patroni-managed PostgreSQL 15 nodes with quota_sched
# preloaded and synchronous_mode on, a submitter inserting jobs (each
# acknowledged submission written down), two quota-sched-agent processes
# running short real commands, all on a multi-host connection string with
# target_session_attrs=read-write.  Meanwhile: a `patronictl switchover`;
# a SIGKILL of the leader's postmaster (Patroni restarts it in place: no
# failover); a crash of the leader's node (its Patroni, its postmaster and
# the postmaster's processes SIGKILLed: a real failover to the synchronous
# standby); the old leader
# started again, rejoining as a replica.  A monitor samples every node
# all along.  Checked after: every acknowledged submission exists once;
# each job ran once per attempt and its end was reported once; nothing is
# lost or doubled; no node ever ran a pass while in recovery, and no two
# nodes ran the worker as primaries at once; how long dispatch stopped at
# each event (printed, and written to tmp_check/ha_figures.txt).
#
# Run by test/ha/run (as root: it installs patroni and etcd, builds and
# installs the extension, then runs this as the postgres user).
use strict;
use warnings;
use PostgreSQL::Test::Utils;
use PostgreSQL::Test::Cluster;
use Test::More;
use IPC::Run;
use HTTP::Tiny;
use JSON::PP;
use Time::HiRes qw(usleep time);
use POSIX ();

# the PostgreSQL of the first pg_config in PATH (test/run's: Debian's)
my $bindir = qx(pg_config --bindir 2>/dev/null) || '/usr/lib/postgresql/15/bin';
chomp $bindir;
my $agent_bin = -x "$bindir/quota-sched-agent" ? "$bindir/quota-sched-agent" : 'agent/quota-sched-agent';
my $tmp = PostgreSQL::Test::Utils::tempdir;
my $log = $PostgreSQL::Test::Utils::log_path;
my $http = HTTP::Tiny->new(timeout => 2);
my $timeout = $PostgreSQL::Test::Utils::timeout_default;
my @procs;    # every process started, stopped at the end (by the test, not its forks)
my $test_pid = $$;
END { if ($$ == $test_pid) { eval { $_->kill_kill(grace => 5) } foreach @procs; } }

sub port { return PostgreSQL::Test::Cluster::get_free_port(); }

# wait_until(CODE[, SECONDS]): whether CODE returns true in time (polled)
sub wait_until
{
	my ($code, $seconds) = @_;
	my $deadline = time() + ($seconds // $timeout);
	while (time() < $deadline)
	{
		return 1 if $code->();
		usleep(100_000);
	}
	return 0;
}

# ---------------------------------------------------------------------------
# etcd, and three Patroni nodes
# ---------------------------------------------------------------------------
my ($etcd_port, $peer_port) = (port(), port());
push @procs, IPC::Run::start(
	[
		'etcd', '--name', 'e1', '--data-dir', "$tmp/etcd",
		'--listen-client-urls', "http://127.0.0.1:$etcd_port",
		'--advertise-client-urls', "http://127.0.0.1:$etcd_port",
		'--listen-peer-urls', "http://127.0.0.1:$peer_port",
		'--initial-advertise-peer-urls', "http://127.0.0.1:$peer_port",
		'--initial-cluster', "e1=http://127.0.0.1:$peer_port"
	],
	'<', '/dev/null', '>', "$log/etcd.log", '2>&1');
ok(wait_until(sub { ($http->get("http://127.0.0.1:$etcd_port/health")->{content} // '') =~ /"health":"true"/ }),
	'etcd is up');

my @nodes = map { { name => "n$_", pg => port(), rest => port(), dir => "$tmp/n$_" } } 1 .. 3;
foreach my $n (@nodes)
{
	open my $fh, '>', "$tmp/$n->{name}.yml" or die "open: $!";
	print $fh <<"YML";
scope: qs_ha
namespace: /qs/
name: $n->{name}
restapi:
  listen: 127.0.0.1:$n->{rest}
  connect_address: 127.0.0.1:$n->{rest}
etcd3:
  hosts: 127.0.0.1:$etcd_port
bootstrap:
  dcs:
    ttl: 15
    loop_wait: 1
    retry_timeout: 5
    synchronous_mode: true
    postgresql:
      use_pg_rewind: true
      parameters:
        shared_preload_libraries: quota_sched
        quota_sched.database: postgres
        quota_sched.naptime: 200ms
        wal_log_hints: 'on'
        max_wal_senders: 10
        max_replication_slots: 10
        hot_standby: 'on'
        wal_keep_size: 256MB
  initdb:
    - encoding: UTF8
    - locale: C
  pg_hba:
    - local all all trust
    - host all all 127.0.0.1/32 trust
    - host replication all 127.0.0.1/32 trust
postgresql:
  listen: 127.0.0.1:$n->{pg}
  connect_address: 127.0.0.1:$n->{pg}
  data_dir: $n->{dir}
  bin_dir: $bindir
  pgpass: $tmp/pgpass_$n->{name}
  authentication:
    superuser: {username: postgres}
    replication: {username: postgres}
    rewind: {username: postgres}
  parameters:
    unix_socket_directories: '$tmp'
YML
	close $fh or die "close: $!";
}

sub start_patroni
{
	my ($n) = @_;
	# standard input from /dev/null, as systemd gives it: PostgreSQL
	# inherits it, and a backend that outlives its SIGKILLed postmaster
	# while it waits for synchronous replication may read it (the prompt
	# "backend>" in the log).  On a pipe nobody writes it would wait there
	# for ever, its client unanswered; on /dev/null it reads the end and
	# exits.
	$n->{patroni} = IPC::Run::start([ 'patroni', "$tmp/$n->{name}.yml" ],
		'<', '/dev/null', '>>', "$log/patroni_$n->{name}.log", '2>&1');
	push @procs, $n->{patroni};
}

# the cluster as Patroni's REST API on any live node describes it
sub members
{
	foreach my $n (@nodes)
	{
		my $r = $http->get("http://127.0.0.1:$n->{rest}/cluster");
		next unless $r->{success};
		return { map { $_->{name} => $_ } @{ decode_json($r->{content})->{members} } };
	}
	return {};
}
sub leader
{
	my $m = members();
	my ($l) = grep { $m->{$_}{role} eq 'leader' && $m->{$_}{state} eq 'running' } keys %$m;
	return $l;
}
sub node_named { my ($name) = @_; return (grep { $_->{name} eq $name } @nodes)[0]; }
# whether the cluster has a running leader and `want` replicas streaming
# from it, one of them synchronous
sub healthy
{
	my ($want) = @_;
	my $m = members();
	my @l = grep { $_->{role} eq 'leader' && $_->{state} eq 'running' } values %$m;
	my @r = grep { $_->{role} =~ /replica|standby/ && $_->{state} =~ /running|streaming/ } values %$m;
	my @s = grep { $_->{role} eq 'sync_standby' } @r;
	return @l == 1 && @r == $want && @s == 1;
}

start_patroni($nodes[0]);
ok(wait_until(sub { (leader() // '') eq 'n1' }, 2 * $timeout), 'n1 bootstraps the cluster and leads it');
start_patroni($_) foreach @nodes[ 1, 2 ];
ok(wait_until(sub { healthy(2) }, 3 * $timeout), 'n2 and n3 join, one of them the synchronous standby');

my $hosts = join ',', map { '127.0.0.1' } @nodes;
my $ports = join ',', map { $_->{pg} } @nodes;
my $multi = "host=$hosts port=$ports dbname=postgres target_session_attrs=read-write connect_timeout=2";

# psql(CONNINFO, SQL): (ok, output)
# psql(CONN, SQL[, SECONDS]): (whether it succeeded, its output or error);
# a psql still running after SECONDS (30) is killed and has failed, as a
# client with a timeout gives up on a node that does not answer
sub psql
{
	my ($conn, $sql, $seconds) = @_;
	my ($out, $err) = ('', '');
	my $ok = eval {
		IPC::Run::run([ "$bindir/psql", '-X', '-At', '-v', 'ON_ERROR_STOP=1', '-d', $conn, '-c', $sql ],
			'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout($seconds // 30));
	};
	return (0, "no answer in time: $@") if $@;
	chomp $out;
	return ($ok, $ok ? $out : $err);
}
sub primary_sql
{
	my ($sql) = @_;
	my ($ok, $out) = psql("$multi user=postgres", $sql);
	die "on the primary: $sql: $out" unless $ok;
	return $out;
}

primary_sql(<<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ha_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ha_queue', 'ha_env');
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
VALUES ('ha_queue', 'ha_share', '{"gpu": 4}', 'RESERVE');
CREATE ROLE launcher LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('launcher', NULL);
SQL
ok(wait_until(sub { (psql("$multi user=postgres",
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"))[1] eq '1' }),
	'the worker runs on the leader');

# ---------------------------------------------------------------------------
# The monitor: every 200 ms, each node's role and worker
# ---------------------------------------------------------------------------
my $samples = "$tmp/samples";
my $monitor = fork() // die "fork: $!";
if ($monitor == 0)
{
	open my $out, '>>', $samples or POSIX::_exit(1);
	$out->autoflush(1);
	while (!-e "$tmp/stop_monitor")
	{
		foreach my $n (@nodes)
		{
			my ($ok, $row) = psql("host=127.0.0.1 port=$n->{pg} dbname=postgres user=postgres connect_timeout=1",
				"SELECT pg_is_in_recovery(), (SELECT coalesce(sum(passes), 0) FROM quota_sched.pass_stats()),"
				  . " (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'quota_sched worker')", 5);
			printf $out "%.3f %s %s\n", time(), $n->{name}, $ok && $row =~ /^[tf]\|/ ? $row : 'down';
		}
		usleep(200_000);
	}
	POSIX::_exit(0);
}

# ---------------------------------------------------------------------------
# Two agents and a submitter
# ---------------------------------------------------------------------------
my $runs = "$tmp/runs";
my $payload = JSON::PP->new->canonical->encode(
	{
		command => [
			'sh', '-c', 'echo "$QUOTA_SCHED_JOB_ID $QUOTA_SCHED_ATTEMPT $QUOTA_SCHED_AGENT" >> "$1"; sleep 0.3',
			'sh', $runs
		]
	});
foreach my $a ('a1', 'a2')
{
	push @procs, IPC::Run::start(
		[
			$agent_bin, '--dbname', "$multi user=launcher application_name=$a", '--agent', $a,
			'--queue', 'ha_queue', '--same-user', '--instances', '2', '--lease', '60', '--heartbeat', '1',
			'--checkpoint-root', "$tmp/ckpt-$a"
		],
		'<', \undef, '>>', "$log/agent_$a.log", '2>&1');
}
# The submitter: one job every 100 ms, each with its client token; a
# submission is acknowledged (written to acked) once an INSERT ... ON
# CONFLICT DO NOTHING of its token has committed; until then it is retried.
my $acked = "$tmp/acked";
my $submitter = fork() // die "fork: $!";
if ($submitter == 0)
{
	open my $out, '>>', $acked or POSIX::_exit(1);
	$out->autoflush(1);
	for (my $i = 1; !-e "$tmp/stop_submit"; $i++)
	{
		until ((psql("$multi user=postgres",
			"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload, client_token)"
			  . " VALUES ('s$i', 'ha_queue', 'ha_share', 'gpu', '$payload', 'ha-$i')"
			  . " ON CONFLICT (client_token) DO NOTHING", 5))[0])
		{
			usleep(200_000);
		}
		print $out "$i\n";
		usleep(100_000);
	}
	POSIX::_exit(0);
}

sub dispatched { return (psql("$multi user=postgres",
		"SELECT count(*) FROM quota_sched.job_event WHERE kind = 'STATE' AND to_state = 'SCHEDULED'"))[1]; }
# more_dispatches(N): whether N more jobs are dispatched than now
sub more_dispatches
{
	my ($n) = @_;
	my $now;
	wait_until(sub { ($now = dispatched()) =~ /^\d+$/ });
	return wait_until(sub { my $d = dispatched(); $d =~ /^\d+$/ && $d >= $now + $n }, 3 * $timeout);
}
ok(more_dispatches(20), 'jobs are submitted, dispatched and run');

# crash_node(NODE): what a crash of NODE's machine does to its processes:
# its Patroni, its postmaster and every process of that postmaster
# SIGKILLed at once (none left to answer a client or to hold a WAL sender)
sub crash_node
{
	my ($n) = @_;
	my ($pm) = split /\n/, slurp_file("$n->{dir}/postmaster.pid");
	my @pids = ($pm);
	foreach my $stat (glob '/proc/[0-9]*/stat')
	{
		open my $fh, '<', $stat or next;
		my $line = <$fh> // '';
		push @pids, $1 if $line =~ /^(\d+) \(.*\) \S+ (\d+) / && $2 == $pm;
	}
	$n->{patroni}->signal('KILL');
	kill 'KILL', @pids;
}

my %events;
# ---- 1. switchover to the synchronous standby
my $old = leader();
my $m = members();
my ($sync) = grep { $m->{$_}{role} eq 'sync_standby' } keys %$m;
$events{switchover} = time();
my ($out, $err) = ('', '');
ok(IPC::Run::run([ 'patronictl', '-c', "$tmp/$old.yml", 'switchover', '--leader', $old, '--candidate', $sync, '--force' ],
		'>', \$out, '2>', \$err), "patronictl switchover from $old to $sync") or diag("$out$err");
ok(wait_until(sub { (leader() // '') eq $sync }, 2 * $timeout), "$sync leads");
ok(more_dispatches(20), 'dispatch goes on after the switchover');
ok(wait_until(sub { healthy(2) }, 3 * $timeout), "$old rejoins as a replica");

# ---- 2. SIGKILL of the leader's postmaster: Patroni restarts it in place
my $l = node_named(leader());
my ($pid) = split /\n/, slurp_file("$l->{dir}/postmaster.pid");
$events{postmaster_kill} = time();
kill 'KILL', $pid;
ok(more_dispatches(20), "dispatch goes on after $l->{name}'s postmaster was SIGKILLed");
is(leader() // '', $l->{name}, "$l->{name} still leads: Patroni restarted its PostgreSQL");
# in synchronous mode only the synchronous standby may be promoted: the
# crash below waits until the replicas stream again, one synchronous
ok(wait_until(sub { healthy(2) }, 3 * $timeout), 'the replicas stream from it again');

# ---- 3. the leader's node crashes: its Patroni and its postmaster SIGKILLed
$l = node_named(leader());
$m = members();
($sync) = grep { $m->{$_}{role} eq 'sync_standby' } keys %$m;
$events{failover} = time();
crash_node($l);
ok(wait_until(sub { my $x = leader(); defined $x && $x ne $l->{name} }, 3 * $timeout),
	"a failover: the leader is no longer $l->{name}");
is(leader(), $sync, "the synchronous standby ($sync) took over");
ok(more_dispatches(20), 'dispatch goes on after the failover');

# ---- 4. the old leader comes back, as a replica
$l->{patroni}->finish;
$events{rejoin} = time();
start_patroni($l);
ok(wait_until(sub { healthy(2) }, 3 * $timeout), "$l->{name} rejoins as a replica");
ok(more_dispatches(10), 'dispatch goes on');

# ---------------------------------------------------------------------------
# The end: every acknowledged job runs to its end
# ---------------------------------------------------------------------------
open my $stop, '>', "$tmp/stop_submit" or die;
close $stop;
ok(wait_until(sub { (psql("$multi user=postgres",
		"SELECT count(*) FILTER (WHERE state <> 'SUCCEEDED') FROM quota_sched.job"))[1] eq '0' }, 3 * $timeout),
	'every job succeeds');
waitpid($submitter, 0);    # its last round
my @acked = split /\n/, slurp_file($acked);
my %jobs = map { split /\|/ } split /\n/, primary_sql(
	"SELECT client_token, count(*) FROM quota_sched.job GROUP BY client_token");
ok(@acked >= 60, scalar(@acked) . ' submissions acknowledged');
my @lost = grep { !$jobs{"ha-$_"} } @acked;
is("@lost", '', 'every acknowledged submission exists');
is(scalar(grep { $_ != 1 } values %jobs), 0, 'once');

# each job ran once per attempt, and its end was reported once
my %ran;
my $ran_lines = slurp_file($runs);
$ran{"$1 $2"}++ while $ran_lines =~ /^(\d+) (\d+) \S+$/mg;
my @twice = grep { $ran{$_} > 1 } sort keys %ran;
is("@twice", '', 'no attempt of a job ran twice');
my %attempts = map { split /\|/ } split /\n/, primary_sql(
	"SELECT id, 1 + failed_attempts + preemption_count + lease_losses FROM quota_sched.job");
my @unrun = grep { !$ran{"$_ $attempts{$_}"} } sort { $a <=> $b } keys %attempts;
is("@unrun", '', 'every job ran its last attempt');
is(primary_sql("SELECT count(*) FROM (SELECT job_id FROM quota_sched.job_event"
	  . " WHERE kind = 'STATE' AND to_state = 'SUCCEEDED' GROUP BY job_id HAVING count(*) <> 1) x"),
	'0', 'each job\'s success was reported once');
my $retried = primary_sql("SELECT count(*) FROM quota_sched.job WHERE lease_losses + claim_requeues > 0");
note("jobs that lost a lease or a claim across the events: $retried");

# the worker: never a pass on a node in recovery, never two primaries' workers at once
open my $stopm, '>', "$tmp/stop_monitor" or die;
close $stopm;
waitpid($monitor, 0);
my (%last, @bad, %at);
foreach (split /\n/, slurp_file($samples))
{
	my ($t, $name, $row) = split / /, $_, 3;
	next if $row eq 'down';
	my ($recovery, $passes, $workers) = split /\|/, $row;
	push @bad, "$t $name: a pass in recovery" if $recovery eq 't' && defined $last{$name} && $passes > $last{$name};
	push @bad, "$t $name: a worker in recovery" if $recovery eq 't' && $workers > 0;
	$last{$name} = $passes;
	$at{ int($t * 5) }{$name} = 1 if $recovery eq 'f' && $workers > 0;
}
push @bad, map { "two primaries' workers at sample $_" } grep { keys %{ $at{$_} } > 1 } sort keys %at;
my %primaries = map { %{ $at{$_} } } keys %at;
ok(keys %at > 50 && keys %primaries >= 2,
	'the monitor saw the worker on ' . join(', ', sort keys %primaries) . ' in ' . scalar(keys %at) . ' samples');
is(scalar(@bad), 0, 'the worker ran only on the leader: no pass in recovery, never two at once') or diag("@bad[0..9]");

# how long dispatch stopped at each event: the longest time without a
# dispatch from the event to the next one (a job is submitted every 100 ms
# and there is room for it)
my @times = split /\n/, primary_sql(
	"SELECT extract(epoch FROM at) FROM quota_sched.job_event WHERE kind = 'STATE' AND to_state = 'SCHEDULED' ORDER BY at");
my @order = sort { $events{$a} <=> $events{$b} } keys %events;
my @figures;
foreach my $i (0 .. $#order)
{
	my ($from, $to) = ($events{ $order[$i] }, $i < $#order ? $events{ $order[ $i + 1 ] } : $times[-1]);
	my ($before) = reverse grep { $_ <= $from } @times;
	my @in = ($before // $from, grep { $_ > $from && $_ <= $to } @times);
	my $gap = 0;
	$gap = $in[$_] - $in[ $_ - 1 ] > $gap ? $in[$_] - $in[ $_ - 1 ] : $gap foreach 1 .. $#in;
	push @figures, sprintf('%s: dispatch stopped %.1f s', $order[$i], $gap) if @in > 1;
}
my $figures = join("\n", @figures, scalar(@acked) . " jobs acknowledged, $retried with a lease or claim lost") . "\n";
note($figures);
PostgreSQL::Test::Utils::append_to_file("$log/../ha_figures.txt", $figures);
is(scalar(@figures), 4, 'a figure for each event');

# ---------------------------------------------------------------------------
# What asynchronous replication loses: synchronous_mode off, the leader's
# WAL senders held (SIGSTOP) as a network partition or a slow link would
# hold them, five submissions acknowledged meanwhile (to a queue no agent
# serves), then the leader's node crashes.  The replica promoted has none
# of the five: each was acknowledged and is lost.  (Phase 3 above, the
# same crash with synchronous_mode on, lost none.)
# ---------------------------------------------------------------------------
primary_sql("INSERT INTO quota_sched.service_environment (name, capacity_limits) VALUES ('ha_env2', '{\"gpu\": 1}');"
	  . " INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('ha_async', 'ha_env2');"
	  . " INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)"
	  . " VALUES ('ha_async', 'ha_async_share', '{\"gpu\": 1}', 'RESERVE')");
$l = node_named(leader());
($out, $err) = ('', '');
ok(IPC::Run::run([ 'patronictl', '-c', "$tmp/$l->{name}.yml", 'edit-config', '--set', 'synchronous_mode=false', '--force' ],
		'>', \$out, '2>', \$err), 'patronictl edit-config: synchronous_mode off') or diag("$out$err");
my $leader_conn = "host=127.0.0.1 port=$l->{pg} dbname=postgres user=postgres";
ok(wait_until(sub { (psql($leader_conn, 'SHOW synchronous_standby_names'))[1] eq '' }),
	'the leader no longer waits for a standby');
# both replicas stream (Patroni may call a replica running before its WAL
# receiver has connected again)
my @senders;
ok(wait_until(sub {
	my ($ok, $pids) = psql($leader_conn, "SELECT pid FROM pg_stat_replication WHERE state = 'streaming'");
	@senders = $ok ? split /\n/, $pids : ();
	return @senders == 2;
}), 'two WAL senders stream');
kill 'STOP', @senders;
my $acked_async = 0;
foreach my $i (1 .. 5)
{
	$acked_async++ if (psql($leader_conn,
		"INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, client_token)"
		  . " VALUES ('async$i', 'ha_async', 'ha_async_share', 'gpu', 'async-$i')"))[0];
}
is($acked_async, 5, 'five submissions acknowledged by the leader');
$events{async_failover} = time();
crash_node($l);
ok(wait_until(sub { my $x = leader(); defined $x && $x ne $l->{name} }, 3 * $timeout),
	'a replica takes over');
ok(wait_until(sub { (psql("$multi user=postgres", 'SELECT 1'))[0] }), 'it takes writes');
my $kept = primary_sql("SELECT count(*) FROM quota_sched.job WHERE job_queue = 'ha_async'");
is($kept, '0', 'asynchronous replication: the five acknowledged submissions are lost');
PostgreSQL::Test::Utils::append_to_file("$log/../ha_figures.txt",
	sprintf("asynchronous, WAL senders held: %d of %d acknowledged submissions lost; the failover took %.1f s\n",
		5 - $kept, $acked_async, time() - $events{async_failover}));

done_testing();
