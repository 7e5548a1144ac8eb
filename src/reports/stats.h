/*-------------------------------------------------------------------------
 *
 * stats.h
 *		The scheduler's activity counters in shared memory, for metrics()
 *		(stats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_STATS_H
#define QS_STATS_H

#include "datatype/timestamp.h"

extern void QsStatsRegister(void);
extern void QsStatsNotePass(const char *queue, TimestampTz started, TimestampTz ended);
extern void QsStatsNoteGivenUp(const char *queue, bool given_up);
extern void QsStatsNoteWorker(bool started);
extern int	QsStatsGivenUpInARow(const char *queue);

#endif							/* QS_STATS_H */
