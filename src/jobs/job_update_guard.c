/*-------------------------------------------------------------------------
 *
 * job_update_guard.c
 *		The UPDATE trigger of quota_sched.job: a user may change only a
 *		job's priority.
 *
 * Changes by the extension's own code are marked by QsWrite.system_write,
 * which only C code can set; they pass unchecked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "commands/trigger.h"
#include "fmgr.h"
#include "nodes/bitmapset.h"
#include "utils/builtins.h"
#include "utils/rel.h"

#include "identity.h"
#include "job_columns.h"
#include "launcher.h"
#include "word_io.h"

PG_FUNCTION_INFO_V1(qs_job_before_update);
PG_FUNCTION_INFO_V1(qs_job_lock_queues);

/*
 * qs_job_lock_queues does nothing since 0.2: it is here because the 0.1
 * install script creates a trigger function of it, which must name a
 * symbol of the library (every symbol a released script names stays:
 * sql/updates/README.md); the 0.2 upgrade drops both.  In 0.1 it took
 * every queue's lock for a user's UPDATE of jobs, until the user's
 * transaction ended: an open transaction stalled every pass.  A pass now
 * reads in one snapshot and never waits for a row a user holds (pass.c),
 * so a priority change needs no queue lock.
 */
Datum
qs_job_lock_queues(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	return PointerGetDatum(NULL);
}

/*
 * qs_job_before_update lets a user change only priority, within its range,
 * of a job that has not ended.  Any other column named in the UPDATE's SET
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

	QsCheckSchemaVersion();
	if (QsWrite.system_write)
		return PointerGetDatum(td->tg_newtuple);

	for (int c = 0; c < JC_COUNT; c++)
	{
		AttrNumber	attnum = JobAttnum(desc, c);

		if (c != JC_PRIORITY &&
			bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, td->tg_updatedcols))
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
	{
		Datum		state = heap_getattr(td->tg_trigtuple, JobAttnum(desc, JC_STATE), desc,
										 &isnull);
		char	   *name = isnull ? NULL : TextDatumGetCString(state);
		QsJobState	s = QS_RUNNABLE;

		if (name != NULL && !QsJobStateFromName(name, &s))
			QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_JOB_STATE, name,
						  psprintf("job " INT64_FORMAT,
								   DatumGetInt64(heap_getattr(td->tg_trigtuple,
															  JobAttnum(desc, JC_ID),
															  desc, &isnull))));
		/* an ended job is never scheduled again: a new priority means nothing */
		if (s == QS_SUCCEEDED || s == QS_FAILED)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("job " INT64_FORMAT " has ended (%s): its priority cannot change",
							DatumGetInt64(heap_getattr(td->tg_trigtuple, JobAttnum(desc, JC_ID),
													   desc, &isnull)), name)));
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
