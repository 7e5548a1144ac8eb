#!/usr/bin/env bash
# test/agent/run_as.sh: quota-sched-agent --run-as (issue 20), which needs
# root, so test/run runs it as root after `make installcheck` (whose TAP
# tests run as postgres).  A cluster of its own (as postgres, on a socket in
# a temporary folder), the installed agent as root with --run-as nobody, and
# real jobs that try to reach what is not theirs: a job runs as nobody, in a
# checkpoint directory that is nobody's while it runs and root's (closed)
# after; it can neither list nor write the root, nor signal its shim; a
# later job cannot read or list the finished job's directory, nor plant one
# for the next job; what a job leaves running is gone with it; a job that
# sends SIGSTOP to its agent, again and again, stops nothing: the agent
# heartbeats on past a lease, and no job loses its lease; the agent
# refuses to start with neither --run-as nor --same-user, with both,
# --run-as when it is not root, for a user that does not exist, and for a
# root the user cannot reach.  The PostgreSQL is that of the first
# pg_config in PATH, else Debian's.  Prints TAP; exits 1 if a test failed.
# Everything it starts is stopped, and its folder removed, at its exit.
set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP --run-as needs root"
	exit 0
fi
user=nobody
agent_pid=
d=$(mktemp -d /tmp/qs-runas.XXXXXX)
chmod 0755 "$d"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# cleanup: the agent (and its shims woken, should a job have stopped them),
# the cluster, the folder
cleanup() {
	if [ -n "$agent_pid" ]; then
		kill -CONT "$agent_pid" $(pgrep -P "$agent_pid") 2> /dev/null
		kill -TERM "$agent_pid" 2> /dev/null
		wait "$agent_pid" 2> /dev/null
	fi
	[ -d "$d/pg/data" ] && runuser -u postgres -- pg_ctl -D "$d/pg/data" -m immediate -w stop > /dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT

# submit NAME ARGV_JSON: the job's id
submit() {
	psql -X -h "$d/pg" -U postgres -d postgres -qAt -v name="$1" -v cmd="$2" <<'SQL'
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, payload)
VALUES (:'name', 'r_queue', 'team', 'gpu', jsonb_build_object('command', (:'cmd')::jsonb)) RETURNING id;
SQL
}

lacks() { ! grep -q -- "$2" "$1"; }
cannot_touch() { [ -d "$(dirname "$2")" ] && ! runuser -u "$1" -- touch "$2" 2> /dev/null; }
# pid_file_gone FILE: FILE names a process, which is gone
pid_file_gone() { [ -s "$1" ] && ! kill -0 "$(cat "$1")" 2> /dev/null; }

# the options are refused before anything else happens (an agent that
# starts after all is stopped after 10 s, and the check fails)
out=$(timeout 10 "$agent" --queue q --checkpoint-root "$d/x" 2>&1)
rc=$?
check "neither --run-as nor --same-user: exit code 2" equals "$rc" 2
check "neither: says to give --run-as=USER or --same-user" \
	has <(echo "$out") "say which OS user runs the jobs: --run-as=USER .* or --same-user"
check "neither: nothing was made" equals "$(ls -A "$d")" ""
out=$(timeout 10 "$agent" --queue q --run-as "$user" --same-user --checkpoint-root "$d/x" 2>&1)
rc=$?
check "--run-as and --same-user together: exit code 2" equals "$rc" 2
check "both: says so" has <(echo "$out") "--run-as and --same-user together: give one"
out=$(runuser -u postgres -- "$agent" --queue q --run-as "$user" --checkpoint-root "$d/x" 2>&1)
rc=$?
check "--run-as by an agent that is not root: exit code 2" equals "$rc" 2
check "--run-as by an agent that is not root: says why" has <(echo "$out") "needs the agent to run as root"
out=$("$agent" --queue q --run-as no-such-user-qs --checkpoint-root "$d/x" 2>&1)
check "--run-as of a user that does not exist: refused" has <(echo "$out") 'there is no user "no-such-user-qs"'
out=$("$agent" --queue q --run-as "$user" --checkpoint-root "$d/x" --start-cmd a --status-cmd b --stop-cmd c 2>&1)
check "--run-as with an external launcher: refused" has <(echo "$out") "--run-as is for local jobs"
mkdir -m 0700 "$d/closed"
out=$("$agent" --queue q --run-as "$user" --checkpoint-root "$d/closed/ckpt" 2>&1)
check "--run-as with a root the user cannot reach: refused" has <(echo "$out") "cannot reach the checkpoint root"

# a cluster of its own (lib.sh)
start_cluster r_queue 2

# the first job: who it is, its directory, and what it tries
cat > "$d/jobs/first.sh" << 'SH'
o=$1/first
id -u > "$o.uid"
echo "$USER $HOME" > "$o.env"
stat -c '%U %a' "$QUOTA_SCHED_CHECKPOINT_DIR" > "$o.dir"
echo secret-of-first > "$QUOTA_SCHED_CHECKPOINT_DIR/secret"
r=$(dirname "$QUOTA_SCHED_CHECKPOINT_DIR")
ls "$r" > "$o.ls" 2>&1 || echo refused >> "$o.ls"
touch "$r/planted" 2> "$o.touch" || echo refused >> "$o.touch"
kill -TERM "$PPID" 2> "$o.kill" || echo refused >> "$o.kill"
setsid sh -c 'echo $$ > "$1"; exec sleep 300' sh "$o.sleeper" &
while [ ! -s "$o.sleeper" ]; do sleep 0.1; done
SH
# the second: the first's directory, and the next job's
cat > "$d/jobs/second.sh" << 'SH'
o=$1/second
r=$(dirname "$QUOTA_SCHED_CHECKPOINT_DIR")
cat "$r/job-$2/secret" > "$o.read" 2>&1 || echo refused >> "$o.read"
ls "$r/job-$2" > "$o.list" 2>&1 || echo refused >> "$o.list"
mkdir "$r/job-$((QUOTA_SCHED_JOB_ID + 1))" 2> "$o.plant" || echo refused >> "$o.plant"
SH
# the third: SIGSTOP to its agent (its shim's parent), its shim and the
# agent's other children, every half second until the file stop-trying is
# there; what each kill did goes to stopper.kill
cat > "$d/jobs/stopper.sh" << 'SH'
o=$1/stopper
# ppid PID: the parent of PID ("PID (COMM) STATE PPID ..." in /proc/PID/stat)
ppid() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f2; }
agent=$(ppid "$PPID")
echo "$agent" > "$o.agent"
while [ ! -e "$1/stop-trying" ]; do
	for p in "$agent" "$PPID" $(pgrep -P "$agent"); do
		if kill -STOP "$p" 2>> "$o.err"; then echo "stopped $p"; else echo "refused $p"; fi
	done >> "$o.kill"
	[ -e "$o.tried" ] || echo tried > "$o.tried"
	sleep 0.5
done
SH
# the fourth, beside it: it waits for the same file
cat > "$d/jobs/bystander.sh" << 'SH'
while [ ! -e "$1/stop-trying" ]; do sleep 0.2; done
SH
chmod 0755 "$d/jobs"/*.sh

cd "$d" || exit 1
"$agent" --dbname "host=$d/pg dbname=postgres user=agent_host" --agent runas --queue r_queue \
	--run-as "$user" --checkpoint-root "$d/ckpt" --keep-checkpoints --instances 2 \
	--lease 10 --heartbeat 1 --grace 2 > "$d/agent.log" 2>&1 &
agent_pid=$!
check "the agent, as root with --run-as $user, connects" poll has "$d/agent.log" " connected: "
check "the root is root's, mode 0711" equals "$(stat -c '%U %a' "$d/ckpt")" "root 711"
check "$user cannot write the root" cannot_touch "$user" "$d/ckpt/planted-by-hand"

first=$(submit first "[\"sh\", \"$d/jobs/first.sh\", \"$d/out\"]")
check "the first job ends" poll job_is "$first" SUCCEEDED
check "it ran as $user" equals "$(cat "$d/out/first.uid")" "$(id -u "$user")"
check "with USER and HOME of $user" equals "$(cat "$d/out/first.env")" "$user $(getent passwd "$user" | cut -d: -f6)"
check "its checkpoint directory was $user's, mode 0700, while it ran" equals "$(cat "$d/out/first.dir")" "$user 700"
check "it could not list the root" has "$d/out/first.ls" refused
check "nor write in it" has "$d/out/first.touch" refused
check "nor signal its shim" has "$d/out/first.kill" refused
check "what it left running is gone" poll pid_file_gone "$d/out/first.sleeper"
check "once it has ended, its directory is root's again, mode 0700" \
	equals "$(stat -c '%U %a' "$d/ckpt/job-$first")" "root 700"

second=$(submit second "[\"sh\", \"$d/jobs/second.sh\", \"$d/out\", \"$first\"]")
check "the second job ends" poll job_is "$second" SUCCEEDED
check "it could not read the first job's checkpoint" has "$d/out/second.read" refused
check "nor was the secret in what it got" lacks "$d/out/second.read" secret-of-first
check "nor list the first job's directory" has "$d/out/second.list" refused
check "nor plant the next job's directory" has "$d/out/second.plant" refused
check "the agent's log names no failure to start" lacks "$d/agent.log" job_not_started

missing=$(submit missing '["/nonexistent/program"]')
check "a job whose command cannot be run as $user fails" poll job_is "$missing" FAILED
check "its directory is root's again too" equals "$(stat -c '%U %a' "$d/ckpt/job-$missing")" "root 700"

# The red team's: a job SIGSTOPs its agent, again and again, for longer
# than the lease (10 s); were the agent stopped, it would renew no lease,
# and every job of the host would lose its own while its processes ran on.
# As nobody the job may signal neither the agent nor any shim (root's).
bystander=$(submit bystander "[\"sh\", \"$d/jobs/bystander.sh\", \"$d/out\"]")
check "a job that waits runs" poll job_is "$bystander" RUNNING
stopper=$(submit stopper "[\"sh\", \"$d/jobs/stopper.sh\", \"$d/out\"]")
check "a job that sends SIGSTOP to its agent runs, and tries" poll test -s "$d/out/stopper.tried"
t0=$(q "SELECT now()")
check "it found its agent" equals "$(cat "$d/out/stopper.agent")" "$agent_pid"
check "its SIGSTOP to the agent was refused" has "$d/out/stopper.kill" "^refused $agent_pid\$"
check "as not permitted" has "$d/out/stopper.err" "not permitted"
# shims_refused: the agent's two children (the jobs' shims) were both refused
shims_refused() {
	local p shims
	shims=$(pgrep -P "$agent_pid")
	[ "$(echo "$shims" | wc -w)" -eq 2 ] || return 1
	for p in $shims; do has "$d/out/stopper.kill" "^refused $p\$" || return 1; done
}
check "and to each shim" shims_refused
# lease_renewed_past T: the agent's state (/proc/PID/stat) is noted in
# agent.states; true once both jobs' leases were renewed by a heartbeat
# more than a lease after T (lease_until: the heartbeat's time + 10 s)
lease_renewed_past() {
	sed 's/.*) //' "/proc/$agent_pid/stat" | cut -d' ' -f1 >> "$d/agent.states"
	[ "$(q "SELECT bool_and(lease_until > '$1'::timestamptz + interval '20 s')
			 FROM quota_sched.job WHERE id IN ($bystander, $stopper)")" = t ]
}
check "the agent heartbeats on, more than a lease after the first SIGSTOP" poll lease_renewed_past "$t0"
check "it was never stopped (state T) meanwhile" lacks "$d/agent.states" T
check "the job kept trying" test "$(grep -c "^refused $agent_pid\$" "$d/out/stopper.kill")" -ge 5
check "nothing it tried was stopped" lacks "$d/out/stopper.kill" "^stopped"
check "both jobs run still" \
	equals "$(q "SELECT string_agg(state, ',') FROM quota_sched.job WHERE id IN ($bystander, $stopper)")" \
	RUNNING,RUNNING
check "no job lost its lease (lease_losses 0)" equals "$(q "SELECT sum(lease_losses) FROM quota_sched.job")" 0
touch "$d/out/stop-trying"
check "the stopper ends" poll job_is "$stopper" SUCCEEDED
check "so does the job beside it" poll job_is "$bystander" SUCCEEDED
check "no job lost its lease after all" equals "$(q "SELECT sum(lease_losses) FROM quota_sched.job")" 0
check "the agent forgot or released no job" lacks "$d/agent.log" "job_forgotten\|job_released"

# should a job have stopped the agent or a shim after all: they go on first
kill -CONT "$agent_pid" $(pgrep -P "$agent_pid") 2> /dev/null
kill -TERM "$agent_pid"
wait "$agent_pid"
check "the agent stops (exit code 0)" equals "$?" 0
agent_pid=

echo "1..$n"
exit "$failed"
