/*-------------------------------------------------------------------------
 *
 * query.c
 *		Running the extension's statements through saved plans (query.h).
 *		The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "catalog/namespace.h"
#include "nodes/parsenodes.h"
#include "storage/bufmgr.h"
#include "access/xact.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "query.h"
#include "constants.h"

/*
 * PlanGeneration returns the generation of the plans: it moves on, looked
 * at once a second at most, when quota_sched.job has grown or shrunk to twice
 * or half (and 8 pages beyond) the size it had when it last moved.  Plans
 * of an older generation are made again.  PostgreSQL remakes a saved plan
 * when the table is analysed; but a plan made while the table was nearly
 * empty (a new installation, a session's first statement after a TRUNCATE)
 * is a sequential scan and sort that would otherwise stay, in the worker
 * for its whole life, while the table grows to thousands of jobs.
 */
static uint64
PlanGeneration(void)
{
	static uint64 generation = 1;
	static BlockNumber planned_blocks = 0;
	static TimestampTz checked = 0;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Oid			relid;

	if (now >= checked && now - checked < USECS_PER_SEC)
		return generation;
	checked = now;
	relid = get_relname_relid("job", get_namespace_oid(QS_SCHEMA, true));
	if (OidIsValid(relid))
	{
		Relation	rel = table_open(relid, AccessShareLock);
		BlockNumber blocks = RelationGetNumberOfBlocks(rel);

		table_close(rel, AccessShareLock);
		if (blocks > 2 * planned_blocks + 8 || 2 * blocks + 8 < planned_blocks)
		{
			generation++;
			planned_blocks = blocks;
		}
	}
	return generation;
}

/*
 * Prepare returns a saved plan of a statement: generic, or planned for each
 * run (custom).
 */
static SPIPlanPtr
Prepare(QsQuery *query, bool custom)
{
	SPIPlanPtr	plan = SPI_prepare_cursor(query->sql, query->nargs, query->types,
										  custom ? CURSOR_OPT_CUSTOM_PLAN :
										  CURSOR_OPT_GENERIC_PLAN);

	if (plan == NULL || SPI_keepplan(plan) != 0)
		elog(ERROR, "quota_sched: could not prepare \"%s\": %s", query->sql,
			 SPI_result_code_string(SPI_result));
	return plan;
}

/* The number of elements of an array (of job ids). */
static int
ArrayIdCount(ArrayType *ids)
{
	return ArrayGetNItems(ARR_NDIM(ids), ARR_DIMS(ids));
}

/*
 * QsQueryPlan returns the saved plan of a statement for a run with these
 * arguments, preparing it on first use.  Plans are generic: a custom plan
 * for a stream's first rows (priority below the maximum) would sort a
 * share's whole backlog, where the generic plan walks the share-order
 * index; the cost of a pass must not depend on the backlog.  A statement
 * that takes jobs by an array of ids (by_ids) has a second plan, made for
 * each run, for runs of more than QS_GENERIC_IDS_MAX ids: the generic plan
 * assumes a few ids, and one made while the table was small is a
 * sequential scan that tests every row against the whole array.  Few ids
 * (a pass that dispatches one job, an agent's report) take the generic
 * plan, which costs no planning: planning an UPDATE of quota_sched.job
 * looks at every one of its indexes.  Plans are made again as the job
 * table grows (PlanGeneration).
 */
static SPIPlanPtr
QsQueryPlan(QsQuery *query, Datum *args, const char *nulls)
{
	uint64		generation = PlanGeneration();

	if (query->generation != generation)
	{
		if (query->plan != NULL)
			SPI_freeplan(query->plan);
		if (query->custom != NULL)
			SPI_freeplan(query->custom);
		query->plan = query->custom = NULL;
		query->generation = generation;
	}
	Assert(!query->by_ids || query->types[0] == INT8ARRAYOID);
	if (query->by_ids && (nulls == NULL || nulls[0] != 'n') &&
		ArrayIdCount(DatumGetArrayTypeP(args[0])) > QS_GENERIC_IDS_MAX)
	{
		if (query->custom == NULL)
			query->custom = Prepare(query, true);
		return query->custom;
	}
	if (query->plan == NULL)
		query->plan = Prepare(query, false);
	return query->plan;
}

/*
 * Execute runs a statement's plan for these arguments: in the snapshot
 * given, or (NULL) as SPI does (read_only: in the active snapshot; else a
 * snapshot of its own), and returns the number of rows processed.  Any
 * result other than the one the statement expects is an internal error.
 *
 * A statement marked walk reads a stream in batches (ORDER BY along an
 * index, a constant LIMIT) and must walk the index: with a LIMIT above the
 * rows the generic plan expects, a scan of the table or of a bitmap, then
 * a sort, costs less on paper, and would read the whole rest of a share's
 * jobs for every batch.  And no JIT: a sort such a statement cannot do
 * without (of a few rows) costs as disabled, which would compile the
 * statement at each run (a fifth of a second).  Planning happens within the
 * run (the first, or after an invalidation), so the settings hold for the
 * run; an error restores them with the (sub)transaction.
 */
static uint64
Execute(QsQuery *query, Datum *args, const char *nulls, Snapshot snapshot,
		bool read_only, long count)
{
	SPIPlanPtr	plan = QsQueryPlan(query, args, nulls);
	int			nest = 0;
	int			rc;

	if (query->walk)
	{
		nest = NewGUCNestLevel();
		(void) set_config_option("enable_seqscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_bitmapscan", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("enable_sort", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
		(void) set_config_option("jit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_SAVE, true, 0, false);
	}
	if (snapshot == NULL)
		rc = SPI_execute_plan(plan, args, nulls, read_only, count);
	else
		rc = SPI_execute_snapshot(plan, args, nulls, snapshot, InvalidSnapshot, read_only,
								  true, count);
	if (query->walk)
		AtEOXact_GUC(true, nest);
	if (rc != query->expect)
		elog(ERROR, "quota_sched: \"%s\" failed: %s", query->sql, SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * QsQueryRun runs a statement with its arguments (nulls as SPI takes them:
 * 'n' for a null, NULL for none) and returns the number of rows processed;
 * the rows are in SPI_tuptable.  Any result other than the one the
 * statement expects is an internal error.
 */
uint64
QsQueryRun(QsQuery *query, Datum *args, const char *nulls, bool read_only, long count)
{
	return Execute(query, args, nulls, NULL, read_only, count);
}

/*
 * QsQueryRunIn runs a statement as QsQueryRun does, in the snapshot given
 * (NULL: a snapshot of its own, as QsQueryRun without read_only), so that
 * several statements see the same state.
 */
uint64
QsQueryRunIn(QsQuery *query, Datum *args, const char *nulls, Snapshot snapshot, long count)
{
	return Execute(query, args, nulls, snapshot, false, count);
}

/*
 * QsArrayInit starts an array argument of a type, with room for cap
 * elements to begin with (an estimate: it grows as needed).
 */
void
QsArrayInit(QsArray *a, Oid type, int cap)
{
	a->type = type;
	a->n = 0;
	a->cap = Max(cap, 1);
	a->values = palloc(sizeof(Datum) * a->cap);
	a->nulls = palloc(sizeof(bool) * a->cap);
}

/*
 * QsArrayPush appends an element, with more room (twice as much) when the
 * array is full.
 */
void
QsArrayPush(QsArray *a, Datum value, bool isnull)
{
	if (a->n == a->cap)
	{
		if (a->cap > (int) (MaxAllocSize / sizeof(Datum) / 2))
			ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
							errmsg("too many elements in an array argument (%d)", a->n)));
		a->cap *= 2;
		a->values = repalloc(a->values, sizeof(Datum) * a->cap);
		a->nulls = repalloc(a->nulls, sizeof(bool) * a->cap);
	}
	a->values[a->n] = value;
	a->nulls[a->n] = isnull;
	a->n++;
}

/*
 * QsArrayDatum returns the array built, as a datum in the caller's memory.
 */
Datum
QsArrayDatum(QsArray *a)
{
	int16		len;
	bool		byval;
	char		align;
	int			dims[1] = {a->n};
	int			lbs[1] = {1};

	get_typlenbyvalalign(a->type, &len, &byval, &align);
	return PointerGetDatum(construct_md_array(a->values, a->nulls, 1, dims, lbs,
											  a->type, len, byval, align));
}

/*
 * QsListHasName tells whether a List of C strings has the name.
 */
bool
QsListHasName(const List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}
