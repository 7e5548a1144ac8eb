/*-------------------------------------------------------------------------
 *
 * lending.h
 *		Who lent to whom (doc/reporting.md, "Who lent to whom"): the rule
 *		that attributes what the borrowers of a unit hold beyond their own
 *		capacity to the capacity it came from.  Pure C, like the policy.
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_LENDING_H
#define QS_LENDING_H

#include <stdint.h>

/* A share's levels of one unit during a span of time. */
typedef struct QsLendLevel
{
	int64_t		used;			/* instances its jobs hold */
	int64_t		capacity;		/* its own capacity, C(S,u) */
	int64_t		lendable;		/* lendable(S,u); 0 for RESERVE, DISABLED */
} QsLendLevel;

/* The lender of unassigned capacity, in QsLendEmit. */
#define QS_LEND_UNASSIGNED (-1)

/*
 * Called for each (lender, borrower) pair with the instance-seconds the
 * borrower held of the lender's capacity in the span (lender
 * QS_LEND_UNASSIGNED: the environment's unassigned capacity).
 */
typedef void (*QsLendEmit) (void *arg, int lender, int borrower, double instance_seconds);

extern void QsLendSpan(const QsLendLevel *shares, int nshares, int64_t env_capacity,
					   double seconds, QsLendEmit emit, void *arg);

#endif							/* QS_LENDING_H */
