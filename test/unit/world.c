/*-------------------------------------------------------------------------
 *
 * world.c
 *		An in-memory job queue for the policy core's unit tests and
 *		simulator: snapshot building, a RUNNABLE source, and the
 *		application of decisions as the shell does it.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "world.h"

static void **allocations;
static size_t nallocations;
static size_t allocations_cap;

static void *
WAlloc(void *arg, size_t size)
{
	void	   *p = calloc(1, size ? size : 1);

	(void) arg;
	if (p == NULL)
		abort();
	if (nallocations == allocations_cap)
	{
		allocations_cap = allocations_cap ? allocations_cap * 2 : 1024;
		allocations = realloc(allocations, allocations_cap * sizeof(void *));
	}
	allocations[nallocations++] = p;
	return p;
}

void
WFreeAll(void)
{
	for (size_t i = 0; i < nallocations; i++)
		free(allocations[i]);
	nallocations = 0;
}

void
WInit(World *w, int64_t env_limit)
{
	memset(w, 0, sizeof(*w));
	w->now = 1000000;
	w->env_enabled = true;
	w->runnable_timeout = QS_NO_TIME;
	w->claim_timeout = QS_NO_TIME;
	WAddUnit(w, "ml.g5.xlarge", env_limit);
}

int
WAddUnit(World *w, const char *name, int64_t env_limit)
{
	w->units[w->nunits].name = name;
	w->units[w->nunits].env_limit = env_limit;
	return w->nunits++;
}

int
WAddShare(World *w, const char *name, QsStrategy strategy, int32_t borrow_limit,
		  bool in_share_preemption, int64_t capacity_unit0)
{
	int			s = w->nshares++;
	QsShare    *share = &w->shares[s];

	share->name = name;
	share->strategy = strategy;
	share->borrow_limit = borrow_limit;
	share->in_share_preemption = in_share_preemption;
	share->enabled = true;
	share->capacity = w->capacity[s];
	share->lend_limit = -1;
	share->weight = 1;
	share->budget = w->budget[s];
	share->spent = w->spent[s];
	for (int u = 0; u < W_MAX_UNITS; u++)
		w->budget[s][u] = -1;
	w->capacity[s][0] = capacity_unit0;
	return s;
}

WJob *
WSubmitUnit(World *w, const char *name, int share, int unit, int32_t priority,
			int32_t count)
{
	WJob	   *job = &w->jobs[w->njobs++];

	memset(job, 0, sizeof(*job));
	job->name = name;
	job->state = W_RUNNABLE;
	job->j.id = w->njobs;
	job->j.share = share;
	job->j.unit = unit;
	job->j.count = count;
	job->j.priority = priority;
	job->j.state = QS_RUNNABLE;
	job->j.queued_at = ++w->now;
	job->j.scheduled_at = QS_NO_TIME;
	job->j.promised_at = QS_NO_TIME;
	job->j.lease_until = QS_NO_TIME;
	job->j.deadline = QS_NO_TIME;
	job->j.max_attempts = 1;
	job->j.preemption_retries = -1;
	job->j.max_lease_losses = 3;
	job->j.claim_backoff_until = QS_NO_TIME;
	job->status_reason_at = QS_NO_TIME;
	return job;
}

WJob *
WSubmit(World *w, const char *name, int share, int32_t priority, int32_t count)
{
	return WSubmitUnit(w, name, share, 0, priority, count);
}

WJob *
WFind(World *w, const char *name)
{
	for (int i = 0; i < w->njobs; i++)
		if (w->jobs[i].name != NULL && strcmp(w->jobs[i].name, name) == 0)
			return &w->jobs[i];
	return NULL;
}

static bool
ShareOrderBefore(const QsJob *a, const QsJob *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	if (a->queued_at != b->queued_at)
		return a->queued_at < b->queued_at;
	return a->id < b->id;
}

static void
NoteRead(World *w, int64_t id)
{
	for (int i = 0; i < w->nread; i++)
		if (w->read[i] == id)
			return;
	w->read[w->nread++] = id;
}

/* The source's next(): a linear scan, as the index would answer it. */
static bool
SourceNext(void *arg, int share, int unit, const QsJob *after, int32_t below,
		   QsJob *out)
{
	World	   *w = arg;
	const QsJob *best = NULL;

	for (int i = 0; i < w->njobs; i++)
	{
		const QsJob *j = &w->jobs[i].j;

		if (w->jobs[i].state != W_RUNNABLE || j->share != share ||
			j->unit != unit || j->count >= below)
			continue;
		if (after != NULL && !ShareOrderBefore(after, j))
			continue;
		if (best == NULL || ShareOrderBefore(j, best))
			best = j;
	}
	if (best == NULL)
		return false;
	NoteRead(w, best->id);
	*out = *best;
	return true;
}

static int
CompareCount(const void *a, const void *b)
{
	const QsJob *x = a;
	const QsJob *y = b;

	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* The source's smallest(). */
static int
SourceSmallest(void *arg, int share, int unit, int32_t at_most, int max,
			   QsJob *out)
{
	World	   *w = arg;
	QsJob	   *all = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));
	int			n = 0;

	for (int i = 0; i < w->njobs; i++)
	{
		const QsJob *j = &w->jobs[i].j;

		if (w->jobs[i].state == W_RUNNABLE && j->share == share &&
			j->unit == unit && j->count <= at_most)
			all[n++] = *j;
	}
	qsort(all, n, sizeof(QsJob), CompareCount);
	if (n > max)
		n = max;
	memcpy(out, all, sizeof(QsJob) * n);
	return n;
}

static bool
Held(const WJob *job)
{
	return job->state == W_SCHEDULED || job->state == W_STARTING ||
		job->state == W_RUNNING;
}

/* Victim order: priority ASC, scheduled_at DESC, id DESC. */
static bool
VictimOrderBefore(const QsJob *a, const QsJob *b)
{
	if (a->priority != b->priority)
		return a->priority < b->priority;
	if (a->scheduled_at != b->scheduled_at)
		return a->scheduled_at > b->scheduled_at;
	return a->id > b->id;
}

/* The source's held(): a linear scan, as the victim-order index would answer it. */
static bool
SourceHeld(void *arg, int share, int unit, const QsJob *after, int64_t below,
		   QsJob *out)
{
	World	   *w = arg;
	const QsJob *best = NULL;

	for (int i = 0; i < w->njobs; i++)
	{
		const QsJob *j = &w->jobs[i].j;

		if (!Held(&w->jobs[i]) || j->share != share || j->unit != unit ||
			j->stop != QS_STOP_NONE || j->priority >= below)
			continue;
		if (after != NULL && !VictimOrderBefore(after, j))
			continue;
		if (best == NULL || VictimOrderBefore(j, best))
			best = j;
	}
	if (best == NULL)
		return false;
	*out = *best;
	return true;
}

/*
 * Due tells whether a held job is due for time-based work, as the shell
 * selects them: its lease expired, its attempt passed its deadline, or no
 * agent claimed it within the claim timeout.
 */
static bool
Due(const World *w, const QsJob *j)
{
	return (j->claimed && j->lease_until != QS_NO_TIME && j->lease_until < w->now) ||
		(j->state == QS_RUNNING && j->stop == QS_STOP_NONE &&
		 j->deadline != QS_NO_TIME && j->deadline <= w->now) ||
		(!j->claimed && j->state == QS_SCHEDULED && w->claim_timeout != QS_NO_TIME &&
		 j->scheduled_at < w->now - w->claim_timeout);
}

/*
 * ReasonExpired tells whether a RUNNABLE job's reason dates from more than
 * the runnable timeout ago, as the shell selects them (scheduling.md 3.9).
 */
static bool
ReasonExpired(const World *w, const WJob *job)
{
	return w->runnable_timeout != QS_NO_TIME && job->status_reason != NULL &&
		job->status_reason_at + w->runnable_timeout < w->now;
}

/*
 * SnapshotJobs reads the jobs into the snapshot: the counters of held
 * capacity, the held jobs due for time-based work or stopping for a
 * promised job, the promised and expired RUNNABLE jobs.
 */
static void
SnapshotJobs(World *w, QsInput *in)
{
	int			cells = w->nshares * w->nunits + 1;
	int64_t    *held = WAlloc(NULL, sizeof(int64_t) * cells);
	int64_t    *stopping = WAlloc(NULL, sizeof(int64_t) * cells);
	QsJob	   *due = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));
	QsJob	   *victims = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));
	QsJob	   *promised = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));
	QsJob	   *expired = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));
	QsJob	   *no_agent = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));

	for (int i = 0; i < w->njobs; i++)
	{
		WJob	   *job = &w->jobs[i];

		if (Held(job))
		{
			int			at = job->j.share * w->nunits + job->j.unit;

			held[at] += job->j.count;
			if (job->j.stop != QS_STOP_NONE)
				stopping[at] += job->j.count;
			if (Due(w, &job->j))
				due[in->ndue++] = job->j;
			if (job->j.preempted_for != 0 && job->j.stop != QS_STOP_NONE)
				victims[in->nvictims++] = job->j;
		}
		else if (job->state == W_RUNNABLE)
		{
			if (job->j.promised_at != QS_NO_TIME)
				promised[in->npromised++] = job->j;
			if (!ReasonExpired(w, job))
				continue;
			if (strncmp(job->status_reason, "MISCONFIGURATION:", 17) == 0)
				expired[in->nexpired++] = job->j;
			else if (strcmp(job->status_reason, "NO_AGENT_FITS") == 0)
				no_agent[in->nno_agent_expired++] = job->j;
		}
	}
	in->held = held;
	in->stopping = stopping;
	in->due = due;
	in->victims = victims;
	in->promised = promised;
	in->expired = expired;
	in->no_agent_expired = no_agent;
}

/*
 * Snapshot builds the snapshot of the world a pass reads: the
 * configuration, the jobs as SnapshotJobs reads them, and sources for the
 * rest.
 */
static void
Snapshot(World *w, QsInput *out)
{
	QsInput		in;

	memset(&in, 0, sizeof(in));
	SnapshotJobs(w, &in);
	in.now = w->now;
	in.env_enabled = w->env_enabled;
	in.fair = w->fair;
	if (w->memory)
	{
		double	   *recent = WAlloc(NULL, sizeof(double) * (w->nshares * w->nunits + 1));

		for (int s = 0; s < w->nshares; s++)
			for (int u = 0; u < w->nunits; u++)
				recent[s * w->nunits + u] = w->recent_borrow[s][u];
		in.recent_borrow = recent;
	}
	in.nunits = w->nunits;
	in.units = w->units;
	in.nshares = w->nshares;
	in.shares = w->shares;
	in.claim_timeout = w->claim_timeout;
	in.source.next = SourceNext;
	in.source.smallest = SourceSmallest;
	in.source.held = SourceHeld;
	in.source.arg = w;
	in.alloc = WAlloc;
	*out = in;
}

/*
 * WPass runs one pass on the world.
 */
const QsOutput *
WPass(World *w)
{
	QsInput		in;

	Snapshot(w, &in);
	w->nread = 0;
	QsRunPass(&in, &w->out);
	return &w->out;
}

/*
 * WExplain tells why a RUNNABLE job of the world waits (explain).
 */
QsWhy
WExplain(World *w, const WJob *job)
{
	QsInput		in;

	Snapshot(w, &in);
	return QsExplainWait(&in, &job->j);
}

/*
 * WStrictHead tells which held-back job keeps a RUNNABLE job of a STRICT
 * share waiting (explain), writing it to *head.
 */
QsHold
WStrictHead(World *w, const WJob *job, QsJob *head)
{
	QsInput		in;

	Snapshot(w, &in);
	return QsStrictHeadHeld(&in, &job->j, 10000, head);
}

static WJob *
ById(World *w, int64_t id)
{
	return &w->jobs[id - 1];
}

/* Ends an attempt with an outcome of the core. */
static void
ApplyOutcome(World *w, WJob *job, QsAction action, QsCounter counter)
{
	if (counter == QS_COUNT_FAILED_ATTEMPT)
		job->j.failed_attempts++;
	else if (counter == QS_COUNT_PREEMPTION)
		job->j.preemption_count++;
	else if (counter == QS_COUNT_LEASE_LOSS)
		job->j.lease_losses++;
	else if (counter == QS_COUNT_NOT_CLAIMED)
		job->j.claim_requeues++;
	job->state = action == QS_FAIL ? W_FAILED : W_RUNNABLE;
	job->j.state = QS_RUNNABLE;
	job->j.stop = QS_STOP_NONE;
	job->j.claimed = false;
	job->j.lease_until = QS_NO_TIME;
	job->j.deadline = QS_NO_TIME;
	job->j.promised_at = QS_NO_TIME;
}

/*
 * WApply applies the decisions of the last pass, as the shell does.
 */
void
WApply(World *w)
{
	const QsOutput *out = &w->out;

	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];
		WJob	   *job = ById(w, d->job_id);

		switch (d->action)
		{
			case QS_DISPATCH:
				job->state = W_SCHEDULED;
				job->j.state = QS_SCHEDULED;
				job->j.scheduled_at = w->now;
				job->j.promised_at = QS_NO_TIME;
				job->status_reason = NULL;
				break;
			case QS_PREEMPT:
				job->j.preempted_for = d->preempted_for;
				if (!d->immediate)
					job->j.stop = d->stop;
				break;
			case QS_STOP:
				job->j.stop = d->stop;
				break;
			case QS_REQUEUE:
			case QS_FAIL:
				ApplyOutcome(w, job, d->action, d->counter);
				if (d->counter == QS_COUNT_NOT_CLAIMED)
					job->j.claim_backoff_until = d->backoff_until;
				break;
		}
	}
	for (int i = 0; i < out->nlapsed; i++)
		ById(w, out->lapsed[i])->j.promised_at = QS_NO_TIME;
	for (int i = 0; i < out->npromised; i++)
		ById(w, out->promised[i])->j.promised_at = w->now;
	for (int i = 0; i < w->njobs; i++)
	{
		WJob	   *job = &w->jobs[i];
		const QsFitLimit *limit;
		const char *reason = NULL;

		if (job->state != W_RUNNABLE)
			continue;
		limit = &out->fit_limits[job->j.share * w->nunits + job->j.unit];
		if (job->j.count > limit->env_max)
			reason = "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE";
		else if (job->j.count > limit->quota_max)
			reason = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED";
		else if (QsOverBudget(&w->shares[job->j.share], job->j.unit))
			reason = "BUDGET_EXHAUSTED";
		else if (job->j.count > limit->agent_max)
			reason = "NO_AGENT_FITS";
		if (reason != job->status_reason)
			job->status_reason_at = reason ? w->now : QS_NO_TIME;
		job->status_reason = reason;
	}
}

const QsOutput *
WPassApply(World *w)
{
	const QsOutput *out = WPass(w);

	WApply(w);
	return out;
}

void
WClaim(World *w, WJob *job, QsTime lease)
{
	job->state = W_STARTING;
	job->j.state = QS_STARTING;
	job->j.claimed = true;
	job->j.lease_until = w->now + lease;
}

/* The agent reports STOPPED: the job stops as QsStoppedOutcome says. */
void
WStopped(World *w, WJob *job)
{
	QsStopOutcome o = QsStoppedOutcome(&job->j);

	ApplyOutcome(w, job, o.action, o.counter);
}

void
WEnd(World *w, WJob *job, WState state)
{
	(void) w;
	job->state = state;
	job->j.stop = QS_STOP_NONE;
}

const QsDecision *
WDecisionFor(const QsOutput *out, const WJob *job)
{
	for (int i = 0; i < out->ndecisions; i++)
		if (out->decisions[i].job_id == job->j.id)
			return &out->decisions[i];
	return NULL;
}

bool
WWasRead(const World *w, const WJob *job)
{
	for (int i = 0; i < w->nread; i++)
		if (w->read[i] == job->j.id)
			return true;
	return false;
}
