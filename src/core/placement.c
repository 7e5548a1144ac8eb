/*-------------------------------------------------------------------------
 *
 * placement.c
 *		Placement in the policy core (scheduling.md 3.13): the hosts of a
 *		placed unit and what they hold, free(A,u) in the states of the
 *		plan, the placement rule (host groups, the parts in a group, the
 *		choice of a group, the ranks), the placement a promise reserves,
 *		and the largest job that has a placement at all (held back
 *		NO_AGENT_FITS).
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "policy_int.h"

#define Max64(a, b) ((a) > (b) ? (a) : (b))

/* A result of QsPlacementMax for a same_label, kept for the pass. */
typedef struct LabelMax
{
	struct LabelMax *next;
	const char *key;
	int32_t		per_host;
	int64_t		most;
} LabelMax;

/* At most this many results for labels are kept in a host index. */
#define QS_LABEL_MAX_KEPT 256

/*
 * What QsPrepareHosts knows of a unit's hosts: their instances in all and,
 * in descending order, each host's (for the largest job of a per_host);
 * the results for labels computed so far (at most QS_LABEL_MAX_KEPT: the
 * index may outlast a pass, and the labels asked for are the users'), the
 * room to compute one, and the memory for more.
 */
struct QsHostIndex
{
	int64_t		total;
	int64_t    *instances_desc;
	LabelMax   *label_max;
	int			nlabel_max;
	int		   *order;			/* room for LabelPlacementMax, [nhosts + 1] */
	int		   *tmp;
	const char **value;
	void	   *(*alloc) (void *arg, size_t size);
	void	   *alloc_arg;
};

/* The order of hosts of a sort: by a key (ascending or not), then by index. */
typedef struct HostOrder
{
	const int64_t *key;			/* NULL: by label value */
	bool		descending;
	const char *const *value;	/* by label value: [h] */
} HostOrder;

/*
 * HostBefore: host a comes before host b in an order; ties go to the least
 * index, which is the least agent name (the hosts are in name order).
 */
static bool
HostBefore(const HostOrder *o, int a, int b)
{
	if (o->key != NULL && o->key[a] != o->key[b])
		return o->descending ? o->key[a] > o->key[b] : o->key[a] < o->key[b];
	if (o->key == NULL)
	{
		int			c = strcmp(o->value[a], o->value[b]);

		if (c != 0)
			return c < 0;
	}
	return a < b;
}

/*
 * SortHosts sorts host indexes in an order: a merge sort (stable, n log n),
 * with tmp as room for n indexes.
 */
static void
SortHosts(int *idx, int n, const HostOrder *o, int *tmp)
{
	for (int width = 1; width < n; width *= 2)
	{
		for (int lo = 0; lo < n; lo += 2 * width)
		{
			int			mid = lo + width < n ? lo + width : n;
			int			hi = lo + 2 * width < n ? lo + 2 * width : n;
			int			i = lo,
						j = mid,
						k = lo;

			while (i < mid || j < hi)
				tmp[k++] = (j >= hi || (i < mid && !HostBefore(o, idx[j], idx[i]))) ?
					idx[i++] : idx[j++];
		}
		memcpy(idx, tmp, sizeof(int) * n);
	}
}

/*
 * LabelOf returns a host's value of a label, or NULL when it has none.
 */
static const char *
LabelOf(const QsHost *host, const char *key)
{
	for (int i = 0; i < host->nlabels; i++)
		if (strcmp(host->labels[i].key, key) == 0)
			return host->labels[i].value;
	return NULL;
}

/*
 * QsPrepareHosts checks that a unit's hosts are in the strict C order of
 * their names, with instances of at least 1, and indexes them for
 * QsPlacementMax.  Returns NULL, or what is wrong.
 */
const char *
QsPrepareHosts(QsUnit *unit, void *(*alloc) (void *arg, size_t size), void *alloc_arg)
{
	struct QsHostIndex *index = alloc(alloc_arg, sizeof(struct QsHostIndex));
	int		   *idx = alloc(alloc_arg, sizeof(int) * (unit->nhosts + 1));
	int		   *tmp = alloc(alloc_arg, sizeof(int) * (unit->nhosts + 1));
	int64_t    *inst = alloc(alloc_arg, sizeof(int64_t) * (unit->nhosts + 1));
	HostOrder	o = {inst, true, NULL};

	for (int h = 0; h < unit->nhosts; h++)
	{
		if (h > 0 && strcmp(unit->hosts[h - 1].name, unit->hosts[h].name) >= 0)
			return "hosts are not in the order of their names";
		if (unit->hosts[h].instances < 1)
			return "a host has no instances";
		inst[h] = unit->hosts[h].instances;
		index->total += inst[h];
		idx[h] = h;
	}
	SortHosts(idx, unit->nhosts, &o, tmp);
	index->instances_desc = alloc(alloc_arg, sizeof(int64_t) * (unit->nhosts + 1));
	index->order = idx;
	index->tmp = tmp;
	index->value = alloc(alloc_arg, sizeof(char *) * (unit->nhosts + 1));
	index->alloc = alloc;
	index->alloc_arg = alloc_arg;
	for (int h = 0; h < unit->nhosts; h++)
		index->instances_desc[h] = inst[idx[h]];
	unit->host_index = index;
	return NULL;
}

/*
 * CoreHostIndex returns the index of a unit's host of that name, or -1
 * when the agent is no host of the unit (not live, DRAINING, forgotten).
 */
int
CoreHostIndex(const QsUnit *unit, const char *name)
{
	int			lo = 0,
				hi = unit->nhosts - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(unit->hosts[mid].name, name);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * QsHostOf returns the index of a unit's host of that name, or -1
 * (CoreHostIndex, for the shell).
 */
int
QsHostOf(const QsUnit *unit, const char *name)
{
	return CoreHostIndex(unit, name);
}

/*
 * GroupMax returns the most instances a job of a per_host could have on a
 * group of hosts were each empty: per_host k on each of the hosts with at
 * least k; with no per_host, the instances of the group in all.
 */
static int64_t
GroupMax(const QsHost *hosts, const int *members, int n, int32_t per_host)
{
	int64_t		most = 0;

	for (int i = 0; i < n; i++)
	{
		int64_t		inst = hosts[members[i]].instances;

		if (per_host <= 0)
			most += inst;
		else if (inst >= per_host)
			most += per_host;
	}
	return most;
}

/*
 * LabelGroups sorts the hosts that have a label by its value (then name)
 * into order[], with value[h] each host's value; returns how many have it.
 */
static int
LabelGroups(const QsUnit *unit, const char *key, int *order, const char **value,
			int *tmp)
{
	HostOrder	o = {NULL, false, value};
	int			n = 0;

	for (int h = 0; h < unit->nhosts; h++)
		if ((value[h] = LabelOf(&unit->hosts[h], key)) != NULL)
			order[n++] = h;
	SortHosts(order, n, &o, tmp);
	return n;
}

/*
 * GroupEnd returns the end of the group of hosts that starts at order[i]
 * (the hosts with its label value; with no label, every host).
 */
static int
GroupEnd(const int *order, int n, int i, const char *const *value)
{
	int			end = i + 1;

	if (value == NULL)
		return n;
	while (end < n && strcmp(value[order[end]], value[order[i]]) == 0)
		end++;
	return end;
}

/*
 * LabelPlacementMax returns QsPlacementMax for a same_label: over the
 * groups of hosts by the label's value, the largest GroupMax.  Kept in the
 * index, which lasts as long as the hosts (the shell keeps it from pass
 * to pass while the hosts are the same), up to QS_LABEL_MAX_KEPT results.
 */
static int64_t
LabelPlacementMax(const QsUnit *unit, int32_t per_host, const char *key)
{
	struct QsHostIndex *index = (struct QsHostIndex *) unit->host_index;
	int64_t		most = 0;
	LabelMax   *memo;
	int			n;

	for (memo = index->label_max; memo != NULL; memo = memo->next)
		if (memo->per_host == per_host && strcmp(memo->key, key) == 0)
			return memo->most;
	n = LabelGroups(unit, key, index->order, index->value, index->tmp);
	for (int i = 0; i < n; i = GroupEnd(index->order, n, i, index->value))
	{
		int			end = GroupEnd(index->order, n, i, index->value);

		most = Max64(most, GroupMax(unit->hosts, index->order + i, end - i, per_host));
	}
	if (index->nlabel_max < QS_LABEL_MAX_KEPT)
	{
		char	   *copy = index->alloc(index->alloc_arg, strlen(key) + 1);

		memo = index->alloc(index->alloc_arg, sizeof(LabelMax));
		memo->key = strcpy(copy, key);
		memo->per_host = per_host;
		memo->most = most;
		memo->next = index->label_max;
		index->label_max = memo;
		index->nlabel_max++;
	}
	return most;
}

/*
 * QsPlacementMax returns the most instances a job of a per_host (0: any
 * split) and same_label (NULL: none) could have on a placed unit's hosts
 * were every host empty (scheduling.md 3.13): over the host groups, the
 * largest GroupMax.  0 when the unit has no hosts.  The unit's hosts must
 * have been prepared (QsPrepareHosts).
 */
int64_t
QsPlacementMax(const QsUnit *unit, int32_t per_host, const char *same_label)
{
	const struct QsHostIndex *index = unit->host_index;
	int			lo = 0;
	int			hi = unit->nhosts;

	if (unit->nhosts == 0)
		return 0;
	if (same_label != NULL)
		return LabelPlacementMax(unit, per_host, same_label);
	if (per_host <= 0)
		return index->total;
	/* the hosts of at least per_host instances: a prefix of instances_desc */
	while (lo < hi)
	{
		int			mid = lo + (hi - lo) / 2;

		if (index->instances_desc[mid] >= per_host)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int64_t) per_host * lo;
}

/*
 * QsNoAgentFits tells whether a job of a placed unit has no placement even
 * were every host of its unit empty (too few hosts, none large enough, no
 * group with enough hosts of the label): it is then held back
 * (scheduling.md 3.13, in place of 3.10's largest agent).  A unit that is
 * not placed holds nothing back.
 */
bool
QsNoAgentFits(const QsInput *in, const QsJob *job)
{
	const QsUnit *unit = &in->units[job->unit];

	return unit->placed &&
		job->count > QsPlacementMax(unit, job->per_host, job->same_label);
}

/*
 * CoreInitHosts takes what each placed unit's hosts hold from the input,
 * with room for the placements the pass computes.
 */
void
CoreInitHosts(CorePlan *p)
{
	p->hosts = CoreAlloc(p, sizeof(CoreHosts) * (p->nunits + 1));
	for (int u = 0; u < p->nunits; u++)
	{
		const QsUnit *unit = &p->in->units[u];
		CoreHosts  *hs = &p->hosts[u];
		int			n1 = unit->nhosts + 1;

		if (!unit->placed)
			continue;
		hs->held = CoreAlloc(p, sizeof(int64_t) * n1);
		hs->stopping = CoreAlloc(p, sizeof(int64_t) * n1);
		hs->reserved = CoreAlloc(p, sizeof(int64_t) * n1);
		hs->free = CoreAlloc(p, sizeof(int64_t) * n1);
		hs->order = CoreAlloc(p, sizeof(int) * n1);
		hs->tmp = CoreAlloc(p, sizeof(int) * n1);
		hs->cand = CoreAlloc(p, sizeof(int) * n1);
		hs->value = CoreAlloc(p, sizeof(char *) * n1);
		hs->parts = CoreAlloc(p, sizeof(QsPart) * n1);
		hs->best = CoreAlloc(p, sizeof(QsPart) * n1);
	}
}

/*
 * HostUsage returns a placed unit's hosts as the pass plans them, having
 * taken what their parts hold from the input the first time (the source's
 * host_usage, which reads it only then: a pass that places nothing reads
 * nothing of it).
 */
static CoreHosts *
HostUsage(CorePlan *p, int u)
{
	const QsUnit *unit = &p->in->units[u];
	CoreHosts  *hs = &p->hosts[u];

	if (hs->loaded)
		return hs;
	hs->loaded = true;
	if (p->in->source.host_usage != NULL)
	{
		p->in->source.host_usage(p->in->source.arg, u, hs->held, hs->stopping);
		return hs;
	}
	for (int h = 0; h < unit->nhosts; h++)
	{
		hs->held[h] = unit->hosts[h].held;
		hs->stopping[h] = unit->hosts[h].stopping;
	}
	return hs;
}

/*
 * AddParts adds sign times each part's instances to a per-host counter of
 * a placed unit; parts on agents that are no host of it count nowhere.
 */
static void
AddParts(const QsUnit *unit, int64_t *counter, const QsPart *parts, int nparts, int sign)
{
	for (int i = 0; i < nparts; i++)
	{
		int			h = CoreHostIndex(unit, parts[i].host);

		if (h >= 0)
			counter[h] += sign * (int64_t) parts[i].count;
	}
}

/*
 * CoreHostsHold adds (sign +1) or removes (-1) a held job's parts, and its
 * pending stop, from what its unit's hosts hold.
 */
void
CoreHostsHold(CorePlan *p, const QsJob *job, int sign)
{
	const QsUnit *unit = &p->in->units[job->unit];

	CoreHosts  *hs;

	if (!unit->placed || job->nparts == 0)
		return;
	hs = HostUsage(p, job->unit);
	AddParts(unit, hs->held, job->parts, job->nparts, sign);
	if (job->stop != QS_STOP_NONE)
		AddParts(unit, hs->stopping, job->parts, job->nparts, sign);
}

/*
 * CoreHostsStopRequested counts the parts of a held job whose stop this
 * pass requests as stopping.
 */
void
CoreHostsStopRequested(CorePlan *p, const QsJob *job)
{
	const QsUnit *unit = &p->in->units[job->unit];

	if (unit->placed && job->nparts > 0)
		AddParts(unit, HostUsage(p, job->unit)->stopping, job->parts, job->nparts, +1);
}

/*
 * HostFree computes free(A,u) of every host of the job's unit into
 * hs->free, in a state of the plan (scheduling.md 3.13): its instances,
 * less its parts held (now: pending stops included; otherwise not, nor
 * the parts of the jobs in gone[], the victims chosen so far), less what
 * kept promises reserve on it but the job's own reservation; at least 0.
 */
static void
HostFree(CorePlan *p, const QsJob *job, CoreState state, const QsJob *const *gone,
		 int ngone)
{
	const QsUnit *unit = &p->in->units[job->unit];
	CoreHosts  *hs = HostUsage(p, job->unit);
	const CoreReservation *own = CoreReservationOf(p, job->id);
	int64_t    *used = hs->free;

	for (int h = 0; h < unit->nhosts; h++)
	{
		used[h] = hs->held[h] + hs->reserved[h];
		if (state != CORE_NOW)
			used[h] -= hs->stopping[h];
	}
	if (own != NULL)
		AddParts(unit, used, own->parts, own->nparts, -1);
	for (int i = 0; i < ngone && state != CORE_NOW; i++)
		if (gone[i] != NULL)
			AddParts(unit, used, gone[i]->parts, gone[i]->nparts, -1);
	for (int h = 0; h < unit->nhosts; h++)
		used[h] = Max64(0, unit->hosts[h].instances - used[h]);
}

/*
 * PlacePerHost places a job of per_host k in a group: on the count/k hosts
 * with the least free that is at least k (ties: the least name), k on
 * each.  Returns the number of parts written to parts[], 0 when the group
 * cannot give them.
 */
static int
PlacePerHost(const QsUnit *unit, CoreHosts *hs, const int *members, int n,
			 const QsJob *job, QsPart *parts)
{
	HostOrder	o = {hs->free, false, NULL};
	int			want = job->count / job->per_host;
	int			m = 0;

	for (int i = 0; i < n; i++)
		if (hs->free[members[i]] >= job->per_host)
			hs->cand[m++] = members[i];
	if (m < want || want < 1)
		return 0;
	SortHosts(hs->cand, m, &o, hs->tmp);
	for (int i = 0; i < want; i++)
		parts[i] = (QsPart) {unit->hosts[hs->cand[i]].name, job->per_host, QS_NO_TIME, false};
	return want;
}

/*
 * PlaceAnySplit places a job with no per_host in a group: on the one host
 * with the least free that holds it all (best fit, so that large holes stay
 * whole); else on the hosts by free descending, each giving all its free
 * instances but the last, which gives the rest (the fewest hosts).  Ties
 * go to the least name.  Returns the number of parts, 0 when the group
 * cannot give them.
 */
static int
PlaceAnySplit(const QsUnit *unit, CoreHosts *hs, const int *members, int n,
			  const QsJob *job, QsPart *parts)
{
	HostOrder	o = {hs->free, true, NULL};
	const int64_t *free = hs->free;
	int			best = -1;
	int			m = 0,
				np = 0;
	int64_t		got = 0;

	for (int i = 0; i < n; i++)
	{
		int			h = members[i];

		if (free[h] >= job->count &&
			(best < 0 || free[h] < free[best] || (free[h] == free[best] && h < best)))
			best = h;
		if (free[h] > 0)
			hs->cand[m++] = h;
	}
#ifndef QS_MUTANT_BEST_FIT
	if (best >= 0)
	{
		parts[0] = (QsPart) {unit->hosts[best].name, job->count, QS_NO_TIME, false};
		return 1;
	}
#endif
	SortHosts(hs->cand, m, &o, hs->tmp);
	for (int i = 0; i < m && got < job->count; i++)
	{
		int64_t		give = free[hs->cand[i]];

		if (give > job->count - got)
			give = job->count - got;
		parts[np++] = (QsPart) {unit->hosts[hs->cand[i]].name, (int32_t) give, QS_NO_TIME, false};
		got += give;
	}
	return got == job->count ? np : 0;
}

/*
 * RankOrder sorts a placement's parts into rank order: instances
 * descending, then agent name; rank 0 first (scheduling.md 3.13).
 */
static void
RankOrder(QsPart *parts, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0; j--)
		{
			QsPart		t = parts[j];

			if (t.count < parts[j - 1].count ||
				(t.count == parts[j - 1].count && strcmp(t.host, parts[j - 1].host) > 0))
				break;
			parts[j] = parts[j - 1];
			parts[j - 1] = t;
		}
}

/* The best group so far of a placement. */
typedef struct BestGroup
{
	int			nparts;			/* 0: none yet */
	int64_t		free;			/* its free instances in all */
	const char *value;			/* its label value */
} BestGroup;

/*
 * BetterGroup tells whether a group's placement beats the best so far: the
 * fewest hosts, then the least free in the group in all, then the least
 * label value.
 */
static bool
BetterGroup(const BestGroup *best, int nparts, int64_t free, const char *value)
{
	if (best->nparts == 0 || nparts != best->nparts)
		return best->nparts == 0 || nparts < best->nparts;
	if (free != best->free)
		return free < best->free;
	return value != NULL && strcmp(value, best->value) < 0;
}

/*
 * Groups fills hs->order with the job's host groups (every host; or, with
 * a same_label, the hosts that have the label by its value, hs->value
 * their values) and returns how many hosts they hold.
 */
static int
Groups(const QsUnit *unit, CoreHosts *hs, const QsJob *job)
{
	if (job->same_label == NULL)
	{
		for (int h = 0; h < unit->nhosts; h++)
			hs->order[h] = h;
		return unit->nhosts;
	}
	return LabelGroups(unit, job->same_label, hs->order, hs->value, hs->tmp);
}

/*
 * CorePlace computes placement(J) in a state of the plan (scheduling.md
 * 3.13), the jobs in gone[] counted as stopped: in each host group the
 * parts (PlacePerHost, PlaceAnySplit), then the group with the fewest
 * hosts, the least free in all, the least label value; the parts in rank
 * order.  Returns false when no group has a placement.  out's parts are
 * scratch, until the next placement of the unit.
 */
bool
CorePlace(CorePlan *p, const QsJob *job, CoreState state, const QsJob *const *gone,
		  int ngone, CorePlacement *out)
{
	const QsUnit *unit = &p->in->units[job->unit];
	CoreHosts  *hs = &p->hosts[job->unit];
	const char *const *value = job->same_label != NULL ? hs->value : NULL;
	BestGroup	best = {0, 0, NULL};
	int			n;

	HostFree(p, job, state, gone, ngone);
	n = Groups(unit, hs, job);
	for (int i = 0, end; i < n; i = end)
	{
		int64_t		free = 0;
		int			np;

		end = GroupEnd(hs->order, n, i, value);
		np = job->per_host > 0 ?
			PlacePerHost(unit, hs, hs->order + i, end - i, job, hs->parts) :
			PlaceAnySplit(unit, hs, hs->order + i, end - i, job, hs->parts);
		for (int k = i; k < end; k++)
			free += hs->free[hs->order[k]];
		if (np == 0 || !BetterGroup(&best, np, free, value ? value[hs->order[i]] : NULL))
			continue;
		best = (BestGroup) {np, free, value ? value[hs->order[i]] : NULL};
		memcpy(hs->best, hs->parts, sizeof(QsPart) * np);
	}
	out->nparts = best.nparts;
	out->parts = hs->best;
	RankOrder(hs->best, best.nparts);
	return best.nparts > 0;
}

/*
 * CoreReservationOf returns the placement a kept promise of the job
 * reserves, or NULL.
 */
const CoreReservation *
CoreReservationOf(const CorePlan *p, int64_t job_id)
{
	for (int i = 0; i < p->nreservations; i++)
		if (p->reservations[i].job_id == job_id)
			return &p->reservations[i];
	return NULL;
}

/*
 * CoreReserve makes a kept promise reserve a placement (scheduling.md
 * 3.13): its parts count as held on their hosts for every other job's
 * placement until it is dispatched.  A placement new to the job (made now,
 * or placed anew at the re-check) goes to the output, to be written.
 */
void
CoreReserve(CorePlan *p, const QsJob *job, const QsPart *parts, int nparts, bool is_new)
{
	QsPart	   *copy = CoreAlloc(p, sizeof(QsPart) * (nparts + 1));
	CoreReservation *r;

	memcpy(copy, parts, sizeof(QsPart) * nparts);
	p->reservations = CoreGrow(p, p->reservations, p->nreservations,
							   &p->reservations_cap, sizeof(CoreReservation));
	r = &p->reservations[p->nreservations++];
	*r = (CoreReservation) {job->id, nparts, copy};
#ifndef QS_MUTANT_RESERVATION
	AddParts(&p->in->units[job->unit], p->hosts[job->unit].reserved, copy, nparts, +1);
#endif
	if (is_new)
	{
		QsOutput   *out = p->out;

		out->reserved = CoreGrow(p, out->reserved, out->nreserved, &p->reserved_cap,
								 sizeof(QsReservation));
		out->reserved[out->nreserved++] = (QsReservation) {job->id, nparts, copy};
	}
}

/*
 * CoreUnreserve ends what a kept promise reserves (it is dispatched); a
 * reservation it was given anew in this pass (at the re-check) is then no
 * promised job's and leaves the output, where it would be written over the
 * job's parts.
 */
void
CoreUnreserve(CorePlan *p, const QsJob *job)
{
	QsOutput   *out = p->out;

	for (int i = 0; i < out->nreserved; i++)
		if (out->reserved[i].job_id == job->id)
		{
			memmove(&out->reserved[i], &out->reserved[i + 1],
					sizeof(QsReservation) * (out->nreserved - i - 1));
			out->nreserved--;
			break;
		}
	for (int i = 0; i < p->nreservations; i++)
	{
		CoreReservation *r = &p->reservations[i];

		if (r->job_id != job->id)
			continue;
#ifndef QS_MUTANT_RESERVATION
		AddParts(&p->in->units[job->unit], p->hosts[job->unit].reserved, r->parts, r->nparts, -1);
#endif
		*r = p->reservations[--p->nreservations];
		return;
	}
}

/*
 * CoreReservationValid tells whether the placement a promised job's promise
 * reserved (its parts) is still valid in the future state (scheduling.md
 * 3.13): every part on a host with that much free, as the job's per_host
 * and same_label want, all its instances.  Then the promise keeps it.
 */
bool
CoreReservationValid(CorePlan *p, const QsJob *job)
{
	const QsUnit *unit = &p->in->units[job->unit];
	const char *value = NULL;
	int64_t		sum = 0;

	HostFree(p, job, CORE_FUTURE, NULL, 0);
	for (int i = 0; i < job->nparts; i++)
	{
		const QsPart *part = &job->parts[i];
		int			h = CoreHostIndex(unit, part->host);
		const char *v;

		if (h < 0 || p->hosts[job->unit].free[h] < part->count ||
			(job->per_host > 0 && part->count != job->per_host))
			return false;
		if (job->same_label != NULL)
		{
			v = LabelOf(&unit->hosts[h], job->same_label);
			if (v == NULL || (value != NULL && strcmp(v, value) != 0))
				return false;
			value = v;
		}
		sum += part->count;
	}
	return job->nparts > 0 && sum == job->count;
}

/*
 * CoreNoteHostReason records the reason of placement of a job the pass
 * came to in a placed unit (QsHostReason), for the shell to set or clear.
 */
void
CoreNoteHostReason(CorePlan *p, const QsJob *job, const char *reason)
{
	QsOutput   *out = p->out;

	out->host_reasons = CoreGrow(p, out->host_reasons, out->nhost_reasons,
								 &p->host_reasons_cap, sizeof(QsHostReason));
	out->host_reasons[out->nhost_reasons++] = (QsHostReason) {job->id, reason};
}

/*
 * CoreHostFigures writes into why the figures of each host group of the
 * job's unit in a state of the plan (explain): its hosts, their largest
 * instances and free, the free instances in all, and the most a job of the
 * job's per_host could have there were every host empty.
 */
void
CoreHostFigures(CorePlan *p, const QsJob *job, CoreState state, QsWhy *why)
{
	const QsUnit *unit = &p->in->units[job->unit];
	CoreHosts  *hs = &p->hosts[job->unit];
	const char *const *value = job->same_label != NULL ? hs->value : NULL;
	int			n;

	HostFree(p, job, state, NULL, 0);
	n = Groups(unit, hs, job);
	why->groups = CoreAlloc(p, sizeof(QsHostFigures) * (n + 1));
	why->ngroups = n == 0 && value == NULL ? 1 : 0;	/* no host: one empty group */
	for (int i = 0, end; i < n; i = end)
	{
		QsHostFigures *g = &why->groups[why->ngroups++];

		end = GroupEnd(hs->order, n, i, value);
		g->label_value = value ? value[hs->order[i]] : NULL;
		for (int k = i; k < end; k++)
		{
			int			h = hs->order[k];

			g->nhosts++;
			g->largest = Max64(g->largest, unit->hosts[h].instances);
			g->largest_free = Max64(g->largest_free, hs->free[h]);
			g->free += hs->free[h];
		}
		g->fits = GroupMax(unit->hosts, hs->order + i, end - i, job->per_host);
	}
}
