/*-------------------------------------------------------------------------
 *
 * job_fit.c
 *		The notice of a submission that cannot run as the configuration is:
 *		a job above its share's or its environment's limit for its unit,
 *		which a pass would give a MISCONFIGURATION reason (scheduling.md
 *		3.7) and leave waiting until the configuration changes or its
 *		runnable timeout fails it.
 *
 * The limits are the pass's own (QsComputeFitLimits, CoreComputeFitLimits:
 * one rule for both), computed from the queue's configuration alone, so
 * they are kept per backend and queue until the configuration changes
 * (QsConfigGeneration): a submission pays a lookup, the first of a queue
 * after a change one load of the queue's state.  The limit of the live
 * agents (NO_AGENT_FITS) is not a misconfiguration and is not told.
 *
 * The notices are bounded: at most QS_MISFIT_NOTICES per statement, then
 * one saying that further ones are left out, so a bulk INSERT of a
 * thousand such jobs prints six lines, not a thousand.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "storage/proc.h"
#include "utils/memutils.h"

#include "config_cache.h"
#include "identity.h"
#include "job_fit.h"
#include "pass_load.h"
#include "policy.h"

#define QS_MISFIT_NOTICES 5

/* The fit limits of one queue, per share and unit (names in C order). */
typedef struct FitQueue
{
	char	   *queue;
	int			nshares;
	int			nunits;
	char	  **shares;
	char	  **units;
	QsFitLimit *limits;			/* [share * nunits + unit] */
	struct FitQueue *next;
} FitQueue;

static MemoryContext fit_cxt = NULL;
static FitQueue *fit_queues = NULL;
static uint64 fit_generation = 0;

/* The statement the notices were counted for, and how many it had. */
static LocalTransactionId notice_lxid = InvalidLocalTransactionId;
static CommandId notice_cid = InvalidCommandId;
static int	notice_count = 0;

/*
 * CopyFit copies into f, in fit_cxt, the names and fit limits of a loaded
 * queue state.
 */
static void
CopyFit(FitQueue *f, const QsQueueState *qs, const QsOutput *out)
{
	int			cells = qs->in.nshares * qs->in.nunits;

	f->nshares = qs->in.nshares;
	f->nunits = qs->in.nunits;
	f->shares = MemoryContextAlloc(fit_cxt, sizeof(char *) * (f->nshares + 1));
	f->units = MemoryContextAlloc(fit_cxt, sizeof(char *) * (f->nunits + 1));
	f->limits = MemoryContextAlloc(fit_cxt, sizeof(QsFitLimit) * (cells + 1));
	for (int s = 0; s < f->nshares; s++)
		f->shares[s] = MemoryContextStrdup(fit_cxt, qs->in.shares[s].name);
	for (int u = 0; u < f->nunits; u++)
		f->units[u] = MemoryContextStrdup(fit_cxt, qs->in.units[u].name);
	memcpy(f->limits, out->fit_limits, sizeof(QsFitLimit) * cells);
}

/*
 * LoadFit computes the fit limits of a queue as the owner of the tables,
 * and remembers them.  A queue that vanished is remembered with no limits:
 * nothing is told.  (The submission trigger that asks runs only on the
 * schema of the library's version: QsCheckSchemaVersion.)
 */
static FitQueue *
LoadFit(const char *queue, Oid owner)
{
	FitQueue   *f = MemoryContextAllocZero(fit_cxt, sizeof(FitQueue));
	QsSavedUser saved;
	QsQueueState qs;
	QsOutput	out;

	f->queue = MemoryContextStrdup(fit_cxt, queue);
	QsBecomeOwner(owner, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	if (QsLoadQueueState(&qs, queue, GetCurrentTransactionStartTimestamp(), false))
	{
		memset(&out, 0, sizeof(out));
		QsComputeFitLimits(&qs.in, &out);
		CopyFit(f, &qs, &out);
		QsFreeQueueState(&qs);
	}
	SPI_finish();
	QsRestoreUser(&saved);
	f->next = fit_queues;
	fit_queues = f;
	return f;
}

/*
 * FindFit returns the fit limits of a queue, loading them when the
 * configuration changed since they were computed, or they never were.
 */
static FitQueue *
FindFit(const char *queue, Oid owner)
{
	if (fit_cxt == NULL)
		fit_cxt = AllocSetContextCreate(TopMemoryContext, "quota_sched fit limits",
										ALLOCSET_SMALL_SIZES);
	if (fit_generation != QsConfigGeneration())
	{
		MemoryContextReset(fit_cxt);
		fit_queues = NULL;
		fit_generation = QsConfigGeneration();
	}
	for (FitQueue *f = fit_queues; f != NULL; f = f->next)
		if (strcmp(f->queue, queue) == 0)
			return f;
	return LoadFit(queue, owner);
}

/*
 * MayNotice counts a notice of the current statement, and tells whether
 * it is within the bound; the first one beyond it says so instead.
 */
static bool
MayNotice(void)
{
	CommandId	cid = GetCurrentCommandId(false);

	if (notice_lxid != MyProc->lxid || notice_cid != cid)
	{
		notice_lxid = MyProc->lxid;
		notice_cid = cid;
		notice_count = 0;
	}
	if (++notice_count <= QS_MISFIT_NOTICES)
		return true;
	if (notice_count == QS_MISFIT_NOTICES + 1)
		ereport(NOTICE,
				(errmsg("more jobs of this statement cannot run as configured; "
						"their notices are left out"),
				 errhint("SELECT id, status_reason FROM quota_sched.job WHERE status_reason "
						 "LIKE '%s:%%' lists them after the next pass.",
						 QsReasonName(QS_REASON_MISCONFIGURATION))));
	return false;
}

/*
 * QsNoticeMisfit raises a NOTICE when a new job (named name: its id means
 * nothing to the submitter yet) of count instances of unit,
 * in share of queue, is above a fit limit of the configuration as it is:
 * more than the environment has (SERVICE_ENVIRONMENT_MAX_RESOURCE), or
 * more than the share can ever have (QUOTA_MANAGEMENT_LIMIT_EXCEEDED).
 * The job is stored all the same: the configuration may change.
 */
void
QsNoticeMisfit(const char *name, const char *queue, const char *share, const char *unit,
			   int32 count, Oid owner)
{
	FitQueue   *f = FindFit(queue, owner);
	int			s = -1;
	int			u = -1;
	const QsFitLimit *limit;
	const char *reason;
	char	   *what;

	for (int i = 0; i < f->nshares && s < 0; i++)
		if (strcmp(f->shares[i], share) == 0)
			s = i;
	for (int i = 0; i < f->nunits && u < 0; i++)
		if (strcmp(f->units[i], unit) == 0)
			u = i;
	if (s < 0 || u < 0)
		return;
	limit = &f->limits[s * f->nunits + u];
	if (count <= limit->env_max && count <= limit->quota_max)
		return;
	if (!MayNotice())
		return;
	if (count > limit->env_max)
	{
		reason = QsMisfitName(QS_MISFIT_ENVIRONMENT);
		what = psprintf("the service environment of job queue \"%s\" has " INT64_FORMAT,
						queue, limit->env_max);
	}
	else
	{
		reason = QsMisfitName(QS_MISFIT_QUOTA);
		what = psprintf("quota share \"%s\" can have at most " INT64_FORMAT,
						share, limit->quota_max);
	}
	ereport(NOTICE,
			(errmsg("job \"%s\" cannot run as configured (%s:%s): it needs %d x %s, and %s",
					name, QsReasonName(QS_REASON_MISCONFIGURATION), reason, count, unit, what),
			 errhint("It waits as %s until the configuration changes or its runnable_timeout "
					 "ends it; quota_sched.capacity_plan shows the limits.",
					 QsJobStateName(QS_RUNNABLE))));
}
