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
# for the job nor take its token for its own.  A dependency that fails:
# wait() returns FAILED for the dependent too (DEPENDENCY_FAILED).  The
# page's code is the files'.
#
# python3-psycopg is needed (test/setup.sh installs it): without it the
# test fails, it does not skip.  Everything is polled.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
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

# python_as(WHO, ARGV...): /usr/bin/python3 run as a team member would run
# it, as login WHO (libpq's variables); whether it exited 0, and what it
# printed on stdout and stderr
sub python_as
{
	my ($who, @argv) = @_;
	local $ENV{PGHOST} = $node->host;
	local $ENV{PGPORT} = $node->port;
	local $ENV{PGDATABASE} = 'postgres';
	local $ENV{PGUSER} = $who;
	my ($out, $err) = ('', '');
	my $ok = IPC::Run::run([ $python, '-B', @argv ], '<', \undef, '>', \$out, '2>', \$err,
		IPC::Run::timeout(2 * $PostgreSQL::Test::Utils::timeout_default));
	diag("${who}'s python3 wrote on stderr:\n$err") if $err ne '';
	return ($ok, $out, $err);
}

# a Python program that imports the module first
sub with_module
{
	return ('-c', "import sys\nsys.path.insert(0, '$top/doc/python')\nimport quota_sched_client as qs\n$_[0]");
}

# example(RUN): the recipe run as ann; what python_as returns, and the
# server's log meanwhile
sub example
{
	my ($run) = @_;
	my $log_from = -s $node->logfile;
	my @r = python_as('ann', $example, '--queue', 'p_queue', '--share', 'nlp', '--unit', 'gpu',
		'--run', $run, '--python', $python, '--train-seconds', '3', '--other-share', 'cv',
		'--timeout', $PostgreSQL::Test::Utils::timeout_default);
	return (@r, slurp_file($node->logfile, $log_from));
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
is(history($eval), '>RUNNABLE; RUNNABLE>SCHEDULED; SCHEDULED>STARTING; STARTING>RUNNING; RUNNING>SUCCEEDED',
	'its history: submitted, dispatched once, and ran once');

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
my (undef, $ben_out) = python_as('ben', with_module(<<"PY"));
conn = qs.connect()
for call in (lambda: qs.wait(conn, [$train], 60),
             lambda: qs.submit(conn, client_token="nlp:r1:train", name="mine", job_queue="p_queue",
                               quota_share="cv", capacity_unit="gpu", command=["true"])):
    try:
        print("returned", call())
    except LookupError as e:
        print("LookupError:", e)
PY
is($ben_out,
	"LookupError: no jobs [$train] that you may see\n"
	  . "LookupError: client_token 'nlp:r1:train' is taken by a job you may not see: choose another\n",
	"another team's login: wait() and submit() of ann's job and token raise LookupError");
is(db("SELECT count(*) FROM quota_sched.job WHERE owner = 'ben'"), '0', 'and ben submitted nothing');

# ---------------------------------------------------------------------------
# A dependency that fails: wait() wakes for the dependent too, which the
# pass ends FAILED with DEPENDENCY_FAILED
# ---------------------------------------------------------------------------
my ($dep_ok, $dep_out) = python_as('ann', with_module(<<'PY'));
conn = qs.connect()
job = dict(job_queue="p_queue", quota_share="nlp", capacity_unit="gpu")
bad = qs.submit(conn, client_token="nlp:r2:train", name="r2-train",
                command=["sh", "-c", "sleep 1; echo out of memory >&2; exit 1"], **job)
after = qs.submit(conn, client_token="nlp:r2:eval", name="r2-eval", command=["true"],
                  depends_on=[bad], **job)
ended = qs.wait(conn, [bad, after], 120)
print(bad, ended[bad], qs.attempts(conn, bad)[0]["output"].strip())
print(after, ended[after], qs.explain(conn, after)["blocked_by"])
PY
ok($dep_ok, 'the program with a failing dependency exits 0');
my ($bad, $after) = $dep_out =~ /^(\d+) FAILED out of memory\n(\d+) FAILED None\n\z/;
ok(defined $after, 'wait() returned FAILED for both the job and its dependent') or diag($dep_out);
is(job_field($after // 0, 'status_reason'), "DEPENDENCY_FAILED:" . ($bad // ''),
	"the dependent's reason names the job that failed");
is(db("SELECT count(*) FROM quota_sched.job_event WHERE job_id = " . ($after // 0) . " AND to_state = 'SCHEDULED'"),
	'0', 'and it was never dispatched');

is(stop_agent('p1'), 0, 'the agent stops');
$node->stop;
done_testing();
