/*-------------------------------------------------------------------------
 *
 * held_cache.h
 *		What the hosts of a queue hold, as a pass reads it (held_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HELD_CACHE_H
#define QS_HELD_CACHE_H

#include "utils/snapshot.h"

#include "host_cache.h"

/*
 * A counter of what a host holds (a row of host_held or host_held_change),
 * with where its unit and agent are in the host set it was resolved
 * against.
 */
typedef struct QsHeldCount
{
	const char *unit;
	const char *agent;
	int			set_unit;		/* the unit's index in the set; -1: none */
	int			host;			/* the agent's among the unit's hosts; -1: none */
	int64		held;
	int64		stopping;
} QsHeldCount;

/* What a pass read of what its queue's hosts hold (QsLoadHostsHeld). */
typedef struct QsHostsHeld
{
	int			nkept;
	const QsHeldCount *kept;	/* host_held's rows */
	int			nchanges;
	QsHeldCount *changes;		/* host_held_change's rows but the mark */
	int64		mark;			/* the generation of the fold's mark; 0: none */
	int			ngens;
	int64	   *gens;			/* of every row of host_held_change read */
	bool		fold;			/* the pass is to fold them (QsFoldHostsHeld) */
} QsHostsHeld;

extern void QsLoadHostsHeld(const char *queue, const QsHostSet *set, Snapshot snapshot,
							QsHostsHeld *out);
extern void QsFoldHostsHeld(const char *queue, const QsHostsHeld *held);

#endif							/* QS_HELD_CACHE_H */
