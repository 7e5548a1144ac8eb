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
 * QsLockQueue takes the lock of a job queue until the transaction ends.  A
 * pass takes it exclusively; claims, reports, priority changes and
 * terminations take it shared, so none of them interleaves with a pass.
 * The lock assigns no transaction id.
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
	if (exclusive)
	{
		long		pause_us = 100;

		for (long waited_us = 0; waited_us < 20000; waited_us += pause_us)
		{
			if (LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL)
				return;
			pg_usleep(pause_us);
			CHECK_FOR_INTERRUPTS();
			pause_us = Min(pause_us * 2, 2000);
		}
	}
	(void) LockAcquire(&tag, exclusive ? ExclusiveLock : ShareLock, false, false);
}

/*
 * QsLockQueueForRead takes a queue's lock in shared mode for the session,
 * so that the caller can release it (QsUnlockQueueForRead) before its
 * transaction ends: a dry run reads the queue with no pass interleaving,
 * and holds nobody up once it has read.  The caller releases it on error
 * too: a session lock outlives an aborted transaction.
 */
void
QsLockQueueForRead(const char *job_queue)
{
	LOCKTAG		tag;

	QueueLockTag(&tag, job_queue);
	(void) LockAcquire(&tag, ShareLock, true, false);
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

/*
 * QsUnlockQueue releases, before the transaction ends, the shared lock of a
 * job queue that QsLockQueue took: a user's function does not hold a
 * queue's lock past its own return, so that a transaction a user leaves
 * open keeps no pass waiting (the rows it wrote stay locked until it ends;
 * a pass passes over them, QsLockJobs).  Taken twice in a transaction (a
 * report, then a terminate), the lock stays held once.
 */
void
QsUnlockQueue(const char *job_queue)
{
	LOCKTAG		tag;

	QueueLockTag(&tag, job_queue);
	LockRelease(&tag, ShareLock, false);
}

/*
 * QsUnlockQueueForRead releases the session lock QsLockQueueForRead took.
 */
void
QsUnlockQueueForRead(const char *job_queue)
{
	LOCKTAG		tag;

	QueueLockTag(&tag, job_queue);
	LockRelease(&tag, ShareLock, true);
}
