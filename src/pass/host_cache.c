/*-------------------------------------------------------------------------
 *
 * host_cache.c
 *		A backend-local cache of each queue's hosts (scheduling.md 3.13;
 *		issue 39, item 6): the live agents a pass reads, decoded (names,
 *		instances, labels), by unit, so that the passes of a queue, which
 *		the worker's backend runs one after another, read and decode its
 *		agents only when they changed.
 *
 * When the cache is right.  Every change of a queue's agents that changes
 * its hosts inserts a row of a new generation (never reused) into
 * quota_sched.agent_change, in its own transaction (the agent_hosts_*
 * triggers, tables.sql); a heartbeat that only moves last_seen of a live
 * agent inserts none.  The cache keeps, with the hosts, the set of
 * generations it saw, read in the same statement (so in the same snapshot)
 * as the agents.  A pass reads the set in its own snapshot (one index
 * probe, QsLoadHosts): two snapshots that see the same set see the same
 * committed changes of the queue's agents (each change adds a generation
 * nobody saw before, and the pass that replaces many rows by one adds one
 * too), so the same agents but for the last_seen of live ones.  Whether an
 * agent is live also depends on the time: the cache is used only at a
 * time (the transaction's start, as the read's now()) from that of its read
 * up to the earliest moment a live agent read may have run out of lease.
 * An agent that was not live at the read and comes back later changes the
 * set (the trigger compares its lease with the clock when the UPDATE runs);
 * one whose UPDATE ran before its lease ran out, and had not committed when
 * the read took its snapshot, left its xmax on the row read: such a read is
 * not cached.
 *
 * Beside the hosts, each entry keeps the classes of placement constraints
 * of the queue's RUNNABLE jobs, per share and unit, with the instances of
 * each class's smallest job (QsLoadClasses), on the same principle: a row
 * of a new generation in quota_sched.constrained_change for every job with
 * placement constraints that enters its share's order (the
 * job_constrained_* triggers).  Classes and smaller jobs come only with
 * such a job; a job that leaves (dispatched, ended) leaves the classes
 * kept more than there are, or a smallest smaller than the true one, which
 * costs a pass a look-ahead that finds nothing (pass_load.c), never a job.
 *
 * And the queue's shares, decoded (QsLoadShareConfigs; issue 42, item 3):
 * a row of a new generation in quota_sched.share_change for every insert,
 * update and delete of one of its shares (the quota_share_generation
 * triggers), so that the same generations mean the same shares.  Both
 * reads are kept the same way (LoadKept).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "constants.h"
#include "host_cache.h"
#include "identity.h"
#include "job_store_pass.h"
#include "query.h"

PG_FUNCTION_INFO_V1(qs_host_cache_reloads);
PG_FUNCTION_INFO_V1(qs_share_config_reads);

#define QS_HOST_QUEUE_BUF (QS_MAX_NAME_LEN + 1)

/* More rows than this in a queue's agent_change: its pass replaces them by one. */
#define QS_AGENT_CHANGE_KEEP 16

/*
 * What an entry keeps of a read that a table of changes other than
 * agent_change vouches for (LoadKept): the classes of placement
 * constraints (constrained_change), the shares (share_change).
 */
#define QS_KEPT_CLASSES 0
#define QS_KEPT_SHARES 1
#define QS_KEPT_READS 2

typedef struct KeptRead
{
	MemoryContext cxt;			/* of what follows, NULL: nothing kept */
	void	   *data;
	int			n;
	Oid			relid;			/* the table of changes', when read */
	int			ngens;
	int64	   *gens;			/* the generations seen, ascending */
	bool		compact;		/* the pass is to replace the rows by one */
} KeptRead;

/* A read that a KeptRead keeps: its rows in the current memory context. */
typedef void *(*KeptReader) (const char *queue, Snapshot snapshot, int *n);

typedef struct HostCacheEntry
{
	char		queue[QS_HOST_QUEUE_BUF];	/* the key */
	MemoryContext cxt;			/* of what follows, NULL: nothing cached */
	QsHostSet	set;
	Oid			relid;			/* agent_change's, when read */
	int			ngens;
	int64	   *gens;			/* the generations seen, ascending */
	TimestampTz read_at;		/* now() of the read */
	TimestampTz until;			/* the earliest end of a live agent's lease */
	bool		compact;		/* the pass is to replace the rows by one */
	KeptRead	kept[QS_KEPT_READS];	/* the classes, the shares (LoadKept) */
} HostCacheEntry;

static HTAB *HostCache = NULL;
static int64 Reloads = 0;
static int64 SharesReads = 0;
static uint64 SetVersions = 0;	/* the last QsHostSet.version given */

/*
 * The generations of a queue in a table of changes, with the table's oid
 * (none: NULL); and the statement that replaces those read ($2) by one of
 * a new generation.
 */
#define GENERATIONS_QUERY(table) { \
	"SELECT array_agg(generation ORDER BY generation), min(tableoid::oid)" \
	"  FROM quota_sched." table " WHERE job_queue = $1", \
	1, {TEXTOID}, SPI_OK_SELECT, QS_INDEX_WALK }
#define COMPACT_QUERY(table) { \
	"WITH gone AS (DELETE FROM quota_sched." table \
	"               WHERE job_queue = $1 AND generation = ANY ($2))" \
	" INSERT INTO quota_sched." table " VALUES ($1, nextval('quota_sched." table "_seq'))", \
	2, {TEXTOID, INT8ARRAYOID}, SPI_OK_INSERT }

/*
 * [0]: of agent_change (hosts); [1 + QS_KEPT_CLASSES]: of
 * constrained_change (classes); [1 + QS_KEPT_SHARES]: of share_change
 */
static QsQuery GenerationsQuery[1 + QS_KEPT_READS] = {
	GENERATIONS_QUERY("agent_change"), GENERATIONS_QUERY("constrained_change"),
	GENERATIONS_QUERY("share_change")
};

/*
 * The queue's live agents, in one statement with the generations and the
 * xmax of the agents that are not live (a lock or an update by a
 * transaction, perhaps in progress: QsLoadHosts), so that all three come
 * from one snapshot.  One row with null agent columns when there is no
 * live agent.
 */
static QsQuery AgentsQuery = {
	"SELECT a.capacity_unit, a.name, a.instances, a.labels, a.state = 'ACTIVE',"
	"       a.last_seen + coalesce(a.lease, interval '60 seconds'), g.gens, g.relid, g.busy"
	"  FROM (SELECT array_agg(c.generation ORDER BY c.generation) AS gens,"
	"               min(c.tableoid::oid) AS relid,"
	"               (SELECT array_agg(d.xmax::text::int8) FROM quota_sched.agent d"
	"                 WHERE d.job_queue = $1 AND NOT (d.xmax = '0'::xid)"
	"                   AND d.last_seen + coalesce(d.lease, interval '60 seconds')"
	"                       <= now()) AS busy"
	"          FROM quota_sched.agent_change c WHERE c.job_queue = $1) g"
	"  LEFT JOIN quota_sched.agent a"
	"    ON a.job_queue = $1 AND a.last_seen + coalesce(a.lease, interval '60 seconds') > now()"
	" ORDER BY a.capacity_unit COLLATE \"C\", a.name COLLATE \"C\"",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * QsQueueCacheEntry returns the entry of a queue in a backend-local cache (a
 * hash table made on first use, named what) of entries of entrysize bytes
 * that begin with the queue's name in QS_MAX_NAME_LEN + 1 bytes, adding
 * one, zeroed but for the name; NULL when the name is too long to be a
 * queue's.
 */
void *
QsQueueCacheEntry(HTAB **cache, const char *what, Size entrysize, const char *queue)
{
	char		key[QS_HOST_QUEUE_BUF];
	char	   *entry;
	bool		found;

	if (strlen(queue) >= QS_HOST_QUEUE_BUF)
		return NULL;
	if (*cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = QS_HOST_QUEUE_BUF;
		ctl.entrysize = entrysize;
		ctl.hcxt = TopMemoryContext;
		*cache = hash_create(what, 16, &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(key, 0, sizeof(key));
	strlcpy(key, queue, QS_HOST_QUEUE_BUF);
	entry = hash_search(*cache, key, HASH_ENTER, &found);
	if (!found)
		memset(entry + QS_HOST_QUEUE_BUF, 0, entrysize - QS_HOST_QUEUE_BUF);
	return entry;
}

/* EntryOf returns the cache entry of a queue (QsQueueCacheEntry). */
static HostCacheEntry *
EntryOf(const char *queue)
{
	return QsQueueCacheEntry(&HostCache, "quota_sched hosts", sizeof(HostCacheEntry), queue);
}

/*
 * QsCacheForget drops what a cache entry holds in a memory context (and
 * sets it NULL): at the end of the transaction, since a queue state loaded
 * before in it may still point into it.
 */
void
QsCacheForget(MemoryContext *cxt)
{
	if (*cxt != NULL)
		MemoryContextSetParent(*cxt, TopTransactionContext);
	*cxt = NULL;
}

/*
 * ReadGenerations reads an int8[] (column `col` of a row: the generations,
 * or the xmax of agents; or null) into the current memory context.
 */
static int
ReadGenerations(HeapTuple tup, TupleDesc desc, int col, int64 **gens)
{
	bool		isnull;
	Datum		value = SPI_getbinval(tup, desc, col, &isnull);
	Datum	   *elems;
	int			n;

	*gens = NULL;
	if (isnull)
		return 0;
	deconstruct_array(DatumGetArrayTypeP(value), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elems, NULL, &n);
	*gens = palloc(sizeof(int64) * (n + 1));
	for (int i = 0; i < n; i++)
		(*gens)[i] = DatumGetInt64(elems[i]);
	return n;
}

/*
 * Busy tells whether an agent that is not live may be coming back in a
 * transaction that the snapshot of the read does not see (column `col`:
 * the xmax of such agents): its UPDATE ran before its lease ran out, so
 * the trigger did not count it as a change.  Without the snapshot (each
 * statement takes its own), any xmax is.
 */
static bool
Busy(HeapTuple tup, TupleDesc desc, int col, Snapshot snapshot)
{
	int64	   *xmax;
	int			n = ReadGenerations(tup, desc, col, &xmax);

	for (int i = 0; i < n; i++)
		if (snapshot == NULL || XidInMVCCSnapshot((TransactionId) xmax[i], snapshot))
			return true;
	return false;
}

/* SameGenerations tells whether two sets of generations (ascending) are one. */
static bool
SameGenerations(const int64 *a, int na, const int64 *b, int nb)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/*
 * StillRight tells whether an entry holds the hosts of a snapshot that
 * sees the generations gens (relid: of agent_change) at time now.
 */
static bool
StillRight(const HostCacheEntry *entry, Oid relid, const int64 *gens, int ngens,
		   TimestampTz now)
{
	if (entry->cxt == NULL || entry->relid != relid)
		return false;
	if (now < entry->read_at || now >= entry->until)
		return false;
	return SameGenerations(entry->gens, entry->ngens, gens, ngens);
}

/*
 * DecodeLabels turns an agent's labels (a flat JSON object of strings)
 * into a host's.
 */
static void
DecodeLabels(Jsonb *labels, QsHost *host)
{
	JsonbIterator *it = JsonbIteratorInit(&labels->root);
	JsonbValue	v;
	JsonbIteratorToken tok;
	QsLabel    *out = palloc0(sizeof(QsLabel) * (JB_ROOT_COUNT(labels) + 1));
	int			n = 0;

	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
			out[n].key = pnstrdup(v.val.string.val, v.val.string.len);
		else if (tok == WJB_VALUE && v.type == jbvString)
			out[n++].value = pnstrdup(v.val.string.val, v.val.string.len);
	}
	host->labels = out;
	host->nlabels = n;
}

/*
 * UnitOf returns the set's unit of a name, adding it (the rows come in
 * the order of their units: a new one is the last).
 */
static QsHostUnit *
UnitOf(QsHostSet *set, const char *name, int cap)
{
	QsHostUnit *unit;

	if (set->nunits > 0 && strcmp(set->units[set->nunits - 1].name, name) == 0)
		return &set->units[set->nunits - 1];
	unit = &set->units[set->nunits++];
	unit->name = pstrdup(name);
	unit->hosts = palloc0(sizeof(QsHost) * (cap + 1));
	return unit;
}

/*
 * AddAgent adds one live agent row of AgentsQuery to the set: its unit is
 * placed, unbounded when a live, ACTIVE agent is; its live, ACTIVE,
 * bounded agents are its hosts, in the order of their names.  Returns the
 * end of its lease.
 */
static TimestampTz
AddAgent(QsHostSet *set, HeapTuple tup, TupleDesc desc, int cap)
{
	bool		unbounded;
	bool		isnull;
	Datum		instances = SPI_getbinval(tup, desc, 3, &unbounded);
	bool		active = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	QsHostUnit *unit = UnitOf(set, SPI_getvalue(tup, desc, 1), cap);
	QsHost	   *host;

	if (active && unbounded)
		unit->unbounded = true;
	if (active && !unbounded)
	{
		host = &unit->hosts[unit->nhosts++];
		host->name = SPI_getvalue(tup, desc, 2);
		host->instances = DatumGetInt32(instances);
		DecodeLabels(DatumGetJsonbP(SPI_getbinval(tup, desc, 4, &isnull)), host);
	}
	return DatumGetTimestampTz(SPI_getbinval(tup, desc, 6, &isnull));
}

/* CacheAlloc allocates zeroed memory in a memory context (QsPrepareHosts). */
static void *
CacheAlloc(void *arg, size_t size)
{
	return MemoryContextAllocZero((MemoryContext) arg, size);
}

/*
 * PrepareUnits indexes the hosts of each placed unit of a set
 * (QsPrepareHosts) in a memory context, once for as long as the set is
 * kept: what a pass needs of them beside what they hold, which their
 * instances and labels alone decide.
 */
static void
PrepareUnits(QsHostSet *set, MemoryContext cxt)
{
	for (int i = 0; i < set->nunits; i++)
	{
		QsHostUnit *from = &set->units[i];
		QsUnit		unit = {0};
		const char *error;

		if (from->unbounded)
			continue;
		unit.name = from->name;
		unit.hosts = from->hosts;
		unit.nhosts = from->nhosts;
		if ((error = QsPrepareHosts(&unit, CacheAlloc, cxt)) != NULL)
			elog(ERROR, "the hosts of unit \"%s\": %s", from->name, error);
		from->host_index = unit.host_index;
	}
}

/*
 * Reload reads the queue's live agents into the entry, with the
 * generations of the same snapshot, in the caller's memory context; with
 * keep, and unless the read saw an agent that is not live being changed,
 * the cache keeps them.
 */
static const QsHostSet *
Reload(HostCacheEntry *entry, bool keep, const char *queue, TimestampTz now, Snapshot snapshot)
{
	Datum		arg = CStringGetTextDatum(queue);
	uint64		n = QsQueryRunIn(&AgentsQuery, &arg, NULL, snapshot, 0);
	SPITupleTable *rows = SPI_tuptable;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched hosts of a queue",
											  ALLOCSET_SMALL_SIZES);
	MemoryContext old = MemoryContextSwitchTo(cxt);
	bool		isnull;
	bool		busy;

	QsCacheForget(&entry->cxt);
	Reloads++;
	entry->until = DT_NOEND;
	entry->set.nunits = 0;
	entry->set.units = palloc0(sizeof(QsHostUnit) * (n + 1));
	entry->set.version = ++SetVersions;
	for (uint64 i = 0; i < n; i++)
	{
		TimestampTz lease_end;

		(void) SPI_getbinval(rows->vals[i], rows->tupdesc, 2, &isnull);
		if (isnull)
			continue;			/* no live agent */
		lease_end = AddAgent(&entry->set, rows->vals[i], rows->tupdesc, (int) n);
		entry->until = Min(entry->until, lease_end);
	}
	PrepareUnits(&entry->set, cxt);
	entry->ngens = ReadGenerations(rows->vals[0], rows->tupdesc, 7, &entry->gens);
	entry->relid = DatumGetObjectId(SPI_getbinval(rows->vals[0], rows->tupdesc, 8, &isnull));
	if (isnull)
		entry->relid = InvalidOid;
	busy = Busy(rows->vals[0], rows->tupdesc, 9, snapshot);
	entry->read_at = now;
	entry->compact = entry->ngens > QS_AGENT_CHANGE_KEEP;
	MemoryContextSwitchTo(old);
	SPI_freetuptable(rows);
	if (keep && !busy)
	{
		MemoryContextSetParent(cxt, TopMemoryContext);
		entry->cxt = cxt;
	}
	return &entry->set;			/* else its memory goes with the caller's */
}

/*
 * ReadGenerationsOf reads the generations of a queue (GenerationsQuery
 * [which]) in a snapshot (NULL: the current one) into the current memory
 * context, and the table's oid.
 */
static int
ReadGenerationsOf(int which, const char *queue, Snapshot snapshot, int64 **gens, Oid *relid)
{
	Datum		arg = CStringGetTextDatum(queue);
	bool		isnull;
	int			n;

	QsQueryRunIn(&GenerationsQuery[which], &arg, NULL, snapshot, 0);
	n = ReadGenerations(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, gens);
	*relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
											&isnull));
	if (isnull)
		*relid = InvalidOid;
	SPI_freetuptable(SPI_tuptable);
	return n;
}

/*
 * QsLoadHosts returns the hosts of a queue as a snapshot sees them at time
 * now (the transaction's start, which the read's now() is): from the
 * cache when the snapshot sees the generations it was read with, else read
 * again.  Their memory is the cache's (or the caller's, when the read is
 * not kept): the caller copies what it changes.  The caller is connected
 * to SPI; snapshot NULL: the current one.
 */
const QsHostSet *
QsLoadHosts(const char *queue, TimestampTz now, Snapshot snapshot)
{
	HostCacheEntry *entry = EntryOf(queue);
	int64	   *gens;
	int			ngens;
	Oid			relid;

	if (entry == NULL)
		return Reload(palloc0(sizeof(HostCacheEntry)), false, queue, now, snapshot);
	if (entry->cxt != NULL)
	{
		ngens = ReadGenerationsOf(0, queue, snapshot, &gens, &relid);
		if (StillRight(entry, relid, gens, ngens, now))
			return &entry->set;
	}
	return Reload(entry, true, queue, now, snapshot);
}

/*
 * LoadKept returns what a reader reads of a queue (*n rows), as the
 * pass's reads see it: what *kept keeps when the snapshot sees the
 * generations of its table of changes (GenerationsQuery[1 + which]) it
 * was read with, else read again (after the generations: a read in a
 * later snapshot only sees more) and kept, in a memory context of its
 * own; with kept NULL, read into the caller's memory.  The caller is
 * connected to SPI.
 */
static void *
LoadKept(KeptRead *kept, int which, KeptReader reader, const char *queue, Snapshot snapshot,
		 int *n)
{
	KeptRead	fresh = {0};
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt;
	int64	   *gens;
	Oid			relid;
	int			ngens = ReadGenerationsOf(1 + which, queue, snapshot, &gens, &relid);

	MemoryContextSwitchTo(caller);	/* SPI left its own current */

	if (kept != NULL && kept->cxt != NULL && kept->relid == relid &&
		SameGenerations(kept->gens, kept->ngens, gens, ngens))
	{
		*n = kept->n;
		return kept->data;
	}
	cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched kept read of a queue",
								ALLOCSET_SMALL_SIZES);
	if (kept != NULL)
		QsCacheForget(&kept->cxt);
	else
		kept = &fresh;			/* its memory goes with the caller's */
	MemoryContextSwitchTo(cxt);
	kept->data = reader(queue, snapshot, &kept->n);
	MemoryContextSwitchTo(cxt);
	kept->gens = palloc(sizeof(int64) * (ngens + 1));
	memcpy(kept->gens, gens, sizeof(int64) * ngens);
	kept->ngens = ngens;
	kept->relid = relid;
	kept->compact = ngens > QS_AGENT_CHANGE_KEEP;
	MemoryContextSwitchTo(caller);
	if (kept != &fresh)
	{
		MemoryContextSetParent(cxt, TopMemoryContext);
		kept->cxt = cxt;
	}
	*n = kept->n;
	return kept->data;
}

/* The classes of a queue's RUNNABLE jobs, as a KeptReader. */
static void *
ReadClasses(const char *queue, Snapshot snapshot, int *n)
{
	return QsReadConstrainedClasses(queue, n);
}

/*
 * QsLoadClasses returns the classes of placement constraints of a queue's
 * RUNNABLE jobs, per share and unit, as the pass's reads see them
 * (QsReadConstrainedClasses), kept while the snapshot sees the same
 * generations of constrained_change (LoadKept).  *n is their number.
 */
const QsConstrainedClass *
QsLoadClasses(const char *queue, Snapshot snapshot, int *n)
{
	HostCacheEntry *entry = EntryOf(queue);

	return LoadKept(entry ? &entry->kept[QS_KEPT_CLASSES] : NULL, QS_KEPT_CLASSES,
					ReadClasses, queue, snapshot, n);
}

/* A queue's shares, in the snapshot given (NULL: SPI's), as a KeptReader. */
static void *
ReadShares(const char *queue, Snapshot snapshot, int *n)
{
	QsConfigRead how = {snapshot, false};
	QsShareConfig *shares;

	SharesReads++;
	*n = QsReadShareConfigs(queue, how, &shares);
	return shares;
}

/*
 * QsLoadShareConfigs returns a queue's shares as QsReadShareConfigs reads
 * them in the snapshot given (NULL: SPI's), kept while the snapshot sees
 * the same generations of share_change (LoadKept): their memory is the
 * cache's (or the caller's), which the caller does not change.  *n is
 * their number.
 */
const QsShareConfig *
QsLoadShareConfigs(const char *queue, Snapshot snapshot, int *n)
{
	HostCacheEntry *entry = EntryOf(queue);

	return LoadKept(entry ? &entry->kept[QS_KEPT_SHARES] : NULL, QS_KEPT_SHARES,
					ReadShares, queue, snapshot, n);
}

/*
 * The pass replaces a queue's rows of agent_change or constrained_change
 * by one of a new generation: only passes delete them, one at a time per
 * queue (they hold its lock), so this never waits.
 */
static QsQuery CompactQuery[1 + QS_KEPT_READS] = {
	COMPACT_QUERY("agent_change"), COMPACT_QUERY("constrained_change"),
	COMPACT_QUERY("share_change")
};

/*
 * Compact replaces the rows of a table of changes ([which]) that a pass
 * read, gens, by one.
 */
static void
Compact(int which, const char *queue, const int64 *gens, int ngens)
{
	QsArray		a;
	Datum		args[2];

	QsArrayInit(&a, INT8OID, ngens);
	for (int i = 0; i < ngens; i++)
		QsArrayPush(&a, Int64GetDatum(gens[i]), false);
	args[0] = CStringGetTextDatum(queue);
	args[1] = QsArrayDatum(&a);
	QsQueryRun(&CompactQuery[which], args, NULL, false, 0);
}

/*
 * QsCompactChanges replaces, after a pass that read many rows of its
 * queue's agent_change or constrained_change, those it read by one.  The
 * caller holds the queue's lock exclusively and is connected to SPI as
 * the owner.
 */
void
QsCompactChanges(const char *queue)
{
	HostCacheEntry *entry = HostCache == NULL ? NULL : EntryOf(queue);

	if (entry == NULL)
		return;
	if (entry->cxt != NULL && entry->compact)
		Compact(0, queue, entry->gens, entry->ngens);
	entry->compact = false;
	for (int k = 0; k < QS_KEPT_READS; k++)
	{
		KeptRead   *kept = &entry->kept[k];

		if (kept->cxt != NULL && kept->compact)
			Compact(1 + k, queue, kept->gens, kept->ngens);
		kept->compact = false;
	}
}

/*
 * qs_share_config_reads() returns how many times this backend read a
 * queue's shares (not from its cache): for tests.
 */
Datum
qs_share_config_reads(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(SharesReads);
}

/*
 * qs_host_cache_reloads() returns how many times this backend read a
 * queue's agents (not from its cache): for tests.
 */
Datum
qs_host_cache_reloads(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(Reloads);
}
