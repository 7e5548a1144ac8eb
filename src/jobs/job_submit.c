/*-------------------------------------------------------------------------
 *
 * job_submit.c
 *		The BEFORE INSERT trigger of quota_sched.job: validation of a
 *		submission against the configuration, the defaults taken from the
 *		payload's ResourceConfig, and the system columns of a new job.
 *
 * System columns have no defaults in the table, so a value the submitter
 * gives is visible here and refused.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/plannodes.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "config_cache.h"
#include "identity.h"
#include "job_columns.h"
#include "job_dependencies.h"
#include "job_fit.h"
#include "job_submit.h"
#include "jsonb_util.h"
#include "query.h"
#include "constants.h"
#include "words.h"

PG_FUNCTION_INFO_V1(qs_job_before_insert);

#define QS_MAX_ATTEMPTS 10
#define QS_MAX_ARRAY_SIZE 10000
/* room for an array index's suffix, "[9999]" */
#define QS_ARRAY_SUFFIX_LEN 6
#define QS_MAX_LEASE_LOSSES 10
#define QS_MAX_TOKEN_LEN 255

/* A job tuple split into values and nulls, in JobColumn order. */
typedef struct JobValues
{
	Datum		values[JC_COUNT];
	bool		nulls[JC_COUNT];
} JobValues;

/*
 * ReadJobValues splits a tuple of quota_sched.job into a JobValues, in one
 * pass over the tuple: heap_getattr column by column walks it from its
 * start for every column past the first null or varlena, which every
 * submission has (bench/submit).  The values point into the tuple, as
 * heap_getattr's do.  A tuple being inserted has all its attributes.
 */
static void
ReadJobValues(HeapTuple tuple, TupleDesc desc, JobValues *row)
{
	Datum	   *values = palloc(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc(desc->natts * sizeof(bool));

	heap_deform_tuple(tuple, desc, values, nulls);
	for (int c = 0; c < JC_COUNT; c++)
	{
		int			i = JobAttnum(desc, c) - 1;

		row->values[c] = values[i];
		row->nulls[c] = nulls[i];
	}
	pfree(values);
	pfree(nulls);
}

/*
 * RequireColumn raises not_null_violation when a job leaves out a column
 * that it needs.
 */
static void
RequireColumn(JobValues *row, JobColumn c)
{
	if (row->nulls[c])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a job needs a %s", JobColumnNames[c])));
}

/*
 * InstanceCountFromJson returns payload->'ResourceConfig'->'InstanceCount'
 * as an instance count, or raises check_violation naming the value.
 */
static int32
InstanceCountFromJson(JsonbValue *v)
{
	Datum		n;
	char	   *shown;

	if (v->type == jbvNumeric)
	{
		n = NumericGetDatum(v->val.numeric);
		if (DatumGetBool(DirectFunctionCall2(numeric_eq, n,
											 DirectFunctionCall2(numeric_trunc, n,
																 Int32GetDatum(0)))) &&
			DatumGetBool(DirectFunctionCall2(numeric_ge, n,
											 DirectFunctionCall1(int4_numeric,
																 Int32GetDatum(1)))) &&
			DatumGetBool(DirectFunctionCall2(numeric_le, n,
											 DirectFunctionCall1(int4_numeric,
																 Int32GetDatum(PG_INT32_MAX)))))
			return DatumGetInt32(DirectFunctionCall1(numeric_int4, n));
	}
	{
		JsonbValue *copy = palloc(sizeof(JsonbValue));
		Jsonb	   *jb;

		*copy = *v;
		jb = JsonbValueToJsonb(copy);
		shown = JsonbToCString(NULL, &jb->root, VARSIZE(jb));
	}
	ereport(ERROR,
			(errcode(ERRCODE_CHECK_VIOLATION),
			 errmsg("invalid payload ResourceConfig.InstanceCount %s of a job", shown),
			 errdetail("InstanceCount is an integer from 1 to 2147483647.")));
	pg_unreachable();
}

/*
 * ApplyResourceConfig fills capacity_unit and instance_count that the
 * submitter left out from payload->'ResourceConfig' (InstanceType and
 * InstanceCount, as in a SageMaker CreateTrainingJob request), and refuses
 * a column that disagrees with it: which one the job runs with would
 * otherwise be a guess.  instance_count is 1 when neither gives it.
 */
static void
ApplyResourceConfig(JobValues *row)
{
	JsonbValue *rc = NULL;
	JsonbValue *v;

	if (!row->nulls[JC_PAYLOAD])
		rc = QsJsonbField(&DatumGetJsonbP(row->values[JC_PAYLOAD])->root,
						"ResourceConfig");
	if (rc != NULL && rc->type != jbvBinary)
		rc = NULL;

	if (rc != NULL && (v = QsJsonbField(rc->val.binary.data, "InstanceType")) != NULL)
	{
		text	   *type;

		if (v->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("payload ResourceConfig.InstanceType of a job is not a string")));
		type = cstring_to_text_with_len(v->val.string.val, v->val.string.len);
		if (row->nulls[JC_CAPACITY_UNIT])
		{
			row->values[JC_CAPACITY_UNIT] = PointerGetDatum(type);
			row->nulls[JC_CAPACITY_UNIT] = false;
		}
		else if (strcmp(TextDatumGetCString(row->values[JC_CAPACITY_UNIT]),
						text_to_cstring(type)) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("capacity_unit \"%s\" of a job disagrees with its payload's "
							"ResourceConfig.InstanceType \"%s\"",
							QsShortValue(TextDatumGetCString(row->values[JC_CAPACITY_UNIT])),
							QsShortValue(text_to_cstring(type))),
					 errhint("Give the capacity unit once, or the same in both.")));
	}

	if (rc != NULL && (v = QsJsonbField(rc->val.binary.data, "InstanceCount")) != NULL)
	{
		int32		count = InstanceCountFromJson(v);

		if (row->nulls[JC_INSTANCE_COUNT])
		{
			row->values[JC_INSTANCE_COUNT] = Int32GetDatum(count);
			row->nulls[JC_INSTANCE_COUNT] = false;
		}
		else if (DatumGetInt32(row->values[JC_INSTANCE_COUNT]) != count)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("instance_count %d of a job disagrees with its payload's "
							"ResourceConfig.InstanceCount %d",
							DatumGetInt32(row->values[JC_INSTANCE_COUNT]), count),
					 errhint("Give the instance count once, or the same in both.")));
	}
	if (row->nulls[JC_INSTANCE_COUNT])
	{
		row->values[JC_INSTANCE_COUNT] = Int32GetDatum(1);
		row->nulls[JC_INSTANCE_COUNT] = false;
	}
}

/*
 * CheckPayloadSize refuses a payload longer than 1 MiB as text.  The text
 * is measured itself: no bound on it follows from the binary size (a number
 * such as 1e130000 is a few bytes stored and 130001 digits as text).
 */
static void
CheckPayloadSize(JobValues *row)
{
	Jsonb	   *payload;
	char	   *text;
	size_t		len;

	if (row->nulls[JC_PAYLOAD])
		return;
	payload = DatumGetJsonbP(row->values[JC_PAYLOAD]);
	text = JsonbToCString(NULL, &payload->root, VARSIZE(payload));
	len = strlen(text);
	pfree(text);
	if (len > QS_MAX_PAYLOAD_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("payload of job is %zu bytes as text, more than the limit of %d",
						len, QS_MAX_PAYLOAD_BYTES),
				 errhint("Keep large inputs elsewhere and pass a reference in the payload.")));
}

/*
 * JsonTypeName names the JSON type of a value as jsonb_typeof() does, for
 * the messages about a payload's command.
 */
static const char *
JsonTypeName(JsonbValue *v)
{
	switch (v->type)
	{
		case jbvNull:
			return "null";
		case jbvString:
			return "string";
		case jbvNumeric:
			return "number";
		case jbvBool:
			return "boolean";
		case jbvBinary:
			return JsonContainerIsArray(v->val.binary.data) ? "array" : "object";
		default:
			return "object";
	}
}

/*
 * CheckCommand refuses (check_violation) a payload whose "command" is not
 * a non-empty JSON array of strings: the agent runs it as an argv, and
 * would otherwise fail the job only once it has claimed it (agent/db.c
 * gives the same reasons).  A payload without "command" is allowed: an
 * external launcher may need none.  It reads only the command's elements.
 */
static void
CheckCommand(JobValues *row)
{
	JsonbValue *cmd;
	JsonbContainer *argv;
	uint32		n;

	if (row->nulls[JC_PAYLOAD])
		return;
	cmd = QsJsonbField(&DatumGetJsonbP(row->values[JC_PAYLOAD])->root, "command");
	if (cmd == NULL)
		return;
	if (cmd->type != jbvBinary || !JsonContainerIsArray(cmd->val.binary.data))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("payload command of a job is a JSON %s, not an array of strings",
						JsonTypeName(cmd)),
				 errhint("Give the command as an argv, e.g. {\"command\": [\"python\", \"train.py\"]}.")));
	argv = cmd->val.binary.data;
	n = JsonContainerSize(argv);
	if (n == 0)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("payload command of a job is an empty array"),
				 errhint("Give the program and its arguments, e.g. [\"python\", \"train.py\"], "
						 "or leave \"command\" out.")));
	for (uint32 i = 0; i < n; i++)
	{
		JsonbValue *v = getIthJsonbValueFromContainer(argv, i);

		if (v->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("payload command[%u] of a job is a JSON %s, not a string",
							i, JsonTypeName(v)),
					 errdetail("The command is an array of strings, an argv: command[0] is the program.")));
		pfree(v);
	}
}

/*
 * CheckCapacity checks the capacity a job asks for, as given or taken from
 * its payload's ResourceConfig (ApplyResourceConfig): a valid capacity
 * unit and a positive instance count.  That the unit is in the queue's
 * environment needs the configuration (CheckSubmitTarget).
 */
static void
CheckCapacity(JobValues *row)
{
	text	   *unit;

	if (row->nulls[JC_CAPACITY_UNIT])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a job needs a capacity_unit"),
				 errhint("Set capacity_unit, or InstanceType in payload->'ResourceConfig'.")));
	unit = DatumGetTextPP(row->values[JC_CAPACITY_UNIT]);
	if (!QsValidUnitName(VARDATA_ANY(unit), VARSIZE_ANY_EXHDR(unit)))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid capacity unit \"%s\" of a job",
						QsShortValue(text_to_cstring(unit))),
				 errdetail("Capacity units are 1 to " CppAsString2(QS_MAX_NAME_LEN) " characters of A-Z, a-z, 0-9, \".\", \"_\" and \"-\".")));
	CheckIntRange("instance_count", DatumGetInt32(row->values[JC_INSTANCE_COUNT]), 1, PG_INT32_MAX);
}

/*
 * CheckPlacementColumns checks the job's placement constraints (scheduling.md
 * 3.13), once instance_count is known (given, from the payload, or 1):
 * instances_per_host from 1 to instance_count and a divisor of it, and
 * same_label a label key.  Both may be null.  In C, without a query: every
 * submission passes here.  The job table's CHECKs say the same.
 */
static void
CheckPlacementColumns(JobValues *row)
{
	int32		count = DatumGetInt32(row->values[JC_INSTANCE_COUNT]);

	if (!row->nulls[JC_INSTANCES_PER_HOST])
	{
		int32		per_host = DatumGetInt32(row->values[JC_INSTANCES_PER_HOST]);

		CheckIntRange("instances_per_host", per_host, 1, count);
		if (count % per_host != 0)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("instances_per_host %d does not divide instance_count %d",
							per_host, count),
					 errdetail("A job runs instances_per_host instances on each of "
							   "instance_count / instances_per_host hosts."),
					 errhint("Choose a divisor of %d, or leave instances_per_host null "
							 "for any split.", count)));
	}
	if (!row->nulls[JC_SAME_LABEL])
	{
		char	   *key = TextDatumGetCString(row->values[JC_SAME_LABEL]);

		if (!QsLabelKeyValid(key))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("invalid same_label \"%s\" of a job", QsShortValue(key)),
					 errdetail("same_label is a label key: 1 to "
							   CppAsString2(QS_MAX_LABEL_KEY_LEN) " characters of a-z, "
							   "0-9, \"_\", \".\" and \"-\"."),
					 errhint("Leave same_label null if the job's hosts need not share "
							 "a label.")));
	}
}

/*
 * CheckSubmitterValues checks every value a submitter may set, except those
 * that need the configuration (CheckSubmitTarget).
 */
static void
CheckSubmitterValues(JobValues *row)
{
	RequireColumn(row, JC_NAME);
	QsCheckName(DatumGetTextPP(row->values[JC_NAME]), "job");
	RequireColumn(row, JC_JOB_QUEUE);
	RequireColumn(row, JC_QUOTA_SHARE);
	RequireColumn(row, JC_PRIORITY);
	CheckIntRange("priority", DatumGetInt32(row->values[JC_PRIORITY]), 0, QS_MAX_PRIORITY);
	RequireColumn(row, JC_MAX_ATTEMPTS);
	CheckIntRange("max_attempts", DatumGetInt32(row->values[JC_MAX_ATTEMPTS]), 1, QS_MAX_ATTEMPTS);
	if (!row->nulls[JC_MAX_LEASE_LOSSES])
		CheckIntRange("max_lease_losses", DatumGetInt32(row->values[JC_MAX_LEASE_LOSSES]), 0,
					  QS_MAX_LEASE_LOSSES);
	if (!row->nulls[JC_PREEMPTION_RETRIES])
		CheckIntRange("preemption_retries", DatumGetInt32(row->values[JC_PREEMPTION_RETRIES]),
					  0, PG_INT32_MAX);
	if (!row->nulls[JC_TIMEOUT])
		QsCheckInterval(row->values[JC_TIMEOUT], ERRCODE_CHECK_VIOLATION, "timeout",
						"a job", "timeout is a positive interval of at most "
						CppAsString2(QS_MAX_INTERVAL_DAYS) " days, or null for none.");
	if (!row->nulls[JC_CLIENT_TOKEN])
	{
		int			len = VARSIZE_ANY_EXHDR(DatumGetTextPP(row->values[JC_CLIENT_TOKEN]));

		if (len < 1 || len > QS_MAX_TOKEN_LEN)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("invalid client_token of %d characters", len),
					 errdetail("client_token has 1 to %d characters.", QS_MAX_TOKEN_LEN)));
	}
	if (!row->nulls[JC_TAGS])
	{
		Jsonb	   *tags = DatumGetJsonbP(row->values[JC_TAGS]);
		char	   *text = JsonbToCString(NULL, &tags->root, VARSIZE(tags));

		QsCheckSize("tags of job", strlen(text), QS_MAX_TAGS_BYTES);
		if (!JB_ROOT_IS_OBJECT(tags))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("tags of a job must be a JSON object, not %s", QsShortValue(text))));
	}

	if (!row->nulls[JC_ARRAY_SIZE])
	{
		CheckIntRange("array_size", DatumGetInt32(row->values[JC_ARRAY_SIZE]), 2,
					  QS_MAX_ARRAY_SIZE);
		if (VARSIZE_ANY_EXHDR(DatumGetTextPP(row->values[JC_NAME])) >
			QS_MAX_NAME_LEN - QS_ARRAY_SUFFIX_LEN)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("the name of an array of jobs is too long"),
					 errdetail("Each job of an array is named NAME[INDEX]: NAME has at most %d "
							   "characters.", QS_MAX_NAME_LEN - QS_ARRAY_SUFFIX_LEN)));
	}
	CheckPayloadSize(row);
	CheckCommand(row);
	ApplyResourceConfig(row);
	CheckCapacity(row);
	CheckPlacementColumns(row);
}

/*
 * ShareOwningQueue names, in memory of context outer, a queue that has a
 * share of this name (NULL when there is none), for the message about a
 * share of another queue.  The caller has connected to SPI.
 */
static QsQuery ShareOwningQueueQuery = {
	"SELECT job_queue FROM quota_sched.quota_share"
	" WHERE name = $1 ORDER BY job_queue LIMIT 1",
	1, {TEXTOID}, SPI_OK_SELECT
};

static char *
ShareOwningQueue(const char *share, MemoryContext outer)
{
	Datum		quota_share = CStringGetTextDatum(share);
	MemoryContext oldcxt;
	char	   *queue = NULL;

	QsQueryRun(&ShareOwningQueueQuery, &quota_share, NULL, true, 1);
	oldcxt = MemoryContextSwitchTo(outer);
	if (SPI_processed > 0)
		queue = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
	MemoryContextSwitchTo(oldcxt);
	return queue;
}

/*
 * MaySubmitAs tells whether a role may submit to a share restricted to
 * submit_role: members of it may, and so may admins and superusers.
 */
static bool
MaySubmitAs(Oid caller, const char *submit_role)
{
	Oid			role;

	if (submit_role == NULL || superuser_arg(caller))
		return true;
	role = get_role_oid("quota_sched_admin", true);
	if (OidIsValid(role) && has_privs_of_role(caller, role))
		return true;
	role = get_role_oid(submit_role, true);
	return OidIsValid(role) && has_privs_of_role(caller, role);
}

/*
 * FindSubmitTarget copies into *target, in the caller's memory, the
 * configuration a submission to queue and share is checked against, and
 * returns false when the queue does not exist.  The configuration comes
 * from the cache, or else is read as owner (the job table's owner), so
 * that a submitter needs no access of its own to it.  When the queue has
 * no share of that name, *other_queue names a queue that has one (NULL:
 * none, or not looked up because the cache answered).
 */
static bool
FindSubmitTarget(const char *queue, const char *share, Oid owner,
				 QsSubmitTarget *target, char **other_queue)
{
	MemoryContext outer = CurrentMemoryContext;
	const QsSubmitTarget *cached = QsFindSubmitTarget(queue, share);
	bool		connected = cached == NULL;
	QsSavedUser saved;

	*other_queue = NULL;
	if (connected)
	{
		QsBecomeOwner(owner, &saved);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "quota_sched: SPI_connect failed");
		cached = QsLookupSubmitTarget(queue, share);
		if (cached != NULL && !cached->share_found)
			*other_queue = ShareOwningQueue(share, outer);
	}
	if (cached != NULL)
	{
		/* copied out: SPI memory, or a cache an invalidation may empty */
		MemoryContext old = MemoryContextSwitchTo(outer);

		*target = *cached;
		target->submit_role = cached->submit_role ? pstrdup(cached->submit_role) : NULL;
		target->env_limits = DatumGetJsonbPCopy(JsonbPGetDatum(cached->env_limits));
		MemoryContextSwitchTo(old);
	}
	if (connected)
	{
		SPI_finish();
		QsRestoreUser(&saved);
	}
	return cached != NULL;
}

/*
 * CheckSubmitTarget checks the queue, the share, the caller's right to
 * submit to it, and the capacity unit against the environment.  Errors
 * are raised as the caller, after FindSubmitTarget has switched back.
 */
static void
CheckSubmitTarget(JobValues *row, Relation rel, Oid caller)
{
	char	   *queue = TextDatumGetCString(row->values[JC_JOB_QUEUE]);
	char	   *share = TextDatumGetCString(row->values[JC_QUOTA_SHARE]);
	char	   *unit = TextDatumGetCString(row->values[JC_CAPACITY_UNIT]);
	QsSubmitTarget target;
	char	   *other_queue;

	if (!FindSubmitTarget(queue, share, rel->rd_rel->relowner, &target, &other_queue))
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("job queue \"%s\" does not exist", QsShortValue(queue))));
	if (!target.share_found && other_queue != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("quota share \"%s\" belongs to job queue \"%s\", not \"%s\"",
						QsShortValue(share), other_queue, queue)));
	if (!target.share_found)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("quota share \"%s\" does not exist in job queue \"%s\"",
						QsShortValue(share), queue)));
	if (!target.queue_enabled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job queue \"%s\" is disabled and accepts no new jobs", queue)));
	if (!target.share_enabled)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("quota share \"%s\" of job queue \"%s\" is disabled and accepts no new jobs",
						share, queue)));
	if (!MaySubmitAs(caller, target.submit_role))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not submit to quota share \"%s\" of job queue \"%s\"",
						GetUserNameFromId(caller, false), share, queue),
				 errdetail("Only members of role \"%s\" may submit to it.",
						   target.submit_role)));
	if (QsJsonbField(&target.env_limits->root, unit) == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("capacity unit \"%s\" is not in the service environment of job queue \"%s\"",
						QsShortValue(unit), queue)));
}

/*
 * The statement the executor runs now (innermost), kept by an ExecutorRun
 * hook, so that the INSERT trigger can tell whether its INSERT has an ON
 * CONFLICT clause (CheckClientToken).  NULL when not known: the hook was
 * installed after the statement started (the library loaded on its first
 * use, not preloaded).
 */
static ExecutorRun_hook_type prev_executor_run = NULL;
static QueryDesc *running_query = NULL;

/*
 * QsExecutorRun is the ExecutorRun hook: it keeps running_query for the
 * run, restoring the outer statement's after it, also on error.
 */
static void
QsExecutorRun(QueryDesc *desc, ScanDirection direction, uint64 count, bool execute_once)
{
	QueryDesc  *outer = running_query;

	running_query = desc;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(desc, direction, count, execute_once);
		else
			standard_ExecutorRun(desc, direction, count, execute_once);
	}
	PG_FINALLY();
	{
		running_query = outer;
	}
	PG_END_TRY();
}

/*
 * QsInstallExecutorHook installs the ExecutorRun hook (_PG_init).
 */
void
QsInstallExecutorHook(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = QsExecutorRun;
}

/*
 * HasOnConflict tells whether a plan is a ModifyTable with an ON CONFLICT
 * clause: a ModifyTable is the top of its plan, or of a CTE's subplan.
 */
static bool
HasOnConflict(Plan *plan)
{
	return plan != NULL && IsA(plan, ModifyTable) &&
		((ModifyTable *) plan)->onConflictAction != ONCONFLICT_NONE;
}

/*
 * InsertWithoutOnConflict tells whether the running statement is known to
 * have no ON CONFLICT clause anywhere (false when it is not known).
 */
static bool
InsertWithoutOnConflict(void)
{
	PlannedStmt *stmt;
	ListCell   *lc;

	if (running_query == NULL || running_query->plannedstmt == NULL)
		return false;
	stmt = running_query->plannedstmt;
	if (HasOnConflict(stmt->planTree))
		return false;
	foreach(lc, stmt->subplans)
		if (HasOnConflict((Plan *) lfirst(lc)))
			return false;
	return true;
}

/*
 * CheckClientToken refuses (unique_violation) a client_token that a job has
 * already, with a message that names neither the job nor its team, where
 * the unique index says 'duplicate key value violates unique constraint
 * "job_client_token_key"'.  It reads as the tables' owner, past row-level
 * security: the token is unique over every team's jobs.  An INSERT with
 * ON CONFLICT (the idempotent submit) is left to the index, which does
 * nothing or updates as asked; so is one whose statement is not known.
 * The index stays the guard when two submissions of one token race.
 */
static QsQuery TokenTakenQuery = {
	"SELECT 1 FROM quota_sched.job WHERE client_token = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

static void
CheckClientToken(JobValues *row, Relation rel)
{
	QsSavedUser saved;
	bool		taken;

	if (row->nulls[JC_CLIENT_TOKEN] || !InsertWithoutOnConflict())
		return;
	QsBecomeOwner(rel->rd_rel->relowner, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	taken = QsQueryRun(&TokenTakenQuery, &row->values[JC_CLIENT_TOKEN], NULL, true, 1) > 0;
	SPI_finish();
	QsRestoreUser(&saved);
	if (taken)
		ereport(ERROR,
				(errcode(ERRCODE_UNIQUE_VIOLATION),
				 errmsg("client_token \"%s\" is taken: a job has it already",
						QsShortValue(TextDatumGetCString(row->values[JC_CLIENT_TOKEN]))),
				 errdetail("A client_token is unique over the jobs of every team."),
				 errhint("If the job is yours, SELECT id FROM quota_sched.job WHERE "
						 "client_token = '...' finds it; INSERT ... ON CONFLICT "
						 "(client_token) DO NOTHING submits once. Otherwise choose "
						 "another token, e.g. prefixed with your team's name.")));
}

/*
 * The array being expanded by this backend (QsExpandArray): while it
 * inserts the jobs of indexes 1 and up, their array_id and array_index are
 * its to give.
 */
static struct
{
	bool		active;
	int64		array_id;
	int32		size;
}			Expanding;

/*
 * ExpandingColumn tells whether a system column a row gives is an array's
 * id or index given by the array's expansion, and checks them.
 */
static bool
ExpandingColumn(JobValues *row, JobColumn c)
{
	if (!Expanding.active || (c != JC_ARRAY_ID && c != JC_ARRAY_INDEX))
		return false;
	if (row->nulls[JC_ARRAY_ID] || row->nulls[JC_ARRAY_INDEX] ||
		DatumGetInt64(row->values[JC_ARRAY_ID]) != Expanding.array_id ||
		DatumGetInt32(row->values[JC_ARRAY_INDEX]) < 1 ||
		DatumGetInt32(row->values[JC_ARRAY_INDEX]) >= Expanding.size)
		elog(ERROR, "quota_sched: a job of array " INT64_FORMAT " has a wrong index",
			 Expanding.array_id);
	return true;
}

/*
 * CheckNoSystemColumns refuses a submission that sets a column the system
 * keeps.  Those columns have no defaults, so any value came from the caller
 * (but for an array's id and index, from its expansion).
 */
static void
CheckNoSystemColumns(JobValues *row)
{
	for (int c = 0; c < JC_COUNT; c++)
		if (JobColumnIsSystem(c) && !row->nulls[c] && !ExpandingColumn(row, c))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("column \"%s\" of a job is set by quota_sched, not by the submitter",
							JobColumnNames[c]),
					 errhint("Leave \"%s\" out of the INSERT.", JobColumnNames[c])));
}

/*
 * FillArrayColumns sets a job of an array's id and index (index 0: the row
 * inserted, whose id is the array's; the others come from its expansion
 * with theirs) and its name, NAME[INDEX].
 */
static void
FillArrayColumns(JobValues *row)
{
	int32		index = 0;

	if (Expanding.active)
		index = DatumGetInt32(row->values[JC_ARRAY_INDEX]);
	else
	{
		row->values[JC_ARRAY_ID] = row->values[JC_ID];
		row->values[JC_ARRAY_INDEX] = Int32GetDatum(0);
		row->nulls[JC_ARRAY_ID] = row->nulls[JC_ARRAY_INDEX] = false;
	}
	row->values[JC_NAME] = CStringGetTextDatum(psprintf("%s[%d]",
														TextDatumGetCString(row->values[JC_NAME]),
														index));
}

/*
 * FillSystemColumns sets the columns the system keeps for a new job: a new
 * id, the submitting role as owner, RUNNABLE, zero counters and the
 * transaction's time as submitted_at and queue position.
 */
static void
FillSystemColumns(JobValues *row, Oid caller)
{
	static Oid	seq_oid = InvalidOid;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Name		owner = palloc0(NAMEDATALEN);

	if (!OidIsValid(seq_oid) || get_rel_name(seq_oid) == NULL)
		seq_oid = get_relname_relid("job_id_seq", get_namespace_oid(QS_SCHEMA, false));
	namestrcpy(owner, GetUserNameFromId(caller, false));

	row->values[JC_ID] = Int64GetDatum(nextval_internal(seq_oid, false));
	row->values[JC_OWNER] = NameGetDatum(owner);
	row->values[JC_STATE] = CStringGetTextDatum(QsJobStateName(QS_RUNNABLE));
	row->values[JC_FAILED_ATTEMPTS] = Int32GetDatum(0);
	row->values[JC_PREEMPTION_COUNT] = Int32GetDatum(0);
	row->values[JC_SUBMITTED_AT] = TimestampTzGetDatum(now);
	row->values[JC_QUEUED_AT] = TimestampTzGetDatum(now);
	row->nulls[JC_ID] = row->nulls[JC_OWNER] = row->nulls[JC_STATE] = false;
	row->nulls[JC_FAILED_ATTEMPTS] = row->nulls[JC_PREEMPTION_COUNT] = false;
	row->nulls[JC_SUBMITTED_AT] = row->nulls[JC_QUEUED_AT] = false;
	row->values[JC_LEASE_LOSSES] = Int32GetDatum(0);
	row->values[JC_CLAIM_REQUEUES] = Int32GetDatum(0);
	row->nulls[JC_LEASE_LOSSES] = row->nulls[JC_CLAIM_REQUEUES] = false;
	if (!row->nulls[JC_ARRAY_SIZE])
		FillArrayColumns(row);
}

/*
 * The dependencies of the last job submitted with depends_on by this
 * backend: the jobs of an array that index 0 is expanded into have its
 * depends_on, and take its counts (the rows are locked until the commit).
 */
static struct
{
	int64		job_id;
	QsDependencies deps;
}			LastDependencies;

/*
 * FillDependencies sets the columns of a new job's dependencies
 * (scheduling.md 3.17): how many of the jobs it depends on have not
 * SUCCEEDED, one that FAILED (each null for none), and the reason
 * DEPENDENCY while either is so.  A job has no dependents yet (null).
 */
static void
FillDependencies(JobValues *row)
{
	QsDependencies deps = {0, 0};

	if (!row->nulls[JC_DEPENDS_ON] && Expanding.active &&
		LastDependencies.job_id == Expanding.array_id)
		deps = LastDependencies.deps;
	else if (!row->nulls[JC_DEPENDS_ON])
	{
		deps = QsSubmitDependencies(row->values[JC_DEPENDS_ON],
									TextDatumGetCString(row->values[JC_JOB_QUEUE]));
		LastDependencies.job_id = DatumGetInt64(row->values[JC_ID]);
		LastDependencies.deps = deps;
	}
	row->values[JC_DEPENDENCIES_WAITING] = Int32GetDatum(deps.waiting);
	row->nulls[JC_DEPENDENCIES_WAITING] = deps.waiting == 0;
	row->values[JC_DEPENDENCY_FAILED] = Int64GetDatum(deps.failed);
	row->nulls[JC_DEPENDENCY_FAILED] = deps.failed == 0;
	if (deps.waiting > 0 || deps.failed != 0)
	{
		row->values[JC_STATUS_REASON] = CStringGetTextDatum(QsHoldName(QS_HOLD_DEPENDENCY));
		row->values[JC_STATUS_REASON_AT] = row->values[JC_SUBMITTED_AT];
		row->nulls[JC_STATUS_REASON] = row->nulls[JC_STATUS_REASON_AT] = false;
	}
}

/*
 * BuildJobTuple forms the tuple of a job from its JobValues.
 */
static HeapTuple
BuildJobTuple(HeapTuple old, TupleDesc desc, JobValues *row)
{
	Datum	   *values = palloc0(desc->natts * sizeof(Datum));
	bool	   *nulls = palloc0(desc->natts * sizeof(bool));
	bool	   *replace = palloc0(desc->natts * sizeof(bool));

	for (int c = 0; c < JC_COUNT; c++)
	{
		int			i = JobAttnum(desc, c) - 1;

		values[i] = row->values[c];
		nulls[i] = row->nulls[c];
		replace[i] = true;
	}
	return heap_modify_tuple(old, desc, values, nulls, replace);
}

/*
 * qs_job_before_insert validates a submission and fills the system columns
 * (BEFORE INSERT, for each row).  Nothing is stored when it raises.  A job
 * the configuration as it is cannot run is stored, with a NOTICE saying
 * why (job_fit.c).
 */
Datum
qs_job_before_insert(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_before_insert", true);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	Oid			caller = GetUserId();
	JobValues	row;

	QsCheckSchemaVersion();
	ReadJobValues(td->tg_trigtuple, desc, &row);
	CheckNoSystemColumns(&row);
	CheckSubmitterValues(&row);
	CheckSubmitTarget(&row, td->tg_relation, caller);
	CheckClientToken(&row, td->tg_relation);
	FillSystemColumns(&row, caller);
	FillDependencies(&row);
	if (!Expanding.active)		/* an array's misfit is told once, of index 0 */
		QsNoticeMisfit(TextDatumGetCString(row.values[JC_NAME]), TextDatumGetCString(row.values[JC_JOB_QUEUE]),
				   TextDatumGetCString(row.values[JC_QUOTA_SHARE]),
				   TextDatumGetCString(row.values[JC_CAPACITY_UNIT]),
				   DatumGetInt32(row.values[JC_INSTANCE_COUNT]), td->tg_relation->rd_rel->relowner);
	return PointerGetDatum(BuildJobTuple(td->tg_trigtuple, desc, &row));
}

/*
 * ArrayCopyQuery builds the INSERT of the jobs of indexes 1 to $4 - 1 of an
 * array: every column the row of index 0 was given by its submitter ($1,
 * the row), but its name ($2, the name without its index), its
 * client_token (unique: index 0 has it), and the array's id ($3) and index.
 */
static char *
ArrayCopyQuery(HeapTuple job, TupleDesc desc)
{
	StringInfoData cols;
	StringInfoData values;

	initStringInfo(&cols);
	initStringInfo(&values);
	for (int c = 0; c < JC_COUNT; c++)
	{
		if ((JobColumnIsSystem(c)) || c == JC_NAME || c == JC_CLIENT_TOKEN ||
			heap_attisnull(job, JobAttnum(desc, c), desc))
			continue;
		appendStringInfo(&cols, "%s, ", quote_identifier(JobColumnNames[c]));
		appendStringInfo(&values, "($1).%s, ", quote_identifier(JobColumnNames[c]));
	}
	return psprintf("INSERT INTO " QS_SCHEMA ".job (%sname, array_id, array_index)"
					" SELECT %s$2, $3, i FROM generate_series(1, $4 - 1) AS i",
					cols.data, values.data);
}

/*
 * QsExpandArray submits, after the history of index 0 of an array
 * (job_history(), SubmittedEnd), the array's other jobs in the same
 * statement, as the submitter: each goes through job_before_insert as any
 * submission, with the array's id and its index (Expanding).
 */
void
QsExpandArray(HeapTuple job, TupleDesc desc)
{
	bool		isnull;
	char	   *name = TextDatumGetCString(heap_getattr(job, JobAttnum(desc, JC_NAME), desc,
														&isnull));
	Oid			types[4] = {desc->tdtypeid, TEXTOID, INT8OID, INT4OID};
	Datum		args[4];

	name[strlen(name) - strlen("[0]")] = '\0';
	args[0] = heap_copy_tuple_as_datum(job, desc);
	args[1] = CStringGetTextDatum(name);
	args[2] = heap_getattr(job, JobAttnum(desc, JC_ID), desc, &isnull);
	args[3] = heap_getattr(job, JobAttnum(desc, JC_ARRAY_SIZE), desc, &isnull);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	Expanding.active = true;
	Expanding.array_id = DatumGetInt64(args[2]);
	Expanding.size = DatumGetInt32(args[3]);
	PG_TRY();
	{
		if (SPI_execute_with_args(ArrayCopyQuery(job, desc), 4, types, args, NULL, false, 0) !=
			SPI_OK_INSERT)
			elog(ERROR, "quota_sched: the jobs of array " INT64_FORMAT " were not inserted",
				 Expanding.array_id);
	}
	PG_FINALLY();
	{
		Expanding.active = false;
	}
	PG_END_TRY();
	SPI_finish();
}
