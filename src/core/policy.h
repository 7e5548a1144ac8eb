/*-------------------------------------------------------------------------
 *
 * policy.h
 *		The scheduling policy of quota_sched as a pure function: a snapshot
 *		of one job queue in, the decisions of one pass out (scheduling.md 3).
 *
 * Nothing here knows PostgreSQL: no SPI, no catalogs, no clock (time is an
 * input), no global state.  The shell loads the snapshot (pass_load.c) and
 * applies the decisions (pass_apply.c); unit tests and the simulator drive
 * it directly.
 * Memory comes from the caller's allocator and is never freed here.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_POLICY_H
#define QS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "words.h"

/* Microseconds; the shell passes PostgreSQL TimestampTz values as they are. */
typedef int64_t QsTime;

#define QS_NO_TIME INT64_MIN
#define QS_UNBOUNDED INT64_MAX

/*
 * The words of the policy (job states, stops, actions, holds, strategies
 * and the rest) and their enums are in words.h, their one home.
 */

typedef struct QsUnit
{
	const char *name;
	int64_t		env_limit;		/* E(u) */
	int64_t		unowned_held;	/* held by jobs of shares that do not exist */

	/*
	 * Placement (scheduling.md 3.13): a unit is placed when the queue has a
	 * live agent registered for it and no live, ACTIVE agent of it is
	 * unbounded.  Its hosts are then its live, ACTIVE, bounded agents, in
	 * the C order of their names (QsPrepareHosts checks and indexes them);
	 * none when every live agent is DRAINING.  In a unit that is not placed
	 * a job of any size may be dispatched, anywhere.
	 */
	bool		placed;
	int			nhosts;
	const struct QsHost *hosts;
	const struct QsHostIndex *host_index;	/* QsPrepareHosts' */
} QsUnit;

/* A label of a host: {"rack": "r12"} is key "rack", value "r12". */
typedef struct QsLabel
{
	const char *key;
	const char *value;
} QsLabel;

/*
 * A host of a placed unit (scheduling.md 3.13): a live, ACTIVE agent with a
 * bound.  held counts the instances of the parts placed on it of the
 * queue's jobs that hold capacity (pending stops included), stopping those
 * of jobs whose stop is pending (unless the source gives them: host_usage).
 */
typedef struct QsHost
{
	const char *name;			/* the agent's */
	int64_t		instances;
	int64_t		held;
	int64_t		stopping;
	int			nlabels;
	const QsLabel *labels;
} QsHost;

/*
 * A part of a job: the instances placed on one host.  A held job's parts
 * are its placement (in rank order); a promised RUNNABLE job's are the
 * placement its promise reserves.  lease_until and ended serve the rules
 * of parts of one attempt (scheduling.md 3.14): a part ended has reported
 * its end, lost its lease or was released, while others still hold.
 */
typedef struct QsPart
{
	const char *host;			/* the agent's name */
	int32_t		count;
	QsTime		lease_until;	/* QS_NO_TIME: not claimed */
	bool		ended;
} QsPart;

typedef struct QsShare
{
	const char *name;
	QsStrategy	strategy;
	int32_t		borrow_limit;	/* percent of own capacity; -1 unlimited */
	bool		in_share_preemption;
	bool		enabled;
	const int64_t *capacity;	/* C(S,u), one per unit */
	int32_t		lend_limit;		/* percent of own capacity lent; -1 all */
	bool		strict;			/* queueing STRICT (else BEST_EFFORT) */
	QsTime		min_runtime;	/* claimed jobs are no victims before; 0: none */
	int32_t		weight;			/* FAIR borrow order, 1 to 10000 */
	const double *budget;		/* instance-hours a period, one per unit, with
								 * a fraction (0.5); negative (or no array): no
								 * budget (scheduling.md 3.11) */
	const double *spent;		/* instance-seconds held this period up to now,
								 * one per unit (no array: none) */
} QsShare;

/* A job as the policy sees it. */
typedef struct QsJob
{
	int64_t		id;
	int			share;			/* index into QsInput.shares */
	int			unit;			/* index into QsInput.units */
	int32_t		count;			/* instance_count */
	int32_t		priority;
	QsJobState	state;
	QsTime		queued_at;
	QsTime		scheduled_at;	/* held jobs */
	QsTime		promised_at;	/* QS_NO_TIME: no promise */
	QsTime		lease_until;	/* claimed jobs */
	QsTime		deadline;		/* started_at + timeout; QS_NO_TIME: none */
	QsStop		stop;			/* pending stop */
	bool		claimed;		/* an agent holds it */
	int64_t		preempted_for;	/* 0: none */
	int32_t		failed_attempts;
	int32_t		max_attempts;
	int32_t		preemption_count;
	int32_t		preemption_retries; /* -1: unlimited */
	int32_t		lease_losses;	/* leases that ran out (scheduling.md 3.10) */
	int32_t		max_lease_losses;	/* more: the job fails */
	int32_t		claim_requeues; /* times no agent claimed it in time */
	QsTime		claim_backoff_until;	/* RUNNABLE: held back from dispatch
										 * before; QS_NO_TIME: not held back */
	int32_t		per_host;		/* instances_per_host; 0: any split */
	const char *same_label;		/* NULL: none */
	int32_t		deps_waiting;	/* jobs it depends on that have not
								 * SUCCEEDED (scheduling.md 3.17) */
	int64_t		dependency_failed;	/* 0: none; else a job it depends on
									 * that FAILED */
	const char *status_reason;	/* RUNNABLE jobs of a source: their reason as
								 * read (NULL: none) */
	int			nparts;			/* held jobs of a placed unit; promised jobs */
	const QsPart *parts;
} QsJob;

/* Whether a job in a state holds capacity: SCHEDULED, STARTING, RUNNING. */
static inline bool
QsHoldsCapacity(QsJobState state)
{
	return state == QS_SCHEDULED || state == QS_STARTING || state == QS_RUNNING;
}

/*
 * The number of the job's current attempt: every attempt that ended (failed,
 * preempted or its lease lost) moved it on by one.
 */
static inline int32_t
QsJobAttempt(const QsJob *job)
{
	return 1 + job->failed_attempts + job->preemption_count + job->lease_losses;
}

/*
 * The skip rule's bound of the jobs with one set of placement constraints
 * (per_host 0: none; same_label NULL: none) in a placed unit, where it is
 * kept apart from the others' (scheduling.md 3.13): only jobs with fewer
 * instances than `below` are tried.
 */
typedef struct QsSkipClass
{
	int32_t		per_host;
	const char *same_label;
	int32_t		below;
} QsSkipClass;

/*
 * Where the jobs come from, pulled as the pass consumes them so that a pass
 * never reads the whole backlog, nor every job holding capacity.
 */
typedef struct QsJobSource
{
	/*
	 * next: the first RUNNABLE job of (share, unit) in share order
	 * (priority DESC, queued_at, id) strictly after *after (NULL: from the
	 * start) that the skip rule's bounds let through (QsSourceGives):
	 * whose count is below `below`; or, with below_all false (a placed
	 * unit, where the skip rule is kept per placement constraints,
	 * scheduling.md 3.13), `below` bounds only the jobs with no per_host
	 * and no same_label, and a job with them is bounded by its class's
	 * bound among classes[0..nclasses) (none: it comes whatever its
	 * count).  false when there is none.  below_all is false only where
	 * QsInput.constrained allows.  A job waiting for dependencies is never
	 * given (QsSourceGives).
	 */
	bool		(*next) (void *arg, int share, int unit, const QsJob *after,
						 int32_t below, bool below_all, const QsSkipClass *classes,
						 int nclasses, QsJob *out);

	/*
	 * smallest: up to max RUNNABLE jobs of (share, unit) with count at most
	 * at_most, smallest count first; returns how many it wrote to out.  It
	 * may leave out jobs waiting for dependencies (they want nothing).
	 */
	int			(*smallest) (void *arg, int share, int unit, int32_t at_most,
							 int max, QsJob *out);

	/*
	 * held: the first held job of (share, unit) with no stop pending, in
	 * victim order (priority ASC, scheduled_at DESC, id DESC; scheduling.md
	 * 3.4), strictly after *after (NULL: from the start), whose priority is
	 * below `below` (QS_ANY_PRIORITY: any); false when there is none.  Read
	 * only when the pass looks for victims.  In a placed unit, with its
	 * parts.
	 */
	bool		(*held) (void *arg, int share, int unit, const QsJob *after,
						 int64_t below, QsJob *out);

	/*
	 * host_usage: what the parts of holding jobs hold on each host of a
	 * placed unit, and of that what is stopping, into held[] and
	 * stopping[] (one per host, in the unit's order).  Asked at most once
	 * per unit, and only when a placement is computed or a held job's
	 * parts change; NULL: the hosts' own held and stopping.
	 */
	void		(*host_usage) (void *arg, int unit, int64_t *held, int64_t *stopping);
	void	   *arg;
} QsJobSource;

#define QS_ANY_PRIORITY INT64_MAX

typedef struct QsInput
{
	QsTime		now;
	bool		env_enabled;
	bool		fair;			/* borrow_order FAIR (else FIFO) */
	/*
	 * [share * nunits + unit]: recent_borrow(S,u) now, in instance-seconds,
	 * when the queue has a fair_half_life (scheduling.md 3.12); NULL: none
	 */
	const double *recent_borrow;
	int			nunits;
	const QsUnit *units;
	int			nshares;
	const QsShare *shares;
	/*
	 * [share * nunits + unit]: it may have RUNNABLE jobs with placement
	 * constraints (the skip rule keeps them apart only there, scheduling.md
	 * 3.13); NULL: any may
	 */
	const bool *constrained;
	/* [share * nunits + unit]: the counters of held capacity */
	const int64_t *held;		/* instances held: SCHEDULED, STARTING, RUNNING */
	const int64_t *stopping;	/* of those, instances whose stop is pending */
	int			ndue;			/* held jobs whose lease expired, whose attempt
								 * is past its deadline, or that no agent
								 * claimed within claim_timeout (at least
								 * those) */
	const QsJob *due;
	int			nvictims;		/* held jobs preempted for a promised job, stop
								 * pending (at least those; none needed when
								 * there is no promised job) */
	const QsJob *victims;
	int			npromised;		/* RUNNABLE jobs with a promise, any order */
	const QsJob *promised;
	int			nexpired;		/* RUNNABLE misconfigured past runnable_timeout */
	const QsJob *expired;
	/*
	 * RUNNABLE jobs whose NO_AGENT_FITS reason (scheduling.md 3.10) an
	 * earlier pass recorded more than runnable_timeout ago (at least those):
	 * each fails if no agent fits it still (3.9)
	 */
	int			nno_agent_expired;
	const QsJob *no_agent_expired;
	/*
	 * RUNNABLE jobs a job they depend on FAILED (scheduling.md 3.17; at
	 * least the first QS_DUE_JOBS_MAX of them, the others at later passes)
	 */
	int			ndependency_failed;
	const QsJob *dependency_failed;
	QsTime		claim_timeout;	/* SCHEDULED jobs unclaimed for longer go back
								 * to RUNNABLE; QS_NO_TIME: none */
	QsTime		fence_grace;	/* a lease that ran out is acted on only this
								 * long after (the queue's fence_grace,
								 * scheduling.md 3.10); 0: at once */
	QsJobSource source;
	void	   *(*alloc) (void *arg, size_t size);	/* zeroed memory */
	void	   *alloc_arg;
} QsInput;

/* The counter a REQUEUE or FAIL adds one to. */
typedef enum QsCounter
{
	QS_COUNT_NONE,
	QS_COUNT_FAILED_ATTEMPT,
	QS_COUNT_PREEMPTION,
	QS_COUNT_LEASE_LOSS,		/* lease_losses */
	QS_COUNT_NOT_CLAIMED		/* claim_requeues; and claim_backoff_until */
} QsCounter;

/* The longest a job is held back after a claim timeout (scheduling.md 3.10). */
#define QS_CLAIM_BACKOFF_MAX ((QsTime) 3600 * 1000000)

typedef struct QsDecision
{
	QsAction	action;
	int64_t		job_id;
	int			share;
	int			unit;
	int32_t		count;
	const char *reason;			/* static, or as long as the output; NULL for DISPATCH */
	QsStop		stop;			/* PREEMPT, STOP */
	int64_t		preempted_for;	/* PREEMPT; 0 for repairs */
	int			nparts;			/* DISPATCH in a placed unit: the placement, */
	const QsPart *parts;		/* in rank order */
	bool		immediate;		/* PREEMPT of an unclaimed job: it stops now */
	QsCounter	counter;		/* REQUEUE, FAIL */
	QsTime		backoff_until;	/* REQUEUE NOT_CLAIMED: held back before */
} QsDecision;

/* The placement a promise reserves (scheduling.md 3.13). */
typedef struct QsReservation
{
	int64_t		job_id;
	int			nparts;
	const QsPart *parts;
} QsReservation;

/*
 * The reason of a job the pass came to in a placed unit (scheduling.md
 * 3.13): WAITING_FOR_HOSTS when it tried it, the capacity rules would
 * dispatch it (now and in the future state) but it has no placement and
 * got no victims; NO_AGENT_FITS when it holds back a job with placement
 * constraints that has no placement even on empty hosts (the shell sets
 * that of other jobs from QsFitLimit.agent_max); NULL: neither (a reason
 * of these that it had goes).  (In a unit that is not placed, the shell
 * clears these reasons of every RUNNABLE job: QsClearPlacementReasons.)
 */
typedef struct QsHostReason
{
	int64_t		job_id;
	const char *reason;
} QsHostReason;

/*
 * The largest instance_count a job of (share, unit) may have before it is
 * misconfigured (scheduling.md 3.7); QS_UNBOUNDED when there is no bound.
 */
typedef struct QsFitLimit
{
	int64_t		env_max;		/* above: SERVICE_ENVIRONMENT_MAX_RESOURCE */
	int64_t		quota_max;		/* above: QUOTA_MANAGEMENT_LIMIT_EXCEEDED */
	int64_t		agent_max;		/* above (and not misconfigured): NO_AGENT_FITS */
} QsFitLimit;

typedef struct QsOutput
{
	int			ndecisions;
	QsDecision *decisions;
	int			nlapsed;		/* promises that lapsed (promised_at cleared) */
	int64_t    *lapsed;
	int			npromised;		/* new promises (promised_at set) */
	int64_t    *promised;
	QsFitLimit *fit_limits;		/* [share * nunits + unit] */
	QsTime		wake_at;		/* when the earliest min_runtime exemption that
								 * kept a preemptor from its victims ends, or
								 * the earliest fence_grace of a lease that
								 * ran out; QS_NO_TIME: none */
	int			nreserved;		/* promised jobs whose reserved placement is
								 * new (made or placed anew at the re-check),
								 * still promised after the pass */
	QsReservation *reserved;
	int			nhost_reasons;	/* jobs come to in a placed unit: their */
	QsHostReason *host_reasons; /* reasons of placement */
	int			nlost;			/* jobs of several parts one of which lost its */
	int64_t    *lost;			/* lease while others hold: the shell ends the
								 * parts whose lease ran out (scheduling.md
								 * 3.14) */
} QsOutput;

/* Which invariant keeps a job from being dispatched (scheduling.md 3.1). */
typedef enum QsCheck
{
	QS_CHECK_OK,
	QS_CHECK_ALLOWED,			/* (I2) usage(S,u) <= allowed(S,u) */
	QS_CHECK_ENVIRONMENT,		/* (I1) sum of usage <= E(u) */
	QS_CHECK_SUPPLY,			/* (I3) sum of borrowed <= borrowable supply */
	QS_CHECK_HOSTS				/* (I1)-(I3) hold, but it has no placement
								 * (scheduling.md 3.13) */
} QsCheck;

/*
 * A lender's numbers behind (I3), as the check counted them (explain): an
 * ENABLED LEND or LEND_AND_BORROW share other than the waiting job's, with
 * capacity of the unit.
 */
typedef struct QsWhyLender
{
	int			share;			/* index into QsInput.shares */
	int64_t		capacity;		/* C(S,u) */
	int64_t		usage;			/* usage(S,u) in the state checked */
	int64_t		idle;			/* max(0, C(S,u) - usage(S,u)) */
	int64_t		lendable_idle;	/* min(idle, lendable(S,u)) */
	int64_t		wanted;			/* what its own waiting jobs want of idle */
	int64_t		lends;			/* min(idle - wanted, lendable(S,u)): its supply */
} QsWhyLender;

/*
 * The figures of one group of hosts that decide whether a job has a
 * placement (explain, scheduling.md 3.13), in the state checked.
 */
typedef struct QsHostFigures
{
	const char *label_value;	/* NULL: every host (no same_label) */
	int			nhosts;
	int64_t		largest;		/* the largest instances */
	int64_t		largest_free;	/* the largest free */
	int64_t		free;			/* free instances in all */
	int64_t		fits;			/* the most a job of its per_host could have
								 * were every host empty */
} QsHostFigures;

/*
 * Why a RUNNABLE job waits, as explain() tells it.  The numbers are those
 * of the state in which the check failed: now, or with in_future the state
 * once pending stops complete and kept promises hold.
 */
typedef struct QsWhy
{
	QsCheck		check;			/* QS_CHECK_OK: it may be dispatched now */
	bool		in_future;		/* only once pending stops and promises settle */
	bool		must_borrow;	/* it does not fit in its share's own capacity */
	int64_t		usage;			/* usage(S,u), without the job */
	int64_t		allowed;		/* allowed(S,u) */
	int64_t		env_usage;		/* sum of usage(S,u), and instances held by
								 * jobs of missing shares, without the job */
	bool		victims_exempt; /* preemption would make room but for
								 * min_runtime exemptions */
	QsTime		exempt_until;	/* then: when the earliest of those ends */
	/* (I3) only, with the job added: */
	int64_t		unassigned;		/* unassigned(u) */
	int64_t		borrowed;		/* sum of borrowed(S,u) */
	int64_t		supply;			/* the borrowable supply */
	int64_t		share_lends;	/* the job's own share's part of the supply */
	int			nlenders;
	QsWhyLender *lenders;		/* the other lenders, by lendable_idle DESC,
								 * lends DESC, share index */
	/* QS_CHECK_HOSTS, or held back NO_AGENT_FITS in a placed unit: */
	int			ngroups;
	QsHostFigures *groups;		/* one per host group (per value of the
								 * job's same_label; else one), by value */
} QsWhy;

/* A job in the queue's dispatch order (queue_snapshot, explain). */
typedef struct QsQueueEntry
{
	QsJob		job;
	int			position;		/* 1-based; 0: beyond the horizon */
	int			nparts;			/* in a placed unit, the placement it would have
								 * if dispatched now (0: none: it would wait
								 * for hosts, or its unit is not placed) */
	QsPart	   *parts;			/* in rank order */
} QsQueueEntry;

/* The outcome of a job that stopped or ended its attempt. */
typedef struct QsStopOutcome
{
	QsAction	action;			/* QS_REQUEUE or QS_FAIL */
	QsCounter	counter;
	const char *reason;
} QsStopOutcome;

extern int64_t QsAllowed(const QsShare *share, int unit);
extern int64_t QsLendable(const QsShare *share, int unit);
extern int64_t QsLendableOf(const QsShare *share, int unit);
extern bool QsHolds(QsJobState state);
extern bool QsIsPreemption(QsStop stop);
extern bool QsShareOrderBefore(const QsJob *a, const QsJob *b);
extern const QsSkipClass *QsSkipClassOf(const QsSkipClass *classes, int nclasses,
										const QsJob *job);
extern bool QsSourceGives(const QsJob *job, int32_t below, bool below_all,
						  const QsSkipClass *classes, int nclasses);
extern QsStopOutcome QsStoppedOutcome(const QsJob *job);
extern QsStopOutcome QsFailedOutcome(const QsJob *job);
extern QsStopOutcome QsLeaseLostOutcome(const QsJob *job);
extern bool QsWaitsForDependencies(const QsJob *job);
extern QsHold QsHeldBack(const QsInput *in, const QsJob *job);
extern bool QsNoAgentFits(const QsInput *in, const QsJob *job);
extern int	QsHostOf(const QsUnit *unit, const char *name);
extern int64_t QsPlacementMax(const QsUnit *unit, int32_t per_host,
							  const char *same_label);
extern const char *QsPrepareHosts(QsUnit *unit, void *(*alloc) (void *arg, size_t size),
								  void *alloc_arg);
extern bool QsOverBudget(const QsShare *share, int unit);
extern QsTime QsClaimBackoff(QsTime claim_timeout, int32_t claim_requeues);
extern void QsRunPass(const QsInput *in, QsOutput *out);
extern void QsComputeFitLimits(const QsInput *in, QsOutput *out);
extern QsWhy QsExplainWait(const QsInput *in, const QsJob *job);
extern int	QsQueueOrder(const QsInput *in, int front, int horizon,
						 QsQueueEntry *entries);
extern int	QsQueuePosition(const QsInput *in, int64_t job_id, int horizon);
extern QsHold QsStrictHeadHeld(const QsInput *in, const QsJob *job, int horizon,
							   QsJob *head);

#endif							/* QS_POLICY_H */
