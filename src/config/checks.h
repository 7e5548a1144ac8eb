/*-------------------------------------------------------------------------
 *
 * checks.h
 *		Validation of names, sizes and intervals, shared by the CHECK
 *		constraints, the submit trigger and the SQL functions (checks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_CHECKS_H
#define QS_CHECKS_H

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "utils/jsonb.h"

/* the longest timeout, runnable_timeout, lease or min_runtime */
#define QS_MAX_INTERVAL_DAYS 365
#define QS_MAX_HALF_LIFE_DAYS 365	/* fair_half_life (scheduling.md 3.12) */
#define QS_MAX_FENCE_GRACE_SECS 3600	/* fence_grace (scheduling.md 3.10) */
/* the largest weight of a share */
#define QS_MAX_WEIGHT 10000
/* the decimals of a budget's instance-hours (scheduling.md 3.11) */
#define QS_BUDGET_DECIMALS 3
/* the longest label key of an agent, and a job's same_label (scheduling.md 3.13) */
#define QS_MAX_LABEL_KEY_LEN 63

extern bool QsValidName(const char *name, int len);
extern bool QsValidUnitName(const char *name, int len);
extern bool QsLabelKeyValid(const char *key);
extern void QsCheckName(text *value, const char *what);
extern int64 QsIntervalUsecs(const Interval *value);
extern const char *QsShortValue(const char *value);
extern char *QsNameArg(FunctionCallInfo fcinfo, int argno, const char *what);
extern int64 QsBudgetThousandths(const JsonbValue *v);
extern TimestampTz QsCheckBudgetTime(TimestampTz t);
extern char *QsBudgetText(double hours);
extern void QsCheckSize(const char *what, size_t len, size_t limit);
extern void QsCheckInterval(Datum value, int sqlerrcode, const char *name,
							const char *of, const char *detail);

#endif							/* QS_CHECKS_H */
