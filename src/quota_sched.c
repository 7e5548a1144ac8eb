/*-------------------------------------------------------------------------
 *
 * quota_sched.c
 *		Module entry point: the settings (scheduling.md 6), the transaction
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

#include "config_cache.h"
#include "identity.h"
#include "job_submit.h"
#include "launcher.h"
#include "quota_sched.h"
#include "stats.h"
#include "usage.h"

PG_MODULE_MAGIC;

bool		QsEnabled = true;
bool		QsWakeOnCommit = true;
int			QsNaptimeMs = 1000;
int			QsStopTimeoutSeconds = 600;
int			QsMaxAgentLeaseSeconds = 3600;
char	   *QsDatabase = NULL;

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
	QsUsageXactEvent(event);
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
 * whose changes were undone: QsUsageSubXactAbort).
 */
static void
QsSubXactCallback(SubXactEvent event, SubTransactionId mySubid,
				  SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB)
	{
		QsResetWriteContext();
		QsUsageSubXactAbort();
	}
}

/*
 * DefineSettings declares the GUCs of scheduling.md 6.
 */
static void
DefineSettings(void)
{
	/*
	 * A postmaster setting can only be defined while the library preloads.
	 * Loaded later (no worker), the setting is defined all the same, to be
	 * read at reload and to do nothing: else MarkGUCPrefixReserved would
	 * remove a quota_sched.database line of postgresql.conf with a WARNING
	 * in every session that loads the library (doc/operations.md).
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomStringVariable("quota_sched.database",
								   "Database in which the quota_sched background worker runs passes.",
								   NULL, &QsDatabase, "postgres", PGC_POSTMASTER, 0,
								   NULL, NULL, NULL);
	else
		DefineCustomStringVariable("quota_sched.database",
								   "Database in which the quota_sched background worker runs passes.",
								   "No effect: quota_sched is not in shared_preload_libraries, so no worker runs.",
								   &QsDatabase, "postgres", PGC_SIGHUP, 0,
								   NULL, NULL, NULL);
	DefineCustomIntVariable("quota_sched.naptime",
							"Longest wait of the background worker between passes.",
							NULL, &QsNaptimeMs, 1000, 10, 3600 * 1000, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomBoolVariable("quota_sched.enabled",
							 "Whether the background worker runs passes.",
							 NULL, &QsEnabled, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("quota_sched.wake_on_commit",
							 "Whether a commit that changes jobs or configuration wakes the worker.",
							 NULL, &QsWakeOnCommit, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("quota_sched.stop_timeout",
							"Longest time a job whose stop was requested keeps its lease.",
							NULL, &QsStopTimeoutSeconds, 600, 1, 7 * 24 * 3600, PGC_SIGHUP,
							GUC_UNIT_S, NULL, NULL, NULL);
	DefineCustomIntVariable("quota_sched.max_agent_lease",
							"Longest time an agent's registration counts as live after its last claim or heartbeat.",
							NULL, &QsMaxAgentLeaseSeconds, 3600, 1, 7 * 24 * 3600, PGC_SIGHUP,
							GUC_UNIT_S, NULL, NULL, NULL);
	MarkGUCPrefixReserved("quota_sched");
}

/*
 * _PG_init declares the settings, registers the transaction callbacks and
 * the executor hook of the submission trigger (job_submit.c) and, when the
 * library is preloaded, the background worker's launcher and the
 * shared memory of the activity counters.
 */
void
_PG_init(void)
{
	DefineSettings();
	QsRegisterWorker();
	QsStatsRegister();
	QsResetWriteContext();
	RegisterXactCallback(QsXactCallback, NULL);
	RegisterSubXactCallback(QsSubXactCallback, NULL);
	QsRegisterConfigCache();
	QsInstallExecutorHook();
}
