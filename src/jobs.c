/*-------------------------------------------------------------------------
 *
 * jobs.c
 *		Operations on single jobs shared by the agent and user functions:
 *		locking a job after its queue, ending an attempt, returning rows,
 *		and the state machine of an agent's report (SPEC 5.2).  Callers
 *		are connected to SPI and write as the extension's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "jobs.h"
#include "pass.h"
#include "quota_sched.h"

/*
 * QsStopTimeout returns quota_sched.stop_timeout as an interval.
 */
Interval *
QsStopTimeout(void)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = (int64) QsStopTimeoutSeconds * USECS_PER_SEC;
	return iv;
}

/*
 * QsRequireQueue raises invalid_parameter_value unless a job queue exists.
 */
void
QsRequireQueue(const char *queue)
{
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(queue);

	if (SPI_execute_with_args("SELECT 1 FROM quota_sched.job_queue WHERE name = $1",
							  1, &type, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not look up job queue");
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist", queue)));
}

/*
 * QsEmitJobs appends the jobs matching a condition on $1 (a bigint[]) to a
 * materialized result of SETOF quota_sched.job.
 */
void
QsEmitJobs(ReturnSetInfo *rsinfo, const char *where, Datum arg)
{
	Oid			type = INT8ARRAYOID;
	char	   *sql = psprintf("SELECT * FROM quota_sched.job WHERE %s", where);

	/* not read-only: the rows were just written */
	if (SPI_execute_with_args(sql, 1, &type, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read jobs");
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
}

/*
 * QsLockQueuesOfAgent takes, in shared mode and in the C order of their
 * names (the order every caller that locks several queues uses), the locks
 * of the queues where an agent holds jobs, and returns them as a text[].
 */
Datum
QsLockQueuesOfAgent(const char *agent)
{
	Oid			type = TEXTOID;
	Datum		arg = CStringGetTextDatum(agent);
	Datum	   *queues;
	int			n;
	MemoryContext outer = CurrentMemoryContext;

	if (SPI_execute_with_args("SELECT DISTINCT job_queue COLLATE \"C\" FROM quota_sched.job"
							  " WHERE agent = $1 AND state IN ('STARTING', 'RUNNING')"
							  " ORDER BY 1",
							  1, &type, &arg, NULL, false, 0) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read an agent's jobs");
	n = SPI_processed;
	queues = MemoryContextAlloc(outer, sizeof(Datum) * (n + 1));
	for (int i = 0; i < n; i++)
	{
		char	   *queue = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		MemoryContext old = MemoryContextSwitchTo(outer);

		queues[i] = CStringGetTextDatum(queue);
		MemoryContextSwitchTo(old);
		QsLockQueue(queue, false);
	}
	{
		MemoryContext old = MemoryContextSwitchTo(outer);
		Datum		arr = PointerGetDatum(construct_array(queues, n, TEXTOID, -1, false,
														  TYPALIGN_INT));

		MemoryContextSwitchTo(old);
		return arr;
	}
}

/*
 * QsLockJob takes the lock of a job's queue in shared mode, then the job's
 * row, and reads it.  Returns false when there is no such job.
 */
bool
QsLockJob(int64 job_id, QsJobRow *row)
{
	Oid			type = INT8OID;
	Datum		arg = Int64GetDatum(job_id);
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	MemoryContext outer = CurrentMemoryContext;
	MemoryContext old;

	if (SPI_execute_with_args("SELECT job_queue FROM quota_sched.job WHERE id = $1",
							  1, &type, &arg, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not read job");
	if (SPI_processed == 0)
		return false;
	QsLockQueue(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), false);

	if (SPI_execute_with_args("SELECT id, job_queue, owner, state, agent, stop_reason,"
							  "       failed_attempts, max_attempts, preemption_count,"
							  "       coalesce(preemption_retries, -1)"
							  "  FROM quota_sched.job WHERE id = $1 FOR UPDATE",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT)
		elog(ERROR, "quota_sched: could not lock job");
	if (SPI_processed == 0)
		return false;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	old = MemoryContextSwitchTo(outer);
	memset(row, 0, sizeof(*row));
	row->id = job_id;
	row->job_queue = SPI_getvalue(tup, desc, 2);
	row->owner = SPI_getvalue(tup, desc, 3);
	row->state = SPI_getvalue(tup, desc, 4);
	row->agent = SPI_getvalue(tup, desc, 5);
	row->policy.id = job_id;
	row->policy.stop = QsStopFromName(SPI_getvalue(tup, desc, 6));
	row->policy.failed_attempts = DatumGetInt32(SPI_getbinval(tup, desc, 7, &isnull));
	row->policy.max_attempts = DatumGetInt32(SPI_getbinval(tup, desc, 8, &isnull));
	row->policy.preemption_count = DatumGetInt32(SPI_getbinval(tup, desc, 9, &isnull));
	row->policy.preemption_retries = DatumGetInt32(SPI_getbinval(tup, desc, 10, &isnull));
	MemoryContextSwitchTo(old);
	return true;
}

/*
 * QsEndAttempt ends a held job's attempt as the pass does: back to RUNNABLE
 * or to FAILED, with the counter and the reason given.
 */
void
QsEndAttempt(int64 job_id, QsAction action, QsCounter counter, const char *reason)
{
	QsDecision	d;
	QsOutput	out;

	memset(&d, 0, sizeof(d));
	memset(&out, 0, sizeof(out));
	d.action = action;
	d.job_id = job_id;
	d.counter = counter;
	d.reason = reason;
	out.ndecisions = 1;
	out.decisions = &d;
	QsApplyEnds(&out, GetCurrentTransactionStartTimestamp());
}

/*
 * QsReturnJob returns the row of a job as the function's result, copied out
 * of SPI's memory.
 */
Datum
QsReturnJob(int64 job_id)
{
	Oid			type = INT8OID;
	Datum		arg = Int64GetDatum(job_id);

	/* not read-only: the row was just written */
	if (SPI_execute_with_args("SELECT * FROM quota_sched.job WHERE id = $1",
							  1, &type, &arg, NULL, false, 1) != SPI_OK_SELECT ||
		SPI_processed != 1)
		elog(ERROR, "quota_sched: could not read job " INT64_FORMAT, job_id);
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * IsRepeat tells whether a report repeats the job's current state by the
 * agent that holds or held it: a no-op, so that an agent may retry after a
 * lost connection (SPEC 5.2).
 */
static bool
IsRepeat(const QsJobRow *row, const char *agent, QsReport report)
{
	static const char *const states[] = {
		[QS_REPORT_RUNNING] = "RUNNING",
		[QS_REPORT_SUCCEEDED] = "SUCCEEDED",
		[QS_REPORT_FAILED] = "FAILED",
		[QS_REPORT_STOPPED] = NULL,
		[QS_REPORT_RELEASED] = NULL,
	};

	return states[report] != NULL && strcmp(row->state, states[report]) == 0 &&
		row->agent != NULL && strcmp(row->agent, agent) == 0;
}

static void
SetState(int64 job_id, const char *sql, const char *reason)
{
	Oid			types[2] = {INT8OID, TEXTOID};
	Datum		args[2] = {Int64GetDatum(job_id), reason ? CStringGetTextDatum(reason) : (Datum) 0};
	char		nulls[2] = {' ', reason ? ' ' : 'n'};

	if (SPI_execute_with_args(sql, 2, types, args, nulls, false, 0) != SPI_OK_UPDATE)
		elog(ERROR, "quota_sched: could not update job " INT64_FORMAT, job_id);
}

/*
 * QsAgentReport applies an agent's report on a job it holds, as that agent,
 * and returns the job.  A report for a job the agent does not hold, or an
 * illegal transition, changes nothing and raises an error.
 */
Datum
QsAgentReport(FunctionCallInfo fcinfo, int64 job_id, const char *agent,
			  QsReport report, const char *reason)
{
	QsSavedUser saved;
	QsJobRow	row;
	bool		held;
	Datum		result;

	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (!QsLockJob(job_id, &row))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", job_id)));
	held = row.agent != NULL && strcmp(row.agent, agent) == 0 &&
		(strcmp(row.state, "STARTING") == 0 || strcmp(row.state, "RUNNING") == 0);

	if (IsRepeat(&row, agent, report))
		;						/* a retry: nothing to do */
	else if (!held)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " is not held by agent \"%s\"", job_id, agent),
				 errdetail("The job is %s%s%s.", row.state,
						   row.agent ? ", held by agent " : "",
						   row.agent ? row.agent : "")));
	else if (report == QS_REPORT_RUNNING)
		SetState(job_id, "UPDATE quota_sched.job SET state = 'RUNNING', started_at = now()"
				 " WHERE id = $1", NULL);
	else if (report == QS_REPORT_SUCCEEDED)
		SetState(job_id, "UPDATE quota_sched.job SET state = 'SUCCEEDED', lease_until = NULL,"
				 " stop_reason = NULL, stop_requested_at = NULL, stopped_at = now(),"
				 " status_reason = $2, status_reason_at = now() WHERE id = $1", reason);
	else if (report == QS_REPORT_FAILED)
	{
		QsStopOutcome o = QsFailedOutcome(&row.policy);

		QsEndAttempt(job_id, o.action, o.counter, reason ? reason : "FAILED");
	}
	else if (row.policy.stop != QS_STOP_NONE)
	{
		QsStopOutcome o = QsStoppedOutcome(&row.policy);

		QsEndAttempt(job_id, o.action, o.counter, o.reason);
	}
	else if (report == QS_REPORT_STOPPED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " has no stop to acknowledge", job_id),
				 errhint("STOPPED acknowledges a stop that heartbeat() returned; "
						 "release() gives a job back.")));
	else
		QsEndAttempt(job_id, QS_REQUEUE, QS_COUNT_NONE, reason ? reason : "RELEASED");

	result = QsReturnJob(job_id);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}
