/*-------------------------------------------------------------------------
 *
 * fleet.c
 *		The rows of quota_sched.agent: an agent's registration (agent_ready),
 *		what claim and heartbeat refresh of it (last_seen, lease), and its
 *		state (drain_agent).  See fleet.h.
 *
 * An agent's row is bound to the login that registered it, as a claimed
 * job is to the login that claimed it (agent_role): another login may not
 * refresh it, unless it is an admin's.  Claim and heartbeat of an agent
 * that never registered change nothing here.  A login registers and
 * claims only in the queues admins allowed it (agent_access,
 * QsRequireAgentAccess), and a registration counts as live for at most
 * quota_sched.max_agent_lease after its last claim or heartbeat.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/timestamp.h"

#include "fleet.h"
#include "identity.h"
#include "checks.h"
#include "launcher.h"
#include "query.h"
#include "constants.h"
#include "word_io.h"

int			QsMaxAgentLeaseSeconds = 3600;

/*
 * QsDefineFleetSettings declares quota_sched.max_agent_lease, the longest
 * liveness a registration records (agents.md).
 */
void
QsDefineFleetSettings(void)
{
	DefineCustomIntVariable("quota_sched.max_agent_lease",
							"Longest time an agent's registration counts as live after its last claim or heartbeat.",
							NULL, &QsMaxAgentLeaseSeconds, 3600, 1, 7 * 24 * 3600, PGC_SIGHUP,
							GUC_UNIT_S, NULL, NULL, NULL);
}

/*
 * Registers or refreshes an agent: a new name is the caller's ($2), ACTIVE
 * ($7) since now (state_changed_at); a name already registered is
 * refreshed (queue, unit, instances, labels, address, last_seen) only by
 * its own login or an admin ($6), and keeps its login, its state and when
 * it became so (an agent drained stays drained however often it restarts)
 * and its lease.  No row returned: the name is another login's.
 */
static QsQuery AgentReadyQuery = {
	"INSERT INTO quota_sched.agent AS a"
	"       (name, login, job_queue, capacity_unit, instances, state, registered_at, last_seen,"
	"        labels, address, state_changed_at)"
	" VALUES ($1, $2, $3, $4, $5, $7, now(), now(), $8, $9, now())"
	" ON CONFLICT (name) DO UPDATE"
	"   SET job_queue = excluded.job_queue, capacity_unit = excluded.capacity_unit,"
	"       instances = excluded.instances, labels = excluded.labels,"
	"       address = excluded.address, last_seen = now()"
	" WHERE a.login = excluded.login OR $6"
	" RETURNING a.*",
	9, {TEXTOID, NAMEOID, TEXTOID, TEXTOID, INT4OID, BOOLOID, TEXTOID, JSONBOID, TEXTOID},
	SPI_OK_INSERT_RETURNING
};

/* How many agents one login may register (each pass of a queue reads its agents). */
#define QS_MAX_AGENTS_PER_LOGIN 1000

static QsQuery AgentsOfLoginQuery = {
	"SELECT count(*) FROM quota_sched.agent WHERE login = $1 AND name <> $2",
	2, {NAMEOID, TEXTOID}, SPI_OK_SELECT
};

/*
 * CheckAgentsOfLogin refuses a new agent name of a login that has
 * registered QS_MAX_AGENTS_PER_LOGIN others (program_limit_exceeded), so
 * that no login can make every pass of a queue read an unbounded fleet.
 */
static void
CheckAgentsOfLogin(Name login, const char *agent)
{
	Datum		args[2] = {NameGetDatum(login), CStringGetTextDatum(agent)};
	bool		isnull;
	int64		n;

	QsQueryRun(&AgentsOfLoginQuery, args, NULL, true, 0);
	n = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
	if (n >= QS_MAX_AGENTS_PER_LOGIN)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("login \"%s\" has registered %lld agents, the most one login may",
						NameStr(*login), (long long) n),
				 errhint("An admin removes agents no longer used with quota_sched.forget_agent(name).")));
}

/* Whether a login has a row of its own for a queue (an index probe: most fleets). */
static QsQuery OwnAccessQuery = {
	"SELECT 1 FROM quota_sched.agent_access"
	" WHERE login = $1 AND (job_queue = $2 OR job_queue IS NULL) LIMIT 1",
	2, {NAMEOID, TEXTOID}, SPI_OK_SELECT
};

/* Whether a role may serve a queue through a role it is a member of. */
static QsQuery AgentAccessQuery = {
	"SELECT 1 FROM quota_sched.agent_access a"
	"  JOIN pg_catalog.pg_roles r ON r.rolname = a.login"
	" WHERE (a.job_queue = $2 OR a.job_queue IS NULL)"
	"   AND pg_catalog.pg_has_role($1, r.oid, 'USAGE')"
	" LIMIT 1",
	2, {OIDOID, TEXTOID}, SPI_OK_SELECT
};

/*
 * QsRequireAgentAccess raises insufficient_privilege unless the calling
 * role may serve a job queue as an agent: an admin, or a login that
 * agent_access allows the queue (itself or a role it is a member of).
 */
void
QsRequireAgentAccess(Oid caller, const char *queue)
{
	Datum		args[2];
	Name		login = palloc0(NAMEDATALEN);

	if (QsIsAdmin(caller))
		return;
	namestrcpy(login, GetUserNameFromId(caller, false));
	args[0] = NameGetDatum(login);
	args[1] = CStringGetTextDatum(queue);
	if (QsQueryRun(&OwnAccessQuery, args, NULL, true, 1) == 1)
		return;
	args[0] = ObjectIdGetDatum(caller);
	if (QsQueryRun(&AgentAccessQuery, args, NULL, true, 1) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("login \"%s\" may not serve job queue \"%s\"",
						GetUserNameFromId(caller, false), QsShortValue(queue)),
				 errdetail("An agent login registers and claims only in the job queues an "
						   "admin allowed it."),
				 errhint("An admin allows it: INSERT INTO quota_sched.agent_access (login, "
						 "job_queue) VALUES (%s, %s).",
						 quote_literal_cstr(GetUserNameFromId(caller, false)),
						 quote_literal_cstr(QsShortValue(queue)))));
}

/*
 * QsAgentReady registers or refreshes an agent for the calling login
 * (admin: the caller has the privileges of quota_sched_admin) with what it
 * offers, and returns its row, copied out of SPI's memory.  An agent name
 * another login registered is refused (42501) unless the caller is an
 * admin.
 */
Datum
QsAgentReady(const char *agent, const char *login, bool admin, const QsAgentOffer *offer)
{
	Datum		args[9];
	char		nulls[10] = "         ";
	Name		role = palloc0(NAMEDATALEN);

	namestrcpy(role, login);
	CheckAgentsOfLogin(role, agent);
	args[0] = CStringGetTextDatum(agent);
	args[1] = NameGetDatum(role);
	args[2] = CStringGetTextDatum(offer->queue);
	args[3] = CStringGetTextDatum(offer->unit);
	args[4] = Int32GetDatum(offer->instances ? *offer->instances : 0);
	nulls[4] = offer->instances ? ' ' : 'n';
	args[5] = BoolGetDatum(admin);
	args[6] = CStringGetTextDatum(QsAgentStateName(QS_AGENT_ACTIVE));
	args[7] = JsonbPGetDatum(offer->labels);
	args[8] = offer->address ? CStringGetTextDatum(offer->address) : (Datum) 0;
	nulls[8] = offer->address ? ' ' : 'n';
	if (QsQueryRun(&AgentReadyQuery, args, nulls, false, 0) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("agent \"%s\" is registered by another login than \"%s\"", agent, login),
				 errdetail("An agent name is the login's that registered it: only that login, "
						   "or an admin, may refresh it.")));
	QsWakeWorkerAtCommit();		/* what the queue's agents can take changed */
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * Refreshes a registered agent's last_seen and lease (at most $4,
 * quota_sched.max_agent_lease) when the login ($2; null: an admin, any)
 * is its own, and returns its state whether refreshed
 * or not (none: not registered).  It never waits for the agent's row: the
 * caller holds a queue's lock, and whoever holds one never waits for a row
 * lock (an admin's drain_agent() in a transaction left open would stall
 * the queue's passes); a row another transaction holds is not refreshed
 * this time, and its state is read as committed.
 */
static QsQuery AgentSeenQuery = {
	"WITH mine AS ("
	"  SELECT name FROM quota_sched.agent"
	"   WHERE name = $1 AND ($2::name IS NULL OR login = $2)"
	"     FOR NO KEY UPDATE SKIP LOCKED),"
	" seen AS ("
	"  UPDATE quota_sched.agent a SET last_seen = now(), lease = LEAST($3, $4)"
	"    FROM mine WHERE a.name = mine.name"
	"  RETURNING a.state)"
	" SELECT coalesce((SELECT state FROM seen),"
	"                 (SELECT state FROM quota_sched.agent WHERE name = $1)) AS state",
	4, {TEXTOID, NAMEOID, INTERVALOID, INTERVALOID}, SPI_OK_SELECT
};

/* Whether an agent is registered: most agents of a claim's hot path are not. */
static QsQuery AgentKnownQuery = {
	"SELECT 1 FROM quota_sched.agent WHERE name = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * StateIsDraining: whether the state in the first column of the last
 * statement's first row (null: none) is DRAINING.
 */
static bool
StateIsDraining(const char *agent)
{
	bool		isnull;
	Datum		state = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	int			word;

	if (isnull)
		return false;
	if (!QsWordFromName(QS_KIND_AGENT_STATE, TextDatumGetCString(state), &word))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_AGENT_STATE,
					  TextDatumGetCString(state), psprintf("agent \"%s\"", agent));
	return word == QS_AGENT_DRAINING;
}

/*
 * QsAgentSeen records that an agent claimed or heartbeat with a lease:
 * its row's last_seen and lease, when it is registered by that login
 * (login NULL: an admin acting for it, any login).  Returns whether the
 * agent is registered and DRAINING (then claim gives it nothing).
 */
bool
QsAgentSeen(const char *agent, const char *login, Interval *lease)
{
	Datum		args[4];
	char		nulls[5] = "    ";
	Name		role = palloc0(NAMEDATALEN);
	Interval   *most = palloc0(sizeof(Interval));

	args[0] = CStringGetTextDatum(agent);
	/* an agent that never registered costs its claims one index probe */
	if (QsQueryRun(&AgentKnownQuery, args, NULL, true, 1) == 0)
		return false;
	if (login != NULL)
		namestrcpy(role, login);
	args[1] = NameGetDatum(role);
	nulls[1] = login ? ' ' : 'n';
	args[2] = IntervalPGetDatum(lease);
	most->time = (int64) QsMaxAgentLeaseSeconds * USECS_PER_SEC;
	args[3] = IntervalPGetDatum(most);
	QsQueryRun(&AgentSeenQuery, args, nulls, false, 0);
	return StateIsDraining(agent);
}

static QsQuery AgentStateQuery = {
	"SELECT state FROM quota_sched.agent WHERE name = $1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * QsAgentDraining tells whether an agent is registered and DRAINING,
 * writing nothing (SPI connected).
 */
bool
QsAgentDraining(const char *agent)
{
	Datum		arg = CStringGetTextDatum(agent);

	return QsQueryRun(&AgentStateQuery, &arg, NULL, true, 1) > 0 && StateIsDraining(agent);
}

/*
 * Sets an agent's state ($2), and when it became so (state_changed_at)
 * when that is a change: draining a DRAINING agent again keeps the time
 * it has drained since.
 */
static QsQuery DrainAgentQuery = {
	"UPDATE quota_sched.agent"
	"   SET state = $2,"
	"       state_changed_at = CASE WHEN state = $2 THEN state_changed_at ELSE now() END"
	" WHERE name = $1 RETURNING *",
	2, {TEXTOID, TEXTOID}, SPI_OK_UPDATE_RETURNING
};

/*
 * ChangeAgent runs an admin's change of a registered agent (a query that
 * returns its row; $1 its name) and returns the row, copied out of SPI's
 * memory; an unknown agent raises no_data_found (P0002).  What the queue's
 * agents can take changed: the worker wakes at commit.
 */
static Datum
ChangeAgent(QsQuery *query, Datum *args, const char *agent)
{
	if (QsQueryRun(query, args, NULL, false, 0) != 1)
		ereport(ERROR,
				(errcode(ERRCODE_NO_DATA_FOUND),
				 errmsg("agent \"%s\" is not registered", agent),
				 errhint("An agent registers with agent_ready().")));
	QsWakeWorkerAtCommit();
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * QsDrainAgent sets a registered agent DRAINING (or ACTIVE again) and
 * returns its row (ChangeAgent).
 */
Datum
QsDrainAgent(const char *agent, bool draining)
{
	Datum		args[2] = {CStringGetTextDatum(agent),
		CStringGetTextDatum(QsAgentStateName(draining ? QS_AGENT_DRAINING : QS_AGENT_ACTIVE))};

	return ChangeAgent(&DrainAgentQuery, args, agent);
}

static QsQuery ForgetAgentQuery = {
	"DELETE FROM quota_sched.agent WHERE name = $1 RETURNING *",
	1, {TEXTOID}, SPI_OK_DELETE_RETURNING
};

/*
 * QsForgetAgent removes an agent's registration and returns the row it
 * had (ChangeAgent).  The jobs it holds are not touched.
 */
Datum
QsForgetAgent(const char *agent)
{
	Datum		arg = CStringGetTextDatum(agent);

	return ChangeAgent(&ForgetAgentQuery, &arg, agent);
}
