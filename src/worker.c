/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The background worker (scheduling.md 6): a loop that runs the pass
 *		of every queue, one transaction per queue, at once after any commit
 *		that may change a decision and at least every quota_sched.naptime;
 *		and its launcher.
 *
 * The launcher is the background worker registered when the library is
 * preloaded.  It connects to no database (it reads only pg_database, a
 * shared catalog), waits until quota_sched.database exists, saying so once,
 * and then starts the worker there as a dynamic background worker.  When
 * the worker exits (terminated, or its database dropped) the launcher
 * starts it again some seconds later, once the database exists.  A backend
 * cannot change its database, so a worker started before its database
 * existed could only die and be restarted, FATAL every time.
 *
 * Commits wake the worker through its latch: the job and configuration
 * triggers set a per-transaction flag, and a transaction callback sets the
 * worker's latch when such a transaction commits (a background worker
 * cannot LISTEN).  The worker's process number lives in a small
 * shared-memory slot, with the launcher's.  Both start only once recovery
 * has finished, so they never run on a standby; an error in a pass is
 * reported, the transaction aborted, and the loop goes on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "config_cache.h"
#include "identity.h"
#include "job_store.h"
#include "pass.h"
#include "query.h"
#include "queue_lock.h"
#include "quota_sched.h"
#include "stats.h"
#include "worker.h"

PGDLLEXPORT void QsLauncherMain(Datum arg);
PGDLLEXPORT void QsWorkerMain(Datum arg);

/*
 * How long the launcher waits before it starts the worker again after it
 * exited, and the longest it waits between looks for the database.
 */
#define QS_RESTART_DELAY_MS 10000
#define QS_LOOK_MAX_MS 10000

/* The slot in shared memory: which processes to wake. */
typedef struct QsWorkerShared
{
	int			pgprocno;		/* the worker's; -1: no worker running */
	int			launcher_pgprocno;	/* the launcher's; -1: none */
	bool		stop_requested; /* the worker's database is being dropped */
} QsWorkerShared;

static QsWorkerShared *worker_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static bool wake_at_commit = false;
static bool am_worker = false;

/*
 * QsShmemRequest reserves the slot (PG 15: in shmem_request_hook).
 */
static void
QsShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(QsWorkerShared)));
	QsStatsRequest();
}

/*
 * QsShmemStartup creates or attaches to the slot.
 */
static void
QsShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	worker_shared = ShmemInitStruct("quota_sched worker", sizeof(QsWorkerShared), &found);
	if (!found)
	{
		worker_shared->pgprocno = -1;
		worker_shared->launcher_pgprocno = -1;
		worker_shared->stop_requested = false;
	}
	QsStatsStartup();
	LWLockRelease(AddinShmemInitLock);
}

/*
 * QsWorkerRunning tells whether the worker is running (in this server's
 * shared memory; false when the library is not preloaded).
 */
bool
QsWorkerRunning(void)
{
	return worker_shared != NULL && worker_shared->pgprocno >= 0;
}

/*
 * QsWakeWorkerAtCommit asks that the worker be woken when the current
 * transaction commits.  Called by the triggers only: the configuration
 * trigger (qs_config_changed), the job history trigger (qs_job_history:
 * a job that asks for capacity or ends, which is how submissions, releases,
 * requeues and final reports wake the worker; claims, RUNNING reports and
 * heartbeats do not) and the UPDATE guard (qs_job_before_update: a user's
 * change of priority).  In the worker's own passes it does nothing.
 */
void
QsWakeWorkerAtCommit(void)
{
	if (!am_worker)
		wake_at_commit = true;
}

/*
 * QsWorkerXactEnd sets the worker's latch at the commit of a transaction
 * that asked for it (with quota_sched.wake_on_commit, and while the worker
 * is enabled: a disabled worker is not woken for nothing), and forgets the
 * request at any end.
 */
void
QsWorkerXactEnd(bool committed)
{
	if (committed && wake_at_commit && QsWakeOnCommit && QsEnabled && worker_shared != NULL)
	{
		int			procno = worker_shared->pgprocno;

		if (procno >= 0)
			SetLatch(&GetPGProcByNumber(procno)->procLatch);
	}
	wake_at_commit = false;
}

/*
 * StopWorkerForDrop asks the launcher to stop the worker before a DROP
 * DATABASE of the worker's database, which would otherwise fail while the
 * worker is connected; the launcher then waits QS_RESTART_DELAY_MS (longer
 * than DROP DATABASE waits for other sessions to go) before it looks for
 * the database again.  Only for a statement that may succeed: at top level,
 * outside a transaction block, from another database, by the database's
 * owner (or a superuser).
 */
static void
StopWorkerForDrop(DropdbStmt *stmt, ProcessUtilityContext context)
{
	Oid			dboid;
	int			procno;

	if (context != PROCESS_UTILITY_TOPLEVEL || IsTransactionBlock() ||
		strcmp(stmt->dbname, QsDatabase) != 0)
		return;
	dboid = get_database_oid(stmt->dbname, true);
	if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
		!pg_database_ownercheck(dboid, GetUserId()))
		return;
	procno = worker_shared->launcher_pgprocno;
	if (procno < 0)
		return;
	worker_shared->stop_requested = true;
	SetLatch(&GetPGProcByNumber(procno)->procLatch);
}

/*
 * QsProcessUtility sees DROP DATABASE (StopWorkerForDrop), then runs the
 * statement.
 */
static void
QsProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (IsA(pstmt->utilityStmt, DropdbStmt))
		StopWorkerForDrop((DropdbStmt *) pstmt->utilityStmt, context);
	if (prev_ProcessUtility)
		prev_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
							queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/*
 * QsRegisterWorker registers the launcher, its shared memory and the hook
 * on DROP DATABASE, when the library is loaded by
 * shared_preload_libraries.  The postmaster restarts the launcher 10 s
 * after it dies; the launcher restarts the worker.
 */
void
QsRegisterWorker(void)
{
	BackgroundWorker worker;

	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = QsShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = QsShmemStartup;
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = QsProcessUtility;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = QS_RESTART_DELAY_MS / 1000;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "quota_sched");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "QsLauncherMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "quota_sched launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "quota_sched launcher");
	RegisterBackgroundWorker(&worker);
}

/* The launcher's handle of the worker it started; NULL: none running. */
static BackgroundWorkerHandle *worker_handle = NULL;

/*
 * LauncherExit stops the worker with the launcher, so that a launcher
 * restarted by the postmaster never finds a worker it does not know.
 */
static void
LauncherExit(int code, Datum arg)
{
	worker_shared->launcher_pgprocno = -1;
	if (worker_handle != NULL)
		TerminateBackgroundWorker(worker_handle);
}

/*
 * DatabaseExists says whether quota_sched.database exists now.  It scans
 * pg_database, as the autovacuum launcher does: without a database, the
 * relation cache has no entries for the shared catalogs' indexes, so that
 * get_database_oid() cannot be used.
 */
static bool
DatabaseExists(void)
{
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tuple;
	bool		exists = false;

	StartTransactionCommand();
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (!exists && HeapTupleIsValid(tuple = heap_getnext(scan, ForwardScanDirection)))
		exists = strcmp(NameStr(((Form_pg_database) GETSTRUCT(tuple))->datname), QsDatabase) == 0;
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	CommitTransactionCommand();
	return exists;
}

/*
 * StartWorker starts the worker as a dynamic background worker that tells
 * the launcher (its latch) when it has started and when it exits; false
 * when no background worker slot is free.
 */
static bool
StartWorker(void)
{
	BackgroundWorker worker;
	MemoryContext old;
	bool		started;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "quota_sched");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "QsWorkerMain");
	snprintf(worker.bgw_name, BGW_MAXLEN, "quota_sched worker");
	snprintf(worker.bgw_type, BGW_MAXLEN, "quota_sched worker");
	worker.bgw_notify_pid = MyProcPid;
	old = MemoryContextSwitchTo(TopMemoryContext);
	started = RegisterDynamicBackgroundWorker(&worker, &worker_handle);
	MemoryContextSwitchTo(old);
	return started;
}

/*
 * QsLauncherMain is the launcher's entry point.  Each time its latch is set
 * (the worker started or exited, a DROP DATABASE of its database, SIGHUP)
 * or a while has passed (a naptime, at most QS_LOOK_MAX_MS, while it waits
 * for the database), it sees whether the worker still runs; if none does
 * and the restart delay is over, it looks for the database and starts the
 * worker if the database exists.  It logs
 * once each time it begins to wait for the database, and warns once each
 * time it finds no free background worker slot.
 */
void
QsLauncherMain(Datum arg)
{
	TimestampTz start_after = 0;
	bool		said_waiting = false;
	bool		said_no_slot = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	worker_shared->stop_requested = false;
	worker_shared->launcher_pgprocno = MyProc->pgprocno;
	before_shmem_exit(LauncherExit, (Datum) 0);

	for (;;)
	{
		/* while the worker runs, its exit sets the latch: no need to poll */
		long		timeout = QS_LOOK_MAX_MS;
		TimestampTz now;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		now = GetCurrentTimestamp();
		if (worker_shared->stop_requested)
		{
			/* a DROP DATABASE waits for the worker to go */
			worker_shared->stop_requested = false;
			start_after = TimestampTzPlusMilliseconds(now, QS_RESTART_DELAY_MS);
			if (worker_handle != NULL)
				TerminateBackgroundWorker(worker_handle);
		}
		if (worker_handle != NULL)
		{
			pid_t		pid;

			if (GetBackgroundWorkerPid(worker_handle, &pid) == BGWH_STOPPED)
			{
				pfree(worker_handle);
				worker_handle = NULL;
				start_after = Max(start_after,
								  TimestampTzPlusMilliseconds(now, QS_RESTART_DELAY_MS));
			}
		}
		if (worker_handle == NULL)
		{
			if (now < start_after)
				timeout = Min(timeout, (start_after - now + 999) / 1000);
			else if (!DatabaseExists())
			{
				timeout = Min(timeout, QsNaptimeMs);
				if (!said_waiting)
					ereport(LOG,
							(errcode(ERRCODE_UNDEFINED_DATABASE),
							 errmsg("quota_sched launcher: database \"%s\" does not exist; waiting for it",
									QsDatabase)));
				said_waiting = true;
			}
			else
			{
				said_waiting = false;
				if (StartWorker())
					said_no_slot = false;
				else
				{
					if (!said_no_slot)
						ereport(WARNING,
								(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
								 errmsg("quota_sched launcher: could not start the worker: no free background worker slot"),
								 errhint("Raise max_worker_processes.")));
					said_no_slot = true;
				}
			}
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * QueuesToRun lists the job queues (QsAllQueues) in memory of context
 * outer, and remembers the configuration tables; false when the extension
 * is not installed in this database, or in another version than the
 * library's.
 */
static bool
QueuesToRun(MemoryContext outer, List **list)
{
	MemoryContext old;

	char	   *version = QsInstalledVersion();
	static bool warned = false;

	*list = NIL;
	if (version == NULL)
		return false;
	if (strcmp(version, QS_LIBRARY_VERSION) != 0)
	{
		/* wait for ALTER EXTENSION quota_sched UPDATE; say so once */
		if (!warned)
			ereport(WARNING,
					(errmsg("quota_sched worker: quota_sched %s is installed, but the library is version %s: no passes until the extension is updated",
							version, QS_LIBRARY_VERSION),
					 errhint("Run ALTER EXTENSION quota_sched UPDATE in database \"%s\".",
							 QsDatabase)));
		warned = true;
		return false;
	}
	warned = false;
	/* before the list is read: a later change then moves the generation */
	QsRememberConfigTables();
	old = MemoryContextSwitchTo(outer);
	*list = QsAllQueues();
	MemoryContextSwitchTo(old);
	return true;
}

/* whether the last step failed waiting for a lock (lock_timeout) */
static bool lock_timed_out = false;

/*
 * RunInTransaction runs one step of the loop (listing the queues, or the
 * pass of one queue) in its own transaction, shown as active with what as
 * its query in pg_stat_activity, then reports the statistics of that
 * transaction.  An error is reported and the transaction aborted; the loop
 * goes on.  Returns false on error (lock_timed_out: waiting for a lock,
 * which is not reported).
 */
static bool
RunInTransaction(void (*step) (void *arg), void *arg, const char *what)
{
	MemoryContext loop_cxt = CurrentMemoryContext;
	volatile bool ok = true;

	lock_timed_out = false;
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, what);
	PG_TRY();
	{
		step(arg);
		PopActiveSnapshot();
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(loop_cxt);
		edata = CopyErrorData();
		/* a queue locked for longer than a naptime: the caller tells */
		lock_timed_out = edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE;
		if (lock_timed_out)
			elog(DEBUG1, "quota_sched worker: %s: %s", what, edata->message);
		else
			EmitErrorReport();
		FreeErrorData(edata);
		FlushErrorState();
		AbortCurrentTransaction();
		ok = false;
	}
	PG_END_TRY();
	MemoryContextSwitchTo(loop_cxt);

	/*
	 * A background worker reports its statistics itself (a backend does so
	 * before it waits for a command).  Without it the worker's updates of
	 * jobs would reach pg_stat_user_tables, and so autovacuum, only when it
	 * exits.  Forced: the worker may sleep a naptime before the next chance.
	 */
	pgstat_report_stat(true);
	return ok;
}

/*
 * The queues the worker runs passes for, listed again only when the
 * configuration generation (config_cache.c) moves on.
 */
static MemoryContext queues_cxt = NULL;
static List *queues = NIL;
static bool queues_listed = false;
static uint64 queues_generation = 0;

static void
ListQueuesStep(void *arg)
{
	*(bool *) arg = QueuesToRun(queues_cxt, &queues);
}

/*
 * ListQueues lists the queues, unless the list is still good: no
 * invalidation of the configuration tables since it was made (a new queue
 * or a dropped extension sends one).  The
 * generation is taken before listing, so that a change committed while
 * listing makes the next round list again.
 */
static void
ListQueues(void)
{
	uint64		generation;
	bool		installed = false;

	/* starting a transaction takes in the invalidations sent meanwhile */
	StartTransactionCommand();
	generation = QsConfigGeneration();
	CommitTransactionCommand();
	if (queues_listed && generation == queues_generation)
		return;
	if (queues_cxt == NULL)
		queues_cxt = AllocSetContextCreate(TopMemoryContext, "quota_sched worker queues",
										   ALLOCSET_SMALL_SIZES);
	MemoryContextReset(queues_cxt);
	queues = NIL;
	/* without the extension, look again next round */
	queues_listed = RunInTransaction(ListQueuesStep, &installed, "quota_sched: listing queues") &&
		installed;
	queues_generation = generation;
}

/* A pass step: the queue, and whether its pass may be passed over. */
typedef struct PassArg
{
	const char *queue;
	bool		only_if_runnable;
} PassArg;

/*
 * When the earliest min_runtime exemption that kept a job from its victims
 * in the last round ends (0: none): the next round runs then, even before
 * a naptime has passed.
 */
static TimestampTz wake_at = 0;

/*
 * PassStep runs the pass of one queue.  QsRunQueuePass takes the queue's
 * lock; the lock_timeout set here, for this transaction only, makes it
 * wait at most a naptime (for a manual run_pass, or a writer's transaction
 * holding the lock in shared mode): then the queue is passed over until
 * the next round.  In a round between full rounds, a queue with no
 * RUNNABLE job is passed over without taking its lock: such a pass could
 * only do time-based work or repairs, which full rounds do.
 */
static void
PassStep(void *arg)
{
	PassArg    *pa = arg;
	char		timeout[32];

	if (pa->only_if_runnable)
	{
		bool		runnable;

		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "quota_sched: SPI_connect failed");
		runnable = QsQueueHasRunnable(pa->queue);
		SPI_finish();
		if (!runnable)
			return;
	}
	snprintf(timeout, sizeof(timeout), "%dms", QsNaptimeMs);
	(void) set_config_option("lock_timeout", timeout, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	QsRunQueuePass(pa->queue, false, NULL, NULL, &wake_at);
}

/*
 * The queues whose pass the worker gave up in the last rounds, waiting for
 * the queue's lock longer than a naptime: by name, how many passes in a
 * row.
 */
typedef struct SkippedQueue
{
	char		queue[NAMEDATALEN * 3];
	int			passes;
} SkippedQueue;

static HTAB *skipped_queues = NULL;

/*
 * NoteSkipped counts the passes of a queue given up in a row, or forgets
 * them when its pass ran.  At QS_SKIPPED_WARN in a row it gives a WARNING
 * naming the sessions that hold the lock; when the passes run again, a
 * LOG.  A queue whose passes cannot run must be seen.
 */
#define QS_SKIPPED_WARN 3
static void
NoteSkipped(const char *queue, bool skipped)
{
	SkippedQueue *e;
	bool		found;

	if (strlen(queue) >= sizeof(e->queue))
		return;					/* longer than any valid name */
	QsStatsNoteGivenUp(queue, skipped);
	if (skipped_queues == NULL)
	{
		HASHCTL		ctl;

		if (!skipped)
			return;
		ctl.keysize = sizeof(e->queue);
		ctl.entrysize = sizeof(SkippedQueue);
		skipped_queues = hash_create("quota_sched skipped queues", 16, &ctl,
									 HASH_ELEM | HASH_STRINGS);
	}
	e = hash_search(skipped_queues, queue, skipped ? HASH_ENTER : HASH_FIND, &found);
	if (!skipped)
	{
		if (e == NULL)
			return;
		if (e->passes >= QS_SKIPPED_WARN)
			ereport(LOG,
					(errmsg("quota_sched worker: the passes of job queue \"%s\" run again "
							"after %d were given up", queue, e->passes)));
		hash_search(skipped_queues, queue, HASH_REMOVE, NULL);
		return;
	}
	e->passes = found ? e->passes + 1 : 1;
	if (e->passes == QS_SKIPPED_WARN)
	{
		char	   *holders = QsQueueLockHolders(queue);

		ereport(WARNING,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("quota_sched worker: %d passes in a row of job queue \"%s\" were given "
						"up: its lock was held for longer than quota_sched.naptime",
						e->passes, queue),
				 holders[0] ? errdetail("Held by process %s.", holders) : 0,
				 errhint("A transaction that called run_pass(), claim(), report(), release(), "
						 "heartbeat() or terminate() holds the lock until it ends; "
						 "nothing of the queue is scheduled meanwhile.")));
	}
}

static QsQuery RollupQuery = {
	"SELECT quota_sched.rollup()", 0, {InvalidOid}, SPI_OK_SELECT
};

/*
 * RollupStep brings the hourly rollup of utilization up to date
 * (quota_sched.rollup(), as the extension's owner).
 */
static void
RollupStep(void *arg)
{
	QsSavedUser saved;

	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsQueryRun(&RollupQuery, NULL, NULL, false, 0);
	SPI_finish();
	QsRestoreUser(&saved);
}

/*
 * MaybeRollup runs the rollup once an hour, after the first full round of
 * the hour (in a database where the extension is installed): the hour
 * before is then whole.  Should it fail (logged), the next full round
 * tries again.
 */
static void
MaybeRollup(TimestampTz now)
{
	static TimestampTz rolled_hour = 0;
	TimestampTz hour = now - now % USECS_PER_HOUR;

	if (!queues_listed || hour == rolled_hour)
		return;
	if (RunInTransaction(RollupStep, NULL, "quota_sched: rollup"))
		rolled_hour = hour;
}

/*
 * RunAllPasses runs the pass of every queue, one transaction each.  A
 * round is full when a naptime has passed since the last full round began
 * or the configuration changed: then every queue's pass runs.  Rounds in
 * between (woken by commits) run only the passes of queues with RUNNABLE
 * jobs, since only those may have something to dispatch: a commit that
 * freed capacity in a queue where nothing waits costs no pass.
 */
static void
RunAllPasses(void)
{
	static TimestampTz last_full = 0;
	static uint64 full_generation = 0;
	TimestampTz now = GetCurrentTimestamp();
	PassArg		pa;
	ListCell   *lc;

	ListQueues();
	pa.only_if_runnable = last_full != 0 && full_generation == queues_generation &&
		!TimestampDifferenceExceeds(last_full, now, QsNaptimeMs);
	if (!pa.only_if_runnable)
	{
		last_full = now;
		full_generation = queues_generation;
	}
	wake_at = 0;
	foreach(lc, queues)
	{
		pa.queue = lfirst(lc);
		if (RunInTransaction(PassStep, &pa, "quota_sched: pass") || lock_timed_out)
			NoteSkipped(pa.queue, lock_timed_out);
	}
	if (!pa.only_if_runnable)
		MaybeRollup(now);
}

/*
 * WorkerExit empties the slot, so that commits stop waking a dead process.
 */
static void
WorkerExit(int code, Datum arg)
{
	worker_shared->pgprocno = -1;
}

/*
 * WaitForNextRound waits, shown as idle in pg_stat_activity, until a
 * commit sets the worker's latch or a naptime has passed.  The latch is
 * reset as the wait ends, before the round: a commit that comes during a
 * round sets it again, and the next round starts at once.  So a commit that
 * finds the worker idle is served at once, and a stream of commits is
 * served by rounds back to back, each taking whatever committed during the
 * one before; no round runs without a commit or a naptime, except when a
 * min_runtime exemption that held a job back ends earlier (wake_at).
 */
static void
WaitForNextRound(void)
{
	long		timeout = QsNaptimeMs;

	if (wake_at != 0)
	{
		/* rounded up, so that the pass's time is past the exemption's end */
		long		until = (wake_at - GetCurrentTimestamp() + 999) / 1000;

		timeout = Max(0, Min(timeout, until));
	}
	pgstat_report_activity(STATE_IDLE, NULL);
	(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					 timeout, PG_WAIT_EXTENSION);
	ResetLatch(MyLatch);
}

/*
 * QsWorkerMain is the worker's entry point: the loop.
 */
void
QsWorkerMain(Datum arg)
{
	MemoryContext round_cxt;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(QsDatabase, NULL, 0);
	/* a pass reads what committed before it took the lock */
	SetConfigOption("default_transaction_isolation", "read committed",
					PGC_SUSET, PGC_S_OVERRIDE);
	/* a pass is many small statements: JIT would cost more than them */
	SetConfigOption("jit", "off", PGC_SUSET, PGC_S_OVERRIDE);
	am_worker = true;
	worker_shared->pgprocno = MyProc->pgprocno;
	before_shmem_exit(WorkerExit, (Datum) 0);
	QsStatsNoteWorker(true);
	round_cxt = AllocSetContextCreate(TopMemoryContext, "quota_sched worker round",
									  ALLOCSET_DEFAULT_SIZES);
	elog(LOG, "quota_sched worker started in database \"%s\"", QsDatabase);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		if (QsEnabled && !RecoveryInProgress())
		{
			MemoryContextSwitchTo(round_cxt);
			RunAllPasses();
			QsStatsNoteWorker(false);
			MemoryContextSwitchTo(TopMemoryContext);
			MemoryContextReset(round_cxt);
		}
		WaitForNextRound();
	}
}
