/*-------------------------------------------------------------------------
 *
 * test_fleet.c
 *		Unit tests of the policy core's fleet rules (scheduling.md 3.10):
 *		jobs larger than every live, active agent held back (and failed by
 *		the runnable timeout, 3.9; in a STRICT share, the held-back job
 *		that keeps the later ones waiting), the claim timeout and its
 *		backoff.  (Lease losses: test_policy.c, with the
 *		other lease rules.)  Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#define SECOND ((QsTime) 1000000)

/*
 * One agent of max instances is the host of unit 0, which is placed: no
 * job larger than max has a placement (scheduling.md 3.13).
 */
/* Unit 0 is no longer placed (an unbounded agent came). */
static void
Unplace(World *w)
{
	w->units[0].placed = false;
	w->nhosts[0] = 0;
}

static void
BoundAgents(World *w, int64_t max)
{
	Unplace(w);
	WAddHost(w, 0, "agent", max);
}

/*
 * A job larger than the largest agent is neither dispatched nor given
 * victims, and gets NO_AGENT_FITS; without a bound it would preempt.
 */
static void
test_no_agent_fits(void)
{
	World		w;
	int			a;
	WJob	   *low, *big;
	const QsOutput *out;

	WInit(&w, 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, true, 8);
	low = WSubmit(&w, "low", a, 0, 4);
	WPassApply(&w);
	WClaim(&w, low, 100 * SECOND);
	WSubmit(&w, "filler", a, 0, 4);
	WPassApply(&w);
	BoundAgents(&w, 4);
	big = WSubmit(&w, "big", a, 9, 5);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, big) == NULL && out->ndecisions == 0,
		  "no agent fits: not dispatched, no victims");
	CHECK(big->status_reason != NULL && strcmp(big->status_reason, "NO_AGENT_FITS") == 0,
		  "no agent fits: its reason");
	CHECK(out->fit_limits[0].agent_max == 4, "no agent fits: the fit limit is what the hosts have");
	Unplace(&w);
	out = WPassApply(&w);
	CHECK(ActionFor(out, low) == QS_PREEMPT, "no agent fits: without a bound it gets victims");
	CHECK(big->status_reason == NULL, "no agent fits: the reason clears");
}

/* A job in its claim backoff does not count as tried (BEST_EFFORT). */
static void
test_held_back_not_tried(void)
{
	World		w;
	int			a;
	WJob	   *first, *second;
	const QsOutput *out;

	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	first = WSubmit(&w, "first", a, 5, 2);
	first->j.claim_backoff_until = w.now + 60 * SECOND;
	second = WSubmit(&w, "second", a, 0, 2);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, first) == NULL, "backoff: the held-back job waits");
	CHECK(Dispatched(out, second), "backoff: a job of its size behind it is dispatched");
	w.now += 61 * SECOND;
	out = WPassApply(&w);
	CHECK(Dispatched(out, first), "backoff: dispatched once it is over");
}

/* In a STRICT share a held-back job blocks the later jobs of its unit. */
static void
test_held_back_strict(void)
{
	World		w;
	int			a;
	WJob	   *second;
	const QsOutput *out;

	WInit(&w, 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 8);
	w.shares[a].strict = true;
	BoundAgents(&w, 4);
	WSubmit(&w, "big", a, 5, 5);
	second = WSubmit(&w, "second", a, 0, 1);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, second) == NULL, "strict: a held-back job blocks the share's unit");
}

/*
 * In a STRICT share, the first held-back job ahead of a job of its unit is
 * what keeps it waiting (explain: QsStrictHeadHeld), whatever holds that
 * job back: no agent fits it, its share's budget, its claim backoff.  Not
 * in a BEST_EFFORT share, not for the held-back job itself, not across
 * units, and (test_strict_head_not_held) not behind a job that only waits
 * for capacity.
 */
static void
test_strict_head_held(void)
{
	World		w;
	int			a, b, gpu;
	WJob	   *big, *small, *other_unit, *be_big, *be_small;
	QsJob		head;
	const QsOutput *out;

	WInit(&w, 8);
	gpu = WAddUnit(&w, "gpu", 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 8);
	w.capacity[a][gpu] = 8;
	w.shares[a].strict = true;
	b = WAddShare(&w, "B", QS_RESERVE, -1, false, 0);
	BoundAgents(&w, 4);
	big = WSubmit(&w, "big", a, 5, 8);
	small = WSubmit(&w, "small", a, 0, 1);
	other_unit = WSubmitUnit(&w, "other_unit", a, gpu, 0, 1);
	be_big = WSubmit(&w, "be_big", b, 5, 8);
	be_small = WSubmit(&w, "be_small", b, 0, 1);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, small) == NULL && Dispatched(out, other_unit),
		  "strict head: the held-back head blocks its unit only");
	memset(&head, 0, sizeof(head));
	CHECK(WStrictHead(&w, small, &head) == QS_HOLD_NO_AGENT_FITS && head.id == big->j.id,
		  "strict head: a later job is held by the head that no agent fits");
	CHECK(WStrictHead(&w, big, &head) == QS_HOLD_NONE, "strict head: not the head itself");
	CHECK(WStrictHead(&w, be_small, &head) == QS_HOLD_NONE && be_big->state == W_RUNNABLE,
		  "strict head: none in a BEST_EFFORT share");

	Unplace(&w);
	w.budget[a][0] = 1;
	w.spent[a][0] = 3600;
	CHECK(WStrictHead(&w, small, &head) == QS_HOLD_BUDGET_EXHAUSTED && head.id == big->j.id,
		  "strict head: held by a head over its share's budget");
	w.budget[a][0] = -1;
	big->j.claim_backoff_until = w.now + 60 * SECOND;
	CHECK(WStrictHead(&w, small, &head) == QS_HOLD_CLAIM_BACKOFF && head.id == big->j.id,
		  "strict head: held by a head in its claim backoff");
	big->j.claim_backoff_until = QS_NO_TIME;
}

/*
 * No job ahead holds a job of a STRICT share back when it only waits for
 * capacity, nor when step 1 fails it (test_strict_head_held, continued).
 */
static void
test_strict_head_not_held(void)
{
	World		w;
	int			a;
	WJob	   *small, *first;
	QsJob		head;
	const QsOutput *out;

	memset(&head, 0, sizeof(head));
	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.shares[a].strict = true;
	first = WSubmit(&w, "first", a, 0, 4);
	WPassApply(&w);
	WSubmit(&w, "waits", a, 5, 2);
	small = WSubmit(&w, "small", a, 0, 1);
	out = WPassApply(&w);
	CHECK(first->state == W_SCHEDULED && WDecisionFor(out, small) == NULL &&
		  WStrictHead(&w, small, &head) == QS_HOLD_NONE,
		  "strict head: a head that waits for capacity is not held back");

	/* a job that step 1 fails is held by nothing behind it */
	WInit(&w, 4);
	w.runnable_timeout = 10 * SECOND;
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.shares[a].strict = true;
	first = WSubmit(&w, "misconfigured", a, 5, 5);
	WSubmit(&w, "held", a, 0, 1)->j.claim_backoff_until = w.now + 100 * SECOND;
	WPassApply(&w);
	w.now += 11 * SECOND;
	CHECK(first->status_reason != NULL && WStrictHead(&w, first, &head) == QS_HOLD_NONE,
		  "strict head: none behind a job the runnable timeout fails");
}

/*
 * Runnable timeout of a job no agent fits (scheduling.md 3.9, 3.10): once
 * its NO_AGENT_FITS reason is older than the queue's runnable_timeout, and
 * no agent fits it still, it fails (RUNNABLE_TIMEOUT:NO_AGENT_FITS), and
 * the STRICT share's later jobs it held back start in the same pass.  The
 * time counts from the reason (when it was first held so), not from its
 * submission; a job an agent fits again is not failed; without a
 * runnable_timeout nothing fails.
 */
static void
test_no_agent_fits_timeout(void)
{
	World		w;
	int			a;
	WJob	   *big, *small, *late;
	const QsOutput *out;
	const QsDecision *d;
	QsJob		head;

	WInit(&w, 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 8);
	w.shares[a].strict = true;
	big = WSubmit(&w, "big", a, 5, 8);
	small = WSubmit(&w, "small", a, 0, 1);
	BoundAgents(&w, 4);
	w.now += 100 * SECOND;		/* submitted long before it was held */
	WPassApply(&w);
	CHECK(big->status_reason != NULL && strcmp(big->status_reason, "NO_AGENT_FITS") == 0 &&
		  small->state == W_RUNNABLE, "no-agent timeout: held, and the share's unit with it");
	w.now += 1000 * SECOND;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "no-agent timeout: none without a runnable_timeout");
	w.runnable_timeout = 1000 * SECOND;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "no-agent timeout: not before runnable_timeout has passed since the reason");
	w.now += 1;
	out = WPassApply(&w);
	d = WDecisionFor(out, big);
	CHECK(d != NULL && d->action == QS_FAIL && strcmp(d->reason, QsReasonName(QS_REASON_RUNNABLE_TIMEOUT_NO_AGENT)) == 0 &&
		  strcmp(d->reason, "RUNNABLE_TIMEOUT:NO_AGENT_FITS") == 0 && big->state == W_FAILED,
		  "no-agent timeout: FAIL RUNNABLE_TIMEOUT:NO_AGENT_FITS");
	CHECK(Dispatched(out, small), "no-agent timeout: the later job it held back starts at once");

	WEnd(&w, small, W_SUCCEEDED);
	late = WSubmit(&w, "late", a, 9, 7);
	WPassApply(&w);
	small = WSubmit(&w, "small2", a, 0, 1);
	w.now += 1001 * SECOND;
	CHECK(WStrictHead(&w, small, &head) == QS_HOLD_NONE,
		  "no-agent timeout: explain names no head that the pass fails first");
	BoundAgents(&w, 8);
	out = WPassApply(&w);
	CHECK(Dispatched(out, late) && Dispatched(out, small) && late->status_reason == NULL,
		  "no-agent timeout: a job an agent fits again is dispatched, not failed");
}

/*
 * A lender's held-back job wants none of its idle capacity: a borrower
 * may take it.
 */
static void
test_held_back_wants_nothing(void)
{
	World		w;
	int			b, l;
	WJob	   *borrower;
	const QsOutput *out;

	WInit(&w, 4);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 4);
	WSubmit(&w, "lender_job", l, 0, 3)->j.claim_backoff_until = w.now + 60 * SECOND;
	borrower = WSubmit(&w, "borrower", b, 0, 2);
	out = WPassApply(&w);
	CHECK(Dispatched(out, borrower), "wanted: a held-back lender job wants nothing");
}

/* A promised job that is held back loses its promise at the re-check. */
static void
test_held_back_promise_lapses(void)
{
	World		w;
	int			a;
	WJob	   *low, *high;
	const QsOutput *out;

	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, true, 4);
	low = WSubmit(&w, "low", a, 0, 4);
	WPassApply(&w);
	WClaim(&w, low, 100 * SECOND);
	high = WSubmit(&w, "high", a, 9, 4);
	out = WPassApply(&w);
	CHECK(ActionFor(out, low) == QS_PREEMPT && high->j.promised_at != QS_NO_TIME,
		  "promise: room made for the high job");
	BoundAgents(&w, 2);
	out = WPassApply(&w);
	CHECK(out->nlapsed == 1 && out->lapsed[0] == high->j.id, "promise: it lapses once held back");
}

/*
 * Claim timeout: an unclaimed SCHEDULED job goes back after the timeout,
 * counting no attempt, held back for timeout * 2^(k-1), at most an hour.
 */
static void
test_claim_timeout(void)
{
	World		w;
	int			a;
	WJob	   *job, *claimed;
	const QsOutput *out;
	const QsDecision *d;

	WInit(&w, 4);
	w.claim_timeout = 10 * SECOND;
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	job = WSubmit(&w, "job", a, 0, 1);
	claimed = WSubmit(&w, "claimed", a, 0, 1);
	WPassApply(&w);
	WClaim(&w, claimed, 1000 * SECOND);
	w.now += 10 * SECOND;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "claim timeout: not before it has passed");
	w.now += 1;
	out = WPassApply(&w);
	d = WDecisionFor(out, job);
	CHECK(d != NULL && d->action == QS_REQUEUE && d->counter == QS_COUNT_NOT_CLAIMED &&
		  strcmp(d->reason, "NOT_CLAIMED") == 0, "claim timeout: REQUEUE NOT_CLAIMED");
	CHECK(d != NULL && d->backoff_until == w.now + 10 * SECOND, "claim timeout: backoff of one timeout");
	CHECK(WDecisionFor(out, claimed) == NULL, "claim timeout: a claimed job stays");
	CHECK(job->state == W_RUNNABLE && job->j.failed_attempts == 0 && job->j.claim_requeues == 1,
		  "claim timeout: no attempt counted");
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, job) == NULL, "claim timeout: held back");
	w.now += 10 * SECOND;
	out = WPassApply(&w);
	CHECK(Dispatched(out, job), "claim timeout: dispatched after the backoff");
	w.now += 11 * SECOND;
	out = WPassApply(&w);
	d = WDecisionFor(out, job);
	CHECK(d != NULL && d->backoff_until == w.now + 20 * SECOND, "claim timeout: the second doubles");
	CHECK(QsClaimBackoff(10 * SECOND, 3) == 40 * SECOND, "backoff: 2^(k-1)");
	CHECK(QsClaimBackoff(10 * SECOND, 10) == QS_CLAIM_BACKOFF_MAX, "backoff: at most an hour");
	CHECK(QsClaimBackoff(2 * QS_CLAIM_BACKOFF_MAX, 1) == QS_CLAIM_BACKOFF_MAX,
		  "backoff: a timeout over an hour waits an hour");
	CHECK(QsClaimBackoff(SECOND, 1000000) == QS_CLAIM_BACKOFF_MAX, "backoff: no overflow");
}

/*
 * A job waiting for dependencies (scheduling.md 3.17) is held back and in
 * no share's order: in a STRICT share, a higher-priority job waiting for
 * a lower one does not keep that one waiting; the source does not give
 * it; once it waits no more it is dispatched.
 */
static void
test_dependency_held(void)
{
	World		w;
	int			a;
	WJob	   *eval, *train;
	const QsOutput *out;

	WInit(&w, 2);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 2);
	w.shares[a].strict = true;
	eval = WSubmit(&w, "eval", a, 9, 1);
	eval->j.deps_waiting = 1;
	train = WSubmit(&w, "train", a, 0, 1);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, eval) == NULL, "dependency: the job waiting is not dispatched");
	CHECK(Dispatched(out, train), "dependency: in a STRICT share, the job behind it is");
	CHECK(!WWasRead(&w, eval), "dependency: the source does not give a job waiting");
	CHECK(QsHeldBack(&(QsInput) {.shares = w.shares, .units = w.units}, &eval->j) ==
		  QS_HOLD_DEPENDENCY, "dependency: held back DEPENDENCY");
	eval->j.deps_waiting = 0;
	out = WPassApply(&w);
	CHECK(Dispatched(out, eval), "dependency: dispatched once it waits no more");
}

/* A lender's job waiting for dependencies wants none of its idle capacity. */
static void
test_dependency_wants_nothing(void)
{
	World		w;
	int			b, l;
	WJob	   *borrower;
	const QsOutput *out;

	WInit(&w, 4);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 4);
	WSubmit(&w, "lender_job", l, 0, 3)->j.deps_waiting = 2;
	borrower = WSubmit(&w, "borrower", b, 0, 2);
	out = WPassApply(&w);
	CHECK(Dispatched(out, borrower), "dependency: a lender job waiting wants nothing");
}

/*
 * A RUNNABLE job a dependency of which failed fails at the next pass,
 * DEPENDENCY_FAILED:<id>, whether it waits for others or not; one whose
 * dependencies all ended well does not.
 */
static void
test_dependency_failed(void)
{
	World		w;
	int			a;
	WJob	   *doomed, *also, *fine;
	const QsDecision *d;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	doomed = WSubmit(&w, "doomed", a, 0, 1);
	doomed->j.deps_waiting = 1;
	doomed->j.dependency_failed = 42;
	also = WSubmit(&w, "also", a, 0, 1);
	also->j.dependency_failed = 7;
	fine = WSubmit(&w, "fine", a, 0, 1);
	out = WPassApply(&w);
	d = WDecisionFor(out, doomed);
	CHECK(d != NULL && d->action == QS_FAIL && strcmp(d->reason, "DEPENDENCY_FAILED:42") == 0,
		  "dependency failed: FAIL DEPENDENCY_FAILED:<id>");
	d = WDecisionFor(out, also);
	CHECK(d != NULL && d->action == QS_FAIL && strcmp(d->reason, "DEPENDENCY_FAILED:7") == 0,
		  "dependency failed: also a job that waits no more");
	CHECK(doomed->state == W_FAILED && Dispatched(out, fine),
		  "dependency failed: the job fails; the others go on");
}

int
main(void)
{
	test_no_agent_fits();
	test_held_back_not_tried();
	test_held_back_strict();
	test_strict_head_held();
	test_strict_head_not_held();
	test_no_agent_fits_timeout();
	test_held_back_wants_nothing();
	test_held_back_promise_lapses();
	test_claim_timeout();
	test_dependency_held();
	test_dependency_wants_nothing();
	test_dependency_failed();
	return TapDone();
}
