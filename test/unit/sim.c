/*-------------------------------------------------------------------------
 *
 * sim.c
 *		A randomized simulator of the policy core (scheduling.md 3): random queue
 *		configurations and random steps (submissions, passes, agents, lease
 *		losses, the fleet, priority and limit changes, time) on a World, with every
 *		pass checked by an accounting of its own, written here from doc/scheduling.md
 *		(it calls nothing of the core but QsRunPass, through WPass,
 *		QsStoppedOutcome, through WStopped, and explain's QsStrictHeadHeld,
 *		through WStrictHead, whose answer it checks).
 *
 *	  sim [steps] [seed]	   defaults: 100000 steps, seed from the clock
 *
 * The seed is printed first; a failure prints the seed, the step and what
 * went wrong, dumps the queue and exits 1, so `sim STEP SEED` replays it.
 * SIM_KEEP_GOING=1 counts failures and goes on with a fresh configuration;
 * SIM_VERBOSE=1 traces every step.
 *
 * What is checked after every pass (see the comments at each check):
 *	(a) (I1)-(I3) of scheduling.md 3.1 in the future state (held jobs without a
 *		pending stop, plus promised RUNNABLE jobs), after every pass with no
 *		exception: the repair (3.5) counts pending stops as gone, so even
 *		right after an admin lowered a limit the future state must hold once
 *		the pass is over, and nothing in doc/scheduling.md relaxes that.  In the
 *		present state (pending stops still holding) they are checked too,
 *		except from an admin's change of a limit (capacity, strategy,
 *		borrow_limit, share state, E) until a pass leaves them holding again:
 *		that is the one exception of 3.1 (3.5), during which the victims of
 *		the repair still hold their instances.
 *		While replaying the decisions in order: every dispatch keeps
 *		(I1)-(I3) now and in the future state, with the wanted-capacity rule
 *		(3.2); repairs only in units where an invariant fails, complete, and
 *		each victim needed; the re-check of promises exactly (3.6); the freed
 *		promises dispatched first, in promise order (3.6).
 *	(b) the dispatch order within a share and unit (see OrderCheck), and
 *		beyond it a model of the cursors (NextCandidate) run in lockstep with
 *		the decisions: a job that comes under the cursor and gets nothing
 *		must have been unable to start and to get victims.
 *	(c) bookkeeping: every decision is legal for the job's state, a job has
 *		one decision a pass (a victim stopped at once: PREEMPT then its
 *		REQUEUE/FAIL), so it is never dispatched and preempted in one pass;
 *		each job ends the pass in the state its decisions say and state
 *		counts add up; promised jobs are RUNNABLE; time-based work (leases,
 *		claim timeouts, timeouts, runnable timeouts: of a misconfigured job,
 *		and of one whose NO_AGENT_FITS reason is older than runnable_timeout
 *		and that no agent fits still, RunnableExpired) is done and counted as
 *		3.6/3.8/3.9/3.10 say; misconfiguration reasons are those of 3.7, then
 *		NO_AGENT_FITS (3.10); counters, claim_backoff_until and queued_at
 *		as the decisions say.
 *	(d) liveness: every LIVENESS_EVERY steps the world freezes (no
 *		submissions, no limit changes, time stands still, nothing ends, the
 *		fleet stays; agents only claim, but not in a claim outage, and
 *		acknowledge stops) and passes are repeated until one decides
 *		nothing with no stop pending, within NROUNDS; no promise may be left
 *		then.  Jobs held back (below) stay held back in the freeze: their
 *		promises lapse and nothing more is decided about them.
 *	Preemption (3.3, 3.4, 3.6): victims of the right kinds (strictly lower
 *	priority in-share, only with in_share_preemption; reclaim only while
 *	the share holds less than its capacity, only from shares still
 *	borrowing, never to borrow), enough to start the preemptor once they
 *	stopped, none superfluous (the backwards walk); no victims for a job
 *	holding a kept promise; the promise given iff the job could not start
 *	at once.
 *	The options of 0.2, drawn on a minority of shares and queues
 *	(RandomOptions, AdminChange): lend_limit caps a lender's supply in
 *	(I3), min(max(0, idle - wanted), lendable) for a borrower (3.1, 3.2),
 *	and the misconfiguration reach (3.7); borrow_order FAIR orders the
 *	borrowing candidates in the model of the cursors (FairBefore), and a
 *	cursor failure after a FAIR choice is named [fair]; STRICT shuts a
 *	share's stream of a unit once a job of it is not dispatched (the
 *	cursors; StrictCheck [strict]); min_runtime: claimed jobs inside it are
 *	no candidates for a preemptor (PreemptionPossible), none is preempted
 *	but by a repair [min-runtime], and the pass's wake_at is the end of
 *	such an exemption (WakeCheck [wake]).
 *	The rules over time of 0.3 (3.11, 3.12; OverTimeSync): budgets of a day
 *	(whole instance-hours or, from 0.4, with a fraction: RandomBudget)
 *	on a minority of (share, unit) pairs and, on some FAIR queues, a
 *	half-life.  The sim keeps its own spent (held x time, from 0 at each
 *	midnight; episodes start within an hour of one) and recent_borrow
 *	(integrated numerically), and the shell's way (the value at the last
 *	change of level, advanced by the core's closed forms); before each pass
 *	they must agree [over-time], and the latter is what the core reads.  A
 *	share over its budget of a unit holds its jobs back (HeldBack, reason
 *	BUDGET_EXHAUSTED after the misconfigurations), and with a half-life the
 *	model of the cursors orders borrowers by recent_borrow / weight first.
 *	The fleet of 0.3 (3.10), written here too: a lease that runs out with
 *	no stop pending is a lease loss, not a failed attempt: REQUEUE with
 *	lease_losses + 1, FAIL once that exceeds max_lease_losses (drawn 0..3 a
 *	job), reason LEASE_EXPIRED, queued_at kept (MyOutcome [outcome]); with
 *	a stop pending the lease's end counts as that stop, as in 0.2.  With a
 *	claim timeout (drawn an episode, often none; claim outages, when no
 *	agent claims for a while, make it pass), a SCHEDULED job unclaimed for
 *	longer is REQUEUEd NOT_CLAIMED, its capacity released, and held back
 *	until now + claim_timeout * 2^(k-1), at most 1 h, after its k-th
 *	(ClaimExpired, MyBackoff [claim-timeout]).  On a minority of episodes
 *	the agents come and go (RandomAgents): a unit bound by its largest
 *	live, active agent (0: only draining ones live) holds back the larger
 *	jobs.  A job held back (HeldBack, for either reason) is never
 *	dispatched nor given victims [held-back], wants nothing of its
 *	lender's idle capacity (Wanted), does not count as tried for the skip
 *	rule (the cursors, OrderCheck) but blocks a STRICT stream (StrictCheck),
 *	and loses its promise at the re-check [recheck]; fit_limits' agent_max
 *	is the bound [no-agent-fits].  Explain's account of a STRICT share's
 *	wait (QsStrictHeadHeld, through WStrictHead), for one RUNNABLE job of a
 *	STRICT share a pass: the first held-back job ahead of it of its unit
 *	that step 1 does not fail, and then the job is not dispatched
 *	(StrictHeadCheck [strict-head]).  The summary line (steps=...)
 *	gives a fingerprint of every decision of the run, to compare runs.
 *
 * Build (as the Makefile builds the unit tests; -DQS_MUTANT_X for a mutant):
 *	cc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Isrc/core -Itest/unit \
 *	   -o /tmp/sim test/unit/sim.c test/unit/world.c src/core/policy.c \
 *	   src/core/capacity.c src/core/preempt.c src/core/queue_order.c
 *
 *-------------------------------------------------------------------------
 */
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "over_time.h"
#include "world.h"

#define MAXS W_MAX_SHARES
#define MAXU W_MAX_UNITS
#define MAXJ W_MAX_JOBS
#define SEC 1000000LL
#define NROUNDS 50
#define LIVENESS_EVERY 200
#define BIG INT64_MAX

static World W;
static WJob B[MAXJ];			/* the world as the pass read it */
static QsTime Timeout[MAXJ];	/* per job: attempt timeout; QS_NO_TIME: none */

static uint64_t Seed, Rng;
static long Step, Steps;
static const char *Phase = "step";
static bool KeepGoing, Verbose;
static bool AdminDirty;			/* the present state may break (I1)-(I3) (3.5) */
static jmp_buf Recover;
static const QsOutput *LastOut;	/* decisions of the pass being checked */
static int LastN;				/* jobs the pass read */

static struct
{
	long		passes, dispatches, preemptions, repairs, promises, lapses,
				fixed_points, episodes, failures, submitted, checks, max_rounds;
	long		strict_stops, exempt_waits, wakes, fair_picks;
	long		lease_losses, claim_requeues, held_back, no_agent_fits, over_budget;
	long		no_agent_timeouts, strict_heads;
	long		over_fraction;	/* over_budget on a budget with a fraction */
} St;
static uint64_t Fingerprint = 14695981039346656037ULL;	/* of every pass's output */

/* failure tags and counts (SIM_KEEP_GOING) */
static const char *Tags[64];
static long TagCount[64];
static int NTags;

/* ---------------------------------------------------------------- */
/* randomness																		 */

static uint64_t
Next(void)
{
	uint64_t	z = (Rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int
Rand(int lo, int hi)
{
	return lo + (int) (Next() % (uint64_t) (hi - lo + 1));
}

static bool
Chance(int percent)
{
	return (int) (Next() % 100) < percent;
}

/* ---------------------------------------------------------------- */
/* names and dumps																	 */

static const char *
StateName(WState s)
{
	static const char *const n[] = {"RUNNABLE", "SCHEDULED", "STARTING", "RUNNING",
	"SUCCEEDED", "FAILED"};

	return n[s];
}

static const char *
StopText(QsStop s)
{
	static const char *const n[] = {"-", "CROSS_SHARE", "IN_SHARE", "CAPACITY_REDUCED",
	"TIMEOUT", "TERMINATED"};

	return n[s];
}

static const char *
ActionName(QsAction a)
{
	static const char *const n[] = {"DISPATCH", "PREEMPT", "STOP", "REQUEUE", "FAIL"};

	return (unsigned) a < 5 ? n[a] : "?";
}

static const char *
StratName(QsStrategy s)
{
	return s == QS_RESERVE ? "RESERVE" : s == QS_LEND ? "LEND" : "LEND_AND_BORROW";
}

static bool
IsHeld(WState s)
{
	return s == W_SCHEDULED || s == W_STARTING || s == W_RUNNING;
}

static void
DumpJob(const WJob *job)
{
	const QsJob *j = &job->j;

	printf("  job %" PRId64 ": share %d unit %d n=%d prio=%d %s stop=%s%s queued=%" PRId64,
		   j->id, j->share, j->unit, j->count, j->priority, StateName(job->state),
		   StopText(j->stop), j->claimed ? " claimed" : "", j->queued_at);
	if (IsHeld(job->state))
		printf(" sched=%" PRId64, j->scheduled_at);
	if (j->promised_at != QS_NO_TIME)
		printf(" promised_at=%" PRId64, j->promised_at);
	if (j->preempted_for)
		printf(" preempted_for=%" PRId64, j->preempted_for);
	if (j->claimed && j->lease_until != QS_NO_TIME)
		printf(" lease=%" PRId64, j->lease_until);
	if (j->deadline != QS_NO_TIME)
		printf(" deadline=%" PRId64, j->deadline);
	printf(" fa=%d/%d pc=%d/%d ll=%d/%d", j->failed_attempts, j->max_attempts,
		   j->preemption_count, j->preemption_retries, j->lease_losses, j->max_lease_losses);
	if (j->claim_requeues)
		printf(" cr=%d", j->claim_requeues);
	if (j->claim_backoff_until != QS_NO_TIME)
		printf(" backoff_until=%" PRId64, j->claim_backoff_until);
	if (job->status_reason)
		printf(" [%s]", strncmp(job->status_reason, "MISCONFIGURATION:", 17) == 0 ?
			   job->status_reason + 17 : job->status_reason);
	printf("\n");
}

static void
DumpWorld(void)
{
	printf("-- queue at the failing pass (now=%" PRId64 ", environment %s, runnable_timeout %s, borrow_order %s, claim_timeout ",
		   W.now, W.env_enabled ? "ENABLED" : "DISABLED",
		   W.runnable_timeout == QS_NO_TIME ? "none" : "set", W.fair ? "FAIR" : "FIFO");
	if (W.claim_timeout == QS_NO_TIME)
		printf("none):\n");
	else
		printf("%" PRId64 "):\n", W.claim_timeout);
	for (int u = 0; u < W.nunits; u++)
	{
		printf("  unit %d: E=%" PRId64, u, W.units[u].env_limit);
		if (W.units[u].agent_bound)
			printf(" agents bound it at %" PRId64, W.units[u].agent_max);
		printf("\n");
	}
	for (int s = 0; s < W.nshares; s++)
	{
		printf("  share %d: %s borrow_limit=%d%s%s C=", s, StratName(W.shares[s].strategy),
			   W.shares[s].borrow_limit, W.shares[s].in_share_preemption ? " in_share" : "",
			   W.shares[s].enabled ? "" : " DISABLED");
		for (int u = 0; u < W.nunits; u++)
			printf("%s%" PRId64, u ? "," : "", W.capacity[s][u]);
		printf(" lend_limit=%d weight=%d%s", W.shares[s].lend_limit, W.shares[s].weight,
			   W.shares[s].strict ? " STRICT" : "");
		if (W.shares[s].min_runtime > 0)
			printf(" min_runtime=%" PRId64, W.shares[s].min_runtime);
		printf("\n");
	}
	printf("-- live jobs as the pass read them:\n");
	for (int k = 0; k < LastN; k++)
		if (B[k].state <= W_RUNNING)
			DumpJob(&B[k]);
	if (LastOut != NULL)
	{
		printf("-- decisions of the pass:\n");
		for (int i = 0; i < LastOut->ndecisions; i++)
		{
			const QsDecision *d = &LastOut->decisions[i];

			printf("  %d: %s job %" PRId64 " (share %d unit %d n=%d)", i, ActionName(d->action),
				   d->job_id, d->share, d->unit, d->count);
			if (d->action == QS_PREEMPT)
				printf(" %s for %" PRId64 "%s", StopText(d->stop), d->preempted_for,
					   d->immediate ? " immediate" : "");
			if (d->reason && d->action != QS_PREEMPT)
				printf(" %s", d->reason);
			printf("\n");
		}
		for (int i = 0; i < LastOut->nlapsed; i++)
			printf("  lapsed: %" PRId64 "\n", LastOut->lapsed[i]);
		for (int i = 0; i < LastOut->npromised; i++)
			printf("  promised: %" PRId64 "\n", LastOut->promised[i]);
	}
}

static void Trace(const char *fmt,...);

static void
Fail(const char *tag, const char *fmt,...)
{
	va_list		ap;
	int			t;

	St.failures++;
	for (t = 0; t < NTags && strcmp(Tags[t], tag) != 0; t++)
		;
	if (t == NTags && NTags < 64)
		Tags[NTags++] = tag;
	if (t < 64)
		TagCount[t]++;
	printf("sim: FAILURE [%s] seed %" PRIu64 " step %ld (%s): ", tag, Seed, Step, Phase);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!KeepGoing || TagCount[t < 64 ? t : 0] <= 1)
		DumpWorld();
	if (!KeepGoing)
	{
		printf("sim: replay with: sim %ld %" PRIu64 "\n", Step, Seed);
		printf("sim: %ld steps, %ld failures\n", Step, St.failures);
		exit(1);
	}
	fflush(stdout);
	longjmp(Recover, 1);
}

/* ---------------------------------------------------------------- */
/* the configuration as a pass reads it, and accounting (scheduling.md 3.1) */

typedef struct Cfg
{
	int			nunits, nshares;
	int64_t		E[MAXU];
	int64_t		C[MAXS][MAXU];
	QsStrategy	strat[MAXS];
	int32_t		bl[MAXS];
	bool		isp[MAXS], enabled[MAXS];
	int32_t		ll[MAXS];		/* lend_limit: percent, -1 all */
	bool		strict[MAXS];	/* queueing STRICT */
	QsTime		minrt[MAXS];	/* min_runtime; 0: none */
	int32_t		weight[MAXS];	/* FAIR borrow order */
	bool		env_enabled;
	bool		fair;			/* borrow_order FAIR */
	QsTime		now;
	bool		agent_bound[MAXU];	/* the fleet (3.10): live agents bound u */
	int64_t		agent_max[MAXU];	/* then: the largest live, active agent */
	QsTime		claim_timeout;	/* QS_NO_TIME: none */
} Cfg;

static Cfg Cf;

static void
TakeCfg(void)
{
	Cf.nunits = W.nunits;
	Cf.nshares = W.nshares;
	Cf.env_enabled = W.env_enabled;
	Cf.fair = W.fair;
	Cf.now = W.now;
	Cf.claim_timeout = W.claim_timeout;
	for (int u = 0; u < W.nunits; u++)
	{
		Cf.E[u] = W.units[u].env_limit;
		Cf.agent_bound[u] = W.units[u].agent_bound;
		Cf.agent_max[u] = W.units[u].agent_max;
	}
	for (int s = 0; s < W.nshares; s++)
	{
		Cf.strat[s] = W.shares[s].strategy;
		Cf.bl[s] = W.shares[s].borrow_limit;
		Cf.isp[s] = W.shares[s].in_share_preemption;
		Cf.enabled[s] = W.shares[s].enabled;
		Cf.ll[s] = W.shares[s].lend_limit;
		Cf.strict[s] = W.shares[s].strict;
		Cf.minrt[s] = W.shares[s].min_runtime;
		Cf.weight[s] = W.shares[s].weight;
		for (int u = 0; u < W.nunits; u++)
			Cf.C[s][u] = W.capacity[s][u];
	}
}

/*
 * The rules over time (3.11, 3.12): budgets of a day on some (share,
 * unit) pairs, drawn an episode, and sometimes a half-life.  The sim keeps
 * two accounts of each pair: its own, advanced with every step of time
 * (spent: held x dt, from 0 at each midnight; recent_borrow: decayed, and
 * accrued by a numerical integral), and the shell's way: the value at the
 * last change of level and the level since, advanced by the core's closed
 * forms (QsSpentAt, QsRecentBorrowAt).  Before each pass the latter is what
 * the core reads, and the two must agree ([over-time]).
 */
#define DAYUS ((QsTime) 86400 * SEC)

typedef struct OverTime
{
	double		spent;			/* the sim's own */
	double		recent;
	double		kept_spent;		/* the shell's way: at since, */
	double		kept_recent;
	QsTime		since;
	int64_t		held;			/* with these levels since */
	int64_t		borrowed;
} OverTime;

static OverTime Ot[MAXS][MAXU];
static QsTime HalfLife;			/* 0: none */

static int64_t
HeldOf(int s, int u)
{
	int64_t		n = 0;

	for (int i = 0; i < W.njobs; i++)
		if (IsHeld(W.jobs[i].state) && W.jobs[i].j.share == s && W.jobs[i].j.unit == u)
			n += W.jobs[i].j.count;
	return n;
}

static bool
OverBudget(int s, int u)
{
	return W.budget[s][u] >= 0 && W.spent[s][u] >= W.budget[s][u] * 3600;
}

static QsTime OtNow;				/* how far the accounts are advanced */

/*
 * OverTimeSync: time has moved from OtNow to W.now with the levels of the
 * last sync (levels change only while time stands still: syncing at every
 * step and around every move of time is exact); the shell's account folds
 * its value at a change of level.
 */
static void
OverTimeSync(void)
{
	double		dt = (double) (W.now - OtNow) / SEC;

	for (int s = 0; s < W.nshares; s++)
		for (int u = 0; u < W.nunits; u++)
		{
			OverTime   *o = &Ot[s][u];
			int64_t		held = HeldOf(s, u);
			int64_t		borrowed = held > W.capacity[s][u] ? held - W.capacity[s][u] : 0;

			if (W.now / DAYUS != OtNow / DAYUS)
				o->spent = (double) o->held * (double) (W.now - W.now / DAYUS * DAYUS) / SEC;
			else
				o->spent += (double) o->held * dt;
			if (HalfLife > 0 && dt > 0)
			{
				double		h = (double) HalfLife / SEC;
				double		gain = 0;

				/*
				 * The midpoint rule on steps of at most h / 64 (its relative
				 * error is about (step ln 2 / h)^2 / 24, 5e-6), over the last
				 * 64 half-lives at most: an instant before weighs under 2^-64.
				 */
				double		span = dt < 64 * h ? dt : 64 * h;
				int			n = (int) ceil(64 * span / h);

				if (n < 64)
					n = 64;

				for (int k = 0; k < n; k++)
					gain += pow(2, -(span - (k + 0.5) * span / n) / h) * span / n;
				o->recent = o->recent * pow(2, -dt / h) + (double) o->borrowed * gain;
			}
			if (held != o->held || borrowed != o->borrowed)
			{
				o->kept_spent = QsSpentAt(o->kept_spent, o->since, o->held, W.now, QS_PERIOD_DAY);
				if (HalfLife > 0)
					o->kept_recent = QsRecentBorrowAt(o->kept_recent, o->since, o->borrowed,
													  W.now, HalfLife);
				o->since = W.now;
				o->held = held;
				o->borrowed = borrowed;
			}
		}
	OtNow = W.now;
}

/* Time moves from W.now to `to` (the levels hold in between). */
static void
OverTimeAdvance(QsTime to)
{
	OverTimeSync();
	W.now = to;
	OverTimeSync();
}

/* Before a pass: what the core reads, checked against the sim's own. */
static void
OverTimeFeed(void)
{
	OverTimeSync();
	for (int s = 0; s < W.nshares; s++)
		for (int u = 0; u < W.nunits; u++)
		{
			OverTime   *o = &Ot[s][u];
			double		spent = QsSpentAt(o->kept_spent, o->since, o->held, W.now, QS_PERIOD_DAY);

			if (fabs(spent - o->spent) > 1e-6 * (1 + fabs(o->spent)))
				Fail("over-time", "share %d unit %d: spent %.6f from the last change, %.6f held x time",
					 s, u, spent, o->spent);
			W.spent[s][u] = spent;
			if (HalfLife > 0)
			{
				double		r = QsRecentBorrowAt(o->kept_recent, o->since, o->borrowed, W.now,
												 HalfLife);

				if (fabs(r - o->recent) > 1e-4 * (1 + fabs(o->recent)))
					Fail("over-time", "share %d unit %d: recent_borrow %.6f in closed form, %.6f integrated",
						 s, u, r, o->recent);
				W.recent_borrow[s][u] = r;
			}
		}
}

/*
 * A budget in instance-hours: whole (0 forbids the unit), or with a
 * fraction as the CHECK admits (at most 3 decimals), decoded as the pass
 * decodes it (thousandths / 1000.0): quarters of an hour (multiples of
 * 900 instance-seconds, which spent can equal exactly), or any thousandth
 * up to 2 hours (3.6 instance-seconds each).
 */
static double
RandomBudget(void)
{
	int			r = Rand(0, 99);

	if (r < 50)
		return Rand(0, 2);
	if (r < 80)
		return (double) (Rand(1, 8) * 250) / 1000.0;
	return (double) Rand(1, 2000) / 1000.0;
}

/* A new episode's budgets (a minority of pairs) and half-life (FAIR queues, sometimes). */
static void
RandomOverTime(void)
{
	memset(Ot, 0, sizeof(Ot));
	/* the episode starts within an hour before a midnight, so that days end */
	W.now = DAYUS * Rand(1, 3) - (QsTime) Rand(0, 3600) * SEC;
	OtNow = W.now;
	HalfLife = W.fair && Chance(50) ? (QsTime) Rand(60, 7200) * SEC : 0;
	W.memory = HalfLife > 0;
	for (int s = 0; s < W.nshares; s++)
		for (int u = 0; u < W.nunits; u++)
		{
			OverTime   *o = &Ot[s][u];

			W.budget[s][u] = Chance(20) ? RandomBudget() : -1;
			o->spent = o->kept_spent = W.budget[s][u] >= 0 ? Rand(0, 4) * 1200.0 : 0;
			o->recent = o->kept_recent = HalfLife > 0 ? Rand(0, 5) * 600.0 : 0;
			o->since = W.now;
			W.spent[s][u] = o->spent;
			W.recent_borrow[s][u] = o->recent;
		}
}

/* allowed(S,u) */
static int64_t
Allowed(int s, int u)
{
	if (Cf.strat[s] != QS_LEND_AND_BORROW)
		return Cf.C[s][u];
	if (Cf.bl[s] == -1)
		return BIG;
	return Cf.C[s][u] * (100 + Cf.bl[s]) / 100;
}

/* ENABLED LEND and LEND_AND_BORROW shares' idle capacity is borrowable */
static bool
Lends(int s)
{
	return Cf.enabled[s] && Cf.strat[s] != QS_RESERVE;
}

/* lendable(S,u) (3.1): C(S,u), or floor(C(S,u) * lend_limit / 100) */
static int64_t
Lendable(int s, int u)
{
	if (Cf.ll[s] == -1)
		return Cf.C[s][u];
	return Cf.C[s][u] * Cf.ll[s] / 100;
}

static int64_t
Min(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

static int64_t
Unassigned(int u)
{
	int64_t		sum = 0;

	for (int s = 0; s < Cf.nshares; s++)
		sum += Cf.C[s][u];
	return Cf.E[u] > sum ? Cf.E[u] - sum : 0;
}

/*
 * Violation: which of (I1)-(I3) fails for unit u in the state use[] (each
 * share's usage), all shares checked; NULL when they hold.
 */
static const char *
Violation(int u, const int64_t *use, char *buf)
{
	int64_t		total = 0, borrowed = 0, supply = Unassigned(u);

	for (int s = 0; s < Cf.nshares; s++)
	{
		if (use[s] > Allowed(s, u))
		{
			sprintf(buf, "(I2) share %d uses %" PRId64 " of unit %d, allowed %" PRId64,
					s, use[s], u, Allowed(s, u));
			return buf;
		}
		total += use[s];
		if (use[s] > Cf.C[s][u])
			borrowed += use[s] - Cf.C[s][u];
		else if (Lends(s))
			supply += Min(Cf.C[s][u] - use[s], Lendable(s, u));
	}
	if (total > Cf.E[u])
	{
		sprintf(buf, "(I1) %" PRId64 " instances of unit %d in use, E=%" PRId64, total, u, Cf.E[u]);
		return buf;
	}
	if (borrowed > supply)
	{
		sprintf(buf, "(I3) %" PRId64 " of unit %d borrowed, borrowable supply %" PRId64,
				borrowed, u, supply);
		return buf;
	}
	return NULL;
}

/* ---------------------------------------------------------------- */
/* the replay of a pass: the state planned so far, from the decisions		 */

static int64_t RUse[MAXS][MAXU];	/* held now, pending stops included */
static int64_t RPend[MAXS][MAXU];	/* held by jobs whose stop is pending */
static int64_t RProm[MAXS][MAXU];	/* kept promises not yet dispatched */
static unsigned char Handled[MAXJ];	/* decided in this pass */
static unsigned char Kept[MAXJ];	/* a kept promise, not dispatched yet */
static unsigned char Victimized[MAXJ];	/* got victims in this pass */
static unsigned char NDec[MAXJ];	/* decisions in this pass */
static unsigned char TimeDec[MAXJ];	/* decided by the time-based work */
static unsigned char Step4[MAXJ];	/* dispatched as a freed promise (step 4) */
static unsigned char Dispatched[MAXJ];

/* RUNNABLE jobs read by the pass, by share and unit, in share order */
static int RunIdx[MAXJ];
static int RunFrom[MAXS][MAXU], RunTo[MAXS][MAXU];

static bool
ShareBefore(const QsJob *a, const QsJob *b)
{
	if (a->priority != b->priority)
		return a->priority > b->priority;
	if (a->queued_at != b->queued_at)
		return a->queued_at < b->queued_at;
	return a->id < b->id;
}

static int
CmpRun(const void *x, const void *y)
{
	const QsJob *a = &B[*(const int *) x].j;
	const QsJob *b = &B[*(const int *) y].j;

	if (a->share != b->share)
		return a->share - b->share;
	if (a->unit != b->unit)
		return a->unit - b->unit;
	return ShareBefore(a, b) ? -1 : ShareBefore(b, a) ? 1 : 0;
}

static void
BuildRunLists(int n)
{
	int			m = 0;

	for (int k = 0; k < n; k++)
		if (B[k].state == W_RUNNABLE)
			RunIdx[m++] = k;
	qsort(RunIdx, m, sizeof(int), CmpRun);
	for (int s = 0; s < Cf.nshares; s++)
		for (int u = 0; u < Cf.nunits; u++)
			RunFrom[s][u] = RunTo[s][u] = 0;
	for (int i = 0; i < m;)
	{
		const QsJob *j = &B[RunIdx[i]].j;
		int			e = i;

		while (e < m && B[RunIdx[e]].j.share == j->share && B[RunIdx[e]].j.unit == j->unit)
			e++;
		RunFrom[j->share][j->unit] = i;
		RunTo[j->share][j->unit] = e;
		i = e;
	}
}

static void
NowUse(int u, int64_t *use)
{
	for (int s = 0; s < Cf.nshares; s++)
		use[s] = RUse[s][u];
}

/* pending stops gone; with_prom: kept promises holding */
static void
FutureUse(int u, bool with_prom, int64_t *use)
{
	for (int s = 0; s < Cf.nshares; s++)
		use[s] = RUse[s][u] - RPend[s][u] + (with_prom ? RProm[s][u] : 0);
}

/*
 * HeldBack (3.10): is RUNNABLE job j held back from dispatch whatever the
 * capacity?  It is when the live agents bound its unit and it needs more
 * instances than the largest live, active one has (0: only draining agents
 * live), or while it is in its backoff after a claim timeout (before
 * claim_backoff_until).  Returns why, or NULL.  A held-back job is not
 * dispatched, gets no victims, does not count as tried for the skip rule
 * (but blocks a STRICT stream like any job not dispatched), wants nothing
 * of its share's idle capacity and loses its promise at the re-check.
 */
static bool OverBudget(int s, int u);

static const char *
HeldBack(const QsJob *j)
{
	if (OverBudget(j->share, j->unit))
		return "held back: its share spent its budget of the unit (3.11)";
	if (Cf.agent_bound[j->unit] && j->count > Cf.agent_max[j->unit])
		return "held back: no live, active agent of its unit fits it (3.10)";
	if (j->claim_backoff_until != QS_NO_TIME && Cf.now < j->claim_backoff_until)
		return "held back: in its backoff after a claim timeout (3.10)";
	return NULL;
}

/*
 * Wanted (scheduling.md 3.2): what lender t wants of its idle capacity of u: the
 * sizes of its RUNNABLE jobs of u that are not misconfigured (count <= E(u):
 * a job that fits in the idle capacity is within allowed and reach) and
 * each fit in the idle capacity, summed, capped at it.  Jobs decided in
 * this pass are no longer RUNNABLE in the planned state, and kept promises
 * already hold their instances in the future state: neither wants more;
 * nor does a job held back (3.10), which cannot start whatever the room.
 */
static int64_t
Wanted(int t, int u, int64_t idle)
{
	int64_t		sum = 0;

	for (int i = RunFrom[t][u]; i < RunTo[t][u] && sum < idle; i++)
	{
		int			k = RunIdx[i];
		const QsJob *j = &B[k].j;

		if (Handled[k] || Kept[k] || j->count > idle || j->count > Cf.E[u] ||
			HeldBack(j) != NULL)
			continue;
		sum += j->count;
	}
	return sum < idle ? sum : idle;
}

/*
 * CheckJob: do (I1), (I2) of the job's share and (I3) hold in the state
 * use[] with the job added, the wanted-capacity rule applied when the job
 * must borrow in that state?  Each lender supplies at most its lendable
 * capacity: min(max(0, idle - wanted), lendable) (3.1, 3.2).  NULL when
 * they do, else why not.
 */
static const char *
CheckJob(const int64_t *use, const QsJob *j, char *buf)
{
	int			s = j->share, u = j->unit;
	int64_t		total = 0, borrowed = 0, supply = Unassigned(u);
	bool		must_borrow = use[s] + j->count > Cf.C[s][u];

	if (use[s] + j->count > Allowed(s, u))
	{
		sprintf(buf, "(I2) share %d would use %" PRId64 ", allowed %" PRId64,
				s, use[s] + j->count, Allowed(s, u));
		return buf;
	}
	for (int t = 0; t < Cf.nshares; t++)
	{
		int64_t		used = use[t] + (t == s ? j->count : 0);

		total += used;
		if (used > Cf.C[t][u])
			borrowed += used - Cf.C[t][u];
		else if (Lends(t))
		{
			int64_t		idle = Cf.C[t][u] - used;

			if (must_borrow && t != s && idle > 0)
				idle -= Wanted(t, u, idle);
			/* a lender supplies at most its lendable capacity (3.1) */
			supply += Min(idle, Lendable(t, u));
		}
	}
	if (total > Cf.E[u])
	{
		sprintf(buf, "(I1) %" PRId64 " of unit %d would be in use, E=%" PRId64, total, u, Cf.E[u]);
		return buf;
	}
	if (borrowed > supply)
	{
		sprintf(buf, "(I3) %" PRId64 " of unit %d would be borrowed, supply%s %" PRId64,
				borrowed, u, must_borrow ? " less what lenders want" : "", supply);
		return buf;
	}
	return NULL;
}

/*
 * May the job be dispatched in the planned state, now and in the future?
 * Not while it is held back (3.10).
 */
static const char *
MayDispatch(int k, char *buf)
{
	const QsJob *j = &B[k].j;
	int64_t		use[MAXS];
	const char *why;

	if ((why = HeldBack(j)) != NULL)
		return why;
	NowUse(j->unit, use);
	if ((why = CheckJob(use, j, buf)) != NULL)
		return why;
	FutureUse(j->unit, true, use);
	if (Kept[k])
		use[j->share] -= j->count;
	if ((why = CheckJob(use, j, buf)) != NULL)
	{
		strcat(buf, " [future state]");
		return why;
	}
	return NULL;
}

static void
ApplyDispatch(int k)
{
	const QsJob *j = &B[k].j;

	RUse[j->share][j->unit] += j->count;
	if (Kept[k])
		RProm[j->share][j->unit] -= j->count;
	Kept[k] = 0;
	Handled[k] = 1;
	Dispatched[k] = 1;
}

/*
 * The outcome of a stop or a lost lease (scheduling.md 3.6, 3.8, 3.10),
 * written here.  A lease that runs out with no stop pending (stop NONE) is
 * a lost host, not a failed attempt: back to RUNNABLE with lease_losses + 1,
 * or FAILED once that exceeds max_lease_losses; with a stop pending the
 * lease's end counts as that stop.  reason: the decision's reason where
 * checked, else NULL.
 */
typedef struct Outcome
{
	QsAction	action;
	QsCounter	counter;
	const char *reason;
} Outcome;

static Outcome
MyOutcome(const QsJob *j, QsStop stop)
{
	Outcome		o = {QS_REQUEUE, QS_COUNT_NONE, NULL};

	if (stop == QS_STOP_NONE)
	{
		o.counter = QS_COUNT_LEASE_LOSS;
		o.reason = "LEASE_EXPIRED";
		o.action = j->lease_losses + 1 > j->max_lease_losses ? QS_FAIL : QS_REQUEUE;
	}
	else if (stop == QS_STOP_CROSS_SHARE || stop == QS_STOP_IN_SHARE ||
		stop == QS_STOP_CAPACITY_REDUCED)
	{
		o.counter = QS_COUNT_PREEMPTION;
		o.action = j->preemption_retries >= 0 &&
			j->preemption_count + 1 > j->preemption_retries ? QS_FAIL : QS_REQUEUE;
	}
	else if (stop == QS_STOP_TERMINATED)
	{
		o.counter = QS_COUNT_NONE;
		o.action = QS_FAIL;
	}
	else
	{
		/* TIMEOUT: the timed-out attempt fails */
		o.counter = QS_COUNT_FAILED_ATTEMPT;
		o.reason = "TIMEOUT";
		o.action = j->failed_attempts + 1 >= j->max_attempts ? QS_FAIL : QS_REQUEUE;
	}
	return o;
}

/*
 * ClaimExpired (3.10): is held job b a SCHEDULED job that no agent claimed
 * within the queue's claim timeout (scheduled_at + claim_timeout before
 * the pass's time)?  (An unclaimed job never has a stop pending here: a
 * stop of an unclaimed job is immediate.)
 */
static bool
ClaimExpired(const WJob *b)
{
	return b->state == W_SCHEDULED && !b->j.claimed && b->j.stop == QS_STOP_NONE &&
		Cf.claim_timeout != QS_NO_TIME && b->j.scheduled_at != QS_NO_TIME &&
		b->j.scheduled_at + Cf.claim_timeout < Cf.now;
}

/*
 * MyBackoff (3.10): how long a job is held back after its k-th claim
 * timeout: claim_timeout * 2^(k-1), at most QS_CLAIM_BACKOFF_MAX (1 h).
 * Shifting ct left by k-1 stays within the cap iff ct <= cap >> (k-1).
 */
static QsTime
MyBackoff(QsTime ct, int32_t k)
{
	const QsTime cap = (QsTime) 3600 * SEC;
	int			shift = k - 1;

	if (shift >= 62 || ct > (cap >> shift))
		return cap;
	return ct << shift;
}

static bool
LeaseExpired(const WJob *b)
{
	return IsHeld(b->state) && b->j.claimed && b->j.lease_until != QS_NO_TIME &&
		b->j.lease_until < Cf.now;
}

/*
 * RunnableExpired (3.9): the reason, if any, with which the pass must fail
 * a RUNNABLE job that could not run for longer than the runnable timeout:
 * RUNNABLE_TIMEOUT for a job whose MISCONFIGURATION reason (as an earlier
 * pass recorded it) dates from before; RUNNABLE_TIMEOUT:NO_AGENT_FITS for
 * one whose NO_AGENT_FITS reason does, and that no live, active agent of
 * its unit fits still (3.10).  NULL: none.
 */
static const char *
RunnableExpired(const WJob *b)
{
	if (b->state != W_RUNNABLE || W.runnable_timeout == QS_NO_TIME ||
		b->status_reason == NULL || b->status_reason_at + W.runnable_timeout >= Cf.now)
		return NULL;
	if (strncmp(b->status_reason, "MISCONFIGURATION:", 17) == 0)
		return "RUNNABLE_TIMEOUT";
	if (strcmp(b->status_reason, "NO_AGENT_FITS") == 0 && Cf.agent_bound[b->j.unit] &&
		b->j.count > Cf.agent_max[b->j.unit])
		return "RUNNABLE_TIMEOUT:NO_AGENT_FITS";
	return NULL;
}

/*
 * scheduling.md 3.7 and 3.10, written here: the misconfiguration reasons
 * first, then NO_AGENT_FITS for a job larger than the largest live, active
 * agent of its unit, when the agents bound it.
 */
static const char *
ExpectedReason(const QsJob *j)
{
	int			s = j->share, u = j->unit;
	int64_t		reach;

	if (j->count > Cf.E[u])
		return "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE";
	if (j->count > Allowed(s, u))
		return "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED";
	if (Cf.strat[s] == QS_LEND_AND_BORROW)
	{
		reach = Cf.C[s][u] + Unassigned(u);
		for (int t = 0; t < Cf.nshares; t++)
			if (t != s && Lends(t))
				reach += Lendable(t, u);
		if (j->count > reach)
			return "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED";
	}
	if (OverBudget(s, u))
		return "BUDGET_EXHAUSTED";
	if (Cf.agent_bound[u] && j->count > Cf.agent_max[u])
		return "NO_AGENT_FITS";
	return NULL;
}

/* the state each job must be in after the pass */
typedef struct Expect
{
	WState		state;
	QsStop		stop;
	bool		claimed;
	bool		promised;
	int32_t		fa, pc;
	int32_t		ll, cr;			/* lease_losses, claim_requeues */
	QsTime		backoff;		/* claim_backoff_until */
	int64_t		preempted_for;
} Expect;

static Expect Ex[MAXJ];

static void
ExpectOutcome(int k, Outcome o)
{
	Ex[k].state = o.action == QS_FAIL ? W_FAILED : W_RUNNABLE;
	Ex[k].stop = QS_STOP_NONE;
	Ex[k].claimed = false;
	Ex[k].promised = false;
	if (o.counter == QS_COUNT_FAILED_ATTEMPT)
		Ex[k].fa++;
	else if (o.counter == QS_COUNT_PREEMPTION)
		Ex[k].pc++;
	else if (o.counter == QS_COUNT_LEASE_LOSS)
		Ex[k].ll++;
	else if (o.counter == QS_COUNT_NOT_CLAIMED)
		Ex[k].cr++;
}

/* victim order (3.4): lowest priority, latest scheduled_at, highest id */
static int
CmpVictim(const void *x, const void *y)
{
	const QsJob *a = &B[*(const int *) x].j;
	const QsJob *b = &B[*(const int *) y].j;

	if (a->priority != b->priority)
		return a->priority < b->priority ? -1 : 1;
	if (a->scheduled_at != b->scheduled_at)
		return a->scheduled_at > b->scheduled_at ? -1 : 1;
	return a->id > b->id ? -1 : a->id < b->id;
}

/*
 * ExemptEnd (3.3): when a held job stops being exempt from preemption for a
 * preemptor: a job an agent has claimed, of a share with min_runtime, is no
 * candidate while scheduled_at + min_runtime is after the pass's time.
 * QS_NO_TIME: it is not exempt (unclaimed jobs never are).  Repairs (3.5)
 * ignore this.
 */
static QsTime
ExemptEnd(const QsJob *j)
{
	QsTime		m = Cf.minrt[j->share];

	if (m <= 0 || !j->claimed || j->scheduled_at == QS_NO_TIME ||
		j->scheduled_at + m <= Cf.now)
		return QS_NO_TIME;
	return j->scheduled_at + m;
}

/* ---------------------------------------------------------------- */
/* checks of one preemption (3.3, 3.4, 3.6)										 */

static void
CheckVictims(int jk, const int *vk, const bool *imm, int nv)
{
	const QsJob *J = &B[jk].j;
	int			S = J->share, u = J->unit;
	int64_t		n = J->count;
	int64_t		fut[MAXS], futnp[MAXS], taken[MAXS] = {0};
	bool		cross = false;
	char		buf[256];
	const char *why;

	(void) imm;
	if (B[jk].state != W_RUNNABLE || Handled[jk])
		Fail("preempt", "victims stopped for job %" PRId64 ", which is %s%s", J->id,
			 StateName(B[jk].state), Handled[jk] ? " and already decided in this pass" : "");
	if (Kept[jk])
		Fail("promise", "job %" PRId64 " holds a kept promise but was given further victims (3.6)",
			 J->id);
	if (Victimized[jk])
		Fail("preempt", "job %" PRId64 " was given victims twice in one pass", J->id);

	FutureUse(u, false, futnp);
	for (int i = 0; i < nv; i++)
	{
		const QsJob *v = &B[vk[i]].j;

		if (v->unit != u)
			Fail("preempt", "victim %" PRId64 " holds unit %d, its preemptor %" PRId64 " needs unit %d",
				 v->id, v->unit, J->id, u);
		if (v->share == S)
		{
			if (!Cf.isp[S])
				Fail("in-share", "job %" PRId64 " of share %d (in_share_preemption off) stopped its own share's job %" PRId64,
					 J->id, S, v->id);
			if (v->priority >= J->priority)
				Fail("in-share", "job %" PRId64 " (priority %d) stopped job %" PRId64 " of its share with priority %d: only strictly lower priority may be preempted in-share",
					 J->id, J->priority, v->id, v->priority);
		}
		else
		{
			cross = true;
			if (RUse[S][u] >= Cf.C[S][u])
				Fail("reclaim", "job %" PRId64 " reclaimed job %" PRId64 " of share %d although its share %d already holds %" PRId64 " >= its capacity %" PRId64 " of unit %d",
					 J->id, v->id, v->share, S, RUse[S][u], Cf.C[S][u], u);
			if (futnp[v->share] - taken[v->share] <= Cf.C[v->share][u])
				Fail("reclaim", "job %" PRId64 " of share %d reclaimed job %" PRId64 " of share %d, which was no longer borrowing unit %d (usage %" PRId64 " counting pending stops and earlier victims as gone, capacity %" PRId64 ")",
					 J->id, S, v->id, v->share, u, futnp[v->share] - taken[v->share],
					 Cf.C[v->share][u]);
			taken[v->share] += v->count;
		}
	}

	/* enough: the preemptor can start once the victims stopped (3.6) */
	FutureUse(u, true, fut);
	for (int i = 0; i < nv; i++)
		fut[B[vk[i]].j.share] -= B[vk[i]].j.count;
	if (cross && fut[S] + n > Cf.C[S][u])
		Fail("reclaim", "job %" PRId64 " reclaimed from other shares but will not fit in its share's own capacity once they stop (%" PRId64 " + %" PRId64 " > %" PRId64 "): a job never reclaims to borrow",
			 J->id, fut[S], n, Cf.C[S][u]);
	if ((why = CheckJob(fut, J, buf)) != NULL)
		Fail("victims", "job %" PRId64 " was given %d victims but could still not start once they stopped: %s",
			 J->id, nv, why);

	/*
	 * none superfluous (the backwards walk of 3.4).  With a cross-share
	 * victim the attempt was the reclaim, whose room test also needs the
	 * preemptor to fit in its own capacity; with in-share victims only, it
	 * was the in-share attempt when the share held its capacity already,
	 * else either: then only the stricter test is used.  The room tests are
	 * monotone in the victims (a victim only lowers usages; the wanted rule
	 * matters only to a job that must borrow, whose victims are its own
	 * share's), so a victim kept by the walk is needed in the final set too.
	 */
	for (int i = 0; i < nv; i++)
	{
		const QsJob *v = &B[vk[i]].j;
		bool		superfluous;

		fut[v->share] += v->count;
		superfluous = fut[S] + n <= Cf.C[S][u] && CheckJob(fut, J, buf) == NULL;
		if (!cross && RUse[S][u] >= Cf.C[S][u])
			superfluous = CheckJob(fut, J, buf) == NULL;
		fut[v->share] -= v->count;
		if (superfluous)
			Fail("minimal", "victim %" PRId64 " of job %" PRId64 " was not needed: with the other %d victims stopped the job could start (3.4: the backwards walk drops it)",
				 v->id, J->id, nv - 1);
	}
}

/*
 * Exempt: with exemptions, is held job h no candidate for a preemptor by
 * its share's min_runtime (3.3)?  Then the end of its exemption is noted
 * in *all_end, and in *live_end unless the pass decided on h already (it
 * no longer holds anything back).
 */
static bool
Exempt(int h, bool exemptions, QsTime *live_end, QsTime *all_end)
{
	QsTime		e = exemptions ? ExemptEnd(&B[h].j) : QS_NO_TIME;

	if (e == QS_NO_TIME)
		return false;
	if (*all_end == QS_NO_TIME || e < *all_end)
		*all_end = e;
	if (!Handled[h] && (*live_end == QS_NO_TIME || e < *live_end))
		*live_end = e;
	return true;
}

/*
 * PreemptionPossible: could job k, under the cursor in the planned state,
 * be given victims (3.3, 3.4)?  Greedy selection ends with every candidate
 * taken unless the room test passes earlier, and the room tests are
 * monotone in the victims (see CheckVictims), so the attempt finds victims
 * iff the test passes with all its candidates (reclaim: a borrower taken
 * only while its share still borrows, in victim order) and fails with none
 * (then nobody is needed: the job waits for pending stops).  With
 * exemptions, claimed jobs within their share's min_runtime are no
 * candidates (3.3); the earliest end of such an exemption among the
 * candidates of the attempts made is noted in *live_end and *all_end (see
 * Exempt).  Returns NULL or what the pass should have done.
 */
static const char *
PreemptionPossible(int k, bool exemptions, QsTime *live_end, QsTime *all_end,
				   char *msg)
{
	const QsJob *J = &B[k].j;
	int			S = J->share, u = J->unit;
	int64_t		fut0[MAXS], fut[MAXS], futnp[MAXS], taken[MAXS] = {0};
	static int	cand[MAXJ];
	int			nc = 0;
	char		buf[256];

	*live_end = *all_end = QS_NO_TIME;
	FutureUse(u, true, fut0);
	FutureUse(u, false, futnp);

	/* 1. reclaim, only while S holds less than its capacity */
	if (RUse[S][u] < Cf.C[S][u] &&
		!(fut0[S] + J->count <= Cf.C[S][u] && CheckJob(fut0, J, buf) == NULL))
	{
		memcpy(fut, fut0, sizeof(fut));
		for (int h = 0; h < LastN; h++)
		{
			const QsJob *c = &B[h].j;

			if (IsHeld(B[h].state) && c->unit == u && c->share != S &&
				c->stop == QS_STOP_NONE && futnp[c->share] > Cf.C[c->share][u] &&
				!Exempt(h, exemptions, live_end, all_end) && !Handled[h])
				cand[nc++] = h;
		}
		qsort(cand, nc, sizeof(int), CmpVictim);
		for (int i = 0; i < nc; i++)
		{
			const QsJob *c = &B[cand[i]].j;

			if (futnp[c->share] - taken[c->share] > Cf.C[c->share][u])
			{
				taken[c->share] += c->count;
				fut[c->share] -= c->count;
			}
		}
		if (Cf.isp[S])
			for (int h = 0; h < LastN; h++)
			{
				const QsJob *c = &B[h].j;

				if (IsHeld(B[h].state) && c->unit == u && c->share == S &&
					c->stop == QS_STOP_NONE && c->priority < J->priority &&
					!Exempt(h, exemptions, live_end, all_end) && !Handled[h])
					fut[S] -= c->count;
			}
		if (fut[S] + J->count <= Cf.C[S][u] && CheckJob(fut, J, buf) == NULL)
		{
			sprintf(msg, "reclaiming from borrowers%s would let it start in its own capacity (share %d holds %" PRId64 " < capacity %" PRId64 "; 3.3)",
					Cf.isp[S] ? " and its share's lower-priority jobs" : "", S, RUse[S][u], Cf.C[S][u]);
			return msg;
		}
	}

	/* 2. in-share */
	if (Cf.isp[S] && CheckJob(fut0, J, buf) != NULL)
	{
		memcpy(fut, fut0, sizeof(fut));
		for (int h = 0; h < LastN; h++)
		{
			const QsJob *c = &B[h].j;

			if (IsHeld(B[h].state) && c->unit == u && c->share == S &&
				c->stop == QS_STOP_NONE && c->priority < J->priority &&
				!Exempt(h, exemptions, live_end, all_end) && !Handled[h])
				fut[S] -= c->count;
		}
		if (CheckJob(fut, J, buf) == NULL)
		{
			sprintf(msg, "stopping its share's lower-priority jobs (in_share_preemption) would let it start (3.3)");
			return msg;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- */
/* the cursors of the dispatch loop (3.2), modelled here					 */

static int SPos[MAXS][MAXU];	/* index in RunIdx of the stream's head */
static int32_t SBelow[MAXS][MAXU];	/* the skip rule */

static void
StreamAdvance(int s, int u, bool from_start)
{
	int			p = from_start ? RunFrom[s][u] : SPos[s][u] + 1;

	while (p < RunTo[s][u] && (Handled[RunIdx[p]] || B[RunIdx[p]].j.count >= SBelow[s][u]))
		p++;
	SPos[s][u] = p;
}

static bool
QueueBefore(const QsJob *a, const QsJob *b)
{
	if (a->queued_at != b->queued_at)
		return a->queued_at < b->queued_at;
	return a->id < b->id;
}

/*
 * FairBefore (3.2, borrow_order FAIR): does job a come before job b when
 * none under the cursors fits in its own capacity?  With a half-life, the
 * least recent_borrow / weight (3.12); then the least
 * max(0, usage(S,u) + n - C(S,u)) / weight(S) in the planned state,
 * compared exactly (cross-multiplied), then the least (queued_at, id).
 */
static bool
FairBefore(const QsJob *a, const QsJob *b)
{
	int64_t		ka = RUse[a->share][a->unit] + a->count - Cf.C[a->share][a->unit];
	int64_t		kb = RUse[b->share][b->unit] + b->count - Cf.C[b->share][b->unit];

	/* with a half-life, what each borrowed lately per unit of weight first (3.12) */
	if (W.memory)
	{
		double		ra = W.recent_borrow[a->share][a->unit] / Cf.weight[a->share];
		double		rb = W.recent_borrow[b->share][b->unit] / Cf.weight[b->share];

		if (ra != rb)
			return ra < rb;
	}

	ka = ka > 0 ? ka : 0;
	kb = kb > 0 ? kb : 0;
	if (ka * Cf.weight[b->share] != kb * Cf.weight[a->share])
		return ka * Cf.weight[b->share] < kb * Cf.weight[a->share];
	return QueueBefore(a, b);
}

/* what a job's share would borrow with it, in the planned state */
static int64_t
FairKey(const QsJob *j)
{
	int64_t		k = RUse[j->share][j->unit] + j->count - Cf.C[j->share][j->unit];

	return k > 0 ? k : 0;
}

/* the job under share s's cursor (the first of its units' heads), or -1 */
static int
ShareHead(int s)
{
	int			head = -1;

	for (int u = 0; u < Cf.nunits; u++)
		if (SPos[s][u] < RunTo[s][u])
		{
			int			k = RunIdx[SPos[s][u]];

			if (head < 0 || ShareBefore(&B[k].j, &B[head].j))
				head = k;
		}
	return head;
}

static int FifoChoice;			/* what FIFO would have taken (NextCandidate) */

/*
 * NextCandidate: among the jobs under the cursors (each share's first, in
 * share order, of its units' stream heads) the one that fits in its
 * share's own capacity in the planned state with the least (queued_at,
 * id); if none fits, the least (queued_at, id), or with FAIR the least
 * borrowing per unit of weight (FairBefore).  -1 when none is left;
 * *borrowing tells whether none fitted; FifoChoice is the head with the
 * least (queued_at, id).
 */
static int
NextCandidate(bool *borrowing)
{
	int			any = -1, fitting = -1, fifo = -1;

	for (int s = 0; s < Cf.nshares; s++)
	{
		int			head = ShareHead(s);

		if (head < 0)
			continue;
		if (any < 0 || (Cf.fair ? FairBefore(&B[head].j, &B[any].j) :
						QueueBefore(&B[head].j, &B[any].j)))
			any = head;
		if (fifo < 0 || QueueBefore(&B[head].j, &B[fifo].j))
			fifo = head;
		if (RUse[s][B[head].j.unit] + B[head].j.count <= Cf.C[s][B[head].j.unit] &&
			(fitting < 0 || QueueBefore(&B[head].j, &B[fitting].j)))
			fitting = head;
	}
	*borrowing = fitting < 0;
	FifoChoice = fifo;
	if (fitting < 0 && any != fifo)
		St.fair_picks++;		/* FAIR chose otherwise than FIFO */
	return fitting >= 0 ? fitting : any;
}

/* ---------------------------------------------------------------- */
/* the repair (3.5)																 */

static void
CheckRepairs(const int *rk, int nr, const bool *viol, int64_t (*start)[MAXS])
{
	char		buf[256];

	for (int u = 0; u < Cf.nunits; u++)
	{
		int			vk[MAXJ];
		int			nv = 0, idx = 0;
		int64_t		use[MAXS];

		for (int i = 0; i < nr; i++)
			if (B[rk[i]].j.unit == u)
				vk[nv++] = rk[i];
		if (nv > 0 && !viol[u])
			Fail("repair", "%d CAPACITY_REDUCED victims of unit %d although (I1)-(I3) held there once pending stops complete",
				 nv, u);
		/* first: each share above allowed(S,u) loses its own jobs until within it */
		memcpy(use, start[u], sizeof(use));
		for (int s = 0; s < Cf.nshares; s++)
		{
			int			from = idx;

			if (use[s] <= Allowed(s, u))
				continue;
			while (idx < nv && B[vk[idx]].j.share == s && use[s] > Allowed(s, u))
				use[s] -= B[vk[idx++]].j.count;
			if (use[s] > Allowed(s, u))
				Fail("repair", "share %d still uses %" PRId64 " of unit %d > allowed %" PRId64 " after the repair's first step",
					 s, use[s], u, Allowed(s, u));
			for (int i = from; i < idx; i++)
				if (use[s] + B[vk[i]].j.count <= Allowed(s, u))
					Fail("minimal", "CAPACITY_REDUCED victim %" PRId64 " of share %d was not needed to bring it within allowed(S,u)=%" PRId64,
						 B[vk[i]].j.id, s, Allowed(s, u));
		}
		/* then: the rest until (I1)-(I3) hold, none superfluous */
		if (idx < nv && Violation(u, use, buf) == NULL)
			Fail("repair", "%d more CAPACITY_REDUCED victims of unit %d after every share was within allowed and (I1)-(I3) held",
				 nv - idx, u);
		for (int i = idx; i < nv; i++)
			use[B[vk[i]].j.share] -= B[vk[i]].j.count;
		for (int i = idx; i < nv; i++)
		{
			const QsJob *v = &B[vk[i]].j;

			use[v->share] += v->count;
			if (Violation(u, use, buf) == NULL)
				Fail("minimal", "CAPACITY_REDUCED victim %" PRId64 " of unit %d was not needed: (I1)-(I3) hold without stopping it",
					 v->id, u);
			use[v->share] -= v->count;
		}
	}
}

/* ---------------------------------------------------------------- */
/* (b) the dispatch order															 */

/*
 * OrderCheck.  What scheduling.md 3.2 guarantees: within one share and one unit, the
 * cursor meets the RUNNABLE jobs in share order (priority DESC, queued_at,
 * id; the order across shares and units depends on own-capacity-first and
 * queue order, so nothing is asserted there).  When a job K of share S
 * needing n of u comes under the cursor it is dispatched, given victims
 * (then dispatched or promised), or neither, and then the skip rule passes
 * over every later job of S needing u and n or more.  So: no job J that
 * the cursor dispatched or gave victims in a pass has, ahead of it in share
 * order in the same share and unit, a job K needing no more instances than
 * J that was RUNNABLE when the pass began and that the pass neither
 * dispatched, gave victims, nor decided anything else about, and that does
 * not hold a kept promise: a promised job still waiting for its victims is
 * passed over without counting as tried (new in 0.2), and is not held back
 * (3.10: neither is a held-back job tried).
 * Exempt are the freed promises of step 4, dispatched before the cursor
 * starts (scheduling.md 3.6: "before any other job").  Own-capacity-first and the
 * wanted-capacity rule only decide which share's head is taken next and
 * whether a job may start; they never reorder a stream, so they do not
 * weaken this.  Neither is anything promised across units or shares.
 */
static void
OrderCheck(int jk, const char *what)
{
	const QsJob *J = &B[jk].j;

	for (int i = RunFrom[J->share][J->unit]; i < RunTo[J->share][J->unit]; i++)
	{
		int			k = RunIdx[i];
		const QsJob *K = &B[k].j;

		if (k == jk)
			return;				/* the rest comes after J in share order */
		if (K->count <= J->count && NDec[k] == 0 && !Victimized[k] && !Kept[k] &&
			HeldBack(K) == NULL)
			Fail("order", "job %" PRId64 " (priority %d, n=%d) was %s while job %" PRId64 " of the same share %d and unit %d, ahead of it in share order (priority %d, n=%d), stayed RUNNABLE with nothing decided (3.2: the skip rule passes over J)",
				 J->id, J->priority, J->count, what, K->id, J->share, J->unit, K->priority,
				 K->count);
	}
}

/*
 * StrictCheck.  A STRICT share keeps its order strictly, per unit (3.2):
 * once one of its jobs needing u came under the cursor and was not
 * dispatched (whatever the reason: no room, victims given but the job only
 * promised, a kept promise still waiting, held back), the pass skips every later job
 * of the share needing u.  The cursor meets a stream's jobs in share order
 * from its start, so: no job J of a STRICT share is dispatched in a pass
 * while a job K of the same share and unit, ahead of J in share order
 * (priority DESC, queued_at, id), that was RUNNABLE when the pass began
 * stays RUNNABLE without being dispatched (K has no decision at all: the
 * only decisions about a RUNNABLE job are DISPATCH and the runnable
 * timeout's FAIL).  Exempt are the freed promises of step 4, dispatched
 * before any cursor starts (3.6).  Run before the model of the cursors,
 * so that a broken STRICT rule is named as such.
 */
static void
StrictCheck(const QsDecision *D, int nd)
{
	for (int x = 0; x < nd; x++)
	{
		int			jk = (int) D[x].job_id - 1;
		const QsJob *J = &B[jk].j;

		if (D[x].action != QS_DISPATCH || Step4[jk] || !Cf.strict[J->share])
			continue;
		for (int i = RunFrom[J->share][J->unit]; i < RunTo[J->share][J->unit]; i++)
		{
			int			k = RunIdx[i];
			const QsJob *K = &B[k].j;

			if (k == jk)
				break;			/* the rest comes after J in share order */
			if (NDec[k] == 0)
				Fail("strict", "job %" PRId64 " (priority %d, n=%d) of STRICT share %d was dispatched while job %" PRId64 " of the same share and unit %d, ahead of it in share order (priority %d, n=%d%s), stayed RUNNABLE and was not dispatched (3.2: STRICT skips every later job of the unit)",
					 J->id, J->priority, J->count, J->share, K->id, J->unit, K->priority,
					 K->count, K->promised_at != QS_NO_TIME ? ", promised" : "");
		}
	}
}

/*
 * MyHold: HeldBack as the core's kind of hold, in the same precedence.
 */
static QsHold
MyHold(const QsJob *j)
{
	if (OverBudget(j->share, j->unit))
		return QS_HOLD_BUDGET_EXHAUSTED;
	if (Cf.agent_bound[j->unit] && j->count > Cf.agent_max[j->unit])
		return QS_HOLD_NO_AGENT_FITS;
	if (j->claim_backoff_until != QS_NO_TIME && Cf.now < j->claim_backoff_until)
		return QS_HOLD_CLAIM_BACKOFF;
	return QS_HOLD_NONE;
}

/*
 * StrictHeadCheck (explain, 3.2): for one RUNNABLE job J of a STRICT share
 * a pass (the passes take turns over them, drawing no random number), the
 * job the core names as the held-back one that keeps J waiting
 * (QsStrictHeadHeld, on the world the pass read) must be the first job of
 * J's share and unit ahead of J in share order that step 1 does not fail
 * (3.9) and that is held back (3.10, 3.11), with that hold; and when there
 * is one, the pass did not dispatch J, unless as a freed promise in step 4,
 * before any cursor starts (3.6; as in StrictCheck).  (explain says
 * WAITING_FOR_VICTIMS of a promised job before it looks at the share.)
 */
static void
StrictHeadCheck(int n)
{
	int			nstrict = 0, pick, jk = -1, want_k = -1;
	QsHold		want = QS_HOLD_NONE, got;
	QsJob		head;

	for (int k = 0; k < n; k++)
		nstrict += B[k].state == W_RUNNABLE && Cf.strict[B[k].j.share];
	if (nstrict == 0)
		return;
	pick = (int) (St.passes % nstrict);
	for (int k = 0; k < n && jk < 0; k++)
		if (B[k].state == W_RUNNABLE && Cf.strict[B[k].j.share] && pick-- == 0)
			jk = k;
	for (int i = RunFrom[B[jk].j.share][B[jk].j.unit]; i < RunTo[B[jk].j.share][B[jk].j.unit]; i++)
	{
		int			k = RunIdx[i];

		if (k == jk)
			break;
		if (RunnableExpired(&B[k]) == NULL && (want = MyHold(&B[k].j)) != QS_HOLD_NONE)
		{
			want_k = k;
			break;
		}
	}
	memset(&head, 0, sizeof(head));
	got = WStrictHead(&W, &B[jk], &head);
	if (got != want || (want != QS_HOLD_NONE && head.id != B[want_k].j.id))
		Fail("strict-head", "explain of job %" PRId64 " (STRICT share %d, unit %d): the core names job %" PRId64 " held back (%d), 3.2 says job %" PRId64 " (%d)",
			 B[jk].j.id, B[jk].j.share, B[jk].j.unit, got != QS_HOLD_NONE ? head.id : 0,
			 got, want_k >= 0 ? B[want_k].j.id : 0, want);
	if (want != QS_HOLD_NONE && Dispatched[jk] && !Step4[jk])
		Fail("strict-head", "job %" PRId64 " of STRICT share %d was dispatched behind job %" PRId64 ", which is held back (3.2)",
			 B[jk].j.id, B[jk].j.share, B[want_k].j.id);
	St.strict_heads += want != QS_HOLD_NONE;
}

/*
 * WakeCheck (QsOutput.wake_at): when the pass reports when to run again
 * for a min_runtime exemption, that time is after the pass's time and is
 * scheduled_at + min_runtime of a claimed job holding capacity (of a share
 * with min_runtime); it is no earlier than the earliest exemption that a
 * preemptor left without victims passed over (lo), and no later than the
 * earliest exemption of a job that would have had victims but for the
 * exemptions (hi: that job waits for it).  Without any exemption passed
 * over, it is not set.
 */
static void
WakeCheck(QsTime wake, QsTime lo, QsTime hi, int64_t hi_job, const char *hint)
{
	bool		found = false;

	if (wake == QS_NO_TIME)
	{
		if (hi != QS_NO_TIME)
			Fail("wake", "job %" PRId64 " got no victims only because they are exempt by min_runtime until %" PRId64 ", but the pass set no wake_at%s",
				 hi_job, hi, hint);
		return;
	}
	St.wakes++;
	for (int h = 0; h < LastN && !found; h++)
	{
		const QsJob *j = &B[h].j;

		found = IsHeld(B[h].state) && j->claimed && Cf.minrt[j->share] > 0 &&
			j->scheduled_at != QS_NO_TIME && j->scheduled_at + Cf.minrt[j->share] == wake;
	}
	if (wake <= Cf.now || !found)
		Fail("wake", "wake_at %" PRId64 " (now %" PRId64 ") is %s", wake, Cf.now,
			 wake <= Cf.now ? "not after the pass's time" :
			 "scheduled_at + min_runtime of no claimed job holding capacity");
	if (lo == QS_NO_TIME)
		Fail("wake", "wake_at %" PRId64 " is set, but no preemptor left without victims passed over an exempt job (3.3: no attempt, or other candidates, than the pass made)",
			 wake);
	if (wake < lo)
		Fail("wake", "wake_at %" PRId64 " is earlier than %" PRId64 ", the earliest exemption a preemptor left without victims passed over",
			 wake, lo);
	if (hi != QS_NO_TIME && wake > hi)
		Fail("wake", "wake_at %" PRId64 " is after %" PRId64 ", when the exemption ends that keeps job %" PRId64 " from its victims%s",
			 wake, hi, hi_job, hint);
}

/*
 * Fold mixes a value into the fingerprint of the run (FNV-1a over its
 * bytes): every decision, promise, lapse and wake_at of every pass.
 */
static void
Fold(int64_t v)
{
	for (int b = 0; b < 8; b++)
	{
		Fingerprint ^= (uint64_t) ((v >> (8 * b)) & 0xff);
		Fingerprint *= 1099511628211ULL;
	}
}

/* ---------------------------------------------------------------- */
/* one pass, checked																 */

typedef struct PassResult
{
	int			ndecisions, nlapsed, npromised;
	bool		stops_pending_before;
} PassResult;

static int
CmpPromise(const void *x, const void *y)
{
	const QsJob *a = &B[*(const int *) x].j;
	const QsJob *b = &B[*(const int *) y].j;

	if (a->promised_at != b->promised_at)
		return a->promised_at < b->promised_at ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static bool
VictimsPending(int jk)
{
	for (int h = 0; h < LastN; h++)
		if (IsHeld(B[h].state) && B[h].j.preempted_for == B[jk].j.id &&
			B[h].j.stop != QS_STOP_NONE && !Handled[h])
			return true;
	return false;
}

static PassResult
CheckedPass(void)
{
	static int	rk[MAXJ], plist[MAXJ], vk[MAXJ], loopjobs[MAXJ];
	static bool imm[MAXJ];
	static bool lapsed[MAXJ], inprom[MAXJ];
	int64_t		start[MAXU][MAXS];
	bool		viol[MAXU];
	int			n = W.njobs, nd, nr = 0, np = 0, nloop = 0, i, phase = 0;
	const QsOutput *out;
	const QsDecision *D;
	PassResult	res;
	char		buf[256], buf2[512];
	const char *why;
	long		cnt_before[6] = {0}, cnt_after[6] = {0};
	bool		borrowing;
	int64_t		FairJob = 0;	/* (c): a job the pass may have taken early */
	static char FairNote[512];
	QsTime		WakeLo = QS_NO_TIME, WakeHi = QS_NO_TIME;
	int64_t		WakeHiJob = 0;
	static char WakeHint[512];

	OverTimeFeed();
	TakeCfg();
	memcpy(B, W.jobs, sizeof(WJob) * n);
	LastN = n;
	LastOut = NULL;
	out = WPass(&W);
	LastOut = out;
	D = out->decisions;
	nd = out->ndecisions;
	St.passes++;
	for (int x = 0; x < nd; x++)
	{
		Fold(D[x].action);
		Fold(D[x].job_id);
		Fold(D[x].stop);
		Fold(D[x].preempted_for);
		Fold(D[x].immediate);
	}
	for (int x = 0; x < out->npromised; x++)
		Fold(out->promised[x]);
	for (int x = 0; x < out->nlapsed; x++)
		Fold(-out->lapsed[x]);
	Fold(out->wake_at);
	res.ndecisions = nd;
	res.nlapsed = out->nlapsed;
	res.npromised = out->npromised;
	res.stops_pending_before = false;

	memset(Handled, 0, n);
	memset(Kept, 0, n);
	memset(Victimized, 0, n);
	memset(NDec, 0, n);
	memset(TimeDec, 0, n);
	memset(Step4, 0, n);
	memset(Dispatched, 0, n);
	memset(RUse, 0, sizeof(RUse));
	memset(RPend, 0, sizeof(RPend));
	memset(RProm, 0, sizeof(RProm));
	BuildRunLists(n);
	for (int k = 0; k < n; k++)
	{
		const QsJob *j = &B[k].j;

		cnt_before[B[k].state]++;
		Ex[k].state = B[k].state;
		Ex[k].stop = j->stop;
		Ex[k].claimed = j->claimed;
		Ex[k].promised = j->promised_at != QS_NO_TIME;
		Ex[k].fa = j->failed_attempts;
		Ex[k].pc = j->preemption_count;
		Ex[k].ll = j->lease_losses;
		Ex[k].cr = j->claim_requeues;
		Ex[k].backoff = j->claim_backoff_until;
		Ex[k].preempted_for = j->preempted_for;
		lapsed[k] = inprom[k] = false;
		if (IsHeld(B[k].state))
		{
			RUse[j->share][j->unit] += j->count;
			if (j->stop != QS_STOP_NONE)
			{
				RPend[j->share][j->unit] += j->count;
				res.stops_pending_before = true;
			}
		}
	}

	/* (c) each decision legal for the job as the pass read it; one a job */
	for (i = 0; i < nd; i++)
	{
		const QsDecision *d = &D[i];
		int			k;
		const WJob *b;
		bool		held;

		if (d->job_id < 1 || d->job_id > n)
			Fail("decision", "decision %d names job %" PRId64 ", which does not exist", i, d->job_id);
		k = (int) d->job_id - 1;
		b = &B[k];
		held = IsHeld(b->state);
		if (d->share != b->j.share || d->unit != b->j.unit || d->count != b->j.count)
			Fail("decision", "decision %d about job %" PRId64 " names share %d unit %d n=%d, the job has %d/%d/%d",
				 i, d->job_id, d->share, d->unit, d->count, b->j.share, b->j.unit, b->j.count);
		if (NDec[k])
			Fail("decision", "job %" PRId64 " has two decisions in one pass (the second: %s)",
				 d->job_id, ActionName(d->action));
		NDec[k] = 1;
		switch (d->action)
		{
			case QS_DISPATCH:
				if (b->state != W_RUNNABLE)
					Fail("decision", "job %" PRId64 " dispatched but it is %s", d->job_id, StateName(b->state));
				if (!Cf.env_enabled)
					Fail("disabled", "job %" PRId64 " dispatched in a DISABLED environment", d->job_id);
				if ((why = HeldBack(&b->j)) != NULL)
					Fail("held-back", "job %" PRId64 " (unit %d n=%d, claim_backoff_until %" PRId64 ", now %" PRId64 ") dispatched, but it is %s",
						 d->job_id, b->j.unit, b->j.count, b->j.claim_backoff_until, Cf.now, why);
				phase = 2;
				Ex[k].state = W_SCHEDULED;
				Ex[k].promised = false;
				Ex[k].stop = QS_STOP_NONE;
				St.dispatches++;
				break;
			case QS_PREEMPT:
				if (!held || b->j.stop != QS_STOP_NONE)
					Fail("decision", "job %" PRId64 " preempted but it is %s with stop %s",
						 d->job_id, StateName(b->state), StopText(b->j.stop));
				if (d->preempted_for == 0)
				{
					if (d->stop != QS_STOP_CAPACITY_REDUCED)
						Fail("decision", "victim %" PRId64 " has no preemptor but stop %s", d->job_id, StopText(d->stop));
					if (phase > 1)
						Fail("phase", "CAPACITY_REDUCED victim %" PRId64 " after the dispatch loop began (3: repair is step 2)", d->job_id);
					phase = 1;
					St.repairs++;
				}
				else
				{
					const WJob *pj;

					if (d->preempted_for < 1 || d->preempted_for > n)
						Fail("decision", "job %" PRId64 " preempted for unknown job %" PRId64, d->job_id, d->preempted_for);
					pj = &B[d->preempted_for - 1];
					if (!Cf.env_enabled)
						Fail("disabled", "job %" PRId64 " preempted for a waiting job in a DISABLED environment", d->job_id);
					if ((why = HeldBack(&pj->j)) != NULL)
						Fail("held-back", "job %" PRId64 " preempted for job %" PRId64 " (unit %d n=%d), which is %s: a held-back job gets no victims",
							 d->job_id, pj->j.id, pj->j.unit, pj->j.count, why);
					if (d->stop != (pj->j.share == b->j.share ? QS_STOP_IN_SHARE : QS_STOP_CROSS_SHARE))
						Fail("decision", "victim %" PRId64 " (share %d) of job %" PRId64 " (share %d) got stop %s",
							 d->job_id, b->j.share, pj->j.id, pj->j.share, StopText(d->stop));
					/* (a) no claimed job stops for a preemptor inside min_runtime */
					if (ExemptEnd(&b->j) != QS_NO_TIME)
						Fail("min-runtime", "claimed job %" PRId64 " of share %d (scheduled_at %" PRId64 ", min_runtime %" PRId64 ") was preempted (%s) for job %" PRId64 " at %" PRId64 ", before its min_runtime passed (3.3: only repairs ignore it)",
							 d->job_id, b->j.share, b->j.scheduled_at, Cf.minrt[b->j.share],
							 StopText(d->stop), d->preempted_for, Cf.now);
					phase = 2;
					St.preemptions++;
				}
				Ex[k].preempted_for = d->preempted_for;
				if (!b->j.claimed)
				{
					Outcome		o = MyOutcome(&b->j, d->stop);

					if (!d->immediate)
						Fail("unclaimed", "unclaimed victim %" PRId64 " was not stopped at once (3.6)", d->job_id);
					if (i + 1 >= nd || D[i + 1].job_id != d->job_id ||
						(D[i + 1].action != QS_REQUEUE && D[i + 1].action != QS_FAIL))
						Fail("unclaimed", "victim %" PRId64 " stopped at once but no REQUEUE or FAIL follows", d->job_id);
					if (D[i + 1].action != o.action || D[i + 1].counter != o.counter)
						Fail("outcome", "victim %" PRId64 " (preemptions %d, retries %d) stopped at once: %s with counter %d, expected %s with counter %d",
							 d->job_id, b->j.preemption_count, b->j.preemption_retries,
							 ActionName(D[i + 1].action), D[i + 1].counter, ActionName(o.action), o.counter);
					ExpectOutcome(k, o);
					i++;
				}
				else
				{
					if (d->immediate)
						Fail("decision", "claimed victim %" PRId64 " marked as stopped at once", d->job_id);
					Ex[k].stop = d->stop;
				}
				break;
			case QS_STOP:
				if (phase > 0)
					Fail("phase", "STOP of job %" PRId64 " after repairs or dispatches (3: time-based work is step 1)", d->job_id);
				if (b->state != W_RUNNING || b->j.stop != QS_STOP_NONE || b->j.deadline == QS_NO_TIME ||
					b->j.deadline > Cf.now || LeaseExpired(b) || d->stop != QS_STOP_TIMEOUT)
					Fail("timeout", "STOP %s of job %" PRId64 " (%s, stop %s, deadline %" PRId64 ", now %" PRId64 ")",
						 StopText(d->stop), d->job_id, StateName(b->state), StopText(b->j.stop),
						 b->j.deadline, Cf.now);
				Ex[k].stop = QS_STOP_TIMEOUT;
				TimeDec[k] = 1;
				break;
			case QS_REQUEUE:
			case QS_FAIL:
				if (phase > 0)
					Fail("phase", "%s of job %" PRId64 " after repairs or dispatches", ActionName(d->action), d->job_id);
				if (held && ClaimExpired(b))
				{
					/* 3.10: back to RUNNABLE, no attempt counted, held back */
					Outcome		o = {QS_REQUEUE, QS_COUNT_NOT_CLAIMED, "NOT_CLAIMED"};
					QsTime		until = Cf.now + MyBackoff(Cf.claim_timeout, b->j.claim_requeues + 1);

					if (d->action != o.action || d->counter != o.counter ||
						d->reason == NULL || strcmp(d->reason, o.reason) != 0 ||
						d->backoff_until != until)
						Fail("claim-timeout", "job %" PRId64 " unclaimed since %" PRId64 " (claim_timeout %" PRId64 ", claim_requeues %d, now %" PRId64 "): %s counter %d reason %s backoff_until %" PRId64 ", expected REQUEUE counter %d reason NOT_CLAIMED backoff_until %" PRId64 " (3.10)",
							 d->job_id, b->j.scheduled_at, Cf.claim_timeout, b->j.claim_requeues,
							 Cf.now, ActionName(d->action), d->counter,
							 d->reason ? d->reason : "none", d->backoff_until, o.counter, until);
					ExpectOutcome(k, o);
					Ex[k].backoff = until;
					St.claim_requeues++;
				}
				else if (held)
				{
					Outcome		o = MyOutcome(&b->j, b->j.stop);

					if (!LeaseExpired(b))
						Fail("lease", "job %" PRId64 " got %s but neither its lease expired nor its claim timeout passed", d->job_id, ActionName(d->action));
					if (d->action != o.action || d->counter != o.counter ||
						(o.reason != NULL && (d->reason == NULL || strcmp(d->reason, o.reason) != 0)))
						Fail("outcome", "job %" PRId64 " lost its lease with stop %s (fa %d/%d, pc %d/%d, lease losses %d/%d): %s counter %d reason %s, expected %s counter %d reason %s (3.6, 3.8, 3.10)",
							 d->job_id, StopText(b->j.stop), b->j.failed_attempts, b->j.max_attempts,
							 b->j.preemption_count, b->j.preemption_retries, b->j.lease_losses,
							 b->j.max_lease_losses, ActionName(d->action), d->counter,
							 d->reason ? d->reason : "none", ActionName(o.action), o.counter,
							 o.reason ? o.reason : "any");
					if (o.counter == QS_COUNT_LEASE_LOSS)
						St.lease_losses++;
					ExpectOutcome(k, o);
				}
				else if (b->state == W_RUNNABLE)
				{
					const char *expired = RunnableExpired(b);

					if (d->action != QS_FAIL || expired == NULL)
						Fail("runnable-timeout", "RUNNABLE job %" PRId64 " (reason %s, n=%d) got %s but 3.9 does not fail it (no MISCONFIGURATION or NO_AGENT_FITS reason older than runnable_timeout, or an agent fits it now, 3.10)",
							 d->job_id, b->status_reason ? b->status_reason : "none", b->j.count,
							 ActionName(d->action));
					if (d->reason == NULL || strcmp(d->reason, expired) != 0)
						Fail("runnable-timeout", "RUNNABLE job %" PRId64 " (reason %s) failed with reason %s, 3.9 says %s",
							 d->job_id, b->status_reason, d->reason ? d->reason : "none", expired);
					if (strcmp(expired, "RUNNABLE_TIMEOUT") != 0)
						St.no_agent_timeouts++;
					Ex[k].state = W_FAILED;
					Ex[k].promised = false;
				}
				else
					Fail("decision", "%s of job %" PRId64 ", which is %s", ActionName(d->action), d->job_id,
						 StateName(b->state));
				TimeDec[k] = 1;
				break;
			default:
				Fail("decision", "decision %d has unknown action %d", i, d->action);
		}
	}

	/* (c) the time-based work is complete (3.8, 3.9) */
	for (int k = 0; k < n; k++)
	{
		const WJob *b = &B[k];

		if (LeaseExpired(b) && !(TimeDec[k] && (Ex[k].state == W_RUNNABLE || Ex[k].state == W_FAILED)))
			Fail("lease", "the lease of job %" PRId64 " expired (%" PRId64 " < now %" PRId64 ") but the pass did not end its attempt",
				 b->j.id, b->j.lease_until, Cf.now);
		if (b->state == W_RUNNING && b->j.stop == QS_STOP_NONE && b->j.deadline != QS_NO_TIME &&
			b->j.deadline <= Cf.now && !LeaseExpired(b) && !TimeDec[k])
			Fail("timeout", "job %" PRId64 " ran past its timeout but no stop was requested", b->j.id);
		if (RunnableExpired(b) && !TimeDec[k])
			Fail("runnable-timeout", "job %" PRId64 " (reason %s since %" PRId64 ", runnable_timeout %" PRId64 ", now %" PRId64 ") did not fail: 3.9 fails it with %s",
				 b->j.id, b->status_reason, b->status_reason_at, W.runnable_timeout, Cf.now,
				 RunnableExpired(b));
		if (ClaimExpired(b) && !TimeDec[k])
			Fail("claim-timeout", "job %" PRId64 " SCHEDULED at %" PRId64 " was not claimed within the claim timeout %" PRId64 " (now %" PRId64 ") but the pass did not requeue it (3.10)",
				 b->j.id, b->j.scheduled_at, Cf.claim_timeout, Cf.now);
	}

	/* replay, step 1: time-based work */
	for (i = 0; i < nd; i++)
	{
		const QsDecision *d = &D[i];
		int			k = (int) d->job_id - 1;
		const QsJob *j = &B[k].j;

		if (!TimeDec[k])
			break;
		Handled[k] = 1;
		if (d->action == QS_STOP)
			RPend[j->share][j->unit] += j->count;
		else if (IsHeld(B[k].state))
		{
			RUse[j->share][j->unit] -= j->count;
			if (j->stop != QS_STOP_NONE)
				RPend[j->share][j->unit] -= j->count;
		}
	}

	/* step 2: repair (3.5) */
	for (int u = 0; u < Cf.nunits; u++)
	{
		FutureUse(u, false, start[u]);
		viol[u] = Violation(u, start[u], buf) != NULL;
	}
	for (; i < nd && D[i].action == QS_PREEMPT && D[i].preempted_for == 0; i++)
	{
		int			k = (int) D[i].job_id - 1;
		const QsJob *j = &B[k].j;

		rk[nr++] = k;
		Handled[k] = 1;
		if (D[i].immediate)
		{
			RUse[j->share][j->unit] -= j->count;
			i++;
		}
		else
			RPend[j->share][j->unit] += j->count;
	}
	for (int u = 0; u < Cf.nunits; u++)
	{
		int64_t		use[MAXS];

		FutureUse(u, false, use);
		if ((why = Violation(u, use, buf)) != NULL)
			Fail("repair-incomplete", "after the repair step, once pending stops complete: %s (3.5: the pass preempts until (I1)-(I3) hold)",
				 why);
	}
	CheckRepairs(rk, nr, viol, start);

	/* step 3: the re-check of promises, in promise order (3.6) */
	for (int k = 0; k < n; k++)
		if (B[k].state == W_RUNNABLE && B[k].j.promised_at != QS_NO_TIME && !Handled[k])
			plist[np++] = k;
	qsort(plist, np, sizeof(int), CmpPromise);
	for (int x = 0; x < out->nlapsed; x++)
	{
		int64_t		id = out->lapsed[x];

		if (id < 1 || id > n || B[id - 1].state != W_RUNNABLE || B[id - 1].j.promised_at == QS_NO_TIME)
			Fail("promise", "promise of job %" PRId64 " lapsed, but it held none", id);
		lapsed[id - 1] = true;
		St.lapses++;
	}
	for (int x = 0; x < np; x++)
	{
		int			k = plist[x];
		const QsJob *j = &B[k].j;
		int64_t		use[MAXS];

		FutureUse(j->unit, true, use);
		/* a held-back job loses its promise whatever the room (3.10) */
		if ((why = HeldBack(j)) == NULL)
			why = CheckJob(use, j, buf);
		if ((why == NULL) == lapsed[k])
			Fail("recheck", "promise of job %" PRId64 " %s, but with pending stops gone and the earlier kept promises holding %s (3.6)",
				 j->id, lapsed[k] ? "lapsed" : "was kept", why ? why : "it may be dispatched");
		if (why == NULL)
		{
			Kept[k] = 1;
			RProm[j->share][j->unit] += j->count;
		}
		else
			Ex[k].promised = false;
	}

	/* step 4: promised jobs whose victims have all stopped, in promise order */
	if (Cf.env_enabled)
	{
		int			e4[MAXJ];
		int			ne4 = 0;

		for (int x = 0; x < np; x++)
		{
			int			k = plist[x];

			if (Kept[k] && !VictimsPending(k) && MayDispatch(k, buf) == NULL)
			{
				e4[ne4++] = k;
				ApplyDispatch(k);
				Step4[k] = 1;
			}
		}
		for (int x = 0; x < ne4; x++)
		{
			if (i + x >= nd || D[i + x].action != QS_DISPATCH || !Step4[D[i + x].job_id - 1])
				Fail("promised-first", "%d promised jobs whose victims have all stopped may be dispatched (first: job %" PRId64 "), but the pass's %d-th decision after its repairs is not one of their dispatches (3.6: they go before any other job, in promise order)",
					 ne4, B[e4[0]].j.id, x + 1);
		}
		i += ne4;
	}

	/*
	 * step 5: the dispatch loop, in lockstep with a model of the cursors.
	 * The candidate either is the subject of the pass's next decision (a
	 * dispatch, or victims then a dispatch or a promise) or got nothing:
	 * then it must have been unable to start and to get victims, and the
	 * skip rule applies to its stream.
	 */
	StrictCheck(D, nd);
	if (Cf.env_enabled)
	{
		for (int s = 0; s < Cf.nshares; s++)
			for (int u = 0; u < Cf.nunits; u++)
			{
				SBelow[s][u] = INT32_MAX;
				StreamAdvance(s, u, true);
			}
		for (int c; (c = NextCandidate(&borrowing)) >= 0;)
		{
			const QsJob *C = &B[c].j;
			const QsDecision *d = i < nd ? &D[i] : NULL;

			if (d != NULL && d->action == QS_DISPATCH && d->job_id == C->id)
			{
				if ((why = MayDispatch(c, buf)) != NULL)
					Fail("dispatch", "job %" PRId64 " (share %d, unit %d, n=%d) dispatched although %s (3.2)",
						 d->job_id, d->share, d->unit, d->count, why);
				ApplyDispatch(c);
				loopjobs[nloop++] = c;
				i++;
			}
			else if (d != NULL && d->action == QS_PREEMPT && d->preempted_for == C->id)
			{
				int			nv = 0;

				if ((why = MayDispatch(c, buf)) == NULL)
					Fail("preempt", "job %" PRId64 " was given victims although it could be dispatched at once", C->id);
				for (; i < nd && D[i].action == QS_PREEMPT && D[i].preempted_for == C->id;)
				{
					vk[nv] = (int) D[i].job_id - 1;
					imm[nv++] = D[i].immediate;
					i += D[i].immediate ? 2 : 1;
				}
				CheckVictims(c, vk, imm, nv);
				for (int x = 0; x < nv; x++)
				{
					const QsJob *v = &B[vk[x]].j;

					Handled[vk[x]] = 1;
					if (imm[x])
						RUse[v->share][v->unit] -= v->count;
					else
						RPend[v->share][v->unit] += v->count;
				}
				Victimized[c] = 1;
				loopjobs[nloop++] = c;
				if (i < nd && D[i].action == QS_DISPATCH && D[i].job_id == C->id)
				{
					if ((why = MayDispatch(c, buf)) != NULL)
						Fail("dispatch", "job %" PRId64 " dispatched right after its victims stopped, although %s",
							 C->id, why);
					ApplyDispatch(c);
					i++;
				}
				else
				{
					if (MayDispatch(c, buf) == NULL)
						Fail("promise", "job %" PRId64 " could start at once after its victims stopped, yet it was only promised", C->id);
					inprom[c] = true;
					Kept[c] = 1;
					RProm[C->share][C->unit] += C->count;
					Ex[c].promised = true;
					/* STRICT: not dispatched, though given victims */
					if (Cf.strict[C->share])
					{
						SBelow[C->share][C->unit] = 0;
						St.strict_stops++;
					}
				}
			}
			else
			{
				/*
				 * The candidate got nothing.  The order among candidates
				 * that get nothing cannot be seen in the decisions; a
				 * wrong order shows once a candidate that could have
				 * started is passed over (the cursor failure below).  (c)
				 * With FAIR, when none fitted in its own capacity and the
				 * pass goes on with the decision of another job D, the pass
				 * may have taken D, or the FIFO choice before it, over this
				 * one; until D's decision is met, a cursor failure is named
				 * "fair" (3.2: the least borrowing per weight first).  A
				 * cursor failure of a STRICT share whose stream had a job
				 * dispatched ahead of it is named "strict".  These notes
				 * are hints only in the other failures.
				 */
				const char *cursor_tag = "cursor";
				const char *tagged = NULL;
				bool		held_back = HeldBack(C) != NULL;
				QsTime		live_end, all_end;
				int64_t		sid = d == NULL ? 0 :
					d->action == QS_PREEMPT ? d->preempted_for : d->job_id;

				if (FairJob != sid)
					FairJob = 0;	/* D was decided on: the suspicion is gone */
				if (Cf.fair && borrowing && d != NULL && FairJob == 0)
				{
					/* D itself under a cursor, or the FIFO choice, taken over C */
					int			h = FifoChoice != c ? FifoChoice : -1;

					for (int s = 0; s < Cf.nshares; s++)
					{
						int			x = ShareHead(s);

						if (x >= 0 && x != c && B[x].j.id == sid)
							h = x;
					}
					if (h >= 0)
					{
						FairJob = sid;
						snprintf(FairNote, sizeof(FairNote),
								 "; with FAIR the pass seems to have taken job %" PRId64 " of share %d (queued %" PRId64 ", borrowing %" PRId64 " / weight %d) over job %" PRId64 " of share %d (queued %" PRId64 ", borrowing %" PRId64 " / weight %d), %s",
								 B[h].j.id, B[h].j.share, B[h].j.queued_at, FairKey(&B[h].j),
								 Cf.weight[B[h].j.share], C->id, C->share, C->queued_at, FairKey(C),
								 Cf.weight[C->share],
								 QueueBefore(C, &B[h].j) ? "a later job whose borrowing per weight is not strictly less" : "one borrowing more per weight");
					}
				}

				/*
				 * STRICT: the model reaches a job of a STRICT share only when
				 * every job ahead of it in its stream was dispatched (or
				 * decided before the loop); if the pass passed it over, the
				 * STRICT skip came after a job that was dispatched.  This
				 * note, about the job's own stream, goes before FAIR's.
				 */
				if (Cf.strict[C->share])
				{
					int			prev = -1;

					for (int x = RunFrom[C->share][C->unit]; RunIdx[x] != c; x++)
						if (Dispatched[RunIdx[x]] && !Step4[RunIdx[x]])
							prev = RunIdx[x];
					if (prev >= 0)
					{
						cursor_tag = "strict";
						sprintf(buf2, "; its STRICT share's job %" PRId64 " ahead of it in the stream was dispatched%s in this pass, and STRICT skips only after a job that was not dispatched",
								B[prev].j.id, Victimized[prev] ? " right after its victims stopped" : "");
						tagged = buf2;
					}
				}
				if (tagged == NULL && FairJob != 0)
				{
					cursor_tag = "fair";
					tagged = FairNote;
				}
				if (MayDispatch(c, buf) == NULL)
				{
					char		wbuf[128];

					if (d != NULL)
						sprintf(wbuf, "went on with %s of job %" PRId64, ActionName(d->action),
								d->action == QS_PREEMPT ? d->preempted_for : d->job_id);
					Fail(cursor_tag, "job %" PRId64 " (share %d unit %d n=%d) came under the cursor and could be dispatched, but the pass %s%s (3.2: own capacity first, then queue order%s; the skip rule; best effort)",
						 C->id, C->share, C->unit, C->count, d ? wbuf : "dispatched nothing more",
						 tagged ? tagged : "", Cf.fair ? " or FAIR" : "");
				}
				if (held_back)
					St.held_back++;
				if (!Kept[c] && !held_back)
				{
					char		pbuf[256];

					if ((why = PreemptionPossible(c, true, &live_end, &all_end, pbuf)) != NULL)
						Fail(strstr(why, "reclaim") ? "missed-reclaim" : "missed-in-share",
							 "job %" PRId64 " (share %d unit %d n=%d prio %d) came under the cursor and got nothing, but %s%s",
							 C->id, C->share, C->unit, C->count, C->priority, why,
							 tagged ? tagged : "");
					/* the earliest end of an exemption passed over (wake_at) */
					if (all_end != QS_NO_TIME && (WakeLo == QS_NO_TIME || all_end < WakeLo))
						WakeLo = all_end;
					if (live_end != QS_NO_TIME)
					{
						QsTime		l2, a2;

						/* victims but for the exemptions: it waits for them */
						if (PreemptionPossible(c, false, &l2, &a2, pbuf) != NULL)
						{
							St.exempt_waits++;
							if (WakeHi == QS_NO_TIME || live_end < WakeHi)
							{
								WakeHi = live_end;
								WakeHiJob = C->id;
								/* did the pass perhaps never try it? */
								snprintf(WakeHint, sizeof(WakeHint), "%s", tagged ? tagged : "");
							}
						}
					}
				}
				/*
				 * a kept promise waiting for its victims was not tried, nor
				 * was a held-back job (3.10)
				 */
				if (!Kept[c] && !held_back && C->count < SBelow[C->share][C->unit])
					SBelow[C->share][C->unit] = C->count;
				/* STRICT: not dispatched, whatever the reason */
				if (Cf.strict[C->share])
				{
					SBelow[C->share][C->unit] = 0;
					St.strict_stops++;
				}
			}
			StreamAdvance(C->share, C->unit, false);
		}
	}
	if (i < nd)
		Fail("cursor", "%s of job %" PRId64 " (preempted_for %" PRId64 "), which the cursor never reached: the skip rule passed it over, it was decided already, or the pass took the jobs in another order (3.2)",
			 ActionName(D[i].action), D[i].job_id, D[i].preempted_for);
	WakeCheck(out->wake_at, WakeLo, WakeHi, WakeHiJob, WakeHint);

	/* the new promises are the preemptors that did not start at once */
	for (int x = 0; x < out->npromised; x++)
	{
		int64_t		id = out->promised[x];

		if (id < 1 || id > n || !inprom[id - 1])
			Fail("promise", "job %" PRId64 " was promised room without being given victims that still hold it", id);
		inprom[id - 1] = false;
	}
	for (int k = 0; k < n; k++)
		if (inprom[k])
			Fail("promise", "job %" PRId64 " got victims, was not dispatched and was not promised the room", B[k].j.id);
	St.promises += out->npromised;

	/* (b) the dispatch order */
	for (int x = 0; x < nloop; x++)
		OrderCheck(loopjobs[x], Dispatched[loopjobs[x]] ? "dispatched" : "given victims");

	/* (c) the fleet's bound of each share and unit (3.10) */
	for (int x = 0; x < Cf.nshares * Cf.nunits; x++)
	{
		int			u = x % Cf.nunits;
		int64_t		want = Cf.agent_bound[u] ? Cf.agent_max[u] : QS_UNBOUNDED;

		if (out->fit_limits[x].agent_max != want)
			Fail("no-agent-fits", "fit_limits of share %d unit %d: agent_max %" PRId64 ", the agents say %" PRId64 " (3.10: the largest live, active agent when they bound the unit, else unbounded)",
				 x / Cf.nunits, u, out->fit_limits[x].agent_max, want);
	}

	/* (b) explain of a STRICT share's job names the held-back job ahead */
	StrictHeadCheck(n);

	/* apply, and (c) every job where its decisions put it */
	WApply(&W);
	for (int k = 0; k < n; k++)
	{
		const WJob *a = &W.jobs[k];
		const Expect *e = &Ex[k];

		cnt_after[a->state]++;
		if (a->state != e->state || (e->state <= W_RUNNING &&
									 (a->j.stop != e->stop || a->j.claimed != e->claimed ||
									  (a->j.promised_at != QS_NO_TIME) != e->promised)) ||
			a->j.failed_attempts != e->fa || a->j.preemption_count != e->pc ||
			a->j.lease_losses != e->ll || a->j.claim_requeues != e->cr ||
			a->j.claim_backoff_until != e->backoff || a->j.preempted_for != e->preempted_for ||
			a->j.queued_at != B[k].j.queued_at)
			Fail("bookkeeping", "job %" PRId64 " is %s stop %s%s%s fa=%d pc=%d ll=%d cr=%d backoff=%" PRId64 " queued=%" PRId64 " after the pass; its decisions say %s stop %s%s%s fa=%d pc=%d ll=%d cr=%d backoff=%" PRId64 " queued=%" PRId64 " (kept)",
				 a->j.id, StateName(a->state), StopText(a->j.stop), a->j.claimed ? " claimed" : "",
				 a->j.promised_at != QS_NO_TIME ? " promised" : "", a->j.failed_attempts,
				 a->j.preemption_count, a->j.lease_losses, a->j.claim_requeues,
				 a->j.claim_backoff_until, a->j.queued_at, StateName(e->state), StopText(e->stop),
				 e->claimed ? " claimed" : "", e->promised ? " promised" : "", e->fa, e->pc,
				 e->ll, e->cr, e->backoff, B[k].j.queued_at);
		if (a->j.promised_at != QS_NO_TIME && a->state != W_RUNNABLE)
			Fail("promise", "job %" PRId64 " holds a promise but is %s", a->j.id, StateName(a->state));
		if (a->state == W_RUNNABLE)
		{
			const char *r = ExpectedReason(&a->j);

			if (r != NULL && strcmp(r, "NO_AGENT_FITS") == 0)
				St.no_agent_fits++;
			if (r != NULL && strcmp(r, "BUDGET_EXHAUSTED") == 0)
				St.over_budget++;
			if (r != NULL && strcmp(r, "BUDGET_EXHAUSTED") == 0 &&
				W.budget[a->j.share][a->j.unit] != floor(W.budget[a->j.share][a->j.unit]))
				St.over_fraction++;

			if ((r == NULL) != (a->status_reason == NULL) ||
				(r != NULL && strcmp(r, a->status_reason) != 0))
				Fail("misconfiguration", "RUNNABLE job %" PRId64 " (share %d unit %d n=%d) has reason %s, 3.7 and 3.10 say %s",
					 a->j.id, a->j.share, a->j.unit, a->j.count,
					 a->status_reason ? a->status_reason : "none", r ? r : "none");
		}
	}
	{
		long		runnable = cnt_before[W_RUNNABLE], held = 0, failed = cnt_before[W_FAILED];

		for (int x = 0; x < nd; x++)
		{
			const QsDecision *d = &D[x];
			bool		was_held = IsHeld(B[d->job_id - 1].state);

			if (d->action == QS_DISPATCH)
				runnable--;
			else if (d->action == QS_REQUEUE)
				runnable++, held -= was_held;
			else if (d->action == QS_FAIL)
			{
				failed++;
				if (was_held)
					held--;
				else
					runnable--;
			}
			if (d->action == QS_DISPATCH)
				held++;
		}
		held += cnt_before[W_SCHEDULED] + cnt_before[W_STARTING] + cnt_before[W_RUNNING];
		if (cnt_after[W_RUNNABLE] != runnable || cnt_after[W_FAILED] != failed ||
			cnt_after[W_SCHEDULED] + cnt_after[W_STARTING] + cnt_after[W_RUNNING] != held ||
			cnt_after[W_SUCCEEDED] != cnt_before[W_SUCCEEDED])
			Fail("bookkeeping", "state counts after the pass (RUNNABLE %ld, held %ld, FAILED %ld) do not add up with the decisions (%ld, %ld, %ld)",
				 cnt_after[W_RUNNABLE], cnt_after[W_SCHEDULED] + cnt_after[W_STARTING] + cnt_after[W_RUNNING],
				 cnt_after[W_FAILED], runnable, held, failed);
		if (cnt_after[0] + cnt_after[1] + cnt_after[2] + cnt_after[3] + cnt_after[4] + cnt_after[5] != n)
			Fail("bookkeeping", "jobs lost: %d submitted, states count otherwise", n);
	}

	/* (a) the invariants after the pass, from the world as applied */
	{
		bool		now_ok = true;

		for (int u = 0; u < Cf.nunits; u++)
		{
			int64_t		now[MAXS] = {0}, fut[MAXS] = {0};

			for (int k = 0; k < n; k++)
			{
				const WJob *a = &W.jobs[k];

				if (a->j.unit != u)
					continue;
				if (IsHeld(a->state))
				{
					now[a->j.share] += a->j.count;
					if (a->j.stop == QS_STOP_NONE)
						fut[a->j.share] += a->j.count;
				}
				else if (a->state == W_RUNNABLE && a->j.promised_at != QS_NO_TIME)
					fut[a->j.share] += a->j.count;
			}
			if ((why = Violation(u, fut, buf)) != NULL)
				Fail("invariant-future", "after the pass, once pending stops complete and promises are kept: %s (3.1, 3.6)", why);
			if ((why = Violation(u, now, buf2)) != NULL)
			{
				now_ok = false;
				if (!AdminDirty)
					Fail("invariant-now", "after the pass, pending stops still holding: %s, and no limit was changed since the state last satisfied (I1)-(I3) (3.1)",
						 why);
			}
		}
		if (now_ok)
			AdminDirty = false;
	}
	St.checks++;
	LastOut = NULL;
	WFreeAll();
	return res;
}

/* ---------------------------------------------------------------- */
/* the outside world																 */

static int
CountIn(WState s)
{
	int			c = 0;

	for (int k = 0; k < W.njobs; k++)
		c += W.jobs[k].state == s;
	return c;
}

/* a random job matching pred, or -1 */
static int
Pick(bool (*pred) (const WJob *))
{
	int			c = 0, pick = -1;

	for (int k = 0; k < W.njobs; k++)
		if (pred(&W.jobs[k]) && Rand(0, c++) == 0)
			pick = k;
	return pick;
}

static bool
PScheduled(const WJob *j)
{
	return j->state == W_SCHEDULED;
}
static bool
PStarting(const WJob *j)
{
	return j->state == W_STARTING;
}
static bool
PClaimed(const WJob *j)
{
	return (j->state == W_STARTING || j->state == W_RUNNING) && j->j.claimed;
}
static bool
PClaimedNoStop(const WJob *j)
{
	return PClaimed(j) && j->j.stop == QS_STOP_NONE;
}
static bool
PStopping(const WJob *j)
{
	return PClaimed(j) && j->j.stop != QS_STOP_NONE;
}
static bool
PLive(const WJob *j)
{
	return j->state <= W_RUNNING;
}
static bool
PRunnable(const WJob *j)
{
	return j->state == W_RUNNABLE;
}
static bool
PPromised(const WJob *j)
{
	return j->state == W_RUNNABLE && j->j.promised_at != QS_NO_TIME;
}

/* the next time edge of the fleet rules (3.10) of a job, or QS_NO_TIME */
static QsTime
FleetEdge(const WJob *j)
{
	if (j->state == W_SCHEDULED && !j->j.claimed && W.claim_timeout != QS_NO_TIME &&
		j->j.scheduled_at + W.claim_timeout >= W.now)
		return j->j.scheduled_at + W.claim_timeout;	/* the claim timeout passes */
	if (j->state == W_RUNNABLE && j->j.claim_backoff_until != QS_NO_TIME &&
		j->j.claim_backoff_until >= W.now)
		return j->j.claim_backoff_until;	/* the backoff ends */
	return QS_NO_TIME;
}

static bool
PFleetEdge(const WJob *j)
{
	return FleetEdge(j) != QS_NO_TIME;
}

static QsTime
LeaseLength(void)
{
	return (QsTime) Rand(30, 120) * SEC;
}

/* back to RUNNABLE or to FAILED, as the shell applies an outcome */
static void
EndAttemptHere(WJob *job, bool fail)
{
	job->state = fail ? W_FAILED : W_RUNNABLE;
	job->j.state = QS_RUNNABLE;
	job->j.stop = QS_STOP_NONE;
	job->j.claimed = false;
	job->j.lease_until = QS_NO_TIME;
	job->j.deadline = QS_NO_TIME;
	job->j.promised_at = QS_NO_TIME;
}

static void
Trace(const char *fmt,...)
{
	va_list		ap;

	if (!Verbose)
		return;
	printf("  [%ld] ", Step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static void
Submit(void)
{
	int			s, u, n, k;
	WJob	   *job;
	int			tries = 0;

	if (W.njobs >= MAXJ - 1)
		return;
	do
		s = Rand(0, W.nshares - 1);
	while (!W.shares[s].enabled && ++tries < 10);
	if (!W.shares[s].enabled)
		return;					/* a DISABLED share accepts no new jobs */
	u = Rand(0, W.nunits - 1);
	n = Rand(0, 99);
	n = n < 50 ? 1 : n < 70 ? 2 : n < 82 ? 3 : n < 90 ? 4 : Rand(5, 9);
	job = WSubmitUnit(&W, NULL, s, u, Rand(0, 5), n);
	k = (int) job->j.id - 1;
	job->j.max_attempts = Rand(1, 3);
	n = Rand(0, 9);
	job->j.preemption_retries = n < 4 ? -1 : n < 6 ? 0 : Rand(1, 3);
	job->j.max_lease_losses = Rand(0, 3);
	Timeout[k] = Chance(30) ? (QsTime) Rand(20, 200) * SEC : QS_NO_TIME;
	St.submitted++;
	Trace("submit job %" PRId64 " share %d unit %d n=%d prio %d", job->j.id, s, u, job->j.count,
		  job->j.priority);
}

static void
ClaimOne(int k)
{
	WClaim(&W, &W.jobs[k], LeaseLength());
	Trace("claim job %d", k + 1);
}

static void
Running(int k)
{
	WJob	   *job = &W.jobs[k];

	job->state = W_RUNNING;
	job->j.state = QS_RUNNING;
	if (Timeout[k] != QS_NO_TIME)
		job->j.deadline = W.now + Timeout[k];
	Trace("job %d RUNNING", k + 1);
}

/* the agent acknowledges a requested stop; the outcome checked */
static void
Ack(int k)
{
	WJob	   *job = &W.jobs[k];
	Outcome		o = MyOutcome(&job->j, job->j.stop);
	int32_t		fa = job->j.failed_attempts, pc = job->j.preemption_count;
	int32_t		ll = job->j.lease_losses;
	QsStop		stop = job->j.stop;

	WStopped(&W, job);
	if (job->state != (o.action == QS_FAIL ? W_FAILED : W_RUNNABLE) ||
		job->j.failed_attempts != fa + (o.counter == QS_COUNT_FAILED_ATTEMPT) ||
		job->j.preemption_count != pc + (o.counter == QS_COUNT_PREEMPTION) ||
		job->j.lease_losses != ll + (o.counter == QS_COUNT_LEASE_LOSS))
		Fail("outcome", "job %d stopped (%s, fa %d/%d, pc %d/%d): now %s fa=%d pc=%d, expected %s (3.6, 3.8)",
			 k + 1, StopText(stop), fa, job->j.max_attempts, pc, job->j.preemption_retries,
			 StateName(job->state), job->j.failed_attempts, job->j.preemption_count,
			 o.action == QS_FAIL ? "FAILED" : "RUNNABLE");
	Trace("job %d STOPPED (%s) -> %s", k + 1, StopText(stop), StateName(job->state));
}

static void
Heartbeat(int percent)
{
	for (int k = 0; k < W.njobs; k++)
		if (PClaimed(&W.jobs[k]) && Chance(percent))
			W.jobs[k].j.lease_until = W.now + LeaseLength();
}

/* a min_runtime of a few passes' worth of simulated time */
static QsTime
RandomMinRuntime(void)
{
	return (QsTime) (Chance(70) ? Rand(2, 30) : Rand(30, 150)) * SEC;
}

/* a lend_limit for a LEND or LEND_AND_BORROW share (never RESERVE) */
static int32_t
RandomLendLimit(void)
{
	int			r = Rand(0, 9);

	return r == 0 ? 0 : r == 1 ? 100 : r < 4 ? 50 : Rand(0, 100);
}

/* a weight for FAIR, mostly small */
static int32_t
RandomWeight(void)
{
	int			r = Rand(0, 9);

	return r < 5 ? 1 : r < 9 ? Rand(2, 5) : Rand(1, 10000);
}

/*
 * RandomOptions draws the 0.2 options of a share, each on a minority of
 * shares so that the rules of 0.1 keep most of the traffic.
 */
static void
RandomOptions(QsShare *sh)
{
	sh->strict = Chance(15);
	sh->min_runtime = Chance(20) ? RandomMinRuntime() : 0;
	sh->lend_limit = sh->strategy != QS_RESERVE && Chance(25) ? RandomLendLimit() : -1;
	sh->weight = RandomWeight();
}

static bool Fleet;				/* this episode's agents come and go (3.10) */
static bool ClaimOutage;		/* no agent claims for a while */

/*
 * RandomAgents draws the fleet of unit u (3.10): no bound (an unbounded
 * agent is live, or none is), or the largest live, active agent's
 * instances, 0 when only draining agents are live.
 */
static void
RandomAgents(int u)
{
	int			r = Rand(0, 9);

	W.units[u].agent_bound = r >= 3;
	W.units[u].agent_max = r <= 3 ? 0 : r < 7 ? Rand(1, 3) : Rand(4, 9);
	Trace("agents: unit %d %s %" PRId64, u, W.units[u].agent_bound ? "bound at" : "unbound",
		  W.units[u].agent_max);
}

/*
 * RandomClaimTimeout: often none; mostly a few time steps, so that jobs
 * no agent claims go back to RUNNABLE; rarely long enough that the backoff
 * reaches its cap of 1 h after one or two requeues (3.10).
 */
static QsTime
RandomClaimTimeout(void)
{
	if (Chance(60))
		return QS_NO_TIME;
	return (QsTime) (Chance(85) ? Rand(5, 60) : Rand(1200, 4000)) * SEC;
}

static void
NewEpisode(void)
{
	int			nunits = Rand(1, 3), nshares = Rand(2, 6);
	static const char *const unames[] = {"u0", "u1", "u2", "u3"};
	static const char *const snames[] = {"S0", "S1", "S2", "S3", "S4", "S5", "S6", "S7"};

	WInit(&W, 0);
	W.units[0].name = unames[0];
	for (int u = 1; u < nunits; u++)
		WAddUnit(&W, unames[u], 0);
	for (int s = 0; s < nshares; s++)
	{
		int			r = Rand(0, 2);
		QsStrategy	st = r == 0 ? QS_RESERVE : r == 1 ? QS_LEND : QS_LEND_AND_BORROW;
		int32_t		bl = st == QS_LEND_AND_BORROW && Chance(60) ? Rand(0, 300) : -1;

		WAddShare(&W, snames[s], st, bl, Chance(50), 0);
		RandomOptions(&W.shares[s]);
		for (int u = 0; u < nunits; u++)
			W.capacity[s][u] = Chance(20) ? 0 : Rand(1, 5);
	}
	for (int u = 0; u < nunits; u++)
	{
		int64_t		sum = 0, e;

		for (int s = 0; s < nshares; s++)
			sum += W.capacity[s][u];
		e = Chance(30) ? sum : sum + Rand(-5, 5);
		W.units[u].env_limit = e < 0 ? 0 : e;
	}
	W.runnable_timeout = Chance(50) ? QS_NO_TIME : (QsTime) Rand(30, 300) * SEC;
	W.fair = Chance(35);
	W.claim_timeout = RandomClaimTimeout();
	RandomOverTime();
	Fleet = Chance(30);
	ClaimOutage = false;
	for (int u = 0; u < nunits && Fleet; u++)
		RandomAgents(u);
	memset(Timeout, 0, sizeof(Timeout));
	AdminDirty = false;
	St.episodes++;
	Trace("new configuration: %d units, %d shares", nunits, nshares);
}

static void
AdminChange(void)
{
	int			s = Rand(0, W.nshares - 1), u = Rand(0, W.nunits - 1);
	QsShare    *sh = &W.shares[s];

	/* the options of 0.2, in a quarter of the changes */
	if (Chance(25))
	{
		switch (Rand(0, 4))
		{
			case 0:
				sh->strict = !sh->strict;
				Trace("admin: share %d queueing %s", s, sh->strict ? "STRICT" : "BEST_EFFORT");
				return;			/* no limit changed */
			case 1:
				sh->min_runtime = Chance(30) ? 0 : RandomMinRuntime();
				Trace("admin: share %d min_runtime %" PRId64, s, sh->min_runtime);
				return;
			case 2:
				if (sh->strategy == QS_RESERVE)
					return;		/* an error: lend_limit stays -1 */
				sh->lend_limit = Chance(30) ? -1 : RandomLendLimit();
				Trace("admin: share %d lend_limit %d", s, sh->lend_limit);
				break;			/* supply may shrink: a limit changed */
			case 3:
				sh->weight = RandomWeight();
				Trace("admin: share %d weight %d", s, sh->weight);
				return;
			case 4:
				W.fair = !W.fair;
				Trace("admin: borrow_order %s", W.fair ? "FAIR" : "FIFO");
				return;
		}
		AdminDirty = true;
		return;
	}
	switch (Rand(0, 9))
	{
		case 0:
		case 1:
			W.capacity[s][u] = Chance(25) ? 0 : Rand(1, 6);
			Trace("admin: C(%d,%d) = %" PRId64, s, u, W.capacity[s][u]);
			break;
		case 2:
			{
				int			r = Rand(0, 2);

				sh->strategy = r == 0 ? QS_RESERVE : r == 1 ? QS_LEND : QS_LEND_AND_BORROW;
				sh->borrow_limit = sh->strategy == QS_LEND_AND_BORROW && Chance(50) ? Rand(0, 300) : -1;
				if (sh->strategy == QS_RESERVE)
					sh->lend_limit = -1;	/* else an error (1) */
				else if (Chance(20))
					sh->lend_limit = RandomLendLimit();
				Trace("admin: share %d %s %d lend_limit %d", s, StratName(sh->strategy),
					  sh->borrow_limit, sh->lend_limit);
				break;
			}
		case 3:
			if (sh->strategy == QS_LEND_AND_BORROW)
				sh->borrow_limit = Chance(30) ? -1 : Rand(0, 300);
			Trace("admin: share %d borrow_limit %d", s, sh->borrow_limit);
			break;
		case 4:
			sh->enabled = !sh->enabled;
			Trace("admin: share %d %s", s, sh->enabled ? "ENABLED" : "DISABLED");
			break;
		case 5:
		case 6:
			{
				int64_t		sum = 0, e;

				for (int t = 0; t < W.nshares; t++)
					sum += W.capacity[t][u];
				e = Chance(30) ? sum : sum + Rand(-5, 5);
				W.units[u].env_limit = e < 0 ? 0 : e;
				Trace("admin: E(%d) = %" PRId64, u, W.units[u].env_limit);
				break;
			}
		case 7:
			sh->in_share_preemption = !sh->in_share_preemption;
			Trace("admin: share %d in_share_preemption %d", s, sh->in_share_preemption);
			return;				/* no limit changed */
		case 8:
			W.env_enabled = W.env_enabled ? !Chance(40) : Chance(80);
			Trace("admin: environment %s", W.env_enabled ? "ENABLED" : "DISABLED");
			return;
		case 9:
			if (Chance(50))
				W.runnable_timeout = Chance(50) ? QS_NO_TIME : (QsTime) Rand(30, 300) * SEC;
			else
				W.claim_timeout = RandomClaimTimeout();
			Trace("admin: runnable_timeout %" PRId64 " claim_timeout %" PRId64,
				  W.runnable_timeout, W.claim_timeout);
			return;
	}
	AdminDirty = true;
}

/*
 * Liveness (d): freeze the outside world and repeat passes, agents claiming
 * every SCHEDULED job (none in a claim outage) and acknowledging every
 * requested stop, until a pass decides nothing with no stop pending.  At
 * that fixed point no promise may remain: a kept promise whose victims have
 * all stopped is dispatched (3.6), and one that could not be lapses (a
 * held-back one at once, 3.10).  Time stands still and the fleet does not
 * change, so a job held back stays held back and is decided nothing, and
 * no claim timeout passes after the first pass (unclaimed jobs, in an
 * outage, simply stay SCHEDULED).
 */
static void
Liveness(void)
{
	const char *saved = Phase;

	Phase = "liveness";
	for (int round = 1; round <= NROUNDS; round++)
	{
		PassResult	r = CheckedPass();

		if (!r.stops_pending_before && r.ndecisions == 0 && r.nlapsed == 0 && r.npromised == 0)
		{
			for (int k = 0; k < W.njobs && W.env_enabled; k++)
				if (W.jobs[k].state == W_RUNNABLE && W.jobs[k].j.promised_at != QS_NO_TIME)
					Fail("liveness", "fixed point reached with job %d still promised room it never gets", k + 1);
			St.fixed_points++;
			if (round > St.max_rounds)
				St.max_rounds = round;
			Phase = saved;
			return;
		}
		for (int k = 0; k < W.njobs; k++)
		{
			if (W.jobs[k].state == W_SCHEDULED && !ClaimOutage)
				ClaimOne(k);
			if (PStopping(&W.jobs[k]))
				Ack(k);
		}
	}
	Fail("liveness", "no fixed point after %d rounds of passes in a frozen world (churn)", NROUNDS);
}

static void
RandomStep(void)
{
	int			r, k;
	int			backlog = CountIn(W_RUNNABLE);

	/*
	 * the fleet (3.10): agents register, drain, go away, on some episodes;
	 * sometimes the large ones of a promised job's unit, so that its
	 * promise lapses
	 */
	if (Fleet && Chance(3))
	{
		if (Chance(30) && (k = Pick(PPromised)) >= 0)
		{
			W.units[W.jobs[k].j.unit].agent_bound = true;
			W.units[W.jobs[k].j.unit].agent_max = Rand(0, W.jobs[k].j.count - 1);
			Trace("agents: unit %d bound at %" PRId64 ", below promised job %d", W.jobs[k].j.unit,
				  W.units[W.jobs[k].j.unit].agent_max, k + 1);
		}
		else
			RandomAgents(Rand(0, W.nunits - 1));
		return;
	}
	r = Rand(0, 99);
	if (r < 16)
	{
		if (backlog < 60)
			Submit();
		else if ((k = Pick(PRunnable)) >= 0)
		{
			W.jobs[k].state = W_FAILED;	/* terminate a waiting job */
			W.jobs[k].j.promised_at = QS_NO_TIME;
			Trace("terminate RUNNABLE job %d", k + 1);
		}
	}
	else if (r < 36)
		CheckedPass();
	else if (r < 46)
	{
		/* with a claim timeout, sometimes no agent claims for a while */
		if (ClaimOutage)
		{
			ClaimOutage = !Chance(20);
			if (!ClaimOutage)
				Trace("claim outage ends");
		}
		else if (W.claim_timeout != QS_NO_TIME && Chance(8))
		{
			ClaimOutage = true;
			Trace("claim outage");
		}
		else
			for (int c = Rand(1, 3); c > 0 && (k = Pick(PScheduled)) >= 0; c--)
				ClaimOne(k);
	}
	else if (r < 54)
	{
		if ((k = Pick(PStarting)) >= 0)
			Running(k);
	}
	else if (r < 65)
	{
		if ((k = Pick(PClaimed)) >= 0)
		{
			WJob	   *job = &W.jobs[k];

			if (Chance(75))
			{
				WEnd(&W, job, W_SUCCEEDED);
				Trace("job %d SUCCEEDED", k + 1);
			}
			else
			{
				/* FAILED: a failed attempt; a pending stop is void (3.6) */
				job->j.failed_attempts++;
				EndAttemptHere(job, job->j.failed_attempts >= job->j.max_attempts);
				Trace("job %d FAILED -> %s", k + 1, StateName(job->state));
			}
		}
	}
	else if (r < 74)
	{
		if ((k = Pick(PStopping)) >= 0)
			Ack(k);
	}
	else if (r < 76)
	{
		if ((k = Pick(PClaimed)) >= 0)
		{
			QsTime		lease = W.jobs[k].j.lease_until;

			if (W.now <= lease)
				OverTimeAdvance(lease + 1);
			Heartbeat(100);		/* the other agents are alive */
			W.jobs[k].j.lease_until = lease;
			Trace("job %d loses its lease", k + 1);
		}
	}
	else if (r < 81)
	{
		if ((k = Pick(PLive)) >= 0 && (W.jobs[k].state == W_RUNNABLE || Chance(50)))
		{
			W.jobs[k].j.priority = Rand(0, 5);
			Trace("job %d priority %d", k + 1, W.jobs[k].j.priority);
		}
	}
	else if (r < 84)
		AdminChange();
	else if (r < 93)
	{
		/*
		 * with a claim timeout, sometimes to within a microsecond of the
		 * time a claim timeout passes or a backoff ends, to try the edges;
		 * a long one: sometimes a long while passes
		 */
		if (W.claim_timeout != QS_NO_TIME && Chance(25) && (k = Pick(PFleetEdge)) >= 0)
		{
			QsTime		edge = FleetEdge(&W.jobs[k]) + Rand(-1, 1);

			OverTimeAdvance(edge > W.now ? edge : W.now);
		}
		else if (W.claim_timeout != QS_NO_TIME && W.claim_timeout > 600 * SEC && Chance(15))
			OverTimeAdvance(W.now + W.claim_timeout * Rand(1, 3) / 2);
		else
			OverTimeAdvance(W.now + (QsTime) Rand(1, 20) * SEC);
		Heartbeat(85);
		Trace("time +");
	}
	else if (r < 95)
	{
		/* terminate (scheduling.md 7) */
		if ((k = Pick(PLive)) >= 0)
		{
			WJob	   *job = &W.jobs[k];

			if (job->state == W_RUNNABLE || (job->state == W_SCHEDULED && !job->j.claimed))
				EndAttemptHere(job, true);
			else if (job->j.stop == QS_STOP_NONE)
				job->j.stop = QS_STOP_TERMINATED;
			Trace("terminate job %d", k + 1);
		}
	}
	else if (r < 96)
	{
		/* release (5.2): a held job back to RUNNABLE, counters unchanged */
		if ((k = Pick(PClaimedNoStop)) >= 0)
		{
			EndAttemptHere(&W.jobs[k], false);
			Trace("release job %d", k + 1);
		}
	}
	else
	{
		if ((k = Pick(PStopping)) >= 0)
			Ack(k);
		else
			CheckedPass();
	}
}

static int episode_cap;

int
main(int argc, char **argv)
{
	clock_t		t0 = clock();

	Steps = argc > 1 ? atol(argv[1]) : 100000;
	Seed = argc > 2 ? strtoull(argv[2], NULL, 10) :
		((uint64_t) time(NULL) * 1000003u) ^ (uint64_t) getpid();
	KeepGoing = getenv("SIM_KEEP_GOING") != NULL && atoi(getenv("SIM_KEEP_GOING")) != 0;
	Verbose = getenv("SIM_VERBOSE") != NULL && atoi(getenv("SIM_VERBOSE")) != 0;
	Rng = Seed;
	printf("sim: seed %" PRIu64 "\n", Seed);
	fflush(stdout);

	setjmp(Recover);
	/* after a failure (SIM_KEEP_GOING) the world may be inconsistent */
	WFreeAll();
	Phase = "step";
	episode_cap = 0;
	for (Step++; Step <= Steps; Step++)
	{
		if (W.njobs >= episode_cap)
		{
			NewEpisode();
			episode_cap = Rand(150, 900);
		}
		OverTimeSync();
		RandomStep();
		if (Step % LIVENESS_EVERY == 0)
			Liveness();
	}
	Step = Steps;
	printf("sim: steps=%ld passes=%ld dispatches=%ld preemptions=%ld repairs=%ld promises=%ld lapses=%ld fixed_points=%ld (max rounds %ld) configurations=%ld jobs=%ld strict_stops=%ld exempt_waits=%ld wakes=%ld fair_picks=%ld lease_losses=%ld claim_requeues=%ld held_back=%ld no_agent_fits=%ld no_agent_timeouts=%ld strict_heads=%ld over_budget=%ld over_fraction=%ld fingerprint=%016" PRIx64 " cpu=%.1fs\n",
		   Steps, St.passes, St.dispatches, St.preemptions, St.repairs, St.promises, St.lapses,
		   St.fixed_points, St.max_rounds, St.episodes, St.submitted, St.strict_stops,
		   St.exempt_waits, St.wakes, St.fair_picks, St.lease_losses, St.claim_requeues,
		   St.held_back, St.no_agent_fits, St.no_agent_timeouts, St.strict_heads, St.over_budget,
		   St.over_fraction, Fingerprint,
		   (double) (clock() - t0) / CLOCKS_PER_SEC);
	for (int t = 0; t < NTags; t++)
		printf("sim: failures [%s]: %ld\n", Tags[t], TagCount[t]);
	printf("sim: %ld steps, %ld failures\n", Steps, St.failures);
	return St.failures ? 1 : 0;
}
