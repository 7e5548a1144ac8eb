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
#include <string.h>

#include "tap.h"

#define HOUR 3600.0

static void
ClaimAll(World *w)
{
	for (int i = 0; i < w->njobs; i++)
		if (w->jobs[i].state == W_SCHEDULED)
		{
			WClaim(w, &w->jobs[i], 1000000);
			w->jobs[i].state = W_RUNNING;
			w->jobs[i].j.state = QS_RUNNING;
		}
}

static int
CountAction(const QsOutput *out, QsAction action)
{
	int			n = 0;

	for (int i = 0; i < out->ndecisions; i++)
		n += out->decisions[i].action == action;
	return n;
}

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

int
main(void)
{
	test_fair_memory();
	test_spent_budget();
	test_budget_per_unit();
	test_not_wanted_no_victims();
	test_promise_lapses();
	test_never_stops();
	printf("1..%d\n", tests_run);
	WFreeAll();
	return tests_failed == 0 ? 0 : 1;
}
