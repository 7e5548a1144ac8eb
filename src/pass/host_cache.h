/*-------------------------------------------------------------------------
 *
 * host_cache.h
 *		A backend-local cache of each queue's hosts (host_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_HOST_CACHE_H
#define QS_HOST_CACHE_H

#include "datatype/timestamp.h"
#include "utils/hsearch.h"
#include "utils/snapshot.h"

#include "config_store.h"
#include "job_store_pass.h"
#include "policy.h"

/*
 * The live agents of one unit of a queue: the unit is placed (it has one),
 * unless a live, ACTIVE one is unbounded; its hosts are its live, ACTIVE,
 * bounded agents, in the C order of their names (held and stopping 0).
 */
typedef struct QsHostUnit
{
	const char *name;
	bool		unbounded;
	int			nhosts;
	QsHost	   *hosts;
	const struct QsHostIndex *host_index;	/* QsPrepareHosts', kept with the
											 * hosts (a pass uses it as is) */
} QsHostUnit;

/*
 * A queue's units with live agents, in the C order of their names; version
 * tells one read from another (from 1, never reused in the backend).
 */
typedef struct QsHostSet
{
	int			nunits;
	QsHostUnit *units;
	uint64		version;
} QsHostSet;

extern void *QsQueueCacheEntry(HTAB **cache, const char *what, Size entrysize, const char *queue);
extern void QsCacheForget(MemoryContext *cxt);
extern const QsHostSet *QsLoadHosts(const char *queue, TimestampTz now, Snapshot snapshot);
extern const QsConstrainedClass *QsLoadClasses(const char *queue, Snapshot snapshot, int *n);
extern const QsShareConfig *QsLoadShareConfigs(const char *queue, Snapshot snapshot, int *n);
extern void QsCompactChanges(const char *queue);

#endif							/* QS_HOST_CACHE_H */
