/*-------------------------------------------------------------------------
 *
 * agent_parts.h
 *		The agents' side of jobs placed on hosts (agent_parts.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_AGENT_PARTS_H
#define QS_AGENT_PARTS_H

#include "funcapi.h"
#include "utils/timestamp.h"

#include "job_store.h"
#include "policy.h"

/*
 * What an agent reports of a job it holds: report()'s words (QsReport,
 * words.h), and a release, which no word names.
 */
#define QS_REPORT_RELEASED ((QsReport) QS_REPORT__COUNT)

extern void QsTakeParts(Datum job_ids, Datum placed_at, Datum ranks, const char *agent,
						const char *role, Interval *lease, bool start);
extern Datum QsClaimParts(const char *queue, const char *unit, int max_jobs, int max_instances,
						  const char *agent, const char *role, Interval *lease, bool start,
						  int *nparts, int64 *ninstances, bool *left);
extern void QsPartReport(const QsJobRow *row, int64 job_id, const char *agent,
						 QsReport report, const char *reason, int32 attempt,
						 const int32 *exit_code, const char *output, Oid caller);
extern bool QsAgentHasPart(int64 job_id, const char *agent);
extern int32 QsHeldPartRank(int64 job_id, const char *agent, Oid caller);
extern void QsExtendPartLeases(ReturnSetInfo *rsinfo, const char *agent, const char *role,
							   Interval *lease, Interval *stop_timeout, Datum queues);

#endif							/* QS_AGENT_PARTS_H */
