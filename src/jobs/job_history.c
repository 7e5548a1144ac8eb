/*-------------------------------------------------------------------------
 *
 * job_history.c
 *		The history trigger of quota_sched.job: the only place that writes
 *		quota_sched.job_event, one row for each new job and each change of
 *		a job's state, so that no code path can forget it.
 *
 * The row is written directly to the heap and the indexes, as catalogs
 * are (CatalogTupleInsertWithInfo), not through SPI and the executor:
 *
 * - No privilege check.  Only the table's owner may write job_event (the
 *   roles have SELECT only, and its row-level security has only SELECT
 *   policies), yet the trigger of an INSERT runs as the submitter (the
 *   extension's own changes of state run as the owner).  So submitters
 *   need no right on job_event.
 * - No SPI round trip on the submit path.  An INSERT through SPI cost about
 *   9 µs a row; with the configuration cache (config_cache.c) and these
 *   direct writes, a submission went from 0.69 to 0.91 of a plain INSERT
 *   of the same row (bench/submit).
 * - The extension's own indexes (the primary key on id and job_event_job)
 *   are plain, and are filled as catalogs fill theirs; the primary key is
 *   still checked for uniqueness.  Only when an admin has added an
 *   expression or partial index, which the catalog routine cannot fill,
 *   does the executor's index machinery fill them all.
 *
 * What this bypasses is what the executor would add around the insert:
 * triggers, constraints other than unique indexes (NOT NULL and CHECK),
 * column defaults, row-level security and rules on job_event.  The install
 * script defines none of these for writes: no trigger on job_event (the
 * statement trigger job_history_delete, which deletes the history of
 * deleted jobs, fires on quota_sched.job), no CHECK and no foreign key
 * (job_id has none on purpose: see job_history_delete), and the NOT NULL
 * columns (id, job_id, at, to_state, actor) are always given here, id
 * from job_event_id_seq as its default would.  An admin's own trigger or
 * constraint on job_event would not fire either.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "identity.h"
#include "job_columns.h"
#include "job_dependencies.h"
#include "job_end.h"
#include "job_history.h"
#include "job_submit.h"
#include "launcher.h"
#include "policy.h"
#include "scan_floor.h"
#include "word_io.h"
#include "constants.h"

PG_FUNCTION_INFO_V1(qs_job_history);

/*
 * QsInsertHistoryRow writes a history tuple (job_event, job_preemption) to
 * the heap and every index, without the executor's privilege checks.  Plain indexes (the extension's
 * own) are filled as catalogs fill theirs; if an admin added an expression
 * or partial index, the executor's index machinery fills them all.
 */
void
QsInsertHistoryRow(Relation rel, HeapTuple tuple)
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
 * The ids of job_event and of its sequence, found once (every event needs
 * them) and forgotten at any invalidation of either, or of every relation
 * (a DROP EXTENSION drops both).
 */
static Oid	history_relid = InvalidOid;
static Oid	history_seq = InvalidOid;

static void
ForgetHistoryRelation(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == history_relid || relid == history_seq)
		history_relid = history_seq = InvalidOid;
}

/*
 * HistoryRelation returns the job_event relation, opened for an insert,
 * and its sequence.
 */
static Relation
HistoryRelation(Oid *seq)
{
	static bool registered = false;

	if (!registered)
	{
		CacheRegisterRelcacheCallback(ForgetHistoryRelation, (Datum) 0);
		registered = true;
	}
	if (!OidIsValid(history_relid) || !OidIsValid(history_seq))
	{
		Oid			nsp = get_namespace_oid(QS_SCHEMA, false);

		history_seq = get_relname_relid("job_event_id_seq", nsp);
		history_relid = get_relname_relid("job_event", nsp);
	}
	*seq = history_seq;
	return table_open(history_relid, RowExclusiveLock);
}

/*
 * WakesWorker tells whether a job's new state may change what the next
 * pass decides: the job asks for capacity (RUNNABLE: submitted, requeued,
 * released) or stopped holding or asking for it (SUCCEEDED, FAILED).  Being
 * dispatched, claimed or started changes no decision: those commits leave
 * the worker asleep (scheduling.md 6).
 */
static bool
WakesWorker(QsJobState s)
{
	return s == QS_RUNNABLE || s == QS_SUCCEEDED || s == QS_FAILED;
}

/* The columns of job_event, by name. */
typedef enum EventField
{
	EF_ID,
	EF_JOB_ID,
	EF_AT,
	EF_PASS_ID,
	EF_FROM_STATE,
	EF_TO_STATE,
	EF_REASON,
	EF_ACTOR,
	EF_KIND,
	EF_JOB_QUEUE,
	EF_QUOTA_SHARE,
	EF_CAPACITY_UNIT,
	EF_INSTANCE_COUNT,
	EF_ATTEMPT,
	EF_PRIORITY,
	EF_OLD_PRIORITY,
	EF_PREEMPTED_FOR,
	EF_EXIT_CODE,
	EF_WAITED,
	EF_COUNT
} EventField;

static const char *const EventFieldNames[EF_COUNT] = {
	"id", "job_id", "at", "pass_id", "from_state", "to_state", "reason", "actor",
	"kind", "job_queue", "quota_share", "capacity_unit", "instance_count", "attempt",
	"priority", "old_priority", "preempted_for", "exit_code", "waited"
};

/*
 * An event being written: the job_event relation, where each field's
 * column is, and the row.
 */
typedef struct EventRow
{
	Relation	jobrel;			/* quota_sched.job */
	Relation	rel;
	TupleDesc	desc;
	Oid			seq;
	AttrNumber	attnums[EF_COUNT];
	Datum	   *values;
	bool	   *nulls;
	const char *from_state;		/* the next event's, in place of the old
								 * row's (NULL: the old row's) */
} EventRow;

/*
 * EventOpen opens job_event for the events of a trigger call and finds
 * where its fields are, once for a version of the table: the relation's
 * id and number of columns (ALTER TABLE ... ADD COLUMN keeps the id).  The
 * library runs only on the schema of its own version
 * (QsCheckSchemaVersion): a column it does not find is an error.
 */
static void
EventOpen(EventRow *ev)
{
	static Oid	cached_relid = InvalidOid;
	static int	cached_natts = -1;
	static AttrNumber cached_attnums[EF_COUNT];

	ev->rel = HistoryRelation(&ev->seq);
	ev->desc = RelationGetDescr(ev->rel);
	if (cached_relid != RelationGetRelid(ev->rel) || cached_natts != ev->desc->natts)
	{
		QsAttnums(ev->desc, "job_event", EventFieldNames, EF_COUNT, cached_attnums);
		cached_relid = RelationGetRelid(ev->rel);
		cached_natts = ev->desc->natts;
	}
	memcpy(ev->attnums, cached_attnums, sizeof(cached_attnums));
	ev->values = palloc(sizeof(Datum) * ev->desc->natts);
	ev->nulls = palloc(sizeof(bool) * ev->desc->natts);
	ev->from_state = NULL;
}

/* EventSet sets a field of the row. */
static void
EventSet(EventRow *ev, EventField f, Datum value, bool isnull)
{
	ev->values[ev->attnums[f] - 1] = value;
	ev->nulls[ev->attnums[f] - 1] = isnull;
}

/* EventCopy sets a field from a column of a job tuple. */
static void
EventCopy(EventRow *ev, EventField f, HeapTuple job, TupleDesc jdesc, JobColumn c)
{
	bool		isnull;
	Datum		v = heap_getattr(job, JobAttnum(jdesc, c), jdesc, &isnull);

	EventSet(ev, f, v, isnull);
}

static int32
JobInt(HeapTuple job, TupleDesc jdesc, JobColumn c)
{
	bool		isnull;
	Datum		v = heap_getattr(job, JobAttnum(jdesc, c), jdesc, &isnull);

	return isnull ? 0 : DatumGetInt32(v);
}

static bool
JobIsNull(HeapTuple job, TupleDesc jdesc, JobColumn c)
{
	bool		isnull;

	(void) heap_getattr(job, JobAttnum(jdesc, c), jdesc, &isnull);
	return isnull;
}

static char *
JobText(HeapTuple job, TupleDesc jdesc, JobColumn c)
{
	bool		isnull;
	Datum		v = heap_getattr(job, JobAttnum(jdesc, c), jdesc, &isnull);

	return isnull ? NULL : TextDatumGetCString(v);
}

/* "job ID" of a job tuple, for a message. */
static char *
JobNamed(HeapTuple job, TupleDesc jdesc)
{
	bool		isnull;
	Datum		id = heap_getattr(job, JobAttnum(jdesc, JC_ID), jdesc, &isnull);

	return psprintf("job " INT64_FORMAT, isnull ? 0 : DatumGetInt64(id));
}

/* The state of a job tuple (its CHECK allows no other word). */
static QsJobState
JobState(HeapTuple job, TupleDesc jdesc)
{
	char	   *text = JobText(job, jdesc, JC_STATE);
	QsJobState	state;

	if (text == NULL || !QsJobStateFromName(text, &state))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_JOB_STATE,
					  text ? text : "", JobNamed(job, jdesc));
	return state;
}

/*
 * WriteEvent writes one event of a job: its kind, the states it went from
 * and to (the same for an event that changes no state), and what every
 * event carries for accounting without a join to the job (which may be
 * deleted later): queue, share, unit, instance count, the attempt during
 * which it happened (1 + failed_attempts + preemption_count + lease_losses
 * before the change), and the priority.
 */
static void
WriteEvent(EventRow *ev, QsEventKind kind, HeapTuple job, HeapTuple old, TupleDesc jdesc,
		   const char *actor)
{
	memset(ev->nulls, true, sizeof(bool) * ev->desc->natts);
	EventSet(ev, EF_ID, Int64GetDatum(nextval_internal(ev->seq, false)), false);
	EventCopy(ev, EF_JOB_ID, job, jdesc, JC_ID);
	EventSet(ev, EF_AT, TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);
	EventSet(ev, EF_PASS_ID, Int64GetDatum(QsWrite.pass_id), QsWrite.pass_id == 0);
	if (old != NULL && ev->from_state != NULL)
		EventSet(ev, EF_FROM_STATE, CStringGetTextDatum(ev->from_state), false);
	else if (old != NULL)
		EventCopy(ev, EF_FROM_STATE, old, jdesc, JC_STATE);
	ev->from_state = NULL;
	EventCopy(ev, EF_TO_STATE, job, jdesc, JC_STATE);
	EventSet(ev, EF_ACTOR, CStringGetTextDatum(actor), false);
	EventSet(ev, EF_KIND, CStringGetTextDatum(QsEventKindName(kind)), false);
	EventCopy(ev, EF_JOB_QUEUE, job, jdesc, JC_JOB_QUEUE);
	EventCopy(ev, EF_QUOTA_SHARE, job, jdesc, JC_QUOTA_SHARE);
	EventCopy(ev, EF_CAPACITY_UNIT, job, jdesc, JC_CAPACITY_UNIT);
	EventCopy(ev, EF_INSTANCE_COUNT, job, jdesc, JC_INSTANCE_COUNT);
	EventSet(ev, EF_ATTEMPT,
			 Int32GetDatum(old == NULL ? 1 :
						   1 + JobInt(old, jdesc, JC_FAILED_ATTEMPTS) +
						   JobInt(old, jdesc, JC_PREEMPTION_COUNT) +
						   JobInt(old, jdesc, JC_LEASE_LOSSES)), false);
	EventCopy(ev, EF_PRIORITY, job, jdesc, JC_PRIORITY);
}

/*
 * Waited returns how long a job being dispatched waited: since it last
 * became RUNNABLE, which is when its last attempt stopped (stopped_at),
 * or when it was queued (queued_at, submission) if it never ran.
 */
static Datum
Waited(HeapTuple old, TupleDesc jdesc)
{
	bool		isnull;
	Datum		since = heap_getattr(old, JobAttnum(jdesc, JC_STOPPED_AT), jdesc, &isnull);

	if (isnull)
		since = heap_getattr(old, JobAttnum(jdesc, JC_QUEUED_AT), jdesc, &isnull);
	return DirectFunctionCall2(timestamp_mi,
							   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), since);
}

/* EventInsert stores the event set up (WriteEvent and any EventSet after). */
static void
EventInsert(EventRow *ev)
{
	QsInsertHistoryRow(ev->rel, heap_form_tuple(ev->desc, ev->values, ev->nulls));
}

/*
 * NotifyJobEnd tells listeners of quota_sched_job_end, at commit, that a
 * job ended (SUCCEEDED or FAILED): its id, state and queue, so that a
 * client waits for its job without polling (scheduling.md 5.1; job_end.c
 * sends it, when a backend listens).
 */
static void
NotifyJobEnd(HeapTuple job, TupleDesc jdesc, QsJobState state)
{
	StringInfoData payload;
	bool		isnull;
	int64		id = DatumGetInt64(heap_getattr(job, JobAttnum(jdesc, JC_ID), jdesc, &isnull));

	initStringInfo(&payload);
	appendStringInfo(&payload, "{\"job_id\":" INT64_FORMAT ",\"state\":\"%s\",\"job_queue\":",
					 id, QsJobStateName(state));
	escape_json(&payload, JobText(job, jdesc, JC_JOB_QUEUE));
	appendStringInfoChar(&payload, '}');
	QsJobEndQueue(payload.data);
	pfree(payload.data);
}

/*
 * JobEnded tells the end of a job (SUCCEEDED or FAILED) to the clients
 * that wait for it (NotifyJobEnd) and, when it has dependents, to the
 * jobs that wait for it (scheduling.md 3.17).
 */
static void
JobEnded(HeapTuple job, TupleDesc jdesc, QsJobState state)
{
	bool		isnull;
	Datum		has_dependents = heap_getattr(job, JobAttnum(jdesc, JC_HAS_DEPENDENTS), jdesc,
											  &isnull);

	NotifyJobEnd(job, jdesc, state);
	if (!isnull && DatumGetBool(has_dependents))
	{
		Datum		array_id = heap_getattr(job, JobAttnum(jdesc, JC_ARRAY_ID), jdesc, &isnull);

		QsDependencyEnded(DatumGetInt64(heap_getattr(job, JobAttnum(jdesc, JC_ID), jdesc,
													 &isnull)),
						  isnull ? 0 : DatumGetInt64(array_id), state == QS_SUCCEEDED);
	}
}

/*
 * WriteClaimedEvent appends, for a job claimed and started in one write
 * (claim with start: SCHEDULED to RUNNING), the STATE event of its claim,
 * SCHEDULED to STARTING, before the one of its start, STARTING to RUNNING
 * (WriteStateEvent, whose from_state it sets): the history is that of a
 * claim and a RUNNING report.
 */
static void
WriteClaimedEvent(EventRow *ev, HeapTuple job, HeapTuple old, TupleDesc jdesc,
				  const char *actor)
{
	const char *starting = QsJobStateName(QS_STARTING);

	WriteEvent(ev, QS_EVENT_STATE, job, old, jdesc, actor);
	EventSet(ev, EF_TO_STATE, CStringGetTextDatum(starting), false);
	EventCopy(ev, EF_REASON, job, jdesc, JC_STATUS_REASON);
	EventInsert(ev);
	ev->from_state = starting;
}

/*
 * WritePreemption sets, on the STATE event of an attempt that a preemption
 * ended, the job it made room for, and writes the attempt's row of
 * job_preemption (job_preemption.c).
 */
static void
WritePreemption(EventRow *ev, HeapTuple job, HeapTuple old, TupleDesc jdesc)
{
	bool		isnull;
	Datum		preemptor = heap_getattr(job, JobAttnum(jdesc, JC_PREEMPTED_FOR), jdesc, &isnull);

	EventSet(ev, EF_PREEMPTED_FOR, preemptor, isnull);
	if (!isnull)
		QsRecordPreemption(ev->jobrel, job, old, DatumGetInt64(preemptor),
						   DatumGetInt64(ev->values[ev->attnums[EF_ID] - 1]),
						   DatumGetTimestampTz(ev->values[ev->attnums[EF_AT] - 1]));
}

/*
 * WriteStateEvent appends the STATE event of a job submitted (old NULL) or
 * whose state changed (old_state to state; claimed and started in one
 * write, two: WriteClaimedEvent), wakes the worker at commit
 * if the job now asks for capacity or has ended (WakesWorker), and tells
 * the end of a job (JobEnded).
 */
static void
WriteStateEvent(EventRow *ev, HeapTuple job, HeapTuple old, TupleDesc jdesc,
				const char *actor, QsJobState state, QsJobState old_state)
{
	if (old != NULL && old_state == QS_SCHEDULED && state == QS_RUNNING)
		WriteClaimedEvent(ev, job, old, jdesc, actor);
	if (WakesWorker(state))
		QsWakeWorkerAtCommit();
	if (old != NULL && (state == QS_SUCCEEDED || state == QS_FAILED))
		JobEnded(job, jdesc, state);
	WriteEvent(ev, QS_EVENT_STATE, job, old, jdesc, actor);
	if (old != NULL)
		EventCopy(ev, EF_REASON, job, jdesc, JC_STATUS_REASON);
	if (old != NULL && !QsHoldsCapacity(old_state) && QsHoldsCapacity(state))
		EventSet(ev, EF_WAITED, Waited(old, jdesc), false);
	/* an attempt's end, or the late success of a lost one (agent_api.c) */
	if (old != NULL && !QsHoldsCapacity(state) &&
		(QsHoldsCapacity(old_state) || QsWrite.has_exit_code))
		EventSet(ev, EF_EXIT_CODE, Int32GetDatum(QsWrite.exit_code),
				 !QsWrite.has_exit_code);
	if (old != NULL && QsHoldsCapacity(old_state) && !QsHoldsCapacity(state) &&
		JobInt(job, jdesc, JC_PREEMPTION_COUNT) > JobInt(old, jdesc, JC_PREEMPTION_COUNT))
		WritePreemption(ev, job, old, jdesc);
	EventInsert(ev);
}

/*
 * StopRequested tells whether an UPDATE of a job requested a stop: its
 * stop_reason became set, or changed (a terminate() of a job that was
 * stopping for another reason: reports must still tell it from a failure).
 */
static bool
StopRequested(HeapTuple old, HeapTuple job, TupleDesc jdesc)
{
	if (JobIsNull(job, jdesc, JC_STOP_REASON))
		return false;
	return JobIsNull(old, jdesc, JC_STOP_REASON) ||
		strcmp(JobText(old, jdesc, JC_STOP_REASON), JobText(job, jdesc, JC_STOP_REASON)) != 0;
}

/*
 * NoteConstrained writes a new generation of the classes of placement
 * constraints of a job's queue (constrained_change, tables.sql), as the
 * history is written (QsInsertHistoryRow): the job has placement
 * constraints and entered its share's order.
 */
static void
NoteConstrained(HeapTuple job, TupleDesc jdesc)
{
	Oid			nsp = get_namespace_oid(QS_SCHEMA, false);
	Relation	rel = table_open(get_relname_relid("constrained_change", nsp), RowExclusiveLock);
	Datum		values[2];
	bool		nulls[2] = {false, false};

	if (RelationGetDescr(rel)->natts != 2)
		elog(ERROR, "quota_sched: constrained_change must have two columns");
	values[0] = heap_getattr(job, JobAttnum(jdesc, JC_JOB_QUEUE), jdesc, &nulls[0]);
	values[1] = Int64GetDatum(nextval_internal(get_relname_relid("constrained_change_seq", nsp),
											   false));
	QsInsertHistoryRow(rel, heap_form_tuple(RelationGetDescr(rel), values, nulls));
	table_close(rel, NoLock);
}

/*
 * EntersConstrained tells whether a job with placement constraints
 * (instances_per_host or same_label) enters its share's order: it is
 * RUNNABLE with no dependency waiting, and was not (old NULL: submitted).
 */
static bool
EntersConstrained(HeapTuple job, HeapTuple old, TupleDesc jdesc)
{
	if (JobState(job, jdesc) != QS_RUNNABLE || !JobIsNull(job, jdesc, JC_DEPENDENCIES_WAITING))
		return false;
	if (JobIsNull(job, jdesc, JC_INSTANCES_PER_HOST) && JobIsNull(job, jdesc, JC_SAME_LABEL))
		return false;
	return old == NULL || JobState(old, jdesc) != QS_RUNNABLE ||
		!JobIsNull(old, jdesc, JC_DEPENDENCIES_WAITING);
}

/*
 * SubmittedEnd ends the history trigger of a submission, whose event is
 * written: it notes the job for the floors of the scans (scan_floor.c), in
 * constrained_change if it has placement constraints, and submits the
 * other jobs of an array it is index 0 of (QsExpandArray).  Each is done
 * here, in the trigger every submission fires anyway: no trigger more,
 * and no WHEN of one to read and plan at each statement, on the submit
 * path.
 */
static Datum
SubmittedEnd(EventRow *ev, TupleDesc jdesc, HeapTuple job)
{
	table_close(ev->rel, NoLock);
	QsFloorNoteSubmitted(jdesc, job);
	if (EntersConstrained(job, NULL, jdesc))
		NoteConstrained(job, jdesc);
	if (!JobIsNull(job, jdesc, JC_ARRAY_SIZE) && JobInt(job, jdesc, JC_ARRAY_INDEX) == 0)
		QsExpandArray(job, jdesc);
	return PointerGetDatum(NULL);
}

PG_FUNCTION_INFO_V1(qs_job_constrained_changed);

/*
 * qs_job_constrained_changed, the trigger job_constrained_update (AFTER
 * UPDATE OF state, dependencies_waiting, for each row): a job with
 * placement constraints that entered its share's order (sent back to
 * RUNNABLE, or its dependencies done) makes a new generation of its
 * queue's classes (submissions: SubmittedEnd).
 */
Datum
qs_job_constrained_changed(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_constrained_changed", false);
	TupleDesc	jdesc = RelationGetDescr(td->tg_relation);

	QsCheckSchemaVersion();
	if (!TRIGGER_FIRED_BY_UPDATE(td->tg_event))
		elog(ERROR, "quota_sched: job_constrained_changed must be fired by UPDATE");
	if (EntersConstrained(td->tg_newtuple, td->tg_trigtuple, jdesc))
		NoteConstrained(td->tg_newtuple, jdesc);
	return PointerGetDatum(NULL);
}

/*
 * qs_job_history appends the job_event rows of an INSERT or an UPDATE of a
 * job (AFTER, for each row; the UPDATE trigger fires only when one of the
 * columns below changed).  This is the only place history is written, so
 * no code path can forget it.  The rows are written directly
 * (QsInsertHistoryRow): no privilege check, so submitters need no right to
 * write history, and no SPI round trip on the submit path.  The kinds:
 *
 * - STATE: the job was submitted (from_state null) or changed state; the
 *   reason is its status_reason.  A dispatch carries how long the job
 *   waited since it last became RUNNABLE (waited).  Ending an attempt, it carries the exit
 *   code the agent reported, if any, and the job it made room for when
 *   preemption ended it.
 * - STOP: a stop was requested of a held job (the reason is the stop's,
 *   preempted_for the job it makes room for); TERMINATE when a user asked
 *   for it (terminate(): the actor is that user, the reason theirs).
 * - PRIORITY: the priority changed (old_priority, priority).
 * - PROMISE and PROMISE_LAPSED: preemption made room for the RUNNABLE
 *   job, or the promise lapsed with the job still waiting.
 *
 * Events that change no state have from_state = to_state = the job's.
 */
Datum
qs_job_history(PG_FUNCTION_ARGS)
{
	TriggerData *td = CheckJobTrigger(fcinfo, "job_history", false);
	TupleDesc	jdesc = RelationGetDescr(td->tg_relation);
	bool		is_update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);
	HeapTuple	job = is_update ? td->tg_newtuple : td->tg_trigtuple;
	HeapTuple	old = is_update ? td->tg_trigtuple : NULL;
	const char *actor = QsWrite.actor;
	QsJobState	state = JobState(job, jdesc);
	QsJobState	old_state = old ? JobState(old, jdesc) : state;
	EventRow	ev;

	QsCheckSchemaVersion();
	if (actor == NULL)
		actor = GetUserNameFromId(GetUserId(), false);
	EventOpen(&ev);
	ev.jobrel = td->tg_relation;
	if (old == NULL || state != old_state)
		WriteStateEvent(&ev, job, old, jdesc, actor, state, old_state);
	if (old == NULL)
		return SubmittedEnd(&ev, jdesc, job);
	if (StopRequested(old, job, jdesc) && state == old_state)
	{
		char	   *stop = JobText(job, jdesc, JC_STOP_REASON);
		QsStop		s;
		bool		terminate;

		if (!QsStopFromName(stop, &s))
			QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_STOP_REASON, stop,
						  JobNamed(job, jdesc));
		terminate = s == QS_STOP_TERMINATED;
		WriteEvent(&ev, terminate ? QS_EVENT_TERMINATE : QS_EVENT_STOP, job, old, jdesc, actor);
		if (terminate)
			EventCopy(&ev, EF_REASON, job, jdesc, JC_STATUS_REASON);
		else
		{
			EventSet(&ev, EF_REASON, CStringGetTextDatum(stop), false);
			EventCopy(&ev, EF_PREEMPTED_FOR, job, jdesc, JC_PREEMPTED_FOR);
		}
		EventInsert(&ev);
	}
	if (JobInt(old, jdesc, JC_PRIORITY) != JobInt(job, jdesc, JC_PRIORITY))
	{
		WriteEvent(&ev, QS_EVENT_PRIORITY, job, old, jdesc, actor);
		EventCopy(&ev, EF_OLD_PRIORITY, old, jdesc, JC_PRIORITY);
		EventInsert(&ev);
	}
	if (JobIsNull(old, jdesc, JC_PROMISED_AT) != JobIsNull(job, jdesc, JC_PROMISED_AT) &&
		state == old_state)
	{
		WriteEvent(&ev, JobIsNull(job, jdesc, JC_PROMISED_AT) ? QS_EVENT_PROMISE_LAPSED :
				   QS_EVENT_PROMISE, job, old, jdesc, actor);
		EventInsert(&ev);
	}
	table_close(ev.rel, NoLock);
	return PointerGetDatum(NULL);
}
