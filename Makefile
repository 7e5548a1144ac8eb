# quota_sched: PGXS build.  `make installcheck` runs every test against
# throwaway clusters (see test/run, which also does it as root).
EXTENSION = quota_sched
MODULE_big = quota_sched
# The policy core (src/core: pure C, no PostgreSQL header) and the shell
# around it, one folder per concern (src/README.md).
CORE = $(patsubst %.c,%.o,$(sort $(wildcard src/core/*.c)))
OBJS = $(patsubst %.c,%.o,$(sort $(filter-out src/core/%,$(wildcard src/*/*.c)))) $(CORE)

# The version the sources make (QS_VERSION: quota_sched.control's
# default_version, its one home, which the C code and the agent are given
# as QS_VERSION_STRING) and the release before it (QS_PREVIOUS: the one
# update under work, sql/updates/QS_PREVIOUS--QS_VERSION.sql).  The SQL of
# the current version has one home per object, in sql/ (by area); the
# build makes of it the install script and the update from the release
# before: that update's own changes of tables and data, then the function
# sources (CREATE OR REPLACE) again.  The updates between releases are kept
# as they were released (sql/released/), and PostgreSQL chains them: a
# database of any release updates to the current version in one ALTER
# EXTENSION.  sql/updates/README.md has the rules and the steps of a
# release.
QS_VERSION := $(shell sed -n "s/^default_version = '\([^']*\)'$$/\1/p" quota_sched.control)
QS_PREVIOUS := $(patsubst sql/updates/%--$(QS_VERSION).sql,%,$(wildcard sql/updates/*--$(QS_VERSION).sql))
ifneq ($(words $(QS_PREVIOUS)),1)
$(error sql/updates/ must hold one update to $(QS_VERSION), PREVIOUS--$(QS_VERSION).sql; it has: $(QS_PREVIOUS))
endif
# The reports, one file each, in the order they read one another.
REPORTING = reporting_usage reporting_preemptions reporting_utilization reporting_lending \
	reporting_rollup reporting_accounting
SQL_FUNCTIONS = validation triggers pass_api agent_api user_api $(REPORTING) whatif metrics chart
SQL_INSTALL = roles words validation triggers tables pass_api agent_api user_api $(REPORTING) \
	whatif metrics chart policies
DATA = $(sort $(wildcard sql/released/quota_sched--*--*.sql))
DATA_built = sql/built/quota_sched--$(QS_VERSION).sql sql/built/quota_sched--$(QS_PREVIOUS)--$(QS_VERSION).sql
PG_CONFIG ?= pg_config
PG_CPPFLAGS = $(patsubst %/,-I%,$(sort $(wildcard src/*/))) -DQS_VERSION_STRING='"$(QS_VERSION)"'
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-sign-compare -Wno-cast-function-type

# pg_regress tests, one scenario per file (test/regress/sql/NAME.sql,
# test/regress/expected/NAME.out)
REGRESS = $(patsubst test/regress/sql/%.sql,%,$(sort $(wildcard test/regress/sql/*.sql)))
REGRESS_OPTS = --inputdir=test/regress --outputdir=test/regress --temp-instance=tmp_check_regress --temp-config=test/regress.conf \
	--load-extension=quota_sched

# isolation tests: test/isolation/specs/NAME.spec, test/isolation/expected/NAME.out
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(sort $(wildcard test/isolation/specs/*.spec)))
ISOLATION_OPTS = --inputdir=test/isolation --temp-instance=tmp_check_iso \
	--temp-config=test/regress.conf --load-extension=quota_sched

# TAP tests (dump/restore, pgTAP through pg_prove, worker, ...)
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

# no LLVM bitcode: clang is not needed to install
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The core's functions are called only from inside the module: hidden, so
# that calls between them are direct (no PLT) and may be inlined.
$(CORE): override CFLAGS += -fvisibility=hidden

# The launcher agent, quota-sched-agent (agent/Makefile: a PGXS PROGRAM,
# which cannot share this Makefile with MODULE_big), installed into bindir.
all: agent-all
install: agent-install
uninstall: agent-uninstall
clean: agent-clean
agent-all agent-install agent-uninstall agent-clean:
	$(MAKE) -C agent PG_CONFIG=$(PG_CONFIG) $(patsubst agent-%,%,$@)
.PHONY: agent-all agent-install agent-uninstall agent-clean

# The command line for people, quota-sched (cli/Makefile, doc/cli.md), the
# same way.
all: cli-all
install: cli-install
uninstall: cli-uninstall
clean: cli-clean
cli-all cli-install cli-uninstall cli-clean:
	$(MAKE) -C cli PG_CONFIG=$(PG_CONFIG) $(patsubst cli-%,%,$@)
.PHONY: cli-all cli-install cli-uninstall cli-clean

# sql/built/quota_sched--QS_VERSION.sql: the install script, the sources in order.
# sql/built/quota_sched--QS_PREVIOUS--QS_VERSION.sql: the update's own changes, then the
# function sources.  Each part is named in a comment; make_sql is the one
# recipe for both (its arguments: the \echo guard's command, the parts).
make_sql = mkdir -p $(@D) && { printf '%s\n' '/* Made by the Makefile from the files named below: edit those. */' \
		"\\echo Use \"$(1)\" to load this file. \\quit"; \
	for f in $(2); do printf '\n/* ===== %s ===== */\n\n' "$$f"; cat "$$f"; done; } > $@

sql/built/quota_sched--$(QS_VERSION).sql: $(patsubst %,sql/%.sql,$(SQL_INSTALL))
	$(call make_sql,CREATE EXTENSION quota_sched,$^)

sql/built/quota_sched--$(QS_PREVIOUS)--$(QS_VERSION).sql: sql/updates/$(QS_PREVIOUS)--$(QS_VERSION).sql \
		$(patsubst %,sql/%.sql,$(SQL_FUNCTIONS))
	$(call make_sql,ALTER EXTENSION quota_sched UPDATE TO '$(QS_VERSION)',$^)

# every object depends on every header (PGXS tracks none)
$(OBJS): $(wildcard src/*/*.h)

# The policy core's unit tests, built without PostgreSQL.  MUTANT=-DQS_MUTANT_X
# switches a rule off (test/mutants).
UNIT_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -O2 -g -DQS_CROSS_CHECK -Isrc/core -Itest/unit
UNIT_SRCS = test/unit/world.c $(CORE:.o=.c)

test/unit/%.bin: test/unit/%.c $(UNIT_SRCS) $(wildcard src/core/*.h test/unit/*.h)
	$(CC) $(UNIT_CFLAGS) $(MUTANT) -o $@ $< $(UNIT_SRCS) -lm

# The simulator: a short run here; long runs on demand (SIM_STEPS, SIM_SEEDS).
# SIM_REPLAYS are STEPS:SEED of runs that once found a defect of the core,
# with the generators of their time; each generator since drew more random
# numbers (0.4's hosts, then its arrays and dependencies), so that they are
# now further seeds.
SIM_STEPS ?= 20000
SIM_SEEDS ?= 1 2 3
SIM_REPLAYS = 2372:3 44074:151 38071:229 52699:120 10153:122 26466:128 14904:1 6240:120 \
	4:4 427:39

# The policy core is pure C: it includes only C headers and its own.  (Its
# unit tests build it with -Isrc/core alone, so a PostgreSQL header would not
# even compile there; this names the offender.)
corecheck:
	@bad=$$(grep -nE '^[[:space:]]*#[[:space:]]*include' src/core/*.[ch] | \
		grep -vE '#[[:space:]]*include[[:space:]]+(<(std[a-z]+|string|limits|inttypes|math)\.h>|"[a-z_]+\.h")' ; \
		for h in $$(grep -ohE '#[[:space:]]*include[[:space:]]+"[^"]+"' src/core/*.[ch] | sed 's/.*"\(.*\)"/\1/' | sort -u); do \
			[ -f src/core/$$h ] || echo "src/core includes \"$$h\", which is not in src/core"; done); \
	if [ -n "$$bad" ]; then echo "$$bad"; echo "corecheck: the policy core must not include PostgreSQL headers" >&2; exit 1; fi; \
	echo "ok 1 - src/core includes only C and core headers"

# The source rules of the C code (functions of at most 60 lines, postgres.h
# first in each file of the shell and in no header): test/style_check.sh.
stylecheck:
	@bash test/style_check.sh

unitcheck: corecheck stylecheck doccheck test/unit/test_policy.bin test/unit/test_preempt.bin \
		test/unit/test_fleet.bin test/unit/test_lending.bin test/unit/test_over_time.bin \
		test/unit/test_replay.bin test/unit/test_rules.bin test/unit/test_placement.bin \
		test/unit/sim.bin
	test/unit/test_policy.bin
	test/unit/test_preempt.bin
	test/unit/test_fleet.bin
	test/unit/test_lending.bin
	test/unit/test_over_time.bin
	test/unit/test_replay.bin
	test/unit/test_rules.bin
	test/unit/test_placement.bin
	$(MAKE) -C agent unitcheck PG_CONFIG=$(PG_CONFIG)
	$(MAKE) -C cli unitcheck PG_CONFIG=$(PG_CONFIG)
	for run in $(addprefix $(SIM_STEPS):,$(SIM_SEEDS)) $(SIM_REPLAYS); do \
		out=$$(test/unit/sim.bin $${run%%:*} $${run##*:}) || { echo "$$out" | tail -40; exit 1; }; \
		echo "$$out" | tail -1; \
	done

installcheck: unitcheck
.PHONY: unitcheck corecheck stylecheck doccheck

# The links between the docs (README.md, doc/) resolve.
doccheck:
	@perl test/doc_links.pl README.md CHANGELOG.md src/README.md doc/*.md
