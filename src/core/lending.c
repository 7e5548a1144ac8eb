/*-------------------------------------------------------------------------
 *
 * lending.c
 *		Who lent to whom: the attribution of borrowed capacity to its
 *		sources, one span of constant levels at a time (lending.h).
 *
 * At every moment, for each unit apart:
 *   1. what the borrowers borrow (each share's usage beyond its own
 *      capacity) comes first from the unassigned capacity,
 *      max(0, E(u) - sum of C(S,u));
 *   2. the rest from the lenders, in proportion to what each may lend,
 *      min(idle, lendable);
 *   3. each borrower has of each source its part of all that is borrowed;
 *   4. what is borrowed beyond both (a limit lowered under running jobs,
 *      until the pass repairs it) is lent by no one.
 *
 *-------------------------------------------------------------------------
 */
#include "lending.h"

#define Min64(a, b) ((a) < (b) ? (a) : (b))
#define Max64(a, b) ((a) > (b) ? (a) : (b))

/* What a share may lend of its idle capacity now: min(idle, lendable). */
static int64_t
Supply(const QsLendLevel *share)
{
#ifdef QS_MUTANT_LENDING_LEND_LIMIT
	return Max64(0, share->capacity - share->used);
#else
	return Min64(Max64(0, share->capacity - share->used), share->lendable);
#endif
}

/*
 * QsLendSpan attributes a span of `seconds` seconds with constant levels
 * (lending.c's header has the rule), calling emit for each source of each
 * borrower.  Nothing is emitted when nothing is borrowed.
 */
void
QsLendSpan(const QsLendLevel *shares, int nshares, int64_t env_capacity,
		   double seconds, QsLendEmit emit, void *arg)
{
	int64_t		borrowed = 0;
	int64_t		supply = 0;
	int64_t		assigned = 0;
	int64_t		from_unassigned;
	int64_t		from_lenders;

	for (int s = 0; s < nshares; s++)
	{
		borrowed += Max64(0, shares[s].used - shares[s].capacity);
		supply += Supply(&shares[s]);
		assigned += shares[s].capacity;
	}
	if (borrowed <= 0 || seconds <= 0)
		return;
#ifdef QS_MUTANT_LENDING_UNASSIGNED_FIRST
	from_unassigned = 0;
#else
	from_unassigned = Min64(borrowed, Max64(0, env_capacity - assigned));
#endif
	from_lenders = Min64(borrowed - from_unassigned, supply);
	for (int b = 0; b < nshares; b++)
	{
		int64_t		own_borrowed = Max64(0, shares[b].used - shares[b].capacity);
		/* the borrower's part of every source */
		double		part = seconds * (double) own_borrowed / (double) borrowed;

		if (own_borrowed <= 0)
			continue;
		if (from_unassigned > 0)
			emit(arg, QS_LEND_UNASSIGNED, b, part * (double) from_unassigned);
		if (from_lenders <= 0)
			continue;
		for (int l = 0; l < nshares; l++)
		{
			int64_t		lends = Supply(&shares[l]);

			if (lends <= 0)
				continue;
#ifdef QS_MUTANT_LENDING_PRO_RATA
			int			lenders = 0;

			for (int k = 0; k < nshares; k++)
				lenders += Supply(&shares[k]) > 0;
			emit(arg, l, b, part * (double) from_lenders / lenders);
#else
			emit(arg, l, b, part * (double) from_lenders * (double) lends / (double) supply);
#endif
		}
	}
}
