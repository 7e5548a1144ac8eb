/*-------------------------------------------------------------------------
 *
 * policy.c
 *		The scheduling pass of one job queue (scheduling.md 3), in its order:
 *		(1) time-based work: expired leases, timeouts, runnable timeouts;
 *		(2) repair of limits (3.5); (3) the re-check of promises (3.6);
 *		(4) promised jobs whose victims have all stopped; (5) the dispatch
 *		loop (3.2) with preemption; (6) the misconfiguration limits (3.7).
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "policy_int.h"

/*
 * QsIsPreemption tells whether a stop is a preemption (scheduling.md 3.6), which
 * a stopped job counts in preemption_count and which loses the attempt's
 * work (replay_recorded's lost hours).
 */
bool
QsIsPreemption(QsStop stop)
{
	return stop == QS_STOP_CROSS_SHARE || stop == QS_STOP_IN_SHARE ||
		stop == QS_STOP_CAPACITY_REDUCED;
}

/*
 * QsHolds tells whether a job in a state holds its instances (scheduling.md
 * 3.1): SCHEDULED, STARTING and RUNNING, also while a stop is pending.
 */
bool
QsHolds(QsJobState state)
{
	return state == QS_SCHEDULED || state == QS_STARTING || state == QS_RUNNING;
}

/*
 * QsFailedOutcome: an attempt failed (FAILED report, lease lost, timeout):
 * failed_attempts + 1, back to RUNNABLE if that is below max_attempts, else
 * FAILED (scheduling.md 3.8).
 */
QsStopOutcome
QsFailedOutcome(const QsJob *job)
{
	QsStopOutcome o = {QS_REQUEUE, QS_COUNT_FAILED_ATTEMPT, NULL};

	if (job->failed_attempts + 1 >= job->max_attempts)
		o.action = QS_FAIL;
	return o;
}

/*
 * PeerOutcome: a job whose parts stopped after one of them failed, lost
 * its lease or was released goes on as that first part's cause says
 * (scheduling.md 3.14): a failed attempt, a lost lease, a release.
 */
static QsStopOutcome
PeerOutcome(const QsJob *job)
{
	QsStopOutcome o = {QS_REQUEUE, QS_COUNT_NONE, QsReasonName(QS_REASON_RELEASED)};

	if (job->stop == QS_STOP_PEER_FAILED)
	{
		o = QsFailedOutcome(job);
		o.reason = QsStopName(QS_STOP_PEER_FAILED);
	}
	else if (job->stop == QS_STOP_PEER_LOST)
		o = QsLeaseLostOutcome(job);
	return o;
}

/*
 * QsStoppedOutcome: a job stopped, by its agent's STOPPED report or by its
 * lease expiring.  A preempted job goes back to RUNNABLE with
 * preemption_count + 1, or fails once that exceeds preemption_retries; a
 * timed-out attempt fails as an attempt; a terminated job fails; a job
 * whose peer part ended goes on as that part's cause says; a lease lost
 * with no stop pending is a lease loss (scheduling.md 3.6, 3.8, 3.10,
 * 3.14).
 */
QsStopOutcome
QsStoppedOutcome(const QsJob *job)
{
	QsStopOutcome o = {QS_REQUEUE, QS_COUNT_NONE, QsStopName(job->stop)};

	if (QsIsPreemption(job->stop))
	{
		o.counter = QS_COUNT_PREEMPTION;
		if (job->preemption_retries >= 0 &&
			job->preemption_count + 1 > job->preemption_retries)
			o.action = QS_FAIL;
		return o;
	}
	if (job->stop == QS_STOP_TERMINATED)
	{
		o.action = QS_FAIL;
		return o;
	}
	if (job->stop == QS_STOP_PEER_FAILED || job->stop == QS_STOP_PEER_LOST ||
		job->stop == QS_STOP_PEER_RELEASED)
		return PeerOutcome(job);
#ifndef QS_MUTANT_LEASE_LOSS
	if (job->stop == QS_STOP_NONE)
		return QsLeaseLostOutcome(job);
#endif
	o = QsFailedOutcome(job);
	o.reason = job->stop == QS_STOP_TIMEOUT ? QsStopName(QS_STOP_TIMEOUT) :
		QsReasonName(QS_REASON_LEASE_EXPIRED);
	return o;
}

/*
 * QsLeaseLostOutcome: a lease ran out with no stop pending (the agent or
 * its host was lost): back to RUNNABLE with lease_losses + 1 and no failed
 * attempt, or FAILED once that exceeds max_lease_losses (scheduling.md
 * 3.10).
 */
QsStopOutcome
QsLeaseLostOutcome(const QsJob *job)
{
	QsStopOutcome o = {QS_REQUEUE, QS_COUNT_LEASE_LOSS, QsReasonName(QS_REASON_LEASE_EXPIRED)};

	if (job->lease_losses + 1 > job->max_lease_losses)
		o.action = QS_FAIL;
	return o;
}

/*
 * QsClaimBackoff returns how long a job is held back after its k-th claim
 * timeout: the claim timeout times 2^(k-1), at most QS_CLAIM_BACKOFF_MAX
 * (scheduling.md 3.10).
 */
QsTime
QsClaimBackoff(QsTime claim_timeout, int32_t claim_requeues)
{
	QsTime		backoff = claim_timeout;

	for (int32_t k = 1; k < claim_requeues && backoff < QS_CLAIM_BACKOFF_MAX; k++)
		backoff *= 2;			/* below 2^33 s before doubling: no overflow */
	return backoff < QS_CLAIM_BACKOFF_MAX ? backoff : QS_CLAIM_BACKOFF_MAX;
}

/*
 * QsOverBudget tells whether a share has spent its budget of a unit this
 * period (scheduling.md 3.11): it has one, and spent(S,u) >= budget(S,u) *
 * 3600, in doubles (share_budget's exhausted computes it in float8 alike).
 * A budget may have a fraction (0.5: 1800 instance-seconds); 0 forbids the
 * unit.
 */
bool
QsOverBudget(const QsShare *share, int unit)
{
	double		budget;

	if (share->budget == NULL || share->budget[unit] < 0)
		return false;
	budget = share->budget[unit];
#ifdef QS_MUTANT_BUDGET_FRACTION
	budget = (double) (int64_t) budget; /* whole instance-hours, as before 0.4 */
#endif
	return (share->spent == NULL ? 0 : share->spent[unit]) >= budget * 3600;
}

/*
 * QsWaitsForDependencies tells whether a RUNNABLE job waits for jobs it
 * depends on (scheduling.md 3.17): one of them has not SUCCEEDED.  Such a
 * job is held back, and is not in its share's order at all: a source gives
 * it not (QsSourceGives), so that in a STRICT share it holds back no job
 * behind it, which might be one it waits for.
 */
bool
QsWaitsForDependencies(const QsJob *job)
{
#ifndef QS_MUTANT_DEPENDENCY_HOLD
	return job->deps_waiting > 0;
#else
	(void) job;
	return false;
#endif
}

/*
 * QsHeldBack tells whether a RUNNABLE job is held back from dispatch
 * whatever the capacity (scheduling.md 3.10, 3.11, 3.13, 3.17): it waits
 * for jobs it depends on; its share has spent its budget of the unit; in a
 * placed unit, it has no placement even were every host empty
 * (NO_AGENT_FITS); or it is in its backoff after a claim timeout.
 */
QsHold
QsHeldBack(const QsInput *in, const QsJob *job)
{
	if (QsWaitsForDependencies(job))
		return QS_HOLD_DEPENDENCY;
#ifndef QS_MUTANT_BUDGET
	if (QsOverBudget(&in->shares[job->share], job->unit))
		return QS_HOLD_BUDGET_EXHAUSTED;
#endif

#ifndef QS_MUTANT_NO_AGENT_FITS
	if (QsNoAgentFits(in, job))
		return QS_HOLD_NO_AGENT_FITS;
#endif
#ifndef QS_MUTANT_CLAIM_BACKOFF
	if (job->claim_backoff_until != QS_NO_TIME && job->claim_backoff_until > in->now)
		return QS_HOLD_CLAIM_BACKOFF;
#endif
	return QS_HOLD_NONE;
}

/*
 * CoreAlloc returns zeroed memory from the caller's allocator.
 */
void *
CoreAlloc(CorePlan *p, size_t size)
{
	return p->in->alloc(p->in->alloc_arg, size);
}

/*
 * CoreGrow returns an array of n elements of `size` bytes with room for one
 * more: the array itself, or, when it is full, a copy twice as large (64
 * elements for an empty one); *cap is the room of the array returned.
 */
void *
CoreGrow(CorePlan *p, void *array, int n, int *cap, size_t size)
{
	void	   *grown;

	if (n < *cap)
		return array;
	*cap = *cap > 0 ? 2 * *cap : 64;
	grown = CoreAlloc(p, size * *cap);
	if (n > 0)
		memcpy(grown, array, size * n);
	return grown;
}

/*
 * HashId mixes the bits of a job id, so that sequential ids spread over the
 * slots of a CoreIdSet.
 */
static uint64_t
HashId(int64_t id)
{
	uint64_t	x = (uint64_t) id;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/*
 * CoreIdSetAdd adds a job id to a set, growing it when half full.
 */
void
CoreIdSetAdd(CorePlan *p, CoreIdSet *set, int64_t id)
{
	if (CoreIdSetHas(set, id))
		return;
	p->version++;				/* the jobs handled count in Wanted */
	if (2 * (set->count + 1) > set->size)
	{
		CoreIdSet	grown = {0};

		grown.size = set->size ? set->size * 2 : 64;
		grown.slots = CoreAlloc(p, sizeof(int64_t) * grown.size);
		for (int i = 0; i < set->size; i++)
			if (set->slots[i] != 0)
				CoreIdSetAdd(p, &grown, set->slots[i]);
		*set = grown;
	}
	for (uint64_t i = HashId(id);; i++)
	{
		int64_t    *slot = &set->slots[i & (set->size - 1)];

		if (*slot == 0)
		{
			*slot = id;
			set->count++;
			return;
		}
	}
}

/*
 * CoreIdSetHas tells whether a job id is in a set.
 */
bool
CoreIdSetHas(const CoreIdSet *set, int64_t id)
{
	if (set->size == 0)
		return false;
	for (uint64_t i = HashId(id);; i++)
	{
		int64_t		slot = set->slots[i & (set->size - 1)];

		if (slot == id)
			return true;
		if (slot == 0)
			return false;
	}
}

/*
 * CoreTimeIdBefore: (a_at, a_id) comes before (b_at, b_id), the time first,
 * then the id.
 */
bool
CoreTimeIdBefore(QsTime a_at, int64_t a_id, QsTime b_at, int64_t b_id)
{
	if (a_at != b_at)
		return a_at < b_at;
	return a_id < b_id;
}

/*
 * CoreSortJobs sorts jobs in an order, stably.  An insertion sort: the
 * lists are short (one queue's held or promised jobs).
 */
void
CoreSortJobs(const QsJob **jobs, int n, CoreJobOrder before)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && before(jobs[j], jobs[j - 1]); j--)
		{
			const QsJob *t = jobs[j];

			jobs[j] = jobs[j - 1];
			jobs[j - 1] = t;
		}
}

/*
 * CoreAddDecision appends a decision about a job to the output, and marks the
 * job as decided in this pass.
 */
QsDecision *
CoreAddDecision(CorePlan *p, QsAction action, const QsJob *job, const char *reason)
{
	QsOutput   *out = p->out;
	QsDecision *d;

	out->decisions = CoreGrow(p, out->decisions, out->ndecisions,
							  &p->decisions_cap, sizeof(QsDecision));
	d = &out->decisions[out->ndecisions++];
	memset(d, 0, sizeof(*d));
	d->action = action;
	d->job_id = job->id;
	d->share = job->share;
	d->unit = job->unit;
	d->count = job->count;
	d->reason = reason;
	CoreIdSetAdd(p, &p->handled, job->id);
	return d;
}

/*
 * CoreEndAttempt records that a held job stopped or lost its lease, with the
 * outcome of QsStoppedOutcome, and releases its capacity.
 */
void
CoreEndAttempt(CorePlan *p, const QsJob *job)
{
	QsStopOutcome o = QsStoppedOutcome(job);
	QsDecision *d = CoreAddDecision(p, o.action, job, o.reason);

	d->counter = o.counter;
	CoreHold(p, job, -1);
}

/*
 * NotClaimed sends a SCHEDULED job that no agent claimed within the
 * queue's claim timeout back to RUNNABLE, counting no attempt, and holds
 * it back from dispatch for its backoff (scheduling.md 3.10).  A job of
 * several parts is SCHEDULED until every part is claimed (3.14): the
 * parts claimed let go.
 */
static void
NotClaimed(CorePlan *p, const QsJob *job)
{
	QsDecision *d = CoreAddDecision(p, QS_REQUEUE, job, QsReasonName(QS_REASON_NOT_CLAIMED));

	d->counter = QS_COUNT_NOT_CLAIMED;
	d->backoff_until = p->in->now + QsClaimBackoff(p->in->claim_timeout,
												   job->claim_requeues + 1);
	CoreHold(p, job, -1);
}

/*
 * PartsHold tells whether a job of several parts, one of which lost its
 * lease, still has a claimed part that holds: not ended, its lease
 * running.  Unclaimed parts hold nothing (a stop drops them at once).
 */
static bool
PartsHold(const QsJob *job, QsTime lapsed)
{
#ifndef QS_MUTANT_PART_LEASES
	for (int i = 0; i < job->nparts; i++)
		if (!job->parts[i].ended && job->parts[i].lease_until != QS_NO_TIME &&
			job->parts[i].lease_until >= lapsed)
			return true;
#endif
	return false;
}

/*
 * LeaseLapsedBefore: a lease that ran out before this time is lost now (the
 * queue's fence_grace after its end, scheduling.md 3.10: the agent's
 * supervisor has killed the job's processes by then).  A lease that ran out
 * later is within its grace: the pass wakes when that ends (wake_at).
 */
static QsTime
LeaseLapsedBefore(const QsInput *in)
{
#ifndef QS_MUTANT_FENCE_GRACE
	return in->now - in->fence_grace;
#else
	return in->now;
#endif
}

/*
 * LeaseInGrace notes, for a claimed job whose lease ran out but is within
 * its fence_grace, when the grace ends: the pass is to run again then.
 */
static void
LeaseInGrace(CorePlan *p, const QsJob *job)
{
	QsTime		end = job->lease_until + p->in->fence_grace + 1;

	if (job->claimed && job->lease_until != QS_NO_TIME && job->lease_until < p->in->now &&
		(p->out->wake_at == QS_NO_TIME || end < p->out->wake_at))
		p->out->wake_at = end;
}

/*
 * PartLost: a part of a job lost its lease (ran out more than fence_grace
 * ago) while others hold (scheduling.md 3.14): the attempt is over for every part, the others get a stop
 * (PEER_LOST) unless one is pending already, and the job holds its
 * capacity until they have stopped.  The shell ends the parts whose lease
 * ran out, and sets the job's lease to the earliest of those that hold
 * (the job's lease is theirs: one that no part's is, written while another
 * agent renewed its part, is only refreshed).
 */
static void
PartLost(CorePlan *p, const QsJob *job)
{
	QsOutput   *out = p->out;

	bool		any_lost = false;

	for (int i = 0; i < job->nparts; i++)
		any_lost |= !job->parts[i].ended && job->parts[i].lease_until != QS_NO_TIME &&
			job->parts[i].lease_until < LeaseLapsedBefore(p->in);
	out->lost = CoreGrow(p, out->lost, out->nlost, &p->lost_cap, sizeof(int64_t));
	out->lost[out->nlost++] = job->id;
	if (!any_lost)
		CoreIdSetAdd(p, &p->handled, job->id); /* only its lease to refresh */
	else if (job->stop == QS_STOP_NONE)
	{
		QsDecision *d = CoreAddDecision(p, QS_STOP, job, QsStopName(QS_STOP_PEER_LOST));
		QsJob		stopping = *job;

		d->stop = stopping.stop = QS_STOP_PEER_LOST;
		CoreStopRequested(p, &stopping);
	}
	else
		CoreIdSetAdd(p, &p->handled, job->id);
}

/*
 * RunnableTimeouts fails the RUNNABLE jobs that could not run for longer
 * than the queue's runnable_timeout (scheduling.md 3.9): those whose
 * MISCONFIGURATION reason dates from before (the reason an earlier pass
 * recorded, 3.7), and those whose NO_AGENT_FITS reason does and that no
 * live, active agent fits still (3.10): the shell read them by the time
 * of their reason; whether an agent fits now is checked here.
 */
static void
RunnableTimeouts(CorePlan *p)
{
	const QsInput *in = p->in;

#ifndef QS_MUTANT_RUNNABLE_TIMEOUT
	for (int i = 0; i < in->nexpired; i++)
		CoreAddDecision(p, QS_FAIL, &in->expired[i],
						QsReasonName(QS_REASON_RUNNABLE_TIMEOUT));
#endif
#ifndef QS_MUTANT_NO_AGENT_FITS_TIMEOUT
	for (int i = 0; i < in->nno_agent_expired; i++)
	{
		const QsJob *job = &in->no_agent_expired[i];

		if (!CoreIdSetHas(&p->handled, job->id) && QsNoAgentFits(in, job))
			CoreAddDecision(p, QS_FAIL, job, QsReasonName(QS_REASON_RUNNABLE_TIMEOUT_NO_AGENT));
	}
#endif
}

/*
 * DependencyFailures fails the RUNNABLE jobs a job they depend on FAILED
 * (scheduling.md 3.17), with the reason DEPENDENCY_FAILED:<its id>; their
 * own end fails the jobs that depend on them at the next pass, and so on
 * down the chain.
 */
static void
DependencyFailures(CorePlan *p)
{
#ifndef QS_MUTANT_DEPENDENCY_FAILED
	const QsInput *in = p->in;

	for (int i = 0; i < in->ndependency_failed; i++)
	{
		const QsJob *job = &in->dependency_failed[i];
		char	   *reason;

		if (CoreIdSetHas(&p->handled, job->id) || job->dependency_failed == 0)
			continue;
		reason = CoreAlloc(p, 64);
		snprintf(reason, 64, "%s:%" PRId64, QsReasonName(QS_REASON_DEPENDENCY_FAILED),
				 job->dependency_failed);
		CoreAddDecision(p, QS_FAIL, job, reason);
	}
#else
	(void) p;
#endif
}

/*
 * CoreTimeBasedWork is step 1: leases that expired more than the queue's
 * fence_grace ago (a pending preemption stop counts as done, scheduling.md
 * 3.8, 3.10; one within its grace sets wake_at), SCHEDULED jobs no agent claimed in
 * time (3.10), attempts that ran past their timeout (a stop
 * is requested), RUNNABLE jobs that could not run for longer than the
 * queue's runnable_timeout (scheduling.md 3.9) and those a dependency of
 * which failed (3.17).  The due jobs the shell read are checked here
 * again: the rule lives in the core.
 */
void
CoreTimeBasedWork(CorePlan *p)
{
	const QsInput *in = p->in;

	for (int i = 0; i < in->ndue; i++)
	{
		const QsJob *job = &in->due[i];

		if (CoreIdSetHas(&p->handled, job->id))
			continue;			/* listed twice */
#ifndef QS_MUTANT_LEASE_EXPIRY
		if (job->claimed && job->lease_until != QS_NO_TIME &&
			job->lease_until < LeaseLapsedBefore(in))
		{
			if (PartsHold(job, LeaseLapsedBefore(in)))
				PartLost(p, job);
			else
				CoreEndAttempt(p, job);
			continue;
		}
		LeaseInGrace(p, job);
#endif
#ifndef QS_MUTANT_CLAIM_TIMEOUT
		if (job->state == QS_SCHEDULED && job->stop == QS_STOP_NONE &&
			in->claim_timeout != QS_NO_TIME && job->scheduled_at != QS_NO_TIME &&
			job->scheduled_at < in->now - in->claim_timeout)
		{
			NotClaimed(p, job);
			continue;
		}
#endif
#ifndef QS_MUTANT_TIMEOUT
		if (job->state == QS_RUNNING && job->stop == QS_STOP_NONE &&
			job->deadline != QS_NO_TIME && job->deadline <= in->now)
		{
			QsDecision *d = CoreAddDecision(p, QS_STOP, job, QsStopName(QS_STOP_TIMEOUT));

			d->stop = QS_STOP_TIMEOUT;
			CoreStopRequested(p, job);
		}
#endif
	}
	RunnableTimeouts(p);
	DependencyFailures(p);
}

/*
 * PromiseOrderBefore: the least (promised_at, id) first (scheduling.md 3.6).
 */
static bool
PromiseOrderBefore(const QsJob *a, const QsJob *b)
{
	return CoreTimeIdBefore(a->promised_at, a->id, b->promised_at, b->id);
}

/*
 * KeepPlacement gives a promised job of a placed unit the placement its
 * promise reserves from now on (scheduling.md 3.13): the one it reserved,
 * if that is still valid in the future state; else one computed anew in
 * that state.  Returns false when it has none: the promise lapses.
 */
static bool
KeepPlacement(CorePlan *p, const QsJob *job)
{
	CorePlacement placed;

	if (!p->in->units[job->unit].placed)
		return true;
#ifndef QS_MUTANT_KEEP_RESERVATION
	if (CoreReservationValid(p, job))
	{
		CoreReserve(p, job, job->parts, job->nparts, false);
		return true;
	}
#endif
	if (!CorePlace(p, job, CORE_FUTURE, NULL, 0, &placed))
		return false;
	CoreReserve(p, job, placed.parts, placed.nparts, true);
	return true;
}

/*
 * CoreRecheckPromises is step 3: in order of promised_at then id, a promised
 * job keeps its promise only if it may be dispatched with every pending
 * stop counted as gone and the earlier kept promises holding, and it is not
 * held back (3.10); in a placed unit, it must have a placement then too
 * (KeepPlacement).  Otherwise the promise lapses (its victims still stop).
 */
void
CoreRecheckPromises(CorePlan *p)
{
	const QsInput *in = p->in;
	const QsJob **order = CoreAlloc(p, sizeof(QsJob *) * (in->npromised + 1));
	int			n = 0;

	for (int i = 0; i < in->npromised; i++)
		if (!CoreIdSetHas(&p->handled, in->promised[i].id))
			order[n++] = &in->promised[i];
	CoreSortJobs(order, n, PromiseOrderBefore);
	p->promise_order = order;
	p->npromise_order = n;
	p->out->lapsed = CoreAlloc(p, sizeof(int64_t) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		const QsJob *job = order[i];

		CoreUsage(p, job->unit, CORE_FUTURE, NULL, 0, p->scratch_future);
#ifndef QS_MUTANT_PROMISE_RECHECK
		if (QsHeldBack(in, job) == QS_HOLD_NONE &&
			CoreInvariantsHoldWith(p, p->scratch_future, job) &&
			KeepPlacement(p, job))
#else
		if (true)
#endif
			CoreKeepPromise(p, job);
		else
			p->out->lapsed[p->out->nlapsed++] = job->id;
	}
}

/*
 * CoreDispatch records the dispatch of a job and makes it hold its instances;
 * a kept promise is then fulfilled.  In a placed unit the job is placed
 * anew, as things are now (scheduling.md 3.13): the caller checked that it
 * may be dispatched, which includes a placement now.
 */
void
CoreDispatch(CorePlan *p, const QsJob *job)
{
	int			at = CORE_AT(p, job->share, job->unit);
	QsDecision *d = CoreAddDecision(p, QS_DISPATCH, job, NULL);
	QsJob		held = *job;

	held.stop = QS_STOP_NONE;
	held.nparts = 0;
	if (p->in->units[job->unit].placed)
	{
		CorePlacement placed;

		CorePlace(p, job, CORE_NOW, NULL, 0, &placed);
		d->parts = CoreAlloc(p, sizeof(QsPart) * (placed.nparts + 1));
		memcpy((QsPart *) d->parts, placed.parts, sizeof(QsPart) * placed.nparts);
		d->nparts = placed.nparts;
		held.parts = d->parts;
		held.nparts = d->nparts;
		CoreUnreserve(p, job);
	}
	CoreHold(p, &held, +1);
	if (CoreIdSetHas(&p->kept_promises, job->id))
	{
		p->promised[at] -= job->count;
		p->version++;
	}
}

/*
 * VictimsPending tells whether any job stopping for a promised job is still
 * holding its instances.
 */
static bool
VictimsPending(const CorePlan *p, const QsJob *job)
{
	for (int i = 0; i < p->in->nvictims; i++)
	{
		const QsJob *h = &p->in->victims[i];

		if (h->preempted_for == job->id && h->stop != QS_STOP_NONE &&
			!CoreIdSetHas(&p->handled, h->id))
			return true;
	}
	return false;
}

/*
 * DispatchFreedPromises is step 4: a promised job whose victims have all
 * stopped is dispatched before any other job, in promise order (promised_at,
 * then id, as CoreRecheckPromises sorted them).
 */
static void
DispatchFreedPromises(CorePlan *p)
{
	for (int i = 0; i < p->npromise_order; i++)
	{
		const QsJob *job = p->promise_order[i];

		if (CoreIdSetHas(&p->kept_promises, job->id) &&
			!CoreIdSetHas(&p->handled, job->id) &&
			!VictimsPending(p, job) && CoreMayDispatch(p, job))
			CoreDispatch(p, job);
	}
}

/*
 * QueueOrderBefore: the least (queued_at, id) first.
 */
static bool
QueueOrderBefore(const QsJob *a, const QsJob *b)
{
	return CoreTimeIdBefore(a->queued_at, a->id, b->queued_at, b->id);
}

/*
 * QsShareOrderBefore: priority DESC, queued_at ASC, id ASC (scheduling.md
 * 3.2).
 */
bool
QsShareOrderBefore(const QsJob *a, const QsJob *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	return QueueOrderBefore(a, b);
}

/*
 * SplitSkip tells whether the skip rule of a share and unit keeps jobs of
 * other placement constraints apart (scheduling.md 3.13): in a placed unit
 * where such jobs may wait.
 */
static bool
SplitSkip(const CorePlan *p, int s, int u)
{
	return p->in->units[u].placed &&
		(p->in->constrained == NULL || p->in->constrained[CORE_AT(p, s, u)]);
}

/*
 * Constrained tells whether a job of a placed unit has placement
 * constraints (per_host or same_label), whose skip rule is kept apart from
 * other jobs' (scheduling.md 3.13); in a unit that is not placed they are
 * ignored.
 */
static bool
Constrained(const CorePlan *p, const QsJob *job)
{
#ifndef QS_MUTANT_SKIP_BY_CONSTRAINTS
	if (p->in->units[job->unit].placed)
		return job->per_host > 0 || job->same_label != NULL;
#endif
	return false;
}

/*
 * QsSkipClassOf returns the class of a job with placement constraints among
 * classes[0..nclasses) (the same per_host and same_label), or NULL.
 */
const QsSkipClass *
QsSkipClassOf(const QsSkipClass *classes, int nclasses, const QsJob *job)
{
	for (int i = 0; i < nclasses; i++)
	{
		const QsSkipClass *c = &classes[i];

		if (c->per_host == job->per_host &&
			(c->same_label == NULL ? job->same_label == NULL :
			 job->same_label != NULL && strcmp(c->same_label, job->same_label) == 0))
			return c;
	}
	return NULL;
}

/*
 * QsSourceGives tells whether the skip rule's bounds given to a source's
 * next (QsJobSource) let a RUNNABLE job through, and whether it is in its
 * share's order at all (a job waiting for dependencies is not): the
 * contract of every source, which the shell's readers and the tests'
 * sources share.
 */
bool
QsSourceGives(const QsJob *job, int32_t below, bool below_all,
			  const QsSkipClass *classes, int nclasses)
{
	const QsSkipClass *c;

	if (QsWaitsForDependencies(job))
		return false;
	if (below_all || (job->per_host == 0 && job->same_label == NULL))
		return job->count < below;
	c = QsSkipClassOf(classes, nclasses, job);
	return c == NULL || job->count < c->below;
}

/*
 * SkipBound returns the skip rule's bound that applies to a job under a
 * cursor: the cursor's own, or, for a job with placement constraints, the
 * bound of the jobs with the same ones (made, with no bound, when `add`;
 * NULL when there is none yet).  The pointer lasts until the next class
 * is added.
 */
static int32_t *
SkipBound(CorePlan *p, CoreCursor *cur, const QsJob *job, bool add)
{
	QsSkipClass *c;

	if (!Constrained(p, job))
		return &cur->below;
	c = (QsSkipClass *) QsSkipClassOf(cur->classes, cur->nclasses, job);
	if (c != NULL)
		return &c->below;
	if (!add)
		return NULL;
	cur->classes = CoreGrow(p, cur->classes, cur->nclasses, &cur->classes_cap,
							sizeof(QsSkipClass));
	c = &cur->classes[cur->nclasses++];
	*c = (QsSkipClass) {job->per_host, job->same_label, INT32_MAX};
	return &c->below;
}

/*
 * Skipped tells whether the skip rule passes over a job the source gave a
 * cursor: one with placement constraints whose class bound it reaches (the
 * source bounds the others).
 */
static bool
Skipped(CorePlan *p, CoreCursor *cur, const QsJob *job)
{
	int32_t    *below;

	if (!Constrained(p, job))
		return false;
	below = SkipBound(p, cur, job, false);
	return below != NULL && job->count >= *below;
}

/*
 * CoreCursorAdvance moves the cursor of one share and unit to its next job
 * that the skip rule lets through and that this pass has not decided on.
 */
void
CoreCursorAdvance(CorePlan *p, int s, int u)
{
	CoreCursor *cur = &p->cursors[CORE_AT(p, s, u)];
	QsJob		after = cur->head;
	bool		from_start = !cur->started;
	bool		split = SplitSkip(p, s, u);

	p->moved = p->moved == -1 || p->moved == s ? s : -2;
	cur->started = true;
	cur->has_head = false;
	if (cur->all_skipped || (cur->below <= 1 && !split))
		return;					/* every job of this unit is skipped */
	while (p->in->source.next(p->in->source.arg, s, u, from_start ? NULL : &after,
							  cur->below, !split, cur->classes, cur->nclasses, &cur->head))
	{
		if (!CoreIdSetHas(&p->handled, cur->head.id) && !Skipped(p, cur, &cur->head))
		{
			cur->has_head = true;
			return;
		}
		after = cur->head;
		from_start = false;
	}
}

/*
 * CoreCursorStart puts every share's cursors on their first jobs, and
 * lists the shares that have one (head_shares): a cursor moves only when
 * its head was the candidate, so a share whose cursors have no head gets
 * none again, and the candidates are looked for among the others.
 */
void
CoreCursorStart(CorePlan *p, int32_t below)
{
	if (p->head_shares == NULL)
		p->head_shares = CoreAlloc(p, sizeof(int) * (p->nshares + 1));
	p->nhead_shares = 0;
	p->heaps_built = false;
	for (int s = 0; s < p->nshares; s++)
	{
		for (int u = 0; u < p->nunits; u++)
		{
			p->cursors[CORE_AT(p, s, u)].below = below;
			CoreCursorAdvance(p, s, u);
		}
		if (CoreShareHead(p, s) != NULL)
			p->head_shares[p->nhead_shares++] = s;
	}
}

/*
 * CoreShareHead returns the job under a share's cursor: the first, in share
 * order, of the heads of its units' cursors (NULL when none is left).
 */
const QsJob *
CoreShareHead(CorePlan *p, int s)
{
	const QsJob *best = NULL;

	for (int u = 0; u < p->nunits; u++)
	{
		CoreCursor *cur = &p->cursors[CORE_AT(p, s, u)];

		if (cur->has_head && (best == NULL || QsShareOrderBefore(&cur->head, best)))
			best = &cur->head;
	}
	return best;
}

/*
 * FairBefore: with borrow_order FAIR, whether job a comes before job b among
 * jobs that do not fit in their own capacity: with a half-life, the least
 * recent_borrow(S,u) / weight(S) first (scheduling.md 3.12); then the least
 * max(0, usage(S,u) + n - C(S,u)) / weight(S) in the state planned so far,
 * compared as fractions (exactly), then the least (queued_at, id)
 * (scheduling.md 3.2).
 */
static bool
FairBefore(const CorePlan *p, const QsJob *a, const QsJob *b)
{
	const QsShare *sa = &p->in->shares[a->share];
	const QsShare *sb = &p->in->shares[b->share];
	int64_t		ka;
	int64_t		kb;

#ifndef QS_MUTANT_FAIR_MEMORY
	if (p->in->recent_borrow != NULL)
	{
		double		ra = p->in->recent_borrow[CORE_AT(p, a->share, a->unit)] / sa->weight;
		double		rb = p->in->recent_borrow[CORE_AT(p, b->share, b->unit)] / sb->weight;

		if (ra != rb)
			return ra < rb;
	}
#endif
	ka = p->usage[CORE_AT(p, a->share, a->unit)] + a->count -
		sa->capacity[a->unit];
	kb = p->usage[CORE_AT(p, b->share, b->unit)] + b->count -
		sb->capacity[b->unit];

	/* usage and capacity are below 2^33, weights at most 10000: no overflow */
	ka = (ka > 0 ? ka : 0) * (int64_t) sb->weight;
	kb = (kb > 0 ? kb : 0) * (int64_t) sa->weight;
	if (ka != kb)
		return ka < kb;
	return QueueOrderBefore(a, b);
}

/* HeadBefore: whether share a's head comes before share b's in heap k. */
static bool
HeadBefore(CorePlan *p, int k, int a, int b)
{
	const QsJob *ha = CoreShareHead(p, a);
	const QsJob *hb = CoreShareHead(p, b);

#ifndef QS_MUTANT_FAIR_ORDER
	if (k == 0 && p->in->fair)
		return FairBefore(p, ha, hb);
#endif
	return QueueOrderBefore(ha, hb);
}

/* HeapSet puts share s at place i of heap k. */
static void
HeapSet(CorePlan *p, int k, int i, int s)
{
	p->heap[k][i] = s;
	p->heap_at[k][s] = i;
}

/* SiftDown moves the share at place i of heap k down to its place. */
static void
SiftDown(CorePlan *p, int k, int i)
{
	int		   *h = p->heap[k];
	int			s = h[i];

	for (;;)
	{
		int			c = 2 * i + 1;

		if (c >= p->nheap[k])
			break;
		if (c + 1 < p->nheap[k] && HeadBefore(p, k, h[c + 1], h[c]))
			c++;
		if (!HeadBefore(p, k, h[c], s))
			break;
		HeapSet(p, k, i, h[c]);
		i = c;
	}
	HeapSet(p, k, i, s);
}

/* HeapSift moves the share at place i of heap k up or down to its place. */
static void
HeapSift(CorePlan *p, int k, int i)
{
	int		   *h = p->heap[k];
	int			s = h[i];

	while (i > 0 && HeadBefore(p, k, s, h[(i - 1) / 2]))
	{
		HeapSet(p, k, i, h[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	HeapSet(p, k, i, s);
	SiftDown(p, k, i);
}

/* InFitting: whether a share whose head is job belongs in heap 1. */
static bool
InFitting(const CorePlan *p, const QsJob *head)
{
#ifndef QS_MUTANT_OWN_CAPACITY_FIRST
	return CoreFitsOwnCapacity(p, head);
#else
	return false;
#endif
}

/* HeapPlace takes share s out of both heaps, and puts it back by its head. */
static void
HeapPlace(CorePlan *p, int s)
{
	const QsJob *head = CoreShareHead(p, s);

	for (int k = 0; k < 2; k++)
	{
		int			i = p->heap_at[k][s];

		if (i >= 0)
		{
			int			last = p->heap[k][--p->nheap[k]];

			p->heap_at[k][s] = -1;
			if (last != s)
			{
				HeapSet(p, k, i, last);
				HeapSift(p, k, i);
			}
		}
		if (head != NULL && (k == 0 || InFitting(p, head)))
		{
			HeapSet(p, k, p->nheap[k]++, s);
			HeapSift(p, k, p->nheap[k] - 1);
		}
	}
}

/*
 * BuildHeaps makes both heaps anew from the shares CoreCursorStart listed,
 * leaving out those whose cursors have lost their heads (they get none
 * again: a cursor moves only when its head was the candidate), in a time
 * linear in their number.
 */
static void
BuildHeaps(CorePlan *p)
{
	for (int k = 0; k < 2; k++)
	{
		if (p->heap[k] == NULL)
		{
			p->heap[k] = CoreAlloc(p, sizeof(int) * (p->nshares + 1));
			p->heap_at[k] = CoreAlloc(p, sizeof(int) * (p->nshares + 1));
			for (int s = 0; s < p->nshares; s++)
				p->heap_at[k][s] = -1;
		}
		for (int i = 0; i < p->nheap[k]; i++)
			p->heap_at[k][p->heap[k][i]] = -1;
		p->nheap[k] = 0;
	}
	for (int i = 0; i < p->nhead_shares;)
	{
		int			s = p->head_shares[i];
		const QsJob *head = CoreShareHead(p, s);

		if (head == NULL)
		{
			p->head_shares[i] = p->head_shares[--p->nhead_shares];
			continue;
		}
		i++;
		HeapSet(p, 0, p->nheap[0]++, s);
		if (InFitting(p, head))
			HeapSet(p, 1, p->nheap[1]++, s);
	}
	for (int k = 0; k < 2; k++)
		for (int i = p->nheap[k] / 2 - 1; i >= 0; i--)
			SiftDown(p, k, i);
	p->heaps_built = true;
}

/*
 * CoreNextCandidate picks, among the jobs under the cursors (of the shares
 * CoreCursorStart listed), the one that fits
 * in its own capacity with the least (queued_at, id); if none fits, the one
 * with the least (queued_at, id), or with borrow_order FAIR the one whose
 * share would borrow the least per unit of weight (scheduling.md 3.2).
 * Both are the first of a heap.  A share's place in each depends only on
 * its head and its usage (whether the head fits, and FAIR's order), so only
 * the share whose cursors moved (the last candidate's) and the one whose
 * usage changed (a dispatch) are placed again; the heaps are made again
 * when several shares' did (a pass's start, stops of several shares): a
 * candidate costs the log of the number of shares with a head, not that
 * number (an idle pass at 1,000 shares with jobs waiting in each).
 */
const QsJob *
CoreNextCandidate(CorePlan *p)
{
	if (!p->heaps_built || p->moved == -2 || p->usage_moved == -2)
		BuildHeaps(p);
	else
	{
		if (p->moved >= 0)
			HeapPlace(p, p->moved);
		if (p->usage_moved >= 0 && p->usage_moved != p->moved)
			HeapPlace(p, p->usage_moved);
	}
	p->moved = p->usage_moved = -1;
	if (p->nheap[1] > 0)
		return CoreShareHead(p, p->heap[1][0]);
	return p->nheap[0] > 0 ? CoreShareHead(p, p->heap[0][0]) : NULL;
}

/*
 * HostReason notes the reason of placement of a job the dispatch loop came
 * to in a placed unit (QsHostReason): WAITING_FOR_HOSTS, NO_AGENT_FITS of a
 * job with placement constraints, or none; a job held back otherwise
 * keeps its own reason.
 */
static void
HostReason(CorePlan *p, const QsJob *job, QsHold hold, bool waiting)
{
	const char *reason;

	if (hold == QS_HOLD_NO_AGENT_FITS && Constrained(p, job))
		reason = QsHoldName(QS_HOLD_NO_AGENT_FITS);
	else if (hold == QS_HOLD_NONE)
		reason = waiting ? QsReasonName(QS_REASON_WAITING_FOR_HOSTS) : NULL;
	else
		return;
	/* a pass writes what changed: nothing for a job whose reason it is already */
	if (reason == NULL ? job->status_reason == NULL :
		job->status_reason != NULL && strcmp(reason, job->status_reason) == 0)
		return;
	CoreNoteHostReason(p, job, reason);
}

/*
 * DispatchLoop is step 5: a cursor on each share's RUNNABLE jobs; the
 * candidate is dispatched if it may be, otherwise preemption is tried for
 * it at once (never for a promised job, which waits for its victims).  A
 * job tried and neither dispatched nor given victims makes the pass skip
 * every later job of its share needing the same unit and as many or more
 * instances; a promised job waiting does not count as tried, nor does a
 * job held back (3.10), which is neither dispatched nor given victims.  In
 * a placed unit the skip rule holds only between jobs of the same
 * placement constraints, and a job tried that the capacity rules would
 * dispatch but that has no placement, and got no victims, waits
 * WAITING_FOR_HOSTS (3.13); a job tried with another outcome has that
 * reason no longer, also in a unit no longer placed.  A job that
 * cannot start does not block later jobs, except in a STRICT share: there
 * any job not dispatched makes the pass skip every later job of its share
 * needing the same unit, whatever its constraints (scheduling.md 3.2).
 */
static void
DispatchLoop(CorePlan *p)
{
	const QsJob *cand;

	CoreCursorStart(p, INT32_MAX);

	while ((cand = CoreNextCandidate(p)) != NULL)
	{
		QsJob		job = *cand;
		CoreCursor *cur = &p->cursors[CORE_AT(p, job.share, job.unit)];
		bool		promised = CoreIdSetHas(&p->kept_promises, job.id);
		QsHold		hold = QsHeldBack(p->in, &job);
		bool		held_back = hold != QS_HOLD_NONE;
		bool		in_future;
		QsCheck		check = held_back ? QS_CHECK_OK : CoreDispatchCheck(p, &job, &in_future);
		bool		dispatched = !held_back && check == QS_CHECK_OK;
		bool		tried = !promised && !held_back;

#ifdef QS_MUTANT_PROMISED_NOT_TRIED
		tried = true;
#endif
#ifdef QS_MUTANT_HELD_BACK_NOT_TRIED
		tried = !promised;
#endif
		if (held_back)
			;					/* neither dispatched nor given victims */
		else if (dispatched)
			CoreDispatch(p, &job);
		else if (!promised && CoreTryPreemption(p, &job))
		{
			tried = false;		/* given victims */
			/* dispatched at once when every victim stopped at once */
			dispatched = CoreIdSetHas(&p->handled, job.id);
		}
		if (!promised && p->in->units[job.unit].placed)
			HostReason(p, &job, hold, tried && check == QS_CHECK_HOSTS);
#ifndef QS_MUTANT_SKIP_RULE
		if (!dispatched && tried)
		{
			int32_t    *below = SkipBound(p, cur, &job, true);

			if (job.count < *below)
				*below = job.count;
		}
#endif
#ifndef QS_MUTANT_STRICT
		if (!dispatched && p->in->shares[job.share].strict)
			cur->all_skipped = true;	/* every later job of the unit */
#endif
		CoreCursorAdvance(p, job.share, job.unit);
	}
}

/*
 * CoreInitPlan allocates the planned state of a pass.
 */
void
CoreInitPlan(CorePlan *p, const QsInput *in, QsOutput *out)
{
	int			cells;

	memset(p, 0, sizeof(*p));
	memset(out, 0, sizeof(*out));
	out->wake_at = QS_NO_TIME;
	p->in = in;
	p->out = out;
	p->nunits = in->nunits;
	p->nshares = in->nshares;
	cells = in->nunits * in->nshares + 1;
	p->usage = CoreAlloc(p, sizeof(int64_t) * cells);
	p->pending = CoreAlloc(p, sizeof(int64_t) * cells);
	p->promised = CoreAlloc(p, sizeof(int64_t) * cells);
	p->unassigned = CoreAlloc(p, sizeof(int64_t) * (in->nunits + 1));
	p->scratch_now = CoreAlloc(p, sizeof(int64_t) * (in->nshares + 1));
	p->scratch_future = CoreAlloc(p, sizeof(int64_t) * (in->nshares + 1));
	p->cursors = CoreAlloc(p, sizeof(CoreCursor) * cells);
	p->wanted = CoreAlloc(p, sizeof(CoreWantedCache) * cells);
	p->totals = CoreAlloc(p, sizeof(CoreTotals) * (2 * in->nunits + 1));
	out->fit_limits = CoreAlloc(p, sizeof(QsFitLimit) * cells);
	p->promised_cap = in->npromised + 64;
	out->promised = CoreAlloc(p, sizeof(int64_t) * p->promised_cap);
	CoreInitAccounting(p);
	CoreInitHosts(p);
}

/*
 * QsComputeFitLimits computes only the fit limits of a queue
 * (CoreComputeFitLimits, scheduling.md 3.7), the rule of the pass's
 * MISCONFIGURATION reasons, for the notice a submission gets when it
 * cannot run as configured (src/job_fit.c): one rule for both.
 */
void
QsComputeFitLimits(const QsInput *in, QsOutput *out)
{
	CorePlan	plan;

	CoreInitPlan(&plan, in, out);
	CoreComputeFitLimits(&plan);
}

/*
 * QsRunPass decides one pass over one job queue.  A DISABLED environment
 * neither dispatches nor preempts for waiting jobs; stops, leases,
 * timeouts and repairs still happen.
 */
void
QsRunPass(const QsInput *in, QsOutput *out)
{
	CorePlan	plan;

	CoreInitPlan(&plan, in, out);
	CoreTimeBasedWork(&plan);
#ifndef QS_MUTANT_REPAIR
	CoreRepairLimits(&plan);
#endif
	CoreRecheckPromises(&plan);
	if (in->env_enabled)
	{
#ifndef QS_MUTANT_PROMISED_FIRST
		DispatchFreedPromises(&plan);
#endif
		DispatchLoop(&plan);
	}
	CoreComputeFitLimits(&plan);
}
