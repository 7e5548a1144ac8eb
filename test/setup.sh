# test/setup.sh: sourced by test/run and demo/run.  Installs what quota_sched
# needs on Debian 12 (as root), builds it with -Werror and installs it.
# QS_PG_CONFIG, if set, names the pg_config of another PostgreSQL 15 (a
# copy of Debian's elsewhere, say): qs_setup builds and installs into it,
# and its bindir comes first in PATH, for demo/run (test/run's suites name
# Debian's pg_config and do not follow it).

QS_PACKAGES="make gcc postgresql-15 postgresql-server-dev-15 libpq-dev postgresql-15-cron
postgresql-15-pgtap libtap-parser-sourcehandler-pgtap-perl libipc-run-perl libxml2-utils
python3-psycopg"
# big ones, installed without their recommends: PyTorch for the multi-host
# training run of test/t/025_multihost_ddp.pl (run by /usr/bin/python3)
QS_PACKAGES_LEAN="python3-torch"
QS_PG_CONFIG=${QS_PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export PATH=${QS_PG_CONFIG%/*}:$PATH

# qs_setup: install missing packages, then build and install the extension.
qs_setup() {
	local top=$1
	if [ "$(id -u)" -ne 0 ]; then
		echo "run this as root (it installs packages and the extension; clusters run as postgres)" >&2
		exit 1
	fi
	# shellcheck disable=SC2086
	if ! dpkg -s $QS_PACKAGES >/dev/null 2>&1; then
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y $QS_PACKAGES
	fi
	# shellcheck disable=SC2086
	if ! dpkg -s $QS_PACKAGES_LEAN >/dev/null 2>&1; then
		apt-get update
		DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $QS_PACKAGES_LEAN
	fi
	make -C "$top" -s clean >/dev/null
	make -C "$top" -s PG_CONFIG="$QS_PG_CONFIG"
	make -C "$top" -s PG_CONFIG="$QS_PG_CONFIG" install >/dev/null
}

# qs_private_copy: copy the tree (without .git) into a new folder that the
# postgres user owns, for throwaway clusters, and print its path.
qs_private_copy() {
	local top=$1 dir
	dir=$(mktemp -d /tmp/quota_sched.XXXXXX)
	tar -C "$top" --exclude=.git -cf - . | tar -C "$dir" -xf -
	chown -R postgres: "$dir"
	echo "$dir"
}

# qs_unpacked PACKAGE BINARY: print the path of BINARY of a Debian package
# that the tests run but that must not be installed (installing prometheus
# or prometheus-node-exporter would start their services): the package is
# downloaded and unpacked into /var/cache/quota_sched/PACKAGE; empty when
# it cannot be had.
qs_unpacked() {
	local pkg=$1 bin=$2 dir=/var/cache/quota_sched/$1 tmp
	if [ ! -x "$dir/usr/bin/$bin" ]; then
		tmp=$(mktemp -d)
		# apt-get download writes into the current folder, as the _apt user if it can
		chmod 755 "$tmp"
		if (cd "$tmp" && { apt-get download "$pkg" >/dev/null 2>&1 ||
				{ apt-get update >/dev/null && apt-get download "$pkg" >/dev/null 2>&1; }; }); then
			mkdir -p "$dir"
			dpkg-deb -x "$tmp/$pkg"_*.deb "$dir"
		fi
		rm -rf "$tmp"
	fi
	[ -x "$dir/usr/bin/$bin" ] && echo "$dir/usr/bin/$bin"
}

# qs_promtool: print the path of promtool, which checks the output of
# metrics() (test/t/012_metrics.pl) and tests the alert rules
# (test/t/021_prometheus.pl): the one installed, else Debian's, unpacked.
qs_promtool() {
	if command -v promtool >/dev/null 2>&1; then
		command -v promtool
		return
	fi
	qs_unpacked prometheus promtool
}

# qs_ha_packages: install what test/ha/patroni.pl runs: Patroni (with the
# etcd client its etcd3 support imports) and etcd.  Their services are not
# wanted: the test starts its own etcd and Patroni nodes, on ports of their
# own.
QS_HA_PACKAGES="patroni python3-etcd etcd-server"
qs_ha_packages() {
	# shellcheck disable=SC2086
	dpkg -s $QS_HA_PACKAGES >/dev/null 2>&1 && return 0
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y $QS_HA_PACKAGES ||
		{ apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $QS_HA_PACKAGES; }
}

# qs_ha_prove WORK: run test/ha/patroni.pl as the postgres user in WORK (a
# private copy of the tree), with PostgreSQL's Perl test modules; on
# failure print its logs; print the figures it wrote.
qs_ha_prove() {
	local work=$1 pgxs status f
	pgxs=$(dirname "$(/usr/lib/postgresql/15/bin/pg_config --pgxs)")/..
	(cd "$work" && runuser -u postgres -- env TESTDIR="$work" PATH="/usr/lib/postgresql/15/bin:/usr/bin:/bin" \
		PG_REGRESS="$pgxs/test/regress/pg_regress" prove -I "$pgxs/test/perl" test/ha/patroni.pl)
	status=$?
	if [ "$status" -ne 0 ]; then
		for f in "$work"/tmp_check/log/{regress_log_patroni,patroni_n?.log,etcd.log,agent_a?.log}; do
			[ -f "$f" ] && { echo "=== $f"; tail -n 60 "$f"; }
		done
	fi
	[ -f "$work/tmp_check/ha_figures.txt" ] && { echo "== test/ha/patroni.pl figures"; cat "$work/tmp_check/ha_figures.txt"; }
	return "$status"
}
