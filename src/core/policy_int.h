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
	int32_t		below;			/* the skip rule: only counts below this */
} CoreCursor;

/* A lender's smallest waiting jobs of a unit (the wanted-capacity rule). */
typedef struct CoreWantedCache
{
	bool		loaded;
	int			njobs;
	int			max;			/* how many were asked for */
	QsJob	   *jobs;
} CoreWantedCache;

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
	CoreWantedCache *wanted;	/* [s*nunits+u] */
	const QsJob **promise_order;	/* promised jobs by (promised_at, id) */
	int			npromise_order;
	int			decisions_cap;
	int			promised_cap;
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
extern void CoreComputeFitLimits(CorePlan *p);
extern bool CoreLends(const QsShare *share);
extern int64_t CoreWanted(CorePlan *p, int lender, int unit, int64_t idle);

#endif							/* QS_POLICY_INT_H */
