/*-------------------------------------------------------------------------
 *
 * usage_cache.c
 *		The counters of held capacity a pass keeps (issue 42, item 3): the
 *		rows of a queue's counters (usage.c) that a backend read, kept for
 *		its next passes while no transaction wrote quota_sched.held_capacity
 *		since, so that a pass in which nothing held changed does not read
 *		and add up a counter per share and unit again.
 *
 * When what is kept is right.  The statement trigger held_capacity_written
 * (AFTER INSERT, UPDATE, DELETE or TRUNCATE of held_capacity; ENABLE
 * ALWAYS, so that writes with session_replication_role = replica count
 * too) counts every transaction that writes the counters, whatever writes
 * them (the job_usage_flush trigger, an admin's statement, a restore with
 * triggers), in shared memory: `writing` once it first writes, until it
 * ends; at its commit, once it is visible, `commits` moves on, and only
 * then `writing` comes down.  A read keeps its rows with the `commits`
 * read before its statement's snapshot.  A later read takes them when it
 * finds, in this order, `writing` at 0 and `commits` as kept: every
 * transaction that wrote the counters and became visible after the kept
 * read's snapshot has either moved `commits` on, or not yet, and then
 * holds `writing` up.  So the rows kept are those a snapshot would read at
 * that moment.  A transaction that writes the counters neither takes nor
 * keeps them (its own writes are in its reads, and may roll back), nor
 * does one that reads in a snapshot of its own (REPEATABLE READ: an older
 * state), nor a read that locks rows.  What was spent (budgets) moves
 * with the time: the stripes are kept as stored, and what each spent is
 * computed again at the time of the read that takes them (QsUsageSpentAt),
 * as a read at that time would.
 *
 * What it cannot see: writes with every trigger disabled (ALTER TABLE ...
 * DISABLE TRIGGER ALL); what is kept is read again after
 * QS_USAGE_KEEP_MS at most.  A prepared transaction that wrote the
 * counters ends with COMMIT PREPARED, maybe in another session, which
 * this one cannot see: once one was prepared, nothing is kept until the
 * server restarts.  Without the library preloaded there is no shared
 * memory and nothing is kept.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "commands/trigger.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "constants.h"
#include "host_cache.h"
#include "identity.h"
#include "usage.h"

PG_FUNCTION_INFO_V1(qs_held_capacity_written);
PG_FUNCTION_INFO_V1(qs_held_capacity_reads);

typedef struct UsageShared
{
	pg_atomic_uint64 commits;	/* of transactions that wrote the counters */
	pg_atomic_uint32 writing;	/* those that wrote them and have not ended */
	pg_atomic_uint32 prepared;	/* 1: one was prepared; nothing is kept */
} UsageShared;

typedef struct UsageKept
{
	char		queue[QS_MAX_NAME_LEN + 1];	/* the key */
	MemoryContext cxt;			/* of rows, NULL: nothing kept */
	QsUsageRows rows;
	uint64		commits;		/* read before the read's snapshot */
	Oid			relid;			/* held_capacity's, when read */
	TimestampTz read_at;
} UsageKept;

static UsageShared *usage_shared = NULL;
static bool wrote = false;		/* this transaction counts in `writing` */
static HTAB *Kept = NULL;
static int64 Reads = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

static void
UsageShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(UsageShared)));
}

static void
UsageShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	usage_shared = ShmemInitStruct("quota_sched counters written", sizeof(UsageShared), &found);
	if (!found)
	{
		pg_atomic_init_u64(&usage_shared->commits, 0);
		pg_atomic_init_u32(&usage_shared->writing, 0);
		pg_atomic_init_u32(&usage_shared->prepared, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/* QsUsageCacheRegister sets up the shared memory, when preloaded. */
void
QsUsageCacheRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = UsageShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = UsageShmemStartup;
}

/*
 * qs_held_capacity_written (AFTER INSERT, UPDATE, DELETE or TRUNCATE of
 * held_capacity, for each statement) counts the transaction in `writing`,
 * once, until it ends (QsUsageCacheXactEvent).
 */
Datum
qs_held_capacity_written(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	if (!CALLED_AS_TRIGGER(fcinfo))
		elog(ERROR, "quota_sched: held_capacity_written: must be fired as a trigger");
	if (usage_shared != NULL && !wrote)
	{
		pg_atomic_fetch_add_u32(&usage_shared->writing, 1);
		wrote = true;
	}
	return PointerGetDatum(NULL);
}

/*
 * QsUsageCacheXactEvent moves `commits` on at the commit of a transaction
 * that wrote the counters, once it is visible (XACT_EVENT_COMMIT comes
 * after), then lets it out of `writing`; an abort only lets it out; a
 * PREPARE keeps anything from being kept from then on.
 */
void
QsUsageCacheXactEvent(XactEvent event)
{
	if (!wrote)
		return;
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
			pg_atomic_fetch_add_u64(&usage_shared->commits, 1);
			break;
		case XACT_EVENT_PREPARE:
			pg_atomic_write_u32(&usage_shared->prepared, 1);
			pg_memory_barrier();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			break;
		default:
			return;
	}
	pg_atomic_fetch_sub_u32(&usage_shared->writing, 1);
	wrote = false;
}

/*
 * QsUsageWrites reads `writing`, then `commits`: *no_writer tells whether
 * no transaction that wrote the counters (or the memory of borrowing:
 * borrow_memory.c) is under way, *commits how many committed.  False when
 * this transaction may neither keep nor take what it reads of them (the
 * header says when).  A read keeps with `commits` read before its
 * snapshot; a later one takes when it reads, after its own snapshot,
 * `writing` at 0 and the same `commits`.
 */
bool
QsUsageWrites(uint64 *commits, bool *no_writer)
{
	uint32		writing;

	*no_writer = false;
	if (usage_shared == NULL || wrote || IsolationUsesXactSnapshot() ||
		pg_atomic_read_u32(&usage_shared->prepared) != 0)
		return false;
	writing = pg_atomic_read_u32(&usage_shared->writing);
	pg_read_barrier();
	*commits = pg_atomic_read_u64(&usage_shared->commits);
	*no_writer = writing == 0;
	return true;
}

/*
 * UsageKeptOf returns what is kept of a queue, or NULL when nothing may be
 * kept for this read; *commits and *no_writer as QsUsageWrites reads them,
 * before the caller's read, if it makes one.
 */
static UsageKept *
UsageKeptOf(const char *queue, uint64 *commits, bool *no_writer)
{
	if (!QsUsageWrites(commits, no_writer))
		return NULL;
	return QsQueueCacheEntry(&Kept, "quota_sched counters kept", sizeof(UsageKept), queue);
}

/* held_capacity's oid (InvalidOid: none) */
static Oid
CountersRelid(void)
{
	Oid			nsp = get_namespace_oid(QS_SCHEMA, true);

	return OidIsValid(nsp) ? get_relname_relid("held_capacity", nsp) : InvalidOid;
}

/*
 * CopyRows copies rows into the caller's memory, with what was spent at
 * time now when they were read with it; the names and stripes stay where
 * they are (what is kept is freed only at the end of a transaction that
 * kept something new: QsCacheForget).
 */
static QsUsageRows
CopyRows(QsUsageRows rows, TimestampTz now)
{
	QsUsageRows copy = rows;

	copy.rows = palloc(sizeof(QsUsageRow) * (rows.n + 1));
	memcpy(copy.rows, rows.rows, sizeof(QsUsageRow) * rows.n);
	if (rows.stripes != NULL)
		QsUsageSpentAt(&copy, now);
	return copy;
}

/*
 * QsLoadUsage returns the counters of a queue as QsReadUsage reads them,
 * with spent what each spent at now (lock_rows: a pass's read that locks
 * the rows it reads), from what this
 * backend kept when it may (the header says when), else read and, when it
 * may, kept.  The caller is connected to SPI and runs as the owner.
 */
QsUsageRows
QsLoadUsage(const char *queue, bool spent, TimestampTz now, bool lock_rows)
{
	uint64		commits = 0;
	bool		no_writer;
	UsageKept  *kept = lock_rows ? NULL : UsageKeptOf(queue, &commits, &no_writer);
	Oid			relid = kept != NULL ? CountersRelid() : InvalidOid;
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext cxt;
	QsUsageRows rows;

	if (kept != NULL && no_writer && kept->cxt != NULL && kept->commits == commits &&
		kept->relid == relid && OidIsValid(relid) && (kept->rows.stripes != NULL) == spent &&
		!TimestampDifferenceExceeds(kept->read_at, GetCurrentTimestamp(), QS_USAGE_KEEP_MS))
		return CopyRows(kept->rows, now);
	Reads++;
	if (kept == NULL)
	{
		rows = QsReadUsage(queue, spent);
		if (spent)
			QsUsageSpentAt(&rows, now);
		return rows;
	}
	cxt = AllocSetContextCreate(caller, "quota_sched counters kept of a queue",
								ALLOCSET_SMALL_SIZES);
	MemoryContextSwitchTo(cxt);
	rows = QsReadUsage(queue, spent);
	MemoryContextSwitchTo(caller);
	QsCacheForget(&kept->cxt);
	kept->rows = rows;
	kept->commits = commits;
	kept->relid = relid;
	kept->read_at = GetCurrentTimestamp();
	MemoryContextSetParent(cxt, TopMemoryContext);
	kept->cxt = cxt;
	return CopyRows(rows, now);
}

/*
 * quota_sched.held_capacity_reads(): how many times this backend read a
 * queue's counters, or its memory of borrowing (QsNoteBorrowRead), rather
 * than take what it kept (for tests).
 */
Datum
qs_held_capacity_reads(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(Reads);
}

/* QsNoteBorrowRead counts a read of a queue's memory of borrowing. */
void
QsNoteBorrowRead(void)
{
	Reads++;
}
