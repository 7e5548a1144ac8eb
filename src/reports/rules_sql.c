/*-------------------------------------------------------------------------
 *
 * rules_sql.c
 *		The rules of the policy core (src/core) that the reports show, as
 *		SQL functions, so that a view and the pass share one text of each
 *		(scheduling.md 3.1, 3.6, 3.11): which states hold capacity
 *		(holds), which stops are preemptions (is_preemption), allowed(S,u)
 *		(allowed), lendable(S,u) as the borrowable supply counts it
 *		(lendable), and whether a share spent its budget (over_budget).
 *		share_usage, share_budget, lending() and the what-if read them.
 *
 * Each is a pure function of its arguments (IMMUTABLE): a share's columns
 * in, the core's figure out.  Names that are no strategy or state are
 * refused (22023), and so are capacities and limits that the configuration
 * cannot hold (whose products would not even fit a bigint).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/builtins.h"

#include "checks.h"
#include "identity.h"
#include "word_io.h"
#include "policy.h"

PG_FUNCTION_INFO_V1(qs_holds);
PG_FUNCTION_INFO_V1(qs_is_preemption);
PG_FUNCTION_INFO_V1(qs_allowed);
PG_FUNCTION_INFO_V1(qs_lendable);
PG_FUNCTION_INFO_V1(qs_over_budget);

/*
 * ShareArg makes the share of one unit (capacity) whose strategy is
 * argument argno: its other columns are those of a RESERVE share, ENABLED,
 * that neither borrows nor limits its lending.
 */
static QsShare
ShareArg(FunctionCallInfo fcinfo, int argno, const int64 *capacity)
{
	QsShare		share = {0};
	int			s = QsParseWord(ERRCODE_INVALID_PARAMETER_VALUE, QS_KIND_STRATEGY,
								text_to_cstring(PG_GETARG_TEXT_PP(argno)), NULL);

	if (*capacity < 0 || *capacity > PG_INT32_MAX)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid capacity " INT64_FORMAT, *capacity),
				 errdetail("A capacity is from 0 to 2147483647, as in a capacity map.")));
	share.name = "";
	share.strategy = (QsStrategy) s;
	share.borrow_limit = -1;
	share.lend_limit = -1;
	share.enabled = true;
	share.capacity = capacity;
	share.weight = 1;
	return share;
}

/*
 * LimitArg reads a percentage limit (borrow_limit, lend_limit): -1 (none) or
 * from 0 to most; what names it in the message.
 */
static int32
LimitArg(FunctionCallInfo fcinfo, int argno, int32 most, const char *what)
{
	int32		limit = PG_GETARG_INT32(argno);

	if (limit < -1 || limit > most)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s %d", what, limit),
				 most == PG_INT32_MAX ?
				 errdetail("%s is -1 (unbounded) or at least 0.", what) :
				 errdetail("%s is -1 (all) or from 0 to %d.", what, most)));
	return limit;
}

/*
 * qs_holds(state text) integer: 1 when a job in that state holds its
 * instances (QsHolds), else 0, for null and for names that are no state
 * the policy knows too.
 */
Datum
qs_holds(PG_FUNCTION_ARGS)
{
	QsJobState	state;

	QsCheckSchemaVersion();
	PG_RETURN_INT32(!PG_ARGISNULL(0) &&
					QsJobStateFromName(text_to_cstring(PG_GETARG_TEXT_PP(0)), &state) &&
					QsHolds(state) ? 1 : 0);
}

/*
 * qs_is_preemption(reason text) boolean: whether a stop reason, or the
 * status_reason of the change of state it caused, names a preemption
 * (QsIsPreemption); false for every other text.
 */
Datum
qs_is_preemption(PG_FUNCTION_ARGS)
{
	QsStop		stop;

	QsCheckSchemaVersion();
	PG_RETURN_BOOL(QsStopFromName(text_to_cstring(PG_GETARG_TEXT_PP(0)), &stop) &&
				   QsIsPreemption(stop));
}

/*
 * qs_allowed(capacity bigint, strategy text, borrow_limit integer) bigint:
 * allowed(S,u) of a share with that capacity of the unit (QsAllowed); null
 * when it is unbounded.
 */
Datum
qs_allowed(PG_FUNCTION_ARGS)
{
	int64		capacity = PG_GETARG_INT64(0);
	QsShare		share = ShareArg(fcinfo, 1, &capacity);
	int64		allowed;

	QsCheckSchemaVersion();
	share.borrow_limit = LimitArg(fcinfo, 2, PG_INT32_MAX, "borrow_limit");
	allowed = QsAllowed(&share, 0);
	if (allowed == QS_UNBOUNDED)
		PG_RETURN_NULL();
	PG_RETURN_INT64(allowed);
}

/*
 * qs_lendable(capacity bigint, strategy text, share_state text, lend_limit
 * integer) bigint: the most of that capacity of the unit that the share's
 * idle capacity lends (QsLendableOf): lendable(S,u) for an ENABLED LEND or
 * LEND_AND_BORROW share, 0 for a RESERVE or DISABLED one.
 */
Datum
qs_lendable(PG_FUNCTION_ARGS)
{
	int64		capacity = PG_GETARG_INT64(0);
	QsShare		share = ShareArg(fcinfo, 1, &capacity);
	QsConfigState state = QsParseWord(ERRCODE_INVALID_PARAMETER_VALUE, QS_KIND_CONFIG_STATE,
									  text_to_cstring(PG_GETARG_TEXT_PP(2)), NULL);

	QsCheckSchemaVersion();
	share.enabled = state == QS_ENABLED;
	share.lend_limit = LimitArg(fcinfo, 3, 100, "lend_limit");
	PG_RETURN_INT64(QsLendableOf(&share, 0));
}

/*
 * qs_over_budget(spent double precision, budget_hours double precision)
 * boolean: whether a share that spent `spent` instance-seconds of a unit
 * this period has spent its budget of it (QsOverBudget; a negative budget
 * is none).
 */
Datum
qs_over_budget(PG_FUNCTION_ARGS)
{
	int64		capacity = 0;
	double		spent = PG_GETARG_FLOAT8(0);
	double		budget = PG_GETARG_FLOAT8(1);
	QsShare		share = {0};

	QsCheckSchemaVersion();
	share.capacity = &capacity;
	share.spent = &spent;
	share.budget = &budget;
	PG_RETURN_BOOL(QsOverBudget(&share, 0));
}
