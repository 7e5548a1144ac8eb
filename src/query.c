/*-------------------------------------------------------------------------
 *
 * query.c
 *		Running the extension's statements through saved plans (query.h).
 *		The caller is connected to SPI.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/parsenodes.h"

#include "query.h"

/*
 * QsQueryPlan returns the saved plan of a statement, preparing it on first
 * use.  Plans are generic from the start: a custom plan for a stream's
 * first rows (priority below the maximum) would sort a share's whole
 * backlog, where the generic plan walks the share-order index; the cost of
 * a pass must not depend on the backlog, and no statement here gains from
 * a custom plan.
 */
SPIPlanPtr
QsQueryPlan(QsQuery *query)
{
	if (query->plan == NULL)
	{
		SPIPlanPtr	plan = SPI_prepare_cursor(query->sql, query->nargs, query->types,
											  CURSOR_OPT_GENERIC_PLAN);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "quota_sched: could not prepare \"%s\": %s", query->sql,
				 SPI_result_code_string(SPI_result));
		query->plan = plan;
	}
	return query->plan;
}

/*
 * QsQueryRun runs a statement with its arguments (nulls as SPI takes them:
 * 'n' for a null, NULL for none) and returns the number of rows processed;
 * the rows are in SPI_tuptable.  Any result other than the one the
 * statement expects is an internal error.
 */
uint64
QsQueryRun(QsQuery *query, Datum *args, const char *nulls, bool read_only, long count)
{
	int			rc = SPI_execute_plan(QsQueryPlan(query), args, nulls, read_only, count);

	if (rc != query->expect)
		elog(ERROR, "quota_sched: \"%s\" failed: %s", query->sql, SPI_result_code_string(rc));
	return SPI_processed;
}
