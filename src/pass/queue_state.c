/*-------------------------------------------------------------------------
 *
 * queue_state.c
 *		The lookups of a queue's state (queue_state.h): the index of a
 *		capacity unit and of a share.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "queue_state.h"

/*
 * QsUnitIndex returns the index of a capacity unit in the queue's state, or -1.
 */
int
QsUnitIndex(const QsQueueState *qs, const char *unit)
{
	for (int u = 0; u < qs->in.nunits; u++)
		if (strcmp(qs->in.units[u].name, unit) == 0)
			return u;
	return -1;
}

/*
 * QsShareIndex returns the index of a share in the queue's state, or -1.
 * The shares are in the C order of their names (LoadShares), which is
 * strcmp's: a binary search, as every row a pass reads names its share.
 */
int
QsShareIndex(const QsQueueState *qs, const char *share)
{
	int			lo = 0,
				hi = qs->in.nshares - 1;

	while (lo <= hi)
	{
		int			mid = lo + (hi - lo) / 2;
		int			c = strcmp(qs->in.shares[mid].name, share);

		if (c == 0)
			return mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}
