/*-------------------------------------------------------------------------
 *
 * job_submit.h
 *		The submission trigger's hook of the executor, and the expansion
 *		of an array (job_submit.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_SUBMIT_H
#define QS_JOB_SUBMIT_H

#include "access/htup.h"
#include "access/tupdesc.h"

extern void QsInstallExecutorHook(void);
extern void QsExpandArray(HeapTuple job, TupleDesc desc);

#endif							/* QS_JOB_SUBMIT_H */
