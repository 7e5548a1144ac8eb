/*-------------------------------------------------------------------------
 *
 * worker.c
 *		The background worker (scheduling.md 6): a loop that runs the pass
 *		of every queue, one transaction per queue, at once after any commit
 *		that may change a decision and at least every quota_sched.naptime,
 *		and the hourly rollup of utilization.
 *
 * The launcher (launcher.c) starts the worker in quota_sched.database once
 * it exists, and starts it again when it exits.  A commit wakes the worker
 * through the latch whose process number the worker leaves in the
 * launcher's shared-memory slot (QsClaimWorkerSlot).  An error in a pass
 * is reported, the transaction aborted, and the loop goes on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "config_cache.h"
#include "identity.h"
#include "version.h"
#include "job_store_pass.h"
#include "launcher.h"
#include "pass.h"
#include "query.h"
#include "queue_lock.h"
#include "constants.h"
#include "stats.h"
#include "worker.h"

/*
 * QueuesToRun lists the job queues (QsAllQueues) in memory of context
 * outer, and remembers the configuration tables; false when the extension
 * is not installed in this database, or in another version than the
 * library's (one library serves one schema: doc/releasing.md).  Then the
 * worker runs nothing, and asks again at its next round: it says once (a
 * LOG) that it waits for ALTER EXTENSION quota_sched UPDATE, and once that
 * its passes resume when the schema is its own.
 */
static bool
QueuesToRun(MemoryContext outer, List **list)
{
	MemoryContext old;
	char	   *version;
	static bool waiting = false;

	*list = NIL;
	switch (QsInstalledSchema(&version))
	{
		case QS_SCHEMA_NONE:
			return false;
		case QS_SCHEMA_OTHER:
			if (!waiting)
				ereport(LOG,
						(errmsg("quota_sched worker: quota_sched %s is installed, but the library is version %s: no passes until the extension is updated",
								version, QS_LIBRARY_VERSION),
						 QsCompareVersions(version, QS_LIBRARY_VERSION) < 0 ?
						 errhint("Run ALTER EXTENSION quota_sched UPDATE in database \"%s\".",
								 QsDatabase) :
						 errhint("Install the library of quota_sched %s and restart the server.",
								 version)));
			waiting = true;
			return false;
		case QS_SCHEMA_OWN:
			break;
	}
	/* the matching word once the update is done, so that the log tells */
	if (waiting)
		ereport(LOG,
				(errmsg("quota_sched worker: quota_sched %s is installed, the library's version: passes resume",
						QS_LIBRARY_VERSION)));
	waiting = false;
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

/*
 * ListQueuesStep is the step of RunInTransaction that lists the queues
 * (QueuesToRun); *arg tells whether the extension is installed.
 */
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
 * in the last round ends, or the fence_grace of a lease that ran out
 * (scheduling.md 3.10), whichever comes first (0: none): the next round
 * runs then, even before a naptime has passed.
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
		QsSavedUser saved;

		/* as the pass: its statements' saved plans are made for one role */
		QsBecomeOwner(QsExtensionOwner(), &saved);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "quota_sched: SPI_connect failed");
		runnable = QsQueueHasRunnable(pa->queue);
		SPI_finish();
		QsRestoreUser(&saved);
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
				 errhint("A transaction that called run_pass(), claim(), report(), release() "
						 "or heartbeat() holds the lock until it ends; "
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
 * round is full when a naptime has passed since the last full round began,
 * the configuration changed, or the wake_at of the last round has come (a
 * lease's fence_grace ends in a queue that may have nothing RUNNABLE):
 * then every queue's pass runs.  Rounds in
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
		!TimestampDifferenceExceeds(last_full, now, QsNaptimeMs) &&
		!(wake_at != 0 && now >= wake_at);
	if (!pa.only_if_runnable)
	{
		last_full = now;
		full_generation = queues_generation;
	}
	/*
	 * A round that passes over queues keeps the wake_at they set earlier
	 * (a lease's grace in a queue with nothing RUNNABLE now) until a full
	 * round: at worst one full round too many.
	 */
	if (!pa.only_if_runnable)
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


/* when the last round began (0: none yet), and the wakes then (QsWorkerWakes) */
static TimestampTz round_began = 0;
static uint64 round_wakes = 0;

/*
 * HoldNextRound, after a round during which commits came (a stream), holds
 * the next round until quota_sched.pass_min_interval has passed since that
 * one began.  So a stream of commits is served by a round every interval,
 * each taking all that committed since the one before, where rounds back
 * to back would each take a few: a pass costs about the same for one job
 * as for ten (bench/README.md).  A commit that finds the worker idle is
 * served at once, however soon after a round.  Commits that come while it
 * holds are the coming round's: the latch is reset as it waits.
 */
static void
HoldNextRound(void)
{
	for (;;)
	{
		TimestampTz due = TimestampTzPlusMilliseconds(round_began, QsPassMinIntervalMs);
		long		ms = (due - GetCurrentTimestamp() + 999) / 1000;

		/* a reload first: the main loop reads the settings again */
		if (round_began == 0 || ms <= 0 || ConfigReloadPending)
			return;
		ResetLatch(MyLatch);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 ms, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * WaitForNextRound waits, shown as idle in pg_stat_activity, until a
 * commit wakes the worker or a naptime has passed; the latch is reset as
 * the wait ends, before the round.  Commits that came during the round
 * (the count of wakes moved since it began: the latch alone may have been
 * reset by a wait within the round, for a lock say) are served by the
 * next round without a wait, held until quota_sched.pass_min_interval
 * after the last began (HoldNextRound).  So a commit that finds the
 * worker idle is served at once, and a stream of commits by a round every
 * interval, each taking whatever committed since the one before.  No
 * round runs without a commit or a naptime, except when a min_runtime
 * exemption that held a job back, or a lease's fence_grace, ends earlier
 * (wake_at).
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
	/* commits came during the round: a stream, whose next round is held */
	if (QsWorkerWakes() != round_wakes)
		HoldNextRound();
	else
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
	QsClaimWorkerSlot();
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
		/* taken when no round runs too (disabled): else a wake would not wait */
		round_began = GetCurrentTimestamp();
		round_wakes = QsWorkerWakes();
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
