/*-------------------------------------------------------------------------
 *
 * rendezvous.c
 *		A multi-host job's rendezvous (doc/agents.md "Running a multi-host
 *		job"): the port that the agent holding rank 0 of an attempt chose
 *		(attempt_started's port), and what each agent the job is placed on
 *		learns of its peers (job_peers): every part's rank, agent, address,
 *		instances, whether it is claimed, and rank 0's port.
 *
 * A part's command starts once every part is claimed and the port is
 * known; the agents wait by calling job_peers, woken by the
 * notifications of quota_sched_peers (a claim of a part, a port given).
 * job_peers takes no lock: it only reads.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/async.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "agent_wait.h"
#include "checks.h"
#include "identity.h"
#include "query.h"
#include "rendezvous.h"

/*
 * QsPortArg returns the port argument (0 for a null): a TCP port, 1 to
 * 65535 (22023 otherwise).
 */
int32
QsPortArg(FunctionCallInfo fcinfo, int argno)
{
	int32		port;

	if (PG_ARGISNULL(argno))
		return 0;
	port = PG_GETARG_INT32(argno);
	if (port < 1 || port > 65535)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid port %d", port),
				 errdetail("A rendezvous port is a TCP port, 1 to 65535, or null for none.")));
	return port;
}

/* The port of rank 0's part of a job's current placement (its row locked by the caller). */
static QsQuery PartPortQuery = {
	"SELECT p.port FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = $1 AND p.placed_at = j.scheduled_at AND p.rank = 0",
	1, {INT8OID}, SPI_OK_SELECT
};

static QsQuery SetPartPortQuery = {
	"UPDATE quota_sched.job_part p SET port = $2 FROM quota_sched.job j"
	" WHERE j.id = $1 AND p.job_id = j.id AND p.placed_at = j.scheduled_at AND p.rank = 0",
	2, {INT8OID, INT4OID}, SPI_OK_UPDATE
};

/* The port of the attempt's row of rank 0 that this agent's run wrote (not ended). */
static QsQuery AttemptPortQuery = {
	"SELECT a.port FROM quota_sched.job_attempt a"
	" WHERE a.job_id = $1 AND a.attempt = $2 AND a.rank = 0 AND a.agent = $3"
	"   AND a.ended_at IS NULL",
	3, {INT8OID, INT4OID, TEXTOID}, SPI_OK_SELECT
};

/*
 * QsGivePort takes the rendezvous port of a job's attempt from the agent
 * that holds the part of the rank given (the caller checked that it holds
 * it): only rank 0's agent gives one (55000 otherwise); the same port
 * again is a no-op, another one is refused (55000).  A job placed on
 * hosts keeps it in rank 0's part (placed); job_attempt keeps it too
 * (QsRecordAttemptStart).  A new port notifies quota_sched_peers, whose
 * payload is the job's id: the agents of the other parts wait for it.
 */
void
QsGivePort(int64 job_id, int32 attempt, int32 rank, bool placed, const char *agent,
		   int32 port)
{
	Datum		args[3] = {Int64GetDatum(job_id), Int32GetDatum(attempt),
	CStringGetTextDatum(agent)};
	bool		isnull = true;
	int32		had = 0;

	if (rank != 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("agent \"%s\" holds rank %d of job " INT64_FORMAT ", not rank 0",
						agent, rank, job_id),
				 errdetail("The rendezvous port is given by the agent of rank 0.")));
	if (QsQueryRun(placed ? &PartPortQuery : &AttemptPortQuery, args, NULL, false, 1) == 1)
		had = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
										  &isnull));
	if (!isnull && had == port)
		return;					/* a retry */
	if (!isnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("attempt %d of job " INT64_FORMAT " has rendezvous port %d, not %d",
						attempt, job_id, had, port),
				 errdetail("An attempt's port is given once.")));
	if (placed)
	{
		args[1] = Int32GetDatum(port);
		QsQueryRun(&SetPartPortQuery, args, NULL, false, 0);
	}
	QsNotifyPeers(job_id);
}

/* The agents of a job's placement now. */
static QsQuery PlacedAgentsQuery = {
	"SELECT unnest(part_agents) FROM quota_sched.job WHERE id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * QsNotifyPeers notifies quota_sched_peers of a job (its id): a part
 * claimed, a port given, for the agents of its other parts that wait for
 * them; and wakes those of its agents that wait (agent_wait.c).
 */
void
QsNotifyPeers(int64 job_id)
{
	Datum		arg = Int64GetDatum(job_id);
	uint64		n = QsQueryRun(&PlacedAgentsQuery, &arg, NULL, true, 0);

	Async_Notify(QS_PEERS_CHANNEL, psprintf(INT64_FORMAT, job_id));
	for (uint64 i = 0; i < n; i++)
		QsWakeAgent(SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1),
					QS_WAKE_PEERS);
}

/* What job_peers needs to know of the job and the asking agent. */
static QsQuery PeersAuthQuery = {
	"SELECT j.state IN ('SCHEDULED', 'STARTING', 'RUNNING'), j.part_agents IS NOT NULL,"
	"       j.agent = $2 AND j.state IN ('STARTING', 'RUNNING'), j.agent_role,"
	"       (SELECT p.claimed_at IS NOT NULL FROM quota_sched.job_part p"
	"         WHERE p.job_id = j.id AND p.placed_at = j.scheduled_at AND p.agent = $2 LIMIT 1),"
	"       (SELECT p.agent_role FROM quota_sched.job_part p"
	"         WHERE p.job_id = j.id AND p.placed_at = j.scheduled_at AND p.agent = $2 LIMIT 1),"
	"       (SELECT a.login FROM quota_sched.agent a WHERE a.name = $2)"
	"  FROM quota_sched.job j WHERE j.id = $1",
	2, {INT8OID, TEXTOID}, SPI_OK_SELECT
};

/* The parts of a job's current placement. */
static QsQuery PlacedPeersQuery = {
	"SELECT p.rank, p.agent, p.address, p.instances, p.claimed_at IS NOT NULL, p.port, p.attempt"
	"  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = $1 AND p.placed_at = j.scheduled_at ORDER BY p.rank",
	1, {INT8OID}, SPI_OK_SELECT
};

/* The one part of a job that is not placed: on the agent that claimed it. */
static QsQuery OnePeerQuery = {
	"SELECT 0, j.agent, coalesce(g.address, j.agent), j.instance_count, true, a.port,"
	"       1 + j.failed_attempts + j.preemption_count + j.lease_losses"
	"  FROM quota_sched.job j LEFT JOIN quota_sched.agent g ON g.name = j.agent"
	"  LEFT JOIN quota_sched.job_attempt a ON a.job_id = j.id AND a.rank = 0"
	"       AND a.attempt = 1 + j.failed_attempts + j.preemption_count + j.lease_losses"
	"       AND a.agent = j.agent AND a.ended_at IS NULL"
	" WHERE j.id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

/* A text column of the first row of the last result, or NULL. */
static char *
TextColumn(int col)
{
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col);
}

/* A boolean column of the first row of the last result; a null is false. */
static bool
BoolColumn(int col)
{
	bool		isnull;
	Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, col, &isnull);

	return !isnull && DatumGetBool(d);
}

/*
 * MayAskPeers tells whether the caller (role, admin) may ask for a job's
 * peers as the agent given (PeersAuthQuery's answer, placed: the job is
 * placed on hosts): an agent the job is placed on now, as the login that
 * claimed its part, or (not claimed yet) that it registered with; of a
 * job not placed, the agent that claimed it, as that login.
 */
static bool
MayAskPeers(bool placed, const char *role, bool admin)
{
	char	   *claimer = placed ? TextColumn(6) : TextColumn(4);
	char	   *login = TextColumn(7);

	if (!BoolColumn(1))
		return false;			/* not placed now: queued or over */
	if (!placed)
		return BoolColumn(3) && (admin || (claimer && strcmp(claimer, role) == 0));
	if (SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 5) == NULL)
		return false;			/* no part on this agent */
	if (admin)
		return true;
	if (BoolColumn(5))
		return claimer != NULL && strcmp(claimer, role) == 0;
	return login != NULL && strcmp(login, role) == 0;
}

/*
 * QsJobPeers returns (rank, peer_agent, address, instances, claimed, port,
 * attempt) of each part of the job's current placement into rsinfo's
 * tuplestore, for the agent given: an unknown job is P0002, an agent the
 * caller may not ask for (MayAskPeers) 42501.
 */
void
QsJobPeers(ReturnSetInfo *rsinfo, int64 job_id, const char *agent, Oid caller)
{
	Datum		args[2] = {Int64GetDatum(job_id), CStringGetTextDatum(agent)};
	char	   *role = GetUserNameFromId(caller, false);
	bool		placed;
	uint64		n;

	if (QsQueryRun(&PeersAuthQuery, args, NULL, true, 1) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("job " INT64_FORMAT " does not exist", job_id)));
	placed = BoolColumn(2);
	if (!MayAskPeers(placed, role, QsIsAdmin(caller)))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not ask for the peers of job " INT64_FORMAT
						" as agent \"%s\"", role, job_id, QsShortValue(agent)),
				 errdetail("job_peers is for the agents a job is placed on now, as the login "
						   "that claimed their part (or may claim it), or for an admin.")));
	n = QsQueryRun(placed ? &PlacedPeersQuery : &OnePeerQuery, args, NULL, true, 0);
	for (uint64 i = 0; i < n; i++)
	{
		Datum		values[7];
		bool		isnull[7];

		for (int c = 0; c < 7; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1,
									  &isnull[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
	}
}
