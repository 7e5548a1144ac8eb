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
	w->dependency_failed_max = W_DEPENDENCY_FAILED_MAX;
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

/*
 * Names tells whether a job's depends_on names job d: by its id, or by
 * its array's id (scheduling.md 3.17), as the shell matches them.
 */
static bool
Names(const WJob *job, const WJob *d)
{
	for (int i = 0; i < job->ndeps; i++)
		if (job->deps[i] == d->j.id || (d->array_id != 0 && job->deps[i] == d->array_id))
			return true;
	return false;
}

/*
 * WSubmitDeps submits a job that depends on the jobs deps names (an
 * array's id: every job of the array; scheduling.md 3.17), counted as the
 * shell counts them at the submission: how many have not SUCCEEDED, the
 * least id of one that FAILED, and the reason DEPENDENCY while either is.
 */
WJob *
WSubmitDeps(World *w, const char *name, int share, int unit, int32_t priority,
			int32_t count, const int64_t *deps, int ndeps)
{
	WJob	   *job = WSubmitUnit(w, name, share, unit, priority, count);

	if (ndeps > W_MAX_DEPS)
		abort();
	memcpy(job->deps, deps, sizeof(int64_t) * ndeps);
	job->ndeps = ndeps;
	for (int i = 0; i < w->njobs - 1; i++)
	{
		const WJob *d = &w->jobs[i];

		if (!Names(job, d))
			continue;
		if (d->state != W_SUCCEEDED)
			job->j.deps_waiting++;
		if (d->state == W_FAILED && job->j.dependency_failed == 0)
			job->j.dependency_failed = d->j.id; /* in id order: the least */
	}
	if (job->j.deps_waiting > 0 || job->j.dependency_failed != 0)
	{
		job->status_reason = QsHoldName(QS_HOLD_DEPENDENCY);
		job->status_reason_at = w->now;
	}
	return job;
}

/*
 * WExpandArray makes the job submitted last index 0 of an array of size
 * jobs (scheduling.md 3.16), as the shell expands one: the others are
 * copies of it, every column (its name, queued_at, depends_on and their
 * counts) but the id, which follows; the array's id is index 0's.
 * Returns index 0.
 */
WJob *
WExpandArray(World *w, WJob *job, int size)
{
	if (job != &w->jobs[w->njobs - 1] || w->njobs + size - 1 > W_MAX_JOBS)
		abort();
	job->array_id = job->j.id;
	for (int i = 1; i < size; i++)
	{
		WJob	   *copy = &w->jobs[w->njobs++];

		*copy = *job;
		copy->j.id = w->njobs;
	}
	return job;
}

/*
 * DependencyEnded tells the RUNNABLE jobs that depend on a job that ended
 * (scheduling.md 3.17), as the shell does at its end: one fewer to wait
 * for when it SUCCEEDED (the reason DEPENDENCY goes with the last, unless
 * one FAILED); when it FAILED, each that has none yet notes it as the one
 * that failed.
 */
static void
DependencyEnded(World *w, const WJob *ended)
{
	for (int i = 0; i < w->njobs; i++)
	{
		WJob	   *job = &w->jobs[i];

		if (job->state != W_RUNNABLE || !Names(job, ended))
			continue;
		if (ended->state == W_FAILED)
		{
			if (job->j.dependency_failed == 0)
				job->j.dependency_failed = ended->j.id;
		}
		else if (job->j.deps_waiting > 0 && --job->j.deps_waiting == 0 &&
				 job->j.dependency_failed == 0)
		{
			job->status_reason = NULL;
			job->status_reason_at = QS_NO_TIME;
		}
	}
}

WJob *
WFind(World *w, const char *name)
{
	for (int i = 0; i < w->njobs; i++)
		if (w->jobs[i].name != NULL && strcmp(w->jobs[i].name, name) == 0)
			return &w->jobs[i];
	return NULL;
}

/*
 * WAddHost adds a host to a unit, which is placed from then on.
 */
WHost *
WAddHost(World *w, int unit, const char *name, int64_t instances)
{
	WHost	   *host = &w->hosts[unit][w->nhosts[unit]++];

	memset(host, 0, sizeof(*host));
	host->name = name;
	host->instances = instances;
	w->units[unit].placed = true;
	return host;
}

void
WLabel(WHost *host, const char *key, const char *value)
{
	host->labels[host->nlabels++] = (QsLabel) {key, value};
}

/* WRemoveHost: the agent is no longer live (or drains); the unit stays placed. */
void
WRemoveHost(World *w, int unit, const char *name)
{
	for (int h = 0; h < w->nhosts[unit]; h++)
		if (strcmp(w->hosts[unit][h].name, name) == 0)
		{
			w->hosts[unit][h] = w->hosts[unit][--w->nhosts[unit]];
			return;
		}
}

/* WPartOn returns the instances of a job's part on a host (0: none). */
int
WPartOn(const WJob *job, const char *host)
{
	for (int i = 0; i < job->nparts; i++)
		if (strcmp(job->parts[i].host, host) == 0)
			return job->parts[i].count;
	return 0;
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
		   bool below_all, const QsSkipClass *classes, int nclasses, QsJob *out)
{
	World	   *w = arg;
	const QsJob *best = NULL;

	for (int i = 0; i < w->njobs; i++)
	{
		const QsJob *j = &w->jobs[i].j;

		if (w->jobs[i].state != W_RUNNABLE || j->share != share ||
			j->unit != unit || !QsSourceGives(j, below, below_all, classes, nclasses))
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
 * promised job, the promised and expired RUNNABLE jobs, and those a
 * dependency of which failed (the first dependency_failed_max by id).
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
	QsJob	   *dep_failed = WAlloc(NULL, sizeof(QsJob) * (w->njobs + 1));

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
			if (job->j.dependency_failed != 0 &&
				in->ndependency_failed < w->dependency_failed_max)
				dep_failed[in->ndependency_failed++] = job->j;
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
	in->dependency_failed = dep_failed;
}

static int
CompareHostName(const void *a, const void *b)
{
	return strcmp(((const QsHost *) a)->name, ((const QsHost *) b)->name);
}

/* HostHolds adds a held job's parts to what its hosts hold, as the shell's counters do. */
static void
HostHolds(QsHost *hosts, int nhosts, const WJob *job)
{
	for (int i = 0; i < job->nparts; i++)
		for (int h = 0; h < nhosts; h++)
			if (strcmp(hosts[h].name, job->parts[i].host) == 0)
			{
				hosts[h].held += job->parts[i].count;
				if (job->j.stop != QS_STOP_NONE)
					hosts[h].stopping += job->parts[i].count;
			}
}

/*
 * SnapshotHosts gives each placed unit its hosts, in the order of their
 * names, with what the parts of held jobs hold on them.
 */
static void
SnapshotHosts(World *w, QsInput *in)
{
	QsUnit	   *units = WAlloc(NULL, sizeof(QsUnit) * (w->nunits + 1));

	memcpy(units, w->units, sizeof(QsUnit) * w->nunits);
	for (int u = 0; u < w->nunits; u++)
	{
		QsHost	   *hosts = WAlloc(NULL, sizeof(QsHost) * (w->nhosts[u] + 1));
		const char *error;

		if (!units[u].placed)
			continue;
		for (int h = 0; h < w->nhosts[u]; h++)
			hosts[h] = (QsHost) {w->hosts[u][h].name, w->hosts[u][h].instances, 0, 0,
				w->hosts[u][h].nlabels, w->hosts[u][h].labels};
		qsort(hosts, w->nhosts[u], sizeof(QsHost), CompareHostName);
		for (int i = 0; i < w->njobs; i++)
			if (Held(&w->jobs[i]) && w->jobs[i].j.unit == u)
				HostHolds(hosts, w->nhosts[u], &w->jobs[i]);
		units[u].hosts = hosts;
		units[u].nhosts = w->nhosts[u];
		if ((error = QsPrepareHosts(&units[u], WAlloc, NULL)) != NULL)
		{
			fprintf(stderr, "world: %s\n", error);
			abort();
		}
	}
	in->units = units;
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
	for (int i = 0; i < w->njobs; i++)
	{
		w->jobs[i].j.parts = w->jobs[i].parts;
		w->jobs[i].j.nparts = w->jobs[i].nparts;
		w->jobs[i].j.status_reason = w->jobs[i].status_reason;
	}
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
	SnapshotHosts(w, &in);
	in.nshares = w->nshares;
	in.shares = w->shares;
	in.claim_timeout = w->claim_timeout;
	in.fence_grace = w->fence_grace;
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

/* Ends an attempt with an outcome of the core (a FAIL ends the job). */
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
	if (action == QS_FAIL)
		DependencyEnded(w, job);
	job->j.state = QS_RUNNABLE;
	job->j.stop = QS_STOP_NONE;
	job->j.claimed = false;
	job->j.lease_until = QS_NO_TIME;
	job->j.deadline = QS_NO_TIME;
	job->j.promised_at = QS_NO_TIME;
	job->nparts = 0;
}

/* SetParts gives a job a placement or a reservation. */
static void
SetParts(WJob *job, const QsPart *parts, int nparts)
{
	QsPart	   *copy = WAlloc(NULL, sizeof(QsPart) * (nparts + 1));

	memcpy(copy, parts, sizeof(QsPart) * nparts);
	job->parts = copy;
	job->nparts = nparts;
}

/*
 * ApplyHostReasons sets and clears WAITING_FOR_HOSTS as the shell does:
 * the lowest of the reasons, set only where the job has no other one.
 */
static void
ApplyHostReasons(World *w, const QsOutput *out)
{
	for (int i = 0; i < out->nhost_reasons; i++)
	{
		WJob	   *job = ById(w, out->host_reasons[i].job_id);
		const char *reason = out->host_reasons[i].reason;
		bool		ours = job->status_reason == NULL ||
			strcmp(job->status_reason, "WAITING_FOR_HOSTS") == 0;

		if (job->state != W_RUNNABLE || !ours || reason == job->status_reason)
			continue;
		job->status_reason = reason;
		job->status_reason_at = reason ? w->now : QS_NO_TIME;
	}
}

/*
 * ClearUnplacedReasons clears, as the shell does, the reasons of placement
 * of the RUNNABLE jobs of units that are not placed: WAITING_FOR_HOSTS, and
 * NO_AGENT_FITS of jobs with placement constraints (no job waits for
 * hosts where nothing is placed).
 */
static void
ClearUnplacedReasons(World *w)
{
	for (int i = 0; i < w->njobs; i++)
	{
		WJob	   *job = &w->jobs[i];
		const char *r = job->status_reason;

		if (job->state != W_RUNNABLE || w->units[job->j.unit].placed || r == NULL)
			continue;
		if (strcmp(r, "WAITING_FOR_HOSTS") == 0 ||
			(strcmp(r, "NO_AGENT_FITS") == 0 &&
			 (job->j.per_host > 0 || job->j.same_label != NULL)))
		{
			job->status_reason = NULL;
			job->status_reason_at = QS_NO_TIME;
		}
	}
}

/*
 * ApplyReasons sets the reasons of RUNNABLE jobs that cannot run as the
 * shell does (scheduling.md 3.7, 3.11, 3.13), keeping WAITING_FOR_HOSTS,
 * the lowest, where none of them is; a job waiting for dependencies keeps
 * DEPENDENCY (3.17: the shell reads none of them there).
 */
static void
ApplyReasons(World *w, const QsOutput *out)
{
	QsInput		in;

	Snapshot(w, &in);
	for (int i = 0; i < w->njobs; i++)
	{
		WJob	   *job = &w->jobs[i];
		const QsFitLimit *limit;
		const char *reason = NULL;

		if (job->state != W_RUNNABLE || job->j.deps_waiting > 0)
			continue;
		limit = &out->fit_limits[job->j.share * w->nunits + job->j.unit];
		if (job->j.count > limit->env_max)
			reason = "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE";
		else if (job->j.count > limit->quota_max)
			reason = "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED";
		else if (QsOverBudget(&w->shares[job->j.share], job->j.unit))
			reason = "BUDGET_EXHAUSTED";
		else if (QsNoAgentFits(&in, &job->j))
			reason = "NO_AGENT_FITS";
		else if (job->status_reason != NULL &&
				 strcmp(job->status_reason, "WAITING_FOR_HOSTS") == 0)
			reason = job->status_reason;
		if (reason != job->status_reason)
			job->status_reason_at = reason ? w->now : QS_NO_TIME;
		job->status_reason = reason;
	}
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
				SetParts(job, d->parts, d->nparts);
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
	{
		ById(w, out->lapsed[i])->j.promised_at = QS_NO_TIME;
		ById(w, out->lapsed[i])->nparts = 0;
	}
	for (int i = 0; i < out->npromised; i++)
		ById(w, out->promised[i])->j.promised_at = w->now;
	for (int i = 0; i < out->nreserved; i++)
		SetParts(ById(w, out->reserved[i].job_id), out->reserved[i].parts,
				 out->reserved[i].nparts);
	ApplyReasons(w, out);
	ApplyHostReasons(w, out);
	ClearUnplacedReasons(w);
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

/*
 * WEnd ends a job, SUCCEEDED or FAILED (a live one: its end is told to the
 * jobs that depend on it, scheduling.md 3.17).
 */
void
WEnd(World *w, WJob *job, WState state)
{
	bool		live = job->state <= W_RUNNING;

	job->state = state;
	job->j.stop = QS_STOP_NONE;
	if (live)
		DependencyEnded(w, job);
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
