# bench/cluster.sh: sourced by the benchmarks.  bench_cluster NAME starts a
# throwaway cluster (as postgres, in a temp dir, on a unix socket) with
# quota_sched preloaded and its worker off; it is removed on exit.  After it,
# bench_psql runs psql against it as the superuser, in the database
# BENCH_DB (default postgres).

PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

bench_die() { echo "bench: $*" >&2; exit 1; }

bench_cluster() {
	local name=$1 extra_conf=${2:-}
	[ "$(id -u)" -eq 0 ] || bench_die "run this as root (the cluster runs as the postgres user)"
	[ -x "$PGBIN/postgres" ] || bench_die "PostgreSQL 15 is not installed: apt-get install postgresql-15"
	[ -f "$("$PGBIN/pg_config" --pkglibdir)/quota_sched.so" ] ||
		bench_die "quota_sched is not installed: make && make install"
	BENCH_TMP=$(mktemp -d /tmp/qs_bench.XXXXXX)
	BENCH_DATA=$BENCH_TMP/data
	trap 'runuser -u postgres -- "$PGBIN/pg_ctl" -D "$BENCH_DATA" -m immediate stop >/dev/null 2>&1; rm -rf "$BENCH_TMP"' EXIT
	chown postgres: "$BENCH_TMP"
	runuser -u postgres -- "$PGBIN/initdb" -D "$BENCH_DATA" -A trust -U postgres -E UTF8 \
		--locale=C --no-sync >"$BENCH_TMP/initdb.log" 2>&1 || bench_die "initdb failed"
	cat >>"$BENCH_DATA/postgresql.conf" <<CONF
# $name
shared_preload_libraries = 'quota_sched'
quota_sched.enabled = off
listen_addresses = ''
unix_socket_directories = '$BENCH_TMP'
shared_buffers = 1GB
max_wal_size = 8GB
checkpoint_timeout = 30min
$extra_conf
CONF
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$BENCH_DATA" -l "$BENCH_TMP/server.log" -w start \
		>/dev/null || { cat "$BENCH_TMP/server.log"; bench_die "the server did not start"; }
}

bench_psql() {
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$BENCH_TMP" -U postgres -d "${BENCH_DB:-postgres}" "$@"
}
