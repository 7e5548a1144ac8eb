/*-------------------------------------------------------------------------
 *
 * job_store_pass.c
 *		The job store's reads and writes for a pass (job_store_pass.h):
 *		the held jobs due for time-based work or stopping for a promised
 *		job, promised and timed-out RUNNABLE jobs, the RUNNABLE jobs of a
 *		share and unit in batches along the share-order index, a share's
 *		held jobs in victim order when the pass looks for victims, and the
 *		set-based writes of a pass's decisions, one statement per kind of
 *		change (the end of an attempt also for one job: QsEndAttempt).
 *		(job_event rows follow from the history trigger.)
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/timestamp.h"

#include "job_parts.h"
#include "job_store.h"
#include "heads_cache.h"
#include "job_store_pass.h"
#include "policy.h"
#include "query.h"

/*
 * How a pass reads its jobs (QsSetPassReads): the snapshot of its reads
 * (NULL: each statement its own), and whether they lock the rows they
 * return, skipping rows another transaction has locked.
 */
static Snapshot read_snapshot = NULL;
static bool read_locks = false;

static void ReadPairsHeads(QsPairFloors *pf, QsJobRows *heads, int **pair_of, int *per_pair);

/* The clause that makes a read of jobs lock what it returns. */
#define LOCKING " FOR NO KEY UPDATE SKIP LOCKED"

/* A statement as a pair (ReadJobs): [0] reads, [1] also locks. */
#define QUERY_PAIR(QUERY, limit) {QUERY(limit, ""), QUERY(limit, LOCKING)}

/*
 * The statements of a stream of jobs read in batches (QsReadStreamBatch):
 * [batch][plain, locking].
 */
typedef struct JobStream
{
	QsQuery		same[QS_STREAM_BATCHES][2];
	QsQuery		rest[QS_STREAM_BATCHES][2];
	int64		start;			/* rest's $5 from the start: beyond the first
								 * priority of the stream's order */
} JobStream;

/* The streams (Streams) */
typedef enum StreamKind
{
	STREAM_RUNNABLE,
	STREAM_RUNNABLE_CONSTRAINED,
	STREAM_HELD
} StreamKind;

/*
 * QsSetPassReads sets how the reads of jobs of a pass run until it is
 * called again: in one snapshot (the caller keeps it registered), so that
 * a job a user moves in its share's order while the pass runs (a priority
 * change) is read in one place, not two; or locking every row they return
 * and passing over rows locked by others (QsLockJobs), each statement in
 * a snapshot of its own (a row read is locked, so it cannot move).  With
 * neither, each statement reads in a snapshot of its own.
 */
void
QsSetPassReads(Snapshot snapshot, bool lock_rows)
{
	Assert(snapshot == NULL || !lock_rows);
	read_snapshot = snapshot;
	read_locks = lock_rows;
}

/*
 * ReadJobsAppend runs a query that selects job rows (of a pair: [0]
 * reads, [1] also locks), returning at most count of them (0: all), and
 * decodes them into the caller's memory after the rows of *result.
 */
static void
ReadJobsAppend(QsQuery *pair, Datum *args, const char *nulls, long count,
			   QsJobRows *result)
{
	MemoryContext outer = CurrentMemoryContext;
	QsJobDecoder decoder;
	int			n = QsQueryRunIn(&pair[read_locks], args, nulls, read_snapshot, count);
	QsJobRow   *rows = palloc0(sizeof(QsJobRow) * (result->n + n + 1));

	if (result->n > 0)
		memcpy(rows, result->rows, sizeof(QsJobRow) * result->n);
	QsJobDecoderInit(&decoder, SPI_tuptable->tupdesc);
	for (int i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(outer);

		QsJobDecode(&decoder, SPI_tuptable->vals[i], &rows[result->n + i]);
		MemoryContextSwitchTo(old);
	}
	SPI_freetuptable(SPI_tuptable);
	result->rows = rows;
	result->n += n;
}

/*
 * ReadJobs runs a query that selects job rows (of a pair: [0] reads, [1]
 * also locks) and decodes them into the caller's memory.
 */
static QsJobRows
ReadJobs(QsQuery *pair, Datum *args, const char *nulls)
{
	QsJobRows	result = {0, NULL};

	ReadJobsAppend(pair, args, nulls, 0, &result);
	return result;
}

/*
 * The jobs a pass always reads, by kind (QsJobSet), each as a pair: [0]
 * reads, [1] also locks (ReadJobs).
 *
 * Due jobs: the earliest QS_DUE_JOBS_MAX of each kind (the rest wait for
 * the next pass; a job both lapsed and past its deadline comes twice).
 * The unclaimed and the lapsed start at their floors ($3, $4 and $5:
 * QsReadDueJobs).
 * The ORDER BY and LIMIT keep each an ordered walk of its index: a generic
 * plan cannot estimate "<= now()" and would otherwise read the table.
 */
#define DUE_JOBS_QUERY(lock) { \
	"SELECT * FROM (" \
	"  SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	"   WHERE job_queue = $1 AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')" \
	"     AND agent IS NOT NULL AND lease_until >= $5 AND lease_until < now()" \
	"   ORDER BY lease_until LIMIT " CppAsString2(QS_DUE_JOBS_MAX) lock ") lapsed" \
	" UNION ALL " \
	"SELECT * FROM (" \
	"  SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	"   WHERE job_queue = $1 AND state = 'RUNNING' AND timeout IS NOT NULL" \
	"     AND stop_reason IS NULL" \
	"     AND quota_sched.attempt_deadline(started_at, timeout) <= now()" \
	"   ORDER BY quota_sched.attempt_deadline(started_at, timeout)" \
	"   LIMIT " CppAsString2(QS_DUE_JOBS_MAX) lock ") late" \
	" UNION ALL " \
	"SELECT * FROM (" \
	"  SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	"   WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NULL" \
	"     AND $2::interval IS NOT NULL AND scheduled_at < now() - $2::interval" \
	"     AND (scheduled_at, id) >= ($3, $4)" \
	"   ORDER BY scheduled_at, id" \
	"   LIMIT " CppAsString2(QS_DUE_JOBS_MAX) lock ") unclaimed" \
	" UNION ALL " \
	"SELECT * FROM (" \
	"  SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	"   WHERE job_queue = $1 AND state = 'SCHEDULED' AND agent IS NOT NULL" \
	"     AND $2::interval IS NOT NULL AND scheduled_at < now() - $2::interval" \
	"   ORDER BY scheduled_at, id" \
	"   LIMIT " CppAsString2(QS_DUE_JOBS_MAX) lock ") partly_claimed", \
	5, {TEXTOID, INTERVALOID, TIMESTAMPTZOID, INT8OID, TIMESTAMPTZOID}, SPI_OK_SELECT }
#define VICTIM_JOBS_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state IN ('SCHEDULED', 'STARTING', 'RUNNING')" \
	"   AND stop_reason IS NOT NULL AND preempted_for IS NOT NULL" lock, \
	1, {TEXTOID}, SPI_OK_SELECT }
#define PROMISED_JOBS_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'RUNNABLE' AND promised_at IS NOT NULL" lock, \
	1, {TEXTOID}, SPI_OK_SELECT }
#define EXPIRED_JOBS_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'RUNNABLE'" \
	"   AND status_reason LIKE 'MISCONFIGURATION:%'" \
	"   AND status_reason_at + $2 < now()" lock, \
	2, {TEXTOID, INTERVALOID}, SPI_OK_SELECT }

#define NO_AGENT_EXPIRED_JOBS_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'RUNNABLE' AND status_reason = 'NO_AGENT_FITS'" \
	"   AND status_reason_at + $2 < now()" lock, \
	2, {TEXTOID, INTERVALOID}, SPI_OK_SELECT }

#define DEPENDENCY_FAILED_JOBS_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND state = 'RUNNABLE' AND dependency_failed IS NOT NULL" \
	" ORDER BY id LIMIT " CppAsString2(QS_DUE_JOBS_MAX) lock, \
	1, {TEXTOID}, SPI_OK_SELECT }

static QsQuery JobSetQueries[][2] = {
	[QS_DUE_JOBS] = {DUE_JOBS_QUERY(""), DUE_JOBS_QUERY(LOCKING)},
	[QS_VICTIM_JOBS] = {VICTIM_JOBS_QUERY(""), VICTIM_JOBS_QUERY(LOCKING)},
	[QS_PROMISED_JOBS] = {PROMISED_JOBS_QUERY(""), PROMISED_JOBS_QUERY(LOCKING)},
	[QS_EXPIRED_JOBS] = {EXPIRED_JOBS_QUERY(""), EXPIRED_JOBS_QUERY(LOCKING)},
	[QS_NO_AGENT_EXPIRED_JOBS] = {NO_AGENT_EXPIRED_JOBS_QUERY(""),
	NO_AGENT_EXPIRED_JOBS_QUERY(LOCKING)},
	[QS_DEPENDENCY_FAILED_JOBS] = {DEPENDENCY_FAILED_JOBS_QUERY(""),
	DEPENDENCY_FAILED_JOBS_QUERY(LOCKING)},
};

/*
 * QsReadJobSet reads the held jobs of a queue whose lease expired, whose
 * attempt passed its deadline or that no agent claimed within the queue's
 * claim_timeout (scheduling.md 3.10; the interval given, NULL: none), or
 * those stopping for a promised job, or the RUNNABLE jobs that hold a
 * promise, or those misconfigured, or held back NO_AGENT_FITS (3.10), for
 * longer than the queue's runnable_timeout (scheduling.md 3.9; the
 * interval given: by the time of their reason), or those a dependency of
 * which FAILED (3.17).  Each through an index of its own.
 */
QsJobRows
QsReadJobSet(const char *queue, QsJobSet set, Interval *interval)
{
	Datum		args[2] = {CStringGetTextDatum(queue), PointerGetDatum(interval)};

	Assert(set != QS_DUE_JOBS);
	return ReadJobs(JobSetQueries[set], args, interval ? NULL : " n");
}

/*
 * QsReadDueJobs reads the due jobs of a queue (QsReadJobSet), the
 * unclaimed and the lapsed from their floors (scan_floor.c), which seen
 * holds as they were before the pass's snapshot: [0] UNCLAIMED, [1]
 * LAPSED.
 */
QsJobRows
QsReadDueJobs(const char *queue, Interval *claim_timeout, const QsFloorSeen *seen)
{
	QsFloorKeyValue unclaimed = {{DT_NOBEGIN, 0}};
	QsFloorKeyValue lapsed = QsFloorStart(QS_FLOOR_LAPSED, queue, "", &seen[1], read_snapshot);
	Datum		args[5];

	if (claim_timeout != NULL)
		unclaimed = QsFloorStart(QS_FLOOR_UNCLAIMED, queue, "", &seen[0], read_snapshot);
	args[0] = CStringGetTextDatum(queue);
	args[1] = PointerGetDatum(claim_timeout);
	args[2] = TimestampTzGetDatum(unclaimed.k[0]);
	args[3] = Int64GetDatum(unclaimed.k[1]);
	args[4] = TimestampTzGetDatum(lapsed.k[0]);
	return ReadJobs(JobSetQueries[QS_DUE_JOBS], args, claim_timeout ? NULL : " n   ");
}

static QsQuery HasRunnableQuery = {
	"SELECT EXISTS (SELECT FROM quota_sched.job WHERE job_queue = $1 AND state = 'RUNNABLE'"
	"               AND dependencies_waiting IS NULL)",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * QsQueueHasRunnable tells whether a queue may have a RUNNABLE job, for the
 * worker's check before a pass: when the floors know every pair
 * (scan_floor.c), yes if one of them has a valid floor that is not past
 * every key (a row was moved in since a pass or a probe raised it, or a
 * pass left a job there: the pass itself will probe it), else a probe of
 * the pairs whose floor is not valid; when they do not, one probe of the
 * share-order index.  A pass that dispatched every job of a pair left its
 * floor past every key (pass_apply.c, AdvanceFloors), so a check after it
 * runs no statement until a job comes.
 */
bool
QsQueueHasRunnable(const char *queue)
{
	Datum		arg = CStringGetTextDatum(queue);
	bool		isnull;
	QsPairFloors pf = QsFloorReadPairs(queue);

	if (pf.marker.valid)
	{
		for (int i = 0; i < pf.n; i++)
			if (pf.pairs[i].seen.valid && !QS_FLOOR_TOP(pf.pairs[i].seen.floor))
				return true;
		QsFloorProbePairs(&pf, NULL);
		return pf.listed != NIL;
	}
	QsQueryRun(&HasRunnableQuery, &arg, NULL, true, 0);
	return DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull));
}

static QsQuery RunnablePairsQuery = {
	"WITH RECURSIVE p(quota_share, capacity_unit) AS ("
	"  (SELECT quota_share, capacity_unit FROM quota_sched.job"
	"    WHERE job_queue = $1 AND state = 'RUNNABLE' AND dependencies_waiting IS NULL"
	"    ORDER BY quota_share, capacity_unit LIMIT 1)"
	"  UNION ALL"
	"  SELECT n.quota_share, n.capacity_unit FROM p, LATERAL ("
	"    SELECT j.quota_share, j.capacity_unit FROM quota_sched.job j"
	"     WHERE j.job_queue = $1 AND j.state = 'RUNNABLE' AND j.dependencies_waiting IS NULL"
	"       AND (j.quota_share, j.capacity_unit) > (p.quota_share, p.capacity_unit)"
	"     ORDER BY j.quota_share, j.capacity_unit LIMIT 1) n)"
	" SELECT quota_share, capacity_unit FROM p",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * The classes of placement constraints (per_host, 0: none; same_label, '':
 * none) of a queue's RUNNABLE jobs, per share and unit, each with its
 * smallest job's instances: a loose index scan of
 * job_runnable_constrained_by_size, one probe per class.
 */
#define CONSTRAINED_CLASS "quota_share, capacity_unit, coalesce(instances_per_host, 0)," \
	" coalesce(same_label, '')"
#define CONSTRAINED_WHERE "job_queue = $1 AND state = 'RUNNABLE' AND dependencies_waiting IS NULL" \
	" AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL)"
static QsQuery ConstrainedClassesQuery = {
	"WITH RECURSIVE c(quota_share, capacity_unit, per_host, same_label, smallest) AS ("
	"  (SELECT " CONSTRAINED_CLASS ", instance_count FROM quota_sched.job"
	"    WHERE " CONSTRAINED_WHERE " ORDER BY 1, 2, 3, 4, 5 LIMIT 1)"
	"  UNION ALL"
	"  SELECT n.* FROM c, LATERAL ("
	"    SELECT " CONSTRAINED_CLASS ", instance_count FROM quota_sched.job"
	"     WHERE " CONSTRAINED_WHERE
	"       AND (" CONSTRAINED_CLASS ") > (c.quota_share, c.capacity_unit, c.per_host,"
	"                                     c.same_label)"
	"     ORDER BY 1, 2, 3, 4, 5 LIMIT 1) n)"
	" SELECT * FROM c",
	1, {TEXTOID}, SPI_OK_SELECT
};

/*
 * ReadPairs runs a query of (share, unit) pairs of a queue and returns
 * them as a list of share, unit, share, unit... in the caller's memory.
 */
static List *
ReadPairs(QsQuery *query, const char *queue)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		arg = CStringGetTextDatum(queue);
	List	   *pairs = NIL;
	uint64		n = QsQueryRunIn(query, &arg, NULL, read_snapshot, 0);

	for (uint64 i = 0; i < n; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(outer);

		pairs = lappend(pairs, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1));
		pairs = lappend(pairs, SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2));
		MemoryContextSwitchTo(old);
	}
	return pairs;
}

/*
 * QsReadConstrainedClasses returns the classes of placement constraints of
 * a queue's RUNNABLE jobs, per share and unit (scheduling.md 3.13: only
 * there does the skip rule keep classes of jobs apart), in the caller's
 * memory; *n is their number.
 */
QsConstrainedClass *
QsReadConstrainedClasses(const char *queue, int *n)
{
	MemoryContext outer = CurrentMemoryContext;
	Datum		arg = CStringGetTextDatum(queue);
	uint64		rows = QsQueryRunIn(&ConstrainedClassesQuery, &arg, NULL, read_snapshot, 0);
	QsConstrainedClass *classes = MemoryContextAlloc(outer, sizeof(QsConstrainedClass) *
													 (rows + 1));

	for (uint64 i = 0; i < rows; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext old = MemoryContextSwitchTo(outer);
		bool		isnull;
		char	   *label = SPI_getvalue(tup, desc, 4);

		classes[i].share = SPI_getvalue(tup, desc, 1);
		classes[i].unit = SPI_getvalue(tup, desc, 2);
		classes[i].per_host = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
		classes[i].same_label = label[0] == '\0' ? NULL : label;
		classes[i].smallest = DatumGetInt32(SPI_getbinval(tup, desc, 5, &isnull));
		MemoryContextSwitchTo(old);
	}
	*n = (int) rows;
	return classes;
}

/*
 * QsReadRunnablePairs lists the (share, unit) pairs of a queue that have
 * RUNNABLE jobs, as a list of share, unit, share, unit... in the caller's
 * memory, in the order of their index, with the first job of each in pf
 * (read before the pass's snapshot: QsFloorReadPairs): a probe of each
 * pair from its floor, when pf knows every pair that may have jobs; else a
 * loose index scan first, one probe per pair.  In the pass's snapshot, the
 * probe is the read of the pairs' first jobs (ReadPairsHeads), which it
 * gives in *heads (*per_pair of each at most), with the pair of each row
 * (an index into pf->pairs) in (*pair_of)[row]; else (reads that lock
 * their rows, or none) *heads is empty and *per_pair 0.
 */
List *
QsReadRunnablePairs(QsPairFloors *pf, QsJobRows *heads, int **pair_of, int *per_pair)
{
	heads->n = 0;
	heads->rows = NULL;
	*pair_of = NULL;
	*per_pair = 0;
	if (!pf->marker.valid)
		QsFloorSetPairs(pf, ReadPairs(&RunnablePairsQuery, pf->queue));
	if (read_snapshot != NULL)
		ReadPairsHeads(pf, heads, pair_of, per_pair);
	else
		QsFloorProbePairs(pf, read_snapshot);
	return pf->listed;
}

/*
 * The jobs of one share and unit ($1-$3) that pass a filter with a bound
 * ($4), read after a position in the stream's order in batches of growing
 * size (QsReadStreamBatch), in two statements: those of the position's
 * priority after it ($5 the priority, ($6, $7) the position's time and id:
 * STREAM_SAME), then, if the batch is not full, those of the priorities
 * after it ($5 the priority, an int8 so that the start of the order is
 * beyond any priority: STREAM_REST).  Each is a range of an index that
 * starts at the position: a single statement with "priority <= $5 AND
 * (priority < $5 OR (queued_at, id) > ($6, $7))" starts at the position's
 * priority and filters its rows up to the position, so that reading on
 * from the middle of a long backlog of one priority read it again from its
 * start.  Each batch size is a statement of its own with a constant LIMIT,
 * planned as an ordered walk of the index whatever the statistics say
 * (QS_INDEX_WALK: a LIMIT above the rows the generic plan expects would
 * otherwise make a sort cheaper on paper): a plan that sorted a share's
 * whole backlog would make the cost of a pass grow with it.
 */
#define STREAM_SELECT(filter) \
	"SELECT " QS_JOB_POLICY_COLUMNS " FROM quota_sched.job" \
	" WHERE job_queue = $1 AND quota_share = $2 AND capacity_unit = $3 AND " filter
#define STREAM_SAME(limit, lock, filter, bound_type, after, order, rest, rest_order) { \
	STREAM_SELECT(filter) " AND priority = $5 AND " after \
	" ORDER BY " order " LIMIT " #limit lock, \
	7, {TEXTOID, TEXTOID, TEXTOID, bound_type, INT4OID, TIMESTAMPTZOID, INT8OID}, \
	SPI_OK_SELECT, QS_INDEX_WALK }
#define STREAM_REST(limit, lock, filter, bound_type, after, order, rest, rest_order) { \
	STREAM_SELECT(filter) " AND " rest \
	" ORDER BY " rest_order " LIMIT " #limit lock, \
	5, {TEXTOID, TEXTOID, TEXTOID, bound_type, INT8OID}, \
	SPI_OK_SELECT, QS_INDEX_WALK }
/* A stream's statement in each batch size (QsStreamBatchSize), as pairs */
#define STREAM_PAIR(QUERY, limit, ...) \
	{QUERY(limit, "", __VA_ARGS__), QUERY(limit, LOCKING, __VA_ARGS__)}
#define STREAM_BATCHES(QUERY, ...) { \
	STREAM_PAIR(QUERY, 8, __VA_ARGS__), STREAM_PAIR(QUERY, 64, __VA_ARGS__), \
	STREAM_PAIR(QUERY, 512, __VA_ARGS__), STREAM_PAIR(QUERY, 4096, __VA_ARGS__) }
/*
 * STREAM(start, filter, type of $4, after: where SAME's rows follow the
 * position, SAME's order, rest: which priorities REST reads, REST's order)
 * is a JobStream.
 */
#define STREAM(start, ...) \
	{STREAM_BATCHES(STREAM_SAME, __VA_ARGS__), STREAM_BATCHES(STREAM_REST, __VA_ARGS__), start}

static const int StreamBatchSizes[QS_STREAM_BATCHES] = {8, 64, 512, 4096};

/*
 * The streams: the RUNNABLE jobs with fewer instances than $4, in
 * share order (priorities from the highest) along the share-order index
 * ("+ 0": a filter, so that this index serves); those of them with
 * placement constraints along the index of those alone (a placed unit's
 * skip rule keeps their bound apart, scheduling.md 3.13, so the pass reads
 * them beside the others whatever their bound); the held jobs with no stop
 * pending and a priority below $4, in victim order (priorities from the
 * lowest, scheduling.md 3.4) along the victim-order index (a job without a
 * scheduled_at, which only a write that bypassed the triggers leaves, is
 * no victim, as the row comparison leaves it out of the first statement).
 */
static JobStream Streams[3] = {
	[STREAM_RUNNABLE] = STREAM((int64) PG_INT32_MAX + 1,
		   "state = 'RUNNABLE' AND dependencies_waiting IS NULL AND instance_count + 0 < $4", INT4OID,
		   "(queued_at, id) > ($6, $7)", "queued_at, id",
		   "priority < $5", "priority DESC, queued_at, id"),
	[STREAM_RUNNABLE_CONSTRAINED] = STREAM((int64) PG_INT32_MAX + 1,
		   "state = 'RUNNABLE' AND dependencies_waiting IS NULL AND instance_count + 0 < $4"
		   " AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL)", INT4OID,
		   "(queued_at, id) > ($6, $7)", "queued_at, id",
		   "priority < $5", "priority DESC, queued_at, id"),
	[STREAM_HELD] = STREAM((int64) PG_INT32_MIN - 1,
		   "state IN ('SCHEDULED', 'STARTING', 'RUNNING') AND stop_reason IS NULL"
		   " AND priority < $4", INT8OID,
		   "(scheduled_at, id) < ($6, $7)", "scheduled_at DESC, id DESC",
		   "priority > $5 AND scheduled_at IS NOT NULL", "priority, scheduled_at DESC, id DESC")
};

/*
 * QsStreamBatchSize returns the number of jobs batch number `batch` asks
 * for at most.
 */
int
QsStreamBatchSize(int batch)
{
	return StreamBatchSizes[batch];
}

/*
 * PairArgs sets the first arguments of a read of the jobs of one share and
 * unit: $1 the queue, $2 the share, $3 the unit, $4 the bound of the read.
 */
static void
PairArgs(Datum *args, const char *queue, const char *share, const char *unit, Datum bound)
{
	args[0] = CStringGetTextDatum(queue);
	args[1] = CStringGetTextDatum(share);
	args[2] = CStringGetTextDatum(unit);
	args[3] = bound;
}

/*
 * QsReadStreamBatch reads batch number `batch` of a share and unit's
 * RUNNABLE jobs with fewer instances than below (constrained: of those
 * with placement constraints), after *after in share order (NULL: from the
 * start); or, held, of its held jobs with no stop
 * pending and a priority below `below`, after *after in victim order.  In
 * the stream's two statements (pairs: see ReadJobs): those of the
 * position's priority after its time and id, then, if the batch is not
 * full, those of the priorities after it.
 */
QsJobRows
QsReadStreamBatch(bool held, bool constrained, const char *queue, const char *share,
				  const char *unit, const QsJob *after, int64 below, int batch)
{
	JobStream  *stream = &Streams[held ? STREAM_HELD :
								  constrained ? STREAM_RUNNABLE_CONSTRAINED : STREAM_RUNNABLE];
	int			limit = StreamBatchSizes[batch];
	QsJobRows	rows = {0, NULL};
	Datum		args[7];

	PairArgs(args, queue, share, unit,
			 held ? Int64GetDatum(below) : Int32GetDatum((int32) below));
	if (after != NULL)
	{
		args[4] = Int32GetDatum(after->priority);
		args[5] = TimestampTzGetDatum(held ? after->scheduled_at : after->queued_at);
		args[6] = Int64GetDatum(after->id);
		ReadJobsAppend(stream->same[batch], args, NULL, 0, &rows);
	}
	if (rows.n < limit)
	{
		args[4] = Int64GetDatum(after ? (int64) after->priority : stream->start);
		ReadJobsAppend(stream->rest[batch], args, NULL, limit - rows.n, &rows);
	}
	return rows;
}

/*
 * Whether a share and unit has a RUNNABLE job after a position in share
 * order ($5 the priority, an int8 as in the RUNNABLE stream's rest, ($6, $7) the
 * queued_at and id) with fewer instances than $4: a walk of the by-size
 * index up to the bound, whose jobs before the position a reader has given
 * already (each had fewer instances than the bound of its time, which was
 * no smaller).  ("+ 0": a filter, so that the by-size index serves; ORDER
 * BY, so that it is an ordered walk of it whatever the statistics say.)
 */
static QsQuery RunnableAnyAfterQuery = {
	"SELECT instance_count FROM quota_sched.job"
	" WHERE job_queue = $1 AND quota_share = $2"
	"   AND capacity_unit = $3 AND state = 'RUNNABLE' AND dependencies_waiting IS NULL"
	"   AND instance_count < $4"
	"   AND (priority + 0 < $5 OR (priority + 0 = $5 AND (queued_at, id) > ($6, $7)))"
	" ORDER BY instance_count LIMIT 1",
	7, {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT8OID, TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT,
	QS_INDEX_WALK
};

/*
 * QsRunnableAnyAfter tells whether a share and unit has a RUNNABLE job
 * after *after in share order (NULL: from the start) with fewer instances
 * than below.  A reader whose size bound the skip rule narrowed asks this
 * before it reads on along the share-order index: when the jobs it passed
 * were the smallest (jobs of one size, or sizes growing in share order),
 * reading on would walk the rest of the share's jobs only to filter every
 * one of them out.
 */
bool
QsRunnableAnyAfter(const char *queue, const char *share, const char *unit,
				   const QsJob *after, int32 below)
{
	Datum		args[7];
	uint64		n;

	PairArgs(args, queue, share, unit, Int32GetDatum(below));
	args[4] = Int64GetDatum(after ? (int64) after->priority : (int64) PG_INT32_MAX + 1);
	args[5] = TimestampTzGetDatum(after ? after->queued_at : 0);
	args[6] = Int64GetDatum(after ? after->id : 0);
	n = QsQueryRunIn(&RunnableAnyAfterQuery, args, NULL, read_snapshot, 0);
	SPI_freetuptable(SPI_tuptable);
	return n > 0;
}

/*
 * Whether a share and unit has a RUNNABLE job with placement constraints
 * after a position in share order ($7 the priority, an int8, ($8, $9) the
 * queued_at and id) that one of its classes' bounds lets through ($4-$6:
 * per_host, same_label and the bound of each class): per class, an ordered
 * walk of job_runnable_constrained_by_size up to the class's bound (see
 * RunnableAnyAfterQuery; LATERAL with a LIMIT, so that it is a walk per
 * class and never a join of the share's constrained jobs).
 */
static QsQuery ConstrainedAnyAfterQuery = {
	"SELECT 1 FROM unnest($4::int4[], $5::text[], $6::int4[]) AS c(per_host, same_label, below)"
	" CROSS JOIN LATERAL (SELECT instance_count FROM quota_sched.job"
	"   WHERE job_queue = $1 AND quota_share = $2 AND capacity_unit = $3"
	"     AND state = 'RUNNABLE' AND dependencies_waiting IS NULL"
	"     AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL)"
	"     AND coalesce(instances_per_host, 0) = c.per_host"
	"     AND coalesce(same_label, '') = c.same_label AND instance_count < c.below"
	"     AND (priority + 0 < $7 OR (priority + 0 = $7 AND (queued_at, id) > ($8, $9)))"
	"   ORDER BY instance_count LIMIT 1) j"
	" LIMIT 1",
	9, {TEXTOID, TEXTOID, TEXTOID, INT4ARRAYOID, TEXTARRAYOID, INT4ARRAYOID, INT8OID,
		TIMESTAMPTZOID, INT8OID}, SPI_OK_SELECT
};

/*
 * QsConstrainedAnyAfter tells whether a share and unit has a RUNNABLE job
 * with placement constraints after *after in share order (NULL: from the
 * start) that the bound of its class lets through: classes[i] (per_host,
 * same_label) has bound below[i].  The constrained reader of a split
 * reader asks this before it reads on (see QsRunnableAnyAfter).
 */
bool
QsConstrainedAnyAfter(const char *queue, const char *share, const char *unit,
					  const QsJob *after, const QsConstrainedClass *classes,
					  const int32 *below, int nclasses)
{
	QsArray		cols[3];
	Datum		args[9];
	uint64		n;

	QsArrayInit(&cols[0], INT4OID, nclasses);
	QsArrayInit(&cols[1], TEXTOID, nclasses);
	QsArrayInit(&cols[2], INT4OID, nclasses);
	for (int i = 0; i < nclasses; i++)
	{
		QsArrayPush(&cols[0], Int32GetDatum(classes[i].per_host), false);
		QsArrayPush(&cols[1], CStringGetTextDatum(classes[i].same_label ?
												  classes[i].same_label : ""), false);
		QsArrayPush(&cols[2], Int32GetDatum(below[i]), false);
	}
	PairArgs(args, queue, share, unit, QsArrayDatum(&cols[0]));
	args[4] = QsArrayDatum(&cols[1]);
	args[5] = QsArrayDatum(&cols[2]);
	args[6] = Int64GetDatum(after ? (int64) after->priority : (int64) PG_INT32_MAX + 1);
	args[7] = TimestampTzGetDatum(after ? after->queued_at : 0);
	args[8] = Int64GetDatum(after ? after->id : 0);
	n = QsQueryRunIn(&ConstrainedAnyAfterQuery, args, NULL, read_snapshot, 0);
	SPI_freetuptable(SPI_tuptable);
	return n > 0;
}

/*
 * The first jobs of the RUNNABLE jobs of several shares and units at once:
 * one statement where a pass would otherwise run one per share and unit as
 * its cursors start.  Each share and unit's are its first in share order
 * from a position ($4: its priority, an int8 so that the start of the order
 * is beyond any priority; $5, $6: its time and id), in no particular order
 * (the caller sorts them): those of the position's priority, then those
 * after it, each a range of the index that starts at the position (as
 * STREAM_SAME and STREAM_REST below), planned as walks of it
 * (QS_INDEX_WALK: job_runnable_by_size and a sort look cheaper on paper,
 * and would read every entry of the pair).  A statement per number
 * of jobs per share and unit, each with a constant LIMIT (see
 * RUNNABLE_BATCH_QUERY).
 */
#define HEADS_SELECT(filter) \
	"SELECT " QS_JOB_POLICY_COLUMNS ", quota_share, capacity_unit FROM quota_sched.job" \
	" WHERE job_queue = $1 AND quota_share = p.quota_share" \
	"   AND capacity_unit = p.capacity_unit AND state = 'RUNNABLE'" \
	"   AND dependencies_waiting IS NULL" filter
#define HEADS_LATERAL(limit, lock, filter) \
	" CROSS JOIN LATERAL (" \
	"   SELECT * FROM (" HEADS_SELECT(filter) \
	"     AND priority = p.priority AND (queued_at, id) >= (p.queued_at, p.id)" \
	"     ORDER BY queued_at, id LIMIT " #limit lock ") same" \
	"   UNION ALL" \
	"   SELECT * FROM (" HEADS_SELECT(filter) " AND priority < p.priority" \
	"     ORDER BY priority DESC, queued_at, id LIMIT " #limit lock ") rest" \
	"   LIMIT " #limit ") j"
#define RUNNABLE_HEADS_QUERY(limit, lock, filter) { \
	"SELECT j.* FROM unnest($2::text[], $3::text[], $4::int8[], $5::timestamptz[], $6::int8[])" \
	"   AS p(quota_share, capacity_unit, priority, queued_at, id)" \
	HEADS_LATERAL(limit, lock, filter), \
	6, {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID}, \
	SPI_OK_SELECT, QS_INDEX_WALK }
#define HEADS_PAIR(limit, filter) \
	{RUNNABLE_HEADS_QUERY(limit, "", filter), RUNNABLE_HEADS_QUERY(limit, LOCKING, filter)}
#define HEADS_SIZES(filter) {HEADS_PAIR(8, filter), HEADS_PAIR(2, filter), HEADS_PAIR(1, filter)}

/* [constrained: those with placement constraints alone][size][lock] */
static QsQuery RunnableHeadsQueries[2][3][2] = {
	HEADS_SIZES(""),
	HEADS_SIZES(" AND (instances_per_host IS NOT NULL OR same_label IS NOT NULL)"),
};
static const int RunnableHeadsSizes[] = {8, 2, 1};

/*
 * The first jobs of each of several shares and units from its floor, as
 * RunnableHeadsQueries (not locking, with none constrained), with each
 * row's pair (its place in the arrays, from 1) in the order of the pairs
 * in job_runnable_share_order, so that they list the pairs as
 * PairsProbeQuery does (scan_floor.c).
 */
#define PAIRS_HEADS_QUERY(limit) { \
	"SELECT j.*, p.i AS pair" \
	"  FROM unnest($2::text[], $3::text[], $4::int8[], $5::timestamptz[], $6::int8[])" \
	"       WITH ORDINALITY AS p(quota_share, capacity_unit, priority, queued_at, id, i)" \
	HEADS_LATERAL(limit, "", "") \
	" ORDER BY p.quota_share, p.capacity_unit", \
	6, {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZARRAYOID, INT8ARRAYOID}, \
	SPI_OK_SELECT, QS_INDEX_WALK }

static QsQuery PairsHeadsQueries[3] = {PAIRS_HEADS_QUERY(8), PAIRS_HEADS_QUERY(2),
PAIRS_HEADS_QUERY(1)};

/*
 * HeadsSize returns which of the heads statements reads the first jobs of
 * n pairs: 8 of each for up to 8 pairs, fewer for more, so that the
 * statement reads at most about 64 jobs beyond one per pair, but at least
 * at_least of each (up to 8).
 */
static int
HeadsSize(int n, int at_least)
{
	int			which = n <= 8 ? 0 : n <= 32 ? 1 : 2;

	while (which > 0 && RunnableHeadsSizes[which] < at_least)
		which--;
	return which;
}

/* The first jobs of pairs as ReadPairsHeads gathers them. */
typedef struct PairsHeads
{
	QsJobRows  *heads;
	int		   *pair_of;		/* the pair (of pf) of each row */
	QsHeadsKept **kept;			/* of each pair read, which[i]; NULL: none */
	int			limit;			/* jobs per pair at most */
	int		   *listed;			/* pairs (of pf) in the order the read found them */
	int			nlisted;
} PairsHeads;

/* AddHeads adds rows[n] of pair p (of pf) to ph. */
static void
AddHeads(PairsHeads *ph, const QsJobRow *rows, int n, int p)
{
	for (int r = 0; r < n; r++)
	{
		ph->heads->rows[ph->heads->n] = rows[r];
		ph->pair_of[ph->heads->n++] = p;
	}
}

/*
 * TakeKept takes the first jobs kept of those pairs which[n] of pf that
 * none changed since (heads_cache.c), and puts the others in miss[],
 * returning how many.
 */
static int
TakeKept(const QsPairFloors *pf, const int *which, int n, PairsHeads *ph, int *miss)
{
	uint64	   *touches = palloc(sizeof(uint64) * (n + 1));
	uint64		wipes;
	int			nmiss = 0;

	if (ph->kept != NULL)
		QsFloorTouches(pf, which, n, touches, &wipes);
	for (int i = 0; i < n; i++)
	{
		const QsJobRow *rows;
		int			nrows;

		if (ph->kept == NULL || !pf->pairs[which[i]].seen.valid ||
			!pf->pairs[which[i]].settled ||
			!QsHeadsTake(ph->kept[i], touches[i], wipes, ph->limit, &rows, &nrows))
			miss[nmiss++] = i;
		else
			AddHeads(ph, rows, nrows, which[i]);
	}
	return nmiss;
}

/*
 * AddFresh adds the rows a read of the first jobs of pairs which[miss[nmiss]]
 * returned (tuples[nrows], each of pair probe[pair_at[r]]) to ph, each
 * pair's kept when it may be (else decoded into the caller's memory).
 */
static void
AddFresh(const QsPairFloors *pf, const int *miss, const int *probe, int nmiss,
		 HeapTuple *tuples, const int *pair_at, int nrows, PairsHeads *ph)
{
	int		   *start = palloc0(sizeof(int) * (nmiss + 2));
	int		   *filled = palloc0(sizeof(int) * (nmiss + 1));
	HeapTuple  *of_pair = palloc(sizeof(HeapTuple) * (nrows + 1));
	QsJobDecoder decoder;

	QsJobDecoderInit(&decoder, SPI_tuptable->tupdesc);
	/* each pair's rows, in the order read */
	for (int r = 0; r < nrows; r++)
		start[pair_at[r] + 1]++;
	for (int j = 0; j < nmiss; j++)
		start[j + 1] += start[j];
	for (int r = 0; r < nrows; r++)
		of_pair[start[pair_at[r]] + filled[pair_at[r]]++] = tuples[r];
	for (int j = 0; j < nmiss; j++)
	{
		const QsPairFloor *p = &pf->pairs[probe[j]];
		QsHeadsKept *kept = ph->kept != NULL ? ph->kept[miss[j]] : NULL;

		if (kept != NULL && p->settled)
			AddHeads(ph, QsHeadsKeep(kept, p->touches, pf->wipes, ph->limit,
									 of_pair + start[j], filled[j], &decoder),
					 filled[j], probe[j]);
		else
		{
			/* what was kept stays: its counts tell when it is right */
			for (int t = 0; t < filled[j]; t++)
			{
				QsJobDecode(&decoder, of_pair[start[j] + t], &ph->heads->rows[ph->heads->n]);
				ph->pair_of[ph->heads->n++] = probe[j];
			}
		}
	}
}

/*
 * ReadFresh reads the first jobs of pairs which[miss[nmiss]] of pf from
 * their floors, in the pass's snapshot, one statement of size (HeadsSize)
 * for them all, and adds them to ph (AddFresh), noting the order in which
 * it found the pairs.
 */
static void
ReadFresh(const QsPairFloors *pf, const int *which, const int *miss, int nmiss, int size,
		  PairsHeads *ph)
{
	MemoryContext outer = CurrentMemoryContext;
	int		   *probe = palloc(sizeof(int) * (nmiss + 1));
	HeapTuple  *tuples;
	int		   *pair_at;
	Datum		args[6];
	uint64		rows;
	int			pair_col;

	for (int j = 0; j < nmiss; j++)
		probe[j] = which[miss[j]];
	args[0] = CStringGetTextDatum(pf->queue);
	QsFloorProbeArgs(pf, probe, nmiss, args);
	rows = QsQueryRunIn(&PairsHeadsQueries[size], args, NULL, read_snapshot, 0);
	MemoryContextSwitchTo(outer);
	pair_col = SPI_fnumber(SPI_tuptable->tupdesc, "pair");
	tuples = palloc(sizeof(HeapTuple) * (rows + 1));
	pair_at = palloc(sizeof(int) * (rows + 1));
	for (uint64 r = 0; r < rows; r++)
	{
		bool		isnull;

		tuples[r] = SPI_tuptable->vals[r];
		pair_at[r] = DatumGetInt64(SPI_getbinval(tuples[r], SPI_tuptable->tupdesc, pair_col,
												 &isnull)) - 1;
		if (r == 0 || pair_at[r] != pair_at[r - 1])
			ph->listed[ph->nlisted++] = probe[pair_at[r]];
	}
	AddFresh(pf, miss, probe, nmiss, tuples, pair_at, (int) rows, ph);
	QsHeadsNoteRead(nmiss);
	SPI_freetuptable(SPI_tuptable);
	MemoryContextSwitchTo(outer);
}

/*
 * FoundInOrder tells pf the first job found of each pair which[n] read
 * (QsFloorFound), in the order of their index, as the statement returns
 * them: so listed lists them in that order, whichever were kept (in the
 * statement's order when it read them all; else by their ranks).
 */
static void
FoundInOrder(QsPairFloors *pf, const int *which, int n, bool all_read, const PairsHeads *ph)
{
	QsFloorKeyValue *first = palloc(sizeof(QsFloorKeyValue) * (pf->n + 1));
	int		   *order;
	int			ranks = 0;

	for (int p = 0; p < pf->n; p++)
		first[p] = QsFloorTop;
	for (int r = 0; r < ph->heads->n; r++)
	{
		const QsJob *job = &ph->heads->rows[r].job;
		QsFloorKeyValue key = QsFloorJobKey(job->priority, job->queued_at, job->id);

		if (QsFloorKeyLess(key, first[ph->pair_of[r]]))
			first[ph->pair_of[r]] = key;
	}
	if (all_read)
	{
		for (int i = 0; i < ph->nlisted; i++)
			QsFloorFound(pf, ph->listed[i], first[ph->listed[i]]);
		return;
	}
	/* the ranks of a queue's pairs are 0, 1, ...: each pair's is its place */
	for (int i = 0; i < n; i++)
		ranks = Max(ranks, QsHeadsRank(ph->kept[i]) + 1);
	order = palloc(sizeof(int) * (ranks + 1));
	for (int r = 0; r < ranks; r++)
		order[r] = -1;
	for (int i = 0; i < n; i++)
		order[QsHeadsRank(ph->kept[i])] = which[i];
	for (int r = 0; r < ranks; r++)
		if (order[r] >= 0 && !QS_FLOOR_TOP(first[order[r]]))
			QsFloorFound(pf, order[r], first[order[r]]);
}

/*
 * ReadPairsHeads probes the pairs of pf (QsFloorProbePairs) by reading the
 * first jobs of each from its floor in the pass's snapshot, which it gives
 * in *heads, into the caller's memory, as QsReadRunnableHeads would from
 * each pair's first job: one statement where a pass ran two, a probe then
 * the read of the heads from what it found.  The first jobs of a pair none
 * of whose jobs changed since a pass of this backend read them are taken
 * from what it kept (heads_cache.c): the rows, read only.
 */
static void
ReadPairsHeads(QsPairFloors *pf, QsJobRows *heads, int **pair_of, int *per_pair)
{
	int		   *which;
	int			n = QsFloorToProbe(pf, &which);
	int			size = HeadsSize(n, 1);
	PairsHeads	ph = {heads, NULL, NULL, RunnableHeadsSizes[size], NULL, 0};
	int		   *miss = palloc(sizeof(int) * (n + 1));
	int			nmiss;

	*per_pair = ph.limit;
	heads->n = 0;
	heads->rows = palloc(sizeof(QsJobRow) * (n * ph.limit + 1));
	*pair_of = ph.pair_of = palloc(sizeof(int) * (n * ph.limit + 1));
	ph.listed = palloc(sizeof(int) * (n + 1));
	if (n > 0)
	{
		ph.kept = QsHeadsEntries(pf, which, n);
		nmiss = TakeKept(pf, which, n, &ph, miss);
		if (nmiss > 0)
			ReadFresh(pf, which, miss, nmiss, size, &ph);
		FoundInOrder(pf, which, n, nmiss == n, &ph);
	}
	QsFloorProbed(pf, which, n);
}

/*
 * QsReadRunnableHeads reads the first jobs of the RUNNABLE jobs of each of
 * n shares and units (constrained: of those with placement constraints,
 * along their own index), from its start (NULL: the beginning), with no
 * size bound, and sets *per_pair to how
 * many it asked for of each: 8 (the first batch of a stream) for up to 8
 * of them, fewer for more, so that the statement reads at most about 64
 * jobs beyond one per share and unit, but at least at_least (up to 8).  An
 * idle pass needs only each one's first (the first of each class of
 * placement constraints, which at_least asks for when they come in turn);
 * a stream that goes further reads its next batch.  The rows of a share
 * and unit come in no particular order.
 */
QsJobRows
QsReadRunnableHeads(bool constrained, const char *queue, const char *const *shares,
					const char *const *units, const QsFloorKeyValue *const *starts, int n,
					int at_least, int *per_pair)
{
	QsArray		s,
				u,
				p,
				t,
				id;
	Datum		args[6];
	int			which = HeadsSize(n, at_least);

	StaticAssertStmt(lengthof(RunnableHeadsSizes) == lengthof(RunnableHeadsQueries[0]),
					 "one size per heads query");
	Assert(RunnableHeadsSizes[0] == QsStreamBatchSize(0));
	*per_pair = RunnableHeadsSizes[which];
	QsArrayInit(&s, TEXTOID, n);
	QsArrayInit(&u, TEXTOID, n);
	QsArrayInit(&p, INT8OID, n);
	QsArrayInit(&t, TIMESTAMPTZOID, n);
	QsArrayInit(&id, INT8OID, n);
	for (int i = 0; i < n; i++)
	{
		const QsFloorKeyValue *start = starts[i];

		QsArrayPush(&s, CStringGetTextDatum(shares[i]), false);
		QsArrayPush(&u, CStringGetTextDatum(units[i]), false);
		QsArrayPush(&p, Int64GetDatum(start ? -start->k[0] : (int64) PG_INT32_MAX + 1), false);
		QsArrayPush(&t, Int64GetDatum(start ? start->k[1] : DT_NOBEGIN), false);
		QsArrayPush(&id, Int64GetDatum(start ? start->k[2] : 0), false);
	}
	args[0] = CStringGetTextDatum(queue);
	args[1] = QsArrayDatum(&s);
	args[2] = QsArrayDatum(&u);
	args[3] = QsArrayDatum(&p);
	args[4] = QsArrayDatum(&t);
	args[5] = QsArrayDatum(&id);
	return ReadJobs(RunnableHeadsQueries[constrained][which], args, NULL);
}

#define SMALLEST_RUNNABLE_QUERY(lock) { \
	"SELECT " QS_JOB_POLICY_COLUMNS " FROM quota_sched.job" \
	" WHERE job_queue = $1 AND quota_share = $2" \
	"   AND capacity_unit = $3 AND state = 'RUNNABLE' AND dependencies_waiting IS NULL" \
	"   AND instance_count <= $4" \
	" ORDER BY instance_count, id LIMIT $5" lock, \
	5, {TEXTOID, TEXTOID, TEXTOID, INT4OID, INT4OID}, SPI_OK_SELECT }

static QsQuery SmallestRunnableQueries[2] = {
	SMALLEST_RUNNABLE_QUERY(""), SMALLEST_RUNNABLE_QUERY(LOCKING)
};

/*
 * QsReadSmallestRunnable reads up to max RUNNABLE jobs of a share and unit
 * with at most at_most instances, smallest first (the wanted-capacity rule
 * of scheduling.md 3.2).
 */
QsJobRows
QsReadSmallestRunnable(const char *queue, const char *share, const char *unit,
					   int32 at_most, int max)
{
	Datum		args[5];

	PairArgs(args, queue, share, unit, Int32GetDatum(at_most));
	args[4] = Int32GetDatum(max);
	return ReadJobs(SmallestRunnableQueries, args, NULL);
}

/* The versions of jobs a pass read, in the snapshot of its reads. */
static QsQuery JobVersionsQuery = {
	"SELECT array_agg(id), array_agg(xmin::text::int8) FROM quota_sched.job WHERE id = ANY ($1)",
	1, {INT8ARRAYOID}, SPI_OK_SELECT, QS_BY_IDS
};

/*
 * Locks the jobs of $1 that no other transaction holds, and returns those
 * it could not lock (locked: true) and, with $4, those whose version is no
 * longer the one read ($2, $3: ids and their xmin then).
 */
static QsQuery LockJobsQuery = {
	"WITH l AS (SELECT id, xmin::text::int8 AS xmin FROM quota_sched.job"
	"            WHERE id = ANY ($1)" LOCKING ")"
	" SELECT w.id, l.id IS NULL AS locked"
	"   FROM (SELECT DISTINCT id FROM unnest($1) AS u(id)) w"
	"   LEFT JOIN l ON l.id = w.id"
	"   LEFT JOIN unnest($2::int8[], $3::int8[]) AS s(id, xmin) ON s.id = w.id"
	"  WHERE l.id IS NULL OR ($4 AND l.xmin IS DISTINCT FROM s.xmin)",
	4, {INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID, BOOLOID}, SPI_OK_SELECT, QS_BY_IDS
};

/*
 * QsLockJobs locks the rows of the jobs a pass is about to write (their
 * ids, possibly repeated, in a bigint[]) without waiting, and returns how
 * many of them it must decide again: those another transaction holds
 * locked (a user's SELECT ... FOR UPDATE, a priority UPDATE or a terminate
 * not yet committed), of which it puts up to max in locked_out and the
 * number in *nlocked, and, when the pass read in one snapshot, those that
 * changed since (a transaction that committed after the snapshot: a
 * terminate or a priority change, which hold no queue lock until they
 * commit).  Whoever holds a queue's lock never waits for a row lock: a
 * user, who takes no queue lock past a call, could hold one for as long as
 * they like.
 */
int
QsLockJobs(Datum ids, int64 *locked_out, int max, int *nlocked)
{
	Datum		args[4] = {ids, (Datum) 0, (Datum) 0, BoolGetDatum(read_snapshot != NULL)};
	char		nulls[4] = {' ', 'n', 'n', ' '};
	uint64		n;

	ArrayType  *a = DatumGetArrayTypeP(ids);

	*nlocked = 0;
	if (ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)) == 0)
		return 0;
	if (read_snapshot != NULL)
	{
		bool		isnull[2];

		QsQueryRunIn(&JobVersionsQuery, &ids, NULL, read_snapshot, 1);
		for (int c = 0; c < 2; c++)
		{
			Datum		a = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, c + 1,
										  &isnull[c]);

			args[c + 1] = isnull[c] ? (Datum) 0 : datumCopy(a, false, -1);
			nulls[c + 1] = isnull[c] ? 'n' : ' ';
		}
		SPI_freetuptable(SPI_tuptable);
	}
	n = QsQueryRun(&LockJobsQuery, args, nulls, false, 0);
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;

		if (!DatumGetBool(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull)))
			continue;
		if (*nlocked < max)
			locked_out[*nlocked] = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i],
															   SPI_tuptable->tupdesc, 1, &isnull));
		(*nlocked)++;
	}
	SPI_freetuptable(SPI_tuptable);
	return (int) n;
}

static QsQuery StopsQuery = {
	"UPDATE quota_sched.job j"
	"   SET stop_reason = coalesce(d.reason, j.stop_reason),"
	"       stop_requested_at = CASE WHEN d.reason IS NULL THEN j.stop_requested_at ELSE $4 END,"
	/* a stop is of a job with none pending: its own preemptor, or null */
	"       preempted_for = d.preempted_for"
	"  FROM unnest($1, $2, $3) AS d(id, reason, preempted_for)"
	" WHERE j.id = d.id",
	4, {INT8ARRAYOID, TEXTARRAYOID, INT8ARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * NextDecision returns the next decision of a pass's output after the
 * *i-th (start with -1) whose action is a or b, moving *i to it; NULL
 * after the last.
 */
static const QsDecision *
NextDecision(const QsOutput *out, int *i, QsAction a, QsAction b)
{
	while (++*i < out->ndecisions)
	{
		const QsDecision *d = &out->decisions[*i];

		if (d->action == a || d->action == b)
			return d;
	}
	return NULL;
}

/*
 * RunForJobs runs a statement that takes n arrays as $1..$n, of which the
 * first is of job ids, and the pass's time as $n+1: nothing when there are
 * no ids.
 */
static void
RunForJobs(QsQuery *query, QsArray *cols, int n, TimestampTz now)
{
	Datum		args[QS_QUERY_MAX_ARGS];

	Assert(n < QS_QUERY_MAX_ARGS);
	if (cols[0].n == 0)
		return;
	for (int c = 0; c < n; c++)
		args[c] = QsArrayDatum(&cols[c]);
	args[n] = TimestampTzGetDatum(now);
	QsQueryRun(query, args, NULL, false, 0);
}

/*
 * QsWriteStops writes requested stops (STOP, and PREEMPT of claimed jobs)
 * and the preempted_for of every job stopped: the job a victim makes room
 * for, null for any other stop (a repair, a timeout), so that no earlier
 * preemption's id is left on the job or copied onto this stop's events.
 */
void
QsWriteStops(const QsOutput *out, TimestampTz now)
{
	enum
	{
		STOP_ID, STOP_REASON, STOP_PREEMPTED_FOR, STOP_COLS
	};
	const Oid	types[STOP_COLS] = {INT8OID, TEXTOID, INT8OID};
	QsArray		cols[STOP_COLS];
	const QsDecision *d;

	for (int c = 0; c < STOP_COLS; c++)
		QsArrayInit(&cols[c], types[c], out->ndecisions);
	for (int i = -1; (d = NextDecision(out, &i, QS_STOP, QS_PREEMPT)) != NULL;)
	{
		QsArrayPush(&cols[STOP_ID], Int64GetDatum(d->job_id), false);
		QsArrayPush(&cols[STOP_REASON], d->immediate ? (Datum) 0 :
					CStringGetTextDatum(QsStopName(d->stop)), d->immediate);
		QsArrayPush(&cols[STOP_PREEMPTED_FOR], Int64GetDatum(d->preempted_for),
					d->action != QS_PREEMPT || d->preempted_for == 0);
	}
	RunForJobs(&StopsQuery, cols, STOP_COLS, now);
	if (cols[STOP_ID].n > 0)
		QsDropUnclaimedParts(QsArrayDatum(&cols[STOP_ID]));
}

/*
 * The REQUEUE and FAIL decisions ($1..$8, one element per job), with the
 * counters of lease losses and claim timeouts, and the claim backoff
 * (scheduling.md 3.10); $9 is the time of the change.
 */
static QsQuery EndsQuery = {
	"UPDATE quota_sched.job j"
	"   SET state = CASE WHEN d.fail THEN 'FAILED' ELSE 'RUNNABLE' END,"
	"       agent = CASE WHEN d.fail THEN j.agent END,"
	"       agent_role = CASE WHEN d.fail THEN j.agent_role END,"
	"       part_agents = CASE WHEN d.fail THEN j.part_agents END,"
	"       part_instances = CASE WHEN d.fail THEN j.part_instances END,"
	"       lease_losses = j.lease_losses + d.lease_lost,"
	"       claim_requeues = j.claim_requeues + d.not_claimed,"
	"       claim_backoff_until = coalesce(d.backoff_until, j.claim_backoff_until),"
	"       lease_until = NULL, stop_reason = NULL, stop_requested_at = NULL,"
	"       promised_at = NULL,"
	/* the preemptor stays with the attempt it ended (as history), only with it */
	"       preempted_for = CASE WHEN d.preempted > 0 OR j.state = 'RUNNABLE'"
	"         THEN j.preempted_for END,"
	"       failed_attempts = j.failed_attempts + d.failed,"
	"       preemption_count = j.preemption_count + d.preempted,"
	/* a terminated job keeps the reason it was terminated with */
	"       status_reason = CASE WHEN d.reason = 'TERMINATED' AND j.stop_reason = 'TERMINATED'"
	"         THEN coalesce(j.status_reason, d.reason) ELSE d.reason END,"
	"       status_reason_at = $9,"
	"       stopped_at = CASE WHEN j.state = 'RUNNABLE' THEN j.stopped_at ELSE $9 END"
	"  FROM unnest($1, $2, $3, $4, $5, $6, $7, $8)"
	"       AS d(id, fail, failed, preempted, reason, lease_lost, not_claimed, backoff_until)"
	" WHERE j.id = d.id",
	9, {INT8ARRAYOID, BOOLARRAYOID, INT4ARRAYOID, INT4ARRAYOID, TEXTARRAYOID,
		INT4ARRAYOID, INT4ARRAYOID, TIMESTAMPTZARRAYOID, TIMESTAMPTZOID},
	SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * WriteEnds writes REQUEUE and FAIL decisions: back to RUNNABLE (agent,
 * agent_role, placement and lease cleared, queued_at kept) or to FAILED
 * (agent, agent_role and placement kept), with the counter the decision names, the reason, and
 * the stop cleared (preempted_for kept only when a preemption ended the
 * attempt).
 */
static void
WriteEnds(const QsOutput *out, TimestampTz now)
{
	enum
	{
		END_ID, END_FAIL, END_FAILED, END_PREEMPTED, END_REASON,
		END_LEASE_LOST, END_NOT_CLAIMED, END_BACKOFF, END_COLS
	};
	const Oid	types[END_COLS] = {INT8OID, BOOLOID, INT4OID, INT4OID, TEXTOID,
	INT4OID, INT4OID, TIMESTAMPTZOID};
	QsArray		cols[END_COLS];
	const QsDecision *d;

	for (int c = 0; c < END_COLS; c++)
		QsArrayInit(&cols[c], types[c], out->ndecisions);
	for (int i = -1; (d = NextDecision(out, &i, QS_REQUEUE, QS_FAIL)) != NULL;)
	{
		QsArrayPush(&cols[END_ID], Int64GetDatum(d->job_id), false);
		QsArrayPush(&cols[END_FAIL], BoolGetDatum(d->action == QS_FAIL), false);
		QsArrayPush(&cols[END_FAILED],
					Int32GetDatum(d->counter == QS_COUNT_FAILED_ATTEMPT), false);
		QsArrayPush(&cols[END_PREEMPTED],
					Int32GetDatum(d->counter == QS_COUNT_PREEMPTION), false);
		QsArrayPush(&cols[END_REASON], CStringGetTextDatum(d->reason), false);
		QsArrayPush(&cols[END_LEASE_LOST], Int32GetDatum(d->counter == QS_COUNT_LEASE_LOSS),
					false);
		QsArrayPush(&cols[END_NOT_CLAIMED], Int32GetDatum(d->counter == QS_COUNT_NOT_CLAIMED),
					false);
		QsArrayPush(&cols[END_BACKOFF], TimestampTzGetDatum(d->backoff_until),
					d->counter != QS_COUNT_NOT_CLAIMED);
	}
	RunForJobs(&EndsQuery, cols, END_COLS, now);
}

/*
 * RunForDecisions runs a statement that takes the ids of the jobs of the
 * decisions of actions a or b as $1, and the pass's time as $2.
 */
static void
RunForDecisions(QsQuery *query, const QsOutput *out, QsAction a, QsAction b, TimestampTz now)
{
	QsArray		ids;
	const QsDecision *d;

	QsArrayInit(&ids, INT8OID, out->ndecisions);
	for (int i = -1; (d = NextDecision(out, &i, a, b)) != NULL;)
		QsArrayPush(&ids, Int64GetDatum(d->job_id), false);
	RunForJobs(query, &ids, 1, now);
}

/*
 * Ends the open rows of job_attempt of the jobs of $1 at $2, passing over
 * the rows another transaction holds (an agent's call left open): whoever
 * holds a queue's lock never waits for a row lock.  Such a row stays open.
 */
static QsQuery CloseAttemptsQuery = {
	"WITH open AS (SELECT job_id, attempt FROM quota_sched.job_attempt"
	"               WHERE job_id = ANY ($1) AND ended_at IS NULL"
	"                 FOR NO KEY UPDATE SKIP LOCKED)"
	" UPDATE quota_sched.job_attempt a SET ended_at = $2"
	"   FROM open WHERE a.job_id = open.job_id AND a.attempt = open.attempt",
	2, {INT8ARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * The parts not ended yet of the jobs of $1, whose attempt ended at $2
 * (scheduling.md 3.14): unclaimed ones are dropped, those whose lease ran
 * out lost; a part its agent still holds (a job sent back because its
 * other parts were not claimed in time) is told to let go: heartbeat
 * returns it with NOT_CLAIMED until its agent releases it.  Rows another
 * transaction holds are passed over, as CloseAttemptsQuery does.
 */
static QsQuery EndPartsQuery = {
	"WITH open AS (SELECT job_id, placed_at, rank, state, lease_until"
	"                FROM quota_sched.job_part"
	"               WHERE job_id = ANY ($1) AND state <> 'ENDED'"
	"                 FOR NO KEY UPDATE SKIP LOCKED),"
	" o AS (SELECT *, state = 'PLACED' OR lease_until < $2 AS ends FROM open)"
	" UPDATE quota_sched.job_part p"
	"    SET state = CASE WHEN o.ends THEN 'ENDED' ELSE p.state END,"
	"        ended_as = CASE WHEN o.state = 'PLACED' THEN 'DROPPED'"
	"                        WHEN o.ends THEN 'LOST' ELSE p.ended_as END,"
	"        ended_at = CASE WHEN o.ends THEN $2 ELSE p.ended_at END,"
	"        stop_reason = CASE WHEN o.ends THEN p.stop_reason ELSE 'NOT_CLAIMED' END"
	"   FROM o WHERE (p.job_id, p.placed_at, p.rank) = (o.job_id, o.placed_at, o.rank)",
	2, {INT8ARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsWriteEnds writes the REQUEUE and FAIL decisions of a pass, and ends
 * the attempt rows they leave open (issue 37, item 5): the attempt of a
 * job whose lease ran out, or whose stop never came, is over, with no exit
 * code known.
 */
void
QsWriteEnds(const QsOutput *out, TimestampTz now)
{
	WriteEnds(out, now);
	RunForDecisions(&CloseAttemptsQuery, out, QS_REQUEUE, QS_FAIL, now);
	RunForDecisions(&EndPartsQuery, out, QS_REQUEUE, QS_FAIL, now);
}

/*
 * QsEndAttempt ends a held job's attempt as the pass does (QsWriteEnds):
 * back to RUNNABLE or to FAILED, with the counter and the reason given.
 * For an agent's report or release, and a user's terminate.
 */
void
QsEndAttempt(int64 job_id, QsAction action, QsCounter counter, const char *reason)
{
	QsDecision	d;
	QsOutput	out;

	memset(&d, 0, sizeof(d));
	memset(&out, 0, sizeof(out));
	d.action = action;
	d.job_id = job_id;
	d.counter = counter;
	d.reason = reason;
	out.ndecisions = 1;
	out.decisions = &d;
	WriteEnds(&out, GetCurrentTransactionStartTimestamp());
	RunForDecisions(&EndPartsQuery, &out, action, action, GetCurrentTransactionStartTimestamp());
}

static QsQuery SetPromisesQuery = {
	"UPDATE quota_sched.job SET promised_at = $2 WHERE id = ANY ($1)",
	2, {INT8ARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

static QsQuery ClearPromisesQuery = {
	"UPDATE quota_sched.job SET promised_at = NULL,"
	"       part_agents = CASE WHEN state = 'RUNNABLE' THEN NULL ELSE part_agents END,"
	"       part_instances = CASE WHEN state = 'RUNNABLE' THEN NULL ELSE part_instances END"
	" WHERE id = ANY ($1)",
	1, {INT8ARRAYOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsWritePromises sets promised_at of the jobs preemption made room for
 * (is_set) or clears it for promises that lapsed.
 */
void
QsWritePromises(const int64_t *job_ids, int n, bool is_set, TimestampTz now)
{
	QsArray		ids;

	QsArrayInit(&ids, INT8OID, n);
	for (int i = 0; i < n; i++)
		QsArrayPush(&ids, Int64GetDatum(job_ids[i]), false);
	RunForJobs(is_set ? &SetPromisesQuery : &ClearPromisesQuery, &ids, 1, now);
}

/*
 * A job with no placement constraints (scheduling.md 3.13): the pass sets
 * and clears NO_AGENT_FITS of the others (QsWriteHostReasons) but where
 * they are larger than agent_max, what the hosts have in all.
 */
#define UNCONSTRAINED "j.instances_per_host IS NULL AND j.same_label IS NULL"

static QsQuery MisconfiguredQuery = {
	"WITH l AS (SELECT * FROM unnest($2, $3, $4, $5, $6, $7)"
	"             AS l(quota_share, capacity_unit, env_max, quota_max, agent_max, budget_reason)),"
	" changes AS ("
	"   SELECT c.* FROM l CROSS JOIN LATERAL ("
	"     SELECT j.id, CASE WHEN j.instance_count > l.env_max"
	"         THEN 'MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE'"
	"         WHEN j.instance_count > l.quota_max"
	"         THEN 'MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED'"
	"         WHEN l.budget_reason IS NOT NULL THEN l.budget_reason"
	"         ELSE 'NO_AGENT_FITS' END AS reason,"
	"       j.status_reason AS old_reason"
	"       FROM quota_sched.job j"
	"      WHERE j.job_queue = $1 AND j.state = 'RUNNABLE' AND j.dependencies_waiting IS NULL"
	"        AND j.quota_share = l.quota_share AND j.capacity_unit = l.capacity_unit"
	"        AND j.instance_count > least(l.env_max, l.quota_max, l.agent_max,"
	"                                     CASE WHEN l.budget_reason IS NOT NULL THEN 0 END)"
	"      ORDER BY j.instance_count OFFSET 0) c"
	"   UNION ALL"
	"   SELECT j.id, NULL, j.status_reason FROM quota_sched.job j"
	"     JOIN l ON l.quota_share = j.quota_share AND l.capacity_unit = j.capacity_unit"
	"    WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
	"      AND j.status_reason LIKE 'MISCONFIGURATION:%'"
	"      AND l.budget_reason IS NULL"
	"      AND j.instance_count <= least(l.env_max, l.quota_max, l.agent_max)"
	"   UNION ALL"
	"   SELECT j.id, NULL, j.status_reason FROM quota_sched.job j"
	"     JOIN l ON l.quota_share = j.quota_share AND l.capacity_unit = j.capacity_unit"
	"    WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
	"      AND j.status_reason = 'NO_AGENT_FITS' AND " UNCONSTRAINED
	"      AND l.budget_reason IS NULL"
	"      AND j.instance_count <= least(l.env_max, l.quota_max, l.agent_max)"
	"   UNION ALL"
	"   SELECT j.id, NULL, j.status_reason FROM quota_sched.job j"
	"     JOIN l ON l.quota_share = j.quota_share AND l.capacity_unit = j.capacity_unit"
	"    WHERE j.job_queue = $1 AND j.state = 'RUNNABLE'"
	"      AND j.status_reason LIKE 'BUDGET_EXHAUSTED%'"
	"      AND l.budget_reason IS NULL"
	"      AND j.instance_count <= least(l.env_max, l.quota_max, l.agent_max))"
	" SELECT id, reason FROM changes WHERE reason IS DISTINCT FROM old_reason",
	7, {TEXTOID, TEXTARRAYOID, TEXTARRAYOID, INT8ARRAYOID, INT8ARRAYOID, INT8ARRAYOID,
		TEXTARRAYOID},
	SPI_OK_SELECT, QS_INDEX_WALK
};

/* rows locked by others keep their reason until a later pass */
static QsQuery SetMisconfiguredQuery = {
	"WITH l AS (SELECT id FROM quota_sched.job WHERE id = ANY ($1)" LOCKING ")"
	" UPDATE quota_sched.job j"
	"   SET status_reason = d.reason,"
	"       status_reason_at = CASE WHEN d.reason IS NULL THEN NULL ELSE $3 END"
	"  FROM unnest($1, $2) AS d(id, reason), l"
	" WHERE j.id = d.id AND l.id = d.id",
	3, {INT8ARRAYOID, TEXTARRAYOID, TIMESTAMPTZOID}, SPI_OK_UPDATE, QS_BY_IDS
};

/*
 * QsWriteMisconfiguration sets and clears the MISCONFIGURATION reasons of
 * RUNNABLE jobs (scheduling.md 3.7), BUDGET_EXHAUSTED (3.11) and
 * NO_AGENT_FITS (3.10), each where none before it in that order is, given
 * each (share, unit)'s limits and budget reason.  It reads only jobs above
 * a limit of their share and unit (an index range per pair; every job of a
 * pair whose budget is spent) and jobs that have such a reason now
 * (partial indexes), so its cost follows the number of jobs that cannot
 * run, not the backlog; it writes only the reasons that change.  The
 * first is planned as a walk of job_runnable_by_size from the limit (the
 * ORDER BY, QS_INDEX_WALK): the generic plan would otherwise filter the
 * pair's jobs along the share-order index, all of them, and the entries
 * of every job dispatched while a long transaction holds them.
 */
void
QsWriteMisconfiguration(const char *queue, const QsMisfitLimit *limits, int nlimits,
						TimestampTz now)
{
	QsArray	shares,
				units,
				env_max,
				quota_max,
				agent_max,
				budget,
				ids,
				reasons;
	Datum		args[7];
	uint64		n;

	QsArrayInit(&shares, TEXTOID, nlimits);
	QsArrayInit(&units, TEXTOID, nlimits);
	QsArrayInit(&env_max, INT8OID, nlimits);
	QsArrayInit(&quota_max, INT8OID, nlimits);
	QsArrayInit(&agent_max, INT8OID, nlimits);
	QsArrayInit(&budget, TEXTOID, nlimits);
	for (int i = 0; i < nlimits; i++)
	{
		QsArrayPush(&shares, CStringGetTextDatum(limits[i].quota_share), false);
		QsArrayPush(&units, CStringGetTextDatum(limits[i].capacity_unit), false);
		QsArrayPush(&env_max, Int64GetDatum(limits[i].env_max), false);
		QsArrayPush(&quota_max, Int64GetDatum(limits[i].quota_max), false);
		QsArrayPush(&agent_max, Int64GetDatum(limits[i].agent_max), false);
		QsArrayPush(&budget, limits[i].budget_reason ?
					CStringGetTextDatum(limits[i].budget_reason) : (Datum) 0,
					limits[i].budget_reason == NULL);
	}
	args[0] = CStringGetTextDatum(queue);
	args[1] = QsArrayDatum(&shares);
	args[2] = QsArrayDatum(&units);
	args[3] = QsArrayDatum(&env_max);
	args[4] = QsArrayDatum(&quota_max);
	args[5] = QsArrayDatum(&agent_max);
	args[6] = QsArrayDatum(&budget);
	if ((n = QsQueryRun(&MisconfiguredQuery, args, NULL, false, 0)) == 0)
		return;

	QsArrayInit(&ids, INT8OID, n);
	QsArrayInit(&reasons, TEXTOID, n);
	for (uint64 i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		reason;

		QsArrayPush(&ids, SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull),
				  false);
		reason = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);
		QsArrayPush(&reasons, isnull ? (Datum) 0 : datumCopy(reason, false, -1), isnull);
	}
	args[0] = QsArrayDatum(&ids);
	args[1] = QsArrayDatum(&reasons);
	args[2] = TimestampTzGetDatum(now);
	QsQueryRun(&SetMisconfiguredQuery, args, NULL, false, 0);
}
