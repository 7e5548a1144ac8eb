/*-------------------------------------------------------------------------
 *
 * over_time.c
 *		Calendar periods in UTC, spent(S,u) and recent_borrow(S,u), each
 *		from its value at the last change of its level (over_time.h).
 *
 * Times are QsTime, PostgreSQL's: microseconds since 2000-01-01 00:00 UTC,
 * a Saturday.  Between two changes the level (instances held, instances
 * borrowed) is constant, so both figures have a closed form: spent grows
 * by level x time within the period (and starts again at 0 with each
 * period); recent_borrow decays by 2^(-dt/H) and gains level x the
 * integral of the decay, level x H / ln 2 x (1 - 2^(-dt/H)).
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>

#include "over_time.h"

#define USECS_PER_DAY ((int64_t) 86400 * 1000000)
#define QS_LN2 0.69314718055994530942

/* floor(a / b) for b > 0 */
static int64_t
FloorDiv(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && a < 0);
}

/* The days since 2000-01-01 of the first of the month of civil date y-m. */
static int64_t
DaysFromCivil(int64_t y, int m)
{
	int64_t		era;
	int64_t		yoe;
	int64_t		doy;
	int64_t		doe;

	y -= m <= 2;
	era = FloorDiv(y, 400);
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5;	/* day 1 of the month */
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 730425;	/* 730425: 1970-01-01 to 2000-01-01 + 719468 */
}

/* The year and month of a day counted from 2000-01-01. */
static void
CivilFromDays(int64_t days, int64_t *y, int *m)
{
	int64_t		z = days + 730425;
	int64_t		era = FloorDiv(z, 146097);
	int64_t		doe = z - era * 146097;
	int64_t		yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	int64_t		doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	int64_t		mp = (5 * doy + 2) / 153;

	*m = (int) (mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

/* QsPeriodStart: the start of the calendar period (UTC) that holds t. */
QsTime
QsPeriodStart(QsTime t, QsPeriod period)
{
	int64_t		days = FloorDiv(t, USECS_PER_DAY);
	int64_t		y;
	int			m;

	switch (period)
	{
		case QS_PERIOD_DAY:
			break;
		case QS_PERIOD_WEEK:
			/* 2000-01-03 was a Monday */
			days = 2 + FloorDiv(days - 2, 7) * 7;
			break;
		case QS_PERIOD_MONTH:
			CivilFromDays(days, &y, &m);
			days = DaysFromCivil(y, m);
			break;
	}
	return days * USECS_PER_DAY;
}

/*
 * QsPeriodEnd: the start of the next period: of the period a day, a week
 * or 31 days after this one's start (a month has 28 to 31 days, so that is
 * always in the next month).
 */
QsTime
QsPeriodEnd(QsTime t, QsPeriod period)
{
	int64_t		days = period == QS_PERIOD_DAY ? 1 : period == QS_PERIOD_WEEK ? 7 : 31;

	return QsPeriodStart(QsPeriodStart(t, period) + days * USECS_PER_DAY, period);
}

/*
 * QsSpentAt: spent(S,u) at now, in instance-seconds, from its value at
 * since and the instances held since then: 0 plus what was held since the
 * period began when now is in a later period than since.
 */
double
QsSpentAt(double spent, QsTime since, int64_t held, QsTime now, QsPeriod period)
{
	return QsSpentFrom(spent, since, held, now, QsPeriodStart(now, period));
}

/*
 * QsSpentFrom is QsSpentAt with the start of now's period given (start =
 * QsPeriodStart(now, period)), for callers that compute many at one time.
 */
double
QsSpentFrom(double spent, QsTime since, int64_t held, QsTime now, QsTime start)
{
	if (now <= since)
		return spent;
#ifndef QS_MUTANT_BUDGET_PERIOD
	if (since < start)
	{
		spent = 0;
		since = start;
	}
#endif
	return spent + (double) held * (double) (now - since) / 1e6;
}

/*
 * QsRecentBorrowAt: recent_borrow(S,u) at now, in instance-seconds, from
 * its value at since and the instances borrowed since then, with the
 * half-life half_life (positive).
 */
double
QsRecentBorrowAt(double recent, QsTime since, int64_t borrowed, QsTime now, QsTime half_life)
{
	double		h = (double) half_life / 1e6;
	double		decay;

	if (now <= since || (recent == 0 && borrowed == 0))
		return recent;			/* (no memory of borrowing, and none now: 0) */
	decay = exp2(-((double) (now - since) / 1e6) / h);
#ifdef QS_MUTANT_FAIR_DECAY
	decay = 1;
#endif
	return recent * decay + (double) borrowed * h / QS_LN2 * (1 - decay);
}
