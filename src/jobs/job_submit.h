/*-------------------------------------------------------------------------
 *
 * job_submit.h
 *		The submission trigger's hook of the executor (job_submit.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_SUBMIT_H
#define QS_JOB_SUBMIT_H

extern void QsInstallExecutorHook(void);

#endif							/* QS_JOB_SUBMIT_H */
