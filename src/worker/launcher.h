/*-------------------------------------------------------------------------
 *
 * launcher.h
 *		The launcher of the background worker, and the shared-memory slot
 *		through which commits wake the worker (launcher.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_LAUNCHER_H
#define QS_LAUNCHER_H

/* the worker's settings (launcher.c) */
extern bool QsEnabled;
extern bool QsWakeOnCommit;
extern int	QsNaptimeMs;
extern int	QsPassMinIntervalMs;
extern char *QsDatabase;

extern void QsDefineWorkerSettings(void);
extern void QsRegisterWorker(void);
extern void QsClaimWorkerSlot(void);
extern bool QsWorkerRunning(void);
extern void QsWakeWorkerAtCommit(void);
extern void QsWorkerXactEnd(bool committed);
extern uint64 QsWorkerWakes(void);

#endif							/* QS_LAUNCHER_H */
