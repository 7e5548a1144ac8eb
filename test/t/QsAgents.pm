# QsAgents: what the TAP tests that run real quota-sched-agent processes
# share (011, 013, 014, 016).  QsAgents::init(NODE, PREFIX) first: the node the
# jobs are on, and the prefix of the agents' logs, which stay with the
# test's own (tmp_check/log/PREFIX_NAME.log).
package QsAgents;

use strict;
use warnings;
use Exporter 'import';
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

our @EXPORT = qw(agent_bin agents_node launch_agent agent_pid agent_log wait_for_log stop_agent
  forget_agent job_field wait_for_job history wait_for_file process_gone);

my ($node, $prefix);
my %agents;

sub init { ($node, $prefix) = @_; }

# the agent installed with the extension (make install), else the build's
sub agent_bin
{
	my $bindir = `pg_config --bindir`;
	chomp $bindir;
	return -x "$bindir/quota-sched-agent" ? "$bindir/quota-sched-agent" : 'agent/quota-sched-agent';
}

# agents_node(NAME): a new node (initialised, not started) whose worker
# runs passes in the database postgres every 300 ms
sub agents_node
{
	my $n = PostgreSQL::Test::Cluster->new($_[0]);
	$n->init;
	$n->append_conf('postgresql.conf', <<'CONF');
shared_preload_libraries = 'quota_sched'
quota_sched.database = 'postgres'
quota_sched.naptime = '300ms'
CONF
	return $n;
}

sub log_file { return "$PostgreSQL::Test::Utils::log_path/${prefix}_$_[0].log"; }

# launch_agent(NAME, ARGV): a real agent process, its output in its log;
# waits until it says it connected (a test) and returns its handle
sub launch_agent
{
	my ($name, $argv) = @_;
	my $log = log_file($name);
	$agents{$name} = IPC::Run::start($argv, '<', \undef, '>>', $log, '2>>', $log);
	ok(wait_for_log($name, qr/ connected: |"event":"connected"/), "agent $name connected");
	return $agents{$name};
}

sub agent_pid { return $agents{ $_[0] }->{KIDS}[0]{PID}; }

sub agent_log
{
	my $log = log_file($_[0]);
	return -f $log ? slurp_file($log) : '';
}

# wait_for_log(NAME, REGEX[, SECONDS]): whether the agent's log matches
# within SECONDS (default 60)
sub wait_for_log
{
	my ($name, $re, $seconds) = @_;
	for (1 .. 10 * ($seconds // 60))
	{
		return 1 if agent_log($name) =~ $re;
		usleep(100_000);
	}
	diag(agent_log($name));
	return 0;
}

# stop_agent(NAME): SIGTERM, then its exit code
sub stop_agent
{
	my $h = forget_agent($_[0]);
	$h->signal('TERM');
	$h->finish;
	return $h->result(0);
}

# forget_agent(NAME): its handle, no longer the module's
sub forget_agent { return delete $agents{ $_[0] }; }

# the agents still running when the test ends (it failed, or died) are
# stopped: SIGTERM, SIGKILL after 10 s
END
{
	foreach my $h (values %agents)
	{
		eval { $h->kill_kill(grace => 10); };
	}
}

sub job_field
{
	my ($id, $field) = @_;
	return $node->safe_psql('postgres', "SELECT $field FROM quota_sched.job WHERE id = $id");
}

sub wait_for_job
{
	my ($id, $condition) = @_;
	return $node->poll_query_until('postgres', "SELECT $condition FROM quota_sched.job WHERE id = $id");
}

# a job's history: "FROM>TO (REASON)" events, in order
sub history
{
	my ($id) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(coalesce(from_state, '') || '>' || to_state || coalesce(' (' || reason || ')', ''), '; ' ORDER BY id)"
		  . " FROM quota_sched.job_event WHERE job_id = $id");
}

# wait_for_file(FILE[, REGEX]): whether FILE exists (and matches) within 30 s
sub wait_for_file
{
	my ($file, $re) = @_;
	$re //= qr/./;
	for (1 .. 300)
	{
		return 1 if -f $file && slurp_file($file) =~ $re;
		usleep(100_000);
	}
	return 0;
}

# process_gone(PID): whether the process is gone within 10 s
sub process_gone
{
	my ($pid) = @_;
	for (1 .. 100)
	{
		return 1 unless kill(0, $pid);
		usleep(100_000);
	}
	return 0;
}

1;
