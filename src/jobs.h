/*-------------------------------------------------------------------------
 *
 * jobs.h
 *		Operations on single jobs shared by the agent and user functions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOBS_H
#define QS_JOBS_H

#include "postgres.h"

#include "fmgr.h"
#include "utils/timestamp.h"

#include "policy.h"

/* What an agent reports of a job it holds (report, release). */
typedef enum QsReport
{
	QS_REPORT_RUNNING,
	QS_REPORT_SUCCEEDED,
	QS_REPORT_FAILED,
	QS_REPORT_STOPPED,
	QS_REPORT_RELEASED
} QsReport;

/* A job row as the agent and user functions need it. */
typedef struct QsJobRow
{
	int64		id;
	char	   *job_queue;
	char	   *owner;
	char	   *state;
	char	   *agent;			/* NULL: unclaimed */
	QsJob		policy;			/* counters and the pending stop */
} QsJobRow;

extern Interval *QsStopTimeout(void);
extern void QsRequireQueue(const char *queue);
extern void QsEmitJobs(ReturnSetInfo *rsinfo, const char *where, Datum arg);
extern Datum QsLockQueuesOfAgent(const char *agent);
extern bool QsLockJob(int64 job_id, QsJobRow *row);
extern void QsEndAttempt(int64 job_id, QsAction action, QsCounter counter,
						 const char *reason);
extern Datum QsReturnJob(int64 job_id);
extern Datum QsAgentReport(FunctionCallInfo fcinfo, int64 job_id, const char *agent,
						   QsReport report, const char *reason);

#endif							/* QS_JOBS_H */
