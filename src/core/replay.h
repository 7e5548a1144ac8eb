/*-------------------------------------------------------------------------
 *
 * replay.h
 *		What-if: a recorded workload run through the
 *		passes of the policy core on a simulated clock, in an ideal world
 *		(a pass at every arrival, end, priority change and exemption end; a
 *		dispatched job runs at once; a stop is acknowledged at once; no
 *		lease runs out; a preempted attempt starts over).  Pure C: the shell
 *		reads the workload and the configuration, and reports the results.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_REPLAY_H
#define QS_REPLAY_H

#include "over_time.h"
#include "policy.h"

/* A job of the workload. */
typedef struct QsReplayJob
{
	int64_t		id;				/* the recorded job's id */
	int			share;
	int			unit;
	int32_t		count;
	int32_t		priority;		/* at its arrival */
	QsTime		arrival;		/* when it enters the replay */
	QsTime		queued_at;		/* its place in share order */
	QsTime		work;			/* running time its last attempt needs;
								 * QS_UNBOUNDED: it runs past the end */
	bool		fails;			/* its last attempt ended FAILED */
	QsTime		leave_at;		/* ends FAILED then if it has not ended
								 * (terminated); QS_NO_TIME: never */
	QsTime		timeout;		/* QS_NO_TIME: none */
	int32_t		max_attempts;
	int32_t		failed_attempts;	/* at its arrival */
	int32_t		preemption_retries; /* -1: unlimited */
	int32_t		preemption_count;	/* at its arrival */
	int			nchanges;		/* its priority changes after its arrival */
	const QsTime *change_at;	/* in order of time */
	const int32_t *change_to;
} QsReplayJob;

/* The configuration a replay runs under. */
typedef struct QsReplayConfig
{
	bool		env_enabled;
	bool		fair;
	QsTime		half_life;		/* fair_half_life; 0: none */
	QsTime		runnable_timeout;	/* QS_NO_TIME: none */
	int			nunits;
	const QsUnit *units;
	int			nshares;
	const QsShare *shares;		/* their spent is the replay's own */
	const QsPeriod *periods;	/* [share]: its budget_period */
	const double *spent;		/* [share * nunits + unit] at the start, in
								 * the period that holds it; NULL: 0 */
	const double *recent_borrow;	/* [share * nunits + unit] at the start;
									 * NULL: 0 */
} QsReplayConfig;

/* What became of a job. */
typedef struct QsReplayResult
{
	QsTime		first_dispatch; /* QS_NO_TIME: never dispatched */
	QsJobState	state;			/* at the end: SUCCEEDED or FAILED when it
								 * ended, else RUNNABLE or RUNNING */
	QsTime		ended_at;		/* QS_NO_TIME: it did not end */
	int32_t		preemptions;	/* its attempts a preemption ended */
	int64_t		preempted;		/* jobs it preempted (attempts it ended) */
	double		held;			/* instance-seconds it held */
	double		lost;			/* of those, by attempts a preemption ended */
} QsReplayResult;

typedef struct QsReplayOutput
{
	QsReplayResult *jobs;		/* [job], in the order given */
	double	   *borrowed;		/* [share * nunits + unit]: instance-seconds
								 * borrowed */
	int64_t		passes;
	int64_t		dispatches;
} QsReplayOutput;

/*
 * alloc gives zeroed memory that lasts the replay; pass_alloc memory for
 * one pass, all of which pass_reset releases after each pass.
 */
typedef struct QsReplayMemory
{
	void	   *(*alloc) (void *arg, size_t size);
	void	   *(*pass_alloc) (void *arg, size_t size);
	void		(*pass_reset) (void *arg);
	void	   *arg;
} QsReplayMemory;

/* The most passes at one instant before time moves on (a fixed point). */
#define QS_REPLAY_MAX_ROUNDS 64

extern void QsReplay(const QsReplayConfig *config, int njobs, const QsReplayJob *jobs,
					 QsTime from, QsTime to, const QsReplayMemory *memory,
					 QsReplayOutput *out);

#endif							/* QS_REPLAY_H */
