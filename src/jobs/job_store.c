/*-------------------------------------------------------------------------
 *
 * job_store.c
 *		The job store (job_store.h): the typed job row, decoded by column
 *		name, the reads and writes of single jobs and of an agent's jobs,
 *		and the checks of the agents' and users' arguments that read jobs.
 *		The pass's set-based reads and writes, and the end of an attempt,
 *		are in job_store_pass.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

#include "config_cache.h"
#include "job_store.h"
#include "policy.h"
#include "query.h"
#include "queue_lock.h"
#include "scan_floor.h"
#include "constants.h"
#include "word_io.h"

/* The fields of QsJobRow, by the name of the column they come from. */
typedef enum JobField
{
	JF_ID,
	JF_INSTANCE_COUNT,
	JF_PRIORITY,
	JF_STATE,
	JF_QUEUED_AT,
	JF_SCHEDULED_AT,
	JF_PROMISED_AT,
	JF_LEASE_UNTIL,
	JF_DEADLINE,
	JF_STOP_REASON,
	JF_AGENT,
	JF_PREEMPTED_FOR,
	JF_FAILED_ATTEMPTS,
	JF_MAX_ATTEMPTS,
	JF_PREEMPTION_COUNT,
	JF_PREEMPTION_RETRIES,
	JF_JOB_QUEUE,
	JF_QUOTA_SHARE,
	JF_CAPACITY_UNIT,
	JF_OWNER,
	JF_STATUS_REASON,
	JF_AGENT_ROLE,
	JF_LEASE_LOSSES,
	JF_MAX_LEASE_LOSSES,
	JF_CLAIM_REQUEUES,
	JF_CLAIM_BACKOFF_UNTIL,
	JF_INSTANCES_PER_HOST,
	JF_SAME_LABEL,
	JF_PART_AGENTS,
	JF_PART_INSTANCES,
	JF_DEPENDENCIES_WAITING,
	JF_DEPENDENCY_FAILED,
	JF_COUNT
} JobField;

static const char *const JobFieldNames[JF_COUNT] = {
	"id", "instance_count", "priority", "state", "queued_at", "scheduled_at",
	"promised_at", "lease_until", "deadline", "stop_reason", "agent",
	"preempted_for", "failed_attempts", "max_attempts", "preemption_count",
	"preemption_retries", "job_queue", "quota_share", "capacity_unit", "owner",
	"status_reason", "agent_role", "lease_losses", "max_lease_losses", "claim_requeues",
	"claim_backoff_until", "instances_per_host", "same_label", "part_agents", "part_instances",
	"dependencies_waiting", "dependency_failed"
};

StaticAssertDecl(JF_COUNT <= lengthof(((QsJobDecoder *) 0)->attnums),
				 "QsJobDecoder.attnums is too short");

/*
 * QsJobDecoderInit looks up, once for a result set, which of its columns
 * hold the fields of a job row.
 */
void
QsJobDecoderInit(QsJobDecoder *decoder, TupleDesc desc)
{
	decoder->desc = desc;
	for (int f = 0; f < JF_COUNT; f++)
	{
		decoder->attnums[f] = 0;
		for (int i = 0; i < desc->natts; i++)
			if (strcmp(NameStr(TupleDescAttr(desc, i)->attname), JobFieldNames[f]) == 0)
				decoder->attnums[f] = i + 1;
	}
}

/* Field f of a tuple, or NULL when it is null or was not selected. */
static bool
FieldValue(const QsJobDecoder *d, HeapTuple tuple, JobField f, Datum *value)
{
	bool		isnull;

	if (d->attnums[f] == 0)
		return false;
	*value = SPI_getbinval(tuple, d->desc, d->attnums[f], &isnull);
	return !isnull;
}

static int32
FieldInt32(const QsJobDecoder *d, HeapTuple tuple, JobField f)
{
	Datum		v;

	return FieldValue(d, tuple, f, &v) ? DatumGetInt32(v) : 0;
}

static QsTime
FieldTime(const QsJobDecoder *d, HeapTuple tuple, JobField f)
{
	Datum		v;

	return FieldValue(d, tuple, f, &v) ? DatumGetTimestampTz(v) : QS_NO_TIME;
}

static char *
FieldText(const QsJobDecoder *d, HeapTuple tuple, JobField f)
{
	Datum		v;

	if (!FieldValue(d, tuple, f, &v))
		return NULL;
	return f == JF_OWNER || f == JF_AGENT_ROLE ? pstrdup(NameStr(*DatumGetName(v))) :
		TextDatumGetCString(v);
}

/* "job ID", for the message of an unknown word */
static const char *
JobOf(int64 id)
{
	return psprintf("job " INT64_FORMAT, id);
}

/*
 * DecodeParts decodes a job's placement (part_agents, part_instances, in
 * rank order) into its parts; none when it has none or they were not
 * selected.
 */
static void
DecodeParts(const QsJobDecoder *d, HeapTuple tuple, QsJob *job)
{
	Datum		agents,
				instances;
	Datum	   *names,
			   *counts;
	int			n,
				m;
	QsPart	   *parts;

	if (!FieldValue(d, tuple, JF_PART_AGENTS, &agents) ||
		!FieldValue(d, tuple, JF_PART_INSTANCES, &instances))
		return;
	deconstruct_array(DatumGetArrayTypeP(agents), TEXTOID, -1, false, TYPALIGN_INT,
					  &names, NULL, &n);
	deconstruct_array(DatumGetArrayTypeP(instances), INT4OID, 4, true, TYPALIGN_INT,
					  &counts, NULL, &m);
	parts = palloc0(sizeof(QsPart) * (n + 1));
	for (int i = 0; i < n && i < m; i++)
		parts[i] = (QsPart) {TextDatumGetCString(names[i]), DatumGetInt32(counts[i]),
			QS_NO_TIME, false};
	job->parts = parts;
	job->nparts = Min(n, m);
}

/*
 * QsJobDecode decodes one row into the current memory context.  Fields not
 * selected are zero, NULL, or QS_NO_TIME; share and unit indexes are -1
 * (the snapshot loader knows them).
 */
void
QsJobDecode(const QsJobDecoder *d, HeapTuple tuple, QsJobRow *row)
{
	QsJob	   *job = &row->job;
	Datum		v;
	char	   *text;

	memset(row, 0, sizeof(*row));
	job->id = FieldValue(d, tuple, JF_ID, &v) ? DatumGetInt64(v) : 0;
	job->share = job->unit = -1;
	job->count = FieldInt32(d, tuple, JF_INSTANCE_COUNT);
	job->priority = FieldInt32(d, tuple, JF_PRIORITY);
	if ((text = FieldText(d, tuple, JF_STATE)) != NULL &&
		!QsJobStateFromName(text, &row->state))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_JOB_STATE, text,
					  JobOf(job->id));
	job->state = row->state;
	job->queued_at = FieldTime(d, tuple, JF_QUEUED_AT);
	job->scheduled_at = FieldTime(d, tuple, JF_SCHEDULED_AT);
	job->promised_at = FieldTime(d, tuple, JF_PROMISED_AT);
	job->lease_until = FieldTime(d, tuple, JF_LEASE_UNTIL);
	job->deadline = FieldTime(d, tuple, JF_DEADLINE);
	if (!QsStopFromName(text = FieldText(d, tuple, JF_STOP_REASON), &job->stop))
		QsUnknownWord(ERRCODE_INVALID_TEXT_REPRESENTATION, QS_KIND_STOP_REASON, text,
					  JobOf(job->id));
	row->agent = FieldText(d, tuple, JF_AGENT);
	job->claimed = row->agent != NULL;
	job->preempted_for = FieldValue(d, tuple, JF_PREEMPTED_FOR, &v) ? DatumGetInt64(v) : 0;
	job->failed_attempts = FieldInt32(d, tuple, JF_FAILED_ATTEMPTS);
	job->max_attempts = FieldInt32(d, tuple, JF_MAX_ATTEMPTS);
	job->preemption_count = FieldInt32(d, tuple, JF_PREEMPTION_COUNT);
	job->preemption_retries = FieldInt32(d, tuple, JF_PREEMPTION_RETRIES);
	job->lease_losses = FieldInt32(d, tuple, JF_LEASE_LOSSES);
	job->max_lease_losses = FieldInt32(d, tuple, JF_MAX_LEASE_LOSSES);
	job->claim_requeues = FieldInt32(d, tuple, JF_CLAIM_REQUEUES);
	job->claim_backoff_until = FieldTime(d, tuple, JF_CLAIM_BACKOFF_UNTIL);
	job->per_host = FieldInt32(d, tuple, JF_INSTANCES_PER_HOST);
	job->same_label = FieldText(d, tuple, JF_SAME_LABEL);
	job->deps_waiting = FieldInt32(d, tuple, JF_DEPENDENCIES_WAITING);
	job->dependency_failed = FieldValue(d, tuple, JF_DEPENDENCY_FAILED, &v) ? DatumGetInt64(v) : 0;
	DecodeParts(d, tuple, job);
	row->job_queue = FieldText(d, tuple, JF_JOB_QUEUE);
	row->quota_share = FieldText(d, tuple, JF_QUOTA_SHARE);
	row->capacity_unit = FieldText(d, tuple, JF_CAPACITY_UNIT);
	row->owner = FieldText(d, tuple, JF_OWNER);
	row->status_reason = FieldText(d, tuple, JF_STATUS_REASON);
	job->status_reason = row->status_reason;
	row->agent_role = FieldText(d, tuple, JF_AGENT_ROLE);
}

/*
 * DecodeFirst decodes the first row of the last result, in the memory of
 * context cxt; false when there was none.
 */
static bool
DecodeFirst(QsJobRow *row, MemoryContext cxt)
{
	QsJobDecoder decoder;
	MemoryContext old;

	if (SPI_processed == 0)
		return false;
	QsJobDecoderInit(&decoder, SPI_tuptable->tupdesc);
	old = MemoryContextSwitchTo(cxt);
	QsJobDecode(&decoder, SPI_tuptable->vals[0], row);
	MemoryContextSwitchTo(old);
	return true;
}

static QsQuery JobQueueQuery = {
	"SELECT job_queue FROM quota_sched.job WHERE id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

static QsQuery LockJobQuery = {
	"SELECT id, job_queue, owner, state, agent, agent_role, stop_reason, instance_count,"
	"       failed_attempts, max_attempts, preemption_count,"
	"       coalesce(preemption_retries, -1) AS preemption_retries, lease_losses,"
	"       max_lease_losses, part_agents, part_instances"
	"  FROM quota_sched.job WHERE id = $1 FOR UPDATE SKIP LOCKED",
	1, {INT8OID}, SPI_OK_SELECT
};

/* NoSuchJob raises no_data_found for a job id that names no job. */
static void
pg_attribute_noreturn()
NoSuchJob(int64 job_id)
{
	ereport(ERROR,
			(errcode(ERRCODE_NO_DATA_FOUND),
			 errmsg("job " INT64_FORMAT " does not exist", job_id)));
}

/*
 * QsLockJob takes the lock of a job's queue in shared mode, then the job's
 * row, and reads it into the caller's memory.  A job that does not exist
 * (or was deleted meanwhile) raises no_data_found.
 *
 * It never waits for the row while it holds the queue's lock: a user, who
 * takes no queue lock, may hold the row of a job of their own for as long
 * as they like, and a pass waiting for the queue's lock would then make
 * every claim and report of the queue wait behind it.  It tries for about
 * 20 ms (another report or a terminate holds the row that long at most)
 * and then fails with 55P03: the caller may retry.
 */
void
QsLockJob(int64 job_id, QsJobRow *row)
{
	Datum		arg = Int64GetDatum(job_id);
	MemoryContext outer = CurrentMemoryContext;
	long		pause_us = 100;

	if (QsQueryRun(&JobQueueQuery, &arg, NULL, true, 1) == 0)
		NoSuchJob(job_id);
	QsLockQueue(SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1), false);
	for (long waited_us = 0;; waited_us += pause_us)
	{
		if (QsQueryRun(&LockJobQuery, &arg, NULL, false, 1) > 0)
		{
			DecodeFirst(row, outer);
			return;
		}
		if (QsQueryRun(&JobQueueQuery, &arg, NULL, false, 1) == 0)
			NoSuchJob(job_id);	/* deleted meanwhile */
		if (waited_us >= 20000)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("job " INT64_FORMAT " is locked by another transaction", job_id),
					 errdetail("A session holds its row (SELECT ... FOR UPDATE, or an "
							   "UPDATE not yet committed)."),
					 errhint("Retry when that transaction has ended.")));
		pg_usleep(pause_us);
		CHECK_FOR_INTERRUPTS();
		pause_us = Min(pause_us * 2, 2000);
	}
}

static QsQuery JobPositionQuery = {
	"SELECT j.id, j.instance_count, j.priority, j.queued_at, j.state, j.quota_share,"
	"       j.capacity_unit, j.status_reason, j.agent, j.stop_reason, j.promised_at,"
	"       j.job_queue, j.owner, j.claim_requeues, j.claim_backoff_until,"
	"       coalesce(j.instances_per_host, 0) AS instances_per_host, j.same_label,"
	"       j.part_agents, j.part_instances, j.dependencies_waiting, j.dependency_failed,"
	"       (SELECT count(*) + 1 FROM quota_sched.job o"
	"         WHERE o.job_queue = j.job_queue AND o.quota_share = j.quota_share"
	"           AND o.state = 'RUNNABLE' AND o.dependencies_waiting IS NULL"
	"           AND (o.priority > j.priority OR (o.priority = j.priority"
	"                AND (o.queued_at, o.id) < (j.queued_at, j.id)))) AS position"
	"  FROM quota_sched.job j WHERE j.id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * QsReadJobPosition reads a job without locking it (in a new snapshot, as
 * the snapshot loader reads), with its position among its share's RUNNABLE
 * jobs in share order, into the caller's memory.  Returns false when there
 * is no such job.
 */
bool
QsReadJobPosition(int64 job_id, QsJobRow *row, int64 *position_in_share)
{
	Datum		arg = Int64GetDatum(job_id);
	bool		isnull;

	if (QsQueryRun(&JobPositionQuery, &arg, NULL, false, 1) == 0)
		return false;
	*position_in_share = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc,
													 SPI_fnumber(SPI_tuptable->tupdesc,
																 "position"),
													 &isnull));
	return DecodeFirst(row, CurrentMemoryContext);
}

/* What an agent or a user makes of one job (QsChangeJob); $2 is the reason. */
static QsQuery JobChangeQueries[] = {
	[QS_CHANGE_RUNNING] = {
		"UPDATE quota_sched.job SET state = 'RUNNING', started_at = now() WHERE id = $1",
		2, {INT8OID, TEXTOID}, SPI_OK_UPDATE
	},
	[QS_CHANGE_SUCCEEDED] = {
		"UPDATE quota_sched.job SET state = 'SUCCEEDED', lease_until = NULL,"
		"       stop_reason = NULL, stop_requested_at = NULL, stopped_at = now(),"
		"       preempted_for = NULL, status_reason = $2, status_reason_at = now()"
		" WHERE id = $1",
		2, {INT8OID, TEXTOID}, SPI_OK_UPDATE
	},
	/* not started anew since: waiting, or dispatched and not claimed */
	[QS_CHANGE_LATE_SUCCEEDED] = {
		"UPDATE quota_sched.job SET state = 'SUCCEEDED', stopped_at = now(), promised_at = NULL,"
		"       preempted_for = NULL, status_reason = $2, status_reason_at = now()"
		" WHERE id = $1 AND state IN ('RUNNABLE', 'SCHEDULED') AND agent IS NULL",
		2, {INT8OID, TEXTOID}, SPI_OK_UPDATE
	},
	[QS_CHANGE_TERMINATE] = {
		"UPDATE quota_sched.job"
		"   SET stop_reason = 'TERMINATED',"
		"       stop_requested_at = coalesce(stop_requested_at, now()),"
		"       status_reason = $2, status_reason_at = now()"
		" WHERE id = $1",
		2, {INT8OID, TEXTOID}, SPI_OK_UPDATE
	},
};

/*
 * QsChangeJob records what became of a held job: its agent reports that it
 * runs, or that it succeeded (a pending stop is then void), or a user
 * terminates it (it fails when it stops, keeping the reason given; a stop
 * already pending keeps its time).
 */
void
QsChangeJob(int64 job_id, QsJobChange change, const char *reason)
{
	Datum		args[2] = {Int64GetDatum(job_id), reason ? CStringGetTextDatum(reason) : (Datum) 0};
	char		nulls[2] = {' ', reason ? ' ' : 'n'};

	QsQueryRun(&JobChangeQueries[change], args, nulls, false, 0);
}

static QsQuery ReturnJobQuery = {
	"SELECT * FROM quota_sched.job WHERE id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * QsReturnJob returns the row of a job as a function's result, copied out
 * of SPI's memory.
 */
Datum
QsReturnJob(int64 job_id)
{
	Datum		arg = Int64GetDatum(job_id);

	/* not read-only: the row was just written */
	if (QsQueryRun(&ReturnJobQuery, &arg, NULL, false, 1) != 1)
		elog(ERROR, "quota_sched: could not read job " INT64_FORMAT, job_id);
	return PointerGetDatum(SPI_returntuple(SPI_tuptable->vals[0], SPI_tuptable->tupdesc));
}

/*
 * The next unclaimed SCHEDULED job of a queue (and unit) after a position
 * in claim order, locked.  One row a statement, with a constant LIMIT: the
 * plan stays an ordered walk of job_claimable whatever the statistics say
 * (a plan for all rows sorted every unclaimed job on each claim), and no
 * row is locked that the claim does not look at, so concurrent claims skip
 * only what another agent is taking.
 */
static QsQuery ClaimableQuery = {
	"SELECT id, instance_count, scheduled_at FROM quota_sched.job"
	" WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NULL AND part_agents IS NULL"
	"   AND ($2::text IS NULL OR capacity_unit = $2)"
	"   AND (scheduled_at, id) > ($3, $4)"
	" ORDER BY scheduled_at, id LIMIT 1 FOR UPDATE SKIP LOCKED",
	4, {TEXTOID, TEXTOID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT
};

/*
 * Of the jobs $1 (of one part, if placed: its agent is the job's), those
 * agent $2 holds in queue $3.
 */
static QsQuery HeldOfQuery = {
	"SELECT id, instance_count FROM quota_sched.job"
	" WHERE id = ANY ($1) AND agent = $2 AND job_queue = $3"
	"   AND state IN ('STARTING', 'RUNNING')",
	3, {INT8ARRAYOID, TEXTOID, TEXTOID}, SPI_OK_SELECT, QS_BY_IDS
};

/*
 * QsHeldOf returns, of n jobs, those an agent holds in a queue, as a
 * bigint[] ((Datum) 0: none), with their number and instances: of the
 * jobs given to a session at their dispatch, those its claim returns (one
 * released or ended since is no longer its own).
 */
Datum
QsHeldOf(const int64 *ids, int n, const char *agent, const char *queue, int *held,
		 int64 *instances)
{
	QsArray		in,
				out;
	Datum		args[3];

	*held = 0;
	*instances = 0;
	if (n == 0)
		return (Datum) 0;
	QsArrayInit(&in, INT8OID, n);
	for (int i = 0; i < n; i++)
		QsArrayPush(&in, Int64GetDatum(ids[i]), false);
	args[0] = QsArrayDatum(&in);
	args[1] = CStringGetTextDatum(agent);
	args[2] = CStringGetTextDatum(queue);
	QsQueryRun(&HeldOfQuery, args, NULL, false, 0);
	QsArrayInit(&out, INT8OID, (int) SPI_processed);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;

		QsArrayPush(&out, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1,
										&isnull), false);
		*instances += DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc, 2, &isnull));
	}
	*held = out.n;
	return out.n > 0 ? QsArrayDatum(&out) : (Datum) 0;
}

/*
 * QsJobsClaimable tells whether a queue has an unclaimed SCHEDULED job
 * that is not placed, of the unit (NULL: any), locking nothing: for a
 * claim that had no room left to look.  A probe from the floor of such
 * jobs, which it raises (none without a statement when the floor is past
 * every key).
 */
bool
QsJobsClaimable(const char *queue, const char *unit)
{
	const char *u = unit ? unit : "";
	QsFloorSeen seen = QsFloorRead(QS_FLOOR_CLAIMABLE, queue, u);

	if (seen.valid && QS_FLOOR_TOP(seen.floor))
		return false;
	return !QS_FLOOR_TOP(QsFloorStart(QS_FLOOR_CLAIMABLE, queue, u, &seen, NULL));
}

/*
 * ClaimableIds picks the unclaimed SCHEDULED jobs a claim takes: of the
 * unit (NULL: any), oldest scheduled_at first then lowest id, up to
 * max_jobs, passing over a job that would take the total beyond
 * max_instances (0: no bound).  Rows other claims hold are skipped; every
 * row looked at stays locked until the transaction ends.  Returns how many
 * it put in *ids (palloc'd); *left tells whether it left one behind for
 * want of room: one it passed over, or, stopped at a bound, one after the
 * last it looked at (QsFloorProbe, which locks nothing).
 */
static int
ClaimableIds(const char *queue, const char *unit, int max_jobs, int max_instances,
			 Datum **ids, int64 *taken, bool *left)
{
	int			cap = Min(max_jobs, 64);
	Datum		args[4];
	char		nulls[4] = {' ', unit ? ' ' : 'n', ' ', ' '};
	int			n = 0;
	int64		instances = 0;

	QsFloorSeen seen = QsFloorRead(QS_FLOOR_CLAIMABLE, queue, unit ? unit : "");
	QsFloorKeyValue first = QsFloorStart(QS_FLOOR_CLAIMABLE, queue, unit ? unit : "", &seen,
										 NULL);

	*ids = palloc(sizeof(Datum) * cap);
	*taken = 0;
	*left = false;
	if (QS_FLOOR_TOP(first))
		return 0;
	args[0] = CStringGetTextDatum(queue);
	args[1] = unit ? CStringGetTextDatum(unit) : (Datum) 0;
	args[2] = TimestampTzGetDatum(first.k[0]);	/* from first on */
	args[3] = Int64GetDatum(first.k[1] - 1);
	while (n < max_jobs && (max_instances == 0 || instances < max_instances))
	{
		HeapTuple	tup;
		TupleDesc	desc;
		bool		isnull;
		int32		count;

		if (QsQueryRun(&ClaimableQuery, args, nulls, false, 0) == 0)
			break;
		tup = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		count = DatumGetInt32(SPI_getbinval(tup, desc, 2, &isnull));
		if (max_instances == 0 || instances + count <= max_instances)
		{
			if (n == cap)
				*ids = repalloc(*ids, sizeof(Datum) * (cap *= 2));
			instances += count;
			(*ids)[n++] = SPI_getbinval(tup, desc, 1, &isnull);
		}
		else
			*left = true;
		args[2] = SPI_getbinval(tup, desc, 3, &isnull);
		args[3] = SPI_getbinval(tup, desc, 1, &isnull);
		SPI_freetuptable(SPI_tuptable);
	}
	if (!*left && (n == max_jobs || (max_instances > 0 && instances >= max_instances)))
	{
		QsFloorKeyValue after = {{DatumGetInt64(args[2]), DatumGetInt64(args[3]) + 1, 0}};

		*left = !QS_FLOOR_TOP(QsFloorProbe(QS_FLOOR_CLAIMABLE, queue, unit ? unit : "", after,
										   NULL));
	}
	*taken = instances;
	return n;
}

/*
 * The claim: STARTING, or with start ($5) RUNNING at once, as a RUNNING
 * report says, in one write of each row (the history still shows
 * SCHEDULED to STARTING, then STARTING to RUNNING: job_history.c).
 */
static QsQuery ClaimQuery = {
	"UPDATE quota_sched.job"
	"   SET state = CASE WHEN $5 THEN 'RUNNING' ELSE 'STARTING' END,"
	"       started_at = CASE WHEN $5 THEN now() ELSE started_at END,"
	"       agent = $2, lease_until = now() + $3, agent_role = $4"
	" WHERE id = ANY ($1)",
	5, {INT8ARRAYOID, TEXTOID, INTERVALOID, NAMEOID, BOOLOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsClaimJobs gives an agent the jobs ClaimableIds picks: STARTING, held
 * by the agent until now + lease, claimed by the role agent_role, and with
 * start RUNNING at once.  Returns their ids as a bigint[], or (Datum) 0
 * when there was none to claim (then nothing is written), and sets
 * *instances to what they hold and *left to whether it left claimable jobs
 * behind at a bound (ClaimableIds).
 */
Datum
QsClaimJobs(const char *queue, const char *unit, int max_jobs, int max_instances,
			const char *agent, const char *agent_role, Interval *lease, bool start,
			int64 *instances, bool *left)
{
	Datum	   *ids;
	int			n = ClaimableIds(queue, unit, max_jobs, max_instances, &ids, instances, left);

	Datum		array;

	if (n == 0)
		return (Datum) 0;
	array = PointerGetDatum(construct_array(ids, n, INT8OID, 8, true, TYPALIGN_DOUBLE));
	QsClaimIds(array, agent, agent_role, lease, start);
	return array;
}

/*
 * QsClaimIds claims the jobs of a bigint[] for an agent (ClaimQuery): the
 * claim's write, and that of a pass that gives jobs at their dispatch.
 */
void
QsClaimIds(Datum ids, const char *agent, const char *agent_role, Interval *lease, bool start)
{
	Datum		args[5];
	Name		role = palloc0(NAMEDATALEN);

	namestrcpy(role, agent_role);
	args[0] = ids;
	args[1] = CStringGetTextDatum(agent);
	args[2] = IntervalPGetDatum(lease);
	args[3] = NameGetDatum(role);
	args[4] = BoolGetDatum(start);
	QsQueryRun(&ClaimQuery, args, NULL, false, 0);
}

static QsQuery EmitJobsQuery = {
	"SELECT * FROM quota_sched.job WHERE id = ANY ($1) ORDER BY scheduled_at, id",
	1, {INT8ARRAYOID}, SPI_OK_SELECT, QS_BY_IDS
};

/*
 * QsEmitJobs appends the jobs of a bigint[] to a materialized result of
 * SETOF quota_sched.job, oldest scheduled_at first.
 */
void
QsEmitJobs(ReturnSetInfo *rsinfo, Datum ids)
{
	/* not read-only: the rows were just written */
	QsQueryRun(&EmitJobsQuery, &ids, NULL, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
}

static QsQuery QueuesOfAgentQuery = {
	"SELECT job_queue COLLATE \"C\" FROM quota_sched.job"
	" WHERE agent = $1 AND state IN ('STARTING', 'RUNNING')"
	" UNION"
	" SELECT j.job_queue COLLATE \"C\" FROM quota_sched.job_part p"
	"   JOIN quota_sched.job j ON j.id = p.job_id"
	"  WHERE p.agent = $1 AND p.state IN ('CLAIMED', 'RUNNING')"
	" ORDER BY 1",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * QsLockQueuesOfAgent takes, in shared mode and in the C order of their
 * names (the order every caller that locks several queues uses), the locks
 * of the queues where an agent holds jobs, and returns them as a text[] in
 * the caller's memory.
 */
Datum
QsLockQueuesOfAgent(const char *agent)
{
	Datum		arg = CStringGetTextDatum(agent);
	uint64		n = QsQueryRun(&QueuesOfAgentQuery, &arg, NULL, false, 0);
	Datum	   *queues = palloc(sizeof(Datum) * (n + 1));

	for (uint64 i = 0; i < n; i++)
	{
		char	   *queue = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);

		queues[i] = CStringGetTextDatum(queue);
		QsLockQueue(queue, false);
	}
	return PointerGetDatum(construct_array(queues, n, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * With a role ($5), only the jobs that role claimed, and those claimed
 * before 0.2 (no role recorded).  Rows another transaction holds locked
 * are returned, not extended (QsExtendLeases).
 */
static QsQuery ExtendLeasesQuery = {
	"WITH held AS ("
	"   SELECT id, stop_reason, lease_until FROM quota_sched.job"
	"    WHERE agent = $1 AND state IN ('STARTING', 'RUNNING') AND job_queue = ANY ($4)"
	"      AND part_agents IS NULL"
	"      AND ($5 IS NULL OR agent_role IS NULL OR agent_role = $5)),"
	" locked AS ("
	"   SELECT id FROM quota_sched.job WHERE id IN (SELECT id FROM held)"
	"      FOR NO KEY UPDATE SKIP LOCKED),"
	" extended AS ("
	"   UPDATE quota_sched.job j"
	"      SET lease_until = CASE WHEN j.stop_requested_at IS NULL"
	"            THEN now() + $2"
	"            ELSE least(now() + $2, j.stop_requested_at + $3) END"
	"     FROM locked WHERE j.id = locked.id"
	"   RETURNING j.id, j.stop_reason, j.lease_until)"
	" SELECT id, stop_reason, lease_until FROM extended"
	" UNION ALL"
	" SELECT id, stop_reason, lease_until FROM held WHERE id NOT IN (SELECT id FROM locked)",
	5, {TEXTOID, INTERVALOID, INTERVALOID, TEXTARRAYOID, NAMEOID}, SPI_OK_SELECT
};

/*
 * QsExtendLeases extends the leases of the jobs an agent holds in the
 * queues given (whose locks the caller holds), those that the role
 * agent_role claimed (NULL: whoever claimed them), and appends (job_id,
 * stop_reason, lease_until) of each to a materialized result.  The lease
 * of a job whose stop was requested never goes beyond stop_requested_at +
 * stop_timeout.
 * A job whose row another transaction holds locked is returned with its
 * lease as it was: the caller holds queues' locks and must not wait for a
 * user's row lock (QsLockJob).
 */
void
QsExtendLeases(ReturnSetInfo *rsinfo, const char *agent, const char *agent_role,
			   Interval *lease, Interval *stop_timeout, Datum queues)
{
	Datum		args[5];
	char		nulls[5] = {' ', ' ', ' ', ' ', agent_role ? ' ' : 'n'};
	Name		role = palloc0(NAMEDATALEN);

	if (agent_role != NULL)
		namestrcpy(role, agent_role);
	args[0] = CStringGetTextDatum(agent);
	args[1] = IntervalPGetDatum(lease);
	args[2] = IntervalPGetDatum(stop_timeout);
	args[3] = queues;
	args[4] = NameGetDatum(role);
	QsQueryRun(&ExtendLeasesQuery, args, nulls, false, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		Datum		values[3];
		bool		nulls[3];

		for (int c = 0; c < 3; c++)
			values[c] = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, c + 1, &nulls[c]);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
}

/*
 * Whether the queue exists (a row); then whether the unit (if any) is in a
 * capacity map of its environment or shares, and whether it is known
 * there: in a map, or held by one of its jobs.
 */
static QsQuery QueueKnowsUnitQuery = {
	"SELECT k.in_maps, k.in_maps OR EXISTS (SELECT 1 FROM quota_sched.job j"
	"                   WHERE j.job_queue = k.name AND j.capacity_unit = $2"
	"                     AND j.state IN ('SCHEDULED', 'STARTING', 'RUNNING'))"
	"  FROM (SELECT q.name, $2::text IS NULL OR e.capacity_limits ? $2"
	"               OR EXISTS (SELECT 1 FROM quota_sched.quota_share s"
	"                           WHERE s.job_queue = q.name AND s.capacity_limits ? $2) AS in_maps"
	"          FROM quota_sched.job_queue q"
	"          JOIN quota_sched.service_environment e ON e.name = q.service_environment"
	"         WHERE q.name = $1) k",
	2, {TEXTOID, TEXTOID}, SPI_OK_SELECT
};

/*
 * The (queue, unit) pairs a claim found in the capacity maps, kept by the
 * session while the configuration does not change (QsConfigGeneration):
 * every claim checks its arguments, and the answer changes only with the
 * maps.  A unit known only because a job holds it is read each time.
 */
typedef struct KnownUnitKey
{
	char		queue[QS_MAX_NAME_LEN + 1];
	char		unit[QS_MAX_NAME_LEN + 1];
	bool		any;			/* no unit given */
} KnownUnitKey;

static HTAB *KnownUnits = NULL;
static uint64 KnownUnitsGeneration = 0;

/*
 * KnownUnitKeyOf fills the key of (queue, unit); false when a name is too
 * long to be valid (never kept).
 */
static bool
KnownUnitKeyOf(const char *queue, const char *unit, KnownUnitKey *key)
{
	if (strlen(queue) > QS_MAX_NAME_LEN || (unit != NULL && strlen(unit) > QS_MAX_NAME_LEN))
		return false;
	memset(key, 0, sizeof(*key));
	strlcpy(key->queue, queue, sizeof(key->queue));
	strlcpy(key->unit, unit ? unit : "", sizeof(key->unit));
	key->any = unit == NULL;
	return true;
}

/*
 * KeepKnownUnit remembers that the maps name (queue, unit), as read at
 * configuration generation gen (the table goes with one generation).
 */
static void
KeepKnownUnit(const KnownUnitKey *key, uint64 gen)
{
	if (KnownUnits == NULL || KnownUnitsGeneration != gen)
	{
		HASHCTL		ctl;

		if (KnownUnits != NULL)
			hash_destroy(KnownUnits);
		ctl.keysize = ctl.entrysize = sizeof(KnownUnitKey);
		KnownUnits = hash_create("quota_sched known units", 16, &ctl, HASH_ELEM | HASH_BLOBS);
		KnownUnitsGeneration = gen;
	}
	(void) hash_search(KnownUnits, key, HASH_ENTER, NULL);
}

/*
 * QsQueueKnowsUnit tells whether a job queue exists and, if so, in
 * *unit_known whether a capacity unit (NULL: none, which is known) is
 * known there: in the capacity map of its environment or of one of its
 * shares (kept: KnownUnits), or held by one of its jobs (claim()'s check
 * of its arguments).  The generation is taken before the statement's
 * snapshot of its own: a change committed after that snapshot moves it
 * on, and what was kept with it is not used again.
 */
bool
QsQueueKnowsUnit(const char *queue, const char *unit, bool *unit_known)
{
	Datum		args[2] = {CStringGetTextDatum(queue), unit ? CStringGetTextDatum(unit) : (Datum) 0};
	char		nulls[2] = {' ', unit ? ' ' : 'n'};
	KnownUnitKey key;
	bool		keyed = KnownUnitKeyOf(queue, unit, &key);
	bool		isnull;
	uint64		gen;

	*unit_known = true;
	/* the tables whose invalidations move the generation, as they are now */
	if (KnownUnits == NULL || KnownUnitsGeneration != QsConfigGeneration())
		QsRememberConfigTables();
	gen = QsConfigGeneration();
	if (keyed && KnownUnits != NULL && KnownUnitsGeneration == gen &&
		hash_search(KnownUnits, &key, HASH_FIND, NULL) != NULL)
		return true;
	if (QsQueryRun(&QueueKnowsUnitQuery, args, nulls, false, 1) == 0)
		return false;
	*unit_known = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 2,
											 &isnull));
	if (keyed && DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											&isnull)))
		KeepKnownUnit(&key, gen);
	return true;
}

/*
 * The submit_role of a job's share: its members are the share's team.  (A
 * job's share never changes.)
 */
static QsQuery ShareTeamQuery = {
	"SELECT s.submit_role FROM quota_sched.job j"
	"  JOIN quota_sched.quota_share s ON s.job_queue = j.job_queue AND s.name = j.quota_share"
	" WHERE j.id = $1",
	1, {INT8OID}, SPI_OK_SELECT
};

/*
 * QsJobShareTeam returns the submit_role of a job's share, in the caller's
 * memory; NULL when the job does not exist or its share has none.
 */
char *
QsJobShareTeam(int64 job_id)
{
	Datum		arg = Int64GetDatum(job_id);

	if (QsQueryRun(&ShareTeamQuery, &arg, NULL, true, 1) == 0)
		return NULL;
	return SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
}

static QsQuery ArrayIndexQuery = {
	"SELECT array_index FROM quota_sched.job WHERE id = $1", 1, {INT8OID}, SPI_OK_SELECT
};

/*
 * QsJobArrayIndex returns a job's index in its array; -1 when it is in
 * none (or does not exist).
 */
int32
QsJobArrayIndex(int64 job_id)
{
	Datum		arg = Int64GetDatum(job_id);
	bool		isnull;
	Datum		v;

	if (QsQueryRun(&ArrayIndexQuery, &arg, NULL, true, 1) == 0)
		return -1;
	v = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	return isnull ? -1 : DatumGetInt32(v);
}
