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
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "job_columns.h"
#include "policy.h"
#include "quota_sched.h"

PG_FUNCTION_INFO_V1(qs_job_history);

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
 * WakesWorker tells whether a job's new state may change what the next
 * pass decides: the job asks for capacity (RUNNABLE: submitted, requeued,
 * released) or stopped holding or asking for it (SUCCEEDED, FAILED).  Being
 * dispatched, claimed or started changes no decision: those commits leave
 * the worker asleep (scheduling.md 6).
 */
static bool
WakesWorker(const char *state)
{
	QsJobState	s;

	return QsJobStateFromName(state, &s) &&
		(s == QS_RUNNABLE || s == QS_SUCCEEDED || s == QS_FAILED);
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
	if (WakesWorker(TextDatumGetCString(heap_getattr(tuple, JobAttnum(desc, JC_STATE),
													 desc, &isnull))))
		QsWakeWorkerAtCommit();
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
