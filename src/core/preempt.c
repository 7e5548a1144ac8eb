/*-------------------------------------------------------------------------
 *
 * preempt.c
 *		Preemption in the policy core (SPEC 3.3-3.6), each rule a small
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
 * ListInit makes an empty list with room for every held job.
 */
static void
ListInit(CorePlan *p, JobList *list)
{
	list->jobs = CoreAlloc(p, sizeof(QsJob *) * (p->in->nheld + 1));
	list->n = 0;
}

/*
 * VictimOrderBefore: lowest priority, then latest scheduled_at, then
 * highest id (SPEC 3.4).
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
 * SortVictimOrder sorts a group of candidates, from `from` on, in victim
 * order.
 */
static void
SortVictimOrder(JobList *list, int from)
{
	CoreSortJobs(list->jobs + from, list->n - from, VictimOrderBefore);
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
 * RoomForPreemptor tells whether the preemptor could be dispatched (SPEC
 * 3.2, the wanted-capacity rule included) once the victims have stopped;
 * when reclaiming, it must then fit in its share's own capacity (a job
 * never reclaims in order to borrow).
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
 * another of its jobs be taken as a borrowing victim (SPEC 3.4).
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
	ListInit(p, victims);
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
	const QsInput *in = p->in;
	int			borrowing;

	ListInit(p, list);
	for (int i = 0; i < in->nheld; i++)
	{
		const QsJob *h = &in->held[i];
		int			at = CORE_AT(p, h->share, job->unit);

		if (h->share != job->share && Preemptible(p, h, job->unit) &&
			CoreBorrowing(p, h->share, job->unit, p->usage[at] - p->pending[at]))
			list->jobs[list->n++] = h;
	}
	SortVictimOrder(list, 0);
	borrowing = list->n;
#ifndef QS_MUTANT_RECLAIM_OWN_LOWER
	if (in->shares[job->share].in_share_preemption)
	{
		for (int i = 0; i < in->nheld; i++)
		{
			const QsJob *h = &in->held[i];

			if (h->share == job->share && Preemptible(p, h, job->unit) &&
				h->priority < job->priority)
				list->jobs[list->n++] = h;
		}
		SortVictimOrder(list, borrowing);
	}
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
	const QsInput *in = p->in;

	ListInit(p, list);
	for (int i = 0; i < in->nheld; i++)
	{
		const QsJob *h = &in->held[i];

		if (h->share == job->share && Preemptible(p, h, job->unit) &&
#ifndef QS_MUTANT_STRICTLY_LOWER
			h->priority < job->priority
#else
			h->priority <= job->priority
#endif
			)
			list->jobs[list->n++] = h;
	}
	SortVictimOrder(list, 0);
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
	int			at = CORE_AT(p, victim->share, victim->unit);

	d->stop = stop;
	d->preempted_for = preempted_for;
	stopped.stop = stop;
#ifndef QS_MUTANT_UNCLAIMED_STOP_AT_ONCE
	if (!victim->claimed)
	{
		QsStopOutcome o = QsStoppedOutcome(&stopped);
		QsDecision *e;

		d->immediate = true;
		e = CoreAddDecision(p, o.action, victim, o.reason);
		e->counter = o.counter;
		p->usage[at] -= victim->count;
		return;
	}
#endif
	p->pending[at] += victim->count;
}

/*
 * Promise holds the room made for a preemptor (SPEC 3.6): it counts in the
 * future state from now on, and the applier sets promised_at.
 */
static void
Promise(CorePlan *p, const QsJob *job)
{
	QsOutput   *out = p->out;

	CoreIdSetAdd(p, &p->kept_promises, job->id);
	p->promised[CORE_AT(p, job->share, job->unit)] += job->count;
	if (out->npromised == p->promised_cap)
	{
		int64_t    *grown = CoreAlloc(p, sizeof(int64_t) * p->promised_cap * 2);

		memcpy(grown, out->promised, sizeof(int64_t) * out->npromised);
		out->promised = grown;
		p->promised_cap *= 2;
	}
	out->promised[out->npromised++] = job->id;
}

/*
 * CoreTryPreemption tries, for a RUNNABLE job that may not be dispatched, the
 * two attempts of SPEC 3.3 in order and takes the first that makes room:
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

	for (int i = 0; i < victims.n; i++)
		StopVictim(p, victims.jobs[i],
				   victims.jobs[i]->share == job->share ? QS_STOP_IN_SHARE :
				   QS_STOP_CROSS_SHARE, job->id);
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
 * changed a strategy or disabled a share (SPEC 3.5), counting jobs whose
 * stop is pending as gone: a share above allowed(S,u) loses its own jobs;
 * beyond that, borrowing shares' jobs go first (while their share still
 * borrows), then any job, theirs included.
 */
static void
RepairUnit(CorePlan *p, int unit)
{
	const QsInput *in = p->in;
	JobList		candidates;
	JobList		victims;
	QsJob		probe;
	int			borrowing;

	memset(&probe, 0, sizeof(probe));
	probe.unit = unit;
	for (int s = 0; s < p->nshares; s++)
	{
		probe.share = s;
		if (ShareWithinAllowed(p, &probe, &(JobList) {0}, false))
			continue;
		ListInit(p, &candidates);
		for (int i = 0; i < in->nheld; i++)
			if (in->held[i].share == s && Preemptible(p, &in->held[i], unit))
				candidates.jobs[candidates.n++] = &in->held[i];
		SortVictimOrder(&candidates, 0);
		ChooseVictims(p, &probe, &candidates, 0, ShareWithinAllowed, false, &victims);
		for (int i = 0; i < victims.n; i++)
			StopVictim(p, victims.jobs[i], QS_STOP_CAPACITY_REDUCED, 0);
	}

	if (RoomAfterRepair(p, &probe, &(JobList) {0}, false))
		return;
	/* borrowing shares' jobs, then any job (those again among them) */
	candidates.jobs = CoreAlloc(p, sizeof(QsJob *) * (2 * in->nheld + 1));
	candidates.n = 0;
	for (int i = 0; i < in->nheld; i++)
	{
		const QsJob *h = &in->held[i];
		int			at = CORE_AT(p, h->share, unit);

		if (Preemptible(p, h, unit) &&
			CoreBorrowing(p, h->share, unit, p->usage[at] - p->pending[at]))
			candidates.jobs[candidates.n++] = h;
	}
	SortVictimOrder(&candidates, 0);
	borrowing = candidates.n;
	for (int i = 0; i < in->nheld; i++)
		if (Preemptible(p, &in->held[i], unit))
			candidates.jobs[candidates.n++] = &in->held[i];
	SortVictimOrder(&candidates, borrowing);
	ChooseVictims(p, &probe, &candidates, borrowing, RoomAfterRepair, false, &victims);
	for (int i = 0; i < victims.n; i++)
		StopVictim(p, victims.jobs[i], QS_STOP_CAPACITY_REDUCED, 0);
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
