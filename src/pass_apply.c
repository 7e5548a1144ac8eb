/*-------------------------------------------------------------------------
 *
 * pass_apply.c
 *		The applier: writes the decisions of a pass with set-based
 *		statements (one per kind of change), in the pass's transaction:
 *		job rows (their job_event rows follow from the job trigger), one
 *		pass_log row, and the notifications, delivered at commit.  The
 *		caller runs it as the extension's owner with system writes on.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "pass.h"
#include "quota_sched.h"

/* An array under construction, of one SQL type. */
typedef struct ArrayOut
{
	Oid			type;
	int			n;
	Datum	   *values;
	bool	   *nulls;
} ArrayOut;

static void
ArrayInit(ArrayOut *a, Oid type, int cap)
{
	a->type = type;
	a->n = 0;
	a->values = palloc(sizeof(Datum) * (cap + 1));
	a->nulls = palloc(sizeof(bool) * (cap + 1));
}

static void
ArrayPush(ArrayOut *a, Datum value, bool isnull)
{
	a->values[a->n] = value;
	a->nulls[a->n] = isnull;
	a->n++;
}

static Datum
ArrayDatum(ArrayOut *a)
{
	int16		len;
	bool		byval;
	char		align;
	int			dims[1] = {a->n};
	int			lbs[1] = {1};

	get_typlenbyvalalign(a->type, &len, &byval, &align);
	return PointerGetDatum(construct_md_array(a->values, a->nulls, 1, dims, lbs,
											  a->type, len, byval, align));
}

static void
Execute(int slot, const char *sql, int nargs, const Oid *types, Datum *args, int expect)
{
	int			rc = SPI_execute_plan(QsPreparedPlan(slot, sql, nargs, types), args,
									  NULL, false, 0);

	if (rc != expect)
		elog(ERROR, "quota_sched: \"%s\" failed: %s", sql, SPI_result_code_string(rc));
}

/*
 * ApplyStops writes requested stops (STOP, and PREEMPT of claimed jobs) and
 * the preempted_for of every victim.
 */
static void
ApplyStops(const QsOutput *out, TimestampTz now)
{
	Oid			types[4] = {INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID};
	ArrayOut	ids, reasons, pfor;
	Datum		args[4];

	ArrayInit(&ids, INT8OID, out->ndecisions);
	ArrayInit(&reasons, TEXTOID, out->ndecisions);
	ArrayInit(&pfor, INT8OID, out->ndecisions);
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];

		if (d->action != QS_STOP && d->action != QS_PREEMPT)
			continue;
		ArrayPush(&ids, Int64GetDatum(d->job_id), false);
		ArrayPush(&reasons, d->immediate ? (Datum) 0 :
				  CStringGetTextDatum(QsStopName(d->stop)), d->immediate);
		ArrayPush(&pfor, Int64GetDatum(d->preempted_for),
				  d->action != QS_PREEMPT || d->preempted_for == 0);
	}
	if (ids.n == 0)
		return;
	args[0] = ArrayDatum(&ids);
	args[1] = ArrayDatum(&reasons);
	args[2] = ArrayDatum(&pfor);
	args[3] = TimestampTzGetDatum(now);
	Execute(QS_PLAN_STOPS,
			"UPDATE quota_sched.job j"
			"   SET stop_reason = coalesce(d.reason, j.stop_reason),"
			"       stop_requested_at = CASE WHEN d.reason IS NULL THEN j.stop_requested_at ELSE $4 END,"
			"       preempted_for = coalesce(d.preempted_for, j.preempted_for)"
			"  FROM unnest($1, $2, $3) AS d(id, reason, preempted_for)"
			" WHERE j.id = d.id",
			4, types, args, SPI_OK_UPDATE);
}

/*
 * QsApplyEnds writes REQUEUE and FAIL decisions: back to RUNNABLE (agent and
 * lease cleared, queued_at kept) or to FAILED (agent kept), with the
 * counter the decision names, the reason, and the stop cleared.
 */
void
QsApplyEnds(const QsOutput *out, TimestampTz now)
{
	Oid			types[6] = {INT8ARRAYOID, BOOLARRAYOID, INT4ARRAYOID, INT4ARRAYOID,
	TEXTARRAYOID, TIMESTAMPTZOID};
	ArrayOut	ids, fail, failed, preempted, reasons;
	Datum		args[6];

	ArrayInit(&ids, INT8OID, out->ndecisions);
	ArrayInit(&fail, BOOLOID, out->ndecisions);
	ArrayInit(&failed, INT4OID, out->ndecisions);
	ArrayInit(&preempted, INT4OID, out->ndecisions);
	ArrayInit(&reasons, TEXTOID, out->ndecisions);
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];

		if (d->action != QS_REQUEUE && d->action != QS_FAIL)
			continue;
		ArrayPush(&ids, Int64GetDatum(d->job_id), false);
		ArrayPush(&fail, BoolGetDatum(d->action == QS_FAIL), false);
		ArrayPush(&failed, Int32GetDatum(d->counter == QS_COUNT_FAILED_ATTEMPT), false);
		ArrayPush(&preempted, Int32GetDatum(d->counter == QS_COUNT_PREEMPTION), false);
		ArrayPush(&reasons, CStringGetTextDatum(d->reason), false);
	}
	if (ids.n == 0)
		return;
	args[0] = ArrayDatum(&ids);
	args[1] = ArrayDatum(&fail);
	args[2] = ArrayDatum(&failed);
	args[3] = ArrayDatum(&preempted);
	args[4] = ArrayDatum(&reasons);
	args[5] = TimestampTzGetDatum(now);
	Execute(QS_PLAN_ENDS,
			"UPDATE quota_sched.job j"
			"   SET state = CASE WHEN d.fail THEN 'FAILED' ELSE 'RUNNABLE' END,"
			"       agent = CASE WHEN d.fail THEN j.agent END,"
			"       lease_until = NULL, stop_reason = NULL, stop_requested_at = NULL,"
			"       promised_at = NULL,"
			"       failed_attempts = j.failed_attempts + d.failed,"
			"       preemption_count = j.preemption_count + d.preempted,"
			/* a terminated job keeps the reason it was terminated with */
			"       status_reason = CASE WHEN d.reason = 'TERMINATED' AND j.stop_reason = 'TERMINATED'"
			"         THEN coalesce(j.status_reason, d.reason) ELSE d.reason END,"
			"       status_reason_at = $6,"
			"       stopped_at = CASE WHEN j.state = 'RUNNABLE' THEN j.stopped_at ELSE $6 END"
			"  FROM unnest($1, $2, $3, $4, $5) AS d(id, fail, failed, preempted, reason)"
			" WHERE j.id = d.id",
			6, types, args, SPI_OK_UPDATE);
}

/*
 * ApplyDispatches writes DISPATCH decisions: SCHEDULED, scheduled_at, the
 * promise fulfilled.
 */
static void
ApplyDispatches(const QsOutput *out, TimestampTz now)
{
	Oid			types[2] = {INT8ARRAYOID, TIMESTAMPTZOID};
	ArrayOut	ids;
	Datum		args[2];

	ArrayInit(&ids, INT8OID, out->ndecisions);
	for (int i = 0; i < out->ndecisions; i++)
		if (out->decisions[i].action == QS_DISPATCH)
			ArrayPush(&ids, Int64GetDatum(out->decisions[i].job_id), false);
	if (ids.n == 0)
		return;
	args[0] = ArrayDatum(&ids);
	args[1] = TimestampTzGetDatum(now);
	Execute(QS_PLAN_DISPATCHES,
			"UPDATE quota_sched.job"
			"   SET state = 'SCHEDULED', scheduled_at = $2, promised_at = NULL,"
			"       status_reason = NULL, status_reason_at = NULL"
			" WHERE id = ANY ($1)",
			2, types, args, SPI_OK_UPDATE);
}

/*
 * ApplyPromises sets promised_at of the jobs preemption made room for
 * (with is_set) or clears it for promises that lapsed.
 */
static void
ApplyPromises(int slot, const int64_t *job_ids, int n, bool is_set, TimestampTz now)
{
	Oid			types[2] = {INT8ARRAYOID, TIMESTAMPTZOID};
	ArrayOut	ids;
	Datum		args[2];

	if (n == 0)
		return;
	ArrayInit(&ids, INT8OID, n);
	for (int i = 0; i < n; i++)
		ArrayPush(&ids, Int64GetDatum(job_ids[i]), false);
	args[0] = ArrayDatum(&ids);
	args[1] = TimestampTzGetDatum(now);
	if (is_set)
		Execute(slot, "UPDATE quota_sched.job SET promised_at = $2 WHERE id = ANY ($1)",
				2, types, args, SPI_OK_UPDATE);
	else
		Execute(slot, "UPDATE quota_sched.job SET promised_at = NULL"
				" WHERE id = ANY ($1) AND $2 IS NOT NULL",
				2, types, args, SPI_OK_UPDATE);
}

/*
 * ApplyMisconfiguration sets and clears the MISCONFIGURATION reasons of
 * RUNNABLE jobs (SPEC 3.7).  It reads only jobs above a limit of their share
 * and unit (an index range per pair) and jobs that have such a reason now
 * (a partial index), so its cost follows the number of misconfigured jobs,
 * not the backlog; it writes only the reasons that change.
 */
static void
ApplyMisconfiguration(QsSnapshot *snap, const QsOutput *out, TimestampTz now)
{
	Oid			types[5] = {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID};
	int			cells = snap->in.nshares * snap->in.nunits;
	ArrayOut	shares, units, env_max, quota_max, ids, reasons;
	Datum		args[5];
	Oid			utypes[3] = {INT8ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID};
	Datum		uargs[3];

	ArrayInit(&shares, TEXTOID, cells);
	ArrayInit(&units, TEXTOID, cells);
	ArrayInit(&env_max, INT8OID, cells);
	ArrayInit(&quota_max, INT8OID, cells);
	for (int s = 0; s < snap->in.nshares; s++)
		for (int u = 0; u < snap->in.nunits; u++)
		{
			const QsFitLimit *l = &out->fit_limits[s * snap->in.nunits + u];

			if (!snap->streams[s * snap->in.nunits + u].has_jobs)
				continue;
			ArrayPush(&shares, CStringGetTextDatum(snap->in.shares[s].name), false);
			ArrayPush(&units, CStringGetTextDatum(snap->in.units[u].name), false);
			ArrayPush(&env_max, Int64GetDatum(l->env_max), false);
			ArrayPush(&quota_max, Int64GetDatum(l->quota_max), false);
		}
	args[0] = CStringGetTextDatum(snap->queue);
	args[1] = ArrayDatum(&shares);
	args[2] = ArrayDatum(&units);
	args[3] = ArrayDatum(&env_max);
	args[4] = ArrayDatum(&quota_max);
	Execute(QS_PLAN_MISCONFIGURED,
			"WITH l AS (SELECT * FROM unnest($2, $3, $4, $5)"
			"             AS l(quota_share, capacity_unit, env_max, quota_max)),"
			" changes AS ("
			"   SELECT c.* FROM l CROSS JOIN LATERAL ("
			"     SELECT j.id, CASE WHEN j.instance_count > l.env_max"
			"         THEN 'MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE'"
			"         ELSE 'MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED' END AS reason,"
			"       j.status_reason AS old_reason"
			"       FROM quota_sched.job j"
			"      WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
			"        AND j.quota_share = l.quota_share AND j.capacity_unit = l.capacity_unit"
			"        AND j.instance_count > least(l.env_max, l.quota_max)"
			"     OFFSET 0) c"
			"   UNION ALL"
			"   SELECT j.id, NULL, j.status_reason FROM quota_sched.job j"
			"     JOIN l ON l.quota_share = j.quota_share AND l.capacity_unit = j.capacity_unit"
			"    WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
			"      AND j.status_reason LIKE 'MISCONFIGURATION:%'"
			"      AND j.instance_count <= least(l.env_max, l.quota_max))"
			" SELECT id, reason FROM changes WHERE reason IS DISTINCT FROM old_reason",
			5, types, args, SPI_OK_SELECT);
	if (SPI_processed == 0)
		return;

	ArrayInit(&ids, INT8OID, SPI_processed);
	ArrayInit(&reasons, TEXTOID, SPI_processed);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Datum		reason;

		ArrayPush(&ids, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull),
				  false);
		reason = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		ArrayPush(&reasons, isnull ? (Datum) 0 : datumCopy(reason, false, -1), isnull);
	}
	uargs[0] = ArrayDatum(&ids);
	uargs[1] = ArrayDatum(&reasons);
	uargs[2] = TimestampTzGetDatum(now);
	Execute(QS_PLAN_MISCONFIGURED_SET,
			"UPDATE quota_sched.job j"
			"   SET status_reason = d.reason,"
			"       status_reason_at = CASE WHEN d.reason IS NULL THEN NULL ELSE $3 END"
			"  FROM unnest($1, $2) AS d(id, reason)"
			" WHERE j.id = d.id",
			3, utypes, uargs, SPI_OK_UPDATE);
}

/*
 * Notify sends the dispatch and stop notifications of the pass (SPEC 5.1):
 * ids only, never the payload; delivered when the pass commits.
 */
static void
Notify(QsSnapshot *snap, const QsOutput *out)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];
		const char *agent = NULL;

		if (d->action == QS_PREEMPT && d->immediate)
			continue;
		if (d->action != QS_DISPATCH && d->action != QS_STOP && d->action != QS_PREEMPT)
			continue;
		resetStringInfo(&buf);
		if (d->action == QS_DISPATCH)
		{
			appendStringInfo(&buf, "{\"job_id\":" INT64_FORMAT ",\"job_queue\":", d->job_id);
			escape_json(&buf, snap->queue);
			appendStringInfoString(&buf, ",\"quota_share\":");
			escape_json(&buf, snap->in.shares[d->share].name);
			appendStringInfoString(&buf, ",\"capacity_unit\":");
			escape_json(&buf, snap->in.units[d->unit].name);
			appendStringInfo(&buf, ",\"instance_count\":%d}", d->count);
			Async_Notify("quota_sched_dispatch", buf.data);
			continue;
		}
		for (int k = 0; k < snap->in.nheld; k++)
			if (snap->in.held[k].id == d->job_id)
				agent = snap->held_agents[k];
		appendStringInfo(&buf, "{\"job_id\":" INT64_FORMAT ",\"agent\":", d->job_id);
		escape_json(&buf, agent ? agent : "");
		appendStringInfoString(&buf, ",\"reason\":");
		escape_json(&buf, QsStopName(d->stop));
		appendStringInfoChar(&buf, '}');
		Async_Notify("quota_sched_stop", buf.data);
	}
}

/*
 * WritePassLog writes the pass_log row of a pass, numbered beforehand.
 */
static void
WritePassLog(QsSnapshot *snap, const QsOutput *out, int64 pass_id, TimestampTz started)
{
	Oid			types[7] = {INT8OID, TEXTOID, TIMESTAMPTZOID, INT4OID, INT4OID, INT4OID, INT4OID};
	Datum		args[7];
	int			counts[QS_FAIL + 1] = {0};

	for (int i = 0; i < out->ndecisions; i++)
		counts[out->decisions[i].action]++;
	args[0] = Int64GetDatum(pass_id);
	args[1] = CStringGetTextDatum(snap->queue);
	args[2] = TimestampTzGetDatum(started);
	args[3] = Int32GetDatum(counts[QS_DISPATCH]);
	args[4] = Int32GetDatum(counts[QS_PREEMPT]);
	args[5] = Int32GetDatum(counts[QS_REQUEUE]);
	args[6] = Int32GetDatum(counts[QS_FAIL]);
	Execute(QS_PLAN_PASS_LOG,
			"INSERT INTO quota_sched.pass_log"
			" (id, job_queue, started_at, finished_at, dispatched, preempted, requeued, failed)"
			" VALUES ($1, $2, $3, clock_timestamp(), $4, $5, $6, $7)",
			7, types, args, SPI_OK_INSERT);
}

/*
 * NextPassId numbers a pass that decided something.
 */
static int64
NextPassId(void)
{
	bool		isnull;

	Execute(QS_PLAN_PASS_ID, "SELECT nextval('quota_sched.pass_log_id_seq')",
			0, NULL, NULL, SPI_OK_SELECT);
	return DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

/*
 * QsApplyDecisions writes every decision of a pass and returns the pass id
 * (0 when the pass decided nothing: then it writes no pass_log row and no
 * job_event row; misconfiguration reasons and lapsed promises are still
 * written).  Lapsed promises are cleared before new ones are set: the core
 * may let a promise lapse and make it anew in the same pass.
 */
int64
QsApplyDecisions(QsSnapshot *snap, const QsOutput *out, TimestampTz started)
{
	TimestampTz now = snap->in.now;
	int64		pass_id = 0;

	if (out->ndecisions > 0)
	{
		pass_id = NextPassId();
		QsWrite.pass_id = pass_id;
		ApplyStops(out, now);
		QsApplyEnds(out, now);
	}
	ApplyPromises(QS_PLAN_LAPSES, out->lapsed, out->nlapsed, false, now);
	if (out->ndecisions > 0)
	{
		ApplyPromises(QS_PLAN_PROMISES, out->promised, out->npromised, true, now);
		ApplyDispatches(out, now);
		Notify(snap, out);
	}
	ApplyMisconfiguration(snap, out, now);
	if (out->ndecisions > 0)
		WritePassLog(snap, out, pass_id, started);
	return pass_id;
}
