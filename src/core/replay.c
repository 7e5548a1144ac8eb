/*-------------------------------------------------------------------------
 *
 * replay.c
 *		What-if: the passes of the policy core over a
 *		recorded workload, on a simulated clock, in an ideal world.
 *
 * Time moves from event to event: arrivals, ends of attempts (the work
 * done, or the timeout reached), priority changes, the end of a
 * min_runtime exemption that kept a preemptor waiting (the pass's
 * wake_at), a misconfigured job's runnable_timeout, and the start of a
 * budget period.  At each instant the events are applied, then passes run
 * until one decides nothing: a dispatched job runs at once, a stop is
 * acknowledged at once (so no stop is ever pending between passes), and no
 * lease runs out.  The figures over time (held, borrowed, spent,
 * recent_borrow) are advanced between instants from the levels that held,
 * in closed form.
 *
 * Inside, a job's id is its index + 1; each share and unit keeps its
 * RUNNABLE jobs in share order and by size, and its held jobs in victim
 * order, sorted arrays that answer the pass's sources as the indexes do.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "replay.h"

typedef enum EventKind
{
	EV_END,						/* the attempt's work is done */
	EV_DEADLINE,				/* the attempt reached its timeout */
	EV_CHANGE,					/* the job's next priority change */
	EV_TIMER,					/* a pass, nothing else (runnable_timeout) */
	EV_LEAVE					/* the job is terminated */
} EventKind;

typedef struct Event
{
	QsTime		at;
	int			job;
	int32_t		attempt;		/* EV_END, EV_DEADLINE: of this attempt */
	EventKind	kind;
} Event;

typedef struct Heap
{
	Event	   *e;
	int			n;
	int			cap;
} Heap;

/* A sorted array of job indexes. */
typedef struct Sorted
{
	int		   *at;
	int			n;
	int			cap;
} Sorted;

typedef enum Order
{
	BY_SHARE_ORDER,				/* priority DESC, queued_at, id */
	BY_SIZE,					/* count, id */
	BY_VICTIM_ORDER				/* priority, scheduled_at DESC, id DESC */
} Order;

typedef struct RJob
{
	QsJob		j;
	QsJobState	state;
	int32_t		attempt;		/* attempts started */
	QsTime		started;		/* of the attempt held */
	QsTime		work;			/* what an attempt needs */
	int			next_change;
	bool		arrived;
	bool		misconfigured;
	bool		due;			/* in this instant's due list */
	bool		promised;		/* in the promised list */
} RJob;

typedef struct Replay
{
	const QsReplayConfig *cfg;
	const QsReplayJob *in;
	const QsReplayMemory *mem;
	QsReplayOutput *out;
	int			njobs;
	RJob	   *jobs;
	int			cells;
	QsShare    *shares;			/* the config's, with the replay's spent */
	double	   *spent;
	double	   *recent;
	int64_t    *held;
	int64_t    *stopping;		/* always zero: stops complete at once */
	Sorted	   *runnable;		/* [cell]: share order */
	Sorted	   *by_size;		/* [cell] */
	Sorted	   *held_jobs;		/* [cell]: victim order */
	Heap		events;
	int		   *arrivals;		/* job indexes by arrival */
	int			next_arrival;
	Sorted		promised;		/* by index */
	int		   *due;
	int			ndue;
	int		   *expired;
	int			nexpired;
	QsTime		now;
	QsTime		levels_at;		/* the figures over time are advanced to */
	QsTime		wake_at;
	QsFitLimit *limits;			/* [cell]: the configuration's (fixed) */
} Replay;

static void *
Alloc(Replay *r, size_t size)
{
	return r->mem->alloc(r->mem->arg, size ? size : 1);
}

/*
 * Grow makes room for one more element in an array of n elements of size
 * elem, whose capacity is *cap, doubling it (first: the first capacity):
 * returns the array, moved if it had to grow.
 */
static void *
Grow(Replay *r, void *array, int n, int *cap, size_t elem, int first)
{
	void	   *grown;

	if (n < *cap)
		return array;
	*cap = *cap ? *cap * 2 : first;
	grown = Alloc(r, elem * *cap);
	if (n > 0)
		memcpy(grown, array, elem * n);
	return grown;
}

/* ---- the event heap ---- */

static bool
EventBefore(const Event *a, const Event *b)
{
	if (a->at != b->at)
		return a->at < b->at;
	return a->job < b->job;
}

static void
Swap(Event *a, Event *b)
{
	Event		t = *a;

	*a = *b;
	*b = t;
}

static void
Push(Replay *r, QsTime at, int job, int32_t attempt, EventKind kind)
{
	Heap	   *h = &r->events;
	int			i;

	h->e = Grow(r, h->e, h->n, &h->cap, sizeof(Event), 1024);
	i = h->n++;
	h->e[i] = (Event) {at, job, attempt, kind};
	while (i > 0 && EventBefore(&h->e[i], &h->e[(i - 1) / 2]))
	{
		Swap(&h->e[i], &h->e[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

static Event
Pop(Replay *r)
{
	Heap	   *h = &r->events;
	Event		top = h->e[0];
	int			i = 0;

	h->e[0] = h->e[--h->n];
	for (;;)
	{
		int			l = 2 * i + 1,
					m = i;

		if (l < h->n && EventBefore(&h->e[l], &h->e[m]))
			m = l;
		if (l + 1 < h->n && EventBefore(&h->e[l + 1], &h->e[m]))
			m = l + 1;
		if (m == i)
			break;
		Swap(&h->e[i], &h->e[m]);
		i = m;
	}
	return top;
}

/* ---- sorted arrays ---- */

static bool
Before(const Replay *r, Order order, int a, int b)
{
	const QsJob *x = &r->jobs[a].j;
	const QsJob *y = &r->jobs[b].j;

	switch (order)
	{
		case BY_SHARE_ORDER:
			return QsShareOrderBefore(x, y);
		case BY_SIZE:
			if (x->count != y->count)
				return x->count < y->count;
			return x->id < y->id;
		case BY_VICTIM_ORDER:
			if (x->priority != y->priority)
				return x->priority < y->priority;
			if (x->scheduled_at != y->scheduled_at)
				return x->scheduled_at > y->scheduled_at;
			return x->id > y->id;
	}
	return false;
}

/*
 * Bound returns the first position whose job does not come before job
 * (upper false: the lower bound) or comes after it (upper true: the upper
 * bound).
 */
static int
Bound(const Replay *r, const Sorted *s, Order order, int job, bool upper)
{
	int			lo = 0,
				hi = s->n;

	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;
		bool		past = upper ? Before(r, order, job, s->at[mid])
			: !Before(r, order, s->at[mid], job);

		if (past)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void
Insert(Replay *r, Sorted *s, Order order, int job)
{
	int			i = Bound(r, s, order, job, false);

	s->at = Grow(r, s->at, s->n, &s->cap, sizeof(int), 16);
	memmove(&s->at[i + 1], &s->at[i], sizeof(int) * (s->n - i));
	s->at[i] = job;
	s->n++;
}

static void
Remove(Replay *r, Sorted *s, Order order, int job)
{
	int			i = Bound(r, s, order, job, false);

	if (i < s->n && s->at[i] == job)
	{
		memmove(&s->at[i], &s->at[i + 1], sizeof(int) * (s->n - i - 1));
		s->n--;
	}
}

static int
CellOf(const Replay *r, int job)
{
	return r->jobs[job].j.share * r->cfg->nunits + r->jobs[job].j.unit;
}

/* ---- the pass's sources ---- */

/* An internal id (index + 1) from a QsJob the core hands back. */
static int
IndexOf(const QsJob *j)
{
	return (int) (j->id - 1);
}

static bool
SourceNext(void *arg, int share, int unit, const QsJob *after, int32_t below,
		   bool below_all, const QsSkipClass *classes, int nclasses, QsJob *out)
{
	Replay	   *r = arg;
	const Sorted *s = &r->runnable[share * r->cfg->nunits + unit];
	const Sorted *by_size = &r->by_size[share * r->cfg->nunits + unit];

	/* a replay places nothing: below_all is always true */
	(void) below_all;
	(void) classes;
	(void) nclasses;

	/* none of the cell's jobs is small enough (the skip rule's bound) */
	if (by_size->n == 0 || r->jobs[by_size->at[0]].j.count >= below)
		return false;
	for (int i = after == NULL ? 0 : Bound(r, s, BY_SHARE_ORDER, IndexOf(after), true);
		 i < s->n; i++)
		if (r->jobs[s->at[i]].j.count < below)
		{
			*out = r->jobs[s->at[i]].j;
			return true;
		}
	return false;
}

static int
SourceSmallest(void *arg, int share, int unit, int32_t at_most, int max, QsJob *out)
{
	Replay	   *r = arg;
	const Sorted *s = &r->by_size[share * r->cfg->nunits + unit];
	int			n = 0;

	for (int i = 0; i < s->n && n < max && r->jobs[s->at[i]].j.count <= at_most; i++)
		out[n++] = r->jobs[s->at[i]].j;
	return n;
}

static bool
SourceHeld(void *arg, int share, int unit, const QsJob *after, int64_t below, QsJob *out)
{
	Replay	   *r = arg;
	const Sorted *s = &r->held_jobs[share * r->cfg->nunits + unit];
	int			i = after == NULL ? 0 : Bound(r, s, BY_VICTIM_ORDER, IndexOf(after), true);

	/* no stop is pending between passes; victim order has priority first */
	if (i < s->n && r->jobs[s->at[i]].j.priority < below)
	{
		*out = r->jobs[s->at[i]].j;
		return true;
	}
	return false;
}

static void *
PassAlloc(void *arg, size_t size)
{
	Replay	   *r = arg;

	return r->mem->pass_alloc(r->mem->arg, size ? size : 1);
}

/* ---- the world ---- */

/* The figures over time, advanced from levels_at to now at constant levels. */
static void
AdvanceLevels(Replay *r)
{
	const QsReplayConfig *c = r->cfg;

	if (r->now == r->levels_at)
		return;
	for (int at = 0; at < r->cells; at++)
	{
		int			s = at / c->nunits;
		int64_t		capacity = c->shares[s].capacity[at % c->nunits];
		int64_t		borrowed = r->held[at] > capacity ? r->held[at] - capacity : 0;

		r->out->borrowed[at] += (double) borrowed * (double) (r->now - r->levels_at) / 1e6;
		r->spent[at] = QsSpentAt(r->spent[at], r->levels_at, r->held[at], r->now,
								 c->periods[s]);
		if (c->half_life > 0)
			r->recent[at] = QsRecentBorrowAt(r->recent[at], r->levels_at, borrowed, r->now,
											 c->half_life);
	}
	r->levels_at = r->now;
}

static void
Hold(Replay *r, int job)
{
	RJob	   *rj = &r->jobs[job];
	const QsReplayJob *in = &r->in[job];

	rj->state = QS_RUNNING;
	rj->j.state = QS_RUNNING;
	rj->j.claimed = true;
	rj->j.scheduled_at = r->now;
	rj->j.promised_at = QS_NO_TIME;
	rj->j.deadline = in->timeout == QS_NO_TIME ? QS_NO_TIME : r->now + in->timeout;
	rj->started = r->now;
	rj->attempt++;
	Insert(r, &r->held_jobs[CellOf(r, job)], BY_VICTIM_ORDER, job);
	r->held[CellOf(r, job)] += rj->j.count;
	if (r->out->jobs[job].first_dispatch == QS_NO_TIME)
		r->out->jobs[job].first_dispatch = r->now;
	r->out->dispatches++;
	if (rj->work != QS_UNBOUNDED &&
		(in->timeout == QS_NO_TIME || rj->work <= in->timeout))
		Push(r, r->now + rj->work, job, rj->attempt, EV_END);
	else if (in->timeout != QS_NO_TIME)
		Push(r, r->now + in->timeout, job, rj->attempt, EV_DEADLINE);
}

static void
AddRunnable(Replay *r, int job)
{
	RJob	   *rj = &r->jobs[job];

	rj->state = QS_RUNNABLE;
	rj->j.state = QS_RUNNABLE;
	rj->j.claimed = false;
	rj->j.stop = QS_STOP_NONE;
	rj->j.deadline = QS_NO_TIME;
	rj->j.scheduled_at = QS_NO_TIME;
	rj->j.preempted_for = 0;
	Insert(r, &r->runnable[CellOf(r, job)], BY_SHARE_ORDER, job);
	Insert(r, &r->by_size[CellOf(r, job)], BY_SIZE, job);
}

static void
Unpromise(Replay *r, int job)
{
	if (r->jobs[job].promised)
	{
		Remove(r, &r->promised, BY_SIZE, job);
		r->jobs[job].promised = false;
		r->jobs[job].j.promised_at = QS_NO_TIME;
	}
}

static void
RemoveRunnable(Replay *r, int job)
{
	Remove(r, &r->runnable[CellOf(r, job)], BY_SHARE_ORDER, job);
	Remove(r, &r->by_size[CellOf(r, job)], BY_SIZE, job);
	Unpromise(r, job);
}

static void
Finish(Replay *r, int job, QsJobState state)
{
	r->jobs[job].state = state;
	r->jobs[job].j.state = state;
	r->out->jobs[job].state = state;
	r->out->jobs[job].ended_at = r->now;
}

/*
 * EndAttempt ends the held attempt of a job (its work done, or stopped):
 * its instances are released and what it held is counted.
 */
static void
EndAttempt(Replay *r, int job, bool preempted)
{
	RJob	   *rj = &r->jobs[job];
	double		held = (double) rj->j.count * (double) (r->now - rj->started) / 1e6;

	Remove(r, &r->held_jobs[CellOf(r, job)], BY_VICTIM_ORDER, job);
	r->held[CellOf(r, job)] -= rj->j.count;
	r->out->jobs[job].held += held;
	if (preempted)
	{
		r->out->jobs[job].lost += held;
		r->out->jobs[job].preemptions++;
	}
	rj->attempt++;				/* its END or DEADLINE event is stale */
}

/* An outcome of the core for a job, RUNNABLE or held. */
static void
ApplyOutcome(Replay *r, int job, QsAction action, QsCounter counter)
{
	RJob	   *rj = &r->jobs[job];

	if (rj->state == QS_RUNNING)
		EndAttempt(r, job, counter == QS_COUNT_PREEMPTION);
	else if (rj->state == QS_RUNNABLE)
		RemoveRunnable(r, job);
	if (counter == QS_COUNT_FAILED_ATTEMPT)
		rj->j.failed_attempts++;
	else if (counter == QS_COUNT_PREEMPTION)
		rj->j.preemption_count++;
	if (action == QS_FAIL)
		Finish(r, job, QS_FAILED);
	else
		AddRunnable(r, job);
}

/* A held job's stop, acknowledged at once. */
static void
Stop(Replay *r, int job, QsStop stop, int64_t preempted_for)
{
	RJob	   *rj = &r->jobs[job];
	QsStopOutcome o;

	if (rj->state != QS_RUNNING)
		return;
	rj->j.stop = stop;
	o = QsStoppedOutcome(&rj->j);
	if (preempted_for > 0)
		r->out->jobs[preempted_for - 1].preempted++;
	ApplyOutcome(r, job, o.action, o.counter);
}

static void
SetPriority(Replay *r, int job, int32_t priority)
{
	RJob	   *rj = &r->jobs[job];
	int			cell = CellOf(r, job);

	if (rj->state == QS_RUNNABLE && rj->arrived)
	{
		Remove(r, &r->runnable[cell], BY_SHARE_ORDER, job);
		rj->j.priority = priority;
		Insert(r, &r->runnable[cell], BY_SHARE_ORDER, job);
	}
	else if (rj->state == QS_RUNNING)
	{
		Remove(r, &r->held_jobs[cell], BY_VICTIM_ORDER, job);
		rj->j.priority = priority;
		Insert(r, &r->held_jobs[cell], BY_VICTIM_ORDER, job);
	}
	else
		rj->j.priority = priority;
}

static void
Arrive(Replay *r, int job)
{
	RJob	   *rj = &r->jobs[job];
	const QsReplayJob *in = &r->in[job];
	const QsFitLimit *limit = &r->limits[CellOf(r, job)];

	rj->arrived = true;
	AddRunnable(r, job);
	rj->misconfigured = rj->j.count > limit->env_max || rj->j.count > limit->quota_max;
	if (rj->misconfigured && r->cfg->runnable_timeout != QS_NO_TIME)
		Push(r, r->now + r->cfg->runnable_timeout + 1, job, 0, EV_TIMER);
	if (in->nchanges > 0)
		Push(r, in->change_at[0] > r->now ? in->change_at[0] : r->now, job, 0, EV_CHANGE);
	if (in->leave_at != QS_NO_TIME)
		Push(r, in->leave_at > r->now ? in->leave_at : r->now, job, 0, EV_LEAVE);
}

static void
ApplyEvent(Replay *r, const Event *e)
{
	RJob	   *rj = &r->jobs[e->job];
	const QsReplayJob *in = &r->in[e->job];

	switch (e->kind)
	{
		case EV_END:
			if (rj->state != QS_RUNNING || e->attempt != rj->attempt)
				return;			/* that attempt was stopped */
			EndAttempt(r, e->job, false);
			Finish(r, e->job, in->fails ? QS_FAILED : QS_SUCCEEDED);
			return;
		case EV_DEADLINE:
			if (rj->state == QS_RUNNING && e->attempt == rj->attempt && !rj->due)
			{
				rj->due = true;
				r->due[r->ndue++] = e->job;
			}
			return;
		case EV_CHANGE:
			SetPriority(r, e->job, in->change_to[rj->next_change]);
			if (++rj->next_change < in->nchanges)
				Push(r, in->change_at[rj->next_change] > r->now ?
					 in->change_at[rj->next_change] : r->now, e->job, 0, EV_CHANGE);
			return;
		case EV_TIMER:
			if (rj->state == QS_RUNNABLE && rj->misconfigured)
				r->expired[r->nexpired++] = e->job;
			return;
		case EV_LEAVE:
			if (rj->state == QS_RUNNING)
				EndAttempt(r, e->job, false);
			else if (rj->state == QS_RUNNABLE)
				RemoveRunnable(r, e->job);
			if (rj->state == QS_RUNNING || rj->state == QS_RUNNABLE)
				Finish(r, e->job, QS_FAILED);
			return;
	}
}

/* What every input of the core has of the world: its capacity and holdings. */
static void
BaseInput(Replay *r, const QsReplayConfig *c, QsInput *in)
{
	memset(in, 0, sizeof(*in));
	in->now = r->now;
	in->env_enabled = c->env_enabled;
	in->nunits = c->nunits;
	in->units = c->units;
	in->nshares = c->nshares;
	in->shares = r->shares;
	in->held = r->held;
	in->stopping = r->stopping;
}

/* The snapshot a pass reads: the world as it is. */
static void
Snapshot(Replay *r, QsInput *out)
{
	const QsReplayConfig *c = r->cfg;
	QsInput		in;
	QsJob	   *due = PassAlloc(r, sizeof(QsJob) * (r->ndue + r->promised.n + r->nexpired + 1));
	QsJob	   *promised = due + r->ndue;
	QsJob	   *expired = promised + r->promised.n;

	BaseInput(r, c, &in);
	in.fair = c->fair;
	in.recent_borrow = c->half_life > 0 ? r->recent : NULL;
	for (int i = 0; i < r->ndue; i++)
		if (r->jobs[r->due[i]].state == QS_RUNNING)
			due[in.ndue++] = r->jobs[r->due[i]].j;
	in.due = due;
	for (int i = 0; i < r->promised.n; i++)
		promised[in.npromised++] = r->jobs[r->promised.at[i]].j;
	in.promised = promised;
	for (int i = 0; i < r->nexpired; i++)
		if (r->jobs[r->expired[i]].state == QS_RUNNABLE)
			expired[in.nexpired++] = r->jobs[r->expired[i]].j;
	in.expired = expired;
	in.claim_timeout = QS_NO_TIME;
	in.source.next = SourceNext;
	in.source.smallest = SourceSmallest;
	in.source.held = SourceHeld;
	in.source.arg = r;
	in.alloc = PassAlloc;
	in.alloc_arg = r;
	*out = in;
}

/* The decisions of a pass, applied to the world (stops acknowledged at once). */
static void
ApplyDecisions(Replay *r, const QsOutput *out)
{
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];
		int			job = (int) (d->job_id - 1);

		switch (d->action)
		{
			case QS_DISPATCH:
				if (r->jobs[job].state == QS_RUNNABLE)
				{
					RemoveRunnable(r, job);
					Hold(r, job);
				}
				break;
			case QS_PREEMPT:
			case QS_STOP:
				Stop(r, job, d->stop, d->action == QS_PREEMPT ? d->preempted_for : 0);
				break;
			case QS_REQUEUE:
			case QS_FAIL:
				if (r->jobs[job].state == QS_RUNNABLE || r->jobs[job].state == QS_RUNNING)
					ApplyOutcome(r, job, d->action, d->counter);
				break;
		}
	}
	for (int i = 0; i < out->nlapsed; i++)
		Unpromise(r, (int) (out->lapsed[i] - 1));
	for (int i = 0; i < out->npromised; i++)
	{
		int			job = (int) (out->promised[i] - 1);

		if (r->jobs[job].state == QS_RUNNABLE && !r->jobs[job].promised)
		{
			r->jobs[job].promised = true;
			r->jobs[job].j.promised_at = r->now;
			Insert(r, &r->promised, BY_SIZE, job);
		}
	}
	if (out->wake_at != QS_NO_TIME && out->wake_at > r->now &&
		(r->wake_at == QS_NO_TIME || out->wake_at < r->wake_at))
		r->wake_at = out->wake_at;
}

/* One pass over the world as it is; returns how many changes it made. */
static int
Pass(Replay *r)
{
	QsInput		in;
	QsOutput	out;
	int			n;

	Snapshot(r, &in);
	memset(&out, 0, sizeof(out));
	QsRunPass(&in, &out);
	r->out->passes++;
	ApplyDecisions(r, &out);
	n = out.ndecisions + out.npromised + out.nlapsed;
	r->mem->pass_reset(r->mem->arg);
	return n;
}

/* The next start of a budget period after now, of a share with a budget. */
static QsTime
NextPeriod(const Replay *r)
{
	const QsReplayConfig *c = r->cfg;
	QsTime		next = QS_NO_TIME;

	for (int s = 0; s < c->nshares; s++)
	{
		bool		budget = false;

		for (int u = 0; u < c->nunits && c->shares[s].budget != NULL; u++)
			budget |= c->shares[s].budget[u] >= 0;
		if (budget)
		{
			QsTime		end = QsPeriodEnd(r->now, c->periods[s]);

			if (next == QS_NO_TIME || end < next)
				next = end;
		}
	}
	return next;
}

/* The replay's own arrays, and its shares with its own spent. */
static void
SetupArrays(Replay *r)
{
	const QsReplayConfig *c = r->cfg;

	r->cells = c->nshares * c->nunits;
	r->jobs = Alloc(r, sizeof(RJob) * (r->njobs + 1));
	r->shares = Alloc(r, sizeof(QsShare) * (c->nshares + 1));
	r->spent = Alloc(r, sizeof(double) * (r->cells + 1));
	r->recent = Alloc(r, sizeof(double) * (r->cells + 1));
	r->held = Alloc(r, sizeof(int64_t) * (r->cells + 1));
	r->stopping = Alloc(r, sizeof(int64_t) * (r->cells + 1));
	r->runnable = Alloc(r, sizeof(Sorted) * (r->cells + 1));
	r->by_size = Alloc(r, sizeof(Sorted) * (r->cells + 1));
	r->held_jobs = Alloc(r, sizeof(Sorted) * (r->cells + 1));
	r->arrivals = Alloc(r, sizeof(int) * (r->njobs + 1));
	r->due = Alloc(r, sizeof(int) * (r->njobs + 1));
	r->expired = Alloc(r, sizeof(int) * (r->njobs + 1));
	r->out->jobs = Alloc(r, sizeof(QsReplayResult) * (r->njobs + 1));
	r->out->borrowed = Alloc(r, sizeof(double) * (r->cells + 1));
	for (int s = 0; s < c->nshares; s++)
	{
		r->shares[s] = c->shares[s];
		r->shares[s].spent = &r->spent[s * c->nunits];
	}
	for (int at = 0; at < r->cells; at++)
	{
		r->spent[at] = c->spent != NULL ? c->spent[at] : 0;
		r->recent[at] = c->recent_borrow != NULL ? c->recent_borrow[at] : 0;
	}
}

static void
SetupJob(Replay *r, int i)
{
	const QsReplayJob *j = &r->in[i];
	RJob	   *rj = &r->jobs[i];

	rj->j.id = i + 1;
	rj->j.share = j->share;
	rj->j.unit = j->unit;
	rj->j.count = j->count;
	rj->j.priority = j->priority;
	rj->j.queued_at = j->queued_at;
	rj->j.scheduled_at = QS_NO_TIME;
	rj->j.promised_at = QS_NO_TIME;
	rj->j.lease_until = QS_NO_TIME;
	rj->j.deadline = QS_NO_TIME;
	rj->j.max_attempts = j->max_attempts;
	rj->j.failed_attempts = j->failed_attempts;
	rj->j.preemption_retries = j->preemption_retries;
	rj->j.preemption_count = j->preemption_count;
	rj->j.claim_backoff_until = QS_NO_TIME;
	rj->work = j->work;
	rj->state = QS_RUNNABLE;
	r->out->jobs[i].first_dispatch = QS_NO_TIME;
	r->out->jobs[i].ended_at = QS_NO_TIME;
	r->out->jobs[i].state = QS_RUNNABLE;
	r->arrivals[i] = i;
}

/* The arrivals in order of time, ties in the order given (a merge sort). */
static void
SortArrivals(Replay *r)
{
	int		   *tmp = Alloc(r, sizeof(int) * (r->njobs + 1));

	for (int width = 1; width < r->njobs; width *= 2)
	{
		for (int lo = 0; lo < r->njobs; lo += 2 * width)
		{
			int			mid = lo + width < r->njobs ? lo + width : r->njobs;
			int			hi = lo + 2 * width < r->njobs ? lo + 2 * width : r->njobs;
			int			a = lo,
						b = mid,
						k = lo;

			while (a < mid || b < hi)
				tmp[k++] = b >= hi || (a < mid && r->in[r->arrivals[a]].arrival <=
									   r->in[r->arrivals[b]].arrival)
					? r->arrivals[a++] : r->arrivals[b++];
		}
		memcpy(r->arrivals, tmp, sizeof(int) * r->njobs);
	}
}

/* The limits of misconfiguration, from the configuration alone. */
static void
SetupLimits(Replay *r)
{
	const QsReplayConfig *c = r->cfg;
	QsInput		in;
	QsOutput	out;

	BaseInput(r, c, &in);
	memset(&out, 0, sizeof(out));
	in.alloc = r->mem->alloc;
	in.alloc_arg = r->mem->arg;
	QsComputeFitLimits(&in, &out);
	r->limits = out.fit_limits;
}

/* When time moves on to from now: the next event, arrival, wake-up or period. */
static QsTime
NextInstant(const Replay *r, QsTime from)
{
	QsTime		next = QS_NO_TIME;
	QsTime		period = NextPeriod(r);

	if (r->next_arrival < r->njobs)
	{
		next = r->in[r->arrivals[r->next_arrival]].arrival;
		next = next < from ? from : next;
	}
	if (r->events.n > 0 && (next == QS_NO_TIME || r->events.e[0].at < next))
		next = r->events.e[0].at;
	if (r->wake_at != QS_NO_TIME && (next == QS_NO_TIME || r->wake_at < next))
		next = r->wake_at;
	if (period != QS_NO_TIME && (next == QS_NO_TIME || period < next))
		next = period;
	return next;
}

/*
 * Instant applies what happens at now (period is whether a budget period
 * starts), then runs passes until one changes nothing.
 */
static void
Instant(Replay *r, bool period)
{
	bool		changed = period;

	AdvanceLevels(r);
	if (r->wake_at != QS_NO_TIME && r->wake_at <= r->now)
	{
		r->wake_at = QS_NO_TIME;
		changed = true;
	}
	while (r->events.n > 0 && r->events.e[0].at <= r->now)
	{
		Event		e = Pop(r);

		ApplyEvent(r, &e);
		changed = true;
	}
	while (r->next_arrival < r->njobs && r->in[r->arrivals[r->next_arrival]].arrival <= r->now)
	{
		Arrive(r, r->arrivals[r->next_arrival++]);
		changed = true;
	}
	for (int round = 0; changed && round < QS_REPLAY_MAX_ROUNDS; round++)
		if (Pass(r) == 0)
			break;
	for (int i = 0; i < r->ndue; i++)
		r->jobs[r->due[i]].due = false;
	r->ndue = 0;
	r->nexpired = 0;
}

/*
 * QsReplay runs the jobs through the passes from `from` to `to` and writes
 * what became of each, and what each share borrowed, to out.
 */
void
QsReplay(const QsReplayConfig *config, int njobs, const QsReplayJob *jobs, QsTime from,
		 QsTime to, const QsReplayMemory *memory, QsReplayOutput *out)
{
	Replay		r;
	QsTime		next;

	memset(&r, 0, sizeof(r));
	memset(out, 0, sizeof(*out));
	r.cfg = config;
	r.in = jobs;
	r.mem = memory;
	r.out = out;
	r.njobs = njobs;
	r.now = from;
	r.levels_at = from;
	r.wake_at = QS_NO_TIME;
	SetupArrays(&r);
	for (int i = 0; i < njobs; i++)
		SetupJob(&r, i);
	SortArrivals(&r);
	SetupLimits(&r);
	while ((next = NextInstant(&r, from)) != QS_NO_TIME && next < to)
	{
		bool		period = next == NextPeriod(&r);

		r.now = next;
		Instant(&r, period);
	}
	r.now = to;
	AdvanceLevels(&r);
	for (int i = 0; i < njobs; i++)
		if (r.jobs[i].state == QS_RUNNING)
		{
			out->jobs[i].held += (double) r.jobs[i].j.count * (double) (to - r.jobs[i].started) / 1e6;
			out->jobs[i].state = QS_RUNNING;
		}
}
