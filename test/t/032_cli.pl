# quota-sched, the command line for people (issue 41, doc/cli.md), against a
# real cluster whose worker runs the passes and a real quota-sched-agent:
# a script with #QS header lines submitted (its command-line flags winning
# over the header's), waited for (exit 0) and its output read with logs; a
# retried submit with the same --token prints the same id; an array of 5
# whose jobs each print their index; an eval that depends on the array runs
# after every job of it ended, and one that depends on a failing job ends
# FAILED with DEPENDENCY_FAILED (wait exits 1); cancel --array ends an
# array; wait --timeout exits 4; --json of jobs, show, explain, logs, usage
# and hosts parses; a user of another team can neither see nor cancel a
# job through it; --help of every subcommand exits 0, a bad flag 2.
# Everything that waits polls, or is quota-sched wait itself.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $agent_bin = agent_bin();
(my $cli = $agent_bin) =~ s/quota-sched-agent$/quota-sched/;
$cli = 'cli/quota-sched' unless -x $cli;
ok(-x $cli, "quota-sched is built: $cli");

my $node = agents_node('cli');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('c_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('c_queue', 'c_env');
CREATE ROLE team_nlp;
CREATE ROLE team_vision;
CREATE ROLE alice LOGIN IN ROLE quota_sched_user, team_nlp;
CREATE ROLE bob LOGIN IN ROLE quota_sched_user, team_vision;
CREATE ROLE platform LOGIN IN ROLE quota_sched_admin;
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('c_queue', 'nlp', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_nlp'),
	   ('c_queue', 'vision', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_vision');
CREATE ROLE c_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('c_host', NULL);
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
QsAgents::init($node, '032_cli');
launch_agent('h1',
	[
		$agent_bin, '--dbname', $node->connstr('postgres') . ' user=c_host', '--agent', 'h1',
		'--queue', 'c_queue', '--same-user', '--capacity-unit', 'gpu', '--instances', '4',
		'--lease', '20', '--heartbeat', '1', '--grace', '2',
		'--checkpoint-root', "$tmp/ckpt", '--log-dir', "$tmp/logs"
	]);
ok($node->poll_query_until('postgres', "SELECT count(*) = 1 FROM quota_sched.agents WHERE live"),
	'the agent is a live host');

# qs(USER, ARGS...): quota-sched as USER: (exit code, stdout, stderr); at most 120 s
sub qs
{
	my ($user, @args) = @_;
	my ($out, $err) = ('', '');
	my @cmd = ($cli, '--dbname', $node->connstr('postgres') . " user=$user", @args);
	my $h = IPC::Run::start(\@cmd, '<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(120));
	eval { $h->finish; };
	if ($@)
	{
		$h->kill_kill;
		return (-1, $out, "timed out: $@ $err");
	}
	return ($h->result(0), $out, $err);
}

# json(TEXT): the decoded JSON, or undef (with a diagnostic)
sub json
{
	my $v = eval { JSON::PP->new->allow_nonref->decode($_[0]) };
	diag("not JSON: $@: $_[0]") if $@;
	return $v;
}

# ---------------------------------------------------------------------------
# A script with #QS header lines: submitted, waited for, its output read
# ---------------------------------------------------------------------------
my $script = "$tmp/train.sh";
open(my $fh, '>', $script) or die $!;
print $fh <<'SH';
#!/bin/sh
# a training run
#QS --queue=c_queue --share nlp -u gpu
#QS -J header-name --attempts 2 -p 3 --tags '{"team": "nlp lab"}'
echo "hello from job $QUOTA_SCHED_JOB_ID, argument $1"
#QS -p 9
SH
close $fh;
my ($rc, $out, $err) = qs('alice', 'submit', '-p', '7', $script, 'first arg');
is($rc, 0, 'submit of a script exits 0') or diag($err);
my ($id) = $out =~ /^(\d+)\n\z/;
ok($id, "it prints the job's id alone: $out");
is($node->safe_psql('postgres',
		"SELECT name, job_queue, quota_share, max_attempts, priority, tags->>'team' FROM quota_sched.job WHERE id = $id"),
	'header-name|c_queue|nlp|2|7|nlp lab',
	'the #QS lines gave queue, share, name, attempts and tags; -p 7 on the command line won over the header\'s 3; a #QS line after the code is no header');
($rc, $out, $err) = qs('alice', 'wait', $id);
is($rc, 0, 'wait exits 0 once the job SUCCEEDED') or diag("$out $err");
like($out, qr/^\s*$id\s+SUCCEEDED/m, 'and prints its state');
($rc, $out, $err) = qs('alice', 'logs', $id);
is($rc, 0, 'logs exits 0');
like($out, qr/^hello from job $id, argument first arg$/m, 'logs prints what the script printed, with its argument');
like($out, qr/attempt 1, part 0, .*exit code 0; whole log: \S+:\Q$tmp\E\/logs\/$id\/attempt-1\.log/,
	'and where the whole log is: host and file');

# a script too large, and one with a bad #QS line, are refused before any connection
open($fh, '>', "$tmp/big.sh") or die $!;
print $fh "#!/bin/sh\n" . ('#' x 70000) . "\n";
close $fh;
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', "$tmp/big.sh");
is($rc, 2, 'a script over 64 KiB is a usage error (exit 2)');
like($err, qr/larger than 64 KiB/, 'saying why');
open($fh, '>', "$tmp/badhdr.sh") or die $!;
print $fh "#QS -q c_queue --dbname=x\necho\n";
close $fh;
($rc, $out, $err) = qs('alice', 'submit', "$tmp/badhdr.sh");
is($rc, 2, 'a #QS line with a flag that is not the job\'s: exit 2');
like($err, qr/#QS lines take the job's flags only/, 'saying why');

# ---------------------------------------------------------------------------
# A retried submit with the same token prints the same id
# ---------------------------------------------------------------------------
my @tok = ('submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '--token', 'nlp-tok-1', '--', 'true');
my ($rc1, $out1) = qs('alice', @tok);
my ($rc2, $out2) = qs('alice', @tok);
ok($rc1 == 0 && $rc2 == 0 && $out1 =~ /^\d+\n\z/, 'a submit with a token, and its retry, exit 0');
is($out2, $out1, 'the retry prints the same id');
is($node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.job WHERE client_token = 'nlp-tok-1'"),
	'1', 'and submitted one job');
($rc, $out) = qs('alice', '--json', @tok);
my $j = json($out);
ok($j && $j->{id} == $out1 && !$j->{submitted}, '--json: the same id, "submitted": false');

# ---------------------------------------------------------------------------
# An array of 5: each job sees its index
# ---------------------------------------------------------------------------
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-a', '5', '-J', 'sweep',
	'--', 'sh', '-c', 'sleep 2; echo "index $QUOTA_SCHED_ARRAY_INDEX"');
is($rc, 0, 'submit --array 5 exits 0') or diag($err);
my @ids = $out =~ /^(\d+)$/mg;
is(scalar @ids, 5, 'it prints five ids, one per line');
my $array = $ids[0];
is($node->safe_psql('postgres', "SELECT string_agg(id::text, ' ' ORDER BY array_index) FROM quota_sched.job WHERE array_id = $array"),
	join(' ', @ids), 'in index order, the first the array\'s id');

# the eval that waits for the whole array: held back DEPENDENCY meanwhile
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-J', 'eval',
	'--depends-on', $array, '--', 'sh', '-c', 'echo eval ran');
is($rc, 0, 'an eval that depends on the array is submitted') or diag($err);
my ($eval) = $out =~ /^(\d+)$/m;
($rc, $out) = qs('alice', 'explain', '--json', $eval);
$j = json($out);
ok($j && $j->{state} eq 'RUNNABLE' && $j->{blocked_by} eq 'DEPENDENCY' && @{ $j->{waiting_for} } >= 1,
	'explain: the eval waits, blocked by DEPENDENCY, naming the jobs it waits for') or diag($out);

($rc, $out, $err) = qs('alice', 'wait', @ids);
is($rc, 0, 'wait for the five exits 0') or diag("$out $err");
my @seen;
for my $i (0 .. 4)
{
	my ($r, $o) = qs('alice', 'logs', $ids[$i]);
	push @seen, ($o =~ /^index (\d+)$/m ? $1 : 'none');
}
is(join(',', @seen), '0,1,2,3,4', 'each job of the array printed its own QUOTA_SCHED_ARRAY_INDEX');

# it runs once every job of the array SUCCEEDED; a job that depends on a
# failing one fails DEPENDENCY_FAILED without running
($rc, $out, $err) = qs('alice', 'wait', $eval);
is($rc, 0, 'wait for the eval exits 0') or diag("$out $err");
is($node->safe_psql('postgres', qq{
	SELECT e.started_at >= max(a.stopped_at) FROM quota_sched.job e, quota_sched.job a
	 WHERE e.id = $eval AND a.array_id = $array GROUP BY e.started_at}), 't',
	'the eval started after every job of the array ended');
($rc, $out) = qs('alice', 'logs', $eval);
like($out, qr/^eval ran$/m, 'and ran');

($rc, $out) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-J', 'doomed', '--', 'sh', '-c', 'sleep 1; exit 3');
my ($doomed) = $out =~ /^(\d+)$/m;
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-J', 'after-fail',
	'-d', $doomed, '--', 'sh', '-c', 'echo should not run');
my ($after_fail) = $out =~ /^(\d+)$/m;
ok($doomed && $after_fail, 'a failing job, and one that depends on it, are submitted') or diag($err);
($rc, $out, $err) = qs('alice', 'wait', $doomed, $after_fail);
is($rc, 1, 'wait for both exits 1: they FAILED') or diag("$out $err");
like($out, qr/^\s*$after_fail\s+FAILED\s+DEPENDENCY_FAILED:$doomed\s*$/m, 'the dependent ended FAILED with DEPENDENCY_FAILED');
is($node->safe_psql('postgres', "SELECT count(*) FROM quota_sched.job_attempts WHERE job_id = $after_fail"),
	'0', 'without ever running');
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-d', '999999', '--', 'true');
ok($rc == 3 && $err =~ /SQLSTATE 23503/, 'a dependency on no job: the server refuses it (23503), exit 3')
  or diag("$rc $err");

# ---------------------------------------------------------------------------
# cancel --array, wait --timeout
# ---------------------------------------------------------------------------
($rc, $out, $err) = qs('alice', 'submit', '-q', 'c_queue', '-s', 'nlp', '-u', 'gpu', '-a', '3', '-J', 'long',
	'--', 'sleep', '600');
my @long = $out =~ /^(\d+)$/mg;
is(scalar @long, 3, 'an array of 3 long jobs') or diag($err);
ok($node->poll_query_until('postgres',
		"SELECT count(*) >= 1 FROM quota_sched.job WHERE array_id = $long[0] AND state = 'RUNNING'"),
	'it runs');
($rc, $out, $err) = qs('alice', 'wait', '--timeout', '1', @long);
is($rc, 4, 'wait --timeout 1 exits 4 while they run');
($rc, $out, $err) = qs('bob', 'cancel', '--array', $long[0]);
isnt($rc, 0, 'bob of another team may not cancel the array');
like($err, qr/may not terminate job $long[0].*SQLSTATE 42501/, 'with the server\'s message and SQLSTATE');
($rc, $out, $err) = qs('alice', 'cancel', '--array', '--reason', 'wrong lr', $long[0]);
is($rc, 0, 'alice cancels the array') or diag($err);
($rc, $out, $err) = qs('alice', 'wait', @long);
is($rc, 1, 'wait then exits 1: they FAILED');
is($node->safe_psql('postgres', "SELECT string_agg(DISTINCT state || ' ' || status_reason, ',') FROM quota_sched.job WHERE array_id = $long[0]"),
	'FAILED wrong lr', 'every job of the array ended FAILED, with the reason');

# ---------------------------------------------------------------------------
# --json parses; another team sees nothing
# ---------------------------------------------------------------------------
($rc, $out) = qs('alice', '--json', 'jobs', '--state', 'all');
$j = json($out);
ok(ref $j eq 'ARRAY' && (grep { $_->{id} == $id && $_->{name} eq 'header-name' } @$j), 'jobs --json: an array with the job');
($rc, $out) = qs('alice', 'show', '--json', $id);
$j = json($out);
ok($j && $j->{id} == $id && $j->{state} eq 'SUCCEEDED' && $j->{payload}{command}[0] eq '/bin/sh', 'show --json: the job');
($rc, $out) = qs('alice', 'explain', '--json', $id);
$j = json($out);
ok($j && $j->{job_id} == $id && $j->{state} eq 'SUCCEEDED' && exists $j->{detail}, 'explain --json: explain()\'s object');
($rc, $out) = qs('alice', 'logs', '--json', $id);
$j = json($out);
ok(ref $j eq 'ARRAY' && $j->[0]{output} =~ /hello from job $id/ && $j->[0]{exit_code} == 0, 'logs --json: the attempts, with the output');
($rc, $out, $err) = qs('alice', 'usage', '--json');
$j = json($out);
ok($j && ref $j->{utilization} eq 'ARRAY' && (grep { $_->{share} eq 'nlp' && $_->{dispatched} > 0 } @{ $j->{utilization} })
	  && ref $j->{lending} eq 'ARRAY' && ref $j->{preemptions} eq 'ARRAY' && ref $j->{budgets} eq 'ARRAY',
	'usage --json: the team\'s utilization, lending, preemptions, budgets') or diag($err);
($rc, $out) = qs('platform', 'hosts', '--json');
$j = json($out);
ok(ref $j eq 'ARRAY' && $j->[0]{agent} eq 'h1' && $j->[0]{live}, 'hosts --json: the agent');
($rc, $out, $err) = qs('alice', 'hosts');
isnt($rc, 0, 'hosts is for admins');

($rc, $out, $err) = qs('bob', 'show', $id);
is($rc, 1, 'bob of another team: show of alice\'s job exits 1');
like($err, qr/SQLSTATE 42501/, 'permission denied, with its SQLSTATE');
unlike($out, qr/header-name/, 'and shows nothing of it');
($rc, $out, $err) = qs('bob', 'logs', $id);
ok($rc == 1 && $out !~ /hello/, 'nor its output');
($rc, $out) = qs('bob', 'jobs', '--all', '--state', 'all');
unlike($out, qr/header-name|sweep/, 'bob\'s jobs --all lists none of alice\'s jobs');
($rc, $out, $err) = qs('bob', 'submit', '-q', 'c_queue', '-s', 'vision', '-u', 'gpu', '-d', $id, '--', 'true');
ok($rc == 3 && $err =~ /SQLSTATE 23503/, 'nor depend on it: 23503, exit 3') or diag("$rc $err");
($rc, $out, $err) = qs('alice', 'show', '987654');
ok($rc == 1 && $err =~ /SQLSTATE P0002/, 'show of no job: exit 1, P0002');

# ---------------------------------------------------------------------------
# --help, bad flags
# ---------------------------------------------------------------------------
for my $sub (qw(submit jobs show explain logs wait cancel priority usage hosts drain))
{
	($rc, $out) = qs('alice', $sub, '--help');
	ok($rc == 0 && $out =~ /Usage: quota-sched $sub/, "$sub --help exits 0");
}
($rc, $out, $err) = qs('alice', 'jobs', '--no-such-flag');
is($rc, 2, 'a bad flag exits 2');
($rc, $out, $err) = qs('alice', 'wait', map { $_ } 1 .. 1001);
ok($rc == 2 && $err =~ /at most 1000/, 'more than 1000 ids: exit 2');
($rc, $out, $err) = qs('alice', 'no-such-command');
is($rc, 2, 'an unknown command exits 2');

is(stop_agent('h1'), 0, 'the agent stops');
done_testing();
