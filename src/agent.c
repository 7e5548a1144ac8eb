/*-------------------------------------------------------------------------
 *
 * agent.c
 *		The launcher agents' functions (SPEC 5.2): claim, heartbeat, report
 *		and release.  Each checks its arguments, takes the job queue's lock
 *		in shared mode (so it never interleaves with a pass), and writes as
 *		the extension's owner with the agent as the actor of job_event.
 *		An error changes nothing.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "jobs.h"
#include "quota_sched.h"

PG_FUNCTION_INFO_V1(qs_claim);
PG_FUNCTION_INFO_V1(qs_heartbeat);
PG_FUNCTION_INFO_V1(qs_report);
PG_FUNCTION_INFO_V1(qs_release);

/*
 * AgentArg returns the agent argument, which must be a non-empty name.
 */
static char *
AgentArg(FunctionCallInfo fcinfo, int argno)
{
	char	   *agent;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("agent must not be null")));
	agent = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (agent[0] == '\0' || strlen(agent) > 128)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid agent name \"%s\"", agent),
				 errdetail("An agent's name has 1 to 128 characters.")));
	return agent;
}

/*
 * LeaseArg returns a lease interval argument, which must be positive.
 */
static Interval *
LeaseArg(FunctionCallInfo fcinfo, int argno)
{
	Interval   *lease;
	Interval	zero = {0};

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease must not be null")));
	lease = PG_GETARG_INTERVAL_P(argno);
	if (DatumGetBool(DirectFunctionCall2(interval_le, IntervalPGetDatum(lease),
										 IntervalPGetDatum(&zero))))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid lease %s",
						DatumGetCString(DirectFunctionCall1(interval_out,
															IntervalPGetDatum(lease)))),
				 errdetail("A lease is a positive interval.")));
	return lease;
}

/*
 * ClaimableIds picks the unclaimed SCHEDULED jobs a claim takes: of the
 * unit (NULL: any), oldest scheduled_at first then lowest id, up to
 * max_jobs, passing over a job that would take the total beyond
 * max_instances (0: no bound).  Rows other claims hold are skipped.
 */
static Datum
ClaimableIds(const char *queue, const char *unit, int max_jobs, int max_instances)
{
	Oid			types[2] = {TEXTOID, TEXTOID};
	Datum		args[2];
	char		nulls[2] = {' ', unit ? ' ' : 'n'};
	Portal		portal;
	Datum	   *ids = palloc(sizeof(Datum) * max_jobs);
	int			n = 0;
	int64		instances = 0;
	MemoryContext outer = CurrentMemoryContext;

	args[0] = CStringGetTextDatum(queue);
	args[1] = unit ? CStringGetTextDatum(unit) : (Datum) 0;
	portal = SPI_cursor_open_with_args(NULL,
									   "SELECT id, instance_count FROM quota_sched.job"
									   " WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NULL"
									   "   AND ($2 IS NULL OR capacity_unit = $2)"
									   " ORDER BY scheduled_at, id FOR UPDATE SKIP LOCKED",
									   2, types, args, nulls, false, 0);
	while (n < max_jobs)
	{
		bool		isnull;

		/* one row at a time: every row fetched stays locked */
		SPI_cursor_fetch(portal, true, 1);
		if (SPI_processed == 0)
			break;
		for (uint64 i = 0; i < SPI_processed && n < max_jobs; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			int32		count = DatumGetInt32(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));

			if (max_instances > 0 && instances + count > max_instances)
				continue;
			instances += count;
			ids[n++] = SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull);
		}
		SPI_freetuptable(SPI_tuptable);
		if (max_instances > 0 && instances >= max_instances)
			break;
	}
	SPI_cursor_close(portal);
	{
		MemoryContext old = MemoryContextSwitchTo(outer);
		Datum		arr = PointerGetDatum(construct_array(ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE));

		MemoryContextSwitchTo(old);
		return arr;
	}
}

/*
 * qs_claim(agent, job_queue, capacity_unit, max_jobs, lease, max_instances)
 * RETURNS SETOF quota_sched.job: takes SCHEDULED unclaimed jobs, which
 * become STARTING, held by the agent until lease_until.
 */
Datum
qs_claim(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *agent = AgentArg(fcinfo, 0);
	char	   *queue;
	char	   *unit = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	int			max_jobs = PG_ARGISNULL(3) ? 1 : PG_GETARG_INT32(3);
	Interval   *lease = LeaseArg(fcinfo, 4);
	int			max_instances = PG_ARGISNULL(5) ? 0 : PG_GETARG_INT32(5);
	QsSavedUser saved;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_queue must not be null")));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (max_jobs < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid max_jobs %d", max_jobs),
				 errdetail("max_jobs is at least 1.")));
	if (!PG_ARGISNULL(5) && max_instances < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid max_instances %d", max_instances),
				 errdetail("max_instances is at least 1, or null for no bound.")));
	InitMaterializedSRF(fcinfo, 0);

	QsLockQueue(queue, false);
	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsRequireQueue(queue);
	{
		Oid			types[3] = {INT8ARRAYOID, TEXTOID, INTERVALOID};
		Datum		args[3];

		args[0] = ClaimableIds(queue, unit, max_jobs, max_instances);
		args[1] = CStringGetTextDatum(agent);
		args[2] = IntervalPGetDatum(lease);
		if (SPI_execute_with_args("UPDATE quota_sched.job"
								  "   SET state = 'STARTING', agent = $2, lease_until = now() + $3"
								  " WHERE id = ANY ($1)",
								  3, types, args, NULL, false, 0) != SPI_OK_UPDATE)
			elog(ERROR, "quota_sched: claim failed");
		QsEmitJobs(rsinfo, "id = ANY ($1) ORDER BY scheduled_at, id", args[0]);
	}
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}

/*
 * qs_heartbeat(agent, lease) RETURNS TABLE (job_id bigint, stop_reason text):
 * extends the leases of every job the agent holds and returns them with the
 * stop each must make.  The lease of a job whose stop was requested never
 * goes beyond stop_requested_at + quota_sched.stop_timeout (SPEC 3.8).
 */
Datum
qs_heartbeat(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	char	   *agent = AgentArg(fcinfo, 0);
	Interval   *lease = LeaseArg(fcinfo, 1);
	QsSavedUser saved;
	Oid			types[4] = {TEXTOID, INTERVALOID, INTERVALOID, TEXTARRAYOID};
	Datum		args[4];

	InitMaterializedSRF(fcinfo, 0);
	args[0] = CStringGetTextDatum(agent);
	args[1] = IntervalPGetDatum(lease);
	args[2] = IntervalPGetDatum(QsStopTimeout());

	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	/* only jobs of the queues locked: a claim may commit in between */
	args[3] = QsLockQueuesOfAgent(agent);
	if (SPI_execute_with_args("UPDATE quota_sched.job"
							  "   SET lease_until = CASE WHEN stop_requested_at IS NULL"
							  "         THEN now() + $2"
							  "         ELSE least(now() + $2, stop_requested_at + $3) END"
							  " WHERE agent = $1 AND state IN ('STARTING', 'RUNNING')"
							  "   AND job_queue = ANY ($4)"
							  " RETURNING id, stop_reason",
							  4, types, args, NULL, false, 0) != SPI_OK_UPDATE_RETURNING)
		elog(ERROR, "quota_sched: heartbeat failed");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[2];
		bool		nulls[2];

		values[0] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &nulls[0]);
		values[1] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &nulls[1]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}

/*
 * ReportedState parses the state argument of report().
 */
static QsReport
ReportedState(const char *state)
{
	if (strcmp(state, "RUNNING") == 0)
		return QS_REPORT_RUNNING;
	if (strcmp(state, "SUCCEEDED") == 0)
		return QS_REPORT_SUCCEEDED;
	if (strcmp(state, "FAILED") == 0)
		return QS_REPORT_FAILED;
	if (strcmp(state, "STOPPED") == 0)
		return QS_REPORT_STOPPED;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("invalid reported state \"%s\"", state),
			 errdetail("An agent reports RUNNING, SUCCEEDED, FAILED or STOPPED.")));
	pg_unreachable();
}

/*
 * qs_report(job_id, agent, state, reason) RETURNS quota_sched.job: the
 * agent reports what became of a job it holds (SPEC 5.2).  Repeating the
 * job's current state is a no-op, so that an agent may retry.
 */
Datum
qs_report(PG_FUNCTION_ARGS)
{
	int64		job_id;
	char	   *agent = AgentArg(fcinfo, 1);
	QsReport	report;
	char	   *reason = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));

	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id and state must not be null")));
	job_id = PG_GETARG_INT64(0);
	report = ReportedState(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	return QsAgentReport(fcinfo, job_id, agent, report, reason);
}

/*
 * qs_release(job_id, agent, reason) RETURNS quota_sched.job: the agent gives
 * a held job back without it counting as a failure; it is RUNNABLE at once,
 * queued_at and counters unchanged.  Released while a stop is pending, the
 * job has stopped, as if the agent had reported STOPPED.
 */
Datum
qs_release(PG_FUNCTION_ARGS)
{
	char	   *agent = AgentArg(fcinfo, 1);
	char	   *reason = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id must not be null")));
	return QsAgentReport(fcinfo, PG_GETARG_INT64(0), agent, QS_REPORT_RELEASED, reason);
}
