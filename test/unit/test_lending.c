/*-------------------------------------------------------------------------
 *
 * test_lending.c
 *		Unit tests of who lent to whom (src/core/lending.c): the worked
 *		example of doc/reporting.md, span by span.  Prints TAP; exits
 *		non-zero when a test fails.
 *
 *-------------------------------------------------------------------------
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lending.h"
#include "tap.h"

#define MAXS 8

/* What QsLendSpan emitted, by (lender + 1, borrower). */
typedef struct Lent
{
	double		seconds[MAXS + 1][MAXS];
	int			calls;
} Lent;

static void
Collect(void *arg, int lender, int borrower, double instance_seconds)
{
	Lent	   *lent = arg;

	lent->seconds[lender + 1][borrower] += instance_seconds;
	lent->calls++;
}

static bool
Near(double a, double b)
{
	return fabs(a - b) < 1e-9;
}

enum
{
	VISION, SPEECH, AUDIO, NLP
};

/* The example's shares, none holding anything. */
static void
Example(QsLendLevel *s)
{
	s[VISION] = (QsLendLevel) {0, 4, 4};	/* LEND */
	s[SPEECH] = (QsLendLevel) {0, 2, 1};	/* LEND_AND_BORROW, lend_limit 50 */
	s[AUDIO] = (QsLendLevel) {0, 2, 0};	/* RESERVE */
	s[NLP] = (QsLendLevel) {0, 1, 1};	/* LEND_AND_BORROW */
}

#define FROM(lent, lender, borrower) ((lent).seconds[(lender) + 1][(borrower)])

/* One borrower: the unassigned capacity first, then the lenders in proportion. */
static void
test_one_borrower(void)
{
	QsLendLevel s[MAXS];
	Lent		lent;

	/* nlp borrows 3 of 10 gpus, 9 assigned: 1 unassigned, 2 from the lenders as 4:1 */
	Example(s);
	s[NLP].used = 4;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 10, 600, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 600), "the unassigned gpu is lent first: 600");
	CHECK(Near(FROM(lent, VISION, NLP), 960), "vision lends in proportion to the 4 it may lend: 960");
	CHECK(Near(FROM(lent, SPEECH, NLP), 240), "speech lends in proportion to the 1 its lend_limit allows: 240");
	CHECK(Near(FROM(lent, AUDIO, NLP), 0) && lent.calls == 3, "audio (lendable 0) lends nothing");

	/* vision holds 3 of its own: it may lend only 1 */
	s[VISION].used = 3;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 10, 600, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 600) && Near(FROM(lent, VISION, NLP), 600) &&
		  Near(FROM(lent, SPEECH, NLP), 600), "a lender lends only its idle capacity: 600 each");
}

/* Two borrowers: each has of each source its part of all that is borrowed. */
static void
test_two_borrowers(void)
{
	QsLendLevel s[MAXS];
	Lent		lent;

	/* two borrowers of 1 each share every source half and half */
	Example(s);
	s[NLP].used = 2;
	s[SPEECH].used = 3;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 10, 1200, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 600) && Near(FROM(lent, QS_LEND_UNASSIGNED, SPEECH), 600),
		  "two borrowers halve the unassigned gpu");
	CHECK(Near(FROM(lent, VISION, NLP), 600) && Near(FROM(lent, VISION, SPEECH), 600),
		  "and the rest, all vision's (speech borrows, so lends nothing)");
	CHECK(Near(FROM(lent, SPEECH, NLP), 0), "a borrower lends nothing of the unit");

	/* a borrower of 3 and one of 1 take three quarters and a quarter */
	Example(s);
	s[NLP].used = 4;
	s[SPEECH].used = 3;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 10, 100, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 75) && Near(FROM(lent, QS_LEND_UNASSIGNED, SPEECH), 25) &&
		  Near(FROM(lent, VISION, NLP), 225) && Near(FROM(lent, VISION, SPEECH), 75),
		  "each borrower has of each source its part of all that is borrowed");
}

/* What there is to lend bounds what is lent; no loan, no time: nothing. */
static void
test_bounds(void)
{
	QsLendLevel s[MAXS];
	Lent		lent;

	/* more borrowed than there is to lend: the excess is lent by no one */
	Example(s);
	s[VISION].capacity = 0;
	s[VISION].lendable = 0;
	s[NLP].used = 4;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 6, 10, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 10) && Near(FROM(lent, SPEECH, NLP), 10) && lent.calls == 2,
		  "borrowed beyond unassigned and lendable capacity: only what there was is lent");

	/* no unassigned capacity: all from the lenders */
	Example(s);
	s[NLP].used = 3;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 9, 5, Collect, &lent);
	CHECK(Near(FROM(lent, QS_LEND_UNASSIGNED, NLP), 0) && Near(FROM(lent, VISION, NLP), 8) &&
		  Near(FROM(lent, SPEECH, NLP), 2), "no unassigned capacity: the lenders lend it all, 4:1");

	/* nothing borrowed, or an empty span: nothing lent */
	Example(s);
	s[VISION].used = 4;
	s[NLP].used = 1;
	memset(&lent, 0, sizeof(lent));
	QsLendSpan(s, 4, 10, 60, Collect, &lent);
	s[NLP].used = 3;
	QsLendSpan(s, 4, 10, 0, Collect, &lent);
	CHECK(lent.calls == 0, "nothing borrowed, or no time: nothing lent");
}

int
main(void)
{
	test_one_borrower();
	test_two_borrowers();
	test_bounds();
	return TapDone();
}
