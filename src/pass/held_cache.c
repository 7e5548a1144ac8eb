/*-------------------------------------------------------------------------
 *
 * held_cache.c
 *		What the hosts of a queue hold, as a pass reads it (scheduling.md
 *		3.13; issue 39, item 6): the rows of host_held, kept by the
 *		backend between passes, and the changes not yet folded into them
 *		(host_held_change), read by every pass that places a job, and
 *		folded into host_held when there are many.
 *
 * When the kept rows are right.  Only a fold (QsFoldHostsHeld, by a pass
 * of the queue, which holds its lock) and a TRUNCATE of the jobs (which
 * empties both tables) write host_held; a fold deletes the changes it adds
 * up and replaces the fold's mark (a row of host_held_change with no unit)
 * by one of a new generation, never reused.  So two snapshots that see the
 * same mark (of the same table: a new extension restarts the generations)
 * see the same host_held.  The kept rows go with the mark they were read
 * with; a fold that this backend makes brings them up to its new mark (a
 * fold rolled back leaves a mark nobody will see again: they are read once
 * more).  With no mark (a queue none of whose passes folded yet, or after
 * a TRUNCATE) nothing is kept, and the pass folds to make one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"

#include "constants.h"
#include "held_cache.h"
#include "identity.h"
#include "query.h"

PG_FUNCTION_INFO_V1(qs_host_held_reads);

/* More changes than this: the pass folds them. */
#define QS_HELD_CHANGES_KEEP 16

typedef struct HeldCacheEntry
{
	char		queue[QS_MAX_NAME_LEN + 1];	/* the key (QsQueueCacheEntry) */
	MemoryContext cxt;			/* of what follows; NULL: nothing kept */
	int64		mark;			/* the generation of the fold's mark seen */
	Oid			relid;			/* host_held_change's, then */
	int			n;
	QsHeldCount *rows;			/* host_held's, in the C order of unit, agent */
	uint64		resolved;		/* the version of the host set they were
								 * resolved against; 0: none */
} HeldCacheEntry;

static HTAB *HeldCache = NULL;
static int64 Reads = 0;			/* of host_held (qs_host_held_reads) */

/* The changes of a queue, with the fold's mark (no unit). */
static QsQuery ChangesQuery = {
	"SELECT generation, capacity_unit, agent, instances, stopping_instances, tableoid::oid"
	"  FROM quota_sched.host_held_change WHERE job_queue = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/* The rows of host_held of a queue. */
static QsQuery KeptQuery = {
	"SELECT capacity_unit, agent, instances, stopping_instances"
	"  FROM quota_sched.host_held WHERE job_queue = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * The fold: deletes the changes read ($2, the mark with them) and adds
 * them to host_held, and inserts a new mark, whose generation it returns.
 * Only passes of the queue, one at a time, delete its changes or write its
 * host_held: it never waits.
 */
static QsQuery FoldQuery = {
	"WITH gone AS (DELETE FROM quota_sched.host_held_change"
	"               WHERE job_queue = $1 AND generation = ANY ($2)"
	"               RETURNING capacity_unit, agent, instances, stopping_instances),"
	" added AS (INSERT INTO quota_sched.host_held AS h"
	"           SELECT $1, capacity_unit, agent, sum(instances)::int8,"
	"                  sum(stopping_instances)::int8"
	"             FROM gone WHERE capacity_unit IS NOT NULL GROUP BY capacity_unit, agent"
	"           ON CONFLICT (job_queue, capacity_unit, agent) DO UPDATE"
	"              SET instances = h.instances + excluded.instances,"
	"                  stopping_instances = h.stopping_instances + excluded.stopping_instances)"
	" INSERT INTO quota_sched.host_held_change (job_queue, generation)"
	" VALUES ($1, nextval('quota_sched.host_held_change_seq')) RETURNING generation",
	2, {TEXTOID, INT8ARRAYOID}, SPI_OK_INSERT_RETURNING
};

/* EntryOf returns a queue's entry (QsQueueCacheEntry). */
static HeldCacheEntry *
EntryOf(const char *queue)
{
	return QsQueueCacheEntry(&HeldCache, "quota_sched what hosts hold", sizeof(HeldCacheEntry),
						queue);
}

/* CompareCounts orders counters by unit, then agent (byte order). */
static int
CompareCounts(const void *a, const void *b)
{
	const QsHeldCount *x = a;
	const QsHeldCount *y = b;
	int			c = strcmp(x->unit, y->unit);

	return c != 0 ? c : strcmp(x->agent, y->agent);
}

/*
 * Resolve finds a counter's unit in a host set, and its agent among the
 * unit's hosts (-1: none).
 */
static void
Resolve(QsHeldCount *count, const QsHostSet *set)
{
	count->set_unit = count->host = -1;
	for (int i = 0; i < set->nunits; i++)
		if (strcmp(set->units[i].name, count->unit) == 0)
		{
			QsUnit		unit = {0};

			unit.nhosts = set->units[i].nhosts;
			unit.hosts = set->units[i].hosts;
			count->set_unit = i;
			count->host = QsHostOf(&unit, count->agent);
			return;
		}
}

/*
 * ReadCount decodes the counter of a row (unit, agent, instances,
 * stopping at columns first to first + 3) into the current memory context.
 */
static void
ReadCount(HeapTuple tup, TupleDesc desc, int first, QsHeldCount *count)
{
	bool		isnull;

	count->unit = SPI_getvalue(tup, desc, first);
	count->agent = SPI_getvalue(tup, desc, first + 1);
	count->held = DatumGetInt64(SPI_getbinval(tup, desc, first + 2, &isnull));
	count->stopping = DatumGetInt64(SPI_getbinval(tup, desc, first + 3, &isnull));
}

/*
 * ReadChanges reads a queue's rows of host_held_change in a snapshot into
 * out: the changes, the generations of every row and the fold's mark, in
 * memory context cxt (SPI leaves its own current).  Returns
 * host_held_change's oid.
 */
static Oid
ReadChanges(const char *queue, Snapshot snapshot, QsHostsHeld *out, MemoryContext cxt)
{
	Datum		arg = CStringGetTextDatum(queue);
	uint64		n = QsQueryRunIn(&ChangesQuery, &arg, NULL, snapshot, 0);
	SPITupleTable *rows = SPI_tuptable;
	MemoryContext old = MemoryContextSwitchTo(cxt);
	Oid			relid = InvalidOid;
	bool		isnull;

	out->gens = palloc(sizeof(int64) * (n + 1));
	out->changes = palloc(sizeof(QsHeldCount) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = rows->vals[i];
		int64		gen = DatumGetInt64(SPI_getbinval(tup, rows->tupdesc, 1, &isnull));

		out->gens[out->ngens++] = gen;
		relid = DatumGetObjectId(SPI_getbinval(tup, rows->tupdesc, 6, &isnull));
		(void) SPI_getbinval(tup, rows->tupdesc, 2, &isnull);
		if (isnull)
			out->mark = Max(out->mark, gen);	/* one, but for a fold in flight */
		else
			ReadCount(tup, rows->tupdesc, 2, &out->changes[out->nchanges++]);
	}
	MemoryContextSwitchTo(old);
	SPI_freetuptable(rows);
	return relid;
}

/*
 * ReadKept reads a queue's rows of host_held in a snapshot into memory
 * context cxt, in the C order of unit and agent.
 */
static QsHeldCount *
ReadKept(const char *queue, Snapshot snapshot, int *n, MemoryContext cxt)
{
	Datum		arg = CStringGetTextDatum(queue);
	uint64		nrows = QsQueryRunIn(&KeptQuery, &arg, NULL, snapshot, 0);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	QsHeldCount *rows = palloc0(sizeof(QsHeldCount) * (nrows + 1));

	Reads++;
	for (uint64 i = 0; i < nrows; i++)
		ReadCount(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &rows[i]);
	MemoryContextSwitchTo(old);
	SPI_freetuptable(SPI_tuptable);
	qsort(rows, nrows, sizeof(QsHeldCount), CompareCounts);
	*n = (int) nrows;
	return rows;
}

/*
 * QsLoadHostsHeld reads what the hosts of a queue hold as a snapshot sees
 * it into out: the rows of host_held (the kept ones when the snapshot sees
 * the mark they go with, else read again, and kept when there is a mark)
 * and the changes since, each resolved against the host set (its unit and
 * host there); and whether the pass is to fold the changes.  The caller
 * is connected to SPI; out's memory other than the kept rows is the
 * caller's.
 */
void
QsLoadHostsHeld(const char *queue, const QsHostSet *set, Snapshot snapshot, QsHostsHeld *out)
{
	HeldCacheEntry *entry = EntryOf(queue);
	MemoryContext caller = CurrentMemoryContext;
	Oid			relid;

	memset(out, 0, sizeof(*out));
	relid = ReadChanges(queue, snapshot, out, caller);
	for (int i = 0; i < out->nchanges; i++)
		Resolve(&out->changes[i], set);
	out->fold = out->mark == 0 || out->ngens > QS_HELD_CHANGES_KEEP;
	if (entry == NULL || out->mark == 0)
	{
		out->kept = ReadKept(queue, snapshot, &out->nkept, caller);
		for (int i = 0; i < out->nkept; i++)
			Resolve((QsHeldCount *) &out->kept[i], set);
		return;
	}
	if (entry->cxt == NULL || entry->mark != out->mark || entry->relid != relid)
	{
		/* (a child of the caller's until read: an error takes it with it) */
		MemoryContext cxt = AllocSetContextCreate(caller, "quota_sched what hosts hold",
												  ALLOCSET_SMALL_SIZES);
		int			n;
		QsHeldCount *rows = ReadKept(queue, snapshot, &n, cxt);

		QsCacheForget(&entry->cxt);
		MemoryContextSetParent(cxt, TopMemoryContext);
		entry->cxt = cxt;
		entry->rows = rows;
		entry->n = n;
		entry->mark = out->mark;
		entry->relid = relid;
		entry->resolved = 0;
	}
	if (entry->resolved != set->version)
	{
		for (int i = 0; i < entry->n; i++)
			Resolve(&entry->rows[i], set);
		entry->resolved = set->version;
	}
	out->kept = entry->rows;
	out->nkept = entry->n;
}

/*
 * Bring adds changes to the rows kept, as the fold adds them to host_held:
 * to the row of the same unit and agent, or as a new one.
 */
static void
Bring(HeldCacheEntry *entry, const QsHeldCount *changes, int n)
{
	int			kept = entry->n;

	for (int i = 0; i < n; i++)
	{
		QsHeldCount *row = bsearch(&changes[i], entry->rows, kept, sizeof(QsHeldCount),
								   CompareCounts);

		for (int j = kept; row == NULL && j < entry->n; j++)
			if (CompareCounts(&changes[i], &entry->rows[j]) == 0)
				row = &entry->rows[j];	/* new, of an earlier change */
		if (row == NULL)
		{
			/* a new row: after the others, sorted in below */
			entry->rows = repalloc(entry->rows, sizeof(QsHeldCount) * (entry->n + 2));
			row = &entry->rows[entry->n++];
			row->unit = MemoryContextStrdup(entry->cxt, changes[i].unit);
			row->agent = MemoryContextStrdup(entry->cxt, changes[i].agent);
			row->held = row->stopping = 0;
		}
		row->held += changes[i].held;
		row->stopping += changes[i].stopping;
	}
	if (entry->n > kept)
	{
		qsort(entry->rows, entry->n, sizeof(QsHeldCount), CompareCounts);
		entry->resolved = 0;
	}
}

/*
 * QsFoldHostsHeld folds the changes a pass read (QsLoadHostsHeld, when it
 * said to) into host_held, and brings the rows kept up to the new mark
 * when they were of the mark it saw; else they are read again by the next
 * pass.  The caller holds the queue's lock exclusively and is connected to
 * SPI as the owner.
 */
void
QsFoldHostsHeld(const char *queue, const QsHostsHeld *held)
{
	HeldCacheEntry *entry = EntryOf(queue);
	QsArray		gens;
	Datum		args[2];
	bool		isnull;
	int64		mark;

	if (!held->fold)
		return;
	QsArrayInit(&gens, INT8OID, held->ngens);
	for (int i = 0; i < held->ngens; i++)
		QsArrayPush(&gens, Int64GetDatum(held->gens[i]), false);
	args[0] = CStringGetTextDatum(queue);
	args[1] = QsArrayDatum(&gens);
	QsQueryRun(&FoldQuery, args, NULL, false, 0);
	mark = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_freetuptable(SPI_tuptable);
	if (entry == NULL || entry->cxt == NULL || held->mark == 0 || entry->mark != held->mark)
		return;
	Bring(entry, held->changes, held->nchanges);
	entry->mark = mark;
}

/*
 * qs_host_held_reads() returns how many times this backend read a queue's
 * rows of host_held (not those it kept): for tests.
 */
Datum
qs_host_held_reads(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(Reads);
}
