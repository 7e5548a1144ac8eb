/*-------------------------------------------------------------------------
 *
 * borrow_memory.c
 *		recent_borrow(S,u) for a queue with a fair_half_life (scheduling.md
 *		3.12): the pass's memory of borrowing, carried on from change to
 *		change of borrowed(S,u) in closed form (QsRecentBorrowAt).
 *
 * Every change of held capacity of such a queue is a row of held_change,
 * written by whoever makes it, in its transaction, insert only (usage.c).
 * The pass reads, in its snapshot, the memory of each share and unit
 * (borrow_memory: recent_borrow at a time, the instances held then and the
 * capacity limit in force since) and the changes committed since, in order
 * of their times; between two changes borrowed = max(0, held - capacity) is
 * constant, so recent_borrow is carried on exactly from one to the next and
 * up to the pass's time, and handed to the policy core.  Then (a pass, not
 * a dry run, explain or queue_snapshot) it deletes the changes it read and
 * writes the memory of the cells that changed, at its time, with the
 * instances the counters hold (they and the changes are read in one
 * snapshot, so they agree; if they do not, after a write that bypassed the
 * triggers, the counters win) and the capacity limit of its configuration,
 * in force from then on.  A change whose transaction started before the
 * memory's time (it committed after the pass that wrote it) counts from
 * that time.  A cell without memory, or with the memory of another
 * half-life, starts at 0.  Only the pass writes borrow_memory, and nobody
 * else deletes from held_change: nobody waits for anybody.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "borrow_memory.h"
#include "checks.h"
#include "constants.h"
#include "host_cache.h"
#include "over_time.h"
#include "query.h"
#include "usage.h"

/* What a pass knows of one share and unit's memory. */
typedef struct BorrowCell
{
	bool		known;			/* memory of the queue's half-life read */
	bool		dirty;			/* to be written */
	TimestampTz at;
	int64		held;
	int64		capacity;
	double		recent;
} BorrowCell;

static QsQuery MemoryQuery = {
	"SELECT quota_share, capacity_unit, half_life, at, held, capacity, recent"
	"  FROM quota_sched.borrow_memory WHERE job_queue = $1"
	" ORDER BY quota_share COLLATE \"C\", capacity_unit",
	1, {TEXTOID}, SPI_OK_SELECT
};

static QsQuery ChangesQuery = {
	"SELECT ctid, quota_share, capacity_unit, at, delta"
	"  FROM quota_sched.held_change WHERE job_queue = $1 ORDER BY at",
	1, {TEXTOID}, SPI_OK_SELECT
};

static QsQuery ForgetChangesQuery = {
	"DELETE FROM quota_sched.held_change WHERE ctid = ANY ($1)",
	1, {TIDARRAYOID}, SPI_OK_DELETE
};

static QsQuery WriteMemoryQuery = {
	"INSERT INTO quota_sched.borrow_memory AS m"
	" SELECT $1, s, u, $2, $3, h, c, r"
	"   FROM unnest($4::text[], $5::text[], $6::int8[], $7::int8[], $8::float8[]) AS t(s, u, h, c, r)"
	" ON CONFLICT (job_queue, quota_share, capacity_unit) DO UPDATE"
	"   SET half_life = excluded.half_life, at = excluded.at, held = excluded.held,"
	"       capacity = excluded.capacity, recent = excluded.recent",
	8, {TEXTOID, INTERVALOID, TIMESTAMPTZOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID,
		INT8ARRAYOID, FLOAT8ARRAYOID},
	SPI_OK_INSERT
};

/* The cell of a share and unit the state knows, or -1. */
static int
CellOf(const QsQueueState *qs, HeapTuple tup, TupleDesc desc, int share_col)
{
	int			s = QsShareIndex(qs, SPI_getvalue(tup, desc, share_col));
	int			u = QsUnitIndex(qs, SPI_getvalue(tup, desc, share_col + 1));

	return s < 0 || u < 0 ? -1 : s * qs->in.nunits + u;
}

static int64
Borrowed(const BorrowCell *c)
{
	return c->held > c->capacity ? c->held - c->capacity : 0;
}

/* A row of borrow_memory of the queue's half-life. */
typedef struct MemoryRow
{
	char	   *share;
	char	   *unit;
	BorrowCell	cell;
} MemoryRow;

typedef struct MemoryRows
{
	int			n;
	MemoryRow  *rows;
} MemoryRows;

/*
 * The memory a backend kept of a queue (QsLoadBorrowMemory): the rows read
 * by a pass that read no change after them, with the count of the writes
 * of the counters and of the memory read before its snapshot
 * (QsUsageWrites; held_capacity_written fires on borrow_memory and
 * held_change too).
 */
typedef struct BorrowKept
{
	char		queue[QS_MAX_NAME_LEN + 1];	/* the key */
	MemoryContext cxt;			/* of rows, NULL: nothing kept */
	MemoryRows	rows;
	int64		half_life;
	uint64		commits;
	TimestampTz read_at;
} BorrowKept;

static HTAB *Kept = NULL;

/*
 * ReadMemory reads the rows of the memory of the queue's half-life, in the
 * current memory context.
 */
static MemoryRows
ReadMemory(QsQueueState *qs)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		queue = CStringGetTextDatum(qs->queue);
	uint64		n = QsQueryRunIn(&MemoryQuery, &queue, NULL, qs->snapshot, 0);
	MemoryRows	rows;

	MemoryContextSwitchTo(outer);	/* SPI left its own current */
	rows.n = 0;
	rows.rows = palloc0(sizeof(MemoryRow) * (n + 1));
	QsNoteBorrowRead();
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		MemoryRow  *r = &rows.rows[rows.n];

		if (QsIntervalUsecs(DatumGetIntervalP(SPI_getbinval(tup, desc, 3, &isnull))) !=
			qs->half_life)
			continue;			/* another half-life: it starts again */
		r->share = TextDatumGetCString(SPI_getbinval(tup, desc, 1, &isnull));
		r->unit = TextDatumGetCString(SPI_getbinval(tup, desc, 2, &isnull));
		r->cell.known = true;
		r->cell.at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
		r->cell.held = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		r->cell.capacity = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
		r->cell.recent = DatumGetFloat8(SPI_getbinval(tup, desc, 7, &isnull));
		rows.n++;
	}
	SPI_freetuptable(SPI_tuptable);
	return rows;
}

/*
 * SetMemory sets the memory of each cell the state knows from the rows
 * (in the order of their shares' names: each found with a strcmp or two).
 */
static void
SetMemory(QsQueueState *qs, MemoryRows rows, BorrowCell *cells)
{
	int			share = 0;

	for (int i = 0; i < rows.n; i++)
	{
		int			u = QsUnitIndex(qs, rows.rows[i].unit);

		share = QsShareIndexNear(qs, rows.rows[i].share, share);
		if (share >= 0 && u >= 0)
			cells[share * qs->in.nunits + u] = rows.rows[i].cell;
		share = Max(share, 0);
	}
}

/*
 * ReadChanges carries each known cell's recent_borrow on over the changes
 * committed since its memory, in order of time, and keeps the rows read
 * for QsWriteBorrowMemory to delete.  Returns how many it read.
 */
static uint64
ReadChanges(QsQueueState *qs, BorrowCell *cells)
{
	Datum		queue = CStringGetTextDatum(qs->queue);
	uint64		n = QsQueryRunIn(&ChangesQuery, &queue, NULL, qs->snapshot, 0);
	MemoryContext old = MemoryContextSwitchTo(qs->cxt);

	QsArrayInit(&qs->borrow_changes_read, TIDOID, (int) n);
	MemoryContextSwitchTo(old);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int			at = CellOf(qs, tup, desc, 2);
		bool		isnull;
		BorrowCell *c;
		TimestampTz when;

		old = MemoryContextSwitchTo(qs->cxt);
		QsArrayPush(&qs->borrow_changes_read,
					datumCopy(SPI_getbinval(tup, desc, 1, &isnull), false, sizeof(ItemPointerData)),
					false);
		MemoryContextSwitchTo(old);
		if (at < 0 || !cells[at].known)
			continue;			/* the counters have it, for a memory starting now */
		c = &cells[at];
		when = Max(c->at, DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull)));
		c->recent = QsRecentBorrowAt(c->recent, c->at, Borrowed(c), when, qs->half_life);
		c->at = when;
		c->held += DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
		c->dirty = true;
	}
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * KeptMemory returns the memory this backend kept of the queue when this
 * pass may take it: no write of the counters or of the memory committed
 * since it was read, none under way, and it is of the queue's half-life
 * and at most QS_USAGE_KEEP_MS old (as the counters kept: usage_cache.c).
 */
static BorrowKept *
KeptMemory(QsQueueState *qs, bool *take)
{
	uint64		commits;
	bool		no_writer;
	BorrowKept *kept;

	*take = false;
	if (!qs->borrow_may_keep)
		return NULL;
	kept = QsQueueCacheEntry(&Kept, "quota_sched memory of borrowing kept", sizeof(BorrowKept),
							 qs->queue);
	if (kept == NULL)
		return NULL;
	*take = QsUsageWrites(&commits, &no_writer) && no_writer && kept->cxt != NULL &&
		kept->commits == commits && kept->half_life == qs->half_life &&
		!TimestampDifferenceExceeds(kept->read_at, GetCurrentTimestamp(), QS_USAGE_KEEP_MS);
	return kept;
}

/*
 * LoadMemory sets each cell's memory, carried on over the changes since:
 * from what was kept, when it may be taken (KeptMemory), or read, and
 * then kept when no change came after it (a pass deletes the changes it
 * read: its commit would make what it kept stale anyway).
 */
static void
LoadMemory(QsQueueState *qs, BorrowCell *cells)
{
	bool		take;
	BorrowKept *kept = KeptMemory(qs, &take);
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt;
	MemoryRows	rows;

	if (take)
	{
		SetMemory(qs, kept->rows, cells);
		MemoryContextSwitchTo(qs->cxt);
		QsArrayInit(&qs->borrow_changes_read, TIDOID, 0);
		MemoryContextSwitchTo(caller);
		return;
	}
	cxt = AllocSetContextCreate(caller, "quota_sched memory of borrowing of a queue",
								ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(cxt);
	rows = ReadMemory(qs);
	MemoryContextSwitchTo(caller);
	SetMemory(qs, rows, cells);
	if (ReadChanges(qs, cells) > 0 || kept == NULL)
	{
		MemoryContextDelete(cxt);
		return;
	}
	QsCacheForget(&kept->cxt);
	kept->rows = rows;
	kept->half_life = qs->half_life;
	kept->commits = qs->borrow_commits;
	kept->read_at = GetCurrentTimestamp();
	MemoryContextSetParent(cxt, TopMemoryContext);
	kept->cxt = cxt;
}

/*
 * QsLoadBorrowMemory computes recent_borrow(S,u) at the state's time for
 * every share and unit of a queue with a half-life, once the counters and
 * the capacities are set up, and what a pass would write of it.
 */
void
QsLoadBorrowMemory(QsQueueState *qs)
{
	int			cells = qs->in.nshares * qs->in.nunits;
	BorrowCell *c = palloc0(sizeof(BorrowCell) * (cells + 1));
	double	   *recent = palloc0(sizeof(double) * (cells + 1));

	LoadMemory(qs, c);
	for (int at = 0; at < cells; at++)
	{
		int64		capacity = qs->in.shares[at / qs->in.nunits].capacity[at % qs->in.nunits];

		if (c[at].known)
			recent[at] = QsRecentBorrowAt(c[at].recent, c[at].at, Borrowed(&c[at]),
										  qs->in.now, qs->half_life);
		/* from now on: the counters' instances and this configuration's limit */
		if (!c[at].known || c[at].dirty || c[at].held != qs->in.held[at] ||
			c[at].capacity != capacity)
			c[at].dirty = true;
		c[at].recent = recent[at];
		c[at].held = qs->in.held[at];
		c[at].capacity = capacity;
	}
	qs->borrow_cells = c;
	qs->in.recent_borrow = recent;
}

/*
 * QsWriteBorrowMemory writes, after a pass, the memory of the cells that
 * changed and deletes the changes the pass read.
 */
void
QsWriteBorrowMemory(QsQueueState *qs)
{
	const BorrowCell *c = qs->borrow_cells;
	QsArray		cols[5];
	Oid			types[5] = {TEXTOID, TEXTOID, INT8OID, INT8OID, FLOAT8OID};
	Datum		args[8];
	Interval	half_life = {0};
	int			cells = qs->in.nshares * qs->in.nunits;

	if (c == NULL)
		return;
	if (qs->borrow_changes_read.n > 0)
	{
		args[0] = QsArrayDatum(&qs->borrow_changes_read);
		QsQueryRun(&ForgetChangesQuery, args, NULL, false, 0);
	}
	for (int i = 0; i < 5; i++)
		QsArrayInit(&cols[i], types[i], cells);
	for (int at = 0; at < cells; at++)
	{
		if (!c[at].dirty)
			continue;
		QsArrayPush(&cols[0], CStringGetTextDatum(qs->in.shares[at / qs->in.nunits].name), false);
		QsArrayPush(&cols[1], CStringGetTextDatum(qs->in.units[at % qs->in.nunits].name), false);
		QsArrayPush(&cols[2], Int64GetDatum(c[at].held), false);
		QsArrayPush(&cols[3], Int64GetDatum(c[at].capacity), false);
		QsArrayPush(&cols[4], Float8GetDatum(c[at].recent), false);
	}
	if (cols[0].n == 0)
		return;
	half_life.time = qs->half_life;
	args[0] = CStringGetTextDatum(qs->queue);
	args[1] = IntervalPGetDatum(&half_life);
	args[2] = TimestampTzGetDatum(qs->in.now);
	for (int i = 0; i < 5; i++)
		args[3 + i] = QsArrayDatum(&cols[i]);
	QsQueryRun(&WriteMemoryQuery, args, NULL, false, 0);
}
