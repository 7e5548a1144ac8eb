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

#include "fmgr.h"

extern void QsLockQueue(const char *job_queue, bool exclusive);
extern int	QsBeginCallLocks(void);
extern void QsEndCallLocks(int mark);
extern Datum QsCallUnlocked(PGFunction body, FunctionCallInfo fcinfo);
extern char *QsQueueLockHolders(const char *job_queue);

/*
 * QS_UNLOCKED_FUNCTION(name, body): the SQL-callable function name, which
 * runs body (a static function of the file) within a call that releases
 * every queue's lock body took when it returns (QsCallUnlocked).  Every
 * function that users and agents call is made so.
 */
#define QS_UNLOCKED_FUNCTION(name, body) \
	static Datum body(PG_FUNCTION_ARGS); \
	PG_FUNCTION_INFO_V1(name); \
	Datum name(PG_FUNCTION_ARGS) { return QsCallUnlocked(body, fcinfo); }

#endif							/* QS_QUEUE_LOCK_H */
