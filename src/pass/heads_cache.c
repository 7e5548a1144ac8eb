/*-------------------------------------------------------------------------
 *
 * heads_cache.c
 *		The first RUNNABLE jobs of each share and unit of a queue, as a
 *		pass read them (job_store_pass.c, ReadPairsHeads), kept by the
 *		backend for its next passes while no write of them became visible
 *		(issue 42, item 3): a pass in which none of a pair's waiting jobs
 *		changed does not read them again.  With many shares whose first
 *		jobs cannot start, that read was most of an idle pass.
 *
 * When what is kept is right.  Every write of a pair's RUNNABLE jobs in
 * share order (a job moved in, out, or changed; a DELETE; a TRUNCATE of
 * the jobs) is noted by a trigger and counted at its commit twice: before
 * it is visible, and after (scan_floor.c, QsFloorTouches).  A pass keeps
 * what it read of a pair with the count it read before its snapshot, when
 * no commit was counted only once then.  A later pass takes it when the
 * count it reads after its own snapshot is the same: a write visible to
 * the later snapshot and not to the earlier one was counted between the
 * two reads.  A pass in a transaction that wrote the queue's RUNNABLE jobs
 * neither takes nor keeps (its reads see its own writes, which may roll
 * back).  A pass whose floor of the pair is not valid (checked from the
 * beginning every QS_FLOOR_CHECK_MS: the bound of a write no trigger saw,
 * as for the floors) does not take: it reads the pair again, and keeps
 * that.  A prepared transaction's writes are counted done by nobody: its
 * pairs are not kept again until the server restarts.  What is kept is a
 * memory context of a few rows per pair the backend's passes read, for
 * as long as the backend lives (pairs are at most the floors' entries).
 *
 * What is kept.  The rows decoded (QsJobRow), in a memory context of the
 * pair's, which a pass takes as they are (read only: the policy's job is
 * copied, the names and parts are shared); a pair's rows are dropped only
 * when a pass reads them again, so what a pass took stays until it ends.
 *
 * The order.  A pass lists the pairs in the order of their index (share,
 * then unit, in the database's collation), as the statement that reads
 * them sorts them: each pair kept has its rank in that order, ranked again
 * (a sort in the collation) only when a pair is new to the backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_collation.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/varlena.h"

#include "heads_cache.h"
#include "identity.h"

PG_FUNCTION_INFO_V1(qs_runnable_heads_reads);

struct QsHeadsKept
{
	const struct FloorEntry *entry; /* the key: the pair's floor in shared
									 * memory (entries never move nor go) */
	char	   *queue;			/* in HeadsCxt */
	char	   *share;
	char	   *unit;
	int			rank;			/* in the queue's pairs' order; -1: not ranked */
	MemoryContext cxt;			/* of rows; NULL: none yet */
	bool		kept;
	uint64		touches;		/* the counts they were read with */
	uint64		wipes;
	int			limit;			/* the read's limit of jobs per pair */
	int			n;
	QsJobRow   *rows;			/* in the read's order */
};

static HTAB *PairCache = NULL;	/* of QsHeadsKept */
static MemoryContext HeadsCxt = NULL;
static int64 Reads = 0;			/* pairs read (qs_runnable_heads_reads) */

/* ComparePairs orders pairs by share, then unit, in the database's collation. */
static int
ComparePairs(const void *a, const void *b)
{
	const QsHeadsKept *x = *(QsHeadsKept *const *) a;
	const QsHeadsKept *y = *(QsHeadsKept *const *) b;
	int			c = varstr_cmp(x->share, strlen(x->share), y->share, strlen(y->share),
							   DEFAULT_COLLATION_OID);

	return c != 0 ? c : varstr_cmp(x->unit, strlen(x->unit), y->unit, strlen(y->unit),
								   DEFAULT_COLLATION_OID);
}

/* Rank ranks every pair of a queue in their order. */
static void
Rank(const char *queue)
{
	QsHeadsKept **all = palloc(sizeof(QsHeadsKept *) * (hash_get_num_entries(PairCache) + 1));
	HASH_SEQ_STATUS seq;
	QsHeadsKept *e;
	int			n = 0;

	hash_seq_init(&seq, PairCache);
	while ((e = hash_seq_search(&seq)) != NULL)
		if (strcmp(e->queue, queue) == 0)
			all[n++] = e;
	qsort(all, n, sizeof(QsHeadsKept *), ComparePairs);
	for (int r = 0; r < n; r++)
		all[r]->rank = r;
	pfree(all);
}

/* PairEntry finds or adds the entry of pair p of pf; *new: added. */
static QsHeadsKept *
PairEntry(const QsPairFloors *pf, const QsPairFloor *p, bool *new)
{
	bool		found;
	QsHeadsKept *e = hash_search(PairCache, &p->entry, HASH_ENTER, &found);
	MemoryContext old;

	if (found)
		return e;
	old = MemoryContextSwitchTo(HeadsCxt);
	e->queue = pstrdup(pf->queue);
	e->share = pstrdup(p->share);
	e->unit = pstrdup(p->unit);
	e->rank = -1;
	e->cxt = NULL;
	e->kept = false;
	MemoryContextSwitchTo(old);
	*new = true;
	return e;
}

/*
 * QsHeadsEntries returns, in the caller's memory, the entries of the pairs
 * which[n] of pf (adding those not yet there), ranked; NULL when one has
 * no floor in shared memory (nothing is kept of it: a pass that listed the
 * pairs from the index).
 */
QsHeadsKept **
QsHeadsEntries(const QsPairFloors *pf, const int *which, int n)
{
	QsHeadsKept **entries;
	bool		new = false;

	for (int i = 0; i < n; i++)
		if (pf->pairs[which[i]].entry == NULL)
			return NULL;
	if (PairCache == NULL)
	{
		HASHCTL		ctl;

		HeadsCxt = AllocSetContextCreate(TopMemoryContext, "quota_sched first jobs",
										 ALLOCSET_DEFAULT_SIZES);
		ctl.keysize = sizeof(struct FloorEntry *);
		ctl.entrysize = sizeof(QsHeadsKept);
		ctl.hcxt = HeadsCxt;
		PairCache = hash_create("quota_sched first jobs of pairs", 64, &ctl,
								HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entries = palloc(sizeof(QsHeadsKept *) * (n + 1));
	for (int i = 0; i < n; i++)
		entries[i] = PairEntry(pf, &pf->pairs[which[i]], &new);
	if (new)
		Rank(pf->queue);
	return entries;
}

/* QsHeadsRank returns a pair's rank in its queue's order (QsHeadsEntries). */
int
QsHeadsRank(const QsHeadsKept *e)
{
	return e->rank;
}

/*
 * QsHeadsTake gives, when what is kept of a pair was read with these
 * counts (QsFloorTouches) and holds what a read of up to limit jobs per
 * pair returns, its first rows (*n of them), which stay until a pass reads
 * the pair again.
 */
bool
QsHeadsTake(const QsHeadsKept *e, uint64 touches, uint64 wipes, int limit,
			const QsJobRow **rows, int *n)
{
	if (e == NULL || !e->kept || e->touches != touches || e->wipes != wipes ||
		(e->limit < limit && e->n == e->limit))
		return false;
	*rows = e->rows;
	*n = Min(e->n, limit);
	return true;
}

/* Forget drops what is kept of a pair. */
static void
Forget(QsHeadsKept *e)
{
	if (!e->kept)
		return;
	MemoryContextReset(e->cxt);
	e->kept = false;
	e->rows = NULL;
	e->n = 0;
}

/*
 * QsHeadsKeep keeps what a read of up to limit jobs per pair returned of a
 * pair (tuples[n], decoded by decoder), with the counts read before its
 * snapshot, in place of what was kept, and returns the rows it kept.
 */
const QsJobRow *
QsHeadsKeep(QsHeadsKept *e, uint64 touches, uint64 wipes, int limit, HeapTuple *tuples, int n,
			const QsJobDecoder *decoder)
{
	MemoryContext old;

	Forget(e);
	if (e->cxt == NULL)
		e->cxt = AllocSetContextCreate(HeadsCxt, "quota_sched first jobs of a pair",
									   ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(e->cxt);
	e->rows = palloc(sizeof(QsJobRow) * (n + 1));
	for (int i = 0; i < n; i++)
		QsJobDecode(decoder, tuples[i], &e->rows[i]);
	MemoryContextSwitchTo(old);
	e->n = n;
	e->limit = limit;
	e->touches = touches;
	e->wipes = wipes;
	e->kept = true;
	return e->rows;
}

/* QsHeadsNoteRead counts pairs whose first jobs a pass read. */
void
QsHeadsNoteRead(int n)
{
	Reads += n;
}

/*
 * quota_sched.runnable_heads_reads(): how many pairs' first RUNNABLE jobs
 * this backend's passes read rather than take those it kept (for tests).
 */
Datum
qs_runnable_heads_reads(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(Reads);
}
