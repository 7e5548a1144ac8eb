/*-------------------------------------------------------------------------
 *
 * job_columns.h
 *		The columns of quota_sched.job, by name, for the C code that reads
 *		and writes job tuples directly, and the checks the job triggers
 *		share.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_COLUMNS_H
#define QS_JOB_COLUMNS_H

#include "access/tupdesc.h"
#include "commands/trigger.h"
#include "fmgr.h"

/* A job's priority is from 0 to QS_MAX_PRIORITY. */
#define QS_MAX_PRIORITY 9999

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
	JC_INSTANCES_PER_HOST,		/* 0.4, placement (scheduling.md 3.13) */
	JC_SAME_LABEL,				/* 0.4, placement */
	JC_ARRAY_SIZE,				/* 0.4, arrays */
	JC_DEPENDS_ON,				/* 0.4, dependencies (scheduling.md 3.17) */
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
	JC_AGENT_ROLE,
	JC_ARRAY_ID,				/* 0.4, arrays */
	JC_ARRAY_INDEX,
	JC_DEPENDENCIES_WAITING,	/* 0.4, dependencies */
	JC_DEPENDENCY_FAILED,
	JC_HAS_DEPENDENTS,
	/* set by the submitter, then kept by the system */
	JC_MAX_LEASE_LOSSES,
	JC_LEASE_LOSSES,
	JC_CLAIM_REQUEUES,
	JC_CLAIM_BACKOFF_UNTIL,
	JC_COUNT
} JobColumn;

#define JobColumnIsSystem(c) ((c) >= JC_ID && (c) != JC_MAX_LEASE_LOSSES)

extern const char *const JobColumnNames[JC_COUNT];

extern void QsAttnums(TupleDesc desc, const char *table, const char *const *names, int n,
					  AttrNumber *attnums);
extern AttrNumber JobAttnum(TupleDesc desc, JobColumn column);
extern TriggerData *CheckJobTrigger(FunctionCallInfo fcinfo, const char *fn, bool before);
extern void CheckIntRange(const char *column, int64 value, int64 lo, int64 hi);

#endif							/* QS_JOB_COLUMNS_H */
