/*-------------------------------------------------------------------------
 *
 * job_history.h
 *		What the history trigger (job_history.c) shares: the direct write
 *		of a history row, and the row of each attempt a preemption ended
 *		(job_preemption.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QS_JOB_HISTORY_H
#define QS_JOB_HISTORY_H

#include "access/htup.h"
#include "datatype/timestamp.h"
#include "utils/relcache.h"

extern void QsInsertHistoryRow(Relation rel, HeapTuple tuple);
extern void QsRecordPreemption(Relation jobrel, HeapTuple job, HeapTuple old, int64 preemptor,
							   int64 event_id, TimestampTz at);

#endif							/* QS_JOB_HISTORY_H */
