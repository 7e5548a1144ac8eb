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

typedef struct QsUsageRows
{
	int			n;
	QsUsageRow *rows;
} QsUsageRows;

extern QsUsageRows QsReadUsage(const char *queue, bool spent, TimestampTz now);
extern QsUsageRows QsLoadUsage(const char *queue, bool spent, TimestampTz now, bool lock_rows);
extern void QsUsageCacheRegister(void);
extern void QsUsageCacheXactEvent(XactEvent event);
extern void QsUsageReset(void);
extern void QsUsageSubXactAbort(void);
extern void QsUsageXactEvent(XactEvent event);

#endif							/* QS_USAGE_H */
