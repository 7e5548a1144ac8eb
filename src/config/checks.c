/*-------------------------------------------------------------------------
 *
 * checks.c
 *		Validation of names, capacity maps and configuration values.
 *
 * The SQL-callable checks are used by CHECK constraints: each returns true
 * or raises check_violation with a message that names the object and the
 * offending value, which a bare CHECK constraint could not do.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "common/int.h"
#include "fmgr.h"
#include "mb/pg_wchar.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"

#include "checks.h"
#include "constants.h"
#include "word_io.h"
#include "identity.h"

/*
 * REFUSE raises check_violation with a message (errmsg) that names the
 * object and the offending value, and a detail that says what is valid.
 */
#define REFUSE(message, detail) \
	ereport(ERROR, (errcode(ERRCODE_CHECK_VIOLATION), message, errdetail("%s", (detail))))

PG_FUNCTION_INFO_V1(qs_check_name);
PG_FUNCTION_INFO_V1(qs_check_capacity_map);
PG_FUNCTION_INFO_V1(qs_check_budget);
PG_FUNCTION_INFO_V1(qs_check_state);
PG_FUNCTION_INFO_V1(qs_check_strategy);
PG_FUNCTION_INFO_V1(qs_check_runnable_timeout);
PG_FUNCTION_INFO_V1(qs_in_transaction_block);

/*
 * QsValidName tells whether a name of an environment, queue, share or job
 * has 1 to QS_MAX_NAME_LEN characters of [A-Za-z0-9_-].
 */
bool
QsValidName(const char *name, int len)
{
	if (len < 1 || len > QS_MAX_NAME_LEN)
		return false;
	for (int i = 0; i < len; i++)
	{
		char		c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			  (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/*
 * QsValidUnitName tells whether a capacity unit has 1 to QS_MAX_NAME_LEN
 * characters of [A-Za-z0-9._-] (instance types such as ml.g5.xlarge).
 */
bool
QsValidUnitName(const char *name, int len)
{
	if (len < 1 || len > QS_MAX_NAME_LEN)
		return false;
	for (int i = 0; i < len; i++)
	{
		if (name[i] != '.' && !QsValidName(name + i, 1))
			return false;
	}
	return true;
}

/*
 * QsLabelKeyValid tells whether key is a label key: 1 to QS_MAX_LABEL_KEY_LEN
 * characters of [a-z0-9_.-] (scheduling.md 3.13).  One rule for both uses:
 * the job's same_label (job_submit.c, and the job table's CHECK in
 * tables.sql says the same) and the keys of an agent's labels
 * (agent_ready).  Pure: no allocation, no error.
 */
bool
QsLabelKeyValid(const char *key)
{
	int			len = 0;

	for (; key[len] != '\0'; len++)
	{
		char		c = key[len];

		if (len >= QS_MAX_LABEL_KEY_LEN ||
			!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '.' || c == '-'))
			return false;
	}
	return len >= 1;
}

/*
 * QsCheckName raises check_violation unless value is a valid name.
 */
void
QsCheckName(text *value, const char *what)
{
	if (!QsValidName(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value)))
		REFUSE(errmsg("invalid %s name \"%s\"", what, QsShortValue(text_to_cstring(value))),
			   "Names are 1 to " CppAsString2(QS_MAX_NAME_LEN) " characters of A-Z, a-z, 0-9, \"_\" and \"-\".");
}

/*
 * qs_check_name(value text, what text) is the CHECK of a name column.
 */
Datum
qs_check_name(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	QsCheckName(PG_GETARG_TEXT_PP(0), text_to_cstring(PG_GETARG_TEXT_PP(1)));
	PG_RETURN_BOOL(true);
}

/*
 * DecimalFromNumeric returns a JSON number times 10^decimals, or -1 when it
 * is not from 0 to PG_INT32_MAX with at most `decimals` digits after the
 * point (zeros after them are allowed: 1.500 is 1.5).  numeric_out never
 * uses exponents, so the text has only digits, a sign and a point; NaN and
 * infinity (which jsonb does not hold) and 1e400 are refused alike.
 */
static int64
DecimalFromNumeric(Numeric num, int decimals)
{
	char	   *s = DatumGetCString(DirectFunctionCall1(numeric_out,
														NumericGetDatum(num)));
	int64		v = 0;
	int64		max = PG_INT32_MAX;
	char	   *p = s;

	if (*p == '-' || *p == '\0' || numeric_is_nan(num) || numeric_is_inf(num))
		return -1;
	for (; *p >= '0' && *p <= '9'; p++)
	{
		v = v * 10 + (*p - '0');
		if (v > PG_INT32_MAX)
			return -1;
	}
	if (*p == '.')
		p++;
	for (int d = 0; d < decimals; d++)
	{
		v = v * 10;
		max = max * 10;
		if (*p >= '0' && *p <= '9')
			v += *p++ - '0';
	}
	while (*p == '0')
		p++;
	if (*p != '\0' || v > max)
		return -1;
	return v;
}

/*
 * QsBudgetThousandths returns a budget (scheduling.md 3.11) in thousandths
 * of an instance-hour, or -1 when the JSON value is not one: a number of
 * instance-hours from 0 to 2147483647 with at most QS_BUDGET_DECIMALS
 * decimals.
 */
int64
QsBudgetThousandths(const JsonbValue *v)
{
	if (v->type != jbvNumeric)
		return -1;
	return DecimalFromNumeric(v->val.numeric, QS_BUDGET_DECIMALS);
}

/*
 * QsCheckBudgetTime refuses (22008) a time of a budget period that is not
 * finite: the start of its period has no value (quota_sched.spent_at's
 * arguments, the counters' changed_at a pass reads).
 */
TimestampTz
QsCheckBudgetTime(TimestampTz t)
{
	if (TIMESTAMP_NOT_FINITE(t))
		ereport(ERROR,
				(errcode(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE),
				 errmsg("a time of a budget period must be finite")));
	return t;
}

/*
 * QsBudgetText is a budget in instance-hours as the messages and explain
 * write it: 2000, 0.5, 0.125 (budgets have at most QS_BUDGET_DECIMALS
 * decimals, which %.3f of the nearest double gives back exactly).
 */
char *
QsBudgetText(double hours)
{
	char	   *s = psprintf("%.*f", QS_BUDGET_DECIMALS, hours);
	char	   *end = s + strlen(s);

	while (end > s && end[-1] == '0')
		*--end = '\0';
	if (end > s && end[-1] == '.')
		end[-1] = '\0';
	return s;
}

/*
 * RefuseMapValue raises check_violation for the value of a unit in a
 * capacity map, or in a budget (CheckMap), of the owner given.
 */
static void
RefuseMapValue(JsonbValue *v, const char *unit, const char *what, bool budget)
{
	JsonbValue *copy = palloc(sizeof(JsonbValue));
	Jsonb	   *jb;
	const char *value;

	*copy = *v;
	jb = JsonbValueToJsonb(copy);
	value = QsShortValue(JsonbToCString(NULL, &jb->root, VARSIZE(jb)));
	if (budget)
		REFUSE(errmsg("invalid budget %s for unit \"%s\" of %s", value, unit, what),
			   "A budget is a JSON number of instance-hours from 0 to 2147483647 with at most "
			   CppAsString2(QS_BUDGET_DECIMALS) " decimals, such as 0.5 (0 forbids the unit).");
	REFUSE(errmsg("invalid capacity %s for unit \"%s\" in the capacity map of %s",
				  value, unit, what),
		   "A capacity is an integral JSON number from 0 to 2147483647.");
}

/*
 * CheckMap is the CHECK of a capacity map (budget false): an object from
 * unit name to an integral number in 0..2147483647; or of a share's budget
 * (budget true): the same object, whose values are budgets
 * (QsBudgetThousandths: instance-hours with at most QS_BUDGET_DECIMALS
 * decimals).  what names the map's owner ("quota share NAME"; a budget is
 * "the budget of" it in messages of the map's shape).
 */
static void
CheckMap(Jsonb *map, const char *owner, bool budget)
{
	const char *what = budget ? psprintf("the budget of %s", owner) : owner;
	JsonbIterator *it;
	JsonbValue	v;
	JsonbIteratorToken tok;
	char	   *unit = NULL;

	if (!JB_ROOT_IS_OBJECT(map) || JB_ROOT_IS_SCALAR(map))
		REFUSE(errmsg("invalid capacity map of %s: %s is not a JSON object",
					  what, QsShortValue(JsonbToCString(NULL, &map->root, VARSIZE(map)))),
			   "A capacity map maps capacity units to instance counts, such as {\"ml.g5.xlarge\": 3}.");

	it = JsonbIteratorInit(&map->root);
	while ((tok = JsonbIteratorNext(&it, &v, true)) != WJB_DONE)
	{
		if (tok == WJB_KEY)
		{
			unit = pnstrdup(v.val.string.val, v.val.string.len);
			if (!QsValidUnitName(v.val.string.val, v.val.string.len))
				REFUSE(errmsg("invalid capacity unit \"%s\" in the capacity map of %s",
							  QsShortValue(unit), what),
					   "Capacity units are 1 to " CppAsString2(QS_MAX_NAME_LEN) " characters of A-Z, a-z, 0-9, \".\", \"_\" and \"-\".");
		}
		else if (tok == WJB_VALUE &&
				 (budget ? QsBudgetThousandths(&v) < 0 :
				  v.type != jbvNumeric || DecimalFromNumeric(v.val.numeric, 0) < 0))
			RefuseMapValue(&v, unit, owner, budget);
	}
}

/*
 * qs_check_capacity_map(value jsonb, what text) is the CHECK of a capacity
 * map (CheckMap).
 */
Datum
qs_check_capacity_map(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	CheckMap(PG_GETARG_JSONB_P(0), QsShortValue(text_to_cstring(PG_GETARG_TEXT_PP(1))), false);
	PG_RETURN_BOOL(true);
}

/*
 * qs_check_budget(value jsonb, what text) is the CHECK of a share's budget
 * (CheckMap): budgets take fractions of an instance-hour (0.4).
 */
Datum
qs_check_budget(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	CheckMap(PG_GETARG_JSONB_P(0), QsShortValue(text_to_cstring(PG_GETARG_TEXT_PP(1))), true);
	PG_RETURN_BOOL(true);
}

/*
 * WordArg returns the value of a word of a kind given to a CHECK, or
 * raises check_violation naming the column, the value and the object
 * ("invalid COLUMN "VALUE" of WHAT"), with detail (a format with one %s:
 * the kind's words, "A, B or C").
 */
static int
WordArg(QsWordKind kind, const char *value, const char *column, const char *what,
		const char *detail)
{
	int			word;

	if (!QsWordFromName(kind, value, &word))
		REFUSE(errmsg("invalid %s \"%s\" of %s", column, QsShortValue(value), QsShortValue(what)),
			   psprintf(detail, QsWordList(kind, "or")));
	return word;
}

/*
 * qs_check_state(value text, what text) is the CHECK of a state column of
 * the configuration: ENABLED or DISABLED.
 */
Datum
qs_check_state(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	(void) WordArg(QS_KIND_CONFIG_STATE, text_to_cstring(PG_GETARG_TEXT_PP(0)), "state",
				   text_to_cstring(PG_GETARG_TEXT_PP(1)), "The state is %s.");
	PG_RETURN_BOOL(true);
}

/*
 * The arguments of the CHECK of a share's strategy and one of its limits:
 * (strategy text, limit int, what text).
 */
typedef struct ShareLimit
{
	QsStrategy	strategy;
	int32		limit;
	const char *what;
} ShareLimit;

/*
 * ShareLimitArgs returns the arguments of qs_check_strategy and
 * qs_check_lend_limit; a strategy that is none of the words raises
 * check_violation.
 */
static ShareLimit
ShareLimitArgs(FunctionCallInfo fcinfo)
{
	ShareLimit	arg;

	arg.what = QsShortValue(text_to_cstring(PG_GETARG_TEXT_PP(2)));
	arg.strategy = (QsStrategy) WordArg(QS_KIND_STRATEGY, text_to_cstring(PG_GETARG_TEXT_PP(0)),
										"strategy", arg.what, "The strategy is %s.");
	arg.limit = PG_GETARG_INT32(1);
	return arg;
}

/*
 * qs_check_strategy(strategy text, borrow_limit int, what text) is the CHECK
 * of a share's strategy and borrow_limit: only LEND_AND_BORROW may set a
 * borrow_limit other than -1, and none is below -1.
 */
Datum
qs_check_strategy(PG_FUNCTION_ARGS)
{
	ShareLimit	arg = ShareLimitArgs(fcinfo);
	const char *borrower = QsStrategyName(QS_LEND_AND_BORROW);

	QsCheckSchemaVersion();
	if (arg.limit < -1)
		REFUSE(errmsg("invalid borrow_limit %d of %s", arg.limit, arg.what),
			   "borrow_limit is a percentage from 0 up, or -1 for unlimited.");
	if (arg.strategy != QS_LEND_AND_BORROW && arg.limit != -1)
		REFUSE(errmsg("borrow_limit %d of %s needs strategy %s, not %s",
					  arg.limit, arg.what, borrower, QsStrategyName(arg.strategy)),
			   psprintf("Only a %s share borrows; leave borrow_limit at -1.", borrower));
	PG_RETURN_BOOL(true);
}

/*
 * QsCheckInterval raises sqlerrcode unless an interval is positive and at
 * most QS_MAX_INTERVAL_DAYS days (a month counting 30 days), naming it
 * ("invalid NAME VALUE of OF"; of may be NULL) with the detail given.
 * Timeouts, runnable timeouts, leases and minimum runtimes are such
 * intervals: added to a time, none can go beyond the range of timestamps.
 */
void
QsCheckInterval(Datum value, int sqlerrcode, const char *name, const char *of,
				const char *detail)
{
	Interval	zero = {0};
	int64		usecs = QsIntervalUsecs(DatumGetIntervalP(value));

	if (DatumGetBool(DirectFunctionCall2(interval_le, value, IntervalPGetDatum(&zero))) ||
		usecs > (int64) QS_MAX_INTERVAL_DAYS * USECS_PER_DAY)
		ereport(ERROR,
				(errcode(sqlerrcode),
				 errmsg("invalid %s %s%s%s", name,
						DatumGetCString(DirectFunctionCall1(interval_out, value)),
						of ? " of " : "", of ? of : ""),
				 errdetail("%s", detail)));
}

/*
 * CheckIntervalColumn is the CHECK of an interval column, the column
 * given: (value interval, what text), positive and bounded when set
 * (QsCheckInterval).
 */
static Datum
CheckIntervalColumn(FunctionCallInfo fcinfo, const char *column)
{
	QsCheckInterval(PG_GETARG_DATUM(0), ERRCODE_CHECK_VIOLATION, column,
					text_to_cstring(PG_GETARG_TEXT_PP(1)),
					psprintf("%s is a positive interval of at most %d days, or null for none.",
							 column, QS_MAX_INTERVAL_DAYS));
	PG_RETURN_BOOL(true);
}

/*
 * qs_check_runnable_timeout(value interval, what text) is the CHECK of a
 * queue's runnable_timeout: positive and bounded when set (QsCheckInterval).
 */
Datum
qs_check_runnable_timeout(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	return CheckIntervalColumn(fcinfo, "runnable_timeout");
}

PG_FUNCTION_INFO_V1(qs_check_claim_timeout);

/*
 * qs_check_claim_timeout(value interval, what text) is the CHECK of a
 * queue's claim_timeout (scheduling.md 3.10): at least one second and
 * bounded when set.
 */
Datum
qs_check_claim_timeout(PG_FUNCTION_ARGS)
{
	const char *detail = psprintf("claim_timeout is an interval from 1 second to %d days, "
								  "or null for none.", QS_MAX_INTERVAL_DAYS);

	QsCheckSchemaVersion();
	QsCheckInterval(PG_GETARG_DATUM(0), ERRCODE_CHECK_VIOLATION, "claim_timeout",
					text_to_cstring(PG_GETARG_TEXT_PP(1)), detail);
	if (QsIntervalUsecs(PG_GETARG_INTERVAL_P(0)) < USECS_PER_SEC)
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid claim_timeout %s of %s",
						DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(0))),
						text_to_cstring(PG_GETARG_TEXT_PP(1))),
				 errdetail("%s", detail)));
	PG_RETURN_BOOL(true);
}

PG_FUNCTION_INFO_V1(qs_check_fence_grace);

/*
 * qs_check_fence_grace(value interval, what text) is the CHECK of a
 * queue's fence_grace (scheduling.md 3.10): from 0 to QS_MAX_FENCE_GRACE_SECS
 * (compared as intervals are, a month counting 30 days: nothing overflows).
 * Null passes (STRICT); the column is NOT NULL.
 */
Datum
qs_check_fence_grace(PG_FUNCTION_ARGS)
{
	Interval	zero = {0};
	Interval	most = {.time = (int64) QS_MAX_FENCE_GRACE_SECS * USECS_PER_SEC};
	Datum		value = PG_GETARG_DATUM(0);

	QsCheckSchemaVersion();
	if (DatumGetBool(DirectFunctionCall2(interval_lt, value, IntervalPGetDatum(&zero))) ||
		DatumGetBool(DirectFunctionCall2(interval_gt, value, IntervalPGetDatum(&most))))
		ereport(ERROR,
				(errcode(ERRCODE_CHECK_VIOLATION),
				 errmsg("invalid fence_grace %s of %s",
						DatumGetCString(DirectFunctionCall1(interval_out, value)),
						text_to_cstring(PG_GETARG_TEXT_PP(1))),
				 errdetail("fence_grace is an interval from 0 to 1 hour: how long after a lease "
						   "ran out the pass takes the job back.")));
	PG_RETURN_BOOL(true);
}

PG_FUNCTION_INFO_V1(qs_check_choice);
PG_FUNCTION_INFO_V1(qs_check_lend_limit);
PG_FUNCTION_INFO_V1(qs_check_min_runtime);
PG_FUNCTION_INFO_V1(qs_check_weight);

/*
 * QsCheckSize raises program_limit_exceeded when a value (what: "payload
 * of job", ...) is longer than its limit, in bytes.
 */
void
QsCheckSize(const char *what, size_t len, size_t limit)
{
	if (len > limit)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s is %zu bytes, more than the limit of %zu", what, len, limit)));
}

/*
 * PrintableName tells whether an agent's name (or a name an agent gives)
 * is fit to be shown: neither blank nor holding control characters (it
 * goes into the jobs' rows, the history, the stop notifications and the
 * agents' logs, where an escape sequence or a line break would pass for
 * something else).
 */
static bool
PrintableName(const char *name)
{
	bool		blank = true;

	for (const unsigned char *c = (const unsigned char *) name; *c != '\0'; c++)
	{
		if (*c < 0x20 || *c == 0x7f)
			return false;
		if (*c != ' ')
			blank = false;
	}
	return !blank;
}

/*
 * QsNameArg returns a name argument (what: "agent", "job_queue"), which
 * must be a name of 1 to 128 bytes, not blank, without control
 * characters (agent_wait takes its queue's so too).
 */
char *
QsNameArg(FunctionCallInfo fcinfo, int argno, const char *what)
{
	char	   *name;

	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must not be null", what)));
	name = text_to_cstring(PG_GETARG_TEXT_PP(argno));
	if (strlen(name) > QS_MAX_NAME_LEN || !PrintableName(name))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid %s name \"%s\"", what, QsShortValue(name)),
				 errdetail("A name has 1 to " CppAsString2(QS_MAX_NAME_LEN)
						   " bytes, not all blank, and no control characters.")));
	return name;
}

/*
 * QsShortValue returns a value to quote in a message: the value, or its
 * first 64 bytes (whole characters) and "..." when it is longer, so that a
 * huge bad value does not fill the server's log.
 */
const char *
QsShortValue(const char *value)
{
	int			len = strlen(value);

	if (len <= 64)
		return value;
	return psprintf("%s...", pnstrdup(value, pg_mbcliplen(value, len, 64)));
}

/*
 * The columns that take one of a few words (each named as its kind of
 * word, words.h), and the detail of a refusal (%s: the words).
 */
static const struct
{
	QsWordKind	kind;
	const char *detail;
}			Choices[] = {
	{QS_KIND_BORROW_ORDER, "borrow_order is %s."},
	{QS_KIND_QUEUEING, "queueing is %s."},
	{QS_KIND_BUDGET_PERIOD, "budget_period is %s, calendar periods in UTC (weeks from Monday)."},
};

/*
 * qs_check_choice(value text, column text, what text) is the CHECK of a
 * column that takes one of a few words (a queue's borrow_order, a share's
 * queueing and budget_period).
 */
Datum
qs_check_choice(PG_FUNCTION_ARGS)
{
	char	   *value = text_to_cstring(PG_GETARG_TEXT_PP(0));
	char	   *column = text_to_cstring(PG_GETARG_TEXT_PP(1));

	QsCheckSchemaVersion();
	for (int i = 0; i < lengthof(Choices); i++)
		if (strcmp(QsKindName(Choices[i].kind), column) == 0)
		{
			(void) WordArg(Choices[i].kind, value, column,
						   text_to_cstring(PG_GETARG_TEXT_PP(2)), Choices[i].detail);
			PG_RETURN_BOOL(true);
		}
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("check_choice has no column \"%s\"", QsShortValue(column)),
			 errdetail("The columns it checks are borrow_order, queueing and budget_period.")));
	PG_RETURN_BOOL(false);
}

/*
 * qs_check_lend_limit(strategy text, lend_limit int, what text) is the
 * CHECK of a share's lend_limit: -1 (all of its capacity), or a percentage
 * from 0 to 100; a RESERVE share lends nothing and takes only -1.
 */
Datum
qs_check_lend_limit(PG_FUNCTION_ARGS)
{
	ShareLimit	arg = ShareLimitArgs(fcinfo);

	QsCheckSchemaVersion();
	if (arg.limit < -1 || arg.limit > 100)
		REFUSE(errmsg("invalid lend_limit %d of %s", arg.limit, arg.what),
			   "lend_limit is a percentage of the share's own capacity from 0 to 100, "
			   "or -1 to lend all of it.");
	if (arg.limit != -1 && arg.strategy == QS_RESERVE)
		REFUSE(errmsg("lend_limit %d of %s: a %s share lends nothing", arg.limit, arg.what,
					  QsStrategyName(QS_RESERVE)),
			   psprintf("Only %s and %s shares may set a lend_limit other than -1.",
						QsStrategyName(QS_LEND), QsStrategyName(QS_LEND_AND_BORROW)));
	PG_RETURN_BOOL(true);
}

/*
 * qs_check_min_runtime(value interval, what text) is the CHECK of a share's
 * min_runtime: positive and bounded when set (QsCheckInterval).
 */
Datum
qs_check_min_runtime(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	return CheckIntervalColumn(fcinfo, "min_runtime");
}

PG_FUNCTION_INFO_V1(qs_check_fair_half_life);

/*
 * qs_check_fair_half_life(value interval, borrow_order text, what text) is
 * the CHECK of a queue's fair_half_life (scheduling.md 3.12): null, or from
 * 1 minute to 365 days on a queue whose borrow_order is FAIR.
 */
Datum
qs_check_fair_half_life(PG_FUNCTION_ARGS)
{
	const char *what;
	const char *shown;
	int64		usecs;

	QsCheckSchemaVersion();
	if (PG_ARGISNULL(0))
		PG_RETURN_BOOL(true);
	what = PG_ARGISNULL(2) ? "a job queue" : text_to_cstring(PG_GETARG_TEXT_PP(2));
	shown = DatumGetCString(DirectFunctionCall1(interval_out, PG_GETARG_DATUM(0)));
	usecs = QsIntervalUsecs(PG_GETARG_INTERVAL_P(0));
	if (usecs < 60 * USECS_PER_SEC || usecs > (int64) QS_MAX_HALF_LIFE_DAYS * USECS_PER_DAY)
		REFUSE(errmsg("invalid fair_half_life %s of %s", shown, what),
			   "fair_half_life is an interval from 1 minute to "
			   CppAsString2(QS_MAX_HALF_LIFE_DAYS) " days, or null for none.");
	if (PG_ARGISNULL(1) ||
		WordArg(QS_KIND_BORROW_ORDER, text_to_cstring(PG_GETARG_TEXT_PP(1)), "borrow_order", what,
				"borrow_order is %s.") != QS_BORROW_FAIR)
		REFUSE(errmsg("fair_half_life %s of %s: the queue's borrow_order is not %s", shown, what,
					  QsBorrowOrderName(QS_BORROW_FAIR)),
			   psprintf("A half-life weighs the %s borrow order by what each share borrowed "
						"lately; set borrow_order = '%s' with it.",
						QsBorrowOrderName(QS_BORROW_FAIR), QsBorrowOrderName(QS_BORROW_FAIR)));
	PG_RETURN_BOOL(true);
}

/*
 * QsIntervalUsecs returns an interval as microseconds, a day counting 24
 * hours and a month 30 days (as PostgreSQL compares intervals), saturating
 * instead of overflowing.
 */
int64
QsIntervalUsecs(const Interval *value)
{
	int64		days = (int64) value->month * DAYS_PER_MONTH + value->day;
	int64		usecs;

	if (pg_mul_s64_overflow(days, USECS_PER_DAY, &usecs) ||
		pg_add_s64_overflow(usecs, value->time, &usecs))
		return value->time < 0 || days < 0 ? PG_INT64_MIN : PG_INT64_MAX;
	return usecs;
}

/*
 * qs_check_weight(weight int, what text) is the CHECK of a share's weight in
 * a FAIR borrow order: 1 to 10000.
 */
Datum
qs_check_weight(PG_FUNCTION_ARGS)
{
	int32		weight = PG_GETARG_INT32(0);

	QsCheckSchemaVersion();
	if (weight < 1 || weight > QS_MAX_WEIGHT)
		REFUSE(errmsg("invalid weight %d of %s", weight,
					  QsShortValue(text_to_cstring(PG_GETARG_TEXT_PP(1)))),
			   "weight is an integer from 1 to " CppAsString2(QS_MAX_WEIGHT) ".");
	PG_RETURN_BOOL(true);
}

/*
 * qs_in_transaction_block() tells whether the statement runs inside a
 * transaction block (BEGIN ... COMMIT, or several statements sent in one
 * query string), where a CALLed procedure may not COMMIT: prune() asks
 * before it starts, to say so (25001) rather than fail at its first COMMIT
 * with "invalid transaction termination".
 */
Datum
qs_in_transaction_block(PG_FUNCTION_ARGS)
{
	QsCheckSchemaVersion();
	PG_RETURN_BOOL(IsTransactionBlock());
}
