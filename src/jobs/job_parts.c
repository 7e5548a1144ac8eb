/*-------------------------------------------------------------------------
 *
 * job_parts.c
 *		The parts of a job placed on hosts (scheduling.md 3.14) as every
 *		writer of stops sees them: a stop is told to the agent of each part
 *		that holds, and the parts not claimed yet are dropped at once.  (The
 *		agents' claims and reports on parts: agents/agent_parts.c.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"

#include "agent_wait.h"
#include "job_parts.h"
#include "query.h"

/* The current placement's condition: a part of the job's last dispatch. */
#define CURRENT_PART "p.placed_at = j.scheduled_at"

static QsQuery HoldingAgentsQuery = {
	"SELECT p.agent FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = $1 AND " CURRENT_PART " AND p.state IN ('CLAIMED', 'RUNNING')"
	" ORDER BY p.rank",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * NotifyOne sends one stop notification (scheduling.md 5.1), and wakes
 * the agent if it waits (agent_wait.c).
 */
static void
NotifyOne(int64 job_id, const char *agent, const char *reason)
{
	StringInfoData payload;

	initStringInfo(&payload);
	appendStringInfo(&payload, "{\"job_id\":" INT64_FORMAT ",\"agent\":", job_id);
	escape_json(&payload, agent ? agent : "");
	appendStringInfoString(&payload, ",\"reason\":");
	escape_json(&payload, reason);
	appendStringInfoChar(&payload, '}');
	Async_Notify("quota_sched_stop", payload.data);
	if (agent != NULL)
		QsWakeAgent(agent, QS_WAKE_STOP);
}

/*
 * QsNotifyStop tells the agents of a held job that it must stop: the agent
 * of each part that holds (claimed or running), or, for a job with no
 * parts (a unit that is not placed), the agent given.  Delivered at
 * commit.
 */
void
QsNotifyStop(int64 job_id, const char *agent, QsStop stop)
{
	Datum		arg = Int64GetDatum(job_id);
	uint64		n = QsQueryRun(&HoldingAgentsQuery, &arg, NULL, true, 0);

	if (n == 0)
	{
		NotifyOne(job_id, agent, QsStopName(stop));
		return;
	}
	for (uint64 i = 0; i < n; i++)
		NotifyOne(job_id, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
				  QsStopName(stop));
}

static QsQuery DropUnclaimedQuery = {
	"UPDATE quota_sched.job_part p"
	"   SET state = 'ENDED', ended_as = 'DROPPED', ended_at = now()"
	"  FROM quota_sched.job j"
	" WHERE p.job_id = ANY ($1) AND j.id = p.job_id AND " CURRENT_PART
	"   AND p.state = 'PLACED'",
	1, {INT8ARRAYOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsDropUnclaimedParts ends the unclaimed parts of jobs whose stop was
 * requested: a job with any part claimed is stopped by its claimed parts,
 * and the others are dropped at once (scheduling.md 3.14).
 */
void
QsDropUnclaimedParts(Datum job_ids)
{
	QsQueryRun(&DropUnclaimedQuery, &job_ids, NULL, false, 0);
}
