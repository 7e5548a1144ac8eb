/*-------------------------------------------------------------------------
 *
 * over_time_sql.c
 *		The rules over time of the policy core (src/core/over_time.c) as
 *		SQL functions: the calendar periods of budgets and what a stripe of
 *		the counters of held capacity spent in one (scheduling.md 3.11), so
 *		that the counters, the pass, share_budget and explain share one rule;
 *		and recent_borrow carried on in time (3.12), for share_usage.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "identity.h"
#include "over_time.h"
#include "word_io.h"

PG_FUNCTION_INFO_V1(qs_spent_after);
PG_FUNCTION_INFO_V1(qs_spent_at);
PG_FUNCTION_INFO_V1(qs_period_start);
PG_FUNCTION_INFO_V1(qs_period_end);
PG_FUNCTION_INFO_V1(qs_recent_borrow_at);

/*
 * PeriodArg reads a budget_period argument.
 */
static QsPeriod
PeriodArg(FunctionCallInfo fcinfo, int argno)
{
	QsPeriod	period;

	if (!QsPeriodFromName(text_to_cstring(PG_GETARG_TEXT_PP(argno)), &period))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid budget_period \"%s\"",
						QsShortValue(text_to_cstring(PG_GETARG_TEXT_PP(argno)))),
				 errdetail("budget_period is %s.", QsWordList(QS_KIND_BUDGET_PERIOD, "or"))));
	return period;
}

/*
 * TimeArg reads a finite timestamptz argument.
 */
static TimestampTz
TimeArg(FunctionCallInfo fcinfo, int argno)
{
	return QsCheckBudgetTime(PG_GETARG_TIMESTAMPTZ(argno));
}

/*
 * qs_spent_after(spent float8, changed_at timestamptz, instances int8,
 * delta int8, at timestamptz, period text) is a stripe's spent of a period
 * after a change of delta instances at time at: what it held up to its last
 * change, carried on to the later of changed_at and at (from the start of
 * that time's period when it is a later one), plus what the change adds
 * or takes away from at on.  A change whose transaction started before the
 * last change written (they commit in another order) counts from its own
 * time, or from the start of the period when it started in an earlier one:
 * so the order in which changes are written does not matter.
 */
Datum
qs_spent_after(PG_FUNCTION_ARGS)
{
	double		spent = PG_GETARG_FLOAT8(0);
	TimestampTz changed_at = TimeArg(fcinfo, 1);
	int64		instances = PG_GETARG_INT64(2);
	int64		delta = PG_GETARG_INT64(3);
	TimestampTz at = TimeArg(fcinfo, 4);
	QsPeriod	period = PeriodArg(fcinfo, 5);
	TimestampTz last = Max(changed_at, at);
	TimestampTz from = Max(at, QsPeriodStart(last, period));

	QsCheckSchemaVersion();
	spent = QsSpentAt(spent, changed_at, instances, last, period);
	PG_RETURN_FLOAT8(spent + (double) delta * (double) (last - from) / 1e6);
}

/*
 * qs_spent_at(spent float8, changed_at timestamptz, instances int8, at
 * timestamptz, period text) is a stripe's spent of the period that holds
 * time at (QsSpentAt).
 */
Datum
qs_spent_at(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_FLOAT8(QsSpentAt(PG_GETARG_FLOAT8(0), TimeArg(fcinfo, 1), PG_GETARG_INT64(2),
							   TimeArg(fcinfo, 3), PeriodArg(fcinfo, 4)));
}

/*
 * qs_period_start(at timestamptz, period text): the start of the calendar
 * period (UTC) that holds at.
 */
Datum
qs_period_start(PG_FUNCTION_ARGS)
{
	TimestampTz start = QsPeriodStart(TimeArg(fcinfo, 0), PeriodArg(fcinfo, 1));

	QsCheckSchemaVersion();
	if (!IS_VALID_TIMESTAMP(start))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the budget period starts before the first time a timestamp can hold")));
	PG_RETURN_TIMESTAMPTZ(start);
}

/*
 * qs_period_end(at timestamptz, period text): the start of the next one.
 */
Datum
qs_period_end(PG_FUNCTION_ARGS)
{
	TimestampTz end = QsPeriodEnd(TimeArg(fcinfo, 0), PeriodArg(fcinfo, 1));

	QsCheckSchemaVersion();
	if (!IS_VALID_TIMESTAMP(end))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("the budget period ends after the last time a timestamp can hold")));
	PG_RETURN_TIMESTAMPTZ(end);
}

/*
 * qs_recent_borrow_at(recent float8, at timestamptz, borrowed int8, t
 * timestamptz, half_life interval): recent_borrow at t from its value at
 * `at` with `borrowed` instances borrowed since (QsRecentBorrowAt;
 * scheduling.md 3.12).
 */
Datum
qs_recent_borrow_at(PG_FUNCTION_ARGS)
{
	int64		half_life = QsIntervalUsecs(PG_GETARG_INTERVAL_P(4));

	QsCheckSchemaVersion();
	if (half_life < 60 * USECS_PER_SEC || half_life > (int64) QS_MAX_HALF_LIFE_DAYS * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a half-life is from 1 minute to %d days", QS_MAX_HALF_LIFE_DAYS)));
	PG_RETURN_FLOAT8(QsRecentBorrowAt(PG_GETARG_FLOAT8(0), TimeArg(fcinfo, 1), PG_GETARG_INT64(2),
									  TimeArg(fcinfo, 3), half_life));
}
