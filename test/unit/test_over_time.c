/*-------------------------------------------------------------------------
 *
 * test_over_time.c
 *		Unit tests of the policy core's rules over time (new in 0.3):
 *		budgets (scheduling.md 3.11: a share that spent its budget of a
 *		unit gets nothing more of it, gives up its promise, wants none of
 *		its idle capacity and stops no job; what it holds runs on), and
 *		fair share with memory (3.12: the FAIR second choice by what each
 *		share borrowed lately).  Prints TAP; exits non-zero when a test
 *		fails.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <string.h>

#include "over_time.h"
#include "tap.h"

#define HOUR 3600.0

/* Spent up to the budget: nothing more; a second less: dispatched. */
static void
test_spent_budget(void)
{
	World		w;
	int			a;
	WJob	   *j;

	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.budget[a][0] = 2;
	w.spent[a][0] = 2 * HOUR;
	j = WSubmit(&w, "a1", a, 0, 1);
	WPass(&w);
	CHECK(w.out.ndecisions == 0 && QsOverBudget(&w.shares[a], 0),
		  "spent = budget: the job is not dispatched");
	w.spent[a][0] = 2 * HOUR - 1;
	WPass(&w);
	CHECK(Dispatched(&w.out, j), "a second of budget left: it is dispatched");
}

/*
 * A fraction of an instance-hour: half a gpu-hour a day is 1800
 * instance-seconds.  1 gpu held 30 minutes spent it; 29 minutes did not,
 * and neither did 1799 seconds (a budget rounded down to 0 would forbid
 * the unit, one rounded up to 1 would allow an hour).
 */
static void
test_fractional_budget(void)
{
	World		w;
	int			a;
	WJob	   *j;

	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.budget[a][0] = 0.5;
	w.spent[a][0] = 30 * 60;
	j = WSubmit(&w, "a1", a, 0, 1);
	WPass(&w);
	CHECK(w.out.ndecisions == 0 && QsOverBudget(&w.shares[a], 0),
		  "0.5 instance-hours, 30 minutes held: the job is not dispatched");
	CHECK(QsHeldBack(&(QsInput) {.shares = w.shares, .units = w.units}, &j->j)
		  == QS_HOLD_BUDGET_EXHAUSTED, "0.5 instance-hours, 30 minutes held: held back, BUDGET_EXHAUSTED");
	w.spent[a][0] = 29 * 60;
	CHECK(!QsOverBudget(&w.shares[a], 0), "0.5 instance-hours, 29 minutes held: not over budget");
	w.spent[a][0] = 30 * 60 - 1;
	WPass(&w);
	CHECK(Dispatched(&w.out, j), "a second of the half hour left: it is dispatched");
	w.budget[a][0] = 0.001;		/* the smallest budget: 3.6 instance-seconds */
	w.spent[a][0] = 3.6;
	CHECK(QsOverBudget(&w.shares[a], 0), "0.001 instance-hours: 3.6 instance-seconds spend it");
	w.spent[a][0] = 3.5;
	CHECK(!QsOverBudget(&w.shares[a], 0), "0.001 instance-hours: 3.5 instance-seconds do not");
}

/* A budget is per unit: another unit of the share is not held back. */
static void
test_budget_per_unit(void)
{
	World		w;
	int			a, u1;
	WJob	   *j0, *j1;

	WInit(&w, 4);
	u1 = WAddUnit(&w, "cpu", 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.capacity[a][u1] = 4;
	w.budget[a][0] = 0;			/* the unit forbidden */
	j0 = WSubmit(&w, "a_gpu", a, 0, 1);
	j1 = WSubmitUnit(&w, "a_cpu", a, u1, 0, 1);
	WPass(&w);
	CHECK(!Dispatched(&w.out, j0) && Dispatched(&w.out, j1),
		  "budget 0 forbids the unit; the share's other unit runs");
}

/*
 * Over budget, a lender's waiting job wants nothing of its idle capacity
 * (so a borrower may take it) and reclaims nothing from a borrower.
 */
static void
test_not_wanted_no_victims(void)
{
	World		w;
	int			a, b;
	WJob	   *a1, *b1, *b2;
	const QsOutput *out;

	WInit(&w, 2);
	a = WAddShare(&w, "A", QS_LEND, -1, false, 1);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	w.budget[a][0] = 1;
	w.spent[a][0] = HOUR;
	a1 = WSubmit(&w, "a1", a, 0, 1);
	b1 = WSubmit(&w, "b1", b, 0, 1);
	b2 = WSubmit(&w, "b2", b, 0, 1);
	out = WPassApply(&w);
	CHECK(!Dispatched(out, a1) && Dispatched(out, b1) && Dispatched(out, b2),
		  "over budget, A's waiting job wants nothing: B borrows A's idle instance");
	ClaimAll(&w);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 0 && out->ndecisions == 0,
		  "over budget, A's job takes nothing back from the borrower");
	w.spent[a][0] = 0;			/* the next period */
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 1 && a1->j.promised_at != QS_NO_TIME,
		  "in the next period A reclaims its instance");
}

/* A promise of a job whose share went over budget lapses at the re-check. */
static void
test_promise_lapses(void)
{
	World		w;
	int			a, b;
	WJob	   *a1;
	const QsOutput *out;

	WInit(&w, 2);
	a = WAddShare(&w, "A", QS_LEND, -1, false, 1);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	WSubmit(&w, "b1", b, 0, 1);
	WSubmit(&w, "b2", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	a1 = WSubmit(&w, "a1", a, 0, 1);
	out = WPassApply(&w);
	CHECK(a1->j.promised_at != QS_NO_TIME, "A's job is promised the room it reclaims");
	w.budget[a][0] = 1;
	w.spent[a][0] = 2 * HOUR;
	out = WPass(&w);
	CHECK(out->nlapsed == 1 && out->lapsed[0] == a1->j.id, "over budget, its promise lapses");
}

/* A budget never stops a held job, nor lets the share preempt its own. */
static void
test_never_stops(void)
{
	World		w;
	int			a;
	WJob	   *low, *high;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, true, 1);
	low = WSubmit(&w, "low", a, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	w.budget[a][0] = 1;
	w.spent[a][0] = 5 * HOUR;	/* overspent by what it held */
	high = WSubmit(&w, "high", a, 9, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0 && low->state == W_RUNNING && high->state == W_RUNNABLE,
		  "over budget: the running job runs on, the higher-priority job preempts nothing");
}

/*
 * Two shares must borrow for their next job; with a half-life the one that
 * borrowed less lately per unit of weight goes first, whatever the queue
 * order and the 0.2 FAIR key; equal memories fall back to that key.
 */
static void
test_fair_memory(void)
{
	for (int round = 0; round < 3; round++)
	{
		World		w;
		int			a, b;
		WJob	   *early, *late;
		const QsOutput *out;

		WInit(&w, 3);
		w.fair = true;
		w.memory = true;
		a = WAddShare(&w, "A", QS_LEND_AND_BORROW, -1, false, 1);
		b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
		WAddShare(&w, "L", QS_LEND, -1, false, 1);
		WSubmit(&w, NULL, a, 0, 1);
		WSubmit(&w, NULL, b, 0, 1);
		WSubmit(&w, NULL, b, 0, 1);	/* B borrows 1 now: its 0.2 key is the larger */
		WPassApply(&w);
		w.units[0].env_limit = 4;
		w.capacity[2][0] = 2;	/* L lends one more instance only */
		early = WSubmit(&w, "early", a, 0, 1);
		late = WSubmit(&w, "late", b, 0, 1);
		if (round == 0)
		{
			w.recent_borrow[a][0] = 7200;	/* A borrowed two instance-hours lately */
			w.recent_borrow[b][0] = 3600;
			out = WPassApply(&w);
			CHECK(Dispatched(out, late) && !Dispatched(out, early),
				  "memory: B borrowed less lately, its later job gets the idle instance");
		}
		else if (round == 1)
		{
			w.recent_borrow[a][0] = 7200;
			w.recent_borrow[b][0] = 3600;
			w.shares[a].weight = 4;	/* 7200 / 4 < 3600 / 1 */
			out = WPassApply(&w);
			CHECK(Dispatched(out, early) && !Dispatched(out, late),
				  "memory: per unit of weight, A's 1800 comes before B's 3600");
		}
		else
		{
			w.recent_borrow[a][0] = w.recent_borrow[b][0] = 3600;
			out = WPassApply(&w);
			CHECK(Dispatched(out, early) && !Dispatched(out, late),
				  "equal memories: the 0.2 FAIR key (A would borrow 1, B 2)");
		}
	}
}

#define DAY ((QsTime) 86400 * 1000000)
#define AT_HOUR(day, h) ((QsTime) (day) * DAY + (QsTime) (h) * 3600 * 1000000)

/*
 * Calendar periods in UTC, by days counted from 2000-01-01 (a Saturday):
 * 2026-02-14 is day 9541, a Saturday; 2026-02-09, a Monday, 9536;
 * 2026-02-01 9528; 2026-03-01 9556; 2027-01-01 9862; 2028-03-01 10287
 * (2028 is a leap year); 1999-12-01 -31; 1999-12-27, a Monday, -5.
 */
static void
test_periods(void)
{
	QsTime		t = AT_HOUR(9541, 12);

	CHECK(QsPeriodStart(t, QS_PERIOD_DAY) == AT_HOUR(9541, 0) &&
		  QsPeriodEnd(t, QS_PERIOD_DAY) == AT_HOUR(9542, 0), "a day: midnight to midnight, UTC");
	CHECK(QsPeriodStart(t, QS_PERIOD_WEEK) == AT_HOUR(9536, 0) &&
		  QsPeriodEnd(t, QS_PERIOD_WEEK) == AT_HOUR(9543, 0), "a week: from Monday");
	CHECK(QsPeriodStart(AT_HOUR(9536, 0), QS_PERIOD_WEEK) == AT_HOUR(9536, 0),
		  "Monday midnight starts its own week");
	CHECK(QsPeriodStart(t, QS_PERIOD_MONTH) == AT_HOUR(9528, 0) &&
		  QsPeriodEnd(t, QS_PERIOD_MONTH) == AT_HOUR(9556, 0), "a month: February 2026, 28 days");
	CHECK(QsPeriodEnd(AT_HOUR(9848, 5), QS_PERIOD_MONTH) == AT_HOUR(9862, 0),
		  "December ends at the next year's first of January");
	CHECK(QsPeriodEnd(AT_HOUR(10267, 0), QS_PERIOD_MONTH) == AT_HOUR(10287, 0),
		  "February 2028 has 29 days");
	CHECK(QsPeriodStart(AT_HOUR(-1, 23), QS_PERIOD_MONTH) == AT_HOUR(-31, 0) &&
		  QsPeriodStart(AT_HOUR(-1, 23), QS_PERIOD_WEEK) == AT_HOUR(-5, 0),
		  "before 2000: December 1999, and the week from Monday 1999-12-27");
}

/* spent: held x time, starting again with each period. */
static void
test_spent(void)
{
	QsTime		since = AT_HOUR(9541, 10);

	CHECK(QsSpentAt(100, since, 2, AT_HOUR(9541, 11), QS_PERIOD_DAY) == 100 + 7200,
		  "2 instances held for an hour: 7200 instance-seconds more");
	CHECK(QsSpentAt(100, since, 2, since, QS_PERIOD_DAY) == 100, "no time: nothing more");
	CHECK(QsSpentAt(5000, AT_HOUR(9555, 23), 1, AT_HOUR(9556, 1), QS_PERIOD_MONTH) == 3600,
		  "across the end of February: March counts from its first instant only");
	CHECK(QsSpentAt(5000, AT_HOUR(9555, 23), 1, AT_HOUR(9556, 1), QS_PERIOD_WEEK) == 5000 + 7200,
		  "the same two hours within one week: no restart");
}

/* recent_borrow: decays by half each half-life, and accrues the integral. */
static void
test_recent_borrow(void)
{
	QsTime		h = (QsTime) 3600 * 1000000;
	double		hs = 3600;

	CHECK(fabs(QsRecentBorrowAt(100, 0, 0, 2 * h, h) - 25) < 1e-9,
		  "nothing borrowed for two half-lives: a quarter is left");
	CHECK(fabs(QsRecentBorrowAt(0, 0, 1, h, h) - hs / log(2) * 0.5) < 1e-6,
		  "1 borrowed for one half-life: H / ln 2 x (1 - 1/2) instance-seconds");
	CHECK(fabs(QsRecentBorrowAt(QsRecentBorrowAt(0, 0, 3, h / 3, h), h / 3, 3, h, h)
			   - QsRecentBorrowAt(0, 0, 3, h, h)) < 1e-6,
		  "advanced in two steps or one: the same (closed form, no sampling)");
	CHECK(fabs(QsRecentBorrowAt(0, 0, 1, 1000 * h, h) - hs / log(2)) < 1e-6,
		  "borrowing 1 for ever tends to H / ln 2");
}

int
main(void)
{
	test_periods();
	test_spent();
	test_recent_borrow();
	test_fair_memory();
	test_spent_budget();
	test_fractional_budget();
	test_budget_per_unit();
	test_not_wanted_no_victims();
	test_promise_lapses();
	test_never_stops();
	return TapDone();
}
