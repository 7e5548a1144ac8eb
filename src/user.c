/*-------------------------------------------------------------------------
 *
 * user.c
 *		The users' functions (SPEC 7): terminate, explain and
 *		queue_snapshot.  terminate and explain act on a job of the caller's
 *		own (admins: any job); the caller's identity is taken before the
 *		function switches to the extension's owner to read and write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "jobs.h"
#include "pass.h"
#include "quota_sched.h"

PG_FUNCTION_INFO_V1(qs_terminate);
PG_FUNCTION_INFO_V1(qs_explain);
PG_FUNCTION_INFO_V1(qs_queue_snapshot);

/* How far explain and queue_snapshot follow the dispatch order. */
#define QS_QUEUE_HORIZON 10000

/*
 * IsAdmin tells whether a role is a superuser or has the admin role.
 */
static bool
IsAdmin(Oid role)
{
	Oid			admin = get_role_oid("quota_sched_admin", true);

	return superuser_arg(role) || (OidIsValid(admin) && has_privs_of_role(role, admin));
}

/*
 * RequireOwnerOrAdmin raises insufficient_privilege unless the caller owns
 * the job or is an admin.
 */
static void
RequireOwnerOrAdmin(Oid caller, const QsJobRow *row, const char *verb)
{
	if (!IsAdmin(caller) && strcmp(GetUserNameFromId(caller, false), row->owner) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not %s job " INT64_FORMAT ", which it does not own",
						GetUserNameFromId(caller, false), verb, row->id),
				 errdetail("Owners %s their own jobs; admins any job.", verb)));
}

/*
 * FindJob locks and reads a job, or raises no_data_found.
 */
static void
FindJob(int64 job_id, QsJobRow *row)
{
	if (!QsLockJob(job_id, row))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", job_id)));
}

static bool
StateIs(const QsJobRow *row, const char *state)
{
	return strcmp(row->state, state) == 0;
}

/*
 * qs_terminate(job_id, reason) RETURNS quota_sched.job: a RUNNABLE or
 * unclaimed job fails at once; a claimed one gets a stop (TERMINATED) and
 * fails when it stops.
 */
Datum
qs_terminate(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	char	   *reason;
	QsSavedUser saved;
	QsJobRow	row;
	Datum		result;
	int64		job_id;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id must not be null")));
	job_id = PG_GETARG_INT64(0);
	reason = PG_ARGISNULL(1) ? "Terminated by user" : text_to_cstring(PG_GETARG_TEXT_PP(1));

	QsBeginSystemWrite(GetUserNameFromId(caller, false), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	FindJob(job_id, &row);
	RequireOwnerOrAdmin(caller, &row, "terminate");
	if (StateIs(&row, "SUCCEEDED") || StateIs(&row, "FAILED"))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " has already ended (%s)", job_id, row.state)));
	if (row.agent == NULL)
		QsEndAttempt(job_id, QS_FAIL, QS_COUNT_NONE, reason);
	else if (row.policy.stop != QS_STOP_TERMINATED)
	{
		Oid			types[2] = {INT8OID, TEXTOID};
		Datum		args[2] = {Int64GetDatum(job_id), CStringGetTextDatum(reason)};
		StringInfoData payload;

		if (SPI_execute_with_args("UPDATE quota_sched.job"
								  "   SET stop_reason = 'TERMINATED',"
								  "       stop_requested_at = coalesce(stop_requested_at, now()),"
								  "       status_reason = $2, status_reason_at = now()"
								  " WHERE id = $1", 2, types, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "quota_sched: could not terminate job " INT64_FORMAT, job_id);
		initStringInfo(&payload);
		appendStringInfo(&payload, "{\"job_id\":" INT64_FORMAT ",\"agent\":", job_id);
		escape_json(&payload, row.agent);
		appendStringInfoString(&payload, ",\"reason\":\"TERMINATED\"}");
		Async_Notify("quota_sched_stop", payload.data);
	}
	result = QsReturnJob(job_id);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/* The facts of a job that explain() reports. */
typedef struct ExplainJob
{
	QsJob		job;
	char	   *state;
	char	   *share;
	char	   *unit;
	char	   *status_reason;
	char	   *agent;
	char	   *stop_reason;
	bool		promised;
	int64		position_in_share;
	QsJobRow	row;			/* id, job_queue and owner */
} ExplainJob;

/*
 * ReadExplainJob reads a job (without locking it, in a new snapshot like
 * the snapshot loader's) and its position in its share's order, into memory
 * of context outer.  Returns false when there is no such job.
 */
static bool
ReadExplainJob(int64 job_id, ExplainJob *ej, MemoryContext outer)
{
	Oid			type = INT8OID;
	Datum		arg = Int64GetDatum(job_id);
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext old;

	if (SPI_execute_with_args("SELECT j.id, j.instance_count, j.priority, j.queued_at,"
							  "       j.state, j.quota_share, j.capacity_unit, j.status_reason,"
							  "       j.agent, j.stop_reason, j.promised_at IS NOT NULL,"
							  "       (SELECT count(*) + 1 FROM quota_sched.job o"
							  "         WHERE o.job_queue = j.job_queue AND o.quota_share = j.quota_share"
							  "           AND o.state = 'RUNNABLE'"
							  "           AND (o.priority > j.priority OR (o.priority = j.priority"
							  "                AND (o.queued_at, o.id) < (j.queued_at, j.id)))),"
							  "       j.job_queue, j.owner"
							  "  FROM quota_sched.job j WHERE j.id = $1",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read job " INT64_FORMAT, job_id);
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(outer);
	memset(ej, 0, sizeof(*ej));
	ej->job.id = job_id;
	ej->job.count = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	ej->job.priority = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	ej->job.queued_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 4, &isnull));
	ej->job.promised_at = QS_NO_TIME;
	ej->state = SPI_getvalue(tup, desc, 5);
	ej->share = SPI_getvalue(tup, desc, 6);
	ej->unit = SPI_getvalue(tup, desc, 7);
	ej->status_reason = SPI_getvalue(tup, desc, 8);
	ej->agent = SPI_getvalue(tup, desc, 9);
	ej->stop_reason = SPI_getvalue(tup, desc, 10);
	ej->promised = DatumGetBool(SPI_getbinval(tup, desc, 11, &isnull));
	ej->position_in_share = DatumGetInt64(SPI_getbinval(tup, desc, 12, &isnull));
	ej->row.id = job_id;
	ej->row.job_queue = SPI_getvalue(tup, desc, 13);
	ej->row.owner = SPI_getvalue(tup, desc, 14);
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * WaitReason fills blocked_by and detail for a RUNNABLE job from the policy
 * core's account of the invariant that keeps it waiting.
 */
static void
WaitReason(QsSnapshot *snap, ExplainJob *ej, const char **blocked_by, StringInfo detail)
{
	const QsShare *share;
	QsWhy		why;
	int64		cap;
	int64		env;

	if (ej->status_reason != NULL && strncmp(ej->status_reason, "MISCONFIGURATION:", 17) == 0)
	{
		*blocked_by = "MISCONFIGURATION";
		appendStringInfo(detail, "It needs %d x %s, more than its share or the environment "
						 "can ever give (%s); it waits for the limits to change.",
						 ej->job.count, ej->unit, ej->status_reason + 17);
		return;
	}
	if (ej->promised)
	{
		*blocked_by = "WAITING_FOR_VICTIMS";
		appendStringInfoString(detail, "Room was made for it by preemption; it starts "
							   "as soon as the preempted jobs have stopped.");
		return;
	}
	if (!snap->in.env_enabled)
	{
		*blocked_by = "ENVIRONMENT_DISABLED";
		appendStringInfoString(detail, "The service environment is DISABLED: nothing is dispatched.");
		return;
	}
	ej->job.share = QsShareIndex(snap, ej->share);
	ej->job.unit = QsUnitIndex(snap, ej->unit);
	if (ej->job.share < 0 || ej->job.unit < 0)
	{
		*blocked_by = NULL;
		appendStringInfoString(detail, "It changed while being explained; ask again.");
		return;
	}
	share = &snap->in.shares[ej->job.share];
	cap = share->capacity[ej->job.unit];
	env = snap->in.units[ej->job.unit].env_limit;
	why = QsExplainWait(&snap->in, &ej->job);
	switch (why.check)
	{
		case QS_CHECK_OK:
			*blocked_by = NULL;
			appendStringInfoString(detail, "Nothing keeps it from starting: the next pass dispatches it.");
			return;
		case QS_CHECK_ALLOWED:
			*blocked_by = share->strategy == QS_LEND_AND_BORROW ? "BORROW_LIMIT" : "OWN_CAPACITY_FULL";
			appendStringInfo(detail, "Quota share %s holds %lld x %s (its own capacity is %lld",
							 share->name, (long long) why.usage, ej->unit, (long long) cap);
			if (share->strategy == QS_LEND_AND_BORROW)
				appendStringInfo(detail, ", at most %lld with borrowing); it needs %d more.",
								 (long long) why.allowed, ej->job.count);
			else
				appendStringInfo(detail, " and a %s share does not borrow); it needs %d more.",
								 share->strategy == QS_LEND ? "LEND" : "RESERVE", ej->job.count);
			break;
		case QS_CHECK_ENVIRONMENT:
			*blocked_by = "ENVIRONMENT_FULL";
			appendStringInfo(detail, "The environment has %lld x %s, of which %lld are held; "
							 "it needs %d.", (long long) env, ej->unit,
							 (long long) why.env_usage, ej->job.count);
			break;
		case QS_CHECK_SUPPLY:
			if (why.must_borrow)
			{
				*blocked_by = "NO_BORROWABLE_SUPPLY";
				appendStringInfo(detail, "It must borrow %s beyond quota share %s's own %lld, and "
								 "the idle capacity lenders can lend (less what their own "
								 "waiting jobs want) is not enough.",
								 ej->unit, share->name, (long long) cap);
			}
			else
			{
				*blocked_by = "OWN_CAPACITY_LENT";
				appendStringInfo(detail, "Quota share %s's idle %s is lent to other shares; "
								 "it is taken back by preemption.", share->name, ej->unit);
			}
			break;
	}
	if (why.in_future)
		appendStringInfoString(detail, " (The room there is now is promised to jobs that "
							   "preemption made room for.)");
}

/*
 * qs_explain(job_id) RETURNS jsonb: why a job waits (SPEC 7), with the keys
 * state, position_in_share, position_in_queue, blocked_by and detail.
 */
Datum
qs_explain(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	int64		job_id;
	QsSavedUser saved;
	ExplainJob	ej;
	QsSnapshot	snap;
	const char *blocked_by = NULL;
	StringInfoData detail;
	StringInfoData json;
	int			position_in_queue = 0;
	bool		runnable;
	MemoryContext outer;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id must not be null")));
	job_id = PG_GETARG_INT64(0);
	initStringInfo(&detail);
	outer = CurrentMemoryContext;
	QsBeginSystemWrite(GetUserNameFromId(caller, false), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (!ReadExplainJob(job_id, &ej, outer))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", job_id)));
	RequireOwnerOrAdmin(caller, &ej.row, "explain");
	runnable = strcmp(ej.state, "RUNNABLE") == 0;
	if (runnable)
	{
		if (!QsLoadSnapshot(&snap, ej.row.job_queue, GetCurrentTransactionStartTimestamp()))
			elog(ERROR, "quota_sched: job queue \"%s\" vanished", ej.row.job_queue);
		WaitReason(&snap, &ej, &blocked_by, &detail);
		position_in_queue = QsQueuePosition(&snap.in, job_id, QS_QUEUE_HORIZON);
		QsCloseSnapshot(&snap);
	}
	else if (strcmp(ej.state, "SCHEDULED") == 0)
	{
		blocked_by = "WAITING_FOR_AGENT";
		appendStringInfoString(&detail, "It was dispatched; no agent has claimed it yet.");
	}
	else if (ej.agent != NULL && (strcmp(ej.state, "STARTING") == 0 || strcmp(ej.state, "RUNNING") == 0))
		appendStringInfo(&detail, "Agent %s holds it%s%s.", ej.agent,
						 ej.stop_reason ? "; a stop was requested: " : "",
						 ej.stop_reason ? ej.stop_reason : "");
	else
		appendStringInfo(&detail, "It has ended%s%s.", ej.status_reason ? ": " : "",
						 ej.status_reason ? ej.status_reason : "");
	SPI_finish();
	QsEndSystemWrite(&saved);

	initStringInfo(&json);
	appendStringInfo(&json, "{\"job_id\": " INT64_FORMAT ", \"state\": ", job_id);
	escape_json(&json, ej.state);
	appendStringInfoString(&json, ", \"quota_share\": ");
	escape_json(&json, ej.share);
	if (runnable)
		appendStringInfo(&json, ", \"position_in_share\": " INT64_FORMAT, ej.position_in_share);
	else
		appendStringInfoString(&json, ", \"position_in_share\": null");
	if (runnable && position_in_queue > 0)
		appendStringInfo(&json, ", \"position_in_queue\": %d", position_in_queue);
	else
		appendStringInfoString(&json, ", \"position_in_queue\": null");
	appendStringInfoString(&json, ", \"blocked_by\": ");
	if (blocked_by)
		escape_json(&json, blocked_by);
	else
		appendStringInfoString(&json, "null");
	appendStringInfoString(&json, ", \"detail\": ");
	escape_json(&json, detail.data);
	appendStringInfoChar(&json, '}');
	PG_RETURN_DATUM(DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data)));
}

/*
 * qs_queue_snapshot(job_queue, max_jobs) RETURNS TABLE (queue_position int,
 * job_id bigint, quota_share text, priority int, queued_at timestamptz):
 * the front of the queue in dispatch order, then the head of each share
 * not among them (AWS GetJobQueueSnapshot); a head's position is null when
 * it is further than 10000 jobs back.
 */
Datum
qs_queue_snapshot(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *queue;
	int			max_jobs = PG_ARGISNULL(1) ? 100 : PG_GETARG_INT32(1);
	QsSavedUser saved;
	QsSnapshot	snap;
	QsQueueEntry *entries;
	int			n;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_queue must not be null")));
	if (max_jobs < 1 || max_jobs > QS_QUEUE_HORIZON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid max_jobs %d", max_jobs),
				 errdetail("max_jobs is from 1 to %d.", QS_QUEUE_HORIZON)));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);

	QsBeginSystemWrite(NULL, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (!QsLoadSnapshot(&snap, queue, GetCurrentTransactionStartTimestamp()))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist", queue)));
	entries = palloc(sizeof(QsQueueEntry) * (max_jobs + snap.in.nshares + 1));
	n = QsQueueOrder(&snap.in, max_jobs, QS_QUEUE_HORIZON, entries);
	for (int i = 0; i < n; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {entries[i].position == 0, false, false, false, false};

		values[0] = Int32GetDatum(entries[i].position);
		values[1] = Int64GetDatum(entries[i].job.id);
		values[2] = CStringGetTextDatum(snap.in.shares[entries[i].job.share].name);
		values[3] = Int32GetDatum(entries[i].job.priority);
		values[4] = TimestampTzGetDatum(entries[i].job.queued_at);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	QsCloseSnapshot(&snap);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}
