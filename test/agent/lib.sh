# test/agent/lib.sh: what the agent's root suites (run_as.sh, devices.sh)
# share, sourced after each has made its folder $d: TAP lines, polling,
# SQL on their cluster, and the cluster itself.  Each suite keeps its own
# cleanup (what it started), which stops the cluster and removes $d.
command -v pg_config > /dev/null || export PATH=/usr/lib/postgresql/15/bin:$PATH
PATH=$(pg_config --bindir):$PATH
export PATH
agent=$(pg_config --bindir)/quota-sched-agent
n=0
failed=0

# check DESCRIPTION COMMAND...: one TAP line, ok if COMMAND succeeds
check() {
	local what=$1
	shift
	n=$((n + 1))
	if "$@"; then
		echo "ok $n - $what"
	else
		echo "not ok $n - $what"
		failed=1
	fi
}

# poll COMMAND...: whether COMMAND succeeds within 60 s
poll() {
	local i
	for i in $(seq 1 600); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

q() { psql -X -h "$d/pg" -U postgres -d postgres -qAt -c "$1"; }
has() { grep -q -- "$2" "$1"; }
equals() { [ "$1" = "$2" ] || { echo "# got \"$1\", want \"$2\""; return 1; }; }
job_is() { [ "$(q "SELECT state FROM quota_sched.job WHERE id = $1")" = "$2" ]; }

# start_cluster QUEUE INSTANCES: a cluster of its own, as postgres, on a
# socket in $d/pg, with the worker, QUEUE (in environment QUEUE_env) of
# INSTANCES gpu and one share "team" of them all, and the login
# agent_host, which serves every queue; $d/out (anyone's) and $d/jobs
start_cluster() {
	mkdir "$d/pg" "$d/out" "$d/jobs"
	chown postgres: "$d/pg"
	chmod 1777 "$d/out"
	runuser -u postgres -- initdb -D "$d/pg/data" -A trust -U postgres > /dev/null || exit 1
	cat >> "$d/pg/data/postgresql.conf" <<- CONF
		listen_addresses = ''
		unix_socket_directories = '$d/pg'
		shared_preload_libraries = 'quota_sched'
		quota_sched.database = 'postgres'
		quota_sched.naptime = '300ms'
	CONF
	runuser -u postgres -- pg_ctl -D "$d/pg/data" -l "$d/pg/log" -w start > /dev/null || exit 1
	q "CREATE EXTENSION quota_sched;
	   INSERT INTO quota_sched.service_environment VALUES ('$1_env', '{\"gpu\": $2}');
	   INSERT INTO quota_sched.job_queue (name, service_environment) VALUES ('$1', '$1_env');
	   INSERT INTO quota_sched.quota_share (job_queue, name, capacity_limits, strategy)
	   VALUES ('$1', 'team', '{\"gpu\": $2}', 'LEND_AND_BORROW');
	   CREATE ROLE agent_host LOGIN IN ROLE quota_sched_agent;
	   INSERT INTO quota_sched.agent_access (login, job_queue) VALUES ('agent_host', NULL);" || exit 1
}
