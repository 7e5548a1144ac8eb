/*-------------------------------------------------------------------------
 *
 * test_rules.c
 *		Unit tests of the rules of the policy core that the reports call
 *		as SQL functions (src/reports/rules_sql.c): which states hold
 *		capacity, which stops are preemptions, allowed(S,u), lendable(S,u)
 *		as the supply counts it, and a spent budget (scheduling.md 3.1,
 *		3.6, 3.11).  Prints TAP; exits non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <stdio.h>

#include "policy.h"
#include "tap.h"

/* A share of one unit with capacity c. */
static QsShare
Share(QsStrategy strategy, int64_t c, int32_t borrow_limit, int32_t lend_limit, bool enabled,
	  int64_t *capacity)
{
	QsShare		s = {0};

	*capacity = c;
	s.name = "s";
	s.strategy = strategy;
	s.borrow_limit = borrow_limit;
	s.lend_limit = lend_limit;
	s.enabled = enabled;
	s.capacity = capacity;
	s.weight = 1;
	return s;
}

/* QsHolds: SCHEDULED, STARTING and RUNNING hold their instances. */
static void
TestHolds(void)
{
	QsJobState	state;

	CHECK(!QsHolds(QS_RUNNABLE), "a RUNNABLE job holds nothing");
	CHECK(QsHolds(QS_SCHEDULED) && QsHolds(QS_STARTING) && QsHolds(QS_RUNNING),
		  "SCHEDULED, STARTING and RUNNING jobs hold their instances");
	CHECK(!QsHolds(QS_SUCCEEDED) && !QsHolds(QS_FAILED), "ended jobs hold nothing");
	CHECK(QsJobStateFromName("STARTING", &state) && QsHolds(state),
		  "by name: STARTING holds");
}

/* The stop of a name, QS_STOP_NONE for a name that is none. */
static QsStop
Stop(const char *name)
{
	QsStop		stop;

	return QsStopFromName(name, &stop) ? stop : QS_STOP_NONE;
}

/* QsIsPreemption: the three stops that end an attempt for another's room. */
static void
TestPreemption(void)
{
	CHECK(QsIsPreemption(Stop("CROSS_SHARE_PREEMPTION")) &&
		  QsIsPreemption(Stop("IN_SHARE_PREEMPTION")) &&
		  QsIsPreemption(Stop("CAPACITY_REDUCED")),
		  "cross-share, in-share and capacity-reduced stops are preemptions");
	CHECK(!QsIsPreemption(QS_STOP_TIMEOUT) && !QsIsPreemption(QS_STOP_TERMINATED) &&
		  !QsIsPreemption(QS_STOP_NONE),
		  "a timeout, a terminate and no stop are none");
	CHECK(!QsIsPreemption(Stop("LEASE_EXPIRED")) && !QsIsPreemption(Stop(NULL)),
		  "a reason that is no stop (LEASE_EXPIRED, null) is no preemption");
}

/* QsAllowed: C(S,u), but floor(C * (100 + borrow_limit) / 100) to borrow. */
static void
TestAllowed(void)
{
	int64_t		c;
	QsShare		s;

	s = Share(QS_RESERVE, 3, -1, -1, true, &c);
	CHECK(QsAllowed(&s, 0) == 3, "RESERVE: allowed is its capacity");
	s = Share(QS_LEND, 3, -1, 50, true, &c);
	CHECK(QsAllowed(&s, 0) == 3, "LEND: allowed is its capacity");
	s = Share(QS_LEND_AND_BORROW, 3, -1, -1, true, &c);
	CHECK(QsAllowed(&s, 0) == QS_UNBOUNDED, "LEND_AND_BORROW, borrow_limit -1: unbounded");
	s = Share(QS_LEND_AND_BORROW, 3, 50, -1, true, &c);
	CHECK(QsAllowed(&s, 0) == 4, "borrow_limit 50 of 3: floor(4.5) = 4");
	s = Share(QS_LEND_AND_BORROW, 3, 0, -1, false, &c);
	CHECK(QsAllowed(&s, 0) == 3, "borrow_limit 0: its capacity, DISABLED or not");
}

/* QsLendableOf: lendable(S,u) of a share that lends, else 0. */
static void
TestLendableOf(void)
{
	int64_t		c;
	QsShare		s;

	s = Share(QS_LEND, 5, -1, -1, true, &c);
	CHECK(QsLendableOf(&s, 0) == 5, "LEND, lend_limit -1: all its capacity");
	s = Share(QS_LEND, 5, -1, 50, true, &c);
	CHECK(QsLendableOf(&s, 0) == 2, "lend_limit 50 of 5: floor(2.5) = 2");
	s = Share(QS_LEND_AND_BORROW, 5, -1, 0, true, &c);
	CHECK(QsLendableOf(&s, 0) == 0, "lend_limit 0: nothing");
	s = Share(QS_RESERVE, 5, -1, -1, true, &c);
	CHECK(QsLendableOf(&s, 0) == 0, "RESERVE: nothing");
	s = Share(QS_LEND_AND_BORROW, 5, -1, -1, false, &c);
	CHECK(QsLendableOf(&s, 0) == 0, "DISABLED: nothing");
}

/* QsOverBudget: spent(S,u) >= budget(S,u) * 3600, with a budget. */
static void
TestOverBudget(void)
{
	int64_t		c;
	QsShare		s = Share(QS_LEND, 5, -1, -1, true, &c);
	double		budget = 0.5;
	double		spent = 1799;

	CHECK(!QsOverBudget(&s, 0), "no budget: never spent");
	s.budget = &budget;
	CHECK(!QsOverBudget(&s, 0), "a budget, nothing spent (no array)");
	s.spent = &spent;
	CHECK(!QsOverBudget(&s, 0), "0.5 instance-hours: 1799 instance-seconds do not spend it");
	spent = 1800;
	CHECK(QsOverBudget(&s, 0), "0.5 instance-hours: 1800 instance-seconds spend it");
	budget = 0;
	spent = 0;
	CHECK(QsOverBudget(&s, 0), "a budget of 0 forbids the unit");
	budget = -1;
	CHECK(!QsOverBudget(&s, 0), "a negative budget is none");
}

int
main(void)
{
	TestHolds();
	TestPreemption();
	TestAllowed();
	TestLendableOf();
	TestOverBudget();
	return TapDone();
}
