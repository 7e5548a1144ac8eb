/*-------------------------------------------------------------------------
 *
 * quota_sched.c
 *		Module entry point, the per-transaction write context and the
 *		per-queue lock that serialises passes against other writers.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/hashfn.h"
#include "fmgr.h"
#include "utils/builtins.h"

#include "quota_sched.h"

PG_MODULE_MAGIC;

QsWriteContext QsWrite;

/* First key of the advisory locks quota_sched takes ("QS"). */
#define QS_LOCK_CLASS 0x5153

void		_PG_init(void);

/*
 * QsResetWriteContext clears the write context: nothing is a system write
 * until the extension's own code says so again.
 */
void
QsResetWriteContext(void)
{
	QsWrite.system_write = false;
	QsWrite.pass_id = 0;
	QsWrite.actor = NULL;
}

/*
 * QsXactCallback resets the write context at every transaction end, commit
 * or abort, so that an error thrown mid-write cannot leave it set.
 */
static void
QsXactCallback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			QsResetWriteContext();
			break;
		default:
			break;
	}
}

/*
 * QsLockQueue takes the transaction-level advisory lock of a job queue.
 * A pass takes it exclusively; claims, reports, priority changes and
 * terminations take it shared, so none of them interleaves with a pass.
 * Advisory locks assign no transaction id.
 */
void
QsLockQueue(const char *job_queue, bool exclusive)
{
	int32		key = (int32) hash_bytes((const unsigned char *) job_queue,
										 strlen(job_queue));

	if (exclusive)
		DirectFunctionCall2(pg_advisory_xact_lock_int4,
							Int32GetDatum(QS_LOCK_CLASS), Int32GetDatum(key));
	else
		DirectFunctionCall2(pg_advisory_xact_lock_shared_int4,
							Int32GetDatum(QS_LOCK_CLASS), Int32GetDatum(key));
}

/*
 * _PG_init registers the transaction callback.  The background worker is
 * registered here too, when the library is preloaded (a later issue).
 */
void
_PG_init(void)
{
	QsResetWriteContext();
	RegisterXactCallback(QsXactCallback, NULL);
}
