/*-------------------------------------------------------------------------
 *
 * pass_load.c
 *		The loader of a queue's state: reads what one pass of a queue needs
 *		and nothing more — the configuration, the counters of held capacity
 *		(usage.c), the held jobs due for time-based work or stopping for a
 *		promised job, the promised and timed-out RUNNABLE jobs; then the
 *		RUNNABLE jobs of each share and unit only as the dispatch loop
 *		consumes them (scheduling.md 3.2's skip rule bounds how far), and
 *		held jobs in victim order only as far as a preemption or repair
 *		looks for victims, through the job store.  The caller is connected
 *		to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/jsonb.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "borrow_memory.h"
#include "checks.h"
#include "config_store.h"
#include "constants.h"
#include "held_cache.h"
#include "host_cache.h"
#include "job_store_pass.h"
#include "jsonb_util.h"
#include "pass_load.h"
#include "placement_store.h"
#include "policy.h"
#include "query.h"
#include "usage.h"


static int	AddUnit(QsQueueState *qs, const char *unit);

static void *
StateAlloc(void *arg, size_t size)
{
	return MemoryContextAllocZero((MemoryContext) arg, size);
}

/*
 * AddUnit adds a capacity unit to the queue's state if it is new, with the
 * environment's limit (0 when the environment does not have it).
 */
static int
AddUnit(QsQueueState *qs, const char *unit)
{
	QsUnit	   *units = (QsUnit *) qs->in.units;
	int			u = QsUnitIndex(qs, unit);

	if (u >= 0)
		return u;
	if (qs->in.nunits == qs->units_cap)
	{
		qs->units_cap *= 2;
		units = repalloc(units, sizeof(QsUnit) * qs->units_cap);
		qs->in.units = units;
	}
	units[qs->in.nunits].name = MemoryContextStrdup(qs->cxt, unit);
	units[qs->in.nunits].env_limit = QsCapacityOfUnit(&qs->env_caps, unit);
	units[qs->in.nunits].unowned_held = 0;
	units[qs->in.nunits].placed = false;
	units[qs->in.nunits].nhosts = 0;
	units[qs->in.nunits].hosts = NULL;
	units[qs->in.nunits].host_index = NULL;
	return qs->in.nunits++;
}

/*
 * AddCapacityUnits adds every unit of a capacity map as a unit.
 */
static void
AddCapacityUnits(QsQueueState *qs, const QsCapacities *capacities)
{
	for (int i = 0; i < capacities->n; i++)
		AddUnit(qs, capacities->units[i]);
}

/*
 * LoadQueue reads the queue and its environment (the configuration
 * store), and what the passes noted of it (queue_status: the jobs they
 * passed over, and for how many passes in a row).  Returns false when the
 * queue does not exist.
 */
static bool
LoadQueue(QsQueueState *qs)
{
	QsConfigRead how = {qs->snapshot, false};
	QsQueueConfig config;
	QsEnvironmentConfig environment;
	QsQueueStatus status;

	if (!QsReadQueueConfig(qs->queue, how, &config, &environment, &status))
		return false;
	qs->passed_over = status.passed_over.ids;
	qs->npassed_over = status.passed_over.n;
	qs->passed_over_passes = status.passed_over_passes;
	qs->in.env_enabled = environment.enabled;
	qs->env_limits = environment.capacity_limits;
	qs->env_caps = QsDecodeCapacities(qs->env_limits, false);
	qs->runnable_timeout = config.runnable_timeout;
	qs->in.fair = config.borrow_order == QS_BORROW_FAIR;
	qs->claim_timeout = config.claim_timeout;
	qs->in.claim_timeout = config.claim_timeout == NULL ? QS_NO_TIME :
		QsIntervalUsecs(config.claim_timeout);
	qs->half_life = config.fair_half_life == NULL ? 0 : QsIntervalUsecs(config.fair_half_life);
	qs->in.fence_grace = config.fence_grace;
	AddCapacityUnits(qs, &qs->env_caps);
	return true;
}


/*
 * The held jobs of the units given claimed while their unit was not placed
 * (before 0.4, or before its agents registered), which hold their
 * instances on the agent that claimed them (scheduling.md 3.13), beside
 * what host_held counts (held_cache.c): along the index job_held_unplaced
 * (none in the steady state; "agent <> ''", which implies its predicate's
 * "agent IS NOT NULL" but no index can take, so that the plan is not a
 * walk of every held job along job_agent_held: no agent, and so no host,
 * has an empty name).
 */
static QsQuery HeldUnplacedQuery = {
	"SELECT capacity_unit, agent, sum(instance_count)::int8,"
	"       coalesce(sum(instance_count) FILTER (WHERE stop_reason IS NOT NULL), 0)::int8"
	"  FROM quota_sched.job"
	" WHERE job_queue = $1 AND capacity_unit = ANY ($2)"
	"   AND state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND part_agents IS NULL"
	"   AND agent <> ''"
	" GROUP BY capacity_unit, agent",
	2, {TEXTOID, TEXTARRAYOID}, SPI_OK_SELECT
};

/*
 * AddHeldUnplaced adds the rows of HeldUnplacedQuery (unit, agent, held,
 * stopping) to the hosts they name.
 */
static void
AddHeldUnplaced(QsQueueState *qs, uint64 n)
{
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		int			u = QsUnitIndex(qs, SPI_getvalue(tup, desc, 1));
		bool		isnull;
		int			h;
		QsHost	   *host;

		if (u < 0 || !qs->in.units[u].placed ||
			(h = QsHostOf(&qs->in.units[u], SPI_getvalue(tup, desc, 2))) < 0)
			continue;			/* on an agent that is no host */
		host = (QsHost *) &qs->in.units[u].hosts[h];
		host->held += DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
		host->stopping += DatumGetInt64(SPI_getbinval(tup, desc, 4, &isnull));
	}
	SPI_freetuptable(SPI_tuptable);
}

/*
 * AddHeld adds counters of what hosts hold (resolved against the queue's
 * host set, whose units are unit_of[] of the queue's, -1: not placed) to
 * the hosts they name.
 */
static void
AddHeld(QsQueueState *qs, const int *unit_of, const QsHeldCount *counts, int n)
{
	for (int i = 0; i < n; i++)
	{
		const QsHeldCount *c = &counts[i];
		QsHost	   *host;

		if (c->set_unit < 0 || c->host < 0 || unit_of[c->set_unit] < 0)
			continue;			/* on an agent that is no host */
		host = (QsHost *) &qs->in.units[unit_of[c->set_unit]].hosts[c->host];
		host->held += c->held;
		host->stopping += c->stopping;
	}
}

/*
 * LoadHostsHeld sets what the parts of the queue's holding jobs hold on
 * each host of its placed units, and of that what is stopping: the
 * counters (held_cache.c) and the jobs claimed before placement.
 */
static void
LoadHostsHeld(QsQueueState *qs)
{
	const QsHostSet *set = qs->host_set;
	int		   *unit_of;
	QsArray		units;
	Datum		args[2];
	MemoryContext old;

	if (set == NULL)
		return;
	unit_of = palloc(sizeof(int) * (set->nunits + 1));
	QsArrayInit(&units, TEXTOID, set->nunits);
	for (int i = 0; i < set->nunits; i++)
	{
		int			u = QsUnitIndex(qs, set->units[i].name);

		unit_of[i] = u >= 0 && qs->in.units[u].placed && qs->in.units[u].nhosts > 0 ? u : -1;
		if (unit_of[i] >= 0)
			QsArrayPush(&units, CStringGetTextDatum(set->units[i].name), false);
	}
	if (units.n == 0)
		return;
	old = MemoryContextSwitchTo(qs->cxt);	/* the fold reads it after the policy */
	qs->hosts_held = palloc(sizeof(QsHostsHeld));
	QsLoadHostsHeld(qs->queue, set, qs->snapshot, qs->hosts_held);
	MemoryContextSwitchTo(old);
	AddHeld(qs, unit_of, qs->hosts_held->kept, qs->hosts_held->nkept);
	AddHeld(qs, unit_of, qs->hosts_held->changes, qs->hosts_held->nchanges);
	args[0] = CStringGetTextDatum(qs->queue);
	args[1] = QsArrayDatum(&units);
	AddHeldUnplaced(qs, QsQueryRunIn(&HeldUnplacedQuery, args, NULL, qs->snapshot, 0));
}

/*
 * LoadHosts reads the queue's live agents (scheduling.md 3.10, 3.13), from
 * the cache of hosts when its snapshot sees them as they were read
 * (host_cache.c): which units are placed and their hosts (what the parts
 * of holding jobs hold on them is read only when the policy asks:
 * SourceHostUsage).  Units no live agent registered for are not placed;
 * nor need units that no job, share or environment of the queue names.
 * The hosts are copied (the pass sets what they hold); their names,
 * labels and index (QsPrepareHosts) are the cache's.
 */
static void
LoadHosts(QsQueueState *qs)
{
	const QsHostSet *set = QsLoadHosts(qs->queue, qs->in.now, qs->snapshot);

	qs->host_set = set;

	for (int i = 0; i < set->nunits; i++)
	{
		const QsHostUnit *from = &set->units[i];
		int			u = QsUnitIndex(qs, from->name);
		QsUnit	   *unit;
		QsHost	   *hosts;

		if (u < 0)
			continue;			/* no job, share or environment has the unit */
		unit = (QsUnit *) &qs->in.units[u];
		unit->placed = !from->unbounded;
		if (!unit->placed)
			continue;
		hosts = palloc(sizeof(QsHost) * (from->nhosts + 1));
		memcpy(hosts, from->hosts, sizeof(QsHost) * from->nhosts);
		unit->hosts = hosts;
		unit->nhosts = from->nhosts;
		unit->host_index = from->host_index;
		qs->any_placed = true;
	}
}

/*
 * LoadShares takes the queue's shares as the pass's snapshot sees them
 * (QsLoadShareConfigs: kept from pass to pass while none changed), in the
 * C order of their names, and returns their capacity maps (decoded); their budgets
 * (scheduling.md 3.11) go to qs->budget_maps (NULL: none) and their
 * periods to qs->periods.  Units are the environment's, the shares', and
 * (added later) those of RUNNABLE and held jobs, so that a job of a unit
 * the environment lost is still seen (E(u) = 0).
 */
static const QsCapacities **
LoadShares(QsQueueState *qs)
{
	int			n;
	const QsShareConfig *configs = QsLoadShareConfigs(qs->queue, qs->snapshot, &n);
	QsShare    *shares = palloc0(sizeof(QsShare) * (n + 1));
	const QsCapacities **maps = palloc0(sizeof(QsCapacities *) * (n + 1));

	qs->budget_maps = palloc0(sizeof(QsCapacities *) * (n + 1));
	qs->periods = palloc0(sizeof(QsPeriod) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		shares[i] = configs[i].policy;
		maps[i] = &configs[i].capacities;
		if (i == 0 || !QsSameUnits(maps[i], maps[i - 1]))
			AddCapacityUnits(qs, maps[i]);
		qs->budget_maps[i] = configs[i].budget != NULL ? &configs[i].budgets : NULL;
		qs->any_budget |= configs[i].budget != NULL;
		qs->periods[i] = configs[i].budget_period;
	}
	qs->in.nshares = n;
	qs->in.shares = shares;
	return maps;
}

/* An entry of QsQueueState.agents. */
typedef struct AgentEntry
{
	int64		job_id;
	char	   *agent;
} AgentEntry;

/*
 * NoteAgent remembers the agent of a held job read, for the applier's stop
 * notifications.
 */
static void
NoteAgent(QsQueueState *qs, int64 job_id, const char *agent)
{
	AgentEntry *e;
	bool		found;

	if (agent == NULL)
		return;
	if (qs->agents == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(int64);
		ctl.entrysize = sizeof(AgentEntry);
		ctl.hcxt = qs->cxt;
		qs->agents = hash_create("quota_sched agents", 64, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	e = hash_search(qs->agents, &job_id, HASH_ENTER, &found);
	if (!found)
		e->agent = MemoryContextStrdup(qs->cxt, agent);
}

/*
 * QsAgentOf returns the agent of a held job the state read, or NULL.
 */
const char *
QsAgentOf(const QsQueueState *qs, int64 job_id)
{
	AgentEntry *e;

	if (qs->agents == NULL)
		return NULL;
	e = hash_search(qs->agents, &job_id, HASH_FIND, NULL);
	return e ? e->agent : NULL;
}

/*
 * PartOfClaimer gives a held job with no placement that an agent claimed
 * (claimed while its unit was not placed: before 0.4, or before its agents
 * registered) one part, all its instances on that agent: what the pass
 * counts it as holding there (HostsHeldQuery), and frees there when it
 * stops.
 */
static void
PartOfClaimer(QsQueueState *qs, QsJob *job, const char *agent)
{
	QsPart	   *part;

	if (job->nparts > 0 || agent == NULL || !QsHoldsCapacity(job->state) ||
		job->unit < 0 || !qs->in.units[job->unit].placed)
		return;					/* parts matter only in a placed unit */
	part = MemoryContextAllocZero(qs->cxt, sizeof(QsPart));
	*part = (QsPart) {MemoryContextStrdup(qs->cxt, agent), job->count, job->lease_until, false};
	job->parts = part;
	job->nparts = 1;
}

/* How many of an orphaned share's jobs its WARNING names (WarnOrphans) */
#define QS_ORPHANS_NAMED 10

static QsQuery OrphanJobsQuery = {
	"SELECT id, state, count(*) OVER () FROM quota_sched.job"
	" WHERE job_queue = $1 AND quota_share = $2"
	"   AND state IN ('RUNNABLE', 'SCHEDULED', 'STARTING', 'RUNNING')"
	" ORDER BY id LIMIT " CppAsString2(QS_ORPHANS_NAMED),
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
};

/*
 * AddOrphan adds a share the queue does not have (its index, from
 * QsShareIndex, is -1) to its orphans, if it is new.
 */
static void
AddOrphan(QsQueueState *qs, const char *share, int index)
{
	if (index < 0 && !QsListHasName(qs->orphans, share))
		qs->orphans = lappend(qs->orphans, MemoryContextStrdup(qs->cxt, share));
}

/*
 * WarnOrphan gives the WARNING about the live jobs of a share the queue
 * does not have (only a write that bypassed the foreign keys, such as a
 * restore with session_replication_role = replica, leaves them): it names
 * the share and the first of its jobs, by id, with their states.
 */
static void
WarnOrphan(QsQueueState *qs, const char *share)
{
	Datum		args[2] = {CStringGetTextDatum(qs->queue), CStringGetTextDatum(share)};
	uint64		n = QsQueryRunIn(&OrphanJobsQuery, args, NULL, qs->snapshot, 0);
	StringInfoData ids;
	int64		total = 0;
	bool		isnull;

	initStringInfo(&ids);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;

		appendStringInfo(&ids, "%s%s (%s)", i > 0 ? ", " : "", SPI_getvalue(tup, desc, 1),
						 SPI_getvalue(tup, desc, 2));
		total = DatumGetInt64(SPI_getbinval(tup, desc, 3, &isnull));
	}
	if (n == 0)
		return;					/* a counter that drifted: no job is left */
	ereport(WARNING,
			(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
			 errmsg_plural("job queue \"%s\" has %lld live job of quota share \"%s\", "
						   "which does not exist: the pass leaves it alone",
						   "job queue \"%s\" has %lld live jobs of quota share \"%s\", "
						   "which does not exist: the pass leaves them alone",
						   (unsigned long) total, qs->queue, (long long) total, share),
			 errdetail("Job id (state): %s%s.", ids.data,
					   total > (int64) n ? ", ..." : ""),
			 errhint("Only a write that bypassed the foreign keys (such as a restore with "
					 "session_replication_role = replica) leaves such jobs; create the "
					 "quota share again for the passes to take them up.")));
}

/*
 * FindOrphans finds the shares the queue does not have that its live jobs
 * name, from the counters of held capacity and the (share, unit) pairs of
 * its RUNNABLE jobs, both read anyway: it costs a pass nothing while there
 * are none.  With warn (the first read of a pass, of explain, of
 * queue_snapshot; not a pass's second read, with rows locked), it gives a
 * WARNING for each, naming its jobs (WarnOrphan).  The pass leaves those
 * jobs alone and schedules the queue's other jobs.
 */
static void
FindOrphans(QsQueueState *qs, List *pairs, QsUsageRows usage, bool warn)
{
	ListCell   *lc;

	for (int i = 0; i < usage.n; i++)
		if (usage.rows[i].jobs > 0)
			AddOrphan(qs, usage.rows[i].quota_share, usage.rows[i].share);
	for (int i = 0; i + 1 < list_length(pairs); i += 2)
		AddOrphan(qs, list_nth(pairs, i), QsShareIndex(qs, list_nth(pairs, i)));
	if (warn)
		foreach(lc, qs->orphans)
			WarnOrphan(qs, lfirst(lc));
}

/*
 * PolicyJobs turns rows of a queue's jobs into the policy's jobs, with the
 * indexes of their shares and units (adding units not seen yet), noting
 * the agents of held ones.  A job whose share is not in the queue (only a
 * write that bypassed the foreign keys, such as a restore with triggers
 * off, leaves one) is left out: the pass decides nothing about it, and the
 * queue's other jobs go on.  FindOrphans gave the WARNING about it, unless
 * its share's counters drifted (the job is not counted): then it is given
 * here.
 */
static const QsJob *
PolicyJobs(QsQueueState *qs, QsJobRows rows, int *njobs)
{
	QsJob	   *jobs = palloc0(sizeof(QsJob) * (rows.n + 1));
	int			n = 0;

	for (int i = 0; i < rows.n; i++)
	{
		int			share = QsShareIndex(qs, rows.rows[i].quota_share);

		if (share < 0 && QsListHasName(qs->orphans, rows.rows[i].quota_share))
			continue;
		if (share < 0)
		{
			ereport(WARNING,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("a job of job queue \"%s\" names quota share \"%s\", which does "
							"not exist: the pass leaves it alone", qs->queue,
							rows.rows[i].quota_share),
					 errdetail("The job is " INT64_FORMAT ".", rows.rows[i].job.id)));
			continue;
		}
		jobs[n] = rows.rows[i].job;
		jobs[n].share = share;
		jobs[n].unit = AddUnit(qs, rows.rows[i].capacity_unit);
		NoteAgent(qs, jobs[n].id, rows.rows[i].agent);
		PartOfClaimer(qs, &jobs[n], rows.rows[i].agent);
		n++;
	}
	*njobs = n;
	return jobs;
}

/*
 * KeepJobText copies what a job read in a batch's scratch memory points to
 * (its same_label, its parts) into the state's memory.
 */
static void
KeepJobText(QsQueueState *qs, QsJob *job)
{
	QsPart	   *parts;

	if (job->same_label != NULL)
		job->same_label = MemoryContextStrdup(qs->cxt, job->same_label);
	if (job->nparts == 0)
		return;
	parts = MemoryContextAlloc(qs->cxt, sizeof(QsPart) * job->nparts);
	for (int i = 0; i < job->nparts; i++)
	{
		parts[i] = job->parts[i];
		parts[i].host = MemoryContextStrdup(qs->cxt, job->parts[i].host);
	}
	job->parts = parts;
}

/*
 * ReaderFetch reads the next batch of a reader after a position in its
 * order (NULL: from the start), below a bound.
 */
static void
ReaderFetch(QsQueueState *qs, QsJobReader *r, int share, int unit,
			const QsJob *after, int64 below)
{
	int			limit = QsStreamBatchSize(r->batch);
	MemoryContext scratch = AllocSetContextCreate(CurrentMemoryContext, "quota_sched batch",
												  ALLOCSET_DEFAULT_SIZES);
	MemoryContext old = MemoryContextSwitchTo(scratch);
	const char *sname = qs->in.shares[share].name;
	const char *uname = qs->in.units[unit].name;
	QsJobRows	rows;

	rows = QsReadStreamBatch(r->held, r->constrained, qs->queue, sname, uname, after, below,
							 r->batch);
	MemoryContextSwitchTo(old);
	if (r->cap < limit)
	{
		r->buf = MemoryContextAlloc(qs->cxt, sizeof(QsJob) * limit);
		r->cap = limit;
	}
	r->nbuf = rows.n;
	r->pos = 0;
	r->fetched_below = below;
	for (int i = 0; i < rows.n; i++)
	{
		r->buf[i] = rows.rows[i].job;
		r->buf[i].share = share;
		r->buf[i].unit = unit;
		KeepJobText(qs, &r->buf[i]);
		if (r->held)
		{
			NoteAgent(qs, r->buf[i].id, rows.rows[i].agent);
			PartOfClaimer(qs, &r->buf[i], rows.rows[i].agent);
		}
	}
	r->exhausted = rows.n < limit;
	MemoryContextDelete(scratch);
	if (r->batch < QS_STREAM_BATCHES - 1)
		r->batch++;
}

/*
 * ConstrainedAnyAfter tells whether the constrained reader of a split
 * reader has a job after a position that the bound of its class lets
 * through (a class the policy has not bounded yet: any).  When no class's
 * bound lets its smallest job through, none: no statement.
 */
static bool
ConstrainedAnyAfter(QsQueueState *qs, QsSplitReader *sp, int share, int unit,
					const QsJob *after)
{
	bool		any = false;

	for (int i = 0; i < sp->nclasses; i++)
	{
		QsJob		probe = {0};
		const QsSkipClass *c;

		probe.per_host = sp->classes[i].per_host;
		probe.same_label = sp->classes[i].same_label;
		c = QsSkipClassOf(sp->bounds, sp->nbounds, &probe);
		sp->class_below[i] = c != NULL ? c->below : PG_INT32_MAX;
		any |= sp->class_below[i] > sp->classes[i].smallest;
	}
	if (!any)
		return false;
	return QsConstrainedAnyAfter(qs->queue, qs->in.shares[share].name,
								 qs->in.units[unit].name, after, sp->classes,
								 sp->class_below, sp->nclasses);
}

/*
 * ReaderNothingBelow tells whether a RUNNABLE reader, whose size bound the
 * skip rule narrowed, has no job left after a position below it
 * (QsRunnableAnyAfter), before it reads on along the share-order index.
 * Below 1 instance there is none (the cursor of a reader not split asks
 * nothing then: CoreCursorAdvance).
 */
static bool
ReaderNothingBelow(QsQueueState *qs, QsJobReader *r, int share, int unit,
				   const QsJob *after, int64 below)
{
	if (r->constrained)
		return !ConstrainedAnyAfter(qs, r->split, share, unit, after);
	if (r->held || below >= PG_INT32_MAX)
		return false;
	if (below <= 1)
		return true;
	return !QsRunnableAnyAfter(qs->queue, qs->in.shares[share].name,
							   qs->in.units[unit].name, after, (int32) below);
}

/*
 * ReaderGives tells whether a reader gives a job it read: one below its
 * bound (a RUNNABLE job with fewer instances, a held job of lower
 * priority), of its kind (with or without placement constraints, where a
 * split reader reads them apart: QsSplitReader); a constrained one, below
 * the bound of its class.
 */
static bool
ReaderGives(const QsJobReader *r, const QsJob *job, int64 below)
{
	bool		constrained = job->per_host > 0 || job->same_label != NULL;

	if (r->constrained)
		return constrained && QsSourceGives(job, (int32) below, false, r->split->bounds,
											r->split->nbounds);
	if (r->free_only && constrained)
		return false;
	return (r->held ? job->priority : job->count) < below;
}

/*
 * ReaderNext gives a reader's next job after a position (NULL: from the
 * start) below a bound: a RUNNABLE job with fewer instances, or a held job
 * of lower priority.  Rows come in growing batches, each read from where
 * the last ended with the bound of the time.  When the bound shrinks, the
 * rows of the batch not yet given still follow the position in order and
 * are only filtered by the smaller bound, so the reader goes on through
 * them (reading from the position afresh on every narrowing made a pass
 * that tries many jobs of a share, each smaller than the last, read them
 * again and again); the next batch is read with the smaller bound, so
 * that jobs it excludes are not read.
 */
static bool
ReaderNext(QsQueueState *qs, QsJobReader *r, int share, int unit,
		   const QsJob *after, int64 below, QsJob *out)
{
	if (!r->has_jobs)
		return false;
	if (after == NULL && r->fresh && below <= r->fetched_below)
		r->pos = 0;				/* the first batch, read with the others */
	else if (after == NULL || !r->has_last || r->last_id != after->id ||
			 below > r->last_below)
	{
		/*
		 * From the start, or from elsewhere than the job given last, or with
		 * a larger bound than rows passed over were filtered with.
		 */
		r->nbuf = r->pos = r->batch = 0;
		r->exhausted = false;
		r->has_last = false;
		if (ReaderNothingBelow(qs, r, share, unit, after, below))
			return false;
		ReaderFetch(qs, r, share, unit, after, below);
	}
	r->fresh = false;
	r->last_below = below;
	for (;;)
	{
		while (r->pos < r->nbuf)
		{
			QsJob	   *job = &r->buf[r->pos++];

			if (ReaderGives(r, job, below))
			{
				r->has_last = true;
				r->last_id = job->id;
				*out = *job;
				return true;
			}
		}
		if (r->exhausted || r->nbuf == 0)
			return false;
		{
			QsJob		last = r->buf[r->nbuf - 1];

			if (ReaderNothingBelow(qs, r, share, unit, &last, below))
			{
				r->exhausted = true;
				return false;
			}
			ReaderFetch(qs, r, share, unit, &last, below);
		}
	}
}

/*
 * SplitRead reads the next job of reader i of a split reader (0: the free
 * one, 1: the constrained one, which has no bound) after a position (NULL:
 * from the start) into its head.
 */
static void
SplitRead(QsQueueState *qs, QsSplitReader *sp, QsJobReader *free_reader, int i,
		  int share, int unit, const QsJob *after, int32_t below)
{
	sp->has[i] = ReaderNext(qs, i == 0 ? free_reader : &sp->constrained, share, unit,
							after, i == 0 ? below : PG_INT32_MAX, &sp->head[i]);
}

/*
 * SplitNext gives the next job of a split reader (QsSplitReader) after a
 * position (NULL: from the start), below a size bound that only the jobs
 * without placement constraints have: the earlier in share order of its
 * two readers' next jobs.  Going on from the job it gave last, only the
 * reader that gave it moves on (and the other, if the bounds, which only
 * shrink, now exclude its head); from anywhere else, both start afresh.
 */
static bool
SplitNext(QsQueueState *qs, QsSplitReader *sp, QsJobReader *free_reader, int share,
		  int unit, const QsJob *after, int32_t below, QsJob *out)
{
	QsJob		from;

	if (after == NULL || !sp->has_last || sp->last_id != after->id)
	{
		for (int i = 0; i < 2; i++)
			SplitRead(qs, sp, free_reader, i, share, unit, after, below);
	}
	else
	{
		int			other = 1 - sp->gave;

		from = sp->head[sp->gave];
		SplitRead(qs, sp, free_reader, sp->gave, share, unit, &from, below);
		if (sp->has[other] && !ReaderGives(other == 0 ? free_reader : &sp->constrained,
										   &sp->head[other], other == 0 ? below : PG_INT32_MAX))
		{
			from = sp->head[other];
			SplitRead(qs, sp, free_reader, other, share, unit, &from, below);
		}
	}
	if (!sp->has[0] && !sp->has[1])
		return false;
	sp->gave = sp->has[0] && (!sp->has[1] || QsShareOrderBefore(&sp->head[0], &sp->head[1]))
		? 0 : 1;
	sp->has_last = true;
	sp->last_id = sp->head[sp->gave].id;
	*out = sp->head[sp->gave];
	return true;
}

/*
 * SourceNext is the policy's source of RUNNABLE jobs: the next job of a
 * share and unit in share order after a position, below a size bound (in a
 * split reader, only for the jobs without placement constraints).
 */
static bool
SourceNext(void *arg, int share, int unit, const QsJob *after, int32_t below,
		   bool below_all, const QsSkipClass *classes, int nclasses, QsJob *out)
{
	QsQueueState *qs = arg;
	int			at = share * qs->in.nunits + unit;

	if (qs->split[at] != NULL)
	{
		qs->split[at]->bounds = classes;
		qs->split[at]->nbounds = nclasses;
		return SplitNext(qs, qs->split[at], &qs->runnable[at], share, unit, after, below, out);
	}
	return ReaderNext(qs, &qs->runnable[at], share, unit, after, below, out);
}

/*
 * SourceHeld is the policy's source of victims: the next held job of a
 * share and unit with no stop pending, in victim order after a position,
 * below a priority bound.
 */
static bool
SourceHeld(void *arg, int share, int unit, const QsJob *after, int64_t below,
		   QsJob *out)
{
	QsQueueState *qs = arg;

	return ReaderNext(qs, &qs->held[share * qs->in.nunits + unit], share, unit,
					  after, below, out);
}

/*
 * SourceHostUsage is the policy's source of what the parts of holding jobs
 * hold on each host of a placed unit (scheduling.md 3.13): read for every
 * placed unit of the queue the first time a placement is computed.
 */
static void
SourceHostUsage(void *arg, int unit, int64_t *held, int64_t *stopping)
{
	QsQueueState *qs = arg;
	const QsUnit *u = &qs->in.units[unit];

	if (!qs->hosts_held_read)
	{
		qs->hosts_held_read = true;
		LoadHostsHeld(qs);
	}
	for (int h = 0; h < u->nhosts; h++)
	{
		held[h] = u->hosts[h].held;
		stopping[h] = u->hosts[h].stopping;
	}
}

/*
 * SourceSmallest gives a lender's smallest RUNNABLE jobs of a unit, for the
 * wanted-capacity rule.
 */
static int
SourceSmallest(void *arg, int share, int unit, int32_t at_most, int max, QsJob *out)
{
	QsQueueState *qs = arg;
	QsJobRows	rows;

	if (!qs->runnable[share * qs->in.nunits + unit].has_jobs)
		return 0;
	rows = QsReadSmallestRunnable(qs->queue, qs->in.shares[share].name,
								  qs->in.units[unit].name, at_most, max);
	for (int i = 0; i < rows.n; i++)
	{
		out[i] = rows.rows[i].job;
		out[i].share = share;
		out[i].unit = unit;
	}
	return rows.n;
}

/*
 * LoadJobs reads the jobs a pass always needs: the held jobs due for
 * time-based work or stopping for a promised job, the promised ones,
 * those a dependency of which failed, and those past the runnable timeout
 * (misconfigured, or NO_AGENT_FITS).
 */
static void
LoadJobs(QsQueueState *qs)
{
	qs->in.due = PolicyJobs(qs, QsReadDueJobs(qs->queue, qs->claim_timeout, qs->due_floors),
							&qs->in.ndue);
	QsLoadPartLeases((QsJob *) qs->in.due, qs->in.ndue, qs->snapshot);
	qs->in.promised = PolicyJobs(qs, QsReadJobSet(qs->queue, QS_PROMISED_JOBS, NULL),
								 &qs->in.npromised);
	/* victims matter only to promised jobs (scheduling.md 3.6) */
	if (qs->in.npromised > 0)
		qs->in.victims = PolicyJobs(qs, QsReadJobSet(qs->queue, QS_VICTIM_JOBS, NULL),
									&qs->in.nvictims);
	qs->in.dependency_failed =
		PolicyJobs(qs, QsReadJobSet(qs->queue, QS_DEPENDENCY_FAILED_JOBS, NULL),
				   &qs->in.ndependency_failed);
	if (qs->runnable_timeout == NULL)
		return;
	qs->in.expired = PolicyJobs(qs, QsReadJobSet(qs->queue, QS_EXPIRED_JOBS,
												 qs->runnable_timeout),
								&qs->in.nexpired);
	qs->in.no_agent_expired =
		PolicyJobs(qs, QsReadJobSet(qs->queue, QS_NO_AGENT_EXPIRED_JOBS, qs->runnable_timeout),
				   &qs->in.nno_agent_expired);
}

/*
 * SetUpCounters sets the counters of held capacity from their rows, now
 * that every unit is known (rows of shares that no longer exist count
 * only in the environment's use).  A share and unit whose counter shows held jobs gets a reader
 * of them.
 */
static void
SetUpCounters(QsQueueState *qs, QsUsageRows usage)
{
	int			cells = qs->in.nshares * qs->in.nunits + 1;
	int64	   *held = palloc0(sizeof(int64) * cells);
	int64	   *stopping = palloc0(sizeof(int64) * cells);

	qs->held = palloc0(sizeof(QsJobReader) * cells);
	for (int i = 0; i < usage.n; i++)
	{
		int			s = usage.rows[i].share;
		int			u = usage.rows[i].unit;
		int			at;

		if (s < 0)
		{
			/* a share gone behind the foreign keys: its jobs hold instances */
			((QsUnit *) qs->in.units)[u].unowned_held += usage.rows[i].instances;
			continue;
		}
		at = s * qs->in.nunits + u;
		if (qs->in.shares[s].spent != NULL)
			((double *) qs->in.shares[s].spent)[at % qs->in.nunits] =
				usage.rows[i].spent[qs->periods[s]];
		held[at] = usage.rows[i].instances;
		stopping[at] = usage.rows[i].stopping_instances;
		qs->held[at].has_jobs = usage.rows[i].jobs > 0;
	}
	for (int at = 0; at < cells; at++)
		qs->held[at].held = true;
	qs->in.held = held;
	qs->in.stopping = stopping;
}

/*
 * HeadsReader returns the RUNNABLE reader of a share and unit that
 * ReadRunnableHeads starts, if it has jobs: its reader (of those without
 * placement constraints when split), or, constrained, its split reader's
 * constrained one.
 */
static QsJobReader *
HeadsReader(QsQueueState *qs, int at, bool constrained)
{
	QsJobReader *r = !constrained ? &qs->runnable[at]
		: qs->split[at] != NULL ? &qs->split[at]->constrained : NULL;

	return r != NULL && r->has_jobs ? r : NULL;
}

/*
 * StartHeadsReader makes a reader's buffer ready for the per_pair first
 * jobs ReadRunnableHeads reads: its first batch, read from the start with
 * no size bound, after which it reads its next batch, or, when fewer were
 * asked for, the first.
 */
static void
StartHeadsReader(QsQueueState *qs, QsJobReader *r, int per_pair)
{
	int			limit = QsStreamBatchSize(0);

	r->buf = MemoryContextAlloc(qs->cxt, sizeof(QsJob) * limit);
	r->cap = limit;
	r->fresh = true;
	r->fetched_below = PG_INT32_MAX;
	r->batch = per_pair < limit ? 0 : 1;
}

/*
 * HeadsStarts returns, per share and unit, where its RUNNABLE jobs start in
 * the pass's snapshot: its first job as QsReadRunnablePairs found it in
 * that snapshot (NULL: the beginning; always so in a second read, whose
 * statements each have a snapshot of their own).
 */
static const QsFloorKeyValue **
HeadsStarts(QsQueueState *qs)
{
	int			cells = qs->in.nshares * qs->in.nunits;
	const QsFloorKeyValue **starts = palloc0(sizeof(QsFloorKeyValue *) * (cells + 1));
	const QsPairFloors *pf = &qs->pair_floors;

	for (int i = 0; qs->snapshot != NULL && i < pf->n; i++)
		if (qs->pair_cell[i] >= 0 && !QS_FLOOR_TOP(pf->pairs[i].first))
			starts[qs->pair_cell[i]] = &pf->pairs[i].first;
	return starts;
}

/*
 * PairCells sets, once every share and unit is known, the share and unit
 * of each pair of the pass's floors (qs->pair_cell), so that what reads
 * by pair finds them without a search.
 */
static void
PairCells(QsQueueState *qs)
{
	const QsPairFloors *pf = &qs->pair_floors;

	qs->pair_cell = palloc(sizeof(int) * (pf->n + 1));
	for (int i = 0; i < pf->n; i++)
	{
		int			s = QsShareIndex(qs, pf->pairs[i].share);
		int			u = QsUnitIndex(qs, pf->pairs[i].unit);

		qs->pair_cell[i] = s >= 0 && u >= 0 ? s * qs->in.nunits + u : -1;
	}
}

/*
 * HeadCell returns the share * nunits + unit of a head row read (-1: not in
 * the state): its pair's (pair >= 0: read with the pairs), or its names'.
 */
static int
HeadCell(QsQueueState *qs, const QsJobRow *row, int pair)
{
	int			s,
				u;

	if (pair >= 0)
		return qs->pair_cell[pair];
	s = QsShareIndex(qs, row->quota_share);
	u = QsUnitIndex(qs, row->capacity_unit);
	return s >= 0 && u >= 0 ? s * qs->in.nunits + u : -1;
}

/*
 * ReadRunnableHeads reads the first jobs of every RUNNABLE reader that has
 * jobs (constrained: of the split readers' constrained ones, at least as
 * many as a pair has classes), in one statement, as if each had read its
 * first batch (ReaderFetch) from the start with no size bound, only
 * shorter when there are many readers (QsReadRunnableHeads; a reader then
 * reads the first batch after them), and puts each in share order.  The
 * unconstrained ones' were read with the pairs, in the pass's snapshot
 * (QsReadRunnablePairs): they are taken from there.
 */
static void
ReadRunnableHeads(QsQueueState *qs, bool constrained)
{
	int			cells = qs->in.nshares * qs->in.nunits;
	const char **shares = palloc(sizeof(char *) * (cells + 1));
	const char **units = palloc(sizeof(char *) * (cells + 1));
	int			per_pair = constrained ? 0 : qs->heads_per_pair;
	const QsFloorKeyValue **starts = per_pair == 0 ? HeadsStarts(qs) : NULL;
	const QsFloorKeyValue **started = palloc(sizeof(QsFloorKeyValue *) * (cells + 1));
	int			classes = 1;
	int			n = 0;
	QsJobRows	rows = {qs->nheads, qs->heads};
	const int  *pair_of = per_pair > 0 ? qs->head_pair : NULL;	/* read with the pairs */

	for (int at = 0; per_pair == 0 && at < cells; at++)
		if (HeadsReader(qs, at, constrained) != NULL)
		{
			started[n] = starts[at];
			shares[n] = qs->in.shares[at / qs->in.nunits].name;
			units[n++] = qs->in.units[at % qs->in.nunits].name;
			if (constrained)
				classes = Max(classes, qs->split[at]->nclasses);
		}
	if (per_pair == 0 && n == 0)
		return;
	if (per_pair == 0)
		rows = QsReadRunnableHeads(constrained, qs->queue, shares, units, started, n, classes,
								   &per_pair);
	for (int at = 0; at < cells; at++)
		if (HeadsReader(qs, at, constrained) != NULL)
			StartHeadsReader(qs, HeadsReader(qs, at, constrained), per_pair);
	for (int i = 0; i < rows.n; i++)
	{
		int			at = HeadCell(qs, &rows.rows[i], pair_of ? pair_of[i] : -1);
		QsJobReader *r = at < 0 ? NULL : HeadsReader(qs, at, constrained);
		QsJob	   *job;

		if (r == NULL)
			continue;			/* of a share not in the queue (FindOrphans) */
		job = &r->buf[r->nbuf++];
		*job = rows.rows[i].job;
		job->share = at / qs->in.nunits;
		job->unit = at % qs->in.nunits;
		/* insertion into share order: the rows come unordered */
		for (; job > r->buf && QsShareOrderBefore(job, job - 1); job--)
		{
			QsJob		t = job[-1];

			job[-1] = *job;
			*job = t;
		}
	}
	for (int at = 0; at < cells; at++)
	{
		QsJobReader *r = HeadsReader(qs, at, constrained);

		if (r != NULL)
			r->exhausted = r->nbuf < per_pair;
	}
}

/*
 * MapUnits returns the index in the state of each unit of a capacity map
 * (-1: not in it), now that every unit is known: those the last map
 * given had (*last, *last_units) when the map has the same units
 * (QsSameUnits), as the shares' maps mostly have.
 */
static const int *
MapUnits(QsQueueState *qs, const QsCapacities *map, const QsCapacities **last,
		 int **last_units)
{
	if (*last == NULL || !QsSameUnits(map, *last))
	{
		*last_units = palloc(sizeof(int) * (map->n + 1));
		for (int k = 0; k < map->n; k++)
			(*last_units)[k] = QsUnitIndex(qs, map->units[k]);
	}
	*last = map;
	return *last_units;
}

/*
 * SetUpBudget sets a share's budget of every unit in instance-hours (-1:
 * none) from its budget map (decoded with the share: QsReadShareConfigs;
 * its units' indexes: unit_of), into budget, and what it spent this
 * period, spent, starts at 0 (SetUpCounters adds the counters'): each the
 * share's nunits of one array of every share's.  The CHECK allows budgets
 * of at most QS_BUDGET_DECIMALS decimals: thousandths / 1000.0 is the
 * double nearest to the decimal, as numeric to float8 gives share_budget.
 */
static void
SetUpBudget(QsQueueState *qs, int s, const int *unit_of, double *budget, double *spent)
{
	QsShare    *share = (QsShare *) &qs->in.shares[s];
	const QsCapacities *map = qs->budget_maps[s];

	for (int u = 0; u < qs->in.nunits; u++)
		budget[u] = -1;
	for (int k = 0; k < map->n; k++)
		if (unit_of[k] >= 0 && map->caps[k] >= 0)
			budget[unit_of[k]] = (double) map->caps[k] / 1000.0;
	share->budget = budget;
	share->spent = spent;
}

/*
 * SetUpConstrained notes, in a queue with a placed unit, the shares and
 * units of those with RUNNABLE jobs with placement constraints, whose
 * skip rule's bound is only for the others (scheduling.md 3.13): their
 * readers are split in two (QsSplitReader).
 */
static void
SetUpConstrained(QsQueueState *qs)
{
	bool	   *constrained = palloc0(sizeof(bool) * (qs->in.nshares * qs->in.nunits + 1));
	int			n = 0;
	const QsConstrainedClass *classes = qs->any_placed ?
		QsLoadClasses(qs->queue, qs->snapshot, &n) : NULL;

	for (int i = 0; i < n; i++)
	{
		int			s = QsShareIndex(qs, classes[i].share);
		int			u = QsUnitIndex(qs, classes[i].unit);
		int			at = s * qs->in.nunits + u;
		QsSplitReader *sp;

		if (s < 0 || u < 0 || !qs->in.units[u].placed)
			continue;
		if (qs->split[at] == NULL)
		{
			constrained[at] = qs->runnable[at].free_only = true;
			sp = qs->split[at] = palloc0(sizeof(QsSplitReader));
			sp->constrained.constrained = sp->constrained.has_jobs = true;
			sp->constrained.split = sp;
			sp->classes = &classes[i];	/* a pair's classes are in a row */
			sp->class_below = palloc(sizeof(int32) * (n - i));
		}
		qs->split[at]->nclasses++;
	}
	qs->in.constrained = constrained;
}

/*
 * SetUpReaders sets the capacities of the shares, now that every unit is
 * known, and a RUNNABLE reader per share and unit, marking those that have
 * jobs.
 */
static void
SetUpReaders(QsQueueState *qs, const QsCapacities **share_maps)
{
	const QsCapacities *last_map = NULL;
	const QsCapacities *last_budget = NULL;
	int		   *map_units = NULL;
	int		   *budget_units = NULL;
	int			cells = qs->in.nshares * qs->in.nunits;
	int64	   *caps = palloc0(sizeof(int64) * (cells + 1));
	int			budget_cells = qs->any_budget ? cells : 0;
	double	   *budgets = palloc(sizeof(double) * (budget_cells + 1));	/* SetUpBudget's */
	double	   *spent = palloc0(sizeof(double) * (budget_cells + 1));

	for (int s = 0; s < qs->in.nshares; s++)
	{
		const QsCapacities *map = share_maps[s];
		const int  *unit_of = MapUnits(qs, map, &last_map, &map_units);
		int64	   *share_caps = caps + s * qs->in.nunits;

		/* each unit once (an object's keys): caps[u] = QsCapacityOfUnit */
		for (int k = 0; k < map->n; k++)
			if (unit_of[k] >= 0)
				share_caps[unit_of[k]] = map->caps[k];
		((QsShare *) qs->in.shares)[s].capacity = share_caps;
		if (qs->budget_maps[s] != NULL)
			SetUpBudget(qs, s, MapUnits(qs, qs->budget_maps[s], &last_budget, &budget_units),
						budgets + s * qs->in.nunits, spent + s * qs->in.nunits);
	}
	qs->runnable = palloc0(sizeof(QsJobReader) * (qs->in.nshares * qs->in.nunits + 1));
	qs->split = palloc0(sizeof(QsSplitReader *) * (qs->in.nshares * qs->in.nunits + 1));
	PairCells(qs);
	/* the pairs listed (QsReadRunnablePairs) are those with a first job */
	for (int i = 0; i < qs->pair_floors.n; i++)
		if (qs->pair_cell[i] >= 0 && !QS_FLOOR_TOP(qs->pair_floors.pairs[i].first))
			qs->runnable[qs->pair_cell[i]].has_jobs = true;
	SetUpConstrained(qs);
	ReadRunnableHeads(qs, false);
	ReadRunnableHeads(qs, true);
	qs->in.source.next = SourceNext;
	qs->in.source.smallest = SourceSmallest;
	qs->in.source.held = SourceHeld;
	qs->in.source.host_usage = SourceHostUsage;
	qs->in.source.arg = qs;
}

/*
 * TakeSnapshot reads what must be read before the state's snapshot (the
 * floors, scan_floor.c; the count of writes that what is read of the memory
 * of borrowing may be kept with, borrow_memory.c), then takes it (none
 * when the pass reads rows it locks) for the pass's reads.
 */
static void
TakeSnapshot(QsQueueState *qs, const char *queue, bool lock_rows)
{
	qs->due_floors[0] = QsFloorRead(QS_FLOOR_UNCLAIMED, queue, "");
	qs->due_floors[1] = QsFloorRead(QS_FLOOR_LAPSED, queue, "");
	qs->pair_floors = QsFloorReadPairs(queue);
	if (!lock_rows)
	{
		bool		no_writer;

		qs->borrow_may_keep = QsUsageWrites(&qs->borrow_commits, &no_writer);
		qs->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	}
	QsSetPassReads(qs->snapshot, lock_rows);
}

/*
 * QsLoadQueueState reads the state of a queue at time now, in a memory
 * context of its own, and sets how the jobs are read until the state is
 * freed (QsSetPassReads; the policy reads them as it decides): in one
 * snapshot, or with lock_rows locking the rows read and passing over
 * those another transaction holds locked.  Returns false when the queue
 * does not exist.
 */
bool
QsLoadQueueState(QsQueueState *qs, const char *queue, TimestampTz now, bool lock_rows)
{
	const QsCapacities **share_maps;
	List	   *pairs;
	QsJobRows	heads;
	QsUsageRows usage;
	MemoryContext old;

	memset(qs, 0, sizeof(*qs));
	qs->cxt = AllocSetContextCreate(CurrentMemoryContext, "quota_sched queue state",
									ALLOCSET_DEFAULT_SIZES);
	old = MemoryContextSwitchTo(qs->cxt);
	TakeSnapshot(qs, queue, lock_rows);
	qs->queue = pstrdup(queue);
	qs->in.now = now;
	qs->units_cap = 8;
	qs->in.units = palloc0(sizeof(QsUnit) * qs->units_cap);
	qs->in.alloc = StateAlloc;
	qs->in.alloc_arg = qs->cxt;
	if (!LoadQueue(qs))
	{
		MemoryContextSwitchTo(old);
		QsFreeQueueState(qs);
		return false;
	}
	share_maps = LoadShares(qs);
	pairs = QsReadRunnablePairs(&qs->pair_floors, &heads, &qs->head_pair, &qs->heads_per_pair);
	qs->heads = heads.rows;
	qs->nheads = heads.n;
	for (int i = 1; i < list_length(pairs); i += 2)
		AddUnit(qs, list_nth(pairs, i));
	usage = QsLoadUsage(qs->queue, qs->any_budget, now, lock_rows);
	for (int i = 0; i < usage.n; i++)
	{
		/* rows of one unit in a row share its name (QsReadUsage) */
		bool		same = i > 0 &&
			usage.rows[i].capacity_unit == usage.rows[i - 1].capacity_unit;

		usage.rows[i].unit = same ? usage.rows[i - 1].unit :
			AddUnit(qs, usage.rows[i].capacity_unit);
		usage.rows[i].share = QsShareIndexNear(qs, usage.rows[i].quota_share,
											   i > 0 ? usage.rows[i - 1].share : 0);
	}
	FindOrphans(qs, pairs, usage, !lock_rows);
	if (pairs != NIL)
		LoadHosts(qs);			/* only RUNNABLE jobs need them */
	LoadJobs(qs);
	SetUpReaders(qs, share_maps);
	SetUpCounters(qs, usage);
	if (qs->half_life > 0 && qs->in.fair)
		QsLoadBorrowMemory(qs);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * QsFreeQueueState frees the state of a queue.
 */
void
QsFreeQueueState(QsQueueState *qs)
{
	QsSetPassReads(NULL, false);
	if (qs->snapshot != NULL)
		UnregisterSnapshot(qs->snapshot);
	MemoryContextDelete(qs->cxt);
}
