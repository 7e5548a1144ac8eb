# quota_sched: PGXS build.  `make installcheck` runs every test against
# throwaway clusters (see test/run, which also does it as root).
EXTENSION = quota_sched
MODULE_big = quota_sched
OBJS = src/quota_sched.o src/checks.o src/job_columns.o src/job_trigger.o
DATA = sql/quota_sched--0.1.sql
PG_CONFIG ?= pg_config
PG_CPPFLAGS = -Isrc
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers \
	-Wno-sign-compare -Wno-cast-function-type

# pg_regress tests, one scenario per file (sql/NAME.sql, expected/NAME.out)
REGRESS = $(patsubst sql/%.sql,%,$(filter-out sql/quota_sched--%,$(sort $(wildcard sql/*.sql))))
REGRESS_OPTS = --temp-instance=tmp_check_regress --temp-config=test/regress.conf \
	--load-extension=quota_sched

# TAP tests (dump/restore, pgTAP through pg_prove, worker, ...)
TAP_TESTS = 1
PROVE_TESTS = $(sort $(wildcard test/t/*.pl))

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
