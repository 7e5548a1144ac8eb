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

/* A list of held jobs: the victims chosen. */
typedef struct JobList
{
	const QsJob **jobs;
	int			n;
	int			cap;
} JobList;

/*
 * ListPush appends a job to a list, growing it.
 */
static void
ListPush(CorePlan *p, JobList *list, const QsJob *job)
{
	list->jobs = CoreGrow(p, list->jobs, list->n, &list->cap, sizeof(QsJob *));
	list->jobs[list->n++] = job;
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
 * The candidates of one attempt: up to two groups, read one after the
 * other, each a merge in victim order of the held jobs of its shares, read
 * from the source only as far as the choice goes.
 */
typedef struct Candidates
{
	int			unit;
	int			ngroups;
	Group		groups[2];
	int			group;			/* the group being read */
	int64_t		below;			/* its priority bound */
	bool	   *member;			/* [s]: the share is in the group */
	bool	   *started;		/* [s]: its head was read */
	bool	   *has_head;		/* [s] */
	QsJob	   *heads;			/* [s]: its next job in victim order */
	bool		exemptions;		/* min_runtime applies (not to repairs) */
	QsTime		exempt_end;		/* the earliest end of an exemption passed
								 * over; QS_NO_TIME: none */
} Candidates;

/*
 * CandidatesInit makes the candidates of an attempt on a unit, with no
 * group yet.
 */
static void
CandidatesInit(CorePlan *p, Candidates *c, int unit)
{
	memset(c, 0, sizeof(*c));
	c->unit = unit;
	c->group = -1;
	c->exempt_end = QS_NO_TIME;
	c->member = CoreAlloc(p, sizeof(bool) * (p->nshares + 1));
	c->started = CoreAlloc(p, sizeof(bool) * (p->nshares + 1));
	c->has_head = CoreAlloc(p, sizeof(bool) * (p->nshares + 1));
	c->heads = CoreAlloc(p, sizeof(QsJob) * (p->nshares + 1));
}

static void
AddGroup(Candidates *c, Group g)
{
	c->groups[c->ngroups++] = g;
}

/*
 * PriorityBound: the held jobs of a group have a priority below this; with
 * a preemptor, strictly lower than its own (equal priority never preempts,
 * scheduling.md 3.3).
 */
static int64_t
PriorityBound(const Group *g)
{
	if (g->above == NULL)
		return QS_ANY_PRIORITY;
#ifndef QS_MUTANT_STRICTLY_LOWER
	return g->above->priority;
#else
	return (int64_t) g->above->priority + 1;
#endif
}

/*
 * StartGroup makes the next group the one being read: its shares are those
 * it names, and, for a group of borrowers, those borrowing the unit once
 * pending stops have completed.  Returns false when no group is left.
 */
static bool
StartGroup(CorePlan *p, Candidates *c)
{
	const Group *g;

	if (c->group + 1 >= c->ngroups)
		return false;
	g = &c->groups[++c->group];
	c->below = PriorityBound(g);
	CoreUsage(p, c->unit, CORE_AFTER_STOPS, NULL, 0, p->scratch_now);
	for (int s = 0; s < p->nshares; s++)
	{
		c->member[s] = !(g->whose == ONE_SHARE && s != g->share) &&
			!(g->whose == OTHER_SHARES && s == g->share) &&
			!(g->borrowing && !CoreBorrowing(p, s, c->unit, p->scratch_now[s]));
		c->started[s] = c->has_head[s] = false;
	}
	return true;
}

/*
 * NoteEarliest lowers *earliest (QS_NO_TIME: none yet) to a time, unless the
 * time is QS_NO_TIME or not earlier.
 */
static void
NoteEarliest(QsTime *earliest, QsTime time)
{
	if (time != QS_NO_TIME && (*earliest == QS_NO_TIME || time < *earliest))
		*earliest = time;
}

/*
 * ExemptUntil returns when a held job stops being exempt from preemption
 * for a preemptor (scheduling.md 3.3): a job an agent has claimed, of a
 * share with min_runtime, is no candidate until min_runtime has passed
 * since its scheduled_at.  QS_NO_TIME: it is not exempt now.
 */
static QsTime
ExemptUntil(const CorePlan *p, const QsJob *job)
{
	QsTime		min_runtime = p->in->shares[job->share].min_runtime;
	QsTime		until;

	if (min_runtime <= 0 || !job->claimed || job->scheduled_at == QS_NO_TIME)
		return QS_NO_TIME;
	until = job->scheduled_at > INT64_MAX - min_runtime ? INT64_MAX :
		job->scheduled_at + min_runtime;
	return until > p->in->now ? until : QS_NO_TIME;
}

/*
 * AdvanceShare reads a share's next held job of the unit in victim order
 * that may be a victim at all: not decided in this pass, and, for a
 * preemptor, not exempt by its share's min_runtime (the earliest end of an
 * exemption passed over is noted).
 */
static void
AdvanceShare(CorePlan *p, Candidates *c, int s)
{
	const QsJobSource *src = &p->in->source;
	QsJob		after = c->heads[s];
	bool		from_start = !c->started[s];

	c->started[s] = true;
	c->has_head[s] = false;
	while (src->held(src->arg, s, c->unit, from_start ? NULL : &after, c->below,
					 &c->heads[s]))
	{
		QsTime		exempt = c->exemptions ? ExemptUntil(p, &c->heads[s]) : QS_NO_TIME;

		after = c->heads[s];
		from_start = false;
#ifdef QS_MUTANT_MIN_RUNTIME
		exempt = QS_NO_TIME;
#endif
		if (exempt != QS_NO_TIME)
		{
			NoteEarliest(&c->exempt_end, exempt);
			continue;
		}
		if (!CoreIdSetHas(&p->handled, c->heads[s].id))
		{
			c->has_head[s] = true;
			return;
		}
	}
}

/*
 * NextCandidate returns the next candidate in victim order (a copy that
 * lasts the pass), going on to the next group when one runs out; NULL
 * when none is left.  *borrower tells whether it came from a group of
 * borrowers.
 */
static const QsJob *
NextCandidate(CorePlan *p, Candidates *c, bool *borrower)
{
	for (;;)
	{
		int			best = -1;

		if (c->group >= 0)
			for (int s = 0; s < p->nshares; s++)
			{
				if (!c->member[s])
					continue;
				if (!c->started[s])
					AdvanceShare(p, c, s);
				if (c->has_head[s] &&
					(best < 0 || VictimOrderBefore(&c->heads[s], &c->heads[best])))
					best = s;
			}
		if (best >= 0)
		{
			QsJob	   *job = CoreAlloc(p, sizeof(QsJob));

			*job = c->heads[best];
			*borrower = c->groups[c->group].borrowing;
			AdvanceShare(p, c, best);
			return job;
		}
		if (!StartGroup(p, c))
			return NULL;
	}
}

/*
 * Chosen tells whether a job is among the victims chosen so far.
 */
static bool
Chosen(const JobList *victims, const QsJob *job)
{
	for (int i = 0; i < victims->n; i++)
		if (victims->jobs[i] != NULL && victims->jobs[i]->id == job->id)
			return true;
	return false;
}

/*
 * What a set of victims must make room for: a preemptor, reclaiming or not;
 * or, in a repair, a share and unit.
 */
typedef struct RoomGoal
{
	const QsJob *job;			/* the preemptor; NULL in a repair */
	bool		reclaim;		/* the preemptor reclaims its own capacity */
	int			share;			/* a repair's share */
	int			unit;			/* a repair's unit */
} RoomGoal;

/* What a set of victims must achieve. */
typedef bool (*RoomTest) (CorePlan *p, const RoomGoal *goal, const JobList *victims);

/*
 * RoomForPreemptor tells whether the preemptor could be dispatched
 * (scheduling.md 3.2, the wanted-capacity rule included) once the victims
 * have stopped; when reclaiming, it must then fit in its share's own
 * capacity (a job never reclaims in order to borrow); in a placed unit it
 * must then have a placement, their parts freed (3.13).
 */
static bool
RoomForPreemptor(CorePlan *p, const RoomGoal *goal, const JobList *victims)
{
	const QsJob *job = goal->job;
	int64_t    *use = p->scratch_future;

	CoreUsage(p, job->unit, CORE_FUTURE, victims->jobs, victims->n, use);
#ifndef QS_MUTANT_RECLAIM_NOT_TO_BORROW
	if (goal->reclaim && CoreBorrowing(p, job->share, job->unit, use[job->share] + job->count))
		return false;
#endif
	if (!CoreInvariantsHoldWith(p, use, job))
		return false;
#ifndef QS_MUTANT_VICTIMS_PLACE
	if (p->in->units[job->unit].placed)
	{
		CorePlacement placed;

		return CorePlace(p, job, CORE_FUTURE, victims->jobs, victims->n, &placed);
	}
#endif
	return true;
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
 * ChooseVictims takes candidates in order until the test passes, skipping a
 * borrowing candidate whose share is no longer borrowing; then walks the
 * chosen list backwards and drops every victim that is not needed.
 * Returns false, choosing nobody, when all candidates together do not pass.
 */
static bool
ChooseVictims(CorePlan *p, const RoomGoal *goal, Candidates *candidates,
			  RoomTest test, JobList *victims)
{
	memset(victims, 0, sizeof(*victims));
	while (!test(p, goal, victims))
	{
		bool		borrower;
		const QsJob *c = NextCandidate(p, candidates, &borrower);

		if (c == NULL)
			break;
		if (Chosen(victims, c))
			continue;			/* a job in both groups of a repair */
#ifndef QS_MUTANT_STILL_BORROWING
		if (borrower && !StillBorrowing(p, c->share, c->unit, victims))
			continue;
#endif
		ListPush(p, victims, c);
	}
	if (!test(p, goal, victims))
	{
		victims->n = 0;
		return false;
	}
#ifndef QS_MUTANT_BACKWARDS_WALK
	for (int i = victims->n - 1; i >= 0; i--)
	{
		const QsJob *v = victims->jobs[i];

		victims->jobs[i] = NULL;
		if (!test(p, goal, victims))
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
 * ReclaimCandidates gives the candidates of the first attempt: other
 * shares' jobs borrowing the unit, regardless of priority, then, with
 * in-share preemption, the share's own jobs of strictly lower priority.
 */
static void
ReclaimCandidates(CorePlan *p, const QsJob *job, Candidates *c)
{
	CandidatesInit(p, c, job->unit);
	AddGroup(c, (Group) {.whose = OTHER_SHARES, .share = job->share, .borrowing = true});
#ifndef QS_MUTANT_RECLAIM_OWN_LOWER
	if (p->in->shares[job->share].in_share_preemption)
		AddGroup(c, (Group) {.whose = ONE_SHARE, .share = job->share, .above = job});
#endif
}

/*
 * InShareCandidates gives the candidates of the second attempt: the share's
 * own held jobs of strictly lower priority (equal priority never preempts).
 */
static void
InShareCandidates(CorePlan *p, const QsJob *job, Candidates *c)
{
	CandidatesInit(p, c, job->unit);
	AddGroup(c, (Group) {.whose = ONE_SHARE, .share = job->share, .above = job});
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
 * future state from now on, and the applier sets promised_at.  In a placed
 * unit it reserves the preemptor's placement in the future state, its
 * victims stopping (3.13).
 */
static void
Promise(CorePlan *p, const QsJob *job)
{
	QsOutput   *out = p->out;
	CorePlacement placed;

	if (p->in->units[job->unit].placed &&
		CorePlace(p, job, CORE_FUTURE, NULL, 0, &placed))
		CoreReserve(p, job, placed.parts, placed.nparts, true);
	CoreKeepPromise(p, job);
	out->promised = CoreGrow(p, out->promised, out->npromised,
							 &p->promised_cap, sizeof(int64_t));
	out->promised[out->npromised++] = job->id;
}

/*
 * ReclaimMayFit tells whether a reclaim could ever make the job fit in its
 * share's own capacity in the future state: always when the share's own
 * jobs are candidates too; otherwise the victims, all of other shares,
 * leave its usage as it is, and a job that does not fit now never will.
 * Then the reclaim is not tried: walking every borrower to find no room
 * would change nothing (it was most of a replay's time).
 */
static bool
ReclaimMayFit(const CorePlan *p, const QsJob *job)
{
	int			at = CORE_AT(p, job->share, job->unit);

#ifndef QS_MUTANT_RECLAIM_NOT_TO_BORROW
	if (!p->in->shares[job->share].in_share_preemption)
		return !CoreBorrowing(p, job->share, job->unit,
							  p->usage[at] - p->pending[at] + p->promised[at] + job->count);
#endif
	return true;
}

/*
 * Attempts makes the two attempts of scheduling.md 3.3 for a RUNNABLE job
 * that may not be dispatched, in order, and takes the first that makes
 * room: reclaim (only while the share holds less than its own capacity),
 * then in-share preemption.  With exemptions, claimed jobs within their
 * share's min_runtime are no candidates; *exempt_end is the earliest end
 * of an exemption passed over (QS_NO_TIME: none).  Returns whether victims
 * were found; nothing is stopped.
 */
static bool
Attempts(CorePlan *p, const QsJob *job, bool exemptions, JobList *victims,
		 QsTime *exempt_end)
{
	const QsShare *share = &p->in->shares[job->share];
	Candidates	candidates;
	bool		found = false;

	*exempt_end = QS_NO_TIME;
#ifndef QS_MUTANT_RECLAIM_ONLY_UNDER_CAPACITY
	if (p->usage[CORE_AT(p, job->share, job->unit)] < share->capacity[job->unit])
#endif
	if (ReclaimMayFit(p, job))
	{
		ReclaimCandidates(p, job, &candidates);
		candidates.exemptions = exemptions;
		found = ChooseVictims(p, &(RoomGoal) {.job = job, .reclaim = true},
							  &candidates, RoomForPreemptor, victims);
		*exempt_end = candidates.exempt_end;
	}
#ifndef QS_MUTANT_IN_SHARE
	if (!found && share->in_share_preemption)
	{
		InShareCandidates(p, job, &candidates);
		candidates.exemptions = exemptions;
		found = ChooseVictims(p, &(RoomGoal) {.job = job, .reclaim = false},
							  &candidates, RoomForPreemptor, victims);
		NoteEarliest(exempt_end, candidates.exempt_end);
	}
#endif
	return found;
}

/*
 * CoreTryPreemption tries preemption for a RUNNABLE job that may not be
 * dispatched (Attempts).  The victims stop; the room is promised to the
 * job, which starts at once if every victim stopped at once.  Returns
 * whether victims were given.  When none were found while jobs exempt by
 * min_runtime were passed over, the pass asks to run again when the
 * earliest exemption ends (QsOutput.wake_at).
 */
bool
CoreTryPreemption(CorePlan *p, const QsJob *job)
{
	JobList		victims;
	QsTime		exempt_end;

	if (!Attempts(p, job, true, &victims, &exempt_end))
	{
		NoteEarliest(&p->out->wake_at, exempt_end);
		return false;
	}
	StopVictims(p, &victims, job);
	if (CoreMayDispatch(p, job))
		CoreDispatch(p, job);
	else
		Promise(p, job);
	return true;
}

/*
 * CoreVictimsExempt tells whether a RUNNABLE job that may not be dispatched
 * waits only because its possible victims are exempt by min_runtime: no
 * victims are found with the exemptions, and some would be without them;
 * *until is when the earliest exemption passed over ends.  Nothing is
 * stopped (explain).
 */
bool
CoreVictimsExempt(CorePlan *p, const QsJob *job, QsTime *until)
{
	JobList		victims;
	QsTime		ignored;

	if (Attempts(p, job, true, &victims, until) || *until == QS_NO_TIME)
		return false;
	return Attempts(p, job, false, &victims, &ignored);
}

/*
 * RoomAfterRepair tells whether (I1)-(I3) hold for the goal's unit, every
 * share within allowed(S,u), once pending stops and the victims have
 * stopped.
 */
static bool
RoomAfterRepair(CorePlan *p, const RoomGoal *goal, const JobList *victims)
{
	int64_t    *use = p->scratch_future;

	CoreUsage(p, goal->unit, CORE_AFTER_STOPS, victims->jobs, victims->n, use);
	return CoreCheckInvariants(p, goal->unit, use, NULL) == QS_CHECK_OK;
}

/*
 * ShareWithinAllowed: the goal's share's usage of its unit, once pending
 * stops and the victims have stopped, is within allowed(S,u).
 */
static bool
ShareWithinAllowed(CorePlan *p, const RoomGoal *goal, const JobList *victims)
{
	return CoreWithinAllowed(p, goal->share, goal->unit,
							 CoreShareUsage(p, goal->share, goal->unit, CORE_AFTER_STOPS,
											victims->jobs, victims->n));
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
	Candidates	candidates;
	JobList		victims;
	RoomGoal	goal = {.unit = unit};
	JobList		none = {0};

	for (int s = 0; s < p->nshares; s++)
	{
		goal.share = s;
		if (ShareWithinAllowed(p, &goal, &none))
			continue;
		CandidatesInit(p, &candidates, unit);
		AddGroup(&candidates, (Group) {.whose = ONE_SHARE, .share = s});
		ChooseVictims(p, &goal, &candidates, ShareWithinAllowed, &victims);
		StopVictims(p, &victims, NULL);
	}

	if (RoomAfterRepair(p, &goal, &none))
		return;
	/* borrowing shares' jobs, then any job (those again among them) */
	CandidatesInit(p, &candidates, unit);
	AddGroup(&candidates, (Group) {.whose = ANY_SHARE, .borrowing = true});
	AddGroup(&candidates, (Group) {.whose = ANY_SHARE});
	ChooseVictims(p, &goal, &candidates, RoomAfterRepair, &victims);
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
