/*-------------------------------------------------------------------------
 *
 * pass.h
 *		The PostgreSQL shell around the policy core: the snapshot loader,
 *		the applier, and the pass of one queue that ties them together.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PASS_H
#define QS_PASS_H

#include "postgres.h"

#include "executor/spi.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "policy.h"

/* A RUNNABLE stream of one share and unit, read in growing batches. */
#define QS_STREAM_BATCHES 4

typedef struct QsStreamCursor
{
	bool		has_jobs;		/* the share has RUNNABLE jobs of the unit */
	QsJob	   *buf;			/* the batch read last */
	int			cap;
	int			nbuf;
	int			pos;
	int			batch;			/* index of the next batch size */
	int32		fetched_below;	/* the skip bound the batch was read with */
	bool		exhausted;		/* the last batch was the end */
} QsStreamCursor;

/* The snapshot of one queue, and what the applier needs beside it. */
typedef struct QsSnapshot
{
	MemoryContext cxt;
	char	   *queue;
	QsInput		in;
	char	  **held_agents;	/* agent of each held job, or NULL */
	QsStreamCursor *streams;	/* [share * nunits + unit] */
	Interval   *runnable_timeout;	/* NULL: none */
	Jsonb	   *env_limits;		/* the environment's capacity map */
	int			units_cap;		/* allocated length of in.units */
} QsSnapshot;

/* pass_load.c */
extern bool QsLoadSnapshot(QsSnapshot *snap, const char *queue, TimestampTz now);
extern void QsCloseSnapshot(QsSnapshot *snap);
extern int	QsUnitIndex(const QsSnapshot *snap, const char *unit);
extern int	QsShareIndex(const QsSnapshot *snap, const char *share);
extern SPIPlanPtr QsPreparedPlan(int slot, const char *sql, int nargs, const Oid *types);

/* pass_apply.c */
extern int64 QsApplyDecisions(QsSnapshot *snap, const QsOutput *out, TimestampTz started);
extern void QsApplyEnds(const QsOutput *out, TimestampTz now);

/* pass.c */
extern List *QsAllQueues(void);
extern int	QsRunQueuePass(const char *queue, bool dry_run, Tuplestorestate *store,
						   TupleDesc desc);

/* Slots of prepared plans (QsPreparedPlan). */
enum
{
	QS_PLAN_QUEUE,
	QS_PLAN_SHARES,
	QS_PLAN_HELD,
	QS_PLAN_PROMISED,
	QS_PLAN_EXPIRED,
	QS_PLAN_STREAM_PAIRS,
	QS_PLAN_STREAM,				/* QS_STREAM_BATCHES slots */
	QS_PLAN_STREAM_LAST = QS_PLAN_STREAM + QS_STREAM_BATCHES - 1,
	QS_PLAN_SMALLEST,
	QS_PLAN_STOPS,
	QS_PLAN_ENDS,
	QS_PLAN_DISPATCHES,
	QS_PLAN_LAPSES,
	QS_PLAN_PROMISES,
	QS_PLAN_MISCONFIGURED,
	QS_PLAN_MISCONFIGURED_SET,
	QS_PLAN_PASS_LOG,
	QS_PLAN_PASS_ID,
	QS_PLAN_COUNT_SLOTS
};

/* The columns of a job the policy reads, in QsJobFromSpi's order. */
#define QS_JOB_COLUMNS \
	"id, quota_share, capacity_unit, instance_count, priority, state, queued_at," \
	" scheduled_at, promised_at, lease_until, started_at + timeout, stop_reason," \
	" agent, preempted_for, failed_attempts, max_attempts, preemption_count," \
	" coalesce(preemption_retries, -1)"

#endif							/* QS_PASS_H */
