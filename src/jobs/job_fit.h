/*-------------------------------------------------------------------------
 *
 * job_fit.h
 *		The notice of a submission that cannot run as configured
 *		(job_fit.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_FIT_H
#define QS_JOB_FIT_H

extern void QsNoticeMisfit(const char *name, const char *queue, const char *share,
						   const char *unit, int32 count, Oid owner);

#endif							/* QS_JOB_FIT_H */
