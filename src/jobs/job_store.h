/*-------------------------------------------------------------------------
 *
 * job_store.h
 *		The one way to quota_sched.job: every read and write of jobs by the
 *		extension's C code goes through these functions and those of a pass
 *		(job_store_pass.h); job_event is written by the history trigger,
 *		job_history.c, on every change of state.  The reads that join jobs
 *		with the configuration are here too (a queue's known capacity
 *		units, the team of a job's share).  Jobs are read into a typed row,
 *		decoded by column name; each statement sits next to its saved plan
 *		(query.h).  This header: the typed row and its decoder, single jobs
 *		and the agents' set operations (job_store.c).
 *
 * Callers are connected to SPI and run as the extension's owner; writers
 * have marked their writes as the system's (QsBeginSystemWrite) and hold
 * the job's queue lock (shared, or exclusively in a pass).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_STORE_H
#define QS_JOB_STORE_H

#include "access/htup.h"
#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "utils/snapshot.h"

#include "policy.h"

/* A job as the shell reads it. */
typedef struct QsJobRow
{
	QsJob		job;			/* the policy's view; share and unit are -1 */
	QsJobState	state;
	char	   *job_queue;
	char	   *quota_share;
	char	   *capacity_unit;
	char	   *owner;
	char	   *agent;			/* NULL: unclaimed */
	char	   *agent_role;		/* the role that claimed it; NULL: unclaimed, or
								 * claimed before 0.2 */
	char	   *status_reason;
} QsJobRow;

/* The columns of a job that a pass reads (QsJobRow.job and the agent). */
#define QS_JOB_POLICY_COLUMNS \
	"id, instance_count, priority, state, queued_at, scheduled_at, promised_at," \
	" lease_until, quota_sched.attempt_deadline(started_at, timeout) AS deadline," \
	" stop_reason, agent," \
	" preempted_for, failed_attempts, max_attempts, preemption_count," \
	" coalesce(preemption_retries, -1) AS preemption_retries," \
	" lease_losses, max_lease_losses, claim_requeues, claim_backoff_until," \
	" coalesce(instances_per_host, 0) AS instances_per_host, same_label," \
	" part_agents, part_instances, dependencies_waiting, dependency_failed, status_reason"

/* Decodes the rows of one result set by column name (QsJobDecoderInit). */
typedef struct QsJobDecoder
{
	TupleDesc	desc;
	int			attnums[32];	/* of the fields known (job_store.c), 0: not selected */
} QsJobDecoder;

extern void QsJobDecoderInit(QsJobDecoder *decoder, TupleDesc desc);
extern void QsJobDecode(const QsJobDecoder *decoder, HeapTuple tuple, QsJobRow *row);

/* Single jobs, and the agents' set operations. */
extern void QsLockJob(int64 job_id, QsJobRow *row);
extern bool QsReadJobPosition(int64 job_id, QsJobRow *row, int64 *position_in_share);
typedef enum QsJobChange
{
	QS_CHANGE_RUNNING,			/* its agent reports RUNNING */
	QS_CHANGE_SUCCEEDED,		/* its agent reports SUCCEEDED */
	QS_CHANGE_LATE_SUCCEEDED,	/* ... of the attempt whose lease ran out */
	QS_CHANGE_TERMINATE			/* a user terminates a claimed job */
} QsJobChange;

extern void QsChangeJob(int64 job_id, QsJobChange change, const char *reason);
extern Datum QsReturnJob(int64 job_id);
extern Datum QsClaimJobs(const char *queue, const char *unit, int max_jobs,
						 int max_instances, const char *agent, const char *agent_role,
						 Interval *lease, bool start, int64 *instances, bool *left);
extern void QsClaimIds(Datum ids, const char *agent, const char *agent_role,
					   Interval *lease, bool start);
extern Datum QsHeldOf(const int64 *ids, int n, const char *agent, const char *queue,
					  int *held, int64 *instances);
extern bool QsJobsClaimable(const char *queue, const char *unit);
extern void QsEmitJobs(ReturnSetInfo *rsinfo, Datum ids);
extern Datum QsLockQueuesOfAgent(const char *agent);
extern void QsExtendLeases(ReturnSetInfo *rsinfo, const char *agent, const char *agent_role,
						   Interval *lease, Interval *stop_timeout, Datum queues);

/* What the agents' and users' functions check their arguments against. */
extern bool QsQueueKnowsUnit(const char *queue, const char *unit, bool *unit_known);
extern char *QsJobShareTeam(int64 job_id);
extern int32 QsJobArrayIndex(int64 job_id);

#endif							/* QS_JOB_STORE_H */
