/*-------------------------------------------------------------------------
 *
 * test_preempt.c
 *		Unit tests of preemption in the policy core, one scenario per rule
 *		of scheduling.md 3.3-3.6, and the seed example step by step
 *		(scheduling.md 3, "Worked example"; the demo).
 *		Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <string.h>

#include "tap.h"

static const QsDecision *
PreemptionOf(const QsOutput *out, const WJob *job)
{
	for (int i = 0; i < out->ndecisions; i++)
		if (out->decisions[i].job_id == job->j.id && out->decisions[i].action == QS_PREEMPT)
			return &out->decisions[i];
	return NULL;
}

/* The seed example ("Worked example"), steps 1 to 3 (scheduling.md 3.2-3.6). */
static void
test_seed_example(void)
{
	World		w;
	int			qs1, qs2;
	WJob	   *high, *med, *low, *qs2_job;
	const QsOutput *out;
	const QsDecision *d;

	WInit(&w, 3);
	qs1 = WAddShare(&w, "QS1", QS_LEND_AND_BORROW, 200, true, 1);
	qs2 = WAddShare(&w, "QS2", QS_LEND, -1, false, 1);
	WAddShare(&w, "QS3", QS_RESERVE, -1, false, 1);
	high = WSubmit(&w, "qs1_job_high", qs1, 3, 1);
	med = WSubmit(&w, "qs1_job_med", qs1, 2, 1);
	low = WSubmit(&w, "qs1_job_low", qs1, 1, 1);
	WPassApply(&w);
	CHECK(high->state == W_SCHEDULED && med->state == W_SCHEDULED && low->state == W_RUNNABLE,
		  "seed 1: high and med run, low waits");
	ClaimAll(&w);

	/* step 2: QS2 takes its lent instance back */
	qs2_job = WSubmit(&w, "qs2_job_1", qs2, 1, 1);
	out = WPassApply(&w);
	d = PreemptionOf(out, med);
	CHECK(d != NULL && d->stop == QS_STOP_CROSS_SHARE && d->preempted_for == qs2_job->j.id,
		  "seed 2: med is preempted across shares for qs2_job_1");
	CHECK(PreemptionOf(out, high) == NULL, "seed 2: high, on QS1's own capacity, is not");
	CHECK(qs2_job->j.promised_at != QS_NO_TIME && qs2_job->state == W_RUNNABLE,
		  "seed 2: the room is promised to qs2_job_1, which waits for med to stop");
	CHECK(!Dispatched(out, low), "seed 2: low does not take the room");
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "seed 2: while med stops, a pass decides nothing");
	WStopped(&w, med);
	CHECK(med->state == W_RUNNABLE && med->j.preemption_count == 1,
		  "seed 2: once stopped, med is RUNNABLE again");
	out = WPassApply(&w);
	CHECK(Dispatched(out, qs2_job) && out->ndecisions == 1, "seed 2: then qs2_job_1 runs");
	ClaimAll(&w);

	/* step 3: low is raised above high: in-share preemption */
	low->j.priority = 4;
	out = WPassApply(&w);
	d = PreemptionOf(out, high);
	CHECK(d != NULL && d->stop == QS_STOP_IN_SHARE && d->preempted_for == low->j.id,
		  "seed 3: in-share preemption stops high for low");
	WStopped(&w, high);
	out = WPassApply(&w);
	CHECK(Dispatched(out, low), "seed 3: low runs");
	CHECK(high->state == W_RUNNABLE, "seed 3: high is RUNNABLE again");
	CHECK(!Dispatched(out, med) && !Dispatched(out, high), "seed 3: med and high wait");
}

/* scheduling.md 3.3: reclaim is blind to priority: a share gets its capacity back. */
static void
test_reclaim_priority_blind(void)
{
	World		w;
	int			b, l;
	WJob	   *borrower, *lender_job;
	const QsOutput *out;

	WInit(&w, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "b_own", b, 9999, 1);
	borrower = WSubmit(&w, "b_borrow", b, 9999, 1);
	WPassApply(&w);
	ClaimAll(&w);
	lender_job = WSubmit(&w, "l_job", l, 0, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrower) != NULL,
		  "reclaim: a priority 0 job takes its share's capacity back from a priority 9999 borrower");
	(void) lender_job;
}

/* scheduling.md 3.3: a job never reclaims in order to borrow. */
static void
test_no_reclaim_to_borrow(void)
{
	World		w;
	int			s, t;
	WJob	   *borrower;
	const QsOutput *out;

	WInit(&w, 3);
	s = WAddShare(&w, "S", QS_LEND_AND_BORROW, -1, false, 1);
	t = WAddShare(&w, "T", QS_LEND_AND_BORROW, -1, false, 2);
	WSubmit(&w, "t_own", t, 0, 2);
	borrower = WSubmit(&w, "t_borrow", t, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(borrower->state == W_RUNNING, "no reclaim to borrow: setup, T borrows S's instance");
	WSubmit(&w, "s_pair", s, 5, 2);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrower) == NULL && out->ndecisions == 0,
		  "no reclaim to borrow: S's job needing 2 of S's own 1 does not reclaim");
}

/*
 * scheduling.md 3.3: a job never reclaims in order to borrow, even where lenders
 * could lend it the rest.
 */
static void
test_no_reclaim_to_borrow_with_lender(void)
{
	World		w;
	int			s, t;
	WJob	   *borrower;
	const QsOutput *out;

	WInit(&w, 4);
	s = WAddShare(&w, "S", QS_LEND_AND_BORROW, -1, false, 1);
	t = WAddShare(&w, "T", QS_LEND_AND_BORROW, -1, false, 2);
	WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "t_own", t, 0, 2);
	borrower = WSubmit(&w, "t_borrow", t, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(borrower->state == W_RUNNING, "no reclaim to borrow (lender): setup");
	WSubmit(&w, "s_pair", s, 5, 2);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 0,
		  "no reclaim to borrow (lender): S's pair would borrow L's instance after reclaiming: no");
}

/*
 * scheduling.md 3.3: reclaim only while the share holds less than its own capacity:
 * a share already borrowing goes to in-share preemption, which may leave it
 * borrowing, and stops fewer of its jobs than a reclaim would.
 */
static void
test_reclaim_only_under_capacity(void)
{
	World		w;
	int			s, t;
	const QsOutput *out;

	WInit(&w, 5);
	s = WAddShare(&w, "S", QS_LEND_AND_BORROW, -1, true, 2);
	t = WAddShare(&w, "T", QS_LEND_AND_BORROW, -1, false, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 2);
	WSubmit(&w, "s_low1", s, 0, 1);
	WSubmit(&w, "s_low2", s, 0, 1);
	WSubmit(&w, "s_low3", s, 0, 1);
	WSubmit(&w, "t_own", t, 0, 1);
	WSubmit(&w, "t_borrow", t, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "s_pair", s, 5, 2);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 2 &&
		  PreemptionOf(out, WFind(&w, "t_borrow")) == NULL,
		  "under capacity: S holds 3 of its 2: in-share stops 2 of its own jobs, no reclaim");
}

/*
 * scheduling.md 3.4: a borrowing job is taken only while its share is still
 * borrowing: a reclaim never takes a share's own capacity.
 */
static void
test_still_borrowing(void)
{
	World		w;
	int			s, t;
	const QsOutput *out;

	WInit(&w, 2);
	s = WAddShare(&w, "S", QS_LEND, -1, false, 2);
	t = WAddShare(&w, "T", QS_LEND_AND_BORROW, -1, false, 1);
	WSubmit(&w, "t_a", t, 0, 1);
	WSubmit(&w, "t_b", t, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "s_pair", s, 5, 2);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 0,
		  "still borrowing: T borrows 1: its job on its own instance is never taken, so nobody is");
}

/*
 * scheduling.md 3.3: with in-share preemption, the share's own lower-priority jobs
 * join a reclaim, after the other shares' borrowers.
 */
static void
test_reclaim_with_own_lower(void)
{
	World		w;
	int			s, t;
	WJob	   *t_borrow, *s_low, *big;
	const QsOutput *out;
	const QsDecision *d1, *d2;

	WInit(&w, 3);
	s = WAddShare(&w, "S", QS_LEND_AND_BORROW, -1, true, 2);
	t = WAddShare(&w, "T", QS_LEND_AND_BORROW, -1, false, 1);
	s_low = WSubmit(&w, "s_low", s, 0, 1);
	WSubmit(&w, "t_own", t, 0, 1);
	t_borrow = WSubmit(&w, "t_borrow", t, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(t_borrow->state == W_RUNNING && s_low->state == W_RUNNING,
		  "reclaim+own: setup, S runs s_low, T borrows one of S's instances");
	big = WSubmit(&w, "s_big", s, 5, 2);
	out = WPassApply(&w);
	d1 = PreemptionOf(out, t_borrow);
	d2 = PreemptionOf(out, s_low);
	CHECK(d1 != NULL && d1->stop == QS_STOP_CROSS_SHARE,
		  "reclaim+own: T's borrower is preempted across shares");
	CHECK(d2 != NULL && d2->stop == QS_STOP_IN_SHARE,
		  "reclaim+own: S's own lower-priority job joins the reclaim (in-share)");
	CHECK(big->j.promised_at != QS_NO_TIME, "reclaim+own: the room is promised");
}

/* scheduling.md 3.3: in-share preemption, after which the job may borrow. */
static void
test_in_share_then_borrow(void)
{
	World		w;
	int			s;
	WJob	   *s_low, *big;
	const QsOutput *out;

	WInit(&w, 3);
	s = WAddShare(&w, "S", QS_LEND_AND_BORROW, -1, true, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 2);
	s_low = WSubmit(&w, "s_low", s, 0, 1);
	WSubmit(&w, "s_low2", s, 0, 2);
	WPassApply(&w);
	ClaimAll(&w);
	big = WSubmit(&w, "s_big", s, 5, 3);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, s_low) != NULL && PreemptionOf(out, WFind(&w, "s_low2")) != NULL,
		  "in-share: both lower-priority jobs of the share are stopped for a 3-instance job");
	CHECK(big->j.promised_at != QS_NO_TIME,
		  "in-share: the job will start by borrowing beyond its own capacity");
}

/* scheduling.md 3.3: equal priority never preempts inside a share. */
static void
test_equal_priority(void)
{
	World		w;
	int			s;
	const QsOutput *out;

	WInit(&w, 1);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 1);
	WSubmit(&w, "first", s, 5, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "second", s, 5, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "equal priority: no preemption");
	WSubmit(&w, "higher", s, 6, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, WFind(&w, "first")) != NULL, "higher priority: preempts");
}

/* scheduling.md 3.3: without in-share preemption a share never stops its own jobs. */
static void
test_in_share_off(void)
{
	World		w;
	int			s;
	const QsOutput *out;

	WInit(&w, 1);
	s = WAddShare(&w, "S", QS_RESERVE, -1, false, 1);
	WSubmit(&w, "low", s, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "urgent", s, 9999, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "in-share off: its own jobs are never stopped");
}

/* scheduling.md 3.4: victim order: lowest priority, latest scheduled_at, highest id. */
static void
test_victim_order(void)
{
	World		w;
	int			s;
	WJob	   *a, *b, *c, *d;
	const QsOutput *out;

	WInit(&w, 4);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 4);
	a = WSubmit(&w, "a_prio2", s, 2, 1);
	WPassApply(&w);
	w.now += 10;
	b = WSubmit(&w, "b_prio1_early", s, 1, 1);
	WPassApply(&w);
	w.now += 10;
	c = WSubmit(&w, "c_prio1_late", s, 1, 1);
	d = WSubmit(&w, "d_prio1_late_higher_id", s, 1, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "one", s, 5, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, d) != NULL && CountAction(out, QS_PREEMPT) == 1,
		  "victim order: the highest id among the latest scheduled of the lowest priority");
	WStopped(&w, d);
	d->state = W_SUCCEEDED;		/* out of the way */
	WPassApply(&w);				/* "one" starts */
	ClaimAll(&w);
	WSubmit(&w, "two", s, 5, 2);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, c) != NULL && PreemptionOf(out, b) != NULL &&
		  CountAction(out, QS_PREEMPT) == 2,
		  "victim order: then the later scheduled, then the earlier, of priority 1");
	CHECK(a->j.stop == QS_STOP_NONE, "victim order: priority 2 is spared");
}

/* scheduling.md 3.4: the backwards walk drops victims that are not needed. */
static void
test_minimal_victims(void)
{
	World		w;
	int			s;
	WJob	   *one, *pair;
	const QsOutput *out;

	WInit(&w, 3);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 3);
	pair = WSubmit(&w, "pair_prio1", s, 1, 2);
	one = WSubmit(&w, "one_prio0", s, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "needs2", s, 5, 2);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, pair) != NULL, "minimal: the 2-instance job is stopped");
	CHECK(PreemptionOf(out, one) == NULL,
		  "minimal: the 1-instance job taken first is dropped by the backwards walk");
}

/* scheduling.md 3.4: if all candidates cannot make room, nobody is preempted. */
static void
test_no_room_no_victims(void)
{
	World		w;
	int			s;
	const QsOutput *out;

	WInit(&w, 3);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 3);
	WSubmit(&w, "low", s, 0, 1);
	WSubmit(&w, "same", s, 5, 2);
	WPassApply(&w);
	ClaimAll(&w);
	WSubmit(&w, "needs3", s, 5, 3);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0,
		  "no room: stopping the one lower-priority job would not make room for 3");
}

/* scheduling.md 3.6: unclaimed victims stop at once; the preemptor may start now. */
static void
test_unclaimed_victims(void)
{
	World		w;
	int			s;
	WJob	   *low, *urgent;
	const QsOutput *out;

	WInit(&w, 1);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 1);
	low = WSubmit(&w, "low", s, 0, 1);
	low->j.preemption_retries = 0;
	WPassApply(&w);
	urgent = WSubmit(&w, "urgent", s, 5, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, low) != NULL && PreemptionOf(out, low)->immediate,
		  "unclaimed: the victim stops at once");
	CHECK(ActionFor(out, low) == QS_PREEMPT && low->state == W_FAILED,
		  "unclaimed: with preemption_retries 0 it fails on its first preemption");
	CHECK(Dispatched(out, urgent), "unclaimed: the preemptor starts in the same pass");
}

/* scheduling.md 3.6: preemption_retries N: requeued N times, then failed. */
static void
test_preemption_retries(void)
{
	World		w;
	int			s;
	WJob	   *low;

	WInit(&w, 1);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 1);
	low = WSubmit(&w, "low", s, 0, 1);
	low->j.preemption_retries = 2;
	for (int round = 0; round < 3; round++)
	{
		WPassApply(&w);
		ClaimAll(&w);
		WSubmit(&w, NULL, s, 5, 1);
		WPassApply(&w);
		if (low->j.stop != QS_STOP_NONE)
			WStopped(&w, low);
		if (round < 2)
			CHECK(low->state == W_RUNNABLE && low->j.preemption_count == round + 1,
				  "retries: preemption %d of 2 requeues", round + 1);
		/* the preemptor finishes */
		for (int i = 0; i < w.njobs; i++)
			if (w.jobs[i].j.priority == 5 && w.jobs[i].state != W_SUCCEEDED)
			{
				WPassApply(&w);
				WEnd(&w, &w.jobs[i], W_SUCCEEDED);
			}
	}
	CHECK(low->state == W_FAILED && low->j.preemption_count == 3,
		  "retries: the third preemption exceeds preemption_retries 2: FAILED");
}

/* scheduling.md 3.6: two preemptors in one pass compete for the same room. */
static void
test_two_preemptors(void)
{
	World		w;
	int			b, l1, l2;
	WJob	   *borrower, *first, *second;
	const QsOutput *out;

	WInit(&w, 3);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	l1 = WAddShare(&w, "L1", QS_LEND, -1, false, 1);
	l2 = WAddShare(&w, "L2", QS_LEND, -1, false, 1);
	WSubmit(&w, "b_own", b, 0, 1);
	borrower = WSubmit(&w, "b_borrow1", b, 0, 1);
	WSubmit(&w, "b_borrow2", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	first = WSubmit(&w, "l1_job", l1, 0, 1);
	second = WSubmit(&w, "l2_job", l2, 0, 2);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 1 && first->j.promised_at != QS_NO_TIME,
		  "two preemptors: the first gets one victim and a promise");
	CHECK(second->j.promised_at == QS_NO_TIME,
		  "two preemptors: the second, which cannot start even then, preempts nobody");
	(void) borrower;
}

/* scheduling.md 3.6: a promise is kept across passes while victims stop one by one. */
static void
test_promise_across_passes(void)
{
	World		w;
	int			b, l;
	WJob	   *v1, *v2, *j, *other;
	const QsOutput *out;

	WInit(&w, 3);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 2);
	WSubmit(&w, "b_own", b, 0, 1);
	v1 = WSubmit(&w, "b_borrow1", b, 0, 1);
	v2 = WSubmit(&w, "b_borrow2", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	j = WSubmit(&w, "l_pair", l, 0, 2);
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 2 && j->j.promised_at != QS_NO_TIME,
		  "promise: both borrowers are stopped for a 2-instance job");
	WStopped(&w, v1);
	other = WSubmit(&w, "b_again", b, 9, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0 && j->j.promised_at != QS_NO_TIME,
		  "promise: with one victim stopped, nobody takes its room and the promise holds");
	WStopped(&w, v2);
	out = WPassApply(&w);
	CHECK(Dispatched(out, j) && !Dispatched(out, other), "promise: the promised job starts");
	CHECK(j->j.promised_at == QS_NO_TIME, "promise: dispatching clears promised_at");
}

/* scheduling.md 3.6: a promise lapses when the job could no longer start. */
static void
test_promise_lapse_after_preemption(void)
{
	World		w;
	int			b, l;
	WJob	   *v, *j;
	const QsOutput *out;

	WInit(&w, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "b_own", b, 0, 1);
	v = WSubmit(&w, "b_borrow", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	j = WSubmit(&w, "l_job", l, 0, 1);
	WPassApply(&w);
	CHECK(j->j.promised_at != QS_NO_TIME && v->j.stop == QS_STOP_CROSS_SHARE,
		  "lapse: setup, promise made");
	w.capacity[l][0] = 0;
	out = WPassApply(&w);
	CHECK(out->nlapsed == 1 && j->j.promised_at == QS_NO_TIME,
		  "lapse: the share lost its capacity: the promise lapses");
	CHECK(v->j.stop == QS_STOP_CROSS_SHARE, "lapse: the victim still stops");
}

/* scheduling.md 3.5: capacity reduced by an admin is repaired by preemption. */
static void
test_capacity_reduced(void)
{
	World		w;
	int			s, b;
	WJob	   *s1, *s2, *b_own, *b_borrow;
	const QsOutput *out;
	const QsDecision *d;

	WInit(&w, 4);
	s = WAddShare(&w, "S", QS_RESERVE, -1, false, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 1);
	s1 = WSubmit(&w, "s_old", s, 0, 1);
	WPassApply(&w);
	w.now += 10;
	s2 = WSubmit(&w, "s_new", s, 0, 1);
	b_own = WSubmit(&w, "b_own", b, 0, 1);
	b_borrow = WSubmit(&w, "b_borrow", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	w.capacity[s][0] = 1;		/* S is now above its allowed capacity */
	out = WPassApply(&w);
	d = PreemptionOf(out, s2);
	CHECK(d != NULL && d->stop == QS_STOP_CAPACITY_REDUCED && d->preempted_for == 0,
		  "repair: a share above allowed(S,u) loses its own latest job (CAPACITY_REDUCED)");
	CHECK(PreemptionOf(out, s1) == NULL && CountAction(out, QS_PREEMPT) == 1,
		  "repair: only as many as needed");
	WStopped(&w, s2);
	w.units[0].env_limit = 2;	/* the environment shrank: S 1 + B 2 > 2 */
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, b_borrow) != NULL && PreemptionOf(out, b_own) == NULL &&
		  PreemptionOf(out, s1) == NULL,
		  "repair: beyond that, borrowing shares' jobs go first");
	out = WPassApply(&w);
	CHECK(CountAction(out, QS_PREEMPT) == 0, "repair: pending stops count as gone");
}

/* scheduling.md 3.5: a DISABLED share lends nothing: its borrowers are repaired. */
static void
test_disabled_lender_repair(void)
{
	World		w;
	int			b, l;
	WJob	   *borrower;
	const QsOutput *out;

	WInit(&w, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "b_own", b, 0, 1);
	borrower = WSubmit(&w, "b_borrow", b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	w.shares[l].enabled = false;
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrower) != NULL &&
		  PreemptionOf(out, borrower)->stop == QS_STOP_CAPACITY_REDUCED,
		  "repair: disabling the lender preempts what was borrowed from it");
}

/*
 * scheduling.md 3.2: a job dispatched in a pass is never a victim in that pass.  B's
 * borrower is older, so it is dispatched first, onto S's idle instance that
 * S's waiting pair does not fit; the pair, which could start only by
 * reclaiming it (and stopping S's own low job), preempts nobody in that pass
 * and both of them in the next.
 */
static void
test_no_victim_dispatched_in_pass(void)
{
	World		w;
	int			s, b;
	WJob	   *borrower, *s_low, *pair;
	const QsOutput *out;

	WInit(&w, 2);
	s = WAddShare(&w, "S", QS_LEND, -1, true, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	s_low = WSubmit(&w, "s_low", s, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	borrower = WSubmit(&w, "b_borrow", b, 0, 1);
	pair = WSubmit(&w, "s_pair", s, 5, 2);
	out = WPassApply(&w);
	CHECK(Dispatched(out, borrower), "same pass: the borrower is dispatched");
	CHECK(CountAction(out, QS_PREEMPT) == 0 && pair->j.promised_at == QS_NO_TIME,
		  "same pass: it is no victim in the pass that dispatched it, so nobody is preempted");
	ClaimAll(&w);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrower) != NULL && PreemptionOf(out, s_low) != NULL,
		  "same pass: in the next pass the pair reclaims it, with S's own low job");
}

/*
 * scheduling.md 3.2 (new in 0.2): a promised job still waiting for its
 * victims is passed over without counting as tried, so a lender's jobs
 * arriving one by one each get their victims in the pass that first sees
 * them.
 */
static void
test_one_by_one_reclaims(void)
{
	World		w;
	int			b, l;
	WJob	   *borrowed[3], *mine[3];
	const QsOutput *out;

	WInit(&w, 3);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 3);
	for (int i = 0; i < 3; i++)
		borrowed[i] = WSubmit(&w, NULL, b, 0, 1);
	WPassApply(&w);
	ClaimAll(&w);
	for (int i = 0; i < 3; i++)
	{
		w.now += 1000;
		mine[i] = WSubmit(&w, NULL, l, 5, 1);
		out = WPassApply(&w);
		CHECK(CountAction(out, QS_PREEMPT) == 1 && WDecisionFor(out, mine[i]) == NULL &&
			  mine[i]->j.promised_at != QS_NO_TIME,
			  "one by one: L's job %d gets its victim in the pass that first sees it", i + 1);
	}
	for (int i = 0; i < 3; i++)
		CHECK(borrowed[i]->j.stop == QS_STOP_CROSS_SHARE, "one by one: B's job %d is stopping", i + 1);
}

/* A share whose jobs may not be preempted before they ran for some time. */
static void
MinRuntimeWorld(World *w, int *b, int *l, WJob **borrowing)
{
	WInit(w, 2);
	*b = WAddShare(w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	*l = WAddShare(w, "L", QS_LEND, -1, false, 2);
	w->shares[*b].min_runtime = 600;
	borrowing[0] = WSubmit(w, "claimed", *b, 0, 1);
	borrowing[1] = WSubmit(w, "unclaimed", *b, 0, 1);
	WPassApply(w);
	WClaim(w, borrowing[0], 1000000);
}

/*
 * scheduling.md 3.3 (new in 0.2): a claimed job of a share with min_runtime
 * is no candidate until min_runtime has passed since its scheduled_at;
 * an unclaimed one always is; the pass asks to run again when the
 * exemption that held a preemptor back ends; explain says so.
 */
static void
test_min_runtime(void)
{
	World		w;
	int			b, l;
	WJob	   *borrowing[2], *first, *second;
	const QsOutput *out;
	QsTime		until;

	MinRuntimeWorld(&w, &b, &l, borrowing);
	until = borrowing[0]->j.scheduled_at + 600;
	first = WSubmit(&w, "first", l, 0, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrowing[1]) != NULL && PreemptionOf(out, borrowing[0]) == NULL,
		  "min_runtime: the unclaimed borrower is preempted, the claimed one is exempt");
	CHECK(Dispatched(out, first), "min_runtime: the unclaimed victim stopped at once: first runs");
	second = WSubmit(&w, "second", l, 0, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "min_runtime: second waits while its only victim is exempt");
	CHECK(out->wake_at == until, "min_runtime: the pass asks to run when the exemption ends");
	{
		QsWhy		why = WExplain(&w, second);

		CHECK(why.victims_exempt && why.exempt_until == until,
			  "min_runtime: explain says the victims are exempt, until when");
	}
	w.now = until - 1;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "min_runtime: still exempt a microsecond before");
	w.now = until;
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrowing[0]) != NULL && second->j.promised_at != QS_NO_TIME,
		  "min_runtime: once min_runtime has passed, the job is preempted");
	CHECK(out->wake_at == QS_NO_TIME, "min_runtime: no wake-up asked when nothing is exempt");
}

/* scheduling.md 3.3, 3.5: a repair ignores min_runtime. */
static void
test_min_runtime_repair(void)
{
	World		w;
	int			b, l;
	WJob	   *borrowing[2];
	const QsOutput *out;

	MinRuntimeWorld(&w, &b, &l, borrowing);
	w.capacity[l][0] = 0;
	w.units[0].env_limit = 0;
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, borrowing[0]) != NULL &&
		  PreemptionOf(out, borrowing[0])->stop == QS_STOP_CAPACITY_REDUCED,
		  "min_runtime: a repair stops the claimed job within its min_runtime");
}

/*
 * scheduling.md 3.2, 3.6: a preemptor of a STRICT share whose victims all
 * stopped at once is dispatched in that pass; it does not make the pass
 * skip its share's later jobs (found by the simulator).
 */
static void
test_strict_after_immediate_preemption(void)
{
	World		w;
	int			s;
	WJob	   *low, *high, *after;
	const QsOutput *out;

	WInit(&w, 4);
	s = WAddShare(&w, "S", QS_RESERVE, -1, true, 4);
	w.shares[s].strict = true;
	low = WSubmit(&w, "low", s, 0, 2);
	WSubmit(&w, "mid", s, 1, 1);
	WPassApply(&w);				/* both dispatched, neither claimed */
	high = WSubmit(&w, "high", s, 9, 2);
	after = WSubmit(&w, "after", s, 8, 1);
	out = WPassApply(&w);
	CHECK(PreemptionOf(out, low) != NULL && PreemptionOf(out, low)->immediate &&
		  Dispatched(out, high),
		  "strict: high preempts the unclaimed low, which stops at once, and starts");
	CHECK(Dispatched(out, after), "strict: the next job of the share starts in the same pass");
}

int
main(void)
{
	test_seed_example();
	test_reclaim_priority_blind();
	test_no_reclaim_to_borrow();
	test_no_reclaim_to_borrow_with_lender();
	test_reclaim_only_under_capacity();
	test_still_borrowing();
	test_reclaim_with_own_lower();
	test_in_share_then_borrow();
	test_equal_priority();
	test_in_share_off();
	test_victim_order();
	test_minimal_victims();
	test_no_room_no_victims();
	test_unclaimed_victims();
	test_preemption_retries();
	test_two_preemptors();
	test_promise_across_passes();
	test_promise_lapse_after_preemption();
	test_capacity_reduced();
	test_disabled_lender_repair();
	test_no_victim_dispatched_in_pass();
	test_one_by_one_reclaims();
	test_min_runtime();
	test_min_runtime_repair();
	test_strict_after_immediate_preemption();
	return TapDone();
}
