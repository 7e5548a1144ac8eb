/*-------------------------------------------------------------------------
 *
 * queue_order.c
 *		Reporting from the policy core: the queue's dispatch order (scheduling.md 7,
 *		queue_snapshot) and why a RUNNABLE job waits (explain).
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
 * QsExplainWait tells why a RUNNABLE job could not be dispatched now: the
 * invariant that fails with it added, now or only once pending stops
 * complete and kept promises hold; and whether preemption would make room
 * for it but for jobs exempt by min_runtime, and until when.
 */
QsWhy
QsExplainWait(const QsInput *in, const QsJob *job)
{
	CorePlan	plan;
	QsOutput	out;
	QsWhy		why;
	int			at;

	CoreInitPlan(&plan, in, &out);
	CoreRecheckPromises(&plan);
	at = CORE_AT(&plan, job->share, job->unit);
	memset(&why, 0, sizeof(why));
	why.check = CoreDispatchCheck(&plan, job, &why.in_future);
	why.usage = plan.usage[at];
	why.allowed = QsAllowed(&in->shares[job->share], job->unit);
	why.must_borrow = !CoreFitsOwnCapacity(&plan, job);
	for (int s = 0; s < in->nshares; s++)
		why.env_usage += plan.usage[CORE_AT(&plan, s, job->unit)];
	why.exempt_until = QS_NO_TIME;
	if (why.check != QS_CHECK_OK && in->env_enabled)
		why.victims_exempt = CoreVictimsExempt(&plan, job, &why.exempt_until);
	return why;
}
