/*-------------------------------------------------------------------------
 *
 * agent_api.c
 *		The launcher agents' functions (scheduling.md 5.2): claim, heartbeat, report
 *		and release, and attempt_started (where an attempt runs, issue 21).  Each checks its arguments, takes the job queue's lock
 *		in shared mode (so it never interleaves with a pass), and writes as
 *		the extension's owner with the agent as the actor of job_event.
 *		An error changes nothing.
 *
 * Agent names are bound to logins: claim records the calling role
 * (current_user, taken before the switch to the owner) as the job's
 * agent_role, and only that role, or an admin, may heartbeat, report on or
 * release the job afterwards.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "agent_api.h"
#include "agent_parts.h"
#include "agent_wait.h"
#include "checks.h"
#include "fleet.h"
#include "host_checks.h"
#include "identity.h"
#include "job_attempt.h"
#include "job_store.h"
#include "job_store_pass.h"
#include "policy.h"
#include "queue_lock.h"
#include "rendezvous.h"
#include "constants.h"
#include "word_io.h"

int			QsStopTimeoutSeconds = 600;

/*
 * QsDefineAgentSettings declares quota_sched.stop_timeout, the longest
 * time a job whose stop was requested keeps its lease (scheduling.md 6).
 */
void
QsDefineAgentSettings(void)
{
	DefineCustomIntVariable("quota_sched.stop_timeout",
							"Longest time a job whose stop was requested keeps its lease.",
							NULL, &QsStopTimeoutSeconds, 600, 1, 7 * 24 * 3600, PGC_SIGHUP,
							GUC_UNIT_S, NULL, NULL, NULL);
}

QS_UNLOCKED_FUNCTION(qs_claim, DoClaim)
QS_UNLOCKED_FUNCTION(qs_heartbeat, DoHeartbeat)
QS_UNLOCKED_FUNCTION(qs_report, DoReport)
QS_UNLOCKED_FUNCTION(qs_release, DoRelease)
QS_UNLOCKED_FUNCTION(qs_agent_ready, DoAgentReady)
QS_UNLOCKED_FUNCTION(qs_drain_agent, DoDrainAgent)
QS_UNLOCKED_FUNCTION(qs_forget_agent, DoForgetAgent)
QS_UNLOCKED_FUNCTION(qs_attempt_started, DoAttemptStarted)
QS_UNLOCKED_FUNCTION(qs_job_peers, DoJobPeers)

/* AgentArg returns the agent argument (QsNameArg) */
static char *
AgentArg(FunctionCallInfo fcinfo, int argno)
{
	return QsNameArg(fcinfo, argno, "agent");
}

/*
 * NotNullArg returns an argument that must not be null: a null is refused
 * (22023), never taken for the argument's default (has_default: it has
 * one, which the hint names as the way to get it), so that a caller who
 * passes a null by mistake (an unset variable) learns of it.
 */
static Datum
NotNullArg(FunctionCallInfo fcinfo, int argno, const char *name, bool has_default)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be null", name),
				 has_default ? errhint("Leave %s out for its default.", name) : 0));
	return PG_GETARG_DATUM(argno);
}

/*
 * LeaseArg returns a lease interval argument, which must be positive.
 */
static Interval *
LeaseArg(FunctionCallInfo fcinfo, int argno)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lease must not be null")));
	QsCheckInterval(PG_GETARG_DATUM(argno), ERRCODE_INVALID_PARAMETER_VALUE, "lease",
					NULL, "A lease is a positive interval of at most "
					CppAsString2(QS_MAX_INTERVAL_DAYS) " days.");
	return PG_GETARG_INTERVAL_P(argno);
}

/*
 * RequireQueue raises invalid_parameter_value unless a job queue exists
 * and the capacity unit, when one is given, is known there: in the
 * capacity map of its environment or of one of its shares, or held by one
 * of its jobs.  A misspelt unit would otherwise claim nothing, silently.
 */
static void
RequireQueue(const char *queue, const char *unit)
{
	bool		unit_known;

	if (!QsQueueKnowsUnit(queue, unit, &unit_known))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist", QsShortValue(queue))));
	if (!unit_known)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("capacity unit \"%s\" is not known in job queue \"%s\"",
						QsShortValue(unit), queue),
				 errdetail("Neither its service environment's nor its shares' capacity maps "
						   "name it, and none of its jobs holds it.")));
}

/*
 * StopTimeout returns quota_sched.stop_timeout as an interval.
 */
static Interval *
StopTimeout(void)
{
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = (int64) QsStopTimeoutSeconds * USECS_PER_SEC;
	return iv;
}

/* Whether this session's last claim left jobs behind (claim_left()). */
static bool last_claim_left = false;

/* The jobs given to the session at their dispatch that its claim returns. */
typedef struct Given
{
	Datum		ids;			/* a bigint[]; (Datum) 0: none */
	int			n;
	int64		instances;
} Given;

/*
 * ClaimAll claims for an agent, within what the jobs given to its session
 * left of max_jobs and max_instances (TakeGiven), the parts of jobs
 * placed on it (scheduling.md 3.14), then, within what is left, jobs that
 * are not placed, and appends their rows to claim()'s result.  What is
 * left of max_instances is what the agent has free, for the dispatches
 * that wake one agent or are given to it (QsNoteClaim).
 *
 * A claim that took jobs and left claimable ones behind for want of room
 * (parts placed on the agent that it passed over; jobs not placed that it
 * passed over, or after the last it took when it took all it could, or
 * any when the parts took all) keeps a dispatch wake-up pending for the
 * agent (agent_wait.c): its next agent_wait returns at once, as it would
 * had they been dispatched now; and claim_left() says so.  So an agent
 * that waits needs no claim after each report to find what it could not
 * take before (doc/agents.md).  Never after a claim that took nothing: an
 * agent that has no room for what is placed on it would otherwise claim
 * again and again.
 */
static void
ClaimAll(ReturnSetInfo *rsinfo, const char *queue, const char *unit, int max_jobs,
		 int max_instances, const char *agent, const char *role, Interval *lease, bool start,
		 const Given *given)
{
	/* the room the jobs given left (0 instances: no bound, but no job either) */
	int			room = max_instances == 0 ? 0 : Max(max_instances - (int) given->instances, 0);
	int			room_jobs = max_instances > 0 && room == 0 ? 0 : Max(max_jobs - given->n, 0);
	int			nparts;
	int64		ninstances;
	bool		parts_left;
	bool		jobs_left;
	Datum		parts = QsClaimParts(queue, unit, room_jobs, room, agent, role, lease,
									 start, &nparts, &ninstances, &parts_left);
	Datum		jobs = (Datum) 0;
	int64		njob_instances = 0;

	if (nparts < room_jobs && (room == 0 || ninstances < room))
		jobs = QsClaimJobs(queue, unit, room_jobs - nparts,
						   room == 0 ? 0 : room - (int) ninstances,
						   agent, role, lease, start, &njob_instances, &jobs_left);
	else
		jobs_left = QsJobsClaimable(queue, unit);	/* no room left to look */
	last_claim_left = (parts_left || jobs_left) &&
		(given->n > 0 || parts != (Datum) 0 || jobs != (Datum) 0);
	if (last_claim_left)
		QsWakeAgent(agent, QS_WAKE_DISPATCH);
	QsNoteClaim(agent, queue, unit, max_instances,
				given->instances + ninstances + njob_instances);
	if (parts != (Datum) 0)
		QsEmitJobs(rsinfo, parts);
	if (jobs != (Datum) 0)
		QsEmitJobs(rsinfo, jobs);
}

/*
 * TakeGiven: the jobs given to the session at their dispatch (agent_wait
 * with a lease, QsTakeGiven) that its claim returns: those the agent
 * still holds.
 */
static Given
TakeGiven(const char *agent, const char *queue)
{
	int64		ids[QS_MAX_GIVEN];
	Given		given;

	given.ids = QsHeldOf(ids, QsTakeGiven(agent, queue, ids), agent, queue, &given.n,
						 &given.instances);
	return given;
}

PG_FUNCTION_INFO_V1(qs_claim_left);

/*
 * qs_claim_left() RETURNS boolean: whether this session's last claim took
 * jobs and left claimable ones behind for want of room (ClaimAll), so that
 * an agent that waits with agent_wait claims again once it has room,
 * without a wait first; false before any claim.  Read in the statement of
 * the claim (the shipped agent's), it is that claim's.
 */
Datum
qs_claim_left(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_BOOL(last_claim_left);
}

/*
 * qs_claim(agent, job_queue, capacity_unit, max_jobs, lease, max_instances,
 * start) RETURNS SETOF quota_sched.job: returns the jobs given to the
 * session at their dispatch (TakeGiven), then takes SCHEDULED unclaimed
 * jobs, which become STARTING, held by the agent until lease_until and
 * claimed by the calling role (agent_role); with start, RUNNING at once,
 * as if the agent had reported RUNNING.  A registered agent's last_seen
 * and lease are refreshed (QsAgentSeen); a DRAINING one claims nothing.
 * A login that may not serve the queue is refused (QsRequireAgentAccess,
 * 42501).
 */
static Datum
DoClaim(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			caller = GetUserId();
	char	   *role = GetUserNameFromId(caller, false);
	bool		admin = QsIsAdmin(caller);
	char	   *agent = AgentArg(fcinfo, 0);
	char	   *queue = TextDatumGetCString(NotNullArg(fcinfo, 1, "job_queue", false));
	char	   *unit = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	int			max_jobs = DatumGetInt32(NotNullArg(fcinfo, 3, "max_jobs", true));
	Interval   *lease = LeaseArg(fcinfo, 4);
	int			max_instances = PG_ARGISNULL(5) ? 0 : PG_GETARG_INT32(5);
	bool		start = DatumGetBool(NotNullArg(fcinfo, 6, "start", true));
	QsSavedUser saved;
	Given		given;

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
	RequireQueue(queue, unit);
	QsRequireAgentAccess(caller, queue);
	last_claim_left = false;
	given = TakeGiven(agent, queue);
	if (given.n > 0)
		QsEmitJobs(rsinfo, given.ids);
	if (!QsAgentSeen(agent, admin ? NULL : role, lease))
		ClaimAll(rsinfo, queue, unit, max_jobs, max_instances, agent, role, lease, start,
				 &given);
	else						/* draining: nothing new, so no room */
		QsNoteClaim(agent, queue, unit, max_instances, max_instances);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}

/*
 * qs_heartbeat(agent, lease) RETURNS TABLE (job_id bigint, stop_reason text,
 * lease_until timestamptz):
 * extends the leases of every job the agent holds and returns them with the
 * stop each must make and the lease each has now (a job whose row another
 * transaction holds keeps the lease it had).  The lease of a job whose stop was requested never
 * goes beyond stop_requested_at + quota_sched.stop_timeout (scheduling.md 3.8).
 * Only the jobs the calling role claimed count (and those claimed before
 * 0.2, with no role recorded); an admin's heartbeat counts every job of the
 * agent.  A registered agent's last_seen and lease are refreshed
 * (QsAgentSeen), draining or not.
 */
static Datum
DoHeartbeat(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			caller = GetUserId();
	char	   *role = QsIsAdmin(caller) ? NULL : GetUserNameFromId(caller, false);
	char	   *agent = AgentArg(fcinfo, 0);
	Interval   *lease = LeaseArg(fcinfo, 1);
	QsSavedUser saved;
	Datum		queues;

	InitMaterializedSRF(fcinfo, 0);
	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	/* only jobs of the queues locked: a claim may commit in between */
	queues = QsLockQueuesOfAgent(agent);
	QsExtendLeases(rsinfo, agent, role, lease, StopTimeout(), queues);
	QsExtendPartLeases(rsinfo, agent, role, lease, StopTimeout(), queues);
	(void) QsAgentSeen(agent, role, lease);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}

/* The job state each report reaches (-1: none). */
static const int ReportedStates[QS_REPORT__COUNT + 1] = {
	[QS_REPORT_RUNNING] = QS_RUNNING,
	[QS_REPORT_SUCCEEDED] = QS_SUCCEEDED,
	[QS_REPORT_FAILED] = QS_FAILED,
	[QS_REPORT_STOPPED] = -1,
	[QS_REPORT_RELEASED] = -1,
};

/*
 * IsRepeat tells whether a report repeats the job's current state by the
 * agent that holds or held it: a no-op, so that an agent may retry after a
 * lost connection (scheduling.md 5.2).
 */
static bool
IsRepeat(const QsJobRow *row, const char *agent, QsReport report)
{
	return ReportedStates[report] == (int) row->state &&
		row->agent != NULL && strcmp(row->agent, agent) == 0;
}

/*
 * IsHeldBy tells whether an agent holds a job: it claimed it and the job
 * has not ended or gone back.
 */
static bool
IsHeldBy(const QsJobRow *row, const char *agent)
{
	return row->agent != NULL && strcmp(row->agent, agent) == 0 &&
		(row->state == QS_STARTING || row->state == QS_RUNNING);
}

/*
 * ClaimedByOther tells whether another role than the caller claimed a job.
 * A job with no role recorded (unclaimed, or claimed before 0.2) is every
 * agent's, as in 0.1.
 */
static bool
ClaimedByOther(const QsJobRow *row, const char *role)
{
	return row->agent_role != NULL && strcmp(row->agent_role, role) != 0;
}

/*
 * RequireReporter refuses a report on a job another role claimed unless
 * the caller is an admin, who is then the actor of the history.
 */
static void
RequireReporter(const QsJobRow *row, int64 job_id, QsReport report, Oid caller,
				const char *role)
{
	if (!ClaimedByOther(row, role))
		return;
	if (!QsIsAdmin(caller))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not %s job " INT64_FORMAT
						", which agent \"%s\" claimed as another role",
						role, report == QS_REPORT_RELEASED ? "release" : "report on",
						job_id, row->agent ? row->agent : ""),
				 errdetail("Only the role that claimed a job, or an admin, may "
						   "heartbeat, report on or release it.")));
	QsWrite.actor = role;		/* an admin acting for the agent */
}

/*
 * RequireHeld raises object_not_in_prerequisite_state unless the agent
 * holds the job (IsHeldBy).
 */
static void
RequireHeld(const QsJobRow *row, int64 job_id, const char *agent)
{
	if (!IsHeldBy(row, agent))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " is not held by agent \"%s\"", job_id, agent),
				 errdetail("The job is %s%s%s.", QsJobStateName(row->state),
						   row->agent ? ", held by agent " : "",
						   row->agent ? row->agent : "")));
}

/*
 * ApplyReport changes a job as an agent's report says, once it is neither
 * about an attempt that is over nor a repeat.  A job the agent does not
 * hold, or an illegal transition, raises an error.
 */
static void
ApplyReport(const QsJobRow *row, int64 job_id, const char *agent, QsReport report,
			const char *reason)
{
	RequireHeld(row, job_id, agent);
	if (report == QS_REPORT_RUNNING)
		QsChangeJob(job_id, QS_CHANGE_RUNNING, NULL);
	else if (report == QS_REPORT_SUCCEEDED)
	{
		/* a job that succeeded has run: RUNNING first, with started_at */
		if (row->state == QS_STARTING)
			QsChangeJob(job_id, QS_CHANGE_RUNNING, NULL);
		QsChangeJob(job_id, QS_CHANGE_SUCCEEDED, reason);
	}
	else if (report == QS_REPORT_FAILED)
	{
		QsStopOutcome o = QsFailedOutcome(&row->job);

		QsEndAttempt(job_id, o.action, o.counter, reason ? reason : QsReportName(report));
	}
	else if (row->job.stop != QS_STOP_NONE)
	{
		QsStopOutcome o = QsStoppedOutcome(&row->job);

		QsEndAttempt(job_id, o.action, o.counter, o.reason);
	}
	else if (report == QS_REPORT_STOPPED)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " has no stop to acknowledge", job_id),
				 errhint("%s acknowledges a stop that heartbeat() returned; "
						 "release() gives a job back.", QsReportName(report))));
	else
		QsEndAttempt(job_id, QS_REQUEUE, QS_COUNT_NONE,
					 reason ? reason : QsReasonName(QS_REASON_RELEASED));
}

/*
 * LateSuccess takes an agent's SUCCEEDED report of an attempt that is
 * over because its lease ran out (issue 37, item 5), when the job has not
 * started anew (waiting, or dispatched and not claimed) and the attempt
 * ran on that agent, for a login that may serve the queue: the work is
 * done, so the job succeeds rather than run again.  The history says so
 * (status_reason, the event's reason).  Returns whether it took it.
 */
static bool
LateSuccess(const QsJobRow *row, int64 job_id, const char *agent, int32 attempt, Oid caller)
{
	char	   *why;

	if (attempt != QsJobAttempt(&row->job) - 1 || row->job.lease_losses == 0 ||
		row->agent != NULL || (row->state != QS_RUNNABLE && row->state != QS_SCHEDULED) ||
		!QsAttemptLostBy(job_id, attempt, agent))
		return false;
	QsRequireAgentAccess(caller, row->job_queue);
	why = psprintf("%s: attempt %d, whose lease had run out, reported success late "
				   "(agent %s)", QsJobStateName(QS_SUCCEEDED), attempt, agent);
	QsChangeJob(job_id, QS_CHANGE_LATE_SUCCEEDED, why);
	return true;
}

/*
 * AgentReport applies an agent's report on a job it holds, as that agent,
 * and returns the job.  A report about an attempt (attempt > 0) other than
 * the job's current one changes nothing: a retry that comes after the
 * attempt ended (its reply was lost) must not land on the next one; but
 * the late success of an attempt whose lease ran out ends the job
 * (LateSuccess).  A report on a job another role claimed is refused
 * unless the caller is an admin (RequireReporter).  A repeat of the job's
 * current state changes nothing (IsRepeat); any other report goes to
 * ApplyReport, and one that ends the attempt writes its exit code and
 * output in job_attempt.
 */
static Datum
AgentReport(int64 job_id, const char *agent, QsReport report, const char *reason,
			int32 attempt, const int32 *exit_code, const char *output)
{
	Oid			caller = GetUserId();
	char	   *role = GetUserNameFromId(caller, false);
	QsSavedUser saved;
	QsJobRow	row;
	Datum		result;
	bool		over;
	int32		current;

	QsBeginSystemWrite(agent, &saved);
	QsWrite.has_exit_code = exit_code != NULL;
	QsWrite.exit_code = exit_code ? *exit_code : 0;
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsLockJob(job_id, &row);
	if (row.job.nparts > 0 || (!IsHeldBy(&row, agent) && QsAgentHasPart(job_id, agent)))
	{
		/*
		 * a job placed on hosts, or that went on without the part the
		 * agent still holds: the agent's part (scheduling.md 3.14)
		 */
		QsPartReport(&row, job_id, agent, report, reason, attempt, exit_code, output, caller);
		result = QsReturnJob(job_id);
		SPI_finish();
		QsEndSystemWrite(&saved);
		return result;
	}
	/* about an attempt that is over: nothing to do, but a late success */
	current = QsJobAttempt(&row.job);
	over = attempt > 0 && attempt != current;
	if (over && report == QS_REPORT_SUCCEEDED &&
		LateSuccess(&row, job_id, agent, attempt, caller))
		QsRecordAttemptEnd(job_id, attempt, 0, agent, exit_code, output);
	if (!over)
		RequireReporter(&row, job_id, report, caller, role);
	/* a retry: nothing to do */
	if (!over && !IsRepeat(&row, agent, report))
	{
		ApplyReport(&row, job_id, agent, report, reason);
		if (report != QS_REPORT_RUNNING)
		{
			QsRecordAttemptEnd(job_id, current, 0, agent, exit_code, output);
			QsNoteFreed(agent, row.job.count);
		}
	}
	result = QsReturnJob(job_id);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/*
 * ReportedState parses the state argument of report().
 */
static QsReport
ReportedState(const char *state)
{
	int			report;

	if (!QsWordFromName(QS_KIND_REPORT, state, &report))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid reported state \"%s\"", QsShortValue(state)),
				 errdetail("An agent reports %s.", QsWordList(QS_KIND_REPORT, "or"))));
	return (QsReport) report;
}

/*
 * qs_report(job_id, agent, state, reason, attempt, exit_code) RETURNS
 * quota_sched.job: the agent reports what became of a job it holds
 * (scheduling.md 5.2).  Repeating the job's current state is a no-op, so
 * that an agent may retry; so is a report naming an attempt that is over.
 * The exit code is recorded in the history with the attempt's end, and
 * with the output (the last of it, QsAttemptOutputArg) in job_attempt.
 */
static Datum
DoReport(PG_FUNCTION_ARGS)
{
	int64		job_id;
	char	   *agent = AgentArg(fcinfo, 1);
	QsReport	report;
	char	   *reason = PG_ARGISNULL(3) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(3));
	int32		attempt = PG_ARGISNULL(4) ? 0 : PG_GETARG_INT32(4);
	int32		exit_code = PG_ARGISNULL(5) ? 0 : PG_GETARG_INT32(5);
	char	   *output = QsAttemptOutputArg(fcinfo, 6);

	if (reason != NULL)
		QsCheckSize("reason", strlen(reason), QS_MAX_REASON_BYTES);
	if (!PG_ARGISNULL(4) && attempt < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid attempt %d", attempt),
				 errdetail("An attempt is numbered from 1, or null.")));
	if (PG_ARGISNULL(0) || PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id and state must not be null")));
	job_id = PG_GETARG_INT64(0);
	report = ReportedState(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	if (report == QS_REPORT_RUNNING && output != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("output goes with the report of an attempt's end"),
				 errhint("Report %s, %s or %s with it, or release the job.",
						 QsReportName(QS_REPORT_SUCCEEDED), QsReportName(QS_REPORT_FAILED),
						 QsReportName(QS_REPORT_STOPPED))));
	return AgentReport(job_id, agent, report, reason, attempt,
					   PG_ARGISNULL(5) ? NULL : &exit_code, output);
}

/*
 * qs_release(job_id, agent, reason, output) RETURNS quota_sched.job: the
 * agent gives a held job back without it counting as a failure; it is
 * RUNNABLE at once, queued_at and counters unchanged.  Released while a
 * stop is pending, the job has stopped, as if the agent had reported
 * STOPPED.  The output of the run ends in job_attempt, as report's.
 */
static Datum
DoRelease(PG_FUNCTION_ARGS)
{
	char	   *agent = AgentArg(fcinfo, 1);
	char	   *reason = PG_ARGISNULL(2) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(2));
	char	   *output = QsAttemptOutputArg(fcinfo, 3);

	if (reason != NULL)
		QsCheckSize("reason", strlen(reason), QS_MAX_REASON_BYTES);
	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id must not be null")));
	return AgentReport(PG_GETARG_INT64(0), agent, QS_REPORT_RELEASED, reason, 0, NULL, output);
}

/*
 * qs_agent_ready(agent, job_queue, capacity_unit, instances, labels,
 * address) RETURNS quota_sched.agent: the agent says what it can run
 * (doc/agents.md): its queue, its unit, how many instances it has in all
 * (null: no bound), its labels and how other hosts reach it (null: by its
 * name).  It registers the agent for the calling login, or refreshes it
 * (QsAgentReady: another login's agent is refused unless the caller is an
 * admin).  The queue and unit are checked as claim checks them, and so is
 * the login's access to the queue (QsRequireAgentAccess); bad labels or a
 * bad address are 22023 (host_checks.c), before anything is written.
 */
static Datum
DoAgentReady(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	char	   *role = GetUserNameFromId(caller, false);
	char	   *agent = AgentArg(fcinfo, 0);
	int32		instances = PG_ARGISNULL(3) ? 0 : PG_GETARG_INT32(3);
	QsAgentOffer offer = {0};
	QsSavedUser saved;
	Datum		result;

	offer.queue = TextDatumGetCString(NotNullArg(fcinfo, 1, "job_queue", false));
	offer.unit = TextDatumGetCString(NotNullArg(fcinfo, 2, "capacity_unit", false));
	offer.instances = PG_ARGISNULL(3) ? NULL : &instances;
	offer.labels = DatumGetJsonbP(NotNullArg(fcinfo, 4, "labels", true));
	offer.address = PG_ARGISNULL(5) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(5));
	if (!PG_ARGISNULL(3) && instances < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid instances %d", instances),
				 errdetail("instances is at least 1, or null for no bound.")));
	QsCheckAgentLabels(offer.labels, ERRCODE_INVALID_PARAMETER_VALUE, agent);
	if (offer.address != NULL)
		QsCheckAgentAddress(offer.address, ERRCODE_INVALID_PARAMETER_VALUE, agent);
	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	RequireQueue(offer.queue, offer.unit);
	QsRequireAgentAccess(caller, offer.queue);
	result = QsAgentReady(agent, role, QsIsAdmin(caller), &offer);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/*
 * qs_drain_agent(agent, draining) RETURNS quota_sched.agent: an admin sets
 * a registered agent DRAINING (claim gives it nothing new; the jobs it
 * holds run on to their end), or ACTIVE again with draining false.
 */
static Datum
DoDrainAgent(PG_FUNCTION_ARGS)
{
	char	   *agent = AgentArg(fcinfo, 0);
	bool		draining = DatumGetBool(NotNullArg(fcinfo, 1, "draining", true));
	QsSavedUser saved;
	Datum		result;

	if (!QsIsAdmin(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only an admin may drain an agent")));
	QsBeginSystemWrite(GetUserNameFromId(GetUserId(), false), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	result = QsDrainAgent(agent, draining);
	/* its waits end at commit: one given jobs checks the drain as it starts */
	if (draining)
		QsWakeAgent(agent, QS_WAKE_DISPATCH);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/*
 * qs_forget_agent(agent) RETURNS quota_sched.agent: an admin removes an
 * agent's registration (QsForgetAgent); the jobs it holds run on.
 */
static Datum
DoForgetAgent(PG_FUNCTION_ARGS)
{
	char	   *agent = AgentArg(fcinfo, 0);
	QsSavedUser saved;
	Datum		result;

	if (!QsIsAdmin(GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("only an admin may forget an agent")));
	QsBeginSystemWrite(GetUserNameFromId(GetUserId(), false), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	result = QsForgetAgent(agent);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/*
 * qs_attempt_started(job_id, agent, attempt, host, log_path, handle, port,
 * devices) RETURNS quota_sched.job_attempt: the agent that holds the job
 * says where its attempt runs (issue 21): the host, the file of its output
 * there, the external launcher's handle, the host's devices it gave the
 * part (issue 40; QsRecordAttemptStart: a null keeps what the row has),
 * and (rank 0's agent) the rendezvous port (QsGivePort).
 * The checks of report(): another role's job is refused unless the caller
 * is an admin (RequireReporter, 42501), a job the agent does not hold too
 * (55000); an attempt that is over is a no-op (null).
 */
static Datum
DoAttemptStarted(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	char	   *agent = AgentArg(fcinfo, 1);
	int64		job_id = DatumGetInt64(NotNullArg(fcinfo, 0, "job_id", false));
	int32		attempt = DatumGetInt32(NotNullArg(fcinfo, 2, "attempt", false));
	QsAttemptStart start = {
		.host = QsAttemptTextArg(fcinfo, 3, "host", QS_MAX_HOST_BYTES),
		.log_path = QsAttemptTextArg(fcinfo, 4, "log_path", QS_MAX_LOG_PATH_BYTES),
		.handle = QsAttemptTextArg(fcinfo, 5, "handle", QS_MAX_HANDLE_BYTES),
		.port = QsPortArg(fcinfo, 6),
		.devices = QsAttemptDevicesArg(fcinfo, 7)
	};
	QsSavedUser saved;
	QsJobRow	row;
	Datum		result = (Datum) 0;

	if (attempt < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid attempt %d", attempt),
				 errdetail("An attempt is numbered from 1.")));
	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsLockJob(job_id, &row);
	if (attempt == QsJobAttempt(&row.job))
	{
		int32		rank = 0;

		if (row.job.nparts > 0)
			rank = QsHeldPartRank(job_id, agent, caller);
		else
		{
			RequireReporter(&row, job_id, QS_REPORT_RUNNING, caller,
							GetUserNameFromId(caller, false));
			RequireHeld(&row, job_id, agent);
		}
		if (start.port != 0)
			QsGivePort(job_id, attempt, rank, row.job.nparts > 0, agent, start.port);
		result = QsRecordAttemptStart(job_id, attempt, rank, agent, &start);
	}
	SPI_finish();
	QsEndSystemWrite(&saved);
	if (result == (Datum) 0)
		PG_RETURN_NULL();
	return result;
}

/*
 * qs_job_peers(job_id, agent) RETURNS TABLE (rank, peer_agent, address,
 * instances, claimed, port, attempt): the parts of the job's current
 * placement, for an agent it is placed on (QsJobPeers).  It takes no
 * lock: agents waiting for their peers ask again and again.
 */
static Datum
DoJobPeers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int64		job_id = DatumGetInt64(NotNullArg(fcinfo, 0, "job_id", false));
	char	   *agent = AgentArg(fcinfo, 1);
	Oid			caller = GetUserId();
	QsSavedUser saved;

	InitMaterializedSRF(fcinfo, 0);
	QsBeginSystemWrite(agent, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsJobPeers(rsinfo, job_id, agent, caller);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return (Datum) 0;
}
