/*-------------------------------------------------------------------------
 *
 * preempt.c
 *		Preemption in the policy core (scheduling.md 3.3-3.6), each rule a small
 *		named piece: the candidates of each attempt, their order, the
 *		greedy choice with the backwards walk, stopping the victims and the
 *		promise made to the preemptor; and the repair of limits an admin
 *		lowered (3.5).
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "policy_int.h"

/* A list of held jobs: candidates or victims. */
typedef struct JobList
{
	const QsJob **jobs;
	int			n;
} JobList;

/*
 * ListInit makes an empty list with room for every held job `copies` times
 * (a job may be in two groups of candidates).
 */
static void
ListInit(CorePlan *p, JobList *list, int copies)
{
	list->jobs = CoreAlloc(p, sizeof(QsJob *) * (copies * p->in->nheld + 1));
	list->n = 0;
}

/*
 * VictimOrderBefore: lowest priority, then latest scheduled_at, then
 * highest id (scheduling.md 3.4).
 */
static bool
VictimOrderBefore(const QsJob *a, const QsJob *b)
{
	if (a->priority != b->priority)
		return a->priority < b->priority;
	/* the reverse of (scheduled_at, id) */
	return CoreTimeIdBefore(b->scheduled_at, b->id, a->scheduled_at, a->id);
}

/*
 * Preemptible tells whether a held job of a unit may be a victim at all:
 * its stop is not already pending and it was not dispatched or otherwise
 * decided in this pass.
 */
static bool
Preemptible(const CorePlan *p, const QsJob *job, int unit)
{
	return job->unit == unit && job->stop == QS_STOP_NONE &&
		!CoreIdSetHas(&p->handled, job->id);
}

/*
 * LowerPriority: a has strictly lower priority than b; equal priority never
 * preempts (scheduling.md 3.3).
 */
static bool
LowerPriority(const QsJob *a, const QsJob *b)
{
#ifndef QS_MUTANT_STRICTLY_LOWER
	return a->priority < b->priority;
#else
	return a->priority <= b->priority;
#endif
}

/* Whose held jobs a group of candidates takes. */
typedef enum Whose
{
	ANY_SHARE,
	ONE_SHARE,					/* only the jobs of Group.share */
	OTHER_SHARES				/* none of the jobs of Group.share */
} Whose;

/* A group of candidates (scheduling.md 3.3, 3.5), each group in victim order. */
typedef struct Group
{
	Whose		whose;
	int			share;
	bool		borrowing;		/* only jobs of shares borrowing the unit */
	const QsJob *above;			/* only jobs of strictly lower priority */
} Group;

/*
 * InGroup tells whether a held job is a candidate of a group for a unit;
 * use[] is each share's usage once pending stops have completed.
 */
static bool
InGroup(const CorePlan *p, const QsJob *h, int unit, const Group *g,
		const int64_t *use)
{
	if (!Preemptible(p, h, unit))
		return false;
	if (g->whose == ONE_SHARE && h->share != g->share)
		return false;
	if (g->whose == OTHER_SHARES && h->share == g->share)
		return false;
	if (g->borrowing && !CoreBorrowing(p, h->share, unit, use[h->share]))
		return false;
	return g->above == NULL || LowerPriority(h, g->above);
}

/*
 * AddGroup appends the candidates of a group for a unit to a list, sorted
 * in victim order.
 */
static void
AddGroup(CorePlan *p, int unit, const Group *g, JobList *list)
{
	int			from = list->n;

	CoreUsage(p, unit, CORE_AFTER_STOPS, NULL, 0, p->scratch_now);
	for (int i = 0; i < p->in->nheld; i++)
		if (InGroup(p, &p->in->held[i], unit, g, p->scratch_now))
			list->jobs[list->n++] = &p->in->held[i];
	CoreSortJobs(list->jobs + from, list->n - from, VictimOrderBefore);
}

/*
 * Chosen tells whether a job is among the victims chosen so far.
 */
static bool
Chosen(const JobList *victims, const QsJob *job)
{
	for (int i = 0; i < victims->n; i++)
		if (victims->jobs[i] == job)
			return true;
	return false;
}

/* What a set of victims must achieve. */
typedef bool (*RoomTest) (CorePlan *p, const QsJob *job, const JobList *victims, bool reclaim);

/*
 * RoomForPreemptor tells whether the preemptor could be dispatched
 * (scheduling.md 3.2, the wanted-capacity rule included) once the victims
 * have stopped; when reclaiming, it must then fit in its share's own
 * capacity (a job never reclaims in order to borrow).
 */
static bool
RoomForPreemptor(CorePlan *p, const QsJob *job, const JobList *victims, bool reclaim)
{
	int64_t    *use = p->scratch_future;

	CoreUsage(p, job->unit, CORE_FUTURE, victims->jobs, victims->n, use);
#ifndef QS_MUTANT_RECLAIM_NOT_TO_BORROW
	if (reclaim && CoreBorrowing(p, job->share, job->unit, use[job->share] + job->count))
		return false;
#endif
	return CoreInvariantsHoldWith(p, use, job);
}

/*
 * StillBorrowing tells whether a share is still borrowing a unit once its
 * pending stops and the victims already taken have stopped: only then may
 * another of its jobs be taken as a borrowing victim (scheduling.md 3.4).
 */
static bool
StillBorrowing(CorePlan *p, int share, int unit, const JobList *victims)
{
	CoreUsage(p, unit, CORE_AFTER_STOPS, victims->jobs, victims->n, p->scratch_now);
	return CoreBorrowing(p, share, unit, p->scratch_now[share]);
}

/*
 * ChooseVictims adds candidates in order until the test passes, skipping a
 * borrowing candidate whose share is no longer borrowing; then walks the
 * chosen list backwards and drops every victim that is not needed.
 * Returns false, choosing nobody, when all candidates together do not pass.
 */
static bool
ChooseVictims(CorePlan *p, const QsJob *job, const JobList *candidates, int borrowing_group,
			  RoomTest test, bool reclaim, JobList *victims)
{
	ListInit(p, victims, 1);
	for (int i = 0; i < candidates->n && !test(p, job, victims, reclaim); i++)
	{
		const QsJob *c = candidates->jobs[i];

		if (Chosen(victims, c))
			continue;			/* a job in both groups of a repair */
#ifndef QS_MUTANT_STILL_BORROWING
		if (i < borrowing_group && !StillBorrowing(p, c->share, c->unit, victims))
			continue;
#endif
		victims->jobs[victims->n++] = c;
	}
	if (!test(p, job, victims, reclaim))
	{
		victims->n = 0;
		return false;
	}
#ifndef QS_MUTANT_BACKWARDS_WALK
	for (int i = victims->n - 1; i >= 0; i--)
	{
		const QsJob *v = victims->jobs[i];

		victims->jobs[i] = NULL;
		if (!test(p, job, victims, reclaim))
			victims->jobs[i] = v;
	}
#endif
	/* close the gaps */
	{
		int			kept = 0;

		for (int i = 0; i < victims->n; i++)
			if (victims->jobs[i] != NULL)
				victims->jobs[kept++] = victims->jobs[i];
		victims->n = kept;
	}
	return victims->n > 0;
}

/*
 * ReclaimCandidates lists the candidates of the first attempt: other
 * shares' jobs borrowing the unit, regardless of priority, then, with
 * in-share preemption, the share's own jobs of strictly lower priority.
 * Returns the length of the borrowing group.
 */
static int
ReclaimCandidates(CorePlan *p, const QsJob *job, JobList *list)
{
	Group		borrowers = {.whose = OTHER_SHARES, .share = job->share,
							 .borrowing = true};
	Group		own_lower = {.whose = ONE_SHARE, .share = job->share,
							 .above = job};
	int			borrowing;

	ListInit(p, list, 1);
	AddGroup(p, job->unit, &borrowers, list);
	borrowing = list->n;
#ifndef QS_MUTANT_RECLAIM_OWN_LOWER
	if (p->in->shares[job->share].in_share_preemption)
		AddGroup(p, job->unit, &own_lower, list);
#endif
	return borrowing;
}

/*
 * InShareCandidates lists the candidates of the second attempt: the share's
 * own held jobs of strictly lower priority (equal priority never preempts).
 */
static void
InShareCandidates(CorePlan *p, const QsJob *job, JobList *list)
{
	Group		own_lower = {.whose = ONE_SHARE, .share = job->share,
							 .above = job};

	ListInit(p, list, 1);
	AddGroup(p, job->unit, &own_lower, list);
}

/*
 * StopVictim records the preemption of one victim: an unclaimed job stops
 * at once (and is requeued or fails); a claimed one keeps its instances
 * until its agent reports STOPPED or its lease expires.
 */
static void
StopVictim(CorePlan *p, const QsJob *victim, QsStop stop, int64_t preempted_for)
{
	QsDecision *d = CoreAddDecision(p, QS_PREEMPT, victim, QsStopName(stop));
	QsJob		stopped = *victim;

	d->stop = stop;
	d->preempted_for = preempted_for;
	stopped.stop = stop;
	CoreStopRequested(p, &stopped);
#ifndef QS_MUTANT_UNCLAIMED_STOP_AT_ONCE
	if (!victim->claimed)
	{
		d->immediate = true;	/* before a new decision may move d */
		CoreEndAttempt(p, &stopped);
	}
#endif
}

/*
 * StopVictims stops the victims chosen for a preemptor (across shares or in
 * its own share) or, with none, by a repair (scheduling.md 3.3, 3.5).
 */
static void
StopVictims(CorePlan *p, const JobList *victims, const QsJob *preemptor)
{
	for (int i = 0; i < victims->n; i++)
	{
		const QsJob *v = victims->jobs[i];
		QsStop		stop = QS_STOP_CAPACITY_REDUCED;

		if (preemptor != NULL)
			stop = v->share == preemptor->share ? QS_STOP_IN_SHARE :
				QS_STOP_CROSS_SHARE;
		StopVictim(p, v, stop, preemptor != NULL ? preemptor->id : 0);
	}
}

/*
 * Promise holds the room made for a preemptor (scheduling.md 3.6): it counts in the
 * future state from now on, and the applier sets promised_at.
 */
static void
Promise(CorePlan *p, const QsJob *job)
{
	QsOutput   *out = p->out;

	CoreKeepPromise(p, job);
	out->promised = CoreGrow(p, out->promised, out->npromised,
							 &p->promised_cap, sizeof(int64_t));
	out->promised[out->npromised++] = job->id;
}

/*
 * CoreTryPreemption tries, for a RUNNABLE job that may not be dispatched, the
 * two attempts of scheduling.md 3.3 in order and takes the first that makes room:
 * reclaim (only while the share holds less than its own capacity), then
 * in-share preemption.  The victims stop; the room is promised to the job,
 * which starts at once if every victim stopped at once.  Returns whether
 * victims were given.
 */
bool
CoreTryPreemption(CorePlan *p, const QsJob *job)
{
	const QsShare *share = &p->in->shares[job->share];
	JobList		candidates;
	JobList		victims;
	int			borrowing;
	bool		found = false;

#ifndef QS_MUTANT_RECLAIM_ONLY_UNDER_CAPACITY
	if (p->usage[CORE_AT(p, job->share, job->unit)] < share->capacity[job->unit])
#endif
	{
		borrowing = ReclaimCandidates(p, job, &candidates);
		found = ChooseVictims(p, job, &candidates, borrowing, RoomForPreemptor, true, &victims);
	}
#ifndef QS_MUTANT_IN_SHARE
	if (!found && share->in_share_preemption)
	{
		InShareCandidates(p, job, &candidates);
		found = ChooseVictims(p, job, &candidates, 0, RoomForPreemptor, false, &victims);
	}
#endif
	if (!found)
		return false;

	StopVictims(p, &victims, job);
	if (CoreMayDispatch(p, job))
		CoreDispatch(p, job);
	else
		Promise(p, job);
	return true;
}

/*
 * RoomAfterRepair tells whether (I1)-(I3) hold for a unit, every share within
 * allowed(S,u), once pending stops and the victims have stopped (the job
 * argument only names the unit).
 */
static bool
RoomAfterRepair(CorePlan *p, const QsJob *unit_of, const JobList *victims, bool unused)
{
	int64_t    *use = p->scratch_future;

	(void) unused;
	CoreUsage(p, unit_of->unit, CORE_AFTER_STOPS, victims->jobs, victims->n, use);
	return CoreCheckInvariants(p, unit_of->unit, use, NULL) == QS_CHECK_OK;
}

/*
 * ShareWithinAllowed: the share's usage, once pending stops and the victims
 * have stopped, is within allowed(S,u).
 */
static bool
ShareWithinAllowed(CorePlan *p, const QsJob *of_share, const JobList *victims, bool unused)
{
	int64_t    *use = p->scratch_future;

	(void) unused;
	CoreUsage(p, of_share->unit, CORE_AFTER_STOPS, victims->jobs, victims->n, use);
	return CoreWithinAllowed(p, of_share->share, of_share->unit, use[of_share->share]);
}

/*
 * RepairUnit restores (I1)-(I3) for one unit after an admin lowered a limit,
 * changed a strategy or disabled a share (scheduling.md 3.5), counting jobs whose
 * stop is pending as gone: a share above allowed(S,u) loses its own jobs;
 * beyond that, borrowing shares' jobs go first (while their share still
 * borrows), then any job, theirs included.
 */
static void
RepairUnit(CorePlan *p, int unit)
{
	JobList		candidates;
	JobList		victims;
	QsJob		probe;
	Group		own = {.whose = ONE_SHARE};
	Group		borrowers = {.whose = ANY_SHARE, .borrowing = true};
	Group		any = {.whose = ANY_SHARE};
	int			borrowing;

	memset(&probe, 0, sizeof(probe));
	probe.unit = unit;
	for (int s = 0; s < p->nshares; s++)
	{
		probe.share = s;
		own.share = s;
		if (ShareWithinAllowed(p, &probe, &(JobList) {0}, false))
			continue;
		ListInit(p, &candidates, 1);
		AddGroup(p, unit, &own, &candidates);
		ChooseVictims(p, &probe, &candidates, 0, ShareWithinAllowed, false, &victims);
		StopVictims(p, &victims, NULL);
	}

	if (RoomAfterRepair(p, &probe, &(JobList) {0}, false))
		return;
	/* borrowing shares' jobs, then any job (those again among them) */
	ListInit(p, &candidates, 2);
	AddGroup(p, unit, &borrowers, &candidates);
	borrowing = candidates.n;
	AddGroup(p, unit, &any, &candidates);
	ChooseVictims(p, &probe, &candidates, borrowing, RoomAfterRepair, false, &victims);
	StopVictims(p, &victims, NULL);
}

/*
 * CoreRepairLimits is step 2 of a pass: the repair of every unit.
 */
void
CoreRepairLimits(CorePlan *p)
{
	for (int u = 0; u < p->nunits; u++)
		RepairUnit(p, u);
}
