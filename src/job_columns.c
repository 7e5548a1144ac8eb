/*-------------------------------------------------------------------------
 *
 * job_columns.c
 *		Column numbers of quota_sched.job, looked up by name once per
 *		table (a later version may add columns; none depends on order).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attnum.h"
#include "utils/builtins.h"

#include "job_columns.h"

const char *const JobColumnNames[JC_COUNT] = {
	"name", "job_queue", "quota_share", "priority", "capacity_unit",
	"instance_count", "payload", "max_attempts", "preemption_retries",
	"timeout", "client_token", "tags",
	"id", "owner", "state", "status_reason", "status_reason_at",
	"stop_reason", "stop_requested_at", "preempted_for", "promised_at",
	"agent", "lease_until", "failed_attempts", "preemption_count",
	"submitted_at", "queued_at", "scheduled_at", "started_at", "stopped_at"
};

/*
 * JobAttnum returns the attribute number of a column of the job table whose
 * descriptor is desc.  The map is rebuilt when the table's row type changes
 * (the extension was dropped and created again in this session).
 */
AttrNumber
JobAttnum(TupleDesc desc, JobColumn column)
{
	static Oid	cached_type = InvalidOid;
	static AttrNumber attnums[JC_COUNT];

	if (desc->tdtypeid != cached_type)
	{
		for (int c = 0; c < JC_COUNT; c++)
		{
			attnums[c] = InvalidAttrNumber;
			for (int i = 0; i < desc->natts; i++)
			{
				Form_pg_attribute att = TupleDescAttr(desc, i);

				if (!att->attisdropped &&
					strcmp(NameStr(att->attname), JobColumnNames[c]) == 0)
					attnums[c] = att->attnum;
			}
			if (attnums[c] == InvalidAttrNumber)
				elog(ERROR, "quota_sched.job has no column \"%s\"", JobColumnNames[c]);
		}
		cached_type = desc->tdtypeid;
	}
	return attnums[column];
}
