/*-------------------------------------------------------------------------
 *
 * job_dependencies.c
 *		What a job's depends_on asks (scheduling.md 3.17), where the table
 *		is written: the submission counts the jobs it waits for and marks
 *		them as having dependents; the end of a job that has dependents
 *		counts down the jobs that wait for it, or marks them failed.
 *
 * The rules that act on those counts are the core's (QsWaitsForDependencies,
 * the pass's DEPENDENCY_FAILED); this file keeps the counts exact.  A
 * submission locks the rows of what it depends on, so that none of them
 * ends unseen between the count and the commit: an end that comes first
 * is counted as ended, one that comes after waits for the submission and
 * then finds its dependent (each statement of the end's trigger takes a
 * new snapshot).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "identity.h"
#include "job_dependencies.h"
#include "query.h"
#include "words.h"

/* depends_on names at most this many ids (the table's CHECK says the same) */
#define QS_MAX_DEPENDS_ON 100
/* and, counting every job of the arrays it names, at most this many jobs */
#define QS_MAX_DEPENDENCY_JOBS 10000

/*
 * Each id depends_on names, as the submitter sees it: the job's queue
 * (null: no such job, or not one the submitter may see) and how many jobs
 * it stands for (an array's index 0: the whole array).
 */
static QsQuery NamedJobsQuery = {
	"SELECT d.id, j.job_queue,"
	"       CASE WHEN j.array_index = 0 THEN j.array_size ELSE 1 END"
	"  FROM unnest($1::bigint[]) AS d(id)"
	"  LEFT JOIN quota_sched.job j ON j.id = d.id",
	1, {INT8ARRAYOID}, SPI_OK_SELECT
};

/*
 * The jobs depended on, locked until the submission commits; those not
 * yet marked are marked.  How many have not SUCCEEDED, and the least one
 * that FAILED.
 */
static QsQuery LockDependenciesQuery = {
	"WITH d AS (SELECT id, state, has_dependents FROM quota_sched.job"
	"            WHERE id = ANY ($1) OR array_id = ANY ($1) FOR NO KEY UPDATE),"
	"     marked AS (UPDATE quota_sched.job j SET has_dependents = true FROM d"
	"                 WHERE j.id = d.id AND d.has_dependents IS NULL)"
	" SELECT count(*) FILTER (WHERE state <> 'SUCCEEDED')::integer,"
	"        min(id) FILTER (WHERE state = 'FAILED')"
	"   FROM d",
	1, {INT8ARRAYOID}, SPI_OK_SELECT
};

/*
 * CheckNamedJobs checks, as the submitter, each id of depends_on: a job
 * it may see, of the job's queue; and the jobs they stand for, arrays
 * counted whole, within QS_MAX_DEPENDENCY_JOBS.
 */
static void
CheckNamedJobs(Datum depends_on, const char *queue)
{
	int64		jobs = 0;

	QsQueryRun(&NamedJobsQuery, &depends_on, NULL, true, 0);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int64		id = DatumGetInt64(SPI_getbinval(row, desc, 1, &isnull));
		char	   *its_queue = SPI_getvalue(row, desc, 2);

		if (isnull)
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("depends_on of a job has a null id")));
		if (its_queue == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("job " INT64_FORMAT " in depends_on does not exist", id),
					 errdetail("A job may depend only on jobs its submitter may see.")));
		if (strcmp(its_queue, queue) != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FOREIGN_KEY_VIOLATION),
					 errmsg("job " INT64_FORMAT " in depends_on is of job queue \"%s\", not \"%s\"",
							id, its_queue, queue),
					 errdetail("A job may depend only on jobs of its own queue.")));
		jobs += DatumGetInt32(SPI_getbinval(row, desc, 3, &isnull));
	}
	if (jobs > QS_MAX_DEPENDENCY_JOBS)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("depends_on of a job names " INT64_FORMAT " jobs, more than the limit of %d",
						jobs, QS_MAX_DEPENDENCY_JOBS),
				 errdetail("An array named by its id counts as all its jobs.")));
}

/*
 * CheckShape refuses a depends_on that is not a flat list of at most
 * QS_MAX_DEPENDS_ON ids.
 */
static void
CheckShape(Datum depends_on)
{
	ArrayType  *a = DatumGetArrayTypeP(depends_on);

	if (ARR_NDIM(a) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("depends_on of a job is an array of %d dimensions", ARR_NDIM(a)),
				 errdetail("depends_on is a list of job ids, e.g. '{41, 42}'.")));
	if (ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)) > QS_MAX_DEPENDS_ON)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("depends_on of a job names %d ids, more than the limit of %d",
						ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)), QS_MAX_DEPENDS_ON),
				 errhint("Name an array by its id (array_id) to depend on all its jobs.")));
}

/*
 * QsSubmitDependencies checks the depends_on of a job submitted to queue
 * (the caller's SPI is not connected), then, as the tables' owner, locks
 * and marks the jobs it depends on: returns how many have not SUCCEEDED
 * and one that FAILED (0: none).
 */
QsDependencies
QsSubmitDependencies(Datum depends_on, const char *queue)
{
	QsDependencies deps = {0, 0};
	QsSavedUser saved;
	QsWriteContext outer = QsWrite;
	bool		isnull;

	CheckShape(depends_on);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	CheckNamedJobs(depends_on, queue);
	QsBecomeOwner(QsExtensionOwner(), &saved);
	QsWrite.system_write = true;
	QsQueryRun(&LockDependenciesQuery, &depends_on, NULL, false, 0);
	deps.waiting = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											   1, &isnull));
	deps.failed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
											  2, &isnull));
	if (isnull)
		deps.failed = 0;
	QsWrite = outer;
	QsRestoreUser(&saved);
	SPI_finish();
	return deps;
}

/*
 * The jobs that wait for one that ended ($1: its id, and its array's id
 * when it has one): one fewer to wait for when it SUCCEEDED (the reason
 * DEPENDENCY clears with the last); when it FAILED, it is the one that
 * failed ($2), which the pass fails them for.
 */
static QsQuery DependencySucceededQuery = {
	"UPDATE quota_sched.job"
	"   SET dependencies_waiting = nullif(dependencies_waiting - 1, 0),"
	"       status_reason = CASE WHEN dependencies_waiting = 1 AND dependency_failed IS NULL"
	"                            THEN NULL ELSE status_reason END,"
	"       status_reason_at = CASE WHEN dependencies_waiting = 1 AND dependency_failed IS NULL"
	"                               THEN NULL ELSE status_reason_at END"
	" WHERE state = 'RUNNABLE' AND depends_on && $1 AND dependencies_waiting IS NOT NULL",
	1, {INT8ARRAYOID}, SPI_OK_UPDATE
};

static QsQuery DependencyFailedQuery = {
	"UPDATE quota_sched.job SET dependency_failed = $2"
	" WHERE state = 'RUNNABLE' AND depends_on && $1 AND dependency_failed IS NULL",
	2, {INT8ARRAYOID, INT8OID}, SPI_OK_UPDATE
};

/*
 * QsDependencyEnded tells the jobs waiting for a job that has dependents
 * that it ended, SUCCEEDED or not (FAILED), as the tables' owner.
 */
void
QsDependencyEnded(int64 id, int64 array_id, bool succeeded)
{
	QsArray		ids;
	Datum		args[2];
	QsSavedUser saved;
	QsWriteContext outer = QsWrite;

	QsArrayInit(&ids, INT8OID, 2);
	QsArrayPush(&ids, Int64GetDatum(id), false);
	if (array_id != 0)
		QsArrayPush(&ids, Int64GetDatum(array_id), false);
	args[0] = QsArrayDatum(&ids);
	args[1] = Int64GetDatum(id);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "quota_sched: SPI_connect failed");
	QsBecomeOwner(QsExtensionOwner(), &saved);
	QsWrite.system_write = true;
	QsQueryRun(succeeded ? &DependencySucceededQuery : &DependencyFailedQuery, args, NULL,
			   false, 0);
	QsWrite = outer;
	QsRestoreUser(&saved);
	SPI_finish();
}
