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

/*
 * QsShareIndexNear is QsShareIndex, trying first the share at `near` and
 * the one after it: rows read in the order of their shares' names (the
 * counters, QsReadUsage) each find theirs with one or two strcmp's, not a
 * search (issue 42, item 3).  The database's collation may order names
 * otherwise than strcmp; then it searches.
 */
int
QsShareIndexNear(const QsQueueState *qs, const char *share, int near)
{
	for (int i = Max(near, 0); i <= near + 1 && i < qs->in.nshares; i++)
		if (strcmp(qs->in.shares[i].name, share) == 0)
			return i;
	return QsShareIndex(qs, share);
}
