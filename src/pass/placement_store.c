/*-------------------------------------------------------------------------
 *
 * placement_store.c
 *		The pass's writes and reads of placements (scheduling.md 3.13,
 *		3.14): the jobs it dispatches, with the parts of those in a
 *		placed unit (a job_part row each, and the job's placement in rank
 *		order), the placements promises reserve, WAITING_FOR_HOSTS, the
 *		parts whose lease ran out while others hold, and the leases of the
 *		parts of the jobs due for time-based work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/builtins.h"

#include "placement_store.h"
#include "query.h"

/*
 * The jobs a pass dispatches ($1; $2 the pass's time) and the parts of
 * those in a placed unit ($3 job, $4 rank, $5 agent, $6 instances, one
 * element per part, in rank order), in one statement, so that a job's row
 * is written once: SCHEDULED at $2, its promise fulfilled, no reason and
 * no preemptor of an earlier attempt, and its placement in rank order (a
 * job with no parts keeps its own); and a row of job_part per part,
 * PLACED, of the placement made at $2, with each agent's address (its
 * name when it has none), looked up per part: a join to the agents was
 * planned, generically, as a scan of every agent.
 */
static QsQuery DispatchQuery = {
	"WITH p AS (SELECT * FROM unnest($3::int8[], $4::int4[], $5::text[], $6::int4[])"
	"             AS p(job_id, rank, agent, instances)),"
	" g AS (SELECT job_id, array_agg(agent ORDER BY rank) AS agents,"
	"              array_agg(instances ORDER BY rank) AS instances"
	"         FROM p GROUP BY job_id),"
	" d AS (UPDATE quota_sched.job x"
	"          SET state = 'SCHEDULED', scheduled_at = $2, promised_at = NULL,"
	"              status_reason = NULL, status_reason_at = NULL, preempted_for = NULL,"
	"              part_agents = CASE WHEN g.job_id IS NULL THEN x.part_agents ELSE g.agents END,"
	"              part_instances = CASE WHEN g.job_id IS NULL THEN x.part_instances"
	"                                    ELSE g.instances END"
	"         FROM unnest($1::int8[]) AS i(id) LEFT JOIN g ON g.job_id = i.id"
	"        WHERE x.id = i.id"
	"        RETURNING x.id, 1 + x.failed_attempts + x.preemption_count + x.lease_losses AS attempt)"
	" INSERT INTO quota_sched.job_part (job_id, placed_at, attempt, rank, agent, address,"
	"                                   instances, state)"
	" SELECT p.job_id, $2, d.attempt, p.rank, p.agent,"
	"        coalesce((SELECT a.address FROM quota_sched.agent a WHERE a.name = p.agent), p.agent),"
	"        p.instances, 'PLACED'"
	"   FROM p JOIN d ON d.id = p.job_id",
	6, {INT8ARRAYOID, TIMESTAMPTZOID, INT8ARRAYOID, INT4ARRAYOID, TEXTARRAYOID, INT4ARRAYOID},
	SPI_OK_INSERT, QS_BY_IDS
};

/* The placements promises reserve ($1..$4 as DispatchQuery's $3..$6): the job's only. */
static QsQuery ReserveQuery = {
	"UPDATE quota_sched.job x SET part_agents = g.agents, part_instances = g.instances"
	"  FROM (SELECT job_id, array_agg(agent ORDER BY rank) AS agents,"
	"               array_agg(instances ORDER BY rank) AS instances"
	"          FROM unnest($1::int8[], $2::int4[], $3::text[], $4::int4[])"
	"               AS p(job_id, rank, agent, instances) GROUP BY job_id) g"
	" WHERE x.id = g.job_id AND x.state = 'RUNNABLE'",
	4, {INT8ARRAYOID, INT4ARRAYOID, TEXTARRAYOID, INT4ARRAYOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/* A list of parts as the arrays PlaceQuery and ReserveQuery take. */
typedef struct PartArrays
{
	QsArray		job_id;
	QsArray		rank;
	QsArray		agent;
	QsArray		instances;
} PartArrays;

static void
PartArraysInit(PartArrays *a, int n)
{
	QsArrayInit(&a->job_id, INT8OID, n);
	QsArrayInit(&a->rank, INT4OID, n);
	QsArrayInit(&a->agent, TEXTOID, n);
	QsArrayInit(&a->instances, INT4OID, n);
}

static void
PartArraysPush(PartArrays *a, int64 job_id, const QsPart *parts, int nparts)
{
	for (int r = 0; r < nparts; r++)
	{
		QsArrayPush(&a->job_id, Int64GetDatum(job_id), false);
		QsArrayPush(&a->rank, Int32GetDatum(r), false);
		QsArrayPush(&a->agent, CStringGetTextDatum(parts[r].host), false);
		QsArrayPush(&a->instances, Int32GetDatum(parts[r].count), false);
	}
}

static void
PartArraysRun(QsQuery *query, PartArrays *a)
{
	Datum		args[4];

	if (a->job_id.n == 0)
		return;
	args[0] = QsArrayDatum(&a->job_id);
	args[1] = QsArrayDatum(&a->rank);
	args[2] = QsArrayDatum(&a->agent);
	args[3] = QsArrayDatum(&a->instances);
	QsQueryRun(query, args, NULL, false, 0);
}

/*
 * QsWriteDispatches writes the DISPATCH decisions of a pass, with the
 * parts of those in a placed unit (DispatchQuery).
 */
void
QsWriteDispatches(const QsOutput *out, TimestampTz now)
{
	QsArray		ids;
	PartArrays	a;
	Datum		args[6];

	QsArrayInit(&ids, INT8OID, out->ndecisions);
	PartArraysInit(&a, out->ndecisions);
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];

		if (d->action != QS_DISPATCH)
			continue;
		QsArrayPush(&ids, Int64GetDatum(d->job_id), false);
		PartArraysPush(&a, d->job_id, d->parts, d->nparts);
	}
	if (ids.n == 0)
		return;
	args[0] = QsArrayDatum(&ids);
	args[1] = TimestampTzGetDatum(now);
	args[2] = QsArrayDatum(&a.job_id);
	args[3] = QsArrayDatum(&a.rank);
	args[4] = QsArrayDatum(&a.agent);
	args[5] = QsArrayDatum(&a.instances);
	QsQueryRun(&DispatchQuery, args, NULL, false, 0);
}

/*
 * QsWriteReservations writes the placements that promises reserve anew
 * (made in this pass, or placed anew at the re-check).
 */
void
QsWriteReservations(const QsOutput *out)
{
	PartArrays	a;

	PartArraysInit(&a, out->nreserved);
	for (int i = 0; i < out->nreserved; i++)
		PartArraysPush(&a, out->reserved[i].job_id, out->reserved[i].parts,
					   out->reserved[i].nparts);
	PartArraysRun(&ReserveQuery, &a);
}

/*
 * The reasons of placement (QsHostReason) of the RUNNABLE jobs of $1: $2
 * (null: none) set where the job has no reason or one of these, and one of
 * these cleared where $2 is null (NO_AGENT_FITS only of a job with
 * placement constraints: the misconfiguration reasons set that of others,
 * QsWriteMisconfiguration); $3 the time.
 */
static QsQuery HostReasonsQuery = {
	"UPDATE quota_sched.job j"
	"   SET status_reason = d.reason, status_reason_at = CASE WHEN d.reason IS NOT NULL THEN $3 END"
	"  FROM unnest($1::int8[], $2::text[]) AS d(id, reason)"
	" WHERE j.id = d.id AND j.state = 'RUNNABLE'"
	"   AND j.status_reason IS DISTINCT FROM d.reason"
	"   AND (j.status_reason IS NULL OR j.status_reason = 'WAITING_FOR_HOSTS'"
	"        OR (j.status_reason = 'NO_AGENT_FITS'"
	"            AND (j.instances_per_host IS NOT NULL OR j.same_label IS NOT NULL)))",
	3, {INT8ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsWriteHostReasons sets and clears WAITING_FOR_HOSTS, and NO_AGENT_FITS
 * of jobs with placement constraints, as the pass found them
 * (scheduling.md 3.13).
 */
void
QsWriteHostReasons(const QsOutput *out, TimestampTz now)
{
	QsArray		ids,
				reasons;
	Datum		args[3];

	if (out->nhost_reasons == 0)
		return;
	QsArrayInit(&ids, INT8OID, out->nhost_reasons);
	QsArrayInit(&reasons, TEXTOID, out->nhost_reasons);
	for (int i = 0; i < out->nhost_reasons; i++)
	{
		const char *reason = out->host_reasons[i].reason;

		QsArrayPush(&ids, Int64GetDatum(out->host_reasons[i].job_id), false);
		QsArrayPush(&reasons, reason ? CStringGetTextDatum(reason) : (Datum) 0, reason == NULL);
	}
	args[0] = QsArrayDatum(&ids);
	args[1] = QsArrayDatum(&reasons);
	args[2] = TimestampTzGetDatum(now);
	QsQueryRun(&HostReasonsQuery, args, NULL, false, 0);
}

/*
 * The reasons of placement of the RUNNABLE jobs of units of queue $1 that
 * are not placed ($2): WAITING_FOR_HOSTS, and NO_AGENT_FITS of jobs with
 * placement constraints, cleared; rows another transaction holds are
 * passed over (a later pass clears them).
 */
static QsQuery ClearReasonsQuery = {
	"WITH l AS (SELECT id FROM quota_sched.job"
	"            WHERE job_queue = $1 AND capacity_unit = ANY ($2) AND state = 'RUNNABLE'"
	"              AND status_reason IN ('WAITING_FOR_HOSTS', 'NO_AGENT_FITS')"
	"              AND (status_reason = 'WAITING_FOR_HOSTS'"
	"                   OR instances_per_host IS NOT NULL OR same_label IS NOT NULL)"
	"              FOR NO KEY UPDATE SKIP LOCKED)"
	" UPDATE quota_sched.job j SET status_reason = NULL, status_reason_at = NULL"
	"   FROM l WHERE j.id = l.id",
	2, {TEXTOID, TEXTARRAYOID}, SPI_OK_UPDATE
};

/*
 * QsClearPlacementReasons clears the reasons of placement of the RUNNABLE
 * jobs of the queue's units that are not placed (scheduling.md 3.13): no
 * job waits for hosts where nothing is placed.
 */
void
QsClearPlacementReasons(const char *queue, const QsInput *in)
{
	QsArray		units;
	Datum		args[2];

	QsArrayInit(&units, TEXTOID, in->nunits);
	for (int u = 0; u < in->nunits; u++)
		if (!in->units[u].placed)
			QsArrayPush(&units, CStringGetTextDatum(in->units[u].name), false);
	if (units.n == 0)
		return;
	args[0] = CStringGetTextDatum(queue);
	args[1] = QsArrayDatum(&units);
	QsQueryRun(&ClearReasonsQuery, args, NULL, false, 0);
}

/*
 * The parts of the jobs of $1 whose lease ran out before $3 (the queue's
 * fence_grace before $2, the pass's time) end (lost) at $2; each job's
 * lease becomes the earliest of its parts that still hold.
 */
static QsQuery LostPartsQuery = {
	"WITH lost AS (UPDATE quota_sched.job_part p"
	"                 SET state = 'ENDED', ended_as = 'LOST', ended_at = $2"
	"               WHERE p.job_id = ANY ($1) AND p.state IN ('CLAIMED', 'RUNNING')"
	"                 AND p.lease_until < $3 RETURNING p.job_id)"
	" UPDATE quota_sched.job j SET lease_until = ("
	"   SELECT min(p.lease_until) FROM quota_sched.job_part p"
	"    WHERE p.job_id = j.id AND p.state IN ('CLAIMED', 'RUNNING') AND p.lease_until >= $3)"
	"  WHERE j.id IN (SELECT job_id FROM lost)",
	3, {INT8ARRAYOID, TIMESTAMPTZOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsWriteLostParts ends the parts that lost their lease (it ran out before
 * lapsed: the queue's fence_grace before now) of the jobs whose other parts
 * hold on (scheduling.md 3.10, 3.14).
 */
void
QsWriteLostParts(const QsOutput *out, TimestampTz now, TimestampTz lapsed)
{
	QsArray		ids;
	Datum		args[3];

	if (out->nlost == 0)
		return;
	QsArrayInit(&ids, INT8OID, out->nlost);
	for (int i = 0; i < out->nlost; i++)
		QsArrayPush(&ids, Int64GetDatum(out->lost[i]), false);
	args[0] = QsArrayDatum(&ids);
	args[1] = TimestampTzGetDatum(now);
	args[2] = TimestampTzGetDatum(lapsed);
	QsQueryRun(&LostPartsQuery, args, NULL, false, 0);
}

static QsQuery PartLeasesQuery = {
	"SELECT p.job_id, p.rank, p.lease_until, p.state = 'ENDED'"
	"  FROM quota_sched.job_part p JOIN quota_sched.job j ON j.id = p.job_id"
	" WHERE p.job_id = ANY ($1) AND p.placed_at = j.scheduled_at",
	1, {INT8ARRAYOID}, SPI_OK_SELECT
};

/*
 * QsLoadPartLeases sets the lease and end of each part of the jobs of
 * several parts among jobs[] (held jobs due for time-based work), from
 * their rows of job_part.
 */
void
QsLoadPartLeases(QsJob *jobs, int njobs, Snapshot snapshot)
{
	QsArray		ids;
	Datum		arg;
	uint64		n;

	QsArrayInit(&ids, INT8OID, njobs);
	for (int i = 0; i < njobs; i++)
		if (jobs[i].nparts > 1)
			QsArrayPush(&ids, Int64GetDatum(jobs[i].id), false);
	if (ids.n == 0)
		return;
	arg = QsArrayDatum(&ids);
	n = QsQueryRunIn(&PartLeasesQuery, &arg, NULL, snapshot, 0);
	for (uint64 r = 0; r < n; r++)
	{
		HeapTuple	tup = SPI_tuptable->vals[r];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull,
					no_lease;
		int64		id = DatumGetInt64(SPI_getbinval(tup, desc, 1, &isnull));
		int32		rank = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		Datum		lease = SPI_getbinval(tup, desc, 3, &no_lease);
		bool		ended = DatumGetBool(SPI_getbinval(tup, desc, 4, &isnull));

		for (int i = 0; i < njobs; i++)
			if (jobs[i].id == id && rank < jobs[i].nparts)
			{
				QsPart	   *part = (QsPart *) &jobs[i].parts[rank];

				part->lease_until = no_lease ? QS_NO_TIME : DatumGetTimestampTz(lease);
				part->ended = ended;
			}
	}
}
