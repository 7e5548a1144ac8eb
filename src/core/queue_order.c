/*-------------------------------------------------------------------------
 *
 * queue_order.c
 *		Reporting from the policy core: the queue's dispatch order (scheduling.md 7,
 *		queue_snapshot) and why a RUNNABLE job waits (explain), the held-back
 *		job that keeps it waiting in a STRICT share included.
 *
 * The dispatch order is the order in which the dispatch loop of scheduling.md 3.2
 * would try the jobs if none could start: among the jobs under the
 * cursors, one that fits in its share's own capacity with the least
 * (queued_at, id), else the least (queued_at, id).  The skip rule is off:
 * every job has a place.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "policy_int.h"

#define Min64(a, b) ((a) < (b) ? (a) : (b))

/*
 * PlaceEntries gives each job of a placed unit the placement it would have
 * if it were dispatched now, alone, on the hosts as they are (scheduling.md
 * 3.13): what the jobs before it would take is not counted.
 */
static void
PlaceEntries(CorePlan *p, QsQueueEntry *entries, int n)
{
	bool		any = false;

	for (int i = 0; i < n; i++)
	{
		entries[i].nparts = 0;
		entries[i].parts = NULL;
		any |= p->in->units[entries[i].job.unit].placed;
	}
	if (!any)
		return;
	CoreInitHosts(p);
	for (int i = 0; i < n; i++)
	{
		QsQueueEntry *e = &entries[i];
		CorePlacement pl;

		if (!p->in->units[e->job.unit].placed ||
			!CorePlace(p, &e->job, CORE_NOW, NULL, 0, &pl))
			continue;
		e->parts = CoreAlloc(p, sizeof(QsPart) * pl.nparts);
		memcpy(e->parts, pl.parts, sizeof(QsPart) * pl.nparts);
		e->nparts = pl.nparts;
	}
}

/*
 * QsQueueOrder writes the first `front` jobs of the queue in dispatch order
 * (positions 1..front), then the head of every share not among them, with
 * its position if it comes within `horizon` jobs (else 0).  Returns how
 * many entries it wrote; entries has room for front + nshares.
 */
int
QsQueueOrder(const QsInput *in, int front, int horizon, QsQueueEntry *entries)
{
	CorePlan	plan;
	QsOutput	out;
	const QsJob **heads;
	int			n = 0;
	int			heads_left = 0;
	int			position = 0;
	const QsJob *cand;

	CoreInitPlan(&plan, in, &out);
	CoreCursorStart(&plan, INT32_MAX);
	heads = CoreAlloc(&plan, sizeof(QsJob *) * (in->nshares + 1));
	for (int s = 0; s < in->nshares; s++)
	{
		const QsJob *head = CoreShareHead(&plan, s);

		if (head != NULL)
		{
			QsJob	   *copy = CoreAlloc(&plan, sizeof(QsJob));

			*copy = *head;
			heads[s] = copy;
			heads_left++;
		}
	}

	while ((cand = CoreNextCandidate(&plan)) != NULL &&
		   (position < front || (heads_left > 0 && position < horizon)))
	{
		QsJob		job = *cand;

		position++;
		if (heads[job.share] != NULL && heads[job.share]->id == job.id)
		{
			heads[job.share] = NULL;
			heads_left--;
		}
		if (position <= front)
		{
			entries[n].job = job;
			entries[n++].position = position;
		}
		else
			for (int i = 0; i < n; i++)
				if (entries[i].job.id == job.id)
					entries[i].position = position;
		if (position == front)
			for (int s = 0; s < in->nshares; s++)
				if (heads[s] != NULL)
				{
					entries[n].job = *heads[s];
					entries[n++].position = 0;
				}
		CoreCursorAdvance(&plan, job.share, job.unit);
	}
	PlaceEntries(&plan, entries, n);
	return n;
}

/*
 * QsQueuePosition returns a RUNNABLE job's position in the dispatch order,
 * or 0 when it is not within `horizon` jobs.
 */
int
QsQueuePosition(const QsInput *in, int64_t job_id, int horizon)
{
	CorePlan	plan;
	QsOutput	out;
	const QsJob *cand;
	int			position = 0;

	CoreInitPlan(&plan, in, &out);
	CoreCursorStart(&plan, INT32_MAX);
	while (position < horizon && (cand = CoreNextCandidate(&plan)) != NULL)
	{
		position++;
		if (cand->id == job_id)
			return position;
		CoreCursorAdvance(&plan, cand->share, cand->unit);
	}
	return 0;
}

/*
 * QsStrictHeadHeld tells what keeps a RUNNABLE job of a STRICT share from
 * ever coming under the pass's cursor (scheduling.md 3.2): the first job of
 * its share and unit ahead of it in share order, within `horizon` jobs,
 * that is held back (3.10, 3.11), written to *head with its hold.  The
 * cursor meets that job, does not dispatch it, and the pass skips every
 * later job of the unit.  Jobs that step 1 fails (the runnable timeout,
 * 3.9) do not come under the cursor and hold nothing back.  QS_HOLD_NONE:
 * none (or a BEST_EFFORT share; or the job itself comes first).
 */
QsHold
QsStrictHeadHeld(const QsInput *in, const QsJob *job, int horizon, QsJob *head)
{
	CorePlan	plan;
	QsOutput	out;
	CoreCursor *cur;

#ifndef QS_MUTANT_STRICT
	if (!in->shares[job->share].strict)
#endif
		return QS_HOLD_NONE;
	CoreInitPlan(&plan, in, &out);
	CoreTimeBasedWork(&plan);
	cur = &plan.cursors[CORE_AT(&plan, job->share, job->unit)];
	cur->below = INT32_MAX;
	CoreCursorAdvance(&plan, job->share, job->unit);
	for (int n = 0; n < horizon && cur->has_head && QsShareOrderBefore(&cur->head, job); n++)
	{
		QsHold		hold = QsHeldBack(in, &cur->head);

		if (hold != QS_HOLD_NONE)
		{
			*head = cur->head;
			return hold;
		}
		CoreCursorAdvance(&plan, job->share, job->unit);
	}
	return QS_HOLD_NONE;
}

/*
 * LenderBefore: in explain's list, a lender with more lendable idle capacity
 * comes first, then one that lends more, then the lower share index.
 */
static bool
LenderBefore(const QsWhyLender *a, const QsWhyLender *b)
{
	if (a->lendable_idle != b->lendable_idle)
		return a->lendable_idle > b->lendable_idle;
	if (a->lends != b->lends)
		return a->lends > b->lends;
	return a->share < b->share;
}

/*
 * SortLenders sorts explain's lenders (insertion: a queue has few shares).
 */
static void
SortLenders(QsWhyLender *lenders, int n)
{
	for (int i = 1; i < n; i++)
	{
		QsWhyLender l = lenders[i];
		int			j = i;

		for (; j > 0 && LenderBefore(&l, &lenders[j - 1]); j--)
			lenders[j] = lenders[j - 1];
		lenders[j] = l;
	}
}

/*
 * SupplyNumbers fills why's numbers behind (I3) for a job of unit u in the
 * state use[] (each share's usage), counted as CoreCheckInvariants counts
 * them with the job added: each share's borrowed(S,u), and each lender's
 * idle capacity less what its waiting jobs want when the job must borrow,
 * at most its lendable capacity, plus unassigned(u).  The lenders listed
 * are those with capacity of the unit: the others lend nothing.
 */
static void
SupplyNumbers(CorePlan *p, const QsJob *job, const int64_t *use, QsWhy *why)
{
	const QsInput *in = p->in;
	int			u = job->unit;
	bool		borrows = CoreBorrowing(p, job->share, u, use[job->share] + job->count);

	why->unassigned = p->unassigned[u];
	why->supply = why->unassigned;
	why->lenders = CoreAlloc(p, sizeof(QsWhyLender) * (in->nshares + 1));
	for (int s = 0; s < in->nshares; s++)
	{
		const QsShare *share = &in->shares[s];
		int64_t		used = use[s] + (s == job->share ? job->count : 0);
		int64_t		cap = share->capacity[u];
		QsWhyLender l = {s, cap, used, used < cap ? cap - used : 0, 0, 0, 0};

		why->borrowed += used > cap ? used - cap : 0;
		if (!CoreLends(share))
			continue;
		l.lendable_idle = Min64(l.idle, QsLendable(share, u));
#ifndef QS_MUTANT_WANTED_CAPACITY
		if (borrows && s != job->share && l.idle > 0)
			l.wanted = CoreWanted(p, s, u, l.idle);
#endif
		l.lends = Min64(l.idle - l.wanted, QsLendable(share, u));
		why->supply += l.lends;
		if (s == job->share)
			why->share_lends = l.lends;
		else if (cap > 0)
			why->lenders[why->nlenders++] = l;
	}
	SortLenders(why->lenders, why->nlenders);
}

/*
 * QsExplainWait tells why a RUNNABLE job could not be dispatched now: the
 * invariant that fails with it added, now or only once pending stops
 * complete and kept promises hold, with the numbers of that state (for
 * (I3) each lender's, in memory from in->alloc); in a placed unit the
 * figures of its host groups in that state (QS_CHECK_HOSTS: it has no
 * placement there; scheduling.md 3.13); and whether preemption would make
 * room for it but for jobs exempt by min_runtime, and until when.
 */
QsWhy
QsExplainWait(const QsInput *in, const QsJob *job)
{
	CorePlan	plan;
	QsOutput	out;
	QsWhy		why;
	int64_t    *use;

	CoreInitPlan(&plan, in, &out);
	CoreRecheckPromises(&plan);
	memset(&why, 0, sizeof(why));
	why.check = CoreDispatchCheck(&plan, job, &why.in_future);
	/* the usage of the state checked last: the one that failed, if any */
	use = plan.scratch_now;
	CoreCheckedUsage(&plan, job, why.in_future, use);
	why.usage = use[job->share];
	why.allowed = QsAllowed(&in->shares[job->share], job->unit);
	why.must_borrow = CoreBorrowing(&plan, job->share, job->unit, why.usage + job->count);
	why.env_usage = in->units[job->unit].unowned_held;
	for (int s = 0; s < in->nshares; s++)
		why.env_usage += use[s];
	if (why.check == QS_CHECK_SUPPLY)
		SupplyNumbers(&plan, job, use, &why);
	if (in->units[job->unit].placed)
		CoreHostFigures(&plan, job, why.in_future ? CORE_FUTURE : CORE_NOW, &why);
	why.exempt_until = QS_NO_TIME;
	if (why.check != QS_CHECK_OK && in->env_enabled)
		why.victims_exempt = CoreVictimsExempt(&plan, job, &why.exempt_until);
	return why;
}
