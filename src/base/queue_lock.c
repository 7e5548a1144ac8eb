/*-------------------------------------------------------------------------
 *
 * queue_lock.c
 *		The per-queue lock that serialises passes against other writers
 *		(queue_lock.h): a pass takes it exclusively; claims, reports,
 *		priority changes and terminations take it shared.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/sinvaladt.h"
#include "utils/memutils.h"

#include "identity.h"
#include "queue_lock.h"

/*
 * The locks of job queues (QueueLockTag): advisory locks whose first key is
 * "QS" and whose fourth field no SQL function sets.
 */
#define QS_LOCK_CLASS 0x5153
#define QS_LOCK_SPACE 3

/*
 * QueueLockTag sets the tag of a job queue's lock: an advisory lock of this
 * database keyed by the queue's name, in a space SQL cannot reach.  The
 * advisory lock functions set the tag's fourth field to 1 or 2; this one
 * is 3, so that no session can take (or hold) a queue's lock with
 * pg_advisory_lock() and stall its passes, claims and reports.
 */
static void
QueueLockTag(LOCKTAG *tag, const char *job_queue)
{
	uint32		key = hash_bytes((const unsigned char *) job_queue, strlen(job_queue));

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, QS_LOCK_CLASS, key, QS_LOCK_SPACE);
}

/*
 * The queues' locks taken in shared mode by the call under way
 * (QsBeginCallLocks): session locks, released when the call ends, on an
 * error too (QsEndCallLocks).  In TopMemoryContext.
 */
static LOCKTAG *call_locks;
static int	ncall_locks;
static int	maxcall_locks;
static int	call_depth;

/*
 * QsLockQueue takes the lock of a job queue.  A pass takes it exclusively,
 * until its transaction ends.  Claims, reports, heartbeats, releases,
 * priority changes and terminations take it shared, only within a call
 * (QsBeginCallLocks), which releases it when it returns: no function a
 * user or an agent calls holds a queue's lock past its own return, so that
 * a transaction left open after it keeps no pass waiting.  The rows such a
 * call wrote stay locked until its transaction ends; a pass passes over
 * them, and decides again on those that changed since its snapshot
 * (QsLockJobs).  The lock assigns no transaction id.
 *
 * A pass first tries the lock without waiting, a few times over about
 * 20 ms, backing off from 0.1 ms, and only then waits in the lock's queue.
 * A waiting exclusive request makes every later shared request wait behind
 * it: agents' claims and reports would wait for the agent's call the pass
 * waits for and then for the pass, and a descheduled holder would stall
 * them all.  Trying first, the pass lets them through between its tries,
 * so that they wait only while a pass actually runs.
 */
void
QsLockQueue(const char *job_queue, bool exclusive)
{
	LOCKTAG		tag;

	QueueLockTag(&tag, job_queue);
	if (!exclusive)
	{
		if (call_depth == 0)
			elog(ERROR, "quota_sched: the lock of job queue \"%s\" taken in shared mode outside a call",
				 job_queue);
		if (ncall_locks == maxcall_locks)
		{
			maxcall_locks = Max(8, maxcall_locks * 2);
			call_locks = call_locks == NULL ?
				MemoryContextAlloc(TopMemoryContext, sizeof(LOCKTAG) * maxcall_locks) :
				repalloc(call_locks, sizeof(LOCKTAG) * maxcall_locks);
		}
		(void) LockAcquire(&tag, ShareLock, true, false);
		call_locks[ncall_locks++] = tag;
		return;
	}
	for (long pause_us = 100, waited_us = 0; waited_us < 20000; waited_us += pause_us)
	{
		if (LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
			return;
		pg_usleep(pause_us);
		CHECK_FOR_INTERRUPTS();
		pause_us = Min(pause_us * 2, 2000);
	}
	(void) LockAcquire(&tag, ExclusiveLock, false, false);
}

/*
 * QsBeginCallLocks opens a call within which queues' locks may be taken in
 * shared mode, and returns the mark QsEndCallLocks takes.  Calls may nest.
 */
int
QsBeginCallLocks(void)
{
	call_depth++;
	return ncall_locks;
}

/*
 * QsEndCallLocks ends the call QsBeginCallLocks opened: it releases the
 * queues' locks taken since (session locks outlive an aborted
 * transaction, so the caller calls it on an error too).
 */
void
QsEndCallLocks(int mark)
{
	while (ncall_locks > mark)
		LockRelease(&call_locks[--ncall_locks], ShareLock, true);
	call_depth--;
}

/*
 * QsCallUnlocked runs an SQL-callable function's body within a call
 * (QsBeginCallLocks): every function that a user or an agent may call and
 * that takes a queue's lock is such a body, so that none keeps the lock
 * past its return (test/t/022_open_calls.pl calls each one in a
 * transaction left open).  Like every SQL-callable function of the
 * library, it runs only on the schema of the library's version
 * (QsCheckSchemaVersion).
 */
Datum
QsCallUnlocked(PGFunction body, FunctionCallInfo fcinfo)
{
	int			mark;
	volatile Datum result = (Datum) 0;

	QsCheckSchemaVersion();
	mark = QsBeginCallLocks();

	PG_TRY();
	{
		result = body(fcinfo);
	}
	PG_FINALLY();
	{
		QsEndCallLocks(mark);
	}
	PG_END_TRY();
	return result;
}

/*
 * QsQueueLockHolders returns the process ids of the sessions that hold a
 * queue's lock (in a mode a pass waits for), as a string such as "101,
 * 102", in the caller's memory; "" when none does.
 */
char *
QsQueueLockHolders(const char *job_queue)
{
	LOCKTAG		tag;
	VirtualTransactionId *holders;
	StringInfoData pids;

	QueueLockTag(&tag, job_queue);
	holders = GetLockConflicts(&tag, ExclusiveLock, NULL);
	initStringInfo(&pids);
	for (; VirtualTransactionIdIsValid(*holders); holders++)
	{
		PGPROC	   *proc = BackendIdGetProc(holders->backendId);

		if (proc != NULL)
			appendStringInfo(&pids, "%s%d", pids.len > 0 ? ", " : "", proc->pid);
	}
	return pids.data;
}
