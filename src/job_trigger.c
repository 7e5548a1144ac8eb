/*-------------------------------------------------------------------------
 *
 * job_trigger.c
 *		The triggers of quota_sched.job: validation and defaults on INSERT,
 *		the guard against user changes other than priority on UPDATE, and
 *		the one place that appends job_event on every change of state.
 *
 * System columns have no defaults in the table, so a value the submitter
 * gives is visible here and refused.  Changes by the extension's own code
 * are marked by QsWrite.system_write, which only C code can set.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/htup_details.h"
#include "access/sysattr.h"
#include "nodes/bitmapset.h"
#include "access/xact.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_authid.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "config_cache.h"
#include "job_columns.h"
#include "pass.h"
#include "quota_sched.h"

PG_FUNCTION_INFO_V1(qs_job_before_insert);
PG_FUNCTION_INFO_V1(qs_job_before_update);
PG_FUNCTION_INFO_V1(qs_job_history);
PG_FUNCTION_INFO_V1(qs_job_lock_queues);

#define QS_MAX_PRIORITY 9999
#define QS_MAX_ATTEMPTS 10
#define QS_MAX_TOKEN_LEN 255

/* A job row split into its columns. */
typedef struct JobRow
{
	Datum		values[JC_COUNT];
	bool		nulls[JC_COUNT];
} JobRow;


/*
 * ReadJobRow splits a tuple of quota_sched.job into JobRow order.
 */
static void
ReadJobRow(HeapTuple tuple, TupleDesc desc, JobRow *row)
{
	for (int c = 0; c < JC_COUNT; c++)
		row->values[c] = heap_getattr(tuple, JobAttnum(desc, c), desc,
									  &row->nulls[c]);
}

/*
 * CheckSubmitterTrigger checks that a trigger function fires as declared.
 */
static TriggerData *
CheckJobTrigger(FunctionCallInfo fcinfo, const char *fn, bool before)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_BEFORE(td->tg_event) != before)
		elog(ERROR, "%s: must be fired as a row trigger on quota_sched.job", fn);
	return td;
}

static void
CheckIntRange(const char *column, int64 value, int64 lo, int64 hi)
{
	if (value < lo || value > hi)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid %s " INT64_FORMAT " of a job", column, value),
				 hi == PG_INT32_MAX ?
				 errdetail("%s is at least " INT64_FORMAT ".", column, lo) :
				 errdetail("%s is from " INT64_FORMAT " to " INT64_FORMAT ".",
						   column, lo, hi)));
}

static void
RequireColumn(JobRow *row, JobColumn c)
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
 * InstanceCount, as in a SageMaker CreateTrainingJob request); an explicit
 * column wins, and instance_count is 1 when neither gives it.
 */
static void
ApplyResourceConfig(JobRow *row)
{
	JsonbValue *rc = NULL;
	JsonbValue *v;

	if (!row->nulls[JC_PAYLOAD])
		rc = QsJsonbField(&DatumGetJsonbP(row->values[JC_PAYLOAD])->root,
						"ResourceConfig");
	if (rc != NULL && rc->type != jbvBinary)
		rc = NULL;

	if (row->nulls[JC_CAPACITY_UNIT] && rc != NULL &&
		(v = QsJsonbField(rc->val.binary.data, "InstanceType")) != NULL)
	{
		if (v->type != jbvString)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("payload ResourceConfig.InstanceType of a job is not a string")));
		row->values[JC_CAPACITY_UNIT] =
			PointerGetDatum(cstring_to_text_with_len(v->val.string.val,
													 v->val.string.len));
		row->nulls[JC_CAPACITY_UNIT] = false;
	}

	if (row->nulls[JC_INSTANCE_COUNT])
	{
		int64		count = 1;

		if (rc != NULL &&
			(v = QsJsonbField(rc->val.binary.data, "InstanceCount")) != NULL)
			count = InstanceCountFromJson(v);
		row->values[JC_INSTANCE_COUNT] = Int32GetDatum((int32) count);
		row->nulls[JC_INSTANCE_COUNT] = false;
	}
}

/*
 * CheckPayloadSize refuses a payload longer than 1 MiB as text.  The text
 * is measured itself: no bound on it follows from the binary size (a number
 * such as 1e130000 is a few bytes stored and 130001 digits as text).
 */
static void
CheckPayloadSize(JobRow *row)
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
 * CheckSubmitterValues checks every value a submitter may set, except those
 * that need the configuration (CheckSubmitTarget).
 */
static void
CheckSubmitterValues(JobRow *row)
{
	text	   *unit;

	RequireColumn(row, JC_NAME);
	QsCheckName(DatumGetTextPP(row->values[JC_NAME]), "job");
	RequireColumn(row, JC_JOB_QUEUE);
	RequireColumn(row, JC_QUOTA_SHARE);
	CheckIntRange("priority", DatumGetInt32(row->values[JC_PRIORITY]), 0, QS_MAX_PRIORITY);
	CheckIntRange("max_attempts", DatumGetInt32(row->values[JC_MAX_ATTEMPTS]), 1, QS_MAX_ATTEMPTS);
	if (!row->nulls[JC_PREEMPTION_RETRIES])
		CheckIntRange("preemption_retries", DatumGetInt32(row->values[JC_PREEMPTION_RETRIES]),
					  0, PG_INT32_MAX);
	if (!row->nulls[JC_TIMEOUT])
	{
		Interval	zero = {0};

		if (DatumGetBool(DirectFunctionCall2(interval_le, row->values[JC_TIMEOUT],
											 IntervalPGetDatum(&zero))))
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("invalid timeout %s of a job",
							DatumGetCString(DirectFunctionCall1(interval_out,
																row->values[JC_TIMEOUT]))),
					 errdetail("timeout is a positive interval, or null for none.")));
	}
	if (!row->nulls[JC_CLIENT_TOKEN])
	{
		int			len = VARSIZE_ANY_EXHDR(DatumGetTextPP(row->values[JC_CLIENT_TOKEN]));

		if (len < 1 || len > QS_MAX_TOKEN_LEN)
			ereport(ERROR,
					(errcode(ERRCODE_CHECK_VIOLATION),
					 errmsg("invalid client_token of %d characters", len),
					 errdetail("client_token has 1 to %d characters.", QS_MAX_TOKEN_LEN)));
	}
	if (!row->nulls[JC_TAGS] &&
		!JB_ROOT_IS_OBJECT(DatumGetJsonbP(row->values[JC_TAGS])))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("tags of a job must be a JSON object, not %s",
						JsonbToCString(NULL, &DatumGetJsonbP(row->values[JC_TAGS])->root, 0))));

	CheckPayloadSize(row);
	ApplyResourceConfig(row);

	if (row->nulls[JC_CAPACITY_UNIT])
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a job needs a capacity_unit"),
				 errhint("Set capacity_unit, or InstanceType in payload->'ResourceConfig'.")));
	unit = DatumGetTextPP(row->values[JC_CAPACITY_UNIT]);
	if (!QsValidUnitName(VARDATA_ANY(unit), VARSIZE_ANY_EXHDR(unit)))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid capacity unit \"%s\" of a job", text_to_cstring(unit)),
				 errdetail("Capacity units are 1 to 128 characters of A-Z, a-z, 0-9, \".\", \"_\" and \"-\".")));
	CheckIntRange("instance_count", DatumGetInt32(row->values[JC_INSTANCE_COUNT]), 1, PG_INT32_MAX);
}

/*
 * ShareOwningQueue names, in memory of context outer, a queue that has a
 * share of this name (NULL when there is none), for the message about a
 * share of another queue.  The caller has connected to SPI.
 */
static char *
ShareOwningQueue(Datum quota_share, MemoryContext outer)
{
	Oid			type = TEXTOID;
	MemoryContext oldcxt;
	char	   *queue = NULL;

	if (SPI_execute_with_args("SELECT job_queue FROM quota_sched.quota_share"
							  " WHERE name = $1 ORDER BY job_queue LIMIT 1",
							  1, &type, &quota_share, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not look up a quota share");
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
 * CheckSubmitTarget checks the queue, the share, the caller's right to
 * submit to it, and the capacity unit against the environment.  The
 * configuration is read as the owner of the job table, so a submitter needs
 * no access of its own to it; errors are raised after switching back.
 */
static void
CheckSubmitTarget(JobRow *row, Relation rel, Oid caller)
{
	char	   *queue = TextDatumGetCString(row->values[JC_JOB_QUEUE]);
	char	   *share = TextDatumGetCString(row->values[JC_QUOTA_SHARE]);
	text	   *unit = DatumGetTextPP(row->values[JC_CAPACITY_UNIT]);
	MemoryContext outer = CurrentMemoryContext;
	const QsSubmitTarget *cached;
	QsSubmitTarget target;
	QsSavedUser saved;
	bool		connected;
	bool		found;
	char	   *other_queue = NULL;

	/* the configuration: from the cache, else read as the table's owner */
	cached = QsFindSubmitTarget(queue, share);
	connected = cached == NULL;
	if (connected)
	{
		QsBecomeOwner(rel->rd_rel->relowner, &saved);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		cached = QsLookupSubmitTarget(queue, share);
		if (cached != NULL && !cached->share_found)
			other_queue = ShareOwningQueue(row->values[JC_QUOTA_SHARE], outer);
	}
	found = cached != NULL;
	if (found)
	{
		/* copied out: SPI memory, or a cache an invalidation may empty */
		MemoryContext old = MemoryContextSwitchTo(outer);

		target = *cached;
		target.submit_role = cached->submit_role ? pstrdup(cached->submit_role) : NULL;
		target.env_limits = DatumGetJsonbPCopy(JsonbPGetDatum(cached->env_limits));
		MemoryContextSwitchTo(old);
	}
	if (connected)
	{
		SPI_finish();
		QsRestoreUser(&saved);
	}

	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("job queue \"%s\" does not exist", queue)));
	if (!target.share_found && other_queue != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("quota share \"%s\" belongs to job queue \"%s\", not \"%s\"",
						share, other_queue, queue)));
	if (!target.share_found)
		ereport(ERROR,
				(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
				 errmsg("quota share \"%s\" does not exist in job queue \"%s\"",
						share, queue)));
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
	{
		char	   *u = text_to_cstring(unit);

		if (QsJsonbField(&target.env_limits->root, u) == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("capacity unit \"%s\" is not in the service environment of job queue \"%s\"",
							u, queue)));
	}
}

/*
 * CheckNoSystemColumns refuses a submission that sets a column the system
 * keeps.  Those columns have no defaults, so any value came from the caller.
 */
static void
CheckNoSystemColumns(JobRow *row)
{
	for (int c = 0; c < JC_COUNT; c++)
		if (JobColumnIsSystem(c) && !row->nulls[c])
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("column \"%s\" of a job is set by quota_sched, not by the submitter",
							JobColumnNames[c]),
					 errhint("Leave \"%s\" out of the INSERT.", JobColumnNames[c])));
}

/*
 * FillSystemColumns sets the columns the system keeps for a new job: a new
 * id, the submitting role as owner, RUNNABLE, zero counters and the
 * transaction's time as submitted_at and queue position.
 */
static void
FillSystemColumns(JobRow *row, Oid caller)
{
	static Oid	seq_oid = InvalidOid;
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	Name		owner = palloc0(NAMEDATALEN);

	if (!OidIsValid(seq_oid) || get_rel_name(seq_oid) == NULL)
		seq_oid = get_relname_relid("job_id_seq", get_namespace_oid(QS_SCHEMA, false));
	namestrcpy(owner, GetUserNameFromId(caller, false));

	row->values[JC_ID] = Int64GetDatum(nextval_internal(seq_oid, false));
	row->values[JC_OWNER] = NameGetDatum(owner);
	row->values[JC_STATE] = CStringGetTextDatum("RUNNABLE");
	row->values[JC_FAILED_ATTEMPTS] = Int32GetDatum(0);
	row->values[JC_PREEMPTION_COUNT] = Int32GetDatum(0);
	row->values[JC_SUBMITTED_AT] = TimestampTzGetDatum(now);
	row->values[JC_QUEUED_AT] = TimestampTzGetDatum(now);
	row->nulls[JC_ID] = row->nulls[JC_OWNER] = row->nulls[JC_STATE] = false;
	row->nulls[JC_FAILED_ATTEMPTS] = row->nulls[JC_PREEMPTION_COUNT] = false;
	row->nulls[JC_SUBMITTED_AT] = row->nulls[JC_QUEUED_AT] = false;
}

/*
 * BuildJobTuple forms the tuple of a job from a JobRow.
 */
static HeapTuple
BuildJobTuple(HeapTuple old, TupleDesc desc, JobRow *row)
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
 * (BEFORE INSERT, for each row).  Nothing is stored when it raises.
 */
Datum
qs_job_before_insert(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_before_insert", true);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	Oid			caller = GetUserId();
	JobRow		row;

	ReadJobRow(td->tg_trigtuple, desc, &row);
	CheckNoSystemColumns(&row);
	CheckSubmitterValues(&row);
	CheckSubmitTarget(&row, td->tg_relation, caller);
	FillSystemColumns(&row, caller);
	return PointerGetDatum(BuildJobTuple(td->tg_trigtuple, desc, &row));
}

/*
 * qs_job_lock_queues takes every queue's lock in shared mode, in the C
 * order of their names, before a user's UPDATE of jobs locks any row
 * (BEFORE UPDATE, for each statement).  The row trigger could take only
 * the row's queue, but after the row is locked: a pass, which takes the
 * queue's lock first and then rows, would deadlock with it.  The
 * extension's own writes hold their locks already.
 */
Datum
qs_job_lock_queues(PG_FUNCTION_ARGS)
{
	TriggerData *td = (TriggerData *) fcinfo->context;
	ListCell   *lc;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		elog(ERROR, "job_lock_queues: must be fired as a statement trigger");
	if (QsWrite.system_write)
		return PointerGetDatum(NULL);
	foreach(lc, QsAllQueues())
		QsLockQueue(lfirst(lc), false);
	return PointerGetDatum(NULL);
}

/*
 * qs_job_before_update lets a user change only priority, within its range
 * (the queues' locks were taken by qs_job_lock_queues, so the change does
 * not interleave with a pass).  Any other column named in the UPDATE's SET
 * list is refused, even when set to the value it has.  The extension's own
 * writes pass unchecked.
 */
Datum
qs_job_before_update(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_before_update", true);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	bool		isnull;
	Datum		priority;

	if (QsWrite.system_write)
		return PointerGetDatum(td->tg_newtuple);

	for (int c = 0; c < JC_COUNT; c++)
	{
		int			member = JobAttnum(desc, c) - FirstLowInvalidHeapAttributeNumber;

		if (c != JC_PRIORITY && bms_is_member(member, td->tg_updatedcols))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("column \"%s\" of job " INT64_FORMAT " cannot be changed",
							JobColumnNames[c],
							DatumGetInt64(heap_getattr(td->tg_trigtuple,
													   JobAttnum(desc, JC_ID),
													   desc, &isnull))),
					 errhint("Only priority may change after submission; "
							 "quota_sched.terminate() stops a job.")));
	}
	priority = heap_getattr(td->tg_newtuple, JobAttnum(desc, JC_PRIORITY), desc, &isnull);
	if (isnull)
		ereport(ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("a job needs a priority")));
	CheckIntRange("priority", DatumGetInt32(priority), 0, QS_MAX_PRIORITY);
	QsWakeWorkerAtCommit();
	return PointerGetDatum(td->tg_newtuple);
}

/*
 * InsertHistoryRow writes a job_event tuple to the heap and every index,
 * without the executor's privilege checks.  Plain indexes (the extension's
 * own) are filled as catalogs fill theirs; if an admin added an expression
 * or partial index, the executor's index machinery fills them all.
 */
static void
InsertHistoryRow(Relation rel, HeapTuple tuple)
{
	CatalogIndexState indstate = CatalogOpenIndexes(rel);
	bool		plain = true;
	EState	   *estate;
	TupleTableSlot *slot;

	for (int i = 0; i < indstate->ri_NumIndices; i++)
	{
		IndexInfo  *ii = indstate->ri_IndexRelationInfo[i];

		if (ii->ii_Expressions != NIL || ii->ii_Predicate != NIL)
			plain = false;
	}
	if (plain)
	{
		CatalogTupleInsertWithInfo(rel, tuple, indstate);
		CatalogCloseIndexes(indstate);
		return;
	}
	CatalogCloseIndexes(indstate);

	estate = CreateExecutorState();
	indstate = makeNode(ResultRelInfo);
	InitResultRelInfo(indstate, rel, 1, NULL, 0);
	ExecOpenIndices(indstate, false);
	slot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	simple_table_tuple_insert(rel, slot);
	(void) ExecInsertIndexTuples(indstate, slot, estate, false, false, NULL, NIL);
	ExecCloseIndices(indstate);
	ExecResetTupleTable(estate->es_tupleTable, false);
	FreeExecutorState(estate);
}

/*
 * HistoryRelation returns the job_event relation, opened for an insert.
 */
static Relation
HistoryRelation(Oid *seq)
{
	Oid			nsp = get_namespace_oid(QS_SCHEMA, false);

	*seq = get_relname_relid("job_event_id_seq", nsp);
	return table_open(get_relname_relid("job_event", nsp), RowExclusiveLock);
}

/*
 * qs_job_history appends one job_event row for an INSERT or a change of
 * state (AFTER, for each row; the UPDATE trigger fires only when the state
 * changed).  This is the only place history is written, so no code path
 * can forget it.  The row is written directly (InsertHistoryRow): no
 * privilege check, so submitters need no right to write history, and no
 * SPI round trip on the submit path.
 */
Datum
qs_job_history(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_history", false);
	TupleDesc	desc = RelationGetDescr(td->tg_relation);
	bool		is_update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	HeapTuple	tuple = is_update ? td->tg_newtuple : td->tg_trigtuple;
	const char *actor = QsWrite.actor;
	Relation	history;
	TupleDesc	hdesc;
	Datum	   *values;
	bool	   *nulls;
	bool		isnull;
	Oid			seq;

	if (actor == NULL)
		actor = GetUserNameFromId(GetUserId(), false);
	QsWakeWorkerAtCommit();		/* a new job, or one that changed state */
	history = HistoryRelation(&seq);
	hdesc = RelationGetDescr(history);
	values = palloc0(sizeof(Datum) * hdesc->natts);
	nulls = palloc(sizeof(bool) * hdesc->natts);
	memset(nulls, true, sizeof(bool) * hdesc->natts);

	/* id, job_id, at, pass_id, from_state, to_state, reason, actor */
	values[0] = Int64GetDatum(nextval_internal(seq, false));
	values[1] = heap_getattr(tuple, JobAttnum(desc, JC_ID), desc, &isnull);
	values[2] = TimestampTzGetDatum(GetCurrentTransactionStartTimestamp());
	values[3] = Int64GetDatum(QsWrite.pass_id);
	nulls[0] = nulls[1] = nulls[2] = false;
	nulls[3] = QsWrite.pass_id == 0;
	if (is_update)
		values[4] = heap_getattr(td->tg_trigtuple, JobAttnum(desc, JC_STATE), desc, &nulls[4]);
	values[5] = heap_getattr(tuple, JobAttnum(desc, JC_STATE), desc, &nulls[5]);
	if (is_update)
		values[6] = heap_getattr(tuple, JobAttnum(desc, JC_STATUS_REASON), desc, &nulls[6]);
	values[7] = CStringGetTextDatum(actor);
	nulls[7] = false;

	InsertHistoryRow(history, heap_form_tuple(hdesc, values, nulls));
	table_close(history, NoLock);
	return PointerGetDatum(NULL);
}
