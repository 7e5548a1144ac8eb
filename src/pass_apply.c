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
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "pass.h"
#include "query.h"
#include "quota_sched.h"

/*
 * ApplyMisconfiguration writes the MISCONFIGURATION reasons (scheduling.md 3.7) of
 * the jobs of every share and unit that has RUNNABLE jobs, from the limits
 * the policy computed.
 */
static void
ApplyMisconfiguration(QsQueueState *qs, const QsOutput *out, TimestampTz now)
{
	QsMisfitLimit *limits = palloc(sizeof(QsMisfitLimit) * (qs->in.nshares * qs->in.nunits + 1));
	int			n = 0;

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
			n++;
		}
	QsWriteMisconfiguration(qs->queue, limits, n, now);
}

/*
 * Notify sends the dispatch and stop notifications of the pass (scheduling.md 5.1):
 * ids only, never the payload; delivered when the pass commits.
 */
static void
Notify(QsQueueState *qs, const QsOutput *out)
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
			escape_json(&buf, qs->queue);
			appendStringInfoString(&buf, ",\"quota_share\":");
			escape_json(&buf, qs->in.shares[d->share].name);
			appendStringInfoString(&buf, ",\"capacity_unit\":");
			escape_json(&buf, qs->in.units[d->unit].name);
			appendStringInfo(&buf, ",\"instance_count\":%d}", d->count);
			Async_Notify("quota_sched_dispatch", buf.data);
			continue;
		}
		agent = QsAgentOf(qs, d->job_id);
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
	int			counts[QS_FAIL + 1] = {0};

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
	QsWritePromises(out->lapsed, out->nlapsed, false, now);
	if (out->ndecisions > 0)
	{
		QsWritePromises(out->promised, out->npromised, true, now);
		QsWriteDispatches(out, now);
		Notify(qs, out);
	}
	ApplyMisconfiguration(qs, out, now);
	if (out->ndecisions > 0)
		WritePassLog(qs, out, pass_id, started);
	return pass_id;
}
