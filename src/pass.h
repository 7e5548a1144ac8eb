/*-------------------------------------------------------------------------
 *
 * pass.h
 *		The PostgreSQL shell around the policy core: the loader of a queue's
 *		state, the applier, and the pass of one queue that ties them
 *		together.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_PASS_H
#define QS_PASS_H

#include "postgres.h"

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/tuplestore.h"

#include "job_store.h"
#include "policy.h"

/*
 * A reader of the jobs of one share and unit, in batches of growing size,
 * read as the policy asks: its RUNNABLE jobs in share order
 * (QsReadRunnableBatch, below a size bound), or its held jobs with no stop
 * pending in victim order (QsReadHeldBatch, below a priority bound).
 */
typedef struct QsJobReader
{
	bool		held;			/* held jobs; otherwise RUNNABLE ones */
	bool		has_jobs;		/* the share may have such jobs of the unit */
	QsJob	   *buf;			/* the batch read last */
	int			cap;
	int			nbuf;
	int			pos;
	int			batch;			/* index of the next batch size */
	int64		fetched_below;	/* the bound the batch was read with */
	bool		exhausted;		/* the last batch was the end */
	bool		fresh;			/* buf holds the first batch, unread */
} QsJobReader;

/*
 * The state of one queue as a pass (or explain, or queue_snapshot) reads it:
 * the policy core's input, and what the applier needs beside it.  (Not an
 * MVCC snapshot: it is read with the statements' own snapshots, after the
 * queue's lock.)
 */
typedef struct QsQueueState
{
	MemoryContext cxt;
	char	   *queue;
	QsInput		in;
	struct HTAB *agents;		/* job id -> agent, of the held jobs read */
	QsJobReader *runnable;		/* [share * nunits + unit] */
	QsJobReader *held;			/* [share * nunits + unit] */
	Interval   *runnable_timeout;	/* NULL: none */
	Jsonb	   *env_limits;		/* the environment's capacity map */
	int			units_cap;		/* allocated length of in.units */
} QsQueueState;

/* pass_load.c */
extern bool QsLoadQueueState(QsQueueState *state, const char *queue, TimestampTz now);
extern void QsFreeQueueState(QsQueueState *state);
extern int	QsUnitIndex(const QsQueueState *state, const char *unit);
extern int	QsShareIndex(const QsQueueState *state, const char *share);
extern const char *QsAgentOf(const QsQueueState *state, int64 job_id);

/* pass_apply.c */
extern int64 QsApplyDecisions(QsQueueState *state, const QsOutput *out, TimestampTz started);

/* pass.c */
extern List *QsAllQueues(void);
extern int	QsRunQueuePass(const char *queue, bool dry_run, Tuplestorestate *store,
						   TupleDesc desc, TimestampTz *wake_at);

#endif							/* QS_PASS_H */
