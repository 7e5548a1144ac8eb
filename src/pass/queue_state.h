/*-------------------------------------------------------------------------
 *
 * queue_state.h
 *		The state of one queue as a pass reads it (pass_load.c loads it),
 *		and the lookups of its shares and units (queue_state.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_QUEUE_STATE_H
#define QS_QUEUE_STATE_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/jsonb.h"
#include "utils/snapshot.h"

#include "config_store.h"
#include "job_store.h"
#include "over_time.h"
#include "policy.h"
#include "query.h"
#include "scan_floor.h"

/*
 * A reader of the jobs of one share and unit, in batches of growing size,
 * read as the policy asks (QsReadStreamBatch): its RUNNABLE jobs in share
 * order, below a size bound, or its held jobs with no stop pending in
 * victim order, below a priority bound.
 */
typedef struct QsJobReader
{
	bool		held;			/* held jobs; otherwise RUNNABLE ones */
	bool		free_only;		/* RUNNABLE ones without placement constraints
								 * (those with them have a reader of their
								 * own: QsSplitReader) */
	bool		constrained;	/* RUNNABLE ones with placement constraints,
								 * bounded by their classes' bounds (split) */
	struct QsSplitReader *split;	/* constrained: the split reader it is of */
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
 * The RUNNABLE jobs of a share and unit of a placed unit that has jobs
 * with placement constraints, whose skip rule's bound is only for the
 * others (scheduling.md 3.13): two readers, the share and unit's
 * (free_only) and the constrained one, merged in share order, so that
 * neither reads the other's jobs only to pass over them.  head[i] is what
 * reader i gave last and the merge did not give yet (has[i]).
 */
typedef struct QsSplitReader
{
	QsJobReader constrained;
	int			nclasses;		/* the classes of its constrained jobs */
	const struct QsConstrainedClass *classes;	/* the host cache's */
	int32	   *class_below;	/* their bounds, for the constrained reader's
								 * look ahead (QsConstrainedAnyAfter) */
	const QsSkipClass *bounds;	/* the policy's bounds of the classes, as its */
	int			nbounds;		/* last call gave them (QsJobSource.next) */
	QsJob		head[2];		/* 0: the free reader's, 1: the constrained one's */
	bool		has[2];
	int			gave;			/* whose head the merge gave last */
	bool		has_last;		/* it gave one */
	int64		last_id;
} QsSplitReader;

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
	QsSplitReader **split;	/* [share * nunits + unit]: NULL, or the
									 * constrained jobs' reader beside
									 * runnable[] (SourceNext) */
	Interval   *runnable_timeout;	/* NULL: none */
	Interval   *claim_timeout;	/* NULL: none */
	Jsonb	   *env_limits;		/* the environment's capacity map */
	QsCapacities env_caps;		/* env_limits decoded */
	int			units_cap;		/* allocated length of in.units */
	Snapshot	snapshot;		/* of the reads; NULL: they lock rows */
	QsFloorSeen due_floors[2];	/* before snapshot: QsReadDueJobs */
	QsPairFloors pair_floors;	/* before snapshot: QsReadRunnablePairs */
	int		   *pair_cell;		/* [pair of pair_floors]: share * nunits + unit,
								 * -1: not in the state (PairCells) */
	QsJobRow   *heads;			/* the pairs' first jobs, read with them */
	int		   *head_pair;		/* [head]: its pair of pair_floors */
	int			nheads;
	int			heads_per_pair;	/* at most, of each; 0: none read so */
	int64	   *passed_over;	/* the jobs queue_status lists */
	int			npassed_over;
	int			passed_over_passes;	/* queue_status.passed_over_passes */
	List	   *orphans;		/* names of the shares, not in the queue, that
								 * its live jobs name (FindOrphans) */
	const QsCapacities **budget_maps;	/* [share]: its budget, decoded;
										 * NULL: none */
	QsPeriod   *periods;		/* [share]: its budget_period */
	bool		any_budget;		/* a share has a budget */
	bool		any_placed;		/* a unit is placed (scheduling.md 3.13) */
	const struct QsHostSet *host_set;	/* the hosts read (LoadHosts); NULL: none */
	bool		hosts_held_read;	/* what the hosts hold was read: */
	struct QsHostsHeld *hosts_held;	/* held_cache.c's read of it */
	int64		half_life;		/* fair_half_life in microseconds; 0: none */
	struct BorrowCell *borrow_cells;	/* [share * nunits + unit], with a
										 * half-life (borrow_memory.c) */
	QsArray		borrow_changes_read;	/* held_change rows read (tids) */
	bool		borrow_may_keep;	/* the memory read may be kept, */
	uint64		borrow_commits; /* with this count, read before the snapshot
								 * (QsUsageWrites) */
} QsQueueState;

extern int	QsUnitIndex(const QsQueueState *state, const char *unit);
extern int	QsShareIndex(const QsQueueState *state, const char *share);
extern int	QsShareIndexNear(const QsQueueState *state, const char *share, int near);

#endif							/* QS_QUEUE_STATE_H */
