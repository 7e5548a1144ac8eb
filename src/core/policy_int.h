/*-------------------------------------------------------------------------
 *
 * policy_int.h
 *		Internals shared by the files of the policy core: the plan of a
 *		pass (the state planned so far) and the capacity accounting.
 *
 * Their names start with Core; the public API (policy.h) keeps Qs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_POLICY_INT_H
#define QS_POLICY_INT_H

#include "policy.h"

/*
 * Each named rule of scheduling.md 3 sits in an "#ifndef QS_MUTANT_<RULE>" block, so
 * that test/mutants can build the core with that rule switched off and show
 * which test catches it.
 */

/* A set of job ids (open addressing). */
typedef struct CoreIdSet
{
	int64_t    *slots;			/* 0: empty */
	int			size;			/* power of two */
	int			count;
} CoreIdSet;

/* The states of a unit in which CoreUsage counts each share's usage. */
typedef enum CoreState
{
	CORE_NOW,					/* as things are: pending stops still hold */
	CORE_AFTER_STOPS,			/* once every pending stop has completed */
	CORE_FUTURE					/* that, and every kept promise holding */
} CoreState;

/* The pass's cursor over the RUNNABLE jobs of one share and unit. */
typedef struct CoreCursor
{
	bool		started;
	bool		has_head;
	QsJob		head;
	int32_t		below;			/* the skip rule: only counts below this (in a
								 * placed unit, of jobs with no constraint) */
	bool		all_skipped;	/* STRICT: every later job is skipped */
	int			nclasses;		/* a placed unit's other placement classes */
	int			classes_cap;
	QsSkipClass *classes;
} CoreCursor;

/*
 * A placed unit's hosts as the pass plans them (scheduling.md 3.13): what
 * its parts hold now (pending stops included), what of that is stopping,
 * and what kept promises reserve.
 */
typedef struct CoreHosts
{
	bool		loaded;			/* held and stopping are known (HostUsage) */
	int64_t    *held;			/* [h] */
	int64_t    *stopping;		/* [h] */
	int64_t    *reserved;		/* [h] */
	/* scratch of the placement (CorePlace) */
	int64_t    *free;			/* [h] free in the state asked */
	int		   *order;			/* [h] hosts in some order */
	int		   *tmp;			/* [h] room for sorting */
	int		   *cand;			/* [h] a group's hosts that may take a part */
	const char **value;			/* [h] each host's value of a label */
	QsPart	   *parts;			/* a group's parts */
	QsPart	   *best;			/* the best group's parts so far */
} CoreHosts;

/* The placement a kept promise reserves now. */
typedef struct CoreReservation
{
	int64_t		job_id;
	int			nparts;
	const QsPart *parts;
} CoreReservation;

/* A placement (scheduling.md 3.13): its parts, in rank order. */
typedef struct CorePlacement
{
	int			nparts;
	QsPart	   *parts;
} CorePlacement;

/* A lender's smallest waiting jobs of a unit (the wanted-capacity rule). */
typedef struct CoreWantedCache
{
	bool		loaded;
	int			njobs;
	int			max;			/* how many were asked for */
	QsJob	   *jobs;
} CoreWantedCache;

/*
 * The sums over every share of one unit's usage in a state of the plan
 * (CORE_NOW or CORE_FUTURE), with which CoreDispatchCheck tests (I1)-(I3)
 * for a job without walking the shares (capacity.c, Totals).
 */
typedef struct CoreTotals
{
	uint64_t	version;		/* CorePlan.version they were counted in; 0: none */
	bool		wanted_counted; /* supply_wanted is counted */
	int64_t		used;			/* sum of usage(S,u) */
	int64_t		borrowed;		/* sum of borrowed(S,u) */
	int64_t		supply;			/* sum of lenders' min(idle, lendable) */
	int64_t		supply_wanted;	/* the same, each idle less what its own
								 * waiting jobs want (a borrower's check) */
} CoreTotals;

typedef struct CorePlan
{
	const QsInput *in;
	QsOutput   *out;
	int			nunits;
	int			nshares;
	int64_t    *usage;			/* [s*nunits+u]: held now, pending stops too */
	int64_t    *pending;		/* held by jobs whose stop is pending */
	int64_t    *promised;		/* wanted by kept promises not yet dispatched */
	int64_t    *unassigned;		/* [u] */
	int64_t    *scratch_now;	/* [s]: one unit's usage, now */
	int64_t    *scratch_future; /* [s]: one unit's usage, future */
	CoreIdSet	handled;		/* decided in this pass: not dispatched again */
	CoreIdSet	kept_promises;
	CoreCursor *cursors;		/* [s*nunits+u] */
	int		   *head_shares;	/* the shares whose cursors may have a head
								 * (CoreCursorStart, CoreNextCandidate) */
	int			nhead_shares;
	/*
	 * The shares with a head, in two heaps (CoreNextCandidate): [0] in the
	 * order of any candidate, [1] those whose head fits in its share's own
	 * capacity, in queue order; heap_at[k][s]: share s's place in heap k
	 * (-1: none).  Since the last candidate, moved is the share whose
	 * cursors moved, usage_moved the one whose usage changed (-1: none; -2:
	 * several: the heaps are made again).
	 */
	int		   *heap[2];
	int		   *heap_at[2];
	int			nheap[2];
	bool		heaps_built;
	int			moved;
	int			usage_moved;
	CoreWantedCache *wanted;	/* [s*nunits+u] */
	uint64_t	version;		/* moves with every change of the state planned
								 * (usage, pending stops, promises, the jobs
								 * handled): what CoreTotals were counted in */
	CoreTotals *totals;			/* [u*2 + (state == CORE_FUTURE)] */
	const QsJob **promise_order;	/* promised jobs by (promised_at, id) */
	int			npromise_order;
	int			decisions_cap;
	int			promised_cap;
	CoreHosts  *hosts;			/* [u]; placed units only */
	int			nreservations;	/* kept promises' reservations */
	int			reservations_cap;
	CoreReservation *reservations;
	int			reserved_cap;	/* of out->reserved */
	int			host_reasons_cap;
	int			lost_cap;		/* of out->lost */
} CorePlan;

#define CORE_AT(p, s, u) ((s) * (p)->nunits + (u))

/* An order of jobs: whether a comes before b. */
typedef bool (*CoreJobOrder) (const QsJob *a, const QsJob *b);

/* policy.c */
extern void CoreInitPlan(CorePlan *p, const QsInput *in, QsOutput *out);
extern void CoreTimeBasedWork(CorePlan *p);
extern void CoreRecheckPromises(CorePlan *p);
extern void CoreCursorStart(CorePlan *p, int32_t below);
extern void CoreCursorAdvance(CorePlan *p, int s, int u);
extern const QsJob *CoreShareHead(CorePlan *p, int s);
extern const QsJob *CoreNextCandidate(CorePlan *p);
extern void CoreDispatch(CorePlan *p, const QsJob *job);
extern void *CoreAlloc(CorePlan *p, size_t size);
extern void *CoreGrow(CorePlan *p, void *array, int n, int *cap, size_t size);
extern void CoreIdSetAdd(CorePlan *p, CoreIdSet *set, int64_t id);
extern bool CoreIdSetHas(const CoreIdSet *set, int64_t id);
extern bool CoreTimeIdBefore(QsTime a_at, int64_t a_id, QsTime b_at,
							 int64_t b_id);
extern void CoreSortJobs(const QsJob **jobs, int n, CoreJobOrder before);
extern QsDecision *CoreAddDecision(CorePlan *p, QsAction action,
								   const QsJob *job, const char *reason);
extern void CoreEndAttempt(CorePlan *p, const QsJob *job);

/* preempt.c */
extern bool CoreTryPreemption(CorePlan *p, const QsJob *job);
extern bool CoreVictimsExempt(CorePlan *p, const QsJob *job, QsTime *until);
extern void CoreRepairLimits(CorePlan *p);

/* placement.c */
extern void CoreInitHosts(CorePlan *p);
extern int	CoreHostIndex(const QsUnit *unit, const char *name);
extern void CoreHostsHold(CorePlan *p, const QsJob *job, int sign);
extern void CoreHostsStopRequested(CorePlan *p, const QsJob *job);
extern bool CorePlace(CorePlan *p, const QsJob *job, CoreState state,
					  const QsJob *const *gone, int ngone, CorePlacement *out);
extern void CoreReserve(CorePlan *p, const QsJob *job, const QsPart *parts,
						int nparts, bool is_new);
extern const CoreReservation *CoreReservationOf(const CorePlan *p, int64_t job_id);
extern void CoreUnreserve(CorePlan *p, const QsJob *job);
extern bool CoreReservationValid(CorePlan *p, const QsJob *job);
extern void CoreNoteHostReason(CorePlan *p, const QsJob *job, const char *reason);
extern void CoreHostFigures(CorePlan *p, const QsJob *job, CoreState state,
							QsWhy *why);

/* capacity.c */
extern void CoreInitAccounting(CorePlan *p);
extern void CoreHold(CorePlan *p, const QsJob *job, int sign);
extern void CoreStopRequested(CorePlan *p, const QsJob *job);
extern void CoreKeepPromise(CorePlan *p, const QsJob *job);
extern bool CoreBorrowing(const CorePlan *p, int share, int unit,
						  int64_t usage);
extern bool CoreFitsOwnCapacity(const CorePlan *p, const QsJob *job);
extern bool CoreWithinAllowed(const CorePlan *p, int share, int unit,
							  int64_t usage);
extern QsCheck CoreCheckInvariants(CorePlan *p, int unit, const int64_t *use,
								   const QsJob *job);
extern QsCheck CoreDispatchCheck(CorePlan *p, const QsJob *job,
								 bool *in_future);
extern bool CoreMayDispatch(CorePlan *p, const QsJob *job);
extern bool CoreInvariantsHoldWith(CorePlan *p, const int64_t *use,
								   const QsJob *job);
extern void CoreUsage(const CorePlan *p, int unit, CoreState state,
					  const QsJob *const *gone, int ngone, int64_t *use);
extern void CoreCheckedUsage(const CorePlan *p, const QsJob *job, bool in_future, int64_t *use);
extern int64_t CoreShareUsage(const CorePlan *p, int share, int unit, CoreState state,
							  const QsJob *const *gone, int ngone);
extern void CoreComputeFitLimits(CorePlan *p);
extern bool CoreLends(const QsShare *share);
extern int64_t CoreWanted(CorePlan *p, int lender, int unit, int64_t idle);

#endif							/* QS_POLICY_INT_H */
