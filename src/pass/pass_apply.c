/*-------------------------------------------------------------------------
 *
 * pass_apply.c
 *		The applier: writes the decisions of a pass in the pass's
 *		transaction: job rows through the job store (one set-based statement
 *		per kind of change; their job_event rows follow from the history
 *		trigger), one pass_log row, and the notifications, delivered at
 *		commit.  The caller runs it as the extension's owner with system
 *		writes on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "catalog/namespace.h"
#include "commands/async.h"
#include "commands/sequence.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "agent_parts.h"
#include "agent_wait.h"
#include "checks.h"
#include "identity.h"
#include "job_parts.h"
#include "job_store.h"
#include "job_store_pass.h"
#include "pass_apply.h"
#include "pass_load.h"
#include "placement_store.h"
#include "policy.h"
#include "query.h"
#include "constants.h"

PG_FUNCTION_INFO_V1(qs_misconfiguration_skips);

/* How many times this backend's passes left out the misconfiguration check. */
static int64 MisfitSkips = 0;

/*
 * BudgetReason is the status_reason of the RUNNABLE jobs of a share and
 * unit whose budget is spent (scheduling.md 3.11), or NULL.
 */
static const char *
BudgetReason(const QsQueueState *qs, int share, int unit)
{
	const QsShare *sh = &qs->in.shares[share];

	if (!QsOverBudget(sh, unit))
		return NULL;
	return psprintf("%s: its %s instance-hours of %s per %s are spent until %s",
					QsHoldName(QS_HOLD_BUDGET_EXHAUSTED),
					QsBudgetText(sh->budget[unit]), qs->in.units[unit].name,
					QsPeriodName(qs->periods[share]),
					timestamptz_to_str(QsPeriodEnd(qs->in.now, qs->periods[share])));
}

/*
 * MisfitSignature returns a hash of the limits a misconfiguration check
 * checks, never 0 (QsFloorMisfitSame).
 */
static uint64
MisfitSignature(const QsMisfitLimit *limits, int n)
{
	uint64		h = n;

	for (int i = 0; i < n; i++)
	{
		const QsMisfitLimit *l = &limits[i];
		int64		values[3] = {l->env_max, l->quota_max, l->agent_max};
		const char *texts[3] = {l->quota_share, l->capacity_unit,
		l->budget_reason ? l->budget_reason : ""};

		for (int t = 0; t < 3; t++)
			h = hash_combine64(h, hash_bytes_extended((const unsigned char *) texts[t],
													  strlen(texts[t]) + 1, t));
		h = hash_combine64(h, hash_bytes_extended((const unsigned char *) values,
												  sizeof(values), l->budget_reason != NULL));
	}
	return h == 0 ? 1 : h;
}

/*
 * PairOfCells returns, for each share * nunits + unit, the index of its
 * pair in the pass's floors of pairs (-1: none): pair_cell turned round.
 */
static int *
PairOfCells(QsQueueState *qs)
{
	int			cells = qs->in.nshares * qs->in.nunits;
	int		   *pair_of = palloc(sizeof(int) * (cells + 1));

	for (int at = 0; at < cells; at++)
		pair_of[at] = -1;
	for (int i = 0; i < qs->pair_floors.n; i++)
		if (qs->pair_cell[i] >= 0)
			pair_of[qs->pair_cell[i]] = i;
	return pair_of;
}

/*
 * ApplyMisconfiguration writes the MISCONFIGURATION reasons (scheduling.md 3.7),
 * BUDGET_EXHAUSTED (3.11) and NO_AGENT_FITS (3.10) of
 * the jobs of every share and unit that has RUNNABLE jobs, from the limits
 * the policy computed; not when the last committed check checked the same
 * limits and no RUNNABLE job of those shares and units was written since
 * (QsFloorMisfitSame: it would change nothing).
 */
static void
ApplyMisconfiguration(QsQueueState *qs, const QsOutput *out, TimestampTz now)
{
	int			cells = qs->in.nshares * qs->in.nunits;
	QsMisfitLimit *limits = palloc(sizeof(QsMisfitLimit) * (cells + 1));
	int		   *pair_of = PairOfCells(qs);
	int		   *pairs = palloc(sizeof(int) * (cells + 1));
	int			n = 0;
	uint64		signature;

	for (int s = 0; s < qs->in.nshares; s++)
		for (int u = 0; u < qs->in.nunits; u++)
		{
			const QsFitLimit *l = &out->fit_limits[s * qs->in.nunits + u];

			if (!qs->runnable[s * qs->in.nunits + u].has_jobs)
				continue;
			limits[n].quota_share = qs->in.shares[s].name;
			limits[n].capacity_unit = qs->in.units[u].name;
			limits[n].env_max = l->env_max;
			limits[n].quota_max = l->quota_max;
			limits[n].agent_max = l->agent_max;
			limits[n].budget_reason = BudgetReason(qs, s, u);
			pairs[n++] = pair_of[s * qs->in.nunits + u];
		}
	signature = MisfitSignature(limits, n);
	if (qs->snapshot != NULL && QsFloorMisfitSame(&qs->pair_floors, pairs, n, signature))
	{
		MisfitSkips++;
		return;
	}
	QsWriteMisconfiguration(qs->queue, limits, n, now);
	if (qs->snapshot != NULL)
		QsFloorMisfitNote(&qs->pair_floors, pairs, n, signature);
}

/*
 * quota_sched.misconfiguration_skips(): how many times this backend's
 * passes left out the misconfiguration check (for tests).
 */
Datum
qs_misconfiguration_skips(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_INT64(MisfitSkips);
}

/*
 * NotifyDispatch sends the dispatch notification of a job (scheduling.md
 * 5.1): its id, queue, share, unit and size; in a placed unit one per
 * part, with the part's agent and rank (3.14).  It wakes the agent of each
 * part that waits (agent_wait.c), or, a job not placed, one agent of the
 * queue that waits and has room for it (every one when none has), unless
 * it was given to one (GiveDispatches: that one is woken).
 */
static void
NotifyDispatch(QsQueueState *qs, const QsDecision *d, StringInfo buf, bool given)
{
	for (int r = 0; r < Max(d->nparts, 1); r++)
	{
		resetStringInfo(buf);
		appendStringInfo(buf, "{\"job_id\":" INT64_FORMAT ",\"job_queue\":", d->job_id);
		escape_json(buf, qs->queue);
		appendStringInfoString(buf, ",\"quota_share\":");
		escape_json(buf, qs->in.shares[d->share].name);
		appendStringInfoString(buf, ",\"capacity_unit\":");
		escape_json(buf, qs->in.units[d->unit].name);
		appendStringInfo(buf, ",\"instance_count\":%d", d->count);
		if (d->nparts > 0)
		{
			appendStringInfoString(buf, ",\"agent\":");
			escape_json(buf, d->parts[r].host);
			appendStringInfo(buf, ",\"rank\":%d", r);
		}
		appendStringInfoChar(buf, '}');
		Async_Notify("quota_sched_dispatch", buf->data);
		if (given)
			continue;			/* the give wakes its session */
		if (d->nparts > 0)
			QsWakeAgent(d->parts[r].host, QS_WAKE_DISPATCH);
		else
			QsWakeForJob(qs->queue, qs->in.units[d->unit].name, d->count);
	}
}

/* The jobs a pass gives one waiting session (GiveDispatches). */
typedef struct GiveGroup
{
	QsGiveTo	to;
	QsArray		ids;			/* jobs not placed */
	QsArray		placed;			/* jobs of one part, placed on its agent */
} GiveGroup;

/* GroupOf: the group of a session (to), added to *groups when new */
static GiveGroup *
GroupOf(List **groups, const QsGiveTo *to)
{
	ListCell   *lc;
	GiveGroup  *g;

	foreach(lc, *groups)
		if (((GiveGroup *) lfirst(lc))->to.slot == to->slot)
			return lfirst(lc);
	g = palloc(sizeof(GiveGroup));
	g->to = *to;
	QsArrayInit(&g->ids, INT8OID, 1);
	QsArrayInit(&g->placed, INT8OID, 1);
	*groups = lappend(*groups, g);
	return g;
}

/* GiveGroupWrite claims a group's jobs for its agent, started, in the pass */
static void
GiveGroupWrite(GiveGroup *g, TimestampTz now)
{
	Interval   *lease = palloc0(sizeof(Interval));
	QsArray		placed_at,
				ranks;

	lease->time = g->to.lease_usecs;
	QsWrite.actor = g->to.agent;
	QsWrite.pass_id = 0;
	if (g->ids.n > 0)
		QsClaimIds(QsArrayDatum(&g->ids), g->to.agent, g->to.role, lease, true);
	if (g->placed.n == 0)
		return;
	QsArrayInit(&placed_at, TIMESTAMPTZOID, g->placed.n);
	QsArrayInit(&ranks, INT4OID, g->placed.n);
	for (int i = 0; i < g->placed.n; i++)
	{
		QsArrayPush(&placed_at, TimestampTzGetDatum(now), false);
		QsArrayPush(&ranks, Int32GetDatum(0), false);
	}
	QsTakeParts(QsArrayDatum(&g->placed), QsArrayDatum(&placed_at),
				QsArrayDatum(&ranks), g->to.agent, g->to.role, lease, true);
}

/*
 * GiveDispatches gives the jobs of a pass dispatched and not placed, or
 * placed on one host, to sessions that wait for them with a lease
 * (QsGiveJob; scheduling.md 5.1): each is claimed and started in the pass
 * for the session's agent and role, as that agent's claim with start
 * would write it (the agent is the actor of its STARTING and RUNNING),
 * and the session's next claim returns it.  A job of several parts is
 * not given: its agents claim their parts.  Returns, per decision,
 * whether its job was given.
 */
static bool *
GiveDispatches(QsQueueState *qs, const QsOutput *out)
{
	bool	   *given = palloc0(sizeof(bool) * out->ndecisions);
	List	   *groups = NIL;
	ListCell   *lc;
	QsWriteContext saved = QsWrite;

	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];
		QsGiveTo	to;
		GiveGroup  *g;

		if (d->action != QS_DISPATCH || d->nparts > 1 ||
			!QsGiveJob(qs->queue, qs->in.units[d->unit].name,
					   d->nparts == 1 ? d->parts[0].host : NULL, d->count, d->job_id, &to))
			continue;
		given[i] = true;
		g = GroupOf(&groups, &to);
		QsArrayPush(d->nparts == 1 ? &g->placed : &g->ids, Int64GetDatum(d->job_id), false);
	}
	foreach(lc, groups)
		GiveGroupWrite(lfirst(lc), qs->in.now);
	QsWrite = saved;
	return given;
}

/*
 * Notify sends the dispatch and stop notifications of the pass (scheduling.md 5.1):
 * the job's id, queue, share, unit and size, or its agent and stop reason
 * (to the agent of each part, QsNotifyStop), never the payload; delivered
 * when the pass commits.
 */
static void
Notify(QsQueueState *qs, const QsOutput *out, const bool *given)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];

		if (d->action == QS_PREEMPT && d->immediate)
			continue;
		if (d->action != QS_DISPATCH && d->action != QS_STOP && d->action != QS_PREEMPT)
			continue;
		resetStringInfo(&buf);
		if (d->action == QS_DISPATCH)
		{
			NotifyDispatch(qs, d, &buf, given[i]);
			continue;
		}
		QsNotifyStop(d->job_id, QsAgentOf(qs, d->job_id), d->stop);
	}
}

/*
 * WritePassLog writes the pass_log row of a pass, numbered beforehand.
 */
static QsQuery PassLogQuery = {
	"INSERT INTO quota_sched.pass_log"
	" (id, job_queue, started_at, finished_at, dispatched, preempted, requeued, failed)"
	" VALUES ($1, $2, $3, clock_timestamp(), $4, $5, $6, $7)",
	7, {INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, INT4OID, INT4OID}, SPI_OK_INSERT
};

static void
WritePassLog(QsQueueState *qs, const QsOutput *out, int64 pass_id, TimestampTz started)
{
	Datum		args[7];
	int			counts[QS_ACTION__COUNT] = {0};

	for (int i = 0; i < out->ndecisions; i++)
		counts[out->decisions[i].action]++;
	args[0] = Int64GetDatum(pass_id);
	args[1] = CStringGetTextDatum(qs->queue);
	args[2] = TimestampTzGetDatum(started);
	args[3] = Int32GetDatum(counts[QS_DISPATCH]);
	args[4] = Int32GetDatum(counts[QS_PREEMPT]);
	args[5] = Int32GetDatum(counts[QS_REQUEUE]);
	args[6] = Int32GetDatum(counts[QS_FAIL]);
	QsQueryRun(&PassLogQuery, args, NULL, false, 0);
}

/*
 * NextPassId numbers a pass that decided something, from pass_log_id_seq
 * as the column's default would (directly, as the history trigger numbers
 * job_event rows: no statement for it).
 */
static int64
NextPassId(void)
{
	Oid			nsp = get_namespace_oid(QS_SCHEMA, false);

	return nextval_internal(get_relname_relid("pass_log_id_seq", nsp), false);
}

static int
CompareIds(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : x > y;
}

/* Whether a job's id is among the sorted ids[n]. */
static bool
HasId(const int64 *ids, int n, int64 id)
{
	return n > 0 && bsearch(&id, ids, n, sizeof(int64), CompareIds) != NULL;
}

/*
 * AdvanceFloors raises, at the commit (QsFloorAdvanceAtCommit), the floor
 * of each pair whose first jobs the pass read with the pairs
 * (ReadPairsHeads) past those of them it dispatched: to the first it did
 * not dispatch; past every key when it read fewer than it asked for (the
 * pair's every job from its floor) and dispatched them all; else to the
 * last it read (those after it were not read).  So a pass that dispatched
 * every RUNNABLE job of a pair leaves its floor past every key, and the
 * worker's check before its next pass (QsQueueHasRunnable) finds nothing
 * without a statement.  A job it did not dispatch (failed, passed over, or
 * written by another transaction meanwhile) keeps the floor at it.
 */
static void
AdvanceFloors(const QsQueueState *qs, const QsOutput *out)
{
	const QsPairFloors *pf = &qs->pair_floors;
	int64	   *ids;
	QsFloorKeyValue *kept;
	QsFloorKeyValue *last;
	int		   *read;
	int			n = 0;

	if (qs->snapshot == NULL || qs->heads_per_pair == 0)
		return;
	ids = palloc(sizeof(int64) * (out->ndecisions + 1));
	kept = palloc(sizeof(QsFloorKeyValue) * (pf->n + 1));
	last = palloc(sizeof(QsFloorKeyValue) * (pf->n + 1));
	read = palloc0(sizeof(int) * (pf->n + 1));
	for (int i = 0; i < out->ndecisions; i++)
		if (out->decisions[i].action == QS_DISPATCH)
			ids[n++] = out->decisions[i].job_id;
	qsort(ids, n, sizeof(int64), CompareIds);
	for (int r = 0; r < qs->nheads; r++)
	{
		const QsJob *job = &qs->heads[r].job;
		QsFloorKeyValue key = QsFloorJobKey(job->priority, job->queued_at, job->id);
		int			p = qs->head_pair[r];

		if (read[p]++ == 0)
		{
			kept[p] = QsFloorTop;
			last[p] = key;
		}
		if (QsFloorKeyLess(last[p], key))
			last[p] = key;
		if (!HasId(ids, n, job->id) && QsFloorKeyLess(key, kept[p]))
			kept[p] = key;
	}
	/* a pair none of whose jobs was read: its probe raised it past every key */
	for (int p = 0; p < pf->n; p++)
		if (read[p] > 0)
			QsFloorAdvanceAtCommit(pf, p, QS_FLOOR_TOP(kept[p]) && read[p] >= qs->heads_per_pair ?
								   last[p] : kept[p]);
}

/*
 * QsApplyDecisions writes every decision of a pass and returns the pass id
 * (0 when the pass decided nothing: then it writes no pass_log row and no
 * job_event row; misconfiguration reasons and lapsed promises are still
 * written).  Lapsed promises are cleared before new ones are set: the core
 * may let a promise lapse and make it anew in the same pass.
 */
int64
QsApplyDecisions(QsQueueState *qs, const QsOutput *out, TimestampTz started)
{
	TimestampTz now = qs->in.now;
	int64		pass_id = 0;

	if (out->ndecisions > 0)
	{
		pass_id = NextPassId();
		QsWrite.pass_id = pass_id;
		QsWriteStops(out, now);
		QsWriteEnds(out, now);
	}
	QsWriteLostParts(out, now, now - qs->in.fence_grace);
	QsWritePromises(out->lapsed, out->nlapsed, false, now);
	if (out->ndecisions > 0)
	{
		QsWritePromises(out->promised, out->npromised, true, now);
		QsWriteDispatches(out, now);
		AdvanceFloors(qs, out);
		Notify(qs, out, GiveDispatches(qs, out));
	}
	QsWriteReservations(out);
	QsWriteHostReasons(out, now);
	QsClearPlacementReasons(qs->queue, &qs->in);
	ApplyMisconfiguration(qs, out, now);
	if (out->ndecisions > 0)
		WritePassLog(qs, out, pass_id, started);
	return pass_id;
}

static QsQuery PassedOverQuery = {
	"INSERT INTO quota_sched.queue_status AS s"
	"  (job_queue, passed_over, passed_over_since, passed_over_passes)"
	" VALUES ($1, $2, CASE WHEN $4 > 0 THEN $3 END, $4)"
	" ON CONFLICT (job_queue) DO UPDATE"
	"   SET passed_over = excluded.passed_over,"
	"       passed_over_since = CASE WHEN excluded.passed_over_passes > 0"
	"         THEN coalesce(s.passed_over_since, excluded.passed_over_since) END,"
	"       passed_over_passes = excluded.passed_over_passes",
	4, {TEXTOID, INT8ARRAYOID, TIMESTAMPTZOID, INT4OID}, SPI_OK_INSERT
};

/* after this many passes in a row passing over jobs, a WARNING */
#define QS_PASSED_OVER_WARN 3

/*
 * QsWritePassedOver records in queue_status the jobs a pass passed over
 * because another transaction holds their rows locked (up to
 * QS_PASSED_OVER_MAX of n, and for how many passes in a row jobs have
 * been), or that none was.  Once the same jobs have been passed over for
 * QS_PASSED_OVER_WARN passes it says so in a WARNING and stops writing
 * until they change: a queue that keeps passing over jobs must be seen,
 * and a pass every naptime must not write for nothing.
 */
void
QsWritePassedOver(QsQueueState *qs, const int64 *passed_over, int n)
{
	int			stored = Min(n, QS_PASSED_OVER_MAX);
	int64	   *ids = palloc(sizeof(int64) * (stored + 1));
	int			passes = n == 0 ? 0 : qs->npassed_over > 0 ? qs->passed_over_passes + 1 : 1;
	bool		same;
	QsArray		arr;
	Datum		args[4];

	memcpy(ids, passed_over, sizeof(int64) * stored);
	qsort(ids, stored, sizeof(int64), CompareIds);
	same = stored == qs->npassed_over &&
		memcmp(ids, qs->passed_over, sizeof(int64) * stored) == 0;
	if (same && (n == 0 || qs->passed_over_passes >= QS_PASSED_OVER_WARN))
		return;
	QsArrayInit(&arr, INT8OID, stored);
	for (int i = 0; i < stored; i++)
		QsArrayPush(&arr, Int64GetDatum(ids[i]), false);
	args[0] = CStringGetTextDatum(qs->queue);
	args[1] = QsArrayDatum(&arr);
	args[2] = TimestampTzGetDatum(qs->in.now);
	args[3] = Int32GetDatum(passes);
	QsQueryRun(&PassedOverQuery, args, NULL, false, 0);
	if (passes == QS_PASSED_OVER_WARN)
	{
		StringInfoData list;

		initStringInfo(&list);
		for (int i = 0; i < stored && i < 10; i++)
			appendStringInfo(&list, "%s" INT64_FORMAT, i > 0 ? ", " : "", ids[i]);
		if (n > 10)
			appendStringInfoString(&list, ", ...");
		ereport(WARNING,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("job queue \"%s\": %d passes in a row have passed over %d job%s "
						"whose rows another transaction holds locked",
						qs->queue, passes, n, n == 1 ? "" : "s"),
				 errdetail("Jobs passed over: %s.", list.data),
				 errhint("A session holds them with SELECT ... FOR UPDATE, or with an UPDATE "
						 "it has not committed; pg_stat_activity shows it.  Passes leave "
						 "these jobs alone until it ends; quota_sched.queue_status lists them.")));
	}
}
