/*-------------------------------------------------------------------------
 *
 * stats.c
 *		The scheduler's activity counters in shared memory, for metrics():
 *		per queue, its passes (how many, when the last ended, how long it
 *		took) and the worker's rounds that gave up its pass for its lock
 *		(in a row, and in all); for the worker, when it started and when
 *		its last round ended.
 *
 * These are what the tables do not record: a pass that decides nothing
 * writes nothing (scheduling.md 6), and writing a row per pass would make
 * every idle pass cost a write.  So they live in shared memory, like
 * PostgreSQL's own activity counters, and start again from zero when the
 * server restarts (a Prometheus counter may reset; rate() allows for it).
 *
 * Shared memory is the server's, and the extension may be in several of
 * its databases (a restored copy of the worker's, say), where queues may
 * have the same names: a queue is known by its database and its name, and
 * the worker's figures are those of its database.  pass_stats() and
 * worker_stats() answer for the caller's database only; in one where the
 * worker does not run, worker_stats() says so (running false, no times,
 * 0 rounds), as when the library is not preloaded.
 *
 * Queues are kept in a fixed-size shared hash table of QS_STATS_QUEUES
 * entries, the first QS_STATS_QUEUES queues (of all databases) to run a
 * pass since the server started; the passes of others are counted in
 * "untracked" only, one count for the server.  The entries of dropped
 * queues stay until the server restarts; pass_stats() returns those of
 * the caller's database, and metrics() those of queues that exist.  One
 * LWLock guards it all: it is taken once per pass, for a few stores.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "identity.h"
#include "launcher.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(qs_pass_stats);
PG_FUNCTION_INFO_V1(qs_worker_stats);

#define QS_STATS_QUEUES 1024
/* longer than any valid name (128 bytes) */
#define QS_STATS_NAME 136

/* A queue's key: its database and its name (zero-padded: compared whole). */
typedef struct QsQueueKey
{
	Oid			database;
	char		queue[QS_STATS_NAME];
} QsQueueKey;

typedef struct QsQueueStats
{
	QsQueueKey	key;			/* the key */
	int64		passes;
	TimestampTz last_pass_at;	/* when the last pass ended */
	int64		last_pass_us;	/* how long it took */
	int32		given_up_in_a_row;	/* rounds of the worker, up to now */
	int64		given_up;		/* all the rounds */
} QsQueueStats;

typedef struct QsStatsShared
{
	LWLock	   *lock;
	int64		untracked;		/* passes of queues that found no entry */
	Oid			worker_database;	/* where the worker last started */
	TimestampTz worker_started_at;	/* 0: never */
	TimestampTz worker_round_at;	/* when its last round ended; 0: none */
	int64		worker_rounds;
} QsStatsShared;

static QsStatsShared *stats = NULL;
static HTAB *queue_stats = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/*
 * StatsShmemRequest reserves the shared memory and the lock (PG 15: in
 * shmem_request_hook).
 */
static void
StatsShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(QsStatsShared)) +
						   hash_estimate_size(QS_STATS_QUEUES, sizeof(QsQueueStats)));
	RequestNamedLWLockTranche("quota_sched stats", 1);
}

/*
 * StatsShmemStartup creates or attaches to them (shmem_startup_hook).
 */
static void
StatsShmemStartup(void)
{
	bool		found;
	HASHCTL		ctl;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	stats = ShmemInitStruct("quota_sched stats", sizeof(QsStatsShared), &found);
	if (!found)
	{
		memset(stats, 0, sizeof(QsStatsShared));
		stats->lock = &(GetNamedLWLockTranche("quota_sched stats"))->lock;
	}
	ctl.keysize = sizeof(QsQueueKey);
	ctl.entrysize = sizeof(QsQueueStats);
	queue_stats = ShmemInitHash("quota_sched queue stats", QS_STATS_QUEUES, QS_STATS_QUEUES,
								&ctl, HASH_ELEM | HASH_BLOBS | HASH_FIXED_SIZE);
	LWLockRelease(AddinShmemInitLock);
}

/*
 * QsStatsRegister installs the hooks that make the counters' shared memory,
 * when the library is loaded by shared_preload_libraries; otherwise there
 * are no counters (and metrics() shows none).
 */
void
QsStatsRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = StatsShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = StatsShmemStartup;
}

/*
 * QueueKey fills *key with the queue of this session's database; false
 * when the name is too long to be one.
 */
static bool
QueueKey(const char *queue, QsQueueKey *key)
{
	memset(key, 0, sizeof(QsQueueKey));
	key->database = MyDatabaseId;
	return strlcpy(key->queue, queue, QS_STATS_NAME) < QS_STATS_NAME;
}

/*
 * FindQueue returns the entry of the queue of this session's database;
 * NULL when it has none.  The caller holds the lock.
 */
static QsQueueStats *
FindQueue(const char *queue)
{
	QsQueueKey	key;

	if (!QueueKey(queue, &key))
		return NULL;
	return hash_search(queue_stats, &key, HASH_FIND, NULL);
}

/*
 * QueueEntry returns the entry of the queue of this session's database,
 * made if need be; NULL when the table is full or the name too long.  The
 * caller holds the lock exclusively.
 */
static QsQueueStats *
QueueEntry(const char *queue)
{
	QsQueueKey	key;
	QsQueueStats *e;
	bool		found;

	if (!QueueKey(queue, &key))
		return NULL;
	e = hash_search(queue_stats, &key, HASH_ENTER_NULL, &found);
	if (e != NULL && !found)
	{
		e->passes = 0;
		e->last_pass_at = 0;
		e->last_pass_us = 0;
		e->given_up_in_a_row = 0;
		e->given_up = 0;
	}
	return e;
}

/*
 * QsStatsNotePass counts a pass of the queue that ran from started to
 * ended (a dry run is not counted).
 */
void
QsStatsNotePass(const char *queue, TimestampTz started, TimestampTz ended)
{
	QsQueueStats *e;

	if (stats == NULL)
		return;					/* not preloaded: nothing to keep */
	LWLockAcquire(stats->lock, LW_EXCLUSIVE);
	e = QueueEntry(queue);
	if (e == NULL)
		stats->untracked++;
	else
	{
		e->passes++;
		e->last_pass_at = ended;
		e->last_pass_us = ended - started;
	}
	LWLockRelease(stats->lock);
}

/*
 * QsStatsNoteGivenUp records whether the worker gave up the queue's pass
 * in this round (its lock was held too long), or ran it.
 */
void
QsStatsNoteGivenUp(const char *queue, bool given_up)
{
	QsQueueStats *e;

	if (stats == NULL)
		return;
	LWLockAcquire(stats->lock, LW_EXCLUSIVE);
	e = given_up ? QueueEntry(queue) : FindQueue(queue);
	if (e != NULL)
	{
		e->given_up_in_a_row = given_up ? e->given_up_in_a_row + 1 : 0;
		if (given_up)
			e->given_up++;
	}
	LWLockRelease(stats->lock);
}

/*
 * QsStatsGivenUpInARow tells in how many of the worker's rounds in a row,
 * up to now, the queue's pass was given up (0 without the preload).
 */
int
QsStatsGivenUpInARow(const char *queue)
{
	QsQueueStats *e;
	int			n = 0;

	if (stats == NULL)
		return 0;
	LWLockAcquire(stats->lock, LW_SHARED);
	e = FindQueue(queue);
	if (e != NULL)
		n = e->given_up_in_a_row;
	LWLockRelease(stats->lock);
	return n;
}

/*
 * QsStatsNoteWorker records that the worker started (started) or ended a
 * round.  A worker that starts in another database than the last one
 * (quota_sched.database changed) counts its rounds from 0: those counted
 * were of the other database's worker.
 */
void
QsStatsNoteWorker(bool started)
{
	if (stats == NULL)
		return;
	LWLockAcquire(stats->lock, LW_EXCLUSIVE);
	if (started)
	{
		if (stats->worker_database != MyDatabaseId)
		{
			stats->worker_database = MyDatabaseId;
			stats->worker_round_at = 0;
			stats->worker_rounds = 0;
		}
		stats->worker_started_at = GetCurrentTimestamp();
	}
	else
	{
		stats->worker_round_at = GetCurrentTimestamp();
		stats->worker_rounds++;
	}
	LWLockRelease(stats->lock);
}

static Datum
TimeOrNull(TimestampTz t, bool *isnull)
{
	*isnull = t == 0;
	return TimestampTzGetDatum(t);
}

/*
 * qs_pass_stats() RETURNS TABLE (job_queue text, passes bigint,
 * last_pass_at timestamptz, last_pass_seconds double precision,
 * given_up_in_a_row integer, given_up bigint): the entries of this
 * session's database, copied out under the lock (nothing that may fail
 * runs while it is held).  A row with job_queue null counts the passes of
 * untracked queues (of all databases).
 */
Datum
qs_pass_stats(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	QsQueueStats *copy;
	int			n = 0;
	int64		untracked;
	HASH_SEQ_STATUS seq;
	QsQueueStats *e;

	QsCheckSchemaVersion();
	InitMaterializedSRF(fcinfo, 0);
	if (stats == NULL)
		PG_RETURN_NULL();
	copy = palloc(sizeof(QsQueueStats) * QS_STATS_QUEUES);
	LWLockAcquire(stats->lock, LW_SHARED);
	untracked = stats->untracked;
	hash_seq_init(&seq, queue_stats);
	while ((e = hash_seq_search(&seq)) != NULL)
	{
		if (n < QS_STATS_QUEUES && e->key.database == MyDatabaseId)
			copy[n++] = *e;
	}
	LWLockRelease(stats->lock);
	for (int i = 0; i <= n; i++)
	{
		Datum		values[6];
		bool		nulls[6] = {false};

		if (i == n)
		{
			if (untracked == 0)
				break;
			nulls[0] = true;
			values[1] = Int64GetDatum(untracked);
			nulls[2] = nulls[3] = nulls[4] = nulls[5] = true;
		}
		else
		{
			values[0] = CStringGetTextDatum(copy[i].key.queue);
			values[1] = Int64GetDatum(copy[i].passes);
			values[2] = TimeOrNull(copy[i].last_pass_at, &nulls[2]);
			values[3] = Float8GetDatum(copy[i].last_pass_us / 1e6);
			nulls[3] = nulls[2];
			values[4] = Int32GetDatum(copy[i].given_up_in_a_row);
			values[5] = Int64GetDatum(copy[i].given_up);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	PG_RETURN_NULL();
}

/*
 * qs_worker_stats(OUT running boolean, OUT started_at timestamptz,
 * OUT last_round_at timestamptz, OUT rounds bigint): the worker's, in its
 * database.  In another, the worker does not run there: running false,
 * no times and 0 rounds, as without the preload.
 */
Datum
qs_worker_stats(PG_FUNCTION_ARGS)
{
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false};
	TimestampTz started = 0,
				round = 0;
	int64		rounds = 0;

	QsCheckSchemaVersion();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "quota_sched: worker_stats() must return a record");
	if (stats != NULL)
	{
		LWLockAcquire(stats->lock, LW_SHARED);
		if (stats->worker_database == MyDatabaseId)
		{
			started = stats->worker_started_at;
			round = stats->worker_round_at;
			rounds = stats->worker_rounds;
		}
		LWLockRelease(stats->lock);
	}
	values[0] = BoolGetDatum(QsWorkerRunning());
	values[1] = TimeOrNull(started, &nulls[1]);
	values[2] = TimeOrNull(round, &nulls[2]);
	values[3] = Int64GetDatum(rounds);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
