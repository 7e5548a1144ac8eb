#!/usr/bin/env bash
# test/agent/devices.sh: quota-sched-agent's --devices and --cgroup (issue
# 40), which need root (the cgroups, mknod), so test/run runs it as root
# after `make installcheck`, as run_as.sh.  A cluster of its own (as
# postgres, on a socket in a temporary folder) and real agents as root
# with --run-as nobody.  With --devices 0,1,2,3 two jobs of 2 instances on
# one agent get disjoint devices, in CUDA_VISIBLE_DEVICES and
# NVIDIA_VISIBLE_DEVICES (which each job prints) and in job_attempts.
# With --cgroup (this host's cgroup v1, or v2), NVIDIA nodes made with
# mknod in a folder of the test (--device-node-pattern): a job opening its
# own device gets ENXIO (no driver), another job's device EPERM (the
# cgroup's rule), and nvidiactl ENXIO; its cgroup has the memory and CPU
# limits of its instances; a job that allocates over
# --memory-per-instance is killed, and its attempt FAILED with
# OUT_OF_MEMORY; the parts' cgroups are gone after.  And the options that
# are refused at the start (exit 2, saying why).  Prints TAP; exits 1 if a
# test failed.  Everything it starts is stopped, and its folder removed,
# at its exit.
set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
	echo "1..0 # SKIP --cgroup and mknod need root"
	exit 0
fi
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)	# the tree: test_devprog's sources
pids=()
d=$(mktemp -d /tmp/qs-devices.XXXXXX)
chmod 0755 "$d"
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# cleanup: the agents, the cluster, the folder
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -TERM "$p" 2> /dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done
	[ -d "$d/pg/data" ] && runuser -u postgres -- pg_ctl -D "$d/pg/data" -m immediate -w stop > /dev/null 2>&1
	rm -rf "$d"
}
trap cleanup EXIT

# refused DESCRIPTION WANTED OPTION...: the agent with these options exits 2
# at once, saying WANTED (a pattern), and makes nothing
refused() {
	local what=$1 want=$2 out rc
	shift 2
	out=$(timeout 10 "$agent" --queue q --run-as nobody --checkpoint-root "$d/x" "$@" 2>&1)
	rc=$?
	check "refused: $what (exit 2, saying why)" \
		bash -c '[ "$1" -eq 2 ] && grep -q -- "$2" <<< "$3" && [ ! -e "$4" ]' _ "$rc" "$want" "$out" "$d/x"
}

# submit NAME INSTANCES ARGV_JSON: the job's id
submit() {
	psql -X -h "$d/pg" -U postgres -d postgres -qAt -v name="$1" -v k="$2" -v cmd="$3" <<'SQL'
INSERT INTO quota_sched.job (name, job_queue, quota_share, capacity_unit, instance_count, payload)
VALUES (:'name', 'd_queue', 'team', 'gpu', :'k', jsonb_build_object('command', (:'cmd')::jsonb))
RETURNING id;
SQL
}

# the device nodes of the test: NVIDIA's major 195, minors 0 to 3 and 255
# (nvidiactl), nvidia-uvm on a major no driver has here (510); no driver
# answers any of them: an open that the cgroup lets through gets ENXIO
mkdir -m 0755 "$d/dev"
for i in 0 1 2 3; do mknod -m 0666 "$d/dev/nvidia$i" c 195 "$i"; done
mknod -m 0666 "$d/dev/nvidiactl" c 195 255
mknod -m 0666 "$d/dev/nvidia-uvm" c 510 0

refused "a device given twice" "given twice" --devices 0,0
refused "indexes and UUIDs mixed" "by index or all by UUID, not both" --devices 0,GPU-8d3f
refused "a device that is neither" '"x" is no device' --devices 0,x
refused "--instances over the devices" "more than the 2 devices" --devices 0,1 --instances 3
refused "a limit without --cgroup" "need --cgroup" --memory-per-instance 64M
refused "a memory limit below 4 MiB" "at least 4 MiB" --cgroup --memory-per-instance 1M
refused "a CPU limit of 0" "number of CPUs from 0.01" --cgroup --cpus-per-instance 0
refused "--cgroup with a UUID whose node is not known" "as GPU-8d3f=INDEX" --cgroup --devices GPU-8d3f
refused "--cgroup with a device without its node" "nvidia7: No such file" --cgroup --devices 0,7 \
	--device-node-pattern "$d/dev/nvidia%d"
refused "a node pattern that is not absolute" "absolute path" --device-node-pattern dev/nvidia%d
refused "a node pattern without %d" "one %d" --device-node-pattern /dev/nvidia%s
out=$(runuser -u postgres -- "$agent" --queue q --same-user --cgroup --checkpoint-root "$d/x" 2>&1)
rc=$?
check "refused: --cgroup by an agent that is not root (exit 2, saying why)" \
	bash -c '[ "$1" -eq 2 ] && grep -q -- "--cgroup needs the agent to run as root" <<< "$2"' _ "$rc" "$out"

# a cluster of its own (lib.sh)
start_cluster d_queue 4

# the jobs' command: its devices' variables into OUT/NAME.env, an open of
# each node of the test into OUT/NAME.open ("nvidia2 ENXIO"), its cgroups
# into OUT/NAME.cgroup; then it waits for OUT/NAME.go
cat > "$d/jobs/probe.pl" << 'PL'
use strict;
use Errno;
use Fcntl;
my ($out, $dev, $name) = @ARGV;
# put NAME, TEXT: OUT/NAME written whole (a reader never sees half of it)
sub put
{
	my ($file, $text) = @_;
	open(my $f, '>', "$out/$file.tmp") or die "$file: $!";
	print $f $text;
	close($f);
	rename("$out/$file.tmp", "$out/$file") or die "$file: $!";
}
put("$name.env", join('', map { "$_=" . ($ENV{$_} // '') . "\n" }
	qw(CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES CUDA_DEVICE_ORDER)));
opendir(my $dh, $dev) or die "$dev: $!";
my $opened = '';
foreach my $node ((map { "$dev/$_" } sort grep { !/^\./ } readdir($dh)), '/dev/null')
{
	my ($base) = $node =~ m{([^/]+)$};
	if (sysopen(my $fh, $node, O_RDWR)) { $opened .= "$base OK\n"; close($fh); }
	else
	{
		my ($e) = grep { $!{$_} } keys %!;
		$opened .= "$base $e\n";
	}
}
put("$name.open", $opened);
open(my $cg, '<', '/proc/self/cgroup') or die $!;
put("$name.cgroup", join('', <$cg>));
select(undef, undef, undef, 0.1) until -e "$out/$name.go";
PL
# the job over its memory: 256 MiB, each page written
cat > "$d/jobs/hog.pl" << 'PL'
my $x = "x" x (256 * 1024 * 1024);
print "survived\n";
PL
# a job that spins until it has had 2 s of CPU: the wall time that took
# (/proc/uptime), and how often its cgroup's CFS quota held it back (v1
# cpu.stat nr_throttled; v2 the same)
cat > "$d/jobs/spin.pl" << 'PL'
my $out = shift;
sub uptime { open(my $u, '<', '/proc/uptime') or die $!; my ($s) = split ' ', <$u>; return $s; }
my $t0 = uptime();
my ($user, $system) = (0, 0);
($user, $system) = times while $user + $system < 2;
my $wall = uptime() - $t0;
open(my $cg, '<', '/proc/self/cgroup') or die $!;
my ($path) = map { /^\d+:(?:cpu|):(\/.*)$/ ? $1 : () } <$cg>;
my $stat = -e "/sys/fs/cgroup/cpu$path/cpu.stat" ? "/sys/fs/cgroup/cpu$path/cpu.stat" : "/sys/fs/cgroup$path/cpu.stat";
open(my $st, '<', $stat) or die "$stat: $!";
my ($throttled) = map { /^nr_throttled (\d+)/ ? $1 : () } <$st>;
open(my $f, '>', "$out/spin.tmp") or die $!;
printf $f "cpu %.2f wall %.2f throttled %d\n", $user + $system, $wall, $throttled;
close($f);
rename("$out/spin.tmp", "$out/spin") or die $!;
PL
chmod 0755 "$d/jobs" "$d/jobs"/*.pl

cd "$d" || exit 1
# start_agent NAME OPTION...: an agent of 4 instances as root, jobs as nobody
start_agent() {
	local name=$1
	shift
	"$agent" --dbname "host=$d/pg dbname=postgres user=agent_host" --agent "$name" --queue d_queue \
		--capacity-unit gpu --run-as nobody --checkpoint-root "$d/ckpt-$name" --log-dir "$d/logs-$name" \
		--lease 20 --heartbeat 1 --grace 2 "$@" > "$d/$name.log" 2>&1 &
	pids+=($!)
}
# devices_of JOB: the devices job_attempts has of the job's attempt
devices_of() { q "SELECT array_to_string(devices, ',') FROM quota_sched.job_attempts WHERE job_id = $1"; }
has_devices() { [ -n "$(devices_of "$1")" ]; }
# all_are STATE JOB...: each job is in STATE
all_are() {
	local want=$1 j
	shift
	for j in "$@"; do job_is "$j" "$want" || return 1; done
}
# disjoint A B: two comma-separated lists of two devices, none in both
disjoint() {
	[ -n "$1" ] && [ -n "$2" ] &&
		[ "$(printf '%s\n' ${1//,/ } ${2//,/ } | sort -u | wc -l)" -eq 4 ]
}
env_of() { sed -n "s/^$2=//p" "$d/out/$1.env"; }

# -- --devices alone: which devices each part gets, and what it is told
start_agent plain --devices 0,1,2,3
check "an agent with --devices 0,1,2,3 connects" poll has "$d/plain.log" " connected: "
check "it says its devices" has "$d/plain.log" "devices 0,1,2,3"
a=$(submit a 2 "[\"perl\", \"$d/jobs/probe.pl\", \"$d/out\", \"$d/dev\", \"a\"]")
b=$(submit b 2 "[\"perl\", \"$d/jobs/probe.pl\", \"$d/out\", \"$d/dev\", \"b\"]")
check "two jobs of 2 instances run on it at once" poll test -s "$d/out/a.env" -a -s "$d/out/b.env"
check "both on the one agent" equals "$(q "SELECT count(*) FROM quota_sched.job WHERE agent = 'plain' AND state = 'RUNNING'")" 2
echo "# a: $(tr '\n' ' ' < "$d/out/a.env")"
echo "# b: $(tr '\n' ' ' < "$d/out/b.env")"
check "each got two devices, none the other's (CUDA_VISIBLE_DEVICES)" \
	disjoint "$(env_of a CUDA_VISIBLE_DEVICES)" "$(env_of b CUDA_VISIBLE_DEVICES)"
check "NVIDIA_VISIBLE_DEVICES names the same as CUDA_VISIBLE_DEVICES" \
	bash -c '[ "$1" = "$2" ] && [ "$3" = "$4" ]' _ "$(env_of a CUDA_VISIBLE_DEVICES)" \
	"$(env_of a NVIDIA_VISIBLE_DEVICES)" "$(env_of b CUDA_VISIBLE_DEVICES)" "$(env_of b NVIDIA_VISIBLE_DEVICES)"
check "the lowest free first: 0,1 and 2,3" equals \
	"$(printf '%s\n' "$(env_of a CUDA_VISIBLE_DEVICES)" "$(env_of b CUDA_VISIBLE_DEVICES)" | sort | tr '\n' ' ')" "0,1 2,3 "
check "CUDA_DEVICE_ORDER=PCI_BUS_ID (devices by index)" equals "$(env_of a CUDA_DEVICE_ORDER)" PCI_BUS_ID
poll has_devices "$a" && poll has_devices "$b"
check "job_attempts has each part's devices, as its variables" \
	bash -c '[ "$1" = "$2" ] && [ "$3" = "$4" ]' _ "$(devices_of "$a")" \
	"$(env_of a CUDA_VISIBLE_DEVICES)" "$(devices_of "$b")" "$(env_of b CUDA_VISIBLE_DEVICES)"
psql -X -h "$d/pg" -U postgres -d postgres -c \
	"SELECT job_id, name, attempt, rank, agent, devices FROM quota_sched.job_attempts ORDER BY job_id" | sed 's/^/# /'
check "without --cgroup nothing fences the nodes: a job opens another's device (ENXIO, no driver)" \
	has "$d/out/a.open" "^nvidia$(env_of b CUDA_VISIBLE_DEVICES | cut -d, -f1) ENXIO"
touch "$d/out/a.go"
check "the first job ends" poll job_is "$a" SUCCEEDED
c=$(submit c 2 "[\"perl\", \"$d/jobs/probe.pl\", \"$d/out\", \"$d/dev\", \"c\"]")
check "a third job runs in the devices the first left" poll test -s "$d/out/c.env"
check "it has the first job's devices" equals "$(env_of c CUDA_VISIBLE_DEVICES)" "$(env_of a CUDA_VISIBLE_DEVICES)"
touch "$d/out/b.go" "$d/out/c.go"
check "the second and third end" poll all_are SUCCEEDED "$b" "$c"
kill -TERM "${pids[0]}"
wait "${pids[0]}"
check "the agent stops (exit code 0)" equals "$?" 0
pids=()

# -- --cgroup: the parts' limits and device rules, real cgroups
if [ -e /sys/fs/cgroup/cgroup.controllers ]; then v2=1; else v2=; fi
echo "# cgroup $([ -n "$v2" ] && echo v2 || echo v1)"
start_agent cg --devices 0,1,2,3 --cgroup --device-node-pattern "$d/dev/nvidia%d" \
	--memory-per-instance 64M --cpus-per-instance 0.5
check "an agent with --cgroup connects" poll has "$d/cg.log" " connected: "
e=$(submit e 2 "[\"perl\", \"$d/jobs/probe.pl\", \"$d/out\", \"$d/dev\", \"e\"]")
f=$(submit f 2 "[\"perl\", \"$d/jobs/probe.pl\", \"$d/out\", \"$d/dev\", \"f\"]")
check "two jobs of 2 instances run under it" poll test -s "$d/out/e.open" -a -s "$d/out/f.open"
echo "# e: $(tr '\n' ' ' < "$d/out/e.env")"
echo "# e opened: $(tr '\n' ' ' < "$d/out/e.open")"
check "with disjoint devices" disjoint "$(env_of e CUDA_VISIBLE_DEVICES)" "$(env_of f CUDA_VISIBLE_DEVICES)"
# opened JOB NAME... RESULT: what JOB got opening each node NAME
opened() {
	local job=$1 want=${*: -1} i
	for i in "${@:2:$#-2}"; do has "$d/out/$job.open" "^$i $want\$" || return 1; done
}
own_e=$(env_of e CUDA_VISIBLE_DEVICES | sed 's/\([0-9]*\)/nvidia\1/g; s/,/ /')
own_f=$(env_of f CUDA_VISIBLE_DEVICES | sed 's/\([0-9]*\)/nvidia\1/g; s/,/ /')
check "a job opens its own devices' nodes: ENXIO (let through, no driver)" opened e $own_e ENXIO
check "and nvidiactl and nvidia-uvm: ENXIO" opened e nvidiactl nvidia-uvm ENXIO
check "another job's devices: EPERM (the cgroup's rule)" opened e $own_f EPERM
check "and the other way round" bash -c "$(declare -f opened has); d=$d; opened f $own_f ENXIO && opened f $own_e EPERM"
check "/dev/null as ever" opened e null OK
# cg_file JOB CONTROLLER FILE: a control file of the job's cgroup, from its /proc/self/cgroup
cg_file() {
	local path
	if [ -n "$v2" ]; then
		path=$(sed -n 's/^0:://p' "$d/out/$1.cgroup")
		echo "/sys/fs/cgroup$path/$3"
	else
		path=$(awk -F: -v c="$2" '$2 == c {print $3}' "$d/out/$1.cgroup")
		echo "/sys/fs/cgroup/$2$path/$3"
	fi
}
echo "# e's cgroups: $(tr '\n' ' ' < "$d/out/e.cgroup")"
check "its cgroup is the agent's, of its job and attempt" has "$d/out/e.cgroup" "/quota_sched/cg/$e\.1\."
if [ -n "$v2" ]; then
	check "its memory limit: 2 x 64 MiB (memory.max)" equals "$(cat "$(cg_file e memory memory.max)")" 134217728
	check "its CPU limit: 2 x 0.5 CPU (cpu.max)" equals "$(cat "$(cg_file e cpu cpu.max)")" "100000 100000"
else
	check "its memory limit: 2 x 64 MiB (memory.limit_in_bytes)" \
		equals "$(cat "$(cg_file e memory memory.limit_in_bytes)")" 134217728
	check "its CPU limit: 2 x 0.5 CPU (cpu.cfs_quota_us of 100000)" \
		equals "$(cat "$(cg_file e cpu cpu.cfs_quota_us)")" 100000
	check "it is in the part's devices cgroup, whose rules allow its own nodes" \
		has "$(cg_file e devices devices.list)" "^c 195:$(env_of e CUDA_VISIBLE_DEVICES | cut -d, -f1) rwm"
	check "and in its pids cgroup" has "$d/out/e.cgroup" ":pids:/quota_sched/cg/$e\.1\."
fi
for limit in memory/memory.limit_in_bytes cpu/cpu.cfs_quota_us memory/memory.max cpu/cpu.max; do
	file=$(cg_file e "${limit%%/*}" "${limit#*/}")
	[ -e "$file" ] && echo "# $file: $(cat "$file")"
done
edir=$(cg_file e memory "")
touch "$d/out/e.go" "$d/out/f.go"
check "both end" poll all_are SUCCEEDED "$e" "$f"
check "their cgroups are removed once they ended" poll test ! -e "$edir"

spin=$(submit spin 1 "[\"perl\", \"$d/jobs/spin.pl\", \"$d/out\"]")
check "a job that spins for 2 s of CPU under a limit of 0.5 CPU ends" poll job_is "$spin" SUCCEEDED
echo "# spin: $(cat "$d/out/spin")"
# (on a host busy enough to give it less than half a CPU anyway, the
# quota holds nothing back, and this could not tell)
check "it took at least 3.2 s of wall time (0.5 CPU: 4 s; unlimited on an idle host: 2 s)" \
	awk '$1 == "cpu" && $2 >= 2 && $4 >= 3.2 { ok = 1 } END { exit !ok }' "$d/out/spin"

hog=$(submit hog 1 "[\"perl\", \"$d/jobs/hog.pl\"]")
check "a job that allocates 256 MiB over its 64 MiB fails" poll job_is "$hog" FAILED
reason=$(q "SELECT status_reason FROM quota_sched.job WHERE id = $hog")
echo "# $reason"
grep -E "agent_limits|job_exited.*OOM|job_reported.*OUT_OF" "$d/cg.log" | sed 's/^/# /'
check "its reason starts with OUT_OF_MEMORY" has <(echo "$reason") "^OUT_OF_MEMORY: "
check "it says the limit" has <(echo "$reason") "limit of 64 MiB"
log=$(q "SELECT log_path FROM quota_sched.job_attempts WHERE job_id = $hog")
check "it did not get through (the kernel killed it): its output file has no \"survived\"" \
	bash -c '[ -f "$1" ] && ! grep -q survived "$1"' _ "$log"
check "its attempt failed, in the history too" \
	has <(q "SELECT reason FROM quota_sched.job_event WHERE job_id = $hog AND to_state = 'FAILED'") "^OUT_OF_MEMORY"
# no_part_cgroups: no cgroup under the agent's, in any controller
no_part_cgroups() {
	local c dirs=()
	if [ -n "$v2" ]; then dirs=(/sys/fs/cgroup/quota_sched/cg); else
		for c in memory cpu devices pids; do dirs+=("/sys/fs/cgroup/$c/quota_sched/cg"); done
	fi
	for c in "${dirs[@]}"; do
		[ -d "$c" ] || return 1
		[ -z "$(find "$c" -mindepth 1 -type d)" ] || return 1
	done
}
check "no part's cgroup is left, in any controller" poll no_part_cgroups
kill -TERM "${pids[0]}"
wait "${pids[0]}"
check "the agent stops (exit code 0)" equals "$?" 0
pids=()
# the agent's cgroups, and quota_sched's if no other agent of the host has one
for c in memory/ cpu/ devices/ pids/ ""; do
	rmdir "/sys/fs/cgroup/${c}quota_sched/cg" "/sys/fs/cgroup/${c}quota_sched" 2> /dev/null
done

# -- cgroup v2's device rules: the agent's BPF device program
# (agent/devprog.c) in a real v2 cgroup, by test/agent/test_devprog.c: on a
# v2 host its hierarchy; on a v1 host the v2 hierarchy mounted beside the
# controllers (/sys/fs/cgroup/unified, systemd's), which takes device
# programs though it has no controllers
v2root=
if [ -n "$v2" ]; then v2root=/sys/fs/cgroup
elif [ "$(stat -f -c %T /sys/fs/cgroup/unified 2> /dev/null)" = cgroup2fs ]; then v2root=/sys/fs/cgroup/unified
fi
if [ -z "$v2root" ]; then
	echo "# no cgroup v2 hierarchy here: the device program is not tried"
elif ! gcc -Wall -Wextra -Werror -I"$src/agent" -o "$d/test_devprog" "$src/test/agent/test_devprog.c" \
	"$src/agent/devprog.c"; then
	check "test_devprog builds" false
else
	echo "# the device program in $v2root"
	while read -r line; do
		case $line in
			"ok "*) check "cgroup v2: ${line#ok * - }" true ;;
			"not ok "*) check "cgroup v2: ${line#not ok * - }" false ;;
			"#"*) echo "$line" ;;
		esac
	done < <("$d/test_devprog" "$v2root" "$d/dev"; echo "# test_devprog exit $?")
fi

echo "1..$n"
exit "$failed"
