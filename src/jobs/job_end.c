/*-------------------------------------------------------------------------
 *
 * job_end.c
 *		The notification of a job's end on quota_sched_job_end (scheduling.md
 *		5.1), sent at the commit of the transaction that ends the job, when
 *		a session of the server listens on that channel (issue 42).
 *
 * A NOTIFY takes PostgreSQL's one lock for notifications from just before
 * its transaction's commit until the commit is done, WAL flush included:
 * transactions that notify commit one at a time.  With a NOTIFY in every
 * report that ends a job, agents' reports could not share a WAL flush
 * (bench/README.md: with 10,000 jobs submitted in batches, 843 jobs/s end
 * to end against 1,045 without it).  So the ends a transaction makes wait
 * in a list, by subtransaction level, until its pre-commit, which notifies
 * them only if a backend of the server ran LISTEN quota_sched_job_end (the
 * library's utility hook counts such backends until they exit; UNLISTEN
 * does not uncount them: a count too high costs only notifications).
 *
 * Exactness.  A client that LISTENs, commits, and then reads a job not
 * ended yet must be notified of its end.  A commit that found no listener
 * is counted as unheard until it is done (its end visible); a backend's
 * first LISTEN counts it among the listeners, then waits until no unheard
 * commit runs; a commit that looks after the count notifies.  So an end
 * that was not notified is visible to what the client reads after its
 * LISTEN.  Without the library preloaded (no hook, no shared memory) every
 * end is notified, as before: a LISTEN could come from any backend.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/async.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/memutils.h"
#include "utils/wait_event.h"

#include "job_end.h"

#define QS_JOB_END_CHANNEL "quota_sched_job_end"

typedef struct JobEndShared
{
	slock_t		mutex;
	int			listeners;		/* backends counted (QsJobEndNoteListen) */
	int			unheard;		/* commits that found none, not done yet */
	ConditionVariable done;		/* broadcast as unheard goes down */
} JobEndShared;

/* An end waiting for its transaction's pre-commit. */
typedef struct PendingEnd
{
	int			level;			/* the subtransaction level that made it */
	char	   *payload;
} PendingEnd;

static JobEndShared *shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static List *pending = NIL;		/* of PendingEnd, in TopTransactionContext */
static bool counted = false;	/* this backend is among the listeners */
static bool caught_up = false;	/* and waited for the unheard commits */
static bool unheard = false;	/* this transaction's commit is unheard */

static void
JobEndShmemRequest(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(JobEndShared)));
}

static void
JobEndShmemStartup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	shared = ShmemInitStruct("quota_sched job ends", sizeof(JobEndShared), &found);
	if (!found)
	{
		SpinLockInit(&shared->mutex);
		shared->listeners = 0;
		shared->unheard = 0;
		ConditionVariableInit(&shared->done);
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * QsJobEndRegister sets up the shared memory of the listeners, when the
 * library is preloaded.
 */
void
QsJobEndRegister(void)
{
	if (!process_shared_preload_libraries_in_progress)
		return;
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = JobEndShmemRequest;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = JobEndShmemStartup;
}

/* QsJobEndQueue notes the end of a job (its payload), to notify at commit. */
void
QsJobEndQueue(const char *payload)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	PendingEnd *end = palloc(sizeof(PendingEnd));

	end->level = GetCurrentTransactionNestLevel();
	end->payload = pstrdup(payload);
	pending = lappend(pending, end);
	MemoryContextSwitchTo(old);
}

/*
 * Notify sends the ends noted: always (heard: there may be a listener),
 * or, when no backend listens, none, the commit then counted as unheard
 * until it is done.
 */
static void
Notify(bool always)
{
	bool		heard = true;
	ListCell   *lc;

	if (pending == NIL)
		return;
	if (shared != NULL && !always)
	{
		SpinLockAcquire(&shared->mutex);
		heard = shared->listeners > 0;
		if (!heard)
			shared->unheard++;
		SpinLockRelease(&shared->mutex);
		unheard = !heard;
	}
	if (heard)
		foreach(lc, pending)
			Async_Notify(QS_JOB_END_CHANNEL, ((PendingEnd *) lfirst(lc))->payload);
	pending = NIL;
}

/*
 * QsJobEndXactEvent notifies the ends at pre-commit (at a PREPARE always,
 * which PostgreSQL then refuses, as it refuses any NOTIFY), and forgets
 * them and the unheard commit at the end.
 */
void
QsJobEndXactEvent(XactEvent event)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			Notify(false);
			break;
		case XACT_EVENT_PRE_PREPARE:
			Notify(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PARALLEL_ABORT:
			pending = NIL;
			if (unheard)
			{
				unheard = false;
				SpinLockAcquire(&shared->mutex);
				shared->unheard--;
				SpinLockRelease(&shared->mutex);
				ConditionVariableBroadcast(&shared->done);
			}
			break;
		default:
			break;
	}
}

/*
 * QsJobEndSubXactEvent forgets the ends of a subtransaction rolled back,
 * and gives those of one committed to its parent.
 */
void
QsJobEndSubXactEvent(SubXactEvent event)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	foreach(lc, pending)
	{
		PendingEnd *end = lfirst(lc);

		if (end->level < level)
			continue;
		if (event == SUBXACT_EVENT_COMMIT_SUB)
			end->level = level - 1;
		else
			pending = foreach_delete_current(pending, lc);
	}
}

/* Uncount takes an exiting backend out of the listeners. */
static void
Uncount(int code, Datum arg)
{
	SpinLockAcquire(&shared->mutex);
	shared->listeners--;
	SpinLockRelease(&shared->mutex);
}

/*
 * QsJobEndNoteListen, for a LISTEN quota_sched_job_end (the utility hook,
 * before the statement runs), counts the backend among the listeners the
 * first time, then waits until no unheard commit runs (interruptibly: a
 * commit waiting for a synchronous standby may take long).
 */
void
QsJobEndNoteListen(Node *stmt)
{
	if (shared == NULL || caught_up || !IsA(stmt, ListenStmt) ||
		strcmp(((ListenStmt *) stmt)->conditionname, QS_JOB_END_CHANNEL) != 0)
		return;
	if (!counted)
	{
		SpinLockAcquire(&shared->mutex);
		shared->listeners++;
		SpinLockRelease(&shared->mutex);
		counted = true;
		before_shmem_exit(Uncount, (Datum) 0);
	}
	ConditionVariablePrepareToSleep(&shared->done);
	for (;;)
	{
		int			n;

		SpinLockAcquire(&shared->mutex);
		n = shared->unheard;
		SpinLockRelease(&shared->mutex);
		if (n == 0)
			break;
		ConditionVariableSleep(&shared->done, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	caught_up = true;
}
