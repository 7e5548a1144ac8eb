/*-------------------------------------------------------------------------
 *
 * pass.c
 *		run_pass(): the scheduling pass of one queue, or of every queue in
 *		turn, in the caller's transaction.  Loads the queue's state, lets the
 *		policy core decide, and applies the decisions — or, with dry_run,
 *		only returns them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "identity.h"
#include "job_store_pass.h"
#include "held_cache.h"
#include "host_cache.h"
#include "pass.h"
#include "borrow_memory.h"
#include "pass_apply.h"
#include "pass_load.h"
#include "policy.h"
#include "query.h"
#include "queue_lock.h"
#include "stats.h"

PG_FUNCTION_INFO_V1(qs_run_pass);

/*
 * EmitDecisions appends the decisions of a pass to the result set.
 */
static void
EmitDecisions(QsQueueState *qs, const QsOutput *out, Tuplestorestate *store,
			  TupleDesc desc)
{
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];
		Datum		values[4];
		bool		nulls[4] = {false, false, false, d->reason == NULL};

		values[0] = Int64GetDatum(d->job_id);
		values[1] = CStringGetTextDatum(QsActionName(d->action));
		values[2] = CStringGetTextDatum(qs->in.shares[d->share].name);
		values[3] = d->reason ? CStringGetTextDatum(d->reason) : (Datum) 0;
		tuplestore_putvalues(store, desc, values, nulls);
	}
}

/*
 * DecidedIds returns the ids of every job a pass's decisions write (those
 * it decides on, and those whose promise it sets or lets lapse) as a
 * bigint[]; ids may repeat.
 */
static Datum
DecidedIds(const QsOutput *out)
{
	QsArray		ids;

	QsArrayInit(&ids, INT8OID, out->ndecisions + out->npromised + out->nlapsed);
	for (int i = 0; i < out->ndecisions; i++)
		QsArrayPush(&ids, Int64GetDatum(out->decisions[i].job_id), false);
	for (int i = 0; i < out->npromised; i++)
		QsArrayPush(&ids, Int64GetDatum(out->promised[i]), false);
	for (int i = 0; i < out->nlapsed; i++)
		QsArrayPush(&ids, Int64GetDatum(out->lapsed[i]), false);
	return QsArrayDatum(&ids);
}

/*
 * DecideLocked loads a queue's state and decides its pass, with every row
 * the decisions write locked, and returns false when the queue does not
 * exist.  No one who holds a queue's lock waits for a row lock: a user,
 * who takes no queue lock, may hold the row of a job of their own for as
 * long as they like (SELECT ... FOR UPDATE, or a priority UPDATE or a
 * terminate not yet committed).  So the pass first reads in one snapshot
 * and decides, then locks the rows it would write without waiting.  When
 * another transaction holds one of them, or one changed since the snapshot
 * (a terminate or priority change that committed meanwhile), it decides
 * again, reading afresh with reads that lock the rows they return and pass
 * over those locked by others: the second decision writes only rows it
 * holds.  The jobs passed over are put in
 * passed_over (up to QS_PASSED_OVER_MAX; *npassed_over counts them all).
 */
static bool
DecideLocked(QsQueueState *qs, QsOutput *out, const char *queue, bool dry_run,
			 int64 *passed_over, int *npassed_over)
{
	TimestampTz now = GetCurrentTransactionStartTimestamp();
	int64		again;
	int			nagain;

	*npassed_over = 0;
	if (!QsLoadQueueState(qs, queue, now, false))
		return false;
	QsRunPass(&qs->in, out);
	if (dry_run)
		return true;
	if (QsLockJobs(DecidedIds(out), passed_over, QS_PASSED_OVER_MAX, npassed_over) == 0)
		return true;

	QsFreeQueueState(qs);
	if (!QsLoadQueueState(qs, queue, now, true))
		elog(ERROR, "quota_sched: job queue \"%s\" vanished during its pass", queue);
	QsRunPass(&qs->in, out);
	if (QsLockJobs(DecidedIds(out), &again, 1, &nagain) != 0)
		elog(ERROR, "quota_sched: the pass of job queue \"%s\" decided on job " INT64_FORMAT
			 ", whose row it did not lock", queue, again);
	return true;
}

/*
 * QsRunQueuePass runs the pass of one queue and returns how many decisions
 * it made (-1: no such queue).  It holds the queue's lock exclusively until
 * the transaction ends, so passes, claims, reports and terminations on the
 * queue never interleave with it (a priority change takes no queue lock,
 * and a terminate holds it only while it runs: a pass passes over the rows
 * they hold, and decides again on those they changed since its snapshot).  A dry
 * run, which writes nothing, holds the lock in shared mode while it reads
 * and decides, and not a moment longer: no pass interleaves with it, and
 * it holds up no pass once it has returned, whatever its transaction does
 * next.  With wake_at, it sets *wake_at to when a min_runtime exemption
 * that kept a job from its victims ends, or the fence_grace of a lease
 * that ran out (scheduling.md 3.10), if that is before *wake_at (0: none
 * yet): a pass then may decide what this one could not.  Jobs whose
 * rows another transaction holds locked are passed over (DecideLocked) and
 * recorded in queue_status (QsWritePassedOver).
 */
int
QsRunQueuePass(const char *queue, bool dry_run, Tuplestorestate *store, TupleDesc desc,
			   TimestampTz *wake_at)
{
	QsSavedUser saved;
	QsQueueState qs;
	QsOutput	out;
	TimestampTz started = GetCurrentTimestamp();
	int			ndecisions = -1;
	int			mark = dry_run ? QsBeginCallLocks() : 0;

	QsBeginSystemWrite("pass", &saved);
	QsWrite.pass = true;
	PG_TRY();
	{
		int64		passed_over[QS_PASSED_OVER_MAX];
		int			npassed_over;

		QsLockQueue(queue, !dry_run);
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "quota_sched: SPI_connect failed");
		if (DecideLocked(&qs, &out, queue, dry_run, passed_over, &npassed_over))
		{
			if (wake_at != NULL && out.wake_at != QS_NO_TIME &&
				(*wake_at == 0 || out.wake_at < *wake_at))
				*wake_at = out.wake_at;
			if (!dry_run)
			{
				QsApplyDecisions(&qs, &out, started);
				QsWritePassedOver(&qs, passed_over, npassed_over);
				QsWriteBorrowMemory(&qs);
				QsCompactChanges(queue);
				if (qs.hosts_held != NULL)
					QsFoldHostsHeld(queue, qs.hosts_held);
			}
			if (store != NULL)
				EmitDecisions(&qs, &out, store, desc);
			ndecisions = out.ndecisions;
			QsFreeQueueState(&qs);
		}
		SPI_finish();
	}
	PG_FINALLY();
	{
		QsEndSystemWrite(&saved);
		if (dry_run)
			QsEndCallLocks(mark);
	}
	PG_END_TRY();
	if (!dry_run && ndecisions >= 0)
		QsStatsNotePass(queue, started, GetCurrentTimestamp());
	return ndecisions;
}

static QsQuery AllQueuesQuery = {
	"SELECT name FROM quota_sched.job_queue ORDER BY name COLLATE \"C\"",
	0, {InvalidOid}, SPI_OK_SELECT
};

/*
 * QsAllQueues lists every job queue, in the C order of their names (the
 * order in which whoever locks several queues takes their locks), in the
 * caller's memory.  It reads as the extension's owner, with a snapshot of
 * its own: the worker remembers the configuration tables first, so that a
 * queue committed after this snapshot is announced by an invalidation it
 * recognises (worker.c).
 */
List *
QsAllQueues(void)
{
	List	   *queues = NIL;
	MemoryContext outer = CurrentMemoryContext;
	QsSavedUser saved;
	uint64		n;

	QsBecomeOwner(QsExtensionOwner(), &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	n = QsQueryRun(&AllQueuesQuery, NULL, NULL, false, 0);
	for (uint64 i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(outer);

		queues = lappend(queues, SPI_getvalue(SPI_tuptable->vals[i],
											  SPI_tuptable->tupdesc, 1));
		MemoryContextSwitchTo(old);
	}
	SPI_finish();
	QsRestoreUser(&saved);
	return queues;
}

/*
 * qs_run_pass(job_queue text DEFAULT NULL, dry_run boolean DEFAULT false)
 * RETURNS TABLE (job_id bigint, action text, quota_share text, reason text):
 * the pass of one queue, or with NULL of every queue in turn (scheduling.md 3).
 */
Datum
qs_run_pass(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		dry_run;
	List	   *queues;
	ListCell   *lc;

	QsCheckSchemaVersion();
	/* a null is no default: taken for false, it would run a real pass */
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dry_run must not be null"),
				 errhint("Leave dry_run out for its default, false.")));
	dry_run = PG_GETARG_BOOL(1);

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("quota_sched passes cannot run during recovery")));
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("run_pass() must run in a READ COMMITTED transaction"),
				 errdetail("A pass reads what committed before it took its queue's lock; "
						   "a REPEATABLE READ or SERIALIZABLE snapshot would be older.")));
	InitMaterializedSRF(fcinfo, 0);
	if (PG_ARGISNULL(0))
		queues = QsAllQueues();
	else
		queues = list_make1(text_to_cstring(PG_GETARG_TEXT_PP(0)));
	foreach(lc, queues)
	{
		if (QsRunQueuePass(lfirst(lc), dry_run, rsinfo->setResult, rsinfo->setDesc, NULL) < 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("job queue \"%s\" does not exist", QsShortValue(lfirst(lc)))));
	}
	return (Datum) 0;
}
