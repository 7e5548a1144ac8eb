/*-------------------------------------------------------------------------
 *
 * job_parts.h
 *		Stops of jobs placed on hosts (job_parts.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_PARTS_H
#define QS_JOB_PARTS_H

#include "policy.h"

extern void QsNotifyStop(int64 job_id, const char *agent, QsStop stop);
extern void QsDropUnclaimedParts(Datum job_ids);

#endif							/* QS_JOB_PARTS_H */
