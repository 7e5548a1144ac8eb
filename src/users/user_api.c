/*-------------------------------------------------------------------------
 *
 * user_api.c
 *		The users' functions (scheduling.md 7): terminate, explain and
 *		queue_snapshot.  terminate and explain act on a job of the caller's
 *		own or of a quota share whose submit_role the caller is a member of
 *		(admins: any job); the caller's identity is taken before the
 *		function switches to the extension's owner to read and write.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "identity.h"
#include "job_parts.h"
#include "job_store.h"
#include "job_store_pass.h"
#include "pass_load.h"
#include "queue_lock.h"
#include "policy.h"
#include "query.h"
#include "constants.h"
#include "stats.h"

QS_UNLOCKED_FUNCTION(qs_terminate, DoTerminate)
QS_UNLOCKED_FUNCTION(qs_set_priority, DoSetPriority)
QS_UNLOCKED_FUNCTION(qs_explain, DoExplain)
PG_FUNCTION_INFO_V1(qs_queue_snapshot);

/* How far explain and queue_snapshot follow the dispatch order. */
#define QS_QUEUE_HORIZON 10000

/*
 * InShareTeam tells whether a role is in the team of a job's share: the
 * share has a submit_role, which exists, and the role has its privileges
 * (the test of a submission, job_submit.c; the same as the row-level
 * security policies' quota_sched.team_shares()).  The caller is connected
 * to SPI as the extension's owner.
 */
static bool
InShareTeam(Oid role, int64 job_id)
{
	char	   *submit_role = QsJobShareTeam(job_id);
	Oid			team;

	if (submit_role == NULL)
		return false;
	team = get_role_oid(submit_role, true);
	return OidIsValid(team) && has_privs_of_role(role, team);
}

/*
 * RequireJobAccess raises insufficient_privilege unless the caller owns the
 * job, is in the team of its share, or is an admin.  The refusal says
 * nothing of the job but its id.
 */
static void
RequireJobAccess(Oid caller, const QsJobRow *row, const char *verb)
{
	if (!QsIsAdmin(caller) && strcmp(GetUserNameFromId(caller, false), row->owner) != 0 &&
		!InShareTeam(caller, row->job.id))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not %s job " INT64_FORMAT ", which it does not own",
						GetUserNameFromId(caller, false), verb, row->job.id),
				 errdetail("Owners %s their own jobs, members of a quota share's submit_role "
						   "the share's jobs; admins any job.", verb)));
}

/*
 * qs_terminate(job_id, reason, array) RETURNS quota_sched.job: a RUNNABLE or
 * unclaimed job fails at once; a claimed one gets a stop (TERMINATED) and
 * fails when it stops.  Either way its history has a TERMINATE event
 * before it fails, by which reports count terminations apart from
 * failures (usage_counts, reporting_utilization.sql).  Like every function a user
 * calls, it holds the queue's lock while it runs, not after
 * (QS_UNLOCKED_FUNCTION): a user who leaves the transaction open holds
 * only the job's row, which passes pass over (QsLockJobs).  With array,
 * of the job of index 0 of an array: every job of the array that has not
 * ended (TerminateArray).  TerminateOne ends one job (in_array: one that
 * ended meanwhile is left alone).
 */
static void
TerminateOne(Oid caller, int64 job_id, const char *reason, bool in_array)
{
	QsJobRow	row;

	QsLockJob(job_id, &row);
	RequireJobAccess(caller, &row, "terminate");
	if (row.state == QS_SUCCEEDED || row.state == QS_FAILED)
	{
		if (in_array)
			return;				/* ended since the array's jobs were listed */
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " has already ended (%s)", job_id,
						QsJobStateName(row.state))));
	}
	if (row.agent == NULL)
	{
		/* its TERMINATE event first: reports tell it from a failure */
		QsChangeJob(job_id, QS_CHANGE_TERMINATE, reason);
		QsEndAttempt(job_id, QS_FAIL, QS_COUNT_NONE, reason);
	}
	else if (row.job.stop != QS_STOP_TERMINATED)
	{
		QsChangeJob(job_id, QS_CHANGE_TERMINATE, reason);
		QsDropUnclaimedParts(PointerGetDatum(construct_array(&(Datum) {Int64GetDatum(job_id)},
															 1, INT8OID, 8, true,
															 TYPALIGN_DOUBLE)));
		QsNotifyStop(job_id, row.agent, QS_STOP_TERMINATED);
	}
}

/*
 * The jobs of an array that have not ended, by index, but index 0 (the
 * array's id, $1).
 */
static QsQuery ArrayJobsQuery = {
	"SELECT id FROM quota_sched.job"
	" WHERE array_id = $1 AND id <> $1 AND state NOT IN ('SUCCEEDED', 'FAILED')"
	" ORDER BY array_index",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * TerminateArray terminates every job of the array whose index 0 is job_id
 * that has not ended (terminate(array => true)): index 0 last, so that
 * what it returns is its row as the others' ends left it.
 */
static void
TerminateArray(Oid caller, int64 job_id, const char *reason)
{
	QsJobRow	row;
	Datum		arg = Int64GetDatum(job_id);
	uint64		n;
	int64	   *ids;

	QsLockJob(job_id, &row);
	RequireJobAccess(caller, &row, "terminate");
	if (QsJobArrayIndex(job_id) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job " INT64_FORMAT " is not the first job of an array", job_id),
				 errhint("terminate(array => true) takes the array's id: its job of index 0.")));
	n = QsQueryRun(&ArrayJobsQuery, &arg, NULL, true, 0);
	ids = palloc(sizeof(int64) * (n + 1));
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		ids[i] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
											 &isnull));
	}
	for (uint64 i = 0; i < n; i++)
		TerminateOne(caller, ids[i], reason, true);
	TerminateOne(caller, job_id, reason, true);
}

static Datum
DoTerminate(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	char	   *reason;
	QsSavedUser saved;
	Datum		result;
	int64		job_id;

	for (int a = 0; a < 3; a++)
		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not be null", a == 0 ? "job_id" : a == 1 ? "reason" : "array"),
					 a == 1 ? errhint("Leave reason out for \"Terminated by user\".") : 0));
	job_id = PG_GETARG_INT64(0);
	reason = text_to_cstring(PG_GETARG_TEXT_PP(1));
	QsCheckSize("reason", strlen(reason), QS_MAX_REASON_BYTES);

	QsBeginSystemWrite(GetUserNameFromId(caller, false), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (PG_GETARG_BOOL(2))
		TerminateArray(caller, job_id, reason);
	else
		TerminateOne(caller, job_id, reason, false);
	result = QsReturnJob(job_id);
	SPI_finish();
	QsEndSystemWrite(&saved);
	return result;
}

/*
 * qs_set_priority(job_id, priority) RETURNS integer (the priority before):
 * the UPDATE of a job's priority, with messages where a bare UPDATE says
 * "UPDATE 0": no_data_found when no job has that id, insufficient_privilege
 * naming the rule when the job is another team's (row-level security hides
 * it from the UPDATE).  It reveals no more than terminate() and explain():
 * that a job of that id exists.  The UPDATE itself runs as the caller,
 * through the policies and the update guard (range, ended jobs), and is
 * recorded as the caller's PRIORITY event.
 */
static QsQuery SetPriorityQuery = {
	"UPDATE quota_sched.job j SET priority = $2 FROM quota_sched.job o"
	" WHERE j.id = $1 AND o.id = j.id RETURNING o.priority",
	2, {INT8OID, INT4OID}, SPI_OK_UPDATE_RETURNING
};

static Datum
DoSetPriority(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	QsSavedUser saved;
	QsJobRow	row;
	Datum		args[2];
	bool		isnull;
	int32		old;

	for (int a = 0; a < 2; a++)
		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not be null", a == 0 ? "job_id" : "priority")));
	args[0] = PG_GETARG_DATUM(0);
	args[1] = PG_GETARG_DATUM(1);

	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsLockJob(DatumGetInt64(args[0]), &row);
	RequireJobAccess(caller, &row, "reprioritise");
	SPI_finish();
	QsRestoreUser(&saved);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (QsQueryRun(&SetPriorityQuery, args, NULL, false, 0) != 1)
		elog(ERROR, "quota_sched: job " INT64_FORMAT " is not visible to its UPDATE",
			 DatumGetInt64(args[0]));
	old = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	SPI_finish();
	PG_RETURN_INT32(old);
}

/* The facts of a job that explain() reports. */
typedef struct ExplainJob
{
	QsJobRow	row;
	int64		position_in_share;	/* among its share's RUNNABLE jobs */
	int			position_in_queue;	/* in dispatch order; 0: not known */
	const char *blocked_by;		/* NULL: nothing */
	StringInfoData detail;
	StringInfoData keys;		/* the keys of blocked_by's numbers, each
								 * after ", " (CapacityKeys, AgentKeys) */
	TimestampTz exempt_until;	/* VICTIMS_EXEMPT: when the earliest
								 * exemption ends; 0: not blocked so */
	bool		admin;			/* the caller may see other sessions' pids */
	Oid			caller;			/* the role that asks */
} ExplainJob;

static Datum *SnapshotNames(Oid caller, const QsQueueEntry *entries, int n, bool *nulls);

/*
 * KeptFromQueue fills blocked_by and detail when the worker gave up the
 * last passes of the job's queue (another session held the queue's lock
 * for longer than quota_sched.naptime), and tells whether it did: nothing
 * in the queue is dispatched meanwhile, whatever else would let the job
 * start.  Admins are told which sessions hold the lock now.
 */
static bool
KeptFromQueue(ExplainJob *ej)
{
	int			given_up = QsStatsGivenUpInARow(ej->row.job_queue);

	if (given_up == 0)
		return false;
	ej->blocked_by = QsBlockedName(QS_BLOCKED_QUEUE_LOCKED);
	appendStringInfo(&ej->detail, "The scheduler gave up the last %d pass%s of job queue "
					 "\"%s\": another session held the queue's lock for longer than "
					 "quota_sched.naptime (an admin's run_pass() in a transaction that has "
					 "not ended, or a pass that runs that long; no other call holds the lock "
					 "past its return); nothing in the queue is dispatched until it ends.", given_up, given_up == 1 ? "" : "es",
					 ej->row.job_queue);
	if (ej->admin)
	{
		char	   *holders = QsQueueLockHolders(ej->row.job_queue);

		if (holders[0] != '\0')
			appendStringInfo(&ej->detail, " Held now by process %s.", holders);
	}
	return true;
}

/*
 * Misfit returns what follows "MISCONFIGURATION:" in a status_reason (the
 * limit a misconfigured job exceeds), or NULL when it is no such reason.
 */
static const char *
Misfit(const char *status_reason)
{
	const char *word = QsReasonName(QS_REASON_MISCONFIGURATION);
	size_t		len = strlen(word);

	if (status_reason == NULL || strncmp(status_reason, word, len) != 0 ||
		status_reason[len] != ':')
		return NULL;
	return status_reason + len + 1;
}

/*
 * WaitsForever fills blocked_by and detail for a RUNNABLE job that waits
 * for something a pass cannot change by dispatching (a lock on its row,
 * limits, victims, the environment), and tells whether it did.
 */
static bool
WaitsForever(const QsQueueState *qs, ExplainJob *ej)
{
	const QsJobRow *row = &ej->row;
	const char *misfit;

	for (int i = 0; i < qs->npassed_over; i++)
		if (qs->passed_over[i] == row->job.id)
		{
			ej->blocked_by = QsBlockedName(QS_BLOCKED_ROW_LOCKED);
			appendStringInfoString(&ej->detail, "Another transaction holds its row locked "
								   "(SELECT ... FOR UPDATE, or an UPDATE not yet committed): "
								   "passes leave it alone until that transaction ends.");
			return true;
		}
	if ((misfit = Misfit(row->status_reason)) != NULL)
	{
		ej->blocked_by = QsBlockedName(QS_BLOCKED_MISCONFIGURATION);
		appendStringInfo(&ej->detail, "It needs %d x %s, more than its share or the environment "
						 "can ever give (%s); it waits for the limits to change.",
						 row->job.count, row->capacity_unit, misfit);
		return true;
	}
	if (row->job.promised_at != QS_NO_TIME)
	{
		ej->blocked_by = QsBlockedName(QS_BLOCKED_WAITING_FOR_VICTIMS);
		appendStringInfoString(&ej->detail, "Room was made for it by preemption; it starts "
							   "as soon as the preempted jobs have stopped.");
		return true;
	}
	if (!qs->in.env_enabled)
	{
		ej->blocked_by = QsBlockedName(QS_BLOCKED_ENVIRONMENT_DISABLED);
		appendStringInfo(&ej->detail, "The service environment is %s: nothing is dispatched.",
						 QsConfigStateName(QS_DISABLED));
		return true;
	}
	return false;
}

/* How many lenders or agents explain lists; it counts the others. */
#define QS_EXPLAIN_LIST_MAX 20

/*
 * SupplyKeys appends the numbers behind (I3) to explain's keys: the
 * object "supply" with unassigned(u), the sum of borrowed(S,u) with the
 * job, the borrowable supply ("available") and the other lenders, at most
 * QS_EXPLAIN_LIST_MAX of them, in the core's order (QsWhy.lenders).
 */
static void
SupplyKeys(const QsQueueState *qs, StringInfo k, const QsWhy *why)
{
	int			listed = Min(why->nlenders, QS_EXPLAIN_LIST_MAX);

	appendStringInfo(k, ", \"supply\": {\"unassigned\": %lld, \"borrowed\": %lld, "
					 "\"available\": %lld, \"lenders\": [", (long long) why->unassigned,
					 (long long) why->borrowed, (long long) why->supply);
	for (int i = 0; i < listed; i++)
	{
		const QsWhyLender *l = &why->lenders[i];

		appendStringInfoString(k, i == 0 ? "{\"quota_share\": " : ", {\"quota_share\": ");
		escape_json(k, qs->in.shares[l->share].name);
		appendStringInfo(k, ", \"capacity\": %lld, \"usage\": %lld, \"idle\": %lld, "
						 "\"lendable_idle\": %lld, \"wanted\": %lld, \"lends\": %lld}",
						 (long long) l->capacity, (long long) l->usage, (long long) l->idle,
						 (long long) l->lendable_idle, (long long) l->wanted, (long long) l->lends);
	}
	appendStringInfo(k, "], \"lenders_not_listed\": %d}", why->nlenders - listed);
}

/*
 * CapacityKeys appends the numbers behind a capacity code to explain's
 * keys, those of the state whose check failed (in_future: once pending
 * stops complete and kept promises hold): the job's unit and
 * instance_count, its share's strategy, capacity, allowed (null:
 * unbounded) and usage without it, the environment's E(u) and usage
 * without it, and for (I3) the supply.
 */
static void
CapacityKeys(const QsQueueState *qs, ExplainJob *ej, const QsJob *job, const QsWhy *why)
{
	const QsShare *share = &qs->in.shares[job->share];
	StringInfo	k = &ej->keys;

	appendStringInfoString(k, ", \"capacity_unit\": ");
	escape_json(k, ej->row.capacity_unit);
	appendStringInfo(k, ", \"instance_count\": %d, \"in_future\": %s, \"share\": "
					 "{\"strategy\": \"%s\", \"capacity\": %lld, \"allowed\": ",
					 job->count, why->in_future ? "true" : "false",
					 QsStrategyName(share->strategy), (long long) share->capacity[job->unit]);
	if (why->allowed == QS_UNBOUNDED)
		appendStringInfoString(k, "null");
	else
		appendStringInfo(k, "%lld", (long long) why->allowed);
	appendStringInfo(k, ", \"usage\": %lld", (long long) why->usage);
	if (why->check == QS_CHECK_SUPPLY)
		appendStringInfo(k, ", \"lends\": %lld", (long long) why->share_lends);
	appendStringInfo(k, "}, \"environment\": {\"limit\": %lld, \"usage\": %lld}",
					 (long long) qs->in.units[job->unit].env_limit, (long long) why->env_usage);
	if (why->check == QS_CHECK_SUPPLY)
		SupplyKeys(qs, k, why);
}

/*
 * DescribeSupply fills blocked_by and detail when (I3) fails with the job:
 * the shares would borrow more than the supply.
 */
static void
DescribeSupply(const QsQueueState *qs, ExplainJob *ej, const QsJob *job, const QsWhy *why)
{
	const QsShare *share = &qs->in.shares[job->share];
	int64		cap = share->capacity[job->unit];
	int64		wanted = 0;

	for (int i = 0; i < why->nlenders; i++)
		wanted += why->lenders[i].wanted;
	ej->blocked_by = QsBlockedName(why->must_borrow ? QS_BLOCKED_NO_BORROWABLE_SUPPLY :
									QS_BLOCKED_OWN_CAPACITY_LENT);
	if (why->must_borrow)
		appendStringInfo(&ej->detail, "It must borrow %lld x %s beyond quota share %s's own "
						 "%lld: the shares would borrow %lld in all, and the borrowable "
						 "supply is %lld (%lld unassigned, %lld idle in other shares that they "
						 "may lend; their own waiting jobs keep %lld more).",
						 (long long) (why->usage + job->count - cap), ej->row.capacity_unit,
						 share->name, (long long) cap, (long long) why->borrowed,
						 (long long) why->supply, (long long) why->unassigned,
						 (long long) (why->supply - why->unassigned - why->share_lends),
						 (long long) wanted);
	else
		appendStringInfo(&ej->detail, "Quota share %s's idle %s is lent to other shares "
						 "(they borrow %lld, the supply with this job is %lld); it is taken "
						 "back by preemption.", share->name, ej->row.capacity_unit,
						 (long long) why->borrowed, (long long) why->supply);
}

/*
 * DescribeAllowed fills blocked_by and detail when (I2) fails with the job:
 * its share would hold more than allowed(S,u).
 */
static void
DescribeAllowed(const QsQueueState *qs, ExplainJob *ej, const QsJob *job, const QsWhy *why)
{
	const QsShare *share = &qs->in.shares[job->share];
	StringInfo	detail = &ej->detail;

	ej->blocked_by = QsBlockedName(share->strategy == QS_LEND_AND_BORROW ? QS_BLOCKED_BORROW_LIMIT :
									QS_BLOCKED_OWN_CAPACITY_FULL);
	appendStringInfo(detail, "Quota share %s holds %lld x %s (its own capacity is %lld",
					 share->name, (long long) why->usage, ej->row.capacity_unit,
					 (long long) share->capacity[job->unit]);
	if (share->strategy == QS_LEND_AND_BORROW)
		appendStringInfo(detail, ", at most %lld with borrowing); it needs %d more.",
						 (long long) why->allowed, job->count);
	else
		appendStringInfo(detail, " and a %s share does not borrow); it needs %d more.",
						 QsStrategyName(share->strategy), job->count);
}

/*
 * Constraints tells a job's placement constraints, for explain's detail.
 */
static const char *
Constraints(const QsJob *job)
{
	if (job->per_host > 0 && job->same_label != NULL)
		return psprintf(", %d on each host, all with the same \"%s\"", job->per_host,
						job->same_label);
	if (job->per_host > 0)
		return psprintf(", %d on each host", job->per_host);
	if (job->same_label != NULL)
		return psprintf(", on hosts all with the same \"%s\"", job->same_label);
	return "";
}

/*
 * HostFigures adds to explain's keys the figures that decide whether a job
 * has a placement (scheduling.md 3.13): its unit's hosts, their largest
 * instances and largest free, the free instances in all, and the most it
 * could have were every host empty; with a same_label, per value of it
 * ("groups").  largest_agent (0.3's key) is the largest instances.
 */
static void
HostFigures(ExplainJob *ej, const QsJob *job, const QsWhy *why)
{
	QsHostFigures all = {0};

	for (int g = 0; g < why->ngroups; g++)
	{
		const QsHostFigures *f = &why->groups[g];

		all.nhosts += f->nhosts;
		all.largest = Max(all.largest, f->largest);
		all.largest_free = Max(all.largest_free, f->largest_free);
		all.free += f->free;
		all.fits = Max(all.fits, f->fits);
	}
	appendStringInfo(&ej->keys, ", \"hosts\": %d, \"largest_agent\": %lld, "
					 "\"largest_free\": %lld, \"free_instances\": %lld, \"most_placeable\": %lld",
					 all.nhosts, (long long) all.largest, (long long) all.largest_free,
					 (long long) all.free, (long long) all.fits);
	if (job->same_label == NULL)
		return;
	appendStringInfoString(&ej->keys, ", \"groups\": [");
	for (int g = 0; g < why->ngroups; g++)
	{
		const QsHostFigures *f = &why->groups[g];

		appendStringInfoString(&ej->keys, g > 0 ? ", {\"value\": " : "{\"value\": ");
		escape_json(&ej->keys, f->label_value);
		appendStringInfo(&ej->keys, ", \"hosts\": %d, \"largest\": %lld, \"largest_free\": %lld,"
						 " \"free_instances\": %lld, \"most_placeable\": %lld}", f->nhosts,
						 (long long) f->largest, (long long) f->largest_free,
						 (long long) f->free, (long long) f->fits);
	}
	appendStringInfoChar(&ej->keys, ']');
}

/*
 * DescribeCheck fills blocked_by, detail and the keys of the numbers from
 * the policy core's account of the invariant that keeps a RUNNABLE job
 * waiting (job: the policy's view of it, with its share and unit indexes).
 * VICTIMS_EXEMPT keeps the code it replaces as capacity_blocked_by.
 */
static void
DescribeCheck(const QsQueueState *qs, ExplainJob *ej, const QsJob *job, const QsWhy *why)
{
	StringInfo	detail = &ej->detail;

	switch (why->check)
	{
		case QS_CHECK_OK:
			ej->blocked_by = NULL;
			appendStringInfoString(detail, "Nothing keeps it from starting: the next pass dispatches it.");
			return;
		case QS_CHECK_ALLOWED:
			DescribeAllowed(qs, ej, job, why);
			break;
		case QS_CHECK_ENVIRONMENT:
			ej->blocked_by = QsBlockedName(QS_BLOCKED_ENVIRONMENT_FULL);
			appendStringInfo(detail, "The environment has %lld x %s, of which %lld are held; "
							 "it needs %d.", (long long) qs->in.units[job->unit].env_limit,
							 ej->row.capacity_unit, (long long) why->env_usage, job->count);
			break;
		case QS_CHECK_SUPPLY:
			DescribeSupply(qs, ej, job, why);
			break;
		case QS_CHECK_HOSTS:
			ej->blocked_by = QsBlockedName(QS_BLOCKED_WAITING_FOR_HOSTS);
			HostFigures(ej, job, why);
			appendStringInfo(detail, "The capacity rules would dispatch it, but no host has "
							 "room for it now: it needs %d x %s%s.", job->count,
							 ej->row.capacity_unit, Constraints(job));
			break;
	}
	CapacityKeys(qs, ej, job, why);
	if (why->in_future)
		appendStringInfoString(detail, " (The room there is now is promised to jobs that "
							   "preemption made room for.)");
	if (why->victims_exempt)
	{
		appendStringInfoString(&ej->keys, ", \"capacity_blocked_by\": ");
		escape_json(&ej->keys, ej->blocked_by);
		ej->blocked_by = QsBlockedName(QS_BLOCKED_VICTIMS_EXEMPT);
		ej->exempt_until = why->exempt_until;
		appendStringInfo(detail, " Preemption would make room for it, but the jobs it could "
						 "stop have not run their share's min_runtime yet; the earliest "
						 "exemption ends at %s.", timestamptz_to_str(why->exempt_until));
	}
}

/*
 * The jobs a job waits for (scheduling.md 3.17): those it depends on, an
 * array's counted whole, that have not SUCCEEDED, the first 100 by id.
 */
static QsQuery WaitingForQuery = {
	"SELECT coalesce(jsonb_agg(w.id ORDER BY w.id), '[]')::text, count(*)"
	"  FROM (SELECT d.id FROM quota_sched.job j, quota_sched.job d"
	"         WHERE j.id = $1 AND (d.id = ANY (j.depends_on) OR d.array_id = ANY (j.depends_on))"
	"           AND d.state <> 'SUCCEEDED' ORDER BY d.id LIMIT 100) w",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * DependencyHold fills blocked_by (DEPENDENCY), keys and detail of a job
 * that waits for jobs it depends on: waiting_for (their ids), and
 * dependency_failed when one of them FAILED (the next pass fails it).
 */
static void
DependencyHold(ExplainJob *ej, const QsJob *job)
{
	Datum		arg = Int64GetDatum(job->id);
	char	   *ids;

	QsQueryRun(&WaitingForQuery, &arg, NULL, true, 1);
	ids = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	ej->blocked_by = QsBlockedName(QS_BLOCKED_DEPENDENCY);
	appendStringInfo(&ej->keys, ", \"dependencies_waiting\": %d, \"waiting_for\": %s",
					 job->deps_waiting, ids);
	appendStringInfo(&ej->detail, "It depends on jobs that have not succeeded: %d job%s, "
					 "%s; it is not dispatched before they all have.", job->deps_waiting,
					 job->deps_waiting == 1 ? "" : "s", ids);
	if (job->dependency_failed != 0)
	{
		appendStringInfo(&ej->keys, ", \"dependency_failed\": " INT64_FORMAT,
						 job->dependency_failed);
		appendStringInfo(&ej->detail, " Job " INT64_FORMAT " it depends on failed: the next "
						 "pass fails it (DEPENDENCY_FAILED).", job->dependency_failed);
	}
}

/*
 * HeldBack fills blocked_by, keys and detail when the job is held back
 * whatever the capacity (scheduling.md 3.10, 3.17), and tells whether it
 * is: waiting for jobs it depends on, larger than the largest live, active agent of its unit, or in its
 * backoff after a claim timeout.
 */
static bool
HeldBack(const QsQueueState *qs, ExplainJob *ej, const QsJob *job)
{
	const QsUnit *unit = &qs->in.units[job->unit];

	switch (QsHeldBack(&qs->in, job))
	{
		case QS_HOLD_NONE:
			return false;
		case QS_HOLD_DEPENDENCY:
			DependencyHold(ej, job);
			return true;
		case QS_HOLD_BUDGET_EXHAUSTED:
			{
				const QsShare *share = &qs->in.shares[job->share];
				const char *ends = timestamptz_to_str(QsPeriodEnd(qs->in.now,
																  qs->periods[job->share]));

				ej->blocked_by = QsBlockedName(QS_BLOCKED_BUDGET_EXHAUSTED);
				appendStringInfo(&ej->keys, ", \"budget_hours\": %s, \"spent_hours\": %.3f,"
								 " \"budget_period\": \"%s\", \"period_end\": ",
								 QsBudgetText(share->budget[job->unit]), share->spent[job->unit] / 3600,
								 QsPeriodName(qs->periods[job->share]));
				escape_json(&ej->keys, ends);
				appendStringInfo(&ej->detail, "Share \"%s\" has spent its budget of %s "
								 "instance-hours of %s this period (%s): it is not dispatched until "
								 "the period ends at %s.", share->name,
								 QsBudgetText(share->budget[job->unit]), ej->row.capacity_unit,
								 QsPeriodName(qs->periods[job->share]), ends);
				return true;
			}
		case QS_HOLD_NO_AGENT_FITS:
			{
				QsWhy		why = QsExplainWait(&qs->in, job);

				ej->blocked_by = QsBlockedName(QS_BLOCKED_NO_AGENT_FITS);
				appendStringInfo(&ej->keys, ", \"instance_count\": %d", job->count);
				HostFigures(ej, job, &why);
				appendStringInfo(&ej->detail, "It needs %d x %s%s; the live, active agents of "
								 "job queue \"%s\" for that unit could give it at most %lld "
								 "were they all idle: it is not dispatched until more or larger "
								 "agents call agent_ready().", job->count,
								 ej->row.capacity_unit, Constraints(job), ej->row.job_queue,
								 (long long) QsPlacementMax(unit, job->per_host,
															job->same_label));
				return true;
			}
		case QS_HOLD_CLAIM_BACKOFF:
			ej->blocked_by = QsBlockedName(QS_BLOCKED_CLAIM_BACKOFF);
			appendStringInfoString(&ej->keys, ", \"backoff_until\": ");
			escape_json(&ej->keys, timestamptz_to_str(job->claim_backoff_until));
			appendStringInfo(&ej->keys, ", \"claim_requeues\": %d", job->claim_requeues);
			appendStringInfo(&ej->detail, "No agent claimed it within the claim timeout of job "
							 "queue \"%s\" (%d time%s): it is held back from dispatch until %s.",
							 ej->row.job_queue, job->claim_requeues,
							 job->claim_requeues == 1 ? "" : "s",
							 timestamptz_to_str(job->claim_backoff_until));
			return true;
	}
	return false;
}

/*
 * StrictHeadHeld fills blocked_by (STRICT_HEAD_HELD), keys and detail when
 * the job's share is STRICT and a job of its unit ahead of it is held back
 * (scheduling.md 3.2): the pass skips every later job of the unit, this
 * one included, until that job starts or ends.  The policy core finds it
 * (QsStrictHeadHeld); it is named by its id, and by its name only when the
 * caller may see it in quota_sched.job (SnapshotNames: a share without a
 * submit_role keeps each user to their own jobs), and its own reason is
 * told as explain tells it (HeldBack), in the object "strict_head".
 */
static bool
StrictHeadHeld(const QsQueueState *qs, ExplainJob *ej, const QsJob *job)
{
	ExplainJob	head;
	QsQueueEntry entry;
	bool		name_null;
	Datum		name;

	memset(&head, 0, sizeof(head));
	if (QsStrictHeadHeld(&qs->in, job, QS_QUEUE_HORIZON, &entry.job) == QS_HOLD_NONE)
		return false;
	head.row = ej->row;			/* the same queue and unit */
	head.row.job = entry.job;
	initStringInfo(&head.detail);
	initStringInfo(&head.keys);
	HeldBack(qs, &head, &entry.job);
	name = SnapshotNames(ej->caller, &entry, 1, &name_null)[0];

	ej->blocked_by = QsBlockedName(QS_BLOCKED_STRICT_HEAD_HELD);
	appendStringInfo(&ej->keys, ", \"strict_head\": {\"job_id\": " INT64_FORMAT ", \"name\": ",
					 entry.job.id);
	if (name_null)
		appendStringInfoString(&ej->keys, "null");
	else
		escape_json(&ej->keys, TextDatumGetCString(name));
	appendStringInfo(&ej->keys, ", \"blocked_by\": \"%s\"%s, \"detail\": ",
					 head.blocked_by, head.keys.data);
	escape_json(&ej->keys, head.detail.data);
	appendStringInfoChar(&ej->keys, '}');
	appendStringInfo(&ej->detail, "Quota share \"%s\" queues %s: its jobs of %s start in "
					 "share order, and job " INT64_FORMAT, ej->row.quota_share,
					 QsQueueingName(QS_STRICT), ej->row.capacity_unit, entry.job.id);
	if (!name_null)
		appendStringInfo(&ej->detail, " (%s)", TextDatumGetCString(name));
	appendStringInfo(&ej->detail, ", ahead of this one, is held back (%s): no later job of "
					 "the unit starts before it does. Job " INT64_FORMAT ": %s",
					 head.blocked_by, entry.job.id, head.detail.data);
	return true;
}

/*
 * ExplainRunnable explains why a RUNNABLE job waits, from its queue's
 * state as a pass would read it now, and finds its position in the queue.
 */
static void
ExplainRunnable(ExplainJob *ej)
{
	QsQueueState qs;
	QsJob		job = ej->row.job;

	if (!QsLoadQueueState(&qs, ej->row.job_queue, GetCurrentTransactionStartTimestamp(), false))
		elog(ERROR, "quota_sched: job queue \"%s\" vanished", ej->row.job_queue);
	job.share = QsShareIndex(&qs, ej->row.quota_share);
	job.unit = QsUnitIndex(&qs, ej->row.capacity_unit);
	job.promised_at = QS_NO_TIME;
	if (KeptFromQueue(ej) || WaitsForever(&qs, ej))
		;
	else if (job.share < 0)
	{
		ej->blocked_by = QsBlockedName(QS_BLOCKED_SHARE_MISSING);
		appendStringInfo(&ej->detail, "Its quota share \"%s\" does not exist (its row was "
						 "removed behind the foreign key, as a restore in replica mode can): "
						 "no pass dispatches it until an admin creates the share again or "
						 "deletes the job.", ej->row.quota_share);
	}
	else if (job.unit < 0)
		appendStringInfoString(&ej->detail, "It changed while being explained; ask again.");
	else if (!HeldBack(&qs, ej, &job) && !StrictHeadHeld(&qs, ej, &job))
	{
		QsWhy		why = QsExplainWait(&qs.in, &job);

		DescribeCheck(&qs, ej, &job, &why);
	}
	ej->position_in_queue = QsQueuePosition(&qs.in, job.id, QS_QUEUE_HORIZON);
	QsFreeQueueState(&qs);
}

/*
 * The registered agents of a job's queue and unit (quota_sched.agent), and
 * how many of them cannot take it: DRAINING, ACTIVE but not live (live:
 * last_seen + lease, 60 s when it took none, after now, as the view
 * agents says), live ACTIVE but with fewer instances than it needs.  With
 * the job's scheduled_at and the whole seconds since.
 */
static QsQuery AgentCountsQuery = {
	"SELECT j.scheduled_at, floor(extract(epoch FROM now() - j.scheduled_at))::bigint,"
	"       count(a.name),"
	"       count(a.name) FILTER (WHERE a.state = 'DRAINING'),"
	"       count(a.name) FILTER (WHERE a.state = 'ACTIVE' AND NOT a.live),"
	"       count(a.name) FILTER (WHERE a.state = 'ACTIVE' AND a.live"
	"                               AND a.instances < j.instance_count)"
	"  FROM quota_sched.job j"
	"  LEFT JOIN (SELECT name, job_queue, capacity_unit, instances, state,"
	"                    last_seen + coalesce(lease, interval '60 seconds') > now() AS live"
	"               FROM quota_sched.agent) a"
	"    ON a.job_queue = j.job_queue AND a.capacity_unit = j.capacity_unit"
	" WHERE j.id = $1 GROUP BY j.id, j.scheduled_at",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * The first $2 (by name) of the live ACTIVE agents registered for a job's
 * queue and unit with no bound of instances or at least the job's, each
 * with its login, bound and the instances its jobs hold (as the view
 * agents counts them), and how many there are in all.
 */
static QsQuery AgentListQuery = {
	"SELECT a.name, a.login, a.instances,"
	"       (SELECT coalesce(sum(h.instance_count), 0) FROM quota_sched.job h"
	"         WHERE h.agent = a.name AND h.state IN ('SCHEDULED', 'STARTING', 'RUNNING')),"
	"       count(*) OVER ()"
	"  FROM quota_sched.job j, quota_sched.agent a"
	" WHERE j.id = $1 AND a.job_queue = j.job_queue AND a.capacity_unit = j.capacity_unit"
	"   AND a.state = 'ACTIVE'"
	"   AND a.last_seen + coalesce(a.lease, interval '60 seconds') > now()"
	"   AND (a.instances IS NULL OR a.instances >= j.instance_count)"
	" ORDER BY a.name LIMIT $2",
	2, {INT8OID, INT4OID}, SPI_OK_SELECT
};

/*
 * AgentList appends the agents that can take a job to explain's keys (the
 * array "list" of the object "agents", with the logins for admins only, as
 * QUEUE_LOCKED shows pids to admins only, and not_listed) and their names
 * to *names, with how many more there are.
 */
static void
AgentList(ExplainJob *ej, StringInfo names)
{
	Datum		args[2] = {Int64GetDatum(ej->row.job.id), Int32GetDatum(QS_EXPLAIN_LIST_MAX)};
	uint64		n = QsQueryRun(&AgentListQuery, args, NULL, true, 0);
	StringInfo	k = &ej->keys;
	int64		total = 0;
	bool		isnull;

	appendStringInfoString(k, ", \"list\": [");
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *name = SPI_getvalue(tup, desc, 1);
		char	   *instances = SPI_getvalue(tup, desc, 3);

		appendStringInfoString(k, i == 0 ? "{\"agent\": " : ", {\"agent\": ");
		escape_json(k, name);
		appendStringInfo(k, ", \"instances\": %s, \"held_instances\": %s",
						 instances ? instances : "null", SPI_getvalue(tup, desc, 4));
		if (ej->admin)
		{
			appendStringInfoString(k, ", \"login\": ");
			escape_json(k, SPI_getvalue(tup, desc, 2));
		}
		appendStringInfoChar(k, '}');
		appendStringInfo(names, "%s%s", i == 0 ? "" : ", ", name);
		total = DatumGetInt64(SPI_getbinval(tup, desc, 5, &isnull));
	}
	appendStringInfo(k, "], \"not_listed\": " INT64_FORMAT "}", total - (int64) n);
	if (total > (int64) n)
		appendStringInfo(names, " and " INT64_FORMAT " more", total - (int64) n);
}

/*
 * AgentKeys fills detail and the keys of a SCHEDULED job no agent claimed
 * yet: scheduled_at, waiting_seconds, and the object "agents" with the
 * counts of the agents registered for its queue and unit (registered,
 * draining, not_live, too_small, can_take) and the list of those that can
 * take it.
 */
static void
AgentKeys(ExplainJob *ej)
{
	Datum		arg = Int64GetDatum(ej->row.job.id);
	int64		c[5];
	StringInfoData names;
	bool		isnull;
	HeapTuple	tup;
	TupleDesc	desc;
	Datum		scheduled_at;

	if (QsQueryRun(&AgentCountsQuery, &arg, NULL, true, 1) != 1)
		elog(ERROR, "quota_sched: could not read job " INT64_FORMAT, ej->row.job.id);
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	scheduled_at = SPI_getbinval(tup, desc, 1, &isnull);
	if (isnull)
		elog(ERROR, "quota_sched: SCHEDULED job " INT64_FORMAT " has no scheduled_at", ej->row.job.id);
	for (int i = 0; i < 5; i++)
		c[i] = DatumGetInt64(SPI_getbinval(tup, desc, i + 2, &isnull));
	appendStringInfoString(&ej->keys, ", \"scheduled_at\": ");
	escape_json(&ej->keys, timestamptz_to_str(DatumGetTimestampTz(scheduled_at)));
	appendStringInfo(&ej->keys, ", \"waiting_seconds\": " INT64_FORMAT ", \"agents\": "
					 "{\"registered\": " INT64_FORMAT ", \"draining\": " INT64_FORMAT
					 ", \"not_live\": " INT64_FORMAT ", \"too_small\": " INT64_FORMAT
					 ", \"can_take\": " INT64_FORMAT, c[0], c[1], c[2], c[3], c[4],
					 c[1] - c[2] - c[3] - c[4]);
	appendStringInfo(&ej->detail, "It was dispatched " INT64_FORMAT " s ago; no agent has "
					 "claimed it yet.", c[0]);
	initStringInfo(&names);
	AgentList(ej, &names);
	if (c[1] == 0)
		appendStringInfo(&ej->detail, " No agent is registered (agent_ready) for job queue "
						 "\"%s\" and unit %s: any agent that claims from the queue may take it.",
						 ej->row.job_queue, ej->row.capacity_unit);
	else if (names.len > 0)
		appendStringInfo(&ej->detail, " Live agents that can take it: %s.", names.data);
	else
		appendStringInfo(&ej->detail, " None of the " INT64_FORMAT " agents registered for "
						 "job queue \"%s\" and unit %s can take it: " INT64_FORMAT " draining, "
						 INT64_FORMAT " not live, " INT64_FORMAT " with fewer than %d instances.",
						 c[1], ej->row.job_queue, ej->row.capacity_unit, c[2], c[3], c[4],
						 ej->row.job.count);
}

/* The parts of a job's current placement, in rank order (PartKeys). */
static QsQuery PartsOfJobQuery = {
	"SELECT floor(extract(epoch FROM now() - j.scheduled_at))::bigint, p.rank, p.agent,"
	"       p.instances, p.state"
	"  FROM quota_sched.job j JOIN quota_sched.job_part p"
	"    ON p.job_id = j.id AND p.placed_at = j.scheduled_at"
	" WHERE j.id = $1 ORDER BY p.rank",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * PartKeys tells of a SCHEDULED job placed on hosts (scheduling.md 3.14)
 * how long ago it was dispatched and its parts ("parts": rank, agent,
 * instances, state): it starts once every part is claimed, and the detail
 * names those that are not.
 */
static void
PartKeys(ExplainJob *ej)
{
	Datum		arg = Int64GetDatum(ej->row.job.id);
	uint64		n = QsQueryRun(&PartsOfJobQuery, &arg, NULL, true, 0);
	StringInfoData waiting;
	bool		isnull;

	initStringInfo(&waiting);
	appendStringInfo(&ej->keys, ", \"waiting_seconds\": %s, \"parts\": [",
					 n > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : "0");
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		char	   *agent = SPI_getvalue(tup, desc, 3);
		char	   *state = SPI_getvalue(tup, desc, 5);

		appendStringInfo(&ej->keys, "%s{\"rank\": %d, \"agent\": ", i > 0 ? ", " : "",
						 DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull)));
		escape_json(&ej->keys, agent);
		appendStringInfo(&ej->keys, ", \"instances\": %s, \"state\": \"%s\"}",
						 SPI_getvalue(tup, desc, 4), state);
		if (strcmp(state, QsPartStateName(QS_PART_PLACED)) == 0)
			appendStringInfo(&waiting, "%s%s", waiting.len > 0 ? ", " : "", agent);
	}
	appendStringInfoChar(&ej->keys, ']');
	appendStringInfo(&ej->detail, "It was dispatched %s s ago on " UINT64_FORMAT " host%s; it "
					 "starts once every part is claimed.  Not claimed yet: %s.",
					 n > 0 ? SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1) : "0",
					 n, n == 1 ? "" : "s", waiting.len > 0 ? waiting.data : "none");
}

/*
 * ExplainNotRunnable says what became of a job that does not wait: it
 * waits for an agent, runs, or has ended.
 */
static void
ExplainNotRunnable(ExplainJob *ej)
{
	const QsJobRow *row = &ej->row;
	const char *stop = QsStopName(row->job.stop);

	if (row->state == QS_SCHEDULED)
	{
		ej->blocked_by = QsBlockedName(QS_BLOCKED_WAITING_FOR_AGENT);
		if (row->job.nparts > 0)
			PartKeys(ej);
		else
			AgentKeys(ej);
	}
	else if (row->agent != NULL && (row->state == QS_STARTING || row->state == QS_RUNNING))
		appendStringInfo(&ej->detail, "Agent %s holds it%s%s.", row->agent,
						 stop ? "; a stop was requested: " : "", stop ? stop : "");
	else
		appendStringInfo(&ej->detail, "It has ended%s%s.", row->status_reason ? ": " : "",
						 row->status_reason ? row->status_reason : "");
}

/*
 * ExplainJson returns explain()'s answer: job_id, state, quota_share,
 * position_in_share, position_in_queue, blocked_by, exempt_until (with
 * VICTIMS_EXEMPT only), the keys of the numbers behind blocked_by
 * (ExplainJob.keys) and detail.
 */
static Datum
ExplainJson(const ExplainJob *ej)
{
	bool		runnable = ej->row.state == QS_RUNNABLE;
	StringInfoData json;

	initStringInfo(&json);
	appendStringInfo(&json, "{\"job_id\": " INT64_FORMAT ", \"state\": ", ej->row.job.id);
	escape_json(&json, QsJobStateName(ej->row.state));
	appendStringInfoString(&json, ", \"quota_share\": ");
	escape_json(&json, ej->row.quota_share);
	/* a job waiting for dependencies is in no share's order (3.17) */
	if (runnable && !QsWaitsForDependencies(&ej->row.job))
		appendStringInfo(&json, ", \"position_in_share\": " INT64_FORMAT, ej->position_in_share);
	else
		appendStringInfoString(&json, ", \"position_in_share\": null");
	if (runnable && ej->position_in_queue > 0)
		appendStringInfo(&json, ", \"position_in_queue\": %d", ej->position_in_queue);
	else
		appendStringInfoString(&json, ", \"position_in_queue\": null");
	appendStringInfoString(&json, ", \"blocked_by\": ");
	if (ej->blocked_by)
		escape_json(&json, ej->blocked_by);
	else
		appendStringInfoString(&json, "null");
	if (ej->exempt_until != 0)
	{
		appendStringInfoString(&json, ", \"exempt_until\": ");
		escape_json(&json, timestamptz_to_str(ej->exempt_until));
	}
	appendStringInfoString(&json, ej->keys.data);
	appendStringInfoString(&json, ", \"detail\": ");
	escape_json(&json, ej->detail.data);
	appendStringInfoChar(&json, '}');
	return DirectFunctionCall1(jsonb_in, CStringGetDatum(json.data));
}

/*
 * qs_explain(job_id) RETURNS jsonb: why a job waits (scheduling.md 7).  It reads
 * the job (without locking it, in a new snapshot, as a pass reads) and its
 * queue as the extension's owner, and writes nothing.
 */
static Datum
DoExplain(PG_FUNCTION_ARGS)
{
	Oid			caller = GetUserId();
	int64		job_id;
	QsSavedUser saved;
	ExplainJob	ej;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job_id must not be null")));
	job_id = PG_GETARG_INT64(0);
	memset(&ej, 0, sizeof(ej));
	initStringInfo(&ej.detail);
	initStringInfo(&ej.keys);
	QsBecomeOwner(QsExtensionOwner(), &saved);
	QsCheckSchemaVersion();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (!QsReadJobPosition(job_id, &ej.row, &ej.position_in_share))
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", job_id)));
	RequireJobAccess(caller, &ej.row, "explain");
	ej.admin = QsIsAdmin(caller);
	ej.caller = caller;
	if (ej.row.state == QS_RUNNABLE)
		ExplainRunnable(&ej);
	else
		ExplainNotRunnable(&ej);
	SPI_finish();
	QsRestoreUser(&saved);
	PG_RETURN_DATUM(ExplainJson(&ej));
}

/*
 * SnapshotNames returns the names of the n jobs listed, in their order,
 * as the caller may see them in quota_sched.job by its row-level security
 * (a user: their own jobs and their teams'; agents and admins: every job):
 * null for any other job, and for every job if the caller may not read the
 * table.  It runs the read as the caller, keeping the owner's search_path
 * and row_security on (the function's GUC level), and becomes the owner
 * again after.
 */
static Datum *
SnapshotNames(Oid caller, const QsQueueEntry *entries, int n, bool *nulls)
{
	Datum	   *names = palloc0(sizeof(Datum) * Max(n, 1));
	Datum	   *ids = palloc(sizeof(Datum) * Max(n, 1));
	Oid			owner;
	int			sec_context;
	Oid			argtype = INT8ARRAYOID;
	Datum		arg;
	Oid			job = get_relname_relid("job", get_namespace_oid(QS_SCHEMA, false));

	for (int i = 0; i < n; i++)
	{
		nulls[i] = true;
		ids[i] = Int64GetDatum(entries[i].job.id);
	}
	if (n == 0 || pg_class_aclcheck(job, caller, ACL_SELECT) != ACLCHECK_OK)
		return names;
	arg = PointerGetDatum(construct_array(ids, n, INT8OID, sizeof(int64),
										  FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
	(void) set_config_option("row_security", "on", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	GetUserIdAndSecContext(&owner, &sec_context);
	SetUserIdAndSecContext(caller, sec_context);
	if (SPI_execute_with_args("SELECT j.name FROM unnest($1) WITH ORDINALITY AS e(id, n)"
							  " LEFT JOIN quota_sched.job j ON j.id = e.id ORDER BY e.n",
							  1, &argtype, &arg, NULL, true, 0) != SPI_OK_SELECT ||
		SPI_processed != (uint64) n)
		elog(ERROR, "quota_sched: reading the names of the queue's jobs failed");
	SetUserIdAndSecContext(owner, sec_context);
	for (int i = 0; i < n; i++)
		names[i] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &nulls[i]);
	return names;
}

/*
 * SnapshotPlacement sets the hosts (agents, in rank order) and instances of
 * the placement a job of queue_snapshot would have if dispatched now.
 */
static void
SnapshotPlacement(const QsQueueEntry *e, Datum *hosts, Datum *instances)
{
	QsArray		h;
	QsArray		c;

	QsArrayInit(&h, TEXTOID, e->nparts);
	QsArrayInit(&c, INT4OID, e->nparts);
	for (int i = 0; i < e->nparts; i++)
	{
		QsArrayPush(&h, CStringGetTextDatum(e->parts[i].host), false);
		QsArrayPush(&c, Int32GetDatum(e->parts[i].count), false);
	}
	*hosts = QsArrayDatum(&h);
	*instances = QsArrayDatum(&c);
}

/*
 * SnapshotRows puts the rows of queue_snapshot into the function's result:
 * position (null past the horizon), job, share, priority, queued_at, unit,
 * instance count, name (SnapshotNames), and in a placed unit the hosts and
 * instances of the placement the job would have if dispatched now (null:
 * none, or a unit not placed).
 */
static void
SnapshotRows(ReturnSetInfo *rsinfo, const QsQueueState *qs, const QsQueueEntry *entries,
			 int n, Oid caller)
{
	bool	   *name_nulls = palloc(sizeof(bool) * Max(n, 1));
	Datum	   *names = SnapshotNames(caller, entries, n, name_nulls);

	for (int i = 0; i < n; i++)
	{
		const QsJob *job = &entries[i].job;
		Datum		values[10];
		bool		nulls[10] = {entries[i].position == 0, false, false, false, false,
		false, false, name_nulls[i], entries[i].nparts == 0, entries[i].nparts == 0};

		values[0] = Int32GetDatum(entries[i].position);
		values[1] = Int64GetDatum(job->id);
		values[2] = CStringGetTextDatum(qs->in.shares[job->share].name);
		values[3] = Int32GetDatum(job->priority);
		values[4] = TimestampTzGetDatum(job->queued_at);
		values[5] = CStringGetTextDatum(qs->in.units[job->unit].name);
		values[6] = Int32GetDatum(job->count);
		values[7] = names[i];
		SnapshotPlacement(&entries[i], &values[8], &values[9]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * qs_queue_snapshot(job_queue, max_jobs) RETURNS TABLE (queue_position int,
 * job_id bigint, quota_share text, priority int, queued_at timestamptz,
 * capacity_unit text, instance_count int, name text, hosts text[],
 * host_instances int[]): the front of the queue in dispatch order, then the head of each share not among them (AWS
 * GetJobQueueSnapshot); a head's position is null when it is further than
 * 10000 jobs back.  Every row has the job's unit and size (the order mixes
 * units); the name only where the caller may see the job (SnapshotNames).
 */
Datum
qs_queue_snapshot(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			caller = GetUserId();
	char	   *queue;
	int			max_jobs;
	QsSavedUser saved;
	QsQueueState qs;
	QsQueueEntry *entries;
	int			n;

	for (int a = 0; a < 2; a++)
		if (PG_ARGISNULL(a))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s must not be null", a == 0 ? "job_queue" : "max_jobs")));
	max_jobs = PG_GETARG_INT32(1);
	if (max_jobs < 1 || max_jobs > QS_QUEUE_HORIZON)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid max_jobs %d", max_jobs),
				 errdetail("max_jobs is from 1 to %d.", QS_QUEUE_HORIZON)));
	queue = text_to_cstring(PG_GETARG_TEXT_PP(0));
	InitMaterializedSRF(fcinfo, 0);

	QsBecomeOwner(QsExtensionOwner(), &saved);
	QsCheckSchemaVersion();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (!QsLoadQueueState(&qs, queue, GetCurrentTransactionStartTimestamp(), false))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("job queue \"%s\" does not exist", QsShortValue(queue))));
	entries = palloc(sizeof(QsQueueEntry) * (max_jobs + qs.in.nshares + 1));
	n = QsQueueOrder(&qs.in, max_jobs, QS_QUEUE_HORIZON, entries);
	SnapshotRows(rsinfo, &qs, entries, n, caller);
	QsFreeQueueState(&qs);
	SPI_finish();
	QsRestoreUser(&saved);
	return (Datum) 0;
}
