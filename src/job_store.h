/*-------------------------------------------------------------------------
 *
 * job_store.h
 *		The one way to quota_sched.job: every read and write of jobs by the
 *		extension's C code goes through these functions (job_event is
 *		written by the history trigger, job_history.c, on every change of
 *		state), those that join jobs with the configuration included (a
 *		queue's known capacity units, the team of a job's share).  Jobs are
 *		read into a typed row, decoded by column name; each statement sits
 *		next to its saved plan (query.h).
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
	" coalesce(preemption_retries, -1) AS preemption_retries"

/* Decodes the rows of one result set by column name (QsJobDecoderInit). */
typedef struct QsJobDecoder
{
	TupleDesc	desc;
	int			attnums[24];	/* of the fields known (job_store.c), 0: not selected */
} QsJobDecoder;

extern void QsJobDecoderInit(QsJobDecoder *decoder, TupleDesc desc);
extern void QsJobDecode(const QsJobDecoder *decoder, HeapTuple tuple, QsJobRow *row);

/* A batch of jobs read, in the memory of the caller's context. */
typedef struct QsJobRows
{
	int			n;
	QsJobRow   *rows;
} QsJobRows;

/* What a pass reads (job_store_pass.c). */
typedef enum QsJobSet
{
	QS_DUE_JOBS,				/* held, lease expired or past the deadline */
	QS_VICTIM_JOBS,				/* held, stopping for a promised job */
	QS_PROMISED_JOBS,			/* RUNNABLE with a promise */
	QS_EXPIRED_JOBS				/* RUNNABLE, past the runnable timeout */
} QsJobSet;

/* At most this many held jobs of each kind are due in one pass. */
#define QS_DUE_JOBS_MAX 1000

extern QsJobRows QsReadJobSet(const char *queue, QsJobSet set, Interval *runnable_timeout);
extern List *QsReadRunnablePairs(const char *queue);
extern bool QsQueueHasRunnable(const char *queue);

#define QS_STREAM_BATCHES 4
extern int	QsStreamBatchSize(int batch);
extern QsJobRows QsReadStreamBatch(bool held, const char *queue, const char *share,
								   const char *unit, const QsJob *after, int64 below, int batch);
extern bool QsRunnableAnyAfter(const char *queue, const char *share, const char *unit,
							   const QsJob *after, int32 below);
extern QsJobRows QsReadRunnableHeads(const char *queue, const char *const *shares,
									 const char *const *units, int n, int *per_pair);
extern QsJobRows QsReadSmallestRunnable(const char *queue, const char *share,
										const char *unit, int32 at_most, int max);

/* What a pass writes (job_store_pass.c). */
extern void QsSetPassReads(Snapshot snapshot, bool lock_rows);
extern int	QsLockJobs(Datum ids, int64 *locked_out, int max);
extern void QsWriteStops(const QsOutput *out, TimestampTz now);
extern void QsWriteEnds(const QsOutput *out, TimestampTz now);
extern void QsWriteDispatches(const QsOutput *out, TimestampTz now);
extern void QsWritePromises(const int64_t *job_ids, int n, bool is_set, TimestampTz now);

/* A limit of a share and unit, for misconfiguration (scheduling.md 3.7). */
typedef struct QsMisfitLimit
{
	const char *quota_share;
	const char *capacity_unit;
	int64		env_max;
	int64		quota_max;
} QsMisfitLimit;

extern void QsWriteMisconfiguration(const char *queue, const QsMisfitLimit *limits,
									int nlimits, TimestampTz now);

/* Single jobs, and the agents' set operations (job_store.c). */
extern bool QsJobHasAgentRole(void);
extern bool QsLockJob(int64 job_id, QsJobRow *row);
extern bool QsReadJobPosition(int64 job_id, QsJobRow *row, int64 *position_in_share);
extern void QsEndAttempt(int64 job_id, QsAction action, QsCounter counter,
						 const char *reason);
typedef enum QsJobChange
{
	QS_CHANGE_RUNNING,			/* its agent reports RUNNING */
	QS_CHANGE_SUCCEEDED,		/* its agent reports SUCCEEDED */
	QS_CHANGE_TERMINATE			/* a user terminates a claimed job */
} QsJobChange;

extern void QsChangeJob(int64 job_id, QsJobChange change, const char *reason);
extern Datum QsReturnJob(int64 job_id);
extern Datum QsClaimJobs(const char *queue, const char *unit, int max_jobs,
						 int max_instances, const char *agent, const char *agent_role,
						 Interval *lease, bool start);
extern void QsEmitJobs(ReturnSetInfo *rsinfo, Datum ids);
extern Datum QsLockQueuesOfAgent(const char *agent);
extern void QsExtendLeases(ReturnSetInfo *rsinfo, const char *agent, const char *agent_role,
						   Interval *lease, Interval *stop_timeout, Datum queues);

/* What the agents' and users' functions check their arguments against (job_store.c). */
extern bool QsQueueKnowsUnit(const char *queue, const char *unit, bool *unit_known);
extern char *QsJobShareTeam(int64 job_id);

#endif							/* QS_JOB_STORE_H */
