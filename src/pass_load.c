/*-------------------------------------------------------------------------
 *
 * pass_load.c
 *		The snapshot loader: reads what one pass of a queue needs and
 *		nothing more — the configuration, the jobs holding capacity, the
 *		promised and timed-out RUNNABLE jobs, and the RUNNABLE jobs of each
 *		share and unit only as the dispatch loop consumes them (SPEC 3.2's
 *		skip rule bounds how far), through the partial indexes on RUNNABLE
 *		jobs.  The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "pass.h"
#include "quota_sched.h"


static SPIPlanPtr plans[QS_PLAN_COUNT_SLOTS];

/*
 * QsPreparedPlan returns the saved plan of a slot, preparing it on first
 * use.  Plans name every relation with its schema.  They are generic from
 * the start: a custom plan for a stream's first rows (priority below the
 * maximum) would sort a share's whole backlog, and the generic plan walks
 * the share-order index; the pass's cost must not depend on the backlog.
 */
SPIPlanPtr
QsPreparedPlan(int slot, const char *sql, int nargs, const Oid *types)
{
	if (plans[slot] == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(sql, nargs, (Oid *) types,
											  CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "quota_sched: could not prepare \"%s\": %s", sql,
				 SPI_result_code_string(SPI_result));
		plans[slot] = plan;
	}
	return plans[slot];
}

static int	AddUnit(QsSnapshot *snap, const char *unit);
static int64 CapacityOf(Jsonb *map, const char *unit);

static void *
SnapshotAlloc(void *arg, size_t size)
{
	return MemoryContextAllocZero((MemoryContext) arg, size);
}

/*
 * QsUnitIndex returns the index of a capacity unit in the snapshot, or -1.
 */
int
QsUnitIndex(const QsSnapshot *snap, const char *unit)
{
	for (int u = 0; u < snap->in.nunits; u++)
		if (strcmp(snap->in.units[u].name, unit) == 0)
			return u;
	return -1;
}

/*
 * QsShareIndex returns the index of a share in the snapshot, or -1.
 */
int
QsShareIndex(const QsSnapshot *snap, const char *share)
{
	for (int s = 0; s < snap->in.nshares; s++)
		if (strcmp(snap->in.shares[s].name, share) == 0)
			return s;
	return -1;
}

static QsTime
TimeOrNone(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? QS_NO_TIME : DatumGetTimestampTz(d);
}

static int32
Int32At(HeapTuple tup, TupleDesc desc, int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(tup, desc, col, &isnull);

	return isnull ? 0 : DatumGetInt32(d);
}

static QsJobState
StateFromName(const char *state)
{
	if (strcmp(state, "SCHEDULED") == 0)
		return QS_SCHEDULED;
	if (strcmp(state, "STARTING") == 0)
		return QS_STARTING;
	if (strcmp(state, "RUNNING") == 0)
		return QS_RUNNING;
	return QS_RUNNABLE;
}

/*
 * JobFromSpi fills a QsJob from a row of QS_JOB_COLUMNS.  share and unit
 * are the indexes already known to the caller, or -1 to look them up.
 */
static void
JobFromSpi(QsSnapshot *snap, HeapTuple tup, TupleDesc desc, int share,
		   int unit, QsJob *job)
{
	bool		isnull;
	char	   *stop;

	memset(job, 0, sizeof(*job));
	job->id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
	job->share = share >= 0 ? share : QsShareIndex(snap, SPI_getvalue(tup, desc, 2));
	job->unit = unit >= 0 ? unit : AddUnit(snap, SPI_getvalue(tup, desc, 3));
	job->count = Int32At(tup, desc, 4);
	job->priority = Int32At(tup, desc, 5);
	job->state = StateFromName(SPI_getvalue(tup, desc, 6));
	job->queued_at = TimeOrNone(tup, desc, 7);
	job->scheduled_at = TimeOrNone(tup, desc, 8);
	job->promised_at = TimeOrNone(tup, desc, 9);
	job->lease_until = TimeOrNone(tup, desc, 10);
	job->deadline = TimeOrNone(tup, desc, 11);
	stop = SPI_getvalue(tup, desc, 12);
	job->stop = QsStopFromName(stop);
	SPI_getbinval(tup, desc, 13, &isnull);
	job->claimed = !isnull;
	job->preempted_for = DatumGetInt64(SPI_getbinval(tup, desc, 14, &isnull));
	if (isnull)
		job->preempted_for = 0;
	job->failed_attempts = Int32At(tup, desc, 15);
	job->max_attempts = Int32At(tup, desc, 16);
	job->preemption_count = Int32At(tup, desc, 17);
	job->preemption_retries = Int32At(tup, desc, 18);
}

/*
 * AddUnit adds a capacity unit to the snapshot if it is new, with the
 * environment's limit (0 when the environment does not have it).
 */
static int
AddUnit(QsSnapshot *snap, const char *unit)
{
	QsUnit	   *units = (QsUnit *) snap->in.units;
	int			u = QsUnitIndex(snap, unit);

	if (u >= 0)
		return u;
	if (snap->in.nunits == snap->units_cap)
	{
		snap->units_cap *= 2;
		units = repalloc(units, sizeof(QsUnit) * snap->units_cap);
		snap->in.units = units;
	}
	units[snap->in.nunits].name = MemoryContextStrdup(snap->cxt, unit);
	units[snap->in.nunits].env_limit = CapacityOf(snap->env_limits, unit);
	return snap->in.nunits++;
}

/*
 * AddMapUnits adds every key of a capacity map as a unit.
 */
static void
AddMapUnits(QsSnapshot *snap, Jsonb *map)
{
	JsonbIterator *it = JsonbIteratorInit(&map->root);
	JsonbValue	v;
	JsonbIteratorToken tok;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
		if (tok == WJB_KEY)
			AddUnit(snap, pnstrdup(v.val.string.val, v.val.string.len));
}

/*
 * CapacityOf returns the capacity of a unit in a capacity map (0: absent).
 */
static int64
CapacityOf(Jsonb *map, const char *unit)
{
	JsonbValue *v = QsJsonbField(&map->root, unit);

	if (v == NULL || v->type != jbvNumeric)
		return 0;
	return DatumGetInt64(DirectFunctionCall1(numeric_int8, NumericGetDatum(v->val.numeric)));
}

static QsStrategy
StrategyFromName(const char *name)
{
	if (strcmp(name, "LEND_AND_BORROW") == 0)
		return QS_LEND_AND_BORROW;
	if (strcmp(name, "LEND") == 0)
		return QS_LEND;
	return QS_RESERVE;
}

/*
 * LoadConfiguration reads the queue, its environment and its shares, and
 * the (share, unit) pairs that have RUNNABLE jobs (a loose index scan, one
 * probe per pair).  Units are the environment's, the shares', and those of
 * RUNNABLE and held jobs, so that a job of a unit the environment lost is
 * still seen (E(u) = 0).
 */
static bool
LoadConfiguration(QsSnapshot *snap, Jsonb ***share_maps)
{
	Oid			text_type = TEXTOID;
	Datum		queue = CStringGetTextDatum(snap->queue);
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	QsShare    *shares;
	Jsonb	  **maps;

	if (SPI_execute_plan(QsPreparedPlan(QS_PLAN_QUEUE,
										"SELECT e.state = 'ENABLED', e.capacity_limits, q.runnable_timeout"
										"  FROM quota_sched.job_queue q"
										"  JOIN quota_sched.service_environment e ON e.name = q.service_environment"
										" WHERE q.name = $1", 1, &text_type),
						 &queue, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read job queue \"%s\"", snap->queue);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	snap->in.env_enabled = DatumGetBool(SPI_getbinval(tup, desc, 1, &isnull));
	snap->env_limits = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 2, &isnull));
	{
		Datum		t = SPI_getbinval(tup, desc, 3, &isnull);

		snap->runnable_timeout = isnull ? NULL : DatumGetIntervalP(datumCopy(t, false, sizeof(Interval)));
	}
	AddMapUnits(snap, snap->env_limits);

	if (SPI_execute_plan(QsPreparedPlan(QS_PLAN_SHARES,
										"SELECT name, strategy, borrow_limit, in_share_preemption,"
										"       state = 'ENABLED', capacity_limits"
										"  FROM quota_sched.quota_share WHERE job_queue = $1"
										" ORDER BY name COLLATE \"C\"", 1, &text_type),
						 &queue, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read the shares of \"%s\"", snap->queue);
	snap->in.nshares = SPI_processed;
	shares = MemoryContextAllocZero(snap->cxt, sizeof(QsShare) * (SPI_processed + 1));
	maps = MemoryContextAllocZero(snap->cxt, sizeof(Jsonb *) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		tup = SPI_tuptable->vals[i];
		desc = SPI_tuptable->tupdesc;
		shares[i].name = MemoryContextStrdup(snap->cxt, SPI_getvalue(tup, desc, 1));
		shares[i].strategy = StrategyFromName(SPI_getvalue(tup, desc, 2));
		shares[i].borrow_limit = Int32At(tup, desc, 3);
		shares[i].in_share_preemption = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));
		shares[i].enabled = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
		maps[i] = DatumGetJsonbPCopy(SPI_getbinval(tup, desc, 6, &isnull));
		AddMapUnits(snap, maps[i]);
	}
	snap->in.shares = shares;
	*share_maps = maps;
	return true;
}

/*
 * LoadStreamPairs marks the (share, unit) pairs that have RUNNABLE jobs,
 * adding units not seen yet.
 */
static void
LoadStreamPairs(QsSnapshot *snap, List **pairs)
{
	Oid			text_type = TEXTOID;
	Datum		queue = CStringGetTextDatum(snap->queue);

	if (SPI_execute_plan(QsPreparedPlan(QS_PLAN_STREAM_PAIRS,
										"WITH RECURSIVE p(quota_share, capacity_unit) AS ("
										"  (SELECT quota_share, capacity_unit FROM quota_sched.job"
										"    WHERE job_queue = $1 AND state = 'RUNNABLE'"
										"    ORDER BY quota_share, capacity_unit LIMIT 1)"
										"  UNION ALL"
										"  SELECT n.quota_share, n.capacity_unit FROM p, LATERAL ("
										"    SELECT j.quota_share, j.capacity_unit FROM quota_sched.job j"
										"     WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
										"       AND (j.quota_share, j.capacity_unit) > (p.quota_share, p.capacity_unit)"
										"     ORDER BY j.quota_share, j.capacity_unit LIMIT 1) n)"
										" SELECT quota_share, capacity_unit FROM p", 1, &text_type),
						 &queue, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read the RUNNABLE units of \"%s\"", snap->queue);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		char	   *share = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *unit = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);

		AddUnit(snap, unit);
		*pairs = lappend(*pairs, share);
		*pairs = lappend(*pairs, MemoryContextStrdup(snap->cxt, unit));
	}
}

/*
 * LoadJobs runs a query of QS_JOB_COLUMNS for the queue and returns its
 * jobs; held jobs also give their agents.
 */
static QsJob *
LoadJobs(QsSnapshot *snap, int slot, const char *sql, int *njobs, char ***agents)
{
	Oid			types[2] = {TEXTOID, INTERVALOID};
	Datum		args[2];
	char		nulls[2] = {' ', ' '};
	QsJob	   *jobs;

	args[0] = CStringGetTextDatum(snap->queue);
	args[1] = snap->runnable_timeout ? IntervalPGetDatum(snap->runnable_timeout) : (Datum) 0;
	if (snap->runnable_timeout == NULL)
		nulls[1] = 'n';
	if (SPI_execute_plan(QsPreparedPlan(slot, sql, slot == QS_PLAN_EXPIRED ? 2 : 1, types),
						 args, nulls, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read the jobs of \"%s\"", snap->queue);
	*njobs = SPI_processed;
	jobs = MemoryContextAllocZero(snap->cxt, sizeof(QsJob) * (SPI_processed + 1));
	if (agents)
		*agents = MemoryContextAllocZero(snap->cxt, sizeof(char *) * (SPI_processed + 1));
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];

		JobFromSpi(snap, tup, SPI_tuptable->tupdesc, -1, -1, &jobs[i]);
		if (agents)
		{
			char	   *agent = SPI_getvalue(tup, SPI_tuptable->tupdesc, 13);

			(*agents)[i] = agent ? MemoryContextStrdup(snap->cxt, agent) : NULL;
		}
	}
	return jobs;
}

/* The batch sizes of a stream, each a query of its own with a constant LIMIT. */
static const int StreamBatches[QS_STREAM_BATCHES] = {8, 64, 512, 4096};

/*
 * StreamFetch reads the next batch of a stream: the RUNNABLE jobs of a
 * share and unit after a position in share order, with fewer instances
 * than below.  A constant LIMIT per batch size keeps the plan an ordered
 * walk of the share-order index, whatever the statistics say: a plan that
 * sorted a share's whole backlog would make the pass cost grow with it.
 */
static void
StreamFetch(QsSnapshot *snap, QsStreamCursor *sc, int share, int unit,
			const QsJob *after, int32 below)
{
	Oid			types[7] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID,
	TIMESTAMPTZOID, INT8OID};
	Datum		args[7];
	int			limit = StreamBatches[sc->batch];
	char	   *sql;
	MemoryContext old;

	args[0] = CStringGetTextDatum(snap->queue);
	args[1] = CStringGetTextDatum(snap->in.shares[share].name);
	args[2] = CStringGetTextDatum(snap->in.units[unit].name);
	args[3] = Int32GetDatum(below);
	args[4] = Int32GetDatum(after ? after->priority : PG_INT32_MAX);
	args[5] = TimestampTzGetDatum(after ? after->queued_at : 0);
	args[6] = Int64GetDatum(after ? after->id : 0);
	sql = psprintf("SELECT " QS_JOB_COLUMNS " FROM quota_sched.job"
				   " WHERE job_queue = $1 AND quota_share = $2"
				   "   AND capacity_unit = $3 AND state = 'RUNNABLE'"
				   /* + 0: a filter, so that the share-order index serves */
				   "   AND instance_count + 0 < $4 AND priority <= $5"
				   "   AND (priority < $5 OR (queued_at, id) > ($6, $7))"
				   " ORDER BY priority DESC, queued_at, id LIMIT %d", limit);
	if (SPI_execute_plan(QsPreparedPlan(QS_PLAN_STREAM + sc->batch, sql, 7, types),
						 args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read the RUNNABLE jobs of \"%s\"", snap->queue);
	old = MemoryContextSwitchTo(snap->cxt);
	if (sc->cap < limit)
	{
		sc->buf = palloc(sizeof(QsJob) * limit);
		sc->cap = limit;
	}
	MemoryContextSwitchTo(old);
	sc->nbuf = SPI_processed;
	sc->pos = 0;
	sc->fetched_below = below;
	for (uint64 i = 0; i < SPI_processed; i++)
		JobFromSpi(snap, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, share, unit, &sc->buf[i]);
	sc->exhausted = SPI_processed < (uint64) limit;
	SPI_freetuptable(SPI_tuptable);
	if (sc->batch < QS_STREAM_BATCHES - 1)
		sc->batch++;
}

/*
 * SourceNext is the policy's source of RUNNABLE jobs: the next job of a
 * share and unit in share order after a position, below a size bound.
 * Rows come in growing batches; when the bound shrinks the next batch is
 * read with it, so that skipped jobs are not read.
 */
static bool
SourceNext(void *arg, int share, int unit, const QsJob *after, int32_t below,
		   QsJob *out)
{
	QsSnapshot *snap = arg;
	QsStreamCursor *sc = &snap->streams[share * snap->in.nunits + unit];

	if (!sc->has_jobs)
		return false;
	if (after == NULL || below < sc->fetched_below)
	{
		/* from the start, or with a smaller bound: read afresh */
		sc->nbuf = sc->pos = 0;
		sc->exhausted = false;
		StreamFetch(snap, sc, share, unit, after, below);
	}
	for (;;)
	{
		while (sc->pos < sc->nbuf)
		{
			QsJob	   *job = &sc->buf[sc->pos++];

			if (job->count < below)
			{
				*out = *job;
				return true;
			}
		}
		if (sc->exhausted || sc->nbuf == 0)
			return false;
		{
			QsJob		last = sc->buf[sc->nbuf - 1];

			StreamFetch(snap, sc, share, unit, &last, below);
		}
	}
}

/*
 * SourceSmallest gives a lender's smallest RUNNABLE jobs of a unit, for the
 * wanted-capacity rule.
 */
static int
SourceSmallest(void *arg, int share, int unit, int32_t at_most, int max, QsJob *out)
{
	QsSnapshot *snap = arg;
	Oid			types[5] = {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID};
	Datum		args[5];
	int			n;

	if (!snap->streams[share * snap->in.nunits + unit].has_jobs)
		return 0;
	args[0] = CStringGetTextDatum(snap->queue);
	args[1] = CStringGetTextDatum(snap->in.shares[share].name);
	args[2] = CStringGetTextDatum(snap->in.units[unit].name);
	args[3] = Int32GetDatum(at_most);
	args[4] = Int32GetDatum(max);
	if (SPI_execute_plan(QsPreparedPlan(QS_PLAN_SMALLEST,
										"SELECT " QS_JOB_COLUMNS " FROM quota_sched.job"
										" WHERE job_queue = $1 AND quota_share = $2"
										"   AND capacity_unit = $3 AND state = 'RUNNABLE'"
										"   AND instance_count <= $4"
										" ORDER BY instance_count, id LIMIT $5", 5, types),
						 args, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read waiting jobs");
	n = SPI_processed;
	for (int i = 0; i < n; i++)
		JobFromSpi(snap, SPI_tuptable->vals[i], SPI_tuptable->tupdesc, share, unit, &out[i]);
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * QsLoadSnapshot reads the snapshot of a queue at time now.  Returns false
 * when the queue does not exist.
 */
bool
QsLoadSnapshot(QsSnapshot *snap, const char *queue, TimestampTz now)
{
	Jsonb	  **share_maps;
	List	   *pairs = NIL;
	MemoryContext old;
	int64	   *caps;

	memset(snap, 0, sizeof(*snap));
	snap->cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched snapshot",
									  ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(snap->cxt);
	snap->queue = pstrdup(queue);
	snap->in.now = now;
	snap->units_cap = 8;
	snap->in.units = palloc0(sizeof(QsUnit) * snap->units_cap);
	snap->in.alloc = SnapshotAlloc;
	snap->in.alloc_arg = snap->cxt;
	if (!LoadConfiguration(snap, &share_maps))
	{
		MemoryContextSwitchTo(old);
		return false;
	}
	LoadStreamPairs(snap, &pairs);
	snap->in.held = LoadJobs(snap, QS_PLAN_HELD,
							 "SELECT " QS_JOB_COLUMNS " FROM quota_sched.job"
							 " WHERE job_queue = $1 AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')",
							 &snap->in.nheld, &snap->held_agents);
	snap->in.promised = LoadJobs(snap, QS_PLAN_PROMISED,
								 "SELECT " QS_JOB_COLUMNS " FROM quota_sched.job"
								 " WHERE job_queue = $1 AND state = 'RUNNABLE'"
								 "   AND promised_at IS NOT NULL",
								 &snap->in.npromised, NULL);
	if (snap->runnable_timeout != NULL)
		snap->in.expired = LoadJobs(snap, QS_PLAN_EXPIRED,
									"SELECT " QS_JOB_COLUMNS " FROM quota_sched.job"
									" WHERE job_queue = $1 AND state = 'RUNNABLE'"
									"   AND status_reason LIKE 'MISCONFIGURATION:%'"
									"   AND status_reason_at + $2 < now()",
									&snap->in.nexpired, NULL);

	/* capacities, now that every unit is known */
	for (int s = 0; s < snap->in.nshares; s++)
	{
		caps = palloc0(sizeof(int64) * snap->in.nunits);
		for (int u = 0; u < snap->in.nunits; u++)
			caps[u] = CapacityOf(share_maps[s], snap->in.units[u].name);
		((QsShare *) snap->in.shares)[s].capacity = caps;
	}
	snap->streams = palloc0(sizeof(QsStreamCursor) * (snap->in.nshares * snap->in.nunits + 1));
	for (int i = 0; i + 1 < list_length(pairs); i += 2)
	{
		int			s = QsShareIndex(snap, list_nth(pairs, i));
		int			u = QsUnitIndex(snap, list_nth(pairs, i + 1));

		if (s >= 0 && u >= 0)
			snap->streams[s * snap->in.nunits + u].has_jobs = true;
	}
	snap->in.source.next = SourceNext;
	snap->in.source.smallest = SourceSmallest;
	snap->in.source.arg = snap;
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * QsCloseSnapshot frees the snapshot.
 */
void
QsCloseSnapshot(QsSnapshot *snap)
{
	MemoryContextDelete(snap->cxt);
}
