/*-------------------------------------------------------------------------
 *
 * over_time.h
 *		The figures the rules over time keep (scheduling.md 3.11, 3.12):
 *		the calendar periods of budgets, what a share spent in the current
 *		one, and recent_borrow, the borrowing decayed by a half-life, each
 *		advanced in closed form from the last change of its level.  Pure C.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_OVER_TIME_H
#define QS_OVER_TIME_H

#include "policy.h"

/* The periods (QsPeriod, words.h): the figures kept per period. */
#define QS_NPERIODS QS_PERIOD__COUNT

extern QsTime QsPeriodStart(QsTime t, QsPeriod period);
extern QsTime QsPeriodEnd(QsTime t, QsPeriod period);
extern double QsSpentAt(double spent, QsTime since, int64_t held, QsTime now, QsPeriod period);
extern double QsSpentFrom(double spent, QsTime since, int64_t held, QsTime now, QsTime start);
extern double QsRecentBorrowAt(double recent, QsTime since, int64_t borrowed, QsTime now,
							   QsTime half_life);

#endif							/* QS_OVER_TIME_H */
