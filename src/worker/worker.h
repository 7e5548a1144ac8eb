/*-------------------------------------------------------------------------
 *
 * worker.h
 *		The background worker's loop (worker.c): its entry point, which the
 *		launcher (launcher.c) starts by name as a dynamic background worker.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_WORKER_H
#define QS_WORKER_H

PGDLLEXPORT void QsWorkerMain(Datum arg);

#endif							/* QS_WORKER_H */
