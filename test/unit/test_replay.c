/*-------------------------------------------------------------------------
 *
 * test_replay.c
 *		Unit tests of the what-if engine (src/core/replay.c): a workload
 *		run through the passes on a simulated clock in an ideal world
 *		(jobs run as soon as they are dispatched, stops are acknowledged at
 *		once, a preempted attempt starts over, a job past its timeout fails
 *		there and retries as its attempts allow).  Prints TAP; exits
 *		non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "tap.h"

#define SEC ((QsTime) 1000000)
#define MIN (60 * SEC)
#define HOUR (60 * MIN)
#define T0 ((QsTime) 86400 * 365 * 50 * SEC)	/* a time in 2020 */

/* Memory for the replay: the world's allocator, never freed until TapDone. */
static void *
ReplayAlloc(void *arg, size_t size)
{
	void	   *p = calloc(1, size);

	(void) arg;
	if (p == NULL)
		abort();
	return p;
}

static void
ReplayReset(void *arg)
{
	(void) arg;
}

static const QsReplayMemory Memory = {ReplayAlloc, ReplayAlloc, ReplayReset, NULL};

/* A configuration of one unit, "gpu", with E gpus. */
typedef struct Config
{
	QsReplayConfig c;
	QsUnit		unit;
	QsShare		shares[4];
	int64_t		capacity[4];
	double		budget[4];		/* instance-hours; -1: none */
	QsPeriod	periods[4];
} Config;

static void
ConfigInit(Config *cf, int64_t env)
{
	memset(cf, 0, sizeof(*cf));
	cf->unit.name = "gpu";
	cf->unit.env_limit = env;
	cf->c.env_enabled = true;
	cf->c.runnable_timeout = QS_NO_TIME;
	cf->c.nunits = 1;
	cf->c.units = &cf->unit;
	cf->c.shares = cf->shares;
	cf->c.periods = cf->periods;
}

static int
AddShare(Config *cf, QsStrategy strategy, int64_t capacity, bool in_share)
{
	int			s = cf->c.nshares++;
	QsShare    *sh = &cf->shares[s];

	sh->name = "s";
	sh->strategy = strategy;
	sh->borrow_limit = -1;
	sh->in_share_preemption = in_share;
	sh->enabled = true;
	cf->capacity[s] = capacity;
	sh->capacity = &cf->capacity[s];
	sh->lend_limit = -1;
	sh->weight = 1;
	cf->budget[s] = -1;
	sh->budget = &cf->budget[s];
	cf->periods[s] = QS_PERIOD_DAY;
	return s;
}

static QsReplayJob
Job(int64_t id, int share, int32_t count, int32_t priority, QsTime arrival, QsTime work)
{
	QsReplayJob j;

	memset(&j, 0, sizeof(j));
	j.id = id;
	j.share = share;
	j.count = count;
	j.priority = priority;
	j.arrival = arrival;
	j.queued_at = arrival;
	j.work = work;
	j.timeout = QS_NO_TIME;
	j.leave_at = QS_NO_TIME;
	j.max_attempts = 1;
	j.preemption_retries = -1;
	return j;
}

static QsReplayOutput
Run(const Config *cf, int n, const QsReplayJob *jobs, QsTime to)
{
	QsReplayOutput out;

	QsReplay(&cf->c, n, jobs, T0, to, &Memory, &out);
	return out;
}

static bool
Near(double a, double b)
{
	return fabs(a - b) < 1e-6 * (1 + fabs(b));
}

/* One instance, two jobs: the second starts when the first's work is done. */
static void
test_fifo_one_instance(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(10, s, 1, 0, T0 + MIN, HOUR);
	j[1] = Job(11, s, 1, 0, T0 + 2 * MIN, HOUR);
	o = Run(&cf, 2, j, T0 + 10 * HOUR);
	CHECK(o.jobs[0].first_dispatch == T0 + MIN && o.jobs[0].ended_at == T0 + MIN + HOUR &&
		  o.jobs[0].state == QS_SUCCEEDED, "the first job runs at its arrival for its work");
	CHECK(o.jobs[1].first_dispatch == T0 + MIN + HOUR && o.jobs[1].state == QS_SUCCEEDED,
		  "the second starts when the first ends (it waited 59 minutes)");
	CHECK(Near(o.jobs[0].held, 3600) && Near(o.jobs[1].held, 3600) && o.jobs[0].lost == 0,
		  "each held one instance-hour, nothing lost");
	CHECK(o.dispatches == 2, "two dispatches");
}

/* The end of the replay: a job still running holds until then; one never dispatched waits. */
static void
test_until_the_end(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(1, s, 1, 0, T0, QS_UNBOUNDED);
	j[1] = Job(2, s, 1, 0, T0 + MIN, 10 * MIN);
	o = Run(&cf, 2, j, T0 + HOUR);
	CHECK(o.jobs[0].state == QS_RUNNING && o.jobs[0].ended_at == QS_NO_TIME &&
		  Near(o.jobs[0].held, 3600), "a job that works past the end holds until the end");
	CHECK(o.jobs[1].first_dispatch == QS_NO_TIME && o.jobs[1].state == QS_RUNNABLE,
		  "the job behind it is never dispatched");
}

/*
 * Cross-share preemption: A borrows B's idle instance; B's job arrives and
 * takes it back at once (the stop is acknowledged at once); A's attempt is
 * lost and starts over when B's job ends.
 */
static void
test_reclaim(void)
{
	Config		cf;
	QsReplayJob j[3];
	QsReplayOutput o;
	int			a,
				b;

	ConfigInit(&cf, 2);
	a = AddShare(&cf, QS_LEND_AND_BORROW, 1, false);
	b = AddShare(&cf, QS_LEND, 1, false);
	j[0] = Job(1, a, 1, 0, T0, 2 * HOUR);
	j[1] = Job(2, a, 1, 0, T0 + SEC, 2 * HOUR);
	j[2] = Job(3, b, 1, 0, T0 + HOUR, HOUR);
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 + SEC && o.jobs[1].preemptions == 1,
		  "A's borrowing job was preempted once");
	CHECK(o.jobs[2].first_dispatch == T0 + HOUR && o.jobs[2].preempted == 1,
		  "B's job starts at its arrival, having preempted one job");
	CHECK(Near(o.jobs[1].lost, 3600 - 1) && Near(o.jobs[1].held, 3600 - 1 + 2 * 3600),
		  "the preempted attempt's hour is lost; the job ran its 2 hours again");
	CHECK(o.jobs[1].ended_at == T0 + 2 * HOUR + 2 * HOUR && o.jobs[1].state == QS_SUCCEEDED,
		  "it started over when B's job ended (hour 2) and ended at hour 4");
	CHECK(Near(o.borrowed[a], 3600 - 1) && Near(o.borrowed[b], 0),
		  "A borrowed one instance for the hour before the reclaim");
}

/* In-share preemption: a higher-priority job stops a lower one of its share. */
static void
test_in_share(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, true);
	j[0] = Job(1, s, 1, 1, T0, 3 * HOUR);
	j[1] = Job(2, s, 1, 5, T0 + HOUR, HOUR);
	o = Run(&cf, 2, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 + HOUR && o.jobs[0].preemptions == 1,
		  "the high-priority job starts at its arrival: the low one is its victim");
	CHECK(o.jobs[0].ended_at == T0 + 2 * HOUR + 3 * HOUR, "the victim starts over at hour 2");
	/* without in-share preemption it waits */
	cf.shares[s].in_share_preemption = false;
	o = Run(&cf, 2, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 + 3 * HOUR && o.jobs[0].preemptions == 0,
		  "without it the high-priority job waits for the low one's end");
}

/* A job whose work exceeds its timeout fails at the timeout, after its attempts. */
static void
test_timeout(void)
{
	Config		cf;
	QsReplayJob j[1];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(1, s, 1, 0, T0, 2 * HOUR);
	j[0].timeout = HOUR;
	j[0].max_attempts = 2;
	o = Run(&cf, 1, j, T0 + 10 * HOUR);
	CHECK(o.jobs[0].state == QS_FAILED && o.jobs[0].ended_at == T0 + 2 * HOUR &&
		  Near(o.jobs[0].held, 2 * 3600) && o.jobs[0].lost == 0,
		  "two attempts of an hour each, then FAILED at hour 2");
}

/* A recorded priority change reorders the waiting jobs at its time. */
static void
test_priority_change(void)
{
	Config		cf;
	QsReplayJob j[3];
	QsReplayOutput o;
	QsTime		at = T0 + 30 * MIN;
	int32_t		to = 9;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(1, s, 1, 0, T0, HOUR);
	j[1] = Job(2, s, 1, 5, T0 + MIN, HOUR);
	j[2] = Job(3, s, 1, 1, T0 + 2 * MIN, HOUR);
	j[2].nchanges = 1;
	j[2].change_at = &at;
	j[2].change_to = &to;
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[2].first_dispatch == T0 + HOUR && o.jobs[1].first_dispatch == T0 + 2 * HOUR,
		  "raised to 9 while waiting, job 3 goes before job 2 (priority 5)");
	j[2].nchanges = 0;
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 + HOUR && o.jobs[2].first_dispatch == T0 + 2 * HOUR,
		  "without the change, job 2 goes first");
}

/* A budget of one instance-hour a day: the second job waits for the next day. */
static void
test_budget(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	QsTime		day = QsPeriodStart(T0, QS_PERIOD_DAY);
	int			s;

	ConfigInit(&cf, 2);
	s = AddShare(&cf, QS_RESERVE, 2, false);
	cf.budget[s] = 1;
	j[0] = Job(1, s, 1, 0, day + HOUR, HOUR);
	j[1] = Job(2, s, 1, 0, day + 3 * HOUR, HOUR);
	j[0].queued_at = j[0].arrival;
	o = Run(&cf, 2, j, day + 48 * HOUR);
	CHECK(o.jobs[0].first_dispatch == day + HOUR, "the first job runs");
	CHECK(o.jobs[1].first_dispatch == day + 24 * HOUR,
		  "the second waits until the next day: the budget is spent");
	cf.budget[s] = -1;
	o = Run(&cf, 2, j, day + 48 * HOUR);
	CHECK(o.jobs[1].first_dispatch == day + 3 * HOUR, "without a budget it runs at once");
}

/*
 * Half an instance-hour a day: a job of 1 gpu for 29 minutes leaves a
 * minute, and the next job runs (and overspends); one of 30 minutes spends
 * it, and the next waits for the next day.
 */
static void
test_fractional_budget(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	QsTime		day = QsPeriodStart(T0, QS_PERIOD_DAY);
	int			s;

	ConfigInit(&cf, 2);
	s = AddShare(&cf, QS_RESERVE, 2, false);
	cf.budget[s] = 0.5;
	j[0] = Job(1, s, 1, 0, day + HOUR, 29 * MIN);
	j[1] = Job(2, s, 1, 0, day + 3 * HOUR, HOUR);
	j[0].queued_at = j[0].arrival;
	o = Run(&cf, 2, j, day + 48 * HOUR);
	CHECK(o.jobs[0].first_dispatch == day + HOUR && o.jobs[1].first_dispatch == day + 3 * HOUR,
		  "0.5 instance-hours, 29 minutes spent: the second job runs at once");
	j[0].work = 30 * MIN;
	o = Run(&cf, 2, j, day + 48 * HOUR);
	CHECK(o.jobs[1].first_dispatch == day + 24 * HOUR,
		  "0.5 instance-hours, 30 minutes spent: the second waits until the next day");
}

/*
 * Fair share with memory: A borrowed the lender's instance for 4 hours; when
 * it is free again, B's job goes before A's older one, A's recent borrowing
 * being the larger.  Without a half-life neither borrows then: A's job, the
 * older, goes first.
 */
static void
test_half_life(void)
{
	Config		cf;
	QsReplayJob j[3];
	QsReplayOutput o;
	int			a,
				b;

	ConfigInit(&cf, 1);
	cf.c.fair = true;
	cf.c.half_life = HOUR;
	(void) AddShare(&cf, QS_LEND, 1, false);
	a = AddShare(&cf, QS_LEND_AND_BORROW, 0, false);
	b = AddShare(&cf, QS_LEND_AND_BORROW, 0, false);
	j[0] = Job(1, a, 1, 0, T0, 4 * HOUR);
	j[1] = Job(2, a, 1, 0, T0 + MIN, HOUR);
	j[2] = Job(3, b, 1, 0, T0 + 2 * MIN, HOUR);
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[2].first_dispatch == T0 + 4 * HOUR && o.jobs[1].first_dispatch == T0 + 5 * HOUR,
		  "with a half-life B's job goes first: A borrowed recently");
	cf.c.half_life = 0;
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 + 4 * HOUR && o.jobs[2].first_dispatch == T0 + 5 * HOUR,
		  "without one A's older job goes first");
}

/* A misconfigured job fails at its queue's runnable_timeout. */
static void
test_runnable_timeout(void)
{
	Config		cf;
	QsReplayJob j[1];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 2);
	s = AddShare(&cf, QS_RESERVE, 2, false);
	cf.c.runnable_timeout = HOUR;
	j[0] = Job(1, s, 3, 0, T0, HOUR);
	o = Run(&cf, 1, j, T0 + 10 * HOUR);
	CHECK(o.jobs[0].state == QS_FAILED && o.jobs[0].ended_at == T0 + HOUR + 1 &&
		  o.jobs[0].first_dispatch == QS_NO_TIME,
		  "3 gpus of a share of 2: FAILED just after its runnable_timeout");
}

/* Jobs of before the start arrive at the start, in their recorded order. */
static void
test_arrive_at_start(void)
{
	Config		cf;
	QsReplayJob j[2];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(1, s, 1, 0, T0 - HOUR, HOUR);
	j[1] = Job(2, s, 1, 0, T0 - 2 * HOUR, HOUR);
	j[1].queued_at = T0 - 2 * HOUR;
	o = Run(&cf, 2, j, T0 + 10 * HOUR);
	CHECK(o.jobs[1].first_dispatch == T0 && o.jobs[0].first_dispatch == T0 + HOUR,
		  "both arrive at the start; the one queued first goes first");
}

/* A job the history terminated leaves the replay then, waiting or running. */
static void
test_leave(void)
{
	Config		cf;
	QsReplayJob j[3];
	QsReplayOutput o;
	int			s;

	ConfigInit(&cf, 1);
	s = AddShare(&cf, QS_RESERVE, 1, false);
	j[0] = Job(1, s, 1, 0, T0, QS_UNBOUNDED);
	j[0].leave_at = T0 + HOUR;
	j[1] = Job(2, s, 1, 0, T0 + MIN, QS_UNBOUNDED);
	j[1].leave_at = T0 + 30 * MIN;
	j[2] = Job(3, s, 1, 0, T0 + 2 * MIN, HOUR);
	o = Run(&cf, 3, j, T0 + 10 * HOUR);
	CHECK(o.jobs[0].state == QS_FAILED && o.jobs[0].ended_at == T0 + HOUR &&
		  Near(o.jobs[0].held, 3600), "the running job ends FAILED when it was terminated");
	CHECK(o.jobs[1].state == QS_FAILED && o.jobs[1].first_dispatch == QS_NO_TIME &&
		  o.jobs[1].ended_at == T0 + 30 * MIN, "the waiting one leaves, never dispatched");
	CHECK(o.jobs[2].first_dispatch == T0 + HOUR, "the third starts when the first leaves");
}

int
main(void)
{
	test_leave();
	test_fifo_one_instance();
	test_until_the_end();
	test_reclaim();
	test_in_share();
	test_timeout();
	test_priority_change();
	test_budget();
	test_fractional_budget();
	test_half_life();
	test_runnable_timeout();
	test_arrive_at_start();
	return TapDone();
}
