/*-------------------------------------------------------------------------
 *
 * usage.h
 *		The counters of held capacity per queue, share and unit (usage.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_USAGE_H
#define QS_USAGE_H

#include "access/xact.h"
#include "datatype/timestamp.h"

#include "over_time.h"

/* The counters of one share and unit. */
typedef struct QsUsageRow
{
	char	   *quota_share;
	char	   *capacity_unit;
	int64		instances;		/* held by SCHEDULED, STARTING, RUNNING jobs */
	int64		stopping_instances; /* of those, of jobs whose stop is pending */
	int64		jobs;			/* jobs holding them */
	double		spent[QS_NPERIODS];	/* instance-seconds held this day, week,
									 * month (QsPeriod order), when read */
	int			share;			/* the share's index in the pass's state
								 * (QsShareIndex, set by the pass), -1: none */
	int			unit;			/* the unit's (set by the pass) */
} QsUsageRow;

/*
 * A stripe of the counters as stored, read with what was spent: what each
 * period had spent at changed_at, and the instances held since, from which
 * its spent at any later time follows (QsSpentAt).
 */
typedef struct QsUsageStripe
{
	int			row;			/* its row's index in QsUsageRows.rows */
	int64		instances;
	TimestampTz changed_at;
	double		spent[QS_NPERIODS];
} QsUsageStripe;

typedef struct QsUsageRows
{
	int			n;
	QsUsageRow *rows;
	int			nstripes;		/* read with what was spent: the stripes */
	QsUsageStripe *stripes;
} QsUsageRows;

/*
 * What is kept of the counters (usage_cache.c) and of the memory of
 * borrowing (borrow_memory.c) is read again at least this often (writes no
 * trigger saw).
 */
#define QS_USAGE_KEEP_MS 10000

extern QsUsageRows QsReadUsage(const char *queue, bool spent);
extern void QsUsageSpentAt(QsUsageRows *rows, TimestampTz now);
extern QsUsageRows QsLoadUsage(const char *queue, bool spent, TimestampTz now, bool lock_rows);
extern void QsUsageCacheRegister(void);
extern bool QsUsageWrites(uint64 *commits, bool *no_writer);
extern void QsNoteBorrowRead(void);
extern void QsUsageCacheXactEvent(XactEvent event);
extern void QsUsageReset(void);
extern void QsUsageSubXactAbort(void);
extern void QsUsageXactEvent(XactEvent event);

#endif							/* QS_USAGE_H */
