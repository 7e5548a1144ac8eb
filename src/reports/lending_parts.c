/*-------------------------------------------------------------------------
 *
 * lending.c
 *		lending_parts(q, t0, t1, step): who lent to whom in a queue's
 *		history, in buckets (doc/reporting.md, "Who lent to whom").
 *
 * The levels of each (share, unit) and the environment's capacity are
 * step functions of time whose changes quota_sched.lending_deltas()
 * returns (reporting_lending.sql).  This sweeps them once, unit by unit, in order
 * of time: between two changes (or a bucket's edge) the levels hold, and
 * the policy core's rule (src/core/lending.c) attributes that span.  So
 * the work is the changes times the unit's shares, in C, and the memory
 * the unit's shares and one bucket's pairs; the changes are read through a
 * cursor, a batch at a time.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "common/int.h"
#include "datatype/timestamp.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "identity.h"
#include "lending.h"

PG_FUNCTION_INFO_V1(qs_lending_parts);

/* longer than any valid name (128 bytes) */
#define LEND_NAME 136
#define LEND_BATCH 10000

typedef struct LendShareEntry
{
	char		name[LEND_NAME];	/* the key */
	int			index;
} LendShareEntry;

typedef struct LendPairKey
{
	int			lender;
	int			borrower;
} LendPairKey;

typedef struct LendPair
{
	LendPairKey key;
	double		seconds;
} LendPair;

/* The sweep: the range, and the unit being swept. */
typedef struct LendSweep
{
	TimestampTz t0;
	TimestampTz t1;
	int64		step;			/* the bucket, in microseconds */
	ReturnSetInfo *rsinfo;
	MemoryContext unit_cxt;		/* the unit's, reset at each unit */
	char	   *unit;			/* null before the first */
	HTAB	   *index;			/* share name -> position in levels */
	char	  **names;
	QsLendLevel *levels;
	int			nshares;
	int			cap;
	int64		env;			/* the environment's capacity of the unit */
	TimestampTz now;			/* how far the unit is swept */
	HTAB	   *lent;			/* (lender, borrower) -> seconds, this bucket */
} LendSweep;

static TimestampTz
BucketStart(const LendSweep *s, TimestampTz t)
{
	return s->t0 + ((t - s->t0) / s->step) * s->step;
}

/* QsLendEmit: adds to the bucket's pair. */
static void
Collect(void *arg, int lender, int borrower, double instance_seconds)
{
	LendSweep  *s = arg;
	LendPairKey key = {lender, borrower};
	LendPair   *pair;
	bool		found;

	pair = hash_search(s->lent, &key, HASH_ENTER, &found);
	if (!found)
		pair->seconds = 0;
	pair->seconds += instance_seconds;
}

/* Writes the bucket's pairs (starting at bucket) as rows, and forgets them. */
static void
Flush(LendSweep *s, TimestampTz bucket)
{
	HASH_SEQ_STATUS seq;
	LendPair   *pair;

	hash_seq_init(&seq, s->lent);
	while ((pair = hash_seq_search(&seq)) != NULL)
	{
		Datum		values[5];
		bool		nulls[5] = {false};

		if (pair->seconds > 0)
		{
			values[0] = CStringGetTextDatum(s->unit);
			values[1] = TimestampTzGetDatum(bucket);
			nulls[2] = pair->key.lender == QS_LEND_UNASSIGNED;
			values[2] = nulls[2] ? (Datum) 0 : CStringGetTextDatum(s->names[pair->key.lender]);
			values[3] = CStringGetTextDatum(s->names[pair->key.borrower]);
			values[4] = Float8GetDatum(pair->seconds);
			tuplestore_putvalues(s->rsinfo->setResult, s->rsinfo->setDesc, values, nulls);
		}
		hash_search(s->lent, &pair->key, HASH_REMOVE, NULL);
	}
}

/* Sweeps the unit's levels, as they are, up to `to`. */
static void
Advance(LendSweep *s, TimestampTz to)
{
	while (s->now < to)
	{
		TimestampTz bucket = BucketStart(s, s->now);
		TimestampTz end = Min(bucket + s->step, to);

		QsLendSpan(s->levels, s->nshares, s->env, (double) (end - s->now) / USECS_PER_SEC,
				   Collect, s);
		s->now = end;
		if (end == bucket + s->step || end == s->t1)
			Flush(s, bucket);
	}
}

/* Ends the unit being swept (at t1), and starts `unit` (null: none). */
static void
StartUnit(LendSweep *s, const char *unit)
{
	HASHCTL		ctl;

	if (s->unit != NULL)
		Advance(s, s->t1);
	MemoryContextReset(s->unit_cxt);
	s->unit = NULL;
	if (unit == NULL)
		return;
	s->unit = MemoryContextStrdup(s->unit_cxt, unit);
	ctl.keysize = LEND_NAME;
	ctl.entrysize = sizeof(LendShareEntry);
	ctl.hcxt = s->unit_cxt;
	s->index = hash_create("quota_sched lending shares", 64, &ctl,
						   HASH_ELEM | HASH_STRINGS | HASH_CONTEXT);
	ctl.keysize = sizeof(LendPairKey);
	ctl.entrysize = sizeof(LendPair);
	s->lent = hash_create("quota_sched lending pairs", 64, &ctl,
						  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	s->cap = 16;
	s->nshares = 0;
	s->names = MemoryContextAlloc(s->unit_cxt, sizeof(char *) * s->cap);
	s->levels = MemoryContextAllocZero(s->unit_cxt, sizeof(QsLendLevel) * s->cap);
	s->env = 0;
	s->now = s->t0;
}

/* The position of a share of the unit in levels, added if new. */
static int
ShareIndex(LendSweep *s, const char *name)
{
	char		key[LEND_NAME] = {0};
	LendShareEntry *e;
	bool		found;

	strlcpy(key, name, sizeof(key));
	e = hash_search(s->index, key, HASH_ENTER, &found);
	if (found)
		return e->index;
	if (s->nshares == s->cap)
	{
		s->cap *= 2;
		s->names = repalloc(s->names, sizeof(char *) * s->cap);
		s->levels = repalloc(s->levels, sizeof(QsLendLevel) * s->cap);
	}
	e->index = s->nshares++;
	s->names[e->index] = MemoryContextStrdup(s->unit_cxt, name);
	s->levels[e->index] = (QsLendLevel) {0, 0, 0};
	return e->index;
}

/* One change: (unit, share or null for the environment, at, du, dc, dl). */
static void
Apply(LendSweep *s, HeapTuple tuple, TupleDesc desc)
{
	bool		isnull[6];
	Datum		v[6];
	char	   *unit;

	for (int i = 0; i < 6; i++)
		v[i] = SPI_getbinval(tuple, desc, i + 1, &isnull[i]);
	if (isnull[0] || isnull[2])
		return;
	unit = TextDatumGetCString(v[0]);
	if (s->unit == NULL || strcmp(s->unit, unit) != 0)
		StartUnit(s, unit);
	Advance(s, Min(Max(DatumGetTimestampTz(v[2]), s->t0), s->t1));
	if (isnull[1])
		s->env += isnull[4] ? 0 : DatumGetInt64(v[4]);
	else
	{
		/* the position first: ShareIndex may move levels */
		int			at = ShareIndex(s, TextDatumGetCString(v[1]));
		QsLendLevel *l = &s->levels[at];

		l->used += isnull[3] ? 0 : DatumGetInt64(v[3]);
		l->capacity += isnull[4] ? 0 : DatumGetInt64(v[4]);
		l->lendable += isnull[5] ? 0 : DatumGetInt64(v[5]);
	}
}

static SPIPlanPtr
DeltasPlan(void)
{
	static SPIPlanPtr plan = NULL;
	Oid			types[3] = {TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID};

	if (plan == NULL)
	{
		plan = SPI_prepare("SELECT d.capacity_unit, d.quota_share, d.at, d.du, d.dc, d.dl"
						   "  FROM quota_sched.lending_deltas($1, $2, $3) d"
						   " ORDER BY d.capacity_unit, d.at", 3, types);
		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "quota_sched: could not prepare the lending query: %s",
				 SPI_result_code_string(SPI_result));
	}
	return plan;
}

/* The bucket's width in microseconds: days of 24 hours, no months. */
static int64
StepMicroseconds(const Interval *step)
{
	int64		usecs;

	if (step->month != 0 ||
		pg_mul_s64_overflow((int64) step->day, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, step->time, &usecs) || usecs <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid bucket for lending_parts"),
				 errdetail("A bucket is positive, in days, hours, minutes or seconds.")));
	return usecs;
}

Datum
qs_lending_parts(PG_FUNCTION_ARGS)
{
	LendSweep	s = {0};
	Datum		args[3];
	Portal		portal;
	MemoryContext batch_cxt;

	QsCheckSchemaVersion();
	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1) || PG_ARGISNULL(2) || PG_ARGISNULL(3))
		PG_RETURN_NULL();
	s.rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	s.t0 = PG_GETARG_TIMESTAMPTZ(1);
	s.t1 = PG_GETARG_TIMESTAMPTZ(2);
	s.step = StepMicroseconds(PG_GETARG_INTERVAL_P(3));
	if (TIMESTAMP_NOT_FINITE(s.t0) || TIMESTAMP_NOT_FINITE(s.t1) || s.t0 >= s.t1)
		PG_RETURN_NULL();
	s.unit_cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched lending unit",
									   ALLOCSET_DEFAULT_SIZES);
	batch_cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched lending batch",
									  ALLOCSET_DEFAULT_SIZES);
	args[0] = PG_GETARG_DATUM(0);
	args[1] = TimestampTzGetDatum(s.t0);
	args[2] = TimestampTzGetDatum(s.t1);
	SPI_connect();
	portal = SPI_cursor_open(NULL, DeltasPlan(), args, NULL, true);
	for (;;)
	{
		MemoryContext old;

		SPI_cursor_fetch(portal, true, LEND_BATCH);
		if (SPI_processed == 0)
			break;
		old = MemoryContextSwitchTo(batch_cxt);
		for (uint64 i = 0; i < SPI_processed; i++)
			Apply(&s, SPI_tuptable->vals[i], SPI_tuptable->tupdesc);
		MemoryContextSwitchTo(old);
		MemoryContextReset(batch_cxt);
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
	StartUnit(&s, NULL);
	SPI_finish();
	PG_RETURN_NULL();
}
