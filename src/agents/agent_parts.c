/*-------------------------------------------------------------------------
 *
 * agent_parts.c
 *		The agents' side of jobs placed on hosts (scheduling.md 3.14): a
 *		claim takes the parts placed on the calling agent (the job is
 *		STARTING once every part is claimed, RUNNING once every part runs);
 *		a heartbeat renews the leases of its parts; a report is about the
 *		agent's own part: one part that fails or is released makes the
 *		others stop (PEER_FAILED, PEER_RELEASED), and once no part holds
 *		the job ends as they say.  An agent acts only on parts placed on an
 *		agent of its login (or an admin on any).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "agent_parts.h"
#include "identity.h"
#include "job_attempt.h"
#include "job_parts.h"
#include "job_store.h"
#include "job_store_pass.h"
#include "query.h"
#include "rendezvous.h"
#include "word_io.h"

/* The current placement's condition: a part of the job's last dispatch. */
#define CURRENT_PART "p.placed_at = j.scheduled_at"
#define HOLDING_PART "p.state IN ('CLAIMED', 'RUNNING')"

/*
 * The parts placed on agent $1 that it may claim: PLACED, of the current
 * placement of a SCHEDULED job of queue $2 (and unit $3) with no stop
 * pending, oldest dispatch first, locked (others' claims skip them).
 */
static QsQuery ClaimablePartsQuery = {
	"SELECT p.job_id, p.placed_at, p.rank, p.instances, cardinality(j.part_agents) > 1"
	"  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.agent = $1 AND p.state = 'PLACED' AND " CURRENT_PART
	"   AND j.job_queue = $2 AND ($3::text IS NULL OR j.capacity_unit = $3)"
	"   AND j.state = 'SCHEDULED' AND j.stop_reason IS NULL"
	" ORDER BY j.scheduled_at, j.id"
	"   FOR NO KEY UPDATE OF p SKIP LOCKED",
	3, {TEXTOID, TEXTOID, TEXTOID}, SPI_OK_SELECT
};

static QsQuery ClaimPartsQuery = {
	"UPDATE quota_sched.job_part p"
	"   SET state = CASE WHEN $5 THEN 'RUNNING' ELSE 'CLAIMED' END,"
	"       lease_until = now() + $4, claimed_at = now(), agent_role = $6"
	"  FROM unnest($1::int8[], $2::timestamptz[], $3::int4[]) AS c(job_id, placed_at, rank)"
	" WHERE (p.job_id, p.placed_at, p.rank) = (c.job_id, c.placed_at, c.rank)",
	6, {INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT4ARRAYOID, INTERVALOID, BOOLOID, NAMEOID},
	SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * The parts of earlier placements of the jobs whose parts agent $3 just
 * claimed ($1, placed at $2) that the agent still holds (told to let go:
 * the job went on without them) end, RELEASED: an agent that claims a job
 * again has let go of what it held of it (the shipped agent kills the
 * attempt it still runs), so that heartbeat and report know one part of
 * the job on it.  Rows another transaction holds are passed over.
 */
static QsQuery EndEarlierPartsQuery = {
	"WITH o AS (SELECT p.job_id, p.placed_at, p.rank FROM quota_sched.job_part p"
	"             JOIN unnest($1::int8[], $2::timestamptz[]) AS c(job_id, placed_at)"
	"               ON p.job_id = c.job_id AND p.placed_at < c.placed_at"
	"            WHERE p.agent = $3 AND " HOLDING_PART
	"              FOR NO KEY UPDATE OF p SKIP LOCKED)"
	" UPDATE quota_sched.job_part p SET state = 'ENDED', ended_as = 'RELEASED', ended_at = now()"
	"   FROM o WHERE (p.job_id, p.placed_at, p.rank) = (o.job_id, o.placed_at, o.rank)",
	3, {INT8ARRAYOID, TIMESTAMPTZARRAYOID, TEXTOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * The jobs of $1 as their parts say: claimed (rank 0's agent, the role $2
 * of the first claim) once any part is, STARTING once every part is, with
 * the earliest lease of the parts that hold; RUNNING (started now) once
 * every part runs.  One write of each job, whatever it changes: a job whose
 * parts are claimed and started at once goes from SCHEDULED to RUNNING, and
 * its history has the claim's event and the start's (job_history.c).
 */
static QsQuery SyncJobsQuery = {
	"UPDATE quota_sched.job j"
	"   SET agent = j.part_agents[1], agent_role = coalesce(j.agent_role, $2),"
	"       state = CASE WHEN a.not_running = 0 THEN 'RUNNING'"
	"                    WHEN a.placed = 0 AND j.state = 'SCHEDULED' THEN 'STARTING'"
	"                    ELSE j.state END,"
	"       started_at = CASE WHEN a.not_running = 0 THEN now() ELSE j.started_at END,"
	"       lease_until = a.lease"
	"  FROM (SELECT p.job_id, count(*) FILTER (WHERE p.state = 'PLACED') AS placed,"
	"               count(*) FILTER (WHERE p.state <> 'RUNNING') AS not_running,"
	"               min(p.lease_until) FILTER (WHERE " HOLDING_PART ") AS lease"
	"          FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	"         WHERE p.job_id = ANY ($1) AND " CURRENT_PART " GROUP BY p.job_id) a"
	" WHERE j.id = a.job_id AND j.state IN ('SCHEDULED', 'STARTING')",
	2, {INT8ARRAYOID, NAMEOID}, SPI_OK_UPDATE, QS_BY_IDS
};

static QsQuery LockJobsQuery = {
	"SELECT 1 FROM quota_sched.job WHERE id = ANY ($1) ORDER BY id FOR NO KEY UPDATE",
	1, {INT8ARRAYOID}, SPI_OK_SELECT, QS_BY_IDS
};

/*
 * SyncJobs brings jobs whose parts changed to the state their parts say
 * (SyncJobsQuery).  The jobs' rows are locked first, and
 * their parts counted after: two agents that claim the two parts of a job
 * at once each wait for the other's commit on the job's row, and the last
 * one counts both parts claimed (counted before the wait, in the
 * statement that updates the row, its own snapshot would have had the
 * other's part PLACED, and the job would have stayed SCHEDULED with every
 * part claimed).
 */
static void
SyncJobs(Datum ids, const char *role)
{
	Name		name = palloc0(NAMEDATALEN);
	Datum		args[2] = {ids, NameGetDatum(name)};

	namestrcpy(name, role);
	QsQueryRun(&LockJobsQuery, args, NULL, false, 0);
	QsQueryRun(&SyncJobsQuery, args, NULL, false, 0);
}

/* The parts a claim takes (PickParts). */
typedef struct Picked
{
	QsArray		job_id;
	QsArray		placed_at;
	QsArray		rank;
	int			n;
	int64		instances;
	int			passed_over;	/* claimable parts it did not take */
	QsArray		with_peers;		/* the jobs among them of several parts */
} Picked;

/*
 * PickParts picks the parts placed on the agent that a claim takes, up to
 * max_jobs parts and max_instances instances (0: no bound), passing over a
 * part that would take the total beyond it; it counts the parts it passed
 * over, those beyond max_jobs too.
 */
static void
PickParts(const char *queue, const char *unit, const char *agent, int max_jobs,
		  int max_instances, Picked *picked)
{
	Datum		args[3] = {CStringGetTextDatum(agent), CStringGetTextDatum(queue),
	unit ? CStringGetTextDatum(unit) : (Datum) 0};
	char		nulls[3] = {' ', ' ', unit ? ' ' : 'n'};
	uint64		n = QsQueryRun(&ClaimablePartsQuery, args, nulls, false, 0);

	QsArrayInit(&picked->job_id, INT8OID, (int) n);
	QsArrayInit(&picked->placed_at, TIMESTAMPTZOID, (int) n);
	QsArrayInit(&picked->rank, INT4OID, (int) n);
	QsArrayInit(&picked->with_peers, INT8OID, 0);
	for (uint64 i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		count = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));

		if (picked->n == max_jobs)
		{
			picked->passed_over += (int) (n - i);
			break;
		}
		if (max_instances > 0 && picked->instances + count > max_instances)
		{
			picked->passed_over++;
			continue;
		}
		picked->instances += count;
		picked->n++;
		QsArrayPush(&picked->job_id, SPI_getbinval(tup, desc, 1, &isnull), false);
		QsArrayPush(&picked->placed_at, SPI_getbinval(tup, desc, 2, &isnull), false);
		QsArrayPush(&picked->rank, SPI_getbinval(tup, desc, 3, &isnull), false);
		if (DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull)))
			QsArrayPush(&picked->with_peers, SPI_getbinval(tup, desc, 1, &isnull), false);
	}
}

/*
 * QsTakeParts claims for an agent parts placed on it (bigint[] job_ids,
 * timestamptz[] placed_at, int[] ranks), CLAIMED until now + lease
 * (RUNNING at once with start), ends the parts of earlier placements of
 * those jobs it still held, and brings their jobs to the state the parts
 * say: the writes of a claim (QsClaimParts), and of a pass that gives an
 * agent a job of one part at its dispatch (pass_apply.c).
 */
void
QsTakeParts(Datum job_ids, Datum placed_at, Datum ranks, const char *agent, const char *role,
			Interval *lease, bool start)
{
	Datum		args[6] = {job_ids, placed_at, ranks, IntervalPGetDatum(lease), BoolGetDatum(start)};
	Datum		earlier[3] = {job_ids, placed_at, CStringGetTextDatum(agent)};
	Name		name = palloc0(NAMEDATALEN);

	namestrcpy(name, role);
	args[5] = NameGetDatum(name);
	QsQueryRun(&ClaimPartsQuery, args, NULL, false, 0);
	QsQueryRun(&EndEarlierPartsQuery, earlier, NULL, false, 0);
	SyncJobs(job_ids, role);
}

/*
 * QsClaimParts claims for an agent the parts placed on it (PickParts,
 * QsTakeParts), and notifies quota_sched_peers of each job of several
 * parts (the agents waiting for their peers).  Returns the jobs' ids as a
 * bigint[] ((Datum) 0: none), and the parts and instances taken, and
 * whether it passed over claimable parts for want of room (*left).
 */
Datum
QsClaimParts(const char *queue, const char *unit, int max_jobs, int max_instances,
			 const char *agent, const char *role, Interval *lease, bool start,
			 int *nparts, int64 *ninstances, bool *left)
{
	Picked		picked = {0};
	Datum		ids;

	PickParts(queue, unit, agent, max_jobs, max_instances, &picked);
	*nparts = picked.n;
	*ninstances = picked.instances;
	*left = picked.passed_over > 0;
	if (picked.n == 0)
		return (Datum) 0;
	ids = QsArrayDatum(&picked.job_id);
	QsTakeParts(ids, QsArrayDatum(&picked.placed_at), QsArrayDatum(&picked.rank), agent, role,
				lease, start);
	/*
	 * The agents of a job's other parts may be waiting for this one
	 * (rendezvous.c); a job of one part has none.  Every listener of the
	 * database is signalled at a commit that notifies, whatever it listens
	 * to: a fleet's every host, at every claim, if all were notified.
	 */
	for (int i = 0; i < picked.with_peers.n; i++)
		QsNotifyPeers(DatumGetInt64(picked.with_peers.values[i]));
	return ids;
}

/* An agent's part of a job, as a report finds it (PartOf). */
typedef struct PartRow
{
	bool		found;
	int64		job_id;
	Datum		placed_at;
	int32		attempt;
	int32		rank;
	QsPartState state;
	bool		current;		/* of the job's placement now, which holds */
	bool		let_go;			/* its agent was told to let go */
	char	   *agent_role;		/* the role that claimed it; NULL: none yet */
} PartRow;

static QsQuery PartOfQuery = {
	"SELECT p.placed_at, p.attempt, p.rank, p.state,"
	"       " CURRENT_PART " AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING'),"
	"       p.stop_reason IS NOT NULL, p.agent_role"
	"  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = $1 AND p.agent = $2"
	" ORDER BY " HOLDING_PART " DESC, p.placed_at DESC LIMIT 1 FOR NO KEY UPDATE OF p",
	2, {INT8OID, TEXTOID}, SPI_OK_SELECT
};

/*
 * PartOf finds the part of a job placed on an agent that a report is
 * about, locked: the one the agent holds (claimed or running), else the
 * latest.  A part told to let go while the job was placed again on the
 * same agent is held until its agent says it ended: that report is about
 * it, not about the new part placed beside it.
 */
static PartRow
PartOf(int64 job_id, const char *agent)
{
	Datum		args[2] = {Int64GetDatum(job_id), CStringGetTextDatum(agent)};
	PartRow		part = {0};
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	int			state;

	if (QsQueryRun(&PartOfQuery, args, NULL, false, 0) == 0)
		return part;
	tup = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	part.found = true;
	part.job_id = job_id;
	part.placed_at = SPI_getbinval(tup, desc, 1, &isnull);
	part.attempt = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
	part.rank = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	if (!QsWordFromName(QS_KIND_PART_STATE, SPI_getvalue(tup, desc, 4), &state))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_PART_STATE,
					  SPI_getvalue(tup, desc, 4), psprintf("job " INT64_FORMAT, job_id));
	part.state = (QsPartState) state;
	part.current = DatumGetBool(SPI_getbinval(tup, desc, 5, &isnull));
	part.let_go = DatumGetBool(SPI_getbinval(tup, desc, 6, &isnull));
	part.agent_role = SPI_getvalue(tup, desc, 7);
	return part;
}

static QsQuery SetPartQuery = {
	"UPDATE quota_sched.job_part"
	"   SET state = $4, ended_as = $5, exit_code = $6,"
	"       ended_at = CASE WHEN $4 = 'ENDED' THEN now() END"
	" WHERE (job_id, placed_at, rank) = ($1, $2, $3)",
	6, {INT8OID, TIMESTAMPTZOID, INT4OID, TEXTOID, TEXTOID, INT4OID}, SPI_OK_UPDATE
};

/*
 * SetPart writes a part's new state, and how it ended (an ending report:
 * its word and the exit code reported).
 */
static void
SetPart(int64 job_id, const PartRow *part, QsPartState state, const char *ended_as,
		const int32 *exit_code)
{
	Datum		args[6] = {Int64GetDatum(job_id), part->placed_at, Int32GetDatum(part->rank),
		CStringGetTextDatum(QsPartStateName(state)),
		ended_as ? CStringGetTextDatum(ended_as) : (Datum) 0,
	exit_code ? Int32GetDatum(*exit_code) : (Datum) 0};
	char		nulls[6] = {' ', ' ', ' ', ' ', ended_as ? ' ' : 'n', exit_code ? ' ' : 'n'};

	QsQueryRun(&SetPartQuery, args, nulls, false, 0);
}

/* What the parts of a job's current placement say, once one ended. */
static QsQuery PartsLeftQuery = {
	"SELECT count(*) FILTER (WHERE " HOLDING_PART " AND p.stop_reason IS NULL),"
	"       coalesce(bool_and(p.ended_as IS NOT DISTINCT FROM 'SUCCEEDED'), false),"
	"       coalesce(bool_or(p.ended_as = 'FAILED'), false)"
	"  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = $1 AND " CURRENT_PART,
	1, {INT8OID}, SPI_OK_SELECT
};

static QsQuery PeerStopQuery = {
	"UPDATE quota_sched.job SET stop_reason = $2, stop_requested_at = now()"
	" WHERE id = $1 AND stop_reason IS NULL",
	2, {INT8OID, TEXTOID}, SPI_OK_UPDATE
};

/* A job's id as a bigint[] of one. */
static Datum
OneId(int64 job_id)
{
	Datum		id = Int64GetDatum(job_id);

	return PointerGetDatum(construct_array(&id, 1, INT8OID, 8, true, TYPALIGN_DOUBLE));
}

/*
 * PeerStop requests a stop of a job one of whose parts failed or was
 * released while others hold (scheduling.md 3.14): its unclaimed parts
 * are dropped, the agents of the others told.
 */
static void
PeerStop(int64 job_id, QsStop stop)
{
	Datum		args[2] = {Int64GetDatum(job_id), CStringGetTextDatum(QsStopName(stop))};

	QsQueryRun(&PeerStopQuery, args, NULL, false, 0);
	QsDropUnclaimedParts(OneId(job_id));
	QsNotifyStop(job_id, NULL, stop);
}

/*
 * AfterPartEnded goes on once an agent's part of a job ended as its report
 * says: while other parts hold, a failure or a release stops them (unless
 * a stop is pending already); once none holds, the job ends as its parts
 * say: SUCCEEDED when every part succeeded, a failed attempt when one
 * failed, else as its pending stop says (3.6's outcome, or the first
 * peer's cause), else released.  A job of one part (the one that ended)
 * is as its report says, with no statement to read its parts.
 */
static void
AfterPartEnded(const QsJobRow *row, int64 job_id, QsReport report, const char *reason)
{
	Datum		arg = Int64GetDatum(job_id);
	HeapTuple	tup;
	bool		isnull;
	bool		one_part = row->job.nparts == 1;
	int64		holding = 0;
	bool		all_succeeded = report == QS_REPORT_SUCCEEDED,
				any_failed = report == QS_REPORT_FAILED;
	QsStopOutcome o;

	if (!one_part)
	{
		QsQueryRun(&PartsLeftQuery, &arg, NULL, false, 0);
		tup = SPI_tuptable->vals[0];
		holding = DatumGetInt64(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		all_succeeded = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull));
		any_failed = DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 3, &isnull));
	}
	if (holding > 0)
	{
		if ((report == QS_REPORT_FAILED || report == QS_REPORT_RELEASED) &&
			row->job.stop == QS_STOP_NONE)
			PeerStop(job_id, report == QS_REPORT_FAILED ? QS_STOP_PEER_FAILED :
					 QS_STOP_PEER_RELEASED);
		return;
	}
	if (!one_part)
		QsDropUnclaimedParts(OneId(job_id));
	if (all_succeeded)
	{
		if (row->state == QS_STARTING)
			QsChangeJob(job_id, QS_CHANGE_RUNNING, NULL);
		QsChangeJob(job_id, QS_CHANGE_SUCCEEDED, reason);
		return;
	}
	if (any_failed)
	{
		o = QsFailedOutcome(&row->job);
		o.reason = reason ? reason : QsReportName(QS_REPORT_FAILED);
	}
	else if (row->job.stop != QS_STOP_NONE)
		o = QsStoppedOutcome(&row->job);
	else
		o = (QsStopOutcome) {QS_REQUEUE, QS_COUNT_NONE,
			reason ? reason : QsReasonName(QS_REASON_RELEASED)};
	QsEndAttempt(job_id, o.action, o.counter, o.reason);
}

/*
 * RequirePartRole refuses a report on a part another role claimed unless
 * the caller is an admin, who is then the actor of the history: the rule
 * of jobs that are not placed (agent_api.c's RequireReporter), per part.
 */
static void
RequirePartRole(const PartRow *part, const char *agent, Oid caller, const char *role)
{
	if (part->agent_role != NULL && strcmp(part->agent_role, role) == 0)
		return;
	if (!QsIsAdmin(caller))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("role \"%s\" may not act for agent \"%s\" on job " INT64_FORMAT,
						role, agent, part->job_id),
				 errdetail("A part of a job is the business of the role that claimed it, "
						   "or of an admin.")));
	QsWrite.actor = role;		/* an admin acting for the agent */
}

/*
 * PartEndWord is the word of how a part ended for an ending report.
 */
static const char *
PartEndWord(QsReport report)
{
	return report == QS_REPORT_SUCCEEDED ? QsPartEndName(QS_PART_SUCCEEDED) :
		report == QS_REPORT_FAILED ? QsPartEndName(QS_PART_FAILED) :
		report == QS_REPORT_STOPPED ? QsPartEndName(QS_PART_STOPPED) :
		QsPartEndName(QS_PART_RELEASED);
}

/*
 * NotHeld raises object_not_in_prerequisite_state: the agent's part of the
 * job is not in a state for that report.
 */
static void
NotHeld(int64 job_id, const char *agent, const char *why)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("job " INT64_FORMAT " is not held by agent \"%s\"", job_id, agent),
			 errdetail("Its part on the agent %s.", why)));
}

/*
 * QsPartReport applies an agent's report (or release: QS_REPORT__COUNT) on
 * its part of a job placed on hosts, the job's row locked (row): RUNNING
 * runs the part (and the job once every part runs); an end ends the part,
 * records the part's exit code and output, and goes on as AfterPartEnded
 * says.  A report about an attempt that is over, or repeating the part's
 * state, changes nothing; a part whose agent was told to let go (the job
 * went on without it) only ends.
 */
void
QsPartReport(const QsJobRow *row, int64 job_id, const char *agent, QsReport report,
			 const char *reason, int32 attempt, const int32 *exit_code, const char *output,
			 Oid caller)
{
	char	   *role = GetUserNameFromId(caller, false);
	PartRow		part = PartOf(job_id, agent);
	bool		ends = report != QS_REPORT_RUNNING;

	if (!part.found || part.state == QS_PART_PLACED)
		NotHeld(job_id, agent, part.found ? "is not claimed" :
				"does not exist: the job is not placed on it");
	RequirePartRole(&part, agent, caller, role);
	if ((attempt > 0 && attempt != part.attempt) || (ends && part.state == QS_PART_ENDED) ||
		(!ends && part.state == QS_PART_RUNNING && part.current))
		return;					/* over, or a repeat */
	if (part.state == QS_PART_ENDED)
		NotHeld(job_id, agent, "has ended");
	if (!part.current || part.let_go)
	{
		if (!ends)
			NotHeld(job_id, agent, "must let go: the job went on without it");
		SetPart(job_id, &part, QS_PART_ENDED, PartEndWord(report), exit_code);
		return;
	}
	if (!ends)
	{
		SetPart(job_id, &part, QS_PART_RUNNING, NULL, NULL);
		SyncJobs(OneId(job_id), role);
		return;
	}
	if (report == QS_REPORT_STOPPED && row->job.stop == QS_STOP_NONE)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("job " INT64_FORMAT " has no stop to acknowledge", job_id)));
	SetPart(job_id, &part, QS_PART_ENDED, PartEndWord(report), exit_code);
	QsRecordAttemptEnd(job_id, part.attempt, part.rank, agent, exit_code, output);
	AfterPartEnded(row, job_id, report, reason);
}

/*
 * The parts on agent $1 that it holds, of jobs of the queues $4 (whose
 * locks the caller holds): those of the jobs' current placements that
 * were not told to let go get their leases renewed (until now + $2, at
 * most the stop's request + $3), passing over rows another transaction
 * holds; each is returned with the stop it must make (NOT_CLAIMED: the
 * job went on without it) and its lease.  Only the parts the role $5
 * claimed count (null: an admin's heartbeat, every part).
 */
static QsQuery ExtendPartsQuery = {
	"WITH mine AS ("
	"   SELECT p.job_id, p.placed_at, p.rank, p.lease_until, p.stop_reason AS part_stop,"
	"          j.stop_reason AS job_stop, j.stop_requested_at,"
	"          " CURRENT_PART " AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING') AS current"
	"     FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	"    WHERE p.agent = $1 AND " HOLDING_PART " AND j.job_queue = ANY ($4)"
	"      AND ($5::name IS NULL OR p.agent_role = $5)),"
	" locked AS ("
	"   SELECT p.job_id, p.placed_at, p.rank FROM quota_sched.job_part p"
	"     JOIN mine m ON (m.job_id, m.placed_at, m.rank) = (p.job_id, p.placed_at, p.rank)"
	"    WHERE m.current AND m.part_stop IS NULL FOR NO KEY UPDATE OF p SKIP LOCKED),"
	" extended AS ("
	"   UPDATE quota_sched.job_part p"
	"      SET lease_until = CASE WHEN m.stop_requested_at IS NULL THEN now() + $2"
	"            ELSE least(now() + $2, m.stop_requested_at + $3) END"
	"     FROM mine m JOIN locked l"
	"          ON (l.job_id, l.placed_at, l.rank) = (m.job_id, m.placed_at, m.rank)"
	"    WHERE (p.job_id, p.placed_at, p.rank) = (m.job_id, m.placed_at, m.rank)"
	"   RETURNING p.job_id, p.rank, p.lease_until)"
	" SELECT m.job_id,"
	"        CASE WHEN m.current THEN coalesce(m.part_stop, m.job_stop)"
	"             ELSE coalesce(m.part_stop, 'NOT_CLAIMED') END,"
	"        coalesce(e.lease_until, m.lease_until), e.job_id IS NOT NULL"
	"   FROM mine m LEFT JOIN extended e ON (e.job_id, e.rank) = (m.job_id, m.rank)"
	"  ORDER BY m.job_id",
	5, {TEXTOID, INTERVALOID, INTERVALOID, TEXTARRAYOID, NAMEOID}, SPI_OK_SELECT
};

/* The lease of each job of $1: the earliest of its parts that hold. */
static QsQuery JobLeasesQuery = {
	"WITH l AS (SELECT id FROM quota_sched.job WHERE id = ANY ($1)"
	"            FOR NO KEY UPDATE SKIP LOCKED)"
	" UPDATE quota_sched.job j SET lease_until = ("
	"   SELECT min(p.lease_until) FROM quota_sched.job_part p"
	"    WHERE p.job_id = j.id AND " CURRENT_PART " AND " HOLDING_PART
	"      AND p.stop_reason IS NULL)"
	"  FROM l WHERE j.id = l.id AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING')",
	1, {INT8ARRAYOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsExtendPartLeases renews the leases of the parts an agent holds in the
 * queues given (ExtendPartsQuery), appends (job_id, stop_reason,
 * lease_until) of each to heartbeat()'s result, and sets the leases of
 * their jobs from them.
 */
void
QsExtendPartLeases(ReturnSetInfo *rsinfo, const char *agent, const char *role,
				   Interval *lease, Interval *stop_timeout, Datum queues)
{
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', role ? ' ' : 'n'};
	Name		name = palloc0(NAMEDATALEN);
	QsArray		renewed;
	uint64		n;

	if (role != NULL)
		namestrcpy(name, role);
	args[0] = CStringGetTextDatum(agent);
	args[1] = IntervalPGetDatum(lease);
	args[2] = IntervalPGetDatum(stop_timeout);
	args[3] = queues;
	args[4] = NameGetDatum(name);
	n = QsQueryRun(&ExtendPartsQuery, args, nulls, false, 0);
	QsArrayInit(&renewed, INT8OID, (int) n);
	for (uint64 i = 0; i < n; i++)
	{
		Datum		values[4];
		bool		isnull[4];

		for (int c = 0; c < 4; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1,
									  &isnull[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, isnull);
		if (DatumGetBool(values[3]))
			QsArrayPush(&renewed, values[0], false);
	}
	if (renewed.n > 0)
	{
		Datum		ids = QsArrayDatum(&renewed);

		QsQueryRun(&JobLeasesQuery, &ids, NULL, false, 0);
	}
}

/*
 * QsHeldPartRank returns the rank of the part of a job placed on hosts
 * that the agent holds now (claimed or running, of the job's current
 * placement), for the caller's role (RequirePartRole); an error when it
 * holds none (attempt_started).
 */
int32
QsHeldPartRank(int64 job_id, const char *agent, Oid caller)
{
	PartRow		part = PartOf(job_id, agent);

	if (!part.found || part.state == QS_PART_PLACED)
		NotHeld(job_id, agent, part.found ? "is not claimed" :
				"does not exist: the job is not placed on it");
	RequirePartRole(&part, agent, caller, GetUserNameFromId(caller, false));
	if (!part.current || part.let_go ||
		(part.state != QS_PART_CLAIMED && part.state != QS_PART_RUNNING))
		NotHeld(job_id, agent, "is not claimed, has ended, or must let go");
	return part.rank;
}

/*
 * QsAgentHasPart tells whether an agent holds a part of a job (claimed or
 * running, of any placement): a report on a job that went on without it
 * is about that part.
 */
bool
QsAgentHasPart(int64 job_id, const char *agent)
{
	static QsQuery HasPartQuery = {
		"SELECT 1 FROM quota_sched.job_part p"
		" WHERE p.job_id = $1 AND p.agent = $2 AND " HOLDING_PART,
		2, {INT8OID, TEXTOID}, SPI_OK_SELECT
	};
	Datum		args[2] = {Int64GetDatum(job_id), CStringGetTextDatum(agent)};

	return QsQueryRun(&HasPartQuery, args, NULL, true, 1) > 0;
}
