/*-------------------------------------------------------------------------
 *
 * sim.c
 *		A randomized simulator of the policy core (scheduling.md 3): random queue
 *		configurations and random steps (submissions, passes, agents, lease
 *		losses, hosts, priority and limit changes, time) on a World, with every
 *		pass checked by an accounting of its own, written here from doc/scheduling.md
 *		(it calls nothing of the core but QsRunPass, through WPass,
 *		QsStoppedOutcome, through WStopped, and explain's QsStrictHeadHeld,
 *		through WStrictHead, whose answer it checks).
 *
 *	  sim [steps] [seed]	   defaults: 100000 steps, seed from the clock
 *
 * The seed is printed first; a failure prints the rule that failed (the
 * section of scheduling.md and its title), the seed, the step and what went
 * wrong, dumps the queue and exits 1, so `sim STEP SEED` replays it:
 *
 *	  sim: FAILURE 3.2 Dispatch [cursor] seed 1 step 1234 (step): job ...
 *
 * SIM_KEEP_GOING=1 counts failures and goes on with a fresh configuration;
 * SIM_VERBOSE=1 traces every step.
 *
 * The checks are the rules of scheduling.md 3, one function a section,
 * named after it (Check_3_2_Dispatch, ...: see the comment at each), in
 * the table Rules.  CheckedPass runs a pass and replays its decisions on a
 * model of the pass's steps of its own (the state planned so far: what is
 * held, pending stops, kept promises; a model of the cursors run in
 * lockstep with the decisions), and at each event of the replay (the pass
 * read, a decision, the time-based work, the repairs, a promise
 * re-checked, the freed promises, a candidate under the cursor dispatched,
 * given victims or nothing, the loop done, the decisions applied) it walks
 * the table: each rule checks what its section says of that moment.  The
 * agents' acknowledgements of stops and the liveness freeze are events too.
 *	3	the table of actions: every decision legal for the job as the pass
 *		read it, one a job (a victim stopped at once: PREEMPT then its
 *		REQUEUE/FAIL, so a job is never dispatched and preempted in one
 *		pass), the six steps in order, none of steps 4 and 5 in a DISABLED
 *		environment; each job ends the pass where its decisions say (state,
 *		counters, claim_backoff_until, queued_at) and state counts add up;
 *		liveness: every LIVENESS_EVERY steps the world freezes (no
 *		submissions, no limit changes, time stands still, nothing ends, the
 *		fleet stays; agents only claim, but not in a claim outage, and
 *		acknowledge stops) and passes are repeated until one decides
 *		nothing with no stop pending, within NROUNDS (no churn).
 *	3.1	(I1)-(I3) in the future state (held jobs without a pending stop,
 *		plus promised RUNNABLE jobs), after every pass with no exception:
 *		the repair (3.5) counts pending stops as gone, so even right after
 *		an admin lowered a limit the future state must hold once the pass is
 *		over.  In the present state (pending stops still holding) too,
 *		except from an admin's change of a limit (capacity, strategy,
 *		borrow_limit, share state, E) until a pass leaves them holding
 *		again: the one exception of 3.1 (3.5), during which the victims of
 *		the repair still hold their instances.
 *	3.2	every dispatch keeps (I1)-(I3) now and in the future state, with the
 *		wanted-capacity rule; the model of the cursors (NextCandidate): a job
 *		that comes under the cursor and gets nothing could not have been
 *		dispatched; the dispatch order within a share and unit (OrderCheck:
 *		the skip rule); borrow_order FAIR orders the borrowing candidates
 *		(FairBefore), and a cursor failure after a FAIR choice is named
 *		[fair]; STRICT shuts a share's stream of a unit once a job of it is
 *		not dispatched (StrictCheck [strict]); explain's account of a STRICT
 *		share's wait (QsStrictHeadHeld, through WStrictHead), for one
 *		RUNNABLE job of a STRICT share a pass: the first held-back job ahead
 *		of it of its unit that step 1 does not fail, and then the job is not
 *		dispatched (StrictHeadCheck [strict-head]).
 *	3.3	victims of the right kinds (strictly lower priority in-share, only
 *		with in_share_preemption; reclaim only while the share holds less
 *		than its capacity, never to borrow), and only for a job that could
 *		not start and holds no kept promise; a candidate that got nothing
 *		could not have had victims (PreemptionPossible); min_runtime:
 *		claimed jobs inside it are no candidates for a preemptor, none is
 *		preempted but by a repair [min-runtime], and the pass's wake_at is
 *		the end of such an exemption (WakeCheck [wake]).
 *	3.4	reclaim only from shares still borrowing; enough victims to start
 *		the preemptor once they stopped, none superfluous (the backwards
 *		walk); the preemptor dispatched at once iff it can start then.
 *	3.5	repairs only in units where an invariant fails, complete, and each
 *		victim needed.
 *	3.6	an unclaimed victim stopped at once, with the outcome of its stop
 *		(MyOutcome [outcome]); the re-check of promises exactly; the freed
 *		promises dispatched first, in promise order; the promise given iff
 *		the preemptor could not start at once; promised jobs are RUNNABLE,
 *		and none is left at the liveness freeze's fixed point.
 *	3.7	misconfiguration reasons, before the others.
 *	3.8	timeouts and lost leases: done in step 1, with their outcomes; a
 *		lease that runs out with no stop pending is a lease loss (3.10):
 *		REQUEUE with lease_losses + 1, FAIL once that exceeds
 *		max_lease_losses (drawn 0..3 a job), reason LEASE_EXPIRED, queued_at
 *		kept; with a stop pending the lease's end counts as that stop.
 *		A lease is lost only fence_grace (drawn an episode, often 0)
 *		after its end; meanwhile the pass sets wake_at to when the
 *		earliest grace ends (GraceEnd, WakeCheck).
 *	3.9	runnable timeouts: of a misconfigured job, and of one whose
 *		NO_AGENT_FITS reason is older than runnable_timeout and that has no
 *		placement on empty hosts still (RunnableExpired).
 *	3.10	with a claim timeout (drawn an episode, often none; claim
 *		outages, when no agent claims for a while, make it pass), a
 *		SCHEDULED job unclaimed for longer is REQUEUEd NOT_CLAIMED, its
 *		capacity released, and held back until now + claim_timeout *
 *		2^(k-1), at most 1 h, after its k-th (ClaimExpired, MyBackoff
 *		[claim-timeout]).  A job of a placed unit (3.13) that has no
 *		placement even were every host empty (NoPlacementEver: the model's
 *		own placement on empty hosts) is held back, as 0.3's job larger
 *		than every agent was.  A job held back (HeldBack, for either reason,
 *		or its share's budget: 3.11) is never dispatched nor given victims
 *		[held-back], wants nothing of its lender's idle capacity (Wanted),
 *		does not count as tried for the skip rule (the cursors, OrderCheck)
 *		but blocks a STRICT stream (StrictCheck), and loses its promise at
 *		the re-check [recheck]; fit_limits' agent_max is a placed unit's
 *		hosts' instances in all, else unbounded [no-agent-fits], and the
 *		reason NO_AGENT_FITS.
 *	3.11, 3.12	the rules over time of 0.3 (OverTimeSync): budgets of a day
 *		(whole instance-hours or, from 0.4, with a fraction: RandomBudget)
 *		on a minority of (share, unit) pairs and, on some FAIR queues, a
 *		half-life.  The sim keeps its own spent (held x time, from 0 at each
 *		midnight; episodes start within an hour of one) and recent_borrow
 *		(integrated numerically), and the shell's way (the value at the last
 *		change of level, advanced by the core's closed forms), which is what
 *		the core reads; they must agree [over-time].  A share over its
 *		budget of a unit holds its jobs back (BudgetHold, reason
 *		BUDGET_EXHAUSTED after the misconfigurations), and with a half-life
 *		the model of the cursors orders borrowers by recent_borrow / weight
 *		first.
 *	3.13	placement on hosts and parts (scheduling.md 3.13, 3.14), with a model of its own
 *		(MyPlace: the host groups, instances_per_host, best fit, the fewest
 *		hosts, the choice of a group, the ranks; HostFree: free(A,u) in the
 *		state planned so far, pending stops, reservations, victims).  Each
 *		unit is placed or not an episode (unplaced: 0.3's rules, exactly
 *		as before, constraints ignored), with a pool of up to 16 hosts of
 *		1, 2, 4 or 8 instances, names whose C order matters, labels "rack"
 *		(2 or 3 values) and "nvlink"; jobs draw instances_per_host and
 *		same_label ("zone": a key no host has).  Hosts come and go between
 *		passes (FleetChange, ReservedHostDown: a removed host's jobs run on,
 *		their parts on no host), or re-register with other labels
 *		(HostRelabel); rarely a unit becomes placed or not.  A
 *		dispatch in a placed unit is placement(J) now, exactly, ranks
 *		included [placement], its parts valid [parts] and within each
 *		host's free [host-capacity]; none in a unit not placed
 *		[not-placed].  May the job be dispatched (MayDispatch) includes a
 *		placement now and in the future state, so the cursors, the missed
 *		preemptions (PreemptionPossible) and the victims (enough,
 *		minimal: VictimChoiceCheck) count the hosts too.  A promise reserves
 *		placement(J) in the future state, its victims stopping; at the
 *		re-check it keeps it while valid, else is placed anew, else lapses;
 *		the pass writes exactly the new reservations of jobs still promised
 *		[reservation], never a kept one again [keep-reservation].  The host
 *		reasons the pass reports, in the loop's order [host-reasons], and
 *		WAITING_FOR_HOSTS after the pass [waiting-for-hosts] (3.13).  After
 *		every pass, per host: the parts held (pending stops included), and
 *		those held without a stop with the reservations, within its
 *		instances [host-invariant]; each promise's parts the model's
 *		[reservation].  The skip rule splits by (instances_per_host,
 *		same_label) in a placed unit's BEST_EFFORT shares (SkipClass).
 *		The sim draws one lease per job (every part of a job is claimed,
 *		renewed and lost together); the leases of single parts (3.14) are
 *		the unit tests' (test_placement).
 *	3.16, 3.17	arrays and dependencies, on a modest fraction of the
 *		submissions (RandomDependencies, RandomArray): an array is a group
 *		of 2 to 4 jobs submitted together (WExpandArray: the same share,
 *		unit, count, options, queued_at and depends_on, ids following, the
 *		array's id its first's); a job depends on 1 to 3 earlier jobs or
 *		arrays (named by the array's id: every job of it), recent or not,
 *		some ended (SUCCEEDED or FAILED), some RUNNABLE of the job's own
 *		share and unit, which it goes above in priority (in a STRICT share:
 *		ahead of what it waits for), some waiting themselves (chains and
 *		trees, at most MAXDEPTH deep, so that the freeze ends); the world
 *		keeps the counts as the shell does (WSubmitDeps, WEnd, WApply).
 *		From its own record of what each job depends on (DepOf, arrays
 *		expanded) it checks: the counts the pass read [dependency-count];
 *		a job one of whose dependencies has not SUCCEEDED is in no share's
 *		order (BuildRunLists leaves it out: it is not tried, wants nothing
 *		of its lender's idle capacity and does not block a STRICT stream,
 *		so the model of the cursors catches a pass that counts it; the
 *		note [dependency-strict]), and is never dispatched, given victims
 *		or promised [dependency-hold]; a RUNNABLE job a dependency of which
 *		FAILED is FAILED in step 1 of the next pass, DEPENDENCY_FAILED:<the
 *		id the shell noted, a FAILED dependency>, if among the first
 *		dependency_failed_max of them by id (1000; 2 to 5 on one episode
 *		in five) [dependency-failed], and so down a chain; its reason is
 *		DEPENDENCY while it waits [dependency-reason]; once all its
 *		dependencies SUCCEEDED it is any job again, under every check.
 *	(The what-if replay, scheduling.md 3.13 too for now, is test_replay.c's.)
 * The options of 0.2 are drawn on a minority of shares and queues
 * (RandomOptions, AdminChange): lend_limit caps a lender's supply in (I3),
 * min(max(0, idle - wanted), lendable) for a borrower (3.1, 3.2), and the
 * misconfiguration reach (3.7); borrow_order FAIR; STRICT; min_runtime.
 * The summary line (steps=...) gives a fingerprint of every decision of
 * the run, to compare runs.
 *
 * Build (as the Makefile builds the unit tests; -DQS_MUTANT_X for a mutant):
 *	cc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Isrc/core -Itest/unit \
 *	   -o /tmp/sim test/unit/sim.c test/unit/world.c src/core/[a-z]*.c -lm
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
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "over_time.h"
#include "world.h"

#define MAXS W_MAX_SHARES
#define MAXU W_MAX_UNITS
#define MAXJ W_MAX_JOBS
#define SEC 1000000LL
#define NROUNDS 50
#define LIVENESS_EVERY 200
#define BIG INT64_MAX
#define MAXH 16					/* hosts of a unit's pool, at most */
#define NKEYS 3					/* label keys */

/* the label keys the hosts and the jobs' same_label draw from ("zone": none has it) */
static const char *const LabelKeys[NKEYS] = {"rack", "nvlink", "zone"};

static World W;
static WJob B[MAXJ];			/* the world as the pass read it */

/*
 * The jobs' parts (their placement, or a promise's reservation; 3.13): the
 * world's in memory of the sim's (WKeepParts), which WFreeAll does not
 * free, and a copy of them as the pass read them, for B.
 */
static QsPart WParts[MAXJ][MAXH];
static QsPart BParts[MAXJ][MAXH];
static QsTime Timeout[MAXJ];	/* per job: attempt timeout; QS_NO_TIME: none */

/*
 * Arrays and dependencies (3.16, 3.17), the sim's own record: the jobs
 * each job depends on (indexes, arrays expanded, each once), how deep its
 * chain is, and each array's first job and size.
 */
#define MAXDEP 16				/* jobs a job depends on: 3 names, arrays of 4 */
#define MAXDEPTH 6				/* the longest chain of dependencies */
static int	DepOf[MAXJ][MAXDEP];
static int	NDep[MAXJ];
static int	Depth[MAXJ];		/* 0: depends on nothing */
static int	ArrayFirst[MAXJ];	/* its array's first job; -1: of no array */
static int	ArraySize[MAXJ];	/* of an array's first job */
static unsigned char OnceWaited[MAXJ];	/* a pass read it waiting */
static unsigned char FailedByDep[MAXJ];	/* failed DEPENDENCY_FAILED */

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
	long		placed_dispatches, multi_host, waiting_for_hosts, reserved_new, reserved_kept,
				host_changes, victims_for_hosts, replaced, split_groups;
	long		arrays, dependents, dep_waits, dep_released, dep_failures, dep_chains,
				dep_strict, dep_unwanted, dep_beyond;
} St;
static uint64_t Fingerprint = 14695981039346656037ULL;	/* of every pass's output */

/* failure tags, the rules they failed, and counts (SIM_KEEP_GOING) */
static const char *Tags[64];
static const char *TagSection[64];
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

/* a job's array, and what it depends on (the sim's record, the world's counts) */
static void
DumpDependencies(const WJob *job)
{
	int			k = (int) job->j.id - 1;

	if (job->array_id != 0)
		printf(" array=%" PRId64, job->array_id);
	for (int i = 0; i < NDep[k]; i++)
		printf("%s%d", i ? "," : " depends_on=", DepOf[k][i] + 1);
	if (NDep[k] > 0)
		printf(" waiting=%d dependency_failed=%" PRId64, job->j.deps_waiting,
			   job->j.dependency_failed);
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
	if (j->per_host > 0 || j->same_label != NULL)
		printf(" per_host=%d same_label=%s", j->per_host, j->same_label ? j->same_label : "-");
	DumpDependencies(job);
	for (int i = 0; i < job->nparts; i++)
		printf("%s%s:%d", i ? "," : " parts=", job->parts[i].host, job->parts[i].count);
	printf("\n");
}

/* unit u's hosts (as the pass read them: they change between passes only) */
static void
DumpHosts(int u)
{
	if (!W.units[u].placed)
		return;
	printf("    placed, %d hosts (any order):", W.nhosts[u]);
	for (int h = 0; h < W.nhosts[u]; h++)
	{
		const WHost *wh = &W.hosts[u][h];

		printf(" %s=%" PRId64, wh->name, wh->instances);
		for (int l = 0; l < wh->nlabels; l++)
			printf("/%s:%s", wh->labels[l].key, wh->labels[l].value);
	}
	printf("\n");
}

/* a list of parts: " on host:count,..." */
static void
DumpParts(const QsPart *parts, int n)
{
	for (int x = 0; x < n; x++)
		printf("%s%s:%d", x ? "," : " on ", parts[x].host, parts[x].count);
}

/* the output of the pass being checked */
static void
DumpOutput(const QsOutput *out)
{
	printf("-- decisions of the pass:\n");
	for (int i = 0; i < out->ndecisions; i++)
	{
		const QsDecision *d = &out->decisions[i];

		printf("  %d: %s job %" PRId64 " (share %d unit %d n=%d)", i, ActionName(d->action),
			   d->job_id, d->share, d->unit, d->count);
		if (d->action == QS_PREEMPT)
			printf(" %s for %" PRId64 "%s", StopText(d->stop), d->preempted_for,
				   d->immediate ? " immediate" : "");
		if (d->reason && d->action != QS_PREEMPT)
			printf(" %s", d->reason);
		DumpParts(d->parts, d->nparts);
		printf("\n");
	}
	for (int i = 0; i < out->nlapsed; i++)
		printf("  lapsed: %" PRId64 "\n", out->lapsed[i]);
	for (int i = 0; i < out->npromised; i++)
		printf("  promised: %" PRId64 "\n", out->promised[i]);
	for (int i = 0; i < out->nreserved; i++)
	{
		printf("  reserved: %" PRId64, out->reserved[i].job_id);
		DumpParts(out->reserved[i].parts, out->reserved[i].nparts);
		printf("\n");
	}
	for (int i = 0; i < out->nhost_reasons; i++)
		printf("  host reason: %" PRId64 " %s\n", out->host_reasons[i].job_id,
			   out->host_reasons[i].reason ? out->host_reasons[i].reason : "none");
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
		printf("  unit %d: E=%" PRId64 "\n", u, W.units[u].env_limit);
		DumpHosts(u);
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
		DumpOutput(LastOut);
}

static void Trace(const char *fmt,...);

/* the section of scheduling.md whose rule is being checked (CheckRules) */
static const char *CurSection;

/*
 * Fail: the rule being checked failed.  The FAILURE line names its
 * section and title, the tag of the check, the seed and the step.
 */
static void
Fail(const char *tag, const char *fmt,...)
{
	va_list		ap;
	int			t;
	const char *section = CurSection ? CurSection : "(no rule)";

	St.failures++;
	for (t = 0; t < NTags && (strcmp(Tags[t], tag) != 0 || TagSection[t] != section); t++)
		;
	if (t == NTags && NTags < 64)
	{
		Tags[NTags] = tag;
		TagSection[NTags++] = section;
	}
	if (t < 64)
		TagCount[t]++;
	printf("sim: FAILURE %s [%s] seed %" PRIu64 " step %ld (%s): ", section, tag, Seed, Step, Phase);
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
	QsTime		claim_timeout;	/* QS_NO_TIME: none */
	QsTime		fence_grace;	/* a lease is lost this long after its end */
	int			dep_failed_max; /* the jobs a dependency of which FAILED the pass reads */
	/* placement (3.13): a placed unit's hosts, in the C order of their names */
	bool		placed[MAXU];
	int			nhosts[MAXU];
	const char *hname[MAXU][MAXH];
	int64_t		hinst[MAXU][MAXH];
	const char *hlabel[MAXU][MAXH][NKEYS];	/* each label key's value, or NULL */
} Cfg;

static Cfg Cf;
static long CfSerial;			/* one a pass: what was computed of Cf is kept */

/* a host of the world as the pass reads it, at index `at` of Cf's hosts of u */
static void
SetHost(int u, int at, const WHost *wh)
{
	Cf.hname[u][at] = wh->name;
	Cf.hinst[u][at] = wh->instances;
	for (int key = 0; key < NKEYS; key++)
	{
		Cf.hlabel[u][at][key] = NULL;
		for (int l = 0; l < wh->nlabels; l++)
			if (strcmp(wh->labels[l].key, LabelKeys[key]) == 0)
				Cf.hlabel[u][at][key] = wh->labels[l].value;
	}
}

/*
 * TakeHosts: whether unit u is placed, and its hosts (the world's, in any
 * order) in the C order of their names (an insertion sort of its own).
 */
static void
TakeHosts(int u)
{
	int			n = 0;

	Cf.placed[u] = W.units[u].placed;
	for (int i = 0; i < W.nhosts[u] && i < MAXH; i++)
	{
		int			at = n++;

		while (at > 0 && strcmp(Cf.hname[u][at - 1], W.hosts[u][i].name) > 0)
		{
			Cf.hname[u][at] = Cf.hname[u][at - 1];
			Cf.hinst[u][at] = Cf.hinst[u][at - 1];
			memcpy(Cf.hlabel[u][at], Cf.hlabel[u][at - 1], sizeof(Cf.hlabel[u][at]));
			at--;
		}
		SetHost(u, at, &W.hosts[u][i]);
	}
	Cf.nhosts[u] = n;
}

static void
TakeCfg(void)
{
	Cf.nunits = W.nunits;
	Cf.nshares = W.nshares;
	Cf.env_enabled = W.env_enabled;
	Cf.fair = W.fair;
	Cf.now = W.now;
	Cf.claim_timeout = W.claim_timeout;
	Cf.fence_grace = W.fence_grace;
	Cf.dep_failed_max = W.dependency_failed_max;
	CfSerial++;
	for (int u = 0; u < W.nunits; u++)
	{
		Cf.E[u] = W.units[u].env_limit;
		TakeHosts(u);
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

/*
 * Before a pass: what the core reads, the shell's way; the rules of 3.11
 * and 3.12 check it against the sim's own.
 */
static void
OverTimeFeed(void)
{
	OverTimeSync();
	for (int s = 0; s < W.nshares; s++)
		for (int u = 0; u < W.nunits; u++)
		{
			OverTime   *o = &Ot[s][u];

			W.spent[s][u] = QsSpentAt(o->kept_spent, o->since, o->held, W.now, QS_PERIOD_DAY);
			if (HalfLife > 0)
				W.recent_borrow[s][u] = QsRecentBorrowAt(o->kept_recent, o->since, o->borrowed,
														 W.now, HalfLife);
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
/* placement on hosts (scheduling.md 3.13), written here					 */

/*
 * A placement: parts on hosts (an index into Cf's hosts of the job's unit,
 * which are in name order) with their instances, in rank order.
 */
typedef struct Plc
{
	int			n;
	int			h[MAXH];
	int32_t		c[MAXH];
} Plc;

/* the index of a label key, or -1 */
static int
LabelKey(const char *key)
{
	for (int i = 0; key != NULL && i < NKEYS; i++)
		if (strcmp(key, LabelKeys[i]) == 0)
			return i;
	return -1;
}

/* the index of unit u's host of that name, or -1: no host of u now */
static int
HostIdx(int u, const char *name)
{
	for (int h = 0; h < Cf.nhosts[u]; h++)
		if (strcmp(Cf.hname[u][h], name) == 0)
			return h;
	return -1;
}

static void
PlcAdd(Plc *p, int h, int64_t c)
{
	p->h[p->n] = h;
	p->c[p->n++] = (int32_t) c;
}

/*
 * PerHostParts (3.13, 2): with instances_per_host k, the n/k hosts of the
 * group with the least free that is at least k (ties: the least name, the
 * least index), k on each; taken one by one.
 */
static bool
PerHostParts(const QsJob *j, const int64_t *free, const int *m, int nm, Plc *g)
{
	bool		used[MAXH] = {0};

	for (int t = 0; t < j->count / j->per_host; t++)
	{
		int			best = -1;

		for (int i = 0; i < nm; i++)
			if (!used[m[i]] && free[m[i]] >= j->per_host &&
				(best < 0 || free[m[i]] < free[best] || (free[m[i]] == free[best] && m[i] < best)))
				best = m[i];
		if (best < 0)
			return false;
		used[best] = true;
		PlcAdd(g, best, j->per_host);
	}
	return true;
}

/*
 * AnySplitParts (3.13, 2): with no instances_per_host, the one host with
 * the least free that is at least n (best fit); else the hosts by free
 * descending, each giving all its free instances but the last, which
 * gives the rest.  Ties: the least name.
 */
static bool
AnySplitParts(const QsJob *j, const int64_t *free, const int *m, int nm, Plc *g)
{
	bool		used[MAXH] = {0};
	int			best = -1;
	int64_t		got = 0;

	for (int i = 0; i < nm; i++)
		if (free[m[i]] >= j->count && (best < 0 || free[m[i]] < free[best]))
			best = m[i];		/* m in name order: the first of a tie stays */
	if (best >= 0)
	{
		PlcAdd(g, best, j->count);
		return true;
	}
	while (got < j->count)
	{
		best = -1;
		for (int i = 0; i < nm; i++)
			if (!used[m[i]] && free[m[i]] > 0 && (best < 0 || free[m[i]] > free[best]))
				best = m[i];
		if (best < 0)
			return false;
		used[best] = true;
		PlcAdd(g, best, Min(free[best], j->count - got));
		got += free[best];
	}
	return true;
}

/* ranks (3.13, 4): instances descending, then the agent name */
static void
RankParts(Plc *p)
{
	for (int i = 0; i < p->n; i++)
		for (int x = i + 1; x < p->n; x++)
			if (p->c[x] > p->c[i] || (p->c[x] == p->c[i] && p->h[x] < p->h[i]))
			{
				int			h = p->h[i];
				int32_t		c = p->c[i];

				p->h[i] = p->h[x];
				p->c[i] = p->c[x];
				p->h[x] = h;
				p->c[x] = c;
			}
}

/*
 * GroupOf (3.13, 1): the members of the host group of unit u that host
 * `first` opens: every host with no label key, else the hosts whose value
 * of the key is v; -1 when `first` opens none (no value, or a value an
 * earlier host has).
 */
static int
GroupOf(int u, int key, int first, int *m, const char **v)
{
	int			nm = 0;

	*v = key >= 0 ? Cf.hlabel[u][first][key] : NULL;
	if (key >= 0 && *v == NULL)
		return -1;
	for (int h = 0; h < Cf.nhosts[u]; h++)
	{
		const char *w = key >= 0 ? Cf.hlabel[u][h][key] : NULL;

		if (key < 0 || (w != NULL && strcmp(w, *v) == 0))
		{
			if (h < first && key >= 0)
				return -1;		/* the group was opened by an earlier host */
			m[nm++] = h;
		}
	}
	return nm;
}

/*
 * MyPlace: placement(J) over the hosts of its unit with their free (3.13):
 * in each host group the parts, then the group with the fewest hosts, the
 * least free in all, the least label value; the parts in rank order.
 * False: no group has a placement.
 */
static bool
MyPlace(const QsJob *j, const int64_t *free, Plc *out)
{
	int			u = j->unit, key = LabelKey(j->same_label);
	int64_t		best_free = 0;
	const char *best_value = NULL;

	out->n = 0;
	if (j->same_label != NULL && key < 0)
		return false;
	for (int first = 0; first < Cf.nhosts[u] && (key >= 0 || first == 0); first++)
	{
		int			m[MAXH], nm;
		int64_t		gfree = 0;
		const char *v;
		Plc			g = {0};

		if ((nm = GroupOf(u, key, first, m, &v)) < 0)
			continue;
		for (int i = 0; i < nm; i++)
			gfree += free[m[i]];
		if (!(j->per_host > 0 ? PerHostParts(j, free, m, nm, &g) :
			  AnySplitParts(j, free, m, nm, &g)))
			continue;
		if (out->n == 0 || g.n < out->n ||
			(g.n == out->n && (gfree < best_free ||
							   (gfree == best_free && v != NULL && strcmp(v, best_value) < 0))))
		{
			*out = g;
			best_free = gfree;
			best_value = v;
		}
	}
	RankParts(out);
	return out->n > 0;
}

/*
 * NoPlacementEver (3.13): a job of a placed unit that has no placement even
 * were every host of its unit empty is held back (as 0.3's NO_AGENT_FITS).
 * Kept for the configuration of the pass (CfSerial).
 */
static bool
NoPlacementEver(const QsJob *j)
{
	static long at[MAXJ];
	static bool none[MAXJ];
	int			k = (int) j->id - 1;
	Plc			p;

	if (!Cf.placed[j->unit])
		return false;
	if (at[k] != CfSerial)
	{
		at[k] = CfSerial;
		none[k] = !MyPlace(j, Cf.hinst[j->unit], &p);
	}
	return none[k];
}

/* a placement as text: host:instances,... in rank order */
static const char *
PlcText(int u, const Plc *p, char *buf)
{
	int			len = 0;

	buf[0] = '\0';
	for (int i = 0; i < p->n; i++)
		len += sprintf(buf + len, "%s%s:%d", i ? "," : "", Cf.hname[u][p->h[i]], p->c[i]);
	if (p->n == 0)
		strcpy(buf, "none");
	return buf;
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

/* placement (3.13): the placed units' hosts in the state planned so far */
static int64_t RHHeld[MAXU][MAXH];	/* parts of held jobs, pending stops included */
static int64_t RHStop[MAXU][MAXH];	/* of those, of jobs whose stop is pending */
static int64_t RHRes[MAXU][MAXH];	/* reserved by kept promises (MyRes) */
static Plc MyRes[MAXJ];			/* the placement a kept promise reserves */
static unsigned char ResNew[MAXJ];	/* made in this pass, or placed anew */
static Plc PendingRes;			/* a new promise's, before it is kept */

/*
 * The jobs the loop tried (3.13): whether each waits
 * WAITING_FOR_HOSTS (SpecNote; -1: not tried in this pass), and, in the
 * loop's order, those the pass must report (QsOutput.host_reasons): of a
 * placed unit, whose reason of placement changes.
 */
static signed char SpecNote[MAXJ];
static int64_t NoteId[MAXJ];
static const char *NoteReason[MAXJ];
static int NNotes;

/*
 * Note records that the pass must report job c's reason of placement: only
 * when it is not the job's reason already (a pass writes what changed).
 */
static void
Note(int c, const char *reason)
{
	const char *now = B[c].status_reason;

	if (reason == NULL ? now == NULL : now != NULL && strcmp(reason, now) == 0)
		return;
	NoteId[NNotes] = B[c].j.id;
	NoteReason[NNotes++] = reason;
}

/* the loop tried job c, which waits WAITING_FOR_HOSTS or not, dispatched or not */
static void
NoteTried(int c, bool waiting, bool dispatched)
{
	SpecNote[c] = waiting;
	(void) dispatched;
	if (!Cf.placed[B[c].j.unit])
		return;					/* the shell clears every reason of placement there */
	Note(c, waiting ? "WAITING_FOR_HOSTS" : NULL);
}

/*
 * the loop held back job c of a placed unit with placement constraints
 * that no host could ever take: its reason NO_AGENT_FITS is the pass's to
 * set (that of a job with none is the fit limits', QsFitLimit.agent_max)
 */
static void
NoteNoFit(int c)
{
	const QsJob *j = &B[c].j;

	if (!Cf.placed[j->unit] || (j->per_host == 0 && j->same_label == NULL))
		return;
	Note(c, "NO_AGENT_FITS");
}

/* a reason of placement to print */
static const char *
ReasonText(const char *reason)
{
	return reason != NULL ? reason : "none";
}

/* the parts of a job (names) added, sign times, to a counter of unit u's hosts */
static void
AddParts(int u, int64_t *counter, const QsPart *parts, int n, int sign)
{
	for (int i = 0; i < n; i++)
	{
		int			h = HostIdx(u, parts[i].host);

		if (h >= 0)				/* a part on no host now holds nothing of any */
			counter[h] += sign * (int64_t) parts[i].count;
	}
}

static void
AddPlc(int64_t *counter, const Plc *p, int sign)
{
	for (int i = 0; i < p->n; i++)
		counter[p->h[i]] += sign * (int64_t) p->c[i];
}

/*
 * HostFree: free(A,u) of each host of job k's unit in the planned state
 * (3.13): its instances, less the parts held (now: pending stops
 * included; in the future state not, nor the parts of the jobs gone[]),
 * less what kept promises reserve but k's own; at least 0.
 */
static void
HostFree(int k, bool future, const int *gone, int ngone, int64_t *free)
{
	int			u = B[k].j.unit;
	int64_t		used[MAXH];

	for (int h = 0; h < Cf.nhosts[u]; h++)
		used[h] = RHHeld[u][h] + RHRes[u][h] - (future ? RHStop[u][h] : 0);
	if (Kept[k])
		AddPlc(used, &MyRes[k], -1);
	for (int i = 0; i < ngone; i++)
		AddParts(u, used, B[gone[i]].parts, B[gone[i]].nparts, -1);
	for (int h = 0; h < Cf.nhosts[u]; h++)
		free[h] = Cf.hinst[u][h] - used[h] > 0 ? Cf.hinst[u][h] - used[h] : 0;
}

/* placement(J) of job k now (pending stops holding) */
static bool
PlaceNow(int k, Plc *p)
{
	int64_t		free[MAXH];

	HostFree(k, false, NULL, 0, free);
	return MyPlace(&B[k].j, free, p);
}

/* placement(J) of job k in the future state, the jobs gone[] stopped too */
static bool
PlaceFuture(int k, const int *gone, int ngone, Plc *p)
{
	int64_t		free[MAXH];

	HostFree(k, true, gone, ngone, free);
	return MyPlace(&B[k].j, free, p);
}

/* a placed unit's job: has it a placement in the future state, gone[] stopped? */
static bool
FuturePlaced(int k, const int *gone, int ngone)
{
	Plc			p;

	return !Cf.placed[B[k].j.unit] || PlaceFuture(k, gone, ngone, &p);
}

/*
 * PlacementWhy (3.13): in a placed unit a job may be dispatched only if
 * it has a placement now and in the future state; NULL, or why not.
 */
static const char *
PlacementWhy(int k)
{
	Plc			p;

	if (!Cf.placed[B[k].j.unit])
		return NULL;
	if (!PlaceNow(k, &p))
		return "no placement on the hosts now (3.13)";
	if (!PlaceFuture(k, NULL, 0, &p))
		return "no placement on the hosts in the future state (3.13)";
	return NULL;
}

/* the held job k's parts: holding on their hosts (sign +1) or not (-1) */
static void
HostsHold(int k, int sign)
{
	const QsJob *j = &B[k].j;

	if (!Cf.placed[j->unit])
		return;
	AddParts(j->unit, RHHeld[j->unit], B[k].parts, B[k].nparts, sign);
	if (j->stop != QS_STOP_NONE)
		AddParts(j->unit, RHStop[j->unit], B[k].parts, B[k].nparts, sign);
}

/* the held job k's stop is requested: its parts are stopping */
static void
HostsStopping(int k)
{
	const QsJob *j = &B[k].j;

	if (Cf.placed[j->unit])
		AddParts(j->unit, RHStop[j->unit], B[k].parts, B[k].nparts, +1);
}

/*
 * Dependencies (3.17), from the sim's own record (DepOf): a job waits
 * while one of the jobs it depends on has not SUCCEEDED; it is to fail
 * once one of them FAILED.  As the pass read them: WaitsB (how many it
 * waits for), FailedB (RUNNABLE, one FAILED) and DueB (FailedB, and among
 * the first dep_failed_max of those by id: the pass reads it).
 */
static int	WaitsB[MAXJ];
static bool FailedB[MAXJ], DueB[MAXJ];

/* how many of the jobs k depends on have not SUCCEEDED in jobs[] */
static int
MyWaiting(const WJob *jobs, int k)
{
	int			n = 0;

	for (int i = 0; i < NDep[k]; i++)
		n += jobs[DepOf[k][i]].state != W_SUCCEEDED;
	return n;
}

/* has one of the jobs k depends on FAILED in jobs[]? */
static bool
MyFailedDep(const WJob *jobs, int k)
{
	for (int i = 0; i < NDep[k]; i++)
		if (jobs[DepOf[k][i]].state == W_FAILED)
			return true;
	return false;
}

/* the dependencies as the pass read them (before the lists of RUNNABLE jobs) */
static void
ReadDependencies(int n)
{
	int			nfailed = 0;

	for (int k = 0; k < n; k++)
	{
		WaitsB[k] = MyWaiting(B, k);
		FailedB[k] = B[k].state == W_RUNNABLE && MyFailedDep(B, k);
		DueB[k] = FailedB[k] && nfailed++ < Cf.dep_failed_max;
		St.dep_beyond += FailedB[k] && !DueB[k];
		if (B[k].state == W_RUNNABLE && WaitsB[k] > 0)
		{
			OnceWaited[k] = 1;
			St.dep_waits++;
		}
	}
}

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

	/* a job waiting for dependencies is in no share's order (3.17) */
	for (int k = 0; k < n; k++)
		if (B[k].state == W_RUNNABLE && WaitsB[k] == 0)
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

/*
 * ShareWaitingAhead: a RUNNABLE job of job k's share and unit, as the pass
 * read it, that waits for dependencies and comes before k in share order
 * (3.17: it holds k back in no way), or -1.
 */
static int
ShareWaitingAhead(int k)
{
	const QsJob *J = &B[k].j;

	for (int h = 0; h < LastN; h++)
		if (B[h].state == W_RUNNABLE && WaitsB[h] > 0 && B[h].j.share == J->share &&
			B[h].j.unit == J->unit && ShareBefore(&B[h].j, J))
			return h;
	return -1;
}

/*
 * LenderWaiting: when job k must borrow in the planned state, a RUNNABLE
 * job of a lender of its unit, as the pass read it, that waits for
 * dependencies and would fit in its share's idle capacity (3.17: it wants
 * none of it), or -1.
 */
static int
LenderWaiting(int k)
{
	const QsJob *J = &B[k].j;
	int			u = J->unit;

	if (RUse[J->share][u] + J->count <= Cf.C[J->share][u])
		return -1;
	for (int h = 0; h < LastN; h++)
	{
		int			t = B[h].j.share;

		if (B[h].state == W_RUNNABLE && WaitsB[h] > 0 && B[h].j.unit == u && t != J->share &&
			Lends(t) && B[h].j.count <= Cf.C[t][u] - RUse[t][u])
			return h;
	}
	return -1;
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
 * capacity?  It is when its share spent its budget of the unit (3.11),
 * when its unit is placed and it has no placement even were every host
 * empty (3.13; none when only draining agents live), or while it is in its
 * backoff after a claim timeout (before claim_backoff_until).  Returns
 * why, or NULL.  A held-back job is not
 * dispatched, gets no victims, does not count as tried for the skip rule
 * (but blocks a STRICT stream like any job not dispatched), wants nothing
 * of its share's idle capacity and loses its promise at the re-check.
 */
static bool OverBudget(int s, int u);

/* BudgetHold: held back by its share's budget of its unit (3.11), or NULL */
static const char *
BudgetHold(const QsJob *j)
{
	if (OverBudget(j->share, j->unit))
		return "held back: its share spent its budget of the unit (3.11)";
	return NULL;
}

/*
 * FleetHold: held back by the hosts (no placement even were every host of
 * its placed unit empty: 3.13, as 3.10's NO_AGENT_FITS) or a claim timeout
 * (3.10), or NULL
 */
static const char *
FleetHold(const QsJob *j)
{
	if (NoPlacementEver(j))
		return "held back: no placement even on empty hosts (3.10, 3.13)";
	if (j->claim_backoff_until != QS_NO_TIME && Cf.now < j->claim_backoff_until)
		return "held back: in its backoff after a claim timeout (3.10)";
	return NULL;
}

static const char *
HeldBack(const QsJob *j)
{
	const char *why = BudgetHold(j);

	return why != NULL ? why : FleetHold(j);
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
 * CapacityWhy: do the capacity rules let the job be dispatched in the
 * planned state, now and in the future (3.2)?  NULL, or why not.
 */
static const char *
CapacityWhy(int k, char *buf)
{
	const QsJob *j = &B[k].j;
	int64_t		use[MAXS];
	const char *why;

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

/*
 * May the job be dispatched in the planned state, now and in the future?
 * Not while it is held back (3.10); in a placed unit only with a placement
 * now and in the future state (3.13).
 */
static const char *
MayDispatch(int k, char *buf)
{
	const char *why;

	if ((why = HeldBack(&B[k].j)) != NULL)
		return why;
	if ((why = CapacityWhy(k, buf)) != NULL)
		return why;
	return PlacementWhy(k);
}

/*
 * ApplyDispatch: job k holds its instances from now on; in a placed unit
 * on placement(J) now (3.13: computed anew at its dispatch, here), and a
 * reservation it held ends.
 */
static void
ApplyDispatch(int k)
{
	const QsJob *j = &B[k].j;
	Plc			p;

	if (Cf.placed[j->unit] && PlaceNow(k, &p))
		AddPlc(RHHeld[j->unit], &p, +1);
	if (Kept[k])
		AddPlc(RHRes[j->unit], &MyRes[k], -1);
	MyRes[k].n = 0;
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
		b->j.lease_until < Cf.now - Cf.fence_grace;
}

/*
 * GraceEnd (3.10): the earliest time a lease that ran out, but no more than
 * fence_grace ago, is lost: lease_until + fence_grace + 1 (the pass is to
 * run again then, wake_at); QS_NO_TIME: none.
 */
static QsTime
GraceEnd(void)
{
	QsTime		end = QS_NO_TIME;

	for (int h = 0; h < LastN; h++)
	{
		const WJob *b = &B[h];

		if (IsHeld(b->state) && b->j.claimed && b->j.lease_until != QS_NO_TIME &&
			b->j.lease_until < Cf.now && !LeaseExpired(b) &&
			(end == QS_NO_TIME || b->j.lease_until + Cf.fence_grace + 1 < end))
			end = b->j.lease_until + Cf.fence_grace + 1;
	}
	return end;
}

/*
 * RunnableExpired (3.9): the reason, if any, with which the pass must fail
 * a RUNNABLE job that could not run for longer than the runnable timeout:
 * RUNNABLE_TIMEOUT for a job whose MISCONFIGURATION reason (as an earlier
 * pass recorded it) dates from before; RUNNABLE_TIMEOUT:NO_AGENT_FITS for
 * one whose NO_AGENT_FITS reason does, and that has no placement even on
 * empty hosts still (3.10, 3.13).  NULL: none.
 */
static const char *
RunnableExpired(const WJob *b)
{
	if (b->state != W_RUNNABLE || W.runnable_timeout == QS_NO_TIME ||
		b->status_reason == NULL || b->status_reason_at + W.runnable_timeout >= Cf.now)
		return NULL;
	if (strncmp(b->status_reason, "MISCONFIGURATION:", 17) == 0)
		return "RUNNABLE_TIMEOUT";
	if (strcmp(b->status_reason, "NO_AGENT_FITS") == 0 && NoPlacementEver(&b->j))
		return "RUNNABLE_TIMEOUT:NO_AGENT_FITS";
	return NULL;
}

/*
 * scheduling.md 3.7, 3.10 and 3.11, written here: the misconfiguration
 * reasons first, BUDGET_EXHAUSTED, then NO_AGENT_FITS for a job of a
 * placed unit with no placement even were every host empty (3.13).
 * (WAITING_FOR_HOSTS, the lowest: WaitingReason.)
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
	if (NoPlacementEver(j))
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
/* checks of one preemption (3.3, 3.4)										 */

/*
 * VictimKindCheck (3.3): victim v of preemptor J is of a kind the attempts
 * allow: it holds J's unit; of J's share only with in_share_preemption and
 * of strictly lower priority; of another share only while J's share holds
 * less than its capacity (a reclaim).
 */
static void
VictimKindCheck(const QsJob *J, const QsJob *v)
{
	int			S = J->share, u = J->unit;

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
	else if (RUse[S][u] >= Cf.C[S][u])
		Fail("reclaim", "job %" PRId64 " reclaimed job %" PRId64 " of share %d although its share %d already holds %" PRId64 " >= its capacity %" PRId64 " of unit %d",
			 J->id, v->id, v->share, S, RUse[S][u], Cf.C[S][u], u);
}

/*
 * VictimKindsCheck (3.3): a job gets victims only if it fails the test of
 * 3.2 and holds no promise, is RUNNABLE and undecided, once a pass; each
 * victim of a kind the attempts allow (VictimKindCheck); and a reclaim
 * never makes room for the preemptor to borrow: once its victims stopped
 * it fits in its share's own capacity.
 */
static void
VictimKindsCheck(int jk, const int *vk, int nv)
{
	const QsJob *J = &B[jk].j;
	int			S = J->share, u = J->unit;
	int64_t		fut[MAXS];
	bool		cross = false;
	char		buf[256];

	if (MayDispatch(jk, buf) == NULL)
		Fail("preempt", "job %" PRId64 " was given victims although it could be dispatched at once", J->id);
	if (B[jk].state != W_RUNNABLE || Handled[jk])
		Fail("preempt", "victims stopped for job %" PRId64 ", which is %s%s", J->id,
			 StateName(B[jk].state), Handled[jk] ? " and already decided in this pass" : "");
	if (Kept[jk])
		Fail("promise", "job %" PRId64 " holds a kept promise but was given further victims (3.6)",
			 J->id);
	if (Victimized[jk])
		Fail("preempt", "job %" PRId64 " was given victims twice in one pass", J->id);
	FutureUse(u, true, fut);
	for (int i = 0; i < nv; i++)
	{
		const QsJob *v = &B[vk[i]].j;

		VictimKindCheck(J, v);
		cross |= v->share != S;
		fut[v->share] -= v->count;
	}
	if (cross && fut[S] + J->count > Cf.C[S][u])
		Fail("reclaim", "job %" PRId64 " reclaimed from other shares but will not fit in its share's own capacity once they stop (%" PRId64 " + %" PRId64 " > %" PRId64 "): a job never reclaims to borrow",
			 J->id, fut[S], (int64_t) J->count, Cf.C[S][u]);
}

/*
 * OthersPlace (3.13): has preemptor J a placement in the future state once
 * every victim but the one at `but` stopped (true in a unit not placed)?
 */
static bool
OthersPlace(const QsJob *J, const int *vk, int nv, int but)
{
	int			others[MAXJ], n = 0;

	for (int i = 0; i < nv; i++)
		if (i != but)
			others[n++] = vk[i];
	return FuturePlaced((int) J->id - 1, others, n);
}

/*
 * VictimsMinimal (3.4): none of the victims is superfluous (the backwards
 * walk); fut: the future state with all of them stopped.  With a
 * cross-share victim the attempt was the reclaim, whose room test also
 * needs the preemptor to fit in its own capacity; with in-share victims
 * only, it was the in-share attempt when the share held its capacity
 * already, else either: then only the stricter test is used.  The room
 * tests are monotone in the victims (a victim only lowers usages; the
 * wanted rule matters only to a job that must borrow, whose victims are its
 * own share's), so a victim kept by the walk is needed in the final set too.
 */
static void
VictimsMinimal(const QsJob *J, const int *vk, int nv, int64_t *fut, bool cross)
{
	int			S = J->share, u = J->unit;
	int64_t		n = J->count;
	char		buf[256];

	for (int i = 0; i < nv; i++)
	{
		const QsJob *v = &B[vk[i]].j;
		bool		superfluous;

		fut[v->share] += v->count;
		superfluous = fut[S] + n <= Cf.C[S][u] && CheckJob(fut, J, buf) == NULL;
		if (!cross && RUse[S][u] >= Cf.C[S][u])
			superfluous = CheckJob(fut, J, buf) == NULL;
		fut[v->share] -= v->count;
		if (superfluous && !OthersPlace(J, vk, nv, i))
			superfluous = false;	/* the placement needs it (3.13) */
		if (superfluous)
			Fail("minimal", "victim %" PRId64 " of job %" PRId64 " was not needed: with the other %d victims stopped the job could start (3.4: the backwards walk drops it)",
				 v->id, J->id, nv - 1);
	}
}

/*
 * VictimChoiceCheck (3.4): a candidate of another share is taken only while
 * its share still borrows after its pending stops and the victims taken
 * before it; the victims are enough (the preemptor can start once they
 * stopped: 3.6, the pass never preempts for a job that would still not
 * fit) and none is superfluous (VictimsMinimal).
 */
static void
VictimChoiceCheck(int jk, const int *vk, int nv)
{
	const QsJob *J = &B[jk].j;
	int			S = J->share, u = J->unit;
	int64_t		fut[MAXS], futnp[MAXS], taken[MAXS] = {0};
	bool		cross = false;
	char		buf[256];
	const char *why;

	FutureUse(u, false, futnp);
	for (int i = 0; i < nv; i++)
	{
		const QsJob *v = &B[vk[i]].j;

		if (v->share == S)
			continue;
		cross = true;
		if (futnp[v->share] - taken[v->share] <= Cf.C[v->share][u])
			Fail("reclaim", "job %" PRId64 " of share %d reclaimed job %" PRId64 " of share %d, which was no longer borrowing unit %d (usage %" PRId64 " counting pending stops and earlier victims as gone, capacity %" PRId64 ")",
				 J->id, S, v->id, v->share, u, futnp[v->share] - taken[v->share],
				 Cf.C[v->share][u]);
		taken[v->share] += v->count;
	}
	FutureUse(u, true, fut);
	for (int i = 0; i < nv; i++)
		fut[B[vk[i]].j.share] -= B[vk[i]].j.count;
	if ((why = CheckJob(fut, J, buf)) != NULL ||
		(!OthersPlace(J, vk, nv, -1) && (why = "it has no placement on the hosts (3.13)")))
		Fail("victims", "job %" PRId64 " was given %d victims but could still not start once they stopped: %s",
			 J->id, nv, why);
	VictimsMinimal(J, vk, nv, fut, cross);
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
 * LowerInShare: what job k's share would free of its unit by stopping its
 * own held jobs of strictly lower priority that are candidates (no pending
 * stop, not decided in this pass, not exempt: see Exempt).
 */
static int64_t
LowerInShare(int k, bool exemptions, QsTime *live_end, QsTime *all_end, int *gone, int *ngone)
{
	const QsJob *J = &B[k].j;
	int64_t		freed = 0;

	for (int h = 0; h < LastN; h++)
	{
		const QsJob *c = &B[h].j;

		if (IsHeld(B[h].state) && c->unit == J->unit && c->share == J->share &&
			c->stop == QS_STOP_NONE && c->priority < J->priority &&
			!Exempt(h, exemptions, live_end, all_end) && !Handled[h])
		{
			freed += c->count;
			gone[(*ngone)++] = h;	/* its parts freed too (3.13) */
		}
	}
	return freed;
}

static int Gone[MAXJ];			/* the candidates of an attempt, all taken */

/*
 * ReclaimPossible: would the reclaim (3.3, attempt 1) find victims for job
 * k?  Only while its share holds less than its capacity, and only if the
 * job does not fit there already (fut0: the future state); the candidates
 * are the other shares' jobs while their share still borrows (in victim
 * order), then with in_share_preemption its share's lower-priority jobs;
 * with all of them gone the job must fit in its share's own capacity.
 */
static bool
ReclaimPossible(int k, bool exemptions, const int64_t *fut0, QsTime *live_end, QsTime *all_end)
{
	const QsJob *J = &B[k].j;
	int			S = J->share, u = J->unit;
	int64_t		fut[MAXS], futnp[MAXS], taken[MAXS] = {0};
	static int	cand[MAXJ];
	int			nc = 0, ngone = 0;
	char		buf[256];

	if (RUse[S][u] >= Cf.C[S][u] ||
		(fut0[S] + J->count <= Cf.C[S][u] && CheckJob(fut0, J, buf) == NULL &&
		 FuturePlaced(k, NULL, 0)))
		return false;
	memcpy(fut, fut0, sizeof(fut));
	FutureUse(u, false, futnp);
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
			Gone[ngone++] = cand[i];
		}
	}
	if (Cf.isp[S])
		fut[S] -= LowerInShare(k, exemptions, live_end, all_end, Gone, &ngone);
	return fut[S] + J->count <= Cf.C[S][u] && CheckJob(fut, J, buf) == NULL &&
		FuturePlaced(k, Gone, ngone);
}

/*
 * PreemptionPossible: could job k, under the cursor in the planned state,
 * be given victims (3.3, 3.4)?  Greedy selection ends with every candidate
 * taken unless the room test passes earlier, and the room tests are
 * monotone in the victims (see VictimsMinimal), so the attempt finds victims
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
	int64_t		fut0[MAXS], fut[MAXS];
	char		buf[256];

	*live_end = *all_end = QS_NO_TIME;
	FutureUse(u, true, fut0);

	/* 1. reclaim, only while S holds less than its capacity */
	if (ReclaimPossible(k, exemptions, fut0, live_end, all_end))
	{
		sprintf(msg, "reclaiming from borrowers%s would let it start in its own capacity (share %d holds %" PRId64 " < capacity %" PRId64 "; 3.3)",
				Cf.isp[S] ? " and its share's lower-priority jobs" : "", S, RUse[S][u], Cf.C[S][u]);
		return msg;
	}

	/* 2. in-share */
	if (Cf.isp[S] && (CheckJob(fut0, J, buf) != NULL || !FuturePlaced(k, NULL, 0)))
	{
		int			ngone = 0;

		memcpy(fut, fut0, sizeof(fut));
		fut[S] -= LowerInShare(k, exemptions, live_end, all_end, Gone, &ngone);
		if (CheckJob(fut, J, buf) == NULL && FuturePlaced(k, Gone, ngone))
		{
			sprintf(msg, "stopping its share's lower-priority jobs (in_share_preemption) would let it start (3.3)");
			return msg;
		}
	}
	return NULL;
}

/* ---------------------------------------------------------------- */
/* the cursors of the dispatch loop (3.2), modelled here					 */

/*
 * The skip rule's classes (3.2, 3.13): in a BEST_EFFORT share of a placed
 * unit, the jobs with the same instances_per_host (0 to 9: no job needs
 * more than 9) and same_label (none or a key of LabelKeys); in a unit
 * that is not placed every job is of class 0, constraints ignored.
 */
#define NCLASS (10 * (NKEYS + 1))

static int SPos[MAXS][MAXU];	/* index in RunIdx of the stream's head */
static int32_t SBelow[MAXS][MAXU][NCLASS];	/* the skip rule, per class */
static bool SShut[MAXS][MAXU];	/* STRICT: every later job is skipped */

static int
SkipClass(const QsJob *j)
{
	if (!Cf.placed[j->unit])
		return 0;
	return j->per_host * (NKEYS + 1) + LabelKey(j->same_label) + 1;
}

static bool
Skipped(int k)
{
	const QsJob *j = &B[k].j;

	return SShut[j->share][j->unit] || j->count >= SBelow[j->share][j->unit][SkipClass(j)];
}

static void
StreamAdvance(int s, int u, bool from_start)
{
	int			p = from_start ? RunFrom[s][u] : SPos[s][u] + 1;

	while (p < RunTo[s][u] && (Handled[RunIdx[p]] || Skipped(RunIdx[p])))
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
/* the dispatch order (3.2)														 */

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
			HeldBack(K) == NULL && SkipClass(K) == SkipClass(J))
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
	if (NoPlacementEver(j))
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

		/* (J itself may wait for dependencies, in no share's order: 3.17) */
		if (k == jk || !ShareBefore(&B[k].j, &B[jk].j))
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
	QsTime		grace = GraceEnd();

	if (grace != QS_NO_TIME && (wake == QS_NO_TIME || wake > grace))
		Fail("wake", "a lease ran out within its fence_grace, which ends at %" PRId64 ", but wake_at is %" PRId64 " (3.10)",
			 grace, wake);
	if (grace != QS_NO_TIME && wake == grace && (hi == QS_NO_TIME || wake <= hi))
		return;
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
/* promises																		 */

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

/* ---------------------------------------------------------------- */
/* the replay of a pass, as the rules see it									 */

/*
 * The events of the replay (CheckedPass) at which the rules are checked,
 * in the order they come in a pass; EV_ACK and the liveness events come
 * from the steps between passes.
 */
typedef enum Ev
{
	EV_READ,					/* the pass ran; nothing of it replayed yet */
	EV_DECISION,				/* Rp.i: a decision, before the replay takes it */
	EV_TIME_WORK,				/* every decision read: the time-based work */
	EV_REPAIRS,					/* step 2 replayed */
	EV_LAPSED,					/* step 3 begins: the lapses the pass reports */
	EV_RECHECK,					/* step 3: job Rp.k's promise re-checked; Rp.why */
	EV_FREED_ONE,				/* step 4: Rp.k is dispatched (decision Rp.di) */
	EV_FREED,					/* step 4 replayed: Rp.e4, dispatched from Rp.i on */
	EV_LOOP_BEGIN,				/* step 5 begins */
	EV_DISPATCH,				/* the loop: candidate Rp.k dispatched (not applied yet) */
	EV_VICTIMS,					/* the loop: candidate Rp.k given victims Rp.vk (still holding) */
	EV_AFTER_VICTIMS,			/* the loop: Rp.k's victims stopped; Rp.dispatched */
	EV_NOTHING,					/* the loop: candidate Rp.k got nothing */
	EV_LOOP_END,				/* step 5 replayed; Rp.i: the first decision it did not reach */
	EV_APPLIED,					/* the decisions applied to the world */
	EV_ACK,						/* an agent acknowledged a stop (Acked) */
	EV_FIXED_POINT,				/* liveness: a pass decided nothing in the frozen world */
	EV_NO_FIXED_POINT			/* liveness: no such pass within NROUNDS */
} Ev;

/* the pass being replayed */
static struct
{
	int			n, nd;			/* jobs the pass read, its decisions */
	const QsOutput *out;
	const QsDecision *D;
	int			i;				/* the next decision the replay takes */
	int			k;				/* the job of the event */
	int			di;				/* EV_FREED_ONE: the decision that must be its dispatch */
	const char *why;			/* EV_RECHECK: why the promise cannot be kept, or NULL */
	int			vk[MAXJ], nv;	/* EV_VICTIMS: the victims, */
	bool		imm[MAXJ];		/* each stopped at once or not */
	int			e4[MAXJ], ne4;	/* EV_FREED: the freed promises, in promise order */
	bool		dispatched;		/* EV_AFTER_VICTIMS: the preemptor was dispatched */
	bool		held_back;		/* EV_NOTHING: the candidate is held back (3.10) */
	const char *cursor_tag;		/* EV_NOTHING: the tag of a cursor failure, */
	const char *hint;			/* and a note for the failures, or NULL */
	int			loopjobs[MAXJ], nloop;	/* dispatched or given victims by the loop */
	bool		lapsed[MAXJ];	/* the pass says the promise lapsed */
	bool		inprom[MAXJ];	/* given victims, not dispatched: promised */
	int			plist[MAXJ], np;	/* promised jobs, in promise order */
	int			rk[MAXJ], nr;	/* the repair's victims */
	int64_t		start[MAXU][MAXS];	/* use before the repair, pending stops gone */
	bool		viol[MAXU];		/* (I1)-(I3) failed there */
	long		cnt_before[6];	/* jobs in each state before the pass */
	int			runnable[MAXJ], nrunnable;	/* EV_APPLIED: the RUNNABLE jobs, */
	const char *reason[MAXJ];	/* and the reason each must have: 3.7, 3.10, 3.11 */
} Rp;

/* the decision of an EV_DECISION event (NULL at any other) */
static const QsDecision *
EvDecision(Ev ev)
{
	return ev == EV_DECISION ? &Rp.D[Rp.i] : NULL;
}

/* EV_ACK: what the agent's report of a stop found, and the outcome expected */
static struct
{
	int			k;
	Outcome		o;
	int32_t		fa, pc, ll;		/* the counters before */
	QsStop		stop;
} Acked;

static void
ClaimTimeoutOutcome(const WJob *b, Outcome *o, QsTime *until)
{
	o->action = QS_REQUEUE;
	o->counter = QS_COUNT_NOT_CLAIMED;
	o->reason = "NOT_CLAIMED";
	*until = Cf.now + MyBackoff(Cf.claim_timeout, b->j.claim_requeues + 1);
}

/* ---------------------------------------------------------------- */
/* 3 The scheduling pass														 */

static int PassStep;			/* 0: time-based work, 1: repairs, 2: the dispatch loop */

/* the decision's PREEMPT: of a held job without a pending stop, in its step */
static void
PreemptDecisionCheck(const QsDecision *d, const WJob *b)
{
	if (!IsHeld(b->state) || b->j.stop != QS_STOP_NONE)
		Fail("decision", "job %" PRId64 " preempted but it is %s with stop %s",
			 d->job_id, StateName(b->state), StopText(b->j.stop));
	if (d->preempted_for == 0)
	{
		if (PassStep > 1)
			Fail("phase", "CAPACITY_REDUCED victim %" PRId64 " after the dispatch loop began (3: repair is step 2)", d->job_id);
		PassStep = 1;
		return;
	}
	if (d->preempted_for < 1 || d->preempted_for > Rp.n)
		Fail("decision", "job %" PRId64 " preempted for unknown job %" PRId64, d->job_id, d->preempted_for);
	if (!Cf.env_enabled)
		Fail("disabled", "job %" PRId64 " preempted for a waiting job in a DISABLED environment", d->job_id);
	PassStep = 2;
}

/*
 * DecisionCheck: decision i is legal for the job as the pass read it (the
 * table of actions), the job's only one, in the order of the six steps,
 * and none of steps 4 and 5 in a DISABLED environment.
 */
static void
DecisionCheck(int i)
{
	const QsDecision *d = &Rp.D[i];
	const WJob *b;

	if (d->job_id < 1 || d->job_id > Rp.n)
		Fail("decision", "decision %d names job %" PRId64 ", which does not exist", i, d->job_id);
	b = &B[d->job_id - 1];
	if (d->share != b->j.share || d->unit != b->j.unit || d->count != b->j.count)
		Fail("decision", "decision %d about job %" PRId64 " names share %d unit %d n=%d, the job has %d/%d/%d",
			 i, d->job_id, d->share, d->unit, d->count, b->j.share, b->j.unit, b->j.count);
	if (NDec[d->job_id - 1])
		Fail("decision", "job %" PRId64 " has two decisions in one pass (the second: %s)",
			 d->job_id, ActionName(d->action));
	switch (d->action)
	{
		case QS_DISPATCH:
			if (b->state != W_RUNNABLE)
				Fail("decision", "job %" PRId64 " dispatched but it is %s", d->job_id, StateName(b->state));
			if (!Cf.env_enabled)
				Fail("disabled", "job %" PRId64 " dispatched in a DISABLED environment", d->job_id);
			PassStep = 2;
			break;
		case QS_PREEMPT:
			PreemptDecisionCheck(d, b);
			break;
		case QS_STOP:
			if (PassStep > 0)
				Fail("phase", "STOP of job %" PRId64 " after repairs or dispatches (3: time-based work is step 1)", d->job_id);
			break;
		case QS_REQUEUE:
		case QS_FAIL:
			if (PassStep > 0)
				Fail("phase", "%s of job %" PRId64 " after repairs or dispatches", ActionName(d->action), d->job_id);
			if (!IsHeld(b->state) && b->state != W_RUNNABLE)
				Fail("decision", "%s of job %" PRId64 ", which is %s", ActionName(d->action), d->job_id,
					 StateName(b->state));
			break;
		default:
			Fail("decision", "decision %d has unknown action %d", i, d->action);
	}
}

/* every job where its decisions put it: state, stop, claim, promise, counters */
static void
JobsWhereDecided(void)
{
	for (int k = 0; k < Rp.n; k++)
	{
		const WJob *a = &W.jobs[k];
		const Expect *e = &Ex[k];

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
	}
}

/* the state counts after the pass add up with the decisions; no job lost */
static void
StateCountsCheck(void)
{
	long		runnable = Rp.cnt_before[W_RUNNABLE], held = 0, failed = Rp.cnt_before[W_FAILED];
	long		after[6] = {0};

	for (int k = 0; k < Rp.n; k++)
		after[W.jobs[k].state]++;
	for (int x = 0; x < Rp.nd; x++)
	{
		const QsDecision *d = &Rp.D[x];
		bool		was_held = IsHeld(B[d->job_id - 1].state);

		if (d->action == QS_DISPATCH)
			runnable--, held++;
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
	}
	held += Rp.cnt_before[W_SCHEDULED] + Rp.cnt_before[W_STARTING] + Rp.cnt_before[W_RUNNING];
	if (after[W_RUNNABLE] != runnable || after[W_FAILED] != failed ||
		after[W_SCHEDULED] + after[W_STARTING] + after[W_RUNNING] != held ||
		after[W_SUCCEEDED] != Rp.cnt_before[W_SUCCEEDED])
		Fail("bookkeeping", "state counts after the pass (RUNNABLE %ld, held %ld, FAILED %ld) do not add up with the decisions (%ld, %ld, %ld)",
			 after[W_RUNNABLE], after[W_SCHEDULED] + after[W_STARTING] + after[W_RUNNING],
			 after[W_FAILED], runnable, held, failed);
	if (after[0] + after[1] + after[2] + after[3] + after[4] + after[5] != Rp.n)
		Fail("bookkeeping", "jobs lost: %d submitted, states count otherwise", Rp.n);
}

/*
 * 3 The scheduling pass: the table of actions (each decision legal for the
 * job as the pass read it, one a job: a victim stopped at once has its
 * PREEMPT, then its REQUEUE or FAIL), the six steps in their order, steps
 * 4 and 5 left out in a DISABLED environment; after the pass each job is
 * where its decisions put it (the four counters, claim_backoff_until,
 * preempted_for, queued_at kept) and no job is lost; in the liveness freeze
 * repeated passes come to rest (no churn).
 */
static void
Check_3_SchedulingPass(Ev ev)
{
	switch (ev)
	{
		case EV_READ:
			PassStep = 0;
			break;
		case EV_DECISION:
			DecisionCheck(Rp.i);
			break;
		case EV_APPLIED:
			JobsWhereDecided();
			StateCountsCheck();
			break;
		case EV_NO_FIXED_POINT:
			Fail("liveness", "no fixed point after %d rounds of passes in a frozen world (churn)", NROUNDS);
			break;
		default:
			break;
	}
}

/* ---------------------------------------------------------------- */
/* 3.1 Capacity accounting														 */

/*
 * 3.1 Capacity accounting: (I1)-(I3) after every pass, from the world as
 * applied, in the future state (held jobs without a pending stop, plus
 * promised RUNNABLE jobs) with no exception, and in the present state
 * (pending stops still holding) but from an admin's change of a limit
 * until a pass leaves them holding again (AdminDirty: 3.5's exception).
 */
static void
Check_3_1_CapacityAccounting(Ev ev)
{
	bool		now_ok = true;
	char		buf[256];
	const char *why;

	if (ev != EV_APPLIED)
		return;
	for (int u = 0; u < Cf.nunits; u++)
	{
		int64_t		now[MAXS] = {0}, fut[MAXS] = {0};

		for (int k = 0; k < Rp.n; k++)
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
		if (Violation(u, now, buf) != NULL)
		{
			now_ok = false;
			if (!AdminDirty)
				Fail("invariant-now", "after the pass, pending stops still holding: %s, and no limit was changed since the state last satisfied (I1)-(I3) (3.1)",
					 buf);
		}
	}
	if (now_ok)
		AdminDirty = false;
}

/* ---------------------------------------------------------------- */
/* 3.2 Dispatch																	 */

/* the candidate got nothing: it could not have been dispatched */
static void
CursorCheck(int c)
{
	const QsJob *C = &B[c].j;
	const QsDecision *d = Rp.i < Rp.nd ? &Rp.D[Rp.i] : NULL;
	char		buf[256], wbuf[128];

	if (MayDispatch(c, buf) != NULL)
		return;
	if (d != NULL)
		sprintf(wbuf, "went on with %s of job %" PRId64, ActionName(d->action),
				d->action == QS_PREEMPT ? d->preempted_for : d->job_id);
	Fail(Rp.cursor_tag, "job %" PRId64 " (share %d unit %d n=%d) came under the cursor and could be dispatched, but the pass %s%s (3.2: own capacity first, then queue order%s; the skip rule; best effort)",
		 C->id, C->share, C->unit, C->count, d ? wbuf : "dispatched nothing more",
		 Rp.hint ? Rp.hint : "", Cf.fair ? " or FAIR" : "");
}

/* after the loop: no decision left over, the order of each stream, explain */
static void
LoopEndCheck(void)
{
	if (Rp.i < Rp.nd)
		Fail("cursor", "%s of job %" PRId64 " (preempted_for %" PRId64 "), which the cursor never reached: the skip rule passed it over, it was decided already, or the pass took the jobs in another order (3.2)",
			 ActionName(Rp.D[Rp.i].action), Rp.D[Rp.i].job_id, Rp.D[Rp.i].preempted_for);
	for (int x = 0; x < Rp.nloop; x++)
		OrderCheck(Rp.loopjobs[x], Dispatched[Rp.loopjobs[x]] ? "dispatched" : "given victims");
	StrictHeadCheck(Rp.n);
}

/*
 * 3.2 Dispatch: every dispatch passes the test (I1)-(I3) now and in the
 * future state, with the wanted-capacity rule (MayDispatch); the loop, in
 * lockstep with a model of the cursors (the driver's ReplayLoop): a job
 * that comes under the cursor and gets nothing could not be dispatched
 * (tagged [fair] or [strict] when the FAIR choice or the STRICT skip seem
 * to be why), and no decision is left that the cursor never reached; the
 * order of a share's stream (OrderCheck: the skip rule) and STRICT
 * queueing (StrictCheck); explain's account of a STRICT share's wait
 * (StrictHeadCheck).
 */
static void
Check_3_2_Dispatch(Ev ev)
{
	char		buf[256];
	const char *why;

	switch (ev)
	{
		case EV_LOOP_BEGIN:
			StrictCheck(Rp.D, Rp.nd);
			break;
		case EV_DISPATCH:
			if ((why = MayDispatch(Rp.k, buf)) != NULL)
				Fail("dispatch", "job %" PRId64 " (share %d, unit %d, n=%d) dispatched although %s (3.2)",
					 B[Rp.k].j.id, B[Rp.k].j.share, B[Rp.k].j.unit, B[Rp.k].j.count, why);
			break;
		case EV_NOTHING:
			CursorCheck(Rp.k);
			break;
		case EV_LOOP_END:
			LoopEndCheck();
			break;
		default:
			break;
	}
}

/* ---------------------------------------------------------------- */
/* 3.3 Preemption: the candidates												 */

/* wake_at (3.3, section 6): what the preemptors left without victims say */
static QsTime WakeLo, WakeHi;
static int64_t WakeHiJob;
static char WakeHint[512];

/* a victim's stop_reason, and no claimed job inside its min_runtime */
static void
PreemptKindCheck(const QsDecision *d)
{
	const WJob *b = &B[d->job_id - 1];
	const WJob *pj = &B[d->preempted_for - 1];

	if (d->stop != (pj->j.share == b->j.share ? QS_STOP_IN_SHARE : QS_STOP_CROSS_SHARE))
		Fail("decision", "victim %" PRId64 " (share %d) of job %" PRId64 " (share %d) got stop %s",
			 d->job_id, b->j.share, pj->j.id, pj->j.share, StopText(d->stop));
	if (ExemptEnd(&b->j) != QS_NO_TIME)
		Fail("min-runtime", "claimed job %" PRId64 " of share %d (scheduled_at %" PRId64 ", min_runtime %" PRId64 ") was preempted (%s) for job %" PRId64 " at %" PRId64 ", before its min_runtime passed (3.3: only repairs ignore it)",
			 d->job_id, b->j.share, b->j.scheduled_at, Cf.minrt[b->j.share],
			 StopText(d->stop), d->preempted_for, Cf.now);
}

/*
 * MissedPreemptionCheck: a candidate that got nothing, not held back and
 * holding no kept promise, could not have had victims; the exemptions it
 * met make the bounds of wake_at (WakeCheck).
 */
static void
MissedPreemptionCheck(int c)
{
	const QsJob *C = &B[c].j;
	QsTime		live_end, all_end, l2, a2;
	char		pbuf[256];
	const char *why;

	if (Kept[c] || Rp.held_back)
		return;
	if ((why = PreemptionPossible(c, true, &live_end, &all_end, pbuf)) != NULL)
		Fail(strstr(why, "reclaim") ? "missed-reclaim" : "missed-in-share",
			 "job %" PRId64 " (share %d unit %d n=%d prio %d) came under the cursor and got nothing, but %s%s",
			 C->id, C->share, C->unit, C->count, C->priority, why, Rp.hint ? Rp.hint : "");
	/* the earliest end of an exemption passed over (wake_at) */
	if (all_end != QS_NO_TIME && (WakeLo == QS_NO_TIME || all_end < WakeLo))
		WakeLo = all_end;
	/* victims but for the exemptions: it waits for them */
	if (live_end != QS_NO_TIME && PreemptionPossible(c, false, &l2, &a2, pbuf) != NULL)
	{
		St.exempt_waits++;
		if (WakeHi == QS_NO_TIME || live_end < WakeHi)
		{
			WakeHi = live_end;
			WakeHiJob = C->id;
			/* did the pass perhaps never try it? */
			snprintf(WakeHint, sizeof(WakeHint), "%s", Rp.hint ? Rp.hint : "");
		}
	}
}

/*
 * 3.3 Preemption: the candidates: a victim's stop_reason names its kind;
 * no claimed job is preempted inside its share's min_runtime; a job gets
 * victims only if it fails the test and holds no promise, and they are of
 * the kinds the two attempts allow, a reclaim never to borrow
 * (VictimKindsCheck); a job that came under the cursor and got nothing
 * could not have had victims (PreemptionPossible); wake_at is the end of
 * an exemption that kept a preemptor from its victims (WakeCheck).
 */
static void
Check_3_3_PreemptionCandidates(Ev ev)
{
	const QsDecision *d = EvDecision(ev);

	switch (ev)
	{
		case EV_READ:
			WakeLo = WakeHi = QS_NO_TIME;
			WakeHiJob = 0;
			WakeHint[0] = '\0';
			break;
		case EV_DECISION:
			if (d->action == QS_PREEMPT && d->preempted_for != 0)
				PreemptKindCheck(d);
			break;
		case EV_VICTIMS:
			VictimKindsCheck(Rp.k, Rp.vk, Rp.nv);
			break;
		case EV_NOTHING:
			MissedPreemptionCheck(Rp.k);
			break;
		case EV_LOOP_END:
			WakeCheck(Rp.out->wake_at, WakeLo, WakeHi, WakeHiJob, WakeHint);
			break;
		default:
			break;
	}
}

/* ---------------------------------------------------------------- */
/* 3.4 Preemption: choosing the victims											 */

/*
 * 3.4 Preemption: choosing the victims: a borrower taken only while its
 * share still borrows, enough victims and none superfluous
 * (VictimChoiceCheck); a preemptor that passes the test once its victims
 * stopped at once is dispatched in the same pass, one that does not is
 * only promised the room.
 */
static void
Check_3_4_Victims(Ev ev)
{
	char		buf[256];
	const char *why;

	if (ev == EV_VICTIMS)
		VictimChoiceCheck(Rp.k, Rp.vk, Rp.nv);
	if (ev != EV_AFTER_VICTIMS)
		return;
	why = MayDispatch(Rp.k, buf);
	if (Rp.dispatched && why != NULL)
		Fail("dispatch", "job %" PRId64 " dispatched right after its victims stopped, although %s",
			 B[Rp.k].j.id, why);
	if (!Rp.dispatched && why == NULL)
		Fail("promise", "job %" PRId64 " could start at once after its victims stopped, yet it was only promised",
			 B[Rp.k].j.id);
}

/* ---------------------------------------------------------------- */
/* 3.5 Capacity reduced															 */

/*
 * 3.5 Capacity reduced: a victim without a preemptor is a repair's
 * (CAPACITY_REDUCED); after step 2, (I1)-(I3) hold once pending stops
 * complete; repairs only in units where an invariant failed, first each
 * share above allowed(S,u) losing its own jobs, each victim needed
 * (CheckRepairs).
 */
static void
Check_3_5_CapacityReduced(Ev ev)
{
	const QsDecision *d = EvDecision(ev);
	char		buf[256];
	const char *why;

	if (ev == EV_DECISION && d->action == QS_PREEMPT && d->preempted_for == 0 &&
		d->stop != QS_STOP_CAPACITY_REDUCED)
		Fail("decision", "victim %" PRId64 " has no preemptor but stop %s", d->job_id, StopText(d->stop));
	if (ev != EV_REPAIRS)
		return;
	for (int u = 0; u < Cf.nunits; u++)
	{
		int64_t		use[MAXS];

		FutureUse(u, false, use);
		if ((why = Violation(u, use, buf)) != NULL)
			Fail("repair-incomplete", "after the repair step, once pending stops complete: %s (3.5: the pass preempts until (I1)-(I3) hold)",
				 why);
	}
	CheckRepairs(Rp.rk, Rp.nr, Rp.viol, Rp.start);
}

/* ---------------------------------------------------------------- */
/* 3.6 Stopping, requeueing and the promise										 */

/* a victim stopped at once if unclaimed, with its outcome; else asked to stop */
static void
VictimStopCheck(int i)
{
	const QsDecision *d = &Rp.D[i];
	const WJob *b = &B[d->job_id - 1];
	Outcome		o = MyOutcome(&b->j, d->stop);

	if (b->j.claimed)
	{
		if (d->immediate)
			Fail("decision", "claimed victim %" PRId64 " marked as stopped at once", d->job_id);
		return;
	}
	if (!d->immediate)
		Fail("unclaimed", "unclaimed victim %" PRId64 " was not stopped at once (3.6)", d->job_id);
	if (i + 1 >= Rp.nd || Rp.D[i + 1].job_id != d->job_id ||
		(Rp.D[i + 1].action != QS_REQUEUE && Rp.D[i + 1].action != QS_FAIL))
		Fail("unclaimed", "victim %" PRId64 " stopped at once but no REQUEUE or FAIL follows", d->job_id);
	if (Rp.D[i + 1].action != o.action || Rp.D[i + 1].counter != o.counter)
		Fail("outcome", "victim %" PRId64 " (preemptions %d, retries %d) stopped at once: %s with counter %d, expected %s with counter %d",
			 d->job_id, b->j.preemption_count, b->j.preemption_retries,
			 ActionName(Rp.D[i + 1].action), Rp.D[i + 1].counter, ActionName(o.action), o.counter);
}

/* the lapses the pass reports are of promised RUNNABLE jobs */
static void
LapsedCheck(void)
{
	for (int x = 0; x < Rp.out->nlapsed; x++)
	{
		int64_t		id = Rp.out->lapsed[x];

		if (id < 1 || id > Rp.n || B[id - 1].state != W_RUNNABLE || B[id - 1].j.promised_at == QS_NO_TIME)
			Fail("promise", "promise of job %" PRId64 " lapsed, but it held none", id);
	}
}

/* step 4: the freed promises, first of the decisions after the repairs */
static void
FreedFirstCheck(void)
{
	for (int x = 0; x < Rp.ne4; x++)
	{
		int			i = Rp.i + x;

		if (i >= Rp.nd || Rp.D[i].action != QS_DISPATCH || !Step4[Rp.D[i].job_id - 1])
			Fail("promised-first", "%d promised jobs whose victims have all stopped may be dispatched (first: job %" PRId64 "), but the pass's %d-th decision after its repairs is not one of their dispatches (3.6: they go before any other job, in promise order)",
				 Rp.ne4, B[Rp.e4[0]].j.id, x + 1);
	}
}

/* the new promises are the preemptors that did not start at once */
static void
NewPromisesCheck(void)
{
	static bool left[MAXJ];

	memcpy(left, Rp.inprom, sizeof(bool) * Rp.n);
	for (int x = 0; x < Rp.out->npromised; x++)
	{
		int64_t		id = Rp.out->promised[x];

		if (id < 1 || id > Rp.n || !left[id - 1])
			Fail("promise", "job %" PRId64 " was promised room without being given victims that still hold it", id);
		left[id - 1] = false;
	}
	for (int k = 0; k < Rp.n; k++)
		if (left[k])
			Fail("promise", "job %" PRId64 " got victims, was not dispatched and was not promised the room", B[k].j.id);
}

/* an acknowledged stop: the job RUNNABLE or FAILED as its outcome says */
static void
AckCheck(void)
{
	const WJob *job = &W.jobs[Acked.k];
	const Outcome *o = &Acked.o;

	if (job->state != (o->action == QS_FAIL ? W_FAILED : W_RUNNABLE) ||
		job->j.failed_attempts != Acked.fa + (o->counter == QS_COUNT_FAILED_ATTEMPT) ||
		job->j.preemption_count != Acked.pc + (o->counter == QS_COUNT_PREEMPTION) ||
		job->j.lease_losses != Acked.ll + (o->counter == QS_COUNT_LEASE_LOSS))
		Fail("outcome", "job %d stopped (%s, fa %d/%d, pc %d/%d): now %s fa=%d pc=%d, expected %s (3.6, 3.8)",
			 Acked.k + 1, StopText(Acked.stop), Acked.fa, job->j.max_attempts, Acked.pc,
			 job->j.preemption_retries, StateName(job->state), job->j.failed_attempts,
			 job->j.preemption_count, o->action == QS_FAIL ? "FAILED" : "RUNNABLE");
}

/* after the pass, and at the liveness freeze's fixed point */
static void
PromiseHoldersCheck(Ev ev)
{
	for (int k = 0; k < Rp.n && ev == EV_APPLIED; k++)
		if (W.jobs[k].j.promised_at != QS_NO_TIME && W.jobs[k].state != W_RUNNABLE)
			Fail("promise", "job %" PRId64 " holds a promise but is %s", W.jobs[k].j.id,
				 StateName(W.jobs[k].state));
	for (int k = 0; k < W.njobs && ev == EV_FIXED_POINT && W.env_enabled; k++)
		if (W.jobs[k].state == W_RUNNABLE && W.jobs[k].j.promised_at != QS_NO_TIME)
			Fail("liveness", "fixed point reached with job %d still promised room it never gets", k + 1);
}

/*
 * 3.6 Stopping, requeueing and the promise: an unclaimed victim is stopped
 * at once, its REQUEUE or FAIL as the outcome of a stop says (MyOutcome), a
 * claimed one only asked to stop, and so is a stop the agent acknowledges
 * (but a timeout's: 3.8); the re-check of promises exactly (with pending
 * stops gone and the promises kept before it holding; a held-back job's
 * lapses); the freed promises dispatched first, in promise order; the new
 * promises exactly the preemptors not dispatched; only RUNNABLE jobs hold
 * a promise, and none is left at the liveness freeze's fixed point.
 */
static void
Check_3_6_StoppingRequeueingPromise(Ev ev)
{
	const QsDecision *d = EvDecision(ev);

	if (ev == EV_DECISION && d->action == QS_PREEMPT)
		VictimStopCheck(Rp.i);
	else if (ev == EV_LAPSED)
		LapsedCheck();
	else if (ev == EV_RECHECK && (Rp.why == NULL) == Rp.lapsed[Rp.k])
		Fail("recheck", "promise of job %" PRId64 " %s, but with pending stops gone and the earlier kept promises holding %s (3.6)",
			 B[Rp.k].j.id, Rp.lapsed[Rp.k] ? "lapsed" : "was kept",
			 Rp.why ? Rp.why : "it may be dispatched");
	else if (ev == EV_FREED)
		FreedFirstCheck();
	else if (ev == EV_LOOP_END)
		NewPromisesCheck();
	else if (ev == EV_ACK && Acked.stop != QS_STOP_TIMEOUT)
		AckCheck();
	else if (ev == EV_APPLIED || ev == EV_FIXED_POINT)
		PromiseHoldersCheck(ev);
}

/* ---------------------------------------------------------------- */
/* 3.7 Jobs that cannot run as configured; the reasons of 3.10 and 3.11	 */

static bool
IsMisconfiguration(const char *r)
{
	return r != NULL && strncmp(r, "MISCONFIGURATION:", 17) == 0;
}

static bool
IsBudgetExhausted(const char *r)
{
	return r != NULL && strcmp(r, "BUDGET_EXHAUSTED") == 0;
}

static bool
SameReason(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/*
 * ReasonsCheck: each RUNNABLE job's status_reason after the pass is the
 * one ExpectedReason gives (Rp.reason), where mine(expected, actual) says
 * the rule has a say: 3.7's MISCONFIGURATION reasons, then 3.11's
 * BUDGET_EXHAUSTED, then 3.10's NO_AGENT_FITS or none; together they are
 * the whole of it.
 */
static void
ReasonsCheck(const char *tag, bool (*mine) (const char *, const char *))
{
	for (int x = 0; x < Rp.nrunnable; x++)
	{
		const WJob *a = &W.jobs[Rp.runnable[x]];
		const char *r = Rp.reason[Rp.runnable[x]];

		if (SameReason(r, a->status_reason) || !mine(r, a->status_reason))
			continue;
		Fail(tag, "RUNNABLE job %" PRId64 " (share %d unit %d n=%d) has reason %s, 3.7, 3.10 and 3.11 say %s",
			 a->j.id, a->j.share, a->j.unit, a->j.count,
			 a->status_reason ? a->status_reason : "none", r ? r : "none");
	}
}

static bool
MisconfigurationReason(const char *want, const char *got)
{
	return IsMisconfiguration(want) || IsMisconfiguration(got);
}

static bool
BudgetReason(const char *want, const char *got)
{
	return !MisconfigurationReason(want, got) && (IsBudgetExhausted(want) || IsBudgetExhausted(got));
}

static bool
IsWaitingForHosts(const char *r)
{
	return r != NULL && strcmp(r, "WAITING_FOR_HOSTS") == 0;
}

/* WAITING_FOR_HOSTS (3.13), the lowest of the reasons */
static bool
HostsReason(const char *want, const char *got)
{
	return !MisconfigurationReason(want, got) && !BudgetReason(want, got) &&
		(IsWaitingForHosts(want) || IsWaitingForHosts(got));
}

static bool
IsDependency(const char *r)
{
	return r != NULL && strcmp(r, "DEPENDENCY") == 0;
}

/* DEPENDENCY (3.17), set at the submission of a job that waits, kept while it waits */
static bool
DependencyReason(const char *want, const char *got)
{
	return !MisconfigurationReason(want, got) && !BudgetReason(want, got) &&
		(IsDependency(want) || IsDependency(got));
}

static bool
FleetReason(const char *want, const char *got)
{
	return !MisconfigurationReason(want, got) && !BudgetReason(want, got) &&
		!HostsReason(want, got) && !DependencyReason(want, got);
}

/*
 * 3.7 Jobs that cannot run as configured: a RUNNABLE job has a
 * MISCONFIGURATION reason after the pass exactly when 3.7 gives it one,
 * that one.
 */
static void
Check_3_7_CannotRunAsConfigured(Ev ev)
{
	if (ev == EV_APPLIED)
		ReasonsCheck("misconfiguration", MisconfigurationReason);
}

/* ---------------------------------------------------------------- */
/* 3.8 Failures, retries, timeouts, leases										 */

/* a STOP is a timeout's, of a RUNNING job past its deadline, lease alive */
static void
TimeoutStopCheck(const QsDecision *d, const WJob *b)
{
	if (b->state != W_RUNNING || b->j.stop != QS_STOP_NONE || b->j.deadline == QS_NO_TIME ||
		b->j.deadline > Cf.now || LeaseExpired(b) || d->stop != QS_STOP_TIMEOUT)
		Fail("timeout", "STOP %s of job %" PRId64 " (%s, stop %s, deadline %" PRId64 ", now %" PRId64 ")",
			 StopText(d->stop), d->job_id, StateName(b->state), StopText(b->j.stop),
			 b->j.deadline, Cf.now);
}

/* a held job's REQUEUE or FAIL (not a claim timeout's): its lease expired */
static void
LeaseEndCheck(const QsDecision *d, const WJob *b)
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
}

/* step 1 is complete: every expired lease ended, every timeout asked to stop */
static void
LeasesAndTimeoutsDone(void)
{
	for (int k = 0; k < Rp.n; k++)
	{
		const WJob *b = &B[k];

		if (LeaseExpired(b) && !(TimeDec[k] && (Ex[k].state == W_RUNNABLE || Ex[k].state == W_FAILED)))
			Fail("lease", "the lease of job %" PRId64 " expired (%" PRId64 " < now %" PRId64 ") but the pass did not end its attempt",
				 b->j.id, b->j.lease_until, Cf.now);
		if (b->state == W_RUNNING && b->j.stop == QS_STOP_NONE && b->j.deadline != QS_NO_TIME &&
			b->j.deadline <= Cf.now && !LeaseExpired(b) && !TimeDec[k])
			Fail("timeout", "job %" PRId64 " ran past its timeout but no stop was requested", b->j.id);
	}
}

/*
 * 3.8 Failures, retries, timeouts, leases: a STOP only for a RUNNING job
 * past its timeout; a held job's attempt ended only when its lease expired,
 * as a lost lease's outcome says (with a stop pending: that stop's; none: a
 * lease loss, 3.10); step 1 leaves no expired lease and no timeout behind;
 * a timed-out attempt that the agent stopped fails (or is retried) once.
 */
static void
Check_3_8_FailuresRetriesTimeoutsLeases(Ev ev)
{
	const QsDecision *d = EvDecision(ev);
	const WJob *b = d != NULL ? &B[d->job_id - 1] : NULL;

	if (ev == EV_DECISION && d->action == QS_STOP)
		TimeoutStopCheck(d, b);
	else if (ev == EV_DECISION && (d->action == QS_REQUEUE || d->action == QS_FAIL) &&
			 IsHeld(b->state) && !ClaimExpired(b))
		LeaseEndCheck(d, b);
	else if (ev == EV_TIME_WORK)
		LeasesAndTimeoutsDone();
	else if (ev == EV_ACK && Acked.stop == QS_STOP_TIMEOUT)
		AckCheck();
}

/* ---------------------------------------------------------------- */
/* 3.9 Runnable timeout															 */

/* a RUNNABLE job's FAIL is the runnable timeout's, with its reason */
static void
RunnableTimeoutCheck(const QsDecision *d, const WJob *b)
{
	const char *expired = RunnableExpired(b);

	if (d->action != QS_FAIL || expired == NULL)
		Fail("runnable-timeout", "RUNNABLE job %" PRId64 " (reason %s, n=%d) got %s but 3.9 does not fail it (no MISCONFIGURATION or NO_AGENT_FITS reason older than runnable_timeout, or an agent fits it now, 3.10)",
			 d->job_id, b->status_reason ? b->status_reason : "none", b->j.count,
			 ActionName(d->action));
	if (d->reason == NULL || strcmp(d->reason, expired) != 0)
		Fail("runnable-timeout", "RUNNABLE job %" PRId64 " (reason %s) failed with reason %s, 3.9 says %s",
			 d->job_id, b->status_reason, d->reason ? d->reason : "none", expired);
}

/*
 * 3.9 Runnable timeout: a RUNNABLE job fails in step 1 exactly when its
 * MISCONFIGURATION reason, or its NO_AGENT_FITS reason while no agent fits
 * it still, is older than the runnable timeout, with RUNNABLE_TIMEOUT or
 * RUNNABLE_TIMEOUT:NO_AGENT_FITS (RunnableExpired).
 */
static void
Check_3_9_RunnableTimeout(Ev ev)
{
	const QsDecision *d = EvDecision(ev);

	if (ev == EV_DECISION && (d->action == QS_REQUEUE || d->action == QS_FAIL) &&
		B[d->job_id - 1].state == W_RUNNABLE &&
		(RunnableExpired(&B[d->job_id - 1]) != NULL || !FailedB[d->job_id - 1]))
		RunnableTimeoutCheck(d, &B[d->job_id - 1]);	/* else 3.17's to check */
	for (int k = 0; k < Rp.n && ev == EV_TIME_WORK; k++)
		if (RunnableExpired(&B[k]) && !TimeDec[k])
			Fail("runnable-timeout", "job %" PRId64 " (reason %s since %" PRId64 ", runnable_timeout %" PRId64 ", now %" PRId64 ") did not fail: 3.9 fails it with %s",
				 B[k].j.id, B[k].status_reason, B[k].status_reason_at, W.runnable_timeout, Cf.now,
				 RunnableExpired(&B[k]));
}

/* ---------------------------------------------------------------- */
/* 3.10 The fleet: agents the pass knows, the claim timeout, lost hosts	 */

/*
 * HeldBackCheck (3.10, 3.11): a job that hold() holds back is not
 * dispatched and gets no victims.
 */
static void
HeldBackCheck(const QsDecision *d, const char *(*hold) (const QsJob *))
{
	const WJob *b = &B[d->job_id - 1];
	const char *why;

	if (d->action == QS_DISPATCH && (why = hold(&b->j)) != NULL)
		Fail("held-back", "job %" PRId64 " (unit %d n=%d, claim_backoff_until %" PRId64 ", now %" PRId64 ") dispatched, but it is %s",
			 d->job_id, b->j.unit, b->j.count, b->j.claim_backoff_until, Cf.now, why);
	if (d->action == QS_PREEMPT && d->preempted_for != 0)
	{
		const WJob *pj = &B[d->preempted_for - 1];

		if ((why = hold(&pj->j)) != NULL)
			Fail("held-back", "job %" PRId64 " preempted for job %" PRId64 " (unit %d n=%d), which is %s: a held-back job gets no victims",
				 d->job_id, pj->j.id, pj->j.unit, pj->j.count, why);
	}
}

/* a claim timeout's REQUEUE: no attempt counted, held back for the backoff */
static void
ClaimTimeoutCheck(const QsDecision *d, const WJob *b)
{
	Outcome		o;
	QsTime		until;

	ClaimTimeoutOutcome(b, &o, &until);
	if (d->action != o.action || d->counter != o.counter ||
		d->reason == NULL || strcmp(d->reason, o.reason) != 0 ||
		d->backoff_until != until)
		Fail("claim-timeout", "job %" PRId64 " unclaimed since %" PRId64 " (claim_timeout %" PRId64 ", claim_requeues %d, now %" PRId64 "): %s counter %d reason %s backoff_until %" PRId64 ", expected REQUEUE counter %d reason NOT_CLAIMED backoff_until %" PRId64 " (3.10)",
			 d->job_id, b->j.scheduled_at, Cf.claim_timeout, b->j.claim_requeues,
			 Cf.now, ActionName(d->action), d->counter,
			 d->reason ? d->reason : "none", d->backoff_until, o.counter, until);
}

/* after the loop: fit_limits' agent_max is the fleet's bound of each unit */
static void
FitLimitsCheck(void)
{
	for (int x = 0; x < Cf.nshares * Cf.nunits; x++)
	{
		int			u = x % Cf.nunits;
		int64_t		want = Cf.placed[u] ? 0 : QS_UNBOUNDED;

		for (int h = 0; h < Cf.nhosts[u] && Cf.placed[u]; h++)
			want += Cf.hinst[u][h];
		if (Rp.out->fit_limits[x].agent_max != want)
			Fail("no-agent-fits", "fit_limits of share %d unit %d: agent_max %" PRId64 ", the hosts say %" PRId64 " (3.13: a placed unit's hosts' instances in all, else unbounded)",
				 x / Cf.nunits, u, Rp.out->fit_limits[x].agent_max, want);
	}
}

/*
 * 3.10 The fleet: a job with no placement even on empty hosts (3.13), or
 * in its backoff after a claim timeout, is held back: not dispatched, no
 * victims (FleetHold); a SCHEDULED job unclaimed past the claim timeout is
 * requeued NOT_CLAIMED with its backoff, and step 1 leaves none behind;
 * fit_limits' agent_max is a placed unit's hosts' instances in all;
 * NO_AGENT_FITS is a RUNNABLE job's reason exactly when no
 * misconfiguration or budget reason comes first and it has no placement
 * even on empty hosts.
 */
static void
Check_3_10_Fleet(Ev ev)
{
	const QsDecision *d = EvDecision(ev);
	const WJob *b = d != NULL ? &B[d->job_id - 1] : NULL;

	if (ev == EV_DECISION)
		HeldBackCheck(d, FleetHold);
	if (ev == EV_DECISION && (d->action == QS_REQUEUE || d->action == QS_FAIL) &&
		IsHeld(b->state) && ClaimExpired(b))
		ClaimTimeoutCheck(d, b);
	for (int k = 0; k < Rp.n && ev == EV_TIME_WORK; k++)
		if (ClaimExpired(&B[k]) && !TimeDec[k])
			Fail("claim-timeout", "job %" PRId64 " SCHEDULED at %" PRId64 " was not claimed within the claim timeout %" PRId64 " (now %" PRId64 ") but the pass did not requeue it (3.10)",
				 B[k].j.id, B[k].j.scheduled_at, Cf.claim_timeout, Cf.now);
	if (ev == EV_LOOP_END)
		FitLimitsCheck();
	if (ev == EV_APPLIED)
		ReasonsCheck("no-agent-fits", FleetReason);
}

/* ---------------------------------------------------------------- */
/* 3.11 Budgets: instance-hours per period										 */

/*
 * 3.11 Budgets: spent, as the shell keeps it (the value at the last change
 * of level, advanced in closed form: what the core read), agrees with the
 * sim's own held x time; a share over its budget of a unit has its jobs
 * held back (BudgetHold: not dispatched, no victims) with the reason
 * BUDGET_EXHAUSTED, unless a misconfiguration comes first.
 */
static void
Check_3_11_Budgets(Ev ev)
{
	for (int s = 0; s < Cf.nshares && ev == EV_READ; s++)
		for (int u = 0; u < Cf.nunits; u++)
		{
			const OverTime *o = &Ot[s][u];

			if (fabs(W.spent[s][u] - o->spent) > 1e-6 * (1 + fabs(o->spent)))
				Fail("over-time", "share %d unit %d: spent %.6f from the last change, %.6f held x time",
					 s, u, W.spent[s][u], o->spent);
		}
	if (ev == EV_DECISION)
		HeldBackCheck(EvDecision(ev), BudgetHold);
	if (ev == EV_APPLIED)
		ReasonsCheck("budget-exhausted", BudgetReason);
}

/* ---------------------------------------------------------------- */
/* 3.12 Fair share with memory													 */

/*
 * 3.12 Fair share with memory: recent_borrow, as the shell keeps it (the
 * value at the last change of level, decayed and accrued in closed form:
 * what the core read), agrees with the sim's own numerical integral.  (The
 * order it gives the FAIR choice is 3.2's model of the cursors.)
 */
static void
Check_3_12_FairShareWithMemory(Ev ev)
{
	for (int s = 0; s < Cf.nshares && ev == EV_READ && HalfLife > 0; s++)
		for (int u = 0; u < Cf.nunits; u++)
		{
			const OverTime *o = &Ot[s][u];

			if (fabs(W.recent_borrow[s][u] - o->recent) > 1e-4 * (1 + fabs(o->recent)))
				Fail("over-time", "share %d unit %d: recent_borrow %.6f in closed form, %.6f integrated",
					 s, u, W.recent_borrow[s][u], o->recent);
		}
}

/* ---------------------------------------------------------------- */
/* 3.13 Placement on hosts														 */

/* the decision's parts as a placement of unit u (a part on no host: index -1) */
static void
DecisionPlc(int u, const QsDecision *d, Plc *p)
{
	p->n = 0;
	for (int i = 0; i < d->nparts && i < MAXH; i++)
		PlcAdd(p, HostIdx(u, d->parts[i].host), d->parts[i].count);
}

static bool
SamePlc(const Plc *a, const Plc *b)
{
	if (a->n != b->n)
		return false;
	for (int i = 0; i < a->n; i++)
		if (a->h[i] != b->h[i] || a->c[i] != b->c[i])
			return false;
	return true;
}

/*
 * PartsCheck (3.13, 3.14): a dispatch's parts are on hosts of the unit now,
 * one a host, sum to the job's count, k each with instances_per_host k, on
 * hosts with the same value of same_label; and each fits in its host's
 * free(A,u) now ([host-capacity]: its instances less the parts held there,
 * pending stops included, and the reservations of promises, at least 0).
 */
static void
PartsCheck(int k, const QsDecision *d)
{
	const QsJob *j = &B[k].j;
	int			u = j->unit, key = LabelKey(j->same_label);
	int64_t		sum = 0, free[MAXH];
	const char *value = NULL;
	bool		seen[MAXH] = {0};

	HostFree(k, false, NULL, 0, free);
	for (int i = 0; i < d->nparts; i++)
	{
		const QsPart *part = &d->parts[i];
		int			h = HostIdx(u, part->host);
		const char *v = h >= 0 && key >= 0 ? Cf.hlabel[u][h][key] : NULL;

		if (h < 0 || seen[h] || part->count < 1 || (j->per_host > 0 && part->count != j->per_host))
			Fail("parts", "job %" PRId64 " (n=%d, per_host %d) dispatched with part %s:%d: %s (3.13)",
				 j->id, j->count, j->per_host, part->host, part->count,
				 h < 0 ? "no host of its unit now" : seen[h] ? "a second part on that host" :
				 "not instances_per_host instances");
		if (j->same_label != NULL && (v == NULL || (value != NULL && strcmp(v, value) != 0)))
			Fail("parts", "job %" PRId64 " (same_label %s) dispatched with a part on %s, whose value is %s, another part's %s (3.13)",
				 j->id, j->same_label, part->host, v ? v : "none", value ? value : "none");
		value = v;
		seen[h] = true;
		sum += part->count;
		if (part->count > free[h])
			Fail("host-capacity", "job %" PRId64 " dispatched with %d instances on %s, whose free(A,u) is %" PRId64 " (%" PRId64 " instances, %" PRId64 " held, %" PRId64 " reserved; 3.13)",
				 j->id, part->count, part->host, free[h], Cf.hinst[u][h], RHHeld[u][h], RHRes[u][h]);
	}
	if (sum != j->count)
		Fail("parts", "job %" PRId64 " (n=%d) dispatched with %d parts of %" PRId64 " instances in all (3.13)",
			 j->id, j->count, d->nparts, sum);
}

/*
 * DispatchPlacementCheck (3.13): a dispatch in a unit that is not placed
 * has no parts; in a placed one its parts are valid (PartsCheck) and are
 * placement(J) now, in rank order.
 */
static void
DispatchPlacementCheck(int k, const QsDecision *d)
{
	const QsJob *j = &B[k].j;
	Plc			want, got;
	char		a[512], b[512];

	if (!Cf.placed[j->unit])
	{
		if (d->nparts != 0)
			Fail("not-placed", "job %" PRId64 " of unit %d, which is not placed, dispatched with %d parts (3.13)",
				 j->id, j->unit, d->nparts);
		return;
	}
	PartsCheck(k, d);
	PlaceNow(k, &want);
	DecisionPlc(j->unit, d, &got);
	if (!SamePlc(&want, &got))
		Fail("placement", "job %" PRId64 " (n=%d, per_host %d, same_label %s) dispatched on %s, placement(J) now is %s (3.13: best fit, per_host, the fewest hosts, the group, the ranks)",
			 j->id, j->count, j->per_host, j->same_label ? j->same_label : "none",
			 PlcText(j->unit, &got, a), PlcText(j->unit, &want, b));
	St.placed_dispatches++;
	St.multi_host += got.n > 1;
}

/* the placement out->reserved gives job id, or NULL */
static const QsReservation *
ReservedFor(int64_t id)
{
	for (int i = 0; i < Rp.out->nreserved; i++)
		if (Rp.out->reserved[i].job_id == id)
			return &Rp.out->reserved[i];
	return NULL;
}

/* the reservation a decision-like list of parts gives, as a placement of unit u */
static void
PartsPlc(int u, const QsPart *parts, int n, Plc *p)
{
	QsDecision	d = {0};

	d.nparts = n;
	d.parts = parts;
	DecisionPlc(u, &d, p);
}

/*
 * ReservedCheck (3.13): the pass writes (QsOutput.reserved) the
 * reservation of every job still promised after the loop whose reservation
 * is new in this pass (made with its victims, or placed anew at the
 * re-check because the one it kept is no longer valid), as the model made
 * it, once; and no other: not a promise's that stays as it was, not one
 * of a job dispatched since.
 */
static void
ReservedCheck(int k)
{
	const QsJob *j = &B[k].j;
	const QsReservation *r = ReservedFor(j->id);
	Plc			got;
	char		a[512], b[512];

	if (ResNew[k] && Kept[k])
	{
		if (r == NULL)
			Fail("reservation", "job %" PRId64 " reserves %s, new in this pass, but the pass wrote no reservation (3.13)",
				 j->id, PlcText(j->unit, &MyRes[k], a));
		PartsPlc(j->unit, r->parts, r->nparts, &got);
		if (!SamePlc(&got, &MyRes[k]))
			Fail("reservation", "job %" PRId64 " reserves %s, placement(J) in the future state is %s (3.13)",
				 j->id, PlcText(j->unit, &got, b), PlcText(j->unit, &MyRes[k], a));
		St.reserved_new++;
	}
	else if (r != NULL)
		Fail(Kept[k] && !ResNew[k] ? "keep-reservation" : "reservation",
			 "the pass wrote a reservation for job %" PRId64 ", which %s (3.13)", j->id,
			 Dispatched[k] ? "it dispatched" : !Kept[k] ? "holds no promise after the pass" :
			 "kept the one it reserved, still valid in the future state");
}

/* the reservations written: those of ReservedCheck, each once */
static void
ReservedListCheck(void)
{
	for (int k = 0; k < Rp.n; k++)
		ReservedCheck(k);
	for (int i = 0; i < Rp.out->nreserved; i++)
	{
		int64_t		id = Rp.out->reserved[i].job_id;

		if (id < 1 || id > Rp.n || ReservedFor(id) != &Rp.out->reserved[i])
			Fail("reservation", "the pass wrote a reservation for job %" PRId64 " twice, or for no job (3.13)",
				 id);
	}
}

/*
 * HostReasonsCheck (3.13): the pass reports, in the loop's order,
 * every job it tried (not held back, not promised) of a placed unit, and
 * of a unit not placed if it was not dispatched: waiting WAITING_FOR_HOSTS
 * when the capacity rules, now and in the future state, would dispatch it
 * but it has no placement and got no victims.
 */
static void
HostReasonsCheck(void)
{
	const QsOutput *out = Rp.out;
	int			n = out->nhost_reasons < NNotes ? out->nhost_reasons : NNotes;

	for (int i = 0; i < n; i++)
		if (out->host_reasons[i].job_id != NoteId[i] ||
			strcmp(ReasonText(out->host_reasons[i].reason), ReasonText(NoteReason[i])) != 0)
			Fail("host-reasons", "the pass's host reason %d is job %" PRId64 " %s, 3.13 says job %" PRId64 " %s (the jobs tried, in order: of a placed unit, or not dispatched; WAITING_FOR_HOSTS: the capacity rules would dispatch it, no placement, no victims; NO_AGENT_FITS: held back, with placement constraints)",
				 i, out->host_reasons[i].job_id,
				 ReasonText(out->host_reasons[i].reason), NoteId[i], ReasonText(NoteReason[i]));
	if (out->nhost_reasons != NNotes)
		Fail("host-reasons", "the pass reports %d host reasons, 3.13 says %d (the jobs tried: of a placed unit, or not dispatched); the first beyond: job %" PRId64,
			 out->nhost_reasons, NNotes,
			 n < out->nhost_reasons ? out->host_reasons[n].job_id : NoteId[n]);
}

/*
 * HostUse: what the world's jobs hold on each host of placed unit u after
 * the pass: now (held parts, pending stops included), and in the future
 * state (held parts without a stop pending, and promises' reservations).
 */
static void
HostUse(int u, int64_t *now, int64_t *fut)
{
	for (int h = 0; h < Cf.nhosts[u]; h++)
		now[h] = fut[h] = 0;
	for (int k = 0; k < Rp.n; k++)
	{
		const WJob *a = &W.jobs[k];

		if (a->j.unit != u)
			continue;
		if (IsHeld(a->state))
		{
			AddParts(u, now, a->parts, a->nparts, +1);
			if (a->j.stop == QS_STOP_NONE)
				AddParts(u, fut, a->parts, a->nparts, +1);
		}
		else if (a->state == W_RUNNABLE && a->j.promised_at != QS_NO_TIME)
			AddParts(u, fut, a->parts, a->nparts, +1);
	}
}

/*
 * HostInvariantCheck (3.13): after every pass, on every host of a placed
 * unit, the parts held (pending stops included) fit in its instances, and
 * so do those held without a pending stop with the promises' reservations
 * (dispatches go only where free(A,u) allows, reservations only where the
 * future state has room); each promised job reserves what the model says.
 */
static void
HostInvariantCheck(void)
{
	char		a[512], b[512];

	for (int u = 0; u < Cf.nunits; u++)
	{
		int64_t		now[MAXH], fut[MAXH];

		if (!Cf.placed[u])
			continue;
		HostUse(u, now, fut);
		for (int h = 0; h < Cf.nhosts[u]; h++)
			if (now[h] > Cf.hinst[u][h] || fut[h] > Cf.hinst[u][h])
				Fail("host-invariant", "after the pass host %s of unit %d (%" PRId64 " instances) holds %" PRId64 " (pending stops included), %" PRId64 " in the future state with the reservations (3.13)",
					 Cf.hname[u][h], u, Cf.hinst[u][h], now[h], fut[h]);
	}
	for (int k = 0; k < Rp.n; k++)
	{
		const WJob *w = &W.jobs[k];
		Plc			got;

		if (w->state != W_RUNNABLE || w->j.promised_at == QS_NO_TIME || !Cf.placed[w->j.unit])
			continue;
		PartsPlc(w->j.unit, w->parts, w->nparts, &got);
		if (!SamePlc(&got, &MyRes[k]))
			Fail("reservation", "promised job %" PRId64 " reserves %s after the pass, 3.13 says %s",
				 w->j.id, PlcText(w->j.unit, &got, a), PlcText(w->j.unit, &MyRes[k], b));
		St.reserved_kept += !ResNew[k];
	}
}

/*
 * 3.13 Placement on hosts: in a placed unit every dispatch is placed on
 * placement(J) now, its parts valid and within each host's free(A,u)
 * (DispatchPlacementCheck); a unit not placed dispatches no parts; a
 * promise reserves placement(J) in the future state, kept at the re-check
 * while valid, else placed anew, written exactly when new and still
 * promised (ReservedListCheck); the host reasons of the jobs
 * tried (HostReasonsCheck) and WAITING_FOR_HOSTS after the pass (3.13);
 * the hosts' invariants and the reservations after the pass
 * (HostInvariantCheck).  (Held back when no placement could exist: 3.10.)
 */
static void
Check_3_13_Placement(Ev ev)
{
	const QsDecision *d = Rp.di < Rp.nd ? &Rp.D[Rp.di] : NULL;

	if (ev == EV_DISPATCH || (ev == EV_AFTER_VICTIMS && Rp.dispatched))
		DispatchPlacementCheck(Rp.k, &Rp.D[Rp.i]);
	else if (ev == EV_FREED_ONE && d != NULL && d->action == QS_DISPATCH &&
			 d->job_id == B[Rp.k].j.id)
		DispatchPlacementCheck(Rp.k, d);
	else if (ev == EV_AFTER_VICTIMS && Cf.placed[B[Rp.k].j.unit] && PendingRes.n == 0)
		Fail("reservation", "job %" PRId64 " was promised the room its victims make, but has no placement in the future state (3.13)",
			 B[Rp.k].j.id);
	else if (ev == EV_LOOP_END)
	{
		HostReasonsCheck();
		ReservedListCheck();
	}
	else if (ev == EV_APPLIED)
	{
		HostInvariantCheck();
		ReasonsCheck("waiting-for-hosts", HostsReason);
	}
}

/* ---------------------------------------------------------------- */
/* 3.17 Dependencies															 */

/*
 * DependencyCountCheck: the counts the world keeps the shell's way (at
 * the submission, then at each end), as the pass read them, agree with the
 * sim's own record, for each RUNNABLE job: how many of the jobs it depends
 * on have not SUCCEEDED, and one of them that FAILED (none iff none did).
 */
static void
DependencyCountCheck(void)
{
	for (int k = 0; k < Rp.n; k++)
	{
		const QsJob *j = &B[k].j;
		int64_t		f = j->dependency_failed;
		bool		named = false;

		if (B[k].state != W_RUNNABLE)
			continue;
		for (int i = 0; i < NDep[k] && f != 0; i++)
			named |= B[DepOf[k][i]].j.id == f && B[DepOf[k][i]].state == W_FAILED;
		if (j->deps_waiting != WaitsB[k] || (f != 0) != FailedB[k] || (f != 0 && !named))
			Fail("dependency-count", "RUNNABLE job %" PRId64 " is counted waiting for %d jobs, dependency_failed %" PRId64 "; of the %d jobs it depends on %d have not SUCCEEDED and %s FAILED (3.17, counted the shell's way)",
				 j->id, j->deps_waiting, f, NDep[k], WaitsB[k], FailedB[k] ? "some" : "none");
	}
}

/*
 * DependencyFailCheck: a RUNNABLE job's FAIL (or REQUEUE) that is not the
 * runnable timeout's (3.9), of a job a dependency of which FAILED: a FAIL
 * of a job the pass read (among the first dep_failed_max by id), reason
 * DEPENDENCY_FAILED:<the dependency the shell noted>.
 */
static void
DependencyFailCheck(const QsDecision *d, const WJob *b)
{
	char		want[64];
	int			k = (int) b->j.id - 1;

	if (d->action != QS_FAIL)
		Fail("dependency-failed", "job %" PRId64 ", whose dependency job %" PRId64 " FAILED, got %s (3.17: FAIL)",
			 b->j.id, b->j.dependency_failed, ActionName(d->action));
	if (!DueB[k])
		Fail("dependency-failed", "job %" PRId64 " failed for its dependency, but the pass reads only the first %d RUNNABLE jobs a dependency of which FAILED, by id, and it is not one of them (3.17)",
			 b->j.id, Cf.dep_failed_max);
	snprintf(want, sizeof(want), "DEPENDENCY_FAILED:%" PRId64, b->j.dependency_failed);
	if (d->reason == NULL || strcmp(d->reason, want) != 0)
		Fail("dependency-failed", "job %" PRId64 " failed with reason %s; 3.17 says %s (the dependency that FAILED, as noted)",
			 b->j.id, d->reason ? d->reason : "none", want);
}

/*
 * DependencyDecisionCheck: a job one of whose dependencies has not
 * SUCCEEDED is neither dispatched nor given victims; a RUNNABLE job fails
 * for a dependency as DependencyFailCheck says.
 */
static void
DependencyDecisionCheck(const QsDecision *d)
{
	int			k = (int) d->job_id - 1;
	const WJob *b = &B[k];
	int64_t		p = d->preempted_for;

	if (d->action == QS_DISPATCH && WaitsB[k] > 0)
		Fail("dependency-hold", "job %" PRId64 " dispatched while %d of the jobs it depends on have not SUCCEEDED (3.17: held back, in no share's order)",
			 d->job_id, WaitsB[k]);
	if (d->action == QS_DISPATCH && OnceWaited[k])
		St.dep_released++;
	if (d->action == QS_PREEMPT && p > 0 && p <= Rp.n && WaitsB[p - 1] > 0)
		Fail("dependency-hold", "job %" PRId64 " preempted for job %" PRId64 ", which waits for %d of the jobs it depends on (3.17: no victims for it)",
			 d->job_id, p, WaitsB[p - 1]);
	if ((d->action == QS_FAIL || d->action == QS_REQUEUE) && b->state == W_RUNNABLE &&
		RunnableExpired(b) == NULL && FailedB[k])
		DependencyFailCheck(d, b);
}

/* step 1 is complete: every RUNNABLE job due for a FAILED dependency failed */
static void
DependencyFailuresDone(void)
{
	for (int k = 0; k < Rp.n; k++)
		if (DueB[k] && !(TimeDec[k] && Ex[k].state == W_FAILED))
			Fail("dependency-failed", "RUNNABLE job %" PRId64 " depends on job %" PRId64 ", which FAILED, but the pass did not fail it (3.17: DEPENDENCY_FAILED in step 1)",
				 B[k].j.id, B[k].j.dependency_failed);
}

/* no job waiting for dependencies is promised room */
static void
DependencyPromisesCheck(void)
{
	for (int x = 0; x < Rp.out->npromised; x++)
	{
		int64_t		id = Rp.out->promised[x];

		if (id >= 1 && id <= Rp.n && WaitsB[id - 1] > 0)
			Fail("dependency-hold", "job %" PRId64 " was promised room, but waits for %d of the jobs it depends on (3.17)",
				 id, WaitsB[id - 1]);
	}
}

/*
 * DependencyCoverage counts, for the summary, the dispatches in a STRICT
 * share behind a job waiting for dependencies, and those that borrow while
 * a lender of the unit has a job waiting that would fit in its idle
 * capacity (were it wanted, it could take some of it back).
 */
static void
DependencyCoverage(int k)
{
	if (Cf.strict[B[k].j.share] && ShareWaitingAhead(k) >= 0)
		St.dep_strict++;
	if (LenderWaiting(k) >= 0)
		St.dep_unwanted++;
}

/*
 * 3.17 Dependencies: the counts the pass read, the sim's own
 * (DependencyCountCheck); a job waiting for dependencies is never
 * dispatched, given victims or promised (and, in no share's order, is
 * left out of the model of the cursors: BuildRunLists); a RUNNABLE job a
 * dependency of which FAILED fails in step 1, DEPENDENCY_FAILED:<id>,
 * within the bound the pass reads; the reason DEPENDENCY while it waits.
 */
static void
Check_3_17_Dependencies(Ev ev)
{
	switch (ev)
	{
		case EV_READ:
			DependencyCountCheck();
			break;
		case EV_DECISION:
			DependencyDecisionCheck(EvDecision(ev));
			break;
		case EV_TIME_WORK:
			DependencyFailuresDone();
			break;
		case EV_DISPATCH:
			DependencyCoverage(Rp.k);
			break;
		case EV_LOOP_END:
			DependencyPromisesCheck();
			break;
		case EV_APPLIED:
			ReasonsCheck("dependency-reason", DependencyReason);
			break;
		default:
			break;
	}
}

/* ---------------------------------------------------------------- */
/* the table of the rules														 */

/*
 * One check a section of scheduling.md 3 (the what-if replay is
 * test_replay.c's), walked in this order at every event; a failure names
 * the rule being checked.
 */
typedef struct Rule
{
	const char *section;		/* the section's number and title */
	void		(*check) (Ev ev);	/* its check, at every event */
} Rule;

static const Rule Rules[] = {
	{"3 The scheduling pass", Check_3_SchedulingPass},
	{"3.1 Capacity accounting", Check_3_1_CapacityAccounting},
	{"3.2 Dispatch", Check_3_2_Dispatch},
	{"3.3 Preemption: the candidates", Check_3_3_PreemptionCandidates},
	{"3.4 Preemption: choosing the victims", Check_3_4_Victims},
	{"3.5 Capacity reduced", Check_3_5_CapacityReduced},
	{"3.6 Stopping, requeueing and the promise", Check_3_6_StoppingRequeueingPromise},
	{"3.7 Jobs that cannot run as configured", Check_3_7_CannotRunAsConfigured},
	{"3.8 Failures, retries, timeouts, leases", Check_3_8_FailuresRetriesTimeoutsLeases},
	{"3.9 Runnable timeout", Check_3_9_RunnableTimeout},
	{"3.10 The fleet: agents the pass knows, the claim timeout, lost hosts", Check_3_10_Fleet},
	{"3.11 Budgets: instance-hours per period", Check_3_11_Budgets},
	{"3.12 Fair share with memory", Check_3_12_FairShareWithMemory},
	{"3.13 Placement on hosts", Check_3_13_Placement},
	{"3.17 Dependencies", Check_3_17_Dependencies},
};

/* CheckRules: every rule at event ev, in the table's order */
static void
CheckRules(Ev ev)
{
	for (size_t r = 0; r < sizeof(Rules) / sizeof(Rules[0]); r++)
	{
		CurSection = Rules[r].section;
		Rules[r].check(ev);
	}
	CurSection = NULL;
}

/* ---------------------------------------------------------------- */
/* one pass, replayed and checked												 */

typedef struct PassResult
{
	int			ndecisions, nlapsed, npromised;
	bool		stops_pending_before;
} PassResult;

static int64_t FairJob;			/* a job the pass may have taken early (CursorNotes) */
static char FairNote[512];
static char StrictNote[512];

/* what the parts of held jobs hold on each host as the pass read it (3.13) */
static void
ReadHosts(void)
{
	memset(RHHeld, 0, sizeof(RHHeld));
	memset(RHStop, 0, sizeof(RHStop));
	memset(RHRes, 0, sizeof(RHRes));
	memset(ResNew, 0, sizeof(ResNew));
	memset(SpecNote, -1, sizeof(SpecNote));
	NNotes = 0;
	for (int k = 0; k < Rp.n; k++)
	{
		MyRes[k].n = 0;
		if (IsHeld(B[k].state))
			HostsHold(k, +1);
	}
}

/* the expectations of each job, and the state held, as the pass read it */
static void
ReadJobs(PassResult *res)
{
	memset(Handled, 0, Rp.n);
	memset(Kept, 0, Rp.n);
	memset(Victimized, 0, Rp.n);
	memset(NDec, 0, Rp.n);
	memset(TimeDec, 0, Rp.n);
	memset(Step4, 0, Rp.n);
	memset(Dispatched, 0, Rp.n);
	memset(RUse, 0, sizeof(RUse));
	memset(RPend, 0, sizeof(RPend));
	memset(RProm, 0, sizeof(RProm));
	memset(Rp.cnt_before, 0, sizeof(Rp.cnt_before));
	ReadDependencies(Rp.n);
	BuildRunLists(Rp.n);
	for (int k = 0; k < Rp.n; k++)
	{
		const QsJob *j = &B[k].j;

		Rp.cnt_before[B[k].state]++;
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
		Rp.lapsed[k] = Rp.inprom[k] = false;
		if (IsHeld(B[k].state))
		{
			RUse[j->share][j->unit] += j->count;
			if (j->stop != QS_STOP_NONE)
			{
				RPend[j->share][j->unit] += j->count;
				res->stops_pending_before = true;
			}
		}
	}
	ReadHosts();
}

/* run the pass on the world as it is, keep what it read, fold its output */
static void
PassRead(PassResult *res)
{
	const QsOutput *out;

	OverTimeFeed();
	TakeCfg();
	Rp.n = W.njobs;
	memcpy(B, W.jobs, sizeof(WJob) * Rp.n);
	for (int k = 0; k < Rp.n; k++)
	{
		memcpy(BParts[k], B[k].parts, sizeof(QsPart) * B[k].nparts);
		B[k].parts = B[k].j.parts = BParts[k];
		B[k].j.nparts = B[k].nparts;
	}
	LastN = Rp.n;
	LastOut = NULL;
	out = WPass(&W);
	LastOut = Rp.out = out;
	Rp.D = out->decisions;
	Rp.nd = out->ndecisions;
	St.passes++;
	for (int x = 0; x < Rp.nd; x++)
	{
		Fold(Rp.D[x].action);
		Fold(Rp.D[x].job_id);
		Fold(Rp.D[x].stop);
		Fold(Rp.D[x].preempted_for);
		Fold(Rp.D[x].immediate);
		for (int i = 0; i < Rp.D[x].nparts; i++)
			Fold(Rp.D[x].parts[i].count);
	}
	for (int x = 0; x < out->npromised; x++)
		Fold(out->promised[x]);
	for (int x = 0; x < out->nlapsed; x++)
		Fold(-out->lapsed[x]);
	Fold(out->wake_at);
	res->ndecisions = Rp.nd;
	res->nlapsed = out->nlapsed;
	res->npromised = out->npromised;
	res->stops_pending_before = false;
	Rp.nloop = Rp.nr = Rp.np = Rp.ne4 = 0;
	FairJob = 0;
	ReadJobs(res);
}

/* a REQUEUE or FAIL of step 1: where it puts the job */
static void
ExpectTimeWork(int k)
{
	const WJob *b = &B[k];
	Outcome		o;
	QsTime		until;

	if (IsHeld(b->state) && ClaimExpired(b))
	{
		ClaimTimeoutOutcome(b, &o, &until);
		ExpectOutcome(k, o);
		Ex[k].backoff = until;
		St.claim_requeues++;
	}
	else if (IsHeld(b->state))
	{
		o = MyOutcome(&b->j, b->j.stop);
		if (o.counter == QS_COUNT_LEASE_LOSS)
			St.lease_losses++;
		ExpectOutcome(k, o);
	}
	else
	{
		const char *expired = RunnableExpired(b);

		if (expired != NULL && strcmp(expired, "RUNNABLE_TIMEOUT") != 0)
			St.no_agent_timeouts++;
		if (expired == NULL && FailedB[k])
		{
			St.dep_failures++;
			FailedByDep[k] = 1;
			if (B[k].j.dependency_failed > 0 && B[k].j.dependency_failed <= Rp.n)
				St.dep_chains += FailedByDep[B[k].j.dependency_failed - 1];
		}
		Ex[k].state = W_FAILED;
		Ex[k].promised = false;
	}
}

/*
 * ReadDecision: decision i, which the rules found legal, as the state each
 * job must be in after the pass; returns the next decision (an unclaimed
 * victim's REQUEUE or FAIL goes with its PREEMPT).
 */
static int
ReadDecision(int i)
{
	const QsDecision *d = &Rp.D[i];
	int			k = (int) d->job_id - 1;
	const WJob *b = &B[k];

	NDec[k] = 1;
	switch (d->action)
	{
		case QS_DISPATCH:
			Ex[k].state = W_SCHEDULED;
			Ex[k].promised = false;
			Ex[k].stop = QS_STOP_NONE;
			St.dispatches++;
			break;
		case QS_PREEMPT:
			if (d->preempted_for == 0)
				St.repairs++;
			else
				St.preemptions++;
			Ex[k].preempted_for = d->preempted_for;
			if (!b->j.claimed)
			{
				ExpectOutcome(k, MyOutcome(&b->j, d->stop));
				return i + 2;
			}
			Ex[k].stop = d->stop;
			break;
		case QS_STOP:
			Ex[k].stop = QS_STOP_TIMEOUT;
			TimeDec[k] = 1;
			break;
		default:
			ExpectTimeWork(k);
			TimeDec[k] = 1;
			break;
	}
	return i + 1;
}

/* every decision, checked by the rules, then read */
static void
ReadDecisions(void)
{
	for (Rp.i = 0; Rp.i < Rp.nd;)
	{
		CheckRules(EV_DECISION);
		Rp.i = ReadDecision(Rp.i);
	}
	CheckRules(EV_TIME_WORK);
}

/* the held job k's stop is requested: it holds on, stopping */
static void
StopRequested(int k)
{
	const QsJob *j = &B[k].j;

	RPend[j->share][j->unit] += j->count;
	HostsStopping(k);
}

/* the held job k stopped or ended: it holds nothing from now on */
static void
Released(int k)
{
	const QsJob *j = &B[k].j;

	RUse[j->share][j->unit] -= j->count;
	if (j->stop != QS_STOP_NONE)
		RPend[j->share][j->unit] -= j->count;
	HostsHold(k, -1);
}

/* step 1, time-based work, then step 2, the repairs (3.5) */
static void
ReplayTimeWorkAndRepairs(void)
{
	char		buf[256];

	for (Rp.i = 0; Rp.i < Rp.nd; Rp.i++)
	{
		const QsDecision *d = &Rp.D[Rp.i];
		int			k = (int) d->job_id - 1;

		if (!TimeDec[k])
			break;
		Handled[k] = 1;
		if (d->action == QS_STOP)
			StopRequested(k);
		else if (IsHeld(B[k].state))
			Released(k);
	}
	for (int u = 0; u < Cf.nunits; u++)
	{
		FutureUse(u, false, Rp.start[u]);
		Rp.viol[u] = Violation(u, Rp.start[u], buf) != NULL;
	}
	for (; Rp.i < Rp.nd && Rp.D[Rp.i].action == QS_PREEMPT && Rp.D[Rp.i].preempted_for == 0; Rp.i++)
	{
		int			k = (int) Rp.D[Rp.i].job_id - 1;

		Rp.rk[Rp.nr++] = k;
		Handled[k] = 1;
		if (Rp.D[Rp.i].immediate)
		{
			Released(k);		/* a victim's stop is not pending before */
			Rp.i++;
		}
		else
			StopRequested(k);
	}
	CheckRules(EV_REPAIRS);
}

/*
 * ResValid (3.13): is the placement the promised job k reserved (its
 * parts as the pass read them) still valid in the future state: every part
 * on a host now with that much free, as its per_host and same_label want,
 * all its instances?  Then *p is that placement.
 */
static bool
ResValid(int k, Plc *p)
{
	const QsJob *j = &B[k].j;
	int			u = j->unit, key = LabelKey(j->same_label);
	int64_t		free[MAXH], sum = 0;
	const char *value = NULL;

	HostFree(k, true, NULL, 0, free);
	p->n = 0;
	for (int i = 0; i < B[k].nparts; i++)
	{
		int			h = HostIdx(u, B[k].parts[i].host);
		int32_t		c = B[k].parts[i].count;
		const char *v = h >= 0 && key >= 0 ? Cf.hlabel[u][h][key] : NULL;

		if (h < 0 || free[h] < c || (j->per_host > 0 && c != j->per_host) ||
			(j->same_label != NULL && (v == NULL || (value != NULL && strcmp(v, value) != 0))))
			return false;
		value = v;
		PlcAdd(p, h, c);
		sum += c;
	}
	return p->n > 0 && sum == j->count;
}

/*
 * RecheckPlacement (3.13): a promised job of a placed unit that
 * may keep its promise by the capacity rules keeps the placement it
 * reserved if that is still valid in the future state, else one computed
 * anew there (ResNew), else its promise lapses: why, or NULL.
 */
static const char *
RecheckPlacement(int k)
{
	if (!Cf.placed[B[k].j.unit])
		return NULL;
	if (ResValid(k, &MyRes[k]))
		return NULL;
	if (PlaceFuture(k, NULL, 0, &MyRes[k]))
	{
		ResNew[k] = 1;
		St.replaced += B[k].nparts > 0;
		return NULL;
	}
	return "no placement on the hosts in the future state (3.13)";
}

/* step 3: the re-check of promises, in promise order (3.6) */
static void
ReplayRecheck(void)
{
	char		buf[256];

	for (int k = 0; k < Rp.n; k++)
		if (B[k].state == W_RUNNABLE && B[k].j.promised_at != QS_NO_TIME && !Handled[k])
			Rp.plist[Rp.np++] = k;
	qsort(Rp.plist, Rp.np, sizeof(int), CmpPromise);
	CheckRules(EV_LAPSED);
	for (int x = 0; x < Rp.out->nlapsed; x++)
	{
		Rp.lapsed[Rp.out->lapsed[x] - 1] = true;
		St.lapses++;
	}
	for (int x = 0; x < Rp.np; x++)
	{
		int			k = Rp.plist[x];
		const QsJob *j = &B[k].j;
		int64_t		use[MAXS];

		FutureUse(j->unit, true, use);
		/* a held-back job loses its promise whatever the room (3.10) */
		if ((Rp.why = HeldBack(j)) == NULL && (Rp.why = CheckJob(use, j, buf)) == NULL)
			Rp.why = RecheckPlacement(k);
		Rp.k = k;
		CheckRules(EV_RECHECK);
		if (Rp.why == NULL)
		{
			Kept[k] = 1;
			RProm[j->share][j->unit] += j->count;
			AddPlc(RHRes[j->unit], &MyRes[k], +1);
		}
		else
			Ex[k].promised = false;
	}
}

/* step 4: promised jobs whose victims have all stopped, in promise order */
static void
ReplayFreedPromises(void)
{
	char		buf[256];

	for (int x = 0; x < Rp.np; x++)
	{
		int			k = Rp.plist[x];

		if (Kept[k] && !VictimsPending(k) && MayDispatch(k, buf) == NULL)
		{
			Rp.k = k;
			Rp.di = Rp.i + Rp.ne4;
			CheckRules(EV_FREED_ONE);
			Rp.e4[Rp.ne4++] = k;
			ApplyDispatch(k);
			Step4[k] = 1;
		}
	}
	CheckRules(EV_FREED);
	Rp.i += Rp.ne4;
}

/* the loop (3.2): the candidate dispatched */
static void
ReplayDispatch(int c)
{
	CheckRules(EV_DISPATCH);
	if (!Kept[c])
		NoteTried(c, false, true);	/* not a promised job: it was tried */
	ApplyDispatch(c);
	Rp.loopjobs[Rp.nloop++] = c;
	Rp.i++;
}

/* the loop: the candidate given victims, then dispatched or promised */
static void
ReplayVictims(int c)
{
	const QsJob *C = &B[c].j;

	for (Rp.nv = 0; Rp.i < Rp.nd && Rp.D[Rp.i].action == QS_PREEMPT &&
		 Rp.D[Rp.i].preempted_for == C->id;)
	{
		Rp.vk[Rp.nv] = (int) Rp.D[Rp.i].job_id - 1;
		Rp.imm[Rp.nv++] = Rp.D[Rp.i].immediate;
		Rp.i += Rp.D[Rp.i].immediate ? 2 : 1;
	}
	CheckRules(EV_VICTIMS);
	{
		char		buf[256];

		St.victims_for_hosts += CapacityWhy(c, buf) == NULL;	/* the hosts wanted them */
	}
	for (int x = 0; x < Rp.nv; x++)
	{
		Handled[Rp.vk[x]] = 1;
		if (Rp.imm[x])
			Released(Rp.vk[x]);
		else
			StopRequested(Rp.vk[x]);
	}
	Victimized[c] = 1;
	Rp.loopjobs[Rp.nloop++] = c;
	Rp.dispatched = Rp.i < Rp.nd && Rp.D[Rp.i].action == QS_DISPATCH && Rp.D[Rp.i].job_id == C->id;
	NoteTried(c, false, Rp.dispatched);
	/* the placement a promise would reserve: in the future state, its victims stopping (3.13) */
	PendingRes.n = 0;
	if (Cf.placed[C->unit])
		PlaceFuture(c, NULL, 0, &PendingRes);
	CheckRules(EV_AFTER_VICTIMS);
	if (Rp.dispatched)
	{
		ApplyDispatch(c);
		Rp.i++;
		return;
	}
	Rp.inprom[c] = true;
	Kept[c] = 1;
	RProm[C->share][C->unit] += C->count;
	MyRes[c] = PendingRes;
	ResNew[c] = Cf.placed[C->unit];	/* a unit not placed reserves nothing */
	AddPlc(RHRes[C->unit], &MyRes[c], +1);
	Ex[c].promised = true;
	/* STRICT: not dispatched, though given victims */
	if (Cf.strict[C->share])
	{
		SShut[C->share][C->unit] = true;
		St.strict_stops++;
	}
}

/*
 * FairNoteFor: with FAIR, when none fitted in its own capacity and the
 * pass goes on with decision d, about another job D, the pass may
 * have taken D, or the FIFO choice before it, over candidate c; until D's
 * decision is met, a cursor failure is named "fair" (3.2: the least
 * borrowing per weight first).
 */
static void
FairNoteFor(int c, const QsDecision *d, bool borrowing)
{
	const QsJob *C = &B[c].j;
	int64_t		sid = d == NULL ? 0 : d->action == QS_PREEMPT ? d->preempted_for : d->job_id;
	int			h = FifoChoice != c ? FifoChoice : -1;

	if (FairJob != sid)
		FairJob = 0;			/* D was decided on: the suspicion is gone */
	if (!Cf.fair || !borrowing || d == NULL || FairJob != 0)
		return;
	/* D itself under a cursor, or the FIFO choice, taken over C */
	for (int s = 0; s < Cf.nshares; s++)
	{
		int			x = ShareHead(s);

		if (x >= 0 && x != c && B[x].j.id == sid)
			h = x;
	}
	if (h < 0)
		return;
	FairJob = sid;
	snprintf(FairNote, sizeof(FairNote),
			 "; with FAIR the pass seems to have taken job %" PRId64 " of share %d (queued %" PRId64 ", borrowing %" PRId64 " / weight %d) over job %" PRId64 " of share %d (queued %" PRId64 ", borrowing %" PRId64 " / weight %d), %s",
			 B[h].j.id, B[h].j.share, B[h].j.queued_at, FairKey(&B[h].j),
			 Cf.weight[B[h].j.share], C->id, C->share, C->queued_at, FairKey(C),
			 Cf.weight[C->share],
			 QueueBefore(C, &B[h].j) ? "a later job whose borrowing per weight is not strictly less" : "one borrowing more per weight");
}

/*
 * CursorNotes: the tag and note of a cursor failure of candidate c, which
 * got nothing.  The order among candidates that get nothing cannot be seen
 * in the decisions; a wrong order shows once a candidate that could have
 * started is passed over.  STRICT: the model reaches a job of a STRICT
 * share only when every job ahead of it in its stream was dispatched (or
 * decided before the loop); if the pass passed it over, the STRICT skip
 * came after a job that was dispatched: "strict", a note about the job's
 * own stream, which goes before FAIR's (FairNoteFor).  These notes are
 * hints only in the other failures.
 */
static void
CursorNotes(int c, const QsDecision *d, bool borrowing)
{
	const QsJob *C = &B[c].j;
	int			prev = -1;

	FairNoteFor(c, d, borrowing);
	Rp.cursor_tag = "cursor";
	Rp.hint = NULL;
	if (Cf.strict[C->share])
		for (int x = RunFrom[C->share][C->unit]; RunIdx[x] != c; x++)
			if (Dispatched[RunIdx[x]] && !Step4[RunIdx[x]])
				prev = RunIdx[x];
	if (prev >= 0)
	{
		Rp.cursor_tag = "strict";
		sprintf(StrictNote, "; its STRICT share's job %" PRId64 " ahead of it in the stream was dispatched%s in this pass, and STRICT skips only after a job that was not dispatched",
				B[prev].j.id, Victimized[prev] ? " right after its victims stopped" : "");
		Rp.hint = StrictNote;
	}
	else if (Cf.strict[C->share] && (prev = ShareWaitingAhead(c)) >= 0)
	{
		Rp.cursor_tag = "dependency-strict";
		sprintf(StrictNote, "; job %" PRId64 " ahead of it in its STRICT share waits for dependencies, and is in no share's order: it blocks nothing (3.17)",
				B[prev].j.id);
		Rp.hint = StrictNote;
	}
	else if (FairJob != 0)
	{
		Rp.cursor_tag = "fair";
		Rp.hint = FairNote;
	}
	else if ((prev = LenderWaiting(c)) >= 0)
	{
		Rp.cursor_tag = "dependency-wanted";
		sprintf(StrictNote, "; it must borrow, and job %" PRId64 " of lender share %d waits for dependencies: it wants none of the idle capacity (3.17)",
				B[prev].j.id, B[prev].j.share);
		Rp.hint = StrictNote;
	}
}

/*
 * WaitsForHosts (3.13): a job tried that got nothing waits
 * WAITING_FOR_HOSTS when the capacity rules, now and in the future state,
 * would dispatch it, in a placed unit, but it has no placement.
 */
static bool
WaitsForHosts(int c)
{
	char		buf[256];

	if (!Cf.placed[B[c].j.unit] || CapacityWhy(c, buf) != NULL || PlacementWhy(c) == NULL)
		return false;
	St.waiting_for_hosts++;
	return true;
}

/* the loop: the candidate got nothing; then the skip rule and STRICT */
static void
ReplayNothing(int c, const QsDecision *d, bool borrowing)
{
	const QsJob *C = &B[c].j;

	CursorNotes(c, d, borrowing);
	Rp.held_back = HeldBack(C) != NULL;
	CheckRules(EV_NOTHING);
	if (Rp.held_back)
		St.held_back++;
	/* a kept promise waiting for its victims was not tried, nor was a held-back job (3.10) */
	if (!Kept[c] && !Rp.held_back)
		NoteTried(c, WaitsForHosts(c), false);
	else if (!Kept[c] && BudgetHold(C) == NULL && NoPlacementEver(C))
		NoteNoFit(c);
	if (!Kept[c] && !Rp.held_back && C->count < SBelow[C->share][C->unit][SkipClass(C)])
		SBelow[C->share][C->unit][SkipClass(C)] = C->count;
	/* STRICT: not dispatched, whatever the reason */
	if (Cf.strict[C->share])
	{
		SShut[C->share][C->unit] = true;
		St.strict_stops++;
	}
}

/*
 * Step 5: the dispatch loop, in lockstep with a model of the cursors.  The
 * candidate either is the subject of the pass's next decision (a dispatch,
 * or victims then a dispatch or a promise) or got nothing: then the rules
 * say whether it could have started or had victims, and the skip rule
 * applies to its stream.
 */
static void
ReplayLoop(void)
{
	bool		borrowing;

	for (int s = 0; s < Cf.nshares; s++)
		for (int u = 0; u < Cf.nunits; u++)
		{
			for (int c = 0; c < NCLASS; c++)
				SBelow[s][u][c] = INT32_MAX;
			SShut[s][u] = false;
			StreamAdvance(s, u, true);
		}
	for (int c; (c = NextCandidate(&borrowing)) >= 0;)
	{
		const QsJob *C = &B[c].j;
		const QsDecision *d = Rp.i < Rp.nd ? &Rp.D[Rp.i] : NULL;

		Rp.k = c;
		if (d != NULL && d->action == QS_DISPATCH && d->job_id == C->id)
			ReplayDispatch(c);
		else if (d != NULL && d->action == QS_PREEMPT && d->preempted_for == C->id)
			ReplayVictims(c);
		else
			ReplayNothing(c, d, borrowing);
		StreamAdvance(C->share, C->unit, false);
	}
}

/*
 * WaitingReason (3.13): WAITING_FOR_HOSTS, when no other reason comes
 * first, for a job the loop tried that waits for hosts; a job tried with
 * another outcome has it no longer, one not tried keeps it; in a unit
 * that is not placed no job has it.
 */
static const char *
WaitingReason(int k)
{
	if (!Cf.placed[B[k].j.unit])
		return NULL;			/* no job waits for hosts where nothing is placed */
	if (SpecNote[k] >= 0)
		return SpecNote[k] ? "WAITING_FOR_HOSTS" : NULL;
	return IsWaitingForHosts(B[k].status_reason) ? "WAITING_FOR_HOSTS" : NULL;
}

/* after WApply: the reason each RUNNABLE job must have (3.7, 3.10, 3.11, 3.13, 3.17) */
static void
ExpectReasons(void)
{
	Rp.nrunnable = 0;
	for (int k = 0; k < Rp.n; k++)
	{
		const WJob *a = &W.jobs[k];
		const char *r;

		if (a->state != W_RUNNABLE)
			continue;
		Rp.runnable[Rp.nrunnable++] = k;
		if (MyWaiting(W.jobs, k) > 0)
		{
			Rp.reason[k] = "DEPENDENCY";	/* 3.17: none of the others while it waits */
			continue;
		}
		Rp.reason[k] = r = ExpectedReason(&a->j);
		if (r == NULL)
			Rp.reason[k] = WaitingReason(k);
		if (r != NULL && strcmp(r, "NO_AGENT_FITS") == 0)
			St.no_agent_fits++;
		if (IsBudgetExhausted(r))
			St.over_budget++;
		if (IsBudgetExhausted(r) &&
			W.budget[a->j.share][a->j.unit] != floor(W.budget[a->j.share][a->j.unit]))
			St.over_fraction++;
	}
}

/*
 * WKeepParts moves the parts the world's jobs were given (in memory that
 * WFreeAll frees) to memory of the sim's.
 */
static void
WKeepParts(void)
{
	for (int k = 0; k < W.njobs; k++)
	{
		WJob	   *job = &W.jobs[k];

		if (job->nparts > MAXH)
			abort();			/* no unit has more than MAXH hosts */
		if (job->nparts > 0 && job->parts != WParts[k])
			memmove(WParts[k], job->parts, sizeof(QsPart) * job->nparts);
		job->parts = WParts[k];
	}
}

/*
 * CheckedPass runs a pass and replays its decisions on a model of the
 * pass's steps, walking the table of rules (CheckRules) at each event.
 */
static PassResult
CheckedPass(void)
{
	PassResult	res;

	PassRead(&res);
	CheckRules(EV_READ);
	ReadDecisions();
	ReplayTimeWorkAndRepairs();
	ReplayRecheck();
	if (Cf.env_enabled)
		ReplayFreedPromises();
	CheckRules(EV_LOOP_BEGIN);
	if (Cf.env_enabled)
		ReplayLoop();
	CheckRules(EV_LOOP_END);
	St.promises += Rp.out->npromised;
	WApply(&W);
	WKeepParts();
	ExpectReasons();
	CheckRules(EV_APPLIED);
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

/*
 * back to RUNNABLE or to FAILED, as the shell applies an outcome (a job
 * FAILED: its end is told to the jobs that depend on it, WEnd)
 */
static void
EndAttemptHere(WJob *job, bool fail)
{
	job->state = W_RUNNABLE;
	job->j.state = QS_RUNNABLE;
	job->j.stop = QS_STOP_NONE;
	job->j.claimed = false;
	job->j.lease_until = QS_NO_TIME;
	job->j.deadline = QS_NO_TIME;
	job->j.promised_at = QS_NO_TIME;
	job->nparts = 0;			/* its placement ends with its attempt */
	if (fail)
		WEnd(&W, job, W_FAILED);
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

/*
 * RandomConstraints: instances_per_host (a divisor of the count) and
 * same_label on some jobs, of any unit: a unit that is not placed ignores
 * them (3.13); "zone" is a key no host has.
 */
static void
RandomConstraints(QsJob *j)
{
	int			r = Rand(0, 99);

	if (Chance(30))
	{
		do
			j->per_host = Rand(1, j->count);
		while (j->count % j->per_host != 0);
	}
	if (Chance(20))
		j->same_label = LabelKeys[r < 50 ? 0 : r < 88 ? 1 : 2];
}

/*
 * Dependencies and arrays (3.16, 3.17), on a modest fraction of the
 * submissions, so that the other rules keep their traffic.
 */
#define DEP_PERCENT 12
#define ARRAY_PERCENT 6

static int	Arrays[MAXJ];		/* this episode's arrays: their first jobs */
static int	NArrays;

/*
 * a random RUNNABLE job of share s and unit u (s < 0: of any), one waiting
 * for dependencies if waiting; or -1
 */
static int
SomeRunnable(int s, int u, bool waiting)
{
	int			c = 0, pick = -1;

	for (int k = 0; k < W.njobs; k++)
	{
		const WJob *job = &W.jobs[k];

		if (job->state == W_RUNNABLE && (s < 0 || (job->j.share == s && job->j.unit == u)) &&
			(!waiting || MyWaiting(W.jobs, k) > 0) && Rand(0, c++) == 0)
			pick = k;
	}
	return pick;
}

/* a random job holding capacity (most will SUCCEED), or -1 */
static int
SomeHeld(void)
{
	int			c = 0, pick = -1;

	for (int k = 0; k < W.njobs; k++)
		if (IsHeld(W.jobs[k].state) && Rand(0, c++) == 0)
			pick = k;
	return pick;
}

/*
 * DepTarget: an earlier job for a new job of share s and unit u to depend
 * on (3.17), or -1: a recent one (mostly live), any one (some ended,
 * SUCCEEDED or FAILED), one holding capacity (mostly to SUCCEED, so that
 * its dependents go on), a RUNNABLE one of the same share and unit, which
 * *prio goes above (in a STRICT share the dependent comes first in share
 * order), one waiting itself (a chain), or an array (its first job: named
 * by the array's id, every job of it); none whose chain is MAXDEPTH long.
 */
static int
DepTarget(int s, int u, int32_t *prio)
{
	int			n = W.njobs, r = Rand(0, 99), k;

	if (n == 0)
		return -1;
	if (r < 15)
		k = Rand(n > 12 ? n - 12 : 0, n - 1);
	else if (r < 30)
		k = Rand(0, n - 1);
	else if (r < 65)
		k = SomeHeld();
	else if (r < 83)
	{
		k = SomeRunnable(s, u, false);
		if (k >= 0 && *prio <= W.jobs[k].j.priority)
			*prio = W.jobs[k].j.priority + Rand(1, 2);
	}
	else if (r < 91)
		k = SomeRunnable(-1, -1, true);
	else
		k = NArrays > 0 ? Arrays[Rand(0, NArrays - 1)] : -1;
	return k >= 0 && Depth[k] < MAXDEPTH ? k : -1;
}

/*
 * AddDep: in the sim's record, job k depends on job t, or on every job of
 * t's array when t is its first (its id is the array's)
 */
static void
AddDep(int k, int t)
{
	int			to = ArrayFirst[t] == t ? t + ArraySize[t] - 1 : t;

	for (int x = t; x <= to; x++)
	{
		bool		have = false;

		for (int i = 0; i < NDep[k]; i++)
			have |= DepOf[k][i] == x;
		if (!have && NDep[k] < MAXDEP)
			DepOf[k][NDep[k]++] = x;
		if (Depth[x] + 1 > Depth[k])
			Depth[k] = Depth[x] + 1;
	}
}

/*
 * RandomDependencies: on DEP_PERCENT of the submissions, 1 to 3 earlier
 * jobs or arrays (DepTarget; one may come twice) that a new job of share s
 * and unit u depends on, written to ids and targets; returns how many
 */
static int
RandomDependencies(int s, int u, int32_t *prio, int64_t *ids, int *targets)
{
	int			nt = 0, t;

	if (!Chance(DEP_PERCENT))
		return 0;
	for (int x = Chance(60) ? 1 : Rand(2, 3); x > 0; x--)
		if ((t = DepTarget(s, u, prio)) >= 0)
		{
			targets[nt] = t;
			ids[nt++] = W.jobs[t].j.id;
		}
	return nt;
}

/*
 * RandomArray: the job just submitted becomes the first of an array of
 * size jobs (3.16), copies of it, in the world and in the sim's record
 */
static void
RandomArray(WJob *job, int size)
{
	int			first = (int) job->j.id - 1;

	WExpandArray(&W, job, size);
	ArrayFirst[first] = first;
	ArraySize[first] = size;
	Arrays[NArrays++] = first;
	for (int k = first + 1; k < first + size; k++)
	{
		Timeout[k] = Timeout[first];
		memcpy(DepOf[k], DepOf[first], sizeof(DepOf[k]));
		NDep[k] = NDep[first];
		Depth[k] = Depth[first];
		ArrayFirst[k] = first;
		OnceWaited[k] = FailedByDep[k] = 0;
	}
	St.arrays++;
	St.dependents += NDep[first] > 0 ? size - 1 : 0;
	St.submitted += size - 1;
}

static void
Submit(void)
{
	int			s, u, n, k, nt, targets[3];
	int32_t		prio;
	int64_t		ids[3];
	WJob	   *job;
	int			tries = 0;

	if (W.njobs >= MAXJ - 4)
		return;
	do
		s = Rand(0, W.nshares - 1);
	while (!W.shares[s].enabled && ++tries < 10);
	if (!W.shares[s].enabled)
		return;					/* a DISABLED share accepts no new jobs */
	u = Rand(0, W.nunits - 1);
	n = Rand(0, 99);
	n = n < 50 ? 1 : n < 70 ? 2 : n < 82 ? 3 : n < 90 ? 4 : Rand(5, 9);
	prio = Rand(0, 5);
	nt = RandomDependencies(s, u, &prio, ids, targets);
	job = WSubmitDeps(&W, NULL, s, u, prio, n, ids, nt);
	k = (int) job->j.id - 1;
	NDep[k] = Depth[k] = 0;
	ArrayFirst[k] = -1;
	OnceWaited[k] = FailedByDep[k] = 0;
	for (int x = 0; x < nt; x++)
		AddDep(k, targets[x]);
	St.dependents += nt > 0;
	job->j.max_attempts = Rand(1, 3);
	n = Rand(0, 9);
	job->j.preemption_retries = n < 4 ? -1 : n < 6 ? 0 : Rand(1, 3);
	job->j.max_lease_losses = Rand(0, 3);
	Timeout[k] = Chance(30) ? (QsTime) Rand(20, 200) * SEC : QS_NO_TIME;
	RandomConstraints(&job->j);
	St.submitted++;
	if (Chance(ARRAY_PERCENT))
		RandomArray(job, Rand(2, 4));
	Trace("submit job %" PRId64 " share %d unit %d n=%d prio %d, %d dependencies, array of %d",
		  job->j.id, s, u, job->j.count, job->j.priority, NDep[k],
		  ArrayFirst[k] == k ? ArraySize[k] : 1);
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

/* the agent acknowledges a requested stop; the outcome checked (EV_ACK) */
static void
Ack(int k)
{
	WJob	   *job = &W.jobs[k];

	Acked.k = k;
	Acked.o = MyOutcome(&job->j, job->j.stop);
	Acked.fa = job->j.failed_attempts;
	Acked.pc = job->j.preemption_count;
	Acked.ll = job->j.lease_losses;
	Acked.stop = job->j.stop;
	WStopped(&W, job);
	CheckRules(EV_ACK);
	Trace("job %d STOPPED (%s) -> %s", k + 1, StopText(Acked.stop), StateName(job->state));
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

static bool Fleet;				/* this episode's hosts come and go (3.10, 3.13) */
static bool ClaimOutage;		/* no agent claims for a while */

/*
 * The hosts (3.13): each unit draws a pool of up to MAXH hosts an episode:
 * names whose C order matters ("B" < "a", "h10" < "h2"), 1, 2, 4 or 8
 * instances (ties are many), most with a "rack" of 2 or 3 values, some
 * with an "nvlink"; most of them live.  Hosts come and go (FleetChange).
 * A unit is placed or not (an unbounded agent is live: 0.3's rules), and
 * keeps its pool for when that changes.
 */
typedef struct Pool
{
	int			n;
	const char *name[MAXH];
	int64_t		inst[MAXH];
	const char *rack[MAXH];
	const char *nvlink[MAXH];
	bool		live[MAXH];
	int			nracks;			/* values of "rack" */
} Pool;

static Pool Pools[MAXU];

static const char *const HostNames[] = {"a", "b", "c", "B", "C", "Z", "h", "h1", "h2", "h3",
	"h9", "h10", "h11", "h20", "n01", "n1", "n10", "x", "y", "z", "gpu-1", "gpu-10", "gpu-2",
"gpu-a"};
static const char *const Racks[] = {"r1", "r10", "r2"};
static const char *const Nvlinks[] = {"nvl0", "nvl1"};

#define NHOSTNAMES ((int) (sizeof(HostNames) / sizeof(HostNames[0])))

static int64_t
RandomHostSize(void)
{
	int			r = Rand(0, 99);

	return r < 25 ? 1 : r < 60 ? 2 : r < 90 ? 4 : 8;
}

/* the labels of host i of unit u's pool: most have a rack, some an nvlink */
static void
RandomLabels(int u, int i)
{
	Pool	   *p = &Pools[u];

	p->rack[i] = Chance(70) ? Racks[Rand(0, p->nracks - 1)] : NULL;
	p->nvlink[i] = Chance(30) ? Nvlinks[Rand(0, 1)] : NULL;
}

/*
 * RandomPool: unit u's pool of hosts for the episode, none live yet: their
 * instances in all near E(u) (half to one and a half times), so that the
 * hosts bind as often as the capacity limits do; sometimes a pool of 0 to
 * 2 hosts, or a large one.
 */
static void
RandomPool(int u)
{
	Pool	   *p = &Pools[u];
	int			r = Rand(0, 9), nracks = Rand(2, 3);
	int64_t		target = W.units[u].env_limit * Rand(50, 150) / 100, total = 0;
	bool		taken[NHOSTNAMES];

	memset(taken, 0, sizeof(taken));
	p->n = r < 1 ? Rand(0, 2) : r < 2 ? Rand(9, MAXH) : MAXH;
	for (int i = 0; i < p->n; i++)
	{
		if (r >= 2 && i > 0 && total >= target)
		{
			p->n = i;
			break;
		}
		int			x;

		do
			x = Rand(0, NHOSTNAMES - 1);
		while (taken[x]);
		taken[x] = true;
		p->name[i] = HostNames[x];
		p->inst[i] = RandomHostSize();
		total += p->inst[i];
		p->nracks = nracks;
		RandomLabels(u, i);
		p->live[i] = false;
	}
}

/* host i of unit u's pool becomes live (agent_ready), with its labels */
static void
HostUp(int u, int i)
{
	Pool	   *p = &Pools[u];
	bool		placed = W.units[u].placed;
	WHost	   *h = WAddHost(&W, u, p->name[i], p->inst[i]);

	W.units[u].placed = placed; /* WAddHost places the unit: whether it is, is ours */
	if (p->rack[i] != NULL)
		WLabel(h, LabelKeys[0], p->rack[i]);
	if (p->nvlink[i] != NULL)
		WLabel(h, LabelKeys[1], p->nvlink[i]);
	p->live[i] = true;
	Trace("host %s of unit %d up (%" PRId64 " instances)", p->name[i], u, p->inst[i]);
}

/* host i of unit u's pool goes (not live, or DRAINING): its parts stay on it */
static void
HostDown(int u, int i)
{
	WRemoveHost(&W, u, Pools[u].name[i]);
	Pools[u].live[i] = false;
	Trace("host %s of unit %d down", Pools[u].name[i], u);
}

/* unit u's pool, most hosts live (placed or not: drawn before) */
static void
RandomHosts(int u)
{
	RandomPool(u);
	for (int i = 0; i < Pools[u].n; i++)
		if (Chance(85))
			HostUp(u, i);
	Trace("unit %d %s, %d hosts", u, W.units[u].placed ? "placed" : "not placed", W.nhosts[u]);
}

/* a random host of unit u's pool that is live (or not), or -1 */
static int
SomeHost(int u, bool live)
{
	int			c = 0, pick = -1;

	for (int i = 0; i < Pools[u].n; i++)
		if (Pools[u].live[i] == live && Rand(0, c++) == 0)
			pick = i;
	return pick;
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
	for (int u = 0; u < nunits; u++)
		W.units[u].placed = Chance(65);	/* its hosts: RandomHosts */
	for (int s = 0; s < nshares; s++)
	{
		int			r = Rand(0, 2);
		QsStrategy	st = r == 0 ? QS_RESERVE : r == 1 ? QS_LEND : QS_LEND_AND_BORROW;
		int32_t		bl = st == QS_LEND_AND_BORROW && Chance(60) ? Rand(0, 300) : -1;

		WAddShare(&W, snames[s], st, bl, Chance(50), 0);
		RandomOptions(&W.shares[s]);
		/* twice as much of a placed unit: room for jobs of several hosts */
		for (int u = 0; u < nunits; u++)
			W.capacity[s][u] = Chance(20) ? 0 : Rand(1, 5) * (W.units[u].placed ? 2 : 1);
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
	/* from the episode's number, not the random stream, which the seeds
	 * of `make unitcheck` keep as they found their cases */
	W.fence_grace = St.episodes % 2 ? 0 : (QsTime) (St.episodes * 7 % 40 + 1) * SEC;
	RandomOverTime();
	Fleet = Chance(60);
	ClaimOutage = false;
	for (int u = 0; u < nunits; u++)
		RandomHosts(u);
	memset(Timeout, 0, sizeof(Timeout));
	NArrays = 0;
	/* the bound of the jobs failed for a dependency a pass reads: small on some episodes */
	W.dependency_failed_max = St.episodes % 5 == 2 ? 2 + (int) (St.episodes % 4) :
		W_DEPENDENCY_FAILED_MAX;
	AdminDirty = false;
	St.episodes++;
	Trace("new configuration: %d units, %d shares", nunits, nshares);
}

/*
 * AdminOption: an admin changes an option of 0.2 of share s (sh) or of the
 * queue; true when a limit changed (lend_limit: the supply may shrink).
 */
static bool
AdminOption(int s, QsShare *sh)
{
	switch (Rand(0, 4))
	{
		case 0:
			sh->strict = !sh->strict;
			Trace("admin: share %d queueing %s", s, sh->strict ? "STRICT" : "BEST_EFFORT");
			return false;		/* no limit changed */
		case 1:
			sh->min_runtime = Chance(30) ? 0 : RandomMinRuntime();
			Trace("admin: share %d min_runtime %" PRId64, s, sh->min_runtime);
			return false;
		case 2:
			if (sh->strategy == QS_RESERVE)
				return false;	/* an error: lend_limit stays -1 */
			sh->lend_limit = Chance(30) ? -1 : RandomLendLimit();
			Trace("admin: share %d lend_limit %d", s, sh->lend_limit);
			return true;		/* supply may shrink: a limit changed */
		case 3:
			sh->weight = RandomWeight();
			Trace("admin: share %d weight %d", s, sh->weight);
			return false;
		case 4:
			W.fair = !W.fair;
			Trace("admin: borrow_order %s", W.fair ? "FAIR" : "FIFO");
			return false;
	}
	return false;
}

/* an admin changes share s's strategy (and its borrow_limit, lend_limit) */
static void
AdminStrategy(int s, QsShare *sh)
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
}

/* an admin changes unit u's environment limit, near the shares' capacities */
static void
AdminEnvLimit(int u)
{
	int64_t		sum = 0, e;

	for (int t = 0; t < W.nshares; t++)
		sum += W.capacity[t][u];
	e = Chance(30) ? sum : sum + Rand(-5, 5);
	W.units[u].env_limit = e < 0 ? 0 : e;
	Trace("admin: E(%d) = %" PRId64, u, W.units[u].env_limit);
}

/*
 * AdminLimit: an admin changes a limit of share s (sh) or unit u, or
 * another setting of the share or the queue; true when a limit changed.
 */
static bool
AdminLimit(int s, int u, QsShare *sh)
{
	switch (Rand(0, 9))
	{
		case 0:
		case 1:
			W.capacity[s][u] = Chance(25) ? 0 : Rand(1, 6);
			Trace("admin: C(%d,%d) = %" PRId64, s, u, W.capacity[s][u]);
			return true;
		case 2:
			AdminStrategy(s, sh);
			return true;
		case 3:
			if (sh->strategy == QS_LEND_AND_BORROW)
				sh->borrow_limit = Chance(30) ? -1 : Rand(0, 300);
			Trace("admin: share %d borrow_limit %d", s, sh->borrow_limit);
			return true;
		case 4:
			sh->enabled = !sh->enabled;
			Trace("admin: share %d %s", s, sh->enabled ? "ENABLED" : "DISABLED");
			return true;
		case 5:
		case 6:
			AdminEnvLimit(u);
			return true;
		case 7:
			sh->in_share_preemption = !sh->in_share_preemption;
			Trace("admin: share %d in_share_preemption %d", s, sh->in_share_preemption);
			return false;		/* no limit changed */
		case 8:
			W.env_enabled = W.env_enabled ? !Chance(40) : Chance(80);
			Trace("admin: environment %s", W.env_enabled ? "ENABLED" : "DISABLED");
			return false;
		case 9:
			if (Chance(50))
				W.runnable_timeout = Chance(50) ? QS_NO_TIME : (QsTime) Rand(30, 300) * SEC;
			else
				W.claim_timeout = RandomClaimTimeout();
			Trace("admin: runnable_timeout %" PRId64 " claim_timeout %" PRId64,
				  W.runnable_timeout, W.claim_timeout);
			return false;
	}
	return false;
}

/* an admin changes the configuration: the options of 0.2 in a quarter of the changes */
static void
AdminChange(void)
{
	int			s = Rand(0, W.nshares - 1), u = Rand(0, W.nunits - 1);
	QsShare    *sh = &W.shares[s];

	if (Chance(25) ? AdminOption(s, sh) : AdminLimit(s, u, sh))
		AdminDirty = true;
}

/*
 * Liveness (3, 3.6): freeze the outside world and repeat passes, agents
 * claiming every SCHEDULED job (none in a claim outage) and acknowledging
 * every requested stop, until a pass decides nothing with no stop pending
 * (EV_FIXED_POINT; none within NROUNDS: EV_NO_FIXED_POINT, churn).  At
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
			CheckRules(EV_FIXED_POINT);
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
	CheckRules(EV_NO_FIXED_POINT);
}

/* a promised job of a placed unit with a reservation */
static bool
PReserved(const WJob *j)
{
	return PPromised(j) && j->nparts > 0 && W.units[j->j.unit].placed;
}

/*
 * a live host re-registers (agent_ready) with other labels, drawn anew
 * (3.13: its parts stay on it)
 */
static void
HostRelabel(int u, int i)
{
	HostDown(u, i);
	RandomLabels(u, i);
	HostUp(u, i);
}

/*
 * a host of promised job k's reservation goes, and often another comes,
 * or it re-registers with other labels: the promise keeps its reservation
 * if it is still valid at the re-check, else is placed anew, or lapses
 */
static void
ReservedHostDown(int k)
{
	const WJob *job = &W.jobs[k];
	int			u = job->j.unit, i;
	const char *name = job->parts[Rand(0, job->nparts - 1)].host;
	bool		relabel = Chance(30);

	for (i = 0; i < Pools[u].n; i++)
		if (Pools[u].live[i] && strcmp(Pools[u].name[i], name) == 0)
		{
			if (relabel)
				HostRelabel(u, i);
			else
				HostDown(u, i);
		}
	if (!relabel && Chance(60) && (i = SomeHost(u, false)) >= 0)
		HostUp(u, i);
}

/*
 * the fleet (3.10, 3.13), on some episodes: a host goes (its jobs run on,
 * on a host that holds nothing now), sometimes one a promise reserved; a
 * host comes back; every host of a unit goes (all DRAINING: placed with no
 * hosts); rarely a unit becomes placed or not (an unbounded agent comes
 * or goes)
 */
static void
FleetChange(void)
{
	int			u = Rand(0, W.nunits - 1), r = Rand(0, 99), i;

	St.host_changes++;
	if (r < 55 && (i = SomeHost(u, true)) >= 0)
		HostDown(u, i);
	else if (r < 92 && (i = SomeHost(u, false)) >= 0)
		HostUp(u, i);
	else if (r >= 92 && r < 94 && (i = SomeHost(u, true)) >= 0)
		HostRelabel(u, i);
	else if (r >= 94 && r < 96)
	{
		while ((i = SomeHost(u, true)) >= 0)
			HostDown(u, i);
	}
	else if (r >= 96)
	{
		W.units[u].placed = !W.units[u].placed;
		Trace("unit %d %s", u, W.units[u].placed ? "placed" : "not placed");
	}
}

/* a submission, or with a deep backlog the termination of a waiting job */
static void
SubmitOrTerminate(void)
{
	int			k;

	if (CountIn(W_RUNNABLE) < 60)
		Submit();
	else if ((k = Pick(PRunnable)) >= 0)
	{
		WEnd(&W, &W.jobs[k], W_FAILED);	/* terminate a waiting job */
		W.jobs[k].j.promised_at = QS_NO_TIME;
		Trace("terminate RUNNABLE job %d", k + 1);
	}
}

/* agents claim; with a claim timeout, sometimes no agent claims for a while */
static void
Claims(void)
{
	int			k;

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

/* a claimed job ends: SUCCEEDED, or FAILED (a pending stop is void, 3.6) */
static void
EndAttempt(void)
{
	int			k;
	WJob	   *job;

	if ((k = Pick(PClaimed)) < 0)
		return;
	job = &W.jobs[k];
	if (Chance(75))
	{
		WEnd(&W, job, W_SUCCEEDED);
		Trace("job %d SUCCEEDED", k + 1);
	}
	else
	{
		job->j.failed_attempts++;
		EndAttemptHere(job, job->j.failed_attempts >= job->j.max_attempts);
		Trace("job %d FAILED -> %s", k + 1, StateName(job->state));
	}
}

/* a claimed job's agent is lost: time passes its lease, the others beat */
static void
LoseLease(void)
{
	int			k;

	if ((k = Pick(PClaimed)) >= 0)
	{
		QsTime		lease = W.jobs[k].j.lease_until;

		if (W.now <= lease)
			OverTimeAdvance(lease + 1);
		Heartbeat(100);			/* the other agents are alive */
		W.jobs[k].j.lease_until = lease;
		Trace("job %d loses its lease", k + 1);
	}
}

/*
 * time passes: with a claim timeout, sometimes to within a microsecond of
 * the time a claim timeout passes or a backoff ends, to try the edges; a
 * long one: sometimes a long while passes
 */
static void
TimePasses(void)
{
	int			k;

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

/* terminate (scheduling.md 7) */
static void
Terminate(void)
{
	int			k;

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

/* the agents' and the users' steps, the rarer ones */
static void
OtherStep(int r)
{
	int			k;

	if (r < 81)
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
		TimePasses();
	else if (r < 95)
		Terminate();
	else if (r < 96)
	{
		/* release (5.2): a held job back to RUNNABLE, counters unchanged */
		if ((k = Pick(PClaimedNoStop)) >= 0)
		{
			EndAttemptHere(&W.jobs[k], false);
			Trace("release job %d", k + 1);
		}
	}
	else if ((k = Pick(PStopping)) >= 0)
		Ack(k);
	else
		CheckedPass();
}

static void
RandomStep(void)
{
	int			r, k;

	if (Fleet && Chance(3))
	{
		FleetChange();
		return;
	}
	if (Fleet && Chance(5) && (k = Pick(PReserved)) >= 0)
	{
		St.host_changes++;
		ReservedHostDown(k);	/* while a promise waits, often short */
		return;
	}
	r = Rand(0, 99);
	if (r < 16)
		SubmitOrTerminate();
	else if (r < 36)
		CheckedPass();
	else if (r < 46)
		Claims();
	else if (r < 54)
	{
		if ((k = Pick(PStarting)) >= 0)
			Running(k);
	}
	else if (r < 65)
		EndAttempt();
	else if (r < 74)
	{
		if ((k = Pick(PStopping)) >= 0)
			Ack(k);
	}
	else if (r < 76)
		LoseLease();
	else
		OtherStep(r);
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
#ifdef __GLIBC__
	/* the world's snapshots are large blocks, made and freed every pass: from the heap */
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
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
	printf("sim: steps=%ld passes=%ld dispatches=%ld preemptions=%ld repairs=%ld promises=%ld lapses=%ld fixed_points=%ld (max rounds %ld) configurations=%ld jobs=%ld strict_stops=%ld exempt_waits=%ld wakes=%ld fair_picks=%ld lease_losses=%ld claim_requeues=%ld held_back=%ld no_agent_fits=%ld no_agent_timeouts=%ld strict_heads=%ld over_budget=%ld over_fraction=%ld placed_dispatches=%ld multi_host=%ld waiting_for_hosts=%ld reserved_new=%ld reserved_kept=%ld replaced=%ld victims_for_hosts=%ld host_changes=%ld arrays=%ld dependents=%ld dep_waits=%ld dep_released=%ld dep_failures=%ld dep_chains=%ld dep_strict=%ld dep_unwanted=%ld dep_beyond=%ld fingerprint=%016" PRIx64 " cpu=%.1fs\n",
		   Steps, St.passes, St.dispatches, St.preemptions, St.repairs, St.promises, St.lapses,
		   St.fixed_points, St.max_rounds, St.episodes, St.submitted, St.strict_stops,
		   St.exempt_waits, St.wakes, St.fair_picks, St.lease_losses, St.claim_requeues,
		   St.held_back, St.no_agent_fits, St.no_agent_timeouts, St.strict_heads, St.over_budget,
		   St.over_fraction, St.placed_dispatches, St.multi_host, St.waiting_for_hosts,
		   St.reserved_new, St.reserved_kept, St.replaced, St.victims_for_hosts, St.host_changes,
		   St.arrays, St.dependents, St.dep_waits, St.dep_released, St.dep_failures,
		   St.dep_chains, St.dep_strict, St.dep_unwanted, St.dep_beyond, Fingerprint,
		   (double) (clock() - t0) / CLOCKS_PER_SEC);
	for (int t = 0; t < NTags; t++)
		printf("sim: failures %s [%s]: %ld\n", TagSection[t], Tags[t], TagCount[t]);
	printf("sim: %ld steps, %ld failures\n", Steps, St.failures);
	return St.failures ? 1 : 0;
}
