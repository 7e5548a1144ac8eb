/*-------------------------------------------------------------------------
 *
 * job_store_pass.h
 *		The job store's reads and writes for a pass (job_store_pass.c): the
 *		sets of jobs a pass reads, the streams of a share and unit's
 *		RUNNABLE and held jobs, and the set-based writes of its decisions
 *		(the end of an attempt also for one job, as an agent's report or a
 *		user's terminate makes it).  The rules of job_store.h hold for them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_STORE_PASS_H
#define QS_JOB_STORE_PASS_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

#include "job_store.h"
#include "policy.h"
#include "scan_floor.h"

/* A batch of jobs read, in the memory of the caller's context. */
typedef struct QsJobRows
{
	int			n;
	QsJobRow   *rows;
} QsJobRows;

/* What a pass reads. */
typedef enum QsJobSet
{
	QS_DUE_JOBS,				/* held, lease expired or past the deadline */
	QS_VICTIM_JOBS,				/* held, stopping for a promised job */
	QS_PROMISED_JOBS,			/* RUNNABLE with a promise */
	QS_EXPIRED_JOBS,			/* RUNNABLE, misconfigured past the runnable
								 * timeout */
	QS_NO_AGENT_EXPIRED_JOBS,	/* RUNNABLE, NO_AGENT_FITS past it */
	QS_DEPENDENCY_FAILED_JOBS	/* RUNNABLE, a dependency FAILED (the first
								 * QS_DUE_JOBS_MAX) */
} QsJobSet;

/* At most this many held jobs of each kind are due in one pass. */
#define QS_DUE_JOBS_MAX 1000

extern QsJobRows QsReadJobSet(const char *queue, QsJobSet set, Interval *interval);
extern QsJobRows QsReadDueJobs(const char *queue, Interval *claim_timeout,
							   const QsFloorSeen *seen);
extern List *QsReadRunnablePairs(QsPairFloors *pf, QsJobRows *heads, int **pair_of,
								 int *per_pair);
/* A class of placement constraints of a share and unit's RUNNABLE jobs. */
typedef struct QsConstrainedClass
{
	char	   *share;
	char	   *unit;
	int32		per_host;		/* 0: none */
	char	   *same_label;		/* NULL: none */
	int32		smallest;		/* the instances of its smallest job */
} QsConstrainedClass;

extern QsConstrainedClass *QsReadConstrainedClasses(const char *queue, int *n);
extern bool QsConstrainedAnyAfter(const char *queue, const char *share, const char *unit,
								  const QsJob *after, const QsConstrainedClass *classes,
								  const int32 *below, int nclasses);
extern bool QsQueueHasRunnable(const char *queue);

#define QS_STREAM_BATCHES 4
extern int	QsStreamBatchSize(int batch);
extern QsJobRows QsReadStreamBatch(bool held, bool constrained, const char *queue, const char *share,
								   const char *unit, const QsJob *after, int64 below, int batch);
extern bool QsRunnableAnyAfter(const char *queue, const char *share, const char *unit,
							   const QsJob *after, int32 below);
extern QsJobRows QsReadRunnableHeads(bool constrained, const char *queue,
									 const char *const *shares, const char *const *units,
									 const QsFloorKeyValue *const *starts, int n,
									 int at_least, int *per_pair);
extern QsJobRows QsReadSmallestRunnable(const char *queue, const char *share,
										const char *unit, int32 at_most, int max);

/* What a pass writes. */
extern void QsSetPassReads(Snapshot snapshot, bool lock_rows);
extern int	QsLockJobs(Datum ids, int64 *locked_out, int max, int *nlocked);
extern void QsWriteStops(const QsOutput *out, TimestampTz now);
extern void QsWriteEnds(const QsOutput *out, TimestampTz now);
extern void QsEndAttempt(int64 job_id, QsAction action, QsCounter counter,
						 const char *reason);
extern void QsWritePromises(const int64_t *job_ids, int n, bool is_set, TimestampTz now);

/*
 * The limits of a share and unit, for misconfiguration (scheduling.md 3.7)
 * and NO_AGENT_FITS (3.10).
 */
typedef struct QsMisfitLimit
{
	const char *quota_share;
	const char *capacity_unit;
	int64		env_max;
	int64		quota_max;
	int64		agent_max;
	const char *budget_reason;	/* BUDGET_EXHAUSTED ...; NULL: within budget */
} QsMisfitLimit;

extern void QsWriteMisconfiguration(const char *queue, const QsMisfitLimit *limits,
									int nlimits, TimestampTz now);

#endif							/* QS_JOB_STORE_PASS_H */
