/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker and its launcher (worker.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_WORKER_H
#define QS_WORKER_H

extern void QsRegisterWorker(void);
extern bool QsWorkerRunning(void);
extern void QsWakeWorkerAtCommit(void);
extern void QsWorkerXactEnd(bool committed);

#endif							/* QS_WORKER_H */
