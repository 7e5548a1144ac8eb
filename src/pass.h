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

#include "access/tupdesc.h"
#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/snapshot.h"
#include "utils/tuplestore.h"

#include "job_store.h"
#include "policy.h"

/*
 * A reader of the jobs of one share and unit, in batches of growing size,
 * read as the policy asks (QsReadStreamBatch): its RUNNABLE jobs in share
 * order, below a size bound, or its held jobs with no stop pending in
 * victim order, below a priority bound.
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
	bool		has_last;		/* it gave a job, the last before buf[pos] */
	int64		last_id;		/* the id of that job */
	int64		last_below;		/* the least bound asked for since it */
} QsJobReader;

/*
 * The state of one queue as a pass (or explain, or queue_snapshot) reads it:
 * the policy core's input, and what the applier needs beside it, read in
 * one snapshot taken after the queue's lock (or, in a pass's second try,
 * with its rows locked: QsLoadQueueState).
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
	Snapshot	snapshot;		/* of the reads; NULL: they lock rows */
	int64	   *passed_over;	/* the jobs queue_status lists */
	int			npassed_over;
	int			passed_over_passes;	/* queue_status.passed_over_passes */
} QsQueueState;

/* queue_status lists at most this many jobs passed over */
#define QS_PASSED_OVER_MAX 100
/* after this many passes in a row passing over jobs, a WARNING */
#define QS_PASSED_OVER_WARN 3

/* pass_load.c */
extern bool QsLoadQueueState(QsQueueState *state, const char *queue, TimestampTz now,
							 bool lock_rows);
extern void QsFreeQueueState(QsQueueState *state);
extern int	QsUnitIndex(const QsQueueState *state, const char *unit);
extern int	QsShareIndex(const QsQueueState *state, const char *share);
extern const char *QsAgentOf(const QsQueueState *state, int64 job_id);

/* pass_apply.c */
extern int64 QsApplyDecisions(QsQueueState *state, const QsOutput *out, TimestampTz started);
extern void QsWritePassedOver(QsQueueState *state, const int64 *passed_over, int n);

/* pass.c */
extern List *QsAllQueues(void);
extern int	QsRunQueuePass(const char *queue, bool dry_run, Tuplestorestate *store,
						   TupleDesc desc, TimestampTz *wake_at);

#endif							/* QS_PASS_H */
