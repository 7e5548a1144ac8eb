/*-------------------------------------------------------------------------
 *
 * queue_lock.h
 *		The lock of a job queue, which serialises its passes against the
 *		other writers of its jobs (queue_lock.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_QUEUE_LOCK_H
#define QS_QUEUE_LOCK_H

extern void QsLockQueue(const char *job_queue, bool exclusive);
extern void QsUnlockQueue(const char *job_queue);
extern void QsLockQueueForRead(const char *job_queue);
extern void QsUnlockQueueForRead(const char *job_queue);
extern char *QsQueueLockHolders(const char *job_queue);

#endif							/* QS_QUEUE_LOCK_H */
