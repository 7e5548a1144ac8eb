/*-------------------------------------------------------------------------
 *
 * job_preemption.c
 *		The rows of quota_sched.job_preemption (issue 42, item 7): each
 *		attempt that a preemption ended, written by the history trigger
 *		(job_history.c) beside the STATE event that ended it, with what
 *		the view preemptions shows of it, so that the view reads no other
 *		row: how long the attempt had run, and both jobs' share, owner and
 *		name.
 *
 * Written as the history is (QsInsertHistoryRow: no privilege check, no
 * row-level security), and the preemptor read the same way, by its
 * primary key under the statement's snapshot: whoever ends the victim's
 * attempt (its agent, the pass) need not see the preemptor's job.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "constants.h"
#include "job_columns.h"
#include "job_history.h"

/* The columns of job_preemption, by name. */
typedef enum PreemptionField
{
	PF_VICTIM_JOB,
	PF_EVENT_ID,
	PF_AT,
	PF_JOB_QUEUE,
	PF_CAPACITY_UNIT,
	PF_INSTANCE_COUNT,
	PF_VICTIM_SHARE,
	PF_VICTIM_OWNER,
	PF_VICTIM_NAME,
	PF_VICTIM_RAN,
	PF_PREEMPTOR_JOB,
	PF_PREEMPTOR_SHARE,
	PF_PREEMPTOR_OWNER,
	PF_PREEMPTOR_NAME,
	PF_REASON,
	PF_COUNT
} PreemptionField;

static const char *const PreemptionFieldNames[PF_COUNT] = {
	"victim_job", "event_id", "at", "job_queue", "capacity_unit", "instance_count",
	"victim_share", "victim_owner", "victim_name", "victim_ran", "preemptor_job",
	"preemptor_share", "preemptor_owner", "preemptor_name", "reason"
};

/* A row being written: where each field's column is, and the values. */
typedef struct PreemptionRow
{
	AttrNumber	attnums[PF_COUNT];
	Datum	   *values;
	bool	   *nulls;
} PreemptionRow;

/* Copy sets a field from a column of a job tuple. */
static void
Copy(PreemptionRow *row, PreemptionField f, HeapTuple job, TupleDesc jdesc, JobColumn c)
{
	int			i = row->attnums[f] - 1;

	row->values[i] = heap_getattr(job, JobAttnum(jdesc, c), jdesc, &row->nulls[i]);
}

static void
Set(PreemptionRow *row, PreemptionField f, Datum value)
{
	row->values[row->attnums[f] - 1] = value;
	row->nulls[row->attnums[f] - 1] = false;
}

/*
 * FetchJob returns a copy of the job tuple of id, as the statement's
 * snapshot sees it, or NULL when there is none (deleted).
 */
static HeapTuple
FetchJob(Relation jobrel, int64 id)
{
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT8EQ, Int64GetDatum(id));
	scan = systable_beginscan(jobrel, RelationGetPrimaryKeyIndex(jobrel), true,
							  GetActiveSnapshot(), 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		tuple = heap_copytuple(tuple);
	systable_endscan(scan);
	return tuple;
}

/*
 * QsRecordPreemption writes the job_preemption row of the attempt of job
 * (its new row; old, the row before the change) that a preemption for
 * preemptor ended, beside its STATE event (event_id, at).  victim_ran is
 * at less the attempt's dispatch (scheduled_at, which the pass sets to
 * its transaction's start, as the SCHEDULED event's at).
 */
void
QsRecordPreemption(Relation jobrel, HeapTuple job, HeapTuple old, int64 preemptor,
				   int64 event_id, TimestampTz at)
{
	TupleDesc	jdesc = RelationGetDescr(jobrel);
	Relation	rel = table_open(get_relname_relid("job_preemption",
												   get_namespace_oid(QS_SCHEMA, false)),
								 RowExclusiveLock);
	TupleDesc	desc = RelationGetDescr(rel);
	PreemptionRow row;
	HeapTuple	p = FetchJob(jobrel, preemptor);
	bool		isnull;
	Datum		dispatched = heap_getattr(old, JobAttnum(jdesc, JC_SCHEDULED_AT), jdesc, &isnull);

	QsAttnums(desc, "job_preemption", PreemptionFieldNames, PF_COUNT, row.attnums);
	row.values = palloc0(sizeof(Datum) * desc->natts);
	row.nulls = palloc(sizeof(bool) * desc->natts);
	memset(row.nulls, true, sizeof(bool) * desc->natts);
	Copy(&row, PF_VICTIM_JOB, job, jdesc, JC_ID);
	Set(&row, PF_EVENT_ID, Int64GetDatum(event_id));
	Set(&row, PF_AT, TimestampTzGetDatum(at));
	Copy(&row, PF_JOB_QUEUE, job, jdesc, JC_JOB_QUEUE);
	Copy(&row, PF_CAPACITY_UNIT, job, jdesc, JC_CAPACITY_UNIT);
	Copy(&row, PF_INSTANCE_COUNT, job, jdesc, JC_INSTANCE_COUNT);
	Copy(&row, PF_VICTIM_SHARE, job, jdesc, JC_QUOTA_SHARE);
	Copy(&row, PF_VICTIM_OWNER, job, jdesc, JC_OWNER);
	Copy(&row, PF_VICTIM_NAME, job, jdesc, JC_NAME);
	if (!isnull)
		Set(&row, PF_VICTIM_RAN,
			DirectFunctionCall2(timestamp_mi, TimestampTzGetDatum(at), dispatched));
	Set(&row, PF_PREEMPTOR_JOB, Int64GetDatum(preemptor));
	if (p != NULL)
	{
		Copy(&row, PF_PREEMPTOR_SHARE, p, jdesc, JC_QUOTA_SHARE);
		Copy(&row, PF_PREEMPTOR_OWNER, p, jdesc, JC_OWNER);
		Copy(&row, PF_PREEMPTOR_NAME, p, jdesc, JC_NAME);
	}
	Copy(&row, PF_REASON, job, jdesc, JC_STATUS_REASON);
	QsInsertHistoryRow(rel, heap_form_tuple(desc, row.values, row.nulls));
	table_close(rel, NoLock);
}
