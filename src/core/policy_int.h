/*-------------------------------------------------------------------------
 *
 * policy_int.h
 *		Internals shared by the files of the policy core: the plan of a
 *		pass (the state planned so far) and the capacity accounting.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_POLICY_INT_H
#define QS_POLICY_INT_H

#include "policy.h"

/*
 * Each named rule of SPEC 3 sits in an "#ifndef QS_MUTANT_<RULE>" block, so
 * that test/mutants can build the core with that rule switched off and show
 * which test catches it.
 */

/* A set of job ids (open addressing). */
typedef struct QsIdSet
{
	int64_t    *slots;			/* 0: empty */
	int			size;			/* power of two */
	int			count;
} QsIdSet;

/* The RUNNABLE jobs of one share and unit, under the pass's cursor. */
typedef struct QsStream
{
	bool		started;
	bool		has_head;
	QsJob		head;
	int32_t		below;			/* the skip rule: only counts below this */
} QsStream;

/* A lender's smallest waiting jobs of a unit (the wanted-capacity rule). */
typedef struct QsWantedCache
{
	bool		loaded;
	int			njobs;
	int			max;			/* how many were asked for */
	QsJob	   *jobs;
} QsWantedCache;

typedef struct QsPlan
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
	QsIdSet		handled;		/* decided in this pass: not dispatched again */
	QsIdSet		kept_promises;
	QsStream   *streams;		/* [s*nunits+u] */
	QsWantedCache *wanted;		/* [s*nunits+u] */
	const QsJob **promise_order;	/* promised jobs by (promised_at, id) */
	int			npromise_order;
	int			decisions_cap;
	int			promised_cap;
} QsPlan;

#define QS_AT(p, s, u) ((s) * (p)->nunits + (u))

/* policy.c */
extern void QsInitPlan(QsPlan *p, const QsInput *in, QsOutput *out);
extern void QsRecheckPromises(QsPlan *p);
extern void QsStreamStart(QsPlan *p, int32_t below);
extern void QsStreamAdvance(QsPlan *p, int s, int u);
extern const QsJob *QsShareHead(QsPlan *p, int s);
extern const QsJob *QsNextCandidate(QsPlan *p);
extern void QsDispatch(QsPlan *p, const QsJob *job);
extern void *QsAlloc(QsPlan *p, size_t size);
extern void QsIdSetAdd(QsPlan *p, QsIdSet *set, int64_t id);
extern bool QsIdSetHas(const QsIdSet *set, int64_t id);
extern QsDecision *QsAddDecision(QsPlan *p, QsAction action, const QsJob *job,
								 const char *reason);

/* preempt.c */
extern bool QsTryPreemption(QsPlan *p, const QsJob *job);
extern void QsRepairLimits(QsPlan *p);

/* capacity.c */
extern void QsInitAccounting(QsPlan *p);
extern void QsHold(QsPlan *p, const QsJob *job, int sign);
extern bool QsFitsOwnCapacity(const QsPlan *p, const QsJob *job);
extern QsCheck QsCheckInvariants(QsPlan *p, const int64_t *use, const QsJob *job);
extern QsCheck QsDispatchCheck(QsPlan *p, const QsJob *job, bool *in_future);
extern bool QsMayDispatch(QsPlan *p, const QsJob *job);
extern bool QsInvariantsHoldWith(QsPlan *p, const int64_t *use, const QsJob *job);
extern void QsFillFutureUsage(const QsPlan *p, int unit, int64_t *use);
extern void QsComputeFitLimits(QsPlan *p);

#endif							/* QS_POLICY_INT_H */
