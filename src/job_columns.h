/*-------------------------------------------------------------------------
 *
 * job_columns.h
 *		The columns of quota_sched.job, by name, for the C code that reads
 *		and writes job tuples directly.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_COLUMNS_H
#define QS_JOB_COLUMNS_H

#include "access/tupdesc.h"

typedef enum JobColumn
{
	/* set by the submitter */
	JC_NAME,
	JC_JOB_QUEUE,
	JC_QUOTA_SHARE,
	JC_PRIORITY,
	JC_CAPACITY_UNIT,
	JC_INSTANCE_COUNT,
	JC_PAYLOAD,
	JC_MAX_ATTEMPTS,
	JC_PREEMPTION_RETRIES,
	JC_TIMEOUT,
	JC_CLIENT_TOKEN,
	JC_TAGS,
	/* kept by the system */
	JC_ID,
	JC_OWNER,
	JC_STATE,
	JC_STATUS_REASON,
	JC_STATUS_REASON_AT,
	JC_STOP_REASON,
	JC_STOP_REQUESTED_AT,
	JC_PREEMPTED_FOR,
	JC_PROMISED_AT,
	JC_AGENT,
	JC_LEASE_UNTIL,
	JC_FAILED_ATTEMPTS,
	JC_PREEMPTION_COUNT,
	JC_SUBMITTED_AT,
	JC_QUEUED_AT,
	JC_SCHEDULED_AT,
	JC_STARTED_AT,
	JC_STOPPED_AT,
	JC_COUNT
} JobColumn;

#define JobColumnIsSystem(c) ((c) >= JC_ID)

extern const char *const JobColumnNames[JC_COUNT];

extern AttrNumber JobAttnum(TupleDesc desc, JobColumn column);

#endif							/* QS_JOB_COLUMNS_H */
