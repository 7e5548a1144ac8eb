/*-------------------------------------------------------------------------
 *
 * capacity.c
 *		Capacity accounting of the policy core (scheduling.md 3.1) and the test of
 *		whether a job may be dispatched (scheduling.md 3.2): invariants (I1)-(I3)
 *		now and once every pending stop completes and every promise is
 *		kept, and the rule that a borrower takes no idle capacity its
 *		lenders' own waiting jobs want.
 *
 *-------------------------------------------------------------------------
 */
#ifdef QS_CROSS_CHECK
#include <stdio.h>
#include <stdlib.h>
#endif

#include "policy_int.h"

#define Max64(a, b) ((a) > (b) ? (a) : (b))
#define Min64(a, b) ((a) < (b) ? (a) : (b))

/*
 * QsAllowed returns allowed(S,u): C(S,u) for RESERVE and LEND; for
 * LEND_AND_BORROW floor(C * (100 + borrow_limit) / 100), unbounded for -1.
 */
int64_t
QsAllowed(const QsShare *share, int unit)
{
	int64_t		c = share->capacity[unit];

	if (share->strategy != QS_LEND_AND_BORROW)
		return c;
	if (share->borrow_limit < 0)
		return QS_UNBOUNDED;
	return c * (100 + (int64_t) share->borrow_limit) / 100;
}

/*
 * QsLendable returns lendable(S,u): C(S,u) when lend_limit is -1, else
 * floor(C(S,u) * lend_limit / 100).
 */
int64_t
QsLendable(const QsShare *share, int unit)
{
	int64_t		c = share->capacity[unit];

#ifndef QS_MUTANT_LEND_LIMIT
	if (share->lend_limit >= 0)
		return c * share->lend_limit / 100;
#endif
	return c;
}

/*
 * Lends tells whether a share's idle capacity is borrowable supply: ENABLED
 * LEND and LEND_AND_BORROW shares lend, RESERVE and DISABLED shares do not.
 */
static bool
Lends(const QsShare *share)
{
#ifndef QS_MUTANT_DISABLED_LENDS_NOTHING
	if (!share->enabled)
		return false;
#endif
#ifndef QS_MUTANT_RESERVE_NEVER_LENDS
	if (share->strategy == QS_RESERVE)
		return false;
#endif
	return true;
}

/*
 * QsLendableOf returns the most that a share's idle capacity of a unit adds
 * to the borrowable supply (scheduling.md 3.1): lendable(S,u) for an ENABLED
 * LEND or LEND_AND_BORROW share, 0 for a RESERVE or DISABLED one (the
 * lendable of share_usage and of lending()).
 */
int64_t
QsLendableOf(const QsShare *share, int unit)
{
	return Lends(share) ? QsLendable(share, unit) : 0;
}

/*
 * CoreInitAccounting takes usage and pending stops from the counters of held
 * capacity, and computes unassigned(u) = max(0, E(u) - sum of C(S,u)).
 */
void
CoreInitAccounting(CorePlan *p)
{
	const QsInput *in = p->in;

	p->version++;
	p->usage_moved = -2;
	for (int at = 0; at < p->nshares * p->nunits; at++)
	{
		p->usage[at] = in->held[at];
		p->pending[at] = in->stopping[at];
	}
	for (int u = 0; u < p->nunits; u++)
	{
		int64_t		assigned = 0;

		for (int s = 0; s < p->nshares; s++)
			assigned += in->shares[s].capacity[u];
		p->unassigned[u] = Max64(0, in->units[u].env_limit - assigned);
	}
}

/*
 * CoreHold adds (sign +1) or removes (-1) a held job's instances, and its
 * pending stop, from the accounting, and its parts from its hosts'.
 */
void
CoreHold(CorePlan *p, const QsJob *job, int sign)
{
	int			at = CORE_AT(p, job->share, job->unit);

	p->version++;
	p->usage_moved = p->usage_moved == -1 || p->usage_moved == job->share ? job->share : -2;
	p->usage[at] += sign * (int64_t) job->count;
	if (job->stop != QS_STOP_NONE)
		p->pending[at] += sign * (int64_t) job->count;
	CoreHostsHold(p, job, sign);
}

/*
 * CoreStopRequested counts a held job whose stop this pass requests as held
 * by a pending stop from now on.
 */
void
CoreStopRequested(CorePlan *p, const QsJob *job)
{
	p->version++;
	p->pending[CORE_AT(p, job->share, job->unit)] += job->count;
	CoreHostsStopRequested(p, job);
}

/*
 * CoreKeepPromise counts a promised job as holding its instances in the
 * future state, until it is dispatched (scheduling.md 3.6).
 */
void
CoreKeepPromise(CorePlan *p, const QsJob *job)
{
	p->version++;
	p->promised[CORE_AT(p, job->share, job->unit)] += job->count;
	CoreIdSetAdd(p, &p->kept_promises, job->id);
}

/*
 * Borrowed returns borrowed(S,u) = max(0, usage(S,u) - C(S,u)) for a share's
 * usage of a unit in some state (scheduling.md 3.1).
 */
static int64_t
Borrowed(const CorePlan *p, int share, int unit, int64_t usage)
{
	return Max64(0, usage - p->in->shares[share].capacity[unit]);
}

/*
 * CoreBorrowing tells whether a share with that usage of a unit is borrowing
 * it: borrowed(S,u) > 0 (scheduling.md 3.1).
 */
bool
CoreBorrowing(const CorePlan *p, int share, int unit, int64_t usage)
{
	return Borrowed(p, share, unit, usage) > 0;
}

/*
 * CoreFitsOwnCapacity: usage(S,u) + n <= C(S,u) in the state planned so far,
 * i.e. the job's share would not be borrowing with it.
 */
bool
CoreFitsOwnCapacity(const CorePlan *p, const QsJob *job)
{
	return !CoreBorrowing(p, job->share, job->unit,
						  p->usage[CORE_AT(p, job->share, job->unit)] + job->count);
}

/* A share's usage of a unit (its cell at) in a state of the plan (CoreUsage). */
static int64_t
StateUsage(const CorePlan *p, int at, CoreState state)
{
	int64_t		use = p->usage[at];

	if (state != CORE_NOW)
		use -= p->pending[at];
	if (state == CORE_FUTURE)
		use += p->promised[at];
	return use;
}

/*
 * CoreUsage writes, for one unit, each share's usage in a state of the plan:
 * as things are now (pending stops still holding), once every pending stop
 * has completed, or the future state (scheduling.md 3.2, 3.6) in which moreover every
 * kept promise holds its instances.  The jobs in gone[] (victims chosen so
 * far; NULL entries are skipped) count as stopped too.
 */
void
CoreUsage(const CorePlan *p, int unit, CoreState state,
		  const QsJob *const *gone, int ngone, int64_t *use)
{
	for (int s = 0; s < p->nshares; s++)
		use[s] = StateUsage(p, CORE_AT(p, s, unit), state);
	for (int i = 0; i < ngone; i++)
		if (gone[i] != NULL)
			use[gone[i]->share] -= gone[i]->count;
}

/*
 * CoreShareUsage is CoreUsage's figure of one share, without the others'
 * (a check of one share costs what it reads, not the number of shares).
 */
int64_t
CoreShareUsage(const CorePlan *p, int share, int unit, CoreState state,
			   const QsJob *const *gone, int ngone)
{
	int64_t		use = StateUsage(p, CORE_AT(p, share, unit), state);

	for (int i = 0; i < ngone; i++)
		if (gone[i] != NULL && gone[i]->share == share)
			use -= gone[i]->count;
	return use;
}

/*
 * LoadWanted reads a lender's smallest waiting jobs of a unit that can fit
 * in its capacity: at least `at_least` of them when there are that many.
 * The cache grows when jobs decided in this pass or promised crowd out
 * the ones that count.
 */
static CoreWantedCache *
LoadWanted(CorePlan *p, int lender, int unit, int at_least)
{
	CoreWantedCache *cache = &p->wanted[CORE_AT(p, lender, unit)];
	int64_t		cap = p->in->shares[lender].capacity[unit];

	if (cap <= 0 || (cache->loaded && (cache->njobs < cache->max || cache->max >= at_least)))
		return cache;
	cache->loaded = true;
	cache->max = Max64(at_least, Min64(cap, 1024));
	cache->jobs = CoreAlloc(p, sizeof(QsJob) * cache->max);
	cache->njobs = p->in->source.smallest(p->in->source.arg, lender, unit,
										  (int32_t) Min64(cap, INT32_MAX),
										  cache->max, cache->jobs);
	return cache;
}

/*
 * WantsNothing tells whether a lender's waiting job wants none of its idle
 * capacity: it was decided in this pass, it is promised (already counted
 * in the future state) or it is held back (scheduling.md 3.10).
 */
static bool
WantsNothing(const CorePlan *p, const QsJob *job)
{
#ifndef QS_MUTANT_HELD_BACK_WANTS
	if (QsHeldBack(p->in, job) != QS_HOLD_NONE)
		return true;
#endif
	return CoreIdSetHas(&p->handled, job->id) || CoreIdSetHas(&p->kept_promises, job->id);
}

/*
 * Wanted returns what a lender wants of its idle capacity of a unit: the
 * sizes of its RUNNABLE jobs of that unit that are not misconfigured and
 * each fit in the idle capacity, summed and capped at it.  Jobs dispatched
 * or otherwise decided in this pass, promised jobs (already counted in
 * the future state) and jobs held back (scheduling.md 3.10) want nothing
 * more.
 */
static int64_t
Wanted(CorePlan *p, int lender, int unit, int64_t idle)
{
	int64_t		env_limit = p->in->units[unit].env_limit;
	int			at_least = (int) Min64(idle, 1024);

	for (;;)
	{
		CoreWantedCache *cache = LoadWanted(p, lender, unit, at_least);
		int64_t		sum = 0;
		int			skipped = 0;
		int			i;

		for (i = 0; i < cache->njobs && sum < idle; i++)
		{
			const QsJob *j = &cache->jobs[i];

			if (j->count > idle || j->count > env_limit)
				return Min64(sum, idle);	/* sorted by count: no later one fits */
			if (WantsNothing(p, j))
			{
				skipped++;
				continue;
			}
			sum += j->count;
		}
		/* the cache ran out while jobs it holds did not count: read more */
		if (sum < idle && i == cache->njobs && cache->njobs == cache->max && skipped > 0)
		{
			at_least = cache->max * 2;
			continue;
		}
		return Min64(sum, idle);
	}
}

/*
 * CoreWithinAllowed tells whether a share with that usage of a unit keeps
 * (I2): usage(S,u) <= allowed(S,u).
 */
bool
CoreWithinAllowed(const CorePlan *p, int share, int unit, int64_t usage)
{
#ifndef QS_MUTANT_INVARIANT_ALLOWED
	if (usage > QsAllowed(&p->in->shares[share], unit))
		return false;
#endif
	return true;
}

/*
 * UsageWith returns a share's usage in use[] with the job, if any, added.
 */
static int64_t
UsageWith(const int64_t *use, const QsJob *job, int share)
{
	return use[share] + (job != NULL && job->share == share ? job->count : 0);
}

/*
 * Supply returns what a share with that usage of a unit adds to the
 * borrowable supply: for a lender, min(idle, lendable(S,u)), its idle
 * capacity less, with less_wanted, what its own waiting jobs want
 * (scheduling.md 3.1, 3.2); nothing for the others.
 */
static int64_t
Supply(CorePlan *p, int s, int unit, int64_t used, bool less_wanted)
{
	const QsShare *share = &p->in->shares[s];
	int64_t		idle;

	if (!Lends(share))
		return 0;
	idle = Max64(0, share->capacity[unit] - used);
#ifndef QS_MUTANT_WANTED_CAPACITY
	if (less_wanted && idle > 0)
		idle -= Wanted(p, s, unit, idle);
#endif
	return Min64(idle, QsLendable(share, unit));
}

/*
 * CoreCheckInvariants tells which of (I1)-(I3) fails for a unit in the state
 * given by use[] (each share's usage), or QS_CHECK_OK.  With a job (of that
 * unit), the job is added to its share and only that share is held to
 * allowed(S,u), the job changing no other share's usage; when the job must
 * borrow, each other lender's idle capacity counts less what that lender
 * wants (scheduling.md 3.2).  A lender's supply is at most its lendable
 * capacity (lend_limit, scheduling.md 3.1).  Without one (the repair, scheduling.md 3.5),
 * every share is held to allowed(S,u), and wanted capacity plays no part:
 * nobody borrows anew.
 */
QsCheck
CoreCheckInvariants(CorePlan *p, int unit, const int64_t *use, const QsJob *job)
{
	const QsInput *in = p->in;
	int			borrower = -1;	/* the share of a job that must borrow */
	int64_t		total = in->units[unit].unowned_held;
	int64_t		borrowed = 0;
	int64_t		supply = p->unassigned[unit];

	if (job != NULL && CoreBorrowing(p, job->share, unit, UsageWith(use, job, job->share)))
		borrower = job->share;
	/* (I2) usage(S,u) <= allowed(S,u): the job's share's, or every share's */
	if (job != NULL && !CoreWithinAllowed(p, job->share, unit, UsageWith(use, job, job->share)))
		return QS_CHECK_ALLOWED;
	for (int s = 0; job == NULL && s < p->nshares; s++)
		if (!CoreWithinAllowed(p, s, unit, use[s]))
			return QS_CHECK_ALLOWED;

	for (int s = 0; s < p->nshares; s++)
	{
		int64_t		used = UsageWith(use, job, s);

		total += used;
		borrowed += Borrowed(p, s, unit, used);
		supply += Supply(p, s, unit, used, borrower >= 0 && s != borrower);
	}
#ifndef QS_MUTANT_INVARIANT_ENVIRONMENT
	/* (I1) sum of usage <= E(u); jobs of a missing share hold theirs too */
	if (total > in->units[unit].env_limit)
		return QS_CHECK_ENVIRONMENT;
#endif
#ifndef QS_MUTANT_INVARIANT_SUPPLY
	/* (I3) sum of borrowed <= borrowable supply */
	if (borrowed > supply)
		return QS_CHECK_SUPPLY;
#endif
	return QS_CHECK_OK;
}

/*
 * CoreInvariantsHoldWith: (I1)-(I3) hold in the state use[] with the job.
 */
bool
CoreInvariantsHoldWith(CorePlan *p, const int64_t *use, const QsJob *job)
{
	return CoreCheckInvariants(p, job->unit, use, job) == QS_CHECK_OK;
}

/*
 * PlacementCheck: in a placed unit a job may be dispatched only if, in
 * addition, it has a placement now and in the future state (scheduling.md
 * 3.13).  QS_CHECK_HOSTS when it has none.  Every host has at least as
 * much free in the future state as now (pending stops gone, the same
 * reservations), so a placement now is one in the future state too: only
 * now is computed.
 */
static QsCheck
PlacementCheck(CorePlan *p, const QsJob *job, bool *in_future)
{
	CorePlacement placed;

#ifndef QS_MUTANT_PLACEMENT
	*in_future = false;
	if (!CorePlace(p, job, CORE_NOW, NULL, 0, &placed))
		return QS_CHECK_HOSTS;
#endif
	return QS_CHECK_OK;
}

/*
 * Totals returns the sums over every share of a unit's usage in a state
 * (CORE_NOW or CORE_FUTURE), counted again when the state planned has
 * changed since (CorePlan.version); with wanted, the supply less what
 * lenders' own waiting jobs want, too.  So a check of a job costs what its
 * share changes, not the number of shares (issue 42, item 3).
 */
static CoreTotals *
Totals(CorePlan *p, int unit, CoreState state, bool wanted)
{
	CoreTotals *t = &p->totals[unit * 2 + (state == CORE_FUTURE)];

	if (t->version != p->version)
	{
		t->version = p->version;
		t->wanted_counted = false;
		t->used = t->borrowed = t->supply = 0;
		for (int s = 0; s < p->nshares; s++)
		{
			int64_t		used = StateUsage(p, CORE_AT(p, s, unit), state);

			t->used += used;
			t->borrowed += Borrowed(p, s, unit, used);
			t->supply += Supply(p, s, unit, used, false);
		}
	}
	if (wanted && !t->wanted_counted)
	{
		t->supply_wanted = 0;
		for (int s = 0; s < p->nshares; s++)
			t->supply_wanted += Supply(p, s, unit, StateUsage(p, CORE_AT(p, s, unit), state), true);
		t->wanted_counted = true;
	}
	return t;
}

/*
 * CheckJobIn is CoreCheckInvariants of a job in a state of the plan, its
 * share's usage moved by `adjust` (a kept promise of its own), from the
 * unit's totals: only the job's share differs from them.  As there, a
 * borrower's supply counts every other lender's idle capacity less what
 * that lender wants, and its own share's without.
 */
static QsCheck
CheckJobIn(CorePlan *p, const QsJob *job, CoreState state, int64_t adjust)
{
	int			u = job->unit;
	int			j = job->share;
	int64_t		before = StateUsage(p, CORE_AT(p, j, u), state);
	int64_t		with = before + adjust + job->count;
	bool		borrows = CoreBorrowing(p, j, u, with);
	CoreTotals *t;
	int64_t		supply;

	if (!CoreWithinAllowed(p, j, u, with))
		return QS_CHECK_ALLOWED;
	t = Totals(p, u, state, borrows);
#ifndef QS_MUTANT_INVARIANT_ENVIRONMENT
	if (p->in->units[u].unowned_held + t->used - before + with > p->in->units[u].env_limit)
		return QS_CHECK_ENVIRONMENT;
#endif
#ifndef QS_MUTANT_INVARIANT_SUPPLY
	supply = p->unassigned[u] + (borrows ? t->supply_wanted : t->supply) -
		Supply(p, j, u, before, borrows) + Supply(p, j, u, with, false);
	if (t->borrowed - Borrowed(p, j, u, before) + Borrowed(p, j, u, with) > supply)
		return QS_CHECK_SUPPLY;
#endif
	return QS_CHECK_OK;
}

/*
 * CoreCheckedUsage writes each share's usage of a job's unit in the state
 * CoreDispatchCheck checked last (now, or with in_future the future
 * state), as it counted it: a kept promise of the job's own not counted.
 */
void
CoreCheckedUsage(const CorePlan *p, const QsJob *job, bool in_future, int64_t *use)
{
	CoreUsage(p, job->unit, in_future ? CORE_FUTURE : CORE_NOW, NULL, 0, use);
	if (in_future && CoreIdSetHas(&p->kept_promises, job->id))
		use[job->share] -= job->count;
}

/*
 * CheckJob is CheckJobIn; built with QS_CROSS_CHECK (the unit tests and
 * the simulator), it also checks the answer against CoreCheckInvariants
 * over every share, and aborts if they differ.
 */
static QsCheck
CheckJob(CorePlan *p, const QsJob *job, bool in_future)
{
	QsCheck		check = CheckJobIn(p, job, in_future ? CORE_FUTURE : CORE_NOW,
								   in_future && CoreIdSetHas(&p->kept_promises, job->id) ?
								   -(int64_t) job->count : 0);
#ifdef QS_CROSS_CHECK
	int64_t    *use = in_future ? p->scratch_future : p->scratch_now;

	CoreCheckedUsage(p, job, in_future, use);
	if (CoreCheckInvariants(p, job->unit, use, job) != check)
	{
		fprintf(stderr, "CoreDispatchCheck of job %lld: %d from the totals, %d from the shares\n",
				(long long) job->id, (int) check,
				(int) CoreCheckInvariants(p, job->unit, use, job));
		abort();
	}
#endif
	return check;
}

/*
 * CoreDispatchCheck tells whether a RUNNABLE job may be dispatched, and if
 * not which invariant fails and whether only in the future state: (I1)-(I3)
 * must hold with it added both now (pending stops still holding) and once
 * every pending stop has completed and every kept promise holds (scheduling.md 3.2,
 * 3.6); in a placed unit it must then also have a placement in both
 * (3.13).  A promised job is already counted in the future state.
 */
QsCheck
CoreDispatchCheck(CorePlan *p, const QsJob *job, bool *in_future)
{
	QsCheck		check;

	*in_future = false;
	check = CheckJob(p, job, false);
	if (check != QS_CHECK_OK)
		return check;

#ifndef QS_MUTANT_FUTURE_STATE
	*in_future = true;
	check = CheckJob(p, job, true);
#endif
	if (check == QS_CHECK_OK && p->in->units[job->unit].placed)
		check = PlacementCheck(p, job, in_future);
	return check;
}

/*
 * CoreMayDispatch: the job may be dispatched (CoreDispatchCheck).
 */
bool
CoreMayDispatch(CorePlan *p, const QsJob *job)
{
	bool		in_future;

	return CoreDispatchCheck(p, job, &in_future) == QS_CHECK_OK;
}

/*
 * CoreComputeFitLimits computes, per share and unit, the largest job that is
 * not misconfigured (scheduling.md 3.7): more than E(u) is
 * SERVICE_ENVIRONMENT_MAX_RESOURCE; otherwise more than allowed(S,u), or for
 * LEND_AND_BORROW more than C(S,u) plus the lendable capacity of every
 * other ENABLED LEND or LEND_AND_BORROW share plus unassigned(u), is
 * QUOTA_MANAGEMENT_LIMIT_EXCEEDED; otherwise, in a placed unit, more than
 * its hosts could give a job with no placement constraints were every one
 * empty (their instances in all) is NO_AGENT_FITS (scheduling.md 3.13;
 * a job with constraints has its own bound, QsPlacementMax).
 */
void
CoreComputeFitLimits(CorePlan *p)
{
	const QsInput *in = p->in;
	int64_t    *lendable = CoreAlloc(p, sizeof(int64_t) * (p->nunits + 1));

	/* every share's lendable capacity, of which each share's reach leaves its own out */
	for (int u = 0; u < p->nunits; u++)
	{
		lendable[u] = 0;
		for (int s = 0; s < p->nshares; s++)
			lendable[u] += QsLendableOf(&in->shares[s], u);
	}
	for (int s = 0; s < p->nshares; s++)
		for (int u = 0; u < p->nunits; u++)
		{
			QsFitLimit *limit = &p->out->fit_limits[CORE_AT(p, s, u)];
			const QsShare *share = &in->shares[s];

			limit->env_max = in->units[u].env_limit;
			limit->agent_max = in->units[u].placed ?
				QsPlacementMax(&in->units[u], 0, NULL) : QS_UNBOUNDED;
			limit->quota_max = QsAllowed(share, u);
#ifndef QS_MUTANT_MISCONFIGURED_REACH
			if (share->strategy == QS_LEND_AND_BORROW)
#else
			if (false)
#endif
			{
				int64_t		reach = share->capacity[u] + p->unassigned[u] +
					lendable[u] - QsLendableOf(share, u);

				limit->quota_max = Min64(limit->quota_max, reach);
			}
		}
}

/*
 * CoreLends tells whether a share's idle capacity is borrowable supply
 * (Lends), for explain to list the lenders the check counts.
 */
bool
CoreLends(const QsShare *share)
{
	return Lends(share);
}

/*
 * CoreWanted returns what a lender wants of its idle capacity of a unit
 * (Wanted), for explain to show the number the check used.  It reads
 * through the plan's cache, as the check does, so it gives the same.
 */
int64_t
CoreWanted(CorePlan *p, int lender, int unit, int64_t idle)
{
	return Wanted(p, lender, unit, idle);
}
