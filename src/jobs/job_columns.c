/*-------------------------------------------------------------------------
 *
 * job_columns.c
 *		Column numbers of quota_sched.job, looked up by name once per
 *		table (none depends on order),
 *		and the checks that the job triggers (job_submit.c,
 *		job_update_guard.c, job_history.c) share.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attnum.h"
#include "commands/trigger.h"
#include "utils/builtins.h"

#include "job_columns.h"

const char *const JobColumnNames[JC_COUNT] = {
	"name", "job_queue", "quota_share", "priority", "capacity_unit",
	"instance_count", "payload", "max_attempts", "preemption_retries",
	"timeout", "client_token", "tags", "instances_per_host", "same_label",
	"array_size", "depends_on", "id", "owner", "state", "status_reason", "status_reason_at",
	"stop_reason", "stop_requested_at", "preempted_for", "promised_at",
	"agent", "lease_until", "failed_attempts", "preemption_count",
	"submitted_at", "queued_at", "scheduled_at", "started_at", "stopped_at",
	"agent_role", "array_id", "array_index",
	"dependencies_waiting", "dependency_failed", "has_dependents", "max_lease_losses", "lease_losses", "claim_requeues",
	"claim_backoff_until"
};

/*
 * QsAttnums finds the attribute number of each of the n columns named, of
 * the table (of the extension's schema, for a message) whose descriptor is
 * desc: a column the table lacks is an error.
 */
void
QsAttnums(TupleDesc desc, const char *table, const char *const *names, int n,
		  AttrNumber *attnums)
{
	for (int c = 0; c < n; c++)
	{
		attnums[c] = InvalidAttrNumber;
		for (int i = 0; i < desc->natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(desc, i);

			if (!att->attisdropped && strcmp(NameStr(att->attname), names[c]) == 0)
				attnums[c] = att->attnum;
		}
		if (attnums[c] == InvalidAttrNumber)
			elog(ERROR, "quota_sched.%s has no column \"%s\"", table, names[c]);
	}
}

/*
 * JobAttnum returns the attribute number of a column of the job table whose
 * descriptor is desc.  The map is rebuilt when the table's row type changes
 * (the extension was dropped and created again in this session) or its
 * number of attributes does (it was updated: ALTER TABLE ... ADD COLUMN
 * keeps the row type).  The library runs only on the schema of its own
 * version (QsCheckSchemaVersion): a column it does not find is an error.
 */
AttrNumber
JobAttnum(TupleDesc desc, JobColumn column)
{
	static Oid	cached_type = InvalidOid;
	static int	cached_natts = 0;
	static AttrNumber attnums[JC_COUNT];

	if (desc->tdtypeid != cached_type || desc->natts != cached_natts)
	{
		QsAttnums(desc, "job", JobColumnNames, JC_COUNT, attnums);
		cached_type = desc->tdtypeid;
		cached_natts = desc->natts;
	}
	return attnums[column];
}

/*
 * CheckJobTrigger checks that a trigger function fires as declared: as a
 * row trigger, BEFORE or AFTER as given.  fn names it in the error.
 */
TriggerData *
CheckJobTrigger(FunctionCallInfo fcinfo, const char *fn, bool before)
{
	TriggerData *td = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		TRIGGER_FIRED_BEFORE(td->tg_event) != before)
		elog(ERROR, "quota_sched: %s: must be fired as a row trigger on quota_sched.job", fn);
	return td;
}

/*
 * CheckIntRange raises check_violation unless the value of a job's integer
 * column is from lo to hi; the message names the column and the value, the
 * detail the range (only its lower bound when hi is PG_INT32_MAX).
 */
void
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
