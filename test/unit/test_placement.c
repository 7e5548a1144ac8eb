/*-------------------------------------------------------------------------
 *
 * test_placement.c
 *		Unit tests of placement in the policy core (scheduling.md 3.13):
 *		best fit, instances_per_host, the fewest hosts, host groups by a
 *		label and the choice of a group, ranks, jobs held back because no
 *		placement could ever exist, WAITING_FOR_HOSTS, victims chosen for a
 *		placement, the placement a promise reserves and keeps, the skip rule
 *		kept per placement constraints, and units that are not placed.
 *		Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

/* A queue of one RESERVE share of `cap` with hosts a, b (c, d) of 4 each. */
static int
TwoHosts(World *w, int64_t cap, int nhosts)
{
	static const char *const names[] = {"a", "b", "c", "d"};

	WInit(w, cap);
	for (int h = 0; h < nhosts; h++)
		WAddHost(w, 0, names[h], 4);
	return WAddShare(w, "A", QS_RESERVE, -1, false, cap);
}

static WJob *
Constrained(World *w, const char *name, int share, int32_t count, int32_t per_host,
			const char *same_label)
{
	WJob	   *job = WSubmit(w, name, share, 0, count);

	job->j.per_host = per_host;
	job->j.same_label = same_label;
	return job;
}

/* Best fit keeps a 4-instance hole whole for a 4-instance job. */
static void
test_best_fit(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *first = WSubmit(&w, "first", a, 0, 2);
	WJob	   *second, *whole;

	WPassApply(&w);
	CHECK(WPartOn(first, "a") == 2 && first->nparts == 1,
		  "best fit: a tie goes to the least name");
	second = WSubmit(&w, "second", a, 0, 1);
	WPassApply(&w);
	CHECK(WPartOn(second, "a") == 1, "best fit: the host with the least free that holds it");
	whole = WSubmit(&w, "whole", a, 0, 4);
	WPassApply(&w);
	CHECK(whole->state == W_SCHEDULED && WPartOn(whole, "b") == 4,
		  "best fit: the 4-instance hole stayed whole for a 4-instance job");
}

/* instances_per_host: k on each of the n/k hosts with the least free >= k. */
static void
test_per_host(void)
{
	World		w;
	int			a = TwoHosts(&w, 16, 4);
	WJob	   *small = WSubmit(&w, "small", a, 0, 1);
	WJob	   *big;

	WPassApply(&w);				/* small on a: a has 3 free */
	big = Constrained(&w, "big", a, 8, 4, NULL);
	WPassApply(&w);
	CHECK(big->state == W_SCHEDULED && big->nparts == 2 && WPartOn(big, "b") == 4 &&
		  WPartOn(big, "c") == 4, "per_host: two parts of 4, on the least names with 4 free");
	CHECK(WPartOn(small, "a") == 1, "per_host: the host with 3 free was not used");
	big = Constrained(&w, "pairs", a, 4, 2, NULL);
	WPassApply(&w);
	CHECK(big->nparts == 2 && WPartOn(big, "a") == 2 && WPartOn(big, "d") == 2,
		  "per_host: the least free that is at least k first (a with 3, then d with 4)");
}

/* No one host holds it: by free descending, the fewest hosts; ranks. */
static void
test_fewest_hosts(void)
{
	World		w;
	int			a = TwoHosts(&w, 16, 3);
	WJob	   *one = WSubmit(&w, "one", a, 0, 1);
	WJob	   *two = WSubmit(&w, "two", a, 0, 2);
	WJob	   *six;

	WPassApply(&w);				/* one and two on a (best fit): a 1 free, b, c 4 */
	CHECK(WPartOn(one, "a") == 1 && WPartOn(two, "a") == 2, "fewest hosts: the small ones share a");
	six = WSubmit(&w, "six", a, 0, 6);
	WPassApply(&w);
	CHECK(six->nparts == 2 && WPartOn(six, "b") == 4 && WPartOn(six, "c") == 2,
		  "fewest hosts: b gives its 4, c the rest");
	CHECK(strcmp(six->parts[0].host, "b") == 0 && strcmp(six->parts[1].host, "c") == 0,
		  "ranks: the most instances first");
}

/* Label groups: the fewest hosts, then the least free, then the least value. */
static void
test_same_label(void)
{
	World		w;
	int			a;
	WJob	   *job, *big;

	WInit(&w, 40);
	WLabel(WAddHost(&w, 0, "h1", 4), "rack", "r2");
	WLabel(WAddHost(&w, 0, "h2", 4), "rack", "r2");
	WLabel(WAddHost(&w, 0, "h3", 4), "rack", "r1");
	WLabel(WAddHost(&w, 0, "h4", 4), "rack", "r1");
	WLabel(WAddHost(&w, 0, "h5", 4), "rack", "r1");
	WAddHost(&w, 0, "h6", 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 40);
	job = Constrained(&w, "job", a, 8, 0, "rack");
	WPassApply(&w);
	CHECK(job->nparts == 2 && WPartOn(job, "h1") == 4 && WPartOn(job, "h2") == 4,
		  "same_label: r2, with less free in all than r1, and never the unlabelled h6");
	big = Constrained(&w, "big", a, 12, 0, "rack");
	WPassApply(&w);
	CHECK(big->nparts == 3 && WPartOn(big, "h3") == 4 && WPartOn(big, "h5") == 4,
		  "same_label: only r1 can hold 12");
	job = WSubmit(&w, "free", a, 0, 8);
	WPassApply(&w);
	CHECK(WPartOn(job, "h6") == 8, "no same_label: any host");
}

/* Ties between groups go to the least label value. */
static void
test_label_tie(void)
{
	World		w;
	int			a;
	WJob	   *job;

	WInit(&w, 16);
	WLabel(WAddHost(&w, 0, "h1", 4), "nvlink", "y");
	WLabel(WAddHost(&w, 0, "h2", 4), "nvlink", "x");
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 16);
	job = Constrained(&w, "job", a, 4, 0, "nvlink");
	WPassApply(&w);
	CHECK(WPartOn(job, "h2") == 4, "same_label: a tie goes to the least value");
}

/* No placement were every host empty: held back NO_AGENT_FITS, not tried. */
static void
test_held_back(void)
{
	World		w;
	int			a = TwoHosts(&w, 32, 2);
	WJob	   *nine = WSubmit(&w, "nine", a, 0, 9);
	WJob	   *per = Constrained(&w, "per", a, 12, 4, NULL);
	WJob	   *eight = WSubmit(&w, "eight", a, 0, 8);
	const QsOutput *out = WPassApply(&w);

	CHECK(WDecisionFor(out, nine) == NULL && strcmp(nine->status_reason, "NO_AGENT_FITS") == 0,
		  "held back: 9 on two hosts of 4");
	CHECK(WDecisionFor(out, per) == NULL && strcmp(per->status_reason, "NO_AGENT_FITS") == 0,
		  "held back: three hosts of 4 wanted, two there");
	CHECK(Dispatched(out, eight) && eight->nparts == 2,
		  "held back: not tried, the 8 behind them runs on both hosts");
	CHECK(out->fit_limits[0].agent_max == 8, "held back: the fit limit is the hosts' instances");
	WAddHost(&w, 0, "c", 4);
	WEnd(&w, eight, W_SUCCEEDED);
	WEnd(&w, nine, W_FAILED);
	out = WPassApply(&w);
	CHECK(Dispatched(out, per) && per->nparts == 3, "held back: a third host, and it runs");
}

/* Capacity would dispatch it, but no host has room: WAITING_FOR_HOSTS. */
static void
test_waiting_for_hosts(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *x = WSubmit(&w, "x", a, 0, 3);
	WJob	   *y = WSubmit(&w, "y", a, 0, 3);
	WJob	   *job;
	const QsOutput *out;

	WPassApply(&w);				/* x on a, y on b: 1 free on each */
	job = Constrained(&w, "job", a, 2, 2, NULL);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, job) == NULL && job->status_reason != NULL &&
		  strcmp(job->status_reason, "WAITING_FOR_HOSTS") == 0,
		  "waiting for hosts: capacity has room, no host has 2");
	CHECK(out->nhost_reasons == 1 && out->host_reasons[0].reason != NULL && strcmp(out->host_reasons[0].reason, "WAITING_FOR_HOSTS") == 0, "waiting for hosts: told");
	WEnd(&w, x, W_SUCCEEDED);
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && WPartOn(job, "a") == 2 && job->status_reason == NULL,
		  "waiting for hosts: dispatched once a has room, the reason gone");
	(void) y;
}

/*
 * A pass that tries a job WAITING_FOR_HOSTS with another outcome replaces
 * the reason (scheduling.md 3.13), also once its unit is no longer placed.
 */
static void
test_waiting_unit_not_placed(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *x = WSubmit(&w, "x", a, 0, 3);
	WJob	   *y = WSubmit(&w, "y", a, 0, 3);
	WJob	   *job;
	const QsOutput *out;

	WPassApply(&w);				/* x on a, y on b: 1 free on each */
	job = Constrained(&w, "job", a, 2, 2, NULL);
	WPassApply(&w);
	CHECK(job->status_reason != NULL && strcmp(job->status_reason, "WAITING_FOR_HOSTS") == 0,
		  "not placed any more: the job waited for hosts");
	w.units[0].placed = false;	/* an unbounded agent came */
	w.capacity[a][0] = 7;		/* 6 held: the job of 2 does not fit */
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, job) == NULL && job->status_reason == NULL,
		  "not placed any more: tried, not dispatched, the reason is gone");
	(void) x;
	(void) y;
}

/* A host whose job is stopping is not free yet: the job waits for it. */
static void
test_placement_now(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 1);
	WJob	   *x = WSubmit(&w, "x", a, 0, 4);
	WJob	   *job;
	const QsOutput *out;

	WPassApply(&w);
	ClaimAll(&w);
	x->j.stop = QS_STOP_TIMEOUT;
	job = WSubmit(&w, "job", a, 0, 4);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, job) == NULL && strcmp(job->status_reason, "WAITING_FOR_HOSTS") == 0,
		  "placement now: the host of a stopping job is not free before it stops");
	WStopped(&w, x);
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && WPartOn(job, "a") == 4, "placement now: dispatched once it stopped");
}

/*
 * A job within its share's own capacity that has no placement reclaims
 * the borrower holding the host it needs; the promise reserves it.
 */
static void
test_victims_for_placement(void)
{
	World		w;
	int			a, b;
	WJob	   *b1, *b2, *job;
	const QsOutput *out;
	const QsDecision *d;

	WInit(&w, 8);
	WAddHost(&w, 0, "a", 4);
	WAddHost(&w, 0, "b", 4);
	a = WAddShare(&w, "A", QS_LEND, -1, false, 8);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	b1 = WSubmit(&w, "b1", b, 0, 3);
	WPassApply(&w);
	b2 = WSubmit(&w, "b2", b, 0, 3);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(WPartOn(b1, "a") == 3 && WPartOn(b2, "b") == 3, "victims: the borrowers on a and b");
	job = Constrained(&w, "job", a, 2, 2, NULL);
	out = WPassApply(&w);
	d = WDecisionFor(out, b2);
	CHECK(d != NULL && d->action == QS_PREEMPT && WDecisionFor(out, b1) == NULL,
		  "victims: capacity has room, the placement needs the last borrower's host");
	CHECK(job->j.promised_at != QS_NO_TIME && WPartOn(job, "b") == 2,
		  "victims: the promise reserves b");
	WStopped(&w, b2);
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && WPartOn(job, "b") == 2, "victims: dispatched on b");
}

/*
 * A reservation holds its host against other jobs: a job that best fit
 * would put in the room made for a promise waits instead.
 */
static void
test_reservation(void)
{
	World		w;
	int			a, b, c;
	WJob	   *b1, *c1, *job, *other;
	const QsOutput *out;

	WInit(&w, 9);
	WAddHost(&w, 0, "a", 4);
	WAddHost(&w, 0, "b", 4);
	a = WAddShare(&w, "A", QS_LEND, -1, false, 4);
	b = WAddShare(&w, "B", QS_LEND_AND_BORROW, -1, false, 0);
	c = WAddShare(&w, "C", QS_RESERVE, -1, false, 5);
	b1 = WSubmit(&w, "b1", b, 0, 2);
	WPassApply(&w);
	c1 = WSubmit(&w, "c1", c, 0, 3);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(WPartOn(b1, "a") == 2 && WPartOn(c1, "b") == 3, "reservation: b1 on a, c1 on b");
	job = Constrained(&w, "job", a, 4, 4, NULL);
	out = WPassApply(&w);
	CHECK(ActionFor(out, b1) == QS_PREEMPT && WPartOn(job, "a") == 4 && out->nreserved == 1,
		  "reservation: the borrower on a stops, a is reserved");
	other = WSubmit(&w, "other", c, 0, 2);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, other) == NULL && strcmp(other->status_reason, "WAITING_FOR_HOSTS") == 0,
		  "reservation: C's job of 2 does not take the room reserved on a");
	CHECK(out->nreserved == 0 && WPartOn(job, "a") == 4,
		  "reservation: kept at the re-check, nothing new to write");
	WStopped(&w, b1);
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && WPartOn(job, "a") == 4, "reservation: dispatched where reserved");
}

/*
 * A promise whose reserved host went is placed anew at the re-check (in the
 * future state: c, whose stopping job frees 2) and dispatched in the same
 * pass on a placement of now (a): the reservation is not written, and the
 * job's parts are its dispatch's.
 */
static void
test_replaced_then_dispatched(void)
{
	World		w;
	int			a;
	WJob	   *s1, *s2, *job;
	const QsOutput *out;
	static const QsPart gone[] = {{"b", 2, QS_NO_TIME, false}};

	WInit(&w, 12);
	WAddHost(&w, 0, "c", 4);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 12);
	s1 = WSubmit(&w, "s1", a, 0, 2);
	s2 = WSubmit(&w, "s2", a, 0, 2);
	WPassApply(&w);
	ClaimAll(&w);
	CHECK(WPartOn(s1, "c") == 2 && WPartOn(s2, "c") == 2, "replaced: s1 and s2 on c");
	WAddHost(&w, 0, "a", 4);
	s1->j.stop = QS_STOP_TIMEOUT;
	job = WSubmit(&w, "job", a, 0, 2);
	job->j.promised_at = w.now;	/* its promise reserved b, which went */
	job->parts = gone;
	job->nparts = 1;
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && WPartOn(job, "a") == 2 && job->nparts == 1,
		  "replaced: dispatched on a; its parts are its dispatch's");
	CHECK(out->nreserved == 0, "replaced: no reservation written for a job dispatched");
	(void) s2;
}

/* The skip rule holds only between jobs with the same constraints. */
static void
test_skip_by_constraints(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *x = WSubmit(&w, "x", a, 0, 3);
	WJob	   *y = WSubmit(&w, "y", a, 0, 3);
	WJob	   *pair, *any;
	const QsOutput *out;

	WPassApply(&w);				/* 1 free on a and on b */
	pair = Constrained(&w, "pair", a, 2, 2, NULL);
	any = WSubmit(&w, "any", a, 0, 2);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, pair) == NULL && Dispatched(out, any) && any->nparts == 2,
		  "skip rule: a failed per_host job says nothing about a later job without one");
	(void) x;
	(void) y;
}

/* STRICT keeps the unit in order whatever the constraints. */
static void
test_strict(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *x = WSubmit(&w, "x", a, 0, 3);
	WJob	   *y = WSubmit(&w, "y", a, 0, 3);
	WJob	   *pair, *any;
	const QsOutput *out;

	w.shares[a].strict = true;
	WPassApply(&w);
	pair = Constrained(&w, "pair", a, 2, 2, NULL);
	any = WSubmit(&w, "any", a, 0, 2);
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, pair) == NULL && WDecisionFor(out, any) == NULL,
		  "strict: the job behind the waiting one waits too");
	(void) x;
	(void) y;
}

/* A unit that is not placed ignores placement constraints. */
static void
test_not_placed(void)
{
	World		w;
	int			a;
	WJob	   *job;
	const QsOutput *out;

	WInit(&w, 8);
	a = WAddShare(&w, "A", QS_RESERVE, -1, false, 8);
	job = Constrained(&w, "job", a, 8, 4, "rack");
	out = WPassApply(&w);
	CHECK(Dispatched(out, job) && job->nparts == 0 && out->nhost_reasons == 0,
		  "not placed: dispatched with no parts, whatever its constraints");
}

/* Leases per part: SetLeases gives each part of a job a lease. */
static void
SetLeases(WJob *job, QsTime lease_a, QsTime lease_b)
{
	QsPart	   *parts = calloc(job->nparts, sizeof(QsPart));

	memcpy(parts, job->parts, sizeof(QsPart) * job->nparts);
	parts[0].lease_until = lease_a;
	parts[1].lease_until = lease_b;
	job->parts = parts;
	job->j.claimed = true;
	job->j.lease_until = lease_a < lease_b ? lease_a : lease_b;
}

/*
 * One part loses its lease while the other holds: the other is stopped
 * (PEER_LOST) and the job holds on; once no part holds, a lease loss.
 */
static void
test_part_lease(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *job = Constrained(&w, "job", a, 8, 4, NULL);
	const QsOutput *out;
	const QsDecision *d;

	WPassApply(&w);
	ClaimAll(&w);
	SetLeases(job, w.now + 10, w.now + 1000);
	w.now += 100;
	out = WPassApply(&w);
	d = WDecisionFor(out, job);
	CHECK(d != NULL && d->action == QS_STOP && d->stop == QS_STOP_PEER_LOST &&
		  out->nlost == 1 && out->lost[0] == job->j.id && job->state == W_RUNNING,
		  "part lease: the other part is stopped, PEER_LOST; the job holds on");
	w.now += 1000;
	job->j.lease_until = w.now - 1;
	out = WPassApply(&w);
	d = WDecisionFor(out, job);
	CHECK(d != NULL && d->action == QS_REQUEUE && d->counter == QS_COUNT_LEASE_LOSS,
		  "part lease: no part holds: the job goes back as a lease lost");
}

/*
 * With a fence_grace (scheduling.md 3.10, 3.14), a part whose lease ran out
 * no more than the grace ago is not lost yet: its peer is not stopped
 * until the grace has passed.
 */
static void
test_part_lease_grace(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *job = Constrained(&w, "job", a, 8, 4, NULL);
	const QsOutput *out;
	const QsDecision *d;

	w.fence_grace = 20;
	WPassApply(&w);
	ClaimAll(&w);
	SetLeases(job, w.now + 10, w.now + 1000);
	w.now += 30;
	out = WPassApply(&w);
	CHECK(WDecisionFor(out, job) == NULL && out->nlost == 0 && out->wake_at == w.now - 30 + 10 + 21,
		  "part lease grace: a part within its fence_grace is not lost, the pass wakes when it ends");
	w.now += 1;
	out = WPassApply(&w);
	d = WDecisionFor(out, job);
	CHECK(d != NULL && d->action == QS_STOP && d->stop == QS_STOP_PEER_LOST && out->nlost == 1,
		  "part lease grace: past the grace, the other part is stopped, PEER_LOST");
}

/* A job stopped after a peer failed goes on as the failure says. */
static void
test_peer_outcome(void)
{
	QsJob		job = {.stop = QS_STOP_PEER_FAILED, .max_attempts = 2};
	QsStopOutcome o = QsStoppedOutcome(&job);

	CHECK(o.action == QS_REQUEUE && o.counter == QS_COUNT_FAILED_ATTEMPT,
		  "peer failed: a failed attempt");
	job.stop = QS_STOP_PEER_RELEASED;
	o = QsStoppedOutcome(&job);
	CHECK(o.action == QS_REQUEUE && o.counter == QS_COUNT_NONE, "peer released: a release");
	job.stop = QS_STOP_PEER_LOST;
	job.max_lease_losses = 0;
	o = QsStoppedOutcome(&job);
	CHECK(o.action == QS_FAIL && o.counter == QS_COUNT_LEASE_LOSS,
		  "peer lost: a lease loss, past max_lease_losses the job fails");
}

/* explain's figures of the host groups. */
static void
test_explain_figures(void)
{
	World		w;
	int			a = TwoHosts(&w, 8, 2);
	WJob	   *x = WSubmit(&w, "x", a, 0, 3);
	WJob	   *y = WSubmit(&w, "y", a, 0, 3);
	WJob	   *job;
	QsWhy		why;

	WPassApply(&w);
	job = Constrained(&w, "job", a, 2, 2, NULL);
	why = WExplain(&w, job);
	CHECK(why.check == QS_CHECK_HOSTS && why.ngroups == 1 && why.groups[0].nhosts == 2 &&
		  why.groups[0].largest == 4 && why.groups[0].largest_free == 1 &&
		  why.groups[0].free == 2 && why.groups[0].fits == 4,
		  "explain: 2 hosts, largest 4, largest free 1, 2 free in all, 4 would fit");
	(void) x;
	(void) y;
}

int
main(void)
{
	test_best_fit();
	test_per_host();
	test_fewest_hosts();
	test_same_label();
	test_label_tie();
	test_held_back();
	test_waiting_for_hosts();
	test_waiting_unit_not_placed();
	test_placement_now();
	test_victims_for_placement();
	test_reservation();
	test_replaced_then_dispatched();
	test_skip_by_constraints();
	test_strict();
	test_not_placed();
	test_explain_figures();
	test_part_lease();
	test_part_lease_grace();
	test_peer_outcome();
	return TapDone();
}
