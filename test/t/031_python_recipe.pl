# The Python recipe of doc/python.md (issue 41): doc/python/example.py, with
# doc/python/quota_sched_client.py, run by /usr/bin/python3 (psycopg 3,
# Debian's python3-psycopg) as a team's login against a server whose worker
# runs the passes and a real quota-sched-agent.  What it prints is checked
# against the database: the job's id and the retry's the same, the states,
# the output read from job_attempts, the array's jobs and the index each job
# saw, the eval's dependency and why it waited (explain), the eval
# dispatched only after every job of the array ended (the history's times),
# and three refusals told apart by SQLSTATE with nothing stored.  Waiting
# is by LISTEN: the server's log of the login's statements shows how few
# times it read the jobs' states.  A second run with the same tokens gives
# the same ids and submits nothing.  Another team's login may neither wait
# for the job nor take its token for its own.  The page's code is the
# files'.
#
# python3-psycopg is needed (test/setup.sh installs it): without it the
# test fails, it does not skip.  Everything is polled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use JSON::PP;
use List::Util qw(max);
use FindBin;
use lib $FindBin::RealBin;
use QsAgents;

my $python = '/usr/bin/python3';
my $top = "$FindBin::RealBin/../..";
my $client = "$top/doc/python/quota_sched_client.py";
my $example = "$top/doc/python/example.py";

if (!ok(system($python, '-c', 'import psycopg') == 0,
		"$python has psycopg 3 (python3-psycopg, which test/setup.sh installs)"))
{
	diag("python3-psycopg is missing: apt-get install python3-psycopg (test/setup.sh's QS_PACKAGES)");
	done_testing();
	exit;
}

# ---------------------------------------------------------------------------
# The page shows the files as they are: each file is one ```python block of
# doc/python.md, whose first line is the file's own first line.
# ---------------------------------------------------------------------------
my @blocks = slurp_file("$top/doc/python.md") =~ /^```python\n(.*?)^```$/msg;
foreach my $file ($client, $example)
{
	my $text = slurp_file($file);
	my ($first) = $text =~ /\A(.*\n)/;
	my @same = grep { index($_, $first) == 0 } @blocks;
	is(scalar(@same), 1, "doc/python.md has one block of " . ($file =~ s{.*/}{}r));
	is($same[0], $text, 'and it is the file, line for line');
}

# ---------------------------------------------------------------------------
# A cluster with the worker, two teams and a real agent of 4 instances
# ---------------------------------------------------------------------------
my $agent_bin = agent_bin();
ok(-x $agent_bin, "the agent is built: $agent_bin");
my $node = agents_node('python');
$node->start;
$node->safe_psql('postgres', <<'SQL');
CREATE EXTENSION quota_sched;
INSERT INTO quota_sched.service_environment VALUES ('p_env', '{"gpu": 4}');
INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('p_queue', 'p_env');
CREATE ROLE team_nlp NOLOGIN;
CREATE ROLE team_cv NOLOGIN;
CREATE ROLE ann LOGIN IN ROLE quota_sched_user, team_nlp;
CREATE ROLE ben LOGIN IN ROLE quota_sched_user, team_cv;
CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);
INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy, submit_role)
VALUES ('p_queue', 'nlp', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_nlp'),
	   ('p_queue', 'cv', '{"gpu": 2}', 'LEND_AND_BORROW', 'team_cv');
-- every statement of ann's sessions in the server's log
ALTER ROLE ann SET log_statement = 'all';
SQL
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'quota_sched worker'"),
	'the worker runs');

my $tmp = PostgreSQL::Test::Utils::tempdir;
QsAgents::init($node, '031_python_recipe');
launch_agent('p1',
	[
		$agent_bin, '--dbname', $node->connstr('postgres') . ' user=agent_host', '--agent', 'p1',
		'--queue', 'p_queue', '--instances', '4', '--same-user', '--checkpoint-root', "$tmp/ckpt",
		'--log-dir', "$tmp/logs", '--heartbeat', '1'
	]);

# example(RUN): runs the recipe as ann, as a team member would (libpq's
# variables); its exit code, what it printed, and the server log it made
sub example
{
	my ($run) = @_;
	my $log_from = -s $node->logfile;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = 'postgres';
	local $ENV{PGUSER} = 'ann';
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run(
		[
			$python, '-B', $example, '--queue', 'p_queue', '--share', 'nlp', '--unit', 'gpu',
			'--run', $run, '--python', $python, '--train-seconds', '3', '--other-share', 'cv',
			'--timeout', $PostgreSQL::Test::Utils::timeout_default
		],
		'<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(2 * $PostgreSQL::Test::Utils::timeout_default));
	diag("example.py's stderr:\n$err") if $err ne '';
	my $log = slurp_file($node->logfile, $log_from);
	return ($ok, $out, $err, $log);
}

sub db { return $node->safe_psql('postgres', $_[0]); }

# the attempt's lines that example.py printed (LABEL: job ID attempt ...
# and its output, each line "LABEL:   | ..."), and the same made from
# job_attempts
sub printed_attempt
{
	my ($out, $label, $id) = @_;
	my ($text) = $out =~ /^(\Q$label\E: job $id attempt .*\n(?:\Q$label\E:   \| .*\n)*)/m;
	return $text // '';
}

sub stored_attempt
{
	my ($label, $id) = @_;
	my @rows = split /\n/, db("SELECT attempt || '|' || rank || '|' || host || '|' || exit_code || '|' || log_path"
		  . " FROM quota_sched.job_attempts WHERE job_id = $id ORDER BY attempt, rank");
	my $output = db("SELECT output FROM quota_sched.job_attempts WHERE job_id = $id ORDER BY attempt, rank");
	return '' unless @rows == 1;
	my ($attempt, $rank, $host, $exit, $path) = split /\|/, $rows[0];
	return "$label: job $id attempt $attempt rank $rank on $host, exit code $exit, log $path\n"
	  . join('', map { "$label:   | $_\n" } split /\n/, $output);
}

# ---------------------------------------------------------------------------
# The recipe, run once
# ---------------------------------------------------------------------------
my ($ok, $out, $err, $log) = example('r1');
ok($ok, 'example.py exits 0') or diag("its output:\n$out");
is($err, '', 'and prints nothing on stderr');
note($out);

# 1. submitted, and submitted again with the same token: one job
my ($train, $again) = $out =~ /^train: submitted job (\d+); submitted again: job (\d+)$/m;
ok(defined $train, 'it printed the job id') or $train = 0;
is($again, $train, 'the retry with the same client_token gave the same id');
is(db("SELECT id || ' ' || owner || ' ' || name FROM quota_sched.job WHERE client_token = 'nlp:r1:train'"),
	"$train ann r1-train", "job $train has the token, ann's");
is(db("SELECT count(*) FROM quota_sched.job WHERE name = 'r1-train'"), '1', 'and it is the one job of that name');

# 2. waited for, 3. its output read
like($out, qr/^train: job $train ended SUCCEEDED$/m, 'it waited for the end: SUCCEEDED');
is(job_field($train, 'state'), 'SUCCEEDED', 'as the database has it');
my $printed = printed_attempt($out, 'train', $train);
like($printed, qr/exit code 0, log \Q$tmp\E\/logs\/$train\/attempt-1\.log\n(?:.*\n)*train:   \| saved model\.pt\n\z/,
	"it printed the job's attempt: exit code 0, the log's path, the output to the last line");
is($printed, stored_attempt('train', $train), 'as job_attempts has it');

# 4. the array and the eval
my ($array, $listed) = $out =~ /^sweep: submitted array (\d+): (.*)$/m;
ok(defined $array, 'it printed the array') or ($array, $listed) = (0, '');
my @array_rows = split /\n/, db("SELECT id || '[' || array_index || ']' FROM quota_sched.job"
	  . " WHERE array_id = $array AND owner = 'ann' ORDER BY array_index");
is($listed, join(' ', @array_rows), 'its jobs and their indexes, as the database has them');
is(scalar(@array_rows), 4, 'an array of 4');
my @array_ids = map { /^(\d+)/ } @array_rows;
is(db("SELECT id FROM quota_sched.job WHERE client_token = 'nlp:r1:sweep'"), $array,
	'the array is its index 0, which has the token');

my ($eval) = $out =~ /^eval: submitted job (\d+), depending on array $array$/m;
ok(defined $eval, 'it printed the eval') or $eval = 0;
is(job_field($eval, 'depends_on'), "{$array}", 'which depends on the array');
my ($blocked, $waiting_for) = $out =~ /^eval: blocked by (\w+), waiting for \[([\d, ]*)\]: /m;
is($blocked, 'DEPENDENCY', 'explain: the eval waits for its dependencies');
is(join(',', sort { $a <=> $b } split /, /, $waiting_for // ''), join(',', @array_ids),
	'for every job of the array (each trains 3 s)');

# the states, and the index each job saw
foreach my $row (@array_rows)
{
	my ($id, $index) = $row =~ /^(\d+)\[(\d+)\]$/;
	like($out, qr/^sweep: job $id \(index $index\) ended SUCCEEDED$/m, "job $id of the array ended SUCCEEDED");
	is(job_field($id, 'state'), 'SUCCEEDED', 'as the database has it');
	my $attempt = printed_attempt($out, 'sweep', $id);
	like($attempt, qr/^sweep:   \| index $index: learning rate [\d.]+: loss [\d.]+$/m,
		"job $id saw its index, $index, in QUOTA_SCHED_ARRAY_INDEX");
	is($attempt, stored_attempt('sweep', $id), 'its output as job_attempts has it');
}
like($out, qr/^eval: job $eval ended SUCCEEDED$/m, 'the eval ended SUCCEEDED');
is(job_field($eval, 'state'), 'SUCCEEDED', 'as the database has it');
is(printed_attempt($out, 'eval', $eval),
	"eval: job $eval attempt 1 rank 0 on " . db("SELECT host FROM quota_sched.job_attempts WHERE job_id = $eval")
	  . ", exit code 0, log $tmp/logs/$eval/attempt-1.log\neval:   | eval: every job of the sweep has ended\n",
	'its output');
is(stored_attempt('eval', $eval), printed_attempt($out, 'eval', $eval), 'as job_attempts has it');

# the eval was dispatched (and ran) only after every job of the array ended
my $ids = join(',', @array_ids);
is( db("SELECT (SELECT min(at) FROM quota_sched.job_event WHERE job_id = $eval AND to_state = 'SCHEDULED')"
		  . " > (SELECT max(at) FROM quota_sched.job_event WHERE job_id IN ($ids) AND to_state = 'SUCCEEDED')"
		  . " AND (SELECT count(*) FROM quota_sched.job_event WHERE job_id IN ($ids) AND to_state = 'SUCCEEDED') = 4"),
	't', "the history: the eval's dispatch came after the end of each job of the array");
is( db("SELECT (SELECT min(started_at) FROM quota_sched.job_attempts WHERE job_id = $eval)"
		  . " > (SELECT max(ended_at) FROM quota_sched.job_attempts WHERE job_id IN ($ids))"),
	't', "job_attempts: the eval's run began after every run of the array ended");
like(history($eval), qr/\A>RUNNABLE(?: \(DEPENDENCY\))?; (?:RUNNABLE>RUNNABLE \(DEPENDENCY\); )?RUNNABLE>SCHEDULED/,
	'its history: RUNNABLE, then SCHEDULED');

# 6. the refusals, each with its SQLSTATE, nothing stored
like($out, qr/^refused: 23503 \(.*\): quota share "no-such-share" does not exist in job queue "p_queue"$/m,
	'an unknown share: 23503');
like($out, qr/^refused: 23514 \(.*\): payload command of a job is a JSON string, not an array of strings HINT: /m,
	'a command that is not an argv: 23514, with the hint');
like($out, qr/^refused: 42501 \(.*\): role "ann" may not submit to quota share "cv" of job queue "p_queue" DETAIL: /m,
	"another team's share: 42501, with the detail");
is(db("SELECT count(*) FROM quota_sched.job WHERE name = 'r1-bad'"), '0', 'and none was stored');

# Waiting is by notification: a wait reads the states once, then once
# per notification naming a job it still waits for, which it finds ended;
# so at most 1 + its jobs' count, however long they run (a poller reads
# every so often: of the training job's 3 s, at least 3 times a second
# apart).  The server's log, split where the array is submitted.
my ($wait1, $wait2) = split /DETAIL:  parameters: \$1 = 'nlp:r1:sweep'/, $log, 2;
my $reads_re = qr/LOG:  (?:statement|execute [^:]*): SELECT id, state FROM quota_sched\.job WHERE id = ANY/;
my $reads1 = () = $wait1 =~ /$reads_re/g;
my $reads2 = () = ($wait2 // '') =~ /$reads_re/g;
ok($reads1 >= 1 && $reads1 <= 2, "the wait for the training job read the states $reads1 times (1 to 2): no polling");
ok($reads2 >= 1 && $reads2 <= 6, "the wait for the array and the eval read the states $reads2 times (1 to 6)");
like($log, qr/LOG:  (?:statement|execute [^:]*): LISTEN quota_sched_job_end\n.*?: SELECT id, state FROM quota_sched\.job/s,
	'LISTEN came before the first read of the states');

# ---------------------------------------------------------------------------
# The recipe again with the same tokens: the same jobs, nothing submitted
# ---------------------------------------------------------------------------
my $jobs = db('SELECT count(*) FROM quota_sched.job');
($ok, my $out2) = example('r1');
ok($ok, 'example.py run again exits 0');
like($out2, qr/^train: submitted job $train; submitted again: job $train$/m, 'the same training job');
like($out2, qr/^sweep: submitted array $array: \Q$listed\E$/m, 'the same array');
like($out2, qr/^eval: submitted job $eval, depending on array $array$/m, 'the same eval');
like($out2, qr/^eval: job $eval ended SUCCEEDED$/m, 'which has ended');
is(db('SELECT count(*) FROM quota_sched.job'), $jobs, 'no job was submitted');

# ---------------------------------------------------------------------------
# Another team's login: ann's job is not its to wait for, nor her token its
# job's, and the module says so rather than wait or take her job for its own
# ---------------------------------------------------------------------------
{
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = 'postgres';
	local $ENV{PGUSER} = 'ben';
	my ($ben_out, $ben_err) = ('', '');
	IPC::Run::run(
		[
			$python, '-B', '-c', <<"PY"
import sys
sys.path.insert(0, "$top/doc/python")
import quota_sched_client as qs
conn = qs.connect()
for call in (lambda: qs.wait(conn, [$train], 60),
             lambda: qs.submit(conn, client_token="nlp:r1:train", name="mine", job_queue="p_queue",
                               quota_share="cv", capacity_unit="gpu", command=["true"])):
    try:
        print("returned", call())
    except LookupError as e:
        print("LookupError:", e)
PY
		],
		'<', \undef, '>', \$ben_out, '2>', \$ben_err,
		IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	is($ben_out,
		"LookupError: no jobs [$train] that you may see\n"
		  . "LookupError: client_token 'nlp:r1:train' is taken by a job you may not see: choose another\n",
		"another team's login: wait() and submit() of ann's job and token raise LookupError")
	  or diag($ben_err);
	is(db("SELECT count(*) FROM quota_sched.job WHERE owner = 'ben'"), '0', 'and ben submitted nothing');
}

is(stop_agent('p1'), 0, 'the agent stops');
$node->stop;
done_testing();
