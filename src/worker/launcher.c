/*-------------------------------------------------------------------------
 *
 * launcher.c
 *		The launcher of the background worker (scheduling.md 6), the
 *		shared-memory slot through which commits wake the worker, and the
 *		hook that stops the worker before a DROP DATABASE of its database.
 *
 * The launcher is the background worker registered when the library is
 * preloaded.  It connects to no database (it reads only pg_database, a
 * shared catalog), waits until quota_sched.database exists, saying so once,
 * and then starts the worker there as a dynamic background worker
 * (worker.c).  When the worker exits (terminated, or its database dropped)
 * the launcher starts it again some seconds later, once the database
 * exists.  A backend cannot change its database, so a worker started
 * before its database existed could only die and be restarted, FATAL
 * every time.
 *
 * Commits wake the worker through its latch: the job and configuration
 * triggers set a per-transaction flag, and a transaction callback sets the
 * worker's latch when such a transaction commits (a background worker
 * cannot LISTEN).  The worker's process number lives in a small
 * shared-memory slot, with the launcher's.  Both start only once recovery
 * has finished, so they never run on a standby.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "job_end.h"
#include "launcher.h"
#include "constants.h"

/* The worker's settings (scheduling.md 6), read by the worker too */
bool		QsEnabled = true;
bool		QsWakeOnCommit = true;
int			QsNaptimeMs = 1000;
int			QsPassMinIntervalMs = 10;
char	   *QsDatabase = NULL;

/*
 * QsDefineWorkerSettings declares the background worker's settings.
 *
 * A postmaster setting can only be defined while the library preloads.
 * Loaded later (no worker), the setting is defined all the same, to be
 * read at reload and to do nothing: else MarkGUCPrefixReserved would
 * remove a quota_sched.database line of postgresql.conf with a WARNING in
 * every session that loads the library (doc/operations.md).
 */
void
QsDefineWorkerSettings(void)
{
	bool		preloading = process_shared_preload_libraries_in_progress;

	DefineCustomStringVariable("quota_sched.database",
							   "Database in which the quota_sched background worker runs passes.",
							   preloading ? NULL :
							   "No effect: quota_sched is not in shared_preload_libraries, so no worker runs.",
							   &QsDatabase, "postgres", preloading ? PGC_POSTMASTER : PGC_SIGHUP, 0,
							   NULL, NULL, NULL);
	DefineCustomIntVariable("quota_sched.naptime",
							"Longest wait of the background worker between passes.",
							NULL, &QsNaptimeMs, 1000, 10, 3600 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("quota_sched.pass_min_interval",
							"Shortest time between the starts of two rounds of passes.",
							"0: a round starts as soon as a commit wakes the worker.",
							&QsPassMinIntervalMs, 10, 0, 60 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("quota_sched.enabled",
							 "Whether the background worker runs passes.",
							 NULL, &QsEnabled, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("quota_sched.wake_on_commit",
							 "Whether a commit that changes jobs or configuration wakes the worker.",
							 NULL, &QsWakeOnCommit, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
}

PGDLLEXPORT void QsLauncherMain(Datum arg);

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
	Oid			dboid;			/* the worker's database, while it runs */
	int			launcher_pgprocno;	/* the launcher's; -1: none */
	bool		stop_requested; /* the worker's database is being dropped */
	pg_atomic_uint64 wakes;		/* the commits that woke the worker, ever */
} QsWorkerShared;

static QsWorkerShared *worker_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static bool wake_at_commit = false;
static bool am_worker = false;

/*
 * SlotShmemRequest reserves the slot (PG 15: in shmem_request_hook).
 */
static void
SlotShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(QsWorkerShared)));
}

/*
 * SlotShmemStartup creates or attaches to the slot.
 */
static void
SlotShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	worker_shared = ShmemInitStruct("quota_sched worker", sizeof(QsWorkerShared), &found);
	if (!found)
	{
		worker_shared->pgprocno = -1;
		worker_shared->dboid = InvalidOid;
		worker_shared->launcher_pgprocno = -1;
		worker_shared->stop_requested = false;
		pg_atomic_init_u64(&worker_shared->wakes, 0);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * QsWorkerRunning tells whether the worker is running in this session's
 * database: false when the library is not preloaded, and in any other
 * database of the server (a restored copy of the worker's, say), whose
 * jobs no worker schedules.
 */
bool
QsWorkerRunning(void)
{
	if (worker_shared == NULL || worker_shared->pgprocno < 0)
		return false;
	pg_read_barrier();			/* dboid is written before pgprocno */
	return worker_shared->dboid == MyDatabaseId;
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
 * QsClaimWorkerSlot records the calling process, the worker as it starts,
 * and its database in the slot until it exits, so that commits wake it
 * (and QsWorkerRunning knows where it runs); and stops its own
 * passes from asking that it be woken (QsWakeWorkerAtCommit).
 */
void
QsClaimWorkerSlot(void)
{
	am_worker = true;
	worker_shared->dboid = MyDatabaseId;
	pg_write_barrier();
	worker_shared->pgprocno = MyProc->pgprocno;
	before_shmem_exit(WorkerExit, (Datum) 0);
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
		{
			pg_atomic_fetch_add_u64(&worker_shared->wakes, 1);
			SetLatch(&GetPGProcByNumber(procno)->procLatch);
		}
	}
	wake_at_commit = false;
}

/*
 * QsWorkerWakes: how many commits have woken the worker (QsWorkerXactEnd),
 * ever.  The worker compares it before and after a round: its latch alone
 * cannot say whether commits came during the round, since a wait within
 * the round (for a lock, say) resets it.
 */
uint64
QsWorkerWakes(void)
{
	return pg_atomic_read_u64(&worker_shared->wakes);
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
 * QsProcessUtility sees DROP DATABASE (StopWorkerForDrop) and LISTEN
 * (QsJobEndNoteListen), then runs the statement.
 */
static void
QsProcessUtility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
				 ProcessUtilityContext context, ParamListInfo params,
				 QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	if (IsA(pstmt->utilityStmt, DropdbStmt))
		StopWorkerForDrop((DropdbStmt *) pstmt->utilityStmt, context);
	QsJobEndNoteListen(pstmt->utilityStmt);
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
	shmem_request_hook = SlotShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = SlotShmemStartup;
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

/* What the launcher remembers from one look to the next (QsLauncherMain). */
typedef struct LauncherState
{
	TimestampTz start_after;	/* no start of the worker before then */
	bool		said_waiting;	/* logged that the database does not exist */
	bool		said_no_slot;	/* warned that no worker slot was free */
} LauncherState;

/*
 * SeeWorkerExit stops the worker when a DROP DATABASE of its database asks
 * for it, and forgets a worker that has exited; either way the worker is
 * started again QS_RESTART_DELAY_MS later at the earliest.
 */
static void
SeeWorkerExit(LauncherState *st, TimestampTz now)
{
	if (worker_shared->stop_requested)
	{
		/* a DROP DATABASE waits for the worker to go */
		worker_shared->stop_requested = false;
		st->start_after = TimestampTzPlusMilliseconds(now, QS_RESTART_DELAY_MS);
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
			st->start_after = Max(st->start_after,
								  TimestampTzPlusMilliseconds(now, QS_RESTART_DELAY_MS));
		}
	}
}

/*
 * TryStartWorker starts the worker, none running, once the restart delay
 * is over and the database exists, and returns how long the launcher may
 * wait before it looks again (at most timeout).  It logs once each time it
 * begins to wait for the database, and warns once each time it finds no
 * free background worker slot.
 */
static long
TryStartWorker(LauncherState *st, TimestampTz now, long timeout)
{
	if (now < st->start_after)
		return Min(timeout, (st->start_after - now + 999) / 1000);
	if (!DatabaseExists())
	{
		if (!st->said_waiting)
			ereport(LOG,
					(errcode(ERRCODE_UNDEFINED_DATABASE),
					 errmsg("quota_sched launcher: database \"%s\" does not exist; waiting for it",
							QsDatabase)));
		st->said_waiting = true;
		return Min(timeout, QsNaptimeMs);
	}
	st->said_waiting = false;
	if (StartWorker())
		st->said_no_slot = false;
	else
	{
		if (!st->said_no_slot)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("quota_sched launcher: could not start the worker: no free background worker slot"),
					 errhint("Raise max_worker_processes.")));
		st->said_no_slot = true;
	}
	return timeout;
}

/*
 * QsLauncherMain is the launcher's entry point.  Each time its latch is set
 * (the worker started or exited, a DROP DATABASE of its database, SIGHUP)
 * or a while has passed (a naptime, at most QS_LOOK_MAX_MS, while it waits
 * for the database), it sees whether the worker still runs
 * (SeeWorkerExit); if none does, it starts one when it may
 * (TryStartWorker).
 */
void
QsLauncherMain(Datum arg)
{
	LauncherState st = {0};

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
		SeeWorkerExit(&st, now);
		if (worker_handle == NULL)
			timeout = TryStartWorker(&st, now, timeout);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 timeout, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}
