/*-------------------------------------------------------------------------
 *
 * quota_sched.c
 *		Module entry point: the settings (each defined by the module that
 *		reads it), the transaction
 *		callbacks, and, when the library is preloaded, the registration of
 *		the background worker's launcher and of the activity counters'
 *		shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "utils/guc.h"

#include "agent_api.h"
#include "agent_wait.h"
#include "config_cache.h"
#include "fleet.h"
#include "identity.h"
#include "job_end.h"
#include "job_submit.h"
#include "launcher.h"
#include "scan_floor.h"
#include "stats.h"
#include "usage.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * QsXactCallback resets the write context at every transaction end, commit
 * or abort, so that an error thrown mid-write cannot leave it set; and
 * lets the counters of held capacity refuse a commit they did not write
 * (usage.c).
 */
static void
QsXactCallback(XactEvent event, void *arg)
{
	QsScanFloorXactEvent(event);	/* first: before any wake-up */
	QsUsageXactEvent(event);
	QsUsageCacheXactEvent(event);
	QsJobEndXactEvent(event);
	QsAgentWaitXactEvent(event);
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			QsResetWriteContext();
			QsWorkerXactEnd(event == XACT_EVENT_COMMIT);
			break;
		default:
			break;
	}
}

/*
 * QsSubXactCallback resets the write context when a subtransaction aborts:
 * an error caught by the caller's exception block must not leave the rest
 * of the transaction writing as the system (nor a tally of held capacity
 * whose changes were undone: QsUsageSubXactAbort; nor floors to raise past
 * jobs whose dispatch was undone: QsScanFloorSubXactAbort).
 */
static void
QsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	QsJobEndSubXactEvent(event);
	QsAgentWaitSubXactEvent(event);
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		QsResetWriteContext();
		QsUsageSubXactAbort();
		QsScanFloorSubXactAbort();
	}
}

/*
 * _PG_init has each module declare its settings, registers the transaction callbacks and
 * the executor hook of the submission trigger (job_submit.c) and, when the
 * library is preloaded, the background worker's launcher and the
 * shared memory of the activity counters.
 */
void
_PG_init(void)
{
	QsDefineWorkerSettings();
	QsDefineAgentSettings();
	QsDefineFleetSettings();
	MarkGUCPrefixReserved("quota_sched");
	QsRegisterWorker();
	QsJobEndRegister();
	QsAgentWaitRegister();
	QsScanFloorRegister();
	QsStatsRegister();
	QsUsageCacheRegister();
	QsResetWriteContext();
	RegisterXactCallback(QsXactCallback, NULL);
	RegisterSubXactCallback(QsSubXactCallback, NULL);
	QsRegisterConfigCache();
	QsInstallExecutorHook();
}
