/*-------------------------------------------------------------------------
 *
 * test_policy.c
 *		Unit tests of the policy core, one scenario per rule of scheduling.md 3.1,
 *		3.2 and 3.6-3.9.  Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

/* The seed example (scheduling.md 3, "Worked example"): three shares of one ml.g5.xlarge. */
static void
SeedWorld(World *w, int *qs1, int *qs2, int *qs3)
{
	WInit(w, 3);
	*qs1 = WAddShare(w, "QS1", QS_LEND_AND_BORROW, 200, true, 1);
	*qs2 = WAddShare(w, "QS2", QS_LEND, -1, false, 1);
	*qs3 = WAddShare(w, "QS3", QS_RESERVE, -1, false, 1);
}

/* scheduling.md 3.2 and the seed example, step 1. */
static void
test_seed_step1(void)
{
	World		w;
	int			qs1, qs2, qs3;
	const QsOutput *out;

	SeedWorld(&w, &qs1, &qs2, &qs3);
	WSubmit(&w, "qs1_job_high", qs1, 3, 1);
	WSubmit(&w, "qs1_job_med", qs1, 2, 1);
	WSubmit(&w, "qs1_job_low", qs1, 1, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "qs1_job_high")), "seed 1: high runs on QS1's own capacity");
	CHECK(Dispatched(out, WFind(&w, "qs1_job_med")), "seed 1: med runs on capacity borrowed from QS2");
	CHECK(WDecisionFor(out, WFind(&w, "qs1_job_low")) == NULL,
		  "seed 1: low waits, QS3 reserves its capacity");
	CHECK(out->ndecisions == 2, "seed 1: two decisions");
	CHECK(out->decisions[0].job_id == WFind(&w, "qs1_job_high")->j.id,
		  "seed 1: share order: priority first");
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "seed 1: a second pass decides nothing");
}

/* scheduling.md 3.1: allowed(S,u) = floor(C * (100 + borrow_limit) / 100). */
static void
test_allowed_rounding(void)
{
	World		w;
	int			s;
	const QsOutput *out;

	WInit(&w, 100);
	s = WAddShare(&w, "A", QS_LEND_AND_BORROW, 50, false, 3);
	WAddShare(&w, "L", QS_LEND, -1, false, 20);
	CHECK(QsAllowed(&w.shares[s], 0) == 4, "allowed: floor(3 * 150 / 100) = 4");
	for (int i = 0; i < 6; i++)
		WSubmit(&w, NULL, s, 0, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 4, "allowed: a share uses at most allowed(S,u) = 4 (got %d)",
		  out->ndecisions);
	CHECK(QsAllowed(&w.shares[1], 0) == 20, "allowed: C for LEND");
	w.shares[s].borrow_limit = -1;
	CHECK(QsAllowed(&w.shares[s], 0) == QS_UNBOUNDED, "allowed: unbounded for -1");
}

/* scheduling.md 3.1: RESERVE capacity is never lent; LEND never borrows. */
static void
test_reserve_and_lend(void)
{
	World		w;
	int			b, r, l;
	const QsOutput *out;

	WInit(&w, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	r = WAddShare(&w, "R", QS_RESERVE, -1, false, 1);
	WSubmit(&w, "b1", b, 0, 1);
	WSubmit(&w, "b2", b, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "b1")) && !Dispatched(out, WFind(&w, "b2")),
		  "reserve: a borrower never takes RESERVE capacity");
	(void) r;

	WInit(&w, 2);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WAddShare(&w, "L2", QS_LEND, -1, false, 1);
	WSubmit(&w, "l1", l, 0, 1);
	WSubmit(&w, "l2", l, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "l1")) && !Dispatched(out, WFind(&w, "l2")),
		  "lend: a LEND share never borrows");
}

/* scheduling.md 1 and 3.1: a DISABLED share lends nothing, but its jobs still run. */
static void
test_disabled_share(void)
{
	World		w;
	int			b, d;
	const QsOutput *out;

	WInit(&w, 2);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	d = WAddShare(&w, "D", QS_LEND, -1, false, 1);
	w.shares[d].enabled = false;
	WSubmit(&w, "b1", b, 0, 1);
	WSubmit(&w, "b2", b, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "b1")) && !Dispatched(out, WFind(&w, "b2")),
		  "disabled share: lends nothing");
	WSubmit(&w, "d1", d, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "d1")), "disabled share: its own queued jobs still run");
}

/*
 * Instances held by jobs of a share that no longer exists (its row removed
 * behind the foreign keys) still count in the environment's use (I1).
 */
static void
test_unowned_held(void)
{
	World		w;
	int			a;
	const QsOutput *out;

	WInit(&w, 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.units[0].unowned_held = 2;
	WSubmit(&w, "three", a, 9, 3);
	WSubmit(&w, "two", a, 8, 2);
	out = WPassApply(&w);
	CHECK(!Dispatched(out, WFind(&w, "three")),
		  "unowned: 3 of 4 do not fit beside 2 held by jobs of a missing share");
	CHECK(Dispatched(out, WFind(&w, "two")), "unowned: 2 do");
}

/* scheduling.md 3.2: a job needs all its instances at once; several units. */
static void
test_multi_instance_and_units(void)
{
	World		w;
	int			a, gpu2;
	const QsOutput *out;

	WInit(&w, 4);
	gpu2 = WAddUnit(&w, "ml.p4d.24xlarge", 2);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 4);
	w.capacity[a][gpu2] = 2;
	WSubmit(&w, "big", a, 9, 3);
	WSubmit(&w, "two", a, 8, 2);
	WSubmitUnit(&w, "p4d", a, gpu2, 7, 2);
	WSubmitUnit(&w, "p4d_more", a, gpu2, 6, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "big")), "multi-instance: 3 of 4 instances");
	CHECK(!Dispatched(out, WFind(&w, "two")), "multi-instance: 2 more do not fit in the 1 left");
	CHECK(Dispatched(out, WFind(&w, "p4d")), "units: another unit is counted on its own");
	CHECK(!Dispatched(out, WFind(&w, "p4d_more")), "units: and is full at its own limit");
}

/*
 * scheduling.md 3.2: among the jobs under the cursors, one that fits in its own
 * capacity goes before an older one that must borrow.
 */
static void
test_own_capacity_first(void)
{
	World		w;
	int			x, t;
	const QsOutput *out;
	WJob	   *hold;

	WInit(&w, 2);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	t = WAddShare(&w, "T", QS_LEND, -1, false, 2);
	hold = WSubmit(&w, "x_running", x, 0, 1);
	WPassApply(&w);
	CHECK(hold->state == W_SCHEDULED, "own first: setup");
	WSubmit(&w, "x_borrower", x, 0, 1);
	WSubmit(&w, "t_own", t, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "t_own")),
		  "own first: the later job that fits its own capacity runs");
	CHECK(!Dispatched(out, WFind(&w, "x_borrower")),
		  "own first: the older borrower waits (the environment is full)");
}

/* scheduling.md 3.2: FIFO by (queued_at, id) across shares when nothing fits. */
static void
test_fifo_across_shares(void)
{
	World		w;
	int			a, b;
	const QsOutput *out;

	WInit(&w, 3);
	a = WAddShare(&w, "A", QS_LEND_AND_BORROW, -1, false, 1);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "a_own", a, 0, 1);
	WSubmit(&w, "b_own", b, 0, 1);
	WPassApply(&w);
	WSubmit(&w, "b_borrow", b, 0, 1);
	WSubmit(&w, "a_borrow", a, 0, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "b_borrow")) && !Dispatched(out, WFind(&w, "a_borrow")),
		  "fifo: the older borrower gets the one idle instance");
}

/* scheduling.md 3.2: best effort, and the skip rule bounds what a pass reads. */
static void
test_best_effort_and_skip(void)
{
	World		w;
	int			a;
	const QsOutput *out;

	WInit(&w, 3);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 3);
	WSubmit(&w, "running", a, 9, 2);
	WPassApply(&w);
	WSubmit(&w, "big", a, 5, 2);
	WSubmit(&w, "bigger", a, 4, 3);
	WSubmit(&w, "same", a, 3, 2);
	WSubmit(&w, "small", a, 2, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "small")), "best effort: a small job passes a big one that cannot start");
	CHECK(!WWasRead(&w, WFind(&w, "bigger")) && !WWasRead(&w, WFind(&w, "same")),
		  "skip rule: later jobs needing as many or more instances never come under the cursor");
	CHECK(WWasRead(&w, WFind(&w, "big")), "skip rule: the first job was tried");
}

/*
 * scheduling.md 3.2: a borrower takes no idle capacity that its lenders' own waiting
 * jobs want.
 */
static void
test_wanted_capacity(void)
{
	World		w;
	int			x, y;
	const QsOutput *out;

	WInit(&w, 3);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	y = WAddShare(&w, "Y", QS_LEND, -1, false, 2);
	WSubmit(&w, "x_own", x, 0, 1);
	WPassApply(&w);
	WSubmit(&w, "x_borrow2", x, 0, 2);
	WSubmit(&w, "y_too_big", y, 5, 3);
	WSubmit(&w, "y_small", y, 0, 1);
	out = WPassApply(&w);
	CHECK(!Dispatched(out, WFind(&w, "x_borrow2")),
		  "wanted: the borrower may not take the instance Y's waiting job wants");
	CHECK(Dispatched(out, WFind(&w, "y_small")), "wanted: Y's waiting job runs");

	/* with nothing wanted, the borrower takes the idle capacity */
	WInit(&w, 3);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	y = WAddShare(&w, "Y", QS_LEND, -1, false, 2);
	WSubmit(&w, "x_own", x, 0, 1);
	WPassApply(&w);
	WSubmit(&w, "x_borrow2", x, 0, 2);
	WSubmit(&w, "y_too_big", y, 5, 3);
	out = WPassApply(&w);
	CHECK(Dispatched(out, WFind(&w, "x_borrow2")), "wanted: idle capacity nobody wants is lent");
}

/* scheduling.md 3.7: the limits above which a job is misconfigured. */
static void
test_misconfiguration(void)
{
	World		w;
	int			b, r;
	WJob	   *env, *quota, *fine;

	WInit(&w, 4);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, 100, false, 1);
	r = WAddShare(&w, "R", QS_RESERVE, -1, false, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 1);
	env = WSubmit(&w, "env", b, 0, 5);
	quota = WSubmit(&w, "quota", r, 0, 2);
	fine = WSubmit(&w, "fine", b, 0, 2);
	WPassApply(&w);
	CHECK(env->status_reason && strcmp(env->status_reason, "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE") == 0,
		  "misconfiguration: more than E(u)");
	CHECK(quota->status_reason && strcmp(quota->status_reason, "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED") == 0,
		  "misconfiguration: more than allowed(S,u)");
	CHECK(fine->status_reason == NULL && fine->state == W_SCHEDULED,
		  "misconfiguration: within allowed and reach");
	CHECK(w.out.fit_limits[b * w.nunits].quota_max == 2,
		  "misconfiguration: LEND_AND_BORROW reach is min(allowed, C + lenders + unassigned)");
	w.shares[b].borrow_limit = -1;
	WPassApply(&w);
	CHECK(w.out.fit_limits[b * w.nunits].quota_max == 3,
		  "misconfiguration: reach counts other ENABLED lenders and unassigned capacity (1 + 1 + 1)");
	w.units[0].env_limit = 8;
	w.capacity[r][0] = 2;
	WPassApply(&w);
	CHECK(env->status_reason == NULL || strcmp(env->status_reason, "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE") != 0,
		  "misconfiguration: the reason clears when limits change");
	CHECK(quota->status_reason == NULL, "misconfiguration: clears for the quota reason too");
}

/*
 * scheduling.md 3.8 and 3.10: an expired lease with no stop pending is a
 * lost host, not a failed attempt: back to RUNNABLE with lease_losses + 1,
 * queued_at kept, until lease_losses would exceed max_lease_losses.
 */
static void
test_lease_expiry(void)
{
	World		w;
	int			a;
	WJob	   *job, *other;
	const QsOutput *out;
	QsTime		queued;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	job->j.max_lease_losses = 1;
	queued = job->j.queued_at;
	WPassApply(&w);
	WClaim(&w, job, 10);
	w.now += 5;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "lease: a live lease is kept");
	other = WSubmit(&w, "other", a, 0, 1);
	w.now += 10;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_REQUEUE && out->decisions[0].counter == QS_COUNT_LEASE_LOSS &&
		  strcmp(out->decisions[0].reason, "LEASE_EXPIRED") == 0,
		  "lease: expiry requeues as a lease loss, with max_attempts 1");
	CHECK(Dispatched(out, other), "lease: the freed capacity is used in the same pass");
	CHECK(job->j.queued_at == queued && job->j.failed_attempts == 0 && job->j.lease_losses == 1,
		  "lease: queued_at kept, no failed attempt");
	WEnd(&w, other, W_SUCCEEDED);
	out = WPassApply(&w);
	CHECK(Dispatched(out, job), "lease: the job runs again in a later pass");
	WClaim(&w, job, 10);
	w.now += 20;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_FAIL && job->state == W_FAILED && job->j.lease_losses == 2,
		  "lease: past max_lease_losses the job fails");
}

/*
 * scheduling.md 3.10: with a fence_grace, a lease that ran out is acted on
 * only once the grace has passed since its end (the agent's supervisor has
 * killed the job by then); meanwhile the pass asks to run again when the
 * grace ends (wake_at), and a renewal within the grace keeps the job.
 */
static void
test_fence_grace(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;
	QsTime		end;

	WInit(&w, 1);
	w.fence_grace = 50;
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	WPassApply(&w);
	WClaim(&w, job, 10);
	end = job->j.lease_until;
	w.now = end + 50;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0 && job->state == W_STARTING && job->j.lease_losses == 0,
		  "fence_grace: a lease ran out no more than fence_grace ago is not acted on");
	CHECK(out->wake_at == end + 51, "fence_grace: the pass is to run again when the grace ends");
	WClaim(&w, job, 10);
	w.now += 30;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0 && job->j.lease_losses == 0,
		  "fence_grace: a lease renewed within the grace holds on");
	end = job->j.lease_until;
	w.now = end + 51;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_REQUEUE && out->decisions[0].counter == QS_COUNT_LEASE_LOSS &&
		  strcmp(out->decisions[0].reason, "LEASE_EXPIRED") == 0,
		  "fence_grace: once the grace has passed, a lease loss");
	w.fence_grace = 0;
	WPassApply(&w);
	WClaim(&w, job, 10);
	w.now = job->j.lease_until + 1;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_REQUEUE, "fence_grace 0: at once, as before");
}

/* scheduling.md 3.10: max_lease_losses 0 fails the job on its first lease loss. */
static void
test_lease_expiry_no_losses(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	job->j.max_lease_losses = 0;
	job->j.max_attempts = 5;
	WPassApply(&w);
	WClaim(&w, job, 10);
	w.now += 20;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_FAIL && job->j.failed_attempts == 0,
		  "lease: max_lease_losses 0 fails at once, attempts left or not");
}

/* scheduling.md 3.8: a lease that runs out while a TIMEOUT stop is pending
 * is the timed-out attempt's failure. */
static void
test_lease_expiry_with_timeout(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	job->j.max_attempts = 2;
	WPassApply(&w);
	WClaim(&w, job, 10);
	job->j.stop = QS_STOP_TIMEOUT;
	w.now += 20;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_REQUEUE && out->decisions[0].counter == QS_COUNT_FAILED_ATTEMPT &&
		  job->j.lease_losses == 0, "lease+timeout: the timed-out attempt fails, no lease loss");
}

/* scheduling.md 3.8: a lease expiring while a preemption stop is pending is
 * the stop. */
static void
test_lease_expiry_with_stop(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	WPassApply(&w);
	WClaim(&w, job, 10);
	job->j.stop = QS_STOP_CROSS_SHARE;
	w.now += 20;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_REQUEUE && out->decisions[0].counter == QS_COUNT_PREEMPTION,
		  "lease+stop: counts as the preemption, not a failure");
	CHECK(job->j.failed_attempts == 0 && job->j.preemption_count == 1,
		  "lease+stop: preemption_count + 1");
}

/* scheduling.md 3.8: a timeout requests a stop; the attempt fails when it stops. */
static void
test_timeout(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "job", a, 0, 1);
	job->j.max_attempts = 3;
	WPassApply(&w);
	WClaim(&w, job, 1000);
	job->state = W_RUNNING;
	job->j.state = QS_RUNNING;
	job->j.deadline = w.now + 50;
	w.now += 49;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "timeout: not before the deadline");
	w.now += 1;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_STOP && out->decisions[0].stop == QS_STOP_TIMEOUT,
		  "timeout: a stop is requested with stop_reason TIMEOUT");
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "timeout: requested once");
	WStopped(&w, job);
	CHECK(job->state == W_RUNNABLE && job->j.failed_attempts == 1,
		  "timeout: the attempt fails when it stops");
}

/* scheduling.md 3.9: runnable timeout of misconfigured jobs. */
static void
test_runnable_timeout(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 1);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 1);
	job = WSubmit(&w, "too_big", a, 0, 2);
	w.runnable_timeout = 100;
	WPassApply(&w);
	CHECK(job->status_reason != NULL, "runnable timeout: misconfigured");
	w.now += 100;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 0, "runnable timeout: not before it elapses");
	w.now += 1;
	out = WPassApply(&w);
	CHECK(ActionFor(out, job) == QS_FAIL && job->state == W_FAILED,
		  "runnable timeout: the job fails");
}

/* scheduling.md 3.6: stops of preempted, terminated and timed-out jobs. */
static void
test_stopped_outcomes(void)
{
	QsJob		j;
	QsStopOutcome o;

	memset(&j, 0, sizeof(j));
	j.max_attempts = 1;
	j.preemption_retries = 0;
	j.stop = QS_STOP_CROSS_SHARE;
	o = QsStoppedOutcome(&j);
	CHECK(o.action == QS_FAIL, "stopped: preemption_retries 0 fails on the first preemption");
	j.preemption_retries = 2;
	j.preemption_count = 1;
	o = QsStoppedOutcome(&j);
	CHECK(o.action == QS_REQUEUE && o.counter == QS_COUNT_PREEMPTION,
		  "stopped: within preemption_retries it is requeued");
	j.preemption_count = 2;
	CHECK(QsStoppedOutcome(&j).action == QS_FAIL, "stopped: beyond preemption_retries it fails");
	j.preemption_retries = -1;
	j.preemption_count = 1000;
	CHECK(QsStoppedOutcome(&j).action == QS_REQUEUE, "stopped: null preemption_retries is unlimited");
	j.stop = QS_STOP_TERMINATED;
	CHECK(QsStoppedOutcome(&j).action == QS_FAIL, "stopped: a terminated job fails");
	j.stop = QS_STOP_TIMEOUT;
	j.max_attempts = 2;
	o = QsStoppedOutcome(&j);
	CHECK(o.action == QS_REQUEUE && o.counter == QS_COUNT_FAILED_ATTEMPT,
		  "stopped: a timeout is a failed attempt");
}

/*
 * scheduling.md 3.2 and 3.6: a job may be dispatched only if the invariants hold
 * also once pending stops complete and promises are kept.
 */
static void
test_future_state(void)
{
	World		w;
	int			x, l;
	WJob	   *victim, *promised, *other;
	const QsOutput *out;

	WInit(&w, 2);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "x_own", x, 0, 1);
	victim = WSubmit(&w, "x_borrow", x, 0, 1);
	WPassApply(&w);
	CHECK(victim->state == W_SCHEDULED, "future: setup, X borrows L's instance");
	promised = WSubmit(&w, "l_job", l, 0, 1);
	WClaim(&w, victim, 1000);
	victim->j.stop = QS_STOP_CROSS_SHARE;
	victim->j.preempted_for = promised->j.id;
	promised->j.promised_at = w.now;
	out = WPassApply(&w);
	CHECK(!Dispatched(out, promised), "future: the promised job waits for its victim");
	WStopped(&w, victim);
	other = WSubmit(&w, "x_again", x, 9, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, promised), "future: once the victim stopped, the promised job runs first");
	CHECK(!Dispatched(out, other) && !Dispatched(out, victim),
		  "future: nobody else takes the promised room");
}

/*
 * scheduling.md 3.6: room that is free now but promised for later is not taken: the
 * future state (victims gone, promised jobs holding) must hold too.
 */
static void
test_future_state_blocks(void)
{
	World		w;
	int			x, l;
	WJob	   *victim, *promised, *other;
	const QsOutput *out;

	WInit(&w, 3);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 2);
	WSubmit(&w, "x_own", x, 0, 1);
	victim = WSubmit(&w, "x_borrow", x, 0, 1);
	WPassApply(&w);
	promised = WSubmit(&w, "l_pair", l, 0, 2);
	WClaim(&w, victim, 1000);
	victim->j.stop = QS_STOP_CROSS_SHARE;
	victim->j.preempted_for = promised->j.id;
	promised->j.promised_at = w.now;
	other = WSubmit(&w, "x_more", x, 0, 1);
	out = WPassApply(&w);
	CHECK(!Dispatched(out, other),
		  "future: an instance idle now but promised once the victim stops is not lent");
	CHECK(!Dispatched(out, promised), "future: the promised job still waits for its victim");
}

/*
 * scheduling.md 3.6: once its victims have all stopped, a promised job is dispatched
 * before any other job, even one ahead of it in its share.
 */
static void
test_promised_first(void)
{
	World		w;
	int			x, l;
	WJob	   *victim, *promised, *urgent;
	const QsOutput *out;

	WInit(&w, 2);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	WSubmit(&w, "x_own", x, 0, 1);
	victim = WSubmit(&w, "x_borrow", x, 0, 1);
	WPassApply(&w);
	promised = WSubmit(&w, "l_job", l, 0, 1);
	promised->j.promised_at = w.now;
	victim->j.preempted_for = promised->j.id;
	WStopped(&w, victim);
	victim->state = W_SUCCEEDED;	/* out of the way */
	urgent = WSubmit(&w, "l_urgent", l, 10, 1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, promised) && !Dispatched(out, urgent),
		  "promised first: the promised job runs before a job ahead of it in its share");
}

/* scheduling.md 3.6: promises lapse when the job could no longer start. */
static void
test_promise_lapses(void)
{
	World		w;
	int			l;
	WJob	   *promised;
	const QsOutput *out;

	WInit(&w, 2);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 1);
	promised = WSubmit(&w, "big", l, 0, 1);
	promised->j.promised_at = w.now;
	w.capacity[l][0] = 0;		/* the admin took the share's capacity away */
	out = WPassApply(&w);
	CHECK(out->nlapsed == 1 && out->lapsed[0] == promised->j.id,
		  "promise: lapses when the job could not start");
	CHECK(promised->j.promised_at == QS_NO_TIME, "promise: promised_at cleared");
}

/* scheduling.md 1: a DISABLED environment dispatches nothing; timeouts still happen. */
static void
test_disabled_environment(void)
{
	World		w;
	int			a;
	WJob	   *running, *waiting;
	const QsOutput *out;

	WInit(&w, 2);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 2);
	running = WSubmit(&w, "running", a, 0, 1);
	WPassApply(&w);
	WClaim(&w, running, 10);
	waiting = WSubmit(&w, "waiting", a, 0, 1);
	w.env_enabled = false;
	w.now += 20;
	out = WPassApply(&w);
	CHECK(!Dispatched(out, waiting), "disabled environment: nothing is dispatched");
	CHECK(ActionFor(out, running) == QS_REQUEUE && running->j.lease_losses == 1,
		  "disabled environment: leases still expire");
}

/*
 * scheduling.md 3.2 (new in 0.2): a STRICT share keeps its order per unit:
 * a job not dispatched makes the pass skip every later job of the share
 * needing that unit, so smaller later jobs do not take the room a big one
 * waits for; BEST_EFFORT lets them through.
 */
static void
test_strict_queueing(void)
{
	for (int strict = 0; strict <= 1; strict++)
	{
		World		w;
		int			s, other;
		WJob	   *big, *small, *other_unit;
		const QsOutput *out;

		WInit(&w, 4);
		WAddUnit(&w, "ml.p4d.24xlarge", 1);
		s = WAddShare(&w, "S", QS_RESERVE, -1, false, 4);
		w.capacity[s][1] = 1;
		w.shares[s].strict = strict;
		other = WAddShare(&w, "O", QS_RESERVE, -1, false, 0);
		(void) other;
		WSubmit(&w, "running", s, 0, 2);
		WPassApply(&w);
		big = WSubmit(&w, "big", s, 9, 4);
		small = WSubmit(&w, "small", s, 0, 1);
		other_unit = WSubmitUnit(&w, "other_unit", s, 1, 0, 1);
		out = WPassApply(&w);
		CHECK(!Dispatched(out, big), "%s: the big job does not fit yet",
			  strict ? "STRICT" : "BEST_EFFORT");
		if (strict)
			CHECK(!Dispatched(out, small), "STRICT: the later small job waits behind the big one");
		else
			CHECK(Dispatched(out, small), "BEST_EFFORT: the later small job starts in the room");
		CHECK(Dispatched(out, other_unit), "%s: a job needing another unit is not held back",
			  strict ? "STRICT" : "BEST_EFFORT");
	}
}

/*
 * scheduling.md 3.1 (new in 0.2): a lender lends at most lendable(S,u) =
 * floor(C(S,u) * lend_limit / 100) of its idle capacity; the
 * misconfiguration limit counts lendable capacity.
 */
static void
test_lend_limit(void)
{
	World		w;
	int			b, l;
	const QsOutput *out;

	WInit(&w, 5);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 5);
	w.shares[l].lend_limit = 50;
	CHECK(QsLendable(&w.shares[l], 0) == 2, "lend_limit: lendable = floor(5 * 50 / 100) = 2");
	for (int i = 0; i < 4; i++)
		WSubmit(&w, NULL, b, 0, 1);
	out = WPassApply(&w);
	CHECK(out->ndecisions == 2, "lend_limit: B borrows 2 of L's 5 idle instances (got %d)",
		  out->ndecisions);
	CHECK(out->fit_limits[b * w.nunits].quota_max == 2,
		  "lend_limit: B's jobs above 2 instances are misconfigured (got %lld)",
		  (long long) out->fit_limits[b * w.nunits].quota_max);
	w.shares[l].lend_limit = 0;
	CHECK(QsLendable(&w.shares[l], 0) == 0, "lend_limit: 0 lends nothing");
	w.shares[l].lend_limit = -1;
	out = WPassApply(&w);
	CHECK(out->ndecisions == 2, "lend_limit: -1 lends all idle capacity: two more start");
}

/*
 * scheduling.md 3.2 (new in 0.2): with borrow_order FAIR, among jobs that
 * must borrow, the one whose share would borrow the least per unit of
 * weight starts first; FIFO takes the least (queued_at, id).
 */
static void
test_fair_borrow_order(void)
{
	for (int fair = 0; fair <= 1; fair++)
	{
		World		w;
		int			a, b;
		WJob	   *early, *late;
		const QsOutput *out;

		WInit(&w, 9);
		w.fair = fair;
		a = WAddShare(&w, "A", QS_LEND_AND_BORROW, -1, false, 1);
		b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 1);
		WAddShare(&w, "L", QS_LEND, -1, false, 7);
		w.shares[b].weight = 3;
		for (int i = 0; i < 3; i++)
		{
			WSubmit(&w, NULL, a, 0, 1);
			WSubmit(&w, NULL, b, 0, 1);
		}
		WPassApply(&w);			/* each share holds 3: borrows 2 */
		w.capacity[2][0] = 1;	/* L lends one more instance only */
		w.units[0].env_limit = 7;
		early = WSubmit(&w, "early", a, 0, 1);
		late = WSubmit(&w, "late", b, 0, 1);
		out = WPassApply(&w);
		if (fair)
			CHECK(Dispatched(out, late) && !Dispatched(out, early),
				  "FAIR: B (weight 3) would borrow 3/3 < A's 3/1: B's later job starts");
		else
			CHECK(Dispatched(out, early) && !Dispatched(out, late),
				  "FIFO: the earlier job starts");
	}
}

/*
 * scheduling.md 3.2, explain: the numbers behind NO_BORROWABLE_SUPPLY are
 * those the check counts, each lender's idle capacity less what its own
 * waiting jobs want, at most its lendable capacity; RESERVE and DISABLED
 * shares are no lenders.
 */
static void
test_explain_supply_numbers(void)
{
	World		w;
	int			x, y, z, d;
	WJob	   *big;
	QsWhy		why;

	WInit(&w, 9);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	y = WAddShare(&w, "Y", QS_LEND, -1, false, 2);
	z = WAddShare(&w, "Z", QS_LEND_AND_BORROW, -1, false, 3);
	WAddShare(&w, "R", QS_RESERVE, -1, false, 1);
	d = WAddShare(&w, "D", QS_LEND, -1, false, 1);
	w.shares[z].lend_limit = 50;
	w.shares[d].enabled = false;
	WSubmit(&w, "x_own", x, 0, 1);
	WSubmit(&w, "z_run", z, 0, 1);
	WPassApply(&w);
	WSubmit(&w, "y_wait", y, 0, 1);
	big = WSubmit(&w, "x_big", x, 0, 4);
	why = WExplain(&w, big);
	CHECK(why.check == QS_CHECK_SUPPLY && why.must_borrow && !why.in_future,
		  "explain supply: x_big must borrow, and the supply is short now");
	CHECK(why.usage == 1 && why.unassigned == 1 && why.borrowed == 4 && why.supply == 3 &&
		  why.share_lends == 0,
		  "explain supply: usage 1, unassigned 1, borrowed 4 > supply 3 (got %lld %lld %lld %lld)",
		  (long long) why.usage, (long long) why.unassigned, (long long) why.borrowed,
		  (long long) why.supply);
	CHECK(why.nlenders == 2 && why.lenders[0].share == y && why.lenders[1].share == z,
		  "explain supply: the lenders are Y and Z, most lendable idle first (got %d)",
		  why.nlenders);
	if (why.nlenders == 2)
	{
		const QsWhyLender *ly = &why.lenders[0];
		const QsWhyLender *lz = &why.lenders[1];

		CHECK(ly->capacity == 2 && ly->usage == 0 && ly->idle == 2 && ly->lendable_idle == 2 &&
			  ly->wanted == 1 && ly->lends == 1,
			  "explain supply: Y's waiting job wants 1 of its 2 idle: it lends 1 (got %lld %lld)",
			  (long long) ly->wanted, (long long) ly->lends);
		CHECK(lz->capacity == 3 && lz->usage == 1 && lz->idle == 2 && lz->lendable_idle == 1 &&
			  lz->wanted == 0 && lz->lends == 1,
			  "explain supply: Z lends at most lendable(S,u) = 1 of its 2 idle (got %lld %lld)",
			  (long long) lz->lendable_idle, (long long) lz->lends);
	}
}

/*
 * explain: the numbers of (I2) and (I1); the environment's usage counts the
 * instances held by jobs of shares that do not exist.
 */
static void
test_explain_limit_numbers(void)
{
	World		w;
	int			b, a;
	WJob	   *job;
	QsWhy		why;

	WInit(&w, 10);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, 100, false, 1);
	WAddShare(&w, "L", QS_LEND, -1, false, 4);
	WSubmit(&w, "b_1", b, 0, 1);
	WSubmit(&w, "b_2", b, 0, 1);
	WPassApply(&w);
	job = WSubmit(&w, "b_3", b, 0, 1);
	why = WExplain(&w, job);
	CHECK(why.check == QS_CHECK_ALLOWED && why.usage == 2 && why.allowed == 2 && why.nlenders == 0,
		  "explain allowed: B holds 2 of its allowed 2 (got %lld of %lld)",
		  (long long) why.usage, (long long) why.allowed);

	WInit(&w, 3);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 2);
	WAddShare(&w, "L", QS_LEND, -1, false, 2);
	w.units[0].unowned_held = 1;
	WSubmit(&w, "a_1", a, 0, 1);
	WSubmit(&w, "l_1", 1, 0, 1);
	WPassApply(&w);
	job = WSubmit(&w, "a_2", a, 0, 1);
	why = WExplain(&w, job);
	CHECK(why.check == QS_CHECK_ENVIRONMENT && why.env_usage == 3 && why.usage == 1,
		  "explain environment: E(u) = 3 held, 1 by a missing share's job (got %lld)",
		  (long long) why.env_usage);
}

/*
 * explain: a check that fails only in the future state gives that state's
 * numbers (the victim gone, the promised job holding its instances).
 */
static void
test_explain_future_numbers(void)
{
	World		w;
	int			x, l;
	WJob	   *victim, *promised, *other;
	QsWhy		why;

	WInit(&w, 3);
	x = WAddShare(&w, "X", QS_LEND_AND_BORROW, -1, false, 1);
	l = WAddShare(&w, "L", QS_LEND, -1, false, 2);
	WSubmit(&w, "x_own", x, 0, 1);
	victim = WSubmit(&w, "x_borrow", x, 0, 1);
	WPassApply(&w);
	promised = WSubmit(&w, "l_pair", l, 0, 2);
	WClaim(&w, victim, 1000);
	victim->j.stop = QS_STOP_CROSS_SHARE;
	victim->j.preempted_for = promised->j.id;
	promised->j.promised_at = w.now;
	other = WSubmit(&w, "x_more", x, 0, 1);
	why = WExplain(&w, other);
	CHECK(why.check == QS_CHECK_ENVIRONMENT && why.in_future && why.must_borrow,
		  "explain future: x_more waits on the environment once the victim stops");
	CHECK(why.usage == 1 && why.env_usage == 3,
		  "explain future: X holds 1 then (2 now), and with L's promised 2 the "
		  "environment's 3 are held (2 now) (got %lld %lld)",
		  (long long) why.usage, (long long) why.env_usage);
}

/*
 * The words of every kind (words.h): each a name of capital letters, digits,
 * '_' and ':', none twice in its kind; a name gives its value back, and a
 * name that is none of the kind's words (a lower-case one, an empty one)
 * gives none.  The words that two kinds share mean the same: a report of
 * RUNNING, SUCCEEDED or FAILED is that job state, a hold is explain's
 * blocked_by of the same name, and so is MISCONFIGURATION of the reasons.
 */
static void
test_words(void)
{
	int			bad = 0;
	int			v;

	for (int k = 0; k < QS_KIND__COUNT; k++)
	{
		int			first = QsKindFirst((QsWordKind) k);

		for (int i = 0; i < QsKindWords((QsWordKind) k); i++)
		{
			const char *name = QsWordName((QsWordKind) k, first + i);

			bad += name == NULL || name[0] == '\0' ||
				strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_:") != strlen(name) ||
				!QsWordFromName((QsWordKind) k, name, &v) || v != first + i;
		}
		bad += QsWordFromName((QsWordKind) k, "", &v) ||
			QsWordFromName((QsWordKind) k, "running", &v);
	}
	CHECK(bad == 0, "every word has a name of its own in its kind, and only its names are words");
	CHECK(QsKindFromName("stop_reason", (QsWordKind *) &v) && v == QS_KIND_STOP_REASON &&
		  strcmp(QsStopName(QS_STOP_TERMINATED), "TERMINATED") == 0 &&
		  QsStopName(QS_STOP_NONE) == NULL && QsHoldName(QS_HOLD_NONE) == NULL,
		  "a kind by its name; the stops and holds after their none");
	bad = 0;
	for (int r = QS_REPORT_RUNNING; r <= QS_REPORT_FAILED; r++)
		bad += !QsWordFromName(QS_KIND_JOB_STATE, QsReportName((QsReport) r), &v);
	for (int h = QS_HOLD_NONE + 1; h <= QS_HOLD__COUNT; h++)
		bad += !QsWordFromName(QS_KIND_BLOCKED_BY, QsHoldName((QsHold) h), &v);
	bad += strcmp(QsReasonName(QS_REASON_MISCONFIGURATION),
				  QsBlockedName(QS_BLOCKED_MISCONFIGURATION)) != 0;
	CHECK(bad == 0, "the words two kinds share name the same thing");
}

int
main(void)
{
	test_words();
	test_seed_step1();
	test_allowed_rounding();
	test_reserve_and_lend();
	test_disabled_share();
	test_unowned_held();
	test_multi_instance_and_units();
	test_own_capacity_first();
	test_fifo_across_shares();
	test_best_effort_and_skip();
	test_wanted_capacity();
	test_misconfiguration();
	test_lease_expiry();
	test_lease_expiry_no_losses();
	test_fence_grace();
	test_lease_expiry_with_timeout();
	test_lease_expiry_with_stop();
	test_timeout();
	test_runnable_timeout();
	test_stopped_outcomes();
	test_future_state();
	test_future_state_blocks();
	test_promised_first();
	test_promise_lapses();
	test_disabled_environment();
	test_strict_queueing();
	test_lend_limit();
	test_fair_borrow_order();
	test_explain_supply_numbers();
	test_explain_limit_numbers();
	test_explain_future_numbers();
	return TapDone();
}
