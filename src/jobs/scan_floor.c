/*-------------------------------------------------------------------------
 *
 * scan_floor.c
 *		Floors of the ordered scans that claims and passes repeat (issue
 *		42, item 5; doc/operations.md "Long transactions and autovacuum").
 *
 * Why.  A claim walks the SCHEDULED jobs along job_claimable from the
 * start of the queue's range, and a pass walks the lapsed leases and the
 * unclaimed jobs the same way.  While a long transaction holds back the
 * xmin horizon, the index entries of the row versions that left those
 * sets can be neither removed nor marked dead, and each walk visits them
 * all, with the heap: every claim walked over every job claimed since the
 * snapshot began, and the stream fell to a fifth of its rate in ten
 * minutes.
 *
 * What.  A floor, per scan (QsFloorKind), queue and unit, kept in shared
 * memory: a key no visible row of the scan is below.  A reader starts at
 * the floor: it probes for the first row at or above it in its snapshot,
 * raises the floor to that row's key (or past every key, when there is
 * none), and scans from there.
 *
 * Why it is exact.  A row enters a scan's set only through a write of
 * quota_sched.job, whose trigger job_scan_floor notes it (QsFloorNoteRow;
 * ENABLE ALWAYS, so that writes with session_replication_role = replica,
 * a restore's or a repair's, are noted too).  At its commit, once it is visible, the
 * transaction lowers each floor concerned to the least key it moved in,
 * and counts the lowering in the floor's generation, keeping the key in a
 * ring of the last QS_FLOOR_RING.  A reader reads the generation before
 * its snapshot; when it raises the floor it takes the least of the key it
 * found and of the keys lowered since it read (which its snapshot may not
 * have seen), and gives up if the ring no longer holds them all.  Rows a
 * transaction moved in are below no floor for its own reads until it
 * commits: it starts from the beginning.  A row that leaves a set never
 * lowers a floor, and a transaction that rolls back leaves its rows where
 * they were, visible to every probe (a probe does not skip locked rows).
 *
 * What it cannot see.  Writes with every trigger disabled (ALTER TABLE
 * ... DISABLE TRIGGER ALL), those of the extension's own scripts (they
 * run on the schema of an older version), and a prepared transaction
 * committed by another session move rows in unnoted: every reader starts from the beginning when its floor
 * has not been checked so for QS_FLOOR_CHECK_MS, so such a row waits that
 * long at most.  Without the library preloaded there is no shared memory
 * and every scan starts from the beginning, as before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "constants.h"
#include "identity.h"
#include "job_columns.h"
#include "query.h"
#include "scan_floor.h"

#define QS_FLOOR_ENTRIES 4096	/* floors at most; beyond, scans start at 0 */
#define QS_FLOOR_RING 16
#define QS_FLOOR_CHECK_MS 1000

typedef struct FloorKey
{
	Oid			dboid;
	int32		kind;
	char		queue[QS_MAX_NAME_LEN + 1];
	char		unit[QS_MAX_NAME_LEN + 1];
} FloorKey;

typedef struct FloorEntry
{
	FloorKey	key;
	bool		set;			/* false: no floor yet */
	QsFloorKeyValue floor;
	TimestampTz checked_at;		/* when a reader last started at 0 */
	uint64		gen;			/* lowerings so far */
	QsFloorKeyValue ring[QS_FLOOR_RING];	/* lowering g at [g % RING] */
} FloorEntry;

static LWLock *floor_lock = NULL;
static HTAB *floors = NULL;
static HTAB *pending = NULL;	/* FloorKey -> least key, TopTransactionContext */
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static const QsFloorKeyValue FloorTop = {{PG_INT64_MAX, PG_INT64_MAX}};

static void
FloorShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(hash_estimate_size(QS_FLOOR_ENTRIES, sizeof(FloorEntry)));
	RequestNamedLWLockTranche("quota_sched scan floors", 1);
}

static void
FloorShmemStartup(void)
{
	HASHCTL		ctl;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(FloorKey);
	ctl.entrysize = sizeof(FloorEntry);
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	floors = ShmemInitHash("quota_sched scan floors", QS_FLOOR_ENTRIES, QS_FLOOR_ENTRIES,
						   &ctl, HASH_ELEM | HASH_BLOBS);
	floor_lock = &(GetNamedLWLockTranche("quota_sched scan floors"))->lock;
	LWLockRelease(AddinShmemInitLock);
}

/* QsScanFloorRegister sets up the floors' shared memory, when preloaded. */
void
QsScanFloorRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = FloorShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = FloorShmemStartup;
}

static FloorKey
MakeKey(QsFloorKind kind, const char *queue, const char *unit)
{
	FloorKey	key;

	memset(&key, 0, sizeof(key));
	key.dboid = MyDatabaseId;
	key.kind = kind;
	strlcpy(key.queue, queue, sizeof(key.queue));
	strlcpy(key.unit, unit, sizeof(key.unit));
	return key;
}

static bool
KeyLess(QsFloorKeyValue a, QsFloorKeyValue b)
{
	return a.k[0] < b.k[0] || (a.k[0] == b.k[0] && a.k[1] < b.k[1]);
}

/*
 * QsFloorRead reads a scan's floor, before the reader's snapshot: valid
 * when it is set, was checked from the beginning less than
 * QS_FLOOR_CHECK_MS ago, and this transaction moved no row into the scan
 * (own) and reads in snapshots of its own (READ COMMITTED; else own too).
 */
QsFloorSeen
QsFloorRead(QsFloorKind kind, const char *queue, const char *unit)
{
	QsFloorSeen seen = {false, false, 0, {{0, 0}}};
	FloorKey	key = MakeKey(kind, queue, unit);
	FloorEntry *entry;

	if (floors == NULL)
		return seen;
	/* a snapshot of the transaction's may be older than the floor */
	seen.own = IsolationUsesXactSnapshot() ||
		(pending != NULL && hash_search(pending, &key, HASH_FIND, NULL) != NULL);
	LWLockAcquire(floor_lock, LW_SHARED);
	entry = hash_search(floors, &key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		seen.gen = entry->gen;
		seen.floor = entry->floor;
		seen.valid = entry->set && !seen.own &&
			!TimestampDifferenceExceeds(entry->checked_at, GetCurrentTimestamp(),
										QS_FLOOR_CHECK_MS);
	}
	LWLockRelease(floor_lock);
	return seen;
}

/*
 * FloorAdvance raises a floor after a probe that started where seen says
 * and found first (FloorTop: nothing): to the least of first and of the
 * keys lowered since seen was read; a probe from the beginning sets it so.
 * Nothing when the ring lost some of those keys, or for a transaction that
 * moved rows in itself.
 */
static void
FloorAdvance(QsFloorKind kind, const char *queue, const char *unit,
			   const QsFloorSeen *seen, QsFloorKeyValue first)
{
	FloorKey	key = MakeKey(kind, queue, unit);
	FloorEntry *entry;
	bool		found;

	if (floors == NULL || seen->own)
		return;
	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	entry = hash_search(floors, &key, HASH_ENTER_NULL, &found);
	if (entry != NULL && !found)
	{
		entry->set = false;
		entry->gen = 0;
	}
	if (entry != NULL && entry->gen - seen->gen <= QS_FLOOR_RING)
	{
		for (uint64 g = seen->gen + 1; g <= entry->gen; g++)
			if (KeyLess(entry->ring[g % QS_FLOOR_RING], first))
				first = entry->ring[g % QS_FLOOR_RING];
		if (!seen->valid)
		{
			entry->floor = first;
			entry->set = true;
			entry->checked_at = GetCurrentTimestamp();
		}
		else if (entry->set && KeyLess(entry->floor, first))
			entry->floor = first;
	}
	LWLockRelease(floor_lock);
}

/* Note notes that the transaction moved a row of key into a scan. */
static void
Note(QsFloorKind kind, const char *queue, const char *unit, QsFloorKeyValue value)
{
	FloorKey	key = MakeKey(kind, queue, unit);
	QsFloorKeyValue *least;
	bool		found;

	if (pending == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(FloorKey);
		ctl.entrysize = sizeof(FloorKey) + sizeof(QsFloorKeyValue);
		ctl.hcxt = TopTransactionContext;
		pending = hash_create("quota_sched scan floors pending", 8, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	least = (QsFloorKeyValue *) ((char *) hash_search(pending, &key, HASH_ENTER, &found) +
								 sizeof(FloorKey));
	if (!found || KeyLess(value, *least))
		*least = value;
}

static char *
TextColumn(TupleDesc desc, HeapTuple row, JobColumn c)
{
	bool		isnull;
	Datum		d = heap_getattr(row, JobAttnum(desc, c), desc, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

static int64
Int64Column(TupleDesc desc, HeapTuple row, JobColumn c, bool *isnull)
{
	return DatumGetInt64(heap_getattr(row, JobAttnum(desc, c), desc, isnull));
}

/* PartAgentsNull tells whether the row is placed on no agent. */
static bool
PartAgentsNull(TupleDesc desc, HeapTuple row)
{
	static const char *const names[] = {"part_agents"};
	static Oid	cached_type = InvalidOid;
	static int	cached_natts = 0;
	static AttrNumber attnum;

	if (desc->tdtypeid != cached_type || desc->natts != cached_natts)
	{
		QsAttnums(desc, "job", names, 1, &attnum);
		cached_type = desc->tdtypeid;
		cached_natts = desc->natts;
	}
	return heap_attisnull(row, attnum, desc);
}

/*
 * QsFloorNoteRow notes, for the commit, the scans a job's new row version
 * is in.
 */
static void
FloorNoteRow(TupleDesc desc, HeapTuple row)
{
	char	   *state;
	char	   *agent;
	char	   *queue;
	bool		isnull;
	QsFloorKeyValue value = {{0, 0}};

	if (floors == NULL || (state = TextColumn(desc, row, JC_STATE)) == NULL)
		return;
	if (strcmp(state, "SCHEDULED") != 0 && strcmp(state, "STARTING") != 0 &&
		strcmp(state, "RUNNING") != 0)
		return;
	queue = TextColumn(desc, row, JC_JOB_QUEUE);
	agent = TextColumn(desc, row, JC_AGENT);
	if (agent != NULL)
	{
		value.k[0] = Int64Column(desc, row, JC_LEASE_UNTIL, &isnull);
		if (!isnull)
			Note(QS_FLOOR_LAPSED, queue, "", value);
		return;
	}
	if (strcmp(state, "SCHEDULED") != 0)
		return;
	value.k[0] = Int64Column(desc, row, JC_SCHEDULED_AT, &isnull);
	value.k[1] = Int64Column(desc, row, JC_ID, &isnull);
	Note(QS_FLOOR_UNCLAIMED, queue, "", value);
	if (PartAgentsNull(desc, row))
	{
		Note(QS_FLOOR_CLAIMABLE, queue, "", value);
		Note(QS_FLOOR_CLAIMABLE, queue, TextColumn(desc, row, JC_CAPACITY_UNIT), value);
	}
}

PG_FUNCTION_INFO_V1(qs_job_scan_floor);

/*
 * qs_job_scan_floor, the trigger job_scan_floor (BEFORE INSERT OR UPDATE,
 * for each row, ENABLE ALWAYS), notes the scans a job's new row version
 * is in, for the commit.  Nothing while an extension script runs.
 */
Datum
qs_job_scan_floor(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_scan_floor", true);
	HeapTuple	row = TRIGGER_FIRED_BY_UPDATE(td->tg_event) ? td->tg_newtuple : td->tg_trigtuple;

	QsCheckSchemaVersion();
	if (!creating_extension)
		FloorNoteRow(RelationGetDescr(td->tg_relation), row);
	return PointerGetDatum(row);
}

/*
 * Lower lowers, at the commit of the transaction that noted them, each
 * floor to the least key it moved in, and counts the lowering.
 */
static void
Lower(void)
{
	HASH_SEQ_STATUS it;
	FloorKey   *key;

	LWLockAcquire(floor_lock, LW_EXCLUSIVE);
	hash_seq_init(&it, pending);
	while ((key = hash_seq_search(&it)) != NULL)
	{
		QsFloorKeyValue least = *(QsFloorKeyValue *) ((char *) key + sizeof(FloorKey));
		bool		found;
		FloorEntry *entry = hash_search(floors, key, HASH_ENTER_NULL, &found);

		if (entry == NULL)
			continue;
		if (!found)
		{
			entry->set = false;
			entry->gen = 0;
		}
		if (entry->set && KeyLess(least, entry->floor))
			entry->floor = least;
		entry->gen++;
		entry->ring[entry->gen % QS_FLOOR_RING] = least;
	}
	LWLockRelease(floor_lock);
}

/*
 * QsScanFloorXactEvent lowers the floors at commit (and at PREPARE: the
 * rows become visible only at COMMIT PREPARED, which QS_FLOOR_CHECK_MS
 * bounds), and forgets the transaction's notes at its end.
 */
void
QsScanFloorXactEvent(XactEvent event)
{
	if (pending == NULL)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PREPARE)
		Lower();
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PREPARE || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT)
		pending = NULL;
}

/*
 * The probes: the first row of each scan at or above a key ($3, $4; for
 * LAPSED, $3), in the order of its index.  Their conditions are those of
 * the scans they serve: ClaimableQuery (job_store.c), the unclaimed and
 * lapsed parts of the due jobs (job_store_pass.c), and those by which
 * QsFloorNoteRow places a row.
 */
#define UNCLAIMED_PROBE(extra) \
	"SELECT scheduled_at, id FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NULL" extra \
	"   AND (scheduled_at, id) >= ($3, $4)" \
	" ORDER BY scheduled_at, id LIMIT 1"

static QsQuery ProbeQueries[] = {
	[QS_FLOOR_CLAIMABLE] = {
		UNCLAIMED_PROBE(" AND part_agents IS NULL AND ($2::text IS NULL OR capacity_unit = $2)"),
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
	[QS_FLOOR_UNCLAIMED] = {
		UNCLAIMED_PROBE(" AND $2::text IS NULL"),
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
	[QS_FLOOR_LAPSED] = {
		"SELECT lease_until, 0::bigint FROM quota_sched.job"
		" WHERE job_queue = $1 AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')"
		"   AND agent IS NOT NULL AND lease_until >= $3 AND $2::text IS NULL"
		"   AND $4::bigint IS NULL"
		" ORDER BY lease_until LIMIT 1",
		4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT, QS_INDEX_WALK
	},
};

/*
 * QsFloorStart finds where a scan of a queue (and unit: "" for all) starts,
 * in the snapshot given (NULL: one of the statement's own), which must be
 * taken after seen was read (QsFloorRead): the key of its first row at or
 * above the floor (from the beginning when the floor is not valid), or
 * past every key (FloorTop: the scan finds nothing); and raises the floor
 * to it.
 */
QsFloorKeyValue
QsFloorStart(QsFloorKind kind, const char *queue, const char *unit, const QsFloorSeen *seen,
			 Snapshot snapshot)
{
	Datum		args[4];
	char		nulls[4] = {' ', unit[0] ? ' ' : 'n', ' ', ' '};
	QsFloorKeyValue first = FloorTop;

	args[0] = CStringGetTextDatum(queue);
	args[1] = unit[0] ? CStringGetTextDatum(unit) : (Datum) 0;
	args[2] = Int64GetDatum(seen->valid ? seen->floor.k[0] : DT_NOBEGIN);
	args[3] = Int64GetDatum(seen->valid ? seen->floor.k[1] : PG_INT64_MIN);
	if (kind == QS_FLOOR_LAPSED)
		nulls[3] = 'n';
	if (QsQueryRunIn(&ProbeQueries[kind], args, nulls, snapshot, 1) == 1)
	{
		bool		isnull;

		first.k[0] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
												 &isnull));
		first.k[1] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
												 &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
	FloorAdvance(kind, queue, unit, seen, first);
	return first;
}
